"""Samples of a running experiment: one bus, many listeners, pandas at the end.

Producers (flow senders, link emulators, tc pollers, later CC event readers) call `emit` with a
dict that has a `kind` ("flow", "link", "event") and a monotonic time `t`. The bus rebases time
to the run start, keeps every sample for the results, and hands each one to subscribers (the
web app's live stream) and to `stream()` iterators.
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
    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self._lock = threading.Lock()
        self._samples: list[Sample] = []
        self._subscribers: list[Callable[[Sample], None]] = []
        self._queues: list[queue.Queue[object]] = []
        self.closed = False

    def emit(self, kind: str, sample: Sample) -> None:
        with self._lock:
            record = {**sample, "kind": kind, "t": round(sample["t"] - self.t0, 6)}
            self._samples.append(record)
            subscribers = list(self._subscribers)
            queues = list(self._queues)
        for callback in subscribers:
            callback(record)
        for q in queues:
            q.put(record)

    def start(self, t0: float) -> None:
        """Make `t0` (the flows' start) time zero; samples taken before it get negative times."""
        with self._lock:
            shift = self.t0 - t0
            self.t0 = t0
            for record in self._samples:
                record["t"] = round(record["t"] + shift, 6)

    def subscribe(self, callback: Callable[[Sample], None], replay: bool = True) -> None:
        """Call `callback` for every sample; with replay, first for every sample so far."""
        with self._lock:
            history = list(self._samples) if replay else []
            self._subscribers.append(callback)
        for record in history:
            callback(record)

    def stream(self, replay: bool = True) -> Iterator[Sample]:
        """Iterate over samples as they come, until the run ends."""
        q: queue.Queue[object] = queue.Queue()
        with self._lock:
            for record in self._samples if replay else ():
                q.put(record)
            if self.closed:
                q.put(_END)
            else:
                self._queues.append(q)
        while (item := q.get()) is not _END:
            yield item  # type: ignore[misc]

    def close(self) -> None:
        with self._lock:
            self.closed = True
            queues, self._queues = self._queues, []
        for q in queues:
            q.put(_END)

    def frame(self, kind: str) -> pd.DataFrame:
        with self._lock:
            rows = [{k: v for k, v in s.items() if k != "kind"} for s in self._samples if s["kind"] == kind]
        return pd.DataFrame(rows)
