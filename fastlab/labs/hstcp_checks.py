"""The checks that hold a run's HSTCP flow to RFC 3649 (fastlab.theory.hstcp): they read the flow's own
per-RTT and per-loss trace (cc_events.csv), what the algorithm applied, not what a sampled cwnd suggests.
Labs wrap them with `checkpoint` (labs 01 and 05)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from fastlab.labs.kit import CheckResult, MissingData, StepRun, within
from fastlab.theory.hstcp import HstcpParams


def params_of(run: StepRun) -> HstcpParams:
    args: dict[str, Any] = {}
    for spec_flow in run.spec["flows"]:
        if spec_flow.get("cc") == "hstcp":
            args = spec_flow.get("cc_args", {})
    return HstcpParams(**{k: float(v) for k, v in args.items() if k in HstcpParams.__dataclass_fields__})


def _hstcp_flow(run: StepRun, src: str | None = None) -> str:
    """The (first) HSTCP flow, or the one sent from host `src`."""
    if src is None:
        return run.flow_running("hstcp")
    ids = run.flow_ids("hstcp", src)
    if not ids:
        raise MissingData(f"summary.json has no hstcp flow from {src}")
    return ids[0]


def _ca_events(run: StepRun, event: str, above: float, minimum: int,
               modes: tuple[str, ...] = ("ca",), src: str | None = None) -> tuple[HstcpParams, pd.DataFrame]:
    """The HSTCP flow's (the one from `src`, if given) `event` rows (loss or rtt) in the given modes
    (congestion avoidance unless told) with cwnd above `above`."""
    flow = _hstcp_flow(run, src)
    events = run.events(flow)
    rows = events[(events["event"] == event) & (events["mode"].isin(modes)) & (events["cwnd"] > above)]
    if len(rows) < minimum:
        raise MissingData(f"cc_events.csv has fewer than {minimum} {event} rows in mode {'/'.join(modes)} of flow "
                          f"{flow} above {above:g} packets")
    return params_of(run), rows


def decrease_factor(run: StepRun, tolerance: float = 0.02, modes: tuple[str, ...] = ("ca",),
                    src: str | None = None) -> CheckResult:
    """b = 1 - ssthresh/cwnd at every HSTCP loss in congestion avoidance (or the modes given: "lss" adds
    losses in Limited Slow-Start, where RFC 3649's decrease applies alike), against b(w) for the spec's
    parameters; of the HSTCP flow from host `src` where a run has several."""
    params, losses = _ca_events(run, "loss", 0, 1, tuple(modes), src)
    errors = [abs((1 - row.ssthresh / row.cwnd) - params.decrease(row.cwnd)) for row in losses.itertuples()]
    worst = max(errors)
    result = within("worst |b measured - b(w)|", worst, 0.0, tolerance,
                    "the table holds b(w) at its rows' windows (RFC 3649 appendix spacing, b changes ~0.01 per row) "
                    "and ssthresh is a whole number of packets")
    result.note = f"{len(losses)} losses, High_Decrease {params.high_decrease:g}"
    return result


def increase_factor(run: StepRun, tolerance: float = 0.15) -> CheckResult:
    """a(w) the algorithm used at each RTT in congestion avoidance above Low_Window, against the formula."""
    params = params_of(run)
    _, rtts = _ca_events(run, "rtt", params.low_window, 10)
    errors = sorted(abs(row.a / params.increase(row.cwnd) - 1) for row in rtts.itertuples())
    median = errors[len(errors) // 2]
    result = within("median |a measured / a(w) - 1|", median, 0.0, tolerance,
                    "a(w) is tabulated at the rows' windows (a window between two rows uses the lower row's a) "
                    "in 1/256 steps")
    result.note = f"{len(rtts)} RTTs"
    return result


def limited_slow_start(run: StepRun) -> CheckResult:
    """Per-RTT growth while in Limited Slow-Start above max_ssthresh is at most max_ssthresh/2 segments."""
    flow = run.flow_running("hstcp")
    per_rtt = run.events(flow)
    per_rtt = per_rtt[per_rtt["event"].isin(["rtt", "mode"])]
    max_ssthresh = int(per_rtt["max_ssthresh"].max())
    if max_ssthresh <= 0:
        raise MissingData("the HSTCP flow runs without Limited Slow-Start (max_ssthresh 0)")
    growth = per_rtt["cwnd"].diff()
    limited = growth[(per_rtt["mode"] == "lss") & (per_rtt["cwnd"].shift() > max_ssthresh)]
    if len(limited) < 3:
        raise MissingData(f"fewer than 3 RTTs of Limited Slow-Start above {max_ssthresh} packets")
    result = within("largest growth per RTT in Limited Slow-Start", float(limited.max()), 1, max_ssthresh / 2 * 1.1,
                    f"RFC 3742 allows at most max_ssthresh/2 = {max_ssthresh / 2:g} segments per RTT (standard slow "
                    "start would double); RTT boundaries are sampled by ACK arrivals, hence 10% slack", "packets")
    result.note = f"{len(limited)} RTTs"
    return result
