"""Labs in the browser (issue 14 item 7), without a browser and without running anything:

- the handout rendered for the web: the CLI's commands become the step's Run buttons, links to the
  step's run page and to the new-run form, step numbers as in the handout on buttons and sections, the
  `fastlab lab check` sentence replaced; the handout file itself unchanged; every lab of the
  repository numbers each of its steps and keeps no `fastlab lab run`/`report.html` in the page;
- answer boxes per question and per step that runs nothing;
- the new-run form filled from a handout link (and refusing paths outside the lab);
- checkpoints in plain words (quantity, what the check is about, figure against its range) on a
  recorded run of lab 02;
- the bundle of a lab step run with the student's answers (answers.md in the manifest).
"""

from __future__ import annotations

import io
import re
import shutil
import sqlite3
import tempfile
import zipfile
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from fastlab.labs.kit import LABS_DIR, evaluate_step, lab_folders, load_lab, load_lab_folder
from fastlab.results import bundle
from webapp import create_app, guided, handout

LAB02 = LABS_DIR / "02-fast-equilibrium"
RECORDED_RUN = "20261123-124630-lab02-fast-two-rtts"


def recorded_band(lab: Path, step: str, name: str) -> str:
    """The range a checkpoint expects on the lab's recorded run, as the page words it ("between lo and
    hi"): the bounds are the lab's to derive (from its model and the run), not this test's to repeat."""
    loaded = load_lab_folder(lab)
    [result] = [r for r in evaluate_step(loaded, step, loaded.recording(step)) if r.name == name]
    lo, hi, _digits = guided.range_texts(*(float(v) for v in result.expected.split("..")))  # as the page rounds
    return f"expected between {lo} and {hi}"


def register_lab_run(app: Any, run_id: str, lab: Path, step: str) -> Path:
    """A finished lab step run in the app's history: a copy of the lab's recorded run of that step."""
    results = Path(app.config["RESULTS_ROOT"])
    shutil.copytree(load_lab_folder(lab).recording(step), results / run_id)
    assert app.test_client().get("/api/runs").status_code == 200  # indexes the folder
    with sqlite3.connect(app.config["DATABASE"]) as conn:
        conn.execute("UPDATE runs SET lab = ?, lab_step = ?, lab_short = 0 WHERE id = ?", (lab.name, step, run_id))
    return results / run_id


@pytest.fixture
def lab_app(tmp_path: Path, tiny_labs: Path) -> Any:
    return create_app(results_root=tmp_path / "results", start_worker=False, labs_dir=tiny_labs)


def handout_of(page: str) -> str:
    return page[page.index('<article id="handout"'):page.index("</article>")]


def test_the_cli_commands_become_the_pages_buttons_and_links(lab_app: Any, tiny_labs: Path) -> None:
    before = (tiny_labs / "01-tiny" / "README.md").read_text()
    page = lab_app.test_client().get("/labs/1").get_data(as_text=True)
    text = handout_of(page)
    # the step's command -> its Run button, numbered as the handout's item; the same number on its section
    assert ('<button type="button" class="run-step" data-step="fill" data-short="0">▶ Run step 2: fill</button>'
            in text)
    assert '<button type="button" class="run-step" data-step="nocc" data-short="0">▶ Run step 3: nocc</button>' in text
    # each step's panel once, under the item that runs it: no second list of the steps below the handout
    for step, number in (("fill", "2"), ("nocc", "3")):
        assert page.count(f'id="step-{step}"') == 1 and f"<h3>Step {number} · {step}:" in text
        assert text.index(f'data-step="{step}" data-short="0">▶ Run step {number}: {step}') \
            < text.index(f'id="step-{step}"') < text.index("<h2>Questions</h2>")
    assert text.index('id="step-fill"') < text.index("No such CC") and "Other steps" not in page
    assert '<details class="step" id="step-fill" data-step="fill">' in text  # folded: no runs yet
    assert '<a class="step-link" href="#step-fill">details</a>' in text
    # the whole lab, --step ID, --short, report.html (no run yet: the step), lab check
    assert '<button type="button" class="run-all" data-short="0">▶ Run every step</button>' in text
    assert "its own <strong>Run</strong> button" in text and "<strong>Run short</strong> runs" in text
    assert '<a class="report-link" href="#step-fill" title="run the step first">the run page of step 2</a>' in text
    assert "On this page each step's checkpoints are evaluated when its run has finished" in text
    # fastlab run <spec> --set ... and a step's --set -> the new-run form with that spec
    assert 'href="/new?lab=01-tiny&amp;spec=specs%2Fone-cubic.yaml&amp;set=duration_s%3D5"' in text
    assert 'href="/new?lab=01-tiny&amp;spec=specs%2Fone-cubic.yaml&amp;set=duration_s%3D8&amp;set=flows.0.cc%3Dreno"' \
        in text
    for cli in ("fastlab lab run", "fastlab lab check", "report.html", "--step", "--run DIR", "fastlab run"):
        assert cli not in text, cli
    assert (tiny_labs / "01-tiny" / "README.md").read_text() == before  # the CLI handout is the source


