"""The web app's results browser against real run directories written by the engine's code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from webapp import create_app


def fake_run(root: Path, run_id: str, utilization: float) -> None:
    """A run directory in the engine's format (the files a finished run writes)."""
    run = root / run_id
    run.mkdir(parents=True)
    (run / "spec.yaml").write_text("name: demo\ntopology: dumbbell\nduration_s: 5\nflows: [{src: h1, dst: h2}]\n")
    (run / "environment.json").write_text(json.dumps({
        "run": {"name": "demo", "prefix": "flabcd", "started": "2026-11-22T05:00:00+00:00"}, "kernel": "6.18",
        "backends": {"delay": {"backend": "emulator", "why": "sch_netem is missing"}}}))
    (run / "summary.json").write_text(json.dumps({
        "flows": [{"id": "f1", "src": "h1", "dst": "h2", "cc": "cubic", "throughput_mbps": 47.5, "mean_rtt_ms": 60,
                   "min_rtt_ms": 40.8, "retransmits": 3}],
        "links": [{"id": "bottleneck", "capacity_mbps": 50, "utilization": utilization, "mean_backlog_pkts": 100,
                   "drops": 3}], "jain_index": 1.0}))
    (run / "report.html").write_text("<html>report</html>")


@pytest.fixture
def client(tmp_path: Path):
    fake_run(tmp_path, "20261122-050000-demo-flabcd", 0.98)
    app = create_app(results_root=tmp_path)
    return app.test_client()


def test_history_lists_runs_and_survives_a_restart(client, tmp_path: Path) -> None:
    page = client.get("/")
    assert page.status_code == 200 and b"demo" in page.data and b"0.980" in page.data
    shutil.rmtree(tmp_path / "20261122-050000-demo-flabcd" / "report.html", ignore_errors=True)
    again = create_app(results_root=tmp_path).test_client().get("/api/runs").get_json()
    assert [r["id"] for r in again] == ["20261122-050000-demo-flabcd"]


def test_run_page_and_report(client) -> None:
    page = client.get("/runs/20261122-050000-demo-flabcd")
    assert page.status_code == 200 and b"47.50" in page.data and b"emulator" in page.data
    assert client.get("/runs/20261122-050000-demo-flabcd/report").data == b"<html>report</html>"


@pytest.mark.parametrize("hostile", ["..%2F..%2Fetc%2Fpasswd", "nosuchrun", "%00", "a;rm -rf ~"])
def test_unknown_or_hostile_run_ids_are_404(client, hostile: str) -> None:
    assert client.get(f"/runs/{hostile}").status_code == 404
    assert client.get(f"/runs/{hostile}/report").status_code == 404
