"""Fidelity and cost of the link emulator: the per-packet path and the fast path, side by side.

For each path (dumbbell, one CUBIC flow, one-BDP buffer, Linux bridges, the emulator as the only
shaped link) it runs the same spec twice in one invocation, `fast_path: off` (offloads off, one
frame per MTU packet: the path before the fast path existed) and `fast_path: auto` (TSO/GSO
super-frames whole through linkemu), alternating, and prints per run:
- steady goodput / rate after a warm-up, and the same in SC2002's sense: goodput over the rate
  less 40 header bytes per 1500-byte packet (with TCP timestamps a packet carries 1448 payload
  bytes, so the ceiling of that ratio is 1448/1460 = 0.992; of plain goodput/rate, 0.965);
- emulator cores per Gb/s carried while the flow ran (CPU time of the emulator process, which
  also pays for the kernel work its send calls trigger downstream);
- departure lateness p50/p99 (sent - scheduled, per segment, both directions' worst);
- the run's fidelity verdict.
Then the ratio fast/per-packet of each figure. Targets (issue 11): SC2002 utilization >= 0.97 at
1 Gb/s x 80 ms and 1 Gb/s x 180 ms, >= 0.90 at 5 Gb/s x 20 ms; <= 0.15 emulator cores per Gb/s
and lateness p99 <= 0.2 ms at 1 Gb/s. The machine is shared: run it with `--repeat 3` and quote
medians.

Run as root: `sudo make bench` or `sudo .venv/bin/python bench/emulator.py [--duration S] [--repeat N]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastlab.engine import run_experiment  # noqa: E402
from fastlab.spec import parse_spec  # noqa: E402

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


def measure(case: Case, mode: str, duration_s: float, out: Path) -> dict[str, Any]:
    spec = parse_spec({
        "name": f"bench-{int(case.rate_mbps)}m-{int(case.rtt_ms)}ms-{mode}", "topology": "dumbbell",
        "topology_args": {"rate_mbps": case.rate_mbps, "rtt_ms": case.rtt_ms, "buffer_bdp": 1.0},
        "duration_s": duration_s, "seed": 1, "switch": "bridge", "fast_path": mode,
        "flows": [{"src": "h1", "dst": "h2", "cc": "cubic"}],
        "links": {"bottleneck": {"backend": "emulator"}}})
    result = run_experiment(spec, out=out)
    flow = result.summary["flows"][0]
    fid = result.summary["fidelity"]
    flows = pd.read_csv(out / "flows.csv")
    steady = flows[flows["t"] >= WARMUP_S]
    acked = steady["bytes_acked"].iloc[-1] - steady["bytes_acked"].iloc[0]
    steady_mbps = acked * 8 / 1e6 / (steady["t"].iloc[-1] - steady["t"].iloc[0])
    late = fid["links"]["bottleneck"]
    cores = fid["emulator_cores"]["bottleneck"]
    return {"path": case.label, "fast_path": mode,
            "goodput_rate": steady_mbps / case.rate_mbps,
            "sc2002_util": steady_mbps / (case.rate_mbps * PAYLOAD_SHARE),
            "cores_per_gbps": cores / (steady_mbps / 1000) if steady_mbps else float("nan"),
            "late_p50_us": max(d["late_p50_us"] or 0 for d in late.values()),
            "late_p99_us": max(d["late_p99_us"] or 0 for d in late.values()),
            "sock_drops": sum(d["sock_drops"] for d in late.values()),
            "machine_busy": fid["machine_busy"], "faithful": fid["faithful"],
            "retransmits": flow["retransmits"], "target": case.target, "run": str(out)}


FIGURES = ("goodput_rate", "sc2002_util", "cores_per_gbps", "late_p50_us", "late_p99_us", "machine_busy")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=40.0, help="seconds per run")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each (path, mode); medians are printed")
    parser.add_argument("--keep", action="store_true", help="keep the run directories")
    parser.add_argument("--only", help="run only the case whose label contains this text")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="fastlab-bench-"))
    rows = []
    cases = [c for c in CASES if not args.only or args.only in c.label]
    for rep in range(args.repeat):
        for i, case in enumerate(cases):
            for mode in MODES:  # side by side: the two modes alternate
                rows.append(measure(case, mode, args.duration, root / f"r{rep}-c{i}-{mode}"))
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
        print(f"{case.label}: fast path SC2002 utilization {fast['sc2002_util']:.3f} "
              f"({'meets' if fast['sc2002_util'] >= case.target else 'BELOW'} {case.target:.2f}; per-packet path "
              f"{off['sc2002_util']:.3f}, ratio {fast['sc2002_util'] / off['sc2002_util']:.2f}); "
              f"{fast['cores_per_gbps']:.3f} emulator cores per Gb/s (per-packet {off['cores_per_gbps']:.3f}, "
              f"ratio {fast['cores_per_gbps'] / off['cores_per_gbps']:.2f}); lateness p99 "
              f"{fast['late_p99_us']:.0f} us (per-packet {off['late_p99_us']:.0f}); faithful: {verdicts}")
    print(json.dumps({"warmup_s": WARMUP_S, "duration_s": args.duration, "repeat": args.repeat}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
