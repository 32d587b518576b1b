"""The fast path and the fidelity verdict, in real runs.

- A link no flow crosses gets no link node and no emulator.
- A run beside CPU hogs that hold both cores at a real-time priority above the emulators' is judged
  unfaithful, for its lateness (whether the same run without them is faithful is the machine's
  state: it is printed, and judged by the fidelity bench, not asserted). The hogs are
  this test's own processes, bounded in time (they run for the run's duration and are killed by
  PID), and they leave each second's last slice to the rest of the machine (the kernel's RT
  throttling, 95 % by default, leaves more).
- The fast path is taken for a full-scale GbE flow: offloads on along the path, the interfaces
  behind each emulator receiving in kernel threads of their own (threaded NAPI) while it runs, and
  each emulator placed beside them. How fast it carries the flow (0.99 of the GbE, bench/fullscale.py
  and bench/emulator.py) is a speed figure, a bench's; the live run checks what holds on any machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fastlab.define.schema import parse_spec
from fastlab.experiment.engine import run_experiment
from fastlab.net import placement
from fastlab.plan.link_commands import EMULATOR_RT_PRIORITY
from fastlab.plan.prepare import prepare

pytestmark = pytest.mark.usefixtures("as_root")

SC2002_ONE_FLOW = {"name": "one-flow", "topology": "sc2002", "duration_s": 3, "seed": 1,
                   "topology_args": {"scale": 0.01, "cern_hosts": 1, "chicago_hosts": 1, "sunnyvale_hosts": 1,
                                     "baltimore_hosts": 1},
                   "flows": [{"src": "cern", "dst": "sunnyvale", "cc": "cubic"}]}
UNUSED = {"showfloor", "abilene-east", "abilene-west", "sunnyvale-gbe"}


def test_links_no_flow_crosses_get_no_emulator() -> None:
    """The plan leaves out the links no flow crosses and the receiver's port that cannot queue, at the
    scale of the short runs and at full scale alike (the live run that shows them left out is the
    full-scale one below)."""
    for scale in (0.01, 1.0):
        spec = parse_spec(SC2002_ONE_FLOW | {"topology_args": SC2002_ONE_FLOW["topology_args"] | {"scale": scale}})
        prep = prepare(spec)
        # the receiver's GbE port cannot queue: its data comes through the sender's equally fast port
        assert set(prep.unused_links) == UNUSED, (scale, prep.unused_links)
        assert "cannot queue" in prep.unused_links["sunnyvale-gbe"]


DUMBBELL = {"name": "fidelity", "topology": "dumbbell", "duration_s": 6, "seed": 1, "switch": "bridge",
            "topology_args": {"rate_mbps": 200, "rtt_ms": 20, "buffer_bdp": 1.0},
            "flows": [{"src": "h1", "dst": "h2", "cc": "cubic"}]}
HOG = """
import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(int(sys.argv[2])))
end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:          # one hog per CPU, in step: the emulator has nowhere to go
    phase = time.monotonic() % 0.04
    if phase < 0.02:                   # 20 ms of every 40 ms held above the emulators ...
        continue
    time.sleep(0.04 - phase)           # ... then off: a late emulator, not a dead machine
"""


def test_quiet_run_is_faithful_and_overloaded_run_is_not(tmp_path: Path) -> None:
    quiet = run_experiment(parse_spec(DUMBBELL | {"duration_s": 3}), out=tmp_path / "quiet").summary.fidelity
    assert quiet is not None
    print(f"without hogs: faithful {quiet.faithful} {quiet.reasons}")
    assert (quiet.links["bottleneck"]["forward"].segments or 0) > 1000
    hogs = [subprocess.Popen([sys.executable, "-c", HOG, str(cpu), str(EMULATOR_RT_PRIORITY + 10), "20"])
            for cpu in sorted(os.sched_getaffinity(0))]
    try:
        loaded = run_experiment(parse_spec(DUMBBELL), out=tmp_path / "loaded").summary.fidelity
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert loaded is not None and not loaded.faithful
    # the emulators' timing (their lateness, in the delay the flow read as queue or what disturbed it), or the
    # machine's load, named in words
    assert any(w in r for r in loaded.reasons for w in ("lateness", "late departures", "disturbed", "busy")), \
        loaded.reasons
    assert loaded.advice
    saved = json.loads((tmp_path / "loaded" / "summary.json").read_text())["fidelity"]
    assert saved["faithful"] is False and saved["reasons"] == loaded.reasons


def test_fast_path_carries_a_full_scale_gbe_flow(tmp_path: Path) -> None:
    """One CUBIC flow CERN -> Sunnyvale at scale 1.0 (1 Gb/s, 180 ms, three emulated links: the
    receiver's GbE port cannot queue and is built plain), for 4 s: the fast path's set-up, and a flow
    that crosses it with no RTT below the path's 180 ms (four links, eight crossings).

    The same run shows the links no flow crosses and the port that cannot queue left out: no emulator
    for them, each named in environment.json. That was a run of its own of the same one-flow spec at
    scale 0.01 (3 s, 7.6 s of the suite here); which links the plan leaves out does not depend on the
    scale (the planner's test above checks both), and the full-scale run builds the same links."""
    spec = parse_spec(SC2002_ONE_FLOW | {"duration_s": 4, "topology_args": SC2002_ONE_FLOW["topology_args"]
                                         | {"scale": 1.0}})
    before, during = set(placement.napi_threads()), set()
    result = run_experiment(spec, out=tmp_path / "full",
                            on_sample=lambda _s: during.update(placement.napi_threads()))
    assert {record.link for record in result.environment.shaping} == {"cern-gbe", "datatag", "level3"}
    assert set(result.environment.links_not_emulated) == UNUSED
    assert all("emulator_argv" in r.dump() for r in result.environment.shaping)
    assert result.environment.backends["fast path"].backend == "on"
    threaded = [c for c in result.environment.network_commands if c[-1].endswith("/threaded=1")]
    assert len(threaded) == 2 * 3, threaded  # both ends of each of the three emulated links
    assert len(during - before) >= 6, (before, during)
    # each emulator of a link up to 2 Gb/s shares a CPU with the two receive threads it wakes
    for rec in (r.dump() for r in result.environment.shaping if r.dump().get("emulator_argv")):
        rate = max(rec["resolved"][d]["rate_bps"] or 0 for d in ("forward", "reverse"))
        if 0 < rate <= placement.COLOCATE_MAX_BPS:
            assert rec["colocated"]["cpu"] is not None and len(rec["colocated"]["pinned"]) == 3, rec
        else:
            assert rec["colocated"]["cpu"] is None, rec
    assert result.environment.backends["switch"].backend in ("bridge", "ovs-kernel")
    flow = result.summary.flows[0].dump()
    assert 0 < flow["throughput_mbps"] <= 1000, flow
    assert flow["min_rtt_ms"] >= 180 - 0.5, flow  # an emulator is late, never early