def test_a_step_the_handout_never_runs_gets_its_panel_below(lab_app: Any, tiny_labs: Path) -> None:
    readme = tiny_labs / "01-tiny" / "README.md"
    readme.write_text(readme.read_text().replace("3. **No such CC:** `--step nocc` fails before anything runs.",
                                                 "3. **No such CC:** a step that fails before anything runs."))
    page = lab_app.test_client().get("/labs/1").get_data(as_text=True)
    assert 'id="step-fill"' in handout_of(page) and 'id="step-nocc"' not in handout_of(page)
    below = page[page.index("</article>"):]
    assert '<h2 id="steps">Other steps of this lab</h2>' in below and below.count('id="step-nocc"') == 1
    assert "<h3>Step nocc: A step whose congestion control" in below


def test_answer_boxes_per_question_and_per_step_that_runs_nothing(lab_app: Any) -> None:
    text = handout_of(lab_app.test_client().get("/labs/1").get_data(as_text=True))
    assert text.count("<textarea") == 3
    for key, label in (("step-1", "Your notes for step 1 (Predict)"), ("q-1", "Your answer to question 1"),
                       ("q-2", "Your answer to question 2")):
        assert f'<label for="answer-{key}">{label}</label><textarea id="answer-{key}" data-answer="{key}"' in text
    assert text.index('data-answer="q-1"') > text.index("Why does the bottleneck")  # inside its question


def test_a_step_run_links_the_report_to_its_latest_run(lab_app: Any, tiny_labs: Path) -> None:
    register_lab_run(lab_app, RECORDED_RUN, LAB02, "equilibrium")  # any finished run folder will do
    with sqlite3.connect(lab_app.config["DATABASE"]) as conn:
        conn.execute("UPDATE runs SET lab = '01-tiny', lab_step = 'fill' WHERE id = ?", (RECORDED_RUN,))
    text = handout_of(lab_app.test_client().get("/labs/1").get_data(as_text=True))
    assert f'<a class="report-link" href="/runs/{RECORDED_RUN}">the run page of step 2</a>' in text


@pytest.mark.parametrize("folder", lab_folders(LABS_DIR), ids=lambda p: p.name)
def test_every_lab_of_the_repository_renders_for_the_web(folder: Path, client: Any) -> None:
    lab = load_lab_folder(folder)
    web = handout.render(lab, {})
    assert set(web.labels) == {s.id for s in lab.steps}, "every step has its number in the handout"
    html = str(web.html)
    for cli in ("fastlab lab run", "fastlab lab check", "<code>report.html</code>", "fastlab cc set"):
        assert cli not in html, cli
    for step in lab.steps:
        assert f'data-step="{step.id}" data-short="0">▶ Run step {web.labels[step.id]}: {step.id}' in html
    questions = lab.handout().split("## Questions", 1)[1].split("\n## ", 1)[0]  # to the next section
    numbered = sum(1 for line in questions.splitlines() if line[:1].isdigit() and ". " in line[:4])
    assert sum(1 for a in web.answers if a["key"].startswith("q-")) == numbered > 0
    assert any(a["key"].startswith("step-") for a in web.answers)  # predict / compute first
    for href in re.findall(r'href="(/new\?[^"]+)"', html):  # each link to the form opens its spec
        page = client.get(unescape(href)).get_data(as_text=True)
        assert 'id="prefill-note"' in page and "prefill-error" not in page, href


