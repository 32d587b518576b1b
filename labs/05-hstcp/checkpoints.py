"""Checkpoints of lab 05 (HighSpeed TCP): the response function under controlled loss, a(w) and
b(w) as the algorithm applied them, the path that limits instead of the loss, Limited Slow-Start.

Theory (RFC 3649): between (Low_Window, Low_P = 1.5/Low_Window^2) and (High_Window, High_P) the
response function is a straight line in log-log, w(p) = Low_Window (p/Low_P)^S with
S = ln(High_Window/Low_Window) / ln(High_P/Low_P) (defaults: w = 0.12/p^0.835); below
Low_Window it is standard TCP's 1.22/sqrt(p). b(w) falls from 0.5 at Low_Window to
High_Decrease at High_Window linearly in ln w; a(w) = w^2 p(w) 2 b(w) / (2 - b(w)).
Window figures are taken over the whole loss cycles after the first third of the run, against the
loss rate the flow itself saw (its retransmitted over its delivered packets) and against the
every-nth map run from the first of those losses, which holds what is left of slow start's larger
window (see every_nth_mean). The lab drops every n-th packet on each sender's own link, so that is 1/n
within a drop; on one shared lossy link two flows split the drops unevenly (which flow owns the
n-th packet depends on how their bursts interleave: CI runs measured 2.0e-4 and 6.2e-4 on a link
dropping 3.0e-4), and with few cycles each window still remembers where its first cycle began.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fastlab.labs import hstcp_checks
from fastlab.labs.hstcp_checks import params_of
from fastlab.labs.kit import CheckResult, MissingData, StepRun, checkpoint, loss_starts, within
from fastlab.theory.hstcp import RENO_C, HstcpParams


def _loss_rate(run: StepRun, flow: str) -> float:
    """The drop rate set for `flow`: on its sender's own link (`<src>-link`) where the spec has one,
    else on the bottleneck; 1/n for every-nth loss, the probability for Bernoulli loss."""
    links = run.spec.get("links", {})
    src = run.flow_summary(flow).src
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
    peak: float  # cwnd just before the first of these losses, packets


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
    peak = float(rows.loc[losses[0] - 1, "cwnd_pkts"]) if losses[0] > 0 else float(first["cwnd_pkts"])
    return Sawtooth(float(cwnd.mean()), float(dropped / delivered), len(losses) - 1, peak)


def every_nth_mean(params: HstcpParams | None, p: float, peak: float, cycles: int) -> float:
    """The mean window over `cycles` loss cycles of a flow that loses every 1/p-th packet, from a loss at
    window `peak`: per RTT the window sends w packets and grows a(w) (Reno: 1); at each 1/p-th packet it
    falls to (1 - b(w)) w (Reno: b = 1/2). Its fixed point is the response function; from a larger peak
    the leftover shrinks per cycle as (1 - b)^2 in w^2 (Reno: to a quarter), so a short run's first
    cycles sit above w(p) by what this map predicts."""
    total, rtts, sent, w, done = 0.0, 0, 0.0, peak, 0
    w *= 1 - (params.decrease(w) if params else 0.5)
    while done < cycles and rtts < 1_000_000:
        total, rtts, sent = total + w, rtts + 1, sent + w
        if sent >= 1 / p:
            sent -= 1 / p
            done += 1
            w *= 1 - (params.decrease(w) if params else 0.5)
        else:
            w += params.increase(w) if params else 1.0
    return total / max(rtts, 1)


# The measured mean against the every-nth map's, which holds the response function and the leftover of
# the start: a(w) is tabulated up to 6 % low (increase_factor measures 4-6 %), -3 % on the mean window;
# loss recovery spends about one RTT of a 30-50 RTT cycle below the sawtooth, -2 %; whole packets of
# 40-300, -2.5 %; 10 Hz samples of a cycle of several seconds, +-1 %.
BELOW_MODEL, ABOVE_MODEL = 0.92, 1.03


@dataclass(frozen=True)
class Versus:
    ratio: float  # mean window / w(p)
    model: float  # the every-nth map's mean over the same cycles / w(p)
    saw: Sawtooth
    theory: float  # w(p), packets


def _flow(run: StepRun, cc: str, src: str | None = None) -> str:
    """The (first) flow running `cc`, or the one sent from host `src`."""
    if src is None:
        return run.flow_running(cc)
    ids = run.flow_ids(cc, src)
    if not ids:
        raise MissingData(f"summary.json has no {cc} flow from {src}")
    return ids[0]


def _window_over_theory(run: StepRun, cc: str, src: str | None = None) -> Versus:
    """The `cc` flow's mean window over its response function's at the loss rate it saw, and the map's."""
    saw = _sawtooth(run, _flow(run, cc, src))
    params = params_of(run) if cc == "hstcp" else None
    theory = params.window(saw.loss_rate) if params else RENO_C / math.sqrt(saw.loss_rate)
    model = every_nth_mean(params, saw.loss_rate, saw.peak, saw.cycles)
    return Versus(saw.mean_cwnd / theory, model / theory, saw, theory)


