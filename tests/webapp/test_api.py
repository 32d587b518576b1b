"""JSON API: validation gives the engine's own message, CSRF, access token, limits, queue, OpenAPI."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.webapp.conftest import good_spec, queued_count
from webapp import create_app

BAD = [
    (good_spec(flows=[{"src": "h1", "dst": "h2", "cc": "nosuchcc"}]),
     "flows[0].cc: unknown congestion control 'nosuchcc'"),
    (good_spec(links={"bottleneck": {"loss": {"model": "bernoulli", "rate": 1.5}}}),
     "links.bottleneck.loss.rate: Input should be less than or equal to 1"),
    (good_spec(links={"bottleneck": {"rate_mbps": -5}}), "links.bottleneck.rate_mbps: Input should be greater than 0"),
    (good_spec(durration_s=5), "durration_s: unknown field (misspelled?)"),
    (good_spec(flows=[{"src": "h1", "dst": "h2", "cc": "cubic", "cc_args": {"alpha": 30}}]),
     "flows[0].cc_args: cubic takes no parameter 'alpha'"),
    (good_spec(duration_s=601), "duration_s: at most 600 s in the web app"),
    (good_spec(flows=[{"src": "h1", "dst": "h9", "cc": "cubic"}]), "flows[0].dst: unknown host 'h9'"),
]


def engine_message(spec: dict) -> str:
    """What the engine itself says about a spec (prepare raises SpecError)."""
    from fastlab.define.schema import SpecError, parse_spec
    from fastlab.plan.prepare import prepare
    try:
        prepare(parse_spec(spec))
    except SpecError as exc:
        return str(exc)
    return ""


@pytest.mark.parametrize(("spec", "expected"), BAD, ids=["unknown-cc", "loss-1.5", "negative-rate", "misspelled",
                                                         "alpha-on-cubic", "too-long", "unknown-host"])
def test_bad_specs_get_the_engine_message_and_nothing_is_queued(app, client, csrf, spec, expected) -> None:
    for url in ("/api/validate", "/api/runs"):
        resp = client.post(url, json=spec, headers=csrf)
        assert resp.status_code == 422, resp.data
        assert resp.get_json()["error"].startswith(expected)
    if "600 s in the web app" not in expected:
        assert resp.get_json()["error"] == engine_message(spec)
    assert queued_count(app) == 0


def test_good_spec_validates_and_queues_with_position(app, client, csrf) -> None:
    resp = client.post("/api/validate", json=good_spec(), headers=csrf)
    assert resp.status_code == 200 and resp.get_json()["ok"] is True
    assert resp.get_json()["links"]["bottleneck"]["backend"] in ("tc", "emulator")
    assert queued_count(app) == 0  # validation queues nothing
    first = client.post("/api/runs", json=good_spec(), headers=csrf).get_json()
    second = client.post("/api/runs", json=good_spec(name="second"), headers=csrf).get_json()
    assert (first["status"], first["position"], second["position"]) == ("queued", 1, 2)
    page = client.get(f"/runs/{second['id']}")
    assert page.status_code == 200 and b"position 2" in page.data
    # cancel a queued run: removed from the queue, the other moves up
    resp = client.post(f"/api/runs/{first['id']}/cancel", headers=csrf)
    assert resp.status_code == 200 and resp.get_json()["status"] == "cancelled"
    assert client.get(f"/api/runs/{second['id']}").get_json()["position"] == 1
    assert client.post(f"/api/runs/{first['id']}/cancel", headers=csrf).status_code == 409
    listed = {r["id"]: r["status"] for r in client.get("/api/runs").get_json()}
    assert listed == {first["id"]: "cancelled", second["id"]: "queued"}
    index = client.get("/").data
    assert b"cancelled" in index and b"queued (position 1)" in index


def test_csrf_missing_or_wrong_is_403(app, client, csrf) -> None:
    assert client.post("/api/validate", json=good_spec()).status_code == 403
    assert client.post("/api/runs", json=good_spec(), headers={"X-CSRF-Token": "wrong"}).status_code == 403
    queued = client.post("/api/runs", json=good_spec(), headers=csrf).get_json()["id"]
    assert client.post(f"/api/runs/{queued}/cancel").status_code == 403
    assert client.delete(f"/api/runs/{queued}").status_code == 403
    assert client.get(f"/api/runs/{queued}").get_json()["status"] == "queued"
    # the token is embedded in the pages the UI posts from
    assert app.config["CSRF_TOKEN"].encode() in client.get("/new").data


def test_only_json_bodies_and_size_limit(app, client, csrf) -> None:
    import json
    body = json.dumps(good_spec())
    assert client.post("/api/runs", data=body, headers=csrf, content_type="text/plain").status_code == 415
    assert client.post("/api/runs", data={"name": "x"}, headers=csrf).status_code == 415
    resp = client.post("/api/validate", data="{not json", headers=csrf, content_type="application/json")
    assert resp.status_code == 400
    huge = good_spec(description="x" * 400_000)
    assert client.post("/api/runs", json=huge, headers=csrf).status_code == 413
    assert queued_count(app) == 0


def test_off_loopback_needs_a_token(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="access token"):
        create_app(results_root=tmp_path, host="0.0.0.0", start_worker=False)
    app = create_app(results_root=tmp_path, host="0.0.0.0", token="s3cret-token-16chars", start_worker=False)
    client = app.test_client()
    assert client.get("/").status_code == 401
    assert client.get("/api/runs").status_code == 401
    assert client.get("/api/runs", headers={"X-Fastlab-Token": "wrong"}).status_code == 401
    assert client.get("/api/runs", headers={"X-Fastlab-Token": "s3cret-token-16chars"}).status_code == 200
    # ?token= once sets the cookie, which then authenticates
    resp = client.get("/?token=s3cret-token-16chars")
    assert resp.status_code == 302 and "fastlab_token=s3cret-token-16chars" in resp.headers["Set-Cookie"]
    assert client.get("/api/runs").status_code == 200
    # the token does not replace CSRF
    assert client.post("/api/validate", json=good_spec()).status_code == 403
    # on loopback no token is asked
    assert create_app(results_root=tmp_path, start_worker=False).test_client().get("/api/runs").status_code == 200


@pytest.mark.parametrize("foreign", ["rebind.evil.example:8091", "rebind.evil.example", "127.0.0.1.evil.example",
                                     "localhost.evil.example:8080", "[::2]:8080", ""])
def test_dns_rebinding_foreign_host_is_refused(app, client, csrf, foreign: str) -> None:
    """A page whose name was re-pointed at 127.0.0.1 sends its own name as Host: it gets neither
    the pages (with their CSRF token) nor the API, and queues nothing."""
    page = client.get("/", headers={"Host": foreign})
    assert page.status_code == 421 and app.config["CSRF_TOKEN"].encode() not in page.data
    assert "DNS rebinding" in page.get_json()["error"]
    assert client.post("/api/runs", json=good_spec(), headers={**csrf, "Host": foreign}).status_code == 421
    assert queued_count(app) == 0


@pytest.mark.parametrize("served", ["127.0.0.1:8080", "localhost:8080", "[::1]:8080", "localhost", "LOCALHOST:80"])
def test_loopback_hosts_are_served(client, served: str) -> None:
    assert client.get("/api/runs", headers={"Host": served}).status_code == 200


@pytest.mark.parametrize("origin", ["http://rebind.evil.example:8091", "https://evil.example", "null",
                                    "file://", "http://127.0.0.1.evil.example"])
def test_foreign_origin_may_not_change_anything(app, client, csrf, origin: str) -> None:
    resp = client.post("/api/runs", json=good_spec(), headers={**csrf, "Origin": origin})
    assert resp.status_code == 403 and "Origin" in resp.get_json()["error"]
    assert queued_count(app) == 0
    ok = client.post("/api/runs", json=good_spec(), headers={**csrf, "Origin": "http://127.0.0.1:8080"})
    assert ok.status_code == 201  # the app's own pages send their own origin


def test_served_network_host_and_token_mode_still_work(tmp_path: Path) -> None:
    app = create_app(results_root=tmp_path, host="10.0.0.5", token="s3cret-token-long-enough", start_worker=False)
    client = app.test_client()
    auth = {"X-Fastlab-Token": "s3cret-token-long-enough"}
    assert client.get("/api/runs", headers={**auth, "Host": "10.0.0.5:8080"}).status_code == 200
    assert client.get("/api/runs", headers={**auth, "Host": "evil.example:8080"}).status_code == 421
    wildcard = create_app(results_root=tmp_path, host="0.0.0.0", token="s3cret-token-long-enough", start_worker=False)
    assert wildcard.test_client().get("/api/runs", headers={**auth, "Host": "lab-server.example"}).status_code == 200


def test_pages_carry_a_content_security_policy(client) -> None:
    policy = client.get("/").headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("script-src", 1)[1].split(";")[0]
    assert "frame-ancestors 'none'" in policy


@pytest.mark.parametrize("hostile", ["..%2F..%2Fetc%2Fpasswd", "20261122-050000-..", "nosuchrun",
                                     "20261122-050000-x%3Brm%20-rf%20~", "20261122-050000-nosuch"])
def test_hostile_run_ids_are_404_everywhere(client, csrf, hostile) -> None:
    for url in (f"/api/runs/{hostile}", f"/api/runs/{hostile}/events", f"/api/runs/{hostile}/bundle",
                f"/runs/{hostile}", f"/runs/{hostile}/report"):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/api/runs/{hostile}/cancel", headers=csrf).status_code == 404


def test_openapi_document_covers_the_api(client) -> None:
    doc = client.get("/api/openapi.json").get_json()
    assert doc["openapi"] == "3.1.0"
    for path in ("/api/runs", "/api/runs/{run_id}", "/api/runs/{run_id}/cancel", "/api/runs/{run_id}/events",
                 "/api/runs/{run_id}/bundle", "/api/validate", "/api/topologies", "/api/ccs"):
        assert path in doc["paths"], path
    assert doc["paths"]["/api/runs"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"] \
        == "#/components/schemas/ExperimentSpec"
    assert "FlowSpec" in doc["components"]["schemas"]
    assert "text/event-stream" in doc["paths"]["/api/runs/{run_id}/events"]["get"]["responses"]["200"]["content"]


def test_openapi_documents_every_api_route_and_nothing_else(app, client) -> None:
    """Each route under /api/ with each of its methods is an operation of the document, and each
    operation of the document is a route (path parameters by the same names)."""
    doc = client.get("/api/openapi.json").get_json()
    routes = set()
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/api/"):
            path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule)
            routes |= {(path, m.lower()) for m in rule.methods - {"HEAD", "OPTIONS"}}
    documented = {(path, m) for path, ops in doc["paths"].items() for m in ops if m != "parameters"}
    assert routes - documented == set(), "routes without an operation"
    assert documented - routes == set(), "operations without a route"
    for path, ops in doc["paths"].items():
        for op in ops.values():
            named = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
            assert named == set(re.findall(r"{(\w+)}", path)), (path, named)
    assert len({op["operationId"] for ops in doc["paths"].values() for op in ops.values()}) == len(documented)


def test_openapi_document_passes_the_spec_validator(client) -> None:
    """openapi-spec-validator (as generic clients read it): the document declares 3.1.0, whose schema
    dialect (JSON Schema 2020-12: const, type null) is what pydantic emits for the request models.
    The same document declared 3.0.3 is refused: the check can fail."""
    from openapi_spec_validator import validate

    doc = client.get("/api/openapi.json").get_json()
    validate(doc)  # raises with the first problem
    with pytest.raises(Exception):  # noqa: B017,PT011 - 3.0's validator raises its own kinds (e.g. UnknownType)
        validate({**doc, "openapi": "3.0.3"})


def test_catalogues_form_schema_and_local_plotly(client) -> None:
    schema = client.get("/api/schema").get_json()
    names = {t["name"]: t for t in schema["topologies"]}
    assert {"dumbbell", "sc2002", "docsis"} <= set(names) and names["sc2002"]["takes_scale"]
    assert "bottleneck" in names["dumbbell"]["shaped_links"]
    assert {p["id"] for p in schema["presets"]} == {"example", "fast-alpha30-loss1"}
    ccs = {c["name"]: c for c in client.get("/api/ccs").get_json()}
    assert "cubic" in ccs
    if "fast" in ccs:
        assert {"alpha", "gamma", "period"} <= {p["name"] for p in ccs["fast"]["params"]}
    plan = client.get('/api/topologies/dumbbell?args={"pairs":2}').get_json()
    assert plan["hosts"] == ["h1", "h2", "h3", "h4"]
    assert client.get('/api/topologies/dumbbell?args={"pairs":-1}').status_code == 422
    assert client.get("/api/topologies/nosuch").status_code == 404
    js = client.get("/static/plotly.min.js")
    assert js.status_code == 200 and len(js.data) > 1_000_000
    js.close()
    page = client.get("/runs/x")  # 404, but the run page template must not use a CDN
    assert page.status_code == 404
    from pathlib import Path
    templates = Path(__file__).resolve().parents[2] / "webapp" / "templates"
    assert not any("cdn" in p.read_text().lower() for p in templates.glob("*.html"))


def test_deeply_nested_json_is_a_400_not_a_500(app, client, csrf) -> None:
    body = '{"name": ' + "[" * 100_000 + "]" * 100_000 + "}"
    for path in ("/api/validate", "/api/runs"):
        resp = client.post(path, data=body, headers=csrf, content_type="application/json")
        assert resp.status_code in (400, 413), (path, resp.status_code)
        assert resp.is_json and resp.get_json()["error"]
    nested = '{"name": "x", "topology_args": ' + '{"a": ' * 40 + "1" + "}" * 40 + "}"
    resp = client.post("/api/validate", data=nested, headers=csrf, content_type="application/json")
    # the body's own bound (fastlab.base.documents), before it is a spec: one line
    assert resp.status_code == 400 and resp.get_json()["error"] == "body: nested deeper than 32 levels"
    assert queued_count(app) == 0


def test_a_name_with_two_dots_is_refused_before_it_is_queued(app, client, csrf) -> None:
    """'a..b' used to pass the schema, be queued and run, while every page of it answered 404."""
    resp = client.post("/api/runs", json=good_spec(name="a..b"), headers=csrf)
    assert resp.status_code == 422 and "name" in resp.get_json()["error"] and ".." in resp.get_json()["error"]
    assert queued_count(app) == 0


def test_a_long_duration_gets_the_web_apps_limit_and_the_favicon_exists(app, client, csrf) -> None:
    """duration 100000 was refused as '<= 3600' (the schema) while the form said 600 (the app)."""
    resp = client.post("/api/validate", json=good_spec(duration_s=100000), headers=csrf)
    assert resp.status_code == 422 and "at most 600 s in the web app" in resp.get_json()["error"]
    assert client.get("/favicon.ico").status_code == 301
    icon = client.get("/static/favicon.svg")
    assert icon.status_code == 200 and icon.data.startswith(b"<svg")


@pytest.mark.parametrize("token", ["x", "short-token", " " * 20, "sixteen-chars-ok\n", "tab\tinside-token-xx"])
def test_weak_or_malformed_tokens_are_refused(tmp_path: Path, token: str) -> None:
    with pytest.raises(ValueError, match="at least 16 printable characters"):
        create_app(results_root=tmp_path, host="0.0.0.0", token=token, start_worker=False)


def test_the_queue_is_bounded(app, client, csrf) -> None:
    app.config["MAX_QUEUED"] = 3
    for _ in range(3):
        assert client.post("/api/runs", json=good_spec(), headers=csrf).status_code == 201
    resp = client.post("/api/runs", json=good_spec(), headers=csrf)
    assert resp.status_code == 429 and "at most 3" in resp.get_json()["error"]
    assert queued_count(app) == 3


def test_one_client_cannot_take_the_whole_queue(app, client, csrf) -> None:
    """A student's runaway script fills its own share, not the class's queue: others still submit."""
    app.config["MAX_QUEUED_PER_CLIENT"] = 2
    student = {"REMOTE_ADDR": "10.0.0.7"}
    for _ in range(2):
        assert client.post("/api/runs", json=good_spec(), headers=csrf, environ_base=student).status_code == 201
    resp = client.post("/api/runs", json=good_spec(), headers=csrf, environ_base=student)
    assert resp.status_code == 429 and "at most 2 per client" in resp.get_json()["error"]
    assert queued_count(app) == 2
    other = client.post("/api/runs", json=good_spec(), headers=csrf, environ_base={"REMOTE_ADDR": "10.0.0.8"})
    assert other.status_code == 201
    assert queued_count(app) == 3


@pytest.mark.parametrize("value", [True, "5", [5], {"s": 5}])
def test_duration_must_be_a_number_not_a_bool_or_a_string(client, csrf, value: object) -> None:
    resp = client.post("/api/validate", json=good_spec(duration_s=value), headers=csrf)
    assert resp.status_code == 422 and "duration_s" in resp.get_json()["error"]


def test_the_server_takes_its_token_from_a_file_not_the_command_line(tmp_path: Path) -> None:
    """`--token` is visible to every user in ps: --token-file keeps it out; a short one is refused."""
    import subprocess
    import sys

    short = tmp_path / "short"
    short.write_text("abc\n")
    proc = subprocess.run([sys.executable, "-m", "webapp", "--host", "0.0.0.0", "--token-file", str(short)],
                          capture_output=True, text=True, timeout=60, cwd=str(Path(__file__).resolve().parents[2]),
                          env={**__import__("os").environ, "FASTLAB_RESULTS": str(tmp_path / "r")})
    assert proc.returncode == 2 and "at least 16" in proc.stderr, proc.stderr[-500:]


def test_live_change_needs_a_running_run(client, csrf) -> None:
    run = client.post("/api/runs", json=good_spec(), headers=csrf).get_json()
    body = {"host": "h1", "cc": "fast", "args": {"alpha": 60}}
    resp = client.post(f"/api/runs/{run['id']}/cc", json=body, headers=csrf)
    assert resp.status_code == 409 and "run is queued" in resp.get_json()["error"]
    assert client.post("/api/runs/20991231-000000-nosuch-w000000/cc", json=body, headers=csrf).status_code == 404
    assert client.post(f"/api/runs/{run['id']}/cc", json=body).status_code == 403  # no CSRF token


def test_parallel_submissions_cannot_beat_the_queue_limits(tmp_path: Path, live_server_factory) -> None:
    """30 parallel POST /api/runs from one address against the real server (loopback): the count and the
    insert are one write transaction, so exactly the per-client limit is queued and the rest get 429
    (with count and insert as separate steps 13 of 30 got in against a limit of 10)."""
    import json as jsonlib
    import urllib.error
    import urllib.request
    from concurrent.futures import ThreadPoolExecutor

    app = create_app(results_root=tmp_path / "results", start_worker=False)
    server = live_server_factory(app)
    body = jsonlib.dumps(good_spec()).encode()

    def post(_: int) -> int:
        req = urllib.request.Request(server.url + "/api/runs", data=body, method="POST",
                                     headers={"Content-Type": "application/json",
                                              "X-CSRF-Token": app.config["CSRF_TOKEN"]})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status
        except urllib.error.HTTPError as err:
            return err.code

    with ThreadPoolExecutor(max_workers=30) as pool:
        codes = list(pool.map(post, range(30)))
    limit = app.config["MAX_QUEUED_PER_CLIENT"]
    assert sorted(set(codes)) == [201, 429] and codes.count(201) == limit, codes
    assert queued_count(app) == limit


def test_idle_pings_count_against_the_time_limit(client, csrf) -> None:
    """The 600-s limit holds for what a run spends before its flows too: 32 pairs at 4,000 ms RTT and
    1,000 idle pings (~36 h of pings) are refused by the engine's own plan, naming the field; 100 pings at
    4 s (~7 min) with 300 s of flows pass the plan but not the web app's limit; a few pass both."""
    flows = [{"src": f"h{2 * k + 1}", "dst": f"h{2 * k + 2}", "cc": "cubic"} for k in range(32)]
    huge = good_spec(topology_args={"pairs": 32, "rate_mbps": 20, "rtt_ms": 4000}, idle_pings=1000, flows=flows,
                     links={}, duration_s=20)  # 5 RTTs: a run long enough to measure something
    resp = client.post("/api/validate", json=huge, headers=csrf)
    assert resp.status_code == 422 and resp.get_json()["error"].startswith("idle_pings:"), resp.get_json()
    long = good_spec(topology_args={"rate_mbps": 20, "rtt_ms": 4000}, idle_pings=100, duration_s=300, links={})
    resp = client.post("/api/validate", json=long, headers=csrf)
    assert resp.status_code == 422 and "idle_pings" in resp.get_json()["error"] and "600" in resp.get_json()["error"]
    fine = good_spec(topology_args={"rate_mbps": 20, "rtt_ms": 4000}, idle_pings=3, duration_s=300, links={})
    assert client.post("/api/validate", json=fine, headers=csrf).status_code == 200


