"""A run's congestion controls: load what the spec needs, set per-host parameters, stream the
algorithms' internal-state events, apply scheduled changes, and unload what the run loaded.

Parameters are per network namespace (one per Mininet host), so two hosts in one run can use
different alpha; keys the algorithm only has globally (HSTCP's table) are set globally. Events
are kept when they come from a sender socket of this run (its namespace and flow port), and go
onto the sample bus with the flow they belong to.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastlab.cc import CCError, CongestionControl, Registry
from fastlab.ccset import GLOBAL_ONLY, ToolError
from fastlab.runstate import RunState
from fastlab.spec import ExperimentSpec, SpecError

EVENTS_READY_S = 0.3


@dataclass(frozen=True)
class HostParams:
    host: str
    cc: str
    args: dict[str, Any]


def plan_parameters(spec: ExperimentSpec, registry: Registry) -> tuple[list[HostParams], dict[str, dict[str, Any]]]:
    """Per-(host, CC) arguments and per-CC global arguments; conflicting flows are refused."""
    per_host: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
    global_args: dict[str, tuple[int, dict[str, Any]]] = {}
    for i, flow in enumerate(spec.flows):
        cc = registry.lookup(flow.cc)
        if cc.origin != "fastlab":
            continue
        args = cc.validate_args(flow.cc_args)
        glob = {k: v for k, v in args.items() if k in GLOBAL_ONLY[cc.name]}
        local = {k: v for k, v in args.items() if k not in GLOBAL_ONLY[cc.name]}
        key = (flow.src, flow.cc)
        if key in per_host and per_host[key][1] != local:
            raise SpecError(f"flows[{i}].cc_args: {flow.src} already runs {flow.cc} with {per_host[key][1]} "
                            f"(flows[{per_host[key][0]}]); flows from one host share its parameters")
        per_host.setdefault(key, (i, local))
        if glob and flow.cc in global_args and global_args[flow.cc][1] != glob:
            raise SpecError(f"flows[{i}].cc_args: {', '.join(glob)} of {flow.cc} are global for the run and "
                            f"differ from flows[{global_args[flow.cc][0]}]")
        if glob:
            global_args.setdefault(flow.cc, (i, glob))
    for i, change in enumerate(spec.cc_changes):
        try:
            cc = registry.lookup(change.cc)
        except CCError as exc:
            raise SpecError(f"cc_changes[{i}].cc: {exc}") from None
        if cc.origin != "fastlab":
            raise SpecError(f"cc_changes[{i}].cc: {change.cc} has no run-time parameters")
        if (change.host, change.cc) not in per_host:
            raise SpecError(f"cc_changes[{i}].host: no flow from {change.host} uses {change.cc}")
        try:
            args = cc.validate_args(change.args)
        except CCError as exc:
            raise SpecError(f"cc_changes[{i}].args: {exc}") from None
        if set(args) & GLOBAL_ONLY[cc.name]:
            raise SpecError(f"cc_changes[{i}].args: {', '.join(set(args) & GLOBAL_ONLY[cc.name])} "
                            f"cannot change mid-run (global table)")
        if change.at_s >= spec.duration_s:
            raise SpecError(f"cc_changes[{i}].at_s: after the run ends ({spec.duration_s:g} s)")
    hosts = [HostParams(host, cc, args) for (host, cc), (_i, args) in per_host.items()]
    return hosts, {cc: args for cc, (_i, args) in global_args.items()}


@dataclass
class CCRuntime:
    registry: Registry
    state: RunState
    emit: Callable[[str, dict[str, Any]], None]
    hosts: list[HostParams]
    global_args: dict[str, dict[str, Any]]
    applied: list[dict[str, Any]] = field(default_factory=list)
    _streams: list[subprocess.Popen[str]] = field(default_factory=list)
    _threads: list[threading.Thread] = field(default_factory=list)
    _cancel: threading.Event = field(default_factory=threading.Event)
    _owned: list[CongestionControl] = field(default_factory=list)
    _configured: list[tuple[HostParams, int]] = field(default_factory=list)

    def ours(self) -> list[CongestionControl]:
        return [self.registry.lookup(n) for n in sorted({h.cc for h in self.hosts})]

    def load(self) -> None:
        for cc in self.ours():
            loaded = cc.loader.load()
            if loaded:
                self._owned.append(cc)
                self.state.cc_loaded.append(f"{cc.name}:{cc.loader.impl}")
                self.state.save()
            self.applied.append({"cc": cc.name, "impl": cc.loader.impl, "loaded_by_run": loaded,
                                 "available": cc.loader.available()[1]})
            if self.global_args.get(cc.name):
                cc.loader.set(self.global_args[cc.name])
                self.applied.append({"cc": cc.name, "scope": "global", "args": self.global_args[cc.name]})

    def configure(self, pids: dict[str, int]) -> None:
        owned = {cc.name for cc in self._owned}
        for hp in self.hosts:
            cc = self.registry.lookup(hp.cc)
            if hp.cc not in owned:  # registered before this run: its map may hold a dead run's
                # overrides on a reused namespace inode; every host starts from the global values
                cc.loader.clear(pids[hp.host])
                self._configured.append((hp, pids[hp.host]))
            if hp.args:
                cc.loader.set(hp.args, netns_pid=pids[hp.host])
            self.applied.append({"cc": hp.cc, "scope": "host", "host": hp.host, "args": hp.args})

    def start_events(self, flows: list[Any], pids: dict[str, int]) -> None:
        """Stream events of the run's sender sockets (matched by namespace and destination port)."""
        by_ino = {os.stat(f"/proc/{pids[h]}/ns/net").st_ino: h for h in {hp.host for hp in self.hosts}}
        by_socket = {(f.src, f.port): f.id for f in flows}
        for cc in self.ours():
            argv = cc.loader.events_argv()
            if argv is None:
                continue
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
            self.state.add_pid(proc.pid, f"cc events {cc.name}")
            self._streams.append(proc)

            def read(proc: subprocess.Popen[str] = proc) -> None:
                for line in proc.stdout:
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue
                    host = by_ino.get(event.get("netns_ino"))
                    flow = by_socket.get((host, event.get("dport")))
                    if flow is not None:
                        self.emit("event", {"t": event.pop("ts"), "flow": flow, "host": host, **event})

            thread = threading.Thread(target=read, name=f"cc-events-{cc.name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        if self._streams:
            time.sleep(EVENTS_READY_S)  # the ring buffers are being read before the first socket opens

    def schedule(self, spec: ExperimentSpec, t0: float, pids: dict[str, int]) -> None:
        def run() -> None:
            for change in sorted(spec.cc_changes, key=lambda c: c.at_s):
                if self._cancel.wait(max(0.0, t0 + change.at_s - time.monotonic())):
                    return
                self.registry.lookup(change.cc).loader.set(change.args, netns_pid=pids[change.host])
                self._configured.append((HostParams(change.host, change.cc, change.args), pids[change.host]))
                self.emit("event", {"t": time.monotonic(), "flow": None, "host": change.host, "algo": change.cc,
                                    "event": "cc_set", **change.args})
                self.applied.append({"cc": change.cc, "scope": "host", "host": change.host, "at_s": change.at_s,
                                     "args": change.args})

        if spec.cc_changes:
            thread = threading.Thread(target=run, name="cc-changes", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._cancel.set()
        for proc in self._streams:
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for thread in self._threads:
            thread.join(timeout=5)
        # Every step runs even when one fails: a failed override clear must not leave the
        # algorithm registered after the run. Failures are recorded, the first one raised.
        errors: list[str] = []
        owned = {cc.name for cc in self._owned}
        for hp, pid in self._configured:
            if hp.cc not in owned:  # a namespace inode may be reused: leave no override behind
                try:
                    self.registry.lookup(hp.cc).loader.clear(pid)
                except ToolError as exc:
                    errors.append(f"{hp.cc}: clearing {hp.host}'s parameters: {exc}")
        self._configured.clear()
        for cc in self._owned:
            try:
                self.applied.append({"cc": cc.name, "unload": cc.loader.unload()})
            except ToolError as exc:  # left in the run state: `fastlab cleanup` retries
                errors.append(f"{cc.name}: unload: {exc}")
                continue
            self.state.cc_loaded.remove(f"{cc.name}:{cc.loader.impl}")
            self.state.save()
        self._owned.clear()
        if errors:
            self.applied.append({"errors": errors})
            raise ToolError("; ".join(errors))
