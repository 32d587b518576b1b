"""A run whose algorithm parameters change is a sequence of segments.

A change is a scheduled `cc_changes` entry or one a person made from the live page: both are applied
by `ccruntime.CCRuntime.apply` and recorded in environment.json's `congestion_control.applied` with
their time (`at_s`, seconds since the flows started, the charts' time axis) and `live: true` for the
live ones. Between two changes every flow's parameters are fixed, so each segment has its own theory
(FAST's equilibrium Σα, its window and RTT), its own measured figures and its own verdict: judging a
run whose α went 30 -> 60 against α = 30 alone says the queue is "too long" when it is exactly
FAST's new equilibrium (issue 32).

Pure: the spec, the applied list and the run's traces in, segments, reference lines and figures out.
Used by the engine (summary.json's `segments`, "What happened"), the web app (the charts' theory lines
step at each change, a marker at each) and compare (the changes listed among the differences).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from fastlab.base.record import Environment
from fastlab.base.record import Segment as RecordSegment
from fastlab.measure import analysis

# Figures of a segment are taken over its settled part: FAST moves to a new equilibrium within a few
# RTTs (lab 09 measures ~1 s at 20 Mb/s x 40 ms; a docsis step settles within a second, lab 06), so
# the first SETTLE_S of each segment, or its first half when it is shorter than 2 x SETTLE_S, is the
# transient and is left out. The first segment includes the flows' start-up, as the run's summary does.
SETTLE_S = 2.0


@dataclass(frozen=True)
class Change:
    """One applied change of an algorithm's parameters: per host (a namespace override, BPF build) or
    global (the module build's sysfs parameters: every flow running `cc`)."""

    at_s: float
    cc: str
    args: dict[str, Any]
    host: str | None = None  # None: global
    live: bool = False

    def what(self, before: dict[str, Any] | None = None) -> str:
        """e.g. "h1: α 30 → 60" (with the values it replaced, `before`) or "h1: α = 60"."""
        parts = []
        # a parameter the change sets to the value it had says nothing ("gamma 1 → 1"): left out, unless
        # the change sets nothing else
        changed = {k: v for k, v in self.args.items() if (before or {}).get(k) != v} or self.args
        for key, value in changed.items():
            name = "α" if key == "alpha" else key
            old = (before or {}).get(key)
            numbers = isinstance(old, int | float) and isinstance(value, int | float)
            parts.append(f"{name} {old:g} → {value:g}" if numbers else f"{name} = {value}")
        who = f"{self.host}" if self.host else f"every {self.cc} flow"
        return f"{who}: {', '.join(parts)}"

    def text(self, before: dict[str, Any] | None = None) -> str:
        """e.g. "h1: α 30 → 60 at 6.4 s (live)"."""
        return f"{self.what(before)} at {self.at_s:.1f} s" + (" (live)" if self.live else "")


def applied_changes(environment: Environment | None) -> list[Change]:
    """The changes a finished run applied, in time order (environment.json's applied list: entries with
    `at_s` and `args`; the set-up of each host's parameters before the flows start has no `at_s`)."""
    out = []
    for entry in environment.congestion_control.applied if environment is not None else []:
        if entry.at_s is None or entry.args is None or entry.cc is None:
            continue
        host = entry.host if entry.scope != "global" else None
        out.append(Change(float(entry.at_s), entry.cc, dict(entry.args), host, bool(entry.live)))
    return sorted(out, key=lambda c: c.at_s)


def changes_of(applied: list[dict[str, Any]]) -> list[Change]:
    """`applied_changes` of a run still going: the entries its congestion control applied so far (ccruntime's)."""
    return applied_changes(Environment.model_validate({"congestion_control": {"applied": applied}}))


def scheduled_changes(spec: Any) -> list[Change]:
    """The spec's scheduled changes, as they will be applied (before a run has an environment)."""
    return sorted((Change(float(c.at_s), c.cc, dict(c.args), c.host) for c in spec.cc_changes),
                  key=lambda c: c.at_s)


@dataclass(frozen=True)
class Segment:
    """[start_s, end_s) of the run with every flow's parameters fixed; `spec` is the run's spec with each
    flow's cc_args as they were in it; `changes` are the changes that began it (none for the first)."""

    start_s: float
    end_s: float
    spec: Any
    changes: tuple[Change, ...] = ()
    before: tuple[dict[str, Any], ...] = field(default=())  # each change's host's values just before it

    def label(self) -> str:
        return f"{self.start_s:.1f}–{self.end_s:.1f} s"


def _defaults(cc: str) -> dict[str, Any]:
    """The algorithm's parameter defaults (the one table, fastlab.define.ccset): what a flow has that sets none."""
    from fastlab.define.ccset import FAST_PARAMS, HSTCP_PARAMS

    table = {"fast": FAST_PARAMS, "hstcp": HSTCP_PARAMS}.get(cc, ())
    return {p.name: p.default for p in table}


def _apply(spec: Any, change: Change) -> tuple[Any, dict[str, Any]]:
    """The spec with `change` applied to the flows it reaches, and those flows' values before it."""
    before: dict[str, Any] = {}
    flows = []
    for entry in spec.flows:
        if entry.cc == change.cc and (change.host is None or entry.src == change.host):
            values = {**_defaults(change.cc), **entry.cc_args}
            before = before or {k: values.get(k) for k in change.args}
            entry = entry.model_copy(update={"cc_args": {**entry.cc_args, **change.args}})
        flows.append(entry)
    return spec.model_copy(update={"flows": flows}), before


def segments(spec: Any, changes: list[Change], end_s: float | None = None) -> list[Segment]:
    """The run cut at each change (changes at one instant together); one segment without changes.
    A change at or after the end (a live one in the last instant) begins nothing."""
    end = float(end_s if end_s is not None else spec.duration_s)
    out: list[Segment] = []
    current, start = spec, 0.0
    pending: list[Change] = []
    befores: list[dict[str, Any]] = []
    for at in sorted({c.at_s for c in changes if c.at_s < end}):
        if at > start:
            out.append(Segment(start, at, current, tuple(pending), tuple(befores)))
            start, pending, befores = at, [], []
        for change in (c for c in changes if c.at_s == at):
            current, before = _apply(current, change)
            pending.append(change)
            befores.append(before)
    out.append(Segment(start, end, current, tuple(pending), tuple(befores)))
    return out


def with_before(spec: Any, changes: list[Change]) -> list[tuple[Change, dict[str, Any]]]:
    """Each change that begins a segment, in time order, with the values it replaced."""
    return [(c, b) for seg in segments(spec, changes) for c, b in zip(seg.changes, seg.before, strict=True)]


def described(spec: Any, changes: list[Change]) -> list[str]:
    """Each change in words with the values it replaced ("h1: α 30 → 60 at 6.4 s (live)")."""
    return [c.text(b) for c, b in with_before(spec, changes)]


def chart_marks(spec: Any, changes: list[Change]) -> list[dict[str, Any]]:
    """The charts' markers (fastlab/templates/charts.js): when each change took effect and what it was,
    with the values it replaced where the spec is known (spec None: without them); and each step of a
    link's schedule (a capacity step, lab 10), in time order."""
    pairs = with_before(spec, changes) if spec is not None else [(c, {}) for c in changes]
    marks = [{"at_s": c.at_s, "text": c.what(before), "live": c.live} for c, before in pairs]
    return sorted(marks + (schedule_marks(spec) if spec is not None else []), key=lambda m: m["at_s"])


def schedule_marks(spec: Any) -> list[dict[str, Any]]:
    """A marker per step of each link's schedule (links.X[.reverse].schedule): "bottleneck: 40 → 10 Mb/s"
    with the values it replaced (the link's own before its first step)."""
    from fastlab.plan.prepare import layout

    if not any(d is not None and d.schedule for link in spec.links.values() for d in (link, link.reverse)):
        return []
    try:
        shaped = layout(spec).plan.shaped  # the link's own values, the topology's where the spec sets none
    except (ValueError, KeyError, TypeError, RuntimeError):
        shaped = {}
    out = []
    for link_id, link in spec.links.items():
        for where, direction in (("", link), (" reverse", link.reverse)):
            if direction is None or not direction.schedule:
                continue
            own = shaped[link_id].profile if link_id in shaped else direction
            own = (own.reverse or own) if where and getattr(own, "reverse", None) is not None else own
            loss = getattr(own.loss, "rate", None) if own.loss is not None else None
            now = {"rate_mbps": own.rate_mbps, "delay_ms": own.delay_ms, "loss": loss}
            for step in direction.schedule:
                parts = []
                for key, unit, scale in (("rate_mbps", "Mb/s", 1.0), ("delay_ms", "ms", 1.0),
                                         ("loss", "% loss", 100.0)):
                    value = getattr(step, key)
                    if value is None:
                        continue
                    old = now.get(key)
                    parts.append(f"{old * scale:g} → {value * scale:g} {unit}" if old is not None
                                 else f"{value * scale:g} {unit}")
                    now[key] = value
                out.append({"at_s": float(step.at_s), "text": f"{link_id}{where}: {', '.join(parts)}", "live": False})
    return out


def _rate_steps(spec: Any) -> list[tuple[float, str, float]]:
    """The spec's links' forward rate steps (links.X.schedule): (at_s, link, Mb/s), in time order."""
    return sorted((float(step.at_s), link_id, float(step.rate_mbps)) for link_id, link in spec.links.items()
                  for step in (link.schedule or []) if step.rate_mbps is not None)


def _rated(spec: Any, at_s: float) -> Any:
    """`spec` with each scheduled link's rate the one in force at `at_s` (its own before the first step)."""
    rates = {link: rate for at, link, rate in _rate_steps(spec) if at <= at_s}
    if not rates:
        return spec
    links = {k: v.model_copy(update={"rate_mbps": rates[k]}) if k in rates else v for k, v in spec.links.items()}
    return spec.model_copy(update={"links": links})


def reference_spans(spec: Any, changes: list[Change], end_s: float | None = None) -> list[dict[str, Any]]:
    """fast_theory's reference of every flow per segment, each with `from_s`/`to_s`: a line that does
    not change across segments is one span. A link schedule's rate steps cut the segments further: the
    capacity line (and FAST's equilibrium at it) steps with the link. [] where the theory cannot place
    the flows."""
    from fastlab.theory import fast as fast_theory

    spans: list[dict[str, Any]] = []
    open_by_flow: dict[str, dict[str, Any]] = {}
    for seg in segments(spec, changes, end_s):
        cuts = [seg.start_s, *sorted({at for at, _, _ in _rate_steps(spec) if seg.start_s < at < seg.end_s}),
                seg.end_s]
        for start, stop in zip(cuts, cuts[1:], strict=False):
            try:
                refs = fast_theory.references(_rated(seg.spec, start))
            except (ValueError, KeyError, TypeError, RuntimeError):
                return []
            for ref in refs:
                prev = open_by_flow.get(ref["flow"])
                if prev is not None and {k: v for k, v in prev.items() if k not in ("from_s", "to_s")} == ref:
                    prev["to_s"] = stop
                    continue
                span = {**ref, "from_s": start, "to_s": stop}
                spans.append(span)
                open_by_flow[ref["flow"]] = span
    return spans


def schedule_parts(spec: Any, flows: pd.DataFrame, links: pd.DataFrame) -> list[RecordSegment]:
    """A run whose links' capacity steps on a schedule (lab 10's 40 -> 10 -> 40 Mb/s) cut at each step,
    each part's figures as `measured`'s (its capacity the one in force, judged from SETTLE_S after the step,
    or its second half when shorter); [] for a run without rate steps. For the run's page, where the
    run's summary has no parts of its own (the engine cuts a run at its parameter changes only)."""
    from fastlab.plan.prepare import layout

    steps = sorted({at for at, _, _ in _rate_steps(spec) if 0 < at < spec.duration_s})
    if not steps:
        return []
    said: dict[float, list[str]] = {}
    for mark in schedule_marks(spec):
        said.setdefault(mark["at_s"], []).append(mark["text"])
    bounds = [0.0, *steps, float(spec.duration_s)]
    out = []
    for n, (start, stop) in enumerate(zip(bounds, bounds[1:], strict=False)):
        rated = _rated(spec, start)
        shaped = layout(rated).plan.shaped  # the topology's rates; the spec's own (the step in force) over them
        capacities = {k: float(rated.links[k].rate_mbps if k in rated.links and rated.links[k].rate_mbps
                               else v.profile.rate_mbps) for k, v in shaped.items() if v.profile.rate_mbps}
        settle = start if n == 0 else start + min(SETTLE_S, (stop - start) / 2)
        part = figures(Segment(settle, stop, rated), flows, links, capacities, closed=stop == bounds[-1])
        out.append(part.model_copy(update={"start_s": start, "settled_from_s": round(settle, 3),
                                           "changes": said.get(start, [])}))
    return out


def settled(seg: Segment) -> float:
    """Where a segment's settled part begins (SETTLE_S, or half of a short segment)."""
    if not seg.changes:
        return seg.start_s
    return seg.start_s + min(SETTLE_S, (seg.end_s - seg.start_s) / 2)


def _mean(rows: pd.DataFrame, column: str, digits: int) -> float | None:
    return round(float(rows[column].mean()), digits) if column in rows and rows[column].notna().any() else None


def measured(spec: Any, changes: list[Change], flows: pd.DataFrame, links: pd.DataFrame,
             capacities: dict[str, float]) -> list[RecordSegment]:
    """summary.json's `segments` (fastlab.base.record.Segment): each segment's figures, in time order ([] for
    a run without changes)."""
    if not changes:
        return []
    parts = segments(spec, changes)
    return [figures(seg, flows, links, capacities, closed=seg is parts[-1]) for seg in parts]


def figures(seg: Segment, flows: pd.DataFrame, links: pd.DataFrame, capacities: dict[str, float],
            closed: bool = False) -> RecordSegment:
    """A segment's measured figures over its settled part [settled, end) ([settled, end] for the last,
    `closed`): per flow goodput, mean RTT and window, per link utilization and mean backlog (the forward
    direction, as the run's summary). A column the traces do not have (a recording trimmed to what its
    checkpoints read) gives None."""
    t0, t1 = settled(seg), seg.end_s

    def within(rows: pd.DataFrame) -> pd.DataFrame:
        return rows[(rows["t"] >= t0) & ((rows["t"] <= t1) if closed else (rows["t"] < t1))]

    per_flow = []
    if not flows.empty:
        for flow_id, rows in flows.groupby("flow", sort=True):
            window = within(rows)
            if window.empty:
                continue
            acked, span = analysis.counter_delta(rows, "bytes_acked", t0, t1) if "bytes_acked" in rows else (0, None)
            per_flow.append({"id": str(flow_id), "throughput_mbps": None if span is None else
                             round(acked * 8 / 1e6 / span, 4) if span else 0.0,
                             "mean_rtt_ms": _mean(window, "srtt_ms", 3),
                             "mean_cwnd_pkts": _mean(window, "cwnd_pkts", 2)})
    per_link = []
    for link_id, capacity in capacities.items():
        rows = links[(links["link"] == link_id) & (links["direction"] == "forward")] if not links.empty else links
        if rows.empty:
            continue
        sent, span = analysis.counter_delta(rows, "tx_bytes", t0, t1) if "tx_bytes" in rows else (0.0, 0.0)
        window = within(rows)
        drops = {f"{kind}_drops": int(analysis.counter_delta(rows, f"{kind}_drops", t0, t1)[0])
                 for kind in ("queue", "loss") if f"{kind}_drops" in rows}
        per_link.append({"id": link_id,
                         "utilization": round(sent * 8 / 1e6 / (capacity * span), 4) if span and capacity else None,
                         "mean_backlog_pkts": _mean(window, "backlog_pkts", 3), **drops})
    return RecordSegment.model_validate({
        "start_s": seg.start_s, "end_s": seg.end_s, "settled_from_s": round(t0, 3),
        "changes": [c.text(b) for c, b in zip(seg.changes, seg.before, strict=True)],
        "flows": per_flow, "links": per_link})
