"""Browser test: Playwright + Debian chromium against the real server stack (uvicorn + webapp.asgi) and the real engine.

Form -> FAST alpha 30 with 1% loss on the dumbbell (6 s, 20 Mb/s) -> live charts grow while the
run goes -> results page -> bundle download verified. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fastlab.results.bundle import verify
from tests.webapp.conftest import ARTIFACTS, FLOW_POINTS, wait_until
from tests.webapp.test_compare import write_run
from webapp import create_app

OTHER = "20261124-100000-fast-a30-wabc001"  # a recorded-shape run to compare with (test_compare's writer)


@pytest.mark.alone  # a real experiment
@pytest.mark.timeout(240)
def test_form_live_charts_results_and_bundle(tmp_path: Path, live_server_factory, browser) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    app = create_app(results_root=tmp_path / "results", cleanup_on_start=False)
    server = live_server_factory(app)
    page = browser.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # the app's pages work under their own Content-Security-Policy: no refused script, style or fetch
    page.on("console", lambda msg: ("Content Security Policy" in msg.text or "Pattern attribute" in msg.text
                                    or "favicon" in msg.text) and errors.append(msg.text))

    page.goto(server.url + "/new")
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)
    page.select_option("#preset", "fast-alpha30-loss1")
    page.click("#load-preset")
    wait_until(page, "document.querySelector('[name=\"fast-alpha\"]') !== null")
    assert page.input_value("[name='fast-alpha']") == "30"
    assert page.input_value("[name='bottleneck-loss-model']") == "bernoulli"
    assert page.input_value("[name='bottleneck-loss-rate']") == "0.01"
    page.fill("#topology-args [name='rate_mbps']", "20")
    page.fill("#f-duration_s", "6")
    page.fill("#f-name", "bad name!")  # the schema's name pattern works in the browser (v-flag syntax)
    assert page.evaluate("document.getElementById('f-name').validity.patternMismatch")
    page.fill("#f-name", "browser-fast-a30")
    assert not page.evaluate("document.getElementById('f-name').validity.patternMismatch")

    # inline validation shows the engine's message, then clears
    page.fill("[name='bottleneck-loss-rate']", "1.5")
    wait_until(page, "document.getElementById('validation').className === 'invalid'", timeout=10_000)
    assert page.inner_text("#validation") == "link bottleneck, loss rate: must be at most 1"  # words for students
    assert page.get_attribute("#validation", "title").startswith("links.bottleneck.loss.rate: ")  # the engine's
    page.fill("[name='bottleneck-loss-rate']", "0.01")
    wait_until(page, "document.getElementById('validation').className === 'valid'", timeout=10_000)
    page.screenshot(path=str(ARTIFACTS / "webapp-1-form.png"), full_page=True)

    page.click("#start")
    page.wait_for_url("**/runs/*", timeout=10_000)
    run_id = page.url.rsplit("/", 1)[1]
    # live: the throughput chart gains points while the run goes
    wait_until(page, f"({FLOW_POINTS})() > 0", timeout=90_000)
    first = page.evaluate(FLOW_POINTS)
    time.sleep(1.5)
    second = page.evaluate(FLOW_POINTS)
    status = app.test_client().get(f"/api/runs/{run_id}").get_json()["status"]
    page.screenshot(path=str(ARTIFACTS / "webapp-2-live.png"), full_page=True)
    assert second > first, (first, second)
    assert status == "running"
    # progress: elapsed of the 6 s the flows run, advancing with the samples
    done, total = page.evaluate("[document.getElementById('progress').value, document.getElementById('progress').max]")
    assert total == 6 and 0 < done <= 6, (done, total)
    assert page.inner_text("#progress-text").endswith("%)") and "/ 6 s" in page.inner_text("#progress-text")
    assert page.evaluate("document.getElementById('chart-queue').data.length") >= 1
    assert page.evaluate("document.getElementById('chart-goodput').layout.yaxis.title.text") == "goodput (Mb/s)"

    # results page: the live page reloads itself when the stream ends
    page.wait_for_selector("#bundle", timeout=120_000)
    assert app.test_client().get(f"/api/runs/{run_id}").get_json()["status"] == "done"
    assert "fast" in page.inner_text("#summary-flows")
    wait_until(page, f"({FLOW_POINTS})() > 20", timeout=20_000)  # replayed traces on the results page
    spec_text = page.inner_text("#spec")  # as on the form and for the CLI: YAML, in the spec's order
    assert spec_text.startswith("name: browser-fast-a30") and "cc: fast" in spec_text and "alpha: 30" in spec_text
    page.locator("#spec").screenshot(path=str(ARTIFACTS / "webapp-3-results-spec.png"))
    page.click("#font-toggle")
    assert page.evaluate("document.body.classList.contains('large')")
    page.screenshot(path=str(ARTIFACTS / "webapp-3-results-large.png"), full_page=True)
    # the theory on the charts: 20 Mb/s capacity; FAST alpha 30 alone: a queue of 30 packets, window
    # 30 * D / q with q = 30 / 1667 per s = 18 ms and D = 40 + 18 ms -> 96.7 packets
    shapes = page.evaluate("Object.fromEntries(['chart-goodput', 'chart-queue', 'chart-cwnd', 'chart-rtt'].map("
                           "id => [id, document.getElementById(id).layout.shapes.map(s => s.y0)]))")
    assert 20 in shapes["chart-goodput"] and 30 in shapes["chart-queue"], shapes
    assert any(abs(y - 96.7) < 0.1 for y in shapes["chart-cwnd"]) and 40 in shapes["chart-rtt"], shapes
    colours = page.evaluate("['chart-goodput', 'chart-cwnd', 'chart-rtt'].map(id => document.getElementById(id)"
                            ".data.find(t => t.name === 'f1').line.color)")
    assert len(set(colours)) == 1, colours  # one colour for f1 on every chart
    assert not page.evaluate("document.getElementById('chart-goodput').data.some(t => t.name.includes('reverse'))")
    assert "Dashed lines" in page.inner_text("#theory-note")

    with page.expect_download(timeout=60_000) as info:
        page.click("#bundle")
    zip_path = ARTIFACTS / f"{run_id}.zip"
    info.value.save_as(str(zip_path))
    assert verify(zip_path) == []
    import zipfile
    names = {n.split("/", 1)[1] for n in zipfile.ZipFile(zip_path).namelist()}
    assert {"summary.json", "spec.yaml", "flows.csv", "partial.jsonl", "report.html", "MANIFEST.sha256"} <= names
    report = page.request.get(f"{server.url}/runs/{run_id}/report")
    assert report.status == 200 and b"plotly" in report.body().lower()
    assert "sandbox" in report.headers["content-security-policy"]  # its inline code runs in an opaque origin
    page.goto(f"{server.url}/runs/{run_id}/report")  # ... and still draws its charts, with the run's traces
    wait_until(page, "document.body.dataset.ready === '1'", timeout=20_000)
    assert page.evaluate("document.querySelectorAll('.chart .main-svg').length") >= 5
    assert page.evaluate("document.getElementById('chart-goodput').data.length") >= 1
    assert not errors, errors


@pytest.mark.timeout(60)
def test_an_unfaithful_run_warns_above_the_fold(tmp_path: Path, live_server_factory, browser) -> None:
    """A finished run whose emulation was not faithful: the warning, its reasons and the advice are on
    screen without scrolling at 1440x900 (a run folder written here: no experiment runs)."""
    from tests.unit.test_webapp import UNFAITHFUL, fake_run

    run_id = "20261124-030000-busy-flabcd"
    fake_run(tmp_path, run_id, 0.7, UNFAITHFUL)
    server = live_server_factory(create_app(results_root=tmp_path, start_worker=False, cleanup_on_start=False))
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # the app's pages work under their own Content-Security-Policy: no refused script, style or fetch
    page.on("console", lambda msg: "Content Security Policy" in msg.text and errors.append(msg.text))
    page.goto(f"{server.url}/runs/{run_id}")
    banner = page.locator("#fidelity[data-fidelity='unfaithful']")
    box = banner.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 900, box
    text = banner.inner_text()
    assert "Not faithful" in text and "socket dropped 1114 frames" in text and "Lower the capacities" in text
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "webapp-4-unfaithful.png"))
    assert not errors, errors


@pytest.mark.timeout(120)
def test_a_bad_value_is_marked_at_its_field_with_the_reason_beside_it(tmp_path: Path, live_server_factory,
                                                                      browser) -> None:
    """The engine's one-line error names a field: the form outlines that input and says why right next
    to it (a flow's CC parameter, a link's loss rate, a topology argument), and clears it when fixed.
    Only validation runs: no experiment starts."""
    server = live_server_factory(create_app(results_root=tmp_path, start_worker=False, cleanup_on_start=False))
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: "Content Security Policy" in msg.text and errors.append(msg.text))
    page.goto(server.url + "/new")
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)
    page.select_option("#preset", "fast-alpha30-loss1")
    page.click("#load-preset")
    wait_until(page, "document.querySelector('[name=\"fast-alpha\"]') !== null")
    # enumerations are dropdowns, free forms suggest their named choices
    assert page.eval_on_selector("select[name='fast-mode']", "s => [...s.options].map(o => o.value)") == \
        ["", "floor", "carry"]
    assert page.eval_on_selector("[name='fast-period']", "i => [...i.list.options].map(o => o.value)") == \
        ["rtt", "2rtt"]
    marked = "[...document.querySelectorAll('[aria-invalid=\"true\"]')].map((e) => e.name)"
    beside = "[...document.querySelectorAll('.field-note')].map((e) => e.textContent)"

    page.fill("[name='fast-alpha']", "0")
    wait_until(page, f"{marked}.join() === 'fast-alpha'", timeout=10_000)
    assert page.evaluate(beside) == ["flow 1, alpha: must be between 1 and 10000 packets (got 0)"]
    assert page.is_disabled("#start")  # Start stays disabled while the spec is invalid
    page.screenshot(path=str(ARTIFACTS / "webapp-5-field-error.png"))
    page.fill("[name='fast-alpha']", "30")
    page.fill("[name='bottleneck-loss-rate']", "1.5")
    wait_until(page, f"{marked}.join() === 'bottleneck-loss-rate'", timeout=10_000)
    assert page.evaluate(beside)[0] == "link bottleneck, loss rate: must be at most 1"
    page.fill("[name='bottleneck-loss-rate']", "0.01")
    page.fill("#topology-args [name='rate_mbps']", "-3")
    wait_until(page, f"{marked}.join() === 'rate_mbps'", timeout=10_000)
    page.fill("#topology-args [name='rate_mbps']", "20")
    wait_until(page, "document.getElementById('validation').className === 'valid'", timeout=10_000)
    assert page.evaluate(marked) == [] and page.evaluate(beside) == []
    assert not page.is_disabled("#start")
    assert not errors, errors


@pytest.mark.alone  # a real experiment
@pytest.mark.timeout(180)
def test_alpha_changed_from_the_live_page_reaches_the_running_flow(tmp_path: Path, live_server_factory,
                                                                    browser) -> None:
    """A real FAST run (alpha 30, 12 s): from its live page a student first asks for alpha 0 (refused
    beside the field, nothing changes), then sets 60; the run's cc_events.csv has the cc_set event, and
    FAST's own updates carry alpha 60 within 1 s of it. The run is then two parts (issue 32): the queue
    chart's Σα line steps from 30 to 60 at the change and a marker shows it, live and on the results
    page; "What happened", the parts' table and the report name the change and judge each part against
    its own α; compared with another run, the differences list the change (it is in no spec). After the
    run the control is gone."""
    import pandas as pd

    from tests.webapp.conftest import good_spec, wait_status

    app = create_app(results_root=tmp_path / "results", cleanup_on_start=False)
    server = live_server_factory(app)
    csrf = {"X-CSRF-Token": app.config["CSRF_TOKEN"]}
    run = app.test_client().post("/api/runs", json=good_spec(name="live-alpha", duration_s=12, links={},
                                                             flows=[{"src": "h1", "dst": "h2", "cc": "fast",
                                                                     "cc_args": {"alpha": 30}}]),
                                 headers=csrf).get_json()
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: "Content Security Policy" in msg.text and errors.append(msg.text))
    page.goto(f"{server.url}/runs/{run['id']}")
    wait_until(page, f"({FLOW_POINTS})() > 20", timeout=90_000)  # the flow runs (20 Hz samples: > 1 s)
    form = "form.live-cc[data-host='h1']"
    page.fill(f"{form} [name='alpha']", "0")
    page.evaluate(f"document.querySelector(\"{form} [name='alpha']\").removeAttribute('min')")  # past the browser
    page.click(f"{form} button")
    wait_until(page, f"document.querySelector(\"{form} .live-result\").textContent !== ''", timeout=10_000)
    assert page.inner_text(f"{form} .live-result") == "alpha: must be between 1 and 10000 packets (got 0)"
    page.fill(f"{form} [name='alpha']", "60")
    page.click(f"{form} button")
    wait_until(page, f"document.querySelector(\"{form} .live-result\").textContent.startsWith('α 60')",
               timeout=10_000)
    # the theory steps at the change, live: Σα 30 until it, 60 from it, and a marker where it happened
    queue_lines = """() => (document.getElementById('chart-queue').layout.shapes || [])
        .map((s) => [s.x0, s.y0, s.line.dash])"""
    wait_until(page, f"({queue_lines})().some(([x, y, dash]) => y === 60 && x > 0 && dash === 'dash')",
               timeout=10_000)
    shapes = page.evaluate(queue_lines)
    at_live = next(x for x, y, dash in shapes if y == 60 and dash == "dash")
    assert any(y == 30 and x == 0 and dash == "dash" for x, y, dash in shapes), shapes
    assert any(dash == "dot" and abs(x - at_live) < 1e-6 for x, _y, dash in shapes), shapes  # the marker
    page.screenshot(path=str(ARTIFACTS / "webapp-6-live-alpha.png"))
    assert wait_status(app, run["id"], ("done", "failed"), 120) == "done"
    events = pd.read_csv(tmp_path / "results" / run["id"] / "cc_events.csv")
    sets = events[events["event"] == "cc_set"]
    assert len(sets) == 1 and int(sets["alpha"].iloc[0]) == 60, sets  # the refused 0 changed nothing
    at = float(sets["t"].iloc[0])
    after = events[(events["event"] == "update") & (events["t"] > at)]
    assert not after.empty and float(after[after["alpha"] == 60]["t"].iloc[0]) - at < 1.0
    env = (tmp_path / "results" / run["id"] / "environment.json").read_text()
    assert '"live": true' in env
    # the live page reloads itself when the run ends, showing the results (a goto here raced that
    # reload in CI: "navigation interrupted by another navigation"); the reloaded page has no control
    page.wait_for_selector("#bundle", timeout=30_000)
    assert page.locator("#live-control").count() == 0
    wait_until(page, f"({queue_lines})().some(([x, y, dash]) => y === 60 && x > 0 && dash === 'dash')",
               timeout=10_000)
    assert abs(at_live - at) < 0.5, (at_live, at)  # the live page's change time is the recorded one
    said = page.inner_text("#what-happened")
    assert "the run's parameters changed 1 time" in said and "h1: α 30 → 60 at" in said, said
    assert "α = 30" in said and "α = 60" in said, said  # each part judged against its own α
    assert "h1: α 30 → 60 at" in page.inner_text("#summary-segments")
    page.screenshot(path=str(ARTIFACTS / "webapp-6b-live-alpha-results.png"), full_page=True)
    report = app.test_client().get(f"/runs/{run['id']}/report").get_data(as_text=True)
    assert "Parts of the run" in report and "h1: α 30 → 60 at" in report
    # compare: beside a run that changed nothing, the differences name the change (a live one is in no spec)
    write_run(tmp_path / "results", OTHER, "fast-a30", "fast", 30, 18.0)
    assert app.test_client().get("/api/runs").status_code == 200  # the history indexes the folder
    page.goto(f"{server.url}/compare?runs={run['id']},{OTHER}")
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)
    row = page.locator("#compare-differences tr", has_text="changes during the run").inner_text()
    assert "h1: α 30 → 60 at" in row, row
    page.screenshot(path=str(ARTIFACTS / "webapp-6c-live-alpha-compare.png"), full_page=True)
    assert not errors, errors
