"""CPU cost of fastlab's FAST and HSTCP (BPF struct_ops) next to the kernel's CUBIC, side by side.

Each algorithm carries one flow through the same path (dumbbell, Linux bridges, emulator at
1 Gb/s, 10 ms RTT, one-BDP buffer) for the same time. Whole-machine busy CPU is sampled from
/proc/stat between the first and the last trace sample, so it covers the flow only (not the
network build): emulator, both TCP stacks and the algorithm. The differences between the rows
are the algorithms' own cost. Also printed: internal-state events per second from the ring
buffer.

Run as root: `sudo make bench` or `sudo .venv/bin/python bench/cc.py [--duration S]`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastlab.base.rundir import EVENTS, RunFolder  # noqa: E402
from fastlab.define.schema import parse_spec  # noqa: E402
from fastlab.experiment.engine import run_experiment  # noqa: E402

CASES = (("cubic", {}), ("fast", {"alpha": 50}), ("hstcp", {}))


def busy_and_total_jiffies() -> tuple[int, int]:
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


class CpuWindow:
    """Busy CPU between the first and the last flow sample of a run."""

    def __init__(self) -> None:
        self.first: tuple[float, tuple[int, int]] | None = None
        self.last: tuple[float, tuple[int, int]] | None = None

    def __call__(self, sample: dict[str, Any]) -> None:
        if sample["kind"] != "flow":
            return
        mark = (sample["t"], busy_and_total_jiffies())
        if self.first is None:
            self.first = mark
        self.last = mark

    def cores(self) -> float:
        (_t0, (b0, a0)), (_t1, (b1, a1)) = self.first, self.last
        ncpu = len([line for line in Path("/proc/stat").read_text().splitlines() if line[:3] == "cpu"]) - 1
        return (b1 - b0) / (a1 - a0) * ncpu


def measure(cc: str, args: dict[str, Any], duration_s: float, out: Path) -> dict[str, Any]:
    spec = parse_spec({"name": f"bench-cc-{cc}", "topology": "dumbbell", "duration_s": duration_s, "seed": 1,
                       "switch": "bridge", "topology_args": {"rate_mbps": 1000, "rtt_ms": 10},
                       "flows": [{"src": "h1", "dst": "h2", "cc": cc, "cc_args": args}]})
    cpu = CpuWindow()
    result = run_experiment(spec, out=out, on_sample=cpu)
    flow = result.summary.flows[0]
    gbps = (flow.throughput_mbps or 0.0) / 1000
    folder = RunFolder(out)
    per_s = len(folder.events()) / duration_s if folder.has(EVENTS) else 0.0
    return {"cc": cc, "goodput_gbps": gbps, "busy_cores": cpu.cores(), "cores_per_gbps": cpu.cores() / gbps,
            "events_per_s": per_s, "retransmits": flow.retransmits}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=20.0)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="fastlab-bench-cc-"))
    rows = [measure(cc, cc_args, args.duration, root / cc) for cc, cc_args in CASES]
    table = pd.DataFrame(rows)
    base = table.loc[table["cc"] == "cubic", "cores_per_gbps"].iloc[0]
    table["vs_cubic"] = table["cores_per_gbps"] / base
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
