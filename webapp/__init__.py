"""fastlab web app: Flask app factory.

The results browser of a lab machine and the place students start experiments: an experiment
form generated from the spec schema (validated by the engine's own `prepare`), a run queue with
one worker thread, live traces over Server-Sent Events, run history in SQLite (rebuilt from the
results folder and surviving restarts), result bundles, and a JSON API described by an OpenAPI 3
document at /api/openapi.json. The UI uses the same API.

Security: loopback only unless an access token is given; a Host header that is not a loopback
name or the served host is refused (DNS rebinding), and so is a state-changing request from a
foreign Origin; every state-changing request needs the per-app CSRF token in `X-CSRF-Token` and a
JSON body; pages carry a Content-Security-Policy (scripts only from the app); run ids are
checked against a strict pattern and looked up in SQLite before any file is touched; specs go
through the spec schema and the engine's validation (which never uses a shell).

Guided labs (`webapp.guided` over `fastlab.labs`): /labs lists the labs, /labs/<n> shows a handout
rendered for the web (`webapp.handout`: Run buttons where the CLI handout has commands, answer boxes
kept in the browser) with its steps; running a step queues an ordinary run that remembers its lab,
step and form, and its checkpoints are evaluated on the finished run directory and said in plain
words (/api/runs/<id>/checkpoints); POST /api/runs/<id>/bundle adds the student's answers to the
bundle; /new?lab=..&spec=..&set=.. opens the form with one of a lab's specs.

Fidelity: a finished run's page opens with its fidelity verdict (`fastlab.fidelity_view`: a
warning box with the reasons when the emulation was not faithful, a short note otherwise) and the
runs list says it in one word; templates reach it through the globals `fidelity_banner`,
`fidelity_details` and `fidelity_state`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hmac
import json
import os
import re
import secrets
import shutil
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import yaml
from flask import (
    Flask,
    Response,
    abort,
    after_this_request,
    g,
    jsonify,
    redirect,
    render_template,
    request,
    send_file,
    stream_with_context,
)
from markupsafe import Markup
from werkzeug.exceptions import BadRequest, HTTPException

from fastlab import explain, fast_theory, fidelity_view, paths, tables
from fastlab.ccruntime import LiveControlError
from fastlab.labs import LABS_DIR, LabError
from fastlab.spec import ExperimentSpec, SpecError, parse_spec, read_spec_text, to_plain
from webapp import cli_text, compare, guided, handout, sweeps
from webapp import runner as q
from webapp.apierror import api_error
from webapp.events import SSE_BATCH_S, EventStream
from webapp.openapi import document

RUN_ID_RE = re.compile(r"^[0-9]{8}-[0-9]{6}-[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$")
LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_DURATION_S = 600.0
MAX_QUEUED = 40  # runs waiting at once: a class's worth; more is a runaway script, not a lesson
# Runs one client (address) may have waiting: a student's few tries, so that one runaway script
# or impatient double-clicker cannot take the class's queue. On a loopback server every user is
# 127.0.0.1, so there it is one user's limit; behind a reverse proxy the proxy is one client.
MAX_QUEUED_PER_CLIENT = 10
MIN_TOKEN_CHARS = 16  # guessing it must not be practical: 16 url-safe characters are ~96 bits
WILDCARD = ("0.0.0.0", "::", "")
# Pages of the app: every script and style sheet is a file it serves; plotly sets inline styles.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
# report.html inlines plotly and its data: allowed to run its own inline code, in a sandbox (an
# opaque origin: it can reach neither this app's API nor its cookies).
REPORT_CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; "
              "sandbox allow-scripts")


def host_name(header: str) -> str:
    """The name part of a Host header or an Origin's authority (pure): '[::1]:8080' -> '::1'."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def origin_host(origin: str) -> str | None:
    """The host of an Origin header (pure); None for 'null' or anything that is not http(s)://."""
    for scheme in ("http://", "https://"):
        if origin.lower().startswith(scheme):
            return host_name(origin[len(scheme):].split("/", 1)[0])
    return None


