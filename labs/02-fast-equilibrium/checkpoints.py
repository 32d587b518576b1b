"""Checkpoints of lab 02 (FAST equilibrium): the bottleneck queue holds alpha packets per flow,
each window sits at w = alpha*D/(D-d), rates follow alpha and not the RTT, and a live alpha change
moves the queue within a few RTTs. Read from the bottleneck's queue trace (links.csv) and the
flows' tcp_info traces (flows.csv), after FAST has converged (`t0`) and while the flows run.

The queue bounds per flow come from FAST itself: with the faithful integer floor the equilibrium
lies between (alpha-2)*D/(D-d) and alpha*D/(D-d), i.e. 0-2 packets below alpha per flow by FAST's
own estimate. The bottleneck holds more than that estimate when a flow's baseRTT is above the path's
real minimum RTT (FAST's baseRTT problem: it counts the difference as propagation); that excess is
read from the run. The queue's time mean has the sampling spread of a series that wanders over
seconds: its standard error comes from the spread of one-second batch means.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fastlab.labs.kit import CheckResult, MissingData, StepRun, checkpoint, link_kept_busy, within

FLOOR_PKTS = 2  # the integer floor keeps each flow up to 2 packets under alpha
NET_CHANGE_PKTS = 0.5  # the window's net change over the updates, over gamma x their number (see `window`)
SIGMAS = 3  # standard errors of a time mean the bounds allow for
BATCH_S = 1.0  # batch length for the standard error of a time mean


def _window(frame: pd.DataFrame, t0: float, t1: float | None = None) -> pd.DataFrame:
    rows = frame[(frame["t"] >= t0) & (frame["t"] < (t1 if t1 is not None else np.inf))]
    if len(rows) < 10:
        raise MissingData(f"fewer than 10 samples between {t0:g} s and {t1 if t1 is not None else 'the end'}")
    return rows


def _flows_end(run: StepRun) -> float:
    """The flows stop at duration_s; the link samples after it show the queue draining."""
    return float(run.spec["duration_s"])


def _standard_error(rows: pd.DataFrame, column: str) -> float:
    """Standard error of the time mean of a sampled series, from the spread of its means over BATCH_S
    batches (samples 50 ms apart are correlated; FAST's queue wanders over a second or more)."""
    batches = rows.groupby((rows["t"] // BATCH_S).astype(int))[column].mean()
    if len(batches) < 4:
        raise MissingData(f"fewer than 4 batches of {BATCH_S:g} s to estimate the spread of the mean")
    return float(batches.std(ddof=1) / math.sqrt(len(batches)))


def _path_min_ms(run: StepRun, flow: str) -> float:
    """The path's real minimum RTT d: its propagation and a packet's serialization, as the run's delay
    accounting has them (flows.csv's acct_ columns, fastlab.measure.accounting), else the kernel's min_rtt.
    The kernel's minimum is itself a sample and can hold what the hosts added when it was taken: lab 02
    beside 7 other runs, f2's min_rtt 82.47 ms with FAST's own baseRTT at 81.46 and the path's 80.6: the
    0.8 ms FAST's base held beyond the path went unseen, and a queue 0.9 packets above its model's top was
    called a failed checkpoint (2026-11-29)."""
    rows = run.flow(flow)
    if {"acct_propagation_ms", "acct_serialization_ms"} <= set(rows.columns):
        path = (rows["acct_propagation_ms"] + rows["acct_serialization_ms"]).dropna()
        if not path.empty:
            return float(path.median())
    return float(rows["min_rtt_ms"].min())


def _base_rtt_excess(run: StepRun, flow: str, t0: float, t1: float) -> float:
    """Packets a flow keeps queued beyond its own estimate because its baseRTT d_hat is above the path's
    real minimum RTT d (_path_min_ms): FAST takes d_hat - d of every RTT for propagation, so
    w (d_hat - d)/D of its packets in the queue go unseen."""
    updates = run.events(flow)
    updates = updates[(updates["event"] == "update") & (updates["t"] >= t0) & (updates["t"] < t1)]
    if updates.empty:
        raise MissingData(f"{flow}: no FAST updates between {t0:g} and {t1:g} s")
    d_ms = _path_min_ms(run, flow)
    over = (updates["base_rtt_us"] / 1e3 - d_ms).clip(lower=0)
    return float((updates["w_old"] * over / (updates["avg_rtt_us"] / 1e3)).mean())


def _flow_ids(run: StepRun, alphas: list[int]) -> dict[str, int]:
    flows = run.flow_ids()
    if len(flows) != len(alphas):
        raise MissingData(f"the run has {len(flows)} flows, the checkpoint names {len(alphas)} alphas")
    return dict(zip(flows, alphas, strict=True))


def _around_alpha(run: StepRun, name: str, rows: pd.DataFrame, alphas: dict[str, int], t0: float,
                  t1: float) -> CheckResult:
    """The queue's time mean over `rows`: the sum of the alphas plus the flows' unseen baseRTT excess,
    up to FLOOR_PKTS per flow less, +-SIGMAS standard errors of the mean."""
    mean = float(rows["backlog_pkts"].mean())
    excess = {f: _base_rtt_excess(run, f, t0, t1) for f in alphas}
    expected = sum(alphas.values()) + sum(excess.values())
    lateness = sum(_lateness_pkts(run, f, t0, t1) for f in alphas)
    spread = SIGMAS * _standard_error(rows, "backlog_pkts")
    unseen = ", ".join(f"{f} {e:.1f}" for f, e in excess.items())
    return within(name, mean, expected - len(alphas) * FLOOR_PKTS - lateness - spread, expected + spread,
                  f"sum of alphas {sum(alphas.values())} plus the packets FAST's baseRTT above the path's min RTT "
                  f"hides (w (baseRTT - min_rtt)/avgRTT: {unseen}) = {expected:.1f}; the integer floor keeps each "
                  f"flow 0-{FLOOR_PKTS} packets under alpha, and the delay no link queued, which FAST counts as "
                  f"queue, {lateness:.1f} more (rate x the emulators' lateness and the hosts' delay over this "
                  f"window); +-{SIGMAS} standard errors "
                  f"of the time mean (+-{spread:.1f}, from its {BATCH_S:g}-s batch means)", "pkts")


def _lateness_pkts(run: StepRun, flow: str, t0: float, t1: float) -> float:
    """Packets' worth of the delay the flow read as queue that no link queued over [t0, t1]: the emulators'
    lateness and the hosts' delay above their share of its minimum RTT (the run's delay accounting, or for
    a run made before it the verdict's mean lateness). FAST counts it as queueing delay, the bottleneck
    does not hold those packets. 0 for a run with neither."""
    rows = run.flow(flow)
    if {"acct_hosts_ms", "acct_lateness_ms"} <= set(rows.columns):
        # measured from the same d as the baseRTT's excess (_path_min_ms): what FAST's avgRTT holds beyond
        # the path and the queue. read_as_queue is measured from the kernel's minimum; the two together
        # would count the part of that minimum above the path twice, or not at all.
        run.measure_window(t0, t1)
        inside = rows[(rows["t"] >= t0) & (rows["t"] <= t1)]
        extra = (inside["acct_hosts_ms"] + inside["acct_lateness_ms"]).dropna()
        delay_ms = max(0.0, float(extra.mean())) if not extra.empty else run.read_as_queue_ms(flow, t0, t1)
    else:
        delay_ms = run.read_as_queue_ms(flow, t0, t1)
    if not delay_ms:
        return 0.0
    mss = float(run.flow(flow)["mss_bytes"].dropna().median())
    return run.goodput_mbps(flow, t0, t1) * 1e6 / 8 / mss * delay_ms / 1e3


def _change_time(run: StepRun) -> float:
    changes = run.spec.get("cc_changes") or []
    if not changes:
        raise MissingData("the run's spec has no cc_changes: nothing changed alpha while it ran")
    return float(changes[0]["at_s"])


@checkpoint
def backlog(run: StepRun, alphas: list[int], t0: float = 6.0, link: str = "bottleneck") -> CheckResult:
    """Each FAST flow keeps alpha packets queued: the bottleneck backlog is the sum of the alphas."""
    t1 = _flows_end(run)
    rows = _window(run.link(link), t0, t1)
    return _around_alpha(run, f"mean {link} backlog after {t0:g} s", rows, _flow_ids(run, alphas), t0, t1)


@checkpoint
def window(run: StepRun, flow: str, alpha: int, t0: float = 6.0, gamma: float = 0.5) -> CheckResult:
    """FAST's equilibrium w = alpha * D / (D - d), i.e. w * (1 - d/D) = alpha packets of the flow's own
    queued, read at every update from FAST's own baseRTT d and avgRTT D (cc_events.csv)."""
    rows = run.events(flow)
    rows = rows[(rows["event"] == "update") & (rows["t"] >= t0)]
    if len(rows) < 50:
        raise MissingData(f"{flow}: {len(rows)} FAST updates after {t0:g} s (50 needed)")
    if rows["mi"].astype(str).str.lower().eq("true").any():
        raise MissingData(f"{flow}: the multiplicative-increase phase was on after {t0:g} s: not in equilibrium")
    queued = rows["w_old"] * (1 - rows["base_rtt_us"] / rows["avg_rtt_us"])
    mean = float(queued.mean())
    return within(f"{flow} mean w*(1 - baseRTT/avgRTT) over {len(rows)} updates", mean,
                  alpha - 1 / gamma - NET_CHANGE_PKTS, alpha + NET_CHANGE_PKTS,
                  f"alpha {alpha}: summed over K updates the law w' = w + floor(gamma*(alpha - w*(1-d/D))) gives "
                  f"mean(w*(1-d/D)) = alpha - mean(floor)/gamma - (net change of w)/(gamma*K); the floor takes 0 to "
                  f"1/gamma = {1 / gamma:g} pkts, the net change over {len(rows)} updates less than 0.5. (The same law "
                  "with averaged D and w is biased by their covariance when two flows move the queue: the mean "
                  "of a product is not the product of the means.)", "pkts")



@checkpoint
def rate_ratio(run: StepRun, flow: str, reference: str, expected: float, t0: float = 6.0) -> CheckResult:
    """Rates in equilibrium are x_i = q_i / q, q_i the packets flow i keeps queued and q the common
    queueing delay: their ratio is that of the alphas, moved by the floor and the baseRTT excess."""
    t1 = _flows_end(run)
    ratio = run.goodput_mbps(flow, t0, t1) / run.goodput_mbps(reference, t0, t1)
    alpha_ref = _alpha_of(run, reference)
    alpha = alpha_ref * expected
    e, e_ref = _base_rtt_excess(run, flow, t0, t1), _base_rtt_excess(run, reference, t0, t1)
    low, high = FLOOR_PKTS + NET_CHANGE_PKTS, NET_CHANGE_PKTS  # a flow's queued packets: alpha - 2.5 .. alpha + 0.5
    lo = (alpha - low + e) / (alpha_ref + high + e_ref)
    hi = (alpha + high + e) / (alpha_ref - low + e_ref)
    return within(f"rate of {flow} / rate of {reference}", ratio, lo, hi,
                  f"alpha ratio {expected:g} whatever the RTTs; each flow keeps alpha - {low:g} .. alpha + {high:g} "
                  f"packets by its own estimate (the floor and the window's net change, as in `window`) plus what its "
                  f"baseRTT above the path's min RTT hides ({flow} {e:.1f}, {reference} {e_ref:.1f}): "
                  f"({alpha:g} - {low:g} + {e:.1f}) / ({alpha_ref:g} + {high:g} + {e_ref:.1f}) .. "
                  f"({alpha:g} + {high:g} + {e:.1f}) / ({alpha_ref:g} - {low:g} + {e_ref:.1f})")


def _alpha_of(run: StepRun, flow: str) -> float:
    updates = run.events(flow)
    updates = updates[updates["event"] == "update"]
    if updates.empty:
        raise MissingData(f"{flow}: no FAST updates")
    return float(updates["alpha"].iloc[-1])


@checkpoint
def utilization(run: StepRun, t0: float = 6.0, link: str = "bottleneck") -> CheckResult:
    """A standing queue of alpha packets per flow keeps the bottleneck busy while the flows run."""
    return link_kept_busy(run, link, t0, _flows_end(run),
                          "the link idles only while its queue is empty, and FAST's equilibrium keeps the sum of "
                          "the alphas queued")


@checkpoint
def backlog_around_change(run: StepRun, alpha: int, side: str, link: str = "bottleneck",
                          settle_s: float = 3.0) -> CheckResult:
    """Before the live change the queue holds the old alpha, from settle_s after it the new one."""
    at = _change_time(run)
    t0, t1 = (max(at - 7.0, settle_s), at) if side == "before" else (at + settle_s, _flows_end(run))
    rows = _window(run.link(link), t0, t1)
    flow = run.flow_ids()[0]
    return _around_alpha(run, f"mean {link} backlog {side} the change at {at:g} s", rows, {flow: alpha}, t0, t1)


REACHED = 0.8  # the share of the way from the old queue to the new one that counts as reached


@checkpoint
def reaches_new_backlog(run: StepRun, alpha: int, link: str = "bottleneck", within_s: float = 1.0) -> CheckResult:
    """After the change the window moves halfway to its new target every update: a few RTTs to the new queue."""
    at = _change_time(run)
    old = int(run.spec["flows"][0].get("cc_args", {}).get("alpha", 0))
    level = old + REACHED * (alpha - old)
    rows = run.link(link)
    reached = rows[(rows["t"] >= at) & (rows["backlog_pkts"] >= level)]
    if reached.empty:
        raise MissingData(f"the {link} queue never reached {level:g} packets after the change")
    delay = float(reached["t"].iloc[0]) - at
    return within(f"time for the queue to go {REACHED:.0%} of the way from {old} to {alpha} ({level:g} packets)",
                  delay, 0.0, within_s,
                  f"<= {within_s:g} s: gamma 1/2 halves the distance to the target every update (one per RTT, "
                  f"40-76 ms here): log2(1/{1 - REACHED:g}) = {math.log2(1 / (1 - REACHED)):.1f} updates for "
                  f"{REACHED:.0%} of the way without the loop's delay, a few more with the overshoot the lagging "
                  "avgRTT adds (lab 09's model: settled within ~6 updates); 1 s is ~15 RTTs", "s")
