"""A run's congestion controls: load what the spec needs, set per-host parameters, stream the
algorithms' internal-state events, apply scheduled changes, and unload what the run loaded.

Parameters are per network namespace (one per Mininet host), so two hosts in one run can use
different alpha; keys the algorithm only has globally (HSTCP's table) are set globally. Events
are kept when they come from a sender socket of this run (its namespace and flow port), and go
onto the sample bus with the flow they belong to.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastlab.base.supervised import Supervised, stop_all
from fastlab.define.cc import CCError, CongestionControl, Registry
from fastlab.define.ccset import GLOBAL_ONLY
from fastlab.define.schema import ExperimentSpec
from fastlab.net.runstate import RunState, cc_acquire, cc_holders_elsewhere, cc_release
from fastlab.plan.flows import HostParams
from fastlab.run.ccload import ModuleLoader, ToolError

EVENTS_READY_S = 5.0  # bound on a reader's first line (it puts its ring in place within milliseconds)
EVENTS_POLL_S = 0.05  # how often the wait for it looks whether the reader exited instead
STREAM_STOP_GRACE_S = 5.0  # an event stream takes its ring out, detaches and exits on SIGTERM


@dataclass
class EventReader:
    """A run's `fastlab-cc events` of one algorithm. Each run has its own, reading its own ring buffer,
    which the BPF program fills with the events of the run's namespaces only (kernel-modules/bpf/
    fastlab_bpf.h, "Per-reader rings"): a ring buffer is consumed by whoever reads it, and with one
    ring shared by every reader, lab 02 run 4 at a time as separate processes kept 99 and 58 FAST
    updates of 241 and 148, its checkpoints reading "n/a" on faithful runs. The reader's first line
    says which ring it reads (`own`, or `shared` when the algorithm was registered by a fastlab-cc
    without per-reader rings); an event of a sender socket of the run (its namespace and flow port)
    goes to `emit` with its flow; `foreign` counts events of other namespaces it was handed."""

    cc: CongestionControl
    by_ino: dict[int, str]  # the run's namespace inodes -> host
    by_socket: dict[tuple[str, int], str]  # (sending host, destination port) -> flow
    emit: Callable[[str, dict[str, Any]], None]
    record: dict[str, Any]  # its entry in the run's `applied` list, completed as it goes
    proc: Supervised | None = None
    ready: threading.Event = field(default_factory=threading.Event)
    foreign: int = 0

    def start(self, argv: list[str], state: RunState) -> None:
        self.proc = Supervised.start(f"cc events {self.cc.name}", argv, state=state, on_message=self.on_line)

    def on_line(self, event: dict[str, Any]) -> None:
        if event.get("cmd") == "events":  # its first line
            self._ring(event.get("ring"))
            self.ready.set()
            return
        host = self.by_ino.get(event.get("netns_ino", 0))
        if host is None:
            self.foreign += 1
            return
        flow = self.by_socket.get((host, event.get("dport", 0)))
        if flow is not None:
            self.emit("event", {"t": event.pop("ts"), "flow": flow, "host": host, **event})

    def _ring(self, ring: Any) -> None:
        """Record which ring it reads: its own, or the one every reader shares (then name the runs of
        other processes holding the algorithm: each would take some of the other's events)."""
        if ring == "own":
            self.record["events"] = "own ring"
            return
        self.record["events"] = "shared ring (registered by a fastlab-cc without per-reader rings)"
        others = cc_holders_elsewhere(f"{self.cc.name}:{self.cc.build.impl}", os.getpid())
        if others:
            self.record["other_processes"] = others

    def wait_ready(self, timeout_s: float) -> None:
        """Wait for the first line (its ring is in place: events from now on are kept), bounded; if it
        does not come, say why in the record."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout_s
        while not self.ready.wait(EVENTS_POLL_S):
            if not self.proc.running():
                self.proc.join_reader(EVENTS_POLL_S)  # what it printed before it exited
                if not self.ready.is_set():
                    self.record["events"] = f"reader exited ({self.proc.returncode}): {self.proc.stderr_text()}"
                return
            if time.monotonic() > deadline:
                self.record["events"] = f"reader not ready after {timeout_s:g} s"
                return


@dataclass
class CCRuntime:
    registry: Registry
    state: RunState
    emit: Callable[[str, dict[str, Any]], None]
    hosts: list[HostParams]
    global_args: dict[str, dict[str, Any]]
    applied: list[dict[str, Any]] = field(default_factory=list)
    _readers: list[EventReader] = field(default_factory=list)
    _threads: list[threading.Thread] = field(default_factory=list)
    _cancel: threading.Event = field(default_factory=threading.Event)
    _held: list[CongestionControl] = field(default_factory=list)  # a reference taken (fastlab.net.runstate)
    _owned: list[CongestionControl] = field(default_factory=list)  # registered by this run's reference
    _configured: list[tuple[HostParams, int]] = field(default_factory=list)
    _apply_lock: threading.Lock = field(default_factory=threading.Lock)
    # Module parameters found before this run set them, put back at the end when the module stays
    # loaded (an unload resets them anyway): the next user of the module gets what it had.
    _restore: dict[str, dict[str, str]] = field(default_factory=dict)

    def ours(self) -> list[CongestionControl]:
        return [self.registry.lookup(n) for n in sorted({h.cc for h in self.hosts})]

    def load(self) -> None:
        """Take the run's reference on each of its algorithms (fastlab.net.runstate: registered by the first
        run that needs it, unregistered by the last one to finish), then set the global parameters."""
        self.state.cc_refcounted = True
        for cc in self.ours():
            entry = f"{cc.name}:{cc.build.impl}"
            # Recorded before the reference is taken: a kill between the two (measured: the web server's
            # kill -9 test at 0.26 s) must not leave a reference no run state names. Releasing a
            # reference that was never taken finds none and passes.
            self.state.cc_loaded.append(entry)
            self.state.save()
            self._held.append(cc)  # before: stop() releases even a reference whose registration failed
            loaded = cc_acquire(entry, self.state.prefix, cc.build)
            if loaded:
                self._owned.append(cc)
            self.applied.append({"cc": cc.name, "impl": cc.build.impl, "loaded_by_run": loaded,
                                 "available": cc.build.available()[1]})
            if self.global_args.get(cc.name):
                self._remember(cc, self.global_args[cc.name])
                cc.build.set(self.global_args[cc.name])
                self.applied.append({"cc": cc.name, "scope": "global", "args": self.global_args[cc.name]})

    def configure(self, pids: dict[str, int]) -> None:
        owned = {cc.name for cc in self._owned}
        for hp in self.hosts:
            cc = self.registry.lookup(hp.cc)
            if cc.build.impl == "module":  # its parameters were set globally in load()
                self.applied.append({"cc": hp.cc, "scope": "host", "host": hp.host, "args": {},
                                     "note": "module build: the run's global values apply"})
                continue
            if hp.cc not in owned:  # registered before this run: its map may hold a dead run's
                # overrides on a reused namespace inode; every host starts from the global values
                cc.build.clear(pids[hp.host])
            # cleared at the end too: another run may keep the algorithm registered after this one
            self._configured.append((hp, pids[hp.host]))
            if hp.args:
                cc.build.set(hp.args, netns_pid=pids[hp.host])
            self.applied.append({"cc": hp.cc, "scope": "host", "host": hp.host, "args": hp.args})

    def start_events(self, flows: list[Any], pids: dict[str, int]) -> None:
        """Start each algorithm's EventReader of the run's namespaces, and wait until they read (the
        first socket opens after)."""
        by_ino = {os.stat(f"/proc/{pids[h]}/ns/net").st_ino: h for h in {hp.host for hp in self.hosts}}
        by_socket = {(f.src, f.port): f.id for f in flows}
        for cc in self.ours():
            argv = cc.build.events_argv(sorted(by_ino))
            if argv is None:  # the module build has no events
                continue
            record: dict[str, Any] = {"cc": cc.name, "events": "reader starting"}
            self.applied.append(record)
            reader = EventReader(cc, by_ino, by_socket, self.emit, record)
            self._readers.append(reader)  # before it starts: stop() stops what started
            reader.start(argv, self.state)
        for reader in self._readers:
            reader.wait_ready(EVENTS_READY_S)

    def apply(self, host: str, cc: str, args: dict[str, Any], pid: int, at_s: float, live: bool = False) -> None:
        """Set `cc`'s parameters of one host now (a scheduled change, or one asked for while the run
        goes), record it for the environment and clearing, and put a `cc_set` event on the bus."""
        with self._apply_lock:
            algo = self.registry.lookup(cc)
            if algo.build.impl == "module":  # one value for the whole kernel: only when one host uses it
                sharing = sorted({hp.host for hp in self.hosts if hp.cc == cc})
                if sharing != [host]:
                    raise ToolError(f"the module build's parameters are global and {', '.join(sharing)} "
                                    f"all run {cc}")
                self._remember(algo, args)
                algo.build.set(args)
            else:
                algo.build.set(args, netns_pid=pid)
                self._configured.append((HostParams(host, cc, args), pid))
            self.emit("event", {"t": time.monotonic(), "flow": None, "host": host, "algo": cc,
                                "event": "cc_set", **args})
            self.applied.append({"cc": cc, "scope": "global" if algo.build.impl == "module" else "host",
                                 "host": host, "at_s": round(at_s, 3), "args": args,
                                 **({"live": True} if live else {})})

    def _remember(self, cc: CongestionControl, args: dict[str, Any]) -> None:
        """Note a module's parameter values before the run first changes them (module build only)."""
        loader = cc.build
        if not isinstance(loader, ModuleLoader) or cc in self._owned:
            return
        kept = self._restore.setdefault(cc.name, {})
        for key, value in loader.get(list(args)).items():
            kept.setdefault(key, value)

    def schedule(self, spec: ExperimentSpec, t0: float, pids: dict[str, int]) -> None:
        def run() -> None:
            for change in sorted(spec.cc_changes, key=lambda c: c.at_s):
                if self._cancel.wait(max(0.0, t0 + change.at_s - time.monotonic())):
                    return
                self.apply(change.host, change.cc, change.args, pids[change.host], change.at_s)

        if spec.cc_changes:
            thread = threading.Thread(target=run, name="cc-changes", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._cancel.set()
        stop_all([r.proc for r in self._readers if r.proc is not None], STREAM_STOP_GRACE_S)
        for r in self._readers:
            r.record["foreign_events"] = r.foreign
        self._readers.clear()
        for thread in self._threads:
            thread.join(timeout=5)
        # Every step runs even when one fails: a failed override clear must not leave the
        # algorithm registered after the run. Failures are recorded, the first one raised.
        errors: list[str] = []
        for hp, pid in self._configured:  # a namespace inode may be reused: leave no override behind
            try:
                self.registry.lookup(hp.cc).build.clear(pid)
            except ToolError as exc:
                errors.append(f"{hp.cc}: clearing {hp.host}'s parameters: {exc}")
        self._configured.clear()
        for name, values in self._restore.items():
            loader = self.registry.lookup(name).build
            try:
                assert isinstance(loader, ModuleLoader)  # _remember keeps only a module's values
                loader.write(values)
                self.applied.append({"cc": name, "scope": "global", "restored": values})
            except ToolError as exc:
                errors.append(f"{name}: restoring its module parameters {values}: {exc}")
        self._restore.clear()
        for cc in self._held:
            entry = f"{cc.name}:{cc.build.impl}"
            try:
                released = cc_release(entry, self.state.prefix, cc.build)
            except ToolError as exc:  # left in the run state: `fastlab cleanup` retries
                errors.append(f"{cc.name}: unload: {exc}")
                continue
            if released.status is not None:
                self.applied.append({"cc": cc.name, "unload": released.status})
            elif released.others:  # the last of them unregisters it
                self.applied.append({"cc": cc.name, "unload": None, "still_used_by": released.others})
            self.state.cc_loaded.remove(entry)
            self.state.save()
        self._held.clear()
        self._owned.clear()
        if errors:
            self.applied.append({"errors": errors})
            raise ToolError("; ".join(errors))


def per_host_args(cc: CongestionControl, args: dict[str, Any]) -> dict[str, Any]:
    """`args` checked as a spec's cc_args, and settable for one host (namespace): keys the algorithm
    only has globally (HSTCP's table) are refused. Used by `fastlab cc set --host` and LiveControl."""
    checked = cc.validate_args(args)
    glob = set(checked) & GLOBAL_ONLY[cc.name]
    if glob:
        raise CCError(f"{', '.join(sorted(glob))} of {cc.name} are global for the run, not per host")
    return checked


class LiveControlError(RuntimeError):
    """A live change the run cannot take, said in one line (nothing was changed)."""


class LiveControlBusy(LiveControlError):
    """A live change refused for the rate of changes, not for what it asks: try again later."""


# Live changes a run takes: each is a fastlab-cc process and an entry in environment.json, so a
# client cannot make them unbounded (issue 37: 256 changes in 0.92 s, 311 entries in 14 s). A person
# moving a slider sends a few a second; a lab changes alpha a handful of times a run.
LIVE_CHANGES_PER_S = 5
LIVE_CHANGES_MAX = 200


class LiveControl:
    """What a front end holds to change a running run's algorithm parameters now (the web app's
    live page): the engine binds it to the run's CCRuntime while the flows run and unbinds it before
    teardown; outside that window, and for a host or key the run cannot take, `set` refuses. A
    change is validated like a spec's cc_args, applied per host (namespace) and recorded exactly as a
    scheduled `cc_changes` entry is (a `cc_set` event, the environment's applied list, marked live)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runtime: CCRuntime | None = None
        self._pids: dict[str, int] = {}
        self._t0 = 0.0
        self._changes: list[float] = []  # monotonic times of the run's live changes

    def bind(self, runtime: CCRuntime, pids: dict[str, int], t0: float) -> None:
        with self._lock:
            self._runtime, self._pids, self._t0 = runtime, dict(pids), t0
            self._changes = []

    def _admit(self, now: float) -> None:
        """Refuse a change past LIVE_CHANGES_PER_S in the last second or LIVE_CHANGES_MAX in the run."""
        if len(self._changes) >= LIVE_CHANGES_MAX:
            raise LiveControlBusy(f"this run has taken its {LIVE_CHANGES_MAX} live changes")
        if sum(1 for t in self._changes if now - t < 1.0) >= LIVE_CHANGES_PER_S:
            raise LiveControlBusy(f"at most {LIVE_CHANGES_PER_S} live changes a second: try again in a moment")

    def unbind(self) -> None:
        with self._lock:
            self._runtime = None

    def applied(self) -> list[dict[str, Any]]:
        """What the bound run has applied so far (scheduled and live changes, as environment.json will
        list them); [] when no run is bound."""
        with self._lock:
            return list(self._runtime.applied) if self._runtime is not None else []

    def set(self, host: str, cc: str, args: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            runtime = self._runtime
            if runtime is None:
                raise LiveControlError("the run is not sending (it starts, ends or has ended): nothing to change")
            offered = {hp.cc for hp in runtime.hosts if hp.host == host}
            if not offered:
                names = ", ".join(sorted({hp.host for hp in runtime.hosts})) or "none"
                raise LiveControlError(f"host: {host!r} runs none of fastlab's algorithms in this run (hosts: {names})")
            if cc not in offered:
                raise LiveControlError(f"cc: {host} runs {', '.join(sorted(offered))}, not {cc!r}")
            if not isinstance(args, dict) or not args:
                raise LiveControlError("args: give at least one parameter, e.g. {\"alpha\": 60}")
            try:
                checked = per_host_args(runtime.registry.lookup(cc), args)
            except CCError as exc:
                raise LiveControlError(f"args: {exc}") from None
            now = time.monotonic()
            self._admit(now)
            at_s = now - self._t0
            self._changes.append(now)
            try:
                runtime.apply(host, cc, checked, self._pids[host], at_s, live=True)
            except ToolError as exc:
                raise LiveControlError(f"{cc}: {exc}") from None
            return {"host": host, "cc": cc, "args": checked, "at_s": round(at_s, 3)}
