"""Every page of the app (a queued sweep too) in Chromium: no console error or warning, no uncaught exception, no failed
or refused request (CSP, 404 of an asset, favicon), at 1440x900 (issue 14 acceptance: no console
errors on any page). Runs are folders written by the test; the labs are the repository's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fastlab.labs import LABS_DIR, lab_folders
from tests.webapp.conftest import ARTIFACTS, good_spec
from tests.webapp.test_compare import A, B, write_run
from webapp import create_app


def watch(page: Any, problems: list[str]) -> None:
    page.on("console", lambda m: m.type in ("error", "warning") and problems.append(f"console {m.type}: {m.text}"))
    page.on("pageerror", lambda exc: problems.append(f"uncaught: {exc}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} {r.failure}"))
    page.on("response", lambda r: r.status >= 400 and problems.append(f"HTTP {r.status}: {r.url}"))


@pytest.mark.timeout(240)
def test_no_page_logs_an_error(tmp_path: Path, live_server_factory, browser) -> None:
    write_run(tmp_path, A, "fast-a10", "fast", 10, 18.0)
    write_run(tmp_path, B, "fast-a40", "fast", 40, 19.5)
    app = create_app(results_root=tmp_path, start_worker=False, cleanup_on_start=False)
    csrf = {"X-CSRF-Token": app.config["CSRF_TOKEN"]}
    queued = app.test_client().post("/api/runs", json=good_spec(), headers=csrf).get_json()["id"]
    sweep = app.test_client().post("/api/sweeps", headers=csrf, json={
        "spec": good_spec(links={}), "param": "flows.0.cc_args.alpha", "values": [10, 20]}).get_json()["url"]
    server = live_server_factory(app)
    labs = [f"/labs/{n}" for n in range(1, len(lab_folders(LABS_DIR)) + 1)]
    pages = ["/", "/new", "/labs", *labs, "/doctor", f"/runs/{A}", f"/runs/{queued}", f"/compare?runs={A},{B}",
             sweep, "/api/openapi.json"]
    found: dict[str, list[str]] = {}
    for url in pages:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        problems: list[str] = []
        watch(page, problems)
        page.goto(server.url + url, wait_until="load")
        page.wait_for_timeout(800)  # modules, fetches and the first live events
        if url in ("/", "/new", f"/runs/{A}", f"/compare?runs={A},{B}"):
            name = url.strip("/").split("?")[0].replace("/", "-") or "index"
            page.screenshot(path=str(ARTIFACTS / f"webapp-page-{name[:40]}.png"))
        if problems:
            found[url] = problems
        page.close()
    assert found == {}, found
    assert len(pages) >= 14
