"""A class in Chromium (issue 50's acceptance), with real runs: the instructor signs in with the token and
creates a class; three students join it from three browser contexts, each writes a prediction and runs a
lab step (one FAST flow, 4 s); the instructor's page, live, shows the three runs with their checkpoints,
the three answers and the class plot (each student's measured backlog against the theory's sum of the
alphas); the CSV export has them. A student's answer typed offline stays in the browser and reaches the
server when it is back online. The server restarts: the answers, runs and class are still there.
Screenshots: test-artifacts/class-*.png."""

from __future__ import annotations

import csv
import io
import time
from pathlib import Path
from typing import Any

import pytest

from fastlab.service.store import connect
from tests.webapp.conftest import ARTIFACTS, wait_until, watch, write_lab
from webapp import create_app

INSTRUCTOR = "the-instructors-token-0123"
STUDENTS = ("Ada", "Grace", "Edsger")
HANDOUT = """\
# FAST in a tiny class

One FAST flow keeps alpha packets queued.

## Steps

1. **Predict.** With alpha 20, how many packets sit in the queue?
2. **Run:** `sudo fastlab lab run 1 --step fast` and look at the queue
   ([expected values](#expected-values), step 2).

## Questions

1. Why does the queue hold alpha packets?

## Expected values

2. **Step 2**: about 20 packets in the queue.
"""
LAB = """\
title: FAST in a tiny class
summary: One FAST flow, alpha 20, on a 20 Mb/s dumbbell.
minutes: 0.2
steps:
  - id: fast
    title: One FAST flow, alpha 20
    spec: specs/fast.yaml
    short: [duration_s=3]
    checkpoints:
      - {check: backlog, args: {lo: 5, hi: 60}}
"""
SPEC = """\
name: class-fast
topology: dumbbell
topology_args: {rate_mbps: 20, rtt_ms: 20, buffer_bdp: 4}
duration_s: 4
seed: 1
flows:
  - {src: h1, dst: h2, cc: fast, cc_args: {alpha: 20}}
"""
CHECKPOINTS = """\
from fastlab.labs.kit import CheckResult, StepRun, checkpoint, within


@checkpoint
def backlog(run: StepRun, lo: float, hi: float) -> CheckResult:
    \"\"\"One FAST flow keeps alpha packets queued: the bottleneck's mean backlog.\"\"\"
    return within("mean bottleneck backlog", run.link_summary("bottleneck").mean_backlog_pkts, lo, hi,
                  "a wide band around alpha = 20: a 4-s run's start-up counts too", "pkts")
"""


def statuses(database: Path) -> list[str]:
    with connect(database) as conn:
        return [r["status"] for r in conn.execute("SELECT status FROM runs WHERE student IS NOT NULL")]


def view(page: Any, class_id: str) -> dict[str, Any]:
    response = page.request.get(f"/api/classes/{class_id}")
    assert response.ok, response.text()
    return response.json()


