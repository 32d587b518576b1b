"""What the web app's blueprints share: one `Services` per app, at `current_app.extensions["fastlab"]`.

The run history (SQLite, rebuilt from the results folder so it survives restarts and runs made with
the CLI: the execution service's store, `fastlab.service.store`), the run queue and its worker
(`fastlab.service.queue.RunManager`: this module only asks it), the spec check every submission
goes through (the schema, the web app's own duration limit, then the engine's `prepare`), and the
guided labs' folder. The blueprints (`runs`, `live`, `labs`, `compare`, `sweeps`) hold routes only;
what they look up or change goes through here, so each rule (a run id is matched against a strict
pattern and looked up before any file is touched; the queue's limits) is written once.

Every method runs inside a request (it uses the request's database connection and `current_app`).
"""

from __future__ import annotations

import hmac
import json
import re
import secrets
import sqlite3
import time
from pathlib import Path
from typing import Any

from flask import Response, abort, current_app, g, jsonify, request

from fastlab.base import record
from fastlab.base.documents import DocumentError, read_json
from fastlab.base.names import check_name
from fastlab.define.schema import ExperimentSpec, SpecError, parse_spec, to_plain
from fastlab.labs.kit import Lab, LabError
from fastlab.service import queue, store
from webapp import guided, uploads
from webapp.apierror import api_error

RUN_ID_RE = re.compile(r"^[0-9]{8}-[0-9]{6}-[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$")
PER_PAGE = 100  # history rows a page of GET /api/runs holds unless asked (at most MAX_PER_PAGE)
MAX_PER_PAGE = 1000
HOME_ROWS = 50  # runs the home page lists (its filters act on these); older ones are on /?page=2 ...


