"""The new-run form in Chromium (issue 14 item 6): labels with units and a one-line explanation per
field from the server's models (spec Field titles/descriptions, the CC registry's Param unit/help);
the spec as YAML and a `fastlab run` command to copy; `cc_changes` scheduled on the form, a bad one
marked at its field with Start disabled. Only validation runs: no experiment starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastlab.define.ccset import FAST_PARAMS
from tests.webapp.conftest import ARTIFACTS, form_with_preset, wait_until, watch
from webapp import create_app

MARKED = "[...document.querySelectorAll('[aria-invalid=\"true\"]')].map((e) => e.name)"
BESIDE = "[...document.querySelectorAll('.field-note')].map((e) => e.textContent)"


def label_of(page, selector: str) -> tuple[str, str]:
    """(label text, explanation) of the labelled field holding `selector`."""
    label, help_line = page.eval_on_selector(
        selector, "i => { const l = i.closest('label.field'); "
                  "return [l.querySelector('.label').textContent, l.querySelector('.help').textContent]; }")
    return label, help_line


@pytest.mark.timeout(120)
@pytest.mark.parametrize("width,height", [(1440, 900), (1024, 768)])
def test_labels_yaml_command_and_scheduled_changes(tmp_path: Path, live_server_factory, browser,
                                                   width: int, height: int) -> None:
    server = live_server_factory(create_app(results_root=tmp_path, start_worker=False, cleanup_on_start=False))
    context = browser.new_context(viewport={"width": width, "height": height})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    page = context.new_page()
    problems = watch(page)
    page.goto(server.url + "/new")
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)
    page.select_option("#preset", "fast-alpha30-loss1")
    page.click("#load-preset")
    wait_until(page, "document.querySelector('[name=\"fast-alpha\"]') !== null")

    # labels with units, one line each saying what the field is (from the models, not from the page)
    assert label_of(page, "#topology-args [name='buffer_bdp']") == (
        "Buffer (× BDP)", "bottleneck buffer in multiples of capacity × base RTT; 1 = one BDP")
    assert label_of(page, "#topology-args [name='rate_mbps']")[0] == "Capacity (Mb/s)"
    assert label_of(page, "#f-duration_s") == ("Duration (s)", "how long the flows run")
    alpha = next(p for p in FAST_PARAMS if p.name == "alpha")
    assert label_of(page, "[name='fast-alpha']") == ("fast alpha (packets)", alpha.help)
    assert "sum of the alphas" in alpha.help
    assert label_of(page, "[name='bottleneck-loss-rate']")[0] == "Loss rate (fraction)"
    assert "0.01 = 1 %" in label_of(page, "[name='bottleneck-loss-rate']")[1]
    assert label_of(page, "[name='bottleneck-delay_ms']")[0] == "Delay (ms)"
    assert page.is_visible(".flow .params .help")  # on screen, not only a tooltip

    # the spec as YAML (validated) and the command that reproduces it
    wait_until(page, "document.getElementById('spec-yaml').textContent.includes('alpha: 30')", timeout=10_000)
    assert "validated" in page.inner_text("#yaml-state")
    page.click("#copy-command")
    wait_until(page, "document.getElementById('copy-result').textContent.startsWith('copied')", timeout=5_000)
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("cat > fast-alpha30-loss1.yaml <<'FASTLAB_SPEC'\n") and "alpha: 30" in copied
    assert copied.endswith("sudo fastlab run fast-alpha30-loss1.yaml\n")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"webapp-12-form-{width}.png"))

    # a scheduled change: alpha 0 is refused beside its field, Start disabled; then 60 at 10 s is valid
    page.click("#add-change")
    change = ".cc-change"
    assert page.input_value(f"{change} [name='change-cc']") == "fast"
    assert label_of(page, f"{change} [name='change-at_s']") == ("At (s)", "seconds after the flows start")
    page.fill(f"{change} [name='change-at_s']", "10")
    page.fill(f"{change} [name='fast-alpha']", "0")
    wait_until(page, f"{MARKED}.join() === 'fast-alpha'", timeout=10_000)
    assert page.evaluate(BESIDE) == ["scheduled change 1, alpha: must be between 1 and 10000 packets (got 0)"]
    # the change's alpha is marked, not the flow's
    assert page.eval_on_selector("[aria-invalid='true']", "e => !!e.closest('.cc-change')")
    assert page.is_disabled("#start") and page.is_disabled("#copy-command")
    assert "not valid yet" in page.inner_text("#yaml-state")
    page.fill(f"{change} [name='fast-alpha']", "60")
    page.fill(f"{change} [name='change-at_s']", "25")  # the preset runs 20 s
    wait_until(page, f"{MARKED}.join() === 'change-at_s'", timeout=10_000)
    assert page.evaluate(BESIDE)[0].startswith("scheduled change 1, at (s): after the run ends (20 s)")
    page.screenshot(path=str(ARTIFACTS / f"webapp-12-form-change-error-{width}.png"), full_page=True)
    page.fill(f"{change} [name='change-at_s']", "10")
    wait_until(page, "document.getElementById('validation').className === 'valid'", timeout=10_000)
    assert page.evaluate(MARKED) == [] and not page.is_disabled("#start")
    yaml_text = page.inner_text("#spec-yaml")
    assert "cc_changes:\n- at_s: 10" in yaml_text and "alpha: 60" in yaml_text, yaml_text
    page.locator("#cc-changes-box").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"webapp-12-form-change-{width}.png"))
    assert problems == [], problems


TECHNICAL = r"/[\^$\\{}]|\[[A-Za-z]|\b[a-z_]+(\[\d+\]|\.[a-z_]+)+/"


@pytest.mark.timeout(120)
def test_four_refusals_read_in_plain_words_at_their_field(tmp_path: Path, live_server_factory, browser) -> None:
    """Issue 32: a loss rate of 2 said "Input should be less than or equal to 1" under
    `links.bottleneck.loss.rate`, an empty name showed the name's regular expression. Four wrong inputs, each
    marked at its own field with words a student reads: the field by its name, what is allowed, no pattern,
    no dotted spec path (the engine's line stays in the tooltip)."""
    server = live_server_factory(create_app(results_root=tmp_path, start_worker=False, cleanup_on_start=False))
    page = browser.new_context(viewport={"width": 1024, "height": 768}).new_page()
    page.goto(server.url + "/new")
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)
    page.select_option("#preset", "fast-alpha30-loss1")
    page.click("#load-preset")
    wait_until(page, "document.getElementById('validation').className === 'valid'", timeout=10_000)
    cases = [("[name='bottleneck-loss-rate']", "2", "0.01", "link bottleneck, loss rate: must be at most 1"),
             ("#f-name", "", "ok-name", "name: use letters, digits, '.', '_' or '-', starting with a letter or digit"),
             ("#f-duration_s", "-1", "20", "duration (s): must be more than 0"),
             ("[name='fast-alpha']", "0", "30", "flow 1, alpha: must be between 1 and 10000 packets (got 0)")]
    for n, (selector, wrong, right, words) in enumerate(cases, 1):
        page.fill(selector, wrong)
        wait_until(page, f"document.querySelector({selector!r}).getAttribute('aria-invalid') === 'true'",
                   timeout=10_000)
        note = page.evaluate(BESIDE)
        assert len(note) == 1 and note[0].startswith(words), (selector, note)
        assert not page.evaluate(f"{TECHNICAL}.test({note[0]!r})"), note
        assert not page.evaluate(f"{TECHNICAL}.test(document.getElementById('validation').textContent)")
        assert page.is_disabled("#start")
        page.screenshot(path=str(ARTIFACTS / f"webapp-32-words-{n}.png"))
        page.fill(selector, right)
        wait_until(page, "document.getElementById('validation').className === 'valid'", timeout=10_000)


