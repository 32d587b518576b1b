"""Running a sweep (`fastlab sweep run`): the points that are not finished yet, one after another
here or on a Dask cluster, into a sweep directory, then its tables and page.

The definition (points, seeds, overrides) and the directory's state (`sweep.json`, resuming) are
`fastlab.sweep.points`; this module only runs points and records how each ended. On a cluster every point
needs a whole machine: tasks ask for the worker resource `machine=1`, so workers are started one per
host with `--resources machine=1`; each worker runs its point with the engine and sends the run
directory back as a verified bundle, unpacked exactly like a local run.
"""

from __future__ import annotations

import datetime as dt
import itertools
import logging
import os
import platform
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from fastlab.base.record import Summary, headline
from fastlab.base.rundir import RunFolder
from fastlab.define.schema import ExperimentSpec, SpecError
from fastlab.results import bundle, fidelity_view
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

# How long a sweep waits for a first machine worker to register with the scheduler (a worker process
# starts and registers in seconds; one that never comes fails the sweep after this, one clear line).
WORKER_WAIT_S = 30.0


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
    client = connect(cluster) if cluster else None  # before anything is created
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
    from fastlab.experiment.engine import RunError, run_experiment
    from fastlab.plan.capabilities import probe

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
            result = run_experiment(specs[point.id], out=point_folder(directory, point.id), caps=caps, cancel=cancel,
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


def run_point_remote(spec_yaml: str) -> dict[str, Any]:
    """On a Dask worker: run one point with the engine and send its run directory back as a bundle."""
    from fastlab.define.schema import read_spec_text
    from fastlab.experiment.engine import run_experiment

    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fastlab-point-") as tmp:
        result = run_experiment(read_spec_text(spec_yaml), out=Path(tmp) / "run")
        zip_path = bundle.export(result.directory, Path(tmp) / "run.zip")
        return {"bundle": zip_path.read_bytes(), "host": platform.node(), "seconds": time.monotonic() - began}


def _store_remote(directory: Path, point: Point, payload: dict[str, Any]) -> Summary:
    """Unpack a worker's bundle (verified on the way) as points/<id>/, exactly like a local run."""
    incoming = directory / "points" / f".incoming-{point.id}"
    shutil.rmtree(incoming, ignore_errors=True)
    incoming.mkdir()
    try:
        (incoming / "run.zip").write_bytes(payload["bundle"])
        root = bundle.extract(incoming / "run.zip", incoming / "x", bundle_files=False)
        root.rename(point_folder(directory, point.id))
    finally:
        shutil.rmtree(incoming, ignore_errors=True)
    return RunFolder(point_folder(directory, point.id)).summary()


def machine_workers(scheduler_info: dict[str, Any]) -> list[str]:
    """Workers that offer the `machine` resource (one per host, each point takes a whole machine)."""
    return sorted(addr for addr, w in scheduler_info.get("workers", {}).items()
                  if w.get("resources", {}).get("machine", 0) >= 1)


def wait_for_machine_workers(scheduler_info: Callable[[], dict[str, Any]], wait_s: float = WORKER_WAIT_S,
                             poll_s: float = 0.5) -> list[str]:
    """The machine workers the scheduler knows, waiting up to `wait_s` for a first one: a worker started
    just before the sweep registers a moment later (CI: the sweep began before it had)."""
    deadline = time.monotonic() + wait_s
    while not (workers := machine_workers(scheduler_info())) and time.monotonic() < deadline:
        time.sleep(poll_s)
    return workers


def connect(cluster: str) -> Any:
    """A Dask client of the scheduler at `cluster` that has at least one machine worker."""
    from distributed import Client

    try:
        client = Client(cluster, timeout="15s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise SweepError(f"--cluster {cluster}: cannot reach the Dask scheduler: {exc}") from None
    workers = wait_for_machine_workers(client.scheduler_info)
    if not workers:
        client.close()
        raise SweepError(f"--cluster {cluster}: no worker offers the resource machine=1 after {WORKER_WAIT_S:g} s "
                         "(start one worker per host with `dask worker ADDRESS --resources machine=1`)")
    log.info(f"cluster {cluster}: {len(workers)} machine worker(s)")
    return client


def _run_on_cluster(client: Any, plan: SweepPlan, specs: dict[str, ExperimentSpec], directory: Path,
                    state: SweepState, todo: list[Point], counter: Iterator[int]) -> list[str]:
    from distributed import as_completed

    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    futures = {}
    for point in todo:
        future = client.submit(run_point_remote, specs[point.id].to_yaml(), resources={"machine": 1},
                               pure=False, key=f"fastlab-{plan.digest[:8]}-{point.id}-{os.urandom(4).hex()}")
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

