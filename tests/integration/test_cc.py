"""fastlab's FAST and HSTCP, as BPF struct_ops, carrying real kernel TCP through the emulated path:
live runs judged on invariants (docs/design.md §10). Each run is as short as its invariant needs.

What is asserted: the build registers and is unregistered after the run; the parameters asked for
(alpha, a changed alpha, Limited Slow-Start's max_ssthresh) are the ones the algorithm's own events
report; facts that hold whatever the machine does (no RTT below the path's, two paths' RTTs apart by
their difference, Limited Slow-Start never growing by more than max_ssthresh/2 a round). FAST's
equilibrium (alpha packets queued, rates independent of RTT, a new alpha reached within a second) and
HSTCP's response function against Reno's are physics with tight bands: they are judged on lab 02's
and lab 05's recorded runs in the unit tier, and their pass rates over live runs by bench/labs.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from fastlab.base import paths
from fastlab.base.rundir import RunFolder
from fastlab.define.cc import kernel_available
from fastlab.define.schema import parse_spec, read_spec_text
from fastlab.experiment.engine import run_experiment
from fastlab.run.ccload import default_registry
from tests.conftest import EXAMPLE, REPO, fastlab

TOOL = paths.cc_tool()

pytestmark = pytest.mark.usefixtures("as_root")

FAST_SPEC = EXAMPLE.read_text().replace("rate_mbps: 50", "rate_mbps: 20").replace(
    "cc: cubic}", "cc: fast, cc_args: {alpha: 20}}")


def test_issue_spec_with_fast_alpha_20(tmp_path: Path) -> None:
    registered_before = "fast" in kernel_available()  # e.g. by a run of another user of this machine
    out = tmp_path / "fast"
    spec_file = tmp_path / "fast.yaml"
    spec_file.write_text(FAST_SPEC)
    proc = fastlab("run", str(spec_file), "--out", str(out), "--set", "duration_s=6")
    assert proc.returncode == 0, proc.stderr
    summary = RunFolder(out).summary()
    assert summary.flows[0].cc == "fast" and (summary.links[0].utilization or 0) > 0
    # the data's one-way delay through the emulated links (issue 51): at least the way there's half of the
    # symmetric path's minimum RTT (less a millisecond of the hosts'), below the RTT's own p99, in order
    f = summary.flows[0]
    assert f.owd_p50_ms is not None and f.min_rtt_ms is not None and f.rtt_p99_ms is not None, f
    assert f.min_rtt_ms / 2 - 1 < f.owd_p50_ms <= (f.owd_p95_ms or 0) <= (f.owd_p99_ms or 0) < f.rtt_p99_ms, f
    events = pd.read_csv(out / "cc_events.csv")
    updates = events[events["event"] == "update"]
    assert len(updates) > 20 and set(updates["flow"]) == {"f1"}  # an update per RTT (40-45 ms) for 6 s
    assert (updates["alpha"] == 20).all() and updates["base_rtt_us"].min() >= 40_000  # never below the path
    env = json.loads((out / "environment.json").read_text())
    assert env["congestion_control"]["applied"][0]["impl"] == "bpf" and env["congestion_control"]["builds"]
    assert ("fast" in kernel_available()) == registered_before  # the run unloaded what it loaded


def test_alpha_change_mid_run_is_followed(tmp_path: Path) -> None:
    change = "cc_changes=[{at_s: 3, host: h1, cc: fast, args: {alpha: 60}}]"
    spec = read_spec_text(FAST_SPEC, ["duration_s=6", "topology_args.buffer_bdp=4", change])
    result = run_experiment(spec, out=tmp_path / "change")
    events = pd.read_csv(result.directory / "cc_events.csv")
    sets = events[events["event"] == "cc_set"]
    assert len(sets) == 1 and (sets["alpha"] == 60).all() and 3 <= float(sets["t"].iloc[0]) < 4, sets
    updates = events[events["event"] == "update"]
    before, late = updates[updates["t"] < 3], updates[updates["t"] > float(sets["t"].iloc[0]) + 0.5]
    assert len(before) and (before["alpha"] == 20).all() and len(late) and (late["alpha"] == 60).all()


def test_two_paths_keep_their_rtts_apart_and_two_hosts_their_alphas(tmp_path: Path) -> None:
    """Two FAST flows on paths of 40 and 80 ms through one bottleneck: the idle pings see the two paths
    (40 ms apart, less nothing: an emulator can be late, never early), and no flow's kernel min_rtt is
    below its path's. A flow may sit above it: one whose handshake met the other's queued packets never
    sees the shared queue empty again (CI once: f2 82.06 ms on the 80-ms path).

    The two hosts also carry two alphas in one run (15 and 45): every update of each flow reports its
    own host's alpha. This merges what were two runs of the same two-pair dumbbell at 20 Mb/s (the
    alphas' own run was 3 s at one RTT, 5.9 s of CI here): the idle pings come before the flows, the
    RTT floors hold whatever each flow's alpha queues (45 packets at 20 Mb/s is 27 ms above the path,
    never below it), and the per-host alpha does not depend on the paths' RTTs."""
    spec = parse_spec({"name": "fast-rtt", "topology": "dumbbell", "duration_s": 5, "seed": 1,
                       "topology_args": {"pairs": 2, "rate_mbps": 20, "rtt_ms": 40, "pair_rtt_ms": [40, 80]},
                       "flows": [{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 15}},
                                 {"src": "h3", "dst": "h4", "cc": "fast", "cc_args": {"alpha": 45}}]})
    result = run_experiment(spec, out=tmp_path / "rtt")
    flows = {f.id: f for f in result.summary.flows}
    idle = {(p.src, p.dst): p.min_ms or 0.0 for p in result.summary.idle_rtt}
    assert idle[("h1", "h2")] >= 40 - 0.5 and idle[("h3", "h4")] >= 80 - 0.5, idle
    assert idle[("h3", "h4")] - idle[("h1", "h2")] >= 30, idle  # 40 ms apart; lateness is noise of < 10
    for flow, path in (("f1", ("h1", "h2")), ("f2", ("h3", "h4"))):
        assert (flows[flow].min_rtt_ms or 0) >= idle[path] - 0.5, (flow, flows[flow].min_rtt_ms, idle)
    assert all((f.throughput_mbps or 0) > 0 for f in flows.values()), flows
    events = pd.read_csv(result.directory / "cc_events.csv")
    alphas = events[events["event"] == "update"].groupby("flow")["alpha"].unique()
    assert {flow: list(a) for flow, a in alphas.items()} == {"f1": [15], "f2": [45]}, alphas


