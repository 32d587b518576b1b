"""Hypothesis fuzzing of the validate/submit endpoints and the run-id routes (no worker: nothing can run)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.webapp.conftest import good_spec, queued_count
from webapp import create_app

SHELLISH = ["; rm -rf /", "$(reboot)", "`id`", "| cat /etc/passwd", "../../etc/passwd", "&& touch /tmp/pwned",
            "\x00", "a\nb", "> /tmp/x", "%2e%2e%2f", "h1; ls", "..", "/etc/passwd", "cubic;reboot", "${IFS}"]
hostile_strings = st.one_of(st.sampled_from(SHELLISH),
                            st.builds(lambda a, m, b: a + m + b, st.text(max_size=8), st.sampled_from(SHELLISH),
                                      st.text(max_size=8)))
huge_numbers = st.sampled_from([10**20, -10**20, 2**64, 1e308, -1e308, -1, float("inf"), float("-inf"),
                                float("nan"), 10**400])
hostile_values = st.one_of(hostile_strings, huge_numbers)
# Odd but not hostile: pydantic's lax mode may accept some (False as 0, None for optional fields).
odd_values = st.one_of(st.just(None), st.just([]), st.just({}), st.booleans(), st.integers(), st.floats(),
                       st.dictionaries(hostile_strings, st.integers(), max_size=2))
any_json = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20)),
                        lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                st.dictionaries(st.text(max_size=10), inner, max_size=4)),
                        max_leaves=20)

_APP: dict[str, Any] = {}


def leaf_paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Paths of the spec's leaves, except free text (description may hold any text by design)."""
    if isinstance(node, dict):
        return [p for k, v in node.items() if k != "description" for p in leaf_paths(v, prefix + (k,))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in leaf_paths(v, prefix + (i,))]
    return [prefix]


BASE = good_spec()
PATHS = leaf_paths(BASE)


def mutate(path: tuple, value: Any) -> dict[str, Any]:
    spec = copy.deepcopy(BASE)
    node = spec
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return spec


@pytest.fixture(scope="module")
def fuzz_app(tmp_path_factory) -> Any:
    app = create_app(results_root=tmp_path_factory.mktemp("fuzz"), start_worker=False)
    return app


def post(app: Any, url: str, body: Any) -> Any:
    data = json.dumps(body, allow_nan=True) if not isinstance(body, bytes) else body
    return app.test_client().post(url, data=data, content_type="application/json",
                                  headers={"X-CSRF-Token": app.config["CSRF_TOKEN"]})


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(PATHS), value=hostile_values, url=st.sampled_from(["/api/validate", "/api/runs"]))
def test_hostile_leaf_values_are_rejected_with_4xx(fuzz_app, path, value, url) -> None:
    before = queued_count(fuzz_app)
    resp = post(fuzz_app, url, mutate(path, value))
    assert 400 <= resp.status_code < 500, (path, value, resp.status_code, resp.data[:300])
    assert "error" in resp.get_json()
    assert queued_count(fuzz_app) == before


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=hostile_strings, value=any_json, where=st.sampled_from(["top", "flow", "link", "cc_args", "topology_args"]))
def test_hostile_keys_are_rejected(fuzz_app, key, value, where) -> None:
    spec = copy.deepcopy(BASE)
    target = {"top": spec, "flow": spec["flows"][0], "link": spec["links"]["bottleneck"],
              "cc_args": spec["flows"][0]["cc_args"], "topology_args": spec["topology_args"]}[where]
    target[key] = value
    before = queued_count(fuzz_app)
    resp = post(fuzz_app, "/api/runs", spec)
    assert 400 <= resp.status_code < 500, (where, key, resp.status_code, resp.data[:300])
    assert queued_count(fuzz_app) == before


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(PATHS), value=odd_values, url=st.sampled_from(["/api/validate", "/api/runs"]))
def test_odd_leaf_values_never_5xx(fuzz_app, path, value, url) -> None:
    before = queued_count(fuzz_app)
    resp = post(fuzz_app, url, mutate(path, value))
    assert resp.status_code < 500, (path, value, resp.data[:300])
    if resp.status_code >= 400 or url == "/api/validate":
        assert queued_count(fuzz_app) == before


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=any_json, url=st.sampled_from(["/api/validate", "/api/runs"]))
def test_arbitrary_json_never_5xx(fuzz_app, body, url) -> None:
    before = queued_count(fuzz_app)
    resp = post(fuzz_app, url, body)
    assert resp.status_code < 500, (body, resp.data[:300])
    if resp.status_code >= 400:
        assert queued_count(fuzz_app) == before


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run_id=st.one_of(hostile_strings, st.text(max_size=40)),
       suffix=st.sampled_from(["", "/events", "/bundle", "/cancel"]))