def test_a_large_body_does_not_poison_its_keep_alive_connection(tmp_path: Path, live_server_factory) -> None:
    """Real server, one keep-alive connection: a valid spec with 1,000 cc_changes (~80 KB, past the
    server's 64-KiB read buffer) to /api/validate, then 30 ordinary requests on the same connection.
    Every one is answered as on a fresh connection (before: 27 of 30 were 500s, SQLite objects used from
    another thread, the body having been read lazily from inside the request)."""
    import http.client
    import json as jsonlib

    app = create_app(results_root=tmp_path / "results", start_worker=False)
    server = live_server_factory(app)
    headers = {"Content-Type": "application/json", "X-CSRF-Token": app.config["CSRF_TOKEN"]}
    changes = [{"at_s": 1 + i * 0.004, "host": "h1", "cc": "fast", "args": {"alpha": 20 + i % 5}} for i in range(1000)]
    big = jsonlib.dumps(good_spec(cc_changes=changes)).encode()
    assert len(big) > 70_000
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request("POST", "/api/validate", body=big, headers=headers)
        first = conn.getresponse()
        first.read()
        assert first.status < 500, first.status
        statuses = []
        small = jsonlib.dumps(good_spec()).encode()
        for i in range(30):  # the probe's mix: a validation and a listing in turn (both use the database)
            if i % 2:
                conn.request("POST", "/api/validate", body=small, headers=headers)
            else:
                conn.request("GET", "/api/runs")
            resp = conn.getresponse()
            resp.read()
            statuses.append(resp.status)
        assert statuses == [200] * 30, statuses
        too_big = b'{"a": "' + b"x" * (app.config["MAX_CONTENT_LENGTH"] + 10) + b'"}'
        conn.request("POST", "/api/validate", body=too_big, headers=headers)
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 413
    finally:
        conn.close()


