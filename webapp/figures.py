"""Publication figures from the web app (issue 51 item 2): the run, compare and sweep pages' "figure" buttons
download a PDF, SVG or PNG drawn by the same code as `fastlab plot` (fastlab.results.figures).

Bounded: a run is one the history knows (its id checked as every name that becomes a path,
fastlab.base.names, before a file is touched), finished; a comparison 2..6 of those (webapp.compare's rules);
a sweep one the history knows, its finished runs laid out as `fastlab sweep` would in a scratch folder
(webapp.sweeps.sweep_folder, as its bundle). The query takes `name` (a figure: FIGURES), `format` (pdf, png,
svg) and `wide` (0 or 1) and nothing else matters; a bad value is one line and a 4xx, never a 500. Figures are
drawn one at a time (fastlab.results.figures.style's lock: matplotlib's settings are global), so a burst of
requests queues instead of taking every core.
"""

from __future__ import annotations

import io
import logging
import tempfile
from pathlib import Path
from typing import Any

from flask import Blueprint, request, send_file

from fastlab.base.record import RecordError
from webapp.apierror import api_error
from webapp.services import services

bp = Blueprint("figures", __name__)
log = logging.getLogger(__name__)
MAX_QUERY_CHARS = 40  # a figure's name, a format, 0/1: any longer value is no such thing


class FigureRequestError(ValueError):
    """A figure request's bad value, in one line naming the parameter (400)."""


def choices(sweep: bool) -> list[tuple[str, str]]:
    """The figures a page offers (name, what it shows): a sweep's all, a run's or a comparison's all but the
    repetitions'. Read without matplotlib (fastlab.results.figures imports it only to draw)."""
    from fastlab.results.figures import FIGURES

    return [(k, v) for k, v in FIGURES.items() if sweep or k != "repeats"]


def options() -> tuple[str, str, bool]:
    """The query's figure name (default: timeseries), format (default: pdf) and width; FigureRequestError."""
    from fastlab.results.figures import FIGURES, FORMATS

    name = request.args.get("name", "timeseries")
    fmt = request.args.get("format", "pdf")
    wide = request.args.get("wide", "0")
    if len(name) > MAX_QUERY_CHARS or name not in FIGURES:
        raise FigureRequestError(f"name: {name[:MAX_QUERY_CHARS]!r} is no figure; one of {', '.join(FIGURES)}")
    if len(fmt) > MAX_QUERY_CHARS or fmt not in FORMATS:
        raise FigureRequestError(f"format: {fmt[:MAX_QUERY_CHARS]!r} is no format; one of {', '.join(FORMATS)}")
    if wide not in ("0", "1"):
        raise FigureRequestError(f"wide: {wide[:MAX_QUERY_CHARS]!r}; 0 (a column wide) or 1 (a page)")
    return name, fmt, wide == "1"


def send_figure(subject: Any, stem: str, name: str, fmt: str, wide: bool) -> Any:
    """The subject's figure `name` as a `fmt` file, as an attachment named <stem>-<name>.<fmt>."""
    from fastlab.results import figures

    if name not in subject.figures():
        return api_error(400, f"name: a {subject.kind} has the figures {', '.join(subject.figures())}")
    try:
        data = figures.render(subject, name, fmt, wide)
    except figures.DRAW_ERRORS as exc:
        log.warning("figure %s of %s: %s", name, stem, exc)
        return api_error(422, f"{stem}: no {name} figure: {str(exc).splitlines()[0][:200] if str(exc) else exc}")
    return send_file(io.BytesIO(data), mimetype=figures.MEDIA_TYPES[fmt], as_attachment=True,
                     download_name=f"{stem}-{name}.{fmt}")


def _runs(run_ids: list[str]) -> list[Any]:
    """The finished runs of these ids as fastlab.results Runs; 404 (services.run_row) for an unknown id, a
    FigureRequestError (409) for a run without results."""
    from fastlab.results import api

    sv = services()
    out = []
    for run_id in run_ids:
        row = sv.run_row(run_id)
        folder = sv.folder(run_id)
        if row["status"] in sv.active or not folder.is_dir():
            raise FigureRequestError(f"run {run_id} is {row['status']}: no figures yet")
        try:
            out.append(api.Run(folder))
        except (api.ResultsError, RecordError) as exc:
            raise FigureRequestError(f"run {run_id}: {exc}") from None
    return out


def _subject_of(run_ids: list[str]) -> Any:
    from fastlab.results import figures

    try:
        return figures.for_runs(_runs(run_ids), name=run_ids[0] if len(run_ids) == 1 else "compare")
    except figures.DRAW_ERRORS as exc:
        raise FigureRequestError(str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__) from None


@bp.get("/api/runs/<run_id>/figure")
def api_run_figure(run_id: str) -> Any:
    """A finished run's figure."""
    try:
        chosen = options()
    except FigureRequestError as exc:
        return api_error(400, str(exc))
    try:
        subject = _subject_of([run_id])
    except FigureRequestError as exc:
        return api_error(409, str(exc))
    return send_figure(subject, run_id, *chosen)


@bp.get("/api/compare/figure")
def api_compare_figure() -> Any:
    """The figure of the runs compared (?runs=A,B as /compare takes them)."""
    from webapp.compare import CompareError, parse_ids

    try:
        ids, chosen = parse_ids(request.args.get("runs")), options()
    except (CompareError, FigureRequestError) as exc:
        return api_error(400, str(exc))
    try:
        subject = _subject_of(ids)
    except FigureRequestError as exc:
        return api_error(409, str(exc))
    return send_figure(subject, "compare", *chosen)


@bp.get("/api/sweeps/<sweep_id>/figure")
def api_sweep_figure(sweep_id: str) -> Any:
    """A sweep's figure: its finished, faithful runs, laid out as its bundle lays them out."""
    from fastlab.results import api, figures
    from webapp.sweeps import sweep_folder, sweep_state

    sweep_state(sweep_id)  # 404 for an unknown id, before anything is written
    try:
        chosen = options()
    except FigureRequestError as exc:
        return api_error(400, str(exc))
    with tempfile.TemporaryDirectory(prefix="fastlab-figure-") as tmp:
        folder = sweep_folder(sweep_id, Path(tmp))
        try:
            subject = figures.for_sweep(api.Sweep(folder))
        except figures.DRAW_ERRORS as exc:  # ResultsError too
            return api_error(409, f"sweep {sweep_id}: {str(exc).splitlines()[0][:200] if str(exc) else exc}")
        return send_figure(subject, sweep_id, *chosen)