def test_a_steps_scheduled_changes_are_said_in_words_not_as_a_yaml_list(client: Any) -> None:
    """Lab 06's sweep steps schedule six alpha changes (a cc_changes list of 300 characters in lab.yaml):
    the step's panel says them in words, with the values they replace; no lab page prints such a list."""
    page = client.get("/labs/6").get_data(as_text=True)
    assert "scheduled changes: server: α 1 → 2 at 3.0 s; server: α 2 → 4 at 6.0 s;" in page
    for n in range(1, len(lab_folders(LABS_DIR)) + 1):
        assert "cc_changes=[" not in client.get(f"/labs/{n}").get_data(as_text=True), n
    # a change that also sets a parameter to the value it had says only what changed (lab 09: gamma stays 1)
    assert "h1: α 20 → 60 at 8.0 s" in client.get("/labs/9").get_data(as_text=True)


def test_lab_02_numbers_its_steps_as_its_handout() -> None:
    web = handout.render(load_lab(2), {"equilibrium": RECORDED_RUN})
    assert web.labels == {"equilibrium": "2", "alphas": "3", "live": "4"}
    html = str(web.html)
    assert f'<a class="report-link" href="/runs/{RECORDED_RUN}">the run page of step 2</a>' in html
    # the step's own override is said as a spec change, the hand-made one opens the form
    assert "the same spec with\n<code>flows.1.cc_args={alpha: 60}</code>" in html
    assert "set=flows.0.cc_args%3D%7Balpha%3A+5%7D" in html
    assert "the α box of a running run's page" in html
    web3 = handout.render(load_lab(3), {})
    assert (web3.labels["row-7"], web3.labels["row-9"], web3.labels["row-10"]) == ("5a", "5b", "5c")


def test_the_new_run_form_opens_a_lab_spec(client: Any) -> None:
    page = client.get("/new?lab=2&spec=specs/fast-two-rtts.yaml&set=flows.0.cc_args%3D%7Balpha%3A+5%7D")
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and 'id="prefill-note"' in text
    assert "data-prefill=" in text and "&#34;alpha&#34;: 5" in text and "&#34;alpha&#34;: 20" in text
    for query, error in (("lab=2&spec=../../../etc/passwd", "no spec '../../../etc/passwd' in its folder"),
                         ("lab=2&spec=checkpoints.py", "no spec 'checkpoints.py' in its folder"),
                         ("lab=2&spec=specs/fast-two-rtts.yaml&set=nokey", "--set 'nokey': expected key=value"),
                         ("lab=99&spec=x.yaml", "no lab '99'")):
        text = client.get(f"/new?{query}").get_data(as_text=True)
        assert 'id="prefill-error"' in text and "data-prefill" not in text, query
        assert error.replace("'", "&#39;") in text, (query, text[text.index("prefill-error"):][:200])
    assert "prefill" not in client.get("/new").get_data(as_text=True)


def test_numbers_and_ranges_in_words() -> None:
    assert [guided.number_text(v) for v in (0.999877, 41.166, 3.0, 0.2, 1237.83, 0.000689543, float("inf"))] == \
        ["1.00", "41.2", "3", "0.200", "1,238", "6.90e-04", "∞"]
    assert guided.plain_result(19.5972, "17.5..20.5 pkts", True) == \
        "measured 19.6 packets; expected between 17.5 and 20.5 packets: in range"
    assert guided.plain_result(1.2, "0.8..1.02", False) == \
        "measured 1.20; expected between 0.8 and 1.02: above the range"
    assert guided.plain_result(0.5, "1..inf", False) == "measured 0.500; expected at least 1: below the range"
    assert guided.plain_result(0.135, "0..1 s", True) == "measured 0.135 s; expected at most 1 s: in range"
    assert guided.plain_result("NOT faithful", "faithful", False) == "measured NOT faithful (expected: faithful)"
    assert guided.plain_result(None, "", False) == "measured n/a"
    # ranges rounded to what matters (issue 50), outward: the shown range holds the real one
    assert guided.plain_result(1.0, "0.9944..1.006", True) == "measured 1; expected between 0.994 and 1.01: in range"
    assert guided.plain_result(38.6, "35.91..40.66 pkts", True).endswith("between 35.9 and 40.7 packets: in range")
    assert guided.plain_result(1238, "1223..1242 s", True).endswith("between 1,223 and 1,242 s: in range")
    assert guided.plain_result(1.04, "0.08891..1.911", True).endswith("between 0.08 and 1.92: in range")
    # a figure that failed near an edge is shown with the digits that put it outside the range shown
    assert guided.plain_result(0.9943, "0.9944..1.006", False) == \
        "measured 0.994; expected between 0.9944 and 1.006: below the range"


