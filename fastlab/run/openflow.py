"""OpenFlow path selection: the flow rules that pin each TCP flow to a path of a switched core.

A topology with an OpenFlow core describes it in `plan.metadata["openflow"]`:

    switches: {s5: {core: rstar, paths: {level3: level3, abilene: abilene-east}},   # edge switches
               s7: {transit: [abilene-east, abilene-west]}}                        # transit switches
    paths: {level3: {links: [level3], description: ...}, ...}
    default_path: level3

Ports are named by what they lead to: a shaped link's id, or the router an edge switch serves.
This module is pure: `plan_rules` turns that design, the switches' OpenFlow port numbers and
each flow's path into `Rule`s; the controller app (controllers/fastlab_paths.py) sends them as
FlowMods and `Rule.ofctl` renders them for `ovs-ofctl` when a run has no controller.

Rule layout on an edge switch (higher priority wins):
    300  tcp flow tuple from the router (both directions' tuples) -> the flow's path
    150  icmp between the flow's hosts -> the path of their flows (idle RTT pings follow them)
    100  anything arriving from a path -> the router
     10  anything else from the router (ARP, other traffic) -> the default path
A transit switch forwards each of its two links to the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PRIO_FLOW = 300
PRIO_PAIR = 150
PRIO_TO_CORE = 100
PRIO_DEFAULT = 10
ETH_IPV4 = 0x0800
IP_TCP = 6
IP_ICMP = 1


class OpenFlowError(ValueError):
    """A design, port map or flow assignment the rule planner cannot satisfy."""


@dataclass(frozen=True)
class FlowPath:
    """One TCP flow (data src -> dst:port; ACKs come back from that port) and the path it takes."""

    id: str
    src_ip: str
    dst_ip: str
    port: int
    path: str


@dataclass(frozen=True)
class Rule:
    switch: str
    priority: int
    in_port: int
    out_port: int
    ip_proto: int | None = None  # None: match any frame from in_port
    src_ip: str | None = None
    dst_ip: str | None = None
    tcp_dst: int | None = None
    tcp_src: int | None = None
    flow: str | None = None  # the flow id a per-flow rule belongs to

    def match(self) -> dict[str, Any]:
        """OXM fields in os-ken's OFPMatch keyword form."""
        fields: dict[str, Any] = {"in_port": self.in_port}
        if self.ip_proto is not None:
            fields |= {"eth_type": ETH_IPV4, "ip_proto": self.ip_proto}
            for key, value in (("ipv4_src", self.src_ip), ("ipv4_dst", self.dst_ip),
                               ("tcp_src", self.tcp_src), ("tcp_dst", self.tcp_dst)):
                if value is not None:
                    fields[key] = value
        return fields

    def ofctl(self) -> str:
        """The rule as an `ovs-ofctl add-flow` argument."""
        parts = [f"priority={self.priority}", f"in_port={self.in_port}"]
        if self.ip_proto is not None:
            parts.append({IP_TCP: "tcp", IP_ICMP: "icmp"}[self.ip_proto])
            for key, value in (("nw_src", self.src_ip), ("nw_dst", self.dst_ip),
                               ("tp_src", self.tcp_src), ("tp_dst", self.tcp_dst)):
                if value is not None:
                    parts.append(f"{key}={value}")
        return ",".join(parts) + f",actions=output:{self.out_port}"


def check_design(design: dict[str, Any]) -> None:
    """Raise OpenFlowError unless every edge switch reaches every path and transits have two links."""
    paths = set(design.get("paths", {}))
    if design.get("default_path") not in paths:
        raise OpenFlowError(f"default path {design.get('default_path')!r} is not one of {sorted(paths)}")
    for name, switch in design.get("switches", {}).items():
        if "core" in switch:
            missing = paths - set(switch.get("paths", {}))
            if missing:
                raise OpenFlowError(f"edge switch {name} has no port for path(s) {sorted(missing)}")
        elif len(switch.get("transit", [])) != 2:
            raise OpenFlowError(f"switch {name}: a transit switch joins exactly two links")


def _port(ofports: dict[str, dict[str, int]], switch: str, toward: str) -> int:
    try:
        return ofports[switch][toward]
    except KeyError:
        raise OpenFlowError(f"switch {switch} has no port toward {toward!r}") from None


def base_rules(design: dict[str, Any], ofports: dict[str, dict[str, int]]) -> list[Rule]:
    """Rules that do not depend on flows: delivery to the router, default path, transit."""
    check_design(design)
    rules = []
    for name, switch in design["switches"].items():
        if "core" in switch:
            core = _port(ofports, name, switch["core"])
            for link in sorted(set(switch["paths"].values())):
                rules.append(Rule(name, PRIO_TO_CORE, _port(ofports, name, link), core))
            rules.append(Rule(name, PRIO_DEFAULT, core,
                              _port(ofports, name, switch["paths"][design["default_path"]])))
        else:
            a, b = (_port(ofports, name, link) for link in switch["transit"])
            rules += [Rule(name, PRIO_TO_CORE, a, b), Rule(name, PRIO_TO_CORE, b, a)]
    return rules


def flow_rules(design: dict[str, Any], ofports: dict[str, dict[str, int]], flow: FlowPath) -> list[Rule]:
    """The rules that pin one flow (both directions) to its path, on every edge switch."""
    if flow.path not in design["paths"]:
        raise OpenFlowError(f"flow {flow.id}: unknown path {flow.path!r} (paths: {', '.join(design['paths'])})")
    rules = []
    for name, switch in design["switches"].items():
        if "core" not in switch:
            continue
        core, out = _port(ofports, name, switch["core"]), _port(ofports, name, switch["paths"][flow.path])
        rules += [Rule(name, PRIO_FLOW, core, out, IP_TCP, flow.src_ip, flow.dst_ip, tcp_dst=flow.port, flow=flow.id),
                  Rule(name, PRIO_FLOW, core, out, IP_TCP, flow.dst_ip, flow.src_ip, tcp_src=flow.port, flow=flow.id)]
    return rules


def pair_rules(design: dict[str, Any], ofports: dict[str, dict[str, int]], flows: list[FlowPath]) -> list[Rule]:
    """ICMP between two hosts follows their flows' path when all their flows agree on one."""
    paths: dict[tuple[str, str], set[str]] = {}
    for flow in flows:
        paths.setdefault((flow.src_ip, flow.dst_ip), set()).add(flow.path)
    rules = []
    for (src, dst), chosen in sorted(paths.items()):
        if len(chosen) != 1:
            continue
        path = next(iter(chosen))
        for name, switch in design["switches"].items():
            if "core" in switch:
                core, out = _port(ofports, name, switch["core"]), _port(ofports, name, switch["paths"][path])
                rules += [Rule(name, PRIO_PAIR, core, out, IP_ICMP, src, dst),
                          Rule(name, PRIO_PAIR, core, out, IP_ICMP, dst, src)]
    return rules


def plan_rules(design: dict[str, Any], ofports: dict[str, dict[str, int]], flows: list[FlowPath]) -> list[Rule]:
    """Every rule of a run's start: base rules, ICMP pair rules and one pair of rules per flow."""
    rules = base_rules(design, ofports) + pair_rules(design, ofports, flows)
    for flow in flows:
        rules += flow_rules(design, ofports, flow)
    return rules
