"""fastlab.net.runstate's cc_acquire / cc_release: references on a congestion control across overlapping
runs (threads, processes), counted in real files under a state directory of the test's own, with
real processes as holders.

The kernel side is a file here (`FileLoader`: present = registered), so the counting is what is
tested: who registers, who unregisters, what a killed holder leaves.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from fastlab.base import paths
from fastlab.net import runstate
from fastlab.net.runstate import CC_OWNER, cc_acquire, cc_holders, cc_locked, cc_release
from fastlab.run.ccload import ToolError

REPO = Path(__file__).resolve().parents[2]


@dataclass
class FileLoader:
    """An algorithm whose registration is a file (counts its loads and unloads)."""

    where: Path
    name: str = "fast"
    impl: str = "bpf"
    fail_unload: bool = False

    def registered(self) -> bool:
        return self.where.exists()

    def load(self) -> bool:
        if self.where.exists():
            return False
        self.where.write_text("1")
        return True

    def unload(self) -> str:
        if self.fail_unload:
            raise ToolError("in use")
        self.where.unlink()
        return "unregistered"


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(paths, "STATE_DIR", tmp_path / "state")
    return tmp_path / "state"


def test_two_holders_the_last_one_unregisters(state_dir: Path, tmp_path: Path) -> None:
    loader = FileLoader(tmp_path / "kernel-fast")
    assert cc_acquire("fast:bpf", "fla001", loader) is True
    assert cc_acquire("fast:bpf", "flb002", loader) is False  # already registered: shared
    assert cc_holders("fast:bpf") == ["fla001", "flb002"]
    first = cc_release("fast:bpf", "fla001", loader)  # the registering run ends first
    assert first.status is None and first.others == ["flb002"] and loader.registered()
    last = cc_release("fast:bpf", "flb002", loader)
    assert last.status == "unregistered" and not loader.registered()
    assert not (state_dir / "cc" / "fast.bpf").exists()  # nothing left behind but the lock file


def test_a_registration_made_outside_fastlab_stays(state_dir: Path, tmp_path: Path) -> None:
    loader = FileLoader(tmp_path / "kernel-fast")
    loader.load()  # `fastlab cc load` by hand, before any run
    assert cc_acquire("fast:bpf", "fla001", loader) is False
    assert cc_release("fast:bpf", "fla001", loader).status is None
    assert loader.registered()


def test_threads_of_one_process_are_separate_holders(state_dir: Path, tmp_path: Path) -> None:
    """Eight runs in threads take and leave references at once: one registration, one unregistration."""
    loader = FileLoader(tmp_path / "kernel-fast")
    loads, unloads = [], []
    barrier = threading.Barrier(8)

    def run(i: int) -> None:
        barrier.wait()
        loads.append(cc_acquire("fast:bpf", f"flt{i:03d}", loader))
        barrier.wait()  # all hold it here
        unloads.append(cc_release("fast:bpf", f"flt{i:03d}", loader).status)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(loads) == [False] * 7 + [True]
    assert unloads.count("unregistered") == 1 and unloads.count(None) == 7
    assert not loader.registered()


def _holder_process(state: Path, where: Path, prefix: str) -> subprocess.Popen[str]:
    """A real process that takes a reference, says so, and waits to be killed."""
    code = ("import sys, time\nfrom pathlib import Path\nfrom fastlab.base import paths\n"
            "from fastlab.net.runstate import cc_acquire\n"
            "from tests.unit.test_cc_references import FileLoader\n"
            f"paths.STATE_DIR = Path({str(state)!r})\n"
            f"print(cc_acquire('fast:bpf', {prefix!r}, FileLoader(Path({str(where)!r}))), flush=True)\n"
            "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() in ("True", "False")
    return proc


def test_a_killed_holders_reference_is_reclaimed(state_dir: Path, tmp_path: Path) -> None:
    """A run killed -9 while holding the registration it made: the next holder to leave reclaims its
    reference and unregisters (the marker says fastlab registered it)."""
    loader = FileLoader(tmp_path / "kernel-fast")
    proc = _holder_process(state_dir, loader.where, "flk001")
    assert loader.registered()
    assert cc_acquire("fast:bpf", "fla001", loader) is False
    assert cc_holders("fast:bpf") == ["fla001", "flk001"]
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert cc_holders("fast:bpf") == ["fla001"]  # the dead engine no longer counts
    released = cc_release("fast:bpf", "fla001", loader)
    assert released.status == "unregistered" and released.reclaimed == ["flk001"]
    assert not loader.registered()


def test_cleanup_releases_a_dead_runs_reference_but_not_a_live_neighbours(state_dir: Path, tmp_path: Path) -> None:
    """`fastlab cleanup`'s step for a dead run's state: a live run still holds the algorithm, so it stays
    registered and the dead run's reference goes; when no one is left, the release unregisters."""
    loader = FileLoader(tmp_path / "kernel-fast")
    proc = _holder_process(state_dir, loader.where, "flk002")
    try:
        assert cc_acquire("fast:bpf", "fla002", loader) is False
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        # what cleanup's release_ccs does for the dead run's entry (it builds the real loader itself)
        released = cc_release("fast:bpf", "flk002", loader)
        assert released.status is None and released.others == ["fla002"] and loader.registered()
        assert cc_release("fast:bpf", "fla002", loader).status == "unregistered"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_a_failed_unload_keeps_the_marker_for_a_retry(state_dir: Path, tmp_path: Path) -> None:
    loader = FileLoader(tmp_path / "kernel-fast", fail_unload=True)
    assert cc_acquire("fast:bpf", "fla003", loader) is True
    with pytest.raises(ToolError):
        cc_release("fast:bpf", "fla003", loader)
    assert loader.registered() and (state_dir / "cc" / "fast.bpf" / CC_OWNER).exists()
    loader.fail_unload = False
    assert cc_release("fast:bpf", "fla003", loader).status == "unregistered"  # cleanup's retry


