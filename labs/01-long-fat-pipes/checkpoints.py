"""Checkpoints of lab 01 (long fat pipes): the window that fills the pipe, slow start, and Reno's
one-packet-per-RTT regrowth after a loss, read from one flow's tcp_info trace (flows.csv) and its
bottleneck queue (links.csv).

Windows count packets of the run's MTU (spec `mtu`: 1500 bytes unless set, 9000 for question 9's
jumbo frames): the kernel's cwnd counts MSS-sized segments, and an MSS with timestamps (1448 bytes,
8948 with jumbo frames) is one MTU-sized packet on the wire, the unit of the topology's BDP.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from fastlab.labs import hstcp_checks
from fastlab.labs.kit import (
    LOSS_STATES,
    CheckResult,
    MissingData,
    StepRun,
    checkpoint,
    loss_starts,
    within,
)
from fastlab.theory.fast import packet_bits, run_mtu

TSO_SHIFT = 10  # Linux sk_pacing_shift: a TSO burst is ~1/1024 s of the pacing rate
MIN_TSO_SEGS = 2  # net.ipv4.tcp_min_tso_segs


def _tso_burst(rows: pd.DataFrame) -> int:
    """Segments Linux sends as one TSO burst (tcp_tso_autosize): ~1 ms of its pacing rate, at least 2."""
    rate = rows["pacing_rate_mbps"].dropna()
    mss = float(rows["mss_bytes"].dropna().median())
    return max(MIN_TSO_SEGS, int(float(rate.median()) * 1e6 / 8 / 2 ** TSO_SHIFT // mss)) if len(rate) else MIN_TSO_SEGS


def _packet_share(run: StepRun, flow: str, link: str) -> float:
    """One packet's serialization at the bottleneck as a share of the base RTT: what a delayed ACK,
    waiting for the second segment, adds to an RTT sample (so to srtt) at most."""
    packet_s = packet_bits(run_mtu(run.spec)) / (run.capacity_mbps(link) * 1e6)
    return packet_s / (run.flow_summary(flow).min_rtt_ms / 1e3)


def _bdp_pkts(run: StepRun, flow: str, link: str) -> float:
    """rate * base RTT in packets of the run's MTU, from the link's capacity and the flow's minimum RTT."""
    rate_bps = run.capacity_mbps(link) * 1e6
    return rate_bps * run.flow_summary(flow).min_rtt_ms / 1e3 / packet_bits(run_mtu(run.spec))


def _path_holds_pkts(run: StepRun, flow: str, link: str) -> float:
    """BDP + the access buffer: the window at which drop-tail loses."""
    buffer_bdp = float(run.spec.get("topology_args", {}).get("access_buffer_bdp", 1.0))
    return _bdp_pkts(run, flow, link) * (1 + buffer_bdp)


def _loss_events(rows: pd.DataFrame) -> list[dict[str, float]]:
    """Each entry into loss recovery: its time, the window just before it and the ssthresh it set."""
    events = []
    for i in loss_starts(rows):
        events.append({"t": float(rows["t"].iloc[i]), "window": float(rows["cwnd_pkts"].iloc[i - 1]),
                       "ssthresh": float(rows["ssthresh_pkts"].iloc[i])})
    return events


def _congestion_avoidance_losses(rows: pd.DataFrame) -> list[dict[str, float]]:
    """Loss events after the first one (the first ends slow start, with its overshoot)."""
    events = _loss_events(rows)
    if len(events) < 2:
        raise MissingData(f"the flow had {len(events)} loss event(s): a loss in congestion avoidance needs a "
                          "longer run or a smaller buffer")
    return events[1:]