# Two FAST flows updating every 50 ms of ACKs (a timed period, so the count of updates is known
# from the flow's length whatever its RTT): each update comes 50 ms and an ACK after the one before.
TWO_FLOWS_SPEC = """name: rings
topology: dumbbell
topology_args: {rate_mbps: 20, rtt_ms: 40, buffer_bdp: 2.0}
duration_s: 4
seed: 1
idle_pings: 3
flows:
  - {src: h1, dst: h2, cc: fast, count: 2, cc_args: {alpha: 20, period: 50ms}}
"""
UPDATE_PERIOD_S = 0.05
# Gaps of two periods or more between a flow's updates: each lost event makes one. Measured here
# (2 cores, two such runs at once): with a ring per run none in 24 flows (the longest gap 79 ms,
# 65-69 updates a flow, as alone: 66); with the one shared ring 11, 7, 2 and 2 in the 4 flows
# (19, 14, 64 and 62 updates kept). One is allowed: an ACK stall of a loaded machine.
LATE_UPDATES_MAX = 1
FLOW_SPAN_MIN_S = 3.5  # first to last update of a 4 s flow: 4.1-4.2 s measured


def test_two_runs_in_two_processes_each_get_all_their_own_events(tmp_path: Path) -> None:
    """Two `fastlab run`s at once, two processes, two event readers: each reads its own ring, so each
    run's FAST flows have every update (none two periods apart) and its reader was handed no event of
    the other run's namespaces."""
    registered_before = "fast" in kernel_available()
    spec = tmp_path / "rings.yaml"
    spec.write_text(TWO_FLOWS_SPEC)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    runs = {name: subprocess.Popen([sys.executable, "-m", "fastlab", "run", str(spec), "--out", str(tmp_path / name)],
                                   cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for name in ("a", "b")}
    for name, proc in runs.items():
        _out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, (name, err)
    for name in runs:
        applied = json.loads((tmp_path / name / "environment.json").read_text())["congestion_control"]["applied"]
        reader = next(a for a in applied if "events" in a)
        assert reader == {"cc": "fast", "events": "own ring", "foreign_events": 0}, (name, reader)
        events = pd.read_csv(tmp_path / name / "cc_events.csv")
        updates = events[events["event"] == "update"]
        assert set(updates["flow"]) == {"f1", "f2"}, (name, updates["flow"].unique())
        for flow, rows in updates.groupby("flow"):
            t = rows["t"].sort_values()
            late = int((t.diff() >= 2 * UPDATE_PERIOD_S).sum())
            assert late <= LATE_UPDATES_MAX, (name, flow, late, len(t))
            assert t.iloc[-1] - t.iloc[0] >= FLOW_SPAN_MIN_S, (name, flow, t.iloc[0], t.iloc[-1])  # no end missing
    assert ("fast" in kernel_available()) == registered_before


def test_register_whose_caller_died_registers_nothing() -> None:
    """A run claims FAST in its state, then calls `fastlab-cc register`. If the run is killed while
    the program loads (0.14-0.16 s here), the cleanup that follows finds nothing registered and
    releases the claim, so the program must not register afterwards (CI 2026-11-25: the web
    server's kill -9 at 0.26 s left FAST registered with no run owning it). Here the caller, a
    shell, is killed 20 ms into the load."""
    assert "fast" not in kernel_available()
    try:
        # returns once the orphaned program has exited too: it holds the pipes until then
        proc = subprocess.run(["sh", "-c", f"'{TOOL}' register fast & sleep 0.02; kill -9 $$"],
                              capture_output=True, text=True, timeout=30, check=False)
        assert proc.returncode == -9, proc
        assert "the caller exited before fast was registered" in proc.stderr, proc.stderr
        assert "fast" not in kernel_available()
        assert not Path("/sys/fs/bpf/fastlab/fast").exists()
    finally:
        if "fast" in kernel_available():  # the failure above: do not leave it to the next test
            subprocess.run([str(TOOL), "unregister", "fast"], capture_output=True, timeout=30, check=False)


def test_limited_slow_start(tmp_path: Path) -> None:
    """RFC 3742: above max_ssthresh (100) the window grows by at most max_ssthresh/2 segments a round --
    an algorithmic bound the BPF build's own per-round events show, whatever the machine's timing
    (+10 %: round boundaries are sampled by ACK arrivals). 50 Mb/s x 100 ms: the window passes 100
    after ~0.7 s and the limited phase lasts several rounds before the first loss."""
    spec = parse_spec({"name": "lss", "topology": "dumbbell", "duration_s": 5, "seed": 1,
                       "topology_args": {"rate_mbps": 50, "rtt_ms": 100},
                       "flows": [{"src": "h1", "dst": "h2", "cc": "hstcp", "cc_args": {"max_ssthresh": 100}}]})
    result = run_experiment(spec, out=tmp_path / "lss")
    events = pd.read_csv(result.directory / "cc_events.csv")
    per_rtt = events[events["event"] == "rtt"].sort_values("t")
    growth = per_rtt["cwnd"].diff()
    limited = growth[(per_rtt["mode"] == "lss") & (per_rtt["cwnd"].shift() > 100)]
    assert len(limited) >= 3, per_rtt[["t", "cwnd", "mode"]].head(30)
    assert limited.max() <= 50 * 1.1, limited.max()
    assert (per_rtt["max_ssthresh"] == 100).all()


def test_a_dead_runs_override_on_a_reused_namespace_is_not_inherited() -> None:
    """A run killed before its teardown leaves its per-namespace overrides in FAST's map; the
    kernel reuses namespace inodes, so a new host may get that inode. Here a fresh namespace
    stands for it: it carries alpha 77, and a run configuring that host without cc_args must
    give it the global parameters."""
    from fastlab.net.runstate import RunState, new_prefix
    from fastlab.plan.flows import HostParams
    from fastlab.run.ccload import BpfLoader, run_tool
    from fastlab.run.ccruntime import CCRuntime

    loader = BpfLoader("fast")
    registered_here = loader.load()
    holder = subprocess.Popen(["unshare", "--net", "sleep", "30"])
    try:
        deadline = time.monotonic() + 5
        while os.stat(f"/proc/{holder.pid}/ns/net").st_ino == os.stat("/proc/self/ns/net").st_ino:
            assert time.monotonic() < deadline, "unshare never entered a new namespace"
            time.sleep(0.02)
        loader.set({"alpha": 77}, netns_pid=holder.pid)
        ccs = CCRuntime(default_registry(), RunState(new_prefix()), lambda *_: None,
                        [HostParams("h1", "fast", {})], {})
        ccs.configure({"h1": holder.pid})
        got = run_tool("get", "fast", "--netns-pid", str(holder.pid))
        assert got["overrides"] == {} and got["params"] == run_tool("get", "fast")["params"], got
        ccs.stop()
    finally:
        holder.kill()
        holder.wait()
        if registered_here:
            loader.unload()


@pytest.mark.parametrize("sets, field", [
    (["flows.0.cc=fast", "flows.0.cc_args={alpha: 0}"], "flows[0].cc_args"),
    (["flows.0.cc=fast", "flows.0.cc_args={period: 3rtt}"], "flows[0].cc_args"),
    (["flows.0.cc=hstcp", "flows.0.cc_args={low_window: 100, high_window: 50}"], "flows[0].cc_args"),
    (["flows.0.cc=fast", "flows.0.count=1", "flows.1={src: h1, dst: h2, cc: fast, cc_args: {alpha: 9}}"],
     "flows[1].cc_args"),
    (["cc_changes=[{at_s: 5, host: h1, cc: fast, args: {alpha: 30}}]"], "cc_changes[0].host"),
])
def test_bad_cc_parameters_exit_2(tmp_path: Path, sets: list[str], field: str) -> None:
    registered_before = "fast" in kernel_available()
    args = ["run", str(EXAMPLE), "--out", str(tmp_path / "never")]
    for item in sets:
        args += ["--set", item]
    proc = fastlab(*args)
    assert proc.returncode == 2 and field in proc.stderr, proc.stderr
    assert not (tmp_path / "never").exists() and ("fast" in kernel_available()) == registered_before