def test_a_marker_over_an_unregistered_algorithm_is_forgotten(state_dir: Path, tmp_path: Path) -> None:
    """Killed between the marker and the registration: the last holder finds nothing to unregister."""
    loader = FileLoader(tmp_path / "kernel-fast")
    directory = state_dir / "cc" / "fast.bpf"
    directory.mkdir(parents=True)
    (directory / CC_OWNER).write_text("fldead")
    (directory / "fldead.json").write_text('{"prefix": "fldead", "pid": 4194304, "start": 1}')  # > pid_max
    assert cc_release("fast:bpf", "fldead", loader).status == "was not registered"
    assert not directory.exists()


@pytest.mark.parametrize("text", ["", "{", "[]", '{"prefix": "../x", "pid": 1, "start": 1}',
                                  '{"prefix": "flabcd", "pid": "x", "start": 1}', '{"prefix": "flabcd"}',
                                  '{"prefix": "flabcd", "pid": 1, "start": 1.5}', "x" * 100_000])
def test_a_hostile_reference_file_counts_as_dead(state_dir: Path, tmp_path: Path, text: str) -> None:
    loader = FileLoader(tmp_path / "kernel-fast")
    assert cc_acquire("fast:bpf", "fla004", loader) is True
    (state_dir / "cc" / "fast.bpf" / "flzzzz.json").write_text(text)
    released = cc_release("fast:bpf", "fla004", loader)
    assert released.status == "unregistered" and released.reclaimed == ["flzzzz.json"]


def test_the_lock_is_dropped_when_its_holder_dies(state_dir: Path) -> None:
    """A process killed inside the lock does not keep the next change waiting."""
    code = ("import time\nfrom pathlib import Path\nfrom fastlab.base import paths\n"
            "from fastlab.net.runstate import cc_locked\n"
            f"paths.STATE_DIR = Path({str(state_dir)!r})\n"
            "with cc_locked():\n    print('in', flush=True)\n    time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout is not None and proc.stdout.readline().strip() == "in"
    proc.kill()
    proc.wait(10)
    t0 = time.monotonic()
    with cc_locked():
        pass
    assert time.monotonic() - t0 < 1.0


def test_a_legacy_state_keeps_the_old_cleanup() -> None:
    """A state written before references were counted names what the run registered itself."""
    assert runstate.RunState("flabcd", engine_pid=4_194_304).cc_refcounted is False


def test_neighbours_are_the_other_live_runs_seen_while_the_flows_go(state_dir: Path) -> None:
    """fastlab.net.runstate.Neighbours: other runs with a live engine (this process), not the run itself nor
    a dead one; looked at most every NEIGHBOURS_EVERY_S unless forced."""
    runstate.RunState("flmine", results_dir="/r/mine").save()
    runstate.RunState("flothr", results_dir="/r/20261127-other").save()
    runstate.RunState("fldead", engine_pid=4_194_304).save()  # > pid_max: dead
    seen = runstate.Neighbours("flmine")
    seen.look(0.0, force=True)
    assert list(seen.seen) == ["flothr"] and seen.seen["flothr"]["run"] == "20261127-other"
    runstate.RunState("fllate").save()
    seen.look(0.5)  # within NEIGHBOURS_EVERY_S of the last look: not looked
    assert "fllate" not in seen.seen
    seen.look(runstate.NEIGHBOURS_EVERY_S + 0.1)
    assert sorted(seen.seen) == ["fllate", "flothr"] and seen.seen["flothr"]["last_s"] == 1.1