@pytest.mark.timeout(120)
def test_the_form_offers_an_aqm_per_link(tmp_path: Path, live_server_factory, browser) -> None:
    """Issue 33 item 4 (part): each shaped link offers drop-tail or an AQM (RED, CoDel, PIE from the spec's own
    models), its parameters with their labels, ranges and on/off choices; the choice lands in the spec, and a
    refused combination (RED's max_th under its min_th) is marked at the link's AQM with Start disabled."""
    page, problems = form_with_preset(tmp_path, live_server_factory, browser, "fast-alpha30-loss1")
    aqm = "[name='bottleneck-aqm-model']"
    options = page.eval_on_selector(aqm, "s => [...s.options].map((o) => o.value)")
    assert sorted(options) == ["", "codel", "pie", "red"], options
    page.select_option(aqm, "red")
    wait_until(page, "document.querySelector(\"[name='bottleneck-aqm-max_p']\") !== null")
    assert label_of(page, "[name='bottleneck-aqm-max_p']")[1] == "drop probability at max_th"
    page.fill("[name='bottleneck-aqm-max_p']", "0.05")
    page.select_option("[name='bottleneck-aqm-gentle']", "false")
    wait_until(page, "document.getElementById('spec-yaml').textContent.includes('max_p: 0.05')", timeout=10_000)
    spec_yaml = page.inner_text("#spec-yaml")
    assert "model: red" in spec_yaml and "gentle: false" in spec_yaml, spec_yaml
    wait_until(page, "document.getElementById('validation').className === 'valid'", timeout=10_000)
    page.fill("[name='bottleneck-aqm-max_th']", "2")  # under min_th's default 5
    wait_until(page, f"document.querySelector({aqm!r}).getAttribute('aria-invalid') === 'true'", timeout=10_000)
    assert page.is_disabled("#start")
    assert any("max_th (2) must be above min_th (5)" in n for n in page.evaluate(BESIDE)), page.evaluate(BESIDE)
    page.screenshot(path=str(ARTIFACTS / "webapp-33-form-aqm.png"))
    page.select_option(aqm, "")  # drop-tail again: no AQM in the spec, valid
    wait_until(page, "document.getElementById('validation').className === 'valid'", timeout=10_000)
    assert "aqm" not in page.inner_text("#spec-yaml")
    assert problems == [], problems


