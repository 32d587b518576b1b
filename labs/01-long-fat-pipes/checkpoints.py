"""Checkpoints of lab 01 (long fat pipes): the window that fills the pipe, slow start, and Reno's
one-packet-per-RTT regrowth after a loss, read from one flow's tcp_info trace (flows.csv) and its
bottleneck queue (links.csv).

Windows count 1500-byte packets: the kernel's cwnd counts MSS-sized segments, and a 1448-byte
MSS with timestamps is a 1500-byte packet on the wire, the unit of the topology's BDP.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fastlab.labs import CheckResult, MissingData, StepRun, checkpoint, within

PACKET_BITS = 1500 * 8
LOSS_STATES = ("recovery", "loss")


def _bdp_pkts(run: StepRun, flow: str, link: str) -> float:
    """rate * base RTT in packets, from the link's capacity and the flow's minimum RTT."""
    rate_bps = run.link_summary(link)["capacity_mbps"] * 1e6
    return rate_bps * run.flow_summary(flow)["min_rtt_ms"] / 1e3 / PACKET_BITS


def _loss_events(rows: pd.DataFrame) -> list[dict[str, float]]:
    """Each entry into loss recovery: its time, the window just before it and the ssthresh it set."""
    in_loss = rows["ca_state"].isin(LOSS_STATES).to_numpy()
    events = []
    for i in np.flatnonzero(in_loss[1:] & ~in_loss[:-1]) + 1:
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
def window_at_full_rate(run: StepRun, flow: str = "f1", link: str = "cern-gbe",
                        tolerance: float = 0.1) -> CheckResult:
    """While the bottleneck queue is non-empty, cwnd minus the queue is what is in the pipe: rate * RTT."""
    rows = run.flow(flow)[["t", "cwnd_pkts", "ca_state"]]
    queue = run.link(link)[["t", "backlog_pkts"]]
    merged = pd.merge_asof(rows, queue, on="t", direction="nearest")
    full = merged[(merged["ca_state"] == "open") & (merged["backlog_pkts"] >= 5)]
    if len(full) < 20:
        raise MissingData(f"the {link} queue was seldom non-empty: the link never ran at full rate")
    in_pipe = float((full["cwnd_pkts"] - full["backlog_pkts"]).median())
    bdp = _bdp_pkts(run, flow, link)
    return within("window minus queue at full rate = rate x base RTT", in_pipe, bdp * (1 - tolerance),
                  bdp * (1 + tolerance),
                  f"BDP {bdp:.0f} pkts +-{tolerance:.0%}: cwnd and queue are sampled 50 ms apart at most, and the "
                  "reverse path and host stacks add a few packets in flight", "pkts")


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
    rtt_s = run.flow_summary(flow)["min_rtt_ms"] / 1e3
    theory = rtt_s * math.log2(bdp / initial_window)
    return within("time for slow start to reach the BDP", measured, theory - rtt_s, theory + 2 * rtt_s,
                  f"theory RTT*log2(BDP/IW) = {theory:.2f} s with IW {initial_window:.0f}; -1 RTT: the first sample "
                  "comes up to an RTT after the first data; +2 RTT: the last doublings wait in the growing queue "
                  "and cwnd is sampled every 50 ms", "s")


@checkpoint
def regrowth_per_rtt(run: StepRun, flow: str = "f1", settle_s: float = 1.0, tolerance: float = 0.2) -> CheckResult:
    """Between losses Reno adds one packet per RTT: the slope of cwnd(t) times the RTT is 1."""
    rows = run.flow(flow)
    events = _loss_events(rows)
    if not events:
        raise MissingData("the flow never lost a packet: there is no regrowth to measure")
    ends = [e["t"] for e in events[1:]] + [float(rows["t"].iloc[-1])]
    best: tuple[float, float] | None = None  # (span length, packets per RTT) of the longest loss-free span
    for event, end in zip(events, ends, strict=True):
        span = rows[(rows["t"] > event["t"] + settle_s) & (rows["t"] < end) & (rows["ca_state"] == "open")]
        if len(span) < 40:
            continue
        slope = float(np.polyfit(span["t"], span["cwnd_pkts"], 1)[0])
        per_rtt = slope * float(span["srtt_ms"].mean()) / 1e3
        if best is None or end - event["t"] > best[0]:
            best = (end - event["t"], per_rtt)
    if best is None:
        raise MissingData("no loss-free span of 2 s or more after a loss")
    return within("cwnd growth per RTT in congestion avoidance", best[1], 1 - tolerance, 1 + tolerance,
                  f"Reno adds one segment per window of ACKed data (RFC 5681), counted per ACKed segment by Linux "
                  f"so delayed ACKs do not slow it; +-{tolerance:.0%}: the RTT grows with the queue inside the span",
                  "pkts/RTT")


@checkpoint
def halving(run: StepRun, flow: str = "f1") -> CheckResult:
    """A loss in congestion avoidance sets ssthresh to half the window (Reno's beta = 1/2)."""
    events = _congestion_avoidance_losses(run.flow(flow))
    ratio = float(np.mean([e["ssthresh"] / e["window"] for e in events]))
    return within("ssthresh / window at a loss", ratio, 0.45, 0.55,
                  "Reno halves (beta 0.5; CUBIC would keep 0.7); +-0.05: the window before the loss is sampled up "
                  "to 50 ms (a fraction of a packet at 1 packet per RTT) early")


@checkpoint
def recovery_time(run: StepRun, flow: str = "f1", tolerance: float = 0.15) -> CheckResult:
    """After a loss the halved window takes (W/2) RTTs to regrow to W: time = (W/2) * RTT."""
    rows = run.flow(flow)
    events = _congestion_avoidance_losses(rows)
    ratios, measured, theory = [], 0.0, 0.0
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
    if not ratios:
        raise MissingData("no loss whose window regrew before the run ended: lengthen duration_s")
    return within("time to regrow the halved window / ((W/2) x RTT)", float(np.mean(ratios)), 1 - tolerance,
                  1 + tolerance,
                  f"last: {measured:.1f} s measured, {theory:.1f} s = (W/2)*RTT with the mean RTT of the regrowth; "
                  f"+-{tolerance:.0%}: the window is regained 2 packets early and sampled every 50 ms")