def presets() -> list[dict[str, Any]]:
    example = to_plain(read_spec_text((paths.REPO / "examples" / "simple-cubic.yaml").read_text()))
    fast = {"name": "fast-alpha30-loss1", "description": "FAST, alpha 30, 1% random loss on the dumbbell bottleneck",
            "topology": "dumbbell", "topology_args": {"rate_mbps": 20, "rtt_ms": 40, "buffer_bdp": 1.0},
            "duration_s": 20, "seed": 1, "flows": [{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 30}}],
            "links": {"bottleneck": {"loss": {"model": "bernoulli", "rate": 0.01}}}}
    return [{"id": "example", "label": "example: simple-cubic.yaml", "spec": example},
            {"id": "fast-alpha30-loss1", "label": "FAST alpha 30 + 1% loss on the dumbbell", "spec": fast}]


def human_time(stamp: str | None) -> str:
    """'2026-11-24T14:02:52.351+00:00' -> '24 Nov 2026, 14:02:52 UTC' (the history's times are UTC);
    anything that is not such a time is shown as it is."""
    if not stamp:
        return ""
    try:
        when = dt.datetime.fromisoformat(stamp)
    except (TypeError, ValueError):
        return str(stamp)
    when = when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when.astimezone(dt.UTC)
    return f"{when.day} {when:%b %Y, %H:%M:%S} UTC"


