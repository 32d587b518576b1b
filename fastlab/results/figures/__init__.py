"""Publication figures of a run, a comparison of runs or a sweep (issue 51 item 2): `fastlab plot` writes them,
the web app's run, compare and sweep pages download them, both through `figure` here.

Modules: style (sizes, fonts, colours, the one conversion to PDF/PNG/SVG bytes), data (what the figures
draw, read from run folders: pandas and numpy only), timeseries (goodput, window, queue, RTT over time with
the theory's lines), distributions (CDFs and box plots of delay and throughput; a sweep's repetitions).
Matplotlib is imported only when a figure is drawn.

Which runs a figure counts: a run or a comparison draws every run it is given (`fastlab plot` warns about an
unfaithful one); a sweep draws its finished points whose verdict is faithful or not assessed, its
repetitions of a point pooled, and leaves out the unfaithful ones (an unfaithful run measured the machine,
not the path: fastlab.sweep.repeats), naming them (`left_out`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastlab.base.rundir import POINT_FILE
from fastlab.results.figures.data import Group, point_label, run_data
from fastlab.results.figures.style import FORMATS, MEDIA_TYPES, to_bytes

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["DRAW_ERRORS", "FIGURES", "FORMATS", "MEDIA_TYPES", "FigureError", "Subject", "figure", "for_runs",
           "for_sweep", "render", "to_bytes"]

# figure name -> what it shows; "repeats" only for a sweep
FIGURES = {"timeseries": "goodput, window, queue and RTT over time, with the theory's lines",
           "cdf": "CDFs of the RTT and goodput samples",
           "box": "box plots of the RTT and goodput samples",
           "repeats": "a sweep's repetitions: each one's per-flow RTT p95 and goodput per point"}


class FigureError(ValueError):
    """A figure that cannot be drawn from what was given, in one line."""


# What reading runs and drawing their figures may raise from the files they are given: FigureError and the
# record's RecordError are ValueErrors, a missing column a KeyError, a file an OSError. The CLI and the web app
# say each in one line.
DRAW_ERRORS: tuple[type[Exception], ...] = (ValueError, KeyError, OSError)


@dataclass
class Subject:
    """What the figures are of: its kind ("run", "compare", "sweep"), a name for its files, its groups and the
    sweep's points left out (unfaithful), each with why."""

    kind: str
    name: str
    groups: list[Group]
    left_out: list[str] = field(default_factory=list)

    def figures(self) -> list[str]:
        """The figures this subject has."""
        return [f for f in FIGURES if f != "repeats" or self.kind == "sweep"]


def for_runs(runs: list[Any], name: str | None = None) -> Subject:
    """One run (fastlab.results.api.Run), or several side by side (a comparison)."""
    if not runs:
        raise FigureError("no run to draw")
    kind = "run" if len(runs) == 1 else "compare"
    labels = run_labels(runs)
    groups = [Group(label, [run_data(r, label)]) for r, label in zip(runs, labels, strict=True)]
    return Subject(kind, name or (runs[0].directory.name if kind == "run" else "compare"), groups)


def run_labels(runs: list[Any]) -> list[str]:
    """Names that tell compared runs apart, the shortest that do: their specs' names; else their algorithms
    (`fast`, `cubic`: then each has its algorithm's colour); else their folders' names; else their paths'."""
    def algorithms(run: Any) -> str:
        return "+".join(dict.fromkeys(f.cc or "?" for f in run.summary.flows)) or "?"

    for labels in ([r.name for r in runs], [algorithms(r) for r in runs],
                   [f"{r.name} {algorithms(r)}" for r in runs], [r.directory.name for r in runs]):
        if len(set(labels)) == len(labels):
            return labels
    return [str(r.directory) for r in runs]


def for_sweep(sweep: Any) -> Subject:
    """A sweep folder (fastlab.results.api.Sweep): a group per parameter combination, its faithful (or not
    assessed) repetitions pooled."""
    combos: dict[int, tuple[str, list[Any]]] = {}
    left_out = []
    for point_id, run in sweep.points.items():
        try:
            point = json.loads((run.directory / POINT_FILE).read_text())
        except (OSError, ValueError):
            point = {}
        if run.faithful is False:
            left_out.append(f"{point_id}: not faithful")
            continue
        combo = point.get("combo") if isinstance(point.get("combo"), int) else len(combos)
        params = point.get("params") if isinstance(point.get("params"), dict) else {}
        combos.setdefault(combo, (point_label(params), []))[1].append(run)
    if not combos:
        raise FigureError(f"{sweep.directory.name}: no finished, faithful point to draw")
    groups = [Group(label, [run_data(r, f"{label} {r.directory.name}") for r in runs])
              for _combo, (label, runs) in sorted(combos.items())]
    return Subject("sweep", sweep.directory.name, groups, left_out)


def figure(subject: Subject, name: str, wide: bool = False) -> Figure:
    """The figure `name` (FIGURES) of the subject. FigureError for a name it does not have."""
    from fastlab.results.figures import distributions, timeseries

    if name not in subject.figures():
        raise FigureError(f"figure {name[:40]!r}: one of {', '.join(subject.figures())}")
    if name == "timeseries":
        return timeseries.timeseries(subject.groups, wide=wide)
    if name == "cdf":
        return distributions.cdf(subject.groups, wide=wide)
    if name == "box":
        return distributions.box(subject.groups, wide=wide)
    return distributions.repeats(subject.groups, wide=wide)


def render(subject: Subject, name: str, fmt: str, wide: bool = False) -> bytes:
    """The figure `name` as a `fmt` file's bytes (FORMATS). FigureError for an unknown figure or format."""
    if fmt not in FORMATS:
        raise FigureError(f"format {fmt[:20]!r}: one of {', '.join(FORMATS)}")
    return to_bytes(figure(subject, name, wide), fmt)