@pytest.mark.alone  # a real experiment
@pytest.mark.timeout(420)
def test_a_class_runs_answers_and_is_seen_whole(tmp_path: Path, live_server_factory, browser) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    labs = write_lab(tmp_path / "labs", "01-tiny-class", HANDOUT, LAB, {"fast.yaml": SPEC}, CHECKPOINTS)
    results = tmp_path / "results"
    app = create_app(results_root=results, labs_dir=labs, instructor_token=INSTRUCTOR, cleanup_on_start=False)
    server = live_server_factory(app)

    # the instructor: signs in with the token, creates a class
    teacher = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=server.url, accept_downloads=True)
    desk = teacher.new_page()
    problems = watch(desk)
    desk.goto("/classes")
    desk.fill("#instructor-token", INSTRUCTOR)
    desk.click("#sign-in")
    desk.wait_for_selector("#new-class", timeout=15_000)
    desk.fill("#class-name", "Networks, group A")
    desk.fill("#class-code", "NET-A")
    desk.click("#create-class")
    desk.wait_for_selector("#class-view", timeout=15_000)
    class_id = desk.locator("#class-view").get_attribute("data-class")

    # three students from three browsers: join, predict, run the step
    pages = []
    for name in STUDENTS:
        page = browser.new_context(viewport={"width": 1024, "height": 768}, base_url=server.url).new_page()
        problems += watch(page)
        page.goto("/class")
        page.fill("#join-code", "net-a")  # codes are read case-blind
        page.fill("#join-name", name)
        page.click("#join")
        page.wait_for_selector("#class-who", timeout=15_000)
        assert name in page.inner_text("nav")
        page.goto("/labs/1")
        assert "about 20 packets" not in page.inner_text("body")  # folded until the prediction
        page.fill("#handout textarea[data-answer='step-1']", f"{name} predicts 20 packets in the queue")
        # the Run button below sends what is typed before the page leaves for the run's (no wait for the save)
        assert "about 20 packets" in page.inner_text("body")
        page.locator("#handout button.run-step[data-step='fast']").first.click()
        page.wait_for_url("**/runs/*", timeout=15_000)
        pages.append(page)

    # the instructor's page follows the class while it works
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and statuses(app.config["DATABASE"]).count("done") < 3:
        assert not {"failed", "interrupted", "cancelled"} & set(statuses(app.config["DATABASE"])), \
            statuses(app.config["DATABASE"])
        time.sleep(1)
    assert statuses(app.config["DATABASE"]) == ["done"] * 3
    # every run's chip with its checkpoints' verdict (a poll from before the last run ended shows it running)
    wait_until(desk, "[...document.querySelectorAll('#labs .run-chip')].filter(c => "
                     "/v-(pass|fail|inconclusive)/.test(c.className)).length === 3", timeout=60_000)
    wait_until(desk, "document.querySelectorAll('#labs .answers-list li').length === 3", timeout=20_000)
    data = view(desk, class_id)
    assert sorted(s["name"] for s in data["students"]) == sorted(STUDENTS)
    assert sorted(r["student"] for r in data["runs"]) == sorted(STUDENTS)
    assert all(r["checkpoints"]["status"] in ("pass", "fail", "inconclusive") for r in data["runs"])
    assert [r["checkpoints"]["error"] for r in data["runs"]] == [None] * 3  # the checkpoint code ran
    predicted = [f"{n} predicts 20 packets in the queue" for n in sorted(STUDENTS)]
    assert sorted(a["text"] for a in data["answers"]) == predicted
    # the plot: one point per student, theory Σα = 20 against the backlog each measured
    points = desk.evaluate("document.getElementById('class-plot').data.map(t => [t.name, t.x, t.y])")
    assert sorted(p[0] for p in points) == sorted(STUDENTS)
    for _name, xs, ys in points:
        assert xs == [20] and len(ys) == 1 and 0 < ys[0] < 100
    assert desk.evaluate("document.getElementById('class-plot').layout.shapes.length") == 1  # measured = theory
    desk.screenshot(path=str(ARTIFACTS / "class-instructor.png"), full_page=True)

    # the exports: the CSV has the three runs, their checkpoints and the three answers
    rows = list(csv.DictReader(io.StringIO(desk.request.get(f"/api/classes/{class_id}/export.csv").text())))
    assert sorted(r["student"] for r in rows if r["kind"] == "run") == sorted(STUDENTS)
    assert sorted(r["student"] for r in rows if r["kind"] == "answer") == sorted(STUDENTS)
    assert len([r for r in rows if r["kind"] == "checkpoint"]) == 3
    bundle = desk.request.get(f"/api/classes/{class_id}/bundle")
    assert bundle.ok and bundle.headers["content-type"] == "application/zip"
    zipped = tmp_path / "class.zip"
    zipped.write_bytes(bundle.body())
    from fastlab.results import bundle as bundles
    assert bundles.verify(zipped) == []
    # a student sees neither the class's view nor its exports
    assert pages[0].request.get(f"/api/classes/{class_id}").status == 403
    assert pages[0].request.get(f"/api/classes/{class_id}/export.csv").status == 403

    # offline: the answer stays in the browser, and reaches the server when the browser is back
    ada = pages[0]
    ada.goto("/labs/1")
    ada.context.set_offline(True)
    ada.fill("#handout textarea[data-answer='q-1']", "FAST aims at alpha packets of its own queued")
    wait_until(ada, "document.getElementById('answers-panel').dataset.sync === 'offline'")
    assert "offline" in ada.inner_text("#answers-saved")
    ada.screenshot(path=str(ARTIFACTS / "class-student-offline.png"))
    assert not any(a["key"] == "q-1" for a in view(desk, class_id)["answers"])
    ada.context.set_offline(False)
    wait_until(ada, "document.getElementById('answers-panel').dataset.sync === 'saved'", timeout=30_000)
    assert any(a["key"] == "q-1" and a["student"] == "Ada" for a in view(desk, class_id)["answers"])

    # the server restarts: the class, its runs and its answers are still there
    for page in pages[1:]:
        page.close()  # their live pages would try to reconnect to the stopped server
    server.close()
    app2 = create_app(results_root=results, labs_dir=labs, instructor_token=INSTRUCTOR, start_worker=False,
                      cleanup_on_start=False)
    server2 = live_server_factory(app2)
    again = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=server2.url).new_page()
    again.goto("/classes")
    again.fill("#instructor-token", INSTRUCTOR)
    again.click("#sign-in")
    again.wait_for_selector("#classes-list", timeout=15_000)
    again.goto(f"/classes/{class_id}")
    wait_until(again, "document.querySelectorAll('#labs .answers-list li').length === 4", timeout=20_000)
    after = view(again, class_id)
    assert len(after["runs"]) == 3 and len(after["answers"]) == 4
    again.screenshot(path=str(ARTIFACTS / "class-after-restart.png"), full_page=True)
    # a student's browser keeps its place in the class across the restart (the cookie; the server checks it)
    ada.goto(server2.url + "/labs/1")
    box = ada.locator("#handout textarea[data-answer='q-1']")
    wait_until(ada, "document.getElementById('answers-panel').dataset.sync === 'saved'")
    assert box.input_value() == "FAST aims at alpha packets of its own queued"  # from the server: a new origin
    assert "Ada" in ada.inner_text("nav")
    # the offline spell's failed requests are the browser's own report of it, not the page's errors
    assert not [p for p in problems if "ERR_INTERNET_DISCONNECTED" not in p], problems
