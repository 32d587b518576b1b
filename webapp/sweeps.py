"""Sweeps in the browser (issue 14 item 3, issue 32 item 6): one parameter over a few values, repeated.

`POST /api/sweeps` takes the form's spec, a parameter (picked from `POST /api/sweeps/parameters`: the
spec's own, in words with units; or any field path, as for `--set`), its values and the repetitions.
The request is a fastlab.sweep.points file (the spec with a `sweep:` section): fastlab.sweep.points plans its points
and seeds as `fastlab sweep run` does; every point's spec is checked exactly as a run's before any is
queued, then each point is queued as a run of the web queue (its live page, its history row) and the
sweep is recorded in the history's database (table `sweeps`, with its definition). `/sweeps/<id>`
follows the points and draws the aggregate: per value the mean of a result with its min..max spread,
and what the theory predicts for that value (fastlab.theory.fast: the bottleneck's capacity, FAST's
equilibrium queue and RTT; the response function's goodput under random loss).
`GET /api/sweeps/<id>/bundle` writes the finished points as fastlab.sweep.points's folder and bundles it, so
`fastlab bundle verify` and `fastlab bundle replay --point` treat it as a CLI sweep's.

The pure parts (`SweepRequest`, `point_specs`, `sweepable`, `aggregate`) are unit-tested; the routes
reach the queue through `webapp.services`.
"""

from __future__ import annotations

import copy
import io
import json
import math
import re
import secrets
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from flask import Blueprint, abort, jsonify, render_template, send_file
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError
from werkzeug.exceptions import BadRequest

from fastlab.base.record import FlowFigures, LinkFigures, Summary, headline, shown_unit, unit_of
from fastlab.base.rundir import PARTIAL, RunFolder
from fastlab.define.schema import SpecError, format_validation_error, parse_spec
from fastlab.results import bundle
from fastlab.service import store as q
from fastlab.sweep.points import finish_point, plan_sweep, prepare_directory, scaling_lines, write_aggregates
from fastlab.sweep.spread import spread
from fastlab.theory import explain
from fastlab.theory import fast as fast_theory
from webapp.apierror import api_error
from webapp.services import RUN_ID_RE, Services, body_json, services

bp = Blueprint("sweeps", __name__)

SWEEP_ID_RE = re.compile(r"^[0-9]{8}-[0-9]{6}-[A-Za-z0-9][A-Za-z0-9_.-]{0,64}-s[0-9a-f]{6}$")
PARAM_RE = r"^[A-Za-z_][A-Za-z0-9_]*(\.([A-Za-z_][A-Za-z0-9_-]*|[0-9]+)){0,7}$"
MAX_POINTS = 10  # runs of one sweep: one client's queue allowance (webapp.MAX_QUEUED_PER_CLIENT)
# What the aggregate plot can show: key -> (label, unit), each a headline figure's (`results`)
METRICS = {"utilization": ("bottleneck utilization", shown_unit(unit_of(LinkFigures, "utilization") or "")),
           "throughput": ("total goodput", unit_of(FlowFigures, "throughput_mbps")),
           "backlog": ("mean bottleneck backlog", unit_of(LinkFigures, "mean_backlog_pkts")),
           "rtt": ("f1 mean RTT", unit_of(FlowFigures, "mean_rtt_ms")),
           "retransmits": ("retransmits, all flows", unit_of(FlowFigures, "retransmits"))}


class SweepError(ValueError):
    """A bad sweep request: one line naming the field (422)."""


