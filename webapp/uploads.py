"""Traces a student uploads in the form (issue 33 item 4): mahimahi packet-delivery traces for
`links.X.trace` (and `links.X.reverse.trace`), checked by fastlab.define.linktrace (the one parser, the CLI's)
and kept content-addressed in the server's own folder.

A spec the web app runs never names a file: reading a path a client chose would show a part of any file
on the server (a bad trace's error quotes its line). Instead the client uploads the file's bytes
(`POST /api/traces`); the server checks them, stores them as `<results root>/.uploads/traces/<sha256>.txt`
(its own name: nothing the client sent becomes a path) and answers with a reference, `upload:<sha256>`,
which the spec carries in place of a path. `resolve` turns each reference into the stored file's path
just before the engine sees the spec (the check of a submission, and the worker when the run starts), and
refuses every other value of a trace field; the history keeps the reference, so the run's page names it
and the form can send the spec again. The engine then copies the stored file into the run folder
(`trace_<link>_<direction>.txt`, named in spec.yaml) as for a CLI run, so the bundle carries it.

Bounds: one file is at most linktrace.MAX_FILE_BYTES (the request's body is refused above it before it
is read, webapp.asgi and webapp.security); the folder at most MAX_STORED_BYTES in all, so that uploads
cannot fill the results' disk; and each client (address) at most MAX_CLIENT_BYTES of it, so that one
client cannot take the class's store (one filled it in under a minute, issue 47). Who added which file is
a ledger in the history's database (table `uploads`); the check of both bounds and the write are one step
under the store's lock (8 parallel uploads had overshot the cap: each checked before any had written).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import os
import re
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastlab.base import rundir
from fastlab.base.names import check_name
from fastlab.define import linktrace
from fastlab.define.schema import ExperimentSpec, LinkDirection, SpecError

PREFIX = "upload:"
REF_RE = re.compile(r"^upload:([0-9a-f]{64})$")
# A class's worth of traces: 32 files at the 8 MiB bound, or thousands of the usual few-hundred-kB ones.
MAX_STORED_BYTES = 256 * 1024 * 1024
# One client's share of it: four files at the bound, or ~100 of the usual ones (public mahimahi traces are
# 0.1-3.4 MB); an eighth of the store, so a class's first eight clients can never fill it between them.
MAX_CLIENT_BYTES = 32 * 1024 * 1024
NAME_MAX = 64  # characters of the uploaded file's name kept, for messages only
FIELD_RE = re.compile(r"^links\.[A-Za-z0-9_-]{1,64}(\.reverse)?\.trace$")


class UploadError(ValueError):
    """An upload that is not stored: one line naming the field (422, or 507 when the store is full)."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Stored:
    """A stored trace as the form shows it."""

    ref: str  # upload:<sha256>, what the spec carries
    name: str  # the uploaded file's name, cleaned (shown, never used as a path)
    lines: int
    period_ms: int
    size_bytes: int

    @property
    def mean_rate_mbps(self) -> float:
        return self.lines * linktrace.OPPORTUNITY_BYTES * 8 / 1000 / self.period_ms

    def as_json(self) -> dict[str, Any]:
        return {"trace": self.ref, "name": self.name, "lines": self.lines, "period_ms": self.period_ms,
                "size_bytes": self.size_bytes, "mean_rate_mbps": round(self.mean_rate_mbps, 3)}


def clean_name(raw: str) -> str:
    """The uploaded file's name for messages (pure): its last path part, letters, digits and ._- only
    (`../../etc/passwd` -> `passwd`), at most NAME_MAX characters; `file` when nothing is left."""
    last = re.split(r"[/\\]", raw)[-1]
    kept = re.sub(r"[^A-Za-z0-9._-]", "_", last)[:NAME_MAX].lstrip(".")
    return kept or "file"


