"""The service's one Dask path, the client's side: connecting to a scheduler, submitting a run
(`submit`: the only place a run is handed to Dask), and for the queue a run's live relay and end.

Who submits: `fastlab.service.queue.RunManager` with a `Cluster` (`python -m webapp --cluster ADDRESS`)
runs each admitted run as a live task that asks a worker for a run slot and the run's predicted cores
(`fastlab.service.worker.run_resources`); `fastlab sweep run --cluster` (fastlab.sweep.run) submits each
point, not live, asking for a whole machine (`machine=1`). Both run `fastlab.service.worker.run_remote`
and unpack the worker's bundle, verified, with `import_bundle`. Admission treats the cluster as one pool:
its budget is the sum of the workers' `cores`; the scheduler places each run on a worker with room.

The worker relays a live run's samples as structured events on one topic; `_on_event` (the Dask
client's thread) hands them to the run's `on_sample` (partial.jsonl and the run's Channel, exactly as a
local run's) and log lines to the Channel, and keeps each sample's lag (made on the worker -> here; on
one machine the clocks agree, across machines the lag includes their offset). At the end the worker's
bundle is verified and unpacked into the run folder (`import_bundle`: nothing is stored from a bundle
that fails), and relay.json records the worker and the lag's p50/p99.

A worker lost mid-run (its address leaves the scheduler, or the future errs: KilledWorker, closed
comm, cancelled) makes the run `interrupted` (RunInterrupted) with the samples that arrived; the
future is cancelled and the run's cancel flag set, so the scheduler's rerun of the task refuses to
start. Cancelling from the web sets the run's cancel flag: the worker's engine stops and cleans up.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastlab.base.rundir import RunFolder
from fastlab.experiment.engine import RunResult
from fastlab.results import bundle
from fastlab.service.worker import (
    LIVE_TOPIC,
    MAX_BUNDLE_BYTES,
    RunLost,
    attempt_name,
    cancel_name,
    run_remote,
    run_resources,
)

log = logging.getLogger("fastlab.service.cluster")  # under "fastlab": the run's thread's lines reach its page

RELAY_FILE = "relay.json"  # where a cluster run came from and how late its samples arrived
POLL_S = 0.25
WORKERS_EVERY_S = 1.0
CANCEL_GRACE_S = 60.0  # a cancelled run's worker stops its engine and cleans up within this
MAX_LAGS = 200_000  # lags kept per run for the percentiles (a 600-s run at the form's maxima has fewer)
# How long a client waits for a first machine worker to register with the scheduler (a worker process
# starts and registers in seconds; one that never comes fails after this, one clear line).
WORKER_WAIT_S = 30.0
Sink = Callable[[dict[str, Any]], None]


class ClusterError(RuntimeError):
    """The cluster cannot be used (unreachable, no worker); one line."""


class RunInterrupted(RuntimeError):
    """The run's worker was lost mid-run: the run is `interrupted`, its partial samples kept."""


def machine_workers(scheduler_info: dict[str, Any]) -> list[str]:
    """Workers that offer the `machine` resource (one per host, each sweep point takes a whole machine)."""
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


