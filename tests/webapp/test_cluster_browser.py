"""The live page of a run the web queue sent to a Dask worker (issue 36 item 2): Debian chromium watches
the charts' sample count grow while the run goes on the worker, then the results page of the bundle the
worker sent back. A real scheduler and worker on loopback (tests/dask_cluster.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.dask_cluster import LocalCluster, local_cluster
from tests.webapp.conftest import ARTIFACTS, FLOW_POINTS, wait_until
from webapp import create_app

pytestmark = pytest.mark.alone  # a Dask worker runs real experiments

SPEC = {"name": "cluster-browser", "topology": "dumbbell", "topology_args": {"rate_mbps": 10, "rtt_ms": 20},
        "duration_s": 8, "seed": 5, "idle_pings": 2, "switch": "bridge",
        "flows": [{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 20}}]}


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    yield from local_cluster()


@pytest.mark.timeout(300)
def test_the_live_charts_grow_from_a_run_on_a_cluster_worker(tmp_path: Path, live_server_factory: Any,
                                                              browser: Any, cluster: LocalCluster) -> None:
    from fastlab.service.cluster import Cluster

    ARTIFACTS.mkdir(exist_ok=True)
    remote = Cluster.connect(cluster.address)
    try:
        app = create_app(results_root=tmp_path / "results", cleanup_on_start=False, cluster=remote)
        server = live_server_factory(app)
        client = app.test_client()
        run = client.post("/api/runs", json=SPEC, headers={"X-CSRF-Token": app.config["CSRF_TOKEN"]}).get_json()
        page = browser.new_page(viewport={"width": 1280, "height": 1100})
        page.goto(f"{server.url}/runs/{run['id']}")
        wait_until(page, f"({FLOW_POINTS})() > 0", timeout=90_000)
        first = page.evaluate(FLOW_POINTS)
        time.sleep(2.0)
        second = page.evaluate(FLOW_POINTS)
        status = client.get(f"/api/runs/{run['id']}").get_json()["status"]
        page.screenshot(path=str(ARTIFACTS / "webapp-cluster-live.png"), full_page=True)
        assert status == "running" and second > first, (status, first, second)
        assert page.evaluate("document.getElementById('chart-queue').data.length") >= 1
        # no box to change alpha that the API would refuse (409): the page says why instead
        assert page.locator("#live-control").count() == 0 and page.is_visible("#live-control-cluster")
        # the stream ends with the run; the page becomes the results of the worker's bundle
        page.wait_for_selector("#bundle", timeout=120_000)
        assert client.get(f"/api/runs/{run['id']}").get_json()["status"] == "done"
        assert "fast" in page.inner_text("#summary-flows")
        page.screenshot(path=str(ARTIFACTS / "webapp-cluster-done.png"), full_page=True)
    finally:
        remote.close()
