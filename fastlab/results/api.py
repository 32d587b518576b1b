"""Runs, sweeps and bundles in Python, for notebooks and scripts (issue 36 item 3).

`load(path)` takes a run folder, a sweep folder or a bundle (.zip, verified and extracted first) and returns a
`Run` or a `Sweep`. A run gives its traces as pandas DataFrames (`flows`, `links`, `events`), its `summary`,
`environment`, `spec`, its fidelity verdict (`fidelity`, `faithful`), the parts of a run whose parameters
changed (`segments`), each flow's RTT percentiles (`delay()`) and the unit of every column (`units`). A sweep
gives its points as runs and one table of them. `compare(runs)` puts runs' headline figures side by side.
Reading goes through `fastlab.base.rundir.RunFolder`, the one reader of run folders; nothing here needs root
or a network.

    from fastlab.results import api as results
    a, b = results.load("results/...-fast-a10-..."), results.load("bundle.zip")
    results.compare([a, b])                 # goodput, RTT, queue, fairness, verdict side by side
    a.flows.plot(x="t", y="cwnd_pkts")      # the traces, with units in a.units
"""

from __future__ import annotations

import functools
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from fastlab.base import record
from fastlab.base.record import Part, Verdict
from fastlab.base.rundir import EVENTS, POINT_FILE, SWEEP_STATE, RunReader, finished_points
from fastlab.define.schema import ExperimentSpec, parse_spec
from fastlab.measure import analysis
from fastlab.results import bundle

# Units of the trace columns and of summary.json's figures (fastlab.base.record's), in DataFrame.attrs["units"]
# too: what a plot's axis says.
UNITS = {
    "t": "s", "bytes_acked": "bytes", "mss_bytes": "bytes", "cwnd_pkts": "packets", "srtt_ms": "ms",
    "min_rtt_ms": "ms", "goodput_mbps": "Mb/s", "retransmits": "packets", "backlog_pkts": "packets",
    "backlog_bytes": "bytes", "tx_bytes": "bytes", "tx_mbps": "Mb/s", "rx_pkts": "packets",
    "queue_drops": "packets", "loss_drops": "packets", "aqm_drops": "packets", "aqm_marks": "packets",
    "aqm_avg_queue": "packets or bytes (the RED mode's)", "aqm_avg_pkts": "packets",
    "aqm_drop_prob": "probability", "aqm_qdelay_ms": "ms",
    "base_rtt_us": "µs", "avg_rtt_us": "µs", "target": "packets", "cwnd": "packets", "alpha": "packets",
} | record.units()


class ResultsError(ValueError):
    """A path that is no run, sweep or bundle, in one line."""


def _framed(frame: pd.DataFrame) -> pd.DataFrame:
    frame.attrs["units"] = {c: UNITS[c] for c in frame.columns if c in UNITS}
    return frame