class SweepRequest(BaseModel):
    """Body of POST /api/sweeps."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    spec: dict[str, Any] = Field(description="the experiment (as POST /api/runs takes it)")
    param: StrictStr = Field(pattern=PARAM_RE, max_length=200,
                             description="the swept field, as for --set: flows.0.cc_args.alpha")
    values: list[Any] = Field(min_length=2, max_length=MAX_POINTS,
                              description="the values it takes, in order: numbers, or words such as cubic")
    repeat: StrictInt = Field(1, ge=1, le=5, description="runs per value (repetition r runs with seed + r)")
    scale_flows: dict[str, Any] | None = Field(
        None, description="the swept parameter is a capacity (Mb/s) and a flows row's count scales with it: "
                          "{flow, reference_flows, reference_capacity_mbps} (fastlab.sweep.scaling.FlowScaling)")


# A sweep's default plot fits its parameter: FAST's alpha moves the queue (the link stays full), a loss
# rate the goodput (against the response function's), a capacity the goodput, an RTT the RTT.
DEFAULT_METRIC = (("cc_args.alpha", "backlog"), ("loss.rate", "throughput"), ("rate_mbps", "throughput"),
                  ("capacity", "throughput"), ("rtt_ms", "rtt"), ("delay_ms", "rtt"))
SYMBOLS = {"alpha": "α", "gamma": "γ"}


def default_metric(param: str) -> str:
    return next((metric for tail, metric in DEFAULT_METRIC if param.endswith(tail)), "utilization")


def _topology_args(name: Any) -> dict[str, Any]:
    """The topology's argument schema properties (title, description, type), {} for an unknown one."""
    from fastlab.define.topology import known, load_module

    if not isinstance(name, str) or name not in known():
        return {}
    return load_module(name).Args.model_json_schema().get("properties", {})


