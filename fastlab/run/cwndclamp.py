"""Per-flow ceilings on the congestion window (`flows[].max_cwnd_pkts`), for any congestion control.

Role: fixed-window experiments (throughput, mean and minimum RTT against a window held constant, as
in the DOCSIS study). The kernel's snd_cwnd_clamp does the holding; a BPF sock_ops program sets it
per flow (kernel-modules/bpf/cwnd_clamp.bpf.c says why there is no simpler way). `CwndClamp` owns
the run's one cgroup v2 directory, named after the run's prefix and recorded in the run state before
it is made: the program is attached to it by `fastlab-clamp`, the clamped senders join it before they
open their sockets, and removing it (after the senders exit) ends the attachment. Nothing else on the
machine is touched: other processes' sockets are not in that cgroup.

The program also keeps the RTT sample of every ACK of the clamped flows as per-second statistics (the study plots
the *minimum* RTT against the window; tcp_info has only the smoothed RTT); `rtt_samples` reads them
before the cgroup goes, and the run folder gets them as `rtt_samples.csv`.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from fastlab.base import paths
from fastlab.base.paths import cgroup2_root
from fastlab.net.runstate import RunState, remove_cgroup

TOOL_TIMEOUT_S = 20.0


class ClampError(RuntimeError):
    """The clamp could not be put in place (one line, names the cause)."""


RTT_COLUMNS = ("flow", "t", "min_rtt_ms", "mean_rtt_ms", "max_rtt_ms", "samples")


def rtt_rows(dump: str, t0_monotonic: float, flow_of_port: dict[int, str]) -> list[dict[str, object]]:
    """fastlab-clamp dump's JSON lines as rows of rtt_samples.csv (pure): one per flow and second,
    `t` the second's start relative to the run's t0 (both CLOCK_MONOTONIC), sorted by flow and t."""
    rows = []
    for line in dump.splitlines():
        try:
            rec = json.loads(line)
            port, second, n = int(rec["port"]), int(rec["second"]), int(rec["n"])
            lo, hi, total = int(rec["min_us"]), int(rec["max_us"]), int(rec["sum_us"])
        except (ValueError, KeyError, TypeError):
            continue
        if port not in flow_of_port or n <= 0:
            continue
        rows.append({"flow": flow_of_port[port], "t": round(second - t0_monotonic, 6), "min_rtt_ms": lo / 1000,
                     "mean_rtt_ms": round(total / n / 1000, 3), "max_rtt_ms": hi / 1000, "samples": n})
    return sorted(rows, key=lambda r: (str(r["flow"]), float(r["t"])))  # type: ignore[arg-type]


def attach_args(cgroup: Path, clamps: dict[int, int]) -> list[str]:
    """fastlab-clamp's arguments: one PORT=PKTS per clamped flow (pure)."""
    return ["attach", str(cgroup), *(f"{port}={pkts}" for port, pkts in sorted(clamps.items()))]


def run_tool(*args: str) -> str:
    """fastlab-clamp's stdout; ClampError with its one-line diagnostic if it fails."""
    try:
        proc = subprocess.run([str(paths.clamp_binary()), *args], capture_output=True, text=True,
                              timeout=TOOL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ClampError(f"max_cwnd_pkts: fastlab-clamp {args[0]}: {exc}") from None
    if proc.returncode != 0:
        raise ClampError(f"max_cwnd_pkts: {proc.stderr.strip() or f'fastlab-clamp {args[0]}: exit {proc.returncode}'}")
    return proc.stdout


@dataclass
class CwndClamp:
    """The run's clamped flows: port -> packets. Empty: nothing is created."""

    state: RunState
    clamps: dict[int, int]
    cgroup: Path | None = None
    attached: dict[str, object] = field(default_factory=dict)

    def start(self) -> None:
        if not self.clamps:
            return
        root = cgroup2_root()
        if root is None:
            raise ClampError("max_cwnd_pkts: no cgroup v2 hierarchy is mounted")
        self.cgroup = root / f"fastlab-{self.state.prefix}"
        self.state.cgroups.append(str(self.cgroup))
        self.state.save()
        self.cgroup.mkdir()
        out = run_tool(*attach_args(self.cgroup, self.clamps))
        with contextlib.suppress(ValueError):
            self.attached = json.loads(out)

    def rtt_samples(self, t0_monotonic: float, flow_of_port: dict[int, str]) -> list[dict[str, object]]:
        """The clamped flows' per-second RTT statistics so far (empty if there is no program)."""
        prog_id = self.attached.get("prog_id")
        if not isinstance(prog_id, int):
            return []
        return rtt_rows(run_tool("dump", str(prog_id)), t0_monotonic, flow_of_port)

    def stop(self) -> None:
        """Remove the cgroup (the senders have exited by now); raises if it stays."""
        if self.cgroup is None:
            return
        why = remove_cgroup(self.cgroup)
        if why:
            raise ClampError(why)
        self.state.cgroups.remove(str(self.cgroup))
        self.state.save()
        self.cgroup = None
