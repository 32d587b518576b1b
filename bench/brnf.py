"""What bridged frames passing the host's netfilter hooks cost (issue 34 item 2), side by side in one run.

Mininet warns "Linux bridge may not work with net.bridge.bridge-nf-call-iptables = 1" on every run that
uses Linux bridges: with br_netfilter active, each bridged IPv4 frame goes through br_netfilter's hooks
(and iptables' if any table is registered). The setting is per network namespace on this kernel (checked
2026-11-27: writing 0 inside a new namespace leaves the host's 1 untouched), so a bridge inside a
namespace of its own can have it off without changing the host for other software.

This bench measures the cost without touching the host's setting: TCP (iperf3, one stream, the veths'
default offloads, as fastlab's fast path runs) between two namespaces through one Linux bridge,
- `root`: the bridge in the host's namespace, as fastlab's switches are today (the host's setting,
  read and printed, not changed);
- `ns-on`: the bridge in a namespace of its own with bridge-nf-call-{arp,ip,ip6}tables = 1;
- `ns-off`: the same with them 0.
Per variant: throughput, whole-machine CPU (from /proc/stat) in cores, cores per Gb/s; each variant
`--repeat` times, interleaved, medians; then each variant's cores per Gb/s against `ns-off`.
`--rate-gbps R` paces the sender (iperf3 -b) so every variant carries the same load.

Everything it creates is named with its PID (namespaces flbrnf<pid>{a,b,s}, root bridge flbrnf<pid>,
veths flbrnf<pid>{a,b}{0,1}) and deleted by those names at the end, whatever happens. Run as root:
`.venv/bin/python bench/brnf.py [--repeat 5] [--seconds 8] [--rate-gbps R]`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

TABLES = ("arp", "ip", "ip6")
HOST_SETTING = Path("/proc/sys/net/bridge/bridge-nf-call-iptables")
ADDR_A, ADDR_B = "10.254.77.1", "10.254.77.2"  # inside the bench's namespaces only; no route out
IPERF_PORT = 5299
VARIANTS = ("root", "ns-on", "ns-off")


def sh(argv: list[str], ns: str | None = None, check: bool = True, timeout: float = 30) -> str:
    full = (["ip", "netns", "exec", ns] if ns else []) + argv
    out = subprocess.run(full, capture_output=True, text=True, timeout=timeout, env={**os.environ, "LC_ALL": "C"})
    if check and out.returncode != 0:
        raise RuntimeError(f"{' '.join(full)}: {out.stderr.strip() or out.stdout.strip()}")
    return out.stdout


def busy_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine from /proc/stat's first line."""
    f = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = f[3] + f[4]
    return sum(f) - idle, sum(f)


@dataclass
class Bench:
    """One bench's namespaces and links, named by its PID; `teardown` deletes exactly those."""

    tag: str = field(default_factory=lambda: f"flbrnf{os.getpid()}")
    created_ns: list[str] = field(default_factory=list)
    created_links: list[str] = field(default_factory=list)

    def ns(self, suffix: str) -> str:
        name = self.tag + suffix
        sh(["ip", "netns", "add", name])
        self.created_ns.append(name)
        sh(["ip", "link", "set", "lo", "up"], ns=name)
        return name

    def build(self, variant: str) -> tuple[str, str]:
        """Two end namespaces joined by one bridge where `variant` puts it; returns (a, b)."""
        a, b = self.ns("a"), self.ns("b")
        where = None if variant == "root" else self.ns("s")
        bridge = self.tag
        if where is None:
            self.created_links.append(bridge)
        sh(["ip", "link", "add", bridge, "type", "bridge"], ns=where)
        if where is not None:
            for table in TABLES:
                value = "1" if variant == "ns-on" else "0"
                sh(["sysctl", "-q", "-w", f"net.bridge.bridge-nf-call-{table}tables={value}"], ns=where)
        for end, addr in ((a, ADDR_A), (b, ADDR_B)):
            side, port = f"{end}0", f"{end}1"  # names: flbrnf<pid>a0 in the end, ...a1 on the bridge
            if where is None:
                self.created_links.append(port)
            sh(["ip", "link", "add", side, "netns", end, "type", "veth", "peer", "name", port]
               + ([] if where is None else ["netns", where]))
            sh(["ip", "link", "set", port, "master", bridge, "up"], ns=where)
            sh(["ip", "addr", "add", f"{addr}/24", "dev", side], ns=end)
            sh(["ip", "link", "set", side, "up"], ns=end)
        sh(["ip", "link", "set", bridge, "up"], ns=where)
        return a, b

    def teardown(self) -> None:
        for link in reversed(self.created_links):
            sh(["ip", "link", "del", link], check=False)
        for name in reversed(self.created_ns):
            sh(["ip", "netns", "del", name], check=False)
        self.created_links.clear()
        self.created_ns.clear()


def measure(variant: str, seconds: float, rate_gbps: float | None) -> dict[str, float]:
    bench = Bench()
    server = None
    try:
        a, b = bench.build(variant)
        sh(["ping", "-c", "3", "-i", "0.2", "-W", "2", ADDR_B], ns=a)  # the bridge forwards
        server = subprocess.Popen(["ip", "netns", "exec", b, "iperf3", "-s", "-1", "-p", str(IPERF_PORT)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        busy0, total0 = busy_ticks()
        argv = ["iperf3", "-c", ADDR_B, "-p", str(IPERF_PORT), "-t", str(seconds), "-J"]
        if rate_gbps:
            argv += ["-b", f"{rate_gbps}G"]
        out = json.loads(sh(argv, ns=a, timeout=seconds + 30))
        busy1, total1 = busy_ticks()
        gbps = out["end"]["sum_received"]["bits_per_second"] / 1e9
        cores = (busy1 - busy0) / (total1 - total0) * (os.cpu_count() or 1)
        return {"gbps": gbps, "cores": cores, "cores_per_gbps": cores / gbps}
    finally:
        if server is not None:
            server.kill()
            server.wait(timeout=10)
        bench.teardown()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rate-gbps", type=float)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/brnf.py: namespaces and bridges need root", file=sys.stderr)
        return 2
    host = {t: Path(f"/proc/sys/net/bridge/bridge-nf-call-{t}tables").read_text().strip() for t in TABLES}
    print(f"host: bridge-nf-call-{{arp,ip,ip6}}tables = {host['arp']}/{host['ip']}/{host['ip6']} (read, not changed)")
    runs: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
    for r in range(args.repeat):
        for variant in VARIANTS:
            m = measure(variant, args.seconds, args.rate_gbps)
            runs[variant].append(m)
            print(f"  repeat {r + 1} {variant:>6}: {m['gbps']:6.2f} Gb/s, {m['cores']:.2f} cores, "
                  f"{m['cores_per_gbps']:.4f} cores per Gb/s")
    med = {v: {k: statistics.median(m[k] for m in runs[v]) for k in ("gbps", "cores", "cores_per_gbps")}
           for v in VARIANTS}
    base = med["ns-off"]["cores_per_gbps"]
    print(f"{'variant':>8} {'Gb/s':>7} {'cores':>6} {'cores/Gb/s':>11} {'vs ns-off':>10}   (medians of {args.repeat})")
    for v in VARIANTS:
        print(f"{v:>8} {med[v]['gbps']:7.2f} {med[v]['cores']:6.2f} {med[v]['cores_per_gbps']:11.4f} "
              f"{med[v]['cores_per_gbps'] / base:10.3f}")
    if args.json:
        args.json.write_text(json.dumps({"host": host, "runs": runs, "medians": med, "args": vars(args)},
                                        default=str, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
