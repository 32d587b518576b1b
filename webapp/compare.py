"""History and compare (issue 14 item 2): finished runs side by side, and deleting runs.

`/compare?runs=A,B,...` is a page whose address is the comparison (a link to share); it draws what
`/api/compare` returns: each run's traces (flows.csv and links.csv of its folder, thinned to at most
MAX_POINTS per trace) to overlay, the spec fields whose values differ between the runs and the
results side by side. `DELETE /api/runs/<id>` removes a finished run's folder and history row.

The pure parts (`parse_ids`, `flatten`, `differences`, `metrics`, `thin`) are unit-tested; the
routes reach the history through `webapp.services`.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
from flask import Blueprint, jsonify, render_template, request

from fastlab.base.record import Environment, Summary, headline
from fastlab.base.rundir import RunFolder
from fastlab.define.schema import SpecError, parse_spec, to_plain
from fastlab.theory import segments
from webapp.apierror import api_error
from webapp.services import RUN_ID_RE, Services, services
from webapp.theory import change_marks, chart_references, run_changes

bp = Blueprint("compare", __name__)

MAX_RUNS = 8  # overlays beyond this are unreadable
MIN_RUNS = 2
MAX_IDS_CHARS = 2000  # MAX_RUNS ids of at most ~120 characters, and commas
MAX_POINTS = 600  # per trace: a chart's width in pixels, about
VERDICT_WORDS = {1: "faithful", 0: "NOT faithful"}  # the headline's `faithful`, in the compare table


class CompareError(ValueError):
    """A bad compare request: one line naming what is wrong (422)."""


class NotComparable(Exception):
    """A named run has no results to compare (queued, running, failed...): 409."""


def history() -> Services:
    return services()


# --- pure parts -----------------------------------------------------------------------------------

def parse_ids(raw: Any) -> list[str]:
    """'A,B' -> ['A', 'B']: 2..MAX_RUNS distinct run ids, or CompareError."""
    if not isinstance(raw, str) or not raw.strip():
        raise CompareError(f"runs: give {MIN_RUNS} to {MAX_RUNS} run ids separated by commas (?runs=A,B)")
    if len(raw) > MAX_IDS_CHARS:
        raise CompareError(f"runs: at most {MAX_IDS_CHARS} characters ({MAX_RUNS} run ids)")
    ids = [part.strip() for part in raw.split(",") if part.strip()]
    for run_id in ids:
        if not RUN_ID_RE.match(run_id) or ".." in run_id:
            raise CompareError(f"runs: {run_id[:60]!r} is not a run id")
    if len(set(ids)) != len(ids):
        raise CompareError("runs: a run is named twice")
    if not MIN_RUNS <= len(ids) <= MAX_RUNS:
        raise CompareError(f"runs: give {MIN_RUNS} to {MAX_RUNS} run ids, not {len(ids)}")
    return ids


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """A spec as dotted field paths, lists by index as in the engine's messages: flows[0].cc_args.alpha."""
    out: dict[str, Any] = {}
    if isinstance(value, dict):  # an empty mapping or list has no fields: the same as absent
        for key, item in value.items():
            out |= flatten(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out |= flatten(item, f"{prefix}[{i}]")
    else:
        out[prefix] = value
    return out


def change_texts(spec: dict[str, Any] | None, environment: Environment | None) -> str:
    """A run's applied parameter changes in words, with the values they replaced where the spec parses."""
    changes = segments.applied_changes(environment)
    try:
        texts = segments.described(parse_spec(spec), changes)
    except SpecError:
        texts = [c.text() for c in changes]
    return "; ".join(texts) or "none"


def completed(spec: dict[str, Any] | None) -> dict[str, Any]:
    """A run's spec with every default the engine filled in (so a field one spec.yaml leaves out is no
    difference when its default is what the other says); a spec that does not parse, as written."""
    try:
        return to_plain(parse_spec(spec))
    except SpecError:
        return spec or {}


def differences(specs: list[dict[str, Any] | None], changes: list[str] | None = None) -> list[dict[str, Any]]:
    """The spec fields whose values are not the same in every run (absent: None), in field order, each
    spec with its defaults; then the parameter changes each run applied (scheduled and live: a live one
    is in no spec), when they differ."""
    flat = [flatten(completed(spec)) for spec in specs]
    fields: list[str] = []
    for f in flat:
        fields += [k for k in f if k not in fields]
    rows = [{"field": k, "values": [f.get(k) for f in flat]} for k in fields
            if len({repr(f.get(k)) for f in flat}) > 1]
    if changes and len(set(changes)) > 1:
        rows.append({"field": "changes during the run", "values": changes})
    return rows



def metrics(summaries: list[Summary | None]) -> list[dict[str, Any]]:
    """Results side by side: each run's headline figures (fastlab.base.record.headline) -- per flow (by id),
    per link, then the run's totals, Jain's index and the emulation verdict -- a fraction shown as a
    percentage. A row per quantity, one value per run (None where a run lacks it); no row where no run
    has the quantity."""
    lines = [headline(s) if s is not None else None for s in summaries]
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for kind in ("flow", "link", "run"):
        for i, line in enumerate(lines):
            for figure in line.figures if line is not None else ():
                if figure.of != kind:
                    continue
                shown = figure.shown()
                row = rows.setdefault((kind, figure.subject, figure.name), {
                    "quantity": figure.label, "unit": shown.unit, "values": [None] * len(lines)})
                row["values"][i] = VERDICT_WORDS.get(shown.value) if figure.name == "faithful" else shown.value
    return [row for row in rows.values() if any(v is not None for v in row["values"])]


def thin(t: list[float], y: list[float], points: int = MAX_POINTS) -> tuple[list[float], list[float | None]]:
    """At most `points` samples: means over equal runs of consecutive samples (non-finite ones left out)."""
    if len(t) <= points:
        return t, [v if math.isfinite(v) else None for v in y]
    step = math.ceil(len(t) / points)
    xs, ys = [], []
    for i in range(0, len(t), step):
        chunk = [v for v in y[i:i + step] if math.isfinite(v)]
        xs.append(sum(t[i:i + step]) / len(t[i:i + step]))
        ys.append(sum(chunk) / len(chunk) if chunk else None)
    return xs, ys


def series(run_dir: Path) -> dict[str, Any]:
    """A finished run's traces to overlay: per flow goodput, cwnd and RTT; per link the forward backlog."""
    out: dict[str, Any] = {"flows": {}, "links": {}}
    try:
        flows = RunFolder(run_dir).flows()
        for fid, rows in flows.groupby("flow", sort=True):
            t = rows["t"].astype(float).tolist()
            out["flows"][str(fid)] = {"t": thin(t, t)[0], **{
                key: thin(t, pd.to_numeric(rows[key], errors="coerce").astype(float).tolist())[1]
                for key in ("goodput_mbps", "cwnd_pkts", "srtt_ms") if key in rows}}
    except (OSError, ValueError, KeyError, pd.errors.ParserError):
        pass
    try:
        links = RunFolder(run_dir).links()
        links = links[(links["direction"] == "forward") & (links["t"] >= 0)]
        for lid, rows in links.groupby("link", sort=True):
            t = rows["t"].astype(float).tolist()
            x, y = thin(t, pd.to_numeric(rows["backlog_pkts"], errors="coerce").astype(float).tolist())
            out["links"][str(lid)] = {"t": x, "backlog_pkts": y}
    except (OSError, ValueError, KeyError, pd.errors.ParserError):
        pass
    return out


# --- routes ---------------------------------------------------------------------------------------

def compared(raw: Any) -> dict[str, Any]:
    """The comparison of the runs named in `raw`; CompareError (422), NotComparable (409)."""
    h = history()
    rows = [h.run_row(run_id) for run_id in parse_ids(raw)]  # 404 for an unknown run
    for row in rows:
        if row["status"] != "done" or not row.get("summary"):
            raise NotComparable(f"run {row['id']} is {row['status']}: only finished runs can be compared")
    return {"runs": [{"id": r["id"], "name": r["name"], "topology": r["topology"], "started": r.get("started"),
                      "url": f"/runs/{r['id']}", "lab": r.get("lab"), "lab_step": r.get("lab_step")} for r in rows],
            "differences": differences([r.get("spec") for r in rows],
                                       [change_texts(r.get("spec"), r.get("environment")) for r in rows]),
            "metrics": metrics([r.get("summary") for r in rows]),
            "series": [series(h.root / r["id"]) for r in rows],
            # each run's theory lines (capacity, FAST's Σα per part) and change markers, as on its own page
            "refs": [chart_references(r.get("spec"), r.get("summary"), run_changes(r)) for r in rows],
            "marks": [change_marks(r.get("spec"), run_changes(r)) for r in rows]}


@bp.get("/api/compare")
def api_compare() -> Any:
    try:
        return jsonify(compared(request.args.get("runs")))
    except CompareError as exc:
        return api_error(422, str(exc))
    except NotComparable as exc:
        return api_error(409, str(exc))


@bp.get("/compare")
def compare_page() -> Any:
    try:
        data = compared(request.args.get("runs"))
        error = None
    except (CompareError, NotComparable) as exc:
        data, error = None, str(exc)
    return render_template("compare.html", data=data, error=error), 200 if error is None else 422


@bp.delete("/api/runs/<run_id>")
def api_delete(run_id: str) -> Any:
    """Delete a run that is no longer queued or running: its folder, then its history row."""
    h = history()
    row = h.run_row(run_id)  # 404 before any file is touched
    if not h.may_act_on(row):
        return api_error(403, h.not_yours(row, "delete it"))
    if row["status"] in h.active:
        return api_error(409, f"run is {row['status']}: cancel it first, then delete it")
    folder = h.folder(run_id)  # the id checked as a name (fastlab.base.names) before anything is removed
    if folder.is_symlink():
        folder.unlink()
    elif folder.is_dir():
        shutil.rmtree(folder)
    h.forget(run_id)
    return jsonify({"deleted": run_id})
