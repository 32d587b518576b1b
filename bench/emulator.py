"""Fidelity and cost of the userspace link emulator, measured side by side in one run.

For each path (single CUBIC flow, one-BDP buffer, the emulator forced as backend) it prints:
goodput / configured rate over the whole flow and after a warm-up, idle RTT error against the
configured RTT, and the emulator's CPU cost per Gb/s carried. Targets (issue 2): >= 0.95 at
100 Mb/s x 180 ms and >= 0.90 at 1 Gb/s x 80 ms. The 1 Gb/s path uses Linux bridges as access
switches: OVS's userspace datapath tops out near 0.8 Gb/s on this kind of machine and would
measure OVS, not the emulator.

Run as root: `sudo make bench` or `sudo .venv/bin/python bench/emulator.py [--duration S]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastlab.engine import run_experiment  # noqa: E402
from fastlab.spec import parse_spec  # noqa: E402

WARMUP_S = 10.0


@dataclass(frozen=True)
class Case:
    label: str
    rate_mbps: float
    rtt_ms: float
    switch: str
    target: float


CASES = (Case("100 Mb/s x 180 ms", 100, 180, "auto", 0.95),
         Case("1 Gb/s x 80 ms", 1000, 80, "bridge", 0.90))


def measure(case: Case, duration_s: float, out: Path) -> dict[str, float | str]:
    spec = parse_spec({
        "name": f"bench-{int(case.rate_mbps)}m-{int(case.rtt_ms)}ms", "topology": "dumbbell",
        "topology_args": {"rate_mbps": case.rate_mbps, "rtt_ms": case.rtt_ms, "buffer_bdp": 1.0},
        "duration_s": duration_s, "seed": 1, "switch": case.switch,
        "flows": [{"src": "h1", "dst": "h2", "cc": "cubic"}],
        "links": {"bottleneck": {"backend": "emulator"}}})
    result = run_experiment(spec, out=out)
    flow = result.summary["flows"][0]
    flows = pd.read_csv(out / "flows.csv")
    steady = flows[flows["t"] >= WARMUP_S]
    acked = steady["bytes_acked"].iloc[-1] - steady["bytes_acked"].iloc[0]
    steady_mbps = acked * 8 / 1e6 / (steady["t"].iloc[-1] - steady["t"].iloc[0])
    idle = result.summary["idle_rtt"][0]["min_ms"]
    shaping = result.environment["shaping"][0]
    cpu_s = shaping.get("emulator_cpu_s") or float("nan")
    carried_gbit = flow["throughput_mbps"] * duration_s / 1000
    return {"path": case.label, "target": case.target,
            "goodput_ratio": flow["throughput_mbps"] / case.rate_mbps,
            "steady_goodput_ratio": steady_mbps / case.rate_mbps,
            "idle_rtt_ms": idle, "idle_rtt_error_ms": idle - case.rtt_ms,
            "tcp_min_rtt_error_ms": flow["min_rtt_ms"] - case.rtt_ms,
            "emulator_cpu_s_per_gbit": cpu_s / carried_gbit if carried_gbit else float("nan"),
            "emulator_cores_per_gbps": (cpu_s / duration_s) / (flow["throughput_mbps"] / 1000),
            "retransmits": flow["retransmits"], "run": str(out)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=40.0, help="seconds per path")
    parser.add_argument("--keep", action="store_true", help="keep the run directories")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="fastlab-bench-"))
    rows = [measure(case, args.duration, root / f"case{i}") for i, case in enumerate(CASES)]
    table = pd.DataFrame(rows).drop(columns=[] if args.keep else ["run"])
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.3f}".format):
        print(table.to_string(index=False))
    for row in rows:
        verdict = "meets" if row["steady_goodput_ratio"] >= row["target"] else "BELOW"
        print(f"{row['path']}: steady goodput/rate {row['steady_goodput_ratio']:.3f} {verdict} target "
              f"{row['target']:.2f} (whole flow incl. slow start: {row['goodput_ratio']:.3f}); idle RTT error "
              f"{row['idle_rtt_error_ms']:+.2f} ms (ping, ms resolution above 100 ms), TCP min RTT error "
              f"{row['tcp_min_rtt_error_ms']:+.3f} ms; emulator {row['emulator_cores_per_gbps']:.2f} cores per Gb/s")
    print(json.dumps({"warmup_s": WARMUP_S, "duration_s": args.duration}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