@checkpoint
def window_at_full_rate(run: StepRun, flow: str = "f1", link: str = "cern-gbe") -> CheckResult:
    """While the bottleneck queue is non-empty, cwnd minus the queue is what is in the pipe: rate * RTT."""
    trace = run.flow(flow)
    rows = trace[["t", "cwnd_pkts", "ca_state"]]
    queue = run.link(link)[["t", "backlog_pkts"]]
    merged = pd.merge_asof(rows, queue, on="t", direction="nearest")
    full = merged[(merged["ca_state"] == "open") & (merged["backlog_pkts"] >= 5)]
    if len(full) < 20:
        raise MissingData(f"the {link} queue was seldom non-empty: the link never ran at full rate")
    in_pipe = float((full["cwnd_pkts"] - full["backlog_pkts"]).median())
    bdp = _bdp_pkts(run, flow, link)
    burst = _tso_burst(trace)
    spread = burst + 2
    return within("window minus queue at full rate = rate x base RTT", in_pipe, bdp - spread, bdp + spread,
                  f"BDP {bdp:.0f} pkts (capacity x the flow's minimum RTT); +-{spread} pkts: an instantaneous queue "
                  f"sample reads up to a TSO burst ({burst} segments, ~1 ms of the pacing rate) and a segment a "
                  "delayed ACK holds off the window's share, and cwnd is sampled up to 25 ms from the queue, in "
                  "which Reno's window grows by less than a packet", "pkts")


@checkpoint
def slow_start_time(run: StepRun, flow: str = "f1", link: str = "cern-gbe") -> CheckResult:
    """Slow start doubles the window every RTT: from IW to the BDP takes RTT * log2(BDP / IW)."""
    rows = run.flow(flow)
    initial_window = float(rows["cwnd_pkts"].iloc[0])
    bdp = _bdp_pkts(run, flow, link)
    # slow start ends at the BDP, or at the first loss if the window overshoots between two samples
    reached = rows[(rows["cwnd_pkts"] >= bdp) | rows["ca_state"].isin(LOSS_STATES)]
    if reached.empty:
        raise MissingData(f"the window never reached the BDP ({bdp:.0f} pkts)")
    measured = float(reached["t"].iloc[0] - rows["t"].iloc[0])
    rtt_s = run.flow_summary(flow).min_rtt_ms / 1e3
    theory = rtt_s * math.log2(bdp / initial_window)
    return within("time for slow start to reach the BDP", measured, theory - rtt_s, theory + 2 * rtt_s,
                  f"theory RTT*log2(BDP/IW) = {theory:.2f} s with IW {initial_window:.0f}; -1 RTT: the first sample "
                  "comes up to an RTT after the first data; +2 RTT: the last doublings wait in the growing queue "
                  "and cwnd is sampled every 50 ms", "s")


def _rtts_elapsed(span: pd.DataFrame) -> np.ndarray:
    """Round trips elapsed at each sample, each interval counted in its own smoothed RTT."""
    dt = np.diff(span["t"].to_numpy(), prepend=span["t"].iloc[0])
    return np.cumsum(dt / (span["srtt_ms"].to_numpy() / 1e3))


def _loss_free_spans(rows: pd.DataFrame, settle_s: float) -> list[tuple[dict[str, float], pd.DataFrame]]:
    """After each loss event, the samples in congestion avoidance until the next one."""
    events = _loss_events(rows)
    ends = [e["t"] for e in events[1:]] + [float(rows["t"].iloc[-1])]
    return [(event, rows[(rows["t"] > event["t"] + settle_s) & (rows["t"] < end) & (rows["ca_state"] == "open")])
            for event, end in zip(events, ends, strict=True)]


def _longest_regrowth(rows: pd.DataFrame, settle_s: float) -> tuple[float, float, float]:
    """(span length s, packets per RTT, RTTs it spans) of the longest loss-free span after a loss."""
    best: tuple[float, float, float] | None = None
    for _event, span in _loss_free_spans(rows, settle_s):
        if len(span) < 40:
            continue
        rtts = _rtts_elapsed(span)
        per_rtt = float(np.polyfit(rtts, span["cwnd_pkts"], 1)[0])
        length = float(span["t"].iloc[-1] - span["t"].iloc[0])
        if best is None or length > best[0]:
            best = (length, per_rtt, float(rtts[-1]))
    if best is None:
        raise MissingData("no loss-free span of 2 s or more after a loss")
    return best


