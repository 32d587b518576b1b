"""A topology plugin in the web app (issue 48 item 2): the instructor configures a topology file
(FASTLAB_TOPOLOGIES) and the form offers it by name, with its own arguments and hosts; a student runs it
from the form (Playwright + Debian chromium, the real engine). A spec naming a topology file is refused by
the server (`python -m webapp` calls only_catalogued): it imports no file a request names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fastlab.define import topology
from tests.conftest import REPO
from tests.webapp.conftest import ARTIFACTS, good_spec, wait_until
from webapp import create_app

EXAMPLE = REPO / "examples" / "plugin-topology" / "parking_lot.py"


def test_the_catalogue_offers_a_configured_topology(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(topology.CONFIG_VAR, str(EXAMPLE))
    client = create_app(results_root=tmp_path / "results", start_worker=False).test_client()
    rows = {row["name"]: row for row in client.get("/api/topologies").get_json()}
    assert rows["parking-lot"]["hosts"] == ["h1", "h2", "h3", "h4", "h5", "h6"]
    assert rows["parking-lot"]["shaped_links"] == ["left", "right"]
    assert set(rows["parking-lot"]["args_schema"]["properties"]) == {"rate_mbps", "hop_rtt_ms", "buffer_bdp"}
    plan = client.get('/api/topologies/parking-lot?args={"rate_mbps": 5}').get_json()
    assert plan["shaped_links"] == ["left", "right"]


def test_the_server_refuses_a_topology_file_a_spec_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What only_catalogued does to the server's checks: the file is refused in one line naming the field,
    before it is opened (it would raise if imported); the same file configured is accepted by name."""
    trap = tmp_path / "trap.py"
    trap.write_text("raise SystemExit('imported a file a browser named')\n")
    monkeypatch.setattr(topology, "_FILES_REFUSED", None)
    topology.only_catalogued("the web app imports no topology file a spec names")
    app = create_app(results_root=tmp_path / "results", start_worker=False)
    client, csrf = app.test_client(), {"X-CSRF-Token": app.config["CSRF_TOKEN"]}
    for path in ("/api/validate", "/api/runs"):
        resp = client.post(path, json=good_spec(topology={"file": str(trap)}), headers=csrf)
        assert resp.status_code == 422, (path, resp.get_json())
        assert resp.get_json()["error"].startswith("topology.file: the web app imports no topology file")
    monkeypatch.setenv(topology.CONFIG_VAR, str(EXAMPLE))
    spec = good_spec(topology="parking-lot", topology_args={}, links={})
    assert client.post("/api/validate", json=spec, headers=csrf).status_code == 200
    # the server's entry point makes the call, before it creates the app
    main = ast.parse((REPO / "webapp" / "__main__.py").read_text())
    calls = [n.func.id for n in ast.walk(main) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    assert calls.index("only_catalogued") < calls.index("create_app")


@pytest.mark.alone  # a real experiment
@pytest.mark.timeout(240)
def test_a_configured_topology_runs_from_the_form(tmp_path: Path, live_server_factory, browser,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(topology.CONFIG_VAR, str(EXAMPLE))
    ARTIFACTS.mkdir(exist_ok=True)
    app = create_app(results_root=tmp_path / "results", cleanup_on_start=False)
    server = live_server_factory(app)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.url + "/new")
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)
    assert "parking-lot" in page.eval_on_selector_all("#f-topology option", "os => os.map(o => o.value)")
    page.select_option("#f-topology", "parking-lot")
    wait_until(page, "document.querySelector('#topology-args [name=\"hop_rtt_ms\"]') !== null")
    assert page.inner_text("#topology-description").startswith("two bottlenecks in a row")
    wait_until(page, "document.querySelector('.flow [data-flow=\"src\"]').options.length === 6")
    page.fill("#topology-args [name='rate_mbps']", "10")
    page.fill("#f-duration_s", "4")
    page.fill("#f-name", "browser-parking-lot")
    wait_until(page, "document.getElementById('validation').className === 'valid'", timeout=10_000)
    page.screenshot(path=str(ARTIFACTS / "webapp-plugin-topology-form.png"), full_page=True)
    page.click("#start")
    page.wait_for_url("**/runs/*", timeout=10_000)
    run_id = page.url.rsplit("/", 1)[1]
    page.wait_for_selector("#bundle", timeout=150_000)
    run = app.test_client().get(f"/api/runs/{run_id}").get_json()
    assert run["status"] == "done", run
    assert run["spec"]["topology"] == "parking-lot" and run["summary"]["flows"][0]["src"] == "h1"
    assert run["summary"]["flows"][0]["throughput_mbps"] > 1.0  # h1 -> h2 through both 10 Mb/s links
    page.screenshot(path=str(ARTIFACTS / "webapp-plugin-topology-results.png"), full_page=True)
    assert errors == []
