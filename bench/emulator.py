"""Fidelity and cost of the link emulator: the per-packet path and the fast path, side by side.

For each path (dumbbell, one CUBIC flow, one-BDP buffer, Linux bridges, the emulator as the only
shaped link) it runs the same spec twice in one invocation, `fast_path: off` (offloads off, one
frame per MTU packet: the path before the fast path existed) and `fast_path: auto` (TSO/GSO
super-frames whole through linkemu), alternating, and prints per run:
- steady goodput / rate after a warm-up, and the same in SC2002's sense: goodput over the rate
  less 40 header bytes per 1500-byte packet (with TCP timestamps a packet carries 1448 payload
  bytes, so the ceiling of that ratio is 1448/1460 = 0.992; of plain goodput/rate, 0.965);
- emulator cores per Gb/s carried while the flow ran (CPU time of the emulator process). On the
  per-packet path that also pays for the kernel work its send calls trigger downstream (the next
  bridge or router and the receiving host's TCP); on the fast path the interfaces behind the
  emulator receive in threaded NAPI, so that work runs in those kernel threads, printed beside it
  (`receive_threads_cores_per_gbps`), with the whole machine's CPU per Gb/s (`machine_cores_per_gbps`:
  senders, receivers, switches and emulator together);
- with `--perf` (perf(1) installed), the share of that CPU time spent in network softirq work run in
  the emulator's context (the bridges, the next veth and the receiving host's TCP stack processing
  what the emulator sent; without IRQ-time accounting the kernel bills it to the sending task), from
  10 s of call-graph samples after the warm-up, and the emulator's own cores per Gb/s without it;
- departure lateness p50/p99 (sent - scheduled, per segment, both directions' worst);
- the run's fidelity verdict, and the hypervisor's steal share of the CPU time while the flows ran
  (on a virtual machine, time its CPUs were ready but the host ran something else: it delays the
  emulator's wake-ups, so lateness is read beside it).
Then the ratio fast/per-packet of each figure. Targets (issue 11): SC2002 utilization >= 0.97 at
1 Gb/s x 80 ms and 1 Gb/s x 180 ms, >= 0.90 at 5 Gb/s x 20 ms; <= 0.15 emulator cores per Gb/s
and lateness p99 <= 0.2 ms at 1 Gb/s. The machine is shared: run it with `--repeat 3` and quote
medians.

Run as root: `sudo make bench` or `sudo .venv/bin/python bench/emulator.py [--duration S] [--repeat N]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastlab.base.rundir import RunFolder  # noqa: E402
from fastlab.define.schema import parse_spec  # noqa: E402
from fastlab.experiment.engine import run_experiment  # noqa: E402
from fastlab.measure.analysis import steady_goodput_mbps  # noqa: E402

WARMUP_S = 10.0
PAYLOAD_SHARE = 1460 / 1500  # SC2002: capacity less 40 bytes of TCP/IP headers per packet


@dataclass(frozen=True)
class Case:
    label: str
    rate_mbps: float
    rtt_ms: float
    target: float  # SC2002-sense utilization the fast path must reach


CASES = (Case("1 Gb/s x 80 ms", 1000, 80, 0.97),
         Case("1 Gb/s x 180 ms", 1000, 180, 0.97),
         Case("5 Gb/s x 20 ms", 5000, 20, 0.90))
MODES = ("off", "auto")  # fast_path
# Issue 11's targets at 1 Gb/s: emulator CPU per Gb/s, and departure lateness p99 (a tenth of the
# ~2 ms of queueing FAST aims at with alpha 200 at 1 Gb/s x 180 ms is 0.2 ms)
CORES_PER_GBPS_TARGET = 0.15
LATE_P99_TARGET_US = 200.0


PERF_SECONDS = 10.0
PERF_HZ = 499  # not a multiple of the 250 Hz tick or of the emulator's 1 kHz-ish wake-ups
SOFTIRQ_FRAMES = ("net_rx_action", "process_backlog", "__netif_receive_skb")


def linkemu_pids(mark: str) -> list[int]:
    """The linkemu processes whose argv holds `mark` (a path unique to one run, e.g. its folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"linkemu") and any(mark.encode() in a for a in argv):
            found.append(int(entry.name))
    return found


def _emulator_pid(drops_log: str) -> int | None:
    """The linkemu process of this run: the one whose argv names this run's drops log (unique)."""
    pids = linkemu_pids(drops_log)
    return pids[0] if pids else None


def proc_cpu_ticks(stat_line: str) -> int:
    """utime + stime, in clock ticks, from one /proc/<pid>/stat line (pure; comm may hold spaces)."""
    fields = stat_line.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of proc(5), counted after comm


