"""A class on the web app (issue 50 items 1 and 2): the instructor creates a class (a name and a join code),
students join it with a display name, their runs and answers carry them, and the instructor's view shows
the class as a whole, live: per lab and step every student's runs (with their checkpoints) and answers,
the class's measured figure against the theory in one plot, who is stuck, and exports (CSV, bundle).

Who is who: the instructor is whoever carries the app's instructor token (webapp.services.instructor:
header X-Fastlab-Instructor or cookie fastlab_instructor; the sign-in form here sets the cookie from the
token typed once). Without an instructor token the app has no classes (its start says how to give one).
A student is the holder of the `fastlab_student` cookie set when they join (webapp.classdb: the
database keeps the secret's hash only); no password, as on a lab network a name is enough.

Storage is webapp.classdb's (the app's SQLite); answers typed offline are kept in the browser and sent
when it is back (static/answers.js), box by box, the later edit winning.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, abort, current_app, g, jsonify, redirect, render_template, request
from werkzeug.exceptions import BadRequest

from fastlab.base import record
from fastlab.base.record import Summary
from fastlab.labs.kit import LabError
from fastlab.results.tables import finite_number
from webapp import classdb, guided, handout
from webapp.apierror import api_error
from webapp.services import body_json, instructor, services
from webapp.theory import chart_references

bp = Blueprint("classes", __name__)

STUDENT_COOKIE = "fastlab_student"
INSTRUCTOR_COOKIE = "fastlab_instructor"
COOKIE_AGE_S = 180 * 24 * 3600  # a term
# Checkpoints evaluated per request of the instructor's view: each reads a run's traces (0.1-1 s); the
# rest are evaluated by the next poll (every few seconds), and each result is kept (classdb's cache).
EVALUATIONS_PER_REQUEST = 4
LIVE_POLL_S = 5  # the instructor's page asks for the class again this often
CSV_COLUMNS = ("student", "kind", "lab", "step", "item", "run", "form", "status", "quantity", "measured",
               "expected", "text", "time")


# --- who is asking -----------------------------------------------------------------------------------
def conn() -> Any:
    return services().db()


def current_student() -> classdb.Student | None:
    """The student of this request's cookie (once per request), or None."""
    if "student" not in g:
        g.student = classdb.student_of_cookie(conn(), request.cookies.get(STUDENT_COOKIE))
    return g.student


def classes_enabled() -> bool:
    return bool(current_app.config.get("INSTRUCTOR_TOKEN"))


def require_instructor(api: bool = True) -> None:
    """The request ends here (403, or the sign-in page) unless it carries the instructor's token."""
    if not classes_enabled():
        abort(api_error(404, "this server runs no classes: start it with an instructor token "
                             "(--instructor-token-file or FASTLAB_INSTRUCTOR_TOKEN)") if api else 404)
    if not instructor():
        abort(api_error(403, "the instructor's token is required (sign in on /classes)") if api
              else redirect("/classes"))


def body() -> dict[str, Any]:
    try:
        data = body_json()
    except (BadRequest, RecursionError):
        abort(api_error(400, "body: not valid JSON (or nested too deeply)"))
    if not isinstance(data, dict):
        abort(api_error(400, "body: must be a JSON object"))
    return data


@bp.app_context_processor
def inject() -> dict[str, Any]:
    """What every page's navigation shows: the signed-in student (their class) and whether classes exist."""
    def student() -> dict[str, str] | None:
        s = current_student()
        return s.as_dict() if s else None
    return {"class_student": student, "classes_enabled": classes_enabled, "run_students": run_student_names,
            "is_instructor": instructor}


def run_student_names(run_ids: list[str]) -> dict[str, str]:
    """Run id -> its student's name (the runs list, a run's page)."""
    return classdb.student_names(conn(), run_ids)


# --- the student's side --------------------------------------------------------------------------------
@bp.get("/class")
def class_page() -> str:
    """A student's class: join it (a code and a name), or see who they are in it, their runs and answers."""
    student = current_student()
    mine: list[dict[str, Any]] = []
    answered: list[dict[str, Any]] = []
    if student:
        mine = [r for r in classdb.class_runs(conn(), student.class_id) if r["student_id"] == student.id]
        answered = [a for a in classdb.class_answers(conn(), student.class_id) if a["student_id"] == student.id]
    return render_template("class.html", student=student, runs=mine, answered=answered, enabled=classes_enabled())


