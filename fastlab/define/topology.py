"""Topology plans: the pure description of a network, independent of how it is built.

A topology module in `topologies/` turns its validated arguments into a `TopologyPlan`: nodes
(hosts, routers, switches), plain links with addresses, static routes, and the shaped links
with their default impairments. `fastlab.net.network` builds the plan on Mininet; the shaping
planner turns each shaped link into tc commands or an emulator configuration.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from fastlab.define.schema import LinkSpec, format_validation_error


class TopologyError(ValueError):
    """Unknown topology or invalid topology_args; the message names the field."""


@dataclass(frozen=True)
class Route:
    dst: str  # CIDR
    via: str  # next-hop address


@dataclass
class NodePlan:
    name: str
    role: Literal["host", "router", "switch"]
    routes: list[Route] = field(default_factory=list)
    site: str = ""
    openflow: bool = False  # a switch whose forwarding a controller (or static flows) decides


@dataclass(frozen=True)
class LinkPlan:
    """A plain link (veth) between two nodes; `shaped` names the shaped link it carries, if any."""

    a: str
    b: str
    a_ip: str | None = None  # CIDR on a's interface
    b_ip: str | None = None
    shaped: str | None = None


@dataclass(frozen=True)
class ShapedLinkPlan:
    """Default impairments of a shaped link (forward = a -> b) and the RTT its BDP refers to."""

    id: str
    a: str
    b: str
    profile: LinkSpec
    rtt_ms: float
    description: str = ""


@dataclass
class TopologyPlan:
    name: str
    nodes: dict[str, NodePlan]
    links: list[LinkPlan]
    shaped: dict[str, ShapedLinkPlan]
    metadata: dict[str, Any] = field(default_factory=dict)

    def host_names(self) -> set[str]:
        return {n for n, node in self.nodes.items() if node.role == "host"}

    def address_of(self, host: str) -> str:
        for link in self.links:
            if link.a == host and link.a_ip:
                return link.a_ip.split("/")[0]
            if link.b == host and link.b_ip:
                return link.b_ip.split("/")[0]
        raise TopologyError(f"host {host!r} has no address")


    def pruned(self, keep_hosts: set[str]) -> TopologyPlan:
        """The plan without the hosts no flow uses (and their access links): they carry nothing."""
        drop = self.host_names() - keep_hosts
        links = [link for link in self.links if link.a not in drop and link.b not in drop]
        shaped = {k: v for k, v in self.shaped.items() if v.a not in drop and v.b not in drop}
        nodes = {k: v for k, v in self.nodes.items() if k not in drop}
        return TopologyPlan(self.name, nodes, links, shaped, self.metadata)

    def unshaped(self, ids: set[str]) -> TopologyPlan:
        """The plan with the shaped links `ids` built as plain links: no flow crosses them, so
        they get no link node and no emulator (addresses and routes stay as they were)."""
        links = [LinkPlan(link.a, link.b, link.a_ip, link.b_ip) if link.shaped in ids else link
                 for link in self.links]
        shaped = {k: v for k, v in self.shaped.items() if k not in ids}
        return TopologyPlan(self.name, dict(self.nodes), links, shaped, self.metadata)


class PlanBuilder:
    """Builds a TopologyPlan: sites as LANs (router + switch), hosts, shaped wires between nodes."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: dict[str, NodePlan] = {}
        self.links: list[LinkPlan] = []
        self.shaped: dict[str, ShapedLinkPlan] = {}
        self._wires = 0

    def router(self, name: str, site: str = "") -> str:
        self.nodes[name] = NodePlan(name, "router", site=site)
        return name

    @staticmethod
    def _check_switch_name(switch: str) -> None:
        if not (switch.startswith("s") and switch[1:].isdigit()):
            raise TopologyError(f"switch names are s<N> (they live in the root namespace): {switch!r}")

    def lan(self, router: str, switch: str, subnet: str) -> None:
        """A site LAN `subnet`.0/24 on `switch`, with `router` at .254."""
        self._check_switch_name(switch)
        self.nodes[switch] = NodePlan(switch, "switch")
        self.links.append(LinkPlan(router, switch, a_ip=f"{subnet}.254/24"))

    def openflow_switch(self, switch: str, site: str = "") -> str:
        """An OpenFlow switch: always OVS, forwarding only what its flow rules say (no learning)."""
        self._check_switch_name(switch)
        self.nodes[switch] = NodePlan(switch, "switch", site=site, openflow=True)
        return switch

    def attach(self, router: str, switch: str, cidr: str) -> None:
        """A router interface with address `cidr` on a switch."""
        self.links.append(LinkPlan(router, switch, a_ip=cidr))

    def switch_wire(self, a: str, b: str, link_id: str, profile: LinkSpec, rtt_ms: float, description: str) -> None:
        """A shaped link between two switches (layer 2: no addresses)."""
        self.links.append(LinkPlan(a, b, shaped=link_id))
        self.shaped[link_id] = ShapedLinkPlan(link_id, a, b, profile, rtt_ms=rtt_ms, description=description)

    def host(self, name: str, switch: str, subnet: str, index: int, site: str = "",
             access: tuple[str, LinkSpec, float] | None = None) -> str:
        """A host at `subnet`.`index` on `switch`; `access` = (link id, profile, BDP RTT) shapes its link."""
        self.nodes[name] = NodePlan(name, "host", routes=[Route("0.0.0.0/0", f"{subnet}.254")], site=site)
        self.links.append(LinkPlan(name, switch, a_ip=f"{subnet}.{index}/24", shaped=access[0] if access else None))
        if access:
            link_id, profile, rtt_ms = access
            self.shaped[link_id] = ShapedLinkPlan(link_id, name, switch, profile, rtt_ms=rtt_ms,
                                                  description=f"{name}'s access link")
        return name

    def wire(self, a: str, b: str, link_id: str, profile: LinkSpec, rtt_ms: float, description: str) -> tuple[str, str]:
        """A shaped point-to-point link between routers; returns their addresses."""
        self._wires += 1
        a_ip, b_ip = f"10.0.{self._wires}.1", f"10.0.{self._wires}.2"
        self.links.append(LinkPlan(a, b, a_ip=f"{a_ip}/24", b_ip=f"{b_ip}/24", shaped=link_id))
        self.shaped[link_id] = ShapedLinkPlan(link_id, a, b, profile, rtt_ms=rtt_ms, description=description)
        return a_ip, b_ip

    def route(self, node: str, dst: str, via: str) -> None:
        self.nodes[node].routes.append(Route(dst, via))

    def build(self, **metadata: Any) -> TopologyPlan:
        return TopologyPlan(self.name, self.nodes, self.links, self.shaped, metadata)


TOPOLOGY_MODULES = {"dumbbell": "dumbbell", "sc2002": "sc2002", "docsis": "docsis", "ucl-cern": "ucl_cern",
                    "ucl-slac": "ucl_slac"}


def load_module(name: str) -> Any:
    if name not in TOPOLOGY_MODULES:
        raise TopologyError(f"topology: unknown topology {name!r} (known: {', '.join(TOPOLOGY_MODULES)})")
    return importlib.import_module(f"topologies.{TOPOLOGY_MODULES[name]}")


def build_plan(name: str, args: dict[str, Any]) -> TopologyPlan:
    module = load_module(name)
    try:
        parsed = module.Args.model_validate(args or {})
    except ValidationError as err:
        raise TopologyError("topology_args." + format_validation_error(err)) from None
    return module.plan(parsed)


def catalogue() -> list[dict[str, str]]:
    """Rows for `fastlab topo list`."""
    rows = []
    for name in TOPOLOGY_MODULES:
        module = load_module(name)
        rows.append({"name": name, "description": module.DESCRIPTION,
                     "arguments": ", ".join(module.Args.model_fields)})
    return rows