class ReceiveThreads:
    """CPU of the kernel's NAPI threads (napi/<dev>-<id>) over the steady part of a run, from its samples."""

    def __init__(self) -> None:
        self.first: tuple[float, int] | None = None
        self.last: tuple[float, int] | None = None

    @staticmethod
    def ticks() -> int:
        total = 0
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and (entry / "comm").read_text().startswith("napi/"):
                    total += proc_cpu_ticks((entry / "stat").read_text())
            except OSError:
                continue
        return total

    def on_sample(self, sample: dict[str, Any]) -> None:
        t = float(sample.get("t", 0))
        if t >= WARMUP_S:
            snap = (t, self.ticks())
            self.first = self.first or snap
            self.last = snap

    def cores(self) -> float:
        if not self.first or not self.last or self.last[0] <= self.first[0]:
            return float("nan")
        return (self.last[1] - self.first[1]) / os.sysconf("SC_CLK_TCK") / (self.last[0] - self.first[0])


def softirq_share(perf_script: str) -> tuple[float, int]:
    """Share of call-graph samples with a network softirq frame in their stack (pure, on `perf script`)."""
    samples = [block for block in perf_script.split("\n\n") if block.strip()]
    hits = sum(1 for block in samples if any(frame in block for frame in SOFTIRQ_FRAMES))
    return (hits / len(samples) if samples else float("nan")), len(samples)


class PerfSplit:
    """Samples the run's emulator with perf for PERF_SECONDS once the warm-up is over (a thread)."""

    def __init__(self, drops_log: Path, workdir: Path) -> None:
        self.drops_log, self.data = str(drops_log), workdir / "perf.data"
        self.share, self.samples = float("nan"), 0
        self._thread: threading.Thread | None = None

    def on_sample(self, sample: dict[str, Any]) -> None:
        if self._thread is None and sample.get("t", 0) >= WARMUP_S:
            self._thread = threading.Thread(target=self._record, daemon=True)
            self._thread.start()

    def _record(self) -> None:
        pid = _emulator_pid(self.drops_log)
        if pid is None:
            return
        subprocess.run(["perf", "record", "-q", "-F", str(PERF_HZ), "-g", "-p", str(pid), "-o", str(self.data),
                        "--", "sleep", str(PERF_SECONDS)], capture_output=True, timeout=PERF_SECONDS + 30,
                       check=False)
        script = subprocess.run(["perf", "script", "-i", str(self.data)], capture_output=True,
                                text=True, timeout=120, check=False, env={**os.environ, "LC_ALL": "C"})
        self.share, self.samples = softirq_share(script.stdout)
        self.data.unlink(missing_ok=True)

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join(timeout=PERF_SECONDS + 180)


def measure(case: Case, mode: str, duration_s: float, out: Path, perf: bool = False) -> dict[str, Any]:
    spec = parse_spec({
        "name": f"bench-{int(case.rate_mbps)}m-{int(case.rtt_ms)}ms-{mode}", "topology": "dumbbell",
        "topology_args": {"rate_mbps": case.rate_mbps, "rtt_ms": case.rtt_ms, "buffer_bdp": 1.0},
        "duration_s": duration_s, "seed": 1, "switch": "bridge", "fast_path": mode,
        "flows": [{"src": "h1", "dst": "h2", "cc": "cubic"}],
        "links": {"bottleneck": {"backend": "emulator"}}})
    split = PerfSplit(out / "loss_drops_bottleneck.txt", out.parent) if perf else None
    threads = ReceiveThreads()

    def on_sample(sample: dict[str, Any]) -> None:
        threads.on_sample(sample)
        if split:
            split.on_sample(sample)

    result = run_experiment(spec, out=out, on_sample=on_sample)
    if split:
        split.join()
    flow = result.summary.flows[0].dump()
    fid = result.summary.fidelity.dump() if result.summary.fidelity is not None else {}
    steady_mbps = steady_goodput_mbps(RunFolder(out).flows(), WARMUP_S)
    late = fid["links"]["bottleneck"]
    cores = fid["emulator_cores"]["bottleneck"]
    return {"path": case.label, "fast_path": mode,
            "goodput_rate": steady_mbps / case.rate_mbps,
            "sc2002_util": steady_mbps / (case.rate_mbps * PAYLOAD_SHARE),
            "cores_per_gbps": cores / (steady_mbps / 1000) if steady_mbps else float("nan"),
            "receive_threads_cores_per_gbps": threads.cores() / (steady_mbps / 1000) if steady_mbps else float("nan"),
            "machine_cores_per_gbps": (fid["machine_busy"] * (os.cpu_count() or 1) / (steady_mbps / 1000)
                                       if steady_mbps else float("nan")),
            "late_p50_us": max(d["late_p50_us"] or 0 for d in late.values()),
            "late_p99_us": max(d["late_p99_us"] or 0 for d in late.values()),
            "sock_drops": sum(d["sock_drops"] for d in late.values()),
            "machine_busy": fid["machine_busy"], "steal": fid.get("machine_steal"), "faithful": fid["faithful"],
            "softirq_share": split.share if split else float("nan"),
            "own_cores_per_gbps": (cores * (1 - split.share) / (steady_mbps / 1000)
                                   if split and steady_mbps else float("nan")),
            "retransmits": flow["retransmits"], "target": case.target, "run": str(out)}