class Services:
    """The history, the queue, spec checks and the labs of one app (see the module's docstring)."""

    active = store.ACTIVE  # statuses a run can still change in: its folder is not ours to read or delete

    def __init__(self, root: Path, database: Path, manager: queue.RunManager) -> None:
        self.root = root
        self.database = database
        self.manager = manager
        self._caps: Any = None
        self.traces = uploads.TraceStore.under(root, database)  # uploaded traces (webapp.uploads)

    # --- the request's connection and the machine's capabilities ------------------------------------
    def db(self) -> sqlite3.Connection:
        """The request's connection to the history (closed by `close` when the request ends)."""
        if "db" not in g:
            g.db = store.connect(self.database)
        return g.db

    @staticmethod
    def close(_exc: BaseException | None = None) -> None:
        conn = g.pop("db", None)
        if conn is not None:
            conn.close()

    def caps(self) -> Any:
        """The capability probe, once per app (it runs commands: not per request)."""
        if self._caps is None:
            from fastlab.plan.capabilities import probe
            self._caps = probe()
        return self._caps

    @property
    def labs_dir(self) -> Path:
        return Path(current_app.config["LABS_DIR"])

    # --- history --------------------------------------------------------------------------------
    def sync(self) -> None:
        """Index finished runs of the results folder that the history does not know yet."""
        store.index_folder(self.db(), self.root, RUN_ID_RE)

    def as_dict(self, row: sqlite3.Row) -> dict[str, Any]:
        """A history row as the pages and the API use it: its summary and environment the run record's
        (fastlab.base.record; None for a run without one or whose record cannot be read), its spec plain data."""
        out = dict(row)
        readers = {"summary": record.read_summary, "environment": record.read_environment, "spec": json.loads}
        for key, read in readers.items():
            try:
                out[key] = read(row[key]) if row[key] else None
            except ValueError:
                out[key] = None
        out["status"] = out.get("status") or "done"
        out["lab_short"] = bool(out.get("lab_short")) if out.get("lab") else None
        out["position"] = self.manager.position(row["id"]) if out["status"] == "queued" else None
        return out

    def folder(self, run_id: str) -> Path:
        """A run's folder in the results folder, its id checked as every name that becomes a path
        (fastlab.base.names); call it with an id `run_row` found."""
        return self.root / check_name(run_id, "run id")

    def run_row(self, run_id: str) -> dict[str, Any]:
        """The history's row for a run id; 404 before any file is touched for anything else."""
        if not RUN_ID_RE.match(run_id) or ".." in run_id:
            abort(404)
        self.sync()
        row = self.db().execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            abort(404)
        return self.as_dict(row)

    def runs_page(self, page: int = 1, per_page: int = PER_PAGE) -> tuple[list[dict[str, Any]], int]:
        """A page of the history, newest first, and how many runs it holds in all. A page, not the whole:
        submit-then-cancel left 10,513 rows, which GET /api/runs answered in 421 ms (8.3 MB) and the home
        page in 1.6 s (issue 47); a page of 100 of 10,000 is read and sent in a few ms."""
        self.sync()
        conn = self.db()
        total = conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        # fetched whole before as_dict opens its own connections (a queued run's position): a cursor
        # still being read holds the database's shared lock, and a run ending meanwhile waits for it
        # while holding the pending lock that keeps position() out, until both time out (30 s: seen
        # with twenty runs queued and polled, bench/classroom.py)
        rows = conn.execute("SELECT * FROM runs ORDER BY COALESCE(created, started) DESC, id DESC LIMIT ? OFFSET ?",
                            (per_page, (page - 1) * per_page)).fetchall()
        return [self.as_dict(r) for r in rows], total

    def status_row(self, run_id: str) -> dict[str, Any]:
        """A run's status for the live stream: its own connection, for it is polled outside requests. A run
        deleted meanwhile (a queued run cancelled and deleted while a viewer waited) is `deleted`: its stream
        ends with that, where it met a TypeError and was cut without `end` (issue 47)."""
        with store.connect(self.database) as conn:
            r = conn.execute("SELECT status, error FROM runs WHERE id = ?", (run_id,)).fetchone()
        if r is None:
            return {"status": "deleted", "error": "the run was deleted", "position": None}
        st = r["status"] or "done"
        return {"status": st, "error": r["error"],
                "position": self.manager.position(run_id) if st == "queued" else None}

    def forget(self, run_id: str) -> None:
        store.forget(self.db(), run_id)

    def step_runs(self, lab_name: str, per_step: int = 5) -> dict[str, list[dict[str, Any]]]:
        """The latest runs of each step of a lab, newest first."""
        out: dict[str, list[dict[str, Any]]] = {}
        for row in self.db().execute("SELECT * FROM runs WHERE lab = ? ORDER BY COALESCE(created, started) DESC",
                                     (lab_name,)).fetchall():  # whole: as_dict connects too (all_runs)
            runs = out.setdefault(row["lab_step"], [])
            if len(runs) < per_step:
                runs.append(self.as_dict(row))
        return out

    # --- submissions ------------------------------------------------------------------------------
    def check(self, data: Any) -> tuple[ExperimentSpec, Any]:
        """Schema + the engine's own prepare(); raises SpecError with the engine's message."""
        from fastlab.plan.prepare import prepare

        limit = current_app.config["MAX_DURATION_S"]
        duration = data.get("duration_s") if isinstance(data, dict) else None
        if isinstance(duration, int | float) and not isinstance(duration, bool) \
                and duration > limit:  # the web app's limit, before the schema's 3600
            raise SpecError(f"duration_s: at most {limit:g} s in the web app")
        spec = parse_spec(data)  # duration_s is strict: the number checked above is the spec's
        # a trace is an upload's reference (webapp.uploads), never a path: the engine gets the stored file;
        # the spec returned (queued, kept in the history) keeps the reference
        resolved = uploads.resolve(spec, self.traces)
        try:
            prepared = prepare(resolved, caps=self.caps())
        except SpecError:
            raise
        except (ValueError, TypeError, KeyError, ArithmeticError) as exc:
            raise SpecError(f"spec: {exc}") from None
        pings_s = prepared.idle_pings_s
        if spec.duration_s + pings_s > limit:  # the idle pings run before the flows: the same budget
            raise SpecError(f"idle_pings: {spec.idle_pings} pings a path take up to {pings_s:.0f} s before the "
                            f"{spec.duration_s:g} s of flows: more than the web app's {limit:g} s in all")
        return spec, prepared

    def waiting(self) -> tuple[int, int]:
        """Runs queued now: in all, and this request's client's."""
        return store.waiting(self.db(), client())

    def limits(self) -> store.Limits:
        """The queue's limits this app was configured with."""
        config = current_app.config
        return store.Limits(config["MAX_QUEUED"], config["MAX_QUEUED_PER_CLIENT"], config["MAX_RUNS_PER_CLIENT_HOUR"])

    def room(self) -> int:
        """Runs this client may still queue (the queue's and the per-client limit)."""
        limits, (queued, mine) = self.limits(), self.waiting()
        return min(limits.queued - queued, limits.per_client - mine)

    def enqueue(self, spec: ExperimentSpec, lab: str | None = None, step: str | None = None,
                short: bool | None = None) -> Response:
        """Queue a checked spec (a lab step run names its lab folder, step and form); 201 with the run,
        429 when the queue or this client's share of it is full."""
        run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{spec.name}-w{secrets.token_hex(3)}"
        try:
            from webapp import classdb, classes  # they build on this module: imported when first used
            student = classes.current_student()  # the student who queued it, if any: tagged in the same transaction
            self.manager.submit(store.Submission(run_id, spec.name, spec.topology, to_plain(spec), client(), lab, step,
                                                 short), self.limits(), self.db(),
                                tag=lambda conn, run: classdb.tag_run(conn, run, student))
        except store.QueueFull as exc:
            return api_error(429, str(exc))
        resp = jsonify(self.run_row(run_id) | {"url": f"/runs/{run_id}"})
        resp.status_code = 201
        return resp

    # --- who may act on a run ----------------------------------------------------------------------
    @staticmethod
    def may_act_on(row: dict[str, Any]) -> bool:
        """A run is its submitter's: cancel, delete and live changes come from the address that queued
        it, or carry the instructor's token. Runs from before the owner was recorded are anyone's."""
        return not row.get("client") or row["client"] == client() or instructor()

    @staticmethod
    def not_yours(row: dict[str, Any], what: str) -> str:
        return (f"this run was queued from another address: only its owner (or the instructor's token) may "
                f"{what}")

    # --- guided labs ------------------------------------------------------------------------------
    def lab_or_error(self, ref: str, step_id: str | None = None, *, api: bool = True) -> Lab:
        """The lab (and checks the step): 404 if there is no such lab or step, 500 if the lab cannot load."""
        try:
            lab = guided.find_lab(ref, self.labs_dir)
            if step_id is not None:
                guided.find_step(lab, step_id)
        except guided.LabNotFound as exc:
            abort(api_error(404, str(exc)) if api else 404)
        except LabError as exc:  # a broken lab folder: say what is wrong with it
            if api:
                abort(api_error(500, str(exc)))
            abort(500, description=str(exc))
        return lab


