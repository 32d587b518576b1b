"""Fixtures of the web app tests: a spec, an app without worker, a real server in a thread, a fake engine."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from fastlab.engine import RunResult
from webapp import create_app

# No example database: every run fuzzes afresh (hypothesis still caches constants in .hypothesis/,
# which carries its own .gitignore).
settings.register_profile("fastlab-webapp", database=None)
settings.load_profile("fastlab-webapp")

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"


def good_spec(**changes: Any) -> dict[str, Any]:
    spec = {"name": "webtest", "topology": "dumbbell", "topology_args": {"rate_mbps": 20, "rtt_ms": 40},
            "duration_s": 6, "flows": [{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 30}}],
            "links": {"bottleneck": {"loss": {"model": "bernoulli", "rate": 0.01}}}}
    spec.update(changes)
    return spec


def queued_count(app: Any) -> int:
    from webapp.runner import connect
    with connect(app.config["DATABASE"]) as conn:
        return conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]


@pytest.fixture
def app(tmp_path: Path) -> Any:
    return create_app(results_root=tmp_path / "results", start_worker=False)


@pytest.fixture
def client(app: Any) -> Any:
    return app.test_client()


@pytest.fixture
def csrf(app: Any) -> dict[str, str]:
    return {"X-CSRF-Token": app.config["CSRF_TOKEN"]}


class FakeEngine:
    """Stands in for run_experiment: emits flow/link samples at 20 Hz for `seconds`, writes result files."""

    def __init__(self, seconds: float = 3.0) -> None:
        self.seconds = seconds
        self.calls: list[str] = []
        self.epoch = time.time()  # sample t = wall time - epoch, so clients can measure latency

    def __call__(self, spec: Any, *, out: Path, on_sample: Any, log: Any) -> RunResult:
        self.calls.append(spec.name)
        log("fake run starting")
        t0 = time.monotonic()
        n = 0
        while time.monotonic() - t0 < self.seconds:
            t = time.time() - self.epoch
            on_sample({"kind": "flow", "t": t, "flow": "f1", "cwnd_pkts": 10 + n, "srtt_ms": 40.0,
                       "goodput_mbps": 5.0})
            on_sample({"kind": "link", "t": t, "link": "bottleneck", "direction": "forward", "backlog_pkts": n % 7,
                       "tx_bytes": 1000 * n})
            n += 1
            time.sleep(0.05)
        summary = {"flows": [{"id": "f1", "src": "h1", "dst": "h2", "cc": "cubic", "throughput_mbps": 5.0,
                              "mean_rtt_ms": 40, "min_rtt_ms": 40, "retransmits": 0}],
                   "links": [{"id": "bottleneck", "capacity_mbps": 20, "utilization": 0.25,
                              "mean_backlog_pkts": 3, "drops": 0}], "jain_index": 1.0}
        (out / "summary.json").write_text(json.dumps(summary))
        (out / "report.html").write_text("<html>fake report</html>")
        return RunResult(out, summary, {"kernel": "fake", "backends": {}})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """The app served by waitress (as `python -m webapp` does) in a thread on a free loopback port."""

    def __init__(self, app: Any) -> None:
        from waitress.server import create_server

        self.app = app
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = create_server(app, host="127.0.0.1", port=self.port, threads=16)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.app.extensions["fastlab_runs"].stop()
        self.server.close()


@pytest.fixture
def live_server_factory() -> Iterator[Any]:
    servers: list[LiveServer] = []

    def make(app: Any) -> LiveServer:
        servers.append(LiveServer(app))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def wait_status(app: Any, run_id: str, statuses: tuple[str, ...], timeout: float) -> str:
    from webapp.runner import connect
    deadline = time.monotonic() + timeout
    status = "?"
    while time.monotonic() < deadline:
        with connect(app.config["DATABASE"]) as conn:
            status = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()["status"]
        if status in statuses:
            return status
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} still {status} after {timeout} s")
