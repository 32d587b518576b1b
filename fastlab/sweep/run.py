"""Running a sweep (`fastlab sweep run`): the points that are not finished yet, one after another
here or on a Dask cluster, into a sweep directory, then its tables and page.

The definition (points, seeds, overrides) and the directory's state (`sweep.json`, resuming) are
`fastlab.sweep.points`; this module only runs points and records how each ended. On a cluster every point
needs a whole machine: tasks ask for the worker resource `machine=1`, so workers are started one per
host with `--resources machine=1`; each point goes through the service's one Dask path
(fastlab.service.cluster.submit: the worker runs it with the engine and sends the run directory back as
a bundle, verified and unpacked exactly like a local run); locally through fastlab.service.run.execute.
"""

from __future__ import annotations

import datetime as dt
import itertools
import logging
import os
import platform
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from fastlab.base.record import Summary, headline
from fastlab.base.rundir import RunFolder
from fastlab.define.schema import ExperimentSpec, SpecError
from fastlab.results import fidelity_view
from fastlab.sweep.points import (
    STATE_FILE,
    Point,
    SweepError,
    SweepPlan,
    SweepState,
    exclusive,
    finish_point,
    point_folder,
    prepare_directory,
    write_aggregates,
)

log = logging.getLogger(__name__)

def _eta(seconds_per_point: float, remaining: int) -> str:
    if not remaining:
        return ""
    seconds = seconds_per_point * remaining
    return f"; ETA {int(seconds // 60)} min {int(seconds % 60)} s" if seconds >= 60 else f"; ETA {seconds:.0f} s"


def _brief(summary: Summary) -> str:
    """A finished point in one line for the log: throughput, utilizations, and a warning if not faithful."""
    figures = headline(summary)
    links = [f"{f.subject} utilization {f.value}" for f in figures.figures
             if f.of == "link" and f.name == "utilization"]
    warning = [f"NOT FAITHFUL: {fidelity_view.first_reason(summary.fidelity)}"] if summary.faithful is False else []
    return ", ".join([f"{figures.run('throughput_mbps').value} Mb/s", *links, *warning])


def _fail_point(directory: Path, state: SweepState, point: Point, status: str, error: str) -> None:
    entry = state.point(point.id)
    entry.status, entry.error = status, error  # type: ignore[assignment]
    state.save(directory / STATE_FILE)


@dataclass
class SweepResult:
    directory: Path
    total: int
    finished: int
    failed: list[str]
    table: pd.DataFrame


def run_sweep(plan: SweepPlan, specs: dict[str, ExperimentSpec], directory: Path, *, cluster: str | None = None,
              cancel: threading.Event | None = None) -> SweepResult:
    """Run every unfinished point (locally, or on the Dask scheduler at `cluster`), then aggregate.

    `specs` are the points' validated specs (`check_points`). Setting `cancel` (locally) or
    KeyboardInterrupt (on a cluster) leaves the sweep resumable: the point that was running is
    marked interrupted and rerun next time, and KeyboardInterrupt is raised.
    """
    client = _connect(cluster) if cluster else None  # before anything is created
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with exclusive(directory):
            state = prepare_directory(plan, directory)
            todo = [p for p in plan.points if state.point(p.id).status != "done"]
            counter = itertools.count(len(plan.points) - len(todo) + 1)
            if client is not None:
                failed = _run_on_cluster(client, plan, specs, directory, state, todo, counter)
            else:
                failed = _run_locally(plan, specs, directory, state, todo, counter, cancel)
            table = write_aggregates(plan, directory)
    finally:
        if client is not None:
            client.close()
    failures = f", {len(failed)} failed ({', '.join(failed)})" if failed else ""
    log.info(f"sweep {plan.name}: {len(table)} of {len(plan.points)} points finished{failures}; "
        f"table {directory / 'aggregate.csv'}")
    return SweepResult(directory, len(plan.points), len(table), failed, table)


