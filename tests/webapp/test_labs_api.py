"""Guided labs in the web app: catalogue, lab pages (handout rendered safely), queueing a step as an
ordinary run that remembers its lab, hostile refs and bodies, the schema migration, and the
checkpoints of a real short step run (the tiny lab of conftest: a 4 s dumbbell run, needs root)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from fastlab.base.rundir import RunFolder
from tests.webapp.conftest import good_spec, queued_count, wait_status
from webapp import create_app


@pytest.fixture
def lab_app(tmp_path: Path, tiny_labs: Path):
    return create_app(results_root=tmp_path / "results", start_worker=False, labs_dir=tiny_labs)


@pytest.fixture
def lab_client(lab_app):
    return lab_app.test_client()


@pytest.fixture
def lab_csrf(lab_app) -> dict[str, str]:
    return {"X-CSRF-Token": lab_app.config["CSRF_TOKEN"]}


def test_catalogue_lists_labs_and_a_broken_one_with_its_error(lab_app, lab_client, tiny_labs: Path) -> None:
    broken = tiny_labs / "02-broken"
    broken.mkdir()
    (broken / "lab.yaml").write_text("title: Broken\nsummary: no steps\nminutes: 3\nsteps: []\n")
    labs = lab_client.get("/api/labs").get_json()
    assert [lab["number"] for lab in labs] == [1, 2]
    tiny, bad = labs
    assert (tiny["title"], tiny["minutes"], len(tiny["steps"]), tiny["url"]) == \
        ("Tiny lab of the web app tests", 0.5, 2, "/labs/01-tiny")
    assert tiny["steps"][0]["checkpoints"][1] == {"check": "utilization", "name": "impossible utilization",
                                                 "args": {"lo": 1.5, "hi": 2.0}, "full_only": None}
    assert bad["name"] == "02-broken" and "steps" in bad["error"] and "title" not in bad
    resp = lab_client.get("/api/labs/2")
    assert resp.status_code == 500 and resp.get_json()["error"].startswith("02-broken/lab.yaml: steps")
    page = lab_client.get("/labs").get_data(as_text=True)
    assert "Tiny lab of the web app tests" in page and "cannot be loaded: 02-broken/lab.yaml" in page
    assert 'href="/labs"' in page  # in the navigation of every page


@pytest.mark.parametrize("ref", ["1", "01", "01-tiny", "tiny"])
def test_one_lab_with_handout_and_resolved_specs(lab_client, ref: str) -> None:
    lab = lab_client.get(f"/api/labs/{ref}").get_json()
    assert lab["name"] == "01-tiny" and lab["handout"].startswith("# Tiny lab")
    fill, nocc = lab["steps"]
    assert (fill["experiment"]["duration_s"], fill["experiment_short"]["duration_s"]) == (8, 4)
    assert (fill["set"], fill["short"], fill["error"]) == (["duration_s=8"], ["duration_s=4"], None)
    assert nocc["experiment"]["flows"][0]["cc"] == "nosuchcc"  # structurally valid; the engine rejects it


def test_lab_page_renders_the_handout_without_its_html(lab_client) -> None:
    page = lab_client.get("/labs/1").get_data(as_text=True)
    handout = page[page.index('<article id="handout"'):page.index("</article>")]
    assert "<h1>" not in handout and "<h1>Lab 01: Tiny lab of the web app tests</h1>" in page  # one title
    assert "<td>20 Mb/s</td>" in handout and "<code>w = alpha·D/(D−d)</code>" in handout
    # formulas typeset on the server as MathML; one whose converter output carries markup stays its source
    assert '<math xmlns="http://www.w3.org/1998/Math/MathML" display="inline">' in handout and "<mi>α</mi>" in handout
    assert "<code>\\text{&lt;img src=x onerror=window.pwned=4&gt;}</code>" in handout
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in handout
    assert "<script" not in handout and "<img" not in handout and "javascript:" not in handout.split("[a link")[0]
    assert 'href="javascript' not in page
    # each step: Run and Run short under it, numbered as in the handout; its spec, its checkpoints
    button = '<button type="button" class="run-step" data-step="fill" data-short="0">▶ Run step 2</button>'
    assert page.count(button) == 1
    assert page.count('data-short="1" title=') == 2 and ">▶ Run step 3 short</button>" in page
    assert "<h3>Step 2 · fill: One cubic flow fills the bottleneck</h3>" in page
    assert "duration_s: 8.0" in page and "short form (shorter, same physics) adds <code>duration_s=4</code>" in page
    assert "impossible utilization" in page
    assert lab_client.get("/labs/99").status_code == 404


def test_a_step_run_is_an_ordinary_queued_run_that_remembers_its_lab(lab_app, lab_client, lab_csrf) -> None:
    short = lab_client.post("/api/labs/1/steps/fill/run", json={"short": True}, headers=lab_csrf)
    assert short.status_code == 201, short.data
    run = short.get_json()
    assert (run["status"], run["lab"], run["lab_step"], run["lab_short"]) == ("queued", "01-tiny", "fill", True)
    assert run["spec"]["duration_s"] == 4 and run["url"] == f"/runs/{run['id']}"
    default = lab_client.post("/api/labs/tiny/steps/fill/run", headers=lab_csrf).get_json()  # no body: default form
    assert (default["lab_short"], default["spec"]["duration_s"], default["position"]) == (False, 8, 2)
    plain = lab_client.post("/api/runs", json=good_spec(), headers=lab_csrf).get_json()
    assert plain["lab"] is None and plain["lab_short"] is None
    # the queue and runs list know them; checkpoints wait for the run to finish
    listed = {r["id"]: r for r in lab_client.get("/api/runs").get_json()}
    assert listed[run["id"]]["lab_step"] == "fill" and len(listed) == 3
    resp = lab_client.get(f"/api/runs/{run['id']}/checkpoints")
    assert resp.status_code == 409 and "evaluated when it has finished" in resp.get_json()["error"]
    resp = lab_client.get(f"/api/runs/{plain['id']}/checkpoints")
    assert resp.status_code == 404 and "not a lab step run" in resp.get_json()["error"]
    lab_client.post(f"/api/runs/{default['id']}/cancel", headers=lab_csrf)
    resp = lab_client.get(f"/api/runs/{default['id']}/checkpoints")
    assert resp.status_code == 409 and resp.get_json()["error"].startswith("run is cancelled")
    assert "lab 01-tiny step fill (short)" in lab_client.get("/").get_data(as_text=True)
    run_page = lab_client.get(f"/runs/{run['id']}").get_data(as_text=True)
    assert 'href="/labs/01-tiny#step-fill"' in run_page and "evaluated when the run has finished" in run_page
    lab_page = lab_client.get("/labs/1").get_data(as_text=True)
    assert f'href="/runs/{run["id"]}"' in lab_page and "cancelled" in lab_page
    assert queued_count(lab_app) == 3


HOSTILE_LABS = ["99", "00", "nosuch", "..", "..%2F..%2Fetc", "%2e%2e", "01-tiny%00", "1;rm -rf ~", "tiny%2F..",
                "x" * 300]
HOSTILE_STEPS = ["nosuch", "..", "fill%2F..", "FILL", "fill ", "%00", "<script>"]


@pytest.mark.parametrize("ref", HOSTILE_LABS)
def test_unknown_labs_are_404_json_and_nothing_is_queued(lab_app, lab_client, lab_csrf, ref: str) -> None:
    for method, url in (("GET", f"/api/labs/{ref}"), ("POST", f"/api/labs/{ref}/steps/fill/run")):
        resp = lab_client.open(url, method=method, json={"short": True}, headers=lab_csrf)
        assert resp.status_code == 404, (url, resp.status_code)
        assert resp.get_json()["error"], url
    assert lab_client.get(f"/labs/{ref}").status_code == 404
    assert queued_count(lab_app) == 0


@pytest.mark.parametrize("step", HOSTILE_STEPS)
def test_unknown_steps_are_404_json_and_nothing_is_queued(lab_app, lab_client, lab_csrf, step: str) -> None:
    resp = lab_client.post(f"/api/labs/1/steps/{step}/run", json={"short": True}, headers=lab_csrf)
    assert resp.status_code == 404 and resp.get_json()["error"]
    assert queued_count(lab_app) == 0


@pytest.mark.parametrize(("body", "expected"), [
    ('{"short": "yes"}', "short: Input should be a valid boolean"),
    ('{"short": 1}', "short: Input should be a valid boolean"),
    ('{"short": null}', "short: Input should be a valid boolean"),
    ('{"shrt": true}', "shrt: unknown field (misspelled?)"),
    ('[true]', "body: must be a JSON object"),
    ("null", "body: must be a JSON object"),
    ('"short"', "body: must be a JSON object"),
    ('{"short": tru', "body: not valid JSON"),
])
def test_bad_bodies_are_400_naming_the_field(lab_app, lab_client, lab_csrf, body: str, expected: str) -> None:
    resp = lab_client.post("/api/labs/1/steps/fill/run", data=body, headers=lab_csrf, content_type="application/json")
    assert resp.status_code == 400, resp.data
    assert resp.get_json()["error"].startswith(expected)
    assert queued_count(lab_app) == 0


def test_csrf_content_type_and_a_spec_the_engine_rejects(lab_app, lab_client, lab_csrf) -> None:
    assert lab_client.post("/api/labs/1/steps/fill/run", json={"short": True}).status_code == 403
    resp = lab_client.post("/api/labs/1/steps/fill/run", data='{"short": true}', headers=lab_csrf,
                           content_type="text/plain")
    assert resp.status_code == 415
    resp = lab_client.post("/api/labs/1/steps/nocc/run", json={}, headers=lab_csrf)
    assert resp.status_code == 422
    assert resp.get_json()["error"].startswith("flows[0].cc: unknown congestion control 'nosuchcc'")
    assert queued_count(lab_app) == 0


def test_an_old_database_is_migrated_and_keeps_its_runs(tmp_path: Path, tiny_labs: Path) -> None:
    database = tmp_path / "history.sqlite3"
    with sqlite3.connect(database) as conn:  # the first schema of the history
        conn.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, name TEXT, started TEXT, topology TEXT, summary TEXT, "
                     "environment TEXT)")
        conn.execute("INSERT INTO runs VALUES ('20260101-120000-old', 'old', '2026-01-01T12:00:00', 'dumbbell', "
                     "?, NULL)", (json.dumps({"flows": [], "links": [], "jain_index": 1.0}),))
    app = create_app(results_root=tmp_path / "results", db_path=database, start_worker=False, labs_dir=tiny_labs)
    client = app.test_client()
    old = client.get("/api/runs/20260101-120000-old").get_json()
    assert (old["name"], old["status"], old["lab"], old["lab_short"]) == ("old", "done", None, None)
    assert client.get("/api/runs/20260101-120000-old/checkpoints").status_code == 404
    resp = client.post("/api/labs/1/steps/fill/run", json={"short": True},
                       headers={"X-CSRF-Token": app.config["CSRF_TOKEN"]})
    assert resp.status_code == 201 and resp.get_json()["lab"] == "01-tiny"
    assert {r["id"] for r in client.get("/api/runs").get_json()} == {"20260101-120000-old", resp.get_json()["id"]}


def test_the_repository_labs_are_the_default_and_openapi_covers_the_lab_api(client, app) -> None:
    from fastlab.labs.kit import LABS_DIR, lab_folders
    assert app.config["LABS_DIR"] == LABS_DIR
    labs = client.get("/api/labs").get_json()  # whatever labs exist now, loadable or not, are listed
    assert [lab["name"] for lab in labs] == [p.name for p in lab_folders(LABS_DIR)]
    assert client.get("/labs").status_code == 200
    doc = client.get("/api/openapi.json").get_json()
    for path in ("/api/labs", "/api/labs/{lab}", "/api/labs/{lab}/steps/{step}/run", "/api/runs/{run_id}/checkpoints"):
        assert path in doc["paths"], path
    body = doc["paths"]["/api/labs/{lab}/steps/{step}/run"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"]["$ref"] == "#/components/schemas/LabRunRequest"
    assert "CheckResult" in doc["components"]["schemas"]


@pytest.mark.alone  # a real experiment
@pytest.mark.timeout(180)
def test_checkpoints_of_a_real_short_step_run(tmp_path: Path, tiny_labs: Path) -> None:
    if os.geteuid() != 0:
        pytest.fail("this test runs a real experiment: run it as root")
    results = tmp_path / "results"
    app = create_app(results_root=results, cleanup_on_start=False, labs_dir=tiny_labs)
    try:
        client = app.test_client()
        run = client.post("/api/labs/1/steps/fill/run", json={"short": True},
                          headers={"X-CSRF-Token": app.config["CSRF_TOKEN"]}).get_json()
        status = wait_status(app, run["id"], ("done", "failed", "cancelled"), 120)
        assert status == "done", client.get(f"/api/runs/{run['id']}").get_json()["error"]
        resp = client.get(f"/api/runs/{run['id']}/checkpoints")
        assert resp.status_code == 200, resp.data
        result = resp.get_json()
        assert (result["lab"], result["lab_name"], result["step"], result["short"]) == (1, "01-tiny", "fill", True)
        checks = {c["name"]: c for c in result["checks"]}
        assert list(checks) == ["bottleneck utilization", "impossible utilization", "missing flow"]
        summary = RunFolder(results / run["id"]).summary()
        utilization = summary.links[0].utilization
        passing = checks["bottleneck utilization"]
        assert passing["expected"] == "0.8..1.02" and "1-BDP buffer" in passing["tolerance"]
        assert passing["measured"] == pytest.approx(utilization, abs=1e-4)
        impossible = checks["impossible utilization"]
        assert impossible["passed"] is False and impossible["measured"] == passing["measured"]
        missing = checks["missing flow"]
        assert missing["passed"] is False and missing["measured"] == "n/a"
        assert "cannot evaluate" in missing["note"] and "f9" in missing["note"]
        assert result["passed"] is False
        if summary.faithful:
            assert [c["status"] for c in checks.values()] == ["pass", "fail", "fail"] and result["status"] == "fail"
        else:  # a busy machine: the figures are computed, the verdicts are not given
            assert {c["status"] for c in checks.values()} == {"inconclusive"} and result["status"] == "inconclusive"
            assert result["inconclusive"].startswith("the emulation was not faithful")
        # an ordinary run: listed, with its results page and bundle
        assert client.get("/api/runs").get_json()[0]["id"] == run["id"]
        page = client.get(f"/runs/{run['id']}").get_data(as_text=True)
        assert f'data-checkpoints-run="{run["id"]}"' in page and "short form" in page
        bundle = client.get(f"/api/runs/{run['id']}/bundle")
        assert bundle.status_code == 200 and bundle.mimetype == "application/zip"
        bundle.close()
    finally:
        app.extensions["fastlab_runs"].stop()