def test_a_run_is_its_submitters_and_the_instructors(tmp_path: Path) -> None:
    """Another address may neither cancel, delete nor change a run (403, one line); its submitter may,
    and so may the instructor's token (issue 37: any client cancelled or deleted any run)."""
    instructor = "instructor-token-0123456789"
    app = create_app(results_root=tmp_path / "results", start_worker=False, instructor_token=instructor)
    client = app.test_client()
    csrf = {"X-CSRF-Token": app.config["CSRF_TOKEN"]}
    alice, bob = {"REMOTE_ADDR": "10.0.0.7"}, {"REMOTE_ADDR": "10.0.0.8"}
    first = client.post("/api/runs", json=good_spec(), headers=csrf, environ_base=alice).get_json()["id"]
    second = client.post("/api/runs", json=good_spec(), headers=csrf, environ_base=alice).get_json()["id"]
    for method, path in (("POST", f"/api/runs/{first}/cancel"), ("POST", f"/api/runs/{first}/cc")):
        resp = client.open(path, method=method, json={"host": "h1", "args": {"alpha": 9}}, headers=csrf,
                           environ_base=bob)
        assert resp.status_code == 403 and "another address" in resp.get_json()["error"], (path, resp.data)
    assert client.post(f"/api/runs/{first}/cancel", json={}, headers=csrf, environ_base=alice).status_code == 200
    resp = client.delete(f"/api/runs/{first}", headers=csrf, environ_base=bob)
    assert resp.status_code == 403
    assert client.delete(f"/api/runs/{first}", headers=csrf, environ_base=alice).status_code == 200
    teacher = csrf | {"X-Fastlab-Instructor": instructor}
    assert client.post(f"/api/runs/{second}/cancel", json={}, headers=teacher, environ_base=bob).status_code == 200
    wrong = csrf | {"X-Fastlab-Instructor": instructor + "x"}
    assert client.delete(f"/api/runs/{second}", headers=wrong, environ_base=bob).status_code == 403
    with pytest.raises(ValueError, match="at least 16"):
        create_app(results_root=tmp_path / "r2", start_worker=False, instructor_token="short")


