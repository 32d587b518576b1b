"""The web queue on a real Dask cluster (issue 36 item 2): a scheduler and a worker started as the README
says (`fastlab cluster scheduler|worker`, on 127.0.0.1, random ports, tracked PIDs) and the real
`python -m webapp --cluster ADDRESS`. A run is dispatched there and its samples arrive while it goes; its
bundle verifies; a run cancelled from the web stops on the worker, which cleans up; a run whose worker
process is killed ends `interrupted` with the samples that arrived, the restarted worker removes that run's
leftovers through its state file; the next run completes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from fastlab.base import paths
from fastlab.net.runstate import RunState, prefixed_root_objects
from fastlab.results import bundle
from tests.conftest import machine_leftovers
from tests.dask_cluster import LocalCluster, local_cluster, wait_for
from tests.webapp.test_restart import csrf_of, http, start_server

pytestmark = pytest.mark.usefixtures("as_root")


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    yield from local_cluster()


SPEC = {"name": "cluster-run", "topology": "dumbbell", "topology_args": {"rate_mbps": 10, "rtt_ms": 20},
        "duration_s": 5, "seed": 3, "idle_pings": 2, "switch": "bridge",
        "flows": [{"src": "h1", "dst": "h2", "cc": "cubic"}]}


def samples_of(run_dir: Path, kind: str = "flow") -> int:
    partial = run_dir / "partial.jsonl"
    return sum(1 for line in partial.open() if f'"kind": "{kind}"' in line) if partial.is_file() else 0


def status_of(base: str, run_id: str) -> str:
    return http("GET", f"{base}/api/runs/{run_id}")[1].get("status", "?")


def wait_status_http(base: str, run_id: str, statuses: tuple[str, ...], timeout: float) -> str:
    return str(wait_for(lambda: (st := status_of(base, run_id)) in statuses and st, timeout,
                        f"run {run_id} to reach one of {statuses}"))


def run_states_of(pid: int) -> list[RunState]:
    """The run state files whose engine is the process `pid` (a worker's runs)."""
    found = []
    for path in sorted(paths.STATE_DIR.glob("fl*.json")) if paths.STATE_DIR.is_dir() else []:
        try:
            state = RunState.load(path)
        except (OSError, ValueError, TypeError):
            continue
        if state.engine_pid == pid:
            found.append(state)
    return found


def going_on(base: str, csrf: str, results: Path, name: str, pid: int) -> tuple[str, list[RunState]]:
    """Queue a 40-s run and wait until it runs on the worker process `pid` with samples arriving: its
    id and its state (one file, the worker its engine)."""
    run_id = http("POST", base + "/api/runs", SPEC | {"name": name, "duration_s": 40}, csrf)[1]["id"]
    wait_for(lambda: status_of(base, run_id) == "running" and samples_of(results / run_id) > 20, 90,
             f"live samples of the run {name}")
    states = run_states_of(pid)
    assert len(states) == 1, [s.prefix for s in states]
    return run_id, states


@pytest.mark.timeout(420)
def test_the_web_queue_runs_on_a_dask_worker_and_survives_losing_it(tmp_path: Path, cluster: LocalCluster) -> None:
    before = machine_leftovers()
    results = tmp_path / "results"
    server, base = start_server(tmp_path, results, "--cluster", cluster.address)
    try:
        csrf = csrf_of(base)
        # 1. a run dispatched to the worker: samples arrive while it goes, the bundle verifies
        status, run = http("POST", base + "/api/runs", SPEC, csrf)
        assert status in (200, 201, 202), run
        first = run["id"]
        wait_for(lambda: status_of(base, first) == "running" and samples_of(results / first) > 5, 90,
                 "live samples of the first run")
        assert wait_status_http(base, first, ("done", "failed", "interrupted"), 120) == "done", \
            http("GET", f"{base}/api/runs/{first}")[1]
        folder = results / first
        assert {"flows.csv", "links.csv", "summary.json", "environment.json", "spec.yaml", "partial.jsonl",
                "relay.json"} <= {p.name for p in folder.iterdir()}
        assert not (folder / "MANIFEST.sha256").exists() and not (folder / ".incoming").exists()
        worker_address = next(iter(cluster.workers()))
        env = json.loads((folder / "environment.json").read_text())
        assert env["concurrency"]["admission"]["cluster"]["worker"] == worker_address
        assert env["concurrency"]["admission"]["figures"]["cluster"] == cluster.address  # admitted against the cluster
        relay = json.loads((folder / "relay.json").read_text())
        assert relay["worker"] == worker_address and relay["samples"] >= samples_of(folder)
        assert relay["lag"]["p99_ms"] is not None and relay["lag"]["p99_ms"] < 1000, relay  # the bound
        print(f"relay lag of the first run: {relay['lag']} over {relay['samples']} samples")
        with urllib.request.urlopen(f"{base}/api/runs/{first}/bundle", timeout=60) as resp:
            (tmp_path / "first.zip").write_bytes(resp.read())
        assert bundle.verify(tmp_path / "first.zip") == []

        # 2. cancelled from the web while it runs: the worker's engine stops and removes what it built
        pid = cluster.worker_pids()[worker_address]  # the worker process, as it reports itself
        cancelled, states = going_on(base, csrf, results, "cancelled", pid)
        assert http("POST", f"{base}/api/runs/{cancelled}/cancel", {}, csrf)[0] == 200
        assert wait_status_http(base, cancelled, ("done", "failed", "interrupted", "cancelled"), 60) == "cancelled"
        assert not states[0].path.exists() and not run_states_of(pid)  # the engine cleaned up on the worker
        assert samples_of(results / cancelled) > 20

        # 3. the worker process is killed mid-run: interrupted, partial samples kept, leftovers removed
        second, states = going_on(base, csrf, results, "killed", pid)
        prefix = states[0].prefix
        os.kill(pid, signal.SIGKILL)
        assert wait_status_http(base, second, ("done", "failed", "interrupted", "cancelled"), 60) == "interrupted"
        kept = samples_of(results / second)
        assert kept > 20
        row = http("GET", f"{base}/api/runs/{second}")[1]
        assert "lost mid-run" in (row.get("error") or ""), row
        # the nanny restarts the worker process; at its start it cleans up after the dead run's engine
        wait_for(lambda: not (paths.STATE_DIR / f"{prefix}.json").exists(), 90, f"run {prefix}'s state removed")
        # (a namespace's veth ends go when the kernel has destroyed it, a moment after its last process)
        wait_for(lambda: not [i for i in prefixed_root_objects()[0] if i.startswith(prefix)], 30,
                 f"run {prefix}'s interfaces removed")
        # by the restarted worker's start (it logs what it removed once its cleanup returns)
        wait_for(lambda: f"state of run {prefix}" in (cluster.tmp / "dask.log").read_text(), 30,
                 "the restarted worker's cleanup")

        # 4. a new worker process takes the next run, which completes; the killed run is not rerun
        wait_for(lambda: cluster.workers(), 60, "the restarted worker")
        status, run = http("POST", base + "/api/runs", SPEC | {"name": "after"}, csrf)
        third = run["id"]
        assert wait_status_http(base, third, ("done", "failed", "interrupted"), 120) == "done"
        assert status_of(base, second) == "interrupted" and samples_of(results / second) == kept
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=90)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
    cluster.close()
    assert machine_leftovers() == before