@bp.post("/api/class/join")
def api_join() -> Any:
    data = body()
    try:
        student, cookie = classdb.join(conn(), data.get("code"), data.get("name"))
    except classdb.ClassError as exc:
        return api_error(exc.status, str(exc))
    resp = jsonify(student.as_dict())
    resp.status_code = 201
    resp.set_cookie(STUDENT_COOKIE, cookie, max_age=COOKIE_AGE_S, httponly=True, samesite="Strict")
    return resp


@bp.post("/api/class/leave")
def api_leave() -> Any:
    """This browser forgets the student (their runs and answers stay with the class); it takes no body."""
    if request.content_length and body():
        return api_error(400, "body: leaving takes no fields")
    resp = jsonify({"left": current_student() is not None})
    resp.delete_cookie(STUDENT_COOKIE, samesite="Strict", httponly=True)
    return resp


@bp.get("/api/class/me")
def api_me() -> Any:
    student = current_student()
    return jsonify({"student": student.as_dict() if student else None})


def signed_in() -> classdb.Student:
    student = current_student()
    if student is None:
        abort(api_error(401, "join a class first (/class): answers are kept for a student of a class"))
    return student


@bp.get("/api/class/answers/<lab>")
def api_answers(lab: str) -> Any:
    student = signed_in()
    if not classdb.LAB_RE.match(lab):
        return api_error(404, f"no lab {lab!r}")
    return jsonify({"lab": lab, "items": classdb.answers(conn(), student.id, lab)})


@bp.post("/api/class/answers/<lab>")
def api_save_answers(lab: str) -> Any:
    """A browser's answer boxes for a lab ({"items": [{key, label, prompt, text, edited}]}), merged box by
    box into the stored ones (the later edit wins); answers every stored box of the lab."""
    student = signed_in()
    try:
        lab, items = classdb.check_items(lab, body().get("items"))
    except classdb.ClassError as exc:
        return api_error(exc.status if exc.status != 400 else 422, str(exc))
    return jsonify({"lab": lab, "items": classdb.save_answers(conn(), student, lab, items)})


# --- the instructor's side -------------------------------------------------------------------------------
@bp.get("/classes")
def classes_page() -> str:
    """The instructor's classes (and the form that creates one); a sign-in form without the token."""
    if not classes_enabled():
        return render_template("classes.html", enabled=False, signed_in=False, classes=[])
    if not instructor():
        return render_template("classes.html", enabled=True, signed_in=False, classes=[])
    return render_template("classes.html", enabled=True, signed_in=True, classes=classdb.classes(conn()))


@bp.post("/api/instructor/session")
def api_sign_in() -> Any:
    """The instructor's token typed once ({"token": ...}) becomes the fastlab_instructor cookie."""
    import hmac

    token = current_app.config.get("INSTRUCTOR_TOKEN")
    given = body().get("token")
    if not token:
        return api_error(404, "this server has no instructor token")
    if not isinstance(given, str) or not hmac.compare_digest(given.encode(), token.encode()):
        return api_error(403, "token: not the instructor's token")
    resp = jsonify({"instructor": True})
    resp.set_cookie(INSTRUCTOR_COOKIE, token, httponly=True, samesite="Strict")
    return resp


@bp.post("/api/classes")
def api_create_class() -> Any:
    require_instructor()
    data = body()
    try:
        row = classdb.create_class(conn(), data.get("name"), data.get("code"))
    except classdb.ClassError as exc:
        return api_error(exc.status if exc.status != 400 else 422, str(exc))
    resp = jsonify(row | {"url": f"/classes/{row['id']}"})
    resp.status_code = 201
    return resp


@bp.get("/api/classes")
def api_classes() -> Any:
    require_instructor()
    return jsonify(classdb.classes(conn()))


def the_class(class_id: str, api: bool = True) -> dict[str, Any]:
    require_instructor(api)
    row = classdb.class_row(conn(), class_id)
    if row is None:
        abort(api_error(404, f"no class {class_id!r}") if api else 404)
    return row


