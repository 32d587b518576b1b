"""The web app as an ASGI application: live streams as coroutines, everything else through Flask.

Why: a thread-per-request server gives every viewer of a live run's event stream a thread for the
whole run; a class of 30 watching one 600 s run held the server's 16 threads and froze every other
page (issue: classroom). Here `GET /api/runs/<id>/events` is served by one coroutine per viewer that
polls its `EventStream` every SSE_BATCH_S (a queue drain: no thread, no database) and every other
request goes to the Flask app in a bounded thread pool (a2wsgi). The events request still passes
the Flask app's own guards (Host, token), 404 and response headers: `open_events` runs them in the
pool before the stream starts.

Bodies are read here, on the loop, before Flask sees the request, each to its route's limit
(webapp.security.body_limit: 8 MiB for a trace upload, 256 KiB for JSON) and no further: a Content-Length
over it is answered 413 at once, without reading (one of 8 MiB + 1 with no body waited 30 s for a body
that would be refused; the old cap of 256 KiB for every route made every upload over it fail, issue 47);
a chunked body reaches Flask whole, with its length (it reached it empty). Who the client is comes from
the socket: the server believes no X-Forwarded-For (`server_config`) unless `trusted_proxy` names the
proxy, whose header alone then names its client (uvicorn believed it from 127.0.0.1 by default, and a
client there took other addresses' runs and the queue's per-client shares, issue 47).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
import time
from typing import Any

import uvicorn
from a2wsgi import WSGIMiddleware
from a2wsgi.wsgi import build_environ
from flask import Flask
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from webapp.events import SSE_BATCH_S
from webapp.security import body_limit

EVENTS_PATH = re.compile(r"^/api/runs/([^/]+)/events$")
WSGI_WORKERS = 16  # Flask requests served at once (pages, API, bundle downloads); streams need none
# Replays read and encode a finished run's traces in threads, all CPU under one GIL: 20 viewers replaying
# a 64-flow run at once held GET /api/runs for 1.5 s (bench/server.py, issue 37). At most this many replay
# polls run at once, so a request waits behind two threads, not six; the replays' total rate is the
# CPU's either way.
REPLAY_POLLS_AT_ONCE = 2
# Bodies larger than the JSON routes' limit (trace uploads, up to 8 MiB) held in memory at once: more wait
# on the loop for their turn, so that many clients uploading cannot hold 8 MiB each (32 MiB at most).
LARGE_BODIES_AT_ONCE = 4


def server_config(asgi: Any, host: str, port: int, **options: Any) -> uvicorn.Config:
    """The uvicorn configuration `python -m webapp` (and the tests' live server) serve `asgi` with: no proxy
    headers believed (uvicorn's default believes X-Forwarded-For from 127.0.0.1 and ::1; a trusted proxy is
    `make_asgi`'s to name), no lifespan, no access log."""
    return uvicorn.Config(asgi, host=host, port=port, proxy_headers=False, lifespan="off", access_log=False,
                          **{"log_level": "warning", **options})


def make_asgi(app: Flask, workers: int = WSGI_WORKERS, trusted_proxy: str | None = None) -> Any:
    """The ASGI callable that serves `app` (a webapp.create_app Flask app); `trusted_proxy`: the address of
    the reverse proxy whose X-Forwarded-For names the client (its last entry: the address the proxy saw)."""
    wsgi = WSGIMiddleware(app, workers=workers)
    open_events = app.extensions["fastlab_open_events"]

    replay_gate = asyncio.Semaphore(REPLAY_POLLS_AT_ONCE)
    large_gate = asyncio.Semaphore(LARGE_BODIES_AT_ONCE)
    small = int(app.config["MAX_CONTENT_LENGTH"])

    async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            match = EVENTS_PATH.match(scope["path"])
            if match:
                await serve_events(open_events, scope, receive, send, match.group(1), replay_gate)
                return
        if scope["type"] == "http":
            limit = body_limit(scope["path"], app.config)
            declared = content_length(scope)
            if declared is not None and declared > limit:
                receive = no_body(receive)  # Flask's guard answers 413 from the header: nothing is read
            else:
                async with large_gate if limit > small else contextlib.nullcontext():
                    body = await read_body(receive, limit)
                if body is None:
                    return  # the client left before its body arrived
                data, receive = body
                if declared is None and data:  # chunked: Flask reads a body by its length
                    scope = with_length(scope, len(data))
        await wsgi(scope, receive, send)

    return ProxyHeadersMiddleware(application, trusted_hosts=[trusted_proxy]) if trusted_proxy else application


def content_length(scope: dict[str, Any]) -> int | None:
    """The request's Content-Length (None: none, or not a plain decimal, which the server refused already)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return int(value) if value.isdigit() and len(value) <= 20 else None
    return None


def with_length(scope: dict[str, Any], length: int) -> dict[str, Any]:
    """`scope` with its body's length as Content-Length and no Transfer-Encoding (the body is read whole)."""
    headers = [(k, v) for k, v in scope["headers"] if k not in (b"content-length", b"transfer-encoding")]
    return {**scope, "headers": [*headers, (b"content-length", str(length).encode())]}


def no_body(receive: Any) -> Any:
    """A `receive` that hands Flask an empty body at once (the client's is never read)."""
    handed = False

    async def replay() -> dict[str, Any]:
        nonlocal handed
        if not handed:
            handed = True
            return {"type": "http.request", "body": b"", "more_body": False}
        return await receive()

    return replay


async def read_body(receive: Any, limit: int) -> tuple[bytes, Any] | None:
    """The request's whole body read here, on the loop, before Flask sees the request (at most limit + 1
    bytes: one more tells Flask's own check that it is too large), and a `receive` that hands it over in
    one message. Read lazily from inside Flask's request instead, a body past the server's 64-KiB read
    buffer made the adapter resume reading in the middle of the request, and the requests that followed on
    that keep-alive connection ran in the stale app context with its database connection (issue 37: 27 of
    30 answered 500 after one 78-KB body). None: the client disconnected."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body = message.get("body", b"")
        if size <= limit:
            chunks.append(body[: limit + 1 - size])
        size += len(body)
        if not message.get("more_body", False) or size > limit:
            break
    data = b"".join(chunks)
    handed = False

    async def replay() -> dict[str, Any]:
        nonlocal handed
        if not handed:
            handed = True
            return {"type": "http.request", "body": data, "more_body": False}
        return await receive()  # after the body: only the disconnect is left to hear

    return data, replay


async def serve_events(open_events: Any, scope: dict[str, Any], receive: Any, send: Any, run_id: str,
                       replay_gate: asyncio.Semaphore | None = None) -> None:
    environ = build_environ(scope, io.BytesIO(b""))  # a GET: no body (receive stays ours)
    resp, stream = await asyncio.to_thread(open_events, environ, run_id)
    await send({"type": "http.response.start", "status": resp.status_code,
                "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in resp.headers.items()]})
    if stream is None:  # refused (Host, token, unknown run): the Flask app's own answer
        await send({"type": "http.response.body", "body": resp.get_data(), "more_body": False})
        return
    gone = asyncio.Event()

    async def watch_disconnect() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        gone.set()

    watcher = asyncio.create_task(watch_disconnect())
    try:
        while not gone.is_set():
            # Outside the live phase a poll reads the database or the run's files: not on the loop.
            if stream.live:
                messages, finished = stream.poll(time.monotonic())
            else:
                async with replay_gate or contextlib.nullcontext():
                    messages, finished = await asyncio.to_thread(stream.poll, time.monotonic())
            if messages:
                await send({"type": "http.response.body", "body": "".join(messages).encode(), "more_body": True})
            if finished:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(gone.wait(), SSE_BATCH_S)
        if not gone.is_set():
            await send({"type": "http.response.body", "body": b"", "more_body": False})
    except OSError:
        pass  # the viewer left while we wrote
    finally:
        stream.close()
        watcher.cancel()
