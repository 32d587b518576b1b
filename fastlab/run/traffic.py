"""Traffic: one sender/receiver process pair per flow, started and stopped on schedule.

`expand_flows` (pure) turns the spec's flow entries (with `count`) into numbered flows with
ports and addresses. `Traffic.prepare` starts every receiver and sender before the flows' time zero
(senders in their host's namespace, their CC set per socket, waiting); `go(t0)` tells each sender
when to start and stop, and they stream tcp_info samples back, which go onto the sample bus.
"""

from __future__ import annotations

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
# How long a run waits for its receivers to say they listen (each a Python process). In the stock-kernel
# lane's software-emulated guest on a busy host, the 3-4 receivers of the lane's first run (a -k filter:
# no run before it) did not all answer within 10 s in 2 of 3 lane runs (2026-11-27, host load 4-7; no
# error line from them, so slow starts, cause not measured further). A run waits for them rather than
# fail: bounded, as the tc poller's wait.
RECEIVER_START_TIMEOUT_S = 30.0
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

        tool = Supervised.start(what, [paths.python(), "-m", "fastlab.run.flowtool", *argv], state=self.net.state,
                                on_message=on_line, on_exit=on_exit, popen=self.net.node(host).popen,
                                cwd=str(paths.REPO), stdin=stdin)
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
        takes tenths of a second here and seconds in an emulated guest: paid now, not by the flows)."""
        listening: dict[str, threading.Event] = {f.id: threading.Event() for f in self.flows}
        ready: dict[str, threading.Event] = {f.id: threading.Event() for f in self.flows}
        for flow in self.flows:
            def on_recv(msg: dict[str, Any], flow: Flow = flow) -> None:
                if msg["event"] == "listening":
                    listening[flow.id].set()
                elif msg["event"] == "done":
                    self.received[flow.id] = msg
            self._spawn(flow.dst, ["recv", "--bind", flow.dst_ip, "--port", str(flow.port), "--duration-s",
                                   str(flow.stop_s + RECEIVER_GRACE_S + RECEIVER_START_TIMEOUT_S),
                                   "--flow", flow.id],
                        on_recv, f"receiver {flow.id}")
        for flow in self.flows:
            clamped = bool(flow.max_cwnd_pkts and self.cgroup)

            def on_send(msg: dict[str, Any], flow: Flow = flow) -> None:
                event = msg.pop("event")
                if event == "sample":
                    self.emit("flow", msg)
                elif event == "ready":
                    ready[flow.id].set()
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
        deadline = time.monotonic() + RECEIVER_START_TIMEOUT_S
        for what, events in (("receiver", listening), ("sender", ready)):
            for flow in self.flows:
                while not events[flow.id].wait(0.05):
                    if self.errors:  # a tool that failed to start (unknown CC, ...) says why at once
                        raise RuntimeError("; ".join(self.errors))
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{what} of {flow.id} on {flow.dst if what == 'receiver' else flow.src} "
                                           f"did not start within {RECEIVER_START_TIMEOUT_S:g} s: {self.errors}")

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
