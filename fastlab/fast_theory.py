"""What the theory says a run should show: the reference lines on the web app's charts.

Pure functions of a spec (no probe, no network): each flow's path from the topology plan and the
spec's link overrides (base RTT, bottleneck link and its capacity), and, where every flow through a
bottleneck runs FAST, FAST's equilibrium (Jin, Wei, Low 2004): the queue holds the sum of the alphas,
q = sum(alpha) / C seconds of queueing delay, each flow's rate is x_i = alpha_i / q, its RTT
D_i = d_i + q and its window w_i = x_i * D_i = alpha_i * D_i / q. fastlab's integer update floors the
window, so measured windows and queues sit up to 2 packets per flow under these lines (lab 02).
Mixed with loss-based flows the equilibrium has no closed form here: only the capacity is drawn.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

PKT_BITS = 1500 * 8  # the labs' packet convention: capacity in 1500-byte packets


@dataclass(frozen=True)
class FlowReference:
    flow: str
    bottleneck: str | None
    capacity_mbps: float | None
    base_rtt_ms: float
    alpha: int | None = None  # FAST flows only
    fast_queue_pkts: float | None = None  # the bottleneck's FAST equilibrium queue (sum of alphas)
    fast_rtt_ms: float | None = None  # D = d + q
    fast_window_pkts: float | None = None  # w = alpha * D / q
    fast_rate_mbps: float | None = None  # x = alpha / q
    cc: str = ""
    links: tuple[str, ...] = ()  # the shaped links the flow's data crosses


def fast_equilibrium(capacity_mbps: float, alphas: dict[str, int], base_rtt_ms: dict[str, float]
                     ) -> dict[str, tuple[float, float, float, float]]:
    """Per flow (queue pkts, RTT ms, window pkts, rate Mb/s) of FAST flows sharing one bottleneck."""
    c_pkts = capacity_mbps * 1e6 / PKT_BITS
    total = sum(alphas.values())
    q_s = total / c_pkts
    out: dict[str, tuple[float, float, float, float]] = {}
    for flow, alpha in alphas.items():
        d_rtt = base_rtt_ms[flow] + q_s * 1000
        out[flow] = (total, d_rtt, alpha * (d_rtt / 1000) / q_s, alpha / q_s * PKT_BITS / 1e6)
    return out


def references(spec: Any) -> list[dict[str, Any]]:
    """One FlowReference (as a dict) per flow of an ExperimentSpec, in flow order (f1, f2, ...)."""
    from fastlab.ccset import FAST_PARAMS
    from fastlab.routing import figures
    from fastlab.shaping import resolve
    from fastlab.topology import build_plan

    plan = build_plan(spec.topology, spec.topology_args)
    links = {link_id: resolve(shaped, spec.links.get(link_id)) for link_id, shaped in plan.shaped.items()}
    default_alpha = int(next(p.default for p in FAST_PARAMS if p.name == "alpha"))
    rows: list[tuple[str, Any, Any, int | None]] = []
    for entry in spec.flows:
        path = entry.path or (plan.metadata.get("openflow") or {}).get("default_path")
        fig = figures(plan, links, entry.src, entry.dst, path)
        alpha = int(entry.cc_args.get("alpha", default_alpha)) if entry.cc == "fast" else None
        for _ in range(entry.count):
            rows.append((f"f{len(rows) + 1}", fig, entry.cc, alpha))
    refs = {flow: FlowReference(flow, fig.bottleneck_link, fig.bottleneck_mbps, fig.rtt_ms, alpha, cc=cc,
                                links=tuple(fig.shaped_links))
            for flow, fig, cc, alpha in rows}
    by_link: dict[str, list[tuple[str, Any, str, int | None]]] = {}
    for row in rows:
        if row[1].bottleneck_link is not None:
            by_link.setdefault(row[1].bottleneck_link, []).append(row)
    for members in by_link.values():
        if not all(cc == "fast" for _f, _fig, cc, _a in members):
            continue
        eq = fast_equilibrium(members[0][1].bottleneck_mbps, {f: a for f, _fig, _cc, a in members if a},
                              {f: fig.rtt_ms for f, fig, _cc, _a in members})
        for flow, (queue, rtt, window, rate) in eq.items():
            refs[flow] = FlowReference(**{**asdict(refs[flow]), "fast_queue_pkts": queue, "fast_rtt_ms": round(rtt, 3),
                                          "fast_window_pkts": round(window, 1), "fast_rate_mbps": round(rate, 3)})
    return [asdict(refs[f]) for f, *_ in rows]


# --- dynamics: the step response of one FAST flow (lab 09) ------------------------------------

ACKS_PER_PKT = 0.5  # delayed ACKs: one ACK per two full-sized segments


def step_response(bdp_pkts: float, alpha_before: int, alpha_after: int, gamma: float,
                  period_rtts: int = 1, updates: int = 60, ewma_cap: float = 0.125,
                  window_before: float | None = None) -> list[int]:
    """Windows after each of `updates` round trips of one FAST flow, alone on a bottleneck of
    `bdp_pkts` (capacity x base RTT, in packets), whose alpha steps from alpha_before to
    alpha_after at round 0. A per-RTT model of fastlab's update (kernel-modules/core/fast_core.h):

    - w <- min(2w, floor((1-gamma)*w + gamma*(w*baseRTT/avgRTT + alpha))), once every period_rtts;
    - the RTT the ACKs of round k report is that of packets sent a round earlier, under the window
      of round k-1: D = d * max(w_{k-1}, BDP) / BDP (the queue holds what exceeds the pipe);
    - avgRTT moves toward it per ACK by min(3/cwnd, ewma_cap), with w * ACKS_PER_PKT ACKs a round.

    Linearised (no EWMA, no floor) round k obeys x_{k+1} = (1-g+g*rho)*x_k - g*rho*x_{k-1} with
    rho = BDP/(BDP+alpha): roots of modulus sqrt(g*rho) < 1 for any delay and capacity (stable),
    complex (ringing) when (1-g+g*rho)^2 < 4*g*rho, e.g. for gamma = 1 always; with an update
    every other RTT the lag falls inside the period and x_{k+1} = (1-g)*x_k: no ringing at all.
    """
    w = float(window_before if window_before is not None else math.floor(bdp_pkts + alpha_before))
    prev = w
    avg = max(w, bdp_pkts) / bdp_pkts  # avgRTT in units of the base RTT
    out = []
    for k in range(updates):
        rtt = max(prev, bdp_pkts) / bdp_pkts
        acks = max(1, int(w * ACKS_PER_PKT))
        avg = rtt + (avg - rtt) * (1 - min(3.0 / w, ewma_cap)) ** acks
        new = w
        if k % period_rtts == 0:
            new = min(2 * w, math.floor((1 - gamma) * w + gamma * (w / avg + alpha_after)))
        prev, w = w, new
        out.append(int(w))
    return out


@dataclass(frozen=True)
class StepFigures:
    """How a window series answers a step in its set point, as fractions of the step."""

    before: float  # window before the step
    final: float  # where it settled
    overshoot: float  # (highest - final) / step
    undershoot: float  # (final - lowest after first reaching final) / step: ringing
    settling: int  # updates until it stays within `band` of final


def step_figures(before: float, series: list[float], band: float) -> StepFigures:
    """Overshoot, ringing and settling of a window series (one value per update, after the step).
    `final` is the median of its last quarter; `band` in packets."""
    tail = sorted(series[-max(1, len(series) // 4):])
    final = float(tail[len(tail) // 2])
    step = final - before
    if abs(step) < 1:
        raise ValueError(f"no step: the window moved from {before:g} to {final:g}")
    over = (max(series) - final) / step if step > 0 else (final - min(series)) / -step
    reached = next((i for i, v in enumerate(series) if (v - final) * step >= 0), len(series))
    rest = series[reached:] or [final]
    under = (final - min(rest)) / step if step > 0 else (max(rest) - final) / -step
    outside = [i for i, v in enumerate(series) if abs(v - final) > band]
    return StepFigures(before, final, max(0.0, over), max(0.0, under), outside[-1] + 1 if outside else 0)
