"""Runs: the pages (history, the new-run form, a run's page and report, the doctor), the catalogues
the form is generated from (topologies, algorithms, the spec schema, presets), and the runs API
(validate, submit, cancel, bundles). What it looks up or queues goes through `webapp.services`.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    jsonify,
    redirect,
    render_template,
    request,
    send_file,
)
from werkzeug.exceptions import BadRequest

from fastlab.base import paths
from fastlab.base.documents import DocumentError, read_json
from fastlab.base.record import Summary
from fastlab.base.rundir import REPORT, RunFolder
from fastlab.define import linktrace
from fastlab.define.schema import ExperimentSpec, SpecError, parse_spec, read_spec_text, to_plain
from fastlab.labs.kit import LabError
from fastlab.results import chart_data, chart_lines, fidelity_view, tables
from fastlab.theory import explain, segments
from webapp import cli_text, guided, handout, uploads
from webapp.apierror import api_error
from webapp.openapi import document
from webapp.security import REPORT_CSP
from webapp.services import HOME_ROWS, MAX_PER_PAGE, PER_PAGE, body_json, client, services
from webapp.sweeps import submit_repeats
from webapp.theory import change_marks, chart_references, run_changes

bp = Blueprint("runs", __name__)
MAX_ARGS_CHARS = 10_000  # ?args= of GET /api/topologies/<name>: a topology's few arguments as JSON


def presets() -> list[dict[str, Any]]:
    example = to_plain(read_spec_text((paths.examples_dir() / "simple-cubic.yaml").read_text()))
    fast = {"name": "fast-alpha30-loss1", "description": "FAST, alpha 30, 1% random loss on the dumbbell bottleneck",
            "topology": "dumbbell", "topology_args": {"rate_mbps": 20, "rtt_ms": 40, "buffer_bdp": 1.0},
            "duration_s": 20, "seed": 1, "flows": [{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 30}}],
            "links": {"bottleneck": {"loss": {"model": "bernoulli", "rate": 0.01}}}}
    return [{"id": "example", "label": "example: simple-cubic.yaml", "spec": example},
            {"id": "fast-alpha30-loss1", "label": "FAST alpha 30 + 1% loss on the dumbbell", "spec": fast}]


def notes_of(spec: Any, summary: Summary | None) -> list[str]:
    """A finished run's "what happened": the engine's note in its record; for a run made before the engine
    wrote it, and for an AQM run (whose notes now say what the model of its loop predicts:
    fastlab.theory.red), the same computation here."""
    if summary is None:
        return []
    if summary.what_happened is not None and not chart_lines.has_drop_probability(spec):
        return summary.what_happened
    try:
        return explain.what_happened(parse_spec(spec), summary)
    except SpecError:
        return []


# --- pages ------------------------------------------------------------------------------------------
def paging(per_page: int) -> tuple[int, int]:
    """The request's ?page= (from 1) and ?per_page= (default `per_page`, at most MAX_PER_PAGE): whole numbers
    of at most 6 digits, or the request ends with 400 in one line."""
    out = []
    for name, default, top in (("page", 1, 999_999), ("per_page", per_page, MAX_PER_PAGE)):
        raw = request.args.get(name)
        if raw is None:
            out.append(default)
            continue
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 6 and 1 <= int(raw) <= top):
            abort(api_error(400, f"{name}: a whole number from 1 to {top:,}"))
        out.append(int(raw))
    return out[0], out[1]


@bp.get("/")
def index() -> str:
    """The landing page: what fastlab is, the labs first, a new experiment second, recent runs third (a
    page of them: ?page=2 ... for older ones)."""
    sv = services()
    page, per_page = paging(HOME_ROWS)
    runs, total = sv.runs_page(page, per_page)
    return render_template("index.html", runs=runs, labs=guided.catalogue(sv.labs_dir),
                           queue=sv.manager.queue_state(), page=page, per_page=per_page, total=total)


@bp.get("/new")
def new() -> str:
    """The new-run form; ?lab=<lab>&spec=<spec in its folder>&set=... fills it with that spec and
    overrides (the handout's `fastlab run labs/...` commands link here)."""
    prefill, prefill_error = None, None
    if request.args.get("lab"):
        try:
            lab = guided.find_lab(request.args["lab"], services().labs_dir)
            prefill = to_plain(guided.lab_spec(lab, request.args.get("spec", ""), request.args.getlist("set")))
        except LabError as exc:
            prefill_error = str(exc)
    return render_template("new.html", prefill=prefill, prefill_error=prefill_error)


@bp.get("/runs/<run_id>")
def run_page(run_id: str) -> str:
    sv = services()
    run = sv.run_row(run_id)
    changes = run_changes(run)
    refs = chart_references(run.get("spec"), run.get("summary"), changes, sv.root / run_id)
    notes = notes_of(run.get("spec"), run.get("summary"))
    step_label = None  # a lab step run: the step's number in the handout, as on the lab page
    if run.get("lab"):
        with contextlib.suppress(LabError, OSError):  # the lab is gone or broken: the step's id alone
            step_label = handout.render(guided.find_lab(run["lab"], sv.labs_dir)).labels.get(run["lab_step"])
    round_trip = round_trip_of(sv.root / run_id, run.get("summary"))
    return render_template("run.html", run=run | {"summary": with_parts(run, sv.root / run_id)}, refs=refs,
                           lines=chart_lines.lines(refs), notes=notes,
                           step_label=step_label, marks=change_marks(run.get("spec"), changes),
                           round_trip=round_trip, round_trip_json=chart_data.script_json(round_trip),
                           traces=uploads.describe(run.get("spec"), sv.traces),
                           on_cluster=sv.manager.cluster is not None)  # no live changes reach a worker's engine


def round_trip_of(folder: Path, summary: Summary | None) -> dict[str, Any]:
    """A finished run's "where the round trip went" (its flows' delay accounting in flows.csv), {} before the
    run has one (running, or made before the accounting)."""
    if summary is None or all(f.delay_accounting is None for f in summary.flows):
        return {}
    try:
        return chart_data.round_trip(RunFolder(folder).flows(), summary)
    except (OSError, ValueError):
        return {}


def with_parts(run: dict[str, Any], run_dir: Path) -> Summary | None:
    """A finished run's summary with the parts of its link schedule (fastlab.theory.segments.schedule_parts:
    one row per capacity step, "Parts of the run") where the summary has none; as it is otherwise."""
    summary: Summary | None = run.get("summary")
    if summary is None or summary.segments or run.get("status") != "done":
        return summary
    try:
        spec = parse_spec(run.get("spec"))
        if not any(link.schedule for link in spec.links.values()):
            return summary
        folder = RunFolder(run_dir)
        parts = segments.schedule_parts(spec, folder.flows(), folder.links())
    except (SpecError, OSError, ValueError, KeyError, TypeError, RuntimeError):
        return summary
    return summary.model_copy(update={"segments": parts}) if parts else summary


@bp.get("/api/runs/<run_id>/references")
def api_references(run_id: str) -> Any:
    """The theory's lines and the change markers of a run's charts as they stand now: the live page
    asks again after each change of a running run's parameters."""
    sv = services()
    run = sv.run_row(run_id)
    changes = run_changes(run)
    refs = chart_references(run.get("spec"), run.get("summary"), changes, sv.root / run_id)
    return jsonify({"refs": refs, "lines": chart_lines.lines(refs), "changes": change_marks(run.get("spec"), changes)})


@bp.get("/runs/<run_id>/report")
def report(run_id: str) -> Any:
    sv = services()
    sv.run_row(run_id)  # 404 for anything the history does not know: no path from the URL
    try:
        path = RunFolder(sv.folder(run_id)).path(REPORT)
    except FileNotFoundError:
        abort(404)
    resp = send_file(path, mimetype="text/html")
    resp.headers["Content-Security-Policy"] = REPORT_CSP
    return resp


PLOTLY_VERSION_RE = re.compile(r"^[0-9][0-9A-Za-z.+-]{0,39}$")


@bp.get("/runs/<run_id>/plotly-<version>.min.js")
@bp.get("/runs/plotly-<version>.min.js")
def report_plotly(version: str, run_id: str | None = None) -> Any:
    """The plotly.js a report (/runs/<id>/report) loads beside itself or one folder up, as it would on disk
    (fastlab.results.report.PLOTLY_PLACES): the run folder's copy, the results folder's, or the installed one
    when it is that version; 404 otherwise (the report then tries its next place)."""
    from fastlab.results import report as run_report

    if not PLOTLY_VERSION_RE.match(version):
        abort(404)
    name = f"plotly-{version}.min.js"
    sv = services()
    places = [sv.root / name]
    if run_id is not None:
        sv.run_row(run_id)  # 404 for anything the history does not know: no path from the URL
        places.insert(0, sv.folder(run_id) / name)
    if name == run_report.PLOTLY_FILE:
        places.append(run_report.PLOTLY_SOURCE)
    found = next((p for p in places if p.is_file() and not p.is_symlink()), None)
    if found is None:
        abort(404)
    return send_file(found, mimetype="application/javascript", max_age=86400)


@bp.get("/favicon.ico")
def favicon() -> Any:
    return redirect("/static/favicon.svg", code=301)


@bp.get("/static/base.css")
def base_css() -> Any:
    """The palette, type scale and tables: one source (fastlab/templates/base.css) for this app and report.html."""
    return Response(tables.asset("base.css"), mimetype="text/css", headers={"Cache-Control": "max-age=3600"})


@bp.get("/static/charts.js")
def charts_js() -> Any:
    """A run's charts: one source (fastlab/templates/charts.js) for the live page and report.html."""
    return Response(tables.asset("charts.js"), mimetype="text/javascript", headers={"Cache-Control": "max-age=3600"})


@bp.get("/static/fidelity.css")
def fidelity_css() -> Any:
    """The fidelity banner's styles: one source (fastlab.results.fidelity_view.CSS) for this app and report.html."""
    return Response(fidelity_view.CSS, mimetype="text/css", headers={"Cache-Control": "max-age=3600"})


@bp.get("/static/plotly.min.js")
def plotly_js() -> Any:
    import plotly
    return send_file(Path(plotly.__file__).parent / "package_data" / "plotly.min.js",
                     mimetype="application/javascript", max_age=86400)


@bp.get("/doctor")
def doctor() -> str:
    c = services().caps()
    return render_template("doctor.html", caps=c, backends=c.backends())


# --- API: catalogues ----------------------------------------------------------------------------------
def topologies() -> list[dict[str, Any]]:
    from fastlab.define.topology import build_plan, catalogue, load_module

    rows = []
    for row in catalogue():
        module = load_module(row["name"])
        plan = build_plan(row["name"], {})
        rows.append({**row, "args_schema": module.Args.model_json_schema(),
                     "takes_scale": "scale" in module.Args.model_fields,
                     "hosts": sorted(plan.host_names()), "shaped_links": sorted(plan.shaped)})
    return rows


def ccs() -> list[dict[str, Any]]:
    from fastlab.plan.ccbuild import planned_registry

    impl = services().caps().cc_impl_choice("auto")[0]
    registry = planned_registry(impl if impl != "unavailable" else "bpf")
    out = []
    for name in sorted(registry.usable()):
        cc = registry.lookup(name)
        out.append({"name": name, "origin": cc.origin, "description": cc.description,
                    "params": [{"name": p.name, "kind": p.kind.__name__, "minimum": p.minimum,
                                "maximum": p.maximum, "default": p.default, "unit": p.unit, "help": p.help,
                                "pattern": p.pattern} for p in cc.params]})
    return out


@bp.get("/api/openapi.json")
def openapi() -> Any:
    return jsonify(document())


@bp.get("/api/topologies")
def api_topologies() -> Any:
    return jsonify(topologies())


@bp.get("/api/topologies/<name>")
def api_topology(name: str) -> Any:
    from fastlab.define.topology import TopologyError, build_plan, known

    if name not in known():
        return api_error(404, f"unknown topology {name[:64]!r}")
    try:  # a query string is a document like a body: the bounded reader (990 nested brackets were a 500)
        args = read_json(request.args.get("args") or "{}", max_chars=MAX_ARGS_CHARS)
    except DocumentError as exc:
        return api_error(400, f"args: {exc}")
    try:
        if not isinstance(args, dict):
            raise TopologyError("topology_args: must be a mapping")
        plan = build_plan(name, args)
    except (ValueError, TopologyError) as exc:
        return api_error(422, str(exc))
    return jsonify({"name": name, "hosts": sorted(plan.host_names()), "shaped_links": sorted(plan.shaped)})


@bp.get("/api/ccs")
def api_ccs() -> Any:
    return jsonify(ccs())


@bp.get("/api/schema")
def api_schema() -> Any:
    return jsonify({"spec_schema": ExperimentSpec.model_json_schema(), "topologies": topologies(),
                    "ccs": ccs(), "presets": presets(),
                    "limits": {"max_duration_s": current_app.config["MAX_DURATION_S"],
                               "trace_max_bytes": linktrace.MAX_FILE_BYTES}})


# --- API: runs -----------------------------------------------------------------------------------------
@bp.get("/api/runs")
def api_runs() -> Any:
    """A page of the history, newest first (?page=, ?per_page=): the total in X-Total-Count, the next page
    (when there is one) in a Link header."""
    page, per_page = paging(PER_PAGE)
    runs, total = services().runs_page(page, per_page)
    resp = jsonify(runs)
    resp.headers["X-Total-Count"] = str(total)
    if page * per_page < total:
        resp.headers["Link"] = f'</api/runs?page={page + 1}&per_page={per_page}>; rel="next"'
    return resp


@bp.get("/api/queue")
def api_queue() -> Any:
    """The queue's admission now (fastlab.service.queue.RunManager.queue_state): what the home page shows."""
    return jsonify(services().manager.queue_state())


@bp.get("/api/runs/<run_id>")
def api_run(run_id: str) -> Any:
    return jsonify(services().run_row(run_id))


@bp.post("/api/validate")
def api_validate() -> Any:
    try:
        spec, prepared = services().check(body_json())
    except SpecError as exc:
        return api_error(422, str(exc))
    from fastlab.service.admission import carry_warning

    warning = carry_warning(prepared)  # what the machine can carry: said before the run, not after
    return jsonify({"ok": True, "spec": to_plain(spec), "warning": warning,
                    "links": {k: {"backend": b[0], "why": b[1]} for k, b in prepared.backends.items()},
                    "flows": [f.id for f in prepared.flows],
                    "yaml": cli_text.spec_yaml(spec), "command": cli_text.run_command(spec)})


@bp.post("/api/traces")
def api_trace_upload() -> Any:
    """An uploaded mahimahi trace (the body: the file's bytes; ?field=links.X[.reverse].trace names the
    field its errors name, ?name= the file's name, for messages only): checked by fastlab.define.linktrace and
    stored under the server's own name (webapp.uploads); 201 with the reference a spec's trace carries,
    422 with one line (nothing stored) for a bad file. The body's bound is webapp.security's RAW_BODIES."""
    field = request.args.get("field", "")
    if not uploads.FIELD_RE.fullmatch(field):
        return api_error(400, "field: name the trace's field, links.<link>.trace or links.<link>.reverse.trace")
    try:
        stored = services().traces.put(request.get_data(cache=False), request.args.get("name", ""), field, client())
    except uploads.UploadError as exc:
        return api_error(exc.status, str(exc))
    resp = jsonify(stored.as_json())
    resp.status_code = 201
    return resp


@bp.post("/api/runs")
def api_submit() -> Any:
    sv = services()
    data = body_json()
    repeat = data.get("repeat") if isinstance(data, dict) else None
    if isinstance(repeat, int) and not isinstance(repeat, bool) and repeat > 1:
        return submit_repeats(data)  # N runs: a sweep of repetitions (its page gives the interval)
    try:
        spec, _ = sv.check(data)
    except SpecError as exc:
        return api_error(422, str(exc))
    return sv.enqueue(spec)


@bp.post("/api/runs/<run_id>/cancel")
def api_cancel(run_id: str) -> Any:
    sv = services()
    row = sv.run_row(run_id)
    if not sv.may_act_on(row):
        return api_error(403, sv.not_yours(row, "cancel it"))
    if row["status"] not in ("queued", "running"):
        return api_error(409, f"run is {row['status']}, not queued or running")
    status = sv.manager.cancel(run_id)
    if status not in ("cancelled", "cancelling"):
        return api_error(409, f"run is {status}: it cannot be cancelled")
    return jsonify(sv.run_row(run_id) | {"status": status})


def send_bundle(run_id: str, extra: dict[str, bytes] | None = None) -> Any:
    from fastlab.results import bundle

    sv = services()
    row = sv.run_row(run_id)
    run_dir = sv.folder(run_id)
    if row["status"] in sv.active or not run_dir.is_dir():
        return api_error(409, f"run is {row['status']}: no bundle yet")
    # The zip is sent from an open file whose folder is already gone: nothing stays in /tmp whether
    # or not the response is ever closed (a client that drops the download, a test client that never
    # reads it, a server killed mid-send). Removing it on close left a folder per download behind.
    tmpdir = Path(tempfile.mkdtemp(prefix="fastlab-bundle-"))
    try:
        zip_path = bundle.export(run_dir, tmpdir / f"{run_id}.zip", extra)
        stream = zip_path.open("rb")
    except bundle.BundleError as exc:  # e.g. a failed run without summary.json
        return api_error(409, f"run is {row['status']}: {exc}")
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return send_file(stream, mimetype="application/zip", as_attachment=True,
                     download_name=f"{run_id}{'-with-answers' if extra else ''}.zip")


@bp.get("/api/runs/<run_id>/bundle")
def api_bundle(run_id: str) -> Any:
    return send_bundle(run_id)


@bp.post("/api/runs/<run_id>/bundle")
def api_bundle_with_answers(run_id: str) -> Any:
    """The bundle with the student's answers (kept in their browser) as answers.md, in the manifest."""
    services().run_row(run_id)
    try:
        body = guided.bundle_request(body_json())
    except (BadRequest, RecursionError):
        return api_error(400, "body: not valid JSON (or nested too deeply)")
    except ValueError as exc:
        return api_error(400, str(exc))
    return send_bundle(run_id, {"answers.md": body.answers.encode()})