def connect(address: str) -> Any:
    """A Dask client of the scheduler at `address` that has at least one machine worker; ClusterError
    (one line naming --cluster) otherwise."""
    from distributed import Client

    try:
        client = Client(address, timeout="15s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise ClusterError(f"--cluster {address}: cannot reach the Dask scheduler: {exc}") from None
    workers = wait_for_machine_workers(client.scheduler_info)
    if not workers:
        client.close()
        raise ClusterError(f"--cluster {address}: no worker offers the resource machine=1 after {WORKER_WAIT_S:g} s "
                           "(start one worker per host with `dask worker ADDRESS --resources machine=1`)")
    log.info(f"cluster {address}: {len(workers)} machine worker(s)")
    return client


def as_completed(futures: Any) -> Any:
    """Dask's futures in the order they finish (distributed.as_completed)."""
    from distributed import as_completed as in_order

    return in_order(futures)


def submit(client: Any, run_id: str, spec: Any, resources: dict[str, float], key: str, *,
           admission: dict[str, Any] | None = None, live: bool = False) -> Any:
    """Hand one run to the cluster: the Dask future of `fastlab.service.worker.run_remote` (never run twice
    by Dask itself: `pure=False`, `retries=0`), asking a worker for `resources`. The only submission to
    Dask in fastlab (tests/unit/test_service_rules.py)."""
    return client.submit(run_remote, run_id, spec.to_yaml(), admission, live, pure=False, retries=0,
                         resources=resources, key=key)


@dataclass
class Relayed:
    """A run going on the cluster, as the server sees it: where its samples go, which attempt (worker
    and PID) is its own, and the lag of each sample that arrived."""

    on_sample: Sink
    on_log: Sink
    attempt: str | None = None
    worker: str | None = None
    samples: int = 0
    lags: list[float] = field(default_factory=list)


def percentile(values: list[float], q: float) -> float | None:
    """The q-quantile (0..1) of `values`, nearest rank (pure)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def lag_figures(lags: list[float]) -> dict[str, float | None]:
    """p50, p99 and max of the relay lags, in ms (pure)."""
    def ms(v: float | None) -> float | None:
        return None if v is None else round(v * 1000, 1)
    return {"p50_ms": ms(percentile(lags, 0.5)), "p99_ms": ms(percentile(lags, 0.99)),
            "max_ms": ms(max(lags) if lags else None)}


def import_bundle(data: Any, run_dir: Path) -> None:
    """Verify a worker's bundle and unpack its run into `run_dir` (beside the server's partial.jsonl);
    BundleError (one line) and nothing stored if it is too big, fails verification, is no run, or
    would replace a file the server keeps."""
    if not isinstance(data, bytes):
        raise bundle.BundleError("the worker sent no bundle")
    if len(data) > MAX_BUNDLE_BYTES:
        raise bundle.BundleError(f"the worker's bundle has {len(data):,} bytes, more than {MAX_BUNDLE_BYTES:,}")
    incoming = run_dir / ".incoming"
    shutil.rmtree(incoming, ignore_errors=True)
    incoming.mkdir(parents=True)
    try:
        (incoming / "run.zip").write_bytes(data)
        problems = bundle.verify(incoming / "run.zip")
        if problems:
            raise bundle.BundleError(f"the worker's bundle fails verification ({len(problems)} problem(s)): "
                                     f"{problems[0]}")
        root = bundle.extract(incoming / "run.zip", incoming / "x", bundle_files=False)
        if not RunFolder(root).is_run():
            raise bundle.BundleError("the worker's bundle holds no run (spec.yaml and summary.json)")
        names = sorted(p.name for p in root.iterdir())
        clash = [n for n in names if (run_dir / n).exists()]
        if clash:
            raise bundle.BundleError(f"the worker's bundle has {clash[0]}, which the server keeps")
        for name in names:
            (root / name).rename(run_dir / name)
    finally:
        shutil.rmtree(incoming, ignore_errors=True)


class Cluster:
    """A Dask client of the scheduler the web queue sends its runs to, subscribed to the runs' samples."""

    def __init__(self, client: Any, address: str) -> None:
        self.client, self.address = client, address
        self._runs: dict[str, Relayed] = {}
        self._lock = threading.Lock()
        self._workers: dict[str, dict[str, float]] = {}
        self._workers_at = 0.0
        client.subscribe_topic(LIVE_TOPIC, self._on_event)

    @classmethod
    def connect(cls, address: str) -> Cluster:
        """Connect to the scheduler at `address`, which must have a machine worker (`connect`)."""
        cluster = cls(connect(address), address)
        if not cluster.slots():
            cluster.close()
            raise ClusterError(f"--cluster {address}: no worker offers run slots (the resource `runs`): start "
                               "them with `fastlab cluster worker`")
        return cluster

    def close(self) -> None:
        self.client.close()

    # --- the workers and the queue's figures --------------------------------------------------------
    def workers(self, fresh: bool = False) -> dict[str, dict[str, float]]:
        """Worker address -> the resources it offers (asked at most every WORKERS_EVERY_S)."""
        if fresh or time.monotonic() - self._workers_at > WORKERS_EVERY_S:
            try:
                info = self.client.scheduler_info(n_workers=-1)
            except (OSError, TimeoutError) as exc:
                log.warning("cluster %s: cannot ask the scheduler for its workers: %s", self.address, exc)
                return self._workers
            self._workers = {a: dict(w.get("resources") or {}) for a, w in info.get("workers", {}).items()}
            self._workers_at = time.monotonic()
        return self._workers

    def slots(self) -> float:
        """The run slots the workers offer together (0: no web run can start)."""
        return sum(w.get("runs", 0.0) for w in self.workers().values())

    def figures(self, figures: dict[str, Any]) -> dict[str, Any]:
        """The admission's figures with the cluster's budget: the sum of its workers' cores."""
        offers = [w.get("cores", 0.0) for w in self.workers().values()]
        return {**figures, "budget_cores": round(sum(offers), 3), "cluster": self.address,
                "source": f"{figures.get('source', '')}; budget: {len(offers)} cluster worker(s)' cores"}

    # --- samples ---------------------------------------------------------------------------------
    def _on_event(self, event: Any) -> None:
        """A relay message from a worker (the Dask client's thread): to its run's sinks."""
        try:
            msg = event[1]
            with self._lock:
                relayed = self._runs.get(str(msg.get("run"))) if isinstance(msg, dict) else None
            if relayed is None:
                return  # a run this server no longer waits for (or another server's)
            if relayed.attempt is None and "worker" in msg:
                relayed.attempt, relayed.worker = msg.get("attempt"), msg.get("worker")
            if msg.get("attempt") != relayed.attempt:
                return  # a rerun the scheduler started after the worker was lost: it refuses to run
            arrived, samples, made_at = time.time(), msg.get("samples"), msg.get("made")
            samples = samples if isinstance(samples, list | tuple) else []  # msgpack gives tuples
            made_at = made_at if isinstance(made_at, list | tuple) and len(made_at) == len(samples) \
                else [None] * len(samples)
            for sample, made in zip(samples, made_at, strict=True):
                if not isinstance(sample, dict):
                    continue
                if sample.get("kind") == "log":
                    relayed.on_log(sample)
                    continue
                relayed.on_sample(sample)
                relayed.samples += 1
                if isinstance(made, float) and len(relayed.lags) < MAX_LAGS:
                    relayed.lags.append(arrived - made)
        except Exception:  # noqa: BLE001 - the client's thread must survive any message
            log.exception("cluster %s: a relay message could not be used", self.address)

    # --- one run ----------------------------------------------------------------------------------
    def run(self, run_id: str, spec: Any, going: Any, on_sample: Sink, on_log: Sink, run_dir: Path) -> RunResult:
        """Run a queued run on the cluster (in the calling thread: the run's own): RunResult of the
        unpacked bundle; RunInterrupted if its worker is lost; the worker's error otherwise."""
        from distributed import Event, Variable

        relayed = Relayed(on_sample, on_log)
        with self._lock:
            self._runs[run_id] = relayed
        flag = Event(cancel_name(run_id), client=self.client)
        largest = max((w.get("cores", 0.0) for w in self.workers().values()), default=0.0)
        resources = run_resources(going.cost, largest)
        try:
            future = submit(self.client, run_id, spec, resources, f"fastlab-web-{run_id}",
                            admission=going.admission, live=True)
            log.info("run %s: sent to the cluster %s (asks a worker for %s)", run_id, self.address,
                     ", ".join(f"{k}={v:g}" for k, v in resources.items()))
            payload = self._wait(run_id, future, relayed, going, flag)
            import_bundle(payload.get("bundle") if isinstance(payload, dict) else None, run_dir)
            folder = RunFolder(run_dir)
            return RunResult(run_dir, folder.summary(), folder.environment(missing_ok=True))
        finally:
            with self._lock:
                self._runs.pop(run_id, None)
            self._forget(run_id, flag, Variable(attempt_name(run_id), client=self.client))
            self._write_relay(run_id, run_dir, relayed)

    def _wait(self, run_id: str, future: Any, relayed: Relayed, going: Any, flag: Any) -> Any:
        """The task's result, watching for a cancel from the web and for the loss of its worker."""
        from distributed.client import FutureCancelledError
        from distributed.comm.core import CommClosedError
        from distributed.scheduler import KilledWorker

        told, cancel_by = False, None
        while not future.done():
            time.sleep(POLL_S)
            if relayed.worker is not None and not told:
                told = True
                log.info("run %s: running on worker %s", run_id, relayed.worker)
            if going.cancel.is_set() and cancel_by is None:
                flag.set()  # the worker's relay thread stops its engine, which cleans up
                cancel_by = time.monotonic() + CANCEL_GRACE_S
                if relayed.worker is None:  # still waiting for a worker: nothing to stop there
                    future.cancel()
                    raise RuntimeError("cancelled before a worker started it")
            if cancel_by is not None and time.monotonic() > cancel_by:
                future.cancel()
                raise RuntimeError(f"cancelled; the worker did not stop within {CANCEL_GRACE_S:g} s")
            if relayed.worker is not None and relayed.worker not in self.workers() \
                    and relayed.worker not in self.workers(fresh=True):  # a worker that joined since the last look
                self._abandon(future, flag)
                raise RunInterrupted(f"worker {relayed.worker} was lost mid-run; the samples that arrived are kept")
        try:
            return future.result()
        except (KilledWorker, CommClosedError, FutureCancelledError, RunLost) as exc:
            self._abandon(future, flag)
            where = relayed.worker or "its worker"
            raise RunInterrupted(f"{where} was lost mid-run ({type(exc).__name__}); the samples that arrived "
                                 "are kept") from None

    def _abandon(self, future: Any, flag: Any) -> None:
        """Stop the scheduler from running the task again (a rerun that started refuses, or stops)."""
        try:
            flag.set()
            future.cancel()
        except (OSError, TimeoutError):
            log.warning("cluster %s: could not cancel a lost run's task", self.address)

    def _forget(self, run_id: str, flag: Any, started: Any) -> None:
        """Remove the run's cancel flag and first-attempt record from the scheduler."""
        try:
            flag.clear()
            started.delete()
        except (OSError, TimeoutError, RuntimeError):
            log.warning("cluster %s: run %s's flags stay on the scheduler", self.address, run_id)

    def _write_relay(self, run_id: str, run_dir: Path, relayed: Relayed) -> None:
        lag = lag_figures(relayed.lags)
        figures = {"scheduler": self.address, "worker": relayed.worker, "attempt": relayed.attempt,
                   "samples": relayed.samples, "lag": lag}
        log.info("run %s: %d samples relayed from %s, lag p50 %s ms, p99 %s ms", run_id, relayed.samples,
                 relayed.worker, lag["p50_ms"], lag["p99_ms"])
        try:
            (run_dir / RELAY_FILE).write_text(json.dumps(figures, indent=1) + "\n")
        except OSError as exc:
            log.warning("run %s: cannot write %s: %s", run_id, RELAY_FILE, exc)
