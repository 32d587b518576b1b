"""Interference beside a run, for bench/verdict.py (the verdict's error rates) and by hand: what each kind
starts, tracked by PID and stopped by PID, bounded in time.

Kinds: `cpu` (one busy loop at normal priority); `fifo10`/`fifo30`/`fifo50` (one SCHED_FIFO loop at priority 50
-- above the emulators' 10 -- busy that share of every 100 ms); `membw` (copies between two 128 MB buffers:
memory bandwidth); `softirq` (UDP floods of 64-byte datagrams, iperf3 bounded by -t, over a veth pair between two
namespaces this module creates and removes itself, unrelated to any run); `cgroup` (a run's emulators, the PIDs
its run state tracks as linkemu, moved into a cgroup of this module's own whose CPU is capped at 30 % of one CPU:
cgroup v1's cpu.cfs_quota_us and, as they run SCHED_FIFO, cpu.rt_runtime_us -- this machine mounts the cpu
controller as v1, where v2 calls it cpu.max).

By hand, as root: `.venv/bin/python bench/hogs.py KIND --seconds N` starts KIND for N seconds, then stops it
(for `cgroup`, give `--run-dir` of a run in progress).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fastlab.base import paths  # noqa: E402

KINDS = ("cpu", "fifo10", "fifo30", "fifo50", "membw", "softirq", "cgroup")
HOG_STOP_S = 5.0
FIFO_PRIORITY = 50  # above linkemu's SCHED_FIFO 10: the hog takes the CPU from the emulator too
FIFO_PERIOD_S = 0.1
CGROUP_CPU_SHARE = 0.30  # of one CPU
CGROUP_PERIOD_US = 100_000
MEMBW_BYTES = 128 << 20
FLOOD_PAYLOAD_BYTES = 64


@dataclass
class Interference:
    """What a kind starts beside a run: its processes (tracked by PID) and what else it made."""

    kind: str
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    netns: list[str] = field(default_factory=list)
    cgroup: list[Path] = field(default_factory=list)

    def start(self, seconds: float) -> None:
        me = [sys.executable, str(Path(__file__).resolve())]  # this file's --hog
        bound = f"{seconds:.0f}"
        if self.kind == "cpu":
            self._spawn([*me, "--hog", "spin", "--seconds", bound])
        elif self.kind.startswith("fifo"):
            duty = int(self.kind[4:]) / 100
            self._spawn([*me, "--hog", "fifo", "--duty", str(duty), "--seconds", bound])
        elif self.kind == "membw":
            self._spawn([*me, "--hog", "membw", "--seconds", bound])
        elif self.kind == "softirq":
            self._flood(seconds)

    def _spawn(self, argv: list[str]) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc

    def _flood(self, seconds: float) -> None:
        """Two namespaces of the bench's own joined by a veth pair, and UDP floods of small datagrams from
        one to the other (iperf3, bounded by -t): softirq work unrelated to the run."""
        tag = f"vb{os.getpid() % 100000}"
        a, b = f"{tag}a", f"{tag}b"
        for ns in (a, b):
            subprocess.run(["ip", "netns", "add", ns], check=True)
            self.netns.append(ns)
        subprocess.run(["ip", "link", "add", f"{tag}x", "netns", a, "type", "veth", "peer", "name", f"{tag}y",
                        "netns", b], check=True)
        for ns, intf, ip in ((a, f"{tag}x", "10.253.0.1/30"), (b, f"{tag}y", "10.253.0.2/30")):
            subprocess.run(["ip", "-n", ns, "addr", "add", ip, "dev", intf], check=True)
            subprocess.run(["ip", "-n", ns, "link", "set", intf, "up"], check=True)
            subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        self._spawn(["ip", "netns", "exec", b, "iperf3", "-s", "-B", "10.253.0.2", "-1"])
        time.sleep(0.5)
        self._spawn(["ip", "netns", "exec", a, "iperf3", "-c", "10.253.0.2", "-u", "-b", "0",
                     "-l", str(FLOOD_PAYLOAD_BYTES), "-t", f"{seconds:.0f}"])

    def throttle(self, out_dir: Path) -> None:
        """cgroup: move the run's emulators (the PIDs its run state tracks as linkemu) into a cgroup of the
        bench's own capped at CGROUP_CPU_SHARE of one CPU, once they exist."""
        if self.kind != "cgroup":
            return
        if not self.cgroup:
            group = Path("/sys/fs/cgroup/cpu") / f"fastlab-verdict-bench-{os.getpid()}"
            group.mkdir()
            self.cgroup.append(group)
            quota = int(CGROUP_CPU_SHARE * CGROUP_PERIOD_US)
            # CFS's quota caps normal tasks; the emulators run SCHED_FIFO, which only the RT runtime caps
            (group / "cpu.cfs_period_us").write_text(str(CGROUP_PERIOD_US))
            (group / "cpu.cfs_quota_us").write_text(str(quota))
            (group / "cpu.rt_period_us").write_text(str(CGROUP_PERIOD_US))
            (group / "cpu.rt_runtime_us").write_text(str(quota))
        for pid in emulator_pids(out_dir):
            with contextlib.suppress(OSError):  # gone, or moved already
                (self.cgroup[0] / "cgroup.procs").write_text(str(pid))

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + HOG_STOP_S
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=HOG_STOP_S)
        for ns in self.netns:
            subprocess.run(["ip", "netns", "del", ns], check=False)
        for group in self.cgroup:
            for _ in range(50):  # the emulators leave it when they exit
                try:
                    group.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)


