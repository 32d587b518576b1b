"""The web app's run queue: SQLite-backed history, one worker thread, live sample fan-out.

The queue is the `runs` table itself (status `queued`, ordered by `created`), so it survives
restarts. One worker thread runs one experiment at a time through the engine; each sample the
engine emits is appended to the run's `partial.jsonl` (kept: a run cut by a restart still has
its traces) and published on the run's `Channel`, which keeps the history for late subscribers
and fans out to one queue per subscriber (each SSE client).
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import logging
import math
import queue
import sqlite3
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from fastlab import chart_data
from fastlab.ccruntime import LiveControl
from fastlab.rundir import PARTIAL, RunFolder
from fastlab.spec import parse_spec
from webapp import uploads
from webapp.events import encode

END = object()
FASTLAB_LOG = logging.getLogger("fastlab")  # the engine's progress lines (INFO) and warnings
STATUSES = ("queued", "running", "done", "failed", "interrupted", "cancelled")
INTERRUPTED_BY_SHUTDOWN = "the web app stopped while this run was going; partial traces kept"
ACTIVE = ("queued", "running")

# Added to older databases by `connect` (ALTER TABLE ... ADD COLUMN keeps their rows). A lab step
# run names its lab folder, step id and form (1 = short) so its checkpoints can be evaluated later.
COLUMNS = {"status": "TEXT DEFAULT 'done'", "spec": "TEXT", "error": "TEXT", "created": "TEXT",
           "finished": "TEXT", "lab": "TEXT", "lab_step": "TEXT", "lab_short": "INTEGER",
           "client": "TEXT"}  # the submitting client's address (per-client queue limit)


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def connect(database: Path) -> sqlite3.Connection:
    database.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(database, timeout=30)
    conn.row_factory = sqlite3.Row
    conn.execute("""CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, name TEXT, started TEXT,
                    topology TEXT, summary TEXT, environment TEXT)""")
    have = {r["name"] for r in conn.execute("PRAGMA table_info(runs)")}
    for column, decl in COLUMNS.items():
        if column not in have:
            conn.execute(f"ALTER TABLE runs ADD COLUMN {column} {decl}")  # noqa: S608 (constant names)
    conn.commit()
    return conn


def history_environment(env: dict[str, Any]) -> dict[str, Any]:
    """What the history keeps of a run's environment.json: the backends and kernel (the run page's table)
    and the parameter changes it applied (fastlab.segments: the charts' markers and theory spans)."""
    def part(key: str, kind: type) -> Any:
        value = env.get(key) if isinstance(env, dict) else None
        return value if isinstance(value, kind) else kind()

    applied = part("congestion_control", dict).get("applied")
    return {"backends": part("backends", dict), "kernel": str(part("kernel", str)),
            "congestion_control": {"applied": [a for a in applied if isinstance(a, dict) and "at_s" in a]
                                   if isinstance(applied, list) else []}}


def clean(value: Any) -> Any:
    """JSON-safe: non-finite floats become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class Channel:
    """Samples of one live run: the history a late viewer gets (compact JSON text of the slimmed
    samples, `events.encode`: bounded memory) plus one queue per subscriber."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.history: list[str] = []
        self._subs: list[queue.Queue[object]] = []
        self.closed = False

    def publish(self, sample: dict[str, Any]) -> None:
        text = encode(sample)
        with self._lock:
            if text is not None:
                self.history.append(text)
            subs = list(self._subs)
        for q in subs:
            q.put(sample)

    def subscribe(self) -> tuple[list[str], queue.Queue[object]]:
        q: queue.Queue[object] = queue.Queue()
        with self._lock:
            replay = list(self.history)
            if self.closed:
                q.put(END)
            else:
                self._subs.append(q)
        return replay, q

    def unsubscribe(self, q: queue.Queue[object]) -> None:
        with self._lock:
            if q in self._subs:
                self._subs.remove(q)

    @property
    def subscribers(self) -> int:
        with self._lock:
            return len(self._subs)

    def close(self) -> None:
        with self._lock:
            self.closed = True
            subs, self._subs = self._subs, []
        for q in subs:
            q.put(END)


class PartialWriter:
    """Appends samples to partial.jsonl, flushed at least every 0.5 s (from any thread)."""

    def __init__(self, path: Path) -> None:
        self._lock = threading.Lock()
        self._fh = path.open("a", encoding="utf-8")
        self._flushed = time.monotonic()

    def write(self, sample: dict[str, Any]) -> None:
        line = json.dumps(sample, default=str)
        with self._lock:
            if self._fh.closed:
                return
            self._fh.write(line + "\n")
            if time.monotonic() - self._flushed > 0.5:
                self._fh.flush()
                self._flushed = time.monotonic()

    def close(self) -> None:
        with self._lock:
            self._fh.close()


def iter_partial(run_dir: Path, limit: int = 2_000_000) -> Iterator[dict[str, Any]]:
    """The samples of a run's partial.jsonl, one at a time (the file stays open while the iterator is
    used: a replay reads it a few chunks a poll). A finished run made without the web app (a CLI run, a
    bundle's, a lab's recording) has none: its samples from its CSVs instead (fastlab.chart_data, what
    its report.html draws), so its page draws its charts too."""
    path = run_dir / PARTIAL
    if not path.is_file():
        yield from recorded_samples(run_dir, limit)
        return
    with path.open(encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh):
            if n >= limit:
                break
            try:
                sample = json.loads(line)
            except (ValueError, RecursionError):
                continue  # the last line of a killed run may be cut
            if isinstance(sample, dict):
                yield sample


def recorded_samples(run_dir: Path, limit: int) -> Iterator[dict[str, Any]]:
    """A finished run's samples from its flows.csv, links.csv and cc_events.csv (those it has); nothing
    for a folder that is no finished run or whose tables cannot be read. Parsed once per version of the
    tables (their sizes and times): a class opening the same recorded run reads its CSVs once, not once a
    viewer (a lab recording's tables take ~0.1-1 s to parse and chart)."""
    folder = RunFolder(run_dir)
    if not folder.is_run():
        return
    stamp = []
    for name in ("flows.csv", "links.csv", "cc_events.csv"):
        try:
            st = folder.path(name).stat()  # the table as RunFolder reads it (name or name.gz)
            stamp.append((st.st_size, st.st_mtime_ns))
        except OSError:
            stamp.append(None)
    key = (str(run_dir.resolve()), tuple(stamp), limit)
    with _RECORDED_LOCK:
        samples = _RECORDED.get(key)
        if samples is not None:
            _RECORDED.move_to_end(key)
            RECORDED_STATS["hits"] += 1
    if samples is None:
        samples = _parse_recorded(folder, limit)
        with _RECORDED_LOCK:
            RECORDED_STATS["parses"] += 1
            if len(samples) <= RECORDED_CACHE_MAX_SAMPLES:
                _RECORDED[key] = samples
                while len(_RECORDED) > RECORDED_CACHE_RUNS:
                    _RECORDED.popitem(last=False)
    yield from samples


# Recorded runs' samples kept for the next viewer: the last few runs opened, each only if small enough
# that the cache stays bounded (~0.3 KB a sample: 8 x 50,000 samples is ~120 MB at most).
RECORDED_CACHE_RUNS = 8
RECORDED_CACHE_MAX_SAMPLES = 50_000
_RECORDED: collections.OrderedDict[tuple[Any, ...], tuple[dict[str, Any], ...]] = collections.OrderedDict()
_RECORDED_LOCK = threading.Lock()
RECORDED_STATS = {"hits": 0, "parses": 0}


def _parse_recorded(folder: RunFolder, limit: int) -> tuple[dict[str, Any], ...]:
    """recorded_samples' parse (the result is shared by every viewer: read, never changed)."""
    frames = []
    for read in (folder.flows, folder.links, folder.events):
        try:
            frames.append(read())
        except (FileNotFoundError, OSError, ValueError, pd.errors.ParserError):
            frames.append(pd.DataFrame())
    return tuple(chart_data.chart_samples(*frames)[:limit])


class ProgressToStream(logging.Handler):
    """What the engine logs while a run goes (its progress lines, warnings) as the run's live "log"
    events; only records of the thread that made the handler (the worker running that run), so a
    second thread's logging (a request, another app in the same process) stays out of the stream."""

    def __init__(self, channel: Channel) -> None:
        super().__init__(logging.INFO)
        self.channel = channel
        self.thread = threading.get_ident()

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.channel.publish({"kind": "log", "t": None, "msg": record.getMessage()})


Runner = Callable[..., Any]


class RunManager:
    def __init__(self, root: Path, database: Path, runner: Runner | None = None) -> None:
        self.root = root
        self.database = database
        self.runner = runner
        self.channels: dict[str, Channel] = {}
        self.current: str | None = None
        self.live: LiveControl | None = None  # the running run's live parameter control
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._cancel_running = threading.Event()
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

    def cancel(self, run_id: str) -> str:
        """Cancel a queued run, or ask the running one to stop; returns its status afterwards."""
        if run_id == self.current and self.runner is None:
            self._cancel_running.set()  # the engine stops at its next check and cleans up
            return "cancelling"
        with connect(self.database) as conn:
            conn.execute("UPDATE runs SET status = 'cancelled', finished = ? WHERE id = ? AND status = 'queued'",
                         (now(), run_id))
            row = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        return row["status"] if row else "unknown"

    def wake(self) -> None:
        self._wake.set()

    # --- worker ------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="fastlab-run-worker", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def shutdown(self, timeout_s: float) -> bool:
        """Server stopping: take no more runs, stop the running one after its full cleanup (it
        becomes `interrupted`, partial traces kept) and wait for that; False if it took too long."""
        self._shutting_down = True
        self.stop()
        self._cancel_running.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            return not self._thread.is_alive()
        return True

    def _next(self) -> sqlite3.Row | None:
        with connect(self.database) as conn:
            return conn.execute("SELECT * FROM runs WHERE status = 'queued' ORDER BY created, id LIMIT 1").fetchone()

    def _loop(self) -> None:
        while not self._stop.is_set():
            row = self._next()
            if row is None:
                self._wake.wait(1.0)
                self._wake.clear()
                continue
            self.execute(row["id"], row["spec"])

    def execute(self, run_id: str, spec_json: str) -> None:
        run_dir = self.root / run_id
        channel = Channel()
        with connect(self.database) as conn:
            changed = conn.execute("UPDATE runs SET status = 'running', started = ? WHERE id = ? AND status = 'queued'",
                                   (now(), run_id)).rowcount
        if not changed:
            return  # cancelled meanwhile
        self.current = run_id
        self.channels[run_id] = channel
        run_dir.mkdir(parents=True, exist_ok=True)
        writer = PartialWriter(run_dir / PARTIAL)

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
            # an uploaded trace's reference becomes the stored file (webapp.uploads), which the engine copies
            spec = uploads.resolve(parse_spec(json.loads(spec_json)), uploads.TraceStore.under(self.root))
            self._cancel_running.clear()
            if self.runner is None:
                from fastlab.engine import run_experiment
                self.live = LiveControl()
                result = run_experiment(spec, out=run_dir, on_sample=on_sample, cancel=self._cancel_running,
                                        live=self.live)
            else:
                result = self.runner(spec, out=run_dir, on_sample=on_sample)
            status = "done"
            summary = json.dumps(result.summary, default=str)
            environment = json.dumps(history_environment(result.environment or {}), default=str)
        except BaseException as exc:  # noqa: BLE001 - the worker must survive any run's failure
            error = f"{exc.__class__.__name__}: {exc}"
            if self._shutting_down:
                status, error = "interrupted", INTERRUPTED_BY_SHUTDOWN
            elif self._cancel_running.is_set():
                status, error = "cancelled", "cancelled while running; partial traces kept"
            else:
                traceback.print_exc()
        finally:
            FASTLAB_LOG.removeHandler(progress)
            self.live = None
            writer.close()
            with connect(self.database) as conn:
                conn.execute("UPDATE runs SET status = ?, error = ?, summary = COALESCE(?, summary), "
                             "environment = COALESCE(?, environment), finished = ? WHERE id = ?",
                             (status, error, summary, environment, now(), run_id))
            channel.publish({"kind": "status", "t": None, "status": status, "error": error})
            channel.close()
            self.current = None
            self.channels.pop(run_id, None)
