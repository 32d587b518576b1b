"""Stopping a running experiment from the API: the real engine stops early and cleans up."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import machine_leftovers
from tests.webapp.conftest import good_spec
from webapp import create_app


def wait_status(client, run_id: str, wanted: set[str], timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    status = ""
    while time.monotonic() < deadline:
        status = client.get(f"/api/runs/{run_id}").get_json()["status"]
        if status in wanted:
            return status
        time.sleep(0.2)
    return status


@pytest.mark.alone  # a real experiment
def test_cancel_a_running_run(tmp_path: Path) -> None:
    app = create_app(results_root=tmp_path / "results")
    client = app.test_client()
    csrf = {"X-CSRF-Token": app.config["CSRF_TOKEN"]}
    run_id = client.post("/api/runs", json=good_spec(duration_s=60), headers=csrf).get_json()["id"]
    assert wait_status(client, run_id, {"running"}, 60) == "running"
    time.sleep(3)
    started = time.monotonic()
    resp = client.post(f"/api/runs/{run_id}/cancel", headers=csrf)
    assert resp.status_code == 200 and resp.get_json()["status"] == "cancelling"
    assert wait_status(client, run_id, {"cancelled", "done", "failed"}, 40) == "cancelled"
    assert time.monotonic() - started < 30  # well before the 60 s duration
    assert (tmp_path / "results" / run_id / "partial.jsonl").stat().st_size > 0
    assert machine_leftovers() == {"interfaces": [], "bridges": [], "state_files": [], "cgroups": []}
    assert client.post(f"/api/runs/{run_id}/cancel", headers=csrf).status_code == 409
