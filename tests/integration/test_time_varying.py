"""Time-varying links in real runs (issue 33, item 2): a spec schedule and a mahimahi trace each drive the
emulated bottleneck of a real dumbbell saturated by kernel CUBIC flows, and the rate it delivers in each
second follows the schedule or trace within 2 % (the issue's acceptance), leaving out the seconds that
hold a change (the first two, as the flows' processes took up to 1.0 s to start on this busy machine;
the second after each step) and any second whose queue ran dry (then TCP, not the link, set the rate);
all but one of each phase's seconds are judged. The times count from the flows' start: linkemu
got its epoch as they started and said so. The trace is copied into the run folder and spec.yaml names
the copy. A run the fidelity verdict calls unfaithful (the machine was busy) proves nothing: the rates
are then not judged (docs/design.md §10).

Measured on this 2-core VM (2026-11-27, 3 runs each, all faithful): the worst judged second's relative
error, min / median / max, schedule 0.11 / 0.11 / 0.11 % (one packet in a second: 8.009 for 8 Mb/s),
trace 0.00 / 0.01 / 0.01 %: the 2 % bound has a margin of 18x. (Interpolating the counters at the
seconds' edges instead gave 0.44-0.71 % and 0.07-1.94 %: a second next to a change borrowed part of
the other rate, and the flows' start fell in the second second.)"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fastlab.base.rundir import RunFolder
from tests.conftest import EXAMPLE, fastlab

pytestmark = pytest.mark.usefixtures("as_root")

TOLERANCE = 0.02  # the acceptance
FLOWS = 3  # CUBIC flows: enough to keep a 150-packet buffer from running dry after a rise
COMMON = ("--set", f"flows.0.count={FLOWS}", "--set", "links.bottleneck.buffer=150 packets")


def forward(out: Path) -> pd.DataFrame:
    """The bottleneck's forward samples in links.csv, in time order."""
    rows = pd.read_csv(out / "links.csv")
    return rows[(rows["link"] == "bottleneck") & (rows["direction"] == "forward")].sort_values("t")


def delivered_mbps(out: Path) -> tuple[dict[int, float], set[int]]:
    """The bottleneck's forward delivered IP rate in each whole second since the flows' start: links.csv's
    cumulative tx_bytes between the first and the last sample inside the second (20 a second, each
    linkemu's own stamp of its counters), over the time between them -- not interpolated at the second's
    edges, which would lend a second next to a change part of the other rate. And the seconds whose queue
    held packets at every sample: saturated, so the link's capacity is what was delivered."""
    fwd = forward(out)
    t, sent = fwd["t"].to_numpy(float), fwd["tx_bytes"].to_numpy(float)
    backlog = fwd["backlog_pkts"].to_numpy(float)
    rate, saturated = {}, set()
    for s in range(int(np.floor(t.max()))):
        inside = np.flatnonzero((t >= s) & (t <= s + 1))
        first, last = inside[0], inside[-1]
        rate[s] = (sent[last] - sent[first]) * 8 / (t[last] - t[first]) / 1e6
        # a packet counted as sent left the queue one delay (20 ms) earlier
        if backlog[(t >= s - 0.05) & (t <= s + 1)].min() > 0:
            saturated.add(s)
    return rate, saturated


def judge(out: Path, want: dict[int, float]) -> float:
    """The worst relative error over the seconds in `want` (second -> Mb/s); asserts the run's records
    first (linkemu's epoch, its argv)."""
    env = json.loads((out / "environment.json").read_text())
    (shaped,) = [s for s in env["shaping"] if s["link"] == "bottleneck"]
    assert shaped["backend"] == "emulator" and "--epoch-on-signal" in shaped["emulator_argv"]
    # the epoch came as the flows started (the signal ends linkemu's wait at once): well within a bin
    assert 0 <= shaped["epoch"]["after_flows_start_ms"] < 50, shaped["epoch"]
    summary = RunFolder(out).summary()
    got, saturated = delivered_mbps(out)
    errors = {s: abs(got[s] - w) / w for s, w in want.items() if s in saturated}
    worst = max(errors.values())
    print(f"{out.name}: worst {worst:.4f} per second " +
          " ".join(f"{s}:{got[s]:.3f}/{w:g}{'' if s in saturated else '(dry)'}" for s, w in want.items()))
    for rate in set(want.values()):  # each phase judged on all its seconds but one
        phase = [s for s, w in want.items() if w == rate]
        assert sum(1 for s in phase if s in saturated) >= len(phase) - 1, (rate, sorted(saturated))
    if not summary.faithful:
        pytest.skip(f"unfaithful run, rates not judged: {summary.fidelity.reasons if summary.fidelity else None}")
    assert worst <= TOLERANCE, {s: round(e, 4) for s, e in errors.items()}
    return worst


