"""SC2002 Table 1, rows 1 and 2, at full scale: measured against the published figures.

On `sc2002` at `scale: 1.0` (GbE access ports, DataTAG 2.5 Gb/s, Level(3) 10 Gb/s, 180 ms RTT),
each case runs CERN -> Sunnyvale for --duration seconds (default 90) and reports the mean goodput
from --from seconds (default 30) to the end, as the issue asks:
- FAST, 1 flow (published 925 Mb/s = 0.95) and 2 flows, each from its own CERN host to its own
  Sunnyvale host over its own GbE ports (published 1,797 Mb/s = 0.92);
- Linux CUBIC and Reno alone on the same path (1 flow), as the paper's parenthesised Linux
  figures stood beside FAST's;
each with its fidelity verdict. Utilization is SC2002's: goodput over the GbE capacity less 40
bytes of TCP/IP headers per 1500-byte packet (973.3 Mb/s per port). bmps = throughput x distance.

FAST runs with alpha = 200 packets (2.4 ms of queue at 1 Gb/s; the Gb/s experiments used hundreds)
and pacing at 120 % of cwnd/avgRTT: the prototype paced to reduce burstiness; without it every
window increase is sent in a line-rate clump and queues for the whole clump (see labs/03's notes).

Run as root: `sudo .venv/bin/python bench/fullscale.py [--duration 90] [--from 30] [--only fast]`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastlab.base.record import headline  # noqa: E402
from fastlab.base.rundir import RunFolder  # noqa: E402
from fastlab.define.schema import parse_spec  # noqa: E402
from fastlab.experiment.engine import run_experiment  # noqa: E402
from fastlab.measure.analysis import steady_goodput_mbps  # noqa: E402

GBE_PAYLOAD_MBPS = 1000 * 1460 / 1500
DISTANCE_M = 10_037_000
FAST_ARGS = {"alpha": 200, "pacing_pct": 120}


@dataclass(frozen=True)
class Case:
    label: str
    cc: str
    flows: int
    published_mbps: float | None


CASES = (Case("FAST, 1 flow", "fast", 1, 925.0), Case("FAST, 2 flows", "fast", 2, 1797.0),
         Case("CUBIC, 1 flow", "cubic", 1, None), Case("Reno, 1 flow", "reno", 1, None))


def spec_for(case: Case, duration_s: float) -> dict[str, Any]:
    flows = [{"src": "cern" if k == 0 else f"cern{k + 1}", "dst": "sunnyvale" if k == 0 else f"sunnyvale{k + 1}",
              "cc": case.cc, **({"cc_args": FAST_ARGS} if case.cc == "fast" else {})} for k in range(case.flows)]
    return {"name": f"fullscale-{case.cc}-{case.flows}", "topology": "sc2002", "duration_s": duration_s, "seed": 1,
            "topology_args": {"scale": 1.0, "cern_hosts": max(1, case.flows), "chicago_hosts": 1,
                              "sunnyvale_hosts": max(1, case.flows), "baltimore_hosts": 1},
            "flows": flows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=90.0)
    parser.add_argument("--from", dest="t_from", type=float, default=30.0, help="mean from this time, s")
    parser.add_argument("--only", help="run only cases whose label contains this text (e.g. FAST)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="fastlab-fullscale-"))
    rows = []
    for i, case in enumerate(c for c in CASES if not args.only or args.only.lower() in c.label.lower()):
        result = run_experiment(parse_spec(spec_for(case, args.duration)), out=root / f"case{i}")
        goodput = steady_goodput_mbps(RunFolder(result.directory).flows(), args.t_from)
        fid = result.summary.fidelity.dump() if result.summary.fidelity is not None else {}
        util = goodput / (GBE_PAYLOAD_MBPS * case.flows)
        rows.append({"case": case.label, "goodput_mbps": goodput, "utilization": util,
                     "published_mbps": case.published_mbps,
                     "ratio_to_published": goodput / case.published_mbps if case.published_mbps else None,
                     "bmps_e15": goodput * 1e6 * DISTANCE_M / 1e15,
                     "retransmits": headline(result.summary).run("retransmits").value,
                     "faithful": fid["faithful"], "machine_busy": fid["machine_busy"],
                     "steal": fid.get("machine_steal"),
                     "max_path_delay_ms": max((p["emulation_delay_ms"] or 0) for p in fid["paths"]),
                     "reasons": "; ".join(fid["reasons"]), "run": str(result.directory)})
        print(f"{case.label}: {goodput:.0f} Mb/s from {args.t_from:g} s to {args.duration:g} s, utilization "
              f"{util:.3f}" + (f", {goodput / case.published_mbps:.3f} of the published {case.published_mbps:g}"
                               if case.published_mbps else "") + f"; faithful: {fid['faithful']}", flush=True)
    with pd.option_context("display.width", 250, "display.max_columns", 20, "display.max_colwidth", 60,
                           "display.float_format", "{:.3f}".format):
        print(pd.DataFrame(rows).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
