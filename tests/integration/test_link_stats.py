"""tc-shaped links: the tc backend's shaping, and its statistics over rtnetlink: samples at the sample
rate, no tc process per sample.

A `tc` wrapper first on PATH logs every tc the run starts (Mininet's node commands and the
capability probes find tc through PATH), so a statistics poller that ran tc per sample (as it
once did: `tc -s -j qdisc show dev X` per link, direction and sample) shows up in the log.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pandas as pd
import pytest

from fastlab.base.rundir import RunFolder
from fastlab.net.qdisc_stats import QdiscReader, QdiscStatsError
from tests.conftest import EXAMPLE, fastlab

pytestmark = pytest.mark.usefixtures("as_root")

DURATION_S = 4  # the tc backend's checks need >= 1 s of a busy queue
SAMPLE_HZ = 20  # the spec's default


def tc_spy(directory: Path) -> Path:
    """A `tc` that appends its arguments to a log, then runs the real tc."""
    real = shutil.which("tc")
    assert real, "tc is not installed"
    log = directory / "tc_calls.log"
    spy = directory / "bin" / "tc"
    spy.parent.mkdir()
    spy.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    spy.chmod(0o755)
    return log


def test_tc_backend_shapes_rate_and_queue_and_samples_without_a_tc_process_per_sample(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tc backend: HTB at the link's rate and a packet FIFO of the buffer asked for, as commands;
    nothing delivered above the rate. Whether HTB kept its rate while packets waited is the fidelity
    verdict's (its tc_queues figure: 0.999 of the rate on this machine, 0.86-0.93 in a software-emulated
    VM, where the run is then unfaithful). Its statistics arrive at the sample rate with no tc process
    per sample.

    One run for what were two tests of the same tc-shaped dumbbell (50 Mb/s, no delay, a 100-packet
    FIFO; test_engine.py's test_tc_backend_shapes_rate_and_queue ran it 4 s, this file's 3 s: 10.6 s together
    here): the spy on PATH only logs the commands, it changes nothing of the shaping, and 4 s
    of flows serve both (the busy queue needs >= 1 s, the sampler's rate is judged over all of them)."""
    log = tc_spy(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "run"
    proc = fastlab("run", str(EXAMPLE), "--out", str(out), "--set", "topology_args.rtt_ms=0",
                   "--set", "links.bottleneck.backend=tc", "--set", "links.bottleneck.buffer=100",
                   "--set", f"duration_s={DURATION_S}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(out)  # the run directory is printed last

    summary = RunFolder(out).summary()
    link = summary.links[0]
    assert 0 < (link.utilization or 0) <= 1.02, link
    assert (summary.flows[0].throughput_mbps or 0) <= 50 * 1.02
    assert summary.fidelity is not None
    queued = summary.fidelity.tc_queues["bottleneck"]["forward"]
    assert (queued.busy_s or 0) >= 1 and (queued.delivered_share or 0) <= 1.02, queued
    faithful_tc = (queued.delivered_share or 0) >= 0.95
    assert faithful_tc or any("tc delivered" in r for r in summary.fidelity.reasons), summary.fidelity

    env = json.loads((out / "environment.json").read_text())
    shaping = next(r for r in env["shaping"] if r["link"] == "bottleneck")
    assert shaping["backend"] == "tc"
    commands = [" ".join(c) for c in shaping["commands"]]
    assert any("htb" in c and "50000000bit" in c for c in commands)
    assert any("pfifo limit 100" in c for c in commands)
    setup = [" ".join(cmd[2:]) for cmd in shaping["commands"] if cmd[1] == "tc"]
    calls = log.read_text().splitlines()
    # tc ran for the link's setup (each command once), the capability probes and `tc -V`: nothing else
    assert sorted(c for c in calls if c in setup) == sorted(setup)
    assert [c for c in calls if c not in setup and "dev lo" not in c and c != "-V"] == []

    links = pd.read_csv(out / "links.csv")
    for direction in ("forward", "reverse"):
        rows = links[(links["link"] == "bottleneck") & (links["direction"] == direction)].sort_values("t")
        during = rows[(rows["t"] >= 0) & (rows["t"] <= DURATION_S)]
        # the poller keeps its rate: half of it is a sampler that lost its way, not a busy machine's jitter
        assert len(during) >= 0.5 * SAMPLE_HZ * DURATION_S, (direction, len(during))
        spacing = during["t"].diff().dropna()
        assert abs(spacing.median() - 1 / SAMPLE_HZ) <= 0.5 / SAMPLE_HZ, (direction, spacing.describe())
        assert (rows["tx_bytes"].diff().dropna() >= 0).all(), direction  # a counter never goes back
        # while the flow runs it keeps both directions busy (data forward, ACKs back): every
        # interval sends bytes
        busy = during[(during["t"] >= 0.5) & (during["t"] <= DURATION_S - 0.5)]
        assert (busy["tx_bytes"].diff().dropna() > 0).all(), (direction, busy["tx_bytes"].tolist())
    forward = links[(links["link"] == "bottleneck") & (links["direction"] == "forward")]
    assert forward["backlog_pkts"].max() > 0  # the FIFO's counters arrive too, not only the root's


def test_the_reader_answers_for_the_nodes_namespace_and_leaves_its_thread_in_its_own() -> None:
    """QdiscReader.of_pid reads the node's namespace, not the caller's: its socket sees only what that
    namespace has (a fresh one has only `lo`), and the poller's thread stays in its own namespace."""
    node = subprocess.Popen(["unshare", "--net", "sleep", "30"])  # a namespace of our own, held by this pid
    try:
        seen: dict[str, object] = {}

        def read() -> None:
            own = os.stat("/proc/thread-self/ns/net").st_ino
            reader = QdiscReader.of_pid(node.pid, "scratch")
            try:
                seen["lo"] = reader.ifindex("lo")
                try:
                    reader.ifindex("eth0")
                except QdiscStatsError as e:
                    seen["eth0"] = str(e)
                seen["back"] = os.stat("/proc/thread-self/ns/net").st_ino == own
            finally:
                reader.close()

        for _ in range(50):  # unshare has made the namespace once /proc shows it differs from ours
            if os.stat(f"/proc/{node.pid}/ns/net").st_ino != os.stat("/proc/self/ns/net").st_ino:
                break
            threading.Event().wait(0.05)
        thread = threading.Thread(target=read)
        thread.start()
        thread.join(timeout=30)
        assert seen.get("lo") == 1 and "no interface eth0" in str(seen.get("eth0")), seen
        assert seen["back"] is True
    finally:
        node.kill()
        node.wait()
