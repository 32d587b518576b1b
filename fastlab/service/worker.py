"""Runs on a Dask worker: what a worker offers, what a run asks of it, and the one task (`run_remote`)
that runs a queued web run (its live samples relayed back to the server) or a sweep's point there.

Role: the worker's side of the service's one Dask path (the client's side, which submits, is
`fastlab.service.cluster`). A worker (`fastlab cluster worker`, one per
lab machine) offers three resources: `machine=1` (a sweep point takes a whole host), `runs=MAX_RUNS`
and `cores=<budget>` (fastlab.experiment.cost's budget of this machine: half its CPUs). A web run asks for
`runs=1` and its predicted cores; a run that must run alone asks for every run slot and the machine.

Live samples: `SampleBatcher` collects what the engine emits, and a relay thread sends them every
RELAY_S to the scheduler as Dask structured events on one topic (`Worker.log_event`; the web server
subscribes with `Client.subscribe_topic`: supported in distributed 2026.8, where Pub/Sub is gone and
Queue is "experimental"). Each batch carries the wall time each sample was made, so the server measures
the relay's lag. Cancelling: the server sets a Dask `Event` named after the run; the relay thread
checks it and stops the engine, which cleans up as for any cancel. A run is started at most once: a
task the scheduler reruns after its worker died refuses to start (a Dask `Variable` names the first
attempt), and the server marks the run interrupted.

At a worker's start (`--preload fastlab.service.worker`, also after a nanny restarts it) `dask_setup`
runs `fastlab.run.ccload.cleanup()`: the leftovers of runs whose engine died -- a killed worker's run --
are removed through their state files, never by a name pattern.
"""

from __future__ import annotations

import logging
import os
import platform
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from fastlab.experiment.cost import MAX_RUNS, Cost, Figures
from fastlab.results import bundle

log = logging.getLogger(__name__)

LIVE_TOPIC = "fastlab-live"  # the structured-event topic every web run's samples travel on
RELAY_S = 0.25  # a batch of samples at least this often (the stream's lag stays well under 1 s)
HEARTBEAT_S = 1.0  # an empty batch this often: the server knows the run is alive
BATCH_MAX = 2000  # samples in one event at most (more go in the next ones, at once)
MAX_BUNDLE_BYTES = 512 * 1024**2  # a run's bundle sent back (traces of a 600-s run are tens of MB)
CANCEL_CHECK_S = 0.5


class RunLost(RuntimeError):
    """A rerun of a web run whose first worker was lost: refused (the server marks it interrupted)."""


def worker_resources(figures: Figures) -> dict[str, float]:
    """What a worker offers (pure): one machine, MAX_RUNS run slots, and its budget of cores."""
    return {"machine": 1, "runs": MAX_RUNS, "cores": figures.budget_cores}


def resources_arg(resources: dict[str, float]) -> str:
    """`dask worker --resources`' text for `resources` (pure)."""
    return ",".join(f"{name}={amount:g}" for name, amount in resources.items())


def run_resources(cost: Cost, largest_cores: float) -> dict[str, float]:
    """What a web run asks of a worker (pure): a run slot and its predicted cores (no more than the
    largest worker offers, or it would wait forever); a run that must run alone takes every slot and
    the machine (no web run or sweep point beside it)."""
    if cost.alone:
        return {"runs": MAX_RUNS, "machine": 1}
    cores = min(max(cost.cores, 0.0), largest_cores)
    return {"runs": 1, **({"cores": cores} if cores > 0 else {})}


def cancel_name(run_id: str) -> str:
    return f"fastlab-cancel-{run_id}"


def attempt_name(run_id: str) -> str:
    return f"fastlab-started-{run_id}"


