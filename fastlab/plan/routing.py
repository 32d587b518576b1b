"""Paths through a topology plan, found by following its static routes (pure).

`hops` finds a route; `figures` says what a path is — RTT, bottleneck, BDP — from the shaped links its
routes cross; `upstream_rates` and `idle_links` judge the links from the same routes. fastlab.plan.prepare finds
every route a run needs once (`trace`) and every consumer reads them there. Forwarding is
longest-prefix match over each node's routes and directly connected subnets, hop by hop, across
switches at layer 2.
"""

from __future__ import annotations

import ipaddress
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fastlab.define.topology import LinkPlan, TopologyError, TopologyPlan
from fastlab.plan.links import ResolvedLink

Crossing = tuple[str, bool]  # a shaped link crossed: (link id, from a to b?)


@dataclass(frozen=True)
class Hop:
    link: LinkPlan
    forward: bool  # crossed from a to b


@dataclass(frozen=True)
class PathFigures:
    src: str
    dst: str
    rtt_ms: float
    bottleneck_mbps: float | None
    bottleneck_link: str | None
    bdp_pkts: float | None
    shaped_links: list[str]


def _interfaces(plan: TopologyPlan) -> dict[str, list[ipaddress.IPv4Interface]]:
    table: dict[str, list[ipaddress.IPv4Interface]] = {}
    for link in plan.links:
        for node, cidr in ((link.a, link.a_ip), (link.b, link.b_ip)):
            if cidr:
                table.setdefault(node, []).append(ipaddress.IPv4Interface(cidr))
    return table


def _off_path_links(plan: TopologyPlan, path: str | None) -> set[str]:
    """Shaped links of the OpenFlow core that the chosen path (default: the plan's) does not use."""
    design = plan.metadata.get("openflow")
    if not design:
        return set()
    chosen = path or design["default_path"]
    if chosen not in design["paths"]:
        raise TopologyError(f"unknown path {chosen!r} (paths: {', '.join(sorted(design['paths']))})")
    return {link for name, p in design["paths"].items() if name != chosen for link in p["links"]}


def _l2_hops(plan: TopologyPlan, start: str, goal: str, off_path: set[str]) -> list[Hop]:
    """Links from `start` to `goal` through switches only, avoiding the other paths' links."""
    switches = {n for n, node in plan.nodes.items() if node.role == "switch"}
    queue: deque[tuple[str, list[Hop]]] = deque([(start, [])])
    seen = {start}
    while queue:
        node, hops = queue.popleft()
        for link in plan.links:
            if link.shaped in off_path:
                continue
            for here, there, forward in ((link.a, link.b, True), (link.b, link.a, False)):
                if here != node or there in seen:
                    continue
                if there == goal:
                    return [*hops, Hop(link, forward)]
                if there in switches:
                    seen.add(there)
                    queue.append((there, [*hops, Hop(link, forward)]))
    raise TopologyError(f"no layer-2 path from {start} to {goal}")


def hops(plan: TopologyPlan, src: str, dst: str, path: str | None = None) -> list[Hop]:
    """The links src's packets to dst cross, hop by hop (over `path` of an OpenFlow core, default its
    default path). Called from one place, fastlab.plan.prepare.trace: everything else reads its Routes."""
    off_path = _off_path_links(plan, path)
    interfaces = _interfaces(plan)
    owner = {iface.ip: node for node, ifaces in interfaces.items() for iface in ifaces}
    target = ipaddress.IPv4Address(plan.address_of(dst))
    node, route = src, list[Hop]()
    for _ in range(64):
        if node == dst:
            return route
        connected = [(i.network, target) for i in interfaces.get(node, []) if target in i.network]
        if connected:
            next_hop = target
        else:
            routes = [(ipaddress.IPv4Network(r.dst), ipaddress.IPv4Address(r.via)) for r in plan.nodes[node].routes]
            matches = [r for r in routes if target in r[0]]
            if not matches:
                raise TopologyError(f"{node} has no route to {dst} ({target})")
            next_hop = max(matches, key=lambda r: r[0].prefixlen)[1]
        nxt = owner.get(next_hop)
        if nxt is None:
            raise TopologyError(f"{node}: next hop {next_hop} toward {dst} belongs to no node")
        route += _l2_hops(plan, node, nxt, off_path)
        node = nxt
    raise TopologyError(f"routing loop from {src} to {dst}")