def instructor() -> bool:
    """Whether the request carries the instructor's token (header X-Fastlab-Instructor or cookie
    fastlab_instructor), which may act on every run; False where the app has none."""
    token = current_app.config.get("INSTRUCTOR_TOKEN")
    if not token:
        return False
    given = request.headers.get("X-Fastlab-Instructor") or request.cookies.get("fastlab_instructor") or ""
    return hmac.compare_digest(given.encode(), token.encode())


def client() -> str:
    """Who is asking: the request's address (behind a reverse proxy, the proxy)."""
    return request.remote_addr or "unknown"


def services() -> Services:
    """The app's Services (inside a request)."""
    return current_app.extensions["fastlab"]


def body_json(empty: Any = None) -> Any:
    """The request's JSON body through the bounded reader (fastlab.base.documents: strict JSON, its depth,
    size and numbers bounded), or the request ends here with 415/400 and one line saying why; `empty`
    (when given) is the body of a request that sent none."""
    if empty is not None and not request.content_length:
        return empty
    if not request.is_json:
        abort(api_error(415, "send the spec as JSON (Content-Type: application/json)"))
    try:  # parsed here, not by get_json(silent=True), whose None is both `null` and "not JSON"
        return read_json(request.get_data(cache=True), max_chars=current_app.config["MAX_CONTENT_LENGTH"])
    except DocumentError as exc:
        abort(api_error(400, f"body: {exc}"))
