"""Traffic: one sender/receiver process pair per flow, started and stopped on schedule.

`expand_flows` (pure) turns the spec's flow entries (with `count`) into numbered flows with
ports and addresses. `Traffic.prepare` starts every receiver and sender before the flows' time zero
(senders in their host's namespace, their CC set per socket, waiting); `go(t0)` tells each sender
when to start and stop, and they stream tcp_info samples back, which go onto the sample bus.
"""

from __future__ import annotations

import math
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastlab.base import paths
from fastlab.base.supervised import Supervised, stop_all
from fastlab.plan.flows import Flow

RECEIVER_GRACE_S = 5.0
# Starting a run's tools: each flow has a receiver and a sender, each a Python interpreter. They start a
# few at a time (START_CONCURRENCY), and each must say it is ready within START_TIMEOUT_S of its own
# start. All at once, on 2 CPUs they share the CPU and all finish near the end: in the stock-kernel lane's
# software-emulated guest (TCG, 2 vCPUs, quiet host, 2026-11-28) 16 starts at once took 30-33 s before the
# first answered, and a run-wide 30-s deadline failed the lane's 8-flow RED run in CI ("sender of f4 on
# h1 did not start within 30 s"). Four at a time there (with -S, below), the lane's 16 tools started in
# 14.5 and 16.1 s, ~4 s a start: a tool that has not answered in 30 s is stuck, not slow, however many
# flows the run has. On the host a 64-flow run's 128 tools start in 3.0-3.3 s (4.9-5.1 s all at once
# with site: the starts are CPU-bound either way).
START_CONCURRENCY = 4
START_TIMEOUT_S = 30.0
# Tools start as `python -S`: without the site module, which imports every .pth of the system's
# site-packages (one here imports certifi). flowtool needs only the standard library and fastlab (found
# from the working directory, the folder holding the package: paths.package_parent). In the guest above,
# 16 bare starts: 19-20 s with site, 7-8 s without; 16 flowtool starts 30-33 s -> 19-20 s
# (tests/unit/test_traffic.py holds it to -S).
PYTHON_FLAGS = ("-S",)
STOP_GRACE_S = 3.0  # a flowtool ends its sample loop and exits on SIGTERM


