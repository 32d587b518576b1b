"""Run ownership: the run prefix, the state file of what a run created, and cleanup.

Before a run creates anything it writes `/run/fastlab/<prefix>.json`, and it adds every process
(with its start time, so a recycled PID is never killed), root-namespace interface and bridge
to it as they are made. `cleanup` removes exactly those things for runs whose engine is gone,
plus root-namespace interfaces and OVS bridges whose names carry a fastlab run prefix. It never
looks for processes by name.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import string
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fastlab import paths

PREFIX_RE = re.compile(r"fl[0-9a-z]{4}")  # new_prefix()'s names; match() finds candidates, cleanup
# deletes only by a dead run's own prefix
ALPHABET = string.digits + string.ascii_lowercase


def new_prefix() -> str:
    return "fl" + "".join(secrets.choice(ALPHABET) for _ in range(4))


def process_start_time(pid: int) -> int | None:
    """Clock ticks since boot at which `pid` started (field 22 of /proc/PID/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def child_processes(parent: int) -> list[str]:
    """`pid comm state` of every process whose parent is `parent`, zombies included (what a long-lived
    process that runs experiments -- the web server -- must not accumulate)."""
    out = []
    # Not Path.glob: it stats each /proc/N/stat first, and a process that exits meanwhile makes that stat
    # raise ProcessLookupError out of the glob (CI with two CPU hogs, 2026-11-27, the 30-run server test).
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            text = Path("/proc", name, "stat").read_text()
        except OSError:
            continue  # gone meanwhile (ENOENT or ESRCH)
        try:
            pid, rest = text.split(" ", 1)
            comm, fields = rest.rsplit(")", 1)
            ppid = fields.split()[1]
        except (ValueError, IndexError):
            continue  # read while it was being torn down
        if ppid == str(parent):
            out.append(f"{pid} {comm.lstrip('(')} {fields.split()[0]}")
    return out


@dataclass
class TrackedPid:
    pid: int
    start: int
    what: str


@dataclass
class RunState:
    prefix: str
    results_dir: str = ""
    engine_pid: int = field(default_factory=os.getpid)
    engine_start: int | None = None
    pids: list[TrackedPid] = field(default_factory=list)
    bridges: list[dict[str, str]] = field(default_factory=list)
    intfs: list[str] = field(default_factory=list)
    cc_loaded: list[str] = field(default_factory=list)  # "name:impl" registered by this run
    hosts: dict[str, int] = field(default_factory=dict)  # host -> PID in its namespace
    cgroups: list[str] = field(default_factory=list)  # cgroup v2 directories made by this run

    def __post_init__(self) -> None:
        if self.engine_start is None:
            self.engine_start = process_start_time(self.engine_pid)

    @property
    def path(self) -> Path:
        return paths.STATE_DIR / f"{self.prefix}.json"

    def save(self) -> None:
        paths.STATE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1))
        tmp.replace(self.path)

    def add_pid(self, pid: int, what: str) -> None:
        start = process_start_time(pid)
        if start is not None:
            self.pids.append(TrackedPid(pid, start, what))
            self.save()

    def add_bridge(self, name: str, kind: str) -> None:
        self.bridges.append({"name": name, "kind": kind})
        self.save()

    def add_intf(self, name: str) -> None:
        self.intfs.append(name)
        self.save()

    def engine_alive(self) -> bool:
        return self.engine_start is not None and process_start_time(self.engine_pid) == self.engine_start

    def release(self) -> None:
        self.path.unlink(missing_ok=True)

    @classmethod
    def load(cls, path: Path) -> RunState:
        data = json.loads(path.read_text())
        data["pids"] = [TrackedPid(**p) for p in data.get("pids", [])]
        return cls(**data)


def kill_tracked(pids: list[TrackedPid], grace_s: float = 2.0) -> list[str]:
    """SIGTERM, then SIGKILL, the tracked processes that are still the same processes."""
    done = []
    alive = [p for p in pids if process_start_time(p.pid) == p.start]
    for p in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(process_start_time(p.pid) == p.start for p in alive):
        time.sleep(0.05)
    for p in alive:
        if process_start_time(p.pid) == p.start:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGKILL)
        done.append(f"process {p.pid} ({p.what})")
    return done


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)