def test_a_trace_path_is_refused_and_no_file_is_read(app, client, csrf, tmp_path: Path) -> None:
    """A spec's trace names a file on the server: the web app refuses it before reading anything (a bad
    trace's error quotes its line, which would show a web client part of any file), for a run, a check
    and a reverse direction alike; nothing is queued. A schedule is accepted."""
    secret = tmp_path / "secret"
    secret.write_text("root:s3cr3t-hash:19000\n")
    for links in ({"bottleneck": {"trace": str(secret)}}, {"bottleneck": {"reverse": {"trace": str(secret)}}}):
        for url in ("/api/validate", "/api/runs"):
            resp = client.post(url, json=good_spec() | {"links": links}, headers=csrf)
            assert resp.status_code == 422, resp.get_json()
            error = resp.get_json()["error"]
            assert re.match(r"links\.bottleneck(\.reverse)?\.trace: the web app opens no file", error), error
            assert "s3cr3t" not in error and "root" not in error
    assert queued_count(app) == 0
    steps = {"bottleneck": {"schedule": [{"at_s": 1, "rate_mbps": 5}]}}
    assert client.post("/api/validate", json=good_spec() | {"links": steps}, headers=csrf).status_code == 200


def test_the_forms_cc_parameters_are_the_one_tables(client) -> None:
    """The form draws each algorithm parameter's input (range, default, unit, choices) from /api/ccs:
    for FAST and HSTCP that is the one table (fastlab.define.ccset, its ranges from the cores' headers),
    field for field, nothing typed again."""
    from fastlab.define.ccset import FAST_PARAMS, HSTCP_PARAMS
    from fastlab.run.ccload import default_registry

    ccs = {c["name"]: c for c in client.get("/api/ccs").get_json()}
    usable = default_registry("bpf").lookup("fast").build.available()[0]
    assert ({"fast", "hstcp"} <= set(ccs)) == usable, (set(ccs), usable)
    for name, params in (("fast", FAST_PARAMS), ("hstcp", HSTCP_PARAMS)):
        if name in ccs:
            assert ccs[name]["params"] == [{"name": p.name, "kind": p.kind.__name__, "minimum": p.minimum,
                                            "maximum": p.maximum, "default": p.default, "unit": p.unit,
                                            "help": p.help, "pattern": p.pattern} for p in params], name
    hstcp = {p["name"]: p for p in ccs.get("hstcp", {"params": []})["params"]}
    if hstcp:  # issue 35: 0.012 passed the Python range (1e-12..0.09) that the form showed, not the header's
        assert (hstcp["high_p"]["minimum"], hstcp["high_p"]["maximum"]) == (1e-12, 0.01)
        assert (hstcp["low_window"]["default"], hstcp["high_window"]["default"]) == (38, 83_000)
