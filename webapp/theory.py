"""The theory drawn on a run's charts: fastlab.theory.fast's reference lines, one span per part of a run
whose parameters changed (fastlab.theory.segments), and a marker per change. One place for the run page, its
live refresh (/api/runs/<id>/references) and compare.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastlab.base import rundir
from fastlab.base.record import Summary
from fastlab.define.schema import SpecError, parse_spec
from fastlab.results import chart_lines
from fastlab.theory import segments
from webapp import uploads
from webapp.services import services


def run_changes(run: dict[str, Any]) -> list[segments.Change]:
    """A run's parameter changes: a finished run's as applied (environment.json); a queued or running
    one's applied so far (the live control of the run now going) and the rest of its schedule."""
    if run.get("environment") is not None:
        return segments.applied_changes(run["environment"])
    try:
        scheduled = segments.scheduled_changes(parse_spec(run.get("spec")))
    except SpecError:
        return []
    sv = services()
    live = sv.manager.live_of(str(run.get("id")))
    so_far = segments.changes_of(live.applied()) if live is not None else []
    done = {(c.at_s, c.host, c.cc, json.dumps(c.args, sort_keys=True)) for c in so_far}
    # a scheduled change is applied with its own at_s: one applied so far appears once
    pending = [c for c in scheduled if (c.at_s, c.host, c.cc, json.dumps(c.args, sort_keys=True)) not in done]
    return sorted(so_far + pending, key=lambda c: c.at_s)


def with_traces(parsed: Any, run_dir: Path | None) -> Any:
    """The spec with each uploaded trace (`upload:<sha256>`) as a file the theory can read: the stored
    upload, else the run folder's copy (a finished run whose upload is gone); unchanged without traces.
    The theory then draws a trace link's mean rate as its capacity (fastlab.plan.prepare reads it)."""
    if not uploads.trace_fields(parsed):
        return parsed
    try:
        return uploads.resolve(parsed, services().traces)
    except SpecError:
        if run_dir is None:
            raise
    links = dict(parsed.links)
    for link_id, where, _direction in uploads.trace_fields(parsed):
        copy = str(run_dir / rundir.trace_name(link_id, "reverse" if where else "forward"))
        link = links[link_id]
        links[link_id] = (link.model_copy(update={"reverse": link.reverse.model_copy(update={"trace": copy})})
                          if where and link.reverse is not None else link.model_copy(update={"trace": copy}))
    return parsed.model_copy(update={"links": links})


def chart_references(spec: Any, summary: Summary | None,
                     changes: list[segments.Change] | None = None, run_dir: Path | None = None) -> list[dict[str, Any]]:
    """The theory's lines for the run's charts (fastlab.theory.fast, one span per segment between the
    run's parameter changes; fastlab.theory.explain's response functions at the measured loss rate, the
    spec's before there is one; a trace link's mean rate as its capacity, `run_dir` holding the run's
    copy); none for a spec that no longer parses or a topology that changed since the run."""
    try:
        return chart_lines.references(with_traces(parse_spec(spec), run_dir), summary, changes or [])
    except (SpecError, ValueError, KeyError, TypeError, RuntimeError, OSError):
        return []


def change_marks(spec: Any, changes: list[segments.Change]) -> list[dict[str, Any]]:
    """The charts' markers: when each change took effect and what it was (with the values it replaced
    where the spec parses)."""
    try:
        parsed = parse_spec(spec)
    except SpecError:
        parsed = None
    return segments.chart_marks(parsed, changes)
