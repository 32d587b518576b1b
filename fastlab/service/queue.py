"""The service's run queue: runs wait in the store, start when admission lets them, run here or on Dask.

The queue is the store's `runs` table itself (fastlab.service.store: status `queued`, ordered by
`created`), so it survives restarts. A dispatcher thread starts the queue's head when its predicted cost
(fastlab.experiment.cost, fastlab.service.admission) fits beside the runs going, within the machine's
budget and MAX_RUNNING; each run goes through the engine (fastlab.service.run.execute) in its own thread
(run-scoped names, emulators, state: runs do not share what they build), or to a Dask worker through the
one submission path (fastlab.service.cluster), and its environment.json records the admission decision
and its neighbours. Each sample the engine emits is appended to the run's `partial.jsonl` (kept: a run
cut by a restart still has its traces) and published on the run's `Channel` (fastlab.service.samples).
The web app queues and cancels runs through a `RunManager` and streams its channels.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastlab.base import record
from fastlab.base.rundir import RunFolder
from fastlab.define.schema import ExperimentSpec, parse_spec
from fastlab.experiment.cost import MAX_RUNS, Cost, admit
from fastlab.run.ccruntime import LiveControl
from fastlab.service import store
from fastlab.service.admission import Going, predicted
from fastlab.service.cluster import Cluster, RunInterrupted
from fastlab.service.samples import FASTLAB_LOG, Channel, ProgressToStream, clean
from fastlab.service.store import INTERRUPTED_BY_SHUTDOWN, connect, history_environment, now

Runner = Callable[..., Any]
END_WRITE_ATTEMPTS = 3
MAX_RUNNING = MAX_RUNS  # runs going at once at most, whatever their predicted cost: each one's build and
# teardown (namespaces, emulators, iperf3) costs a few seconds of CPU the cost model leaves out


class RunManager:
    """The queue's worker: a dispatcher thread starts the queue's head, in order, whenever fastlab.experiment.cost's
    admission says it fits beside the runs going (each run in its own thread, through the engine), and
    keeps the last decision for the queue page."""

    def __init__(self, root: Path, database: Path, runner: Runner | None = None,
                 max_running: int = MAX_RUNNING, cluster: Cluster | None = None,
                 resolve: Callable[[ExperimentSpec], ExperimentSpec] = lambda spec: spec) -> None:
        self.root = root
        self.cluster = cluster  # runs go to this Dask cluster's workers (fastlab.service.cluster), not this process
        self.resolve = resolve  # a queued spec as it runs (the web app: an uploaded trace's reference -> its file)
        self.database = database
        self.runner = runner
        self.max_running = max_running
        self.channels: dict[str, Channel] = {}
        self.running: dict[str, Going] = {}
        self.admission: dict[str, Any] | None = None  # the last decision about the queue's head
        self._lock = threading.Lock()
        self._caps: Any = None
        self._costs: dict[str, tuple[Cost, dict[str, Any]]] = {}  # queued run -> its prediction (made once)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._shutting_down = False

    # --- queue state -------------------------------------------------------------------------
    def recover(self) -> list[str]:
        """At startup: runs left `running` by a dead server are `interrupted` (partial data kept)."""
        with connect(self.database) as conn:
            ids = [r["id"] for r in conn.execute("SELECT id FROM runs WHERE status = 'running'")]
            for run_id in ids:
                conn.execute("UPDATE runs SET status = 'interrupted', finished = ?, error = COALESCE(error, ?) "
                             "WHERE id = ?", (now(), INTERRUPTED_BY_SHUTDOWN, run_id))
        return ids

    def position(self, run_id: str) -> int | None:
        with connect(self.database) as conn:
            rows = [r["id"] for r in conn.execute(
                "SELECT id FROM runs WHERE status = 'queued' ORDER BY created, id")]
        return rows.index(run_id) + 1 if run_id in rows else None

    def is_running(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self.running

    def live_of(self, run_id: str) -> LiveControl | None:
        """The live parameter control of a run going now (None: not going, or a test runner's)."""
        with self._lock:
            going = self.running.get(run_id)
        return going.live if going is not None else None

    def queue_state(self) -> dict[str, Any]:
        """What the queue page shows: the runs going with their costs and admissions, and the last
        decision about the queue's head (why it waits, or why it started)."""
        with self._lock:
            going = [{"id": g.run_id, "cost": g.cost.as_dict(), "admission": g.admission}
                     for g in self.running.values()]
        return {"running": going, "max_running": self.max_running, "head": self.admission}

    def cancel(self, run_id: str) -> str:
        """Cancel a queued run, or ask a running one to stop; returns its status afterwards."""
        with self._lock:
            going = self.running.get(run_id)
        if going is not None and self.runner is None:
            going.cancel.set()  # the engine stops at its next check and cleans up
            return "cancelling"
        with connect(self.database) as conn:
            conn.execute("UPDATE runs SET status = 'cancelled', finished = ? WHERE id = ? AND status = 'queued'",
                         (now(), run_id))
            row = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        return row["status"] if row else "unknown"

    def wake(self) -> None:
        self._wake.set()

    def submit(self, run: store.Submission, limits: store.Limits, conn: sqlite3.Connection | None = None,
               tag: Callable[[sqlite3.Connection, str], None] | None = None) -> None:
        """Queue a run within the queue's limits (store.QueueFull, one line, when full) and wake the
        dispatcher; `conn`: the caller's connection to the store (a web request's), else one of its own;
        `tag`: what the caller adds to the run's row in the same transaction (store.enqueue)."""
        own = conn is None
        conn = connect(self.database) if conn is None else conn
        try:
            store.enqueue(conn, run, limits, tag)
        finally:
            if own:
                conn.close()
        self.wake()

    # --- worker ------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="fastlab-run-dispatcher", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def shutdown(self, timeout_s: float) -> bool:
        """Server stopping: take no more runs, stop the running ones after their full cleanup (they
        become `interrupted`, partial traces kept) and wait for that; False if it took too long."""
        self._shutting_down = True
        self.stop()
        deadline = time.monotonic() + timeout_s
        if self._thread is not None:
            self._thread.join(timeout_s)
        with self._lock:
            going = list(self.running.values())
        for g in going:
            g.cancel.set()
        for g in going:
            if g.thread is not None:
                g.thread.join(max(0.0, deadline - time.monotonic()))
        return not (self._thread is not None and self._thread.is_alive()) and \
            not any(g.thread is not None and g.thread.is_alive() for g in going)

    def _next(self) -> sqlite3.Row | None:
        with connect(self.database) as conn:
            return conn.execute("SELECT * FROM runs WHERE status = 'queued' ORDER BY created, id LIMIT 1").fetchone()

    def _predict(self, row: sqlite3.Row) -> tuple[Cost, dict[str, Any]]:
        if row["id"] not in self._costs:
            if self._caps is None:
                from fastlab.plan.capabilities import probe
                self._caps = probe()  # once per app: it runs commands
            try:  # as the run thread will read it (an uploaded trace resolved to its stored file)
                spec = self.resolve(parse_spec(json.loads(row["spec"])))
            except Exception as exc:  # noqa: BLE001 - the run thread reports it; here it only runs alone
                self._costs[row["id"]] = (Cost(0.0, {}, f"its spec no longer reads: {exc}"), {})
            else:
                self._costs[row["id"]] = predicted(spec, self._caps)
        return self._costs[row["id"]]

    def _loop(self) -> None:
        """Start the queue's head whenever the admission rule lets it; in order (no run overtakes the
        head, so a full-scale run waiting for an empty machine is not starved by small ones)."""
        while not self._stop.is_set():
            row = self._next()
            if row is None:
                self.admission = None  # nothing waits: no decision to show
                self._wake.wait(1.0)
                self._wake.clear()
                continue
            cost, figures = self._predict(row)
            if self.cluster is not None:
                figures = self.cluster.figures(figures)
            with self._lock:
                costs = [g.cost for g in self.running.values()]
            budget = figures.get("budget_cores", 0.0)
            decision = admit(costs, cost, budget, self.max_running)
            self.admission = {"run": row["id"], **decision.as_dict(), "cost": cost.as_dict(), "figures": figures,
                              "decided": now()}
            if not decision.start:
                self._wake.wait(1.0)  # a run ending wakes it
                self._wake.clear()
                continue
            self._costs.pop(row["id"], None)
            if not self._claim(row["id"]):
                continue  # cancelled meanwhile
            with self._lock:
                going = Going(row["id"], cost, dict(self.admission, started_beside=sorted(self.running)))
                self.running[row["id"]] = going
            going.thread = threading.Thread(target=self.execute, args=(row["id"], row["spec"], going),
                                            name=f"fastlab-run-{row['id'][-7:]}", daemon=True)
            going.thread.start()

    def _claim(self, run_id: str) -> bool:
        """Mark a queued run running, its live channel registered first: from the moment the history says
        `running` a viewer finds the channel (it found none in that gap, replayed an empty run and ended the
        stream with status running: seen once in the 200-viewer test). False: cancelled meanwhile."""
        channel = self.channels.setdefault(run_id, Channel())
        if self._claim_row(run_id):
            return True
        self.channels.pop(run_id, None)
        channel.close()
        return False

    def _claim_row(self, run_id: str) -> bool:
        with connect(self.database) as conn:
            return bool(conn.execute("UPDATE runs SET status = 'running', started = ? WHERE id = ? "
                                     "AND status = 'queued'", (now(), run_id)).rowcount)

    def _record_end(self, run_id: str, *values: str | None) -> None:
        """How a run ended, into the history. Runs end in threads of their own now, each with a connection
        of its own: a write that finds the database locked past the connection's 30 s (seen once, twenty
        runs queued and polled) is tried again, for a row left `running` would never end."""
        for attempt in range(END_WRITE_ATTEMPTS):
            try:
                with connect(self.database) as conn:
                    conn.execute("UPDATE runs SET status = ?, error = ?, summary = COALESCE(?, summary), "
                                 "environment = COALESCE(?, environment), finished = ? WHERE id = ?",
                                 (*values[:4], now(), run_id))
                return
            except sqlite3.OperationalError:
                if attempt == END_WRITE_ATTEMPTS - 1:
                    raise
                traceback.print_exc()

    def execute(self, run_id: str, spec_json: str, going: Going | None = None) -> None:
        """Run one queued run through the engine (in the calling thread) and record how it ended."""
        if going is None:  # called directly: claim it and run it as the only one
            if not self._claim(run_id):
                return  # cancelled meanwhile
            going = Going(run_id, Cost(0.0), {"why": "run directly"})
            with self._lock:
                self.running[run_id] = going
        run_dir = self.root / run_id
        channel = self.channels.setdefault(run_id, Channel())  # registered by _claim
        folder = RunFolder(run_dir)
        folder.create()
        writer = folder.partial_writer()

        def on_sample(sample: dict[str, Any]) -> None:
            record = {k: clean(v) for k, v in sample.items()}
            writer.write(record)
            channel.publish(record)

        status, error, summary, environment = "failed", None, None, None
        progress = ProgressToStream(channel)
        FASTLAB_LOG.addHandler(progress)
        if FASTLAB_LOG.getEffectiveLevel() > logging.INFO:
            FASTLAB_LOG.setLevel(logging.INFO)  # progress lines are INFO: the stream shows them
        try:
            # e.g. an uploaded trace's reference becomes the stored file (webapp.uploads), which the engine copies
            spec = self.resolve(parse_spec(json.loads(spec_json)))
            if self.cluster is not None:
                result = self.cluster.run(run_id, spec, going, on_sample, channel.publish, run_dir)
            elif self.runner is None:
                from fastlab.service.run import execute
                going.live = LiveControl()
                result = execute(spec, run_dir, on_sample=on_sample, cancel=going.cancel,
                                 live=going.live, admission=going.admission, scripts=self.root)
            else:
                result = self.runner(spec, out=run_dir, on_sample=on_sample)
            status = "done"
            summary = record.to_json(result.summary)
            environment = json.dumps(history_environment(result.environment))
        except BaseException as exc:  # noqa: BLE001 - the worker must survive any run's failure
            error = f"{exc.__class__.__name__}: {exc}"
            if self._shutting_down:
                status, error = "interrupted", INTERRUPTED_BY_SHUTDOWN
            elif going.cancel.is_set():
                status, error = "cancelled", "cancelled while running; partial traces kept"
            elif isinstance(exc, RunInterrupted):
                status = "interrupted"
            else:
                traceback.print_exc()
        finally:
            FASTLAB_LOG.removeHandler(progress)
            going.live = None
            writer.close()
            self._record_end(run_id, status, error, summary, environment)
            channel.publish({"kind": "status", "t": None, "status": status, "error": error})
            channel.close()
            with self._lock:
                self.running.pop(run_id, None)
            self.channels.pop(run_id, None)
            self._wake.set()  # room for the next run
