"""Self-test: the highest rate and flow count this machine emulates faithfully.

`fastlab doctor --self-test` runs short experiments of rising load on a dumbbell (20 ms RTT,
CUBIC, one-BDP buffer, the link emulator): one flow at each rate of RATE_LADDER_MBPS, then k
flows at 1 Gb/s each sharing a k Gb/s bottleneck for each k of FLOW_LADDER (the shape of the
SC2002 multi-flow rows). A step passes when its fidelity verdict is faithful and its steady
goodput reaches PASS_UTILIZATION of the rate in SC2002's sense; each ladder stops at its first
failure. The result is kept in CAPACITY_FILE; `fastlab doctor` shows it and `fastlab topo show`
marks paths and links above it.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import platform
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastlab.base.record import Verdict
from fastlab.base.rundir import RunFolder

log = logging.getLogger(__name__)

RATE_LADDER_MBPS = (1000, 2500, 5000, 10000)
FLOW_LADDER = (2, 4, 7, 10)
PER_FLOW_MBPS = 1000  # the SC2002 hosts' GbE ports
RTT_MS = 20.0  # short: slow start is over in the warm-up, the emulator's work does not depend on it
DURATION_S = 10.0
WARMUP_S = 4.0
# Steady goodput over the rate less 40 header bytes per packet (the SC2002 convention). 0.9: the
# SC2002 multi-flow rows reached 0.88-0.90, and CUBIC through a one-BDP buffer stays above 0.95
# on a faithful link; a machine that cannot carry the rate falls far below.
PASS_UTILIZATION = 0.90
PAYLOAD_SHARE = 1460 / 1500
CAPACITY_FILE = Path(os.environ.get("FASTLAB_CAPACITY_FILE", "/var/lib/fastlab/capacity.json"))


@dataclass(frozen=True)
class Step:
    label: str
    rate_mbps: float
    flows: int


def ladder() -> tuple[list[Step], list[Step]]:
    rates = [Step(f"1 flow at {r / 1000:g} Gb/s", r, 1) for r in RATE_LADDER_MBPS]
    flows = [Step(f"{k} flows at 1 Gb/s each", k * PER_FLOW_MBPS, k) for k in FLOW_LADDER]
    return rates, flows


def step_spec(step: Step, duration_s: float) -> dict[str, Any]:
    return {"name": f"selftest-{int(step.rate_mbps)}m-{step.flows}f", "topology": "dumbbell",
            "topology_args": {"rate_mbps": step.rate_mbps, "rtt_ms": RTT_MS, "buffer_bdp": 1.0},
            "duration_s": duration_s, "seed": 1, "sample_hz": 10,
            "flows": [{"src": "h1", "dst": "h2", "cc": "cubic", "count": step.flows}],
            "links": {"bottleneck": {"backend": "emulator"}}}


def steady_utilization(samples: Any, rate_mbps: float, warmup_s: float) -> float:
    """Sum of the flows' goodput after the warm-up (`samples`: a run's flows.csv) over the rate less
    header bytes."""
    total = 0.0
    for _flow, rows in samples[samples["t"] >= warmup_s].groupby("flow"):
        span = rows["t"].iloc[-1] - rows["t"].iloc[0]
        if span > 0:
            total += (rows["bytes_acked"].iloc[-1] - rows["bytes_acked"].iloc[0]) * 8 / 1e6 / span
    return total / (rate_mbps * PAYLOAD_SHARE)


def judge(utilization: float, verdict: Verdict | None) -> tuple[bool, str]:
    if verdict is None or not verdict.faithful:
        return False, "; ".join(verdict.reasons if verdict is not None else []) or "not faithful"
    if utilization < PASS_UTILIZATION:
        return False, f"steady utilization {utilization:.2f} < {PASS_UTILIZATION:g}: the rate was not carried"
    return True, f"faithful, utilization {utilization:.3f}"


def run(duration_s: float = DURATION_S) -> dict[str, Any]:
    """Run both ladders (needs root); returns and stores the result."""
    from fastlab.define.schema import parse_spec
    from fastlab.experiment.engine import run_experiment

    out: dict[str, Any] = {"measured": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                           "kernel": platform.release(), "cpus": os.cpu_count(), "steps": [],
                           "max_rate_mbps": 0, "max_flows": 0}
    rates, flows = ladder()
    with tempfile.TemporaryDirectory(prefix="fastlab-selftest-") as tmp:
        for steps, key, value in ((rates, "max_rate_mbps", lambda s: s.rate_mbps), (flows, "max_flows",
                                                                                      lambda s: s.flows)):
            for i, step in enumerate(steps):
                log.info("self-test: %s ...", step.label)
                result = run_experiment(parse_spec(step_spec(step, duration_s)), out=Path(tmp) / f"{key}-{i}")
                util = steady_utilization(RunFolder(result.directory).flows(), step.rate_mbps, WARMUP_S)
                ok, why = judge(util, result.summary.fidelity)
                out["steps"].append({"step": step.label, "rate_mbps": step.rate_mbps, "flows": step.flows,
                                     "utilization": round(util, 4), "passed": ok, "why": why,
                                     # the machine's measured cost: fastlab.experiment.cost's cores per Gb/s
                                     "machine_busy": result.summary.fidelity.machine_busy
                                     if result.summary.fidelity is not None else None})
                log.info("self-test: %s: %s (%s)", step.label, "pass" if ok else "FAIL", why)
                if not ok:
                    break
                out[key] = value(step)
    save(out)
    return out


def save(result: dict[str, Any], path: Path = CAPACITY_FILE) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1))


def load(path: Path = CAPACITY_FILE) -> dict[str, Any] | None:
    """The last self-test's result, or None (never run, or unreadable)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "max_rate_mbps" in data else None


def describe(result: dict[str, Any] | None) -> str:
    if result is None:
        return ("faithful capacity: not measured on this machine yet (`sudo fastlab doctor --self-test`, "
                "about 2 minutes)")
    head = f"faithful capacity (self-test {result['measured']}, kernel {result['kernel']}): "
    if not result["max_rate_mbps"]:
        return head + f"not even one flow at {RATE_LADDER_MBPS[0] / 1000:g} Gb/s"
    return head + (f"one flow up to {result['max_rate_mbps'] / 1000:g} Gb/s, "
                   f"up to {result['max_flows']} flows at 1 Gb/s each, through one emulated link; a path "
                   "through k emulated links needs about k times the work, and slow flows cost more per bit "
                   "(small TSO bursts)")


def over_capacity(rate_mbps: float, result: dict[str, Any] | None, emulated_links: int = 1) -> bool:
    """Whether a flow of this rate through this many emulated links is above what the machine
    carries faithfully (the emulators' work is per frame and per link crossed)."""
    return result is not None and rate_mbps * max(1, emulated_links) > result["max_rate_mbps"]
