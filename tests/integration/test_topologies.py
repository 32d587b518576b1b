"""Every topology, built for real: the idle RTT between its named endpoints, pinged through the
emulated path, is the documented one within +-2 % or +-1 ms (the emulator's wake-up latency and
the switches add a fraction of a millisecond)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from fastlab import routing
from fastlab.engine import run_experiment
from fastlab.plan import prepare
from fastlab.spec import ExperimentSpec, parse_spec
from fastlab.topology import build_plan

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
        for hop in routing.hops(prep.plan, a, b):
            if hop.link.shaped:
                link = prep.links[hop.link.shaped]
                rate = (link.forward if hop.forward else link.reverse).rate_bps
                total += PING_IP_BYTES * 8 / rate * 1000 if rate else 0.0
    return total


def idle_rtts(tmp_path: Path, topology: str, args: dict, pings: int = 10) -> tuple[list[dict], dict]:
    endpoints = build_plan(topology, args).metadata["endpoints"]
    # Linux bridges: OVS's userspace datapath (this machine) adds ~0.45 ms of its own to every RTT,
    # which would eat half of the +-1 ms budget; the OVS runs are covered by the tests below.
    spec = parse_spec({"name": f"rtt-{topology}", "topology": topology, "topology_args": args, "duration_s": 2,
                       "idle_pings": pings, "switch": "bridge",
                       "flows": [{"src": e["src"], "dst": e["dst"]} for e in endpoints]})
    result = run_experiment(spec, out=tmp_path / topology)
    measured = {(r["src"], r["dst"]): r | {"serialization_ms": ping_serialization_ms(spec, r["src"], r["dst"])}
                for r in result.summary["idle_rtt"]}
    return endpoints, measured


@pytest.mark.parametrize("case", sorted(CASES))
def test_idle_rtt_between_named_endpoints(tmp_path: Path, case: str) -> None:
    endpoints, measured = idle_rtts(tmp_path, case.split("-simple")[0], CASES[case])
    for end in endpoints:
        ping = measured[(end["src"], end["dst"])]
        rtt = ping["min_ms"] - ping["serialization_ms"]
        assert abs(rtt - end["rtt_ms"]) <= max(0.02 * end["rtt_ms"], 1.0), (end, ping)


def test_docsis_mac_adds_request_grant_latency_the_twin_does_not_have(tmp_path: Path) -> None:
    """Idle pings cross the upstream MAC once: contention wait (0..1 MAP) + request transit and
    lookahead rounded up to MAPs + the frame on the PHY; the simple twin adds nothing."""
    (end,), docsis = idle_rtts(tmp_path / "mac", "docsis", {}, pings=40)
    (_,), simple = idle_rtts(tmp_path / "twin", "docsis", {"mode": "simple"}, pings=40)
    lo, hi = end["mac_latency_ms"]
    mac, twin = docsis[("server", "client")], simple[("server", "client")]
    # the twin's 512 kb/s upstream serializes the ping reply (1.31 ms); the MAC model counts the
    # DOCSIS PHY's own serialization, so the extra is measured against the twin without it
    up_ms = PING_IP_BYTES * 8 / 512e3 * 1000
    extra = [s - (twin["min_ms"] - up_ms) for s in mac["samples_ms"]]
    print(f"DOCSIS idle RTT ms: min {mac['min_ms']} median {mac['median_ms']} max {mac['max_ms']}; "
          f"simple twin min {twin['min_ms']}; model {lo:.2f}..{hi:.2f} ms extra")
    assert twin["median_ms"] - twin["min_ms"] < 0.5  # no MAC: flat (bar scheduling outliers)
    assert lo - 0.5 <= min(extra) and sorted(extra)[len(extra) // 2] <= hi + 0.5
    assert max(extra) - min(extra) >= 0.5 * (hi - lo)  # the contention wait spreads over the MAP


def test_sc2002_fairness_setup_reports_per_flow_throughput(tmp_path: Path) -> None:
    """CERN's shared uplink: 1 flow to Sunnyvale against 2 flows to Chicago."""
    spec = parse_spec({"name": "cern-uplink", "topology": "sc2002", "duration_s": 6,
                       "topology_args": {"cern_hosts": 3, "chicago_hosts": 2, "sunnyvale_hosts": 1,
                                         "baltimore_hosts": 1},
                       "flows": [{"src": "cern", "dst": "sunnyvale", "cc": "cubic"},
                                 {"src": "cern2", "dst": "chicago", "cc": "reno"},
                                 {"src": "cern3", "dst": "chicago2", "cc": "reno"}]})
    result = run_experiment(spec, out=tmp_path / "fair")
    # switch: auto is the OVS kernel datapath where it exists, else Linux bridges (this machine)
    assert result.environment["backends"]["switch"]["backend"] in ("bridge", "ovs-kernel")
    flows = {f["dst"]: f for f in result.summary["flows"]}
    assert set(flows) == {"sunnyvale", "chicago", "chicago2"}
    assert all(f["throughput_mbps"] > 0.5 for f in flows.values()), flows
    # minimum over the loaded run: the OVS userspace datapath adds load-dependent delay (7 ms measured)
    assert 179 <= flows["sunnyvale"]["min_rtt_ms"] <= 180 + OVS_LOADED_MS, flows["sunnyvale"]
    assert 117 <= flows["chicago"]["min_rtt_ms"] <= 118 + OVS_LOADED_MS, flows["chicago"]
    datatag = next(link for link in result.summary["links"] if link["id"] == "datatag")
    assert datatag["capacity_mbps"] == 250  # 2.5 Gb/s at the default scale 0.1
    summary = json.loads((tmp_path / "fair" / "summary.json").read_text())
    assert len(summary["flows"]) == 3