def _run_locally(plan: SweepPlan, specs: dict[str, ExperimentSpec], directory: Path, state: SweepState,
                 todo: list[Point], counter: Iterator[int], cancel: threading.Event | None) -> list[str]:
    from fastlab.experiment.engine import RunError
    from fastlab.plan.capabilities import probe
    from fastlab.service.run import execute

    caps, durations, failed = probe(), [], []
    for left, point in enumerate(todo):
        if cancel is not None and cancel.is_set():
            raise KeyboardInterrupt("sweep cancelled")
        log.info(f"[{next(counter)}/{len(plan.points)}] {point.id} {point.label()}: running")
        entry = state.point(point.id)
        entry.status, entry.started = "running", dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        state.save(directory / STATE_FILE)
        began = time.monotonic()
        try:
            result = execute(specs[point.id], point_folder(directory, point.id), caps=caps, cancel=cancel,
                             scripts=directory)
        except (RunError, SpecError) as exc:
            if cancel is not None and cancel.is_set():
                _fail_point(directory, state, point, "interrupted", "interrupted; reruns when the sweep resumes")
                raise KeyboardInterrupt("sweep cancelled") from None
            _fail_point(directory, state, point, "failed", str(exc))
            failed.append(point.id)
            log.info(f"  {point.id} failed: {exc}")
            continue
        durations.append(time.monotonic() - began)
        finish_point(directory, state, point, platform.node(), durations[-1])
        log.info(f"  {point.id} done in {durations[-1]:.1f} s: {_brief(result.summary)}"
            f"{_eta(sum(durations) / len(durations), len(todo) - left - 1)}")
    return failed


def _store_remote(directory: Path, point: Point, payload: dict[str, Any]) -> Summary:
    """Unpack a worker's bundle, verified, as points/<id>/, exactly like a local run
    (fastlab.service.cluster.import_bundle, as the web queue's cluster runs)."""
    from fastlab.service.cluster import import_bundle

    import_bundle(payload.get("bundle"), point_folder(directory, point.id))
    return RunFolder(point_folder(directory, point.id)).summary()


def _connect(cluster: str) -> Any:
    """The service's Dask client of the scheduler at `cluster` (fastlab.service.cluster.connect); SweepError."""
    from fastlab.service.cluster import ClusterError, connect

    try:
        return connect(cluster)
    except ClusterError as exc:
        raise SweepError(str(exc)) from None


def _run_on_cluster(client: Any, plan: SweepPlan, specs: dict[str, ExperimentSpec], directory: Path,
                    state: SweepState, todo: list[Point], counter: Iterator[int]) -> list[str]:
    from fastlab.service.cluster import as_completed, submit

    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    futures = {}
    for point in todo:
        future = submit(client, point.id, specs[point.id], {"machine": 1},
                        f"fastlab-{plan.digest[:8]}-{point.id}-{os.urandom(4).hex()}")
        futures[future] = point
        entry = state.point(point.id)
        entry.status, entry.started = "running", started
    state.save(directory / STATE_FILE)
    began, failed = time.monotonic(), []
    try:
        for done, future in enumerate(as_completed(futures), start=1):
            point = futures[future]
            step = f"[{next(counter)}/{len(plan.points)}] {point.id} {point.label()}"
            try:
                payload = future.result()
                summary = _store_remote(directory, point, payload)
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # the worker's exception, re-raised here by Dask
                _fail_point(directory, state, point, "failed", f"{type(exc).__name__}: {exc}")
                failed.append(point.id)
                log.info(f"{step}: failed on the cluster: {type(exc).__name__}: {exc}")
                continue
            finish_point(directory, state, point, payload["host"], payload["seconds"])
            log.info(f"{step}: done on {payload['host']} in {payload['seconds']:.1f} s: {_brief(summary)}"
                f"{_eta((time.monotonic() - began) / done, len(todo) - done)}")
    except KeyboardInterrupt:
        client.cancel(list(futures))
        for future, point in futures.items():
            if not future.done():
                _fail_point(directory, state, point, "interrupted", "interrupted; reruns when the sweep resumes")
        raise
    return failed

