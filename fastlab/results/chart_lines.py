"""The theory's reference lines on a run's charts, defined once.

Which of a reference's figures (fastlab.theory.fast's per-flow, per-span references, with
fastlab.theory.explain's response functions) goes on which chart, with which label: report.html
(fastlab.results.report) draws these lines, and the live run page (webapp/static/live.js) draws the same
list, sent with the page and by /api/runs/<id>/references. Before, each kept its own table and they
drifted (the report had no HSTCP line and other labels).

A line is a dict: `y`, `flow` (None for a line the flows share: a bottleneck's capacity or Σα,
drawn grey), `label` (said in full, for a run-long line), `short` (the value, marking a span of a
run whose parameters changed), `from_s`, `to_s` (None: to the end). Lines that coincide (the same
value over the same span, e.g. two flows' base RTTs) are merged into one with their labels joined:
printed apart at one height they covered each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastlab.base.record import Summary
from fastlab.define.schema import ExperimentSpec, to_plain
from fastlab.results.tables import finite_number
from fastlab.theory import explain, segments

Ref = dict[str, Any]
CHARTS = ("goodput", "links", "cwnd", "rtt", "queue", "aqm")  # the charts that carry theory lines


@dataclass(frozen=True)
class LineDef:
    """One figure of a reference drawn on some charts."""

    key: str  # the reference's figure
    charts: tuple[str, ...]
    shared: bool  # the flows' common line (their bottleneck's): grey, once
    label: Callable[[Ref, float], str]
    short: Callable[[Ref, float], str]
    when: Callable[[Ref], bool] = lambda ref: True
    top: bool = False  # the chart's y axis ends a little above it (a start-up spike would set it otherwise)


def _g(y: float) -> str:
    return f"{y:g}"


def _capacity(r: Ref, y: float) -> str:
    """"capacity 20 Mb/s", or a trace link's "trace mean 10.03 Mb/s" (the trace's opportunities over its period)."""
    return f"trace mean {y:.4g} Mb/s" if r.get("capacity_is_trace_mean") else f"capacity {_g(y)} Mb/s"


LINE_DEFS = (
    LineDef("capacity_mbps", ("goodput", "links"), True,  # a trace link's: the trace's mean rate
            lambda r, y: f"{r.get('bottleneck')} {_capacity(r, y)}", lambda r, y: _capacity(r, y).split(" ", 1)[-1]
            if not r.get("capacity_is_trace_mean") else _capacity(r, y)),
    # FAST's rate α/q, when it is not the capacity (one flow alone fills its link)
    LineDef("fast_rate_mbps", ("goodput",), False,
            lambda r, y: f"{r['flow']} FAST rate α/q {y:.2f} Mb/s", lambda r, y: f"{r['flow']} {y:.2f} Mb/s",
            # (the reference rounds it to 3 decimals: within that of the capacity it is the capacity)
            lambda r: abs(float(r["fast_rate_mbps"]) - float(r.get("capacity_mbps") or 0)) > 1e-3),
    LineDef("fast_window_pkts", ("cwnd",), False,
            lambda r, y: f"{r['flow']} FAST window αD/(D−d) {_g(y)} pkts", lambda r, y: f"{r['flow']} {_g(y)} pkts"),
    LineDef("mathis_window_pkts", ("cwnd",), False,
            lambda r, y: f"{r['flow']} Mathis 1.22/√p = {_g(y)} pkts at p = "
                         f"{100 * float(r.get('loss_rate') or 0):.2g} %",
            lambda r, y: f"{r['flow']} Mathis {_g(y)} pkts"),
    LineDef("hstcp_window_pkts", ("cwnd",), False,
            lambda r, y: f"{r['flow']} HSTCP w(p) = {_g(y)} pkts", lambda r, y: f"{r['flow']} HSTCP {_g(y)} pkts"),
    LineDef("base_rtt_ms", ("rtt",), False,
            lambda r, y: f"{r['flow']} base RTT {_g(y)} ms", lambda r, y: f"{r['flow']} d {_g(y)} ms"),
    LineDef("fast_rtt_ms", ("rtt",), False,
            lambda r, y: f"{r['flow']} FAST RTT d+Σα/C {y:.1f} ms", lambda r, y: f"{r['flow']} {y:.1f} ms"),
    LineDef("fast_queue_pkts", ("queue",), True,
            lambda r, y: f"{r.get('bottleneck')}: FAST equilibrium Σα = {_g(y)} pkts",
            lambda r, y: f"Σα = {_g(y)} pkts"),
    # RED (lab 10): its thresholds, where the model's average queue settles, and its max_p; the queue chart's
    # axis ends above max_th, not at the start-up's overflow (600 packets against a 417-packet max_th)
    LineDef("red_min_th_pkts", ("queue",), True, lambda r, y: f"RED min_th {_g(y)} pkts",
            lambda r, y: f"min_th {_g(y)} pkts"),
    LineDef("red_max_th_pkts", ("queue",), True, lambda r, y: f"RED max_th {_g(y)} pkts",
            lambda r, y: f"max_th {_g(y)} pkts", top=True),
    LineDef("red_q_star_pkts", ("queue",), True, lambda r, y: f"Reno/RED equilibrium q* = {_g(y)} pkts",
            lambda r, y: f"q* {_g(y)} pkts"),
    LineDef("red_max_p", ("aqm",), True, lambda r, y: f"RED max_p {_g(y)} (at max_th)",
            lambda r, y: f"max_p {_g(y)}", top=True),
)


def references(spec: ExperimentSpec, summary: Summary | None, changes: list[segments.Change]) -> list[Ref]:
    """A run's theory references, one span per part between its parameter `changes`
    (fastlab.theory.segments.reference_spans), with the response functions at the measured loss rate and RED's
    lines (fastlab.theory.explain.response_lines): what report.html, the web app's run and compare pages and
    `fastlab plot` draw (through `lines`). Raises what the theory raises for a spec it cannot lay out."""
    return explain.response_lines(segments.reference_spans(spec, changes), summary, to_plain(spec).get("links"),
                                  spec.mtu)


def _number(value: object) -> float | None:
    """A figure worth a line: a finite, non-zero number (0 or none: the theory has nothing to say)."""
    number = finite_number(value)
    return number if number else None


def lines(refs: list[Ref]) -> dict[str, list[dict[str, Any]]]:
    """Chart -> its theory lines, merged where they coincide (see the module docstring)."""
    out: dict[str, dict[tuple[str, float | None, float | None], dict[str, Any]]] = {c: {} for c in CHARTS}
    for ref in refs:
        span = (float(ref.get("from_s") or 0), None if ref.get("to_s") is None else float(ref["to_s"]))
        for d in LINE_DEFS:
            y = _number(ref.get(d.key))
            if y is None or not d.when(ref):
                continue
            line = {"y": y, "flow": None if d.shared else ref.get("flow"), "label": d.label(ref, y),
                    "short": d.short(ref, y), "from_s": span[0], "to_s": span[1], **({"top": True} if d.top else {})}
            for chart in d.charts:
                key = (f"{y:.4g}", *span)
                prev = out[chart].get(key)
                if prev is None:
                    out[chart][key] = dict(line)
                    continue
                if prev["flow"] != line["flow"]:
                    prev["flow"] = None  # flows' lines at one value: grey, both named
                for part in ("label", "short"):
                    if line[part] not in prev[part]:
                        prev[part] = f"{prev[part]} · {line[part]}"
    return {chart: list(merged.values()) for chart, merged in out.items()}


def kinds(refs: list[Ref]) -> set[str]:
    """Which theories the references draw ("fast": FAST's equilibrium, "mathis": standard TCP's response
    function, "hstcp": HSTCP's), for the note that explains the dashed lines (templates/charts.html)."""
    keys = {"fast": "fast_window_pkts", "mathis": "mathis_window_pkts", "hstcp": "hstcp_window_pkts"}
    return {kind for kind, key in keys.items() if any(isinstance(r, dict) and r.get(key) for r in refs or [])}


PROBABILITY_AQMS = ("red", "pie")  # RED's p_b, PIE's p; CoDel has none (its drops are on the queue chart's link)


def has_drop_probability(spec: Any) -> bool:
    """Whether a run's drop-probability chart exists (templates/charts.html): some link direction of its
    spec (plain, possibly hostile or old: anything not a mapping counts for nothing) runs RED or PIE."""
    links = spec.get("links") if isinstance(spec, dict) else None
    for link in (links or {}).values() if isinstance(links, dict) else ():
        for direction in (link, link.get("reverse")) if isinstance(link, dict) else ():
            aqm = direction.get("aqm") if isinstance(direction, dict) else None
            if isinstance(aqm, dict) and aqm.get("model") in PROBABILITY_AQMS:
                return True
    return False