def emulator_pids(out_dir: Path) -> list[int]:
    """The linkemu PIDs the run writing to out_dir tracks in its run state (fastlab.net.runstate)."""
    pids = []
    for state in paths.STATE_DIR.glob("fl*.json"):
        try:
            data = json.loads(state.read_text())
        except (OSError, ValueError):
            continue
        if Path(data.get("results_dir") or "/nonexistent").resolve() == out_dir.resolve():
            pids += [int(p["pid"]) for p in data.get("pids", []) if str(p.get("what", "")).startswith("linkemu")]
    return pids


def hog(kind: str, seconds: float, duty: float) -> None:
    """The body of one hog process, bounded by `seconds`."""
    end = time.monotonic() + seconds
    if kind == "spin":
        while time.monotonic() < end:
            pass
    elif kind == "fifo":
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(FIFO_PRIORITY))
        while time.monotonic() < end:
            busy_until = time.monotonic() + duty * FIFO_PERIOD_S
            while time.monotonic() < busy_until:
                pass
            time.sleep((1 - duty) * FIFO_PERIOD_S)
    elif kind == "membw":
        a, b = bytearray(MEMBW_BYTES), bytearray(MEMBW_BYTES)
        while time.monotonic() < end:
            b[:] = a
            a[:] = b


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", nargs="?", choices=KINDS)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--run-dir", type=Path, help="cgroup: the results folder of the run whose emulators to cap")
    parser.add_argument("--hog", choices=("spin", "fifo", "membw"), help=argparse.SUPPRESS)
    parser.add_argument("--duty", type=float, default=0.5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.hog:  # one hog process's body (Interference.start spawns these)
        hog(args.hog, args.seconds, args.duty)
        return 0
    if args.kind is None:
        parser.error("a kind of interference")
    if os.geteuid() != 0:
        parser.error("interference needs root")
    interference = Interference(args.kind)
    end = time.monotonic() + args.seconds
    try:
        interference.start(args.seconds)
        print(f"{args.kind}: started, PIDs {[p.pid for p in interference.procs]}", flush=True)
        while time.monotonic() < end:
            if args.run_dir is not None:
                interference.throttle(args.run_dir)
            time.sleep(0.2)
    finally:
        interference.stop()
    print(f"{args.kind}: stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