@checkpoint
def response_function(run: StepRun, cc: str, src: str | None = None) -> CheckResult:
    """Mean window of the `cc` flow (hstcp or reno; the one from host `src` if given) over its response
    function's window at its loss rate."""
    v = _window_over_theory(run, cc, src)
    result = within(f"{cc} window / w(p) at the p it saw", v.ratio, BELOW_MODEL * v.model, ABOVE_MODEL * v.model,
                    "every-nth loss makes the sawtooth deterministic: from the window at the first loss measured "
                    f"({v.saw.peak:.0f} packets) the map w -> (1 - b(w)) w at each 1/p-th packet, + a(w) per RTT, "
                    f"predicts {v.model:.3f} x w(p) over these {v.saw.cycles} cycles (1 once the start's leftover, "
                    "which shrinks as (1 - b)^2 per cycle, is gone); the measured mean may sit 8 % below (a(w) "
                    "tabulated up to 6 % low: -3 %; an RTT of loss recovery per cycle: -2 %; whole packets: "
                    "-2.5 %) and 3 % above (whole packets, 10 Hz samples)")
    result.note = (f"mean cwnd {v.saw.mean_cwnd:.0f} packets over {v.saw.cycles} loss cycles, p = "
                   f"{v.saw.loss_rate:.2g} (set {_loss_rate(run, _flow(run, cc, src)):.2g}), w(p) = {v.theory:.0f}")
    return result


@checkpoint
def hstcp_over_reno(run: StepRun) -> CheckResult:
    """HSTCP's window over Reno's at one loss rate (the one set for HSTCP): each flow's mean window
    carried there along its own response function, against the ratio of the response functions."""
    p = _loss_rate(run, run.flow_running("hstcp"))
    theory = params_of(run).window(p) / (RENO_C / math.sqrt(p))
    hstcp, reno = _window_over_theory(run, "hstcp"), _window_over_theory(run, "reno")
    center = theory * hstcp.model / reno.model
    return within(f"HSTCP / Reno window at p={p:.2g}", theory * hstcp.ratio / reno.ratio,
                  center * BELOW_MODEL / ABOVE_MODEL, center * ABOVE_MODEL / BELOW_MODEL,
                  f"theory {theory:.2f}, x {hstcp.model:.3f} / {reno.model:.3f} for the leftover of the start in "
                  "these cycles (the every-nth map of each flow); each window within -8..+3 % of its map, so the "
                  "ratio within -11..+12 %")


@checkpoint
def link_utilization(run: StepRun, lo: float = 0.95, hi: float = 1.02) -> CheckResult:
    """Both flows together over the bottleneck's capacity, after the first third of the run."""
    duration = float(run.spec["duration_s"])
    total = sum(run.utilization(f, "bottleneck", duration / 3, duration) for f in run.flow_ids())
    return within("bottleneck utilization", total, lo, hi,
                  "the response functions at p = 1e-4 ask for 266 + 122 packets, more than the 20 ms path holds "
                  "(167 BDP + a 167-packet queue): the windows fill the queue and its overflows set them. A "
                  "one-BDP queue keeps the link busy through an overflow that cuts every flow: from a full pipe "
                  "(2 BDP) HSTCP keeps 1 - b(w) = 0.59-0.61 of ~200-300 packets and Reno half of the rest, more "
                  "than the BDP left in flight; in the rtt step the 20 ms flow (~300 packets, b = 0.39) alone "
                  "still sends 0.61 x 33.4/20 ms = 1.02 of the link once the queue has drained. Left out: the "
                  "dropped packets (~1 %) and the ends of the goodput window (10 Hz samples), hence 0.95; the "
                  "shaper's granularity allows 2 % over")