@dataclass
class Traffic:
    net: Any  # fastlab.net.network.Network
    flows: list[Flow]
    emit: Callable[[str, dict[str, Any]], None]
    interval_s: float
    cgroup: Path | None = None  # the run's clamp cgroup, which senders of clamped flows are put in
    errors: list[str] = field(default_factory=list)
    started: dict[str, dict[str, Any]] = field(default_factory=dict)
    finished: dict[str, dict[str, Any]] = field(default_factory=dict)
    received: dict[str, dict[str, Any]] = field(default_factory=dict)
    _procs: list[Supervised] = field(default_factory=list)
    _senders: dict[str, Supervised] = field(default_factory=dict)
    _cancel: threading.Event = field(default_factory=threading.Event)

    def _spawn(self, host: str, argv: list[str], on_line: Callable[[dict[str, Any]], None], what: str,
               cgroup: Path | None = None, stdin: bool = False) -> Supervised:
        def on_exit(tool: Supervised) -> None:
            if tool.returncode != 0 and not self._cancel.is_set():
                self.errors.append(f"{what}: {tool.stderr_text() or f'exit {tool.returncode}'}")

        tool = Supervised.start(what, [paths.python(), *PYTHON_FLAGS, "-m", "fastlab.run.flowtool", *argv],
                                state=self.net.state,
                                on_message=on_line, on_exit=on_exit, popen=self.net.node(host).popen,
                                cwd=str(paths.package_parent()), stdin=stdin)
        self._procs.append(tool)
        if cgroup is not None:  # the sender waits for this before it opens its socket
            try:
                (cgroup / "cgroup.procs").write_text(str(tool.pid))
            except OSError as exc:
                self.errors.append(f"{what}: cannot move it into cgroup {cgroup}: {exc.strerror}")
        return tool

    def prepare(self) -> None:
        """Start every receiver and every sender before the flows' time zero: receivers listen, senders
        have their socket and congestion control and wait for `go` (each a Python interpreter, whose start
        takes tenths of a second here and seconds in an emulated guest: paid now, not by the flows).
        START_CONCURRENCY at a time, receivers first; a tool that is not ready START_TIMEOUT_S after its
        own start fails the run, naming it, and so does a tool that exits (unknown CC, ...) at once."""
        ready: set[str] = set()  # tools that said they are ready (added by their reader threads)
        changed = threading.Event()  # a tool became ready: look again
        listen_s = start_bound_s(2 * len(self.flows))  # a receiver outlives every start before its sender's

        def mark(key: str) -> None:
            ready.add(key)
            changed.set()

        def start_receiver(flow: Flow) -> None:
            def on_recv(msg: dict[str, Any]) -> None:
                if msg["event"] == "listening":
                    mark(f"receiver {flow.id}")
                elif msg["event"] == "done":
                    self.received[flow.id] = msg
            self._spawn(flow.dst, ["recv", "--bind", flow.dst_ip, "--port", str(flow.port), "--duration-s",
                                   str(flow.stop_s + RECEIVER_GRACE_S + listen_s), "--flow", flow.id],
                        on_recv, f"receiver {flow.id}")

        def start_sender(flow: Flow) -> None:
            clamped = bool(flow.max_cwnd_pkts and self.cgroup)

            def on_send(msg: dict[str, Any]) -> None:
                event = msg.pop("event")
                if event == "sample":
                    self.emit("flow", msg)
                elif event == "ready":
                    mark(f"sender {flow.id}")
                elif event == "start":
                    self.started[flow.id] = msg
                elif event == "done":
                    self.finished[flow.id] = msg

            self._senders[flow.id] = self._spawn(
                flow.src, ["send", "--dst", flow.dst_ip, "--port", str(flow.port), "--cc", flow.cc,
                           "--duration-s", str(flow.stop_s - flow.start_s), "--go-on-stdin",
                           "--interval-s", str(self.interval_s), "--flow", flow.id,
                           *(["--cgroup", self.cgroup.name] if clamped and self.cgroup else [])],
                on_send, f"sender {flow.id}", self.cgroup if clamped else None, stdin=True)

        starts: list[tuple[str, str, Callable[[], None]]] = [
            *((f"receiver {f.id}", f.dst, lambda f=f: start_receiver(f)) for f in self.flows),
            *((f"sender {f.id}", f.src, lambda f=f: start_sender(f)) for f in self.flows)]
        starting: dict[str, tuple[str, float]] = {}  # tool -> (host, when it was started)
        while starts or starting:
            while starts and len(starting) < START_CONCURRENCY:
                key, host, start = starts.pop(0)
                starting[key] = (host, time.monotonic())
                start()
            changed.wait(0.05)
            changed.clear()
            if self.errors:  # a tool that failed to start says why at once
                raise RuntimeError("; ".join(self.errors))
            now = time.monotonic()
            for key, (host, since) in list(starting.items()):
                if key in ready:
                    del starting[key]
                elif now - since > START_TIMEOUT_S:
                    raise RuntimeError(f"{key} on {host} did not start within {START_TIMEOUT_S:g} s "
                                       f"({len(starting)} starting at once)")

    def go(self, t0: float) -> None:
        """Time zero: each sender starts at t0 + its start_s and stops at t0 + its stop_s (fastlab.run.flowtool)."""
        for flow in self.flows:
            try:
                self._senders[flow.id].send({"start_at": t0 + flow.start_s, "stop_at": t0 + flow.stop_s})
            except (OSError, ValueError) as exc:  # it exited already: its on_exit said why
                self.errors.append(f"sender {flow.id}: cannot be started: {exc}")

    def wait(self, timeout_s: float) -> None:
        """Wait until every tool has ended by itself, for at most `timeout_s` in all."""
        deadline = time.monotonic() + timeout_s
        for tool in list(self._procs):
            try:
                tool.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                continue  # still running: `stop` ends it (waiting on its reader would only add 2 s a tool)
            tool.join_reader(2)  # it has exited: its last lines (the "done" summary) handed over

    def stop(self) -> None:
        self._cancel.set()
        stop_all(self._procs, STOP_GRACE_S)


def start_bound_s(tools: int) -> float:
    """The longest `Traffic.prepare` can take to start `tools` tools (pure): START_CONCURRENCY at a
    time, each given START_TIMEOUT_S; a new start takes the first free place, so one place can serve
    more than its share while others wait (list scheduling: at most the even share plus one timeout)."""
    return (math.ceil(tools / START_CONCURRENCY) + 1) * START_TIMEOUT_S
