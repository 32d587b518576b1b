"""Issue 47 ("Hostile input, second round"), through the real front (uvicorn with webapp.asgi, as
`python -m webapp` serves it): each finding reproduced as a request, then its bound."""

from __future__ import annotations

import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from webapp import create_app


def nested_anchors(levels: int, fan: int = 10) -> str:
    """A YAML flow mapping whose last key expands to fan**levels values through nested aliases (649
    characters for 10^6 in the finding; each level ~105 more characters for ten times as many)."""
    items = [f"a0: &a0 [{', '.join(['1'] * fan)}]"]
    items += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * fan)}]" for i in range(1, levels)]
    items.append(f"z: [{', '.join([f'*a{levels - 1}'] * fan)}]")
    return "{" + ", ".join(items) + "}"


def get(url: str, timeout: float = 10) -> tuple[int, bytes, float]:
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 -- loopback test server
            return resp.status, resp.read(), time.monotonic() - t0
    except urllib.error.HTTPError as err:
        return err.code, err.read(), time.monotonic() - t0


def test_a_get_with_an_alias_bomb_in_set_is_refused_at_once(tmp_path: Path, tiny_labs: Path,
                                                            live_server_factory: Any) -> None:
    """Finding 1: `GET /new?lab=..&spec=..&set=<nested anchors>` expanded 10^6 values (1.1-1.7 s, a 14.7 MB
    page) before it was bounded; 10^7 took 8 s. Now the bounded reader refuses it by its shape, at once,
    and the page says so in one line."""
    app = create_app(results_root=tmp_path / "results", start_worker=False, labs_dir=tiny_labs)
    server = live_server_factory(app)
    for levels in (5, 6, 7):
        query = urllib.parse.urlencode({"lab": "1", "spec": "specs/one-cubic.yaml",
                                        "set": f"description={nested_anchors(levels)}"})
        status, body, seconds = get(f"{server.url}/new?{query}")
        assert status == 200, status
        assert seconds < 1.0, f"{levels} levels: {seconds:.2f} s"
        assert len(body) < 200_000, f"{levels} levels: a page of {len(body):,} bytes"
        assert b"values (its aliases expanded)" in body
    # a plain override still fills the form
    status, body, _ = get(f"{server.url}/new?" + urllib.parse.urlencode(
        {"lab": "1", "spec": "specs/one-cubic.yaml", "set": "duration_s=5"}))
    assert status == 200 and b"values (its aliases expanded)" not in body
