"""The web app's one JSON error answer: {"error": "<one line>"} with its HTTP status (every blueprint); a
refused input (422) also carries `field` (the spec path it names) and `message` (the same in words for
students, webapp.words), which the pages show."""

from __future__ import annotations

from flask import Response, jsonify

from webapp.words import plain


def api_error(status: int, message: str) -> Response:
    body = {"error": message}
    if status == 422:
        body["field"], body["message"] = plain(message)
    resp = jsonify(body)
    resp.status_code = status
    return resp
