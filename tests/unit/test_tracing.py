"""The sample bus: history, callbacks, iterators and pandas frames."""

from __future__ import annotations

import threading

from fastlab.tracing import SampleBus


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
