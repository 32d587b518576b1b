"""A server killed mid-run: at the next start the run is `interrupted` with its partial traces kept
and shown, the dead run's leftovers are removed, and the queue continues.

The first server is the real `python -m webapp` in a subprocess running a real experiment; it is
SIGKILLed while the experiment goes (its state file in /run/fastlab, namespaces, emulator and
flow processes are left behind, exactly as after a crash or power cut of the web app)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from fastlab import paths
from fastlab.cc import kernel_available
from fastlab.runstate import RunState, prefixed_root_objects
from tests.webapp.conftest import REPO, free_port, good_spec, wait_status
from webapp import create_app


def http(method: str, url: str, body: dict | None = None, csrf: str = "") -> tuple[int, dict]:
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", "X-CSRF-Token": csrf})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def start_server(tmp_path: Path, results: Path) -> tuple[subprocess.Popen, str]:
    """The real `python -m webapp` in a subprocess (this test's own child)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "FASTLAB_RESULTS": str(results)}
    server = subprocess.Popen([sys.executable, "-m", "webapp", "--port", str(port)], cwd=REPO, env=env,
                              stdout=(tmp_path / "server.log").open("w"), stderr=subprocess.STDOUT)
    return server, f"http://127.0.0.1:{port}"


def csrf_of(base: str) -> str:
    def page() -> str | None:
        try:
            with urllib.request.urlopen(base + "/new", timeout=5) as resp:
                return resp.read().decode()
        except OSError:
            return None
    return re.search(r'name="csrf-token" content="([^"]+)"', wait_for(page, 30, "the server")).group(1)


def flow_samples(run_dir: Path) -> int:
    partial = run_dir / "partial.jsonl"
    return sum(1 for line in partial.open() if '"kind": "flow"' in line) if partial.is_file() else 0


@pytest.mark.timeout(300)
def test_restart_marks_interrupted_keeps_partial_cleans_up_and_the_queue_continues(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.fail("the restart test runs real experiments: run it as root")
    fast_before = "fast" in kernel_available()  # e.g. registered by a run of another user
    results = tmp_path / "results"
    server, base = start_server(tmp_path, results)
    try:
        csrf = csrf_of(base)
        status, first = http("POST", base + "/api/runs", good_spec(name="killed", duration_s=6), csrf)
        assert status == 201, first
        status, second = http("POST", base + "/api/runs",
                              good_spec(name="after-restart", duration_s=3,
                                        flows=[{"src": "h1", "dst": "h2", "cc": "cubic"}]), csrf)
        assert status == 201 and second["status"] == "queued"  # waits behind the first
        run_dir = results / first["id"]
        # mid-run: samples are in partial.jsonl and the run's state file names the server as its engine
        wait_for(lambda: flow_samples(run_dir) >= 10, 90, "flow samples in partial.jsonl")
        states = [RunState.load(p) for p in paths.STATE_DIR.glob("fl*.json")]
        mine = [s for s in states if s.engine_pid == server.pid]
        assert len(mine) == 1, states
        prefix = mine[0].prefix
        assert mine[0].pids, "the killed run had tracked processes"
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=10)
    state_file = paths.STATE_DIR / f"{prefix}.json"
    assert state_file.exists()  # a stale state file: the engine is gone
    partial_lines = (run_dir / "partial.jsonl").read_text().count("\n")

    # restart: a new app on the same history
    app = create_app(results_root=results)
    try:
        assert first["id"] in app.config["INTERRUPTED_AT_START"]
        assert any(prefix in item for item in app.config["CLEANED_AT_START"]), app.config["CLEANED_AT_START"]
        assert not state_file.exists()
        if not fast_before:  # the killed run registered FAST: the cleanup unregisters it
            assert "fast:bpf" in mine[0].cc_loaded, mine[0]
            assert any("congestion control fast (unregistered)" in item for item in app.config["CLEANED_AT_START"]), \
                app.config["CLEANED_AT_START"]
            assert "fast" not in kernel_available()
        intfs, bridges = prefixed_root_objects()
        assert not [n for n in intfs + bridges if n.startswith(prefix)]
        client = app.test_client()
        row = client.get(f"/api/runs/{first['id']}").get_json()
        assert row["status"] == "interrupted" and "partial traces kept" in row["error"]
        assert (run_dir / "partial.jsonl").read_text().count("\n") == partial_lines  # kept, untouched
        page = client.get(f"/runs/{first['id']}")
        assert page.status_code == 200 and b"interrupted" in page.data
        stream = client.get(f"/api/runs/{first['id']}/events").get_data(as_text=True)
        replayed = [s for block in stream.split("\n\n") if block.startswith("event: samples")
                    for s in json.loads(block.split("data: ", 1)[1])]
        assert sum(1 for s in replayed if s["kind"] == "flow") >= 10
        assert "event: end" in stream and '"status":"interrupted"' in stream
        # the queue continues: the run queued before the crash, then one submitted now
        assert wait_status(app, second["id"], ("done", "failed"), 120) == "done"
        csrf = {"X-CSRF-Token": app.config["CSRF_TOKEN"]}
        third = client.post("/api/runs", json=good_spec(name="new-after-restart", duration_s=3,
                                                        flows=[{"src": "h1", "dst": "h2", "cc": "reno"}]),
                            headers=csrf).get_json()
        assert wait_status(app, third["id"], ("done", "failed"), 120) == "done", \
            client.get(f"/api/runs/{third['id']}").get_json()["error"]
        done = client.get(f"/api/runs/{third['id']}").get_json()
        assert done["summary"]["flows"][0]["cc"] == "reno"
        assert (results / third["id"] / "summary.json").is_file()
    finally:
        app.extensions["fastlab_runs"].stop()


@pytest.mark.timeout(300)
def test_sigterm_stops_the_running_experiment_cleanly_before_the_server_exits(tmp_path: Path) -> None:
    """Ctrl-C / SIGTERM on `python -m webapp` mid-run: the run is stopped after its full cleanup
    and recorded as interrupted with its partial traces, and the server exits 0."""
    if os.geteuid() != 0:
        pytest.fail("the shutdown test runs a real experiment: run it as root")
    fast_before = "fast" in kernel_available()
    results = tmp_path / "results"
    server, base = start_server(tmp_path, results)
    try:
        status, run = http("POST", base + "/api/runs", good_spec(name="stopped", duration_s=30), csrf_of(base))
        assert status == 201, run
        wait_for(lambda: flow_samples(results / run["id"]) >= 10, 90, "flow samples in partial.jsonl")
        prefix = next(s.prefix for s in map(RunState.load, paths.STATE_DIR.glob("fl*.json"))
                      if s.engine_pid == server.pid)
        server.send_signal(signal.SIGTERM)  # this test's own child
        assert server.wait(timeout=90) == 0, (tmp_path / "server.log").read_text()[-2000:]
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert not (paths.STATE_DIR / f"{prefix}.json").exists()  # cleaned by the run itself, not left for later
    intfs, bridges = prefixed_root_objects()
    assert not [n for n in intfs + bridges if n.startswith(prefix)]
    assert ("fast" in kernel_available()) == fast_before
    app = create_app(results_root=results, start_worker=False)
    row = app.test_client().get(f"/api/runs/{run['id']}").get_json()
    assert row["status"] == "interrupted" and "partial traces kept" in row["error"], row
    assert flow_samples(results / run["id"]) >= 10 and app.config["INTERRUPTED_AT_START"] == []