def _regrowth_spread(run: StepRun, flow: str, link: str, rtts: float) -> tuple[float, str]:
    """How far a fitted regrowth rate may sit from 1 packet per RTT, and why."""
    quantum, delayed = 2 / rtts, _packet_share(run, flow, link)
    return quantum + delayed, (f"+-{quantum + delayed:.1%}: the integer window's staircase can be a packet off at "
                               f"each end of the {rtts:.0f} RTTs fitted ({quantum:.1%}), and a delayed ACK lengthens "
                               f"an RTT sample by up to one packet's serialization ({delayed:.2%} of the RTT)")


@checkpoint
def regrowth_per_rtt(run: StepRun, flow: str = "f1", link: str = "cern-gbe", settle_s: float = 1.0) -> CheckResult:
    """Between losses Reno adds one packet per RTT: the slope of cwnd against elapsed round trips is 1."""
    rows = run.flow(flow)
    if not _loss_events(rows):
        raise MissingData("the flow never lost a packet: there is no regrowth to measure")
    length, per_rtt, rtts = _longest_regrowth(rows, settle_s)
    tol, why = _regrowth_spread(run, flow, link, rtts)
    return within("cwnd growth per RTT in congestion avoidance", per_rtt, 1 - tol, 1 + tol,
                  f"Reno adds one segment per window of ACKed data (RFC 5681), counted per ACKed segment by Linux "
                  f"so delayed ACKs do not slow it; fitted over {length:.0f} s against round trips counted in each "
                  f"sample's own RTT, so a growing queue does not bias it; {why}", "pkts/RTT")


@checkpoint
def time_to_refill(run: StepRun, flow: str = "f1", link: str = "cern-gbe", settle_s: float = 1.0) -> CheckResult:
    """After a loss that leaves the window below the BDP, Reno needs (BDP - ssthresh) RTTs to fill the pipe again.

    Measured: the missing packets divided by the regrowth rate fitted over the run (packets per second);
    expected: the same count of base RTTs, since with the pipe not full there is no queue. At full
    scale this is tens of minutes, far longer than any run: the time is extrapolated, not waited for.
    """
    rows = run.flow(flow)
    bdp = _bdp_pkts(run, flow, link)
    rtt_s = run.flow_summary(flow).min_rtt_ms / 1e3
    for event, span in _loss_free_spans(rows, settle_s):
        if len(span) < 40 or event["ssthresh"] >= bdp:
            continue
        per_s = float(np.polyfit(span["t"], span["cwnd_pkts"], 1)[0])
        if per_s <= 0:
            continue
        missing = bdp - event["ssthresh"]
        measured, theory = missing / per_s, missing * rtt_s
        next_loss = (_path_holds_pkts(run, flow, link) - event["ssthresh"]) * rtt_s
        rtts = float(span["t"].iloc[-1] - span["t"].iloc[0]) / rtt_s
        srtt_share = abs(float(span["srtt_ms"].mean()) / 1e3 / rtt_s - 1)
        tol, why = _regrowth_spread(run, flow, link, rtts)
        tol += srtt_share
        return within("time for the window to fill the pipe again after the loss", measured,
                      theory * (1 - tol), theory * (1 + tol),
                      f"(BDP {bdp:.0f} - ssthresh {event['ssthresh']:.0f}) x base RTT {rtt_s * 1e3:.0f} ms = "
                      f"{theory:.0f} s ({theory / 60:.1f} min); the next loss would come only when the window "
                      f"reaches BDP + buffer, about {next_loss / 60:.0f} min after this one; the regrowth rate is "
                      f"fitted over the run and extrapolated, 1 packet per RTT to within {why.removeprefix('+-')}, "
                      f"and the RTT of the regrowth is {srtt_share:.2%} off the base RTT", "s")
    raise MissingData("no loss left the window below the BDP with a loss-free span after it")


