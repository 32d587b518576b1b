"""The layout of fastlab's result folders, read and named in one place (issue 13: the one reader and
writer of run and sweep folders, of which this is the first part).

A sweep folder holds `sweep.json` (its state), `sweep.yaml` and `points/<point>/`, each point an
ordinary run folder plus `point.json`, written last; a point counts as finished when that and the
run's `summary.json` are there. Both the sweep runner and the bundle exporter read it from here.
"""

from __future__ import annotations

from pathlib import Path

SUMMARY = "summary.json"  # a run folder's summary, written when the run completed
SWEEP_STATE = "sweep.json"  # a sweep folder's state
POINT_FILE = "point.json"  # a sweep point's record, written last
POINTS = "points"  # a sweep folder's point run folders


def is_finished(point_dir: Path) -> bool:
    """A point is finished when its run directory is complete and point.json (written last) is there."""
    return (point_dir / POINT_FILE).is_file() and (point_dir / SUMMARY).is_file()


def finished_points(sweep_dir: Path) -> list[str]:
    """Names of a sweep folder's finished points, sorted."""
    points = sweep_dir / POINTS
    return sorted(p.name for p in points.iterdir() if is_finished(p)) if points.is_dir() else []
