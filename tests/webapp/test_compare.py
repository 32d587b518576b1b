"""History and compare (issue 14 item 2): pick runs in the history (filter by topology, algorithm,
name; delete), overlay them on one page whose address can be shared, with a table of what differs.
Runs here are folders in the engine's format written by the test: no experiment runs."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from fastlab.base.record import read_summary
from tests.webapp.conftest import ARTIFACTS, good_spec, wait_until
from webapp import compare, create_app

A = "20261124-100000-fast-a10-wabc001"
B = "20261124-100100-fast-a40-wabc002"
C = "20261124-100200-cubic-wabc003"


def write_run(root: Path, run_id: str, name: str, cc: str, alpha: int | None, rate: float) -> None:
    """A finished run's folder: spec, environment, summary, 10 s of flow and link traces at 20 Hz."""
    run = root / run_id
    run.mkdir(parents=True)
    flow: dict[str, Any] = {"src": "h1", "dst": "h2", "cc": cc} | ({"cc_args": {"alpha": alpha}} if alpha else {})
    spec = {"name": name, "topology": "dumbbell", "topology_args": {"rate_mbps": 20, "rtt_ms": 40}, "duration_s": 10,
            "seed": 1, "flows": [flow]}
    (run / "spec.yaml").write_text(json.dumps(spec))
    (run / "environment.json").write_text(json.dumps({
        "run": {"name": name, "prefix": "flabcd", "started": f"2026-11-24T10:0{run_id[12]}:00+00:00"},
        "kernel": "6.18", "backends": {}}))
    (run / "summary.json").write_text(json.dumps({
        "flows": [{"id": "f1", "src": "h1", "dst": "h2", "cc": cc, "throughput_mbps": rate,
                   "mean_rtt_ms": 40 + (alpha or 60) / 1.7, "min_rtt_ms": 40.0, "retransmits": 0 if alpha else 12}],
        "links": [{"id": "bottleneck", "capacity_mbps": 20, "utilization": rate / 20,
                   "mean_backlog_pkts": alpha or 60, "queue_drops": 0 if alpha else 12, "loss_drops": 0,
                   "drops": 0 if alpha else 12}], "jain_index": 1.0}))
    rows = ["flow,t,cwnd_pkts,srtt_ms,goodput_mbps"]
    rows += [f"f1,{i / 20:.2f},{60 + (alpha or 30 * math.sin(i / 20))},{40 + (alpha or 60) / 1.7},{rate}"
             for i in range(200)]
    (run / "flows.csv").write_text("\n".join(rows) + "\n")
    rows = ["t,link,direction,backlog_pkts"]
    for i in range(200):
        rows += [f"{i / 20:.2f},bottleneck,forward,{alpha or 60}", f"{i / 20:.2f},bottleneck,reverse,0"]
    (run / "links.csv").write_text("\n".join(rows) + "\n")


@pytest.fixture
def runs_app(tmp_path: Path) -> Any:
    write_run(tmp_path, A, "fast-a10", "fast", 10, 18.0)
    write_run(tmp_path, B, "fast-a40", "fast", 40, 19.5)
    write_run(tmp_path, C, "cubic", "cubic", None, 17.0)
    return create_app(results_root=tmp_path, start_worker=False, cleanup_on_start=False)


# --- pure parts -------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw", [None, "", " , ", A, f"{A},{A}", ",".join([A] * 9), "../etc,passwd", f"{A},NaN",
                                 f"{A},inf", "[" * 5000, "x" * 3000, 17, ["a", "b"], {"a": 1}, f"{A},{B[:-1]}\x00"])
def test_bad_run_lists_are_one_line_errors(raw: Any) -> None:
    with pytest.raises(compare.CompareError) as err:
        compare.parse_ids(raw)
    assert str(err.value).startswith("runs: ") and "\n" not in str(err.value) and len(str(err.value)) < 200


def test_run_lists_differences_metrics_and_thinning() -> None:
    assert compare.parse_ids(f" {A}, {B} ,") == [A, B]
    a = {"name": "x", "flows": [{"cc": "fast", "cc_args": {"alpha": 10}}], "links": {}}
    b = {"name": "y", "flows": [{"cc": "fast", "cc_args": {"alpha": 40}}, {"cc": "reno", "cc_args": {}}]}
    assert compare.differences([a, b]) == [
        {"field": "name", "values": ["x", "y"]}, {"field": "flows[0].cc_args.alpha", "values": [10, 40]},
        {"field": "flows[1].cc", "values": [None, "reno"]}]  # empty mappings are no fields: no row
    assert compare.differences([a, a]) == []
    # whole specs are compared with their defaults: a field one leaves out at its default is no difference
    full = {"name": "x", "topology": "dumbbell", "duration_s": 10, "flows": [{"src": "h1", "dst": "h2", "cc": "cubic"}]}
    assert compare.differences([full, full | {"sample_hz": 20, "seed": 1, "mtu": 1500}]) == []
    assert compare.differences([full, full | {"sample_hz": 50}]) == [{"field": "sample_hz", "values": [20.0, 50.0]}]
    rows = compare.metrics([read_summary({"flows": [{"id": "f1", "cc": "fast", "throughput_mbps": 18.0}],
                                          "links": [{"id": "bottleneck", "utilization": 0.9}], "jain_index": 1.0}),
                            None])
    by = {r["quantity"]: r["values"] for r in rows}
    assert by["f1 throughput"] == [18.0, None] and by["bottleneck utilization"] == [90.0, None]
    assert "f1 mean RTT" not in by  # no run has it: no row
    t = [i / 100 for i in range(10_000)]
    x, y = compare.thin(t, [1.0] * 9_999 + [float("nan")])
    assert len(x) <= compare.MAX_POINTS and all(v == 1.0 for v in y)
    assert compare.thin([0.0, 1.0], [float("inf"), 2.0]) == ([0.0, 1.0], [None, 2.0])