class SampleBatcher:
    """Samples the engine emits (any thread), with the wall time each was made, taken in batches."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._samples: list[dict[str, Any]] = []
        self._made: list[float] = []

    def add(self, sample: dict[str, Any]) -> None:
        with self._lock:  # stamped under the lock: stamps in list order (a thread preempted between its
            self._samples.append(sample)  # stamp and the append put an earlier stamp after a later one)
            self._made.append(time.time())

    def take(self, limit: int = BATCH_MAX) -> tuple[list[dict[str, Any]], list[float]]:
        with self._lock:
            samples, self._samples = self._samples[:limit], self._samples[limit:]
            made, self._made = self._made[:limit], self._made[limit:]
        return samples, made

    def __len__(self) -> int:
        with self._lock:
            return len(self._samples)


def event(run_id: str, attempt: str, seq: int, samples: list[dict[str, Any]], made: list[float],
          **extra: Any) -> dict[str, Any]:
    """One relay message (pure; msgpack-able: samples are the engine's flat dicts of numbers and text)."""
    return {"run": run_id, "attempt": attempt, "seq": seq, "samples": samples, "made": made, **extra}


class _LogLines(logging.Handler):
    """The engine's progress lines of this run's thread as `log` samples (the run page's log)."""

    def __init__(self, batcher: SampleBatcher) -> None:
        super().__init__(logging.INFO)
        self.batcher, self.thread = batcher, threading.get_ident()

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.batcher.add({"kind": "log", "t": None, "msg": record.getMessage()})


class Relay:
    """The relay thread of one run on a worker: batches to the scheduler every RELAY_S, the server's
    cancel checked every CANCEL_CHECK_S."""

    def __init__(self, worker: Any, run_id: str, attempt: str, batcher: SampleBatcher, cancel_flag: Any,
                 cancel: threading.Event) -> None:
        self.worker, self.run_id, self.attempt, self.batcher = worker, run_id, attempt, batcher
        self.cancel_flag, self.cancel = cancel_flag, cancel
        self.seq = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, name=f"fastlab-relay-{run_id[-7:]}", daemon=True)

    def send(self, **extra: Any) -> None:
        while True:
            samples, made = self.batcher.take()
            self.worker.log_event(LIVE_TOPIC, event(self.run_id, self.attempt, self.seq, samples, made, **extra))
            self.seq += 1
            if len(self.batcher) == 0:
                return

    def _loop(self) -> None:
        sent = checked = time.monotonic()
        while not self.done.wait(RELAY_S):
            now = time.monotonic()
            if len(self.batcher) or now - sent >= HEARTBEAT_S:
                self.send()
                sent = now
            if now - checked >= CANCEL_CHECK_S and not self.cancel.is_set():
                checked = now
                try:
                    if self.cancel_flag.is_set():
                        log.info("run %s: cancelled by the web server", self.run_id)
                        self.cancel.set()
                except Exception:  # noqa: BLE001 - the scheduler unreachable a moment: check again
                    log.warning("run %s: cannot read the cancel flag", self.run_id, exc_info=True)

    def stop(self) -> None:
        self.done.set()
        self.thread.join(5)
        self.send(end=True)


def _claim_first_attempt(run_id: str, attempt: str) -> None:
    """Refuse a second start of a run (the scheduler reruns a task whose worker died)."""
    from distributed import Variable

    started = Variable(attempt_name(run_id))
    try:
        first = started.get(timeout=0.5)
    except TimeoutError:
        started.set(attempt)
        return
    raise RunLost(f"run {run_id} already started on {first}, which was lost; not run twice")


def run_remote(run_id: str, spec_yaml: str, admission: dict[str, Any] | None = None, live: bool = True
               ) -> dict[str, Any]:
    """On a Dask worker: one run through the engine (fastlab.service.run.execute), its run folder sent back
    as a bundle (bytes) with where it ran and how long it took. `live` (a queued web run): its samples
    relayed as they come, the server's cancel obeyed, and a second start refused; a sweep point is not live."""
    from distributed import get_worker

    worker, began = get_worker(), time.monotonic()
    where = {"worker": worker.address, "host": platform.node(), "pid": os.getpid()}
    if not live:
        return {"bundle": _bundle(run_id, spec_yaml, {}), **where, "seconds": round(time.monotonic() - began, 3)}
    from distributed import Event

    attempt = f"{worker.address} pid {os.getpid()}"
    cancel_flag = Event(cancel_name(run_id))
    if cancel_flag.is_set():
        raise RuntimeError(f"run {run_id} was cancelled before it started")
    _claim_first_attempt(run_id, attempt)
    batcher, cancel = SampleBatcher(), threading.Event()
    relay = Relay(worker, run_id, attempt, batcher, cancel_flag, cancel)
    relay.send(**where)  # "started here"
    relay.thread.start()
    lines = _LogLines(batcher)
    logging.getLogger("fastlab").addHandler(lines)
    try:
        data = _bundle(run_id, spec_yaml, {"on_sample": batcher.add, "cancel": cancel,
                                           "admission": {**(admission or {}), "cluster": where}})
    finally:
        logging.getLogger("fastlab").removeHandler(lines)
        relay.stop()
    return {"bundle": data, **where, "seconds": round(time.monotonic() - began, 3)}


def _bundle(run_id: str, spec_yaml: str, options: dict[str, Any]) -> bytes:
    """Run the spec into a temporary folder and return its bundle's bytes (at most MAX_BUNDLE_BYTES)."""
    from fastlab.define.schema import read_spec_text
    from fastlab.service.run import execute

    with tempfile.TemporaryDirectory(prefix="fastlab-remote-") as tmp:
        result = execute(read_spec_text(spec_yaml), Path(tmp) / run_id, **options)
        zip_path = bundle.export(result.directory, Path(tmp) / "run.zip")
        size = zip_path.stat().st_size
        if size > MAX_BUNDLE_BYTES:
            raise RuntimeError(f"run {run_id}: its bundle has {size:,} bytes, more than {MAX_BUNDLE_BYTES:,}")
        return zip_path.read_bytes()


def dask_setup(worker: Any) -> None:
    """`dask worker --preload fastlab.service.worker`: at every start of a worker process, remove what
    runs whose engine died left behind (a killed worker's run), through their state files."""
    from fastlab.run.ccload import cleanup

    try:
        removed = cleanup()
    except Exception as exc:  # noqa: BLE001 - a worker that cannot clean up still serves; say why
        log.warning("fastlab worker start: cleanup failed: %s", exc)
        return
    if removed:
        log.warning("fastlab worker start: removed leftovers of dead runs: %s", "; ".join(removed))
