"""The web queue's admission (fastlab.service.queue, fastlab.experiment.cost) with a stand-in engine: runs start
in order while they fit beside the runs going, each in its own thread; the queue shows why the next one waits;
a full-scale run waits for an empty machine and nothing starts beside it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.webapp.conftest import FakeEngine, good_spec, wait_status
from webapp import create_app


def watch(app: Any, ids: list[str], timeout: float = 60.0) -> list[dict[str, Any]]:
    """/api/queue every 0.1 s until every run has ended; the states seen."""
    client, seen = app.test_client(), []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen.append(client.get("/api/queue").get_json())
        rows = {r["id"]: r["status"] for r in client.get("/api/runs").get_json()}
        if all(rows.get(i) in ("done", "failed", "cancelled") for i in ids):
            return seen
        time.sleep(0.1)
    raise AssertionError(f"runs still going after {timeout} s: {seen[-1]}")


def test_runs_go_two_at_a_time_in_order_and_the_third_says_why_it_waits(tmp_path: Path) -> None:
    engine = FakeEngine(seconds=2.0)
    app = create_app(results_root=tmp_path / "results", runner=engine, cleanup_on_start=False, max_running=2)
    csrf = {"X-CSRF-Token": app.config["CSRF_TOKEN"]}
    try:
        ids = [app.test_client().post("/api/runs", json=good_spec(name=f"r{i}"), headers=csrf).get_json()["id"]
               for i in range(3)]
        seen = watch(app, ids)
        assert max(len(s["running"]) for s in seen) == 2  # two at once, never three
        waits = [s["head"] for s in seen if s["head"] and not s["head"]["start"]]
        assert waits and waits[0]["run"] == ids[2] and "2 runs going, at most 2 at once" in waits[0]["why"]
        going = next(s["running"] for s in seen if len(s["running"]) == 2)
        assert {g["id"] for g in going} == set(ids[:2])  # in queue order
        assert all(g["cost"]["cores"] > 0 and g["admission"]["budget_cores"] > 0 for g in going)
        assert sorted(engine.calls[:2]) == ["r0", "r1"] and engine.calls[2] == "r2"
        for run_id in ids:
            assert wait_status(app, run_id, ("done",), 5) == "done"
        deadline = time.monotonic() + 5
        while app.test_client().get("/api/queue").get_json()["head"] is not None:
            assert time.monotonic() < deadline, "the last decision stays shown with nothing queued"
            time.sleep(0.1)
        page = app.test_client().get("/").get_data(as_text=True)
        assert 'id="admission"' not in page  # nothing going, nothing waiting: no admission to show
    finally:
        app.extensions["fastlab_runs"].stop()


def test_a_full_scale_run_waits_for_an_empty_machine_and_runs_alone(tmp_path: Path) -> None:
    engine = FakeEngine(seconds=1.5)
    app = create_app(results_root=tmp_path / "results", runner=engine, cleanup_on_start=False)
    csrf = {"X-CSRF-Token": app.config["CSRF_TOKEN"]}
    try:
        specs = [good_spec(name="small1"), good_spec(name="full", topology_args={"rate_mbps": 1000, "rtt_ms": 40}),
                 good_spec(name="small2")]
        ids = [app.test_client().post("/api/runs", json=s, headers=csrf).get_json()["id"] for s in specs]
        seen = watch(app, ids)
        for state in seen:
            running = {g["id"] for g in state["running"]}
            if ids[1] in running:
                assert running == {ids[1]}, state  # alone
        waits = [s["head"]["why"] for s in seen if s["head"] and s["head"]["run"] == ids[1] and not s["head"]["start"]]
        assert any("waits for an empty machine: it runs alone (full scale" in w for w in waits), waits
        assert engine.calls == ["small1", "full", "small2"]  # nothing overtakes the head
    finally:
        app.extensions["fastlab_runs"].stop()
