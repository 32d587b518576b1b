"""The sample bus: history, callbacks, iterators and pandas frames."""

from __future__ import annotations

import threading

from fastlab.run.tracing import SampleBus


def test_bus_rebases_time_replays_history_and_ends_streams() -> None:
    bus = SampleBus(t0=100.0)
    bus.emit("flow", {"t": 100.5, "flow": "f1", "cwnd_pkts": 10})
    seen: list[dict] = []
    bus.subscribe(seen.append)  # replays the history first
    streamed: list[dict] = []
    reader = threading.Thread(target=lambda: streamed.extend(bus.stream()))
    reader.start()
    bus.emit("link", {"t": 101.0, "link": "bottleneck", "backlog_pkts": 3})
    bus.close()
    reader.join(timeout=5)
    assert not reader.is_alive()
    assert [s["t"] for s in seen] == [0.5, 1.0] and [s["kind"] for s in streamed] == ["flow", "link"]
    assert list(bus.frame("flow")["cwnd_pkts"]) == [10]
    assert list(bus.frame("link").columns) == ["t", "link", "backlog_pkts"]
    assert list(bus.stream()) == [s for s in streamed]  # after the run: the whole history, then the end


def test_samples_before_the_start_keep_their_order_with_negative_times() -> None:
    """Link stats arrive while the network is built and pinged; the flows' start is time zero."""
    bus = SampleBus(100.0)
    bus.emit("link", {"t": 101.0, "link": "x", "tx_bytes": 0})
    bus.start(105.0)
    bus.emit("link", {"t": 105.5, "link": "x", "tx_bytes": 10})
    frame = bus.frame("link")
    assert list(frame["t"]) == [-4.0, 0.5] and frame["t"].is_monotonic_increasing


def test_a_live_viewer_gets_the_samples_before_the_start_on_the_flows_time_base_first() -> None:
    """A subscriber (the web app's live stream) that joins before the flows start: the link stats taken
    while the network was pinged reach it at the start, with their negative times, before any later
    sample -- never with their times since the bus was made (1.0 s here), which a chart drew after
    0.5 s of the flows (issue 32)."""
    bus = SampleBus(100.0)
    seen: list[dict] = []
    bus.subscribe(seen.append)
    streamed: list[dict] = []
    reader = threading.Thread(target=lambda: streamed.extend(bus.stream()))
    reader.start()
    bus.emit("link", {"t": 101.0, "link": "x", "tx_bytes": 0})
    bus.emit("link", {"t": 102.0, "link": "x", "tx_bytes": 0})
    assert seen == []  # held until the start
    bus.start(105.0)
    bus.emit("link", {"t": 105.5, "link": "x", "tx_bytes": 10})
    late: list[dict] = []
    bus.subscribe(late.append)  # joins after the start: the whole history, rebased
    bus.close()
    reader.join(timeout=5)
    assert [s["t"] for s in seen] == [-4.0, -3.0, 0.5] == [s["t"] for s in late]
    assert [s["t"] for s in streamed] == [-4.0, -3.0, 0.5]


def test_a_recorded_only_kind_reaches_the_run_folder_and_no_viewer() -> None:
    """The emulators' per-flow figures (a row per flow per link direction per sample) are the run folder's:
    the live page and its partial.jsonl never get them, before or after the start."""
    bus = SampleBus(100.0, recorded_only=frozenset({"hop_flow"}))
    seen: list[dict] = []
    bus.subscribe(seen.append)
    bus.emit("hop_flow", {"t": 101.0, "link": "x", "key": "a:1>b:2"})
    bus.emit("link", {"t": 101.0, "link": "x"})
    bus.start(101.0)
    bus.emit("hop_flow", {"t": 102.0, "link": "x", "key": "a:1>b:2"})
    late: list[dict] = []
    bus.subscribe(late.append)  # a viewer that joins later gets the history replayed
    bus.close()
    assert [s["kind"] for s in seen] == ["link"] and [s["kind"] for s in late] == ["link"]
    assert [s["kind"] for s in bus.stream()] == ["link"]
    assert list(bus.frame("hop_flow")["t"]) == [0.0, 1.0]