def prefixed_root_objects() -> tuple[list[str], list[str]]:
    """Root-namespace interfaces and OVS bridges whose names carry a fastlab run prefix."""
    links = _run(["ip", "-o", "link", "show"]).stdout.splitlines()
    intfs = sorted({line.split(":")[1].strip().split("@")[0] for line in links
                    if len(line.split(":")) > 1 and PREFIX_RE.match(line.split(":")[1].strip())})
    bridges = []
    if _run(["which", "ovs-vsctl"]).returncode == 0:
        out = _run(["ovs-vsctl", "--timeout=5", "list-br"])
        if out.returncode == 0:
            bridges = [b for b in out.stdout.split() if PREFIX_RE.match(b)]
    return intfs, bridges


def remove_root_objects(intfs: list[str], bridges: list[str]) -> list[str]:
    removed = []
    for bridge in bridges:
        if _run(["ovs-vsctl", "--timeout=5", "--if-exists", "del-br", bridge]).returncode == 0:
            removed.append(f"ovs bridge {bridge}")
    for intf in intfs:
        if _run(["ip", "link", "del", intf]).returncode == 0:
            removed.append(f"interface {intf}")
    return removed


KEPT = "kept: "  # marks a cleanup item that could not be removed


def unload_ccs(entries: list[str]) -> tuple[list[str], list[str]]:
    """Unregister congestion controls a dead run had loaded (in use: gone once its sockets are).
    Returns what was removed and the entries that could not be (kept for the next cleanup)."""
    from fastlab.ccset import LOADERS, ToolError

    removed, kept = [], []
    for entry in entries:
        name, impl = entry.split(":")
        loader = LOADERS[impl](name)
        if not loader.registered():  # recorded, then killed before it was registered: nothing to undo
            removed.append(f"congestion control {name} (was not registered)")
            continue
        try:
            removed.append(f"congestion control {name} ({loader.unload()})")
        except ToolError as exc:
            removed.append(f"{KEPT}congestion control {name} stays registered, the run state keeps it for the "
                           f"next cleanup: {exc}")
            kept.append(entry)
    return removed, kept


RMDIR_WAIT_S = 5.0  # processes leave a cgroup as they exit; the kernel frees them a moment later


def remove_cgroup(path: Path, wait_s: float = RMDIR_WAIT_S) -> str | None:
    """rmdir a run's cgroup, waiting for its last processes to leave; None when gone, else why not."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            path.rmdir()
            return None
        except FileNotFoundError:
            return None
        except OSError as exc:
            if time.monotonic() >= deadline:
                return f"cannot remove cgroup {path}: {exc.strerror}"
            time.sleep(0.1)


def cleanup(include_live: bool = False) -> list[str]:
    """Remove what dead fastlab runs left behind; returns what was removed.

    Only what a dead run's state file recorded, or what carries that run's own prefix, is touched:
    never everything that merely looks like a fastlab name (e.g. Kubernetes' `flannel.1`)."""
    removed: list[str] = []
    dead_prefixes = set()
    if paths.STATE_DIR.is_dir():
        for path in sorted(paths.STATE_DIR.glob("fl*.json")):
            try:
                state = RunState.load(path)
                if not PREFIX_RE.fullmatch(state.prefix) or path.stem != state.prefix:
                    raise ValueError(f"prefix {state.prefix!r}")
            except (OSError, ValueError, TypeError):
                path.unlink(missing_ok=True)
                removed.append(f"unreadable state file {path.name}")
                continue
            if state.engine_alive() and not include_live:
                continue
            dead_prefixes.add(state.prefix)
            removed += kill_tracked(state.pids)
            removed += remove_root_objects([i for i in state.intfs if i.startswith(state.prefix)],
                                           [b["name"] for b in state.bridges
                                            if b["kind"].startswith("ovs") and b["name"].startswith(state.prefix)])
            kept_cgroups = []
            for cg in state.cgroups:
                if Path(cg).name != f"fastlab-{state.prefix}":  # only the name this run gives its cgroup
                    continue
                if remove_cgroup(Path(cg), wait_s=1.0) is None:
                    removed.append(f"cgroup {cg}")
                else:
                    kept_cgroups.append(cg)
            state.cgroups = kept_cgroups
            unloaded, state.cc_loaded = unload_ccs(state.cc_loaded)
            removed += unloaded
            if state.cc_loaded or state.cgroups:
                state.pids, state.intfs, state.bridges = [], [], []
                state.save()
                continue
            state.release()
            removed.append(f"state of run {state.prefix}")
    if dead_prefixes:  # what a dead run made but had not recorded yet carries its prefix
        intfs, bridges = prefixed_root_objects()
        removed += remove_root_objects([i for i in intfs if i[:6] in dead_prefixes],
                                       [b for b in bridges if b[:6] in dead_prefixes])
    return removed
