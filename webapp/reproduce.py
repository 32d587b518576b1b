"""The reproduction scorecard in the browser (over `fastlab.labs.scorecard`): /reproduce shows one row per
published claim of the seed papers the labs reproduce -- the published figure and its source, the figure
the lab's own checkpoint measures on the step's recorded runs, the scale, the verdict -- and the figure
with both side by side (/reproduce/scorecard.svg, the same SVG `fastlab reproduce` writes). Judged on the
recordings of the labs folder the app serves; re-measuring (`fastlab reproduce --run`) is the CLI's, as
it runs steps of minutes each as root."""

from __future__ import annotations

from flask import Blueprint, Response, render_template

from fastlab.labs import scorecard
from fastlab.labs.kit import LabError
from fastlab.labs.scorecard_figure import svg
from webapp.services import services

bp = Blueprint("reproduce", __name__)


def _rows() -> tuple[list[scorecard.Row], str]:
    """The scorecard of the served labs folder, or no rows and the one-line reason."""
    labs_dir = services().labs_dir
    try:
        return scorecard.score(scorecard.load_claims(scorecard.claims_path(labs_dir)), labs_dir), ""
    except (scorecard.ClaimsError, LabError) as exc:
        return [], str(exc)


@bp.get("/reproduce")
def reproduce_page() -> str:
    rows, error = _rows()
    counts = {v: sum(r.verdict == v for r in rows) for v in scorecard.VERDICTS}
    return render_template("reproduce.html", rows=rows, cells=scorecard.table_rows(rows), error=error,
                           counts={v: n for v, n in counts.items() if n},
                           published=scorecard.published_text, measured=scorecard.measured_text)


@bp.get("/reproduce/scorecard.svg")
def reproduce_figure() -> Response:
    rows, error = _rows()
    if error:
        return Response(error + "\n", status=500, mimetype="text/plain")
    return Response(svg(rows), mimetype="image/svg+xml")
