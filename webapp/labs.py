"""Guided labs in the browser (over `webapp.guided` and `fastlab.labs.kit`): /labs lists the labs,
/labs/<n> shows a handout rendered for the web (`webapp.handout`: Run buttons where the CLI handout
has commands, answer boxes, expected values folded until predicted) with its steps and their latest
runs; running a step queues an ordinary run that remembers its lab, step and form, and its checkpoints
are evaluated on the finished run directory and said in plain words (/api/runs/<id>/checkpoints). The
handout's model calculator (lab 10's step 1) computes through POST /api/theory/red.
"""

from __future__ import annotations

import math
from typing import Any

from flask import Blueprint, get_template_attribute, jsonify, render_template
from werkzeug.exceptions import BadRequest

from fastlab.define.schema import SpecError, to_plain
from fastlab.labs.kit import LabError
from webapp import guided, handout
from webapp.apierror import api_error
from webapp.services import body_json, services

bp = Blueprint("labs", __name__)


@bp.get("/labs")
def labs_page() -> str:
    return render_template("labs.html", labs=guided.catalogue(services().labs_dir))


@bp.get("/labs/<ref>")
def lab_page(ref: str) -> str:
    sv = services()
    lab = sv.lab_or_error(ref, api=False)
    runs = sv.step_runs(lab.name)
    latest = {step: done[0]["id"] for step, rows in runs.items()  # the newest finished run of each step
              if (done := [r for r in rows if r["status"] == "done"])}
    detail = guided.detail(lab)
    steps = {s["id"]: s for s in detail["steps"]}
    make_panel = get_template_attribute("lab_step.html", "panel")

    def panel(step: str, number: str | None) -> str:
        return str(make_panel(steps[step], number, runs.get(step, []), guided.spec_yaml))

    web = handout.render(lab, latest, panel)
    others = [s for s in detail["steps"] if s["id"] not in web.placed]
    return render_template("lab.html", lab=detail, handout=web.html, labels=web.labels, answers=web.answers,
                           runs=runs, spec_yaml=guided.spec_yaml, others=others)


@bp.get("/api/labs")
def api_labs() -> Any:
    return jsonify(guided.catalogue(services().labs_dir))


@bp.get("/api/labs/<lab>")  # parameter names as in the OpenAPI document (test)
def api_lab(lab: str) -> Any:
    return jsonify(guided.detail(services().lab_or_error(lab)))


@bp.post("/api/labs/<lab>/steps/<step>/run")
def api_lab_run(lab: str, step: str) -> Any:
    sv = services()
    found = sv.lab_or_error(lab, step)
    try:
        options = guided.run_request(body_json(empty={}))
    except (BadRequest, RecursionError):
        return api_error(400, "body: not valid JSON (or nested too deeply)")
    except ValueError as exc:
        return api_error(400, str(exc))
    try:
        spec, _ = sv.check(to_plain(found.build_spec(step, options.short)))
    except (LabError, SpecError) as exc:
        return api_error(422, str(exc))
    return sv.enqueue(spec, found.name, step, options.short)


MAX_CALC_POINTS = 10


@bp.post("/api/theory/red")
def api_red_model() -> Any:
    """Lab 10's model (fastlab.theory.red) for the handout's calculator: {"flows": [32, 16, 4, 1],
    "capacity_mbps": 100, "mtu": 1500, "rtt_ms": 100, "min_th": 42, "max_th": 417, "max_p": 0.01,
    "wq": 0.0024} -> one row of figures per number of flows; 422 with one line naming the field."""
    from fastlab.theory import red
    from fastlab.theory.fast import packet_bits

    data = body_json()
    if not isinstance(data, dict):
        return api_error(400, "body: a JSON object with flows, capacity_mbps, mtu, rtt_ms, min_th, max_th, max_p, wq")
    flows = data.get("flows")
    if not isinstance(flows, list) or not 1 <= len(flows) <= MAX_CALC_POINTS:
        return api_error(422, f"flows: a list of 1 to {MAX_CALC_POINTS} numbers of flows")
    number = {}
    for key in ("capacity_mbps", "mtu", "rtt_ms", "min_th", "max_th", "max_p", "wq"):
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
            return api_error(422, f"{key}: a positive number, not {value!r}"[:200])
        number[key] = float(value)
    if not 64 <= number["mtu"] <= 9000:
        return api_error(422, f"mtu: 64 to 9000 bytes, not {number['mtu']:g}")
    rows = []
    try:
        model = red.Red(number["min_th"], number["max_th"], number["max_p"], number["wq"])
        capacity_pps = number["capacity_mbps"] * 1e6 / packet_bits(int(number["mtu"]))
        for n in flows:
            rows.append(red.figures(red.Point(n, capacity_pps, number["rtt_ms"] / 1e3, model)))
    except ValueError as exc:
        return api_error(422, str(exc))
    return jsonify({"capacity_pps": capacity_pps, "rows": rows})


@bp.get("/api/runs/<run_id>/checkpoints")
def api_checkpoints(run_id: str) -> Any:
    sv = services()
    row = sv.run_row(run_id)
    if not row["lab"]:
        return api_error(404, f"run {run_id} is not a lab step run: it has no checkpoints")
    if row["status"] != "done":
        when = "when it has finished" if row["status"] in sv.active else "only on a run that finished (done)"
        return api_error(409, f"run is {row['status']}: checkpoints are evaluated {when}")
    lab = sv.lab_or_error(row["lab"], row["lab_step"])
    try:
        result = guided.evaluate(lab, row["lab_step"], sv.folder(run_id), short=bool(row["lab_short"]))
    except Exception as exc:  # noqa: BLE001 - the lab author's checkpoint code: report, keep serving
        return api_error(500, f"{lab.name} step {row['lab_step']}: checkpoint code failed: "
                              f"{exc.__class__.__name__}: {exc}")
    return jsonify({"run": run_id, "lab": lab.number, "lab_name": lab.name, "step": row["lab_step"],
                    "short": row["lab_short"], **result})
