"""The reproduction scorecard in the browser (over `fastlab.labs.scorecard`): /reproduce shows one row per
published claim of the seed papers the labs reproduce -- the published figure and its source, the figure
the lab's own checkpoint measures on the step's recorded runs, the scale, the verdict -- and the figure
with both side by side (/reproduce/scorecard.svg, the same SVG `fastlab reproduce` writes). Judged on the
recordings of the labs folder the app serves; re-measuring (`fastlab reproduce --run`) is the CLI's, as
it runs steps of minutes each as root."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, render_template

from fastlab.labs import scorecard
from fastlab.labs.kit import LabError
from fastlab.labs.scorecard_figure import svg
from webapp.services import services

bp = Blueprint("reproduce", __name__)


# The scorecard evaluates every claim's checkpoints on its recordings (~1.5 s here): kept while the claims
# file and the labs' definitions and recordings are unchanged, so a class opening the page costs one evaluation
_CACHE: dict[tuple[object, ...], tuple[list[scorecard.Row], str]] = {}


def _fingerprint(labs_dir: Path) -> tuple[object, ...]:
    """What the scorecard depends on, cheaply: the claims file's and each lab's lab.yaml, checkpoints.py and
    recorded folders' modification times and sizes (`fastlab lab record` and `lab keep` make their folders anew)."""
    watched = [scorecard.claims_path(labs_dir)]
    for lab in sorted(labs_dir.glob("[0-9][0-9]-*")):
        watched += [lab / "lab.yaml", lab / "checkpoints.py", *sorted((lab / "recorded").glob("*/*"))]
    stats = [(p.stat().st_mtime_ns, p.stat().st_size) if p.exists() else None for p in watched]
    return (str(labs_dir), *zip(map(str, watched), stats, strict=True))


def _rows() -> tuple[list[scorecard.Row], str]:
    """The scorecard of the served labs folder, or no rows and the one-line reason."""
    labs_dir = services().labs_dir
    key = _fingerprint(labs_dir)
    if key not in _CACHE:
        try:
            made = scorecard.score(scorecard.load_claims(scorecard.claims_path(labs_dir)), labs_dir), ""
        except (scorecard.ClaimsError, LabError) as exc:
            made = [], str(exc)
        _CACHE.clear()
        _CACHE[key] = made
    return _CACHE[key]


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
    if error:  # the labs folder served has no (usable) claims file: there is no figure to show
        return Response(f"no scorecard figure: {error}\n", status=404, mimetype="text/plain")
    return Response(svg(rows), mimetype="image/svg+xml")
