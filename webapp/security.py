"""The web app's guards, on every request (a blueprint of app-wide hooks).

Loopback only unless an access token is given (`check_binding`); a Host header that is not a loopback
name or the served host is refused (DNS rebinding), and so is a state-changing request from a foreign
Origin; with a token every request needs it (header X-Fastlab-Token or cookie fastlab_token; `?token=`
once sets the cookie); every state-changing request needs the per-app CSRF token in `X-CSRF-Token` and
a JSON body; pages carry a Content-Security-Policy (scripts only from the app). The API answers in JSON
even for paths no route matches, and for bodies over the size limit.

The app's config carries what the hooks read: ALLOWED_HOSTS, ANY_HOST, ACCESS_TOKEN, CSRF_TOKEN.
"""

from __future__ import annotations

import hmac
from typing import Any

from flask import Blueprint, Response, current_app, redirect, render_template, request

from fastlab.define import linktrace
from webapp.apierror import api_error

bp = Blueprint("security", __name__)

LOOPBACK = ("127.0.0.1", "localhost", "::1")
WILDCARD = ("0.0.0.0", "::", "")
MIN_TOKEN_CHARS = 16  # guessing it must not be practical: 16 url-safe characters are ~96 bits
# Pages of the app: every script and style sheet is a file it serves; plotly sets inline styles.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
# report.html inlines plotly and its data: allowed to run its own inline code, in a sandbox (an
# opaque origin: it can reach neither this app's API nor its cookies).
REPORT_CSP = ("default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; "
              "sandbox allow-scripts")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
# The one route whose body is a file's bytes (application/octet-stream), not JSON, and its own bound: an
# uploaded mahimahi trace (webapp.uploads), at most what fastlab.define.linktrace reads.
RAW_BODIES = {"/api/traces": linktrace.MAX_FILE_BYTES}
RAW_TYPE = "application/octet-stream"


def body_limit(path: str, config: Any) -> int:
    """The largest body a request to `path` may carry, bytes: the route's own (RAW_BODIES) or the app's
    MAX_CONTENT_LENGTH. The one rule of both the ASGI front (webapp.asgi, which reads a body to it and
    no further) and the guard below (which refuses a larger one with 413)."""
    return RAW_BODIES.get(path) or int(config["MAX_CONTENT_LENGTH"])


def host_name(header: str) -> str:
    """The name part of a Host header or an Origin's authority (pure): '[::1]:8080' -> '::1'."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def origin_host(origin: str) -> str | None:
    """The host of an Origin header (pure); None for 'null' or anything that is not http(s)://."""
    for scheme in ("http://", "https://"):
        if origin.lower().startswith(scheme):
            return host_name(origin[len(scheme):].split("/", 1)[0])
    return None


def check_binding(host: str, token: str | None) -> dict[str, Any]:
    """The guards' config for an app served on `host` (pure); ValueError for a weak token, or for an
    address beyond loopback without one.

    DNS rebinding: a page from another site whose name now points at 127.0.0.1 sends its own name as
    Host. Loopback names always pass; the served host too; with a token on a wildcard address any name
    passes (the token, which such a page cannot have, is then the guard)."""
    if token is not None and (len(token) < MIN_TOKEN_CHARS or not token.isprintable() or token != token.strip()):
        raise ValueError(f"the access token must be at least {MIN_TOKEN_CHARS} printable characters without "
                         f"surrounding spaces (e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(24))')")
    if host not in LOOPBACK and not token:
        raise ValueError(f"binding to {host} (beyond loopback) needs an access token (--token or FASTLAB_TOKEN)")
    return {"ALLOWED_HOSTS": frozenset(LOOPBACK) | ({host.lower()} if host not in WILDCARD else frozenset()),
            "ANY_HOST": host in WILDCARD and bool(token), "ACCESS_TOKEN": token}


@bp.before_app_request
def guard() -> Any:
    config = current_app.config
    allowed, any_host, token = config["ALLOWED_HOSTS"], config["ANY_HOST"], config["ACCESS_TOKEN"]
    if not any_host and host_name(request.host or "") not in allowed:
        return api_error(421, f"Host {request.host!r} is not served here (DNS rebinding guard): "
                              f"use {sorted(allowed)[0]}")
    origin = request.headers.get("Origin")
    if origin is not None and request.method not in SAFE_METHODS and not any_host \
            and origin_host(origin) not in allowed:
        return api_error(403, f"Origin {origin[:100]!r} may not change anything here")
    if token:
        given = request.headers.get("X-Fastlab-Token") or request.cookies.get("fastlab_token") or ""
        via_query = request.args.get("token", "")
        if via_query and hmac.compare_digest(via_query.encode(), token.encode()):
            resp = redirect(request.path)
            resp.set_cookie("fastlab_token", token, httponly=True, samesite="Strict")
            return resp
        if not hmac.compare_digest(given.encode(), token.encode()):
            return api_error(401, "access token required (X-Fastlab-Token header or fastlab_token cookie)")
    if request.content_length is not None and request.content_length > body_limit(request.path, config):
        # from its Content-Length, before a byte is read (the ASGI front reads no further either); a
        # chunked body over the limit comes with the length the front read, one byte past it
        return too_large(None)
    if request.method not in SAFE_METHODS:
        sent = request.headers.get("X-CSRF-Token", "")
        if not hmac.compare_digest(sent.encode(), config["CSRF_TOKEN"].encode()):
            return api_error(403, "missing or wrong X-CSRF-Token header")
        raw_limit = RAW_BODIES.get(request.path)
        if raw_limit is not None:
            # a body without a Content-Length (the test client's chunked one) is read to one byte past the
            # bound at most (werkzeug's limit), which linktrace then refuses
            request.max_content_length = raw_limit + 1
            if request.mimetype != RAW_TYPE:
                return api_error(415, f"send the file's bytes as the body (Content-Type: {RAW_TYPE})")
        elif request.content_length and not request.is_json:
            return api_error(415, "request bodies must be JSON (Content-Type: application/json)")
    return None


@bp.after_app_request
def headers(resp: Response) -> Response:
    resp.headers.setdefault("X-Content-Type-Options", "nosniff")
    resp.headers.setdefault("X-Frame-Options", "DENY")
    resp.headers.setdefault("Referrer-Policy", "no-referrer")
    resp.headers.setdefault("Content-Security-Policy", CSP)
    return resp


@bp.app_errorhandler(404)
def not_found(exc: Any) -> Any:
    """The API answers in JSON even for paths no route matches (e.g. a lab ref with a slash); a page that
    does not exist is a page of the app (its navigation, where to go), not a bare "Not Found"."""
    if request.path.startswith("/api/"):
        return api_error(404, f"not found: {request.path}")
    return render_template("404.html", path=request.path[:200]), 404


@bp.app_errorhandler(413)
def too_large(_e: Any) -> Any:
    return api_error(413, f"request body larger than {body_limit(request.path, current_app.config):,} bytes")


@bp.app_context_processor
def inject() -> dict[str, Any]:
    return {"csrf_token": current_app.config["CSRF_TOKEN"]}