def test_checkpoint_sentences_for_students() -> None:
    """The docstring's ASCII maths typeset, its asides naming files and columns moved to details."""
    assert guided.student_text("w = alpha * D / (D - d), i.e. w*(1 - d/D) = alpha (cc_events.csv)") == \
        ("w = α·D / (D − d), i.e. w·(1 − d/D) = α", "cc_events.csv")
    assert guided.student_text("RED's average queue (links.csv aqm_avg_queue, its EWMA) over q*: near 1") == \
        ("RED's average queue over q*: near 1", "links.csv aqm_avg_queue, its EWMA")
    assert guided.student_text("at most sum(cwnd x packet / srtt); 1.22/sqrt(p); x = C") == \
        ("at most Σ(cwnd × packet / srtt); 1.22/√(p); x = C", "")


def test_checkpoints_in_plain_words_on_a_recorded_run(tmp_path: Path) -> None:
    app = create_app(results_root=tmp_path / "results", start_worker=False)
    register_lab_run(app, RECORDED_RUN, LAB02, "equilibrium")
    result = app.test_client().get(f"/api/runs/{RECORDED_RUN}/checkpoints").get_json()
    checks = {c["name"]: c for c in result["checks"]}
    window = checks["window f1"]  # lab.yaml names it; the checkpoint's own words say what it measured
    assert window["quantity"].startswith("f1 mean w·(1 − baseRTT/avgRTT) over ")
    assert window["checks"].startswith("FAST's equilibrium w = α·D / (D − d)")
    assert window["result"] == f"measured {window['measured_text']} packets; expected between 17.5 and 20.5 " \
                               "packets: in range"
    assert float(window["measured_text"]) == pytest.approx(window["measured"], rel=5e-3)
    ratio = checks["rates equal despite RTTs"]
    assert ratio["quantity"] == "rate of f2 / rate of f1" and ratio["tolerance"].startswith("alpha ratio 1")
    assert ratio["result"].endswith(recorded_band(LAB02, "equilibrium", "rates equal despite RTTs") + ": in range")


def test_a_claim_over_draws_is_one_draw_on_a_students_run_and_shows_the_recorded_share(tmp_path: Path) -> None:
    """Lab 04's fairness claim is judged over ten draws of the background loss: on a student's single run of
    the step it is ONE DRAW (its figure shown, not in the step's status: the run's other checkpoints decide it,
    never "not faithful"), and the page says what the recorded draws give."""
    app = create_app(results_root=tmp_path / "results", start_worker=False)
    lab04 = LABS_DIR / "04-fairness"
    register_lab_run(app, "20261129-120000-lab04-fair", lab04, "sc2002-fast-one")
    result = app.test_client().get("/api/runs/20261129-120000-lab04-fair/checkpoints").get_json()
    assert result["status"] == "pass" and result["inconclusive"] == ""
    (draw,) = [c for c in result["checks"] if c["one_draw"]]
    assert draw["status"] == "inconclusive" and draw["inconclusive"].startswith("one draw: ")
    assert re.match(r"(PASS|FAIL|INCONCLUSIVE) over the 10 recorded draws of this step \(\d+ of \d+ conclusive "
                    r"draws, 95 % interval", draw["recorded_draws"]), draw["recorded_draws"]
    assert all(not c["one_draw"] and c["recorded_draws"] == "" for c in result["checks"] if c is not draw)


