"""Checkpoints of lab 05 (HighSpeed TCP): the response function under controlled loss, a(w) and
b(w) as the algorithm applied them, the path that limits instead of the loss, Limited Slow-Start.

Theory (RFC 3649): between (Low_Window, Low_P = 1.5/Low_Window^2) and (High_Window, High_P) the
response function is a straight line in log-log, w(p) = Low_Window (p/Low_P)^S with
S = ln(High_Window/Low_Window) / ln(High_P/Low_P) (defaults: w = 0.12/p^0.835); below
Low_Window it is standard TCP's 1.22/sqrt(p). b(w) falls from 0.5 at Low_Window to
High_Decrease at High_Window linearly in ln w; a(w) = w^2 p(w) 2 b(w) / (2 - b(w)).
Window figures are taken over the whole loss cycles after the first third of the run (slow start
and its overshoot are over), against the loss rate the flow itself saw (its retransmitted over its
delivered packets). The lab drops every n-th packet on each sender's own link, so that is 1/n
within a drop; on one shared lossy link two flows split the drops unevenly (which flow owns the
n-th packet depends on how their bursts interleave: CI runs measured 2.0e-4 and 6.2e-4 on a link
dropping 3.0e-4), and with few cycles each window still remembers where its first cycle began.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from fastlab.labs import CheckResult, MissingData, StepRun, checkpoint, within

RENO_C = math.sqrt(1.5)  # standard TCP's mean window 1.22/sqrt(p)


@dataclass(frozen=True)
class HstcpParams:
    low_window: float = 38
    high_window: float = 83_000
    high_p: float = 1e-7
    high_decrease: float = 0.1

    @property
    def low_p(self) -> float:
        return 1.5 / self.low_window ** 2

    @property
    def slope(self) -> float:
        return math.log(self.high_window / self.low_window) / math.log(self.high_p / self.low_p)

    def window(self, p: float) -> float:
        """Mean window w(p) of the response function."""
        if p >= self.low_p:
            return RENO_C / math.sqrt(p)
        return self.low_window * (p / self.low_p) ** self.slope

    def loss_rate(self, w: float) -> float:
        return self.low_p * (w / self.low_window) ** (1 / self.slope)

    def decrease(self, w: float) -> float:
        if w <= self.low_window:
            return 0.5
        x = (math.log(w) - math.log(self.low_window)) / (math.log(self.high_window) - math.log(self.low_window))
        return (self.high_decrease - 0.5) * min(x, 1.0) + 0.5

    def increase(self, w: float) -> float:
        if w <= self.low_window:
            return 1.0
        b = self.decrease(w)
        return w * w * self.loss_rate(w) * 2 * b / (2 - b)


def _params(run: StepRun) -> HstcpParams:
    args: dict[str, Any] = {}
    for spec_flow in run.spec["flows"]:
        if spec_flow.get("cc") == "hstcp":
            args = spec_flow.get("cc_args", {})
    return HstcpParams(**{k: float(v) for k, v in args.items() if k in HstcpParams.__dataclass_fields__})


def _loss_rate(run: StepRun, flow: str) -> float:
    """The drop rate set for `flow`: on its sender's own link (`<src>-link`) where the spec has one,
    else on the bottleneck; 1/n for every-nth loss, the probability for Bernoulli loss."""
    links = run.spec.get("links", {})
    src = run.flow_summary(flow)["src"]
    loss = links.get(f"{src}-link", {}).get("loss") or links.get("bottleneck", {}).get("loss")
    if loss is None:
        raise MissingData(f"the spec sets no loss on {src}-link or the bottleneck")
    return 1.0 / float(loss["n"]) if loss["model"] == "every_nth" else float(loss["rate"])


@dataclass(frozen=True)
class Sawtooth:
    """A flow's whole loss cycles after the first third of the run: first to last loss seen."""

    mean_cwnd: float  # packets, time average over the cycles
    loss_rate: float  # retransmitted / delivered packets over the cycles
    cycles: int


MIN_CYCLES = 2  # fewer whole cycles make the loss rate a guess (one drop more or less is 50 %)


def _sawtooth(run: StepRun, flow: str) -> Sawtooth:
    duration = float(run.spec["duration_s"])
    rows = run.flow(flow)
    rows = rows[rows["t"] >= duration / 3].reset_index(drop=True)
    losses = rows.index[rows["retransmits"].diff() > 0]
    if len(losses) < MIN_CYCLES + 1:
        raise MissingData(f"flow {flow} has {max(len(losses) - 1, 0)} whole loss cycles after the first third of "
                          f"the run (at least {MIN_CYCLES} needed): run longer or at a higher loss rate")
    first, last = rows.loc[losses[0]], rows.loc[losses[-1]]
    delivered = (last["bytes_acked"] - first["bytes_acked"]) / last["mss_bytes"]
    dropped = last["retransmits"] - first["retransmits"]
    cwnd = rows.loc[losses[0]:losses[-1], "cwnd_pkts"]
    return Sawtooth(float(cwnd.mean()), float(dropped / delivered), len(losses) - 1)


