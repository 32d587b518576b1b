"""Every topology, built for real: the idle RTT between its named endpoints, pinged through the
emulated path, is never below the documented one (less 2 % or 1 ms: ping's clock), and on a
faithful run not above it by more than that (the emulator's wake-up latency and the switches add a
fraction of a millisecond); the DOCSIS MAC's request-grant wait is there, never shorter than its
model, spread over a MAP; flows cross each topology. Live runs, judged on invariants (docs/design.md §10):
bounds that depend on this machine's timing are judged only on a faithful run."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from fastlab.base.rundir import RunFolder
from fastlab.define.schema import ExperimentSpec, parse_spec
from fastlab.define.topology import build_plan
from fastlab.experiment.engine import run_experiment
from fastlab.plan.prepare import prepare
from tests.conftest import faithful

pytestmark = pytest.mark.usefixtures("as_root")

OVS_LOADED_MS = 12.0  # the OVS userspace datapath under several flows: load-dependent delay, ~7 ms seen

CASES = {"dumbbell": {}, "ucl-cern": {}, "ucl-slac": {}, "docsis-simple": {"mode": "simple"},
         "sc2002": {"cern_hosts": 3, "chicago_hosts": 2, "sunnyvale_hosts": 1, "baltimore_hosts": 1}}


PING_IP_BYTES = 84  # ping's default 56 data bytes + ICMP 8 + IPv4 20


def ping_serialization_ms(spec: ExperimentSpec, src: str, dst: str) -> float:
    """What the ping itself spends being serialized on the emulated links it crosses, there and
    back: physics the documented RTT leaves out (84 bytes at 512 kb/s: 1.31 ms)."""
    prep = prepare(spec)
    total = 0.0
    for a, b in ((src, dst), (dst, src)):
        for link_id, forward in prep.routes.of(a, b):
            link = prep.links[link_id]
            rate = (link.forward if forward else link.reverse).rate_bps
            total += PING_IP_BYTES * 8 / rate * 1000 if rate else 0.0
    return total


def idle_rtts(tmp_path: Path, topology: str, args: dict, pings: int = 10) -> tuple[list[dict], dict, bool]:
    """The topology's endpoints, the idle pings between them (with what the ping spends serialized),
    and whether the run was faithful (its timing may be judged)."""
    endpoints = build_plan(topology, args).metadata["endpoints"]
    # Linux bridges: OVS's userspace datapath (this machine) adds ~0.45 ms of its own to every RTT,
    # which would eat half of the +-1 ms budget; the OVS runs are covered by the tests below.
    spec = parse_spec({"name": f"rtt-{topology}", "topology": topology, "topology_args": args, "duration_s": 1,
                       "idle_pings": pings, "switch": "bridge",
                       "flows": [{"src": e["src"], "dst": e["dst"]} for e in endpoints]})
    result = run_experiment(spec, out=tmp_path / topology)
    measured = {(r.src, r.dst): r.dump() | {"serialization_ms": ping_serialization_ms(spec, r.src, r.dst)}
                for r in result.summary.idle_rtt}
    return endpoints, measured, faithful(result.summary)


DOCSIS_PINGS = 40  # the MAC's contention wait spreads over a MAP: 40 pings show its spread


@pytest.fixture(scope="module")
def docsis_twin(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], dict, bool]:
    """The DOCSIS simple twin's idle pings, one run read by two tests: its idle RTT against the documented
    one (test_idle_rtt_between_named_endpoints[docsis-simple]) and the MAC's extra latency measured against
    it (test_docsis_mac_...). Both ran this same network (docsis, mode simple, Linux bridges, 1 s), the first
    with 10 pings, the second with 40 (4.7 s of the suite here): the twin's minimum over 40 pings is the
    same bound's figure, from more samples."""
    return idle_rtts(tmp_path_factory.mktemp("twin"), "docsis", CASES["docsis-simple"], pings=DOCSIS_PINGS)


@pytest.mark.parametrize("case", sorted(CASES))
def test_idle_rtt_between_named_endpoints(tmp_path: Path, case: str, request: pytest.FixtureRequest) -> None:
    if case == "docsis-simple":
        endpoints, measured, judged = request.getfixturevalue("docsis_twin")
    else:
        endpoints, measured, judged = idle_rtts(tmp_path, case, CASES[case])
    for end in endpoints:
        ping = measured[(end["src"], end["dst"])]
        rtt = ping["min_ms"] - ping["serialization_ms"]
        slack = max(0.02 * end["rtt_ms"], 1.0)
        assert rtt >= end["rtt_ms"] - slack, (end, ping)
        if judged:
            assert rtt <= end["rtt_ms"] + slack, (end, ping)