@checkpoint
def rate_is_window_over_rtt(run: StepRun, flow: str = "f1", link: str = "cern-gbe",
                            settle_s: float = 1.0) -> CheckResult:
    """With the window below the BDP the link idles: the flow carries one window per RTT, window / BDP of the link."""
    rows = run.flow(flow)
    bdp = _bdp_pkts(run, flow, link)
    spans = [(e, s) for e, s in _loss_free_spans(rows, settle_s) if len(s) >= 40 and s["cwnd_pkts"].max() < bdp]
    if not spans:
        raise MissingData("the window never stayed below the BDP after a loss: the pipe was full")
    _event, span = max(spans, key=lambda es: len(es[1]))
    t0, t1 = float(span["t"].iloc[0]), float(span["t"].iloc[-1])
    measured = run.goodput_mbps(flow, t0, t1)
    mss_bits = float(rows["mss_bytes"].iloc[-1]) * 8
    expected = float((span["cwnd_pkts"] * mss_bits / (span["srtt_ms"] / 1e3)).mean()) / 1e6
    capacity = run.capacity_mbps(link)
    window = float(span["cwnd_pkts"].mean())
    burst, delayed = _tso_burst(rows), _packet_share(run, flow, link)
    tolerance = burst / window + delayed
    return within("goodput while the window is below the BDP", measured, expected * (1 - tolerance),
                  expected * (1 + tolerance),
                  f"one window of {window:.0f} segments per RTT = {expected:.0f} Mb/s, "
                  f"{expected / capacity:.0%} of the {capacity:.0f} Mb/s link for all {t1 - t0:.0f} s; "
                  f"+-{tolerance:.2%}: the sender may hold back up to a TSO burst ({burst} segments) of its window "
                  f"({burst / window:.2%}), and a delayed ACK lengthens srtt by up to a packet's serialization "
                  f"({delayed:.2%} of the RTT)", "Mb/s")


@checkpoint
def halving(run: StepRun, flow: str = "f1") -> CheckResult:
    """A loss in congestion avoidance sets ssthresh to half the window (Reno's beta = 1/2)."""
    events = _congestion_avoidance_losses(run.flow(flow))
    ratio = float(np.mean([e["ssthresh"] / e["window"] for e in events]))
    window = min(e["window"] for e in events)
    tol = 1.5 / window
    return within("ssthresh / window at a loss", ratio, 0.5 - tol, 0.5 + tol,
                  f"Reno halves (beta 0.5; CUBIC would keep 0.7) the window it has when it detects the loss; the "
                  f"window read is the last sample before, up to 50 ms earlier, in which Reno grows by less than "
                  f"one packet, and ssthresh = cwnd/2 rounds down half a packet: +-1.5/W = +-{tol:.3f} at the "
                  f"smallest window at a loss, {window:.0f} packets")


@checkpoint
def recovery_time(run: StepRun, flow: str = "f1", link: str = "cern-gbe") -> CheckResult:
    """After a loss the halved window takes (W/2) RTTs to regrow to W: time = (W/2) * RTT."""
    rows = run.flow(flow)
    events = _congestion_avoidance_losses(rows)
    ratios, measured, theory, windows = [], 0.0, 0.0, []
    for k, event in enumerate(events):
        after = rows[rows["t"] > event["t"]]
        regained = after[after["cwnd_pkts"] >= event["window"] - 2]
        next_loss = events[k + 1]["t"] if k + 1 < len(events) else math.inf
        end = min(float(regained["t"].iloc[0]) if not regained.empty else math.inf, next_loss)
        if math.isinf(end):
            continue  # the run ended before the window regrew
        rtt_s = float(rows[(rows["t"] > event["t"]) & (rows["t"] <= end)]["srtt_ms"].mean()) / 1e3
        measured, theory = end - event["t"], event["window"] / 2 * rtt_s
        ratios.append(measured / theory)
        windows.append(event["window"])
    if not ratios:
        raise MissingData("no loss whose window regrew before the run ended: lengthen duration_s")
    rounds = min(windows) / 2
    delayed = _packet_share(run, flow, link)
    lo, hi = 1 - 3 / rounds - delayed, 1 + 1 / rounds + 0.05 / theory + delayed
    return within("time to regrow the halved window / ((W/2) x RTT)", float(np.mean(ratios)), lo, hi,
                  f"last: {measured:.1f} s measured, {theory:.1f} s = (W/2)*RTT with the mean RTT of the regrowth; "
                  f"the window counts as regained 2 packets early (2 of the W/2 = {rounds:.0f} RTTs at the smallest "
                  f"window) and its staircase can be a packet off (1 RTT), cwnd is sampled every 50 ms, and a delayed "
                  f"ACK lengthens srtt by up to a packet's serialization ({delayed:.2%})")


