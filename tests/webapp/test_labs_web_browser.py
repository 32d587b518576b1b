"""Labs in the browser (issue 14 item 7), in Chromium at 1440x900 and 1024x768, on lab 02 of the
repository with its recorded `equilibrium` run registered as a finished step run. Nothing runs: the
app's worker is off, so a queued step stays queued.

The handout shows Run buttons, not CLI commands, numbered as the step sections; `report.html` is a
link to the step's run; the checkpoints say which quantity, the figure against its range and why;
answers typed into the boxes survive a reload and download as Markdown; the run page's bundle with
answers carries them as answers.md (the manifest verifies); a handout link opens the new-run form
filled with the lab's spec and override; a handout Run button queues that step, "Run every step" all
three in order. Screenshots go to
test-artifacts/labs-web-*.png.
"""

from __future__ import annotations

import sqlite3
import zipfile
from pathlib import Path

import pytest

from fastlab.labs.kit import load_lab
from fastlab.results import bundle
from tests.webapp.conftest import ARTIFACTS, wait_until, watch
from tests.webapp.test_labs_web import LAB02, RECORDED_RUN, recorded_band, register_lab_run
from webapp import create_app, handout


@pytest.mark.timeout(180)
@pytest.mark.parametrize("width,height", [(1440, 900), (1024, 768)])
def test_a_lab_page_for_the_web(tmp_path: Path, live_server_factory, browser, width: int, height: int) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    app = create_app(results_root=tmp_path / "results", start_worker=False, cleanup_on_start=False)
    register_lab_run(app, RECORDED_RUN, LAB02, "equilibrium")
    server = live_server_factory(app)
    context = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True)
    page = context.new_page()
    problems = watch(page)
    shot = f"labs-web-{width}x{height}"

    page.goto(server.url + "/labs/2")
    text = page.inner_text("#handout")
    for cli in ("sudo fastlab", "report.html", "--step", "fastlab lab check"):
        assert cli not in text, cli
    assert page.locator("#handout h1").count() == 0  # the page heading carries the title, once
    # each step: the handout's button and the step's section carry the same number
    labels = handout.render(load_lab(2)).labels
    assert labels == {"equilibrium": "2", "alphas": "3", "live": "4"}
    for step, number in labels.items():
        chip = page.locator(f"#handout button.run-step[data-step='{step}']").first
        assert chip.inner_text() == f"▶ Run step {number}: {step}"
        assert page.inner_text(f"#step-{step} h3").startswith(f"Step {number} · {step}:")
        # the step's panel, once, under the handout's item; folded until the step has runs
        assert page.locator(f"#handout li #step-{step}").count() == page.locator(f"#step-{step}").count() == 1
        panel = page.locator(f"#step-{step}")
        assert panel.evaluate("d => d.open") == (step == "equilibrium")
        assert panel.locator("button.run-step[data-short='0']").text_content() == f"▶ Run step {number}"
        assert panel.locator("button.run-step[data-short='1']").text_content() == f"▶ Run step {number} short"
    assert page.locator("#steps").count() == 0  # no second list of the steps: the handout runs them all
    # the handout's "details" link unfolds the step's panel
    page.locator("#handout .step-ref[data-step='alphas'] a.step-link").first.click()
    wait_until(page, "document.getElementById('step-alphas').open")
    assert page.locator("#step-alphas button.run-step[data-short='1']").is_visible()
    page.screenshot(path=str(ARTIFACTS / f"{shot}-top.png"))
    page.evaluate("[...document.querySelectorAll('#handout h2')].find(h => h.textContent === 'Steps').scrollIntoView()")
    page.screenshot(path=str(ARTIFACTS / f"{shot}-handout-steps.png"))
    report = page.locator("#handout a.report-link").first
    assert report.get_attribute("href") == f"/runs/{RECORDED_RUN}" and report.inner_text() == "the run page of step 2"

    # the latest run's checkpoints in plain words
    page.wait_for_selector("#step-equilibrium .checkpoints[data-loaded]", timeout=20_000)
    row = page.locator("#step-equilibrium tr[data-checkpoint='window f1']")
    assert row.locator(".verdict").inner_text() == "PASS"
    result = row.locator(".result").inner_text()
    assert result.startswith("f1 mean w·(1 − baseRTT/avgRTT) over ") and \
        result.endswith("packets; expected between 17.5 and 20.5 packets: in range")
    assert 17.5 <= float(row.locator(".measured").inner_text()) <= 20.5
    assert row.locator(".checks").inner_text().startswith("FAST's equilibrium w = α·D / (D − d)")
    # the statistics behind the range and the files it reads folded under one click (issues 32, 50: two layers)
    assert row.locator(".why summary").inner_text() == "details: why this range, what it reads"
    assert not row.locator(".why-text").first.is_visible()
    row.locator(".why summary").click()
    assert row.locator(".why-text").first.inner_text().startswith("alpha 20:")
    assert row.locator(".why-text.reads").inner_text() == "reads: cc_events.csv"
    ratio = page.locator("#step-equilibrium tr[data-checkpoint='rates equal despite RTTs'] .result").inner_text()
    assert ratio.startswith("rate of f2 / rate of f1: measured ") and \
        recorded_band(LAB02, "equilibrium", "rates equal despite RTTs") in ratio

    # answers: typed, kept over a reload, downloaded with their questions
    assert page.locator("#handout textarea[data-answer]").count() == 7  # the prediction step and 6 questions
    page.fill("#answer-step-1", "queue 40 packets = 24 ms; 833 packets/s each")
    page.fill("#answer-q-1", "q = 40/1667 s = 24 ms from both")
    assert page.inner_text("#answers-saved") == "2 of 7 answered · saved in this browser"
    page.locator("#answer-q-1").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"{shot}-answers.png"))
    page.reload()
    assert page.input_value("#answer-q-1") == "q = 40/1667 s = 24 ms from both"
    with page.expect_download() as got:
        page.click("#answers-download")
    assert got.value.suggested_filename == "02-fast-equilibrium-answers.md"
    markdown = Path(got.value.path()).read_text()
    assert markdown.startswith("# Lab 02: FAST equilibrium")
    assert "## Your answer to question 1\n\n> From step 2: what queueing delay" in markdown
    assert "q = 40/1667 s = 24 ms from both" in markdown and "## Your notes for step 1 (Predict)" in markdown
    assert markdown.count("_(no answer)_") == 5
    page.locator("#step-equilibrium").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"{shot}-checkpoints.png"))
    page.screenshot(path=str(ARTIFACTS / f"{shot}-lab-page.png"), full_page=True)

    # the run page: its bundle with the answers
    page.click("#handout a.report-link")
    page.wait_for_url(f"**/runs/{RECORDED_RUN}")
    page.wait_for_selector("#checkpoints[data-loaded]", timeout=20_000)
    assert page.inner_text("#lab-step") == "lab 02-fast-equilibrium, step 2 (equilibrium)"
    assert page.inner_text("#bundle-answers-note") == "adds answers.md: your 2 answers to lab 02-fast-equilibrium"
    with page.expect_download() as got:
        page.click("#bundle-answers")
    assert got.value.suggested_filename == f"{RECORDED_RUN}-with-answers.zip"
    zip_path = tmp_path / "with-answers.zip"
    got.value.save_as(zip_path)
    assert bundle.verify(zip_path) == []
    with zipfile.ZipFile(zip_path) as zf:
        inside = zf.read(f"{RECORDED_RUN}/answers.md").decode()
    assert inside.split("\n")[3:] == markdown.split("\n")[3:]  # the same answers (the saved time aside)
    assert "q = 40/1667 s = 24 ms from both" in inside
    page.locator("#downloads").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"{shot}-run-bundle.png"))

    # a handout link opens the new-run form with the lab's spec and the handout's override
    page.goto(server.url + "/labs/2")
    page.click("#handout a.form-link:has-text('alpha: 5')")
    page.wait_for_url("**/new?lab=02-fast-equilibrium*")
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)
    assert "specs/fast-two-rtts.yaml + flows.0.cc_args={alpha: 5}" in page.inner_text("#prefill-note")
    assert page.input_value("#f-name") == "lab02-fast-two-rtts"
    alphas = page.locator("#flows .flow [data-key='alpha']")
    assert alphas.count() == 2 and (alphas.nth(0).input_value(), alphas.nth(1).input_value()) == ("5", "20")
    page.screenshot(path=str(ARTIFACTS / f"{shot}-form-from-handout.png"))

    # a Run button in the handout queues its step (the worker is off: it stays queued)
    page.goto(server.url + "/labs/2")
    page.click("#handout button.run-step[data-step='alphas']")
    page.wait_for_url("**/runs/*", timeout=10_000)
    run_id = page.url.rsplit("/", 1)[1]
    with sqlite3.connect(app.config["DATABASE"]) as conn:
        row = conn.execute("SELECT lab, lab_step, lab_short, status FROM runs WHERE id = ?", (run_id,)).fetchone()
    assert row == ("02-fast-equilibrium", "alphas", 0, "queued")

    # "Run every step" (the handout's `sudo fastlab lab run 2`) queues the three steps in order
    page.goto(server.url + "/labs/2")
    assert page.inner_text("#handout button.run-all") == "▶ Run every step"
    page.click("#handout button.run-all")
    page.wait_for_url(lambda url: "/runs/" in url and run_id not in url, timeout=10_000)
    with sqlite3.connect(app.config["DATABASE"]) as conn:
        queued = conn.execute("SELECT lab_step FROM runs WHERE status = 'queued' ORDER BY created").fetchall()
    assert [s for (s,) in queued] == ["alphas", "equilibrium", "alphas", "live"]
    assert page.inner_text("#lab-step") == "lab 02-fast-equilibrium, step 2 (equilibrium)"  # the first one's page
    context.close()
    assert problems == [], problems