def test_docsis_mac_adds_request_grant_latency_the_twin_does_not_have(
        tmp_path: Path, docsis_twin: tuple[list[dict], dict, bool]) -> None:
    """Idle pings cross the upstream MAC once: contention wait (0..1 MAP) + request transit and
    lookahead rounded up to MAPs + the frame on the PHY; the simple twin (the run docsis_twin shares with
    the idle-RTT test) adds nothing."""
    (end,), docsis, judged_mac = idle_rtts(tmp_path / "mac", "docsis", {}, pings=DOCSIS_PINGS)
    (_,), simple, judged_twin = docsis_twin
    lo, hi = end["mac_latency_ms"]
    mac, twin = docsis[("server", "client")], simple[("server", "client")]
    # the twin's 512 kb/s upstream serializes the ping reply (1.31 ms); the MAC model counts the
    # DOCSIS PHY's own serialization, so the extra is measured against the twin without it
    up_ms = PING_IP_BYTES * 8 / 512e3 * 1000
    extra = [s - (twin["min_ms"] - up_ms) for s in mac["samples_ms"]]
    print(f"DOCSIS idle RTT ms: min {mac['min_ms']} median {mac['median_ms']} max {mac['max_ms']}; "
          f"simple twin min {twin['min_ms']}; model {lo:.2f}..{hi:.2f} ms extra")
    assert lo - 0.5 <= min(extra)  # the MAC never answers sooner than its model (linkemu's C tests: exactly)
    assert max(extra) - min(extra) >= 0.5 * (hi - lo)  # the contention wait spreads over the MAP
    if judged_mac and judged_twin:  # how little comes on top: the machine's timing
        assert twin["median_ms"] - twin["min_ms"] < 0.5  # no MAC: flat (bar scheduling outliers)
        assert sorted(extra)[len(extra) // 2] <= hi + 0.5


def test_sc2002_fairness_setup_reports_per_flow_throughput(tmp_path: Path) -> None:
    """CERN's shared uplink: 1 flow to Sunnyvale against 2 flows to Chicago.

    The spec has no `switch:` line, so this run also holds what test_sc2002_default_spec_builds_no_ovs_
    userspace_datapath checked with a 2-s run of its own (merged: 6.2 s of the suite here): on sc2002 at the
    default scale, `switch: auto` never picks the OVS userspace datapath, whose load-dependent latency
    (~7 ms) FAST read as queueing (76 of 100 Mb/s, issue 11); the kernel datapath where it exists, else
    Linux bridges (this machine). That run's FAST flow had only the RTT floor asserted, which every flow
    here has too (FAST's own RTT floors: test_cc.py); FAST filling its scaled GbE is lab 03's (rows 1 and
    2, on recorded runs)."""
    spec = parse_spec({"name": "cern-uplink", "topology": "sc2002", "duration_s": 4,
                       "topology_args": {"cern_hosts": 3, "chicago_hosts": 2, "sunnyvale_hosts": 1,
                                         "baltimore_hosts": 1},
                       "flows": [{"src": "cern", "dst": "sunnyvale", "cc": "cubic"},
                                 {"src": "cern2", "dst": "chicago", "cc": "reno"},
                                 {"src": "cern3", "dst": "chicago2", "cc": "reno"}]})
    result = run_experiment(spec, out=tmp_path / "fair")
    # switch: auto is the OVS kernel datapath where it exists, else Linux bridges (this machine): never
    # the OVS userspace datapath
    assert result.environment.backends["switch"].backend in ("bridge", "ovs-kernel")
    flows = {f.dst: f.dump() for f in result.summary.flows}
    assert set(flows) == {"sunnyvale", "chicago", "chicago2"}
    assert all(f["throughput_mbps"] > 0.5 for f in flows.values()), flows
    # minimum over the loaded run: the OVS userspace datapath adds load-dependent delay (7 ms measured)
    assert flows["sunnyvale"]["min_rtt_ms"] >= 179 and flows["chicago"]["min_rtt_ms"] >= 117, flows
    if faithful(result.summary):
        assert flows["sunnyvale"]["min_rtt_ms"] <= 180 + OVS_LOADED_MS, flows["sunnyvale"]
        assert flows["chicago"]["min_rtt_ms"] <= 118 + OVS_LOADED_MS, flows["chicago"]
    datatag = result.summary.link("datatag")
    assert datatag is not None and datatag.capacity_mbps == 250  # 2.5 Gb/s at the default scale 0.1
    assert RunFolder(tmp_path / "fair").summary() == result.summary  # what the folder holds is what came back


def test_docsis_downstream_tcp(tmp_path: Path) -> None:
    spec = parse_spec({"name": "docsis-down", "topology": "docsis", "duration_s": 8,
                       "flows": [{"src": "server", "dst": "client", "cc": "cubic"}]})
    result = run_experiment(spec, out=tmp_path / "down")
    flow = result.summary.flows[0].dump()
    cable = result.summary.link("cable").dump()
    # 3 Mb/s downstream: TCP payload at most 3 x 1448/1500 (+2 %: the counters' ends)
    assert 0 < flow["throughput_mbps"] <= 2.9 * 1.02, flow
    assert cable["reverse"]["utilization"] > 0
    if faithful(result.summary):  # slow start over 100 ms costs a little of the 8 s
        assert flow["throughput_mbps"] >= 2.0 and cable["utilization"] >= 0.7, (flow, cable)
    links = pd.read_csv(tmp_path / "down" / "links.csv")
    upstream = links[(links["link"] == "cable") & (links["direction"] == "reverse")]
    assert upstream["mac_grants"].max() > 100  # the ACKs went through the request-grant MAC
