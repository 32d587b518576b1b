"""The service's run store: the SQLite history of every run it knows, which is also its queue.

One row a run (table `runs`): queued runs wait in it (status `queued`, ordered by `created`: the queue
survives restarts), running and finished ones keep their status, spec, summary and environment. Runs
made without the service (`fastlab run`, a lab's recording) are indexed from the results folder
(`index_folder`). The web app's history pages read this store; what it writes goes through here
(`enqueue`, `index_folder`, `forget`) and through fastlab.service.queue.RunManager.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastlab.base import record
from fastlab.base.record import Environment
from fastlab.base.rundir import RunFolder

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


def history_environment(env: Environment) -> dict[str, Any]:
    """What the history keeps of a run's environment.json (a record of its own: fastlab.base.record reads it
    back): the backends and kernel (the run page's table) and the parameter changes it applied
    (fastlab.theory.segments: the charts' markers and theory spans)."""
    return {"backends": {job: choice.dump() for job, choice in env.backends.items()}, "kernel": str(env.kernel or ""),
            "congestion_control": {"applied": [a.dump() for a in env.congestion_control.applied
                                               if a.at_s is not None]}}


def index_folder(conn: sqlite3.Connection, root: Path, run_id_re: re.Pattern[str]) -> None:
    """Index finished runs of the results folder `root` that the store does not know yet (folders named
    as `run_id_re` says a run's id is)."""
    known = {row["id"] for row in conn.execute("SELECT id FROM runs")}
    for directory in sorted(root.iterdir()) if root.is_dir() else []:
        run_id = directory.name
        if run_id in known or not run_id_re.match(run_id) or not RunFolder(directory).is_run():
            continue
        folder = RunFolder(directory)
        try:  # the record as read (migrated, validated), written back in its current version
            env, spec, summary = folder.environment(), folder.spec(), folder.summary()
            if env.run.name is None or env.run.started is None:
                continue
            row = (run_id, env.run.name, env.run.started, str(spec["topology"]), record.to_json(summary),
                   json.dumps(history_environment(env)), json.dumps(spec, default=str), env.run.started)
        except (OSError, ValueError, KeyError, TypeError):  # DocumentError is a ValueError
            continue  # a run still being written, or not a run (one bad folder must not hide the rest)
        conn.execute("INSERT OR IGNORE INTO runs (id, name, started, topology, summary, environment, status, "
                     "spec, created) VALUES (?, ?, ?, ?, ?, ?, 'done', ?, ?)", row)
    conn.commit()


def forget(conn: sqlite3.Connection, run_id: str) -> None:
    """Remove a run's row (its folder is the caller's to remove)."""
    conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))
    conn.commit()


def waiting(conn: sqlite3.Connection, client: str) -> tuple[int, int]:
    """Runs queued now: in all, and `client`'s."""
    queued = conn.execute("SELECT COUNT(*) FROM runs WHERE status = 'queued'").fetchone()[0]
    mine = conn.execute("SELECT COUNT(*) FROM runs WHERE status = 'queued' AND client = ?", (client,)).fetchone()[0]
    return queued, mine


def submitted_last_hour(conn: sqlite3.Connection, client: str) -> int:
    """Runs `client` has put in the store in the last hour (queued, run or cancelled)."""
    since = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)).isoformat(timespec="milliseconds")
    return conn.execute("SELECT COUNT(*) FROM runs WHERE client = ? AND created > ?", (client, since)).fetchone()[0]


@dataclass(frozen=True)
class Limits:
    """The queue's limits on what a client may add: runs waiting in all and per client, runs an hour."""

    queued: int
    per_client: int
    per_client_hour: int


class QueueFull(RuntimeError):
    """The queue or a client's share of it is full: one line saying which and what to do."""


@dataclass(frozen=True)
class Submission:
    """A run to queue: its id, name, topology and spec (plain data, as the history keeps it), who asked
    (`client`: the per-client limits), and for a lab step its lab folder, step id and form."""

    run_id: str
    name: str
    topology: str
    spec: dict[str, Any]
    client: str
    lab: str | None = None
    step: str | None = None
    short: bool | None = None


def enqueue(conn: sqlite3.Connection, run: Submission, limits: Limits,
            tag: Callable[[sqlite3.Connection, str], None] | None = None) -> None:
    """Queue a run within `limits`, or QueueFull saying which limit; `tag(conn, run_id)` adds what a front
    end keeps of the run in the same transaction (the web app: the student who queued it). Counts and
    inserts in one write transaction: parallel submissions (each with its own connection) wait for the
    database's write lock here, so none counts before another's insert lands (separate steps let 30
    parallel posts from one address queue 13 against a limit of 10)."""
    if conn.in_transaction:
        conn.commit()
    conn.execute("BEGIN IMMEDIATE")
    try:
        queued, mine = waiting(conn, run.client)
        lately = submitted_last_hour(conn, run.client)
        full = (f"the queue already holds {queued} runs (at most {limits.queued}): wait for some to "
                "finish or cancel some" if queued >= limits.queued else
                f"you already have {mine} runs waiting (at most {limits.per_client} per "
                "client): wait for one to start or cancel one" if mine >= limits.per_client
                else f"you have submitted {lately} runs in the last hour (at most {limits.per_client_hour} per "
                "client): wait a while" if lately >= limits.per_client_hour else "")
        if full:
            raise QueueFull(full)
        conn.execute("INSERT INTO runs (id, name, topology, status, spec, created, lab, lab_step, lab_short, "
                     "client) VALUES (?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?)",
                     (run.run_id, run.name, run.topology, json.dumps(run.spec), now(), run.lab, run.step,
                      None if run.short is None else int(run.short), run.client))
        if tag is not None:
            tag(conn, run.run_id)
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