class TraceStore:
    """The server's folder of uploaded traces, one file per content (its sha256), and the ledger of who
    added each (`database`: the history's; None for a store that is only read, e.g. the worker's)."""

    def __init__(self, folder: Path, database: Path | None = None) -> None:
        self.folder = folder
        self.database = database

    @classmethod
    def under(cls, results_root: Path, database: Path | None = None) -> TraceStore:
        """The store of the app whose results folder is `results_root` (run ids never start with a dot, so
        the history's scan of the folder passes it by)."""
        return cls(results_root / ".uploads" / "traces", database)

    def path(self, sha256: str) -> Path:
        return self.folder / check_name(f"{sha256}.txt", "upload")

    def used_bytes(self) -> int:
        if not self.folder.is_dir():
            return 0
        return sum(p.stat().st_size for p in self.folder.glob("*.txt") if p.is_file())

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The store's lock (a file lock beside the folder: every thread and process that writes here takes it)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with self.folder.with_name(f"{self.folder.name}.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _ledger(self) -> sqlite3.Connection | None:
        if self.database is None:
            return None
        conn = sqlite3.connect(self.database, timeout=30)
        conn.execute("CREATE TABLE IF NOT EXISTS uploads (sha TEXT PRIMARY KEY, client TEXT, bytes INTEGER, "
                      "created TEXT)")
        return conn

    def client_bytes(self, client: str) -> int:
        """What `client` added to the store and is still there, bytes."""
        conn = self._ledger()
        if conn is None:
            return 0
        with contextlib.closing(conn):
            rows = conn.execute("SELECT sha, bytes FROM uploads WHERE client = ?", (client,)).fetchall()
        return sum(size for sha, size in rows if self.path(sha).is_file())

    def put(self, data: bytes, name: str, field: str, client: str = "unknown") -> Stored:
        """Check `data` with linktrace (the CLI's parser) and store it, within the store's and `client`'s
        bounds (content already stored costs nothing more); UploadError naming `field` (and the file's line)
        otherwise (422; 429 past the client's share, 507 when the store is full), with nothing written."""
        shown = clean_name(name)
        try:
            lines, period = linktrace.parse(data, shown)
        except linktrace.TraceError as exc:
            raise UploadError(f"{field}: {exc}") from None
        sha = hashlib.sha256(data).hexdigest()
        target = self.path(sha)
        with self._locked():  # the bounds' check and the write are one step
            if not target.is_file():
                mine = self.client_bytes(client)
                if mine + len(data) > MAX_CLIENT_BYTES:
                    raise UploadError(f"{field}: your uploads take {mine / 2**20:.1f} MiB of your "
                                      f"{MAX_CLIENT_BYTES // 2**20} MiB share of the server's trace store; "
                                      "this file would pass it: reuse a trace you uploaded", status=429)
                if self.used_bytes() + len(data) > MAX_STORED_BYTES:
                    raise UploadError(f"{field}: the server's trace store is full ({MAX_STORED_BYTES // 2**20} MiB); "
                                      "ask the instructor to clear it", status=507)
                # written beside its final name and renamed: a reader never sees half a file
                fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".part-")
                try:
                    with os.fdopen(fd, "wb") as fh:
                        fh.write(data)
                    os.replace(tmp, target)
                except BaseException:
                    Path(tmp).unlink(missing_ok=True)
                    raise
                self._record(sha, client, len(data))
        return Stored(f"{PREFIX}{sha}", shown, lines, period, len(data))

    def _record(self, sha: str, client: str, size: int) -> None:
        conn = self._ledger()
        if conn is None:
            return
        with contextlib.closing(conn), conn:
            conn.execute("INSERT OR REPLACE INTO uploads (sha, client, bytes, created) VALUES (?, ?, ?, ?)",
                         (sha, client, size, dt.datetime.now(dt.UTC).isoformat(timespec="seconds")))


def trace_fields(spec: ExperimentSpec) -> list[tuple[str, str, LinkDirection]]:
    """(link id, where: '' or '.reverse', direction) of every direction of `spec` that names a trace."""
    out = []
    for link_id, link in spec.links.items():
        for where, direction in (("", link), (".reverse", link.reverse)):
            if direction is not None and direction.trace is not None:
                out.append((link_id, where, direction))
    return out


def resolve(spec: ExperimentSpec, store: TraceStore) -> ExperimentSpec:
    """`spec` with each `upload:<sha256>` trace replaced by the stored file's path; SpecError (one line
    naming the field) for a trace that is not such a reference (a path: the web app opens no file a spec
    names) or one the store does not hold."""
    if not trace_fields(spec):
        return spec
    links = dict(spec.links)
    for link_id, where, direction in trace_fields(spec):
        field = f"links.{link_id}{where}.trace"
        match = REF_RE.match(direction.trace or "")
        if match is None:
            raise SpecError(f"{field}: the web app opens no file a spec names; upload the trace in the form "
                            "(it becomes upload:<sha256>), or run a trace file with `fastlab run`")
        stored = store.path(match.group(1))
        if not stored.is_file():
            raise SpecError(f"{field}: no uploaded trace {direction.trace[:20]}... on this server; upload it again")
        link = links[link_id]
        if where:
            assert link.reverse is not None
            link = link.model_copy(update={"reverse": link.reverse.model_copy(update={"trace": str(stored)})})
        else:
            link = link.model_copy(update={"trace": str(stored)})
        links[link_id] = link
    return spec.model_copy(update={"links": links})


def describe(spec: Any, store: TraceStore) -> list[str]:
    """A run's traces in words for its page (its spec as the history keeps it, a plain mapping): for each
    direction that runs one, the field, the upload it names, its opportunities and period, and the copy
    the run folder keeps. Robust to any spec (an old or CLI run's): what it cannot read it leaves out."""
    out: list[str] = []
    links = spec.get("links") if isinstance(spec, dict) else None
    for link_id, link in (links or {}).items() if isinstance(links, dict) else ():
        for where, direction, name in (("", link, "forward"),
                                       (".reverse", link.get("reverse") if isinstance(link, dict) else None,
                                        "reverse")):
            trace = direction.get("trace") if isinstance(direction, dict) else None
            if not isinstance(trace, str):
                continue
            match = REF_RE.match(trace)
            copy = rundir.trace_name(str(link_id), name)
            if match is None:  # a CLI run's spec.yaml names its copy
                out.append(f"links.{link_id}{where}.trace: the mahimahi trace {trace} (a copy in the run folder)")
                continue
            try:
                facts = linktrace.read(str(store.path(match.group(1))), f"links.{link_id}{where}.trace")
            except linktrace.TraceError:
                out.append(f"links.{link_id}{where}.trace: the uploaded trace {match.group(1)[:12]}… "
                           f"(no longer on this server); the run folder keeps its copy, {copy}")
                continue
            out.append(f"links.{link_id}{where}.trace: the uploaded trace {match.group(1)[:12]}…, "
                       f"{facts.lines:,} delivery opportunities every {facts.period_ms:,} ms (mean "
                       f"{facts.mean_rate_bps / 1e6:.3g} Mb/s); the run folder keeps its copy, {copy}")
    return out
