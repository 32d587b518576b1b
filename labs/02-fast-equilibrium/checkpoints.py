"""Checkpoints of lab 02 (FAST equilibrium): the bottleneck queue holds alpha packets per flow,
each window sits at w = alpha*D/(D-d), rates follow alpha and not the RTT, and a live alpha change
moves the queue within a few RTTs. Read from the bottleneck's queue trace (links.csv) and the
flows' tcp_info traces (flows.csv), after FAST has converged (`t0`).

The queue bounds per flow come from FAST itself: with the faithful integer floor the equilibrium
lies between (alpha-2)*D/(D-d) and alpha*D/(D-d), i.e. 0-2 packets below alpha per flow, and the
queue sampled at 20 Hz moves by a few packets either way as FAST updates its window every RTT.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fastlab.labs import CheckResult, MissingData, StepRun, checkpoint, within

FLOOR_PKTS = 2  # the integer floor keeps each flow up to 2 packets under alpha
SAMPLING_PKTS = 4  # 20 Hz queue samples, per flow


def _window(frame: pd.DataFrame, t0: float, t1: float | None = None) -> pd.DataFrame:
    rows = frame[(frame["t"] >= t0) & (frame["t"] < (t1 if t1 is not None else np.inf))]
    if len(rows) < 10:
        raise MissingData(f"fewer than 10 samples between {t0:g} s and {t1 if t1 is not None else 'the end'}")
    return rows


def _around_alpha(name: str, backlog: float, alphas: list[int]) -> CheckResult:
    """A queue of sum(alpha) packets, up to FLOOR_PKTS per flow less, +-SAMPLING_PKTS per flow."""
    n = len(alphas)
    return within(name, backlog, sum(alphas) - n * (FLOOR_PKTS + SAMPLING_PKTS), sum(alphas) + n * SAMPLING_PKTS,
                  f"sum of alphas {sum(alphas)}: the integer floor keeps each flow 0-{FLOOR_PKTS} packets under alpha, "
                  f"and the 20 Hz queue samples move with every window update (+-{SAMPLING_PKTS} per flow)", "pkts")


def _change_time(run: StepRun) -> float:
    changes = run.spec.get("cc_changes") or []
    if not changes:
        raise MissingData("the run's spec has no cc_changes: nothing changed alpha while it ran")
    return float(changes[0]["at_s"])


@checkpoint
def backlog(run: StepRun, alphas: list[int], t0: float = 6.0, link: str = "bottleneck") -> CheckResult:
    """Each FAST flow keeps alpha packets queued: the bottleneck backlog is the sum of the alphas."""
    mean = float(_window(run.link(link), t0)["backlog_pkts"].mean())
    return _around_alpha(f"mean {link} backlog after {t0:g} s", mean, alphas)


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
    return within(f"{flow} mean w*(1 - baseRTT/avgRTT) over {len(rows)} updates", mean, alpha - 1 / gamma - 0.5,
                  alpha + 0.5,
                  f"alpha {alpha}: summed over K updates the law w' = w + floor(gamma*(alpha - w*(1-d/D))) gives "
                  f"mean(w*(1-d/D)) = alpha - mean(floor)/gamma - (net change of w)/(gamma*K); the floor takes 0 to "
                  f"1/gamma = {1 / gamma:g} pkts, the net change over {len(rows)} updates less than 0.5. (The same law "
                  "with averaged D and w is biased by their covariance when two flows move the queue: the mean "
                  "of a product is not the product of the means.)", "pkts")


@checkpoint
def rate_ratio(run: StepRun, flow: str, reference: str, expected: float, t0: float = 6.0,
               tolerance: float = 0.25) -> CheckResult:
    """Rates in equilibrium are x_i = alpha_i / q (q the common queueing delay): their ratio is alpha's."""
    ratio = run.goodput_mbps(flow, t0, math.inf) / run.goodput_mbps(reference, t0, math.inf)
    return within(f"rate of {flow} / rate of {reference}", ratio, expected * (1 - tolerance),
                  expected * (1 + tolerance),
                  f"alpha ratio {expected:g}, whatever the RTTs; +-{tolerance:.0%}: the 0-2 packet floor band is "
                  "a tenth of alpha 20, and the flows converge from slow start at different speeds")


@checkpoint
def utilization(run: StepRun, t0: float = 6.0, link: str = "bottleneck", minimum: float = 0.9) -> CheckResult:
    """A full queue of alpha packets per flow keeps the bottleneck busy."""
    rows = _window(run.link(link), t0)
    used = float(rows["tx_mbps"].mean()) / run.link_summary(link)["capacity_mbps"]
    return within(f"{link} utilization after {t0:g} s", used, minimum, 1.05,
                  f">= {minimum:.0%}: a standing queue never empties; up to 105%: tx rate samples are 50 ms apart")


@checkpoint
def backlog_around_change(run: StepRun, alpha: int, side: str, link: str = "bottleneck",
                          settle_s: float = 3.0) -> CheckResult:
    """Before the live change the queue holds the old alpha, from settle_s after it the new one."""
    at = _change_time(run)
    rows = run.link(link)
    rows = _window(rows, max(at - 7.0, settle_s), at) if side == "before" else _window(rows, at + settle_s)
    mean = float(rows["backlog_pkts"].mean())
    return _around_alpha(f"mean {link} backlog {side} the change at {at:g} s", mean, [alpha])


@checkpoint
def reaches_new_backlog(run: StepRun, alpha: int, link: str = "bottleneck", within_s: float = 1.0) -> CheckResult:
    """After the change the window moves halfway to its new target every update: a few RTTs to the new queue."""
    at = _change_time(run)
    rows = run.link(link)
    reached = rows[(rows["t"] >= at) & (rows["backlog_pkts"] >= alpha - 2 * SAMPLING_PKTS)]
    if reached.empty:
        raise MissingData(f"the {link} queue never reached {alpha - 2 * SAMPLING_PKTS} packets after the change")
    delay = float(reached["t"].iloc[0]) - at
    return within(f"time for the queue to reach alpha - {2 * SAMPLING_PKTS} after the change", delay, 0.0,
                  within_s,
                  f"<= {within_s:g} s: gamma 1/2 halves the distance to the target every RTT (40-70 ms here): "
                  "3-4 RTTs for 90% of the way without the loop's delay, a few more with the overshoot the lagging "
                  "avgRTT adds (lab 09's model: settled within ~6 updates); 1 s is ~15 RTTs", "s")
