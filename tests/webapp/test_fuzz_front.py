"""Issue 47's fuzz test over the real server (uvicorn with webapp.asgi in front, on loopback): a catalogue
of hostile values (NaN, inf, huge integers, 10^5-deep nesting, wrong types, over-long strings, line
breaks, path-like names, YAML alias bombs) sent to every route of the app (its URL map: every method,
every path variable) and every query parameter it reads, and as every body. No answer may be a 500, none
may take more than 1 s, and the server's memory may not grow by 50 MB; the whole is bounded to 2 minutes.
(tests/webapp/test_fuzz.py fuzzes the spec's fields through Flask's test client; this goes through the
front, where bodies, lengths and identities are decided.)"""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from tests.webapp.test_bundle import make_run
from tests.webapp.test_hostile_second_round import call, nested_anchors
from webapp import create_app

pytestmark = pytest.mark.alone  # judges each refusal's time (< 1 s)

RUN_ID = "20261122-050000-demo-flabcd"  # make_run's folder: a finished run the history indexes
# What the app reads from a query string (grep request.args in webapp/), by the routes that read it: there
# each takes every hostile value alone; every route also gets every value in all of them at once.
QUERY_PARAMS = {"/api/compare": ("runs",), "/compare": ("runs",), "/new": ("lab", "spec", "set"),
                "/api/topologies/<name>": ("args",), "/api/traces": ("field", "name"),
                "/api/runs": ("page", "per_page"), "/": ("page", "per_page")}
EVERY_PARAM = sorted({p for params in QUERY_PARAMS.values() for p in params} | {"token", "x"})
REAL = {"run_id": RUN_ID, "lab": "1", "ref": "1", "step": "fill", "name": "dumbbell", "sweep_id": RUN_ID,
        "filename": "form.js"}

DEEP = "[" * 100_000 + "]" * 100_000  # 10^5 levels: 200 kB, within the JSON routes' 256 KiB
# As text (a path segment, a query value, a string inside JSON).
HOSTILE_TEXT = [
    "NaN", "nan", "Infinity", "-inf", "1e309", "9" * 5000, "-" + "9" * 5000, "0x" + "f" * 100,
    "[" * 990 + "]" * 990, "{" * 500, DEEP[:20_000] + DEEP[-20_000:],
    "true", "null", "[]", "{}", "1.5", '"x"',
    "a" * 100_000, "a\nb", "a\r\nb", "\u2028", "\x00", "\x1b[31m",
    "../../etc/passwd", "/etc/passwd", "..", ".", "a/b", "%2e%2e%2f", "..%2f..%2f", "~root", "C:\\x",
    f"description={nested_anchors(7)}", nested_anchors(8), "seed=" + "9" * 5000, "duration_s=.nan",
    "{a: &a [*a]}", "a: 1\na: 2",
]
# As JSON bodies (whole documents).
HOSTILE_BODIES = [
    b"NaN", b"Infinity", b"-Infinity", b"1" + b"0" * 400, b"9" * 5000, DEEP.encode(), b"{" * 50_000,
    b"[]", b"{}", b"true", b"null", b"1.5", b'"x"', b'"' + b"a" * 200_000 + b'"', b"\xff\xfe", b"",
    b'{"a": 1, "a": 2}', b'{"spec": NaN}', json.dumps({"spec": {"name": "../../x", "duration_s": 1e308}}).encode(),
    json.dumps({"answers": "a\n" * 1000, "short": "yes", "host": "h1\n", "cc": "../x", "args": {"alpha": 1e400}})
    .replace("Infinity", "1e400").encode(),
    json.dumps({"spec": {}, "param": "flows.0.cc_args.alpha", "values": [1e308, -1e308, 0], "repeat": 10**30})
    .encode(),
]
TIME_LIMIT_S = 1.0
TOTAL_LIMIT_S = 120.0
RSS_LIMIT_MB = 50
HEAD_LIMIT = 16 * 1024  # uvicorn's h11_max_incomplete_event_size: a longer request head is refused by its parser


