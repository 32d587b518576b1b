"""One viewer's live event stream of a run, as a stepper that never blocks.

`EventStream.poll(now)` returns the SSE messages due now and whether the stream has ended; the caller
decides how to wait between polls (`SSE_BATCH_S`). The same stepper serves both ways the app is run:
the Flask endpoint (a generator that sleeps between polls: one thread per viewer, fine for the test
client and a few browsers) and the ASGI front (`webapp.asgi`: one coroutine per viewer, so a whole
class can watch a run without holding the server's threads).

Phases: while the run is queued, its position once a second; once it runs, the samples so far (the
channel's history) and then every new one, batched; a run that is over (or was never live here) is
replayed from its folder's partial traces. Every stream ends with an `end` event carrying the status.

Memory is bounded per run and per viewer: the channel keeps its history as compact JSON text of the
slimmed samples (what viewers get, ~80 bytes each, not the engine's full dicts), and a replay from the
folder reads REPLAY_CHUNKS_PER_POLL chunks of the file a poll (issue 37: every sample kept whole in
memory, and the whole file parsed at once per viewer: +370 MB for a 10-s run at the form's maxima and
1.8 GB for 20 viewers replaying it).
"""

from __future__ import annotations

import json
import queue
from collections.abc import Callable, Iterator
from typing import Any

from fastlab.service.samples import KEEP_KEYS, encode, slim

SSE_BATCH_S = 0.1  # one SSE message per 100 ms at most: >= 5 updates/s, < 1 s latency
SSE_HEARTBEAT_S = 5.0
QUEUED_EVERY_S = 1.0  # position updates while queued
REPLAY_CHUNK = 2000  # samples per message when replaying
REPLAY_CHUNKS_PER_POLL = 4  # a replay from the folder reads at most this many chunks a poll
RETRY = "retry: 3000\n\n"
KEEPALIVE = ": keepalive\n\n"


def message(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'), default=str)}\n\n"


def samples_message(encoded: list[str]) -> str:
    """A `samples` message of samples already encoded (`encode`): no parse, no second copy."""
    return f"event: samples\ndata: [{','.join(encoded)}]\n\n"


def replay(encoded: list[str]) -> list[str]:
    return [samples_message(encoded[i:i + REPLAY_CHUNK]) for i in range(0, len(encoded), REPLAY_CHUNK)]


class EventStream:
    """The stream of `run_id` for one viewer. `manager` is the app's RunManager (channels, runs going);
    `status_of()` reads the run's status row; `partial()` reads its saved partial traces."""

    def __init__(self, manager: Any, run_id: str, status_of: Callable[[], dict[str, Any]],
                 partial: Callable[[], Iterator[dict[str, Any]]], end_marker: object) -> None:
        self.manager, self.run_id = manager, run_id
        self.status_of, self.partial, self.end_marker = status_of, partial, end_marker
        self.saved: Iterator[dict[str, Any]] | None = None  # the folder's samples, while replaying them
        self.phase = "start"
        self.channel: Any = None
        self.sub: queue.Queue[object] | None = None
        self.next_status = 0.0
        self.last_sent = 0.0

    @property
    def live(self) -> bool:
        """In the live phase a poll only drains an in-memory queue (cheap; no database, no files)."""
        return self.phase == "live"

    def poll(self, now: float) -> tuple[list[str], bool]:
        out: list[str] = []
        if self.phase == "start":
            out.append(RETRY)
            self.phase = "waiting"
        if self.phase == "waiting":
            channel = self.manager.channels.get(self.run_id)
            if channel is None:
                st = self.status_of()
                if st["status"] == "queued" and not self.manager.is_running(self.run_id):
                    if now >= self.next_status:
                        out.append(message("status", st))
                        self.next_status = now + QUEUED_EVERY_S
                    return out, False
                channel = self.manager.channels.get(self.run_id)
            if channel is None:  # over, or never live in this process: replay the saved traces
                out.append(message("status", self.status_of()))
                self.saved, self.phase = self.partial(), "replay"
            else:
                history, self.sub = channel.subscribe()
                self.channel = channel
                out.append(message("status", self.status_of()))
                out += replay(history)
                self.phase, self.last_sent = "live", now
        if self.phase == "replay" and self.saved is not None:
            chunk: list[str] = []
            for sample in self.saved:  # a few chunks a poll: bounded memory however long the run was
                text = encode(sample)
                if text is not None:
                    chunk.append(text)
                if len(chunk) >= REPLAY_CHUNK * REPLAY_CHUNKS_PER_POLL:
                    break
            else:
                self.phase = "ending"
            out += replay(chunk)
            if self.phase == "replay":
                return out, False
        if self.phase == "live" and self.sub is not None:
            batch: list[dict[str, Any]] = []
            while True:
                try:
                    item = self.sub.get_nowait()
                except queue.Empty:
                    break
                if item is self.end_marker:
                    # The end's status is read from the database on the next poll, which is no
                    # longer live: a front that keeps live polls on its event loop runs that one aside.
                    self.close()
                    self.phase = "ending"
                    break
                if isinstance(item, dict) and item.get("kind") in KEEP_KEYS:
                    batch.append(slim(item))
                elif isinstance(item, dict) and item.get("kind") == "log":
                    out.append(message("log", item))
            if batch:
                out.append(message("samples", batch))
                self.last_sent = now
            elif now - self.last_sent > SSE_HEARTBEAT_S and self.phase == "live":
                out.append(KEEPALIVE)
                self.last_sent = now
            return out, False
        if self.phase == "ending":
            out.append(message("end", self.status_of()))
            self.phase = "done"
        return out, self.phase == "done"

    def close(self) -> None:
        """Stop receiving (a viewer that left, or the end of the run)."""
        if self.channel is not None and self.sub is not None:
            self.channel.unsubscribe(self.sub)
        self.sub = None
