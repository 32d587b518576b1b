"""The layout of fastlab's result folders: the one writer and reader of run folders (`RunFolder`) and
the names of the files in run and sweep folders (issue 13).

A run folder holds spec.yaml (the spec as run), environment.json (where and how it ran: the plan's
decisions, tools, sysctls), flows.csv, links.csv, cc_events.csv (fastlab's algorithms' events, when
any ran), rtt_samples.csv (clamped flows' per-second RTT statistics), summary.json (written when
the run completed) and report.html. The engine writes it with `RunFolder.write`; the labs, replay,
bundles, sweeps and the web app read it through `RunFolder`, which also reads a CSV stored gzipped
(`flows.csv.gz`, as the labs' recorded runs are).

A sweep folder holds `sweep.json` (its state), `sweep.yaml` and `points/<point>/`, each point an
ordinary run folder plus `point.json`, written last; a point counts as finished when that and the
run's `summary.json` are there. Both the sweep runner and the bundle exporter read it from here.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

SPEC = "spec.yaml"
ENVIRONMENT = "environment.json"
FLOWS = "flows.csv"
LINKS = "links.csv"
EVENTS = "cc_events.csv"
RTT_SAMPLES = "rtt_samples.csv"
REPORT = "report.html"
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


class RunFolder:
    """One run's folder: where each of its files is, reading them, and writing them all at the end of
    a run. Reading a file that is not there raises FileNotFoundError naming it."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)

    def path(self, name: str) -> Path:
        """The file `name`, or its gzipped copy; FileNotFoundError if neither is there."""
        for candidate in (self.directory / name, self.directory / f"{name}.gz"):
            if candidate.is_file():
                return candidate
        raise FileNotFoundError(f"{self.directory.name}: the run has no {name}")

    def has(self, name: str) -> bool:
        try:
            self.path(name)
        except FileNotFoundError:
            return False
        return True

    def is_run(self) -> bool:
        """A finished run's folder: its spec and summary are there."""
        return self.has(SPEC) and self.has(SUMMARY)

    def spec(self) -> dict[str, Any]:
        """spec.yaml as plain data ({} for an empty file)."""
        import yaml

        return yaml.safe_load(self.path(SPEC).read_text()) or {}

    def summary(self) -> dict[str, Any]:
        return json.loads(self.path(SUMMARY).read_text())

    def summary_text(self) -> str:
        return self.path(SUMMARY).read_text()

    def environment(self, missing_ok: bool = False) -> dict[str, Any]:
        """environment.json; with `missing_ok`, {} for a run made before it existed."""
        if missing_ok and not self.has(ENVIRONMENT):
            return {}
        return json.loads(self.path(ENVIRONMENT).read_text())

    def csv(self, name: str) -> pd.DataFrame:
        import pandas as pd

        return pd.read_csv(self.path(name))

    def flows(self) -> pd.DataFrame:
        return self.csv(FLOWS)

    def links(self) -> pd.DataFrame:
        return self.csv(LINKS)

    def events(self) -> pd.DataFrame:
        return self.csv(EVENTS)

    def rtt_samples(self) -> pd.DataFrame:
        """Per second and clamped flow: the count, mean and minimum of the RTT sample of every ACK."""
        return self.csv(RTT_SAMPLES)

    def write(self, *, spec_yaml: str, environment: dict[str, Any], summary: dict[str, Any],
              flows: pd.DataFrame | None = None, links: pd.DataFrame | None = None,
              events: pd.DataFrame | None = None, rtt_samples: Iterable[dict[str, object]] = (),
              rtt_columns: Iterable[str] = ()) -> None:
        """Write a run's files but the report (the folder exists). summary.json goes after the traces, so
        a folder with a summary holds the whole run. Empty events or RTT samples write no file."""
        d = self.directory
        (d / SPEC).write_text(spec_yaml)
        (d / ENVIRONMENT).write_text(json.dumps(environment, indent=1, default=str))
        if flows is not None:
            flows.to_csv(d / FLOWS, index=False)
        if links is not None:
            links.to_csv(d / LINKS, index=False)
        samples = list(rtt_samples)
        if samples:
            with (d / RTT_SAMPLES).open("w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(rtt_columns))
                writer.writeheader()
                writer.writerows(samples)
        if events is not None and not events.empty:
            events.to_csv(d / EVENTS, index=False)
        (d / SUMMARY).write_text(json.dumps(summary, indent=1))

    def write_report(self, html: str) -> None:
        """report.html, last: drawn from the files `write` wrote, so a failure to draw it loses no data."""
        (self.directory / REPORT).write_text(html)
