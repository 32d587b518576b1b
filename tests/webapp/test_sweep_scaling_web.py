"""Capacity sweeps with flow-count scaling from the web (issue 33 item 4): POST /api/sweeps with
`scale_flows` plans the points with fastlab.sweep.points's engine (N' = N C'/C whole flows, the reference said in
each point's description), queues them, and the sweep's page says the scaling in words; the form round
trip (checkbox, reference filled from the form's own point) in Chromium, live: a 2-point sweep of 4-s runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.webapp.conftest import ARTIFACTS, form_with_preset, good_spec, queued_count, wait_until
from webapp import create_app, sweeps

CAPACITY = "topology_args.rate_mbps"
SCALE = {"flow": 0, "reference_flows": 1, "reference_capacity_mbps": 10}


def body(**changes: Any) -> dict[str, Any]:
    spec = good_spec(links={}, topology_args={"rate_mbps": 10, "rtt_ms": 40},
                     flows=[{"src": "h1", "dst": "h2", "cc": "reno"}])
    return {"spec": spec, "param": CAPACITY, "values": [10, 20], "repeat": 1, "scale_flows": SCALE} | changes


@pytest.fixture
def sweep_app(tmp_path: Path) -> Any:
    return create_app(results_root=tmp_path / "results", start_worker=False, cleanup_on_start=False)


def test_point_specs_scale_the_flows_with_the_capacity() -> None:
    req = sweeps.parse_request(body(values=[10, 20, 40]))
    specs = [data for _i, _r, data in sweeps.point_specs(req)]
    assert [(s["topology_args"]["rate_mbps"], s["flows"][0]["count"]) for s in specs] == [(10, 1), (20, 2), (40, 4)]
    assert specs[2]["description"] == "at 40 Mb/s, scaled: 4 flows carry the per-flow window of 1 flow at 10 Mb/s"
    assert sweeps.sweep_document(req)["sweep"]["scale_flows"] == SCALE | {"capacity": CAPACITY}


def test_a_scaled_sweep_queues_its_points_and_its_page_says_the_scaling(sweep_app) -> None:
    client = sweep_app.test_client()
    csrf = {"X-CSRF-Token": sweep_app.config["CSRF_TOKEN"]}
    resp = client.post("/api/sweeps", json=body(), headers=csrf)
    assert resp.status_code == 201, resp.get_json()
    sweep = resp.get_json()
    assert sweep["scaling"] == ["at 10 Mb/s, scaled: 1 flow carries the per-flow window of 1 flow at 10 Mb/s",
                                "at 20 Mb/s, scaled: 2 flows carry the per-flow window of 1 flow at 10 Mb/s"]
    runs = client.get("/api/runs").get_json()
    assert sorted(r["spec"]["flows"][0]["count"] for r in runs) == [1, 2]
    assert any(r["spec"]["description"].startswith("at 20 Mb/s, scaled: 2 flows") for r in runs)
    page = client.get(sweep["url"]).get_data(as_text=True)
    assert "<li>at 20 Mb/s, scaled: 2 flows carry the per-flow window of 1 flow at 10 Mb/s</li>" in page


@pytest.mark.parametrize("changes, words", [
    ({"values": [10, 4]}, "sweep.scale_flows: at 4 Mb/s, N' = 1 x 4/10 = 0.4 flows, fewer than one"),
    ({"values": [10, 14]}, "sweep.scale_flows: at 14 Mb/s, N' = 1.4 rounds to 1 flow,"),
    ({"param": "flows.0.cc_args.alpha"}, "sweep.scale_flows.capacity: flows.0.cc_args.alpha is not a capacity"),
    ({"scale_flows": SCALE | {"reference_flows": -1}}, "sweep.scale_flows.reference_flows: "),
    ({"scale_flows": SCALE | {"reference_capacity_mbps": None}}, "sweep.scale_flows.reference_capacity_mbps: "),
    ({"scale_flows": SCALE | {"flow": 5}}, "sweep.scale_flows.flow: the spec has no flows.5 to scale"),
    ({"scale_flows": SCALE | {"surprise": 1}}, "sweep.scale_flows.surprise: "),
    ({"scale_flows": [1, 2]}, "scale_flows: "),
])
def test_a_nonsensical_scaling_is_one_line_and_queues_nothing(sweep_app, changes: dict[str, Any],
                                                             words: str) -> None:
    client = sweep_app.test_client()
    resp = client.post("/api/sweeps", json=body(**changes), headers={"X-CSRF-Token": sweep_app.config["CSRF_TOKEN"]})
    assert resp.status_code == 422, resp.get_json()
    error = resp.get_json()["error"]
    assert error.startswith(words) and "\n" not in error, error
    assert queued_count(sweep_app) == 0


@pytest.mark.alone  # a real experiment
@pytest.mark.timeout(180)
def test_a_two_point_scaled_capacity_sweep_from_the_form(tmp_path: Path, live_server_factory, browser) -> None:
    """The form: Reno on the dumbbell at 10 Mb/s, one flow; sweep its capacity 10, 20 with the flows scaled
    (the reference filled from the form: 1 flow at 10 Mb/s); two 4-s runs carry 1 and 2 flows and finish."""
    app = create_app(results_root=tmp_path / "results", cleanup_on_start=False)
    page, errors = form_with_preset(tmp_path, live_server_factory, browser, "example", viewport=(1280, 900), app=app)
    page.fill("#topology-args [name='rate_mbps']", "10")
    page.fill("#f-duration_s", "4")
    page.fill("#f-name", "scaled-sweep")
    wait_until(page, f"[...document.querySelectorAll('#sweep-param option')].some(o => o.value === '{CAPACITY}')",
               timeout=10_000)
    page.select_option("#sweep-param", CAPACITY)
    page.fill("#sweep-values", "10, 20")
    page.check("#sweep-scale")
    assert page.is_visible("#sweep-scale-fields")
    assert (page.input_value("#sweep-scale-n"), page.input_value("#sweep-scale-c")) == ("1", "10")
    wait_until(page, "document.getElementById('yaml-state').textContent.includes('validated') && "
                     "document.getElementById('spec-yaml').textContent.includes('scaled-sweep')", timeout=10_000)
    page.fill("#sweep-values", "10, 14")  # 1.4 flows: refused in one line beside the sweep, nothing queued
    page.click("#start-sweep")
    wait_until(page, "document.getElementById('sweep-error').textContent !== ''", timeout=10_000)
    assert "N' = 1.4 rounds to 1 flow," in page.inner_text("#sweep-error")
    assert queued_count(app) == 0
    page.fill("#sweep-values", "10, 20")
    page.locator("#sweep-fields").screenshot(path=str(ARTIFACTS / "webapp-sweep-scaled-form.png"))
    page.click("#start-sweep")
    page.wait_for_url("**/sweeps/*", timeout=10_000)
    assert page.inner_text("#sweep-scaling") == (
        "at 10 Mb/s, scaled: 1 flow carries the per-flow window of 1 flow at 10 Mb/s\n"
        "at 20 Mb/s, scaled: 2 flows carry the per-flow window of 1 flow at 10 Mb/s")
    wait_until(page, "document.body.dataset.sweepFinished === '1'", timeout=120_000)
    state = page.evaluate(f"fetch('{page.url.replace('/sweeps/', '/api/sweeps/')}').then(r => r.json())")
    assert state["done"] == 2, state["points"]
    runs = {r["id"]: r for r in page.evaluate("fetch('/api/runs').then(r => r.json())")}
    counts = sorted((runs[p["run"]]["spec"]["topology_args"]["rate_mbps"], len(runs[p["run"]]["summary"]["flows"]))
                    for p in state["points"])
    assert counts == [(10, 1), (20, 2)], counts  # the runs carried N' flows
    page.screenshot(path=str(ARTIFACTS / "webapp-sweep-scaled.png"), full_page=True)
    assert errors == [], errors
