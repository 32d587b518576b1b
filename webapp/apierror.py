"""The web app's one JSON error answer: {"error": "<one line>"} with its HTTP status (every blueprint)."""

from __future__ import annotations

from flask import Response, jsonify


def api_error(status: int, message: str) -> Response:
    resp = jsonify({"error": message})
    resp.status_code = status
    return resp