def create_app(results_root: Path | None = None, db_path: Path | None = None, *, host: str = "127.0.0.1",
               token: str | None = None, start_worker: bool = True, cleanup_on_start: bool | None = None,
               runner: q.Runner | None = None, max_duration_s: float = MAX_DURATION_S,
               labs_dir: Path | None = None) -> Flask:
    """The web app.

    host: where it will be served; off loopback an access `token` is required (checked on every
    request, header X-Fastlab-Token or cookie fastlab_token; `?token=` once sets the cookie).
    start_worker: run queued experiments (False: the queue only fills, for tests and fuzzing).
    cleanup_on_start: remove leftovers of dead runs (`fastlab.runstate.cleanup`); default = start_worker.
    runner: the engine entry point (default `fastlab.engine.run_experiment`).
    labs_dir: the folder of the guided labs (default the repository's labs/; config LABS_DIR).
    """
    token = token or None
    if token is not None and (len(token) < MIN_TOKEN_CHARS or not token.isprintable() or token != token.strip()):
        raise ValueError(f"the access token must be at least {MIN_TOKEN_CHARS} printable characters without "
                         f"surrounding spaces (e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(24))')")
    # DNS rebinding: a page from another site whose name now points at 127.0.0.1 sends its own
    # name as Host. Loopback names always pass; the served host too; with a token on a wildcard
    # address any name passes (the token, which such a page cannot have, is then the guard).
    allowed_hosts = set(LOOPBACK) | ({host.lower()} if host not in WILDCARD else set())
    any_host = host in WILDCARD and bool(token)
    if host not in LOOPBACK and not token:
        raise ValueError(f"binding to {host} (beyond loopback) needs an access token (--token or FASTLAB_TOKEN)")
    app = Flask(__name__)
    app.jinja_env.filters["when"] = human_time
    # fastlab's own templates too: tables.html, the summary tables report.html draws the same way
    app.jinja_loader = jinja2.ChoiceLoader([app.jinja_loader, jinja2.PackageLoader("fastlab", "templates")])
    app.jinja_env.globals["run_tables"] = tables.run_tables
    root = Path(results_root or paths.results_root())
    database = Path(db_path or root / "history.sqlite3")
    app.config.update(RESULTS_ROOT=root, DATABASE=database, MAX_CONTENT_LENGTH=256 * 1024,
                      ACCESS_TOKEN=token, CSRF_TOKEN=secrets.token_urlsafe(32), MAX_DURATION_S=max_duration_s,
                      MAX_QUEUED=MAX_QUEUED, MAX_QUEUED_PER_CLIENT=MAX_QUEUED_PER_CLIENT,
                      LABS_DIR=Path(labs_dir or LABS_DIR))
    manager = q.RunManager(root, database, runner)
    app.extensions["fastlab_runs"] = manager
    caps_cache: dict[str, Any] = {}

    # --- startup: recover from a restart ------------------------------------------------------
    if cleanup_on_start if cleanup_on_start is not None else start_worker:
        from fastlab.runstate import cleanup
        try:
            app.config["CLEANED_AT_START"] = cleanup()
        except (OSError, subprocess.SubprocessError) as exc:  # e.g. not root: say so, keep serving
            app.config["CLEANED_AT_START"] = [f"cleanup failed: {exc}"]
    app.config["INTERRUPTED_AT_START"] = manager.recover()
    if start_worker:
        manager.start()

    def db() -> sqlite3.Connection:
        if "db" not in g:
            g.db = q.connect(database)
        return g.db

    @app.teardown_appcontext
    def close(_exc: BaseException | None) -> None:
        conn = g.pop("db", None)
        if conn is not None:
            conn.close()

    def caps() -> Any:
        if "caps" not in caps_cache:
            from fastlab.capabilities import probe
            caps_cache["caps"] = probe()
        return caps_cache["caps"]

    # --- security -------------------------------------------------------------------------------
    @app.before_request
    def guard() -> Any:
        if not any_host and host_name(request.host or "") not in allowed_hosts:
            return api_error(421, f"Host {request.host!r} is not served here (DNS rebinding guard): "
                                  f"use {sorted(allowed_hosts)[0]}")
        origin = request.headers.get("Origin")
        if origin is not None and request.method not in ("GET", "HEAD", "OPTIONS") and not any_host \
                and origin_host(origin) not in allowed_hosts:
            return api_error(403, f"Origin {origin[:100]!r} may not change anything here")
        if token:
            given = request.headers.get("X-Fastlab-Token") or request.cookies.get("fastlab_token") or ""
            via_query = request.args.get("token", "")
            if via_query and hmac.compare_digest(via_query.encode(), token.encode()):
                resp = redirect(request.path)
                resp.set_cookie("fastlab_token", token, httponly=True, samesite="Strict")
                return resp
            if not hmac.compare_digest(given.encode(), token.encode()):
                return api_error(401, "access token required (X-Fastlab-Token header or fastlab_token cookie)")
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            sent = request.headers.get("X-CSRF-Token", "")
            if not hmac.compare_digest(sent.encode(), app.config["CSRF_TOKEN"].encode()):
                return api_error(403, "missing or wrong X-CSRF-Token header")
            if request.content_length and not request.is_json:
                return api_error(415, "request bodies must be JSON (Content-Type: application/json)")
        return None

    @app.after_request
    def headers(resp: Response) -> Response:
        resp.headers.setdefault("X-Content-Type-Options", "nosniff")
        resp.headers.setdefault("X-Frame-Options", "DENY")
        resp.headers.setdefault("Referrer-Policy", "no-referrer")
        resp.headers.setdefault("Content-Security-Policy", CSP)
        return resp

    @app.errorhandler(404)
    def not_found(exc: Any) -> Any:
        """The API answers in JSON even for paths no route matches (e.g. a lab ref with a slash)."""
        if request.path.startswith("/api/"):
            return api_error(404, f"not found: {request.path}")
        return exc

    @app.errorhandler(413)
    def too_large(_e: Any) -> Any:
        return api_error(413, f"request body larger than {app.config['MAX_CONTENT_LENGTH']} bytes")

    @app.context_processor
    def inject() -> dict[str, Any]:
        return {"csrf_token": app.config["CSRF_TOKEN"]}

    # --- history ----------------------------------------------------------------------------------
    def sync() -> None:
        """Index finished runs of the results folder that the history does not know yet."""
        conn = db()
        known = {row["id"] for row in conn.execute("SELECT id FROM runs")}
        for summary_path in sorted(root.glob("*/summary.json")):
            run_id = summary_path.parent.name
            if run_id in known or not RUN_ID_RE.match(run_id):
                continue
            try:
                env = json.loads((summary_path.parent / "environment.json").read_text())
                spec = yaml.safe_load((summary_path.parent / "spec.yaml").read_text())
                summary = summary_path.read_text()
                json.loads(summary)
            except (OSError, ValueError, yaml.YAMLError):
                continue  # a run still being written, or not a run
            conn.execute("INSERT OR IGNORE INTO runs (id, name, started, topology, summary, environment, status, "
                         "spec, created) VALUES (?, ?, ?, ?, ?, ?, 'done', ?, ?)",
                         (run_id, env["run"]["name"], env["run"]["started"], spec["topology"], summary,
                          json.dumps({"backends": env["backends"], "kernel": env["kernel"]}),
                          json.dumps(spec, default=str), env["run"]["started"]))
        conn.commit()

    def as_dict(row: sqlite3.Row) -> dict[str, Any]:
        out = dict(row)
        for key in ("summary", "environment", "spec"):
            try:
                out[key] = json.loads(row[key]) if row[key] else None
            except ValueError:
                out[key] = None
        out["status"] = out.get("status") or "done"
        out["lab_short"] = bool(out.get("lab_short")) if out.get("lab") else None
        out["position"] = manager.position(row["id"]) if out["status"] == "queued" else None
        return out

    def run_row(run_id: str) -> dict[str, Any]:
        """The history's row for a run id; 404 before any file is touched for anything else."""
        if not RUN_ID_RE.match(run_id) or ".." in run_id:
            abort(404)
        sync()
        row = db().execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            abort(404)
        return as_dict(row)

    def all_runs() -> list[dict[str, Any]]:
        sync()
        return [as_dict(r) for r in db().execute("SELECT * FROM runs ORDER BY COALESCE(created, started) DESC")]

    # --- spec checks ------------------------------------------------------------------------------
    def check_spec(data: Any) -> tuple[ExperimentSpec, Any]:
        """Schema + the engine's own prepare(); raises SpecError with the engine's message."""
        from fastlab.engine import prepare

        duration = data.get("duration_s") if isinstance(data, dict) else None
        if isinstance(duration, int | float) and not isinstance(duration, bool) \
                and duration > app.config["MAX_DURATION_S"]:  # the web app's limit, before the schema's 3600
            raise SpecError(f"duration_s: at most {app.config['MAX_DURATION_S']:g} s in the web app")
        spec = parse_spec(data)  # duration_s is strict: the number checked above is the spec's
        try:
            prepared = prepare(spec, caps=caps())
        except SpecError:
            raise
        except (ValueError, TypeError, KeyError, ArithmeticError) as exc:
            raise SpecError(f"spec: {exc}") from None
        return spec, prepared

    def body_spec() -> Any:
        if not request.is_json:
            abort(api_error(415, "send the spec as JSON (Content-Type: application/json)"))
        try:
            data = request.get_json(silent=True)
        except RecursionError:
            abort(api_error(400, "the body is nested too deeply"))
        if data is None:
            abort(api_error(400, "the body is not valid JSON"))
        return data

    # --- pages ----------------------------------------------------------------------------------
    @app.get("/")
    def index() -> str:
        return render_template("index.html", runs=all_runs())

    @app.get("/new")
    def new() -> str:
        """The new-run form; ?lab=<lab>&spec=<spec in its folder>&set=... fills it with that spec and
        overrides (the handout's `fastlab run labs/...` commands link here)."""
        prefill, prefill_error = None, None
        if request.args.get("lab"):
            try:
                lab = guided.find_lab(request.args["lab"], Path(app.config["LABS_DIR"]))
                prefill = to_plain(guided.lab_spec(lab, request.args.get("spec", ""), request.args.getlist("set")))
            except LabError as exc:
                prefill_error = str(exc)
        return render_template("new.html", prefill=prefill, prefill_error=prefill_error)

    def chart_references(spec: Any, summary: dict[str, Any] | None) -> list[dict[str, Any]]:
        """The theory's lines for the run's charts (fastlab.fast_theory; fastlab.explain's response
        functions at the measured loss rate, the spec's before there is one); none for a spec that no
        longer parses or a topology that changed since the run."""
        try:
            refs = fast_theory.references(parse_spec(spec))
        except (SpecError, ValueError, KeyError, TypeError, RuntimeError):
            return []
        return explain.response_lines(refs, summary, (spec or {}).get("links"))

    @app.get("/runs/<run_id>")
    def run_page(run_id: str) -> str:
        run = run_row(run_id)
        refs = chart_references(run.get("spec"), run.get("summary"))
        summary = run.get("summary") or {}
        # the engine's note (summary.json); for runs made before it, the same computation here
        notes = summary.get("what_happened") if "what_happened" in summary else explain.notes(refs, summary)
        step_label = None  # a lab step run: the step's number in the handout, as on the lab page
        if run.get("lab"):
            with contextlib.suppress(LabError, OSError):  # the lab is gone or broken: the step's id alone
                step_label = handout.render(guided.find_lab(run["lab"], Path(app.config["LABS_DIR"]))).labels.get(
                    run["lab_step"])
        return render_template("run.html", run=run, refs=refs, notes=notes, step_label=step_label)

    @app.get("/runs/<run_id>/report")
    def report(run_id: str) -> Any:
        run_row(run_id)  # 404 for anything the history does not know: no path from the URL
        path = root / run_id / "report.html"
        if not path.is_file():
            abort(404)
        resp = send_file(path, mimetype="text/html")
        resp.headers["Content-Security-Policy"] = REPORT_CSP
        return resp

    @app.get("/favicon.ico")
    def favicon() -> Any:
        return redirect("/static/favicon.svg", code=301)

    @app.get("/static/fidelity.css")
    def fidelity_css() -> Any:
        """The fidelity banner's styles: one source (fastlab.fidelity_view.CSS) for this app and report.html."""
        return Response(fidelity_view.CSS, mimetype="text/css", headers={"Cache-Control": "max-age=3600"})

    @app.get("/static/plotly.min.js")
    def plotly_js() -> Any:
        import plotly
        return send_file(Path(plotly.__file__).parent / "package_data" / "plotly.min.js",
                         mimetype="application/javascript", max_age=86400)

    @app.get("/doctor")
    def doctor() -> str:
        c = caps()
        return render_template("doctor.html", caps=c, backends=c.backends())

    # --- API: catalogues ---------------------------------------------------------------------------
    def topologies() -> list[dict[str, Any]]:
        from fastlab.topology import build_plan, catalogue, load_module

        rows = []
        for row in catalogue():
            module = load_module(row["name"])
            plan = build_plan(row["name"], {})
            rows.append({**row, "args_schema": module.Args.model_json_schema(),
                         "takes_scale": "scale" in module.Args.model_fields,
                         "hosts": sorted(plan.host_names()), "shaped_links": sorted(plan.shaped)})
        return rows

    def ccs() -> list[dict[str, Any]]:
        from fastlab.ccset import default_registry

        impl = caps().cc_impl_choice("auto")[0]
        registry = default_registry(impl if impl != "unavailable" else "bpf")
        out = []
        for name in sorted(registry.usable()):
            cc = registry.lookup(name)
            out.append({"name": name, "origin": cc.origin, "description": cc.description,
                        "params": [{"name": p.name, "kind": p.kind.__name__, "minimum": p.minimum,
                                    "maximum": p.maximum, "default": p.default, "unit": p.unit, "help": p.help,
                                    "pattern": p.pattern} for p in cc.params]})
        return out

    @app.get("/api/openapi.json")
    def openapi() -> Any:
        return jsonify(document())

    @app.get("/api/topologies")
    def api_topologies() -> Any:
        return jsonify(topologies())

    @app.get("/api/topologies/<name>")
    def api_topology(name: str) -> Any:
        from fastlab.topology import TOPOLOGY_MODULES, TopologyError, build_plan

        if name not in TOPOLOGY_MODULES:
            return api_error(404, f"unknown topology {name!r}")
        try:
            args = json.loads(request.args.get("args") or "{}")
            if not isinstance(args, dict):
                raise TopologyError("topology_args: must be a mapping")
            plan = build_plan(name, args)
        except (ValueError, TopologyError) as exc:
            return api_error(422, str(exc))
        return jsonify({"name": name, "hosts": sorted(plan.host_names()), "shaped_links": sorted(plan.shaped)})

    @app.get("/api/ccs")
    def api_ccs() -> Any:
        return jsonify(ccs())

    @app.get("/api/schema")
    def api_schema() -> Any:
        return jsonify({"spec_schema": ExperimentSpec.model_json_schema(), "topologies": topologies(),
                        "ccs": ccs(), "presets": presets(),
                        "limits": {"max_duration_s": app.config["MAX_DURATION_S"]}})

    # --- API: runs ---------------------------------------------------------------------------------
    @app.get("/api/runs")
    def api_runs() -> Any:
        return jsonify(all_runs())

    @app.get("/api/runs/<run_id>")
    def api_run(run_id: str) -> Any:
        return jsonify(run_row(run_id))

    @app.post("/api/validate")
    def api_validate() -> Any:
        try:
            spec, prepared = check_spec(body_spec())
        except SpecError as exc:
            return api_error(422, str(exc))
        return jsonify({"ok": True, "spec": to_plain(spec),
                        "links": {k: {"backend": b[0], "why": b[1]} for k, b in prepared.backends.items()},
                        "flows": [f.id for f in prepared.flows],
                        "yaml": cli_text.spec_yaml(spec), "command": cli_text.run_command(spec)})

    def enqueue(spec: ExperimentSpec, lab: str | None = None, step: str | None = None,
                short: bool | None = None) -> Response:
        """Queue a checked spec (a lab step run names its lab folder, step and form); 201 with the run."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        run_id = f"{stamp}-{spec.name}-w{secrets.token_hex(3)}"
        plain = to_plain(spec)
        conn = db()
        queued = conn.execute("SELECT COUNT(*) FROM runs WHERE status = 'queued'").fetchone()[0]
        if queued >= app.config["MAX_QUEUED"]:
            return api_error(429, f"the queue already holds {queued} runs (at most {app.config['MAX_QUEUED']}): "
                                  "wait for some to finish or cancel some")
        client = request.remote_addr or "unknown"
        mine = conn.execute("SELECT COUNT(*) FROM runs WHERE status = 'queued' AND client = ?",
                            (client,)).fetchone()[0]
        if mine >= app.config["MAX_QUEUED_PER_CLIENT"]:
            return api_error(429, f"you already have {mine} runs waiting (at most "
                                  f"{app.config['MAX_QUEUED_PER_CLIENT']} per client): wait for one to start "
                                  "or cancel one")
        conn.execute("INSERT INTO runs (id, name, topology, status, spec, created, lab, lab_step, lab_short, "
                     "client) VALUES (?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?)",
                     (run_id, spec.name, spec.topology, json.dumps(plain), q.now(), lab, step,
                      None if short is None else int(short), client))
        conn.commit()
        manager.wake()
        resp = jsonify(run_row(run_id) | {"url": f"/runs/{run_id}"})
        resp.status_code = 201
        return resp

    @app.post("/api/runs")
    def api_submit() -> Any:
        try:
            spec, _ = check_spec(body_spec())
        except SpecError as exc:
            return api_error(422, str(exc))
        return enqueue(spec)

    @app.post("/api/runs/<run_id>/cc")
    def api_live_cc(run_id: str) -> Any:
        """Change a running run's algorithm parameters now, per host (FAST's alpha while it runs)."""
        row = run_row(run_id)
        live = manager.live
        if row["status"] != "running" or manager.current != run_id or live is None:
            return api_error(409, f"run is {row['status']}: only a running run's parameters can change")
        body = request.get_json(silent=True)
        if not isinstance(body, dict) or set(body) - {"host", "cc", "args"}:
            return api_error(422, 'send {"host": "h1", "cc": "fast", "args": {"alpha": 60}} (and nothing else)')
        host, cc, args = body.get("host"), body.get("cc", "fast"), body.get("args")
        if not isinstance(host, str) or not isinstance(cc, str) or not isinstance(args, dict):
            return api_error(422, "host and cc must be strings, args an object of parameters")
        try:
            return jsonify(live.set(host, cc, args))
        except LiveControlError as exc:
            return api_error(422, str(exc))

    @app.post("/api/runs/<run_id>/cancel")
    def api_cancel(run_id: str) -> Any:
        row = run_row(run_id)
        if row["status"] not in ("queued", "running"):
            return api_error(409, f"run is {row['status']}, not queued or running")
        status = manager.cancel(run_id)
        if status not in ("cancelled", "cancelling"):
            return api_error(409, f"run is {status}: it cannot be cancelled")
        return jsonify(run_row(run_id) | {"status": status})

    def send_bundle(run_id: str, extra: dict[str, bytes] | None = None) -> Any:
        from fastlab import bundle

        row = run_row(run_id)
        run_dir = root / run_id
        if row["status"] in q.ACTIVE or not run_dir.is_dir():
            return api_error(409, f"run is {row['status']}: no bundle yet")
        tmpdir = Path(tempfile.mkdtemp(prefix="fastlab-bundle-"))
        try:
            zip_path = bundle.export(run_dir, tmpdir / f"{run_id}.zip", extra)
        except bundle.BundleError as exc:  # e.g. a failed run without summary.json
            shutil.rmtree(tmpdir, ignore_errors=True)
            return api_error(409, f"run is {row['status']}: {exc}")

        @after_this_request
        def remove(resp: Response) -> Response:
            resp.call_on_close(lambda: shutil.rmtree(tmpdir, ignore_errors=True))
            return resp

        return send_file(zip_path, mimetype="application/zip", as_attachment=True,
                         download_name=f"{run_id}{'-with-answers' if extra else ''}.zip")

    @app.get("/api/runs/<run_id>/bundle")
    def api_bundle(run_id: str) -> Any:
        return send_bundle(run_id)

    @app.post("/api/runs/<run_id>/bundle")
    def api_bundle_with_answers(run_id: str) -> Any:
        """The bundle with the student's answers (kept in their browser) as answers.md, in the manifest."""
        run_row(run_id)
        try:
            body = guided.bundle_request(request.get_json())
        except (BadRequest, RecursionError):
            return api_error(400, "body: not valid JSON (or nested too deeply)")
        except ValueError as exc:
            return api_error(400, str(exc))
        return send_bundle(run_id, {"answers.md": body.answers.encode()})

    def status_row(run_id: str) -> dict[str, Any]:
        with q.connect(database) as conn:
            r = conn.execute("SELECT status, error FROM runs WHERE id = ?", (run_id,)).fetchone()
        st = r["status"] or "done"
        return {"status": st, "error": r["error"], "position": manager.position(run_id) if st == "queued" else None}

    def event_stream(run_id: str) -> EventStream:
        """A viewer's stream of a run the history knows (404 otherwise: no path from the URL)."""
        run_row(run_id)
        return EventStream(manager, run_id, lambda: status_row(run_id), lambda: q.read_partial(root / run_id), q.END)

    def stream_headers(resp: Response) -> Response:
        resp.headers["Cache-Control"] = "no-cache"
        resp.headers["X-Accel-Buffering"] = "no"
        return resp

    @app.get("/api/runs/<run_id>/events")
    def api_events(run_id: str) -> Any:
        """The live stream for a thread-per-request server (the ASGI front serves it as a coroutine)."""
        stream = event_stream(run_id)

        def gen() -> Iterator[str]:
            try:
                while True:
                    messages, finished = stream.poll(time.monotonic())
                    yield from messages
                    if finished:
                        return
                    time.sleep(SSE_BATCH_S)
            finally:
                stream.close()

        return stream_headers(Response(stream_with_context(gen()), mimetype="text/event-stream"))

    def open_events(environ: dict[str, Any], run_id: str) -> tuple[Response, EventStream | None]:
        """For webapp.asgi: the same guards, 404 and headers as any request to the events URL, and the
        viewer's stream if it may watch (run in a worker thread: it reads the database)."""
        with app.request_context(environ):
            stream = None
            try:
                rv = app.preprocess_request()
                if rv is None:
                    stream = event_stream(run_id)
                    rv = stream_headers(Response(mimetype="text/event-stream"))
                resp = app.make_response(rv)
            except HTTPException as exc:
                resp = app.make_response(app.handle_user_exception(exc))
            return app.process_response(resp), stream

    app.extensions["fastlab_open_events"] = open_events

    # --- guided labs -------------------------------------------------------------------------------
    def lab_or_error(ref: str, step_id: str | None = None, *, api: bool = True) -> Any:
        """The lab (and checks the step): 404 if there is no such lab or step, 500 if the lab cannot load."""
        try:
            lab = guided.find_lab(ref, Path(app.config["LABS_DIR"]))
            if step_id is not None:
                guided.find_step(lab, step_id)
        except guided.LabNotFound as exc:
            abort(api_error(404, str(exc)) if api else 404)
        except LabError as exc:  # a broken lab folder: say what is wrong with it
            if api:
                abort(api_error(500, str(exc)))
            abort(500, description=str(exc))
        return lab

    def step_runs(lab_name: str, per_step: int = 5) -> dict[str, list[dict[str, Any]]]:
        """The latest runs of each step of a lab, newest first."""
        out: dict[str, list[dict[str, Any]]] = {}
        for row in db().execute("SELECT * FROM runs WHERE lab = ? ORDER BY COALESCE(created, started) DESC",
                                (lab_name,)):
            runs = out.setdefault(row["lab_step"], [])
            if len(runs) < per_step:
                runs.append(as_dict(row))
        return out

    @app.get("/labs")
    def labs_page() -> str:
        return render_template("labs.html", labs=guided.catalogue(Path(app.config["LABS_DIR"])))

    @app.get("/labs/<ref>")
    def lab_page(ref: str) -> str:
        lab = lab_or_error(ref, api=False)
        runs = step_runs(lab.name)
        latest = {step: done[0]["id"] for step, rows in runs.items()  # the newest finished run of each step
                  if (done := [r for r in rows if r["status"] == "done"])}
        web = handout.render(lab, latest)
        return render_template("lab.html", lab=guided.detail(lab), handout=web.html, labels=web.labels,
                               answers=web.answers, runs=runs, spec_yaml=guided.spec_yaml)

    @app.get("/api/labs")
    def api_labs() -> Any:
        return jsonify(guided.catalogue(Path(app.config["LABS_DIR"])))

    @app.get("/api/labs/<lab>")  # parameter names as in the OpenAPI document (test)
    def api_lab(lab: str) -> Any:
        return jsonify(guided.detail(lab_or_error(lab)))

    @app.post("/api/labs/<lab>/steps/<step>/run")
    def api_lab_run(lab: str, step: str) -> Any:
        found = lab_or_error(lab, step)
        try:
            options = guided.run_request(request.get_json() if request.content_length else {})
        except (BadRequest, RecursionError):
            return api_error(400, "body: not valid JSON (or nested too deeply)")
        except ValueError as exc:
            return api_error(400, str(exc))
        try:
            spec, _ = check_spec(to_plain(found.build_spec(step, options.short)))
        except (LabError, SpecError) as exc:
            return api_error(422, str(exc))
        return enqueue(spec, found.name, step, options.short)

    @app.get("/api/runs/<run_id>/checkpoints")
    def api_checkpoints(run_id: str) -> Any:
        row = run_row(run_id)
        if not row["lab"]:
            return api_error(404, f"run {run_id} is not a lab step run: it has no checkpoints")
        if row["status"] != "done":
            when = "when it has finished" if row["status"] in q.ACTIVE else "only on a run that finished (done)"
            return api_error(409, f"run is {row['status']}: checkpoints are evaluated {when}")
        lab = lab_or_error(row["lab"], row["lab_step"])
        try:
            result = guided.evaluate(lab, row["lab_step"], root / run_id, short=bool(row["lab_short"]))
        except Exception as exc:  # noqa: BLE001 - the lab author's checkpoint code: report, keep serving
            return api_error(500, f"{lab.name} step {row['lab_step']}: checkpoint code failed: "
                                  f"{exc.__class__.__name__}: {exc}")
        return jsonify({"run": run_id, "lab": lab.number, "lab_name": lab.name, "step": row["lab_step"],
                        "short": row["lab_short"], **result})

    # --- history and compare (webapp.compare) -----------------------------------------------------
    def forget(run_id: str) -> None:
        conn = db()
        conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        conn.commit()

    app.extensions["fastlab_history"] = compare.History(run_row, root, q.ACTIVE, forget)
    app.register_blueprint(compare.bp)

    # --- sweeps (webapp.sweeps): points queued as ordinary runs ------------------------------------
    def room() -> int:
        """Runs this client may still queue (the queue's and the per-client limit)."""
        conn = db()
        queued = conn.execute("SELECT COUNT(*) FROM runs WHERE status = 'queued'").fetchone()[0]
        mine = conn.execute("SELECT COUNT(*) FROM runs WHERE status = 'queued' AND client = ?",
                            (request.remote_addr or "unknown",)).fetchone()[0]
        return min(app.config["MAX_QUEUED"] - queued, app.config["MAX_QUEUED_PER_CLIENT"] - mine)

    app.extensions["fastlab_queue"] = sweeps.Queue(check_spec, enqueue, room, run_row, database)
    app.register_blueprint(sweeps.bp)

    app.jinja_env.globals["app_env"] = os.environ.get("FASTLAB_ENV", "")
    # fidelity_view escapes every text it puts in its HTML: safe to mark as Markup
    app.jinja_env.globals.update(
        fidelity_banner=lambda summary: Markup(fidelity_view.banner_html(fidelity_view.verdict_of(summary))),
        fidelity_details=lambda summary: Markup(fidelity_view.details_html(fidelity_view.verdict_of(summary))),
        fidelity_state=lambda summary: fidelity_view.state(fidelity_view.verdict_of(summary)))
    return app
