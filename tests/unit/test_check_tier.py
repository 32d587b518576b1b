"""The check tier (make check, scripts/check.sh) installs requirements-check.txt where `make setup`
has not run: every package it names must be in requirements.txt with the same pin, so the two
environments cannot drift apart; and the unit tests it runs must not be marked as needing root."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def pins(text: str) -> dict[str, str]:
    """package -> its specifier, from requirements lines (comments and extras dropped; pure)."""
    out = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name = re.split(r"[\[<>=!~ ]", line, maxsplit=1)[0].lower()
        out[name] = re.sub(r"^[A-Za-z0-9_.-]+(\[[^\]]*\])?", "", line).strip()
    return out


def test_pins_parse_the_forms_in_use() -> None:
    assert pins("dask[distributed]>=2026.8  # x\n\n# c\npyroute2==0.9.7\nruff") == {
        "dask": ">=2026.8", "pyroute2": "==0.9.7", "ruff": ""}


def test_check_requirements_are_a_subset_with_the_same_pins() -> None:
    full = pins((REPO / "requirements.txt").read_text())
    check = pins((REPO / "requirements-check.txt").read_text())
    assert len(check) >= 10
    assert {name: spec for name, spec in check.items() if full.get(name) != spec} == {}


def test_unit_tests_carry_no_root_or_slow_marker() -> None:
    marked = [p.name for p in (REPO / "tests" / "unit").glob("test_*.py")
              if re.search(r"mark\.(root|slow)|as_root", p.read_text()) and p.name != Path(__file__).name]
    assert marked == []