def test_the_bundle_of_a_lab_run_with_the_students_answers(tmp_path: Path) -> None:
    app = create_app(results_root=tmp_path / "results", start_worker=False)
    client = app.test_client()
    csrf = {"X-CSRF-Token": app.config["CSRF_TOKEN"]}
    register_lab_run(app, RECORDED_RUN, LAB02, "equilibrium")
    scratch = set(Path(tempfile.gettempdir()).glob("fastlab-bundle-*"))
    answers = "# Lab 02: my answers\n\n## Your answer to question 1\n\nq = 40/1667 s = 24 ms\n"
    resp = client.post(f"/api/runs/{RECORDED_RUN}/bundle", json={"answers": answers}, headers=csrf)
    assert resp.status_code == 200 and resp.mimetype == "application/zip"
    assert f"{RECORDED_RUN}-with-answers.zip" in resp.headers["Content-Disposition"]
    zip_path = tmp_path / "b.zip"
    zip_path.write_bytes(resp.data)
    resp.close()
    assert bundle.verify(zip_path) == []
    with zipfile.ZipFile(io.BytesIO(zip_path.read_bytes())) as zf:
        assert zf.read(f"{RECORDED_RUN}/answers.md").decode() == answers
        assert "  answers.md\n" in zf.read(f"{RECORDED_RUN}/MANIFEST.sha256").decode()
        plain = {n.split("/", 1)[1] for n in zf.namelist()}
    assert "summary.json" in plain
    get = client.get(f"/api/runs/{RECORDED_RUN}/bundle")
    with zipfile.ZipFile(io.BytesIO(get.data)) as zf:
        assert f"{RECORDED_RUN}/answers.md" not in zf.namelist()  # the plain bundle stays as it was
    get.close()
    # refused: without the token, bodies that are not one string of answers; nothing is written
    assert client.post(f"/api/runs/{RECORDED_RUN}/bundle", json={"answers": "x"}).status_code == 403
    for body, error in (({"answers": ""}, "answers: String should have at least 1 character"),
                        ({"answers": 5}, "answers: Input should be a valid string"),
                        ({"answers": "x", "more": 1}, "more: unknown field"),
                        ({"answers": "x" * (guided.MAX_ANSWERS_CHARS + 1)}, "answers: String should have at most"),
                        (["x"], "body: must be a JSON object")):
        resp = client.post(f"/api/runs/{RECORDED_RUN}/bundle", json=body, headers=csrf)
        assert resp.status_code == 400 and resp.get_json()["error"].startswith(error), (body, resp.data[:200])
    missing = client.post("/api/runs/20990101-000000-nosuch/bundle", json={"answers": "x"}, headers=csrf)
    assert missing.status_code == 404
    assert not (tmp_path / "results" / RECORDED_RUN / "answers.md").exists()
    # each zip was built in a scratch folder removed before sending (one used to stay per download)
    unclosed = client.get(f"/api/runs/{RECORDED_RUN}/bundle")  # a download nobody reads or closes
    assert unclosed.status_code == 200
    assert set(Path(tempfile.gettempdir()).glob("fastlab-bundle-*")) == scratch



def test_the_run_page_names_the_step_by_its_handout_number(tmp_path: Path) -> None:
    app = create_app(results_root=tmp_path / "results", start_worker=False)
    register_lab_run(app, RECORDED_RUN, LAB02, "equilibrium")
    page = app.test_client().get(f"/runs/{RECORDED_RUN}").get_data(as_text=True)
    assert "lab 02-fast-equilibrium, step 2 (equilibrium)</a>" in page and 'id="bundle-answers"' in page
    with sqlite3.connect(app.config["DATABASE"]) as conn:  # a lab that is gone: the step's id alone
        conn.execute("UPDATE runs SET lab = '98-gone' WHERE id = ?", (RECORDED_RUN,))
    page = app.test_client().get(f"/runs/{RECORDED_RUN}").get_data(as_text=True)
    assert "lab 98-gone, step equilibrium</a>" in page


def test_a_scaled_steps_alpha_is_said_on_its_panel(client: Any) -> None:
    """Lab 03's rows 7/9/10 run their paper-scale specs at 1/20: the panel says what the labs' delay-preserving
    rule made of alpha, and the short forms (alpha 15 stated) say nothing of it."""
    page = client.get("/labs/3").get_data(as_text=True)
    said = re.findall(r'<p class="note scaled-alpha">([^<]*)</p>', page)
    assert len(said) == 3 and all("alpha 200 -&gt; 10 packets (flows.0-" in s and "delay-preserving" in s for s in said)
