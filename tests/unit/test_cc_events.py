"""fastlab.run.ccruntime's event readers: each run starts its own `fastlab-cc events` of its
namespaces and keeps the events of its sender sockets.

The BPF struct_ops cannot be registered in the unit tier, so the reader is a stand-in: a real
process (Python) that prints what `fastlab-cc events --netns` prints -- its first line naming the
ring it reads, then events of the namespaces it was given and of another one. What is tested is the
runtime's side: the argv, the PID tracked in the run state and stopped, what is kept, what is
recorded in the environment's `applied` list. The kernel side is tests/integration/test_cc.py's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fastlab.base import paths
from fastlab.define.cc import CongestionControl, Registry
from fastlab.net import runstate
from fastlab.plan.flows import HostParams
from fastlab.run.ccruntime import CCRuntime

FOREIGN_INO = 4_026_000_001  # a namespace inode of no host of the run

READER = """
import json, sys, time
ring, foreign, own = sys.argv[1], int(sys.argv[2]), int(sys.argv[sys.argv.index('--netns') + 1])
print(json.dumps({'cmd': 'events', 'name': 'fast', 'ring': ring, 'netns': [own]}), flush=True)
for i, (ino, dport) in enumerate([(own, 5201), (own, 9999), (foreign, 5201), (own, 5201)]):
    print(json.dumps({'ts': i, 'algo': 'fast', 'event': 'update', 'netns_ino': ino, 'dport': dport}), flush=True)
time.sleep(60)
"""


@dataclass
class StandIn:
    """A BPF build whose events reader is READER (or `argv`), recording the argv it was asked for."""

    ring: str = "own"
    argv: list[str] | None = None
    impl: str = "bpf"
    asked: list[list[int]] | None = None

    def events_argv(self, netns_ino: list[int]) -> list[str]:
        self.asked = (self.asked or []) + [netns_ino]
        return self.argv or [sys.executable, "-c", READER, self.ring, str(FOREIGN_INO),
                             "--netns", ",".join(map(str, netns_ino))]


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(paths, "STATE_DIR", tmp_path / "state")
    return tmp_path / "state"


def runtime(build: StandIn) -> tuple[CCRuntime, list[dict[str, Any]]]:
    registry = Registry()
    registry.register(CongestionControl("fast", "fastlab", "stand-in", loader=build))  # type: ignore[arg-type]
    got: list[dict[str, Any]] = []
    ccs = CCRuntime(registry, runstate.RunState("flevt1"), lambda _kind, e: got.append(e),
                    [HostParams("h1", "fast", {})], {})
    return ccs, got


def handed_over(got: list[dict[str, Any]], n: int, timeout_s: float = 10.0) -> None:
    """Wait until `n` events were kept: the stand-in's last line is one, so all were read."""
    deadline = time.monotonic() + timeout_s
    while len(got) < n and time.monotonic() < deadline:
        time.sleep(0.01)


@dataclass
class Flow:
    id: str
    src: str
    port: int


def test_a_run_reads_its_own_ring_of_its_namespaces_and_keeps_its_sockets_events(state_dir: Path) -> None:
    build = StandIn()
    ccs, got = runtime(build)
    ccs.start_events([Flow("f1", "h1", 5201)], {"h1": os.getpid()})
    own = os.stat("/proc/self/ns/net").st_ino
    assert build.asked == [[own]]  # --netns: the inodes of the run's hosts
    record = next(a for a in ccs.applied if "events" in a)
    assert record == {"cc": "fast", "events": "own ring"}  # its first line arrived before the flows start
    reader = ccs.state.pids[0]
    assert reader.what == "cc events fast" and runstate.process_start_time(reader.pid) == reader.start
    handed_over(got, 2)
    ccs.stop()
    assert runstate.process_start_time(reader.pid) != reader.start  # stopped with the run
    assert [(e["flow"], e["t"]) for e in got] == [("f1", 0), ("f1", 3)]  # its socket's; not port 9999's
    assert record["foreign_events"] == 1  # another namespace's event: counted, not kept


def test_a_reader_of_the_shared_ring_says_so(state_dir: Path) -> None:
    """An algorithm registered by a fastlab-cc without per-reader rings: the reader falls back to the
    shared ring, which the environment records (other runs' readers would take some of its events)."""
    ccs, got = runtime(StandIn(ring="shared"))
    ccs.start_events([Flow("f1", "h1", 5201)], {"h1": os.getpid()})
    handed_over(got, 2)
    ccs.stop()
    record = next(a for a in ccs.applied if "events" in a)
    assert record["events"].startswith("shared ring") and record["foreign_events"] == 1, record


def test_a_reader_that_fails_is_recorded_with_its_words(state_dir: Path) -> None:
    argv = [sys.executable, "-c", "import sys; sys.exit('fastlab-cc: fast is not registered')"]
    ccs, got = runtime(StandIn(argv=argv))
    ccs.start_events([Flow("f1", "h1", 5201)], {"h1": os.getpid()})
    ccs.stop()
    record = next(a for a in ccs.applied if "events" in a)
    assert record["events"] == "reader exited (1): fastlab-cc: fast is not registered", record
    assert got == [] and json.dumps(ccs.applied)  # still a record the environment can hold


def as_nobody(*args: str) -> subprocess.CompletedProcess[str]:
    """fastlab-cc as the unprivileged user `nobody` (never as root: what it accepts can change
    nothing; it then stops at the registration or permission, exit 1 or 3)."""
    argv = [str(paths.cc_tool()), *args]
    if os.geteuid() == 0:
        argv = [shutil.which("setpriv") or "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)


@pytest.mark.parametrize("netns, why", [
    ("", "expected INO"), (",", "expected INO"), ("1,,2", "expected INO"), ("1,", "expected INO"),
    ("0", "out of range"), ("4294967296", "out of range"), ("-5", "out of range"), ("x", "out of range"),
    ("1.5", "out of range"), ("NaN", "out of range"), ("1,1", "given twice"),
    (",".join(map(str, range(1, 1026))), "more than 1024"), ("1" * 20_000, "longer than"),
])
def test_the_reader_refuses_a_bad_namespace_list_in_one_line(netns: str, why: str) -> None:
    proc = as_nobody("events", "fast", "--netns", netns)
    assert proc.returncode == 2 and why in proc.stderr and proc.stderr.count("\n") == 1, proc


def test_the_reader_takes_a_good_namespace_list() -> None:
    """Accepted, it goes on to the pins (a registration or a permission it lacks as nobody)."""
    proc = as_nobody("events", "fast", "--netns", ",".join(map(str, range(4_026_531_000, 4_026_532_024))))
    assert proc.returncode in (1, 3) and proc.stdout == "", proc