@pytest.mark.timeout(120)
def test_the_form_takes_a_link_schedule(tmp_path: Path, live_server_factory, browser) -> None:
    """Issue 33 item 5 (part): each shaped link takes schedule steps (at a time, the rate, delay and/or loss
    from then on), labelled from the spec's ScheduleStep; they land in the spec in order, and a step the
    spec refuses (after the run's end) is marked at its own time with Start disabled."""
    page, problems = form_with_preset(tmp_path, live_server_factory, browser, "example")
    add = ".link[data-link='bottleneck'] [data-schedule='add']"
    page.click(add)
    page.click(add)
    at, rate = "[name='bottleneck-schedule-at_s']", "[name='bottleneck-schedule-rate_mbps']"
    assert label_of(page, rate)[1] == "the rate from then on"
    page.locator(at).nth(0).fill("5")
    page.locator(rate).nth(0).fill("8")
    page.locator(at).nth(1).fill("10")
    page.locator("[name='bottleneck-schedule-delay_ms']").nth(1).fill("30")
    wait_until(page, "document.getElementById('spec-yaml').textContent.includes('delay_ms: 30')", timeout=10_000)
    spec_yaml = page.inner_text("#spec-yaml")
    assert "schedule:" in spec_yaml and spec_yaml.index("at_s: 5") < spec_yaml.index("at_s: 10"), spec_yaml
    wait_until(page, "document.getElementById('validation').className === 'valid'", timeout=10_000)
    page.locator(at).nth(1).fill("99")  # after duration_s: the step would never come
    wait_until(page, "document.querySelectorAll(\"[name='bottleneck-schedule-at_s']\")[1]"
                     ".getAttribute('aria-invalid') === 'true'", timeout=10_000)
    assert page.is_disabled("#start")
    page.screenshot(path=str(ARTIFACTS / "webapp-33-form-schedule.png"))
    page.locator(".schedule-step button").nth(1).click()  # removed: one step left, valid
    wait_until(page, "document.getElementById('validation').className === 'valid'", timeout=10_000)
    assert "at_s: 10" not in page.inner_text("#spec-yaml") and "rate_mbps: 8" in page.inner_text("#spec-yaml")
    assert problems == [], problems