def _independent_ratio(params: HstcpParams, total: float) -> float:
    """HSTCP's mean window over Reno's when both see the same loss rate p and their windows sum to `total`."""
    lo, hi = 1e-9, 1.0
    for _ in range(200):  # w_H(p) + w_R(p) falls with p: bisect in log space
        p = math.sqrt(lo * hi)
        if params.window(p) + RENO_C / math.sqrt(p) > total:
            lo = p
        else:
            hi = p
    return params.window(lo) / (RENO_C / math.sqrt(lo))


def _synchronized_ratio(params: HstcpParams, total: float, cuts_follow_increase: bool = False) -> float:
    """HSTCP's mean window over Reno's when every loss event hits both (one cycle of T RTTs for both) and
    their mean windows sum to `total`: each peak is a T / b, each mean (1 - b/2) of its peak, so the ratio
    is (1 - b/2) a / b over Reno's 1.5 (a = 1, b = 1/2), a and b taken at HSTCP's mean window.

    `cuts_follow_increase`: instead each overflow cuts one flow, chosen in proportion to what each adds to
    the full queue per RTT, its a: HSTCP then meets a times Reno's cuts, its cycle is T / a, its peak
    a (T / a) / b, and the ratio (1 - b/2) / b over Reno's 1.5 -- the drop-tail limit least kind to the
    faster-growing flow."""
    def ratio(w: float) -> float:
        b = params.decrease(w)
        return (1 - b / 2) * (1.0 if cuts_follow_increase else params.increase(w)) / b / 1.5

    lo, hi = 1.0, total
    for _ in range(200):  # m + m / ratio(m) grows with m
        mid = (lo + hi) / 2
        if mid + mid / ratio(mid) > total:
            hi = mid
        else:
            lo = mid
    return ratio(lo)


# A flow's share moves towards its limit only at its own cuts (each keeps 1 - b of the window); the
# slow start leaves Reno ahead (it doubles per RTT while HSTCP's Limited Slow-Start adds at most 50
# packets), and the runs met Reno's cuts 0.3-0.7 a second, none at all for up to 6 s after the
# start. With fewer than 3 cuts in the window (two whole cycles) the ratio is still the start's: a CI
# short run of 8 s met one Reno cut in 2.7..8 s and measured 1.29, below both limits; 20-s runs met
# 6-9 and measured 1.91-2.21, the recorded 30-s run 9 and 2.24.
FAIRNESS_MIN_CUTS = 3


@checkpoint
def hstcp_reno_fairness(run: StepRun) -> CheckResult:
    """HSTCP's goodput over Reno's on one path (same RTT), between the two loss-sharing limits of the
    response functions at the total window the path held."""
    duration = float(run.spec["duration_s"])
    t0 = duration / 3
    hstcp, reno = run.flow_running("hstcp"), run.flow_running("reno")
    cuts = {}
    for cc, flow in (("HSTCP", hstcp), ("Reno", reno)):
        rows = run.flow(flow).reset_index(drop=True)
        cuts[cc] = sum(1 for i in loss_starts(rows, reductions=True) if rows["t"].iloc[i] >= t0)
        if cuts[cc] < FAIRNESS_MIN_CUTS:
            raise MissingData(f"{cc} ({flow}) met {cuts[cc]} loss event(s) in {t0:.1f}..{duration:g} s, fewer than "
                              f"{FAIRNESS_MIN_CUTS}: its share is still the start's, run longer")
    measured = run.goodput_mbps(hstcp, t0, duration) / run.goodput_mbps(reno, t0, duration)
    total = sum(float(run.flow(f)[lambda r: r["t"] >= t0]["cwnd_pkts"].mean()) for f in (hstcp, reno))
    params = params_of(run)
    independent, synchronized = _independent_ratio(params, total), _synchronized_ratio(params, total)
    by_increase = _synchronized_ratio(params, total, cuts_follow_increase=True)
    lowest = min(independent, by_increase)
    result = within("HSTCP / Reno goodput, one RTT", measured, BELOW_MODEL / ABOVE_MODEL * lowest,
                    ABOVE_MODEL / BELOW_MODEL * synchronized,
                    f"same RTT, so goodputs compare as mean windows, which sum to {total:.0f} packets here. If each "
                    "packet is equally likely lost (independent losses) both see one p: w(p) / (1.22/sqrt(p)) at "
                    f"the p where they sum to that, {independent:.2f}. If every overflow cuts both (synchronized) "
                    "both run one cycle of T RTTs: each regrows a T and cuts b of its peak, so the ratio is "
                    f"(1 - b/2) a(w) / b(w) over Reno's 1.5, {synchronized:.2f}. If each overflow cuts one flow in "
                    "proportion to what it adds to the full queue per RTT (a), HSTCP meets a times Reno's cuts: "
                    f"(1 - b/2) / b(w) over 1.5, {by_increase:.2f}, the drop-tail end least kind to HSTCP. A "
                    "drop-tail queue sits between these; each window within -8..+3 % of its model, so -11 %..+12 % "
                    "on the ends")
    result.note = (f"HSTCP {run.goodput_mbps(hstcp, t0, duration):.1f} Mb/s, "
                   f"Reno {run.goodput_mbps(reno, t0, duration):.1f} Mb/s; loss events HSTCP {cuts['HSTCP']}, "
                   f"Reno {cuts['Reno']}")
    return result


