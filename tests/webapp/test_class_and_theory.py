"""Issue 50's server parts without a browser: a class's store and routes against hostile input (names,
codes, answer boxes, cookies, who may see what), the answers' merge (the later edit wins, an offline
edit is not overwritten by an older copy), the CSV export's cells a spreadsheet would run; and the theory
the charts draw: a trace link's mean rate as its capacity, RED's thresholds and q* with the loop's verdict in
"What happened", the parts of a capacity schedule, goodput from a recording's bytes_acked."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

import pytest

from fastlab.base.rundir import RunFolder
from fastlab.define.schema import parse_spec
from fastlab.labs.kit import LABS_DIR
from fastlab.results import chart_data, chart_lines
from fastlab.theory import explain, segments
from tests.webapp.conftest import good_spec
from webapp import classdb, classes, create_app

TOKEN = "instructor-token-of-the-tests"
LAB10 = LABS_DIR / "10-red-scaling" / "recorded" / "full"


@pytest.fixture
def app(tmp_path: Path) -> Any:
    return create_app(results_root=tmp_path / "results", start_worker=False, cleanup_on_start=False,
                      instructor_token=TOKEN)


def headers(app: Any) -> dict[str, str]:
    return {"X-CSRF-Token": app.config["CSRF_TOKEN"]}


def instructor(app: Any) -> Any:
    client = app.test_client()
    assert client.post("/api/instructor/session", json={"token": TOKEN}, headers=headers(app)).status_code == 200
    return client


def test_a_class_refuses_what_it_cannot_take(app: Any) -> None:
    teacher = instructor(app)
    made = teacher.post("/api/classes", json={"name": "  Networks   A  ", "code": "NET-A"}, headers=headers(app))
    assert made.status_code == 201 and made.get_json()["name"] == "Networks A"  # spaces as one
    cid = made.get_json()["id"]
    for body, status in (({"name": "again", "code": "net-a"}, 409), ({"name": "", "code": "X1234"}, 422),
                         ({"name": "x" * 81}, 422), ({"name": "ok", "code": "a b"}, 422),
                         ({"name": "ok", "code": "../../x"}, 422), ({"name": 5}, 422), ({"name": ["a"]}, 422)):
        resp = teacher.post("/api/classes", json=body, headers=headers(app))
        assert resp.status_code == status, (body, resp.get_json())
        assert "\n" not in resp.get_json()["error"]
    # a wrong token signs nobody in; without the token nothing of the instructor's answers
    stranger = app.test_client()
    assert stranger.post("/api/instructor/session", json={"token": "nope"}, headers=headers(app)).status_code == 403
    for url in ("/api/classes", f"/api/classes/{cid}", f"/api/classes/{cid}/export.csv", f"/api/classes/{cid}/bundle"):
        assert stranger.get(url).status_code == 403, url
    assert stranger.post("/api/classes", json={"name": "mine"}, headers=headers(app)).status_code == 403
    assert teacher.get("/api/classes/c0000000000").status_code == 404
    assert teacher.get("/api/classes/../../etc").status_code == 404

    student = app.test_client()
    for body, status in (({"code": "nope0", "name": "Ada"}, 404), ({"code": "NET-A", "name": ""}, 400),
                         ({"code": "NET-A", "name": "A\u0000da"}, 400), ({"code": "NET-A", "name": "x" * 41}, 400),
                         ({"code": 1234, "name": "Ada"}, 400), ({"code": "NET-A"}, 400), ([1], 400)):
        assert student.post("/api/class/join", json=body, headers=headers(app)).status_code == status, body
    joined = student.post("/api/class/join", json={"code": "net-a", "name": "Ada"}, headers=headers(app))
    assert joined.status_code == 201
    assert app.test_client().post("/api/class/join", json={"code": "NET-A", "name": "ada"},
                                  headers=headers(app)).status_code == 409  # names are one per class, case-blind
    # a forged or altered cookie is nobody
    me = student.get("/api/class/me").get_json()["student"]
    forged = app.test_client()
    forged.set_cookie(classes.STUDENT_COOKIE, f"{me['id']}.not-the-secret")
    assert forged.get("/api/class/me").get_json()["student"] is None
    assert forged.post("/api/class/answers/02-fast-equilibrium", json={"items": []},
                       headers=headers(app)).status_code == 401


def test_answers_merge_box_by_box_the_later_edit_winning(app: Any) -> None:
    teacher = instructor(app)
    cid = teacher.post("/api/classes", json={"name": "A", "code": "MERGE"}, headers=headers(app)).get_json()["id"]
    student = app.test_client()
    student.post("/api/class/join", json={"code": "MERGE", "name": "Grace"}, headers=headers(app))
    url = "/api/class/answers/02-fast-equilibrium"

    def box(key: str, text: str, edited: float) -> dict[str, Any]:
        return {"key": key, "label": f"box {key}", "prompt": "why?", "text": text, "edited": edited}

    items = student.post(url, json={"items": [box("q-1", "first", 1000), box("q-2", "=SUM(A1)", 1000)]},
                         headers=headers(app)).get_json()["items"]
    assert [i["text"] for i in items] == ["first", "=SUM(A1)"]
    # an older copy (another browser that was offline) does not overwrite the later edit; a newer one does
    student.post(url, json={"items": [box("q-1", "stale", 500)]}, headers=headers(app))
    items = student.post(url, json={"items": [box("q-2", "newer", 2000)]}, headers=headers(app)).get_json()["items"]
    assert [i["text"] for i in items] == ["first", "newer"]
    for bad in ({"items": [box("Q 1", "x", 1)]}, {"items": [box("q-1", "x", math.inf)]},
                {"items": [box("q-1", "x" * 20_001, 1)]}, {"items": [box("q-1", "x", 1), box("q-1", "y", 2)]},
                {"items": [box("q-1", "x", True)]}, {"items": [box("q-1", "x", -1)]}, {"items": "all"},
                {"items": [box("q-1", "x", 1) | {"extra": 1}]}, {"items": [box("q-1", 5, 1)]},
                {"items": [box(f"q-{n}", "x", 1) for n in range(101)]}):
        resp = student.post(url, json=bad, headers=headers(app))
        # 422 naming the box's field; infinity is not JSON at all (400, the app's strict reader)
        assert resp.status_code in ((400, 422) if "inf" in str(bad) else (422,)), (str(bad)[:80], resp.get_json())
    assert student.post("/api/class/answers/..%2F..%2Fetc", json={"items": []}, headers=headers(app)).status_code \
        in (404, 422)
    # a far-future clock is taken as the server's now: a browser cannot pin its answer against later edits
    student.post(url, json={"items": [box("q-3", "from the future", 1e14)]}, headers=headers(app))
    stored = {i["key"]: i for i in student.get(url).get_json()["items"]}
    assert stored["q-3"]["edited"] < 1e14

    # the export: a cell that would run as a formula in a spreadsheet starts with a quote
    student.post(url, json={"items": [box("q-2", "=HYPERLINK(\"http://x\")", 3000)]}, headers=headers(app))
    rows = list(csv.DictReader(io.StringIO(teacher.get(f"/api/classes/{cid}/export.csv").get_data(as_text=True))))
    texts = {r["item"]: r["text"] for r in rows if r["kind"] == "answer"}
    assert texts["q-2"].startswith("'=HYPERLINK") and texts["q-1"] == "first"


def test_runs_carry_their_student(app: Any) -> None:
    teacher = instructor(app)
    cid = teacher.post("/api/classes", json={"name": "A", "code": "RUNS1"}, headers=headers(app)).get_json()["id"]
    student = app.test_client()
    student.post("/api/class/join", json={"code": "RUNS1", "name": "Edsger"}, headers=headers(app))
    mine = student.post("/api/runs", json=good_spec(), headers=headers(app)).get_json()["id"]
    anyone = app.test_client().post("/api/runs", json=good_spec(), headers=headers(app)).get_json()["id"]
    view = teacher.get(f"/api/classes/{cid}").get_json()
    assert [(r["id"], r["student"]) for r in view["runs"]] == [(mine, "Edsger")]
    with classdb.sqlite3.connect(app.config["DATABASE"]) as conn:
        assert dict(conn.execute("SELECT id, student FROM runs").fetchall())[anyone] is None


def test_a_trace_links_mean_rate_is_its_capacity_line(app: Any) -> None:
    """An uploaded trace (upload:<sha256>) is read for the theory: its mean rate becomes the capacity line,
    labelled as the trace's (a trace run had no theory line at all, issue 50)."""
    from webapp.theory import chart_references

    trace = "".join(f"{ms}\n" for ms in (2, 2, 5, 5, 7, 7, 10, 10, 12, 12))  # 10 opportunities / 12 ms: 10.03 Mb/s
    stored = app.test_client().post("/api/traces?field=links.bottleneck.trace&name=t.down", data=trace.encode(),
                                    headers=headers(app) | {"Content-Type": "application/octet-stream"}).get_json()
    spec = good_spec(links={"bottleneck": {"trace": stored["trace"]}})
    with app.test_request_context():
        refs = chart_references(spec, None)
    goodput = chart_lines.lines(refs)["goodput"]
    assert [line["label"] for line in goodput][0] == "bottleneck trace mean 10.03 Mb/s", goodput


