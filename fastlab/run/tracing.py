"""Samples of a running experiment: one bus, many listeners, pandas at the end.

Producers (flow senders, link emulators, tc pollers, later CC event readers) call `emit` with a
dict that has a `kind` ("flow", "link", "event") and a monotonic time `t`. The bus rebases time
to the run start, keeps every sample for the results, and hands each one to subscribers (the
web app's live stream) and to `stream()` iterators.

Samples taken before the flows start (link stats while the network is built and pinged) are held
from subscribers and streams until `start` has given them their times on the flows' time base
(negative), then delivered in order: handed out at once, they carried times since the bus was made
(1.2-2.2 s), and a live chart drew them before the flows' own 0.1 s (issue 32: a link-rate trace
"out of time order").
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd

Sample = dict[str, Any]
_END = object()


class SampleBus:
    def __init__(self, t0: float, recorded_only: frozenset[str] = frozenset()) -> None:
        self.t0 = t0
        self.recorded_only = recorded_only  # kinds kept for the run folder, not handed to subscribers
        self._lock = threading.Lock()
        self._deliver = threading.Lock()  # one delivery at a time: the held samples go out before newer ones
        self._started = False
        self._samples: list[Sample] = []
        self._subscribers: list[Callable[[Sample], None]] = []
        self._queues: list[queue.Queue[object]] = []
        self.closed = False

    def emit(self, kind: str, sample: Sample) -> None:
        with self._deliver:
            with self._lock:
                record = {**sample, "kind": kind, "t": round(sample["t"] - self.t0, 6)}
                self._samples.append(record)
                if not self._started or kind in self.recorded_only:
                    return  # held: delivered by start() (or close()) on the flows' time base
                subscribers = list(self._subscribers)
                queues = list(self._queues)
            self._hand_out([record], subscribers, queues)

    def _hand_out(self, records: list[Sample], subscribers: list[Callable[[Sample], None]],
                  queues: list[queue.Queue[object]]) -> None:
        for record in records:
            if record["kind"] in self.recorded_only:
                continue
            for callback in subscribers:
                callback(record)
            for q in queues:
                q.put(record)

    def _release(self) -> tuple[list[Sample], list[Callable[[Sample], None]], list[queue.Queue[object]]]:
        """Under the lock: the held samples and who gets them; no sample is held from now on."""
        held = [] if self._started else list(self._samples)
        self._started = True
        return held, list(self._subscribers), list(self._queues)

    def start(self, t0: float) -> None:
        """Make `t0` (the flows' start) time zero; samples taken before it get negative times and go out
        now, before any later one."""
        with self._deliver:
            with self._lock:
                shift = self.t0 - t0
                self.t0 = t0
                for record in self._samples:
                    record["t"] = round(record["t"] + shift, 6)
                released = self._release()
            self._hand_out(*released)

    def subscribe(self, callback: Callable[[Sample], None], replay: bool = True) -> None:
        """Call `callback` for every sample; with replay, first for every sample so far (before the
        start: the held ones, when it comes)."""
        with self._deliver:
            with self._lock:
                history = list(self._samples) if replay and self._started else []
                self._subscribers.append(callback)
            self._hand_out(history, [callback], [])

    def stream(self, replay: bool = True) -> Iterator[Sample]:
        """Iterate over samples as they come, until the run ends."""
        q: queue.Queue[object] = queue.Queue()
        with self._lock:
            for record in self._samples if replay and self._started else ():
                if record["kind"] not in self.recorded_only:
                    q.put(record)
            if self.closed:
                q.put(_END)
            else:
                self._queues.append(q)
        while (item := q.get()) is not _END:
            yield item  # type: ignore[misc]

    def close(self) -> None:
        """The end: samples still held (a run that never started its flows) go out as they are."""
        with self._deliver:
            with self._lock:
                self.closed = True
                released = self._release()
                self._queues = []
            self._hand_out(*released)
        for q in released[2]:
            q.put(_END)

    def frame(self, kind: str) -> pd.DataFrame:
        with self._lock:
            rows = [{k: v for k, v in s.items() if k != "kind"} for s in self._samples if s["kind"] == kind]
        return pd.DataFrame(rows)
