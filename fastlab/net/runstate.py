"""Run ownership: the run prefix, the state file of what a run created, cleanup, and the references
runs hold on a shared congestion control (the last one out unregisters it).

Before a run creates anything it writes `/run/fastlab/<prefix>.json`, and it adds every process
(with its start time, so a recycled PID is never killed), root-namespace interface and bridge
to it as they are made. `cleanup` removes exactly those things for runs whose engine is gone,
plus root-namespace interfaces and OVS bridges whose names carry a fastlab run prefix. It never
looks for processes by name.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import signal
import string
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

from fastlab.base import paths
from fastlab.define.cc import BuildError

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
    cc_loaded: list[str] = field(default_factory=list)  # "name:impl": a reference this run holds
    # (cc_acquire below); False in a state written before references were counted, whose cc_loaded
    # names what the run itself registered
    cc_refcounted: bool = False
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


def live_runs(exclude: str = "") -> list[RunState]:
    """The runs whose engine is alive now, by their state files (any process: the web app's, a CLI
    run, another checkout's), except `exclude`: a run's neighbours on the machine."""
    found = []
    if paths.STATE_DIR.is_dir():
        for path in sorted(paths.STATE_DIR.glob("fl*.json")):
            try:
                state = RunState.load(path)
            except (OSError, ValueError, TypeError):
                continue  # being written, or not a state file: cleanup's to judge
            if state.prefix != exclude and state.engine_alive():
                found.append(state)
    return found


NEIGHBOURS_EVERY_S = 1.0  # how often a run looks for other runs (a glob and a few small reads: ~1 ms)


@dataclass
class Neighbours:
    """The other runs alive while a run's flows go (live_runs: any process's), each with when, in seconds
    of the flows, it was first and last seen; `look` at most every NEIGHBOURS_EVERY_S unless forced."""

    prefix: str
    seen: dict[str, dict[str, object]] = field(default_factory=dict)
    _next: float = 0.0

    def look(self, t: float, force: bool = False) -> None:
        if not force and t < self._next:
            return
        self._next = t + NEIGHBOURS_EVERY_S
        for other in live_runs(exclude=self.prefix):
            entry = self.seen.setdefault(other.prefix, {"prefix": other.prefix, "run": Path(other.results_dir).name,
                                                        "first_s": round(t, 1)})
            entry["last_s"] = round(t, 1)


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


CCLoaderOf = Callable[[str, str], "CCLoader"]  # (name, impl) -> its loader: fastlab.run.ccload.loader


def unload_ccs(entries: list[str], cc_loader: CCLoaderOf) -> tuple[list[str], list[str]]:
    """Unregister congestion controls a dead run had loaded (in use: gone once its sockets are).
    Returns what was removed and the entries that could not be (kept for the next cleanup)."""
    removed, kept = [], []
    for entry in entries:
        name, impl = entry.split(":")
        loader = cc_loader(name, impl)
        if not loader.registered():  # recorded, then killed before it was registered: nothing to undo
            removed.append(f"congestion control {name} (was not registered)")
            continue
        try:
            removed.append(f"congestion control {name} ({loader.unload()})")
        except BuildError as exc:
            removed.append(f"{KEPT}congestion control {name} stays registered, the run state keeps it for the "
                           f"next cleanup: {exc}")
            kept.append(entry)
    return removed, kept


def release_ccs(prefix: str, entries: list[str], cc_loader: CCLoaderOf) -> tuple[list[str], list[str]]:
    """Leave a dead run's references (cc_release): the algorithm is unregistered when it was the
    last holder of a registration fastlab made. Returns what was done and the entries kept (an unload
    that failed: the next cleanup retries it)."""
    done, kept = [], []
    for entry in entries:
        name, impl = entry.split(":")
        try:
            released = cc_release(entry, prefix, cc_loader(name, impl))
        except BuildError as exc:
            done.append(f"{KEPT}congestion control {name} stays registered, the run state keeps it for the "
                        f"next cleanup: {exc}")
            kept.append(entry)
            continue
        if released.status is not None:
            done.append(f"congestion control {name} ({released.status})")
        elif released.others:
            done.append(f"reference of run {prefix} on congestion control {name} (still used by "
                        f"{', '.join(released.others)})")
    return done, kept


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


def cleanup(include_live: bool = False, *, cc_loader: CCLoaderOf) -> list[str]:
    """Remove what dead fastlab runs left behind; returns what was removed. `cc_loader` gives the loader
    of an algorithm a dead run registered (the run stage's: `fastlab.run.ccload.cleanup` is the whole
    `fastlab cleanup`).

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
            unloaded, state.cc_loaded = (release_ccs(state.prefix, state.cc_loaded, cc_loader)
                                         if state.cc_refcounted else unload_ccs(state.cc_loaded, cc_loader))
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

# --- Shared congestion-control references -------------------------------------------------------
# One answer to "may this run unregister FAST now?" when several runs use it at once -- threads
# of one web app, its worker processes, a CLI run beside it. Each run that uses an algorithm holds a
# reference: a file `<STATE_DIR>/cc/<name>.<impl>/<prefix>.json` naming its engine (PID and start
# time, the test of a live process above). The first holder that finds the algorithm
# unregistered registers it and leaves an `owner` marker (fastlab registered it, so fastlab
# unregisters it); the last holder to leave unregisters it if the marker is there. An algorithm that
# was registered before any run (by hand, `fastlab cc load`) has no marker and stays.
#
# Every step runs under one flock on `<STATE_DIR>/cc.lock`, which the kernel drops when a holder dies,
# so a killed run never leaves the lock held. A killed run's reference is reclaimed: holders whose
# engine is gone are dropped whenever anyone takes or leaves a reference, and `fastlab cleanup`
# releases a dead run's references through `release_ccs` (the run state lists them, recorded before the
# reference is taken). The marker is written before the registration is asked for, so a kill between
# the two leaves a marker over an unregistered algorithm, which the last holder finds unregistered
# and simply forgets.
#
# The decisions are separate from the loader that carries them out (`CCLoader`: registered / load /
# unload), so the counting is tested on real files and real processes without touching the kernel.

