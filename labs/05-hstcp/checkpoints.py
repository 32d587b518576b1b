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
from fastlab.hstcp_theory import RENO_C, HstcpParams, params_of
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


def _loss_events_per_s(run: StepRun, flow: str, t0: float, t1: float) -> float:
    """The HSTCP flow's window reductions (cc_events `loss` rows) per second over [t0, t1]."""
    events = run.events(flow)
    losses = events[(events["event"] == "loss") & (events["t"] >= t0) & (events["t"] <= t1)]
    if len(losses) < MIN_CYCLES:
        raise MissingData(f"flow {flow} has {len(losses)} loss events in {t0:g}..{t1:g} s (at least {MIN_CYCLES} "
                          "needed): run longer")
    return len(losses) / (t1 - t0)


def synchronized_window(params: HstcpParams, events_per_s: float, rtt_s: float) -> float:
    """The mean window w of a flow that takes `events_per_s` loss events per second at RTT `rtt_s`:
    the fixed point of w = w(p) with p = events_per_s * rtt_s / w (loss events per packet)."""
    lo, hi = 1e-3, 1e7
    for _ in range(200):  # w - w(p(w)) grows with w: bisect in log space
        mid = math.sqrt(lo * hi)
        if mid > params.window(min(events_per_s * rtt_s / mid, 1.0)):
            hi = mid
        else:
            lo = mid
    return lo


@checkpoint
def rtt_unfairness(run: StepRun, short: str = "f1", long: str = "f2") -> CheckResult:
    """Throughput of the short-RTT flow over the long-RTT one, between the two loss-sharing limits of the
    response function: R (independent losses) and the synchronized-loss prediction."""
    duration = float(run.spec["duration_s"])
    t0 = duration / 3
    x = {f: run.goodput_mbps(f, t0, duration) for f in (short, long)}
    rtt = {}
    for f in (short, long):
        rows = run.flow(f)
        rtt[f] = float(rows[rows["t"] >= t0]["srtt_ms"].mean()) / 1000
    ratio, rtt_ratio = x[short] / x[long], rtt[long] / rtt[short]
    params = params_of(run)
    mss = float(run.flow(short)["mss_bytes"].dropna().median())
    events = _loss_events_per_s(run, short, t0, duration)
    long_sync = synchronized_window(params, events, rtt[long]) / rtt[long] * mss * 8 / 1e6
    synchronized = x[short] / long_sync
    result = within("throughput short-RTT / long-RTT flow", ratio, rtt_ratio, synchronized,
                    f"RTT ratio R = {rtt_ratio:.2f} (mean srtt, queue included). If each packet is equally likely lost "
                    "(independent losses) both flows see the same p, hence the same window w(p): the ratio is R. If "
                    "every overflow hits both flows (synchronized losses) they see the same loss events per second, "
                    f"lambda = {events:.2f}/s here (the short flow's): w_i = w(lambda*RTT_i/w_i), which for w = c/p^d "
                    f"gives R^(1/(1-d)); with the response function's Low_Window knee it is {synchronized:.0f}")
    long_events = _loss_events_per_s(run, long, t0, duration)
    result.note = (f"exponent ln(ratio)/ln(R) = {math.log(ratio) / math.log(rtt_ratio):.2f} (Reno's limits 1..2, "
                   f"HSTCP's above Low_Window 1..{1 / (1 + params.slope):.1f}); the long flow took {long_events:.2f} "
                   f"loss events/s, {long_events / events:.0%} of the short flow's")
    return result


@checkpoint
def parallel_reno(run: StepRun, src: str = "ucl3", lo: float = 0.8, hi: float = 1.25) -> CheckResult:
    """Aggregate goodput of the N parallel Reno streams from `src` over the HSTCP flow's, after the first
    third of the run, against the response functions at the loss rate set for both senders."""
    duration = float(run.spec["duration_s"])
    streams = [f["id"] for f in run.summary["flows"] if f["src"] == src and f["cc"] == "reno"]
    if not streams:
        raise MissingData(f"summary.json has no Reno flow from {src}")
    hstcp = run.flow_running("hstcp")
    p = _loss_rate(run, streams[0])
    if not math.isclose(p, _loss_rate(run, hstcp)):
        raise MissingData(f"{src} and the HSTCP sender drop at different rates: the comparison needs one p")
    n = len(streams)
    aggregate = sum(run.goodput_mbps(f, duration / 3, duration) for f in streams)
    measured = aggregate / run.goodput_mbps(hstcp, duration / 3, duration)
    w_hstcp = params_of(run).window(p)
    periodic = n * RENO_C / math.sqrt(p) / w_hstcp
    random_phase = n * math.sqrt(2 - 1 / (2 * n)) / math.sqrt(p) / w_hstcp
    result = within(f"{n} Reno streams / one HSTCP flow, goodput at p={p:.2g}", measured, lo * periodic,
                    hi * random_phase,
                    f"same path and RTT, so goodputs compare as mean windows. The {n} streams share their host's "
                    "every-n-th drops, so together they lose 1/n of their packets like the HSTCP flow. Model: "
                    "between N*1.22/sqrt(p) (each stream a periodic sawtooth dropped at its peak) and "
                    "N*sqrt(2 - 1/(2N))/sqrt(p) (drops at random phases: the aggregate as one AIMD flow adding N per "
                    f"RTT and losing 1/(2N) at a drop), over w(p) = {w_hstcp:.0f}: {periodic:.2f}..{random_phase:.2f};"
                    " uneven sharing only raises the aggregate (the sum of 1.22/sqrt(p_i) at a fixed aggregate p is "
                    f"least when all p_i are equal); {lo:g}..{hi:g} of that as for single flows")
    streams_equal = w_hstcp / (RENO_C / math.sqrt(p))
    result.note = f"aggregate {aggregate:.1f} Mb/s; one HSTCP flow carries as much as {streams_equal:.1f} Reno streams"
    return result
