"""A checkpoint's own fidelity: the verdict over the window it measured, with no more error than its band
allows (issue 53 item 3).

The run's verdict judges the whole run against budgets set by the flows' algorithms. A checkpoint measures
over a window of its own (the second half, after convergence, around a change) and compares with a band
of its own, sometimes narrower than what the verdict lets through: a run could be "faithful" and fail a
checkpoint because of a delay or a stall the verdict allowed. So each checkpoint is judged again over its
window, on the same evidence:

- **delay**: each flow's delay read as queue that no link queued (fastlab.measure.accounting), its median
  over the window, against the flow's budget -- the window may hold a bad spell the run's median hides (a
  loss-based flow's as the rate error it makes, its share of the RTT, against the band: _loss_based);
- **disturbances**: the bytes the disturbances that overlap the window cost each flow (fastlab.measure.
  effects), as a share of what it delivered in the window, against the smaller of the run's limit
  (effects.DELIVERED_SHARE_MAX) and the band's half-width relative to its centre -- the budget shrinks
  until it lies inside the band. A checkpoint that failed is also inconclusive when that share reaches its
  miss (how far outside the band it measured, relative): the disturbance alone could have moved it there.

A checkpoint whose model takes the measured delay into account (lab 02's queue, which FAST shortens by
what it reads as queue: fastlab.labs.kit.StepRun.read_as_queue_ms) has the delay inside its band already;
the disturbances are judged all the same. Pure: the verdict (summary.json's `fidelity`) and the flows'
samples in, "" or the reason out (fastlab.base.record.Verdict's `delay_accounting` and `effects`).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from fastlab.base.record import EffectSpan, Verdict
from fastlab.measure import effects
from fastlab.measure.budgets import LOSS_BASED_BASIS


def band_share(band: tuple[float, float]) -> float | None:
    """The band's half-width relative to its centre (None for a band around 0, or open on one side)."""
    lo, hi = band
    centre = (lo + hi) / 2
    return None if centre == 0 or not math.isfinite(centre) else abs(hi - lo) / 2 / abs(centre)


def margin_share(band: tuple[float, float], measured: Any) -> float | None:
    """How far inside its band the figure measured, relative to the nearer edge: the error that cannot move it
    out (a band open on one side, "FAST leads Reno by at least 1.26", has no half-width); None without a
    finite edge or a figure."""
    if not isinstance(measured, int | float) or not math.isfinite(measured):
        return None
    edges = [e for e in band if math.isfinite(e) and e != 0]
    return min((abs(measured - e) / abs(e) for e in edges), default=None)


def miss_share(band: tuple[float, float], measured: float) -> float:
    """How far outside the band the figure measured, relative to the edge it crossed (0 inside)."""
    lo, hi = band
    if measured < lo:
        return (lo - measured) / abs(lo) if lo else float("inf")
    if measured > hi:
        return (measured - hi) / abs(hi) if hi else float("inf")
    return 0.0


def _effects(spans: list[EffectSpan]) -> list[effects.Effect]:
    """The record's spans as the effects the weighing measured (what deficit_share takes)."""
    return [effects.Effect(s.flow, s.t0_s, s.t1_s, list(s.kinds), deficit_bytes=s.deficit_bytes) for s in spans]


def _loss_based(flow: str, rows: pd.DataFrame, median_ms: float, share: float | None) -> str:
    """A loss-based flow pays delay no link queued through its RTT: its rate at a given window falls by that
    delay's share of the RTT. The run's verdict reports it and does not judge it (a quiet machine's hosts add
    0.5-1.7 ms to multi-flow runs: fastlab.measure.weighing.accounting_reasons); a checkpoint judges it against
    its band (a rate error inside the band cannot move the figure out of it), not against the run's 1 % of the
    RTT, which called lab 07's quiet short runs (1.1-1.5 ms on 85 ms, bands of +-6 % and wider) unfaithful.
    "" where it fits, or the checkpoint has no relative band (`share`: band_share, or margin_share for a band
    open on one side)."""
    rtt = rows["min_rtt_ms"].dropna() if "min_rtt_ms" in rows else pd.Series(dtype=float)
    rtt = rtt[rtt > 0]
    if share is None or rtt.empty or median_ms <= 0:
        return ""
    cost = median_ms / float(rtt.min())
    if cost <= share:
        return ""
    return (f"flow {flow} read {median_ms:.2f} ms as queue that no link queued (median), {cost:.2%} of its "
            f"{float(rtt.min()):.2f} ms RTT: its rate's error, more than the {share:.2%} this checkpoint's band allows")