FIGURES = ("goodput_rate", "sc2002_util", "cores_per_gbps", "own_cores_per_gbps", "softirq_share",
           "receive_threads_cores_per_gbps", "machine_cores_per_gbps", "late_p50_us", "late_p99_us", "machine_busy",
           "steal")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=40.0, help="seconds per run")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each (path, mode); medians are printed")
    parser.add_argument("--keep", action="store_true", help="keep the run directories")
    parser.add_argument("--only", help="run only the case whose label contains this text")
    parser.add_argument("--perf", action="store_true",
                        help="also split the emulator's CPU into its own work and downstream softirq work (perf)")
    args = parser.parse_args()
    if args.perf and shutil.which("perf") is None:
        parser.error("--perf needs perf(1) (Debian: linux-perf)")
    root = Path(tempfile.mkdtemp(prefix="fastlab-bench-"))
    rows = []
    cases = [c for c in CASES if not args.only or args.only in c.label]
    for rep in range(args.repeat):
        for i, case in enumerate(cases):
            for mode in MODES:  # side by side: the two modes alternate
                rows.append(measure(case, mode, args.duration, root / f"r{rep}-c{i}-{mode}", args.perf))
    table = pd.DataFrame(rows)
    med = table.groupby(["path", "fast_path"], sort=False)[list(FIGURES)].median().reset_index()
    with pd.option_context("display.width", 220, "display.max_columns", 30, "display.float_format", "{:.3f}".format):
        print(table.drop(columns=[] if args.keep else ["run"]).to_string(index=False))
        print(f"\nmedians over {args.repeat} run(s) each:")
        print(med.to_string(index=False))
    for case in cases:
        off = med[(med["path"] == case.label) & (med["fast_path"] == "off")].iloc[0]
        fast = med[(med["path"] == case.label) & (med["fast_path"] == "auto")].iloc[0]
        verdicts = table[(table["path"] == case.label) & (table["fast_path"] == "auto")]["faithful"].tolist()
        at_1g = case.rate_mbps == 1000  # the CPU and lateness targets are set at 1 Gb/s
        cores_mark = (f" ({'meets' if fast['cores_per_gbps'] <= CORES_PER_GBPS_TARGET else 'ABOVE'} "
                      f"{CORES_PER_GBPS_TARGET})" if at_1g else "")
        late_mark = (f" ({'meets' if fast['late_p99_us'] <= LATE_P99_TARGET_US else 'ABOVE'} "
                     f"{LATE_P99_TARGET_US:.0f})" if at_1g else "")
        split = (f"own work without the downstream softirq share {fast['softirq_share']:.2f}: "
                 f"{fast['own_cores_per_gbps']:.3f}; " if args.perf else "")
        print(f"{case.label}: fast path SC2002 utilization {fast['sc2002_util']:.3f} "
              f"({'meets' if fast['sc2002_util'] >= case.target else 'BELOW'} {case.target:.2f}; per-packet path "
              f"{off['sc2002_util']:.3f}, ratio {fast['sc2002_util'] / off['sc2002_util']:.2f}); "
              f"{fast['cores_per_gbps']:.3f} emulator cores per Gb/s{cores_mark} (per-packet "
              f"{off['cores_per_gbps']:.3f}, ratio {fast['cores_per_gbps'] / off['cores_per_gbps']:.2f}; {split}"
              f"receive threads {fast['receive_threads_cores_per_gbps']:.3f}; whole machine "
              f"{fast['machine_cores_per_gbps']:.2f}, per-packet {off['machine_cores_per_gbps']:.2f}); lateness p99 "
              f"{fast['late_p99_us']:.0f} us{late_mark} (per-packet {off['late_p99_us']:.0f}); "
              f"steal {fast['steal']:.3f}; faithful: {verdicts}")
    print(json.dumps({"warmup_s": WARMUP_S, "duration_s": args.duration, "repeat": args.repeat}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
