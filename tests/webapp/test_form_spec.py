"""The new-run form's spec views and scheduled changes (issue 14 item 6): /api/validate answers a valid
spec with its YAML and a `fastlab run` command (webapp.cli_text) that reproduce it; `cc_changes` from
the form are checked like every other field, and bad ones (NaN, inf, huge, wrong types, deep nesting)
are one line with nothing queued. The browser test is in test_form_browser.py."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from fastlab.define.schema import parse_spec, read_spec_text
from tests.webapp.conftest import good_spec, queued_count
from webapp import cli_text


def heredoc(command: str) -> tuple[str, str, str]:
    """(file name, delimiter, text) of the command's here document."""
    m = re.match(r"cat > (\S+) <<'(\w+)'\n(.*)\n\2\nsudo fastlab run \1\n$", command, re.S)
    assert m, command
    return m.group(1), m.group(2), m.group(3) + "\n"


def test_the_command_writes_the_spec_and_runs_it() -> None:
    spec = parse_spec(good_spec(cc_changes=[{"at_s": 3, "host": "h1", "cc": "fast", "args": {"alpha": 60}}]))
    name, delimiter, text = heredoc(cli_text.run_command(spec))
    assert (name, delimiter) == ("webtest.yaml", "FASTLAB_SPEC")
    assert text == cli_text.spec_yaml(spec)
    assert read_spec_text(text) == spec  # the command reproduces the spec, defaults included


def test_a_line_equal_to_the_delimiter_does_not_end_the_here_document() -> None:
    spec = parse_spec(good_spec(description="FASTLAB_SPEC"))
    spec_text = "name: x\nFASTLAB_SPEC\n"  # what a YAML writer could emit: the delimiter grows past it
    original = cli_text.spec_yaml
    try:
        cli_text.spec_yaml = lambda _s: spec_text  # type: ignore[assignment]
        _, delimiter, text = heredoc(cli_text.run_command(spec))
    finally:
        cli_text.spec_yaml = original  # type: ignore[assignment]
    assert delimiter == "FASTLAB_SPEC_" and text == spec_text


def test_validate_answers_with_yaml_and_command(app, client, csrf) -> None:
    body = good_spec(cc_changes=[{"at_s": 3, "host": "h1", "cc": "fast", "args": {"alpha": 60}}])
    data = client.post("/api/validate", json=body, headers=csrf).get_json()
    assert data["ok"] and "cc_changes:\n- at_s: 3" in data["yaml"] and "alpha: 60" in data["yaml"]
    assert data["command"].startswith("cat > webtest.yaml <<'FASTLAB_SPEC'\n") and data["yaml"] in data["command"]
    assert queued_count(app) == 0


CHANGE = {"at_s": 3, "host": "h1", "cc": "fast", "args": {"alpha": 60}}


def deep(n: int) -> Any:
    v: Any = 1
    for _ in range(n):
        v = {"a": v}
    return v


BAD_CHANGES = [
    # NaN and Infinity are not JSON: the body's reader refuses them (fastlab.base.documents)
    ('[{"at_s": NaN, "host": "h1", "cc": "fast", "args": {"alpha": 60}}]', "body: NaN is not a JSON number"),
    ('[{"at_s": Infinity, "host": "h1", "cc": "fast", "args": {"alpha": 60}}]', "body: Infinity is not a JSON number"),
    ('[{"at_s": 1e400, "host": "h1", "cc": "fast", "args": {"alpha": 60}}]', "cc_changes[0].at_s"),
    (json.dumps([CHANGE | {"at_s": 10 ** 30}]), "cc_changes[0].at_s: after the run ends"),
    (json.dumps([CHANGE | {"at_s": 7}]), "cc_changes[0].at_s: after the run ends (6 s)"),
    (json.dumps([CHANGE | {"at_s": -1}]), "cc_changes[0].at_s"),
    (json.dumps([CHANGE | {"at_s": "3"}]), "cc_changes[0].at_s"),
    (json.dumps([CHANGE | {"args": {"alpha": 0}}]), "cc_changes[0].args: alpha=0 is out of range"),
    ('[{"at_s": 3, "host": "h1", "cc": "fast", "args": {"alpha": NaN}}]', "body: NaN is not a JSON number"),
    (json.dumps([CHANGE | {"args": {"alpha": 10 ** 400}}]), "body: an integer of 401 digits"),
    (json.dumps([CHANGE | {"args": {"alpha": True}}]), "cc_changes[0].args: alpha must be a number"),
    (json.dumps([CHANGE | {"args": {"alpha": "60"}}]), "cc_changes[0].args: alpha must be a number"),
    (json.dumps([CHANGE | {"args": {}}]), "cc_changes[0].args"),
    (json.dumps([CHANGE | {"args": [60]}]), "cc_changes[0].args"),
    (json.dumps([CHANGE | {"args": {"alpha": deep(60)}}]), "body: nested deeper than 32 levels"),
    (json.dumps([CHANGE | {"host": "h2"}]), "cc_changes[0].host: no flow from h2 uses fast"),
    (json.dumps([CHANGE | {"host": 7}]), "cc_changes[0].host"),
    (json.dumps([CHANGE | {"cc": "cubic"}]), "cc_changes[0].cc"),
    (json.dumps([CHANGE | {"extra": 1}]), "cc_changes[0].extra: unknown field"),
    (json.dumps(CHANGE), "cc_changes"),
    (json.dumps([CHANGE] * 1001), "cc_changes"),
    ("[null]", "cc_changes[0]"),
]


@pytest.mark.parametrize(("raw", "expected"), BAD_CHANGES)
def test_bad_scheduled_changes_are_one_line_and_queue_nothing(app, client, csrf, raw: str, expected: str) -> None:
    body = json.dumps(good_spec(links={}))[:-1] + f', "cc_changes": {raw}}}'
    for url in ("/api/validate", "/api/runs"):
        resp = client.post(url, data=body, headers=csrf, content_type="application/json")
        error = resp.get_json()["error"]
        assert resp.status_code in (400, 422), (resp.status_code, error)
        assert error.startswith(expected), error
        assert "\n" not in error and len(error) < 400, error
    assert queued_count(app) == 0
