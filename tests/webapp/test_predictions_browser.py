"""Predictions that stay predictions, and lab 10's first step in the browser alone (issue 50 items 3 and 4),
in Chromium on the repository's labs 02 and 10; nothing runs (the app's worker is off).

Before the student has written a prediction no expected value of the handout is on the page (the
text a student sees, and no tooltip either): each step's expected values sit folded under it, and
appear once the prediction box before them holds text (or when asked to, remembered after a reload).
Lab 10's step 1 asks for the model's figures: the page's calculator computes them through the app
(the same fastlab.theory.red a terminal runs), the student writes the prediction, and step 2's
expected values appear. Screenshots go to test-artifacts/predict-*.png.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fastlab.labs.kit import LABS_DIR, load_lab
from fastlab.theory import red
from tests.webapp.conftest import ARTIFACTS, wait_until, watch
from webapp import create_app, handout

# what the handouts said before (issue 50): figures that give step 1's predictions away
LAB02_SPOILERS = ("≈ 40 packets", "≈ 80", "≈ 3", "≈ 20 packets before", "≈ 60 after")


def expected_texts(page) -> list[str]:
    return page.evaluate("[...document.querySelectorAll('#handout .expected-values')].map(e => e.textContent)")


def visible(page) -> str:
    """What a student can read: the text shown, and every tooltip."""
    return page.inner_text("body") + "\n".join(page.evaluate(
        "[...document.querySelectorAll('[title]')].map(e => e.title)"))


def prediction_box(page, key: str):
    return page.locator(f"#handout textarea[data-answer='{key}']")


@pytest.mark.timeout(120)
def test_lab02_expected_values_wait_for_the_prediction(tmp_path: Path, live_server_factory, browser) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    server = live_server_factory(create_app(results_root=tmp_path / "results", start_worker=False,
                                            cleanup_on_start=False))
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    problems = watch(page)
    page.goto(server.url + "/labs/2")
    assert handout.render(load_lab(2)).expected == {2: "step-1", 3: "step-1", 4: "step-1"}
    texts = expected_texts(page)
    assert len(texts) == 3 and all(texts)  # in the page, folded
    shown = visible(page)
    for spoiler in LAB02_SPOILERS:
        assert spoiler not in shown, spoiler
    for text in texts:  # none of the hidden blocks' sentences shows
        assert text.strip()[:40] not in shown
    assert page.locator("#handout .expected-lock").first.is_visible()
    page.screenshot(path=str(ARTIFACTS / "predict-lab02-before.png"))

    prediction_box(page, "step-1").fill("queue 40 packets = 24 ms; 10 Mb/s each; windows 50 and 100 packets")
    wait_until(page, "[...document.querySelectorAll('#handout .expected')].every(e => e.dataset.shown === '1')")
    shown = visible(page)
    assert "≈ 40 packets" in shown and "≈ 80 packets" in shown
    page.locator("#expected-2").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "predict-lab02-after.png"))
    # the step's link leads to its own block
    assert page.locator("#handout a[href='#expected-2']").count() == 1

    # a fresh browser: "show them now" reveals one step's values, and remembers it
    other = browser.new_context(viewport={"width": 1024, "height": 768}).new_page()
    other.goto(server.url + "/labs/2")
    assert "≈ 80" not in visible(other)
    other.locator("#expected-3 .reveal-expected").click()
    wait_until(other, "document.getElementById('expected-3').dataset.shown === '1'")
    assert other.locator("#expected-2").get_attribute("data-shown") == "0"
    other.reload()
    wait_until(other, "document.getElementById('expected-3').dataset.shown === '1'")
    assert "≈ 80" in visible(other) and "≈ 40 packets" not in visible(other)
    assert not problems, problems


@pytest.mark.timeout(120)
def test_lab10_step1_in_the_browser_alone(tmp_path: Path, live_server_factory, browser) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    server = live_server_factory(create_app(results_root=tmp_path / "results", start_worker=False,
                                            cleanup_on_start=False))
    page = browser.new_context(viewport={"width": 1024, "height": 768}).new_page()
    problems = watch(page)
    page.goto(server.url + "/labs/10")
    model = {n: red.figures(red.Point(n, 100e6 / 12000, 0.1, red.Red(42, 417, 0.01, 0.0024))) for n in (32, 16, 4, 1)}
    shown = visible(page)
    # none of the model's figures, nor where RED's queue settles, before the prediction
    for n, f in model.items():
        for figure in (f"{f['queue_pkts']:.0f} packets", f"margin {f['gain_margin']:.2g}", f"≈ {f['window_pkts']:.1f}",
                       f"gain margin {f['gain_margin']:.2g}", f"q* = {f['queue_pkts']:.0f}"):
            assert figure not in shown, (n, figure)
    assert "24 ms at 10 Mb/s" not in shown and "fills the buffer" not in shown
    assert all(d == "0" for d in page.evaluate(
        "[...document.querySelectorAll('#handout .expected')].map(e => e.dataset.shown)"))

    # step 1: the calculator, prefilled with the lab's point, gives fastlab.theory.red's figures
    calc = page.locator("form.calculator[data-model='red']")
    calc.locator("button[type=submit]").click()
    wait_until(page, "document.querySelector('form.calculator').dataset.computed === '4'")
    rows = page.evaluate("[...document.querySelectorAll('form.calculator .calc-table tr')].slice(1)"
                         ".map(r => [...r.cells].map(c => c.textContent))")
    for row, n in zip(rows, (32, 16, 4, 1), strict=True):
        f = model[n]
        assert row[0] == str(n)
        assert abs(float(row[1]) - f["window_pkts"]) <= 0.05
        assert abs(float(row[3]) - f["queue_pkts"]) <= 0.05
        assert abs(float(row[8]) - f["gain_margin"]) <= 0.005 * f["gain_margin"]
        assert row[9] == ("stable" if f["stable"] else "unstable")
    assert [r[9] for r in rows] == ["stable", "unstable", "unstable", "unstable"]
    page.locator("form.calculator").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "predict-lab10-calculator.png"))
    # a value the model refuses: one line at the form, nothing else changes
    calc.locator("input[name=max_th]").fill("10")
    calc.locator("button[type=submit]").click()
    wait_until(page, "document.querySelector('form.calculator .calc-error').textContent !== ''")
    assert "must be above" in page.inner_text("form.calculator .calc-error")

    # the prediction, written: step 2-4's expected values appear (not 5's and 6's: their own predictions)
    prediction_box(page, "step-1").fill("stable only at 312 Mb/s (margin 1.34); the link idles at 2.5 and 10 Gb/s")
    wait_until(page, "document.getElementById('expected-2').dataset.shown === '1'")
    assert page.locator("#expected-5").get_attribute("data-shown") == "0"
    assert page.locator("#expected-6").get_attribute("data-shown") == "0"
    assert "≈ 87 packets (10.5 ms)" in visible(page)
    assert "24 ms at 10 Mb/s" not in visible(page)
    assert not problems, problems


def test_every_lab_hides_its_expected_values() -> None:
    """Every lab's handout has an Expected values section, each of whose items waits for an answer box."""
    for folder in sorted(LABS_DIR.glob("[0-9][0-9]-*")):
        web = handout.render(load_lab(folder.name))
        assert web.expected, f"{folder.name}: no expected values"
        keys = {a["key"] for a in web.answers}
        assert set(web.expected.values()) <= keys, folder.name
        assert "<h2>Expected values</h2>" not in str(web.html)  # out of the flow
