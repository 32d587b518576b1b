"""The package's top (issue 48 item 6): what a script needs, each name documented (role, arguments,
return), imported only when used; and the API reference page (docs/api.md) built from those docstrings by
mkdocs + mkdocstrings, which `make test` and the check tier install from requirements-docs.txt."""

from __future__ import annotations

import html
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import fastlab
from tests.conftest import REPO

SCRIPT_NEEDS = {"run", "load", "Spec", "load_spec", "PlanBuilder", "TopologyPlan", "TopologyFile", "SpecError",
                "TopologyError", "RunResult"}


def public_names() -> list[str]:
    return [name for name in fastlab.__all__ if name != "__version__"]


def documented(name: str) -> str:
    """The docstring a user reads for fastlab.<name> (help(), the API page)."""
    value = getattr(fastlab, name)
    if name == "run":  # the run stage's package, callable: its call is the function
        assert callable(value)
        return inspect.getdoc(type(value).__call__) or ""
    return inspect.getdoc(value) or ""


def test_what_a_script_needs_is_at_the_top() -> None:
    assert set(fastlab.__all__) >= SCRIPT_NEEDS
    assert fastlab.Spec is fastlab.ExperimentSpec
    from fastlab.results import api

    assert "fastlab.results.api.load" in (fastlab.load.__doc__ or "") and api.load  # a thin re-export


@pytest.mark.parametrize("name", public_names())
def test_every_public_name_has_a_docstring(name: str) -> None:
    doc = documented(name)
    assert len(doc) >= 40, f"fastlab.{name}: no docstring saying its role"
    if callable(getattr(fastlab, name)) and not isinstance(getattr(fastlab, name), type):  # functions
        assert any(word in doc.lower() for word in ("return", "raises", "gives")), f"fastlab.{name}: what it returns"


def test_a_name_without_a_docstring_is_seen() -> None:
    class Bare:
        pass

    assert (inspect.getdoc(Bare) or "") == ""


def test_importing_fastlab_imports_no_stage() -> None:
    """The names are imported when first used: `import fastlab` (and a flow tool's python -S start) loads
    no stage, no pydantic, no pandas."""
    code = ("import sys, fastlab\n"
            "print(sorted(m for m in sys.modules if m.startswith(('fastlab.', 'pydantic', 'pandas'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        fastlab.nothing  # noqa: B018


def test_the_api_page_builds(tmp_path: Path) -> None:
    """`make docs`' build (mkdocs --strict, the site's own configuration): docs/api.md renders every public
    name's docstring (its first sentence is on the page)."""
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed here: `make test` installs "
                                               "requirements-docs.txt")
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    build(load_config(str(REPO / "mkdocs.yml"), site_dir=str(tmp_path / "site"), strict=True))
    page = re.sub(r"\s+", "", html.unescape(re.sub(r"<[^>]+>", "", (tmp_path / "site" / "api" / "index.html")
                                                 .read_text())))  # words, markup and spacing aside
    for name in public_names():
        first = re.sub(r"\s+", "", documented(name).replace("`", ""))[:60]
        assert first in page, f"fastlab.{name}: {first!r} is not on the API page"
