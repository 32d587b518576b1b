"""Live: a running run's traces over Server-Sent Events, and changing its algorithms' parameters
while it runs (FAST's alpha from the live page).

The stream has two fronts: `api_events` for a thread-per-request server, and `open_events` for
`webapp.asgi`, which serves the same stream as a coroutine after the same guards.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from flask import Blueprint, Flask, Response, jsonify, stream_with_context
from werkzeug.exceptions import HTTPException

from fastlab.run.ccruntime import LiveControlBusy, LiveControlError
from fastlab.service import samples as q
from webapp.apierror import api_error
from webapp.events import SSE_BATCH_S, EventStream
from webapp.services import body_json, services

bp = Blueprint("live", __name__)


def event_stream(run_id: str) -> EventStream:
    """A viewer's stream of a run the history knows (404 otherwise: no path from the URL)."""
    sv = services()
    sv.run_row(run_id)
    return EventStream(sv.manager, run_id, lambda: sv.status_row(run_id),
                       lambda: q.iter_partial(sv.folder(run_id)), q.END)


def stream_headers(resp: Response) -> Response:
    resp.headers["Cache-Control"] = "no-cache"
    resp.headers["X-Accel-Buffering"] = "no"
    return resp


@bp.get("/api/runs/<run_id>/events")
def api_events(run_id: str) -> Any:
    """The live stream for a thread-per-request server (the ASGI front serves it as a coroutine)."""
    stream = event_stream(run_id)

    def gen() -> Iterator[str]:
        try:
            while True:
                messages, finished = stream.poll(time.monotonic())
                yield from messages
                if finished:
                    return
                time.sleep(SSE_BATCH_S)
        finally:
            stream.close()

    return stream_headers(Response(stream_with_context(gen()), mimetype="text/event-stream"))


def open_events(app: Flask, environ: dict[str, Any], run_id: str) -> tuple[Response, EventStream | None]:
    """For webapp.asgi: the same guards, 404 and headers as any request to the events URL, and the
    viewer's stream if it may watch (run in a worker thread: it reads the database)."""
    with app.request_context(environ):
        stream = None
        try:
            rv = app.preprocess_request()
            if rv is None:
                stream = event_stream(run_id)
                rv = stream_headers(Response(mimetype="text/event-stream"))
            resp = app.make_response(rv)
        except HTTPException as exc:
            resp = app.make_response(app.handle_user_exception(exc))
        return app.process_response(resp), stream


@bp.post("/api/runs/<run_id>/cc")
def api_live_cc(run_id: str) -> Any:
    """Change a running run's algorithm parameters now, per host (FAST's alpha while it runs)."""
    sv = services()
    row = sv.run_row(run_id)
    live = sv.manager.live_of(run_id)
    if not sv.may_act_on(row):
        return api_error(403, sv.not_yours(row, "change its parameters"))
    if row["status"] == "running" and sv.manager.cluster is not None:
        return api_error(409, "this run goes on a cluster worker: its parameters cannot change from here")
    if row["status"] != "running" or live is None:
        return api_error(409, f"run is {row['status']}: only a running run's parameters can change")
    body = body_json()  # one line (and no traceback) for a body that is not JSON or nested too deep
    if not isinstance(body, dict) or set(body) - {"host", "cc", "args"}:
        return api_error(422, 'send {"host": "h1", "cc": "fast", "args": {"alpha": 60}} (and nothing else)')
    host, cc, args = body.get("host"), body.get("cc", "fast"), body.get("args")
    if not isinstance(host, str) or not isinstance(cc, str) or not isinstance(args, dict):
        return api_error(422, "host and cc must be strings, args an object of parameters")
    try:
        return jsonify(live.set(host, cc, args))
    except LiveControlBusy as exc:
        return api_error(429, str(exc))
    except LiveControlError as exc:
        return api_error(422, str(exc))