def test_red_on_the_charts_and_in_words() -> None:
    """Lab 10's recorded RED runs: each bottleneck reference carries min_th, max_th, max_p, the model's q*
    and gain margin; "What happened" says the loop's verdict (stable at 312 Mb/s, unstable above)."""
    verdicts = {}
    for step in ("red-312m", "red-625m", "red-2g5", "red-10g"):
        folder = RunFolder(LAB10 / step)
        spec = parse_spec(folder.spec())
        [note] = explain.what_happened(spec, folder.summary())
        verdicts[step] = note.split("gain margin of ")[1].split(":")[0:2]
        refs = explain.response_lines([{"flow": "f1", "bottleneck": "bottleneck", "capacity_mbps": 100.0,
                                        "base_rtt_ms": 100.0, "cc": "reno", "from_s": 0.0}],
                                      folder.summary(), folder.spec()["links"])
        lines = chart_lines.lines(refs)
        assert {line["y"] for line in lines["queue"]} >= {417.0} and lines["aqm"][0]["y"] == 0.01
    assert verdicts == {"red-312m": ["1.3", " stable, the queue holds near q* and keeps the link busy"],
                        "red-625m": ["0.68", " unstable, the queue swings to empty as the flows cut their windows "
                                             "together, though over this run the link stayed busy (RED's average "
                                             "cannot steer the loop at this capacity"],
                        "red-2g5": ["0.17", " unstable, the queue swings to empty as the flows cut their windows "
                                            "together, the link 11 % idle (RED's average cannot steer the loop at this "
                                            "capacity"],
                        "red-10g": ["0.042", " unstable, the queue swings to empty as the flow halves its window, the "
                                             "link 64 % idle (RED's average cannot steer the loop at this capacity"]}