def _link_cost(verdict: Verdict, flows: pd.DataFrame, link: str, t0: float, t1: float) -> tuple[float, list[str]]:
    """What the disturbances cost the flows through `link` together over [t0, t1], as a share of what they
    delivered there (0 where none was weighed), and the flows it touched."""
    through = {p.flow for p in verdict.paths if any(c and c[0] == link for c in p.crossings)}
    lost = delivered = 0.0
    touched = []
    for flow in sorted(through):
        rows = flows[flows["flow"] == flow].sort_values("t") if not flows.empty else flows
        if rows.empty or "bytes_acked" not in rows:
            continue
        got = effects.delivered_bytes(rows, t0, t1)
        delivered += got
        fig = verdict.effects.get(flow)
        share = effects.deficit_share(_effects(fig.spans), rows, t0, t1) if fig is not None else None
        if share:
            lost += share * got
            touched.append(flow)
    return (lost / delivered if delivered > 0 else 0.0), touched


def judge(verdict: Verdict | None, flows: pd.DataFrame, window: tuple[float, float],
          band: tuple[float, float] | None, measured: Any, passed: bool, of_link: str | None = None) -> str:
    """Why the checkpoint measured over `window` cannot vouch for its figure, or "". `of_link`: the figure is
    one link's traffic as a whole (its utilization, fastlab.labs.kit.link_kept_busy): a disturbance moves it by
    what the flows through that link lost together, as a share of what they delivered -- one flow's deficit,
    its own share, says how far its rate moved, not the link's (lab 04's fast-pair, CI 2026-11-29: f3's 0.99 %
    against a utilization band of +-0.71 %, while f3 carried a fifth of the uplink's bytes and Reno filled it)."""
    if verdict is None:
        return ""
    t0, t1 = window
    reasons = []
    share = band_share(band) if band is not None else None
    for flow, judged in sorted(verdict.delay_accounting.items()):
        if flows.empty or "acct_read_as_queue_ms" not in flows:
            break
        rows = flows[(flows["flow"] == flow) & (flows["t"] >= t0) & (flows["t"] <= t1)]
        inside = rows["acct_read_as_queue_ms"].dropna()
        if inside.empty or judged.budget_ms is None:
            continue
        median = float(inside.median())
        if judged.basis == LOSS_BASED_BASIS:
            reason = _loss_based(flow, rows, median, share if share is not None or band is None
                                 else margin_share(band, measured))
            if reason:
                reasons.append(f"{reason} between {t0:g} and {t1:g} s")
        elif median > judged.budget_ms:
            reasons.append(f"flow {flow} read {median:.2f} ms as queue that no link queued between "
                           f"{t0:g} and {t1:g} s (median), above its {judged.budget_ms:.2f} ms budget")
    allowed = effects.DELIVERED_SHARE_MAX
    if share is not None:
        allowed = min(allowed, share)
    miss = (miss_share(band, float(measured))
            if band is not None and not passed and isinstance(measured, int | float) else None)
    costs: list[tuple[str, float, str]] = []  # (who, share of the bytes, whose bytes)
    if of_link is not None and any(p.crossings for p in verdict.paths):
        lost, touched = _link_cost(verdict, flows, of_link, t0, t1)
        if lost > 0:
            costs.append((f"flow{'s' if len(touched) > 1 else ''} {', '.join(touched)}", lost,
                          f"the flows through {of_link}"))
    else:
        for flow, fig in sorted(verdict.effects.items()):
            rows = flows[flows["flow"] == flow] if not flows.empty else flows
            if rows.empty or "bytes_acked" not in rows:
                continue
            cost = effects.deficit_share(_effects(fig.spans), rows.sort_values("t"), t0, t1)
            if cost is not None and cost > 0:
                costs.append((f"flow {flow}", cost, "it"))
    for who, cost, whose in costs:
        said = f"what disturbed {who} between {t0:g} and {t1:g} s cost {cost:.2%} of the bytes {whose} delivered there"
        if cost > allowed:
            reasons.append(f"{said}, more than the {allowed:.2%} this checkpoint's band allows")
        elif miss is not None and cost >= miss:
            reasons.append(f"{said}, as much as the figure missed its band by ({miss:.2%})")
    return "the emulation was not faithful over this checkpoint's window: " + "; ".join(reasons) if reasons else ""