def crossings(route: list[Hop]) -> tuple[Crossing, ...]:
    """The shaped links a route crosses, in order, each with its direction (True: from a to b)."""
    return tuple((hop.link.shaped, hop.forward) for hop in route if hop.link.shaped)


def figures(links: dict[str, ResolvedLink], src: str, dst: str, there: Sequence[Crossing],
            back: Sequence[Crossing]) -> PathFigures:
    """Base RTT (both directions' one-way delays), the bottleneck and the BDP of src -> dst, from the
    shaped crossings of its way there and back (fastlab.plan.prepare.Routes: the one place routes are found)."""
    delay_us = 0
    bottleneck: tuple[float, str] | None = None
    for route, outbound in ((there, True), (back, False)):
        for link_id, forward in route:
            link = links[link_id]
            direction = link.forward if forward else link.reverse
            delay_us += direction.delay_us
            if outbound and (bottleneck is None or direction.rate_bps / 1e6 < bottleneck[0]):
                bottleneck = (direction.rate_bps / 1e6, link_id)
    rtt_ms = delay_us / 1000
    # in packets of the run's MTU (every direction carries it)
    bdp = (bottleneck[0] * 1e6 * rtt_ms / 1000 / (8 * links[bottleneck[1]].forward.mtu_bytes)
           if bottleneck else None)
    return PathFigures(src, dst, rtt_ms, bottleneck[0] if bottleneck else None, bottleneck[1] if bottleneck else None,
                       round(bdp, 1) if bdp is not None else None, [link_id for link_id, _ in there])


def upstream_per_crossing(links: dict[str, ResolvedLink],
                          routes: Iterable[Sequence[Crossing]]) -> dict[Crossing, list[int]]:
    """For each shaped link direction (link id, forward?): per route that crosses it, the rate of
    the slowest shaped hop the route crossed before it, bit/s (0: none yet, frames straight from a
    host, whose bursts arrive unspaced). On the emulated path a super-frame's segments stay spaced
    by the slowest hop so far."""
    arriving: dict[Crossing, list[int]] = {}
    for route in routes:
        so_far = 0
        for link_id, forward in route:
            arriving.setdefault((link_id, forward), []).append(so_far)
            link = links[link_id]
            rate = (link.forward if forward else link.reverse).rate_bps
            if rate:
                so_far = rate if so_far == 0 else min(so_far, rate)
    return arriving


def upstream_rates(links: dict[str, ResolvedLink], routes: Iterable[Sequence[Crossing]]) -> dict[Crossing, int]:
    """Per shaped link direction, the upstream rate linkemu may pipeline runs with
    (--XX-upstream-bps): 0 where some route reaches it straight from a host; over several routes
    the fastest upstream rate, which back-dates least."""
    return {key: 0 if 0 in rates else max(rates)
            for key, rates in upstream_per_crossing(links, routes).items()}


def idle_links(links: dict[str, ResolvedLink], data_routes: Sequence[Sequence[Crossing]],
               ack_routes: Sequence[Sequence[Crossing]]) -> dict[str, str]:
    """Shaped links that can never hold a packet, with the reason: no delay, jitter, loss or
    link-layer policy in either direction, and in each direction the data that crosses it was
    already spaced by upstream bottlenecks whose rates add up to no more than its own (a host's
    burst would queue, so a direction that data enters straight from a host does not qualify).
    Directions only ACKs cross qualify: ACKs are ~3 % of the data they acknowledge.

    Such a link adds one segment's serialization per packet and nothing else; building it as a
    plain link drops that constant (12 us at 1 Gb/s) and saves an emulator process.
    """
    arriving = upstream_per_crossing(links, data_routes)
    crossed = {link_id for route in (*data_routes, *ack_routes) for link_id, _ in route}
    idle = {}
    for link_id in sorted(crossed):
        link = links[link_id]
        if link.backend != "auto" or any(d.delay_us or d.jitter_us or d.loss or d.policy
                                         for d in (link.forward, link.reverse)):
            continue
        if all(0 not in (rates := arriving.get((link_id, forward), [])) and
               not (d.rate_bps and sum(rates) > d.rate_bps)
               for forward, d in ((True, link.forward), (False, link.reverse))):
            idle[link_id] = ("cannot queue: no delay or loss, and the data crossing it comes through upstream "
                             "bottlenecks no faster than it (or only ACKs cross it)")
    return idle