def sweepable(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The parameters a sweep of `spec` can vary, each {path, label, unit, symbol}: every flow's numeric
    algorithm parameters (fastlab.define.ccset's table: its units), its number of flows, each shaped link's
    random loss rate, the topology's numeric arguments and the duration. The form offers them as a list;
    the sweep's axis is labelled with them."""
    from fastlab.plan.ccbuild import planned_registry

    registry = planned_registry("bpf")
    out: list[dict[str, Any]] = []
    flows = spec.get("flows") if isinstance(spec.get("flows"), list) else []
    for i, flow in enumerate(flows):
        if not isinstance(flow, dict):
            continue
        who = f"flow {i + 1} ({flow.get('src', '?')} → {flow.get('dst', '?')})"
        cc = flow.get("cc", "cubic")
        try:
            params = registry.lookup(cc).params if isinstance(cc, str) else ()
        except Exception:  # noqa: BLE001 - an algorithm this machine does not know offers no parameters
            params = ()
        for param in params:
            if param.kind in (int, float):
                out.append({"path": f"flows.{i}.cc_args.{param.name}", "label": f"{who}: {cc} {param.name}",
                            "unit": param.unit, "symbol": SYMBOLS.get(param.name, param.name)})
        out.append({"path": f"flows.{i}.count", "label": f"{who}: number of parallel flows", "unit": "flows",
                    "symbol": "flows"})
    from fastlab.define.topology import TopologyError, build_plan

    try:
        shaped = sorted(build_plan(spec.get("topology"), spec.get("topology_args") or {}).shaped)
    except (TopologyError, ValueError, TypeError, KeyError):
        shaped = []
    for link in shaped:
        out.append({"path": f"links.{link}.loss.rate", "label": f"{link}: random loss rate", "unit": "fraction",
                    "symbol": "p"})
    for name, prop in _topology_args(spec.get("topology")).items():
        if prop.get("type") in ("number", "integer") or any(o.get("type") in ("number", "integer")
                                                           for o in prop.get("anyOf", [])):
            unit = name.rsplit("_", 1)[-1] if "_" in name else ""
            unit = {"mbps": "Mb/s", "ms": "ms", "s": "s", "bdp": "BDP", "pkts": "packets"}.get(unit, "")
            out.append({"path": f"topology_args.{name}", "label": f"topology: {prop.get('title') or name}",
                        "unit": unit, "symbol": name})
    out.append({"path": "duration_s", "label": "duration", "unit": "s", "symbol": "duration"})
    return out


def param_label(spec: dict[str, Any] | None, param: str) -> dict[str, Any]:
    """The swept parameter in words (sweepable's entry), or the path itself for one not on the list."""
    found = next((p for p in sweepable(spec or {}) if p["path"] == param), None)
    return found or {"path": param, "label": param, "unit": "", "symbol": param}


def queue() -> Services:
    return services()


@contextmanager
def connect(database: Path) -> Iterator[sqlite3.Connection]:
    """The history's database with the sweeps table; committed and closed at the end of the block."""
    conn = q.connect(database)
    try:
        conn.execute("""CREATE TABLE IF NOT EXISTS sweeps (id TEXT PRIMARY KEY, name TEXT, param TEXT,
                        "values" TEXT, repeat INTEGER, runs TEXT, created TEXT, document TEXT)""")
        if "document" not in {row["name"] for row in conn.execute("PRAGMA table_info(sweeps)")}:
            conn.execute("ALTER TABLE sweeps ADD COLUMN document TEXT")  # a history from before bundles
        yield conn
        conn.commit()
    finally:
        conn.close()


# --- pure parts -------------------------------------------------------------------------------------

def parse_request(data: Any) -> SweepRequest:
    if not isinstance(data, dict):
        raise SweepError('body: must be a JSON object {"spec": {...}, "param": "...", "values": [...], "repeat": 1}')
    try:
        req = SweepRequest.model_validate(data)
    except ValidationError as err:
        raise SweepError(format_validation_error(err)) from None
    if len(req.values) * req.repeat > MAX_POINTS:
        raise SweepError(f"values: {len(req.values)} values x {req.repeat} repetitions is more than "
                         f"{MAX_POINTS} runs")
    for i, v in enumerate(req.values):
        if isinstance(v, bool) or not isinstance(v, int | float | str):
            raise SweepError(f"values[{i}]: must be a number or a word, not {type(v).__name__}")
        if isinstance(v, float) and not math.isfinite(v):
            raise SweepError(f"values[{i}]: must be a finite number, not {v}")
        if isinstance(v, str) and not 0 < len(v) <= 100:
            raise SweepError(f"values[{i}]: a word of 1 to 100 characters")
    if len({json.dumps(v) for v in req.values}) != len(req.values):
        raise SweepError("values: a value is given twice")
    return req


def sweep_document(req: SweepRequest) -> dict[str, Any]:
    """The request as a fastlab.sweep.points file: the form's spec with a `sweep:` section (one parameter)."""
    section: dict[str, Any] = {"params": {req.param: list(req.values)}, "repeat": req.repeat}
    if req.scale_flows is not None:  # the form's one parameter is the capacity it scales with
        section["scale_flows"] = {**copy.deepcopy(req.scale_flows), "capacity": req.param}
    return {**copy.deepcopy(req.spec), "sweep": section}


def point_specs(req: SweepRequest) -> list[tuple[int, int, dict[str, Any]]]:
    """(value index, repetition, spec) per point, as fastlab.sweep.points plans them (the one engine: the CLI's
    points, seeds and folder): repetition r runs with the seed + r (the swept value + r when `seed` is
    the parameter); each run is named after its point. SpecError naming the field for a path or value
    that does not fit."""
    try:
        plan = plan_sweep(sweep_document(req))
    except SpecError as exc:  # the scaling's own errors name their field (sweep.scale_flows...)
        raise SpecError(str(exc) if str(exc).startswith("sweep.scale_flows") else f"param: {exc}") from None
    name = str(req.spec.get("name") or "sweep")[:40]
    out = []
    for point in plan.points:
        try:
            data = plan.point_document(point)
        except SpecError as exc:
            raise SpecError(f"param: {exc}") from None
        data["name"] = f"{name}-{point.id}"
        out.append((point.combo, point.rep, data))
    return out


def results(summary: Summary) -> dict[str, float | int | None]:
    """A finished run's numbers for the aggregate plot, from its headline figures (fastlab.base.record.headline):
    the bottleneck's (the busiest link's) utilization, shown in %, and mean backlog, the total goodput, the
    first flow's mean RTT and all flows' retransmits (None where the record lacks one)."""
    line = headline(summary)
    link, flows = line.busiest_link(), line.subjects("flow")

    def pick(kind: Literal["flow", "link"], subject: str | None, name: str) -> float | int | None:
        value = next((f.shown().value for f in line.of(kind, subject) if f.name == name), None) if subject else None
        return value if isinstance(value, int | float) else None

    def total(name: str) -> float | int | None:
        value = line.run(name).value
        return value if flows and isinstance(value, int | float) else None

    return {"utilization": pick("link", link, "utilization"), "throughput": total("throughput_mbps"),
            "backlog": pick("link", link, "mean_backlog_pkts"), "rtt": pick("flow", flows[0] if flows else None,
                                                                           "mean_rtt_ms"),
            "retransmits": total("retransmits")}


def theory(spec: dict[str, Any]) -> dict[str, float | None]:
    """What the theory says for a point (fastlab.theory.fast): the capacity bounds the goodput; when
    every flow is FAST, the queue holds the sum of the alphas and the first flow's RTT is d + Σα/C."""
    try:
        refs = fast_theory.references(parse_spec(spec))
    except (SpecError, ValueError, KeyError, TypeError, RuntimeError):
        return dict.fromkeys(METRICS)
    first = refs[0] if refs else {}
    fast = first.get("fast_queue_pkts") is not None
    capacity = first.get("capacity_mbps")
    lines = explain.response_lines(refs, None, spec.get("links"))
    if not fast and lines and all(r.get("mathis_window_pkts") and r.get("base_rtt_ms") for r in lines):
        # random loss: each flow's response-function window 1.22/√p per base RTT, capped by the capacity
        mss_bits = 1448 * 8
        mathis = sum(r["mathis_window_pkts"] * mss_bits / (r["base_rtt_ms"] / 1000) / 1e6 for r in lines)
        capacity = min(capacity, mathis) if capacity else mathis
    return {"utilization": 100.0 if fast else None, "throughput": capacity,
            "backlog": first.get("fast_queue_pkts"), "rtt": first.get("fast_rtt_ms") if fast else None,
            "retransmits": None}


def aggregate(values: list[Any], points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per value: runs finished (done) and faithful, per metric mean, min, max over the finished runs, the
    theory's value, and over the faithful runs alone the median and the 95 % interval of the mean
    (fastlab.sweep.spread). `points`: {"value_index", "status", "summary", "theory"} per run."""
    rows = []
    for i, value in enumerate(values):
        mine = [p for p in points if p["value_index"] == i]
        done = [results(p["summary"]) for p in mine if p["status"] == "done" and p.get("summary")]
        row: dict[str, Any] = {"value": value, "runs": len(mine), "done": len(done), "metrics": {}}
        faithful = [results(p["summary"]) for p in mine
                    if p["status"] == "done" and p.get("summary") and p["summary"].faithful is True]
        row["faithful"] = len(faithful)
        for key in METRICS:
            got = [d[key] for d in done if d[key] is not None]
            over = spread([d[key] for d in faithful if d[key] is not None])  # the faithful runs' alone
            row["metrics"][key] = {"mean": sum(got) / len(got) if got else None, "min": min(got, default=None),
                                   "max": max(got, default=None),
                                   "theory": next((p["theory"][key] for p in mine), None),
                                   "median": over.median, "ci_low": over.ci_low, "ci_high": over.ci_high}
        rows.append(row)
    return rows


# --- routes ---------------------------------------------------------------------------------------

@bp.post("/api/sweeps")
def api_submit_sweep() -> Any:
    try:
        req = parse_request(body_json())
    except (BadRequest, RecursionError):
        return api_error(400, "body: not valid JSON (or nested too deeply)")
    except SweepError as exc:
        return api_error(422, str(exc))
    try:
        points = point_specs(req)
    except SpecError as exc:
        return api_error(422, str(exc))
    return queue_points(req.spec, req.param, req.values, req.repeat, sweep_document(req), points)


def queue_points(spec: dict[str, Any], param: str, values: list[Any], repeat: int, document: dict[str, Any],
                 points: list[tuple[int, int, dict[str, Any]]]) -> Any:
    """Check every point's spec as a run's, then queue them all as runs of the web queue and record the
    sweep (201 with its state and page), or refuse in one line before anything is queued (422, 429)."""
    qu = queue()
    try:
        checked = []
        for i, r, data in points:
            try:
                checked.append((i, r, qu.check(data)[0]))
            except SpecError as exc:
                raise SpecError(f"{param}={values[i]!r}: {exc}" if param else str(exc)) from None
    except SpecError as exc:
        return api_error(422, str(exc))
    if qu.room() < len(checked):
        return api_error(429, f"the sweep needs {len(checked)} places in the queue and {max(qu.room(), 0)} are "
                              "free for you: wait for runs to finish or cancel some")
    runs = []
    for i, r, point_spec in checked:
        resp = qu.enqueue(point_spec)
        if resp.status_code != 201:
            return resp  # the queue filled meanwhile: the points queued so far stay queued as runs
        runs.append([i, r, resp.get_json()["id"]])
    name = str(spec.get("name") or "sweep")[:40]
    sweep_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{name}-s{secrets.token_hex(3)}"
    with connect(qu.database) as conn:
        conn.execute('INSERT INTO sweeps (id, name, param, "values", repeat, runs, created, document) '
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (sweep_id, name, param, json.dumps(values), repeat, json.dumps(runs), q.now(),
                      json.dumps(document)))
    resp = jsonify(sweep_state(sweep_id) | {"url": f"/sweeps/{sweep_id}"})
    resp.status_code = 201
    return resp


def submit_repeats(data: dict[str, Any]) -> Any:
    """POST /api/runs of a spec with `repeat: N` > 1: its N runs (repetition r with seed + r) queued as a
    sweep without a parameter (param "", one value), as `fastlab run --repeat N` runs them; its page gives
    each figure's median and 95 % interval over the faithful runs."""
    repeat = data["repeat"]
    if repeat > MAX_POINTS:
        return api_error(422, f"repeat: at most {MAX_POINTS} runs in the web app (one client's queue "
                              "allowance); more with fastlab run --repeat")
    document = {**copy.deepcopy(data), "sweep": {}}
    try:
        plan = plan_sweep(document)
    except SpecError as exc:
        return api_error(422, str(exc))
    name = str(data.get("name") or "sweep")[:40]
    points = []
    for point in plan.points:
        point_doc = plan.point_document(point)
        point_doc["name"] = f"{name}-{point.id}"
        points.append((point.combo, point.rep, point_doc))
    return queue_points(data, "", [None], repeat, plan.document, points)


def sweep_state(sweep_id: str) -> dict[str, Any]:
    """A sweep with its points' statuses and the aggregate; 404 for anything the history does not know."""
    if not SWEEP_ID_RE.match(sweep_id) or ".." in sweep_id:
        abort(api_error(404, f"no sweep {sweep_id[:80]!r}"))
    qu = queue()
    with connect(qu.database) as conn:
        row = conn.execute("SELECT * FROM sweeps WHERE id = ?", (sweep_id,)).fetchone()
    if row is None:
        abort(api_error(404, f"no sweep {sweep_id[:80]!r}"))
    values = json.loads(row["values"])
    points = []
    for i, r, run_id in json.loads(row["runs"]):
        try:
            run = qu.run_row(run_id)
        except Exception:  # noqa: BLE001 - a point's run was deleted from the history: show it as gone
            run = {"status": "deleted", "summary": None, "spec": None}
        points.append({"value_index": i, "value": values[i], "repetition": r + 1, "run": run_id,
                       "status": run["status"], "summary": run.get("summary"), "spec": run.get("spec"),
                       "theory": theory(run["spec"]) if run.get("spec") else dict.fromkeys(METRICS)})
    finished = sum(p["status"] not in q.ACTIVE for p in points)
    first_spec = next((p["spec"] for p in points if p.get("spec")), None)
    try:  # a capacity sweep with scaled flows says what each point carries (fastlab.sweep.points.scaling_lines)
        scaling = scaling_lines(plan_sweep(json.loads(row["document"]))) if row["document"] else []
    except (SpecError, ValueError, TypeError):
        scaling = []
    label = param_label(first_spec, row["param"]) if row["param"] else {
        "path": "", "label": "repetitions", "unit": "", "symbol": "run"}
    return {"id": sweep_id, "name": row["name"], "param": row["param"], "param_label": label,
            "default_metric": default_metric(row["param"]), "values": values, "repeat": row["repeat"],
            "created": row["created"], "total": len(points), "finished": finished, "scaling": scaling,
            "done": sum(p["status"] == "done" for p in points),
            "points": [{k: v for k, v in p.items() if k not in ("summary", "theory", "spec")} for p in points],
            "metrics": {k: {"label": label, "unit": unit} for k, (label, unit) in METRICS.items()},
            "aggregate": aggregate(values, points)}


@bp.post("/api/sweeps/parameters")
def api_sweep_parameters() -> Any:
    """The parameters a sweep of the posted spec can vary, with labels and units (the form's list)."""
    try:
        data = body_json()
    except (BadRequest, RecursionError):
        return api_error(400, "body: not valid JSON (or nested too deeply)")
    spec = data.get("spec") if isinstance(data, dict) else None
    if not isinstance(spec, dict):
        return api_error(422, 'send {"spec": {...}}: the experiment as the form has it')
    return jsonify(sweepable(spec))


@bp.get("/sweeps")
def sweeps_page() -> Any:
    """Every sweep of the history, newest first."""
    with connect(queue().database) as conn:
        rows = [dict(r) | {"values": json.loads(r["values"])} for r in conn.execute(
            'SELECT id, name, param, "values", repeat, runs, created FROM sweeps ORDER BY created DESC LIMIT 200')]
    for row in rows:
        row["runs"] = len(json.loads(row["runs"]))
    return render_template("sweeps.html", sweeps=rows)


def sweep_folder(sweep_id: str, directory: Path) -> Path:
    """The sweep as fastlab.sweep.points's folder (sweep.yaml, sweep.json, points/<id>/ with point.json, the
    aggregates and sweep.html) in `directory`, from its finished runs: what `fastlab sweep run` would have
    written, so `fastlab bundle verify` and `fastlab bundle replay --point` take its bundle as theirs."""
    qu = queue()
    with connect(qu.database) as conn:
        row = conn.execute("SELECT * FROM sweeps WHERE id = ?", (sweep_id,)).fetchone()
    if row is None or not row["document"]:
        abort(api_error(404, f"no sweep {sweep_id[:80]!r} with a definition to bundle (made before bundles)"))
    plan = plan_sweep(json.loads(row["document"]))
    folder = directory / f"{plan.name}-{plan.digest[:8]}"
    state = prepare_directory(plan, folder)
    by_point = {(i, r): run_id for i, r, run_id in json.loads(row["runs"])}
    for point in plan.points:
        run_dir = qu.root / by_point.get((point.combo, point.rep), "-")
        if RUN_ID_RE.match(run_dir.name) and RunFolder(run_dir).is_run():
            shutil.copytree(run_dir, folder / "points" / point.id, ignore=shutil.ignore_patterns(PARTIAL))
            env = RunFolder(run_dir).environment(missing_ok=True)
            finish_point(folder, state, point, env.run.host or "web", 0.0)
    write_aggregates(plan, folder)
    return folder


@bp.get("/api/sweeps/<sweep_id>/bundle")
def api_sweep_bundle(sweep_id: str) -> Any:
    """The sweep's bundle: its fastlab.sweep.points folder (every finished point) as a zip with its manifest."""
    sweep_state(sweep_id)  # 404 for an unknown id, before anything is written
    with tempfile.TemporaryDirectory(prefix="fastlab-sweep-") as tmp:
        folder = sweep_folder(sweep_id, Path(tmp))
        data = bundle.export(folder, Path(tmp) / "sweep.zip").read_bytes()
    return send_file(io.BytesIO(data), mimetype="application/zip", as_attachment=True,
                     download_name=f"{sweep_id}.zip")


@bp.get("/api/sweeps/<sweep_id>")
def api_sweep(sweep_id: str) -> Any:
    return jsonify(sweep_state(sweep_id))


@bp.get("/api/sweeps")
def api_sweeps() -> Any:
    with connect(queue().database) as conn:
        rows = conn.execute('SELECT id, name, param, "values", repeat, created FROM sweeps ORDER BY created DESC '
                            "LIMIT 50").fetchall()
    return jsonify([dict(r) | {"values": json.loads(r["values"]), "url": f"/sweeps/{r['id']}"} for r in rows])


@bp.get("/sweeps/<sweep_id>")
def sweep_page(sweep_id: str) -> Any:
    if not SWEEP_ID_RE.match(sweep_id):
        abort(404)
    state = sweep_state(sweep_id)
    return render_template("sweep.html", sweep=state)


@bp.app_context_processor
def recent_sweeps() -> dict[str, Any]:
    def recent(limit: int = 5) -> list[dict[str, Any]]:
        with connect(queue().database) as conn:
            return [dict(r) for r in conn.execute("SELECT id, name, param, created FROM sweeps "
                                                  "ORDER BY created DESC LIMIT ?", (limit,))]
    return {"recent_sweeps": recent}
