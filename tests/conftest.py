"""Shared fixtures. Integration tests need root (namespaces, tc) and the built emulator.

Markers (pyproject.toml), set here so no test has to remember them: `root` on every test that uses
the `as_root` fixture or lives in a folder of real runs, `slow` on the folders of real experiments.
`make check` runs `-m "not root and not slow"` over tests/unit (as any user); `make test` runs the
unit tier first, then everything else.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
EXAMPLE = REPO / "examples" / "simple-cubic.yaml"


def fastlab(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the real CLI, as users do."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "fastlab", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=REPO, check=False)


def machine_leftovers() -> dict[str, list[str]]:
    """What fastlab objects exist on the machine right now (namespaces are unnamed: count shells)."""
    from fastlab import paths
    from fastlab.cwndclamp import cgroup2_root
    from fastlab.runstate import prefixed_root_objects

    intfs, bridges = prefixed_root_objects()
    states = sorted(p.name for p in paths.STATE_DIR.glob("fl*.json")) if paths.STATE_DIR.is_dir() else []
    root = cgroup2_root()
    cgroups = sorted(p.name for p in root.glob("fastlab-fl*")) if root is not None else []
    return {"interfaces": intfs, "bridges": bridges, "state_files": states, "cgroups": cgroups}


ROOT_FOLDERS = ("integration", "labs", "stock_kernel")  # real namespaces, tc, BPF
SLOW_FOLDERS = ("integration", "labs", "stock_kernel")  # real experiments of seconds to minutes


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests = Path(__file__).resolve().parent
    for item in items:
        try:
            folder = item.path.resolve().relative_to(tests).parts[0]
        except ValueError:
            continue
        if folder in ROOT_FOLDERS or "as_root" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.root)
        if folder in SLOW_FOLDERS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def as_root() -> None:
    if os.geteuid() != 0:
        pytest.fail("integration tests need root: run them with `make test` (as root or a sudo user)")


@pytest.fixture(scope="session", autouse=True)
def machine_left_as_found() -> Iterator[None]:
    """The whole session leaves the machine as it found it: no new fastlab objects, and the
    kernel's congestion-control list unchanged (a leaked FAST registration would carry stale
    parameters into later runs)."""
    if os.geteuid() != 0:
        yield
        return
    from fastlab.cc import kernel_available

    before = (sorted(kernel_available()), machine_leftovers())
    yield
    after = (sorted(kernel_available()), machine_leftovers())
    assert after == before, f"the tests left the machine changed: before {before}, after {after}"

