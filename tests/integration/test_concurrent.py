"""Two runs at once in one process, as the web queue runs them: each finishes with its own verdict and
names the other as a neighbour; FAST (BPF struct_ops) is registered once for both and unregistered by
the last one out (fastlab.net.runstate's references), not by the first to finish under the other; nothing
is left behind (the session's `machine_left_as_found` checks the rest)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from fastlab.define.cc import kernel_available
from fastlab.experiment.engine import RunResult, run_experiment
from fastlab.labs.kit import load_lab
from fastlab.net.runstate import cc_holders
from tests.conftest import machine_leftovers

pytestmark = pytest.mark.usefixtures("as_root")


def fast_spec(duration_s: float) -> Any:
    """Lab 02's first step (two FAST flows, 20 Mb/s), shortened."""
    return load_lab(2).build_spec("equilibrium", short=True, extra=[f"duration_s={duration_s:g}"])


def test_two_concurrent_runs_share_fast_and_finish_with_their_own_verdicts(tmp_path: Path) -> None:
    fast_before = "fast" in kernel_available()
    results: dict[str, RunResult] = {}
    errors: list[BaseException] = []

    def run(name: str, duration_s: float) -> None:
        try:
            results[name] = run_experiment(fast_spec(duration_s), out=tmp_path / name)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    first = threading.Thread(target=run, args=("first", 5.0))
    second = threading.Thread(target=run, args=("second", 8.0))  # starts later, ends later
    first.start()
    time.sleep(0.5)
    second.start()
    first.join(120)
    second.join(120)
    assert not errors, errors
    assert set(results) == {"first", "second"}

    envs = {name: json.loads((r.directory / "environment.json").read_text()) for name, r in results.items()}
    prefixes = {name: env["run"]["prefix"] for name, env in envs.items()}
    for name, r in results.items():
        other = prefixes["second" if name == "first" else "first"]
        verdict = r.summary.fidelity
        assert verdict is not None and isinstance(verdict.faithful, bool)  # each run is judged on its own
        assert other in verdict.neighbours, verdict.neighbours  # their flows overlapped
        assert other in [n["prefix"] for n in envs[name]["concurrency"]["neighbours"]]
        if not verdict.faithful:  # unfaithful beside a neighbour: it says so
            assert any("shared the machine" in why for why in verdict.reasons), verdict.reasons

    # FAST: one registration (at most one run registered it), released by the last one out
    loads = {name: next(a for a in env["congestion_control"]["applied"] if a.get("cc") == "fast" and "impl" in a)
             for name, env in envs.items()}
    assert sum(bool(a["loaded_by_run"]) for a in loads.values()) == (0 if fast_before else 1)
    unloads = {name: next(a for a in env["congestion_control"]["applied"] if "unload" in a)
               for name, env in envs.items() if any("unload" in a for a in env["congestion_control"]["applied"])}
    if not fast_before:
        assert sorted(u["unload"] or "" for u in unloads.values()) == ["", "unregistered"], unloads
        shared = next(u for u in unloads.values() if u["unload"] is None)
        last = next(n for n, u in unloads.items() if u["unload"] == "unregistered")
        assert shared["still_used_by"] == [prefixes[last]]  # the first out left it to the other
    assert ("fast" in kernel_available()) == fast_before
    assert cc_holders("fast:bpf") == []
    left = machine_leftovers()
    assert not [n for names in left.values() for n in names if n[:6] in prefixes.values()
                or n.removeprefix("fastlab-")[:6] in prefixes.values()], left
