"""A run's samples for its viewers: the live fan-out of a run going and the samples of a finished one.

Each sample the engine emits is published on the run's `Channel`, which keeps the history for late
subscribers (compact JSON text: bounded memory) and fans out to one queue per subscriber (each of the web
app's live streams); the engine's progress lines of the run's thread reach it as "log" samples
(`ProgressToStream`). `iter_partial` reads a run's samples back: its partial.jsonl (kept: a run cut by a
restart still has its traces), or for a run made without the service its CSVs (`recorded_samples`).
"""

from __future__ import annotations

import collections
import json
import logging
import math
import queue
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from fastlab.base.rundir import EVENTS, FLOWS, LINKS, RunFolder
from fastlab.results import chart_data

END = object()
FASTLAB_LOG = logging.getLogger("fastlab")  # the engine's progress lines (INFO) and warnings
# What a stream keeps of each sample: what the charts read (fastlab.results.chart_data, the one list; a copy here
# once lost RED's average and drop probability on the live page)
KEEP_KEYS = {kind: ("kind", *columns) for kind, columns in chart_data.SAMPLE_COLUMNS.items()}


def slim(sample: dict[str, Any]) -> dict[str, Any]:
    keys = KEEP_KEYS.get(sample.get("kind", ""))
    return {k: sample.get(k) for k in keys} if keys else sample


def encode(sample: dict[str, Any]) -> str | None:
    """A sample as the compact JSON text viewers get, or None for a kind they do not get."""
    if sample.get("kind") not in KEEP_KEYS:
        return None
    return json.dumps(slim(sample), separators=(",", ":"), default=str)


def clean(value: Any) -> Any:
    """JSON-safe: non-finite floats become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class Channel:
    """Samples of one live run: the history a late viewer gets (compact JSON text of the slimmed
    samples, `events.encode`: bounded memory) plus one queue per subscriber."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.history: list[str] = []
        self._subs: list[queue.Queue[object]] = []
        self.closed = False

    def publish(self, sample: dict[str, Any]) -> None:
        text = encode(sample)
        with self._lock:
            if text is not None:
                self.history.append(text)
            subs = list(self._subs)
        for q in subs:
            q.put(sample)

    def subscribe(self) -> tuple[list[str], queue.Queue[object]]:
        q: queue.Queue[object] = queue.Queue()
        with self._lock:
            replay = list(self.history)
            if self.closed:
                q.put(END)
            else:
                self._subs.append(q)
        return replay, q

    def unsubscribe(self, q: queue.Queue[object]) -> None:
        with self._lock:
            if q in self._subs:
                self._subs.remove(q)

    @property
    def subscribers(self) -> int:
        with self._lock:
            return len(self._subs)

    def close(self) -> None:
        with self._lock:
            self.closed = True
            subs, self._subs = self._subs, []
        for q in subs:
            q.put(END)


def iter_partial(run_dir: Path, limit: int = 2_000_000) -> Iterator[dict[str, Any]]:
    """The samples of a run's partial.jsonl, one at a time (the file stays open while the iterator is
    used: a replay reads it a few chunks a poll). A finished run made without the web app (a CLI run, a
    bundle's, a lab's recording) has none: its samples from its CSVs instead (fastlab.results.chart_data, what
    its report.html draws), so its page draws its charts too."""
    folder = RunFolder(run_dir)
    yield from folder.partial(limit) if folder.has_partial() else recorded_samples(run_dir, limit)


def recorded_samples(run_dir: Path, limit: int) -> Iterator[dict[str, Any]]:
    """A finished run's samples from its flows.csv, links.csv and cc_events.csv (those it has); nothing
    for a folder that is no finished run or whose tables cannot be read. Parsed once per version of the
    tables (their sizes and times): a class opening the same recorded run reads its CSVs once, not once a
    viewer (a lab recording's tables take ~0.1-1 s to parse and chart)."""
    folder = RunFolder(run_dir)
    if not folder.is_run():
        return
    stamp: list[tuple[int, int] | None] = []
    for name in (FLOWS, LINKS, EVENTS):
        try:
            st = folder.path(name).stat()  # the table as RunFolder reads it (name or name.gz)
            stamp.append((st.st_size, st.st_mtime_ns))
        except OSError:
            stamp.append(None)
    key = (str(run_dir.resolve()), tuple(stamp), limit)
    with _RECORDED_LOCK:
        samples = _RECORDED.get(key)
        if samples is not None:
            _RECORDED.move_to_end(key)
            RECORDED_STATS["hits"] += 1
    if samples is None:
        samples = _parse_recorded(folder, limit)
        with _RECORDED_LOCK:
            RECORDED_STATS["parses"] += 1
            if len(samples) <= RECORDED_CACHE_MAX_SAMPLES:
                _RECORDED[key] = samples
                while len(_RECORDED) > RECORDED_CACHE_RUNS:
                    _RECORDED.popitem(last=False)
    yield from samples


# Recorded runs' samples kept for the next viewer: the last few runs opened, each only if small enough
# that the cache stays bounded (~0.3 KB a sample: 8 x 50,000 samples is ~120 MB at most).
RECORDED_CACHE_RUNS = 8
RECORDED_CACHE_MAX_SAMPLES = 50_000
_RECORDED: collections.OrderedDict[tuple[Any, ...], tuple[dict[str, Any], ...]] = collections.OrderedDict()
_RECORDED_LOCK = threading.Lock()
RECORDED_STATS = {"hits": 0, "parses": 0}


def _parse_recorded(folder: RunFolder, limit: int) -> tuple[dict[str, Any], ...]:
    """recorded_samples' parse (the result is shared by every viewer: read, never changed)."""
    frames = []
    for read in (folder.flows, folder.links, folder.events):
        try:
            frames.append(read())
        except (FileNotFoundError, OSError, ValueError, pd.errors.ParserError):
            frames.append(pd.DataFrame())
    return tuple(chart_data.chart_samples(*frames)[:limit])


class ProgressToStream(logging.Handler):
    """What the engine logs while a run goes (its progress lines, warnings) as the run's live "log"
    events; only records of the thread that made the handler (the worker running that run), so a
    second thread's logging (a request, another app in the same process) stays out of the stream."""

    def __init__(self, channel: Channel) -> None:
        super().__init__(logging.INFO)
        self.channel = channel
        self.thread = threading.get_ident()

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.channel.publish({"kind": "log", "t": None, "msg": record.getMessage()})