decrease_factor = checkpoint(hstcp_checks.decrease_factor)
increase_factor = checkpoint(hstcp_checks.increase_factor)
limited_slow_start = checkpoint(hstcp_checks.limited_slow_start)


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
    try:
        long_events = _loss_events_per_s(run, long, t0, duration)
        took = f"the long flow took {long_events:.2f} loss events/s, {long_events / events:.0%} of the short flow's"
    except MissingData as exc:  # the figure is for the student; the checkpoint needs the short flow's only
        took = str(exc)
    result.note = (f"exponent ln(ratio)/ln(R) = {math.log(ratio) / math.log(rtt_ratio):.2f} (Reno's limits 1..2, "
                   f"HSTCP's above Low_Window 1..{1 / (1 + params.slope):.1f}); {took}")
    return result


@checkpoint
def parallel_reno(run: StepRun, src: str = "ucl3") -> CheckResult:
    """Aggregate goodput of the N parallel Reno streams from `src` over the HSTCP flow's, after the first
    third of the run, against the response functions at the loss rate set for both senders."""
    duration = float(run.spec["duration_s"])
    streams = run.flow_ids("reno", src)
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
    # the start's leftover in the measured cycles, by the every-nth maps: the single Reno flow's (same
    # start, same p; a stream may meet too few of its host's shared drops for a map of its own) over HSTCP's
    leftover = _window_over_theory(run, "reno").model / _window_over_theory(run, "hstcp").model
    periodic = n * RENO_C / math.sqrt(p) / w_hstcp * leftover
    random_phase = n * math.sqrt(2 - 1 / (2 * n)) / math.sqrt(p) / w_hstcp * leftover
    lo, hi = BELOW_MODEL / ABOVE_MODEL, ABOVE_MODEL / BELOW_MODEL
    result = within(f"{n} Reno streams / one HSTCP flow, goodput at p={p:.2g}", measured, lo * periodic,
                    hi * random_phase,
                    f"same path and RTT, so goodputs compare as mean windows. The {n} streams share their host's "
                    "every-n-th drops, so together they lose 1/n of their packets like the HSTCP flow. Model: "
                    "between N*1.22/sqrt(p) (each stream a periodic sawtooth dropped at its peak) and "
                    "N*sqrt(2 - 1/(2N))/sqrt(p) (drops at random phases: the aggregate as one AIMD flow adding N per "
                    f"RTT and losing 1/(2N) at a drop), over w(p) = {w_hstcp:.0f}, x {leftover:.3f} for the start's "
                    f"leftover (Reno's every-nth map over HSTCP's): {periodic:.2f}..{random_phase:.2f}; uneven "
                    "sharing only raises the aggregate (the sum of 1.22/sqrt(p_i) at a fixed aggregate p is least "
                    f"when all p_i are equal); each side within -8..+3 % of its map, so {lo:.2f}..{hi:.2f} of that")
    streams_equal = w_hstcp / (RENO_C / math.sqrt(p))
    result.note = f"aggregate {aggregate:.1f} Mb/s; one HSTCP flow carries as much as {streams_equal:.1f} Reno streams"
    return result