# --- API --------------------------------------------------------------------------------------------

def test_compare_api_overlays_and_differences(runs_app) -> None:
    client = runs_app.test_client()
    data = client.get(f"/api/compare?runs={A},{B}").get_json()
    assert [r["name"] for r in data["runs"]] == ["fast-a10", "fast-a40"]
    diff = {d["field"]: d["values"] for d in data["differences"]}
    assert diff == {"name": ["fast-a10", "fast-a40"], "flows[0].cc_args.alpha": [10, 40]}
    series = data["series"]
    assert len(series[0]["flows"]["f1"]["t"]) == 200 and series[1]["flows"]["f1"]["cwnd_pkts"][0] == 100
    assert set(series[0]["links"]) == {"bottleneck"} and series[0]["links"]["bottleneck"]["backlog_pkts"][0] == 10
    metrics = {m["quantity"]: m["values"] for m in data["metrics"]}
    assert metrics["bottleneck utilization"] == [90.0, 97.5]
    page = client.get(f"/compare?runs={A},{B}")
    assert page.status_code == 200 and b"flows[0].cc_args.alpha" in page.data and b"fast-a40" in page.data


@pytest.mark.parametrize("query, status, words", [
    ("", 422, "runs: give 2 to 8"), (f"runs={A}", 422, "not 1"), (f"runs={A},{A}", 422, "named twice"),
    (f"runs={A},..%2F..%2Fetc", 422, "is not a run id"), (f"runs={A},NaN", 422, "is not a run id"),
    ("runs=" + "9" * 5000, 422, "at most 2000 characters"), (f"runs={A}&runs=x", 422, "not 1"),
    (f"runs={A},20991231-000000-nosuch-w000000", 404, "not found"),
])
def test_bad_compare_requests_get_one_line_and_change_nothing(runs_app, query: str, status: int,
                                                              words: str) -> None:
    client = runs_app.test_client()
    before = sorted(p.name for p in Path(runs_app.config["RESULTS_ROOT"]).iterdir())
    resp = client.get(f"/api/compare?{query}")
    assert resp.status_code == status and words in resp.get_json()["error"], resp.get_json()
    assert "\n" not in resp.get_json()["error"]
    assert client.get(f"/compare?{query}").status_code == status
    assert sorted(p.name for p in Path(runs_app.config["RESULTS_ROOT"]).iterdir()) == before
    assert len(client.get("/api/runs").get_json()) == 3


def test_a_run_without_results_cannot_be_compared_or_deleted_while_queued(runs_app) -> None:
    client = runs_app.test_client()
    csrf = {"X-CSRF-Token": runs_app.config["CSRF_TOKEN"]}
    queued = client.post("/api/runs", json=good_spec(), headers=csrf).get_json()["id"]
    resp = client.get(f"/api/compare?runs={A},{queued}")
    assert resp.status_code == 409 and "is queued: only finished runs" in resp.get_json()["error"]
    resp = client.delete(f"/api/runs/{queued}", headers=csrf)
    assert resp.status_code == 409 and "cancel it first" in resp.get_json()["error"]
    assert client.get(f"/api/runs/{queued}").get_json()["status"] == "queued"


@pytest.mark.parametrize("hostile", ["..%2F..%2Fetc", "nosuchrun", "20261124-100000-..", "20261124-100000-x%00y",
                                     "20991231-000000-nosuch-w000000", "NaN", "9" * 300])
def test_delete_refuses_hostile_ids_and_needs_the_csrf_token(runs_app, hostile: str) -> None:
    client = runs_app.test_client()
    csrf = {"X-CSRF-Token": runs_app.config["CSRF_TOKEN"]}
    assert client.delete(f"/api/runs/{hostile}", headers=csrf).status_code == 404
    assert client.delete(f"/api/runs/{A}").status_code == 403  # no CSRF token: nothing deleted
    assert client.delete(f"/api/runs/{A}", headers={**csrf, "Origin": "http://evil.example"}).status_code == 403
    assert (Path(runs_app.config["RESULTS_ROOT"]) / A).is_dir() and len(client.get("/api/runs").get_json()) == 3