def rss_mb() -> float:
    """This process's resident memory (the live server runs in a thread of it), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def routes(app: Any) -> list[tuple[str, str, list[str]]]:
    """(method, rule, its path variables) of every route of the app."""
    out = []
    for rule in app.url_map.iter_rules():
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            out.append((method, rule.rule, sorted(rule.arguments)))
    return out


def fill(rule: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        rule = rule.replace(f"<path:{name}>", value).replace(f"<{name}>", value)
    return rule


@pytest.mark.timeout(300)
def test_hostile_values_to_every_route_and_parameter(tmp_path: Path, tiny_labs: Path, live_server_factory: Any) -> None:
    results = tmp_path / "results"
    results.mkdir()
    make_run(results)
    app = create_app(results_root=results, start_worker=False, labs_dir=tiny_labs)
    server = live_server_factory(app)
    csrf = {"X-CSRF-Token": app.config["CSRF_TOKEN"]}
    table = routes(app)
    assert len(table) >= 40, table

    def send(method: str, url: str, body: bytes | None = None, kind: str = "application/json") -> Any:
        headers = csrf | ({"Content-Type": kind} if body is not None else {})
        return call(server.port, method, url, body, headers=headers, timeout=10)

    def plain_url(method: str, rule: str, args: list[str]) -> str:
        return fill(rule, {a: REAL.get(a, "x") for a in args})

    # warm-up, not measured: the capability probe, the imports of the first request of each kind
    for method, rule, args in table:
        if method != "DELETE":
            send(method, plain_url(method, rule, args), b"{}" if method == "POST" else None)
    before = rss_mb()
    t0 = time.monotonic()
    problems: list[str] = []
    sent = cut = 0

    def check(method: str, url: str, body: bytes | None = None, kind: str = "application/json") -> None:
        nonlocal sent, cut
        sent += 1
        shown = f"{method} {url[:120]!r} body {(body or b'')[:60]!r}"
        t1 = time.monotonic()
        try:
            answer = send(method, url, body, kind)
        except (ConnectionError, http.client.HTTPException) as exc:
            # a request head over the server's 16-KiB bound (uvicorn's h11_max_incomplete_event_size) is refused
            # by its HTTP parser, which answers 400 and closes while the client still sends: a reset here
            if len(url) <= HEAD_LIMIT:
                problems.append(f"{shown}: {exc.__class__.__name__}: {exc}")
            elif time.monotonic() - t1 > TIME_LIMIT_S:
                problems.append(f"{shown}: {time.monotonic() - t1:.2f} s to be refused")
            cut += 1
            return
        if answer.status >= 500:
            problems.append(f"{shown}: {answer.status} {answer.body[:200]!r}")
        if answer.seconds > TIME_LIMIT_S:
            problems.append(f"{shown}: {answer.seconds:.2f} s")

    for method, rule, args in table:
        # every path variable, one at a time, takes every hostile text (the others a real value)
        for arg in args:
            for value in HOSTILE_TEXT:
                if method == "DELETE" and arg != "run_id":
                    continue
                url = fill(rule, {a: REAL.get(a, "x") for a in args} | {arg: urllib.parse.quote(value, safe="")})
                check(method, url, b"{}" if method == "POST" else None)
        # every query parameter takes every hostile text
        if method == "DELETE":
            continue
        base = plain_url(method, rule, args)
        for value in HOSTILE_TEXT:
            body = b"{}" if method == "POST" else None
            for param in QUERY_PARAMS.get(rule, ()):
                check(method, f"{base}?{urllib.parse.urlencode({param: value})}", body)
            check(method, f"{base}?{urllib.parse.urlencode(dict.fromkeys(EVERY_PARAM, value))}", body)
        # every body
        if method == "POST":
            kind = "application/octet-stream" if rule == "/api/traces" else "application/json"
            url = f"{base}?field=links.bottleneck.trace" if rule == "/api/traces" else base
            for body in HOSTILE_BODIES:
                check(method, url, body, kind)
        assert time.monotonic() - t0 < TOTAL_LIMIT_S, f"{sent} requests: over {TOTAL_LIMIT_S:g} s"
    grown = rss_mb() - before
    seconds = time.monotonic() - t0
    print(f"fuzz over the front: {sent:,} requests to {len(table)} routes in {seconds:.1f} s ({cut} refused by the "
          f"HTTP parser: a head over {HEAD_LIMIT:,} bytes), RSS +{grown:.1f} MB")
    assert not problems, f"{len(problems)} of {sent}: " + "\n".join(problems[:20])
    assert grown < RSS_LIMIT_MB, f"RSS grew {grown:.1f} MB over {sent} requests"
    # the finished run is still there, untouched by every path-like id
    assert (results / RUN_ID / "summary.json").is_file()