def _window_over_theory(run: StepRun, cc: str) -> tuple[float, Sawtooth, float]:
    """The `cc` flow's mean window over its response function's at the loss rate it saw."""
    saw = _sawtooth(run, run.flow_running(cc))
    theory = _params(run).window(saw.loss_rate) if cc == "hstcp" else RENO_C / math.sqrt(saw.loss_rate)
    return saw.mean_cwnd / theory, saw, theory


@checkpoint
def response_function(run: StepRun, cc: str, lo: float = 0.8, hi: float = 1.25) -> CheckResult:
    """Mean window of the `cc` flow (hstcp or reno) over its response function's window at its loss rate."""
    ratio, saw, theory = _window_over_theory(run, cc)
    result = within(f"{cc} window / w(p) at the p it saw", ratio, lo, hi,
                    "the response function is the mean of a periodic-loss sawtooth, which a flow losing every n-th "
                    "of its packets follows within a packet or two a cycle; in a short run the first cycles still "
                    "carry slow start's leftover window (measured up to 13 % above w(p) with 2 cycles)")
    result.note = (f"mean cwnd {saw.mean_cwnd:.0f} packets over {saw.cycles} loss cycles, p = {saw.loss_rate:.2g} "
                   f"(set {_loss_rate(run, run.flow_running(cc)):.2g}), w(p) = {theory:.0f}")
    return result


@checkpoint
def hstcp_over_reno(run: StepRun, lo: float, hi: float) -> CheckResult:
    """HSTCP's window over Reno's at one loss rate (the one set for HSTCP): each flow's mean window
    carried there along its own response function, against the ratio of the response functions."""
    p = _loss_rate(run, run.flow_running("hstcp"))
    theory = _params(run).window(p) / (RENO_C / math.sqrt(p))
    hstcp, _, _ = _window_over_theory(run, "hstcp")
    reno, _, _ = _window_over_theory(run, "reno")
    return within(f"HSTCP / Reno window at p={p:.2g}", theory * hstcp / reno, lo * theory, hi * theory,
                  f"theory {theory:.2f}; each flow's mean window follows its response function within a few "
                  "percent at the loss rate it saw")


def _ca_events(run: StepRun, event: str, above: float, minimum: int) -> tuple[HstcpParams, pd.DataFrame]:
    """The HSTCP flow's `event` rows (loss or rtt) in congestion avoidance with cwnd above `above`."""
    flow = run.flow_running("hstcp")
    events = run.events(flow)
    rows = events[(events["event"] == event) & (events["mode"] == "ca") & (events["cwnd"] > above)]
    if len(rows) < minimum:
        raise MissingData(f"cc_events.csv has fewer than {minimum} congestion-avoidance {event} rows of flow {flow} "
                          f"above {above:g} packets")
    return _params(run), rows


@checkpoint
def decrease_factor(run: StepRun, tolerance: float = 0.02) -> CheckResult:
    """b = 1 - ssthresh/cwnd at every HSTCP loss in congestion avoidance, against b(w) for the spec's parameters."""
    params, losses = _ca_events(run, "loss", 0, 1)
    errors = [abs((1 - row.ssthresh / row.cwnd) - params.decrease(row.cwnd)) for row in losses.itertuples()]
    worst = max(errors)
    result = within("worst |b measured - b(w)|", worst, 0.0, tolerance,
                    "the table holds b(w) at its rows' windows (RFC 3649 appendix spacing, b changes ~0.01 per row) "
                    "and ssthresh is a whole number of packets")
    result.note = f"{len(losses)} losses, High_Decrease {params.high_decrease:g}"
    return result


@checkpoint
def increase_factor(run: StepRun, tolerance: float = 0.15) -> CheckResult:
    """a(w) the algorithm used at each RTT in congestion avoidance above Low_Window, against the formula."""
    params = _params(run)
    _, rtts = _ca_events(run, "rtt", params.low_window, 10)
    errors = sorted(abs(row.a / params.increase(row.cwnd) - 1) for row in rtts.itertuples())
    median = errors[len(errors) // 2]
    result = within("median |a measured / a(w) - 1|", median, 0.0, tolerance,
                    "a(w) is tabulated at the rows' windows (a window between two rows uses the lower row's a) "
                    "in 1/256 steps")
    result.note = f"{len(rtts)} RTTs"
    return result


@checkpoint
def link_utilization(run: StepRun, lo: float, hi: float = 1.02) -> CheckResult:
    """Both flows together over the bottleneck's capacity, after the first third of the run."""
    duration = float(run.spec["duration_s"])
    total = sum(run.utilization(f["id"], "bottleneck", duration / 3, duration) for f in run.summary["flows"])
    return within("bottleneck utilization", total, lo, hi,
                  "where w(p) of the flows together exceeds BDP + buffer the path, not the loss, sets the windows "
                  "and the link stays busy; where it is far below, the link idles")


@checkpoint
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