@bp.get("/classes/<class_id>")
def class_view_page(class_id: str) -> str:
    cls = the_class(class_id, api=False)
    return render_template("class_view.html", cls=cls, poll_s=LIVE_POLL_S)


@bp.get("/api/classes/<class_id>")
def api_class_view(class_id: str) -> Any:
    """The class as the instructor's page shows it (`class_view`), polled while the class works."""
    return jsonify(class_view(the_class(class_id)))


@bp.get("/api/classes/<class_id>/export.csv")
def api_export_csv(class_id: str) -> Any:
    cls = the_class(class_id)
    text = export_csv(class_view(cls, evaluate_all=True))
    return Response(text, mimetype="text/csv", headers={
        "Content-Disposition": f'attachment; filename="class-{cls["code"]}.csv"'})


@bp.get("/api/classes/<class_id>/bundle")
def api_export_bundle(class_id: str) -> Any:
    cls = the_class(class_id)
    view = class_view(cls, evaluate_all=True)
    data = class_bundle(view, services().root)
    return Response(data, mimetype="application/zip", headers={
        "Content-Disposition": f'attachment; filename="class-{cls["code"]}.zip"'})


# --- the class as a whole ----------------------------------------------------------------------------------
def _json(text: Any) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _summary(text: Any) -> Summary | None:
    """A history row's summary as the run record (None for none, or one that cannot be read)."""
    try:
        return record.read_summary(text) if text else None
    except ValueError:  # RecordError
        return None


class _Labs:
    """The labs the class's runs and answers name, loaded once per view: title, step order and labels,
    answer boxes (a lab that no longer loads keeps its folder name)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._seen: dict[str, Any] = {}

    def get(self, name: str) -> Any:
        if name not in self._seen:
            try:
                lab = guided.find_lab(name, self.root)
                web = handout.render(lab)
                self._seen[name] = (lab, web)
            except (LabError, OSError):
                self._seen[name] = None
        return self._seen[name]


def _checkpoints(run: dict[str, Any], labs: _Labs, cache: dict[str, Any], budget: list[int]) -> dict[str, Any] | None:
    """A finished lab step run's checkpoint results (cached once evaluated); None while not evaluated yet."""
    if run["id"] in cache:
        return cache[run["id"]]
    loaded = labs.get(run["lab"])
    if loaded is None or run["status"] != "done" or budget[0] <= 0:
        return None
    budget[0] -= 1
    lab = loaded[0]
    try:
        result = guided.evaluate(lab, run["lab_step"], services().root / run["id"], short=bool(run["lab_short"]))
    except Exception as exc:  # noqa: BLE001 - the lab author's checkpoint code: report it as the run's result
        result = {"status": "fail", "passed": False, "checks": [], "skipped": [],
                  "error": f"checkpoint code failed: {exc.__class__.__name__}: {exc}"}
    classdb.cache_checkpoints(conn(), run["id"], result)
    cache[run["id"]] = result
    return result


def _plot_points(run: dict[str, Any], spec: Any, summary: Summary | None) -> list[dict[str, Any]]:
    """The run's measured bottleneck backlog against the theory's (FAST: the sum of the alphas), one point
    per bottleneck FAST flows share, for a run whose parameters did not change while it ran."""
    if summary is None or not isinstance(spec, dict) or spec.get("cc_changes"):
        return []
    out, seen = [], set()
    for ref in chart_references(spec, summary):
        link, theory = ref.get("bottleneck"), ref.get("fast_queue_pkts")
        figures = summary.link(link) if isinstance(link, str) else None
        measured = finite_number(figures.mean_backlog_pkts) if figures is not None else None
        if link in seen or not theory or measured is None:
            continue
        seen.add(link)
        out.append({"student": run["student"], "run": run["id"], "lab": run["lab"], "step": run["lab_step"],
                    "link": link, "theory": float(theory), "measured": float(measured)})
    return out


