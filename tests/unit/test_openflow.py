"""The OpenFlow rule planner, the switched sc2002 core's paths and the spec's controller/reroute checks."""

from __future__ import annotations

import pytest

from fastlab.define.cc import Registry
from fastlab.define.schema import SpecError, parse_spec
from fastlab.define.topology import build_plan
from fastlab.plan.links import resolve
from fastlab.plan.prepare import validate
from fastlab.run.controller import port_samples
from fastlab.run.openflow import (
    IP_ICMP,
    IP_TCP,
    PRIO_DEFAULT,
    PRIO_FLOW,
    PRIO_TO_CORE,
    FlowPath,
    OpenFlowError,
    check_design,
    flow_rules,
    plan_rules,
)
from tests.unit.test_topologies import figures

SWITCHED = {"scale": 0.02, "core": "switched", "cern_hosts": 1, "chicago_hosts": 1, "sunnyvale_hosts": 1,
            "baltimore_hosts": 1}
# port numbers as OVS would give them (numbered in creation order)
OFPORTS = {"s5": {"rstar": 1, "level3": 2, "abilene-east": 3}, "s6": {"rsunny": 1, "level3": 2, "abilene-west": 3},
           "s7": {"abilene-east": 1, "abilene-west": 2}}
KERNEL = Registry(kernel_listing=lambda: {"reno", "cubic"}, module_listing=set)
F1 = FlowPath("f1", "10.11.0.1", "10.13.0.1", 5201, "abilene")


def design() -> dict:
    return build_plan("sc2002", SWITCHED).metadata["openflow"]


def out_port(rules: list, switch: str, **match: object) -> int:
    """Which port a packet leaves by: the highest-priority rule matching it (None fields are wildcards)."""
    def matches(rule) -> bool:
        fields = {"in_port": rule.in_port, "ip_proto": rule.ip_proto, "src_ip": rule.src_ip,
                  "dst_ip": rule.dst_ip, "tcp_dst": rule.tcp_dst, "tcp_src": rule.tcp_src}
        return all(v is None or match.get(k) == v for k, v in fields.items())
    best = max((r for r in rules if r.switch == switch and matches(r)), key=lambda r: r.priority)
    return best.out_port


def test_a_flow_follows_its_path_both_ways_and_others_take_the_default() -> None:
    rules = plan_rules(design(), OFPORTS, [F1])
    data = {"ip_proto": IP_TCP, "src_ip": F1.src_ip, "dst_ip": F1.dst_ip, "tcp_dst": 5201, "tcp_src": 40000}
    ack = {"ip_proto": IP_TCP, "src_ip": F1.dst_ip, "dst_ip": F1.src_ip, "tcp_src": 5201, "tcp_dst": 40000}
    assert out_port(rules, "s5", in_port=1, **data) == 3  # StarLight -> Abilene east
    assert out_port(rules, "s7", in_port=1, **data) == 2  # Abilene core transit
    assert out_port(rules, "s6", in_port=3, **data) == 1  # delivered to rsunny
    assert out_port(rules, "s6", in_port=1, **ack) == 3  # ACKs come back over Abilene too
    other = dict(data, tcp_dst=5202)
    assert out_port(rules, "s5", in_port=1, **other) == 2  # another flow: default Level(3)
    assert out_port(rules, "s5", in_port=1) == 2  # ARP and the rest: default path
    ping = {"ip_proto": IP_ICMP, "src_ip": F1.src_ip, "dst_ip": F1.dst_ip}
    assert out_port(rules, "s5", in_port=1, **ping) == 3  # idle pings measure the flow's path


def test_rule_shapes_and_ofctl_text() -> None:
    rules = flow_rules(design(), OFPORTS, F1)
    assert {r.priority for r in rules} == {PRIO_FLOW} and {r.switch for r in rules} == {"s5", "s6"}
    assert rules[0].ofctl() == ("priority=300,in_port=1,tcp,nw_src=10.11.0.1,nw_dst=10.13.0.1,tp_dst=5201,"
                                "actions=output:3")
    assert rules[0].match() == {"in_port": 1, "eth_type": 0x0800, "ip_proto": 6, "ipv4_src": "10.11.0.1",
                                "ipv4_dst": "10.13.0.1", "tcp_dst": 5201}
    base = [r for r in plan_rules(design(), OFPORTS, []) if r.switch == "s5"]
    assert sorted((r.priority, r.in_port, r.out_port) for r in base) == [
        (PRIO_DEFAULT, 1, 2), (PRIO_TO_CORE, 2, 1), (PRIO_TO_CORE, 3, 1)]


