"""The package's top (issue 48 item 6): what a script needs, each name documented (role, arguments,
return), imported only when used; and the API reference page built from those docstrings (pdoc, which
`make test` installs from requirements-docs.txt; the check tier has it from requirements-check.txt)."""

from __future__ import annotations

import inspect
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
    """`make docs`' command: the page holds every public name, each with its docstring's first line."""
    pytest.importorskip("pdoc", reason="pdoc is not installed here: `make test` installs requirements-docs.txt")
    out = subprocess.run([sys.executable, "-m", "pdoc", "--output-directory", str(tmp_path), "fastlab", "!fastlab."],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "fastlab.html").read_text()
    for name in public_names():
        if name != "run":
            assert f'id="{name}"' in page, name
    assert "fastlab.run(spec, *, out=None, **options)" in page and "Run an experiment on this machine" in page
    assert "A queue size in one of four units" in page  # Buffer's docstring, rendered
