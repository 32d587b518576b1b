"""Starting a run's tools (`fastlab.run.traffic.Traffic.prepare`) on real flowtool processes over
loopback: the network is the one thing stood in for (a node's popen is plain `subprocess.Popen` here, in
this namespace; the host suite runs the same code in Mininet's namespaces)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from fastlab.base import paths
from fastlab.plan.flows import Flow
from fastlab.run import traffic
from fastlab.run.traffic import START_CONCURRENCY, Traffic, start_bound_s


@dataclass
class Host:
    """A node whose popen starts the process here, each `delay_s` late (a slow interpreter start)."""
    net: LoopbackNet

    def popen(self, argv: list[str], **kw: Any) -> subprocess.Popen[str]:
        self.net.argvs.append(argv)
        if self.net.delay_s:
            argv = ["sh", "-c", f'sleep {self.net.delay_s}; exec "$@"', "sh", *argv]
        return subprocess.Popen(argv, **kw)


@dataclass
class LoopbackNet:
    delay_s: float = 0.0
    pids: list[tuple[int, str]] = field(default_factory=list)
    argvs: list[list[str]] = field(default_factory=list)

    @property
    def state(self) -> LoopbackNet:
        return self

    def add_pid(self, pid: int, what: str) -> None:
        self.pids.append((pid, what))

    def node(self, name: str) -> Host:
        return Host(self)


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def flows(n: int, cc: str = "reno") -> list[Flow]:
    return [Flow(f"f{i + 1}", "h1", "h2", cc, {}, 0.0, 1.0, port, "127.0.0.1", "127.0.0.1")
            for i, port in enumerate(free_ports(n))]


def test_tools_start_a_few_at_a_time_and_every_one_is_ready_before_time_zero(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(traffic, "START_CONCURRENCY", 2)
    net, samples = LoopbackNet(delay_s=0.4), []
    run = Traffic(net, flows(5), lambda kind, msg: samples.append(msg), interval_s=0.1)
    try:
        started = time.monotonic()
        run.prepare()
        # 10 starts of >= 0.4 s each, two at a time: not all at once (which takes ~0.5 s)
        assert time.monotonic() - started >= 0.4 * 5
        # every receiver started before any sender
        kinds = [argv[argv.index("fastlab.run.flowtool") + 1] for argv in net.argvs]
        assert kinds == ["recv"] * 5 + ["send"] * 5
        assert all(argv[1] == "-S" for argv in net.argvs)  # no site module: see traffic.PYTHON_FLAGS
        assert len(net.pids) == 10
        t0 = time.monotonic() + 0.2
        run.go(t0)
        run.wait(15)
    finally:
        run.stop()
    assert run.errors == []
    assert sorted(run.finished) == sorted(run.received) == [f"f{i}" for i in range(1, 6)]
    assert all(m["bytes"] > 0 for m in run.received.values())
    assert samples, "senders stream tcp_info samples"


def test_a_tool_that_never_answers_fails_the_run_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sender that hangs before saying ready: the run fails START_TIMEOUT_S after that sender's own start,
    naming it, however long the others took."""
    monkeypatch.setattr(traffic, "START_TIMEOUT_S", 2.0)
    run = Traffic(LoopbackNet(), flows(2), lambda kind, msg: None, interval_s=0.1)
    real_popen = Host.popen

    def popen(self: Host, argv: list[str], **kw: Any) -> subprocess.Popen[str]:
        if "send" in argv and "f2" in argv:  # stands in for a stuck interpreter start
            argv = [sys.executable, "-c", "import time; time.sleep(30)"]
        return real_popen(self, argv, **kw)

    monkeypatch.setattr(Host, "popen", popen)
    started = time.monotonic()
    try:
        with pytest.raises(RuntimeError, match=r"^sender f2 on h1 did not start within 2 s"):
            run.prepare()
    finally:
        run.stop()
    assert time.monotonic() - started < 15


def test_a_tool_that_exits_at_once_fails_the_run_with_its_reason() -> None:
    run = Traffic(LoopbackNet(), flows(1, cc="no-such-cc"), lambda kind, msg: None, interval_s=0.1)
    try:
        with pytest.raises(RuntimeError, match="sender f1: cannot use congestion control 'no-such-cc'"):
            run.prepare()
    finally:
        run.stop()


def test_the_start_bound_covers_list_scheduling() -> None:
    assert start_bound_s(1) == 2 * traffic.START_TIMEOUT_S
    assert start_bound_s(START_CONCURRENCY * 4) == 5 * traffic.START_TIMEOUT_S
    assert start_bound_s(START_CONCURRENCY * 4 + 1) == 6 * traffic.START_TIMEOUT_S


def test_flowtool_runs_without_the_site_module() -> None:
    """flowtool needs only the standard library and fastlab, so it starts as `python -S` from the checkout."""
    out = subprocess.run([paths.python(), "-S", "-m", "fastlab.run.flowtool", "--help"],
                         cwd=str(paths.package_parent()),
                         capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0 and "send" in out.stdout, out.stderr