def _why_stuck(run: dict[str, Any], checkpoints: dict[str, Any] | None) -> str | None:
    if run["status"] in ("failed", "interrupted"):
        return f"the run {run['status']}" + (f": {run['error']}" if run.get("error") else "")
    if checkpoints is None:
        return None
    if checkpoints.get("status") == "fail":
        failed = [c["name"] for c in checkpoints.get("checks", []) if c.get("status") == "fail"]
        return f"checkpoints failed: {', '.join(failed) or checkpoints.get('error', '?')}"
    if checkpoints.get("status") == "inconclusive":
        return "inconclusive: the run was not faithful (" + str(checkpoints.get("inconclusive") or "")[:200] + ")"
    return None


def class_view(cls: dict[str, Any], evaluate_all: bool = False) -> dict[str, Any]:
    """The class as a whole: students; per lab and step each student's runs (status, form, checkpoint
    results) and per lab each answer box's answers; the plot's points (measured against the theory); who
    is stuck (their latest run of a step failed, or its checkpoints failed or were inconclusive)."""
    db = conn()
    students = classdb.students(db, cls["id"])
    runs = classdb.class_runs(db, cls["id"])
    answers = classdb.class_answers(db, cls["id"])
    labs = _Labs(services().labs_dir)
    cache = classdb.cached_checkpoints(db, [r["id"] for r in runs if r["lab"]])
    budget = [10**9 if evaluate_all else EVALUATIONS_PER_REQUEST]
    by_lab: dict[str, dict[str, Any]] = {}
    points: list[dict[str, Any]] = []
    stuck: dict[tuple[str, str, str], dict[str, Any]] = {}
    slim_runs = []
    for run in runs:
        spec, summary = _json(run["spec"]), _summary(run["summary"])
        if run["status"] == "done":
            points += _plot_points(run, spec, summary)
        checkpoints = _checkpoints(run, labs, cache, budget) if run["lab"] else None
        slim = {"id": run["id"], "name": run["name"], "student": run["student"], "student_id": run["student_id"],
                "status": run["status"], "error": run["error"], "created": run["created"], "lab": run["lab"],
                "step": run["lab_step"], "short": bool(run["lab_short"]) if run["lab"] else None,
                "checkpoints": _checkpoint_digest(checkpoints), "pending": run["lab"] is not None
                and run["status"] == "done" and checkpoints is None}
        slim_runs.append(slim)
        if not run["lab"]:
            continue
        lab = by_lab.setdefault(run["lab"], {"steps": {}, "answers": {}})
        cell = lab["steps"].setdefault(run["lab_step"], {}).setdefault(run["student_id"], [])
        cell.append(slim)
        key = (run["student_id"], run["lab"], run["lab_step"])
        if len(cell) == 1:  # the newest run of this student's step says whether they are stuck
            why = _why_stuck(run, checkpoints)
            if why:
                stuck[key] = {"student": run["student"], "student_id": run["student_id"], "lab": run["lab"],
                              "step": run["lab_step"], "run": run["id"], "why": why}
    for a in answers:
        lab = by_lab.setdefault(a["lab"], {"steps": {}, "answers": {}})
        box = lab["answers"].setdefault(a["key"], {"label": a["label"], "prompt": a["prompt"], "by": {}})
        box["by"][a["student_id"]] = {"student": a["student"], "text": a["text"], "updated": a["updated"]}
    return {"class": cls, "students": students, "runs": slim_runs, "labs": _lab_sections(by_lab, labs),
            "plot": points, "stuck": list(stuck.values()), "answers": answers, "poll_s": LIVE_POLL_S,
            "evaluating": sum(1 for r in slim_runs if r["pending"])}


def _checkpoint_digest(result: dict[str, Any] | None) -> dict[str, Any] | None:
    if result is None:
        return None
    return {"status": result.get("status"), "error": result.get("error"),
            "checks": [{k: c.get(k) for k in ("name", "status", "measured", "measured_text", "expected", "result")}
                       for c in result.get("checks", [])]}


