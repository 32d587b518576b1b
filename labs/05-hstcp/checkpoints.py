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

from fastlab import hstcp_theory
from fastlab.hstcp_theory import RENO_C, params_of
from fastlab.labs import CheckResult, MissingData, StepRun, checkpoint, within


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
    theory = params_of(run).window(saw.loss_rate) if cc == "hstcp" else RENO_C / math.sqrt(saw.loss_rate)
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
    theory = params_of(run).window(p) / (RENO_C / math.sqrt(p))
    hstcp, _, _ = _window_over_theory(run, "hstcp")
    reno, _, _ = _window_over_theory(run, "reno")
    return within(f"HSTCP / Reno window at p={p:.2g}", theory * hstcp / reno, lo * theory, hi * theory,
                  f"theory {theory:.2f}; each flow's mean window follows its response function within a few "
                  "percent at the loss rate it saw")


@checkpoint
def link_utilization(run: StepRun, lo: float, hi: float = 1.02) -> CheckResult:
    """Both flows together over the bottleneck's capacity, after the first third of the run."""
    duration = float(run.spec["duration_s"])
    total = sum(run.utilization(f["id"], "bottleneck", duration / 3, duration) for f in run.summary["flows"])
    return within("bottleneck utilization", total, lo, hi,
                  "where w(p) of the flows together exceeds BDP + buffer the path, not the loss, sets the windows "
                  "and the link stays busy; where it is far below, the link idles")


decrease_factor = checkpoint(hstcp_theory.decrease_factor)
increase_factor = checkpoint(hstcp_theory.increase_factor)
limited_slow_start = checkpoint(hstcp_theory.limited_slow_start)
