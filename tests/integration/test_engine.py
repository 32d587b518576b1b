"""Real runs: Mininet namespaces, the userspace emulator, real kernel TCP, OVS -- judged on invariants
(docs/design.md §10): files, columns, backends and commands, what is left behind, seeded drops, and facts
that hold whatever the machine's timing (no RTT below the path's, no rate above the link's, a
binomial count within 4 standard deviations). Bands that depend on this 2-core machine's timing
(utilization of a busy link, RTT within a few ms) are judged on recorded runs and in bench/.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from fastlab.base import paths
from fastlab.base.record import SCHEMA_VERSION
from fastlab.base.rundir import RunFolder
from tests.conftest import EXAMPLE, REPO, fastlab, machine_leftovers

pytestmark = pytest.mark.usefixtures("as_root")


def run_ok(tmp_path: Path, *sets: str, name: str = "run") -> Path:
    out = tmp_path / name
    args = ["run", str(EXAMPLE), "--out", str(out)]
    for item in sets:
        args += ["--set", item]
    proc = fastlab(*args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(out)  # the run directory is printed last
    return out


def judge_issue_spec_run(out: Path) -> None:
    """The issue's spec end to end (a 5-s run of examples/simple-cubic.yaml through the CLI): every file,
    the summary's schema and fields, no rate above the link's and no RTT below the path's, the backends'
    records, the samples' columns, the self-contained report, and nothing left behind."""
    for name in ("spec.yaml", "environment.json", "flows.csv", "links.csv", "summary.json", "report.html"):
        assert (out / name).stat().st_size > 0, name
    written = json.loads((out / "summary.json").read_text())  # the file as others read it
    assert written["schema_version"] == SCHEMA_VERSION
    summary = RunFolder(out).summary()
    flow, link = written["flows"][0], written["links"][0]
    assert link["id"] == "bottleneck" and link["capacity_mbps"] == 50
    assert 0 < link["utilization"] <= 1.02, link  # never above the link's rate
    assert flow["min_rtt_ms"] >= 40 - 0.5, flow  # an emulator is late, never early
    assert {"id", "src", "dst", "cc", "throughput_mbps", "mean_rtt_ms", "min_rtt_ms", "retransmits"} <= set(flow)
    assert {"id", "capacity_mbps", "utilization", "mean_backlog_pkts", "drops"} <= set(link)
    assert summary.jain_index is not None and 0 < summary.jain_index <= 1
    assert summary.fidelity is not None and isinstance(summary.fidelity.faithful, bool)
    assert "reasons" in written["fidelity"]
    env = json.loads((out / "environment.json").read_text())
    assert env["backends"]["delay"]["backend"] == "emulator"
    assert "sch_netem is missing" in env["backends"]["delay"]["why"]
    shaping = env["shaping"][0]
    assert shaping["backend"] == "emulator" and "netem" in shaping["why"]
    assert "--ab-delay-us" in shaping["emulator_argv"] and shaping["resolved"]["forward"]["delay_us"] == 20000
    flows = pd.read_csv(out / "flows.csv")
    assert flows["t"].between(0, 5.5).all() and len(flows) >= 20  # 20 samples/s asked; a starved sampler
    # is the fidelity verdict's to judge (its sample-gap figure), not a count here
    for column in ("cwnd_pkts", "ssthresh_pkts", "srtt_ms", "min_rtt_ms", "delivery_rate_mbps", "goodput_mbps",
                   "retransmits", "pacing_rate_mbps"):
        assert column in flows.columns
    links = pd.read_csv(out / "links.csv")
    for column in ("backlog_pkts", "backlog_bytes", "queue_drops", "loss_drops", "tx_mbps"):
        assert column in links.columns
    assert links["backlog_pkts"].max() > 0
    # where the round trip went (fastlab.measure.accounting): the parts add up to each RTT sample, the
    # propagation is the path's 40 ms, the link's queue is never negative; summary.json per flow and verdict
    acct = flows.dropna(subset=["acct_rtt_ms"])
    assert len(acct) >= 20 and (acct["acct_propagation_ms"] == 40.0).all() and (acct["acct_queueing_ms"] >= 0).all()
    parts = sum(acct[f"acct_{p}_ms"] for p in ("propagation", "serialization", "queueing", "lateness", "hosts"))
    assert ((parts - acct["acct_rtt_ms"]).abs() < 0.01).all()
    assert "delay_accounting" in flow and "delay_accounting" in written["fidelity"]  # the file's names
    accounted = summary.flows[0].delay_accounting
    assert accounted is not None and accounted.propagation_ms is not None
    assert accounted.propagation_ms.median == 40.0
    assert summary.fidelity.delay_accounting["f1"].budget_ms == 0.5
    assert {"acct_frames", "acct_queue_mean_us", "acct_late_mean_us"} <= set(links.columns)
    # the emulator's per-flow accounting (linkemu's flowacct.h, hop_flows.csv): the one flow's data one way, its
    # ACKs the other; alone on the link, its frames are the link's but for the idle pings, and their mean
    # queueing is the link's; its least is no more than that, its data's no less than its SYN's
    own = pd.read_csv(out / "hop_flows.csv")
    last = own.sort_values("t").groupby("direction").tail(1).set_index("direction")
    assert set(own["flow"]) == {"f1"} and set(last.index) == {"forward", "reverse"}
    link_last = links.sort_values("t").groupby("direction").tail(1).set_index("direction")
    forward, link_forward = last.loc["forward"], link_last.loc["forward"]
    assert 0.9 * link_forward["acct_frames"] <= forward["frames"] <= link_forward["acct_frames"]
    link_wait = link_forward["acct_queue_mean_us"] + link_forward["acct_extra_mean_us"]  # queue + the model's extra
    assert abs(forward["queue_mean_us"] - link_wait) <= 0.05 * link_wait + 50, (forward, link_wait)
    assert forward["queue_min_us"] <= forward["data_min_us"] <= forward["queue_mean_us"]
    html = (out / "report.html").read_text()
    # plotly.js is a file beside the report (a run made with --out keeps its own; under a results folder the
    # folder keeps one for all): nothing is loaded from anywhere else (the library's map defaults name CDNs)
    assert "plotlyReady" in html and not re.search(r"<script[^>]+src=", html)
    from fastlab.results.report import PLOTLY_FILE, PLOTLY_SOURCE
    assert (out / PLOTLY_FILE).stat().st_size == PLOTLY_SOURCE.stat().st_size
    assert machine_leftovers() == {"interfaces": [], "bridges": [], "state_files": [], "cgroups": []}


