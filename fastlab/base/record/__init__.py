"""The run record (issue 48 item 3): what a finished run's summary.json and environment.json hold, as typed,
versioned models; the one migration of older files on read; and the one function that takes a run's
headline figures, with their units.

Its modules: part (the base model, a field's unit and role), summary (summary.json), environment
(environment.json), headline (the headline figures); reading and migration are here.

fastlab.base.rundir (`RunFolder`, `RunReader`) reads and writes the files and calls this package for what is
in them; the engine (fastlab.experiment) writes the record, fastlab.measure computes its parts (a flow's and a
link's figures, the fidelity verdict), fastlab.theory its notes and parts of a run that changed. Every later
stage, the labs, sweeps, bundles, replay and the web app read the fields here, never the files' keys.

Field names and units are those of summary.json on disk (a file format others read): each field says its
role and its unit (`units()`, `unit_of`). Fields a model does not name are kept as they were read and
written back (a newer writer's), readable as `model.model_extra`.

Versions. `schema_version` names the shape of a file. Version 0 is every file written before this module
(no `schema_version`): the engine's shape of 2026-11-28 and the older shapes the labs' recordings hold (a
link without `aqm_drops`/`aqm_marks`, written before links had AQMs; an idle path without `lost`, written
when a lost idle ping failed the run; a `fidelity` without `faithful`, which says nothing). `migrate` brings
a file of any older version up to SCHEMA_VERSION on read; nothing on disk is rewritten. A version newer
than SCHEMA_VERSION is refused in one line (it renamed or re-meant a field this fastlab would misread).

How another branch adds a field (as a flow's delay accounting was added): add it to its model (summary.py,
environment.py) as an optional field with its unit and role (`delay_accounting: FlowDelay | None =
figure(None, "", "...")`, a new Part for a nested object), compute it where that part is computed
(fastlab.measure) and pass it to the model the engine builds. No version bump and no migration: files written
before it read it as None. A field renamed, removed, or whose unit or meaning changes is a new version: bump
SCHEMA_VERSION and add the step from the previous version to SUMMARY_STEPS / ENVIRONMENT_STEPS
(tests/unit/test_record.py loads every recording and the old bundles through it). A figure meant for the
headline goes into HEADLINE_FLOW / HEADLINE_LINK (headline.py).

Pure: no files are read here (rundir reads them and passes the text, bounded by fastlab.base.documents).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from fastlab.base import documents
from fastlab.base.record.environment import (
    CcApplied,
    CcRecord,
    Choice,
    Environment,
    FlowSetup,
    Resolved,
    ResolvedDirection,
    RunInfo,
    Shaping,
)
from fastlab.base.record.headline import HEADLINE_FLOW, HEADLINE_LINK, Figure, Headline, headline, shown_unit
from fastlab.base.record.part import SCHEMA_VERSION, Part, figure, unit_of
from fastlab.base.record.summary import (
    Burst,
    DelayJudged,
    DirectionFigures,
    DisturbanceSeen,
    EffectSpan,
    FlowDelay,
    FlowEffects,
    FlowFigures,
    IdleRtt,
    LinkFigures,
    LinkName,
    LinkTiming,
    PathDelay,
    Quantiles,
    Segment,
    SegmentFlow,
    SegmentLink,
    Summary,
    TcQueue,
    Verdict,
)

__all__ = ["HEADLINE_FLOW", "HEADLINE_LINK", "MAX_RECORD_CHARS", "SCHEMA_VERSION", "Burst", "CcApplied", "CcRecord",
           "Choice", "DelayJudged", "DirectionFigures", "DisturbanceSeen", "EffectSpan", "Environment", "Figure",
           "FlowDelay", "FlowEffects", "FlowFigures", "FlowSetup", "Headline", "IdleRtt", "LinkFigures", "LinkName",
           "LinkTiming", "Part", "PathDelay", "Quantiles", "RecordError", "Resolved", "ResolvedDirection",
           "RunInfo", "Segment", "SegmentFlow", "SegmentLink", "Shaping", "Summary", "TcQueue", "Verdict", "figure",
           "headline", "migrate", "read_environment", "read_summary", "shown_unit", "to_json", "unit_of",
           "units"]

# The largest summary.json / environment.json read (characters). Measured: the labs' largest
# recordings hold 21 kB (a 32-flow summary) and 62 kB (an environment with a 10-hop topology's
# commands); a run of 64 flows over 30 links stays under a few hundred kB.
MAX_RECORD_CHARS = 16 * 1024**2


class RecordError(ValueError):
    """A summary.json or environment.json that cannot be read as a run record, in one line naming the
    file and the field."""


# --- migration and reading -------------------------------------------------------------------------

def _summary_0_to_1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 0 -> 1: a link (and its reverse) written before links had AQMs dropped and marked nothing;
    an idle path written before lost pings were retried lost none (a lost ping failed the run); a
    `fidelity` without `faithful` says nothing (not assessed)."""
    for link in data.get("links") or []:
        for figures in (link, link.get("reverse")) if isinstance(link, dict) else ():
            if isinstance(figures, dict):
                figures.setdefault("aqm_drops", 0)
                figures.setdefault("aqm_marks", 0)
    for idle in data.get("idle_rtt") or []:
        if isinstance(idle, dict):
            idle.setdefault("lost", 0)
    verdict = data.get("fidelity")
    if "fidelity" in data and not (isinstance(verdict, dict) and "faithful" in verdict):
        del data["fidelity"]
    return data


