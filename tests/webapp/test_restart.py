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

from fastlab.base import paths
from fastlab.define.cc import kernel_available
from fastlab.net.runstate import RunState, TrackedPid, prefixed_root_objects, process_start_time
from tests.webapp.conftest import REPO, free_port, good_spec, wait_status
from webapp import create_app

pytestmark = pytest.mark.alone  # real servers running real experiments, killed and restarted


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


def start_server(tmp_path: Path, results: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    """The real `python -m webapp` in a subprocess (this test's own child), with `extra` arguments."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "FASTLAB_RESULTS": str(results)}
    server = subprocess.Popen([sys.executable, "-m", "webapp", "--port", str(port), *extra], cwd=REPO, env=env,
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
    # one at a time: the second run waits behind the first (runs side by side: test_queue_admission.py)
    server, base = start_server(tmp_path, results, "--max-running", "1")
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



KILL_SEED = 20261125  # the moments are random but the same in every run of this test


@pytest.mark.timeout(600)
def test_server_kill_9_at_four_random_moments_then_restart_leaves_nothing(tmp_path: Path) -> None:
    """`kill -9` of the real web server at 4 seeded moments after a run was submitted, spread over
    the run's whole life (queue, build, flows, teardown, done: a FAST run with a clamped flow, so BPF
    registrations and a cgroup are at stake), each followed by a restart on the same history: the run
    is `interrupted` if it was running (partial traces kept, byte for byte) and its leftovers are
    removed (nothing of fastlab on the machine, the kernel's CC list as before, the processes it
    tracked gone); a last server then completes a run."""
    import random

    from tests.conftest import machine_leftovers

    if os.geteuid() != 0:
        pytest.fail("the restart test runs real experiments: run it as root")
    ccs_before = sorted(kernel_available())
    baseline = machine_leftovers()
    spec = good_spec(name="killed", duration_s=3, links={},
                     flows=[{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 20},
                             "max_cwnd_pkts": 40}])
    rng = random.Random(KILL_SEED)  # one generator: four different moments
    # the run is done ~5.5 s after its submission (on this machine; later on a busy one): one moment in
    # each quarter of [0.2, 6] s, so the queue and build, the flows and the teardown all get one
    slices = [0.2 + k * (6.0 - 0.2) / 4 for k in range(5)]
    moments = [rng.uniform(lo, hi) for lo, hi in zip(slices, slices[1:], strict=False)]
    seen: dict[str, int] = {}
    for i, moment in enumerate(moments):
        results = tmp_path / f"r{i}"
        server, base = start_server(tmp_path, results)
        tracked: dict[int, TrackedPid] = {}
        try:
            csrf = csrf_of(base)
            status, run = http("POST", base + "/api/runs", spec, csrf)
            assert status == 201, run
            deadline = time.monotonic() + moment
            while time.monotonic() < deadline:  # note what the run tracks while it lives
                for path in paths.STATE_DIR.glob("fl*.json") if paths.STATE_DIR.is_dir() else []:
                    try:
                        state = RunState.load(path)
                    except (OSError, ValueError):
                        continue  # being written
                    if state.engine_pid == server.pid:
                        tracked.update((p.pid, p) for p in state.pids)
                time.sleep(0.05)
        finally:
            server.send_signal(signal.SIGKILL)  # this test's own child
            server.wait(timeout=10)
        run_dir = results / run["id"]
        partial = (run_dir / "partial.jsonl").read_bytes() if (run_dir / "partial.jsonl").is_file() else None

        app = create_app(results_root=results, start_worker=False, cleanup_on_start=True)  # the restart
        try:
            row = app.test_client().get(f"/api/runs/{run['id']}").get_json()
        finally:
            app.extensions["fastlab_runs"].stop()
        seen[row["status"]] = seen.get(row["status"], 0) + 1
        assert row["status"] in ("queued", "interrupted", "done"), (moment, row)
        if row["status"] == "interrupted":
            assert "partial traces kept" in row["error"], row
            assert run["id"] in app.config["INTERRUPTED_AT_START"]
        if partial is not None:
            assert (run_dir / "partial.jsonl").read_bytes() == partial, moment
        assert machine_leftovers() == baseline, (moment, row["status"], machine_leftovers())
        assert sorted(kernel_available()) == ccs_before, (moment, kernel_available())
        for proc in tracked.values():  # gone (a pid taken by another process since is not it)
            assert process_start_time(proc.pid) != proc.start or _zombie(proc.pid), (moment, proc)
    assert seen.get("interrupted", 0) >= 3, seen  # most moments fall inside the run, as intended

    results = tmp_path / "last"
    server, base = start_server(tmp_path, results)
    try:
        csrf = csrf_of(base)
        status, run = http("POST", base + "/api/runs", spec | {"name": "after"}, csrf)
        assert status == 201, run
        wait_for(lambda: http("GET", f"{base}/api/runs/{run['id']}")[1].get("status") in ("done", "failed"),
                 120, "the last run")
        assert http("GET", f"{base}/api/runs/{run['id']}")[1]["status"] == "done"
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    assert machine_leftovers() == baseline and sorted(kernel_available()) == ccs_before


def _zombie(pid: int) -> bool:
    """Dead but not yet reaped by whoever inherited it: nothing of it runs any more."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


RUNS = 10


@pytest.mark.timeout(300)
def test_ten_runs_through_the_server_leave_no_child(tmp_path: Path) -> None:
    """Issue 37 (60 shells once stayed after 30 runs, two a run: the switches'): the real server runs 10
    real 0.5-s experiments in a row; after each, once its worker has reaped, the server has no more
    children than before the first run, and none is left at the end. While runs go the count does see
    their processes (Mininet's node shells, emulator, flows), so a count that sees nothing cannot pass.
    Ten runs, not thirty (CI time, issue 52): the count is checked after every run, so a leak of every run
    (issue 37's) fails at the first and a leak of one run in ten still shows; `bench/server.py` counts over
    as many runs as asked."""
    if os.geteuid() != 0:
        pytest.fail("the child count runs real experiments: run it as root")
    from tests.unit.test_bench import bench_module

    seen = bench_module("server").count_children(RUNS, tmp_path / "results", tmp_path / "server.log")
    assert seen.statuses == ["done"] * RUNS, (seen.statuses, (tmp_path / "server.log").read_text()[-2000:])
    assert seen.most_during >= 4, seen  # h1, h2, s1, s2 at least: the count sees a run's shells
    assert max(seen.after_each) <= len(seen.before), seen
    assert sorted(set(seen.after) - set(seen.before)) == [], seen
