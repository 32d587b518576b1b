"""A mahimahi trace uploaded in the form (issue 33 item 4), in Chromium against the real server and engine:
a bad file is one line beside the trace field and changes nothing; a good one is named beside the field,
the spec carries its reference, a 5-s run over it finishes and its page names the trace, and the run folder
keeps the uploaded bytes as the engine's copy. Screenshot: test-artifacts/webapp-trace-form.png."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest
import yaml

from fastlab.service.store import connect
from tests.webapp.conftest import ARTIFACTS, form_with_preset, wait_until, watch

# 10 delivery opportunities every 12 ms: 10 * 1504 B * 8 / 12 ms = 10.03 Mb/s, bursts of 2 every 2.4 ms
TRACE = "".join(f"{ms}\n" for ms in (2, 2, 5, 5, 7, 7, 10, 10, 12, 12))
def wait_done(database: Path, run_id: str, timeout_s: float) -> str:
    """The run's status once it is no longer queued or running (the history's row)."""
    deadline = time.monotonic() + timeout_s
    while True:
        with connect(database) as conn:
            status = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()["status"]
        if status not in ("queued", "running") or time.monotonic() > deadline:
            return str(status)
        time.sleep(0.5)


NOTE = "document.querySelector('.link[data-link=\"bottleneck\"] .trace-error')"


@pytest.mark.alone  # a real experiment
@pytest.mark.timeout(180)
def test_upload_a_trace_run_over_it_and_see_it_named(tmp_path: Path, live_server_factory, browser) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page, problems = form_with_preset(tmp_path / "results", live_server_factory, browser, "example", worker=True)
    bad, good = tmp_path / "bad.trace", tmp_path / "cellular.down"
    bad.write_text("5\n7\n6\n")
    good.write_text(TRACE)

    # a bad file: the server's line beside the field; no trace in the spec, nothing stored
    page.set_input_files("[name='bottleneck-trace']", str(bad))
    wait_until(page, f"{NOTE} !== null", timeout=10_000)
    assert page.inner_text(".trace-error") == "bad.trace:3: below the line before (timestamps must be non-decreasing)"
    assert page.get_attribute("[name='bottleneck-trace']", "aria-invalid") == "true"
    assert not (tmp_path / "results" / ".uploads" / "traces").exists()
    page.locator("fieldset:has(#links)").screenshot(path=str(ARTIFACTS / "webapp-trace-form-bad.png"))

    # a good one: named beside the field, in the spec as its reference; the note goes
    page.set_input_files("[name='bottleneck-trace']", str(good))
    wait_until(page, "document.querySelector('.trace-name').textContent !== ''", timeout=10_000)
    assert page.evaluate(f"{NOTE} === null")
    sha = hashlib.sha256(TRACE.encode()).hexdigest()
    assert page.inner_text(".trace-name") == "cellular.down: 10 opportunities per 12 ms, mean 10.027 Mb/s"
    page.fill("#f-duration_s", "5")
    page.fill("#f-name", "trace-upload")
    wait_until(page, "document.getElementById('validation').className === 'valid' && "
                     "document.getElementById('spec-yaml').textContent.includes('upload:')", timeout=10_000)
    assert page.inner_text("#validation") == \
        "valid: ready to start · links shaped: bottleneck by fastlab's link emulator"
    assert f"trace: upload:{sha}" in page.inner_text("#spec-yaml")
    page.locator("fieldset:has(#links)").screenshot(path=str(ARTIFACTS / "webapp-trace-form.png"))
    page.screenshot(path=str(ARTIFACTS / "webapp-trace-form-page.png"), full_page=True)

    page.click("#start")
    page.wait_for_url("**/runs/*", timeout=10_000)
    run_id = page.url.rsplit("/", 1)[1]
    # polled in the history, not in the page: the live page reloads itself when the run ends (a page.evaluate
    # then loses its context)
    status = wait_done(tmp_path / "results" / "history.sqlite3", run_id, timeout_s=90)
    assert status == "done", status
    # the finished run's page, opened afresh: the live page reloads itself at the run's end, and a goto there
    # races that reload ("navigation interrupted by another navigation", seen once in CI)
    url, page = page.url, page.context.new_page()
    run_page_problems = watch(page)
    page.goto(url)
    assert page.inner_text("#traces") == (
        f"links.bottleneck.trace: the uploaded trace {sha[:12]}…, 10 delivery opportunities every 12 ms (mean "
        "10 Mb/s); the run folder keeps its copy, trace_bottleneck_forward.txt")
    folder = tmp_path / "results" / run_id
    assert (folder / "trace_bottleneck_forward.txt").read_text() == TRACE
    assert yaml.safe_load((folder / "spec.yaml").read_text())["links"]["bottleneck"]["trace"] \
        == "trace_bottleneck_forward.txt"
    page.screenshot(path=str(ARTIFACTS / "webapp-trace-run.png"), full_page=True)
    assert problems == [] and run_page_problems == [], (problems, run_page_problems)