def _lab_sections(by_lab: dict[str, dict[str, Any]], labs: _Labs) -> list[dict[str, Any]]:
    """Per lab (in the labs' order): its steps in the lab's order with their handout numbers, each with
    the students' runs; its answer boxes in the handout's order with the students' answers."""
    out = []
    for name in sorted(by_lab):
        data, loaded = by_lab[name], labs.get(name)
        order = [s.id for s in loaded[0].steps] if loaded else []
        labels = loaded[1].labels if loaded else {}
        boxes = [b["key"] for b in loaded[1].answers] if loaded else []
        steps = sorted(data["steps"], key=lambda s: (order.index(s) if s in order else len(order), s))
        keys = sorted(data["answers"], key=lambda k: (boxes.index(k) if k in boxes else len(boxes), k))
        out.append({"lab": name, "title": loaded[0].title if loaded else name,
                    "number": loaded[0].number if loaded else None,
                    "steps": [{"id": s, "label": labels.get(s, s), "by": data["steps"][s]} for s in steps],
                    "answers": [{"key": k, **data["answers"][k]} for k in keys]})
    return out


# --- exports --------------------------------------------------------------------------------------------------
def csv_rows(view: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """One row per run, per checkpoint of a run, and per answer: what a grader sorts and filters."""
    for run in view["runs"]:
        base = {"student": run["student"], "lab": run["lab"] or "", "step": run["step"] or "", "run": run["id"],
                "form": "" if run["short"] is None else "short" if run["short"] else "default",
                "time": run["created"] or ""}
        cps = run["checkpoints"] or {}
        yield base | {"kind": "run", "status": run["status"] if not cps else f"{run['status']}, checkpoints "
                      f"{cps.get('status')}", "text": run["error"] or ""}
        for c in cps.get("checks", []):
            yield base | {"kind": "checkpoint", "item": c["name"], "status": c["status"],
                          "measured": "" if c["measured"] is None else c["measured"], "expected": c["expected"],
                          "quantity": c["result"]}
    for a in view["answers"]:
        yield {"student": a["student"], "kind": "answer", "lab": a["lab"], "item": a["key"], "quantity": a["label"],
               "text": a["text"], "time": a["updated"]}


def export_csv(view: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_COLUMNS, restval="", lineterminator="\n")
    writer.writeheader()
    for row in csv_rows(view):
        # a cell a spreadsheet would run as a formula starts with a quote (CSV injection)
        writer.writerow({k: ("'" + v if isinstance(v, str) and v[:1] in "=+-@\t\r" else v) for k, v in row.items()})
    return out.getvalue()


def answers_markdown(view: dict[str, Any], student_id: str) -> str:
    name = next((s["name"] for s in view["students"] if s["id"] == student_id), student_id)
    lines = [f"# {name}: answers in {view['class']['name']}", ""]
    for a in view["answers"]:
        if a["student_id"] == student_id:
            lines += [f"## {a['lab']}: {a['label']}", "", *(f"> {line}" for line in a["prompt"].split("\n")), "",
                      a["text"].strip(), "", f"_saved {a['updated']}_", ""]
    return "\n".join(lines)


def class_bundle(view: dict[str, Any], root: Path) -> bytes:
    """The class as a zip with a SHA-256 manifest (`fastlab bundle verify` checks it): class.csv (the CSV
    export), class.json (the view), answers/<student>.md, and each finished run's spec, summary and
    checkpoint results under runs/<run>/ (the traces stay in each run's own bundle: a class's would
    weigh gigabytes)."""
    from fastlab.base.rundir import RunFolder
    from fastlab.results.bundle import MANIFEST

    top = f"class-{view['class']['code']}"
    files: dict[str, bytes] = {"class.csv": export_csv(view).encode(),
                               "class.json": json.dumps(view, indent=1, default=str).encode()}
    for s in view["students"]:
        files[f"answers/{s['id']}.md"] = answers_markdown(view, s["id"]).encode()
    for run in view["runs"]:
        for name, data in RunFolder(root / run["id"]).record_files().items():
            files[f"runs/{run['id']}/{name}"] = data
        if run["checkpoints"]:
            files[f"runs/{run['id']}/checkpoints.json"] = json.dumps(run["checkpoints"], indent=1).encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for rel, data in files.items():
            zf.writestr(f"{top}/{rel}", data)
        zf.writestr(f"{top}/{MANIFEST}", "".join(f"{hashlib.sha256(d).hexdigest()}  {r}\n" for r, d in files.items()))
    return buffer.getvalue()