def test_planner_errors() -> None:
    with pytest.raises(OpenFlowError, match="unknown path 'atlantis'"):
        flow_rules(design(), OFPORTS, FlowPath("f1", "10.11.0.1", "10.13.0.1", 5201, "atlantis"))
    with pytest.raises(OpenFlowError, match="no port toward 'abilene-east'"):
        plan_rules(design(), {**OFPORTS, "s5": {"rstar": 1, "level3": 2}}, [])
    broken = design() | {"default_path": "nowhere"}
    with pytest.raises(OpenFlowError, match="default path 'nowhere'"):
        check_design(broken)


def test_port_statistics_become_link_samples_named_by_what_the_port_leads_to() -> None:
    msg = {"t": 12.5, "ports": [{"port": 2, "rx_packets": 10, "tx_packets": 20, "rx_bytes": 1000, "tx_bytes": 2000,
                                 "rx_dropped": 1, "tx_dropped": 2},
                                {"port": 9, "rx_packets": 0, "tx_packets": 0, "rx_bytes": 0, "tx_bytes": 0,
                                 "rx_dropped": 0, "tx_dropped": 0}]}
    samples = port_samples("s5", {2: "level3"}, msg)
    assert samples == [{"t": 12.5, "link": "s5:level3", "direction": "port", "rx_pkts": 10, "tx_pkts": 20,
                        "rx_bytes": 1000, "tx_bytes": 2000, "port_drops": 3}]


def test_switched_core_paths_have_the_documented_rtts() -> None:
    plan = build_plan("sc2002", SWITCHED)
    links = {k: resolve(v, None) for k, v in plan.shaped.items()}
    assert figures(plan, links, "cern", "sunnyvale", "level3").rtt_ms == pytest.approx(180, abs=0.5)
    assert figures(plan, links, "cern", "sunnyvale", "abilene").rtt_ms == pytest.approx(190, abs=0.5)
    assert "rabil" not in plan.nodes and {"s5", "s6", "s7"} <= {n for n, p in plan.nodes.items() if p.openflow}


BASE = {"name": "reroute", "topology": "sc2002", "topology_args": SWITCHED, "duration_s": 30,
        "controller": {"app": "paths"}, "flows": [{"src": "cern", "dst": "sunnyvale", "cc": "reno"}]}


@pytest.mark.parametrize("change, field", [
    ({"reroutes": [{"at_s": 40, "path": "abilene"}]}, "reroutes[0].at_s"),
    ({"reroutes": [{"at_s": 5, "path": "atlantis"}]}, "reroutes[0].path"),
    ({"reroutes": [{"at_s": 5, "path": "abilene", "flows": ["f7"]}]}, "reroutes[0].flows"),
    ({"reroutes": [{"at_s": 5, "path": "abilene"}], "controller": None}, "reroutes"),
    ({"controller": {"app": "paths", "stats_hz": 2}}, "controller.stats_hz"),
    ({"controller": {"app": "pox"}}, "controller.app"),
    ({"topology_args": {"scale": 0.02}}, "controller"),  # routed core: nothing to control
    ({"flows": [{"src": "cern", "dst": "sunnyvale", "cc": "reno", "path": "abilene"}], "topology_args": {"scale": 0.02},
      "controller": None}, "flows[0].path"),
])
def test_bad_controller_and_reroute_specs_name_the_field(change: dict, field: str) -> None:
    data = {k: v for k, v in (BASE | change).items() if v is not None}
    with pytest.raises(SpecError, match=field.replace("[", r"\[").replace("]", r"\]")):
        validate(parse_spec(data), KERNEL)


def test_a_good_reroute_spec_is_accepted() -> None:
    spec = parse_spec(BASE | {"reroutes": [{"at_s": 10, "path": "abilene"}, {"at_s": 20, "path": "level3",
                                                                           "flows": ["f1"]}]})
    assert validate(spec, KERNEL).metadata["openflow"]["default_path"] == "level3"
