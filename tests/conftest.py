"""Shared fixtures. Integration tests need root (namespaces, tc) and the built emulator.

Markers (pyproject.toml), set here so no test has to remember them: `root` on every test that uses
the `as_root` fixture or lives in a folder of real runs, `slow` on the folders of real experiments,
`norun` on every web test not marked `alone` (one that starts an experiment or judges a time).
`make check` runs `-m "not root and not slow"` over tests/unit (as any user); `make test` runs the
unit tier first, then everything else.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from fastlab.base.record import Summary

# The gate does not draw at random (issue 30: a test that fails by chance teaches nothing): the
# property tests draw the same examples every run, from a fixed seed, with no example database.
# `HYPOTHESIS_PROFILE=explore make check` draws afresh each run, to look for new failures (the last
# one found in CI, a gamma of 10**400, is why tests/unit/test_spec.py tries every named hostile value
# at every field, exhaustively).
settings.register_profile("fastlab", derandomize=True, database=None)
settings.register_profile("explore", database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fastlab"))

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
EXAMPLE = REPO / "examples" / "simple-cubic.yaml"


def fastlab(*args: str, timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real CLI, as users do (`env`: variables added to the test's own, e.g. FASTLAB_LABS_DIR)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "fastlab", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=REPO, check=False)


def machine_leftovers() -> dict[str, list[str]]:
    """What fastlab objects exist on the machine right now (namespaces are unnamed: count shells),
    leaving out those of a run another live process owns (its state file's engine is alive and is not
    this session's own descendant): a run someone else has going is not this session's leftover."""
    from fastlab.base import paths
    from fastlab.base.paths import cgroup2_root
    from fastlab.net.runstate import prefixed_root_objects

    foreign = foreign_run_prefixes()
    intfs, bridges = prefixed_root_objects()
    states = sorted(p.name for p in paths.STATE_DIR.glob("fl*.json")) if paths.STATE_DIR.is_dir() else []
    root = cgroup2_root()
    cgroups = sorted(p.name for p in root.glob("fastlab-fl*")) if root is not None else []

    def own(names: list[str]) -> list[str]:
        return [n for n in names if not any(n.removeprefix("fastlab-").startswith(f) for f in foreign)]

    return {"interfaces": own(intfs), "bridges": own(bridges), "state_files": own(states), "cgroups": own(cgroups)}


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


def foreign_run_prefixes() -> set[str]:
    """Prefixes of runs whose engine is alive (fastlab.net.runstate's own test: pid and start time) and is not
    this process or one of its descendants."""
    from fastlab.base import paths
    from fastlab.net.runstate import RunState

    prefixes: set[str] = set()
    if not paths.STATE_DIR.is_dir():
        return prefixes
    me = os.getpid()
    for path in paths.STATE_DIR.glob("fl*.json"):
        try:
            state = RunState.load(path)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not state.engine_alive():
            continue  # a dead engine's objects are a leak, whoever left them
        chain, hops = state.engine_pid, 0
        while chain not in (0, 1, me) and hops < 64:
            chain, hops = _parent(chain), hops + 1
        if chain != me:
            prefixes.add(path.stem)
    return prefixes


def faithful(summary: Summary) -> bool:
    """Whether a live run's physics may be judged: only a run the fidelity verdict calls faithful proves
    anything (docs/design.md §10). An unfaithful one is inconclusive: the caller skips its physical bounds,
    and this says so in the test's output."""
    if summary.faithful:
        return True
    print("inconclusive: the run was not faithful, its physics is not judged: "
          f"{summary.fidelity.reasons if summary.fidelity is not None else None}")
    return False


ROOT_FOLDERS = ("integration", "labs", "stock_kernel")  # real namespaces, tc, BPF
SLOW_FOLDERS = ("integration", "labs", "stock_kernel")  # real experiments of seconds to minutes
# Web tests run two at a time (marker `norun`, make test's web tier) unless marked `alone`: a test that
# starts an experiment (in this process, a server's or a Dask worker's) or judges a time.
SIDE_BY_SIDE_FOLDERS = ("webapp",)


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
        if folder in SIDE_BY_SIDE_FOLDERS and item.get_closest_marker("alone") is None:
            item.add_marker(pytest.mark.norun)
    # Longest first (`lengthy`, each over ~30 s): the web tier's workers steal work from the back of each
    # other's queues (`--dist worksteal`), so a long test collected last would start last and end the tier
    # alone (2026-11-29: the two page tours, 45 s each, started ~2 minutes in; the tier took 166 s).
    items.sort(key=lambda item: item.get_closest_marker("lengthy") is None)


@pytest.fixture(autouse=True)
def norun_builds_no_network(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A test marked `norun` runs beside another (`make test`'s web tier, `-n 2`) because it starts no
    experiment and judges nothing by time. Here the engine cannot build a network for it: a test so marked
    that starts a run in this process fails, naming the run, instead of running it beside another. (A spec
    the engine refuses before building anything, a hostile bundle's replay, is no experiment and passes.)"""
    if request.node.get_closest_marker("norun") is None:
        yield
        return
    from fastlab.net.network import Network

    built: list[str] = []

    def refuse(network: Network, *args: Any, **kwargs: Any) -> None:
        built.append(getattr(network, "prefix", "?"))
        raise RuntimeError("a test marked norun built an experiment's network")

    monkeypatch.setattr(Network, "build", refuse)
    yield
    assert not built, f"marked norun but started an experiment ({built}): mark it `alone`"


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
    from fastlab.define.cc import kernel_available

    before_cc, before = sorted(kernel_available()), machine_leftovers()
    yield
    after_cc, after = sorted(kernel_available()), machine_leftovers()
    # What the session added and left: objects that were there before and went (a concurrent run that
    # ended) are not the session's doing.
    added = {kind: sorted(set(after[kind]) - set(before[kind])) for kind in after}
    assert after_cc == before_cc and not any(added.values()), (
        f"the tests left the machine changed: congestion control {before_cc} -> {after_cc}, "
        f"new fastlab objects left {added}")