def test_delete_removes_the_folder_and_the_row_for_good(runs_app, tmp_path: Path) -> None:
    client = runs_app.test_client()
    csrf = {"X-CSRF-Token": runs_app.config["CSRF_TOKEN"]}
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the app's")
    link = "20261124-100300-link-wabc004"
    (tmp_path / link).symlink_to(outside)  # a folder reached through a link: the link goes, not its target
    assert client.delete(f"/api/runs/{link}", headers=csrf).status_code == 404  # unknown to the history
    resp = client.delete(f"/api/runs/{A}", headers=csrf)
    assert resp.status_code == 200 and resp.get_json() == {"deleted": A}
    assert not (tmp_path / A).exists() and (outside / "keep.txt").is_file()
    assert [r["id"] for r in client.get("/api/runs").get_json()] == [C, B]  # not re-indexed from disk
    assert client.get(f"/runs/{A}").status_code == 404
    assert client.delete(f"/api/runs/{A}", headers=csrf).status_code == 404


# --- browser ----------------------------------------------------------------------------------------

@pytest.mark.timeout(120)
def test_pick_two_runs_in_the_history_and_compare_them(runs_app, live_server_factory, browser) -> None:
    """Filter the history by algorithm, tick the two FAST runs, compare: both runs' traces overlaid on
    every chart in their own colours, alpha 10 against 40 in the table of differences, the page's
    address names both runs (shared, it shows the same). Then delete the cubic run from the history."""
    server = live_server_factory(runs_app)
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: msg.type in ("error", "warning") and errors.append(msg.text))
    page.goto(server.url + "/")
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)
    assert page.is_disabled("#compare-selected")
    page.select_option("#filter-cc", "fast")
    visible = "[...document.querySelectorAll('#runs tr[data-run-id]:not(.hidden)')].map(r => r.dataset.runId)"
    assert sorted(page.evaluate(visible)) == [A, B]
    page.select_option("#filter-cc", "")
    page.fill("#filter-text", "a40")
    assert page.evaluate(visible) == [B]
    page.fill("#filter-text", "")
    page.check(f"tr[data-run-id='{A}'] .pick")
    assert page.is_disabled("#compare-selected")  # one run is no comparison
    page.check(f"tr[data-run-id='{B}'] .pick")
    assert not page.is_disabled("#compare-selected")
    page.screenshot(path=str(ARTIFACTS / "webapp-7-history-picked.png"))
    page.click("#compare-selected")
    page.wait_for_url("**/compare?runs=*", timeout=10_000)
    assert sorted(page.url.split("runs=", 1)[1].split(",")) == [A, B]
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)
    names = page.evaluate("document.getElementById('compare-cwnd').data.map(t => t.name)")
    assert sorted(names) == ["A fast-a40 · f1", "B fast-a10 · f1"], names
    colours = page.evaluate("['compare-goodput', 'compare-cwnd', 'compare-rtt', 'compare-queue'].map(id => "
                            "document.getElementById(id).data.map(t => t.line.color).join())")
    assert len(set(colours)) == 1 and len(set(colours[0].split(","))) == 2, colours  # a colour per run, everywhere
    cwnd = page.evaluate("document.getElementById('compare-cwnd').data.map(t => t.y[0])")
    assert sorted(cwnd) == [70, 100]
    row = page.locator("#compare-differences tr", has_text="flows[0].cc_args.alpha").inner_text()
    assert "40" in row and "10" in row
    # the theory beside the traces (issue 32): one capacity line both runs share, each run's Σα in its colour
    capacity = page.evaluate("document.getElementById('compare-goodput').layout.annotations.map(a => a.text)")
    assert capacity == ["A, B: capacity 20 Mb/s"], capacity
    sums = page.evaluate("document.getElementById('compare-queue').layout.annotations.map(a => a.text)")
    assert sorted(sums) == ["A: Σα = 40", "B: Σα = 10"], sums
    title = "document.getElementById('compare-goodput').layout.title.text"
    assert page.evaluate(title).endswith("moving average of 5 samples")
    page.select_option("#compare-smooth", "1")
    wait_until(page, f"{title} === 'Throughput (goodput) per flow'")
    assert "97.5" in page.locator("#compare-results tr", has_text="bottleneck utilization").inner_text()
    page.screenshot(path=str(ARTIFACTS / "webapp-8-compare.png"), full_page=True)
    shared = browser.new_page(viewport={"width": 1024, "height": 768})  # the link, opened elsewhere
    shared.goto(page.url)
    assert shared.locator("#compare-runs").inner_text() == page.locator("#compare-runs").inner_text()
    shared.close()

    page.goto(server.url + "/")
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)
    page.check(f"tr[data-run-id='{C}'] .pick")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#delete-selected")
    wait_until(page, "document.getElementById('history-result').textContent.startsWith('deleted')", timeout=10_000)
    assert page.locator(f"tr[data-run-id='{C}']").count() == 0
    assert not (Path(runs_app.config["RESULTS_ROOT"]) / C).exists()
    page.reload()
    assert page.locator("#runs tr[data-run-id]").count() == 2
    assert not errors, errors