SAMPLE_S = 0.05  # flows.csv: 20 samples a second
REGAINED = 0.98  # "regained": back within 2 % of the pre-loss window (FAST settles to its equilibrium)


def _planned_loss(rows: pd.DataFrame, settle_s: float = 0.5) -> tuple[dict[str, float], float]:
    """The first loss event after slow start (the planned one) and the window held just before it.

    The pre-loss window is the largest sampled in the half second before the loss was detected: a
    window still growing (slow start, Limited Slow-Start) is largest just before, and FAST's few
    packets of wobble around its equilibrium are within the 2 % of "regained".
    """
    events = _loss_events(rows)
    if not events:
        raise MissingData("the flow lost no packet: the planned loss did not fall inside the run")
    event = events[0]
    before = rows[(rows["t"] > event["t"] - settle_s) & (rows["t"] < event["t"])]
    if before.empty:
        raise MissingData("no sample in the second before the loss")
    return event, float(before["cwnd_pkts"].max())


def _recovery_end(rows: pd.DataFrame, event: dict[str, float]) -> float:
    """The first open-state sample after the loss: where congestion avoidance, and each law, resumes."""
    after = rows[(rows["t"] > event["t"]) & (rows["ca_state"] == "open")]
    if after.empty:
        raise MissingData("the flow never left loss recovery")
    return float(after["t"].iloc[0])


def _regained_at(rows: pd.DataFrame, since: float, goal: float) -> float:
    back = rows[(rows["t"] >= since) & (rows["ca_state"] == "open") & (rows["cwnd_pkts"] >= goal)]
    if back.empty:
        raise MissingData(f"the window did not regain {goal:.0f} packets before the run ended")
    return float(back["t"].iloc[0])


def _rounds_s(start: float, goal: float, increase: Callable[[float], float], base_s: float, bdp: float) -> float:
    """Seconds for a window growing by increase(w) packets per round from `start` until `goal`, each
    round one RTT: the base RTT while the window fits the pipe, base * w/BDP once the excess queues."""
    w, seconds = start, 0.0
    while w < goal:
        seconds += base_s * max(1.0, w / bdp)
        w += increase(w)
    return seconds


def _hstcp_table_share(run: StepRun, flow: str, after_s: float) -> float:
    """The a the HSTCP flow used (its `rtt` events in congestion avoidance after `after_s`) over
    RFC 3649's formula a(w): its table holds a at the rows' windows, a window between two rows
    takes the lower row's."""
    params, events = hstcp_checks.params_of(run), run.events(flow)
    rows = events[(events["event"] == "rtt") & (events["mode"] == "ca") & (events["t"] > after_s)
                  & (events["cwnd"] > params.low_window)]
    if rows.empty:
        raise MissingData(f"cc_events.csv has no rtt events of {flow} in congestion avoidance after the loss")
    return float((rows["a"] / rows["cwnd"].map(params.increase)).median())


def _fast_model_s(run: StepRun, flow: str, t0: float, start: float, goal: float) -> float:
    """FAST's law w <- min(2w, (1 - gamma) w + gamma (base/avg w + alpha)) replayed from `start` on the
    baseRTT and avgRTT the flow itself measured at each of its updates (the avgRTT average still holds
    the pre-loss queue for a while, which slows the regrowth below gamma * alpha per update), floored
    as the update is in its `floor` mode; where the
    update found the queue empty (its `mi` flag) the multiplicative-increase phase doubles instead,
    reaching the doubled window by the next update."""
    updates = run.events(flow)
    rows = list(updates[(updates["event"] == "update") & (updates["t"] > t0)].itertuples())
    w = start
    for i, row in enumerate(rows):
        gamma, alpha = float(row.gamma), float(row.alpha)
        if row.mi in (True, "True"):
            # MI grows per ACK like slow start: the doubled window is there by the next update
            w, reached = 2 * w, float(rows[i + 1].t) if i + 1 < len(rows) else math.inf
        else:
            w = min(2 * w, (1 - gamma) * w + gamma * (row.base_rtt_us / row.avg_rtt_us * w + alpha))
            if getattr(row, "mode", "floor") == "floor":
                w = math.floor(w)  # fastlab's integer update (mode floor): 7 of gamma * alpha = 7.5 a step
            reached = float(row.t)
        if w >= goal:
            return reached - t0
    raise MissingData("FAST's law does not regain the window within the run's updates")