class Run(RunReader):
    """One finished run, read from its folder (fastlab.base.rundir.RunReader, the one reader of run folders):
    its tables carry their units; a run made before environment.json reads an empty one."""

    environment_optional = True

    def __init__(self, directory: Path | str) -> None:
        super().__init__(directory)
        if not self.folder.is_run():
            raise ResultsError(f"{self.directory}: not a finished run (no spec.yaml and summary.json)")

    def __repr__(self) -> str:
        return f"Run({str(self.directory)!r})"

    def dress(self, frame: pd.DataFrame) -> pd.DataFrame:
        return _framed(frame)

    @property
    def name(self) -> str:
        return str(self.spec.get("name") or self.directory.name)

    @functools.cached_property
    def experiment(self) -> ExperimentSpec:
        """The spec as run, typed: spec.yaml through the one spec schema (fastlab.define.schema.ExperimentSpec,
        every default filled in); SpecError naming the field for a spec today's schema no longer takes. The
        record keeps the spec as data (`spec`): fastlab.base cannot import the define stage's model."""
        return parse_spec(self.spec)

    @property
    def events(self) -> pd.DataFrame:
        """fastlab's algorithms' events (FAST's updates, cc_set changes); empty when none ran."""
        return self.cc_events if self.folder.has(EVENTS) else pd.DataFrame()

    @property
    def fidelity(self) -> Verdict | None:
        """The emulation's fidelity verdict (None for a run made before it existed)."""
        return self.summary.fidelity

    @property
    def faithful(self) -> bool | None:
        """True/False as the verdict says; None when the run was not assessed. An unfaithful run proves
        nothing either way about the congestion control."""
        return self.summary.faithful

    @property
    def segments(self) -> pd.DataFrame:
        """The parts of a run whose parameters changed: per part and link, its span, the change that
        began it, utilization and mean queue (empty for a run without changes)."""
        rows = [{"start_s": part.start_s, "end_s": part.end_s, "change": "; ".join(part.changes) or None,
                 "link": link.id, "utilization": link.utilization, "mean_backlog_pkts": link.mean_backlog_pkts}
                for part in self.summary.segments or [] for link in part.links]
        return _framed(pd.DataFrame(rows))

    def delay(self) -> pd.DataFrame:
        """Per flow (index: its id): its algorithm, RTT samples counted and RTT percentiles p50, p95, p99 (ms)
        over its smoothed-RTT samples (fastlab.measure.analysis.rtt_samples: its whole trace, 0 and missing
        left out), and the one-way delay percentiles of its data through the emulated links (`owd_p50_ms`...:
        the delay accounting's, the hosts' share not in it; None for a run made before it). Taken from
        summary.json; for a run made before the summary kept them, computed here by the same functions from
        flows.csv (`source`: "summary" or "traces"; None where flows.csv has no srtt_ms)."""
        trace = self.flows
        rows = []
        for flow in self.summary.flows:
            kept = {name: getattr(flow, name) for name in analysis.RTT_PERCENTILES}
            one_way = {name: getattr(flow, name) for name in analysis.OWD_PERCENTILES}
            samples = trace[trace["flow"] == flow.id] if not trace.empty and "flow" in trace else trace
            source = "summary"
            if all(v is None for v in kept.values()):
                kept, source = analysis.rtt_percentiles(samples), "traces"
            if all(v is None for v in one_way.values()):
                one_way = analysis.one_way_percentiles(samples)
            count = len(analysis.rtt_samples(samples))
            rows.append({"flow": flow.id, "cc": flow.cc, "rtt_samples": count, **kept, **one_way,
                         "source": source if count else None})
        return _framed(pd.DataFrame(rows).set_index("flow") if rows else pd.DataFrame())

    def table(self, kind: str = "flows") -> pd.DataFrame:
        """summary.json's `flows` or `links` rows as a DataFrame."""
        tables: dict[str, list[Part]] = {"flows": [*self.summary.flows], "links": [*self.summary.links]}
        return _framed(pd.DataFrame([p.dump() for p in tables.get(kind, [])]))


@dataclass
class Sweep:
    """A sweep folder: its finished points as runs."""

    directory: Path

    @functools.cached_property
    def points(self) -> dict[str, Run]:
        root = self.directory / "points"
        return {name: Run(root / name) for name in finished_points(self.directory)}

    def table(self) -> pd.DataFrame:
        """One row per finished point: its point record (the swept values) and headline figures."""
        rows = []
        for name, run in self.points.items():
            point = json.loads((run.directory / POINT_FILE).read_text())
            rows.append({"point": name, **{k: v for k, v in point.items() if not isinstance(v, dict | list)},
                         **headline(run)})
        return _framed(pd.DataFrame(rows))


def headline(run: Run) -> dict[str, Any]:
    """A run's figures as compare shows them: its name, then its headline figures
    (fastlab.base.record.headline: totals, each link's, each flow's; `faithful` 1, 0 or None)."""
    return {"name": run.name, **record.headline(run.summary).flat()}


def compare(runs: list[Run]) -> pd.DataFrame:
    """Runs' headline figures side by side, one row per run (index: the run's folder name)."""
    return pd.DataFrame([headline(r) for r in runs], index=[r.directory.name for r in runs])


def load(path: str | Path, extract_to: str | Path | None = None) -> Run | Sweep:
    """A run folder, a sweep folder, or a bundle (.zip: verified against its manifest, then extracted
    into `extract_to` or a new temporary folder)."""
    path = Path(path)
    if path.is_file() and path.suffix == ".zip":
        try:
            path = bundle.extract(path, extract_to or tempfile.mkdtemp(prefix="fastlab-results-"))
        except bundle.BundleError as exc:
            raise ResultsError(f"{path}: {exc}") from None
    if not path.is_dir():
        raise ResultsError(f"{path}: no such run, sweep or bundle")
    if (path / SWEEP_STATE).is_file():
        return Sweep(path)
    return Run(path)
