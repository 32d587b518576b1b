"""report.html's plotly.js kept once per results folder (issue 51 item 3): a report opened from disk finds
it beside itself, in the results folder above or in a sweep's folder, offline; a run's bundle carries its
copy and opens on its own; a report with none anywhere says so instead of failing silently. In Debian's
chromium through file:// URLs: no server, no network."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pandas as pd

from fastlab.base.rundir import RunFolder
from fastlab.define.schema import parse_spec
from fastlab.results import bundle, report
from tests.webapp.conftest import ARTIFACTS, wait_until, watch
from tests.webapp.test_charts import RUN, write_lossy_fast_run


def recorded_run(root: Path) -> Path:
    """A run folder written as the engine writes one (traces as CSV, report.html drawn from them)."""
    run = write_lossy_fast_run(root)
    samples = [json.loads(line) for line in (run / "partial.jsonl").read_text().splitlines()]
    (run / "partial.jsonl").unlink()
    for kind, name in (("flow", "flows.csv"), ("link", "links.csv"), ("event", "cc_events.csv")):
        pd.DataFrame([{k: v for k, v in s.items() if k != "kind"} for s in samples if s["kind"] == kind]) \
            .to_csv(run / name, index=False)
    folder = RunFolder(run)
    spec = parse_spec(folder.spec())
    folder.write_report(report.render(folder.path("spec.yaml").read_text(), folder.summary(), folder.environment(),
                                      folder.flows(), folder.links(), folder.events(), None, spec.duration_s))
    return run


def open_report(browser, path: Path, shot: str) -> tuple[int, list[str], str]:
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    problems = watch(page)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    wait_until(page, "document.body.dataset.ready === '1'", timeout=30_000)
    charts = page.evaluate("document.querySelectorAll('.chart .main-svg').length")
    note = page.locator("#no-plotly").inner_text() if page.locator("#no-plotly").count() else ""
    page.screenshot(path=str(ARTIFACTS / shot), full_page=False)
    page.close()
    assert all(u.startswith(("file://", "data:", "blob:")) for u in requests), requests  # offline
    # the loader tries the places in turn: on disk, a place that does not hold the file is a failed load in
    # the console (a file:// URL cannot be asked first); through the web app the first place always answers
    return charts, [p for p in problems if "net::ERR_FILE_NOT_FOUND" not in p], note


def test_a_report_finds_plotly_in_its_results_folder_and_its_bundle_carries_it(tmp_path: Path, browser) -> None:
    results = tmp_path / "results"
    run = recorded_run(results)
    html = (run / "report.html").read_text()
    assert len(html) < 1_000_000 and "plotly.js v" not in html  # the library is not inlined any more
    report.share_plotly(results)
    assert [p.name for p in results.iterdir() if p.suffix == ".js"] == [report.PLOTLY_FILE]
    charts, problems, note = open_report(browser, run / "report.html", "report-shared-plotly.png")
    assert charts >= 5 and not note and not problems, (charts, note, problems)

    zip_path = bundle.export(run, tmp_path / "run.zip")  # the bundle carries the results folder's copy
    assert f"{RUN}/{report.PLOTLY_FILE}" in zipfile.ZipFile(zip_path).namelist() and bundle.verify(zip_path) == []
    opened = bundle.extract(zip_path, tmp_path / "elsewhere")
    charts, problems, note = open_report(browser, opened / "report.html", "report-bundled-plotly.png")
    assert charts >= 5 and not note and not problems, (charts, note, problems)


def test_a_report_with_no_plotly_anywhere_says_so(tmp_path: Path, browser) -> None:
    run = recorded_run(tmp_path / "alone")
    charts, _problems, note = open_report(browser, run / "report.html", "report-no-plotly.png")
    assert charts == 0 and note.startswith(f"The charts need plotly.js: no {report.PLOTLY_FILE} beside this report")
