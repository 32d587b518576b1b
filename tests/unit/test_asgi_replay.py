"""The ASGI front's replay gate: viewers replaying finished runs read and encode traces in threads, all
under one GIL; at most REPLAY_POLLS_AT_ONCE of those polls run at once, so the rest of the server (GET
/api/runs, pages) is not starved (issue 37: 1.5 s for GET /api/runs under 20 replays). Fake streams stand
in for a run's traces here: what is tested is the gate, not the replay (tests/webapp/test_sse.py has the
real one)."""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace
from typing import Any

from webapp.asgi import REPLAY_POLLS_AT_ONCE, serve_events

POLL_S = 0.05
POLLS = 3


class SlowReplay:
    """A replaying stream whose every poll takes POLL_S of a thread, counting how many run at once."""

    live = False
    running = 0
    most = 0
    lock = threading.Lock()

    def __init__(self) -> None:
        self.polls = 0

    def poll(self, now: float) -> tuple[list[str], bool]:
        with SlowReplay.lock:
            SlowReplay.running += 1
            SlowReplay.most = max(SlowReplay.most, SlowReplay.running)
        time.sleep(POLL_S)
        with SlowReplay.lock:
            SlowReplay.running -= 1
        self.polls += 1
        return [f"data: {self.polls}\n\n"], self.polls >= POLLS

    def close(self) -> None:
        pass


def test_replay_polls_wait_at_the_gate() -> None:
    streams = [SlowReplay() for _ in range(6)]
    sent: list[list[dict[str, Any]]] = [[] for _ in streams]

    def opener(stream: SlowReplay) -> Any:
        return lambda environ, run_id: (SimpleNamespace(status_code=200, headers={"Content-Type": "text/event-stream"}),
                                        stream)

    async def never() -> dict[str, Any]:
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def main() -> None:
        gate = asyncio.Semaphore(REPLAY_POLLS_AT_ONCE)
        scope = {"type": "http", "method": "GET", "path": "/api/runs/x/events", "headers": [], "query_string": b"",
                 "server": ("127.0.0.1", 8080), "client": ("127.0.0.1", 1), "scheme": "http", "root_path": "",
                 "http_version": "1.1"}

        async def one(i: int) -> None:
            async def send(message: dict[str, Any]) -> None:
                sent[i].append(message)
            await serve_events(opener(streams[i]), scope, never, send, "x", gate)

        await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(len(streams)))), 30)

    asyncio.run(main())
    assert SlowReplay.most == REPLAY_POLLS_AT_ONCE  # the gate was reached, and held
    for messages, stream in zip(sent, streams, strict=True):
        assert stream.polls == POLLS
        bodies = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
        assert bodies == b"".join(f"data: {n}\n\n".encode() for n in range(1, POLLS + 1))
        assert messages[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