def _environment_0_to_1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 0 -> 1: the shape did not change; the version is written from 1 on."""
    return data


# version n -> the step that makes it version n + 1
SUMMARY_STEPS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {0: _summary_0_to_1}
ENVIRONMENT_STEPS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {0: _environment_0_to_1}


def migrate(data: dict[str, Any], steps: Mapping[int, Callable[[dict[str, Any]], dict[str, Any]]],
            name: str) -> dict[str, Any]:
    """`data` (a file's JSON, changed in place) brought up to SCHEMA_VERSION, one step at a time; RecordError
    for a version this fastlab does not know."""
    version = data.get("schema_version", 0)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise RecordError(f"{name}: schema_version: {str(version)[:20]!r} is not a version number")
    if version > SCHEMA_VERSION:
        raise RecordError(f"{name}: schema_version {version} was written by a newer fastlab (this one reads "
                          f"up to {SCHEMA_VERSION})")
    while version < SCHEMA_VERSION:
        data = steps[version](data)
        version += 1
    data["schema_version"] = SCHEMA_VERSION
    return data


def _where(err: ValidationError) -> str:
    first = err.errors()[0]
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"]).lstrip(".")
    return f"{path or 'the document'}: {first['msg']}"


def _read(raw: str | bytes | Mapping[str, Any], name: str,
          steps: Mapping[int, Callable[[dict[str, Any]], dict[str, Any]]]) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        data: Any = copy.deepcopy(dict(raw))
    else:
        try:
            data = documents.read_json(raw, max_chars=MAX_RECORD_CHARS, non_finite_as_null=True)
        except documents.DocumentError as exc:
            raise RecordError(f"{name}: {exc}") from None
    if not isinstance(data, dict):
        raise RecordError(f"{name}: not a mapping of fields")
    return migrate(data, steps, name)


def read_summary(raw: str | bytes | Mapping[str, Any], name: str = "summary") -> Summary:
    """A summary.json (its text, or its data) as the record: migrated from its version, validated;
    RecordError in one line naming the field."""
    try:
        return Summary.model_validate(_read(raw, name, SUMMARY_STEPS))
    except ValidationError as err:
        raise RecordError(f"{name}: {_where(err)}") from None


def read_environment(raw: str | bytes | Mapping[str, Any], name: str = "environment") -> Environment:
    """An environment.json (its text, or its data) as the record; RecordError in one line naming the field."""
    try:
        return Environment.model_validate(_read(raw, name, ENVIRONMENT_STEPS))
    except ValidationError as err:
        raise RecordError(f"{name}: {_where(err)}") from None


def to_json(part: Summary | Environment) -> str:
    """A record file's text as the engine writes it (Part.dump), its version first, one space of indent."""
    return json.dumps({"schema_version": SCHEMA_VERSION, **part.dump()}, indent=1)


# --- units -----------------------------------------------------------------------------------------

def units() -> dict[str, str]:
    """Field name -> unit of every figure of summary.json's flows, links and idle pings that has one."""
    out: dict[str, str] = {}
    for model in (FlowFigures, LinkFigures, DirectionFigures, IdleRtt, SegmentFlow, SegmentLink):
        for name in model.model_fields:
            unit = unit_of(model, name)
            if unit:
                out.setdefault(name, unit)
    return out