def test_sigkill_leftovers_are_cleaned_and_the_issue_spec_then_runs_end_to_end(tmp_path: Path) -> None:
    """A run killed with SIGKILL while its flows go leaves its state, interfaces and processes; `fastlab
    cleanup` removes them all, and the next run works: that run is the issue's spec end to end
    (judge_issue_spec_run), which was a 5-s run of its own of the same spec in test_issue_spec_end_to_end
    (merged, 7.4 s of the suite here, with the 3-s run this test made next: one run now checks both, that
    the machine is usable again after a cleanup and everything the issue's spec must produce)."""
    proc = subprocess.Popen([sys.executable, "-m", "fastlab", "run", str(EXAMPLE), "--set", "duration_s=60",
                             "--out", str(tmp_path / "killed")], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    state = None
    while time.monotonic() < deadline and proc.poll() is None:
        states = [json.loads(p.read_text()) for p in paths.STATE_DIR.glob("fl*.json")]
        ours = [s for s in states if s["engine_pid"] == proc.pid]  # not another run's state
        if ours and any("sender" in p["what"] for p in ours[0]["pids"]):
            state = ours[0]
            break
        time.sleep(0.2)
    assert state is not None, proc.stderr.read() if proc.poll() is not None else "run never started its flows"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    leftovers = machine_leftovers()
    assert leftovers["state_files"] and leftovers["interfaces"], leftovers
    alive = [p for p in state["pids"] if Path(f"/proc/{p['pid']}").exists()]
    assert alive, "the killed run left no processes behind?"
    cleaned = fastlab("cleanup")
    assert cleaned.returncode == 0, cleaned.stderr
    assert "removed" in cleaned.stdout
    assert machine_leftovers() == {"interfaces": [], "bridges": [], "state_files": [], "cgroups": []}
    from fastlab.net.runstate import process_start_time
    assert not [p for p in state["pids"] if process_start_time(p["pid"]) == p["start"]]
    judge_issue_spec_run(run_ok(tmp_path, "duration_s=5", name="after"))
    assert fastlab("cleanup").stdout.strip() == "nothing to clean up"


@pytest.mark.parametrize("phase", ["setup", "flows"])
def test_ctrl_c_or_sigterm_stops_the_run_after_a_full_cleanup(tmp_path: Path, phase: str) -> None:
    """Interrupted while it registers FAST and builds (state file just written) or while its
    flows run: exit 130, nothing left, and FAST registered only if it was before."""
    from fastlab.define.cc import kernel_available

    fast_before = "fast" in kernel_available()
    proc = subprocess.Popen([sys.executable, "-m", "fastlab", "run", str(EXAMPLE), "--set", "duration_s=60",
                             "--set", "flows.0.cc=fast", "--out", str(tmp_path / "stopped")], cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            states = [json.loads(p.read_text()) for p in paths.STATE_DIR.glob("fl*.json")]
            ours = [s for s in states if s["engine_pid"] == proc.pid]
            if ours and (phase == "setup" or any("sender" in p["what"] for p in ours[0]["pids"])):
                break
            time.sleep(0.01)
        assert proc.poll() is None, proc.stderr.read()
        proc.send_signal(signal.SIGINT if phase == "setup" else signal.SIGTERM)  # this test's own child
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "stopping after cleanup" in err, err
    assert machine_leftovers() == {"interfaces": [], "bridges": [], "state_files": [], "cgroups": []}
    assert ("fast" in kernel_available()) == fast_before


def test_scheduled_flows_and_live_stream(tmp_path: Path) -> None:
    """Flows start and stop on schedule; samples reach a live subscriber while the run goes."""
    from fastlab.define.schema import read_spec_text
    from fastlab.experiment.engine import run_experiment

    spec = read_spec_text(EXAMPLE.read_text(), ["duration_s=8", "topology_args.pairs=2",
                                                "flows.1={src: h3, dst: h4, cc: reno, start_s: 2, stop_s: 5}"])
    arrivals: list[tuple[float, dict]] = []
    started = time.monotonic()
    result = run_experiment(spec, out=tmp_path / "sched", on_sample=lambda s: arrivals.append((time.monotonic(), s)))
    flows = pd.read_csv(tmp_path / "sched" / "flows.csv")
    late = flows[flows["flow"] == "f2"]
    # a flow stopped at 5 s sampled a second later would be a scheduler's fault, not timing noise
    assert late["t"].min() >= 2.0 and late["t"].max() <= 6.0, (late["t"].min(), late["t"].max())
    assert flows[flows["flow"] == "f1"]["t"].max() >= 7.5
    f2 = result.summary.flow("f2")
    assert f2 is not None and f2.cc == "reno" and f2.start_s == 2 and (f2.throughput_mbps or 0) > 1
    flow_arrivals = [when for when, s in arrivals if s["kind"] == "flow"]
    # live: samples arrived spread over the run, not in one burst at the end
    assert flow_arrivals and flow_arrivals[-1] - flow_arrivals[0] >= 6
    assert started < flow_arrivals[0] < flow_arrivals[-1] - 5
    assert {s["kind"] for _, s in arrivals} == {"flow", "link"}


def test_max_cwnd_pkts_holds_the_window_of_any_cc(tmp_path: Path) -> None:
    """A clamped Reno flow below the path's BDP keeps its window at the ceiling, and its rate is the
    window over its RTT (no loss, no queue of its own beyond 8 packets: nothing else limits it); the
    run's cgroup is gone after.

    20 Mb/s x 40 ms is 66 packets of BDP, so 8 packets can never fill the link or the buffer."""
    spec = tmp_path / "clamp.yaml"
    spec.write_text("name: clamp\ntopology: dumbbell\n"
                    "topology_args: {rate_mbps: 20, rtt_ms: 40, buffer_bdp: 1.0}\n"
                    "duration_s: 6\nswitch: bridge\n"
                    "flows: [{src: h1, dst: h2, cc: reno, max_cwnd_pkts: 8}]\n")
    out = tmp_path / "run"
    proc = fastlab("run", str(spec), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    flows = pd.read_csv(out / "flows.csv")
    assert flows["cwnd_pkts"].max() == 8, flows["cwnd_pkts"].describe()
    steady = flows[flows["t"] >= 2]
    assert (steady["cwnd_pkts"] == 8).all() and steady["retransmits"].iloc[-1] == 0
    rate = (steady["bytes_acked"].iloc[-1] - steady["bytes_acked"].iloc[0]) * 8 / 1e6 / (
        steady["t"].iloc[-1] - steady["t"].iloc[0])
    expected = 8 * steady["mss_bytes"].median() * 8 / 1e6 / (steady["srtt_ms"].mean() / 1000)
    assert abs(rate / expected - 1) <= 0.15, (rate, expected)  # W/RTT, whatever the RTT was
    # The RTT sample of every ACK, per second: RACK's, the newest segment the ACK delivers. It is
    # never below the 40 ms path (how far above depends on the emulator's and the stacks' timing: not
    # judged live). srtt averages the kernel's other sample, the *oldest* segment an ACK newly
    # acknowledges, which also holds the time a delayed-ACK receiver kept it waiting for the next
    # segment: never below ours. Measured here: 41.66 ms both (each ACK covers a back-to-back pair);
    # CI once: 41.51 against srtt's 45.23, the rate following srtt. (sock_ops' RTT_CB, one sample per
    # round, averaged 60 ms once: delayed ACKs.)
    rtts = pd.read_csv(out / "rtt_samples.csv")
    assert set(rtts["flow"]) == {"f1"} and len(rtts) >= 6 and (rtts["samples"] > 0).all()
    assert rtts["min_rtt_ms"].min() >= 40 and (rtts["min_rtt_ms"] <= rtts["mean_rtt_ms"]).all()
    late = rtts[rtts["t"] >= 2]
    mean = (late["mean_rtt_ms"] * late["samples"]).sum() / late["samples"].sum()
    assert 40 <= mean <= steady["srtt_ms"].mean() * 1.01, (mean, steady["srtt_ms"].mean())
    env = json.loads((out / "environment.json").read_text())
    assert env["flows"]["f1"]["max_cwnd_pkts"] == 8 and env["cwnd_clamp"]["attached"] is True
    rounds_per_s = 1000 / late["mean_rtt_ms"].median()
    assert late["samples"].median() >= 2 * rounds_per_s, (late["samples"].median(), rounds_per_s)  # not 1 a round
    assert not Path(env["cwnd_clamp"]["cgroup"]).exists()


def test_cleanup_and_app_start_leave_other_softwares_interfaces(tmp_path: Path) -> None:
    """`fastlab cleanup` and the web app's start-up cleanup delete only what a dead run recorded or
    what carries a dead run's own prefix: Kubernetes' `flannel.1`, and even a name shaped like a
    fastlab prefix that no state file owns, survive. Run in a scratch network namespace, so nothing
    on the machine is at risk; a dead run's state (its engine PID long gone) owns `flq7x2-s1`."""
    from fastlab.net.runstate import RunState

    dead = RunState("flq7x2", engine_pid=2**22 + 7, engine_start=1, intfs=["flq7x2-s1", "eth0"])
    dead.save()
    script = f"""
import json, subprocess
for name in ("flannel.1", "flzz99-eth0", "flq7x2-s1", "flq7x2-h1"):
    subprocess.run(["ip", "link", "add", name, "type", "bridge"], check=True)  # no dummy driver here
from fastlab.run.ccload import cleanup
removed = cleanup()
subprocess.run(["ip", "link", "add", "flq7x2-h2", "type", "bridge"], check=True)
from webapp import create_app
app = create_app(results_root={str(tmp_path / 'results')!r}, start_worker=False, cleanup_on_start=True)
links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
print(json.dumps({{"removed": removed, "at_start": app.config["CLEANED_AT_START"],
                  "links": [line.split(":")[1].strip() for line in links.splitlines()]}}))
"""
    try:
        proc = subprocess.run(["unshare", "-n", sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=120, cwd=str(REPO), check=False)
    finally:
        dead.release()
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {"flannel.1", "flzz99-eth0", "flq7x2-h2"} <= set(out["links"]), out
    assert not {"flq7x2-s1", "flq7x2-h1"} & set(out["links"]), out
    assert "interface flq7x2-s1" in out["removed"] and "interface flq7x2-h1" in out["removed"]
    assert not any("flannel" in item or "flzz99" in item or "eth0" in item for item in out["removed"] + out["at_start"])


KILL_SEED = 20261124  # the moments are random but the same in every run of this test


@pytest.mark.timeout(420)
def test_kill_9_at_four_random_moments_then_cleanup_leaves_nothing(tmp_path: Path) -> None:
    """`kill -9` of `fastlab run` at 4 random moments spread over the build, the flows and the
    teardown of a FAST run with a clamped flow (so BPF registrations and a cgroup are at stake too),
    each followed by `fastlab cleanup`: nothing of fastlab is left, the kernel's CC list is as before,
    and the next run (the next moment's) starts; a last run completes. Moments are drawn between 0 s
    and the run's whole length (~4 s of build, 3 s of flows, ~2 s of teardown), seeded."""
    import random

    from fastlab.define.cc import kernel_available

    ccs_before = sorted(kernel_available())
    baseline = machine_leftovers()
    rng = random.Random(KILL_SEED)  # one generator: four different moments (a fresh one per draw gave one)
    # stratified: one moment in each quarter of the run, so the build, the flows and the teardown all get
    # one (six moments cost 15 s more of CI and found nothing four do not)
    slices = [0.3 + k * (10.0 - 0.3) / 4 for k in range(5)]
    moments = [rng.uniform(lo, hi) for lo, hi in zip(slices, slices[1:], strict=False)]
    sets = ["duration_s=3", "flows.0.cc=fast", "flows.0.cc_args={alpha: 20}", "flows.0.max_cwnd_pkts=40"]
    argv = [sys.executable, "-m", "fastlab", "run", str(EXAMPLE)] + [a for s in sets for a in ("--set", s)]
    for i, moment in enumerate(moments):
        proc = subprocess.Popen([*argv, "--out", str(tmp_path / f"k{i}")], cwd=REPO,
                                env={**os.environ, "PYTHONPATH": str(REPO)},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(moment)
        proc.send_signal(signal.SIGKILL)  # this test's own child
        proc.wait()
        cleaned = fastlab("cleanup")
        assert cleaned.returncode == 0, (moment, cleaned.stderr)
        assert machine_leftovers() == baseline, (moment, machine_leftovers())
        assert sorted(kernel_available()) == ccs_before, (moment, kernel_available())
    run_ok(tmp_path, *sets, name="after")
    assert machine_leftovers() == baseline and sorted(kernel_available()) == ccs_before
