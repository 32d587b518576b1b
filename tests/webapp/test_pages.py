"""Every page of the app (a queued sweep too) in Chromium: no console error or warning, no uncaught exception, no failed
or refused request (CSP, 404 of an asset, favicon), at 1440x900 (issue 14 acceptance: no console
errors on any page); the pages a class meets again at 1024x768 (a projector), each screenshot at both sizes
in test-artifacts/ (issue 32). Runs are folders written by the test; the labs are the repository's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from fastlab.base.rundir import RunFolder
from fastlab.define.schema import parse_spec
from fastlab.labs.kit import LABS_DIR, lab_folders
from fastlab.results import report
from fastlab.theory import fast as fast_theory
from tests.webapp.conftest import ARTIFACTS, good_spec
from tests.webapp.test_compare import A, B, write_run
from webapp import create_app


def watch(page: Any, problems: list[str]) -> None:
    page.on("console", lambda m: m.type in ("error", "warning") and problems.append(f"console {m.type}: {m.text}"))
    page.on("pageerror", lambda exc: problems.append(f"uncaught: {exc}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} {r.failure}"))
    page.on("response", lambda r: r.status >= 400 and problems.append(f"HTTP {r.status}: {r.url}"))


def write_report(root: Path, run_id: str) -> None:
    """The report.html the engine writes at the end of a run, for a test-written run (its traces and summary),
    so the report page is looked at as a student opens it."""
    folder = RunFolder(root / run_id)
    environment = folder.environment()
    environment.tools = {"fastlab": "test"}
    refs = fast_theory.references(parse_spec(folder.spec()))
    html = report.render(folder.path("spec.yaml").read_text(), folder.summary(), environment, folder.flows(),
                         folder.links(), pd.DataFrame(), refs, folder.spec()["duration_s"])
    folder.write_report(html)


@pytest.mark.timeout(360)
@pytest.mark.lengthy
def test_no_page_logs_an_error(tmp_path: Path, live_server_factory, browser) -> None:
    write_run(tmp_path, A, "fast-a10", "fast", 10, 18.0)
    write_run(tmp_path, B, "fast-a40", "fast", 40, 19.5)
    write_report(tmp_path, A)
    app = create_app(results_root=tmp_path, start_worker=False, cleanup_on_start=False)
    csrf = {"X-CSRF-Token": app.config["CSRF_TOKEN"]}
    queued = app.test_client().post("/api/runs", json=good_spec(), headers=csrf).get_json()["id"]
    sweep = app.test_client().post("/api/sweeps", headers=csrf, json={
        "spec": good_spec(links={}), "param": "flows.0.cc_args.alpha", "values": [10, 20]}).get_json()["url"]
    server = live_server_factory(app)
    labs = [f"/labs/{n}" for n in range(1, len(lab_folders(LABS_DIR)) + 1)]
    pages = ["/", "/new", "/labs", *labs, "/doctor", f"/runs/{A}", f"/runs/{A}/report", f"/runs/{queued}",
             f"/compare?runs={A},{B}", "/sweeps", sweep, "/api/openapi.json"]
    # issue 32: a screenshot of each page a class meets, at the laptop's and the projector's size
    shots = {"/": "home", "/new": "form", "/labs/2": "lab", f"/runs/{queued}": "live", f"/runs/{A}": "results",
             f"/runs/{A}/report": "report", f"/compare?runs={A},{B}": "compare", sweep: "sweep",
             "/sweeps": "sweeps"}
    found: dict[str, list[str]] = {}
    for width, height in ((1440, 900), (1024, 768)):
        for url in pages if width == 1440 else list(shots):
            page = browser.new_page(viewport={"width": width, "height": height})
            problems: list[str] = []
            watch(page, problems)
            page.goto(server.url + url, wait_until="load")
            page.wait_for_timeout(800)  # modules, fetches and the first live events
            if url in shots:
                page.screenshot(path=str(ARTIFACTS / f"webapp-page-{width}x{height}-{shots[url]}.png"))
            if problems:
                found[f"{url} at {width}x{height}"] = problems
            page.close()
    assert found == {}, found
    assert len(pages) >= 14