@checkpoint
def regain_after_one_loss(run: StepRun, flow: str = "f1", link: str = "cern-gbe") -> CheckResult:
    """After the one planned loss: the time to regain the pre-loss window, against the algorithm's own law.

    Reno (1 packet per RTT) would need (W - ssthresh) RTTs; HSTCP adds a(w) per RTT (RFC 3649) from
    its reduced window; FAST moves towards its equilibrium by its update law. Each law starts where
    loss recovery ends (the kernel's PRR owns the window until then), from the ssthresh the loss set;
    the measured time runs from there to the first open-state sample at 98 % of the window before
    the loss, or of what the path holds (BDP + buffer) if a growing window had overshot that.
    """
    rows = run.flow(flow)
    cc = run.flow_summary(flow).cc
    event, window = _planned_loss(rows)
    base_s, bdp = run.flow_summary(flow).min_rtt_ms / 1e3, _bdp_pkts(run, flow, link)
    goal = REGAINED * min(window, _path_holds_pkts(run, flow, link))
    start = event["ssthresh"]
    if start >= goal:
        raise MissingData(f"the first loss (at {event['t']:.1f} s) left the window at {start:.0f} packets, not below "
                          f"{goal:.0f}: it came in slow start, where cwnd had overshot the window the path holds")
    resumed = _recovery_end(rows, event)
    measured = _regained_at(rows, resumed, goal) - resumed
    # the law takes over from the window recovery left: ssthresh after PRR (Reno, HSTCP); FAST's own
    # update also runs during the recovery (measured: 158 -> 163 before the first open sample)
    start = max(start, float(rows[rows["t"] >= resumed]["cwnd_pkts"].iloc[0]))
    reno = _rounds_s(start, goal, lambda _w: 1.0, base_s, bdp)
    if cc == "hstcp":
        params, table = hstcp_checks.params_of(run), _hstcp_table_share(run, flow, event["t"])
        theory = _rounds_s(start, goal, lambda w: params.increase(w) * table, base_s, bdp)
        law = (f"RFC 3649's a(w) per RTT as the algorithm tabulates it ({table:.3f} of the formula, its rtt events "
               "after the loss: a window between two rows takes the lower row's a), an RTT of base * w/BDP once "
               "the window exceeds the pipe,")
    elif cc == "fast":
        theory, law = _fast_model_s(run, flow, resumed, start, goal), "FAST's update law on its own RTT averages"
    else:
        theory, law = reno, "one packet per RTT"
    last_rtt = base_s * max(1.0, goal / bdp)
    lo, hi = theory - last_rtt - SAMPLE_S, theory + last_rtt + 2 * SAMPLE_S
    result = within(f"time for {cc} to regain its window after one loss", measured, lo, hi,
                    f"{law} from {start:.0f} packets (ssthresh {event['ssthresh']:.0f}) to {goal:.0f}, from the "
                    f"end of loss recovery: {theory:.2f} s (Reno at one packet per RTT: {reno:.0f} s = "
                    f"{reno / 60:.1f} min); -1 RTT "
                    f"({last_rtt * 1e3:.0f} ms at the goal) and a sample: the law steps once a round and the goal "
                    "is crossed inside the last one; +1 RTT and 2 samples: the kernel's window crosses it as the "
                    "last round's ACKs arrive, and both ends of the interval are "
                    f"{SAMPLE_S * 1e3:.0f} ms samples", "s")
    result.note = f"window {window:.0f} -> {start:.0f} at {event['t']:.1f} s"
    return result


decrease_factor = checkpoint(hstcp_checks.decrease_factor)
limited_slow_start = checkpoint(hstcp_checks.limited_slow_start)