def test_a_spec_schedule_drives_the_delivered_rate(tmp_path: Path) -> None:
    """20 -> 8 -> 30 Mb/s, 5 s each: the link's own rate (20) until the step at 5 s, then the steps."""
    out = tmp_path / "schedule"
    proc = fastlab("run", str(EXAMPLE), "--out", str(out), *COMMON, "--set", "duration_s=15",
                   "--set", "links.bottleneck.rate_mbps=20",
                   "--set", "links.bottleneck.schedule=[{at_s: 5, rate_mbps: 8}, {at_s: 10, rate_mbps: 30}]")
    assert proc.returncode == 0, proc.stderr
    argv = json.loads((out / "environment.json").read_text())["shaping"][0]["emulator_argv"]
    assert argv[argv.index("--ab-schedule") + 1] == "5000000:rate_bps=8000000;10000000:rate_bps=30000000"
    rows = forward(out)
    for lo, hi, step, rate in ((-1.0, 4.99, -1, 20.0), (5.01, 9.99, 0, 8.0), (10.01, 15.0, 1, 30.0)):
        inside = rows[(rows["t"] > lo) & (rows["t"] < hi)]  # links.csv: the step in force at each sample
        assert (inside["schedule_step"] == step).all() and (inside["schedule_rate_mbps"] == rate).all(), (lo, hi)
    link = json.loads((out / "summary.json").read_text())["links"][0]
    assert link["capacity_mbps"] == pytest.approx(58 / 3, abs=1e-4)  # (20 + 8 + 30) x 5 s / 15 s
    assert 0.9 < link["utilization"] <= 1.01, link
    want = {s: 20.0 for s in range(2, 5)} | {s: 8.0 for s in range(6, 10)} | {s: 30.0 for s in range(11, 15)}
    judge(out, want)


def write_trace(path: Path) -> None:
    """mahimahi's format: 12 opportunities every 10 ms for 5 s (12 x 1500 IP bytes / 10 ms = 14.4 Mb/s of
    full-size packets, each taking one 1504-byte opportunity), then 5 every 10 ms (6.0 Mb/s) for 5 s;
    the period is 10 s."""
    fast = [10 * c + m for c in range(500) for m in (1, 2, 2, 3, 4, 5, 5, 6, 7, 8, 9, 10)]
    slow = [5000 + 10 * c + m for c in range(500) for m in (2, 4, 6, 8, 10)]
    path.write_text("".join(f"{ms}\n" for ms in fast + slow))


def test_a_mahimahi_trace_drives_the_delivered_rate(tmp_path: Path) -> None:
    trace = tmp_path / "steps.down"
    write_trace(trace)
    out = tmp_path / "trace"
    proc = fastlab("run", str(EXAMPLE), "--out", str(out), *COMMON, "--set", "duration_s=10",
                   "--set", f"links.bottleneck.trace={trace}")
    assert proc.returncode == 0, proc.stderr
    copy = out / "trace_bottleneck_forward.txt"
    assert copy.read_bytes() == trace.read_bytes()
    assert "trace: trace_bottleneck_forward.txt" in (out / "spec.yaml").read_text()
    argv = json.loads((out / "environment.json").read_text())["shaping"][0]["emulator_argv"]
    assert argv[argv.index("--ab-trace") + 1] == str(copy)
    rows = forward(out)
    early = rows[(rows["t"] > 0.05) & (rows["t"] < 4.99)]  # 12 opportunities per 10 ms since the flows' start
    assert ((early["trace_opportunities"] - 1200 * early["t"]).abs() <= 24).all(), early[["t", "trace_opportunities"]]
    want = {s: 14.4 for s in range(2, 5)} | {s: 6.0 for s in range(6, 10)}
    judge(out, want)