def test_hostile_run_ids_never_reach_the_filesystem(fuzz_app, run_id, suffix) -> None:
    from urllib.parse import quote
    client = fuzz_app.test_client()
    url = f"/api/runs/{quote(run_id, safe='')}{suffix}"
    resp = (client.post(url, headers={"X-CSRF-Token": fuzz_app.config["CSRF_TOKEN"]}) if suffix == "/cancel"
            else client.get(url))
    assert resp.status_code in (404, 405, 308), (run_id, resp.status_code)


def test_openapi_operations_reject_hostile_bodies(fuzz_app) -> None:
    """Every POST operation of the OpenAPI document refuses a hostile body with 4xx and queues nothing."""
    doc = fuzz_app.test_client().get("/api/openapi.json").get_json()
    before = queued_count(fuzz_app)
    posts = [p for p, ops in doc["paths"].items() if "post" in ops and "{" not in p]
    assert set(posts) == {"/api/runs", "/api/validate", "/api/sweeps", "/api/sweeps/parameters", "/api/traces",
                          "/api/theory/red", "/api/class/join", "/api/class/leave", "/api/classes",
                          "/api/instructor/session"}
    for path in posts:
        for body in ({"name": "$(reboot)", "topology": "../../etc", "duration_s": 1e308, "flows": []},
                     [1, 2], "; rm -rf /", None):
            resp = post(fuzz_app, path, body)
            assert 400 <= resp.status_code < 500, (path, body, resp.status_code)
    assert queued_count(fuzz_app) == before
    assert not any(Path(fuzz_app.config["RESULTS_ROOT"]).glob("*/partial.jsonl"))


DEEP = "[" * 10_000 + "]" * 10_000


@pytest.mark.parametrize("method, path", [
    ("POST", "/api/validate"), ("POST", "/api/runs"), ("POST", "/api/runs/none/cc"),
    ("POST", "/api/sweeps"), ("POST", "/api/runs/none/bundle"), ("POST", "/api/labs/1/steps/x/run"),
    ("POST", "/api/sweeps/parameters"), ("POST", "/api/theory/red"), ("POST", "/api/class/join"),
    ("POST", "/api/class/answers/02-fast-equilibrium"), ("POST", "/api/classes"), ("POST", "/api/instructor/session"),
])
def test_hostile_bodies_get_one_line_not_a_traceback(tmp_path: Path, method: str, path: str) -> None:
    """JSON nested 10,000 deep, or not JSON at all, to every endpoint that reads a body: a 4xx with one
    line, never a 500 (Python's recursion limit in the JSON parser was one)."""
    app = create_app(results_root=tmp_path / "results", start_worker=False)
    client = app.test_client()
    headers = {"X-CSRF-Token": app.config["CSRF_TOKEN"], "Content-Type": "application/json"}
    for body in (DEEP, "{not json", "[" * 50 + "1" + "]" * 50):
        resp = client.open(path, method=method, data=body, headers=headers)
        assert 400 <= resp.status_code < 500, (path, body[:20], resp.status_code, resp.data[:200])
        error = resp.get_json()["error"]
        assert "\n" not in error and "Traceback" not in error, error


@pytest.mark.parametrize("path", ["/api/labs/²", "/labs/²", "/api/labs/²/steps/x/run", "/new?lab=²",
                                  "/api/labs/" + "9" * 5000, "/labs/" + "9" * 5000])
def test_unicode_and_huge_lab_refs_are_not_found(tmp_path: Path, path: str) -> None:
    """'²' is a digit to str.isdigit but not to int(); a 5,000-digit number is past Python's
    int-conversion limit: both are just no lab."""
    app = create_app(results_root=tmp_path / "results", start_worker=False)
    client = app.test_client()
    method = "POST" if path.endswith("/run") else "GET"
    resp = client.open(path, method=method, headers={"X-CSRF-Token": app.config["CSRF_TOKEN"]})
    assert resp.status_code in (200, 404), (path, resp.status_code)  # /new shows the form without the lab
    assert b"Traceback" not in resp.data


def test_a_period_of_thousands_of_digits_is_refused_in_one_line() -> None:
    """FAST's period is `<N>us`: a 5,000-digit N is refused by its pattern, before any int() conversion."""
    from fastlab.define.cc import CCError
    from fastlab.run.ccload import default_registry

    fast = default_registry().lookup("fast")
    with pytest.raises(CCError, match="period="):
        fast.validate_args({"period": "9" * 5000 + "us"})
    assert fast.validate_args({"period": "2000us"}) == {"period": "2000us"}
