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


def fast_equilibrium(capacity_mbps: float, alphas: dict[str, int], base_rtt_ms: dict[str, float]
                     ) -> dict[str, tuple[float, float, float, float]]:
    """Per flow (queue pkts, RTT ms, window pkts, rate Mb/s) of FAST flows sharing one bottleneck."""
    c_pkts = capacity_mbps * 1e6 / PKT_BITS
    total = sum(alphas.values())
    q_s = total / c_pkts
    out = {}
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
    refs = {flow: FlowReference(flow, fig.bottleneck_link, fig.bottleneck_mbps, fig.rtt_ms, alpha)
            for flow, fig, _cc, alpha in rows}
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