def test_a_capacity_schedule_cut_into_parts_and_marked() -> None:
    folder = RunFolder(LAB10 / "step-fast")
    spec = parse_spec(folder.spec())
    assert [(m["at_s"], m["text"]) for m in segments.chart_marks(spec, [])] == [
        (10.0, "bottleneck: 40 → 10 Mb/s"), (20.0, "bottleneck: 10 → 40 Mb/s")]
    parts = segments.schedule_parts(spec, folder.flows(), folder.links())
    assert [(p.start_s, p.settled_from_s, p.changes) for p in parts] == [
        (0.0, 0.0, []), (10.0, 12.0, ["bottleneck: 40 → 10 Mb/s"]), (20.0, 22.0, ["bottleneck: 10 → 40 Mb/s"])]
    # busy at the capacity in force: 10 Mb/s in the second part, not the 40 before it
    assert [round(p.links[0].utilization or 0, 2) for p in parts][1:] == [1.0, 1.0]


def test_goodput_from_a_recordings_bytes_acked() -> None:
    """A recording trimmed to bytes_acked draws its goodput as the flow tool computes it."""
    flows = RunFolder(LABS_DIR / "02-fast-equilibrium" / "recorded" / "full" / "equilibrium").flows()
    assert "goodput_mbps" not in flows
    derived = chart_data.with_goodput(flows)
    f1 = derived[derived["flow"] == "f1"].sort_values("t")
    assert math.isnan(f1["goodput_mbps"].iloc[0])
    steady = f1[(f1["t"] > 6) & (f1["t"] < 29)]["goodput_mbps"]
    assert 9.5 < steady.mean() < 10.5  # two flows sharing 20 Mb/s, equal alphas: 10 each


def test_pages_name_the_student_of_a_run(app: Any) -> None:
    teacher = instructor(app)
    teacher.post("/api/classes", json={"name": "A", "code": "NAMES"}, headers=headers(app))
    student = app.test_client()
    student.post("/api/class/join", json={"code": "NAMES", "name": "Barbara <b>L</b>"}, headers=headers(app))
    run = student.post("/api/runs", json=good_spec(), headers=headers(app)).get_json()["id"]
    page = teacher.get(f"/runs/{run}").get_data(as_text=True)
    assert '<p class="note" id="run-student">queued by Barbara &lt;b&gt;L&lt;/b&gt;</p>' in page  # escaped
    assert "by Barbara &lt;b&gt;L&lt;/b&gt;" in teacher.get("/").get_data(as_text=True)
