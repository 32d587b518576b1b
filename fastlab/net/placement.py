"""CPU placement of a link's emulator and the receive threads it wakes.

Role: one decision, made when an emulator has started: whether it shares a CPU with the NAPI
kernel threads of the interfaces it sends into (fastlab.net.network gives those interfaces threaded
NAPI on the fast path and finds each thread as it is created), and which CPU. A release then
wakes a thread on its own CPU instead of interrupting the other one (an inter-processor
interrupt: a VM exit on this machine). linkemu runs SCHED_FIFO, so a woken thread runs when the
emulator sleeps, which it does most of the time at these rates.

Measured at 1 Gb/s x 80 ms (CUBIC, fast path, 30 s, runs interleaved): emulator 0.182-0.201 cores
per Gb/s with nothing pinned or only linkemu pinned (4 runs), 0.153-0.168 colocated (5 runs); the
machine's busy share 0.10-0.13 -> 0.08-0.09; lateness p99 unchanged (113-140 us).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from fastlab.net.runstate import TrackedPid, process_start_time

log = logging.getLogger(__name__)

# Links up to this rate (either direction) are colocated. Above it the emulator (~0.15 cores per
# Gb/s) and its receive threads (~0.05) would need too much of one CPU: the scheduler places them.
COLOCATE_MAX_BPS = 2_000_000_000
KTHREAD_NAME_CHARS = 15  # TASK_COMM_LEN - 1: a kernel thread's name is cut there


def napi_threads(proc: Path = Path("/proc")) -> dict[int, str]:
    """The machine's NAPI kernel threads: pid -> name (`napi/<dev>-<napi id>`, cut at 15 chars)."""
    found = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if comm.startswith("napi/"):
            found[int(entry.name)] = comm
    return found


def run_offset(prefix: str) -> int:
    """Where a run starts its turn over the CPUs (pure): its prefix's random letters as a number, so
    runs going at once (the web queue's) begin on different CPUs in turn instead of all on the last."""
    return int(prefix[2:], 36) if prefix[2:].isalnum() else 0


def pick_cpu(cpus: set[int], placed_before: int) -> int:
    """The CPU for the next colocated emulator (pure): from the last CPU down, in turn."""
    ordered = sorted(cpus)
    return ordered[-1 - placed_before % len(ordered)]


def colocate(link: str, emulator_pid: int, threads: list[TrackedPid], rate_bps: int,
             placed_before: int) -> dict[str, Any]:
    """Pin the emulator and its receive threads (each only if it is still the thread that was
    found) to one CPU; what was done, or why not, for environment.json."""
    if not threads:
        return {"cpu": None, "why": "no receive threads of its own found (fast path off, or ambiguous)"}
    if rate_bps == 0 or rate_bps > COLOCATE_MAX_BPS:
        return {"cpu": None, "why": f"faster than {COLOCATE_MAX_BPS / 1e9:g} Gb/s: the scheduler places them"}
    cpu = pick_cpu(os.sched_getaffinity(0), placed_before)
    pinned = []
    for pid, what in [(emulator_pid, "linkemu"),
                      *((t.pid, t.what) for t in threads if process_start_time(t.pid) == t.start)]:
        try:
            os.sched_setaffinity(pid, {cpu})
            pinned.append(what)
        except OSError as exc:
            log.warning("links.%s: %s stays where the scheduler puts it: %s", link, what, exc)
    return {"cpu": cpu, "pinned": pinned}
