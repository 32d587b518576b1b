"""fastlab's FAST and HSTCP, as BPF struct_ops, carrying real kernel TCP through the emulated path.

Bounds come from the algorithms: FAST keeps alpha packets of its own in the bottleneck queue
(+-4 packets: the floor mode's equilibrium band is [alpha-2, alpha] times D/(D-d), plus sampling
noise), its equilibrium rate does not depend on RTT (Jain >= 0.9), and its window moves halfway
to the target every RTT (a new alpha is reached within a second). HSTCP's response function
w = 0.12/p^0.835 gives 2.1 x Reno's 1.22/sqrt(p) window at p = 1e-4 (>= 1.6 asked);
Limited Slow-Start grows at most max_ssthresh/2 segments per RTT.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from fastlab.cc import kernel_available
from fastlab.ccset import TOOL, default_registry
from fastlab.engine import run_experiment
from fastlab.spec import parse_spec, read_spec_text
from tests.conftest import EXAMPLE, fastlab

pytestmark = pytest.mark.usefixtures("as_root")

FAST_SPEC = EXAMPLE.read_text().replace("rate_mbps: 50", "rate_mbps: 20").replace(
    "cc: cubic}", "cc: fast, cc_args: {alpha: 20}}")


def forward_backlog(out: Path, t0: float, t1: float) -> float:
    links = pd.read_csv(out / "links.csv")
    rows = links[(links["link"] == "bottleneck") & (links["direction"] == "forward")]
    return float(rows[(rows["t"] >= t0) & (rows["t"] < t1)]["backlog_pkts"].mean())


def test_issue_spec_with_fast_alpha_20(tmp_path: Path) -> None:
    registered_before = "fast" in kernel_available()  # e.g. by a run of another user of this machine
    out = tmp_path / "fast"
    spec_file = tmp_path / "fast.yaml"
    spec_file.write_text(FAST_SPEC)
    proc = fastlab("run", str(spec_file), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    link = summary["links"][0]
    assert 16 <= link["mean_backlog_pkts"] <= 24, link
    assert link["utilization"] >= 0.90 and summary["flows"][0]["cc"] == "fast"
    assert abs(forward_backlog(out, 5, 20) - 20) <= 4  # after convergence
    events = pd.read_csv(out / "cc_events.csv")
    updates = events[events["event"] == "update"]
    assert len(updates) > 100 and set(updates["flow"]) == {"f1"}
    assert (updates["alpha"] == 20).all() and updates["base_rtt_us"].min() >= 40_000
    env = json.loads((out / "environment.json").read_text())
    assert env["congestion_control"]["applied"][0]["impl"] == "bpf" and env["congestion_control"]["builds"]
    assert ("fast" in kernel_available()) == registered_before  # the run unloaded what it loaded


def test_alpha_change_mid_run_is_followed(tmp_path: Path) -> None:
    change = "cc_changes=[{at_s: 15, host: h1, cc: fast, args: {alpha: 60}}]"
    # alpha 60 needs room: the spec's 1-BDP buffer (67 packets) would drop the overshoot of each update
    spec = read_spec_text(FAST_SPEC, ["duration_s=30", "topology_args.buffer_bdp=4", change])
    result = run_experiment(spec, out=tmp_path / "change")
    before, after = forward_backlog(result.directory, 8, 15), forward_backlog(result.directory, 20, 30)
    assert abs(before - 20) <= 4 and abs(after - 60) <= 4, (before, after)
    links = pd.read_csv(result.directory / "links.csv")
    fwd = links[(links["link"] == "bottleneck") & (links["direction"] == "forward") & (links["t"] >= 15)]
    reached = fwd[fwd["backlog_pkts"] >= 52]["t"].min()
    assert reached - 15 <= 1.0, reached  # a few RTTs (40-75 ms each)
    events = pd.read_csv(result.directory / "cc_events.csv")
    assert (events[events["event"] == "cc_set"]["alpha"] == 60).all()
    late = events[(events["event"] == "update") & (events["t"] > 15.5)]
    assert (late["alpha"] == 60).all()


def test_fast_equilibrium_is_rtt_independent(tmp_path: Path) -> None:
    spec = parse_spec({"name": "fast-rtt", "topology": "dumbbell", "duration_s": 40, "seed": 1,
                       "topology_args": {"pairs": 2, "rate_mbps": 20, "rtt_ms": 40, "pair_rtt_ms": [40, 80]},
                       "flows": [{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 20}},
                                 {"src": "h3", "dst": "h4", "cc": "fast", "cc_args": {"alpha": 20}}]})
    result = run_experiment(spec, out=tmp_path / "rtt")
    flows = {f["id"]: f for f in result.summary["flows"]}
    # pair_rtt_ms sets each pair's path: the idle pings before the flows measure it with the queues empty
    idle = {(p["src"], p["dst"]): p["min_ms"] for p in result.summary["idle_rtt"]}
    assert abs(idle[("h1", "h2")] - 40) < 2 and abs(idle[("h3", "h4")] - 80) < 2, idle
    # A flow's kernel min_rtt is never below its path, but may sit above it: a flow whose handshake
    # or first packets met the other's queued packets never sees the shared queue empty again (the
    # two FAST flows hold 2 x alpha packets there). CI once: f2 82.06 ms on the 80-ms path.
    for flow, path in (("f1", ("h1", "h2")), ("f2", ("h3", "h4"))):
        assert flows[flow]["min_rtt_ms"] >= idle[path] - 0.5, (flow, flows[flow]["min_rtt_ms"], idle)
    assert flows["f2"]["min_rtt_ms"] - flows["f1"]["min_rtt_ms"] >= 30, flows  # two RTTs really differ
    assert result.summary["jain_index"] >= 0.9, flows


def mean_cwnd(out: Path, flow: str, after_s: float) -> float:
    flows = pd.read_csv(out / "flows.csv")
    return float(flows[(flows["flow"] == flow) & (flows["t"] >= after_s)]["cwnd_pkts"].mean())


def test_hstcp_beats_reno_under_periodic_loss(tmp_path: Path) -> None:
    """50 Mb/s, 100 ms (BDP 417 packets), one packet in 10,000 dropped, each algorithm alone on the path
    (sharing it, the two windows together nearly fill the pipe and queueing couples them): loss-limited,
    not capacity-limited. The response functions give 263 (HSTCP, 0.12/p^0.835) and 122 (Reno,
    1.22/sqrt(p)) packets, 2.2 x. Periodic loss makes each sawtooth deterministic, so a short run holds
    what random loss needs minutes for: Reno's cycle is 1/p packets, ~8 s at 122 packets per 0.1 s RTT,
    and from slow start's overshoot it halves to that cycle within ~3 losses (~10 s); from 12 to 32 s
    the mean covers 2.4 cycles, a partial cycle moving it by less than 10 %."""
    windows = {}
    for cc in ("hstcp", "reno"):
        spec = parse_spec({"name": f"{cc}-loss", "topology": "dumbbell", "duration_s": 32, "seed": 3,
                           "topology_args": {"rate_mbps": 50, "rtt_ms": 100},
                           "links": {"bottleneck": {"loss": {"model": "every_nth", "n": 10_000}}},
                           "flows": [{"src": "h1", "dst": "h2", "cc": cc}]})
        result = run_experiment(spec, out=tmp_path / cc)
        windows[cc] = mean_cwnd(result.directory, "f1", 12)
    hstcp, reno = windows["hstcp"], windows["reno"]
    print(f"mean cwnd: hstcp {hstcp:.1f}, reno {reno:.1f}, ratio {hstcp / reno:.2f} (theory 2.2)")
    # the cycle's mean 1.22/sqrt(p), +-10 % for the partial cycle and +-10 % for what the law leaves out
    # (the recovery round at each loss, growth per ACK rather than per RTT): measured 126.9 (2026-11-25)
    assert 0.8 * 122 <= reno <= 1.2 * 122, reno
    assert hstcp >= 1.6 * reno, (hstcp, reno)


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
    spec = parse_spec({"name": "lss", "topology": "dumbbell", "duration_s": 12, "seed": 1,
                       "topology_args": {"rate_mbps": 50, "rtt_ms": 100},
                       "flows": [{"src": "h1", "dst": "h2", "cc": "hstcp", "cc_args": {"max_ssthresh": 100}}]})
    result = run_experiment(spec, out=tmp_path / "lss")
    events = pd.read_csv(result.directory / "cc_events.csv")
    per_rtt = events[events["event"] == "rtt"].sort_values("t")
    growth = per_rtt["cwnd"].diff()
    limited = growth[(per_rtt["mode"] == "lss") & (per_rtt["cwnd"].shift() > 100)]
    assert len(limited) >= 3, per_rtt[["t", "cwnd", "mode"]].head(30)
    assert limited.max() <= 50 * 1.1, limited.max()  # RTT boundaries are sampled by ACK arrivals
    assert (per_rtt["max_ssthresh"] == 100).all()


def test_two_hosts_two_alphas_in_one_run(tmp_path: Path) -> None:
    spec = parse_spec({"name": "alphas", "topology": "dumbbell", "duration_s": 6,
                       "topology_args": {"pairs": 2, "rate_mbps": 20, "rtt_ms": 40},
                       "flows": [{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 15}},
                                 {"src": "h3", "dst": "h4", "cc": "fast", "cc_args": {"alpha": 45}}]})
    result = run_experiment(spec, out=tmp_path / "alphas")
    events = pd.read_csv(result.directory / "cc_events.csv")
    alphas = events[events["event"] == "update"].groupby("flow")["alpha"].unique()
    assert [list(a) for a in alphas] == [[15], [45]]


def test_a_dead_runs_override_on_a_reused_namespace_is_not_inherited() -> None:
    """A run killed before its teardown leaves its per-namespace overrides in FAST's map; the
    kernel reuses namespace inodes, so a new host may get that inode. Here a fresh namespace
    stands for it: it carries alpha 77, and a run configuring that host without cc_args must
    give it the global parameters."""
    from fastlab.ccruntime import CCRuntime, HostParams
    from fastlab.ccset import BpfLoader, run_tool
    from fastlab.runstate import RunState, new_prefix

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
