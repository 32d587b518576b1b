"""The floor under bench/manyflows.py: what N TCP flows at R Mb/s each cost this machine WITHOUT linkemu.

Issue 34 asks for <= 0.25 whole-machine cores per Gb/s at 10 flows x 100 Mb/s on the row-10 path.
Part of that is TCP itself: at 100 Mb/s a flow's TSO bursts are ~1 ms of its pacing rate (about 8
segments), so per-burst and per-ACK costs dominate as they do through the emulator. This bench
measures them alone: N iperf3 flows (C, one process each end per flow) between two namespaces joined
by one veth pair (offloads as veth has them: TSO/GSO/GRO on, as fastlab's fast path runs), each
flow held at R Mb/s, in one of two ways:
- `pace`: iperf3 --fq-rate R (SO_MAX_PACING_RATE; without sch_fq, as here, TCP paces itself with
  its internal hrtimer), the way a paced sender is held at a rate;
- `htb`: an HTB class of R Mb/s per flow on the sender's veth (classified by destination port),
  unpaced TCP, the way tc would shape each flow's access link.
Per run: goodput (iperf3's received bytes), whole-machine CPU over the run in cores (from
/proc/stat), cores per Gb/s, and the same less the idle machine's CPU measured just before (other
engineers' daemons). Each variant --repeat times, interleaved; medians.

Everything it creates is named with its PID (namespaces flfl<pid>{a,b}, veths flfl<pid>{a,b}0,
inside those namespaces) and deleted by those names at the end, whatever happens. Run as root:
`.venv/bin/python bench/tcpfloor.py [--flows 10] [--rate-mbps 100] [--seconds 15] [--repeat 3]`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.brnf import Bench, busy_ticks, sh  # noqa: E402

ADDR_A, ADDR_B = "10.254.78.1", "10.254.78.2"  # inside the bench's namespaces only; no route out
BASE_PORT = 5310
VARIANTS = ("pace", "htb")
IDLE_S = 3.0


def htb_commands(dev: str, flows: int, rate_mbps: float) -> list[list[str]]:
    """tc commands (pure): one HTB class of `rate_mbps` per flow on `dev`, flow k by destination port."""
    cmds = [["tc", "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "999"],
            ["tc", "class", "add", "dev", dev, "parent", "1:", "classid", "1:999", "htb", "rate", "10gbit"]]
    for k in range(flows):
        cls = f"1:{k + 1:x}"
        cmds.append(["tc", "class", "add", "dev", dev, "parent", "1:", "classid", cls, "htb",
                     "rate", f"{rate_mbps:g}mbit", "burst", "64k", "cburst", "64k"])
        cmds.append(["tc", "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1",
                     "u32", "match", "ip", "dport", str(BASE_PORT + k), "0xffff", "flowid", cls])
    return cmds


def client_argv(k: int, variant: str, rate_mbps: float, seconds: float, cc: str) -> list[str]:
    """Flow k's iperf3 client (pure)."""
    argv = ["iperf3", "-c", ADDR_B, "-p", str(BASE_PORT + k), "-t", f"{seconds:g}", "-J", "-C", cc]
    if variant == "pace":
        argv += ["--fq-rate", f"{rate_mbps:g}M"]
    return argv


def idle_cores() -> float:
    busy0, total0 = busy_ticks()
    time.sleep(IDLE_S)
    busy1, total1 = busy_ticks()
    return (busy1 - busy0) / (total1 - total0) * (os.cpu_count() or 1)


def measure(variant: str, flows: int, rate_mbps: float, seconds: float, cc: str) -> dict[str, float]:
    bench = Bench(tag=f"flfl{os.getpid()}")
    servers: list[subprocess.Popen[bytes]] = []
    clients: list[subprocess.Popen[str]] = []
    try:
        a, b = bench.ns("a"), bench.ns("b")
        sh(["ip", "link", "add", f"{a}0", "netns", a, "type", "veth", "peer", "name", f"{b}0", "netns", b])
        for ns, dev, addr in ((a, f"{a}0", ADDR_A), (b, f"{b}0", ADDR_B)):
            sh(["ip", "addr", "add", f"{addr}/24", "dev", dev], ns=ns)
            sh(["ip", "link", "set", dev, "up"], ns=ns)
        if variant == "htb":
            for cmd in htb_commands(f"{a}0", flows, rate_mbps):
                sh(cmd, ns=a)
        sh(["ping", "-c", "2", "-i", "0.2", "-W", "2", ADDR_B], ns=a)
        for k in range(flows):
            servers.append(subprocess.Popen(["ip", "netns", "exec", b, "iperf3", "-s", "-1", "-p",
                                             str(BASE_PORT + k)], stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL))
        time.sleep(0.5)
        idle = idle_cores()
        busy0, total0 = busy_ticks()
        for k in range(flows):
            clients.append(subprocess.Popen(["ip", "netns", "exec", a,
                                             *client_argv(k, variant, rate_mbps, seconds, cc)],
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outs = [c.communicate(timeout=seconds + 30)[0] for c in clients]
        busy1, total1 = busy_ticks()
        gbps = sum(json.loads(o)["end"]["sum_received"]["bits_per_second"] for o in outs) / 1e9
        cores = (busy1 - busy0) / (total1 - total0) * (os.cpu_count() or 1)
        return {"gbps": gbps, "cores": cores, "cores_per_gbps": cores / gbps, "idle_cores": idle,
                "net_cores_per_gbps": (cores - idle) / gbps}
    finally:
        procs: list[subprocess.Popen[Any]] = [*clients, *servers]
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)
        bench.teardown()


FIGURES = ("gbps", "cores", "cores_per_gbps", "idle_cores", "net_cores_per_gbps")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flows", type=int, default=10)
    ap.add_argument("--rate-mbps", type=float, default=100.0, help="per flow")
    ap.add_argument("--seconds", type=float, default=15.0, help="per run")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--cc", default="cubic", help="the flows' congestion control")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/tcpfloor.py: namespaces need root", file=sys.stderr)
        return 2
    variants = args.variants.split(",")
    if not set(variants) <= set(VARIANTS) or not 1 <= args.flows <= 64:
        ap.error(f"--variants: of {', '.join(VARIANTS)}; --flows: 1..64")
    runs: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    for r in range(args.repeat):
        for v in variants:
            m = measure(v, args.flows, args.rate_mbps, args.seconds, args.cc)
            runs[v].append(m)
            print(f"  repeat {r + 1} {v:>4}: " + ", ".join(f"{k} {m[k]:.4f}" for k in FIGURES), flush=True)
    print(f"{args.flows} flows x {args.rate_mbps:g} Mb/s, {args.cc}, {args.seconds:g} s, medians of {args.repeat}:")
    med = {v: {k: statistics.median(m[k] for m in runs[v]) for k in FIGURES} for v in variants}
    for v in variants:
        print(f"  {v:>4}: " + ", ".join(f"{k} {med[v][k]:.4f}" for k in FIGURES))
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "medians": med, "args": vars(args)}, default=str,
                                        indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
