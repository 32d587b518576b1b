"""fastlab web app: Flask app factory.

The results browser of a lab machine and the place students start experiments: an experiment
form generated from the spec schema (validated by the engine's own `prepare`), a run queue with
one worker thread, live traces over Server-Sent Events, run history in SQLite (rebuilt from the
results folder and surviving restarts), result bundles, and a JSON API described by an OpenAPI 3
document at /api/openapi.json. The UI uses the same API.

Layout: this module only wires the app. Routes live in blueprints, one per concern: `runs` (pages,
catalogues, the runs API and bundles), `live` (the SSE stream, live parameter changes), `labs`, `compare`
(history and compare), `sweeps`, `figures` (publication figures), `reproduce` (the reproduction
scorecard), and `security` (the app-wide guards: loopback unless a token is given, DNS rebinding, Origin,
CSRF, JSON bodies, Content-Security-Policy). What they share, the history, the queue (the execution
service's: `fastlab.service`), the spec check and the labs' folder, is `webapp.services.Services`: run ids
are checked against a strict pattern and looked up in SQLite before any file is touched; specs go through
the spec schema and the engine's validation (which never uses a shell).

Guided labs (`webapp.guided` over `fastlab.labs.kit`): /labs lists the labs, /labs/<n> shows a handout
rendered for the web (`webapp.handout`: Run buttons where the CLI handout has commands, answer boxes,
expected values folded until the student has predicted) with its steps; running a step queues an
ordinary run that remembers its lab, step and form, and its checkpoints are evaluated on the finished
run directory and said in plain words (/api/runs/<id>/checkpoints); POST /api/runs/<id>/bundle adds
the student's answers to the bundle; /new?lab=..&spec=..&set=.. opens the form with one of a lab's specs.

A class (`webapp.classes` over `webapp.classdb`, DESIGN.md §2): with an instructor token the instructor
creates classes (a name, a join code) and sees each as a whole (/classes/<id>: runs, checkpoints, answers,
a plot of the class against the theory, who is stuck, CSV and bundle exports); students join with a
display name (/class), their runs and answers carry them, answers are saved on the server and kept in the
browser while it is offline.

Fidelity: a finished run's page opens with its fidelity verdict (`fastlab.results.fidelity_view`: a
warning box with the reasons when the emulation was not faithful, a short note otherwise) and the
runs list says it in one word; templates reach it through the globals `fidelity_banner`,
`fidelity_details` and `fidelity_state`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import subprocess
from pathlib import Path
from typing import Any

import jinja2
from flask import Flask
from flask.json.provider import DefaultJSONProvider
from markupsafe import Markup

from fastlab.base import paths
from fastlab.base.record import Part
from fastlab.labs.kit import LABS_DIR
from fastlab.results import chart_lines, fidelity_view, tables
from fastlab.results.tables import human_time
from fastlab.service import queue as q
from webapp import classdb, classes, compare, figures, guided, labs, live, reproduce, runs, security, sweeps, uploads
from webapp.services import Services

__all__ = ["create_app", "human_time"]

MAX_DURATION_S = 600.0
MAX_QUEUED = 40  # runs waiting at once: a class's worth; more is a runaway script, not a lesson
# Runs one client (address) may have waiting: a student's few tries, so that one runaway script
# or impatient double-clicker cannot take the class's queue. On a loopback server every user is
# 127.0.0.1, so there it is one user's limit; behind a reverse proxy the proxy is one client unless
# `python -m webapp --trusted-proxy ADDR` names it (then its X-Forwarded-For names the client).
MAX_QUEUED_PER_CLIENT = 10
# Runs one client may put in the history an hour (queued, then run or cancelled): a student's tries, one
# every 30 s, are far below it. Submit-then-cancel added 17.7 rows a second (63,700 an hour) from one
# client, and a row costs the history and every page that lists it (issue 47).
MAX_RUNS_PER_CLIENT_HOUR = 120
BLUEPRINTS = (security.bp, runs.bp, live.bp, labs.bp, compare.bp, sweeps.bp, classes.bp, reproduce.bp, figures.bp)


class RecordJSON(DefaultJSONProvider):
    """The API's JSON: a run's record (fastlab.base.record: a history row's summary and environment) as its
    file holds it."""

    @staticmethod
    def default(o: Any) -> Any:
        if isinstance(o, Part):
            return o.dump()
        return DefaultJSONProvider.default(o)


def create_app(results_root: Path | None = None, db_path: Path | None = None, *, host: str = "127.0.0.1",
               token: str | None = None, start_worker: bool = True, cleanup_on_start: bool | None = None,
               runner: q.Runner | None = None, max_duration_s: float = MAX_DURATION_S,
               labs_dir: Path | None = None, instructor_token: str | None = None,
               max_running: int = q.MAX_RUNNING, cluster: Any = None) -> Flask:
    """The web app.

    host: where it will be served; off loopback an access `token` is required (checked on every
    request, header X-Fastlab-Token or cookie fastlab_token; `?token=` once sets the cookie).
    start_worker: run queued experiments (False: the queue only fills, for tests and fuzzing).
    cleanup_on_start: remove leftovers of dead runs (`fastlab.run.ccload.cleanup`); default = start_worker.
    runner: the engine entry point (default `fastlab.experiment.engine.run_experiment`).
    labs_dir: the folder of the guided labs (default the repository's labs/; config LABS_DIR).
    max_running: runs going at once at most (each also within the machine's budget, fastlab.experiment.cost);
    1 runs them one at a time.
    cluster: a `fastlab.service.cluster.Cluster`: queued runs go to its Dask workers instead of this process.
    instructor_token: may cancel, delete and change every run (header X-Fastlab-Instructor or cookie
    fastlab_instructor); without it a run is its submitting address's alone.
    """
    guards = security.check_binding(host, token or None)
    if instructor_token is not None:
        security.check_binding(host, instructor_token)  # the same strength rules as the access token
    app = Flask(__name__)
    app.json = RecordJSON(app)
    app.jinja_env.filters["when"] = human_time
    app.jinja_env.filters["yaml"] = guided.spec_yaml  # specs read as on the form and in the CLI
    # fastlab's own templates too: tables.html, the summary tables report.html draws the same way
    app.jinja_loader = jinja2.ChoiceLoader([app.jinja_loader, jinja2.PackageLoader("fastlab", "templates")])
    app.jinja_env.globals["run_tables"] = tables.run_tables
    app.jinja_env.globals["jain_text"] = tables.jain_text
    app.jinja_env.globals["theory_kinds"] = chart_lines.kinds
    app.jinja_env.globals["has_drop_probability"] = chart_lines.has_drop_probability
    root = Path(results_root or paths.results_root())
    database = Path(db_path or root / "history.sqlite3")
    app.config.update(RESULTS_ROOT=root, DATABASE=database, MAX_CONTENT_LENGTH=256 * 1024,
                      CSRF_TOKEN=secrets.token_urlsafe(32), MAX_DURATION_S=max_duration_s,
                      MAX_QUEUED=MAX_QUEUED, MAX_QUEUED_PER_CLIENT=MAX_QUEUED_PER_CLIENT,
                      MAX_RUNS_PER_CLIENT_HOUR=MAX_RUNS_PER_CLIENT_HOUR,
                      LABS_DIR=Path(labs_dir or LABS_DIR), INSTRUCTOR_TOKEN=instructor_token or None, **guards)
    traces = uploads.TraceStore.under(root)  # a queued spec's uploaded trace -> its stored file, as it runs
    manager = q.RunManager(root, database, runner, max_running=max_running, cluster=cluster,
                           resolve=lambda spec: uploads.resolve(spec, traces))
    app.extensions["fastlab_runs"] = manager
    app.extensions["fastlab"] = Services(root, database, manager)
    app.extensions["fastlab_open_events"] = functools.partial(live.open_events, app)

    # --- startup: recover from a restart ------------------------------------------------------
    if cleanup_on_start if cleanup_on_start is not None else start_worker:
        from fastlab.run.ccload import cleanup
        try:
            app.config["CLEANED_AT_START"] = cleanup()
        except (OSError, subprocess.SubprocessError) as exc:  # e.g. not root: say so, keep serving
            app.config["CLEANED_AT_START"] = [f"cleanup failed: {exc}"]
    app.config["INTERRUPTED_AT_START"] = manager.recover()
    with contextlib.closing(q.connect(database)) as conn:  # a class's tables (webapp.classdb), added to older histories
        classdb.migrate(conn)
    if start_worker:
        manager.start()

    app.teardown_appcontext(Services.close)
    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)

    app.jinja_env.globals["app_env"] = os.environ.get("FASTLAB_ENV", "")
    app.jinja_env.globals["figure_choices"] = figures.choices
    # fidelity_view escapes every text it puts in its HTML: safe to mark as Markup
    app.jinja_env.globals.update(
        fidelity_banner=lambda summary: Markup(fidelity_view.banner_html(fidelity_view.verdict_of(summary))),
        fidelity_details=lambda summary: Markup(fidelity_view.details_html(fidelity_view.verdict_of(summary))),
        fidelity_state=lambda summary: fidelity_view.state(fidelity_view.verdict_of(summary)))
    return app

