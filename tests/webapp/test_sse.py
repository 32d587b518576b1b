"""Live stream over SSE from the real server stack (uvicorn + webapp.asgi): fan-out to several clients,
batching rate, latency, replay."""

from __future__ import annotations

import http.client
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.webapp.conftest import FakeEngine, good_spec, wait_status
from webapp import create_app

pytestmark = pytest.mark.alone  # judges the server's latency (< 1 s) under 200 viewers


def watch(port: int, run_id: str, out: dict[str, Any]) -> None:
    """Read the SSE stream; record (receive time, event, data) until `end`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", f"/api/runs/{run_id}/events")
    resp = conn.getresponse()
    out["content_type"] = resp.getheader("Content-Type")
    out["events"] = []
    event, data = "message", []
    while True:
        line = resp.fp.readline()
        if not line:
            break
        line = line.decode().rstrip("\n")
        if line == "":
            if data:
                out["events"].append((time.time(), event, json.loads("\n".join(data))))
                if event == "end":
                    break
            event, data = "message", []
        elif line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])
    conn.close()


def test_two_clients_get_the_live_stream_batched_and_a_late_one_gets_the_replay(tmp_path: Path,
                                                                                 live_server_factory) -> None:
    engine = FakeEngine(seconds=4.0)
    app = create_app(results_root=tmp_path, runner=engine, cleanup_on_start=False)
    server = live_server_factory(app)
    csrf = {"X-CSRF-Token": app.config["CSRF_TOKEN"]}
    run_id = app.test_client().post("/api/runs", json=good_spec(), headers=csrf).get_json()["id"]
    results: list[dict[str, Any]] = [{}, {}, {}]
    threads = [threading.Thread(target=watch, args=(server.port, run_id, results[i])) for i in range(2)]
    for t in threads:
        t.start()
    time.sleep(2.0)  # mid-run
    late = threading.Thread(target=watch, args=(server.port, run_id, results[2]))
    late.start()
    for t in [*threads, late]:
        t.join(timeout=30)
    assert wait_status(app, run_id, ("done",), 10) == "done"
    assert engine.calls == ["webtest"]
    total_flow_samples = None
    for i, res in enumerate(results):
        assert res["content_type"].startswith("text/event-stream")
        samples = [s for _, ev, data in res["events"] if ev == "samples" for s in data]
        flow = [s for s in samples if s["kind"] == "flow"]
        assert len(flow) >= 60, (i, len(flow))  # 4 s at 20 Hz = ~80
        assert [s["t"] for s in flow] == sorted(s["t"] for s in flow)  # no duplicates or reordering
        assert len({s["t"] for s in flow}) == len(flow)
        assert res["events"][-1][1] == "end" and res["events"][-1][2]["status"] == "done"
        if total_flow_samples is None:
            total_flow_samples = len(flow)
        assert len(flow) == total_flow_samples  # every client saw every sample
    # the late client got the history first: its first batch starts at the run's start
    late_batches = [(rt, data) for rt, ev, data in results[2]["events"] if ev == "samples"]
    first_flow_t = min(s["t"] for s in late_batches[0][1] if s["kind"] == "flow")
    assert first_flow_t < 0.5 + min(s["t"] for _, ev, d in results[0]["events"] if ev == "samples" for s in d)
    # live batches: >= 5 messages per second, each sample delivered < 1 s after it was emitted
    live = [(rt, data) for rt, ev, data in results[0]["events"] if ev == "samples"]
    span = live[-1][0] - live[0][0]
    assert len(live) / span >= 5, (len(live), span)
    latencies = [rt - engine.epoch - s["t"] for rt, data in live for s in data if s["kind"] == "flow"]
    assert max(latencies) < 1.0, max(latencies)
    # after the run the stream replays partial.jsonl
    after: dict[str, Any] = {}
    watch(server.port, run_id, after)
    replayed = [s for _, ev, d in after["events"] if ev == "samples" for s in d if s["kind"] == "flow"]
    assert len(replayed) == total_flow_samples
    assert (tmp_path / run_id / "partial.jsonl").is_file()


def test_a_class_of_200_viewers_does_not_freeze_the_server(tmp_path: Path, live_server_factory) -> None:
    """200 viewers of one live run (the FakeEngine stands in for the network: the server is what is
    tested): every viewer receives samples and the end, `GET /api/runs` answers within 1 s all along,
    and the run finishes with every sample. With a thread per viewer, 20 viewers froze the app."""
    import urllib.request

    engine = FakeEngine(seconds=8.0)
    app = create_app(results_root=tmp_path, runner=engine, cleanup_on_start=False)
    server = live_server_factory(app)
    csrf = {"X-CSRF-Token": app.config["CSRF_TOKEN"]}
    run_id = app.test_client().post("/api/runs", json=good_spec(), headers=csrf).get_json()["id"]
    results: list[dict[str, Any]] = [{} for _ in range(200)]
    viewers = [threading.Thread(target=watch, args=(server.port, run_id, results[i]), daemon=True)
               for i in range(200)]
    for v in viewers:
        v.start()
    slowest, answers = 0.0, 0
    deadline = time.monotonic() + 60
    while any(v.is_alive() for v in viewers) and time.monotonic() < deadline:
        t0 = time.monotonic()
        with urllib.request.urlopen(f"{server.url}/api/runs", timeout=5) as resp:
            assert resp.status == 200 and any(r["id"] == run_id for r in json.loads(resp.read()))
        slowest, answers = max(slowest, time.monotonic() - t0), answers + 1
        time.sleep(0.2)
    for v in viewers:
        v.join(timeout=10)
    assert answers >= 20 and slowest < 1.0, (answers, slowest)
    assert wait_status(app, run_id, ("done",), 10) == "done"
    counts = []
    for res in results:
        assert res.get("events"), "a viewer got nothing"
        flow = [s for _, ev, d in res["events"] if ev == "samples" for s in d if s["kind"] == "flow"]
        assert res["events"][-1][1] == "end" and res["events"][-1][2]["status"] == "done"
        counts.append(len(flow))
    assert min(counts) == max(counts) >= 120, (min(counts), max(counts))  # 8 s at 20 Hz: every viewer, every sample