CC_OWNER = "owner"  # marker: fastlab registered it, the last holder unregisters it


class CCLoader(Protocol):
    """What this module needs of a build of an algorithm (fastlab.define.cc.Loader's registration part)."""

    def registered(self) -> bool: ...

    def load(self) -> bool: ...

    def unload(self) -> str: ...


@dataclass(frozen=True)
class CCHolder:
    """A run holding a reference: its prefix and engine (PID and start time in clock ticks)."""

    prefix: str
    pid: int
    start: int | None

    def alive(self) -> bool:
        return self.start is not None and process_start_time(self.pid) == self.start


@dataclass(frozen=True)
class CCReleased:
    """What leaving a reference did: `status` is the loader's unload status when this was the last
    holder of a registration fastlab made, else None; `others` are the live holders left."""

    status: str | None
    others: list[str]
    reclaimed: list[str]  # dead runs' references dropped on the way


def cc_root() -> Path:
    return paths.STATE_DIR / "cc"


def cc_entry_dir(entry: str) -> Path:
    """`fast:bpf` -> <STATE_DIR>/cc/fast.bpf (the run state's name:impl form)."""
    name, impl = entry.split(":")
    return cc_root() / f"{name}.{impl}"


@contextlib.contextmanager
def cc_locked() -> Iterator[None]:
    """The machine-wide lock of every reference change (dropped by the kernel if its holder dies)."""
    paths.STATE_DIR.mkdir(parents=True, exist_ok=True)
    fd = os.open(paths.STATE_DIR / "cc.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the flock


def _cc_holders(directory: Path) -> list[tuple[Path, CCHolder | None]]:
    """Every reference file with what it says (None: unreadable, counted as dead)."""
    out: list[tuple[Path, CCHolder | None]] = []
    if not directory.is_dir():
        return out
    for path in sorted(directory.glob("fl*.json")):
        try:
            data = json.loads(path.read_text())
            holder = CCHolder(str(data["prefix"]), int(data["pid"]), data["start"])
            if not PREFIX_RE.fullmatch(holder.prefix) or not isinstance(holder.start, int | None):
                raise ValueError(holder.prefix)
        except (OSError, ValueError, KeyError, TypeError):
            holder = None
        out.append((path, holder))
    return out


def _cc_prune(directory: Path) -> tuple[list[str], list[str]]:
    """Drop dead holders' files; (live prefixes, reclaimed prefixes or file names)."""
    live, reclaimed = [], []
    for path, holder in _cc_holders(directory):
        if holder is not None and holder.alive():
            live.append(holder.prefix)
        else:
            path.unlink(missing_ok=True)
            reclaimed.append(holder.prefix if holder is not None else path.name)
    return live, reclaimed


def cc_holders(entry: str) -> list[str]:
    """Prefixes of the live runs holding `entry` now (dead ones are left for the next change)."""
    with cc_locked():
        return [h.prefix for _p, h in _cc_holders(cc_entry_dir(entry)) if h is not None and h.alive()]


def cc_holders_elsewhere(entry: str, pid: int) -> list[str]:
    """Prefixes of the live runs holding `entry` whose engine is another process than `pid`."""
    with cc_locked():
        return sorted(h.prefix for _p, h in _cc_holders(cc_entry_dir(entry))
                      if h is not None and h.pid != pid and h.alive())


def cc_acquire(entry: str, prefix: str, loader: CCLoader, pid: int | None = None) -> bool:
    """Take a reference on `entry` for run `prefix` (engine `pid`, this process by default) and register
    the algorithm if nobody has; True when this call registered it."""
    pid = os.getpid() if pid is None else pid
    directory = cc_entry_dir(entry)
    with cc_locked():
        directory.mkdir(parents=True, exist_ok=True)
        _cc_prune(directory)
        ref = directory / f"{prefix}.json"
        ref.write_text(json.dumps({"prefix": prefix, "pid": pid, "start": process_start_time(pid)}))
        if loader.registered():
            return False
        (directory / CC_OWNER).write_text(prefix)  # before the registration: see the module's docstring
        try:
            registered = loader.load()
        except BaseException:
            if not loader.registered():
                (directory / CC_OWNER).unlink(missing_ok=True)
            raise
        if not registered:  # registered by something outside fastlab's references meanwhile: not ours
            (directory / CC_OWNER).unlink(missing_ok=True)
        return registered


def cc_release(entry: str, prefix: str, loader: CCLoader) -> CCReleased:
    """Leave run `prefix`'s reference on `entry`; the last holder unregisters what fastlab registered.
    A failed unload raises the loader's error with the marker kept, so a later release retries it."""
    directory = cc_entry_dir(entry)
    with cc_locked():
        (directory / f"{prefix}.json").unlink(missing_ok=True)
        live, reclaimed = _cc_prune(directory)
        if live:
            return CCReleased(None, live, reclaimed)
        status = None
        if (directory / CC_OWNER).exists():
            status = loader.unload() if loader.registered() else "was not registered"
            (directory / CC_OWNER).unlink()
        with contextlib.suppress(OSError):  # not empty: a file someone else put there stays
            directory.rmdir()
        return CCReleased(status, [], reclaimed)