def test_docsis_downstream_tcp(tmp_path: Path) -> None:
    spec = parse_spec({"name": "docsis-down", "topology": "docsis", "duration_s": 12,
                       "flows": [{"src": "server", "dst": "client", "cc": "cubic"}]})
    result = run_experiment(spec, out=tmp_path / "down")
    flow = result.summary["flows"][0]
    cable = next(link for link in result.summary["links"] if link["id"] == "cable")
    # 3 Mb/s downstream: TCP payload at most 3 x 1448/1500; slow start over 100 ms costs a little
    assert 2.0 <= flow["throughput_mbps"] <= 2.9, flow
    assert cable["utilization"] >= 0.8 and cable["reverse"]["utilization"] > 0
    links = pd.read_csv(tmp_path / "down" / "links.csv")
    upstream = links[(links["link"] == "cable") & (links["direction"] == "reverse")]
    assert upstream["mac_grants"].max() > 100  # the ACKs went through the request-grant MAC


def test_sc2002_one_fast_flow_fills_its_scaled_gbe(tmp_path: Path) -> None:
    """The default sc2002 spec at scale 0.1 (no `switch:` line): the 100 Mb/s GbE access link is
    the bottleneck. FAST with pacing (as in the original) climbs ~alpha/2 packets per 180 ms RTT
    to a 1500-packet window, so utilization is measured after convergence (20 s), as in the SC2002
    hour-long averages. `switch: auto` must not pick the OVS userspace datapath here: its
    load-dependent latency (~7 ms) is what FAST read as queueing (76 of 100 Mb/s, issue 11)."""
    spec = parse_spec({"name": "sc2002-fast", "topology": "sc2002", "duration_s": 40, "seed": 1,
                       "topology_args": {"scale": 0.1},
                       "flows": [{"src": "cern", "dst": "sunnyvale", "cc": "fast",
                                  "cc_args": {"alpha": 50, "pacing_pct": 120}}]})
    result = run_experiment(spec, out=tmp_path / "fast")
    assert result.environment["backends"]["switch"]["backend"] != "ovs-user"
    flow = result.summary["flows"][0]
    assert abs(flow["min_rtt_ms"] - 180) <= 4, flow
    links = pd.read_csv(tmp_path / "fast" / "links.csv")
    gbe = links[(links["link"] == "cern-gbe") & (links["direction"] == "forward") & (links["t"] >= 20)]
    sent, span = gbe["tx_bytes"].iloc[-1] - gbe["tx_bytes"].iloc[0], gbe["t"].iloc[-1] - gbe["t"].iloc[0]
    utilization = sent * 8 / span / 100e6
    print(f"sc2002 FAST cern->sunnyvale: utilization after 20 s {utilization:.3f}, whole run "
          f"{next(x for x in result.summary['links'] if x['id'] == 'cern-gbe')['utilization']}, "
          f"min RTT {flow['min_rtt_ms']} ms, retransmits {flow['retransmits']}")
    assert utilization >= 0.90
