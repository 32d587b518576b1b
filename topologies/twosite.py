"""Two sites joined by one shaped wire: the shape of the dumbbell and the UCL test paths.

    left hosts -- s1 -- r1 ==[link]== r2 -- s2 -- right hosts

A research path can also give each left (sending) host its own unlimited, delay-free link
`<host>-link`, so that a spec sets loss per sending host rather than on the shared wire.

All delay sits on the wire (half the RTT each way), inside its link node: never on a sending
host, where delay interacts with TCP Small Queues and throttles the sender.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fastlab.define.schema import Buffer, LinkSpec, Strict
from fastlab.define.topology import PlanBuilder, TopologyPlan

LEFT_LAN, RIGHT_LAN = "10.1.0", "10.2.0"


ACCESS_RATE_MBPS = 100_000.0  # delay-only access links: far above any bottleneck here
ACCESS_BUFFER_PKTS = 100_000


def two_site(name: str, left: list[str], right: list[str], *, rate_mbps: float, rtt_ms: float,
             buffer_bdp: float, link_id: str = "bottleneck", sites: tuple[str, str] = ("left", "right"),
             right_extra_rtt_ms: list[float] | None = None, left_links: bool = False,
             **metadata: object) -> TopologyPlan:
    """`right_extra_rtt_ms[k]` adds RTT to right host k on its own access link (a link node, so
    the delay is never on a host), giving flows different base RTTs through one bottleneck.
    `left_links` gives every left host its own link `<host>-link` (no delay, no rate limit)."""
    b = PlanBuilder(name)
    b.router("r1", sites[0])
    b.router("r2", sites[1])
    b.lan("r1", "s1", LEFT_LAN)
    b.lan("r2", "s2", RIGHT_LAN)
    unlimited = LinkSpec(rate_mbps=ACCESS_RATE_MBPS, delay_ms=0.0, jitter_ms=0.0,
                         buffer=Buffer(ACCESS_BUFFER_PKTS, "packets"))
    for index, host in enumerate(left, start=1):
        own = (f"{host}-link", unlimited, rtt_ms) if left_links else None
        b.host(host, "s1", LEFT_LAN, index, site=sites[0], access=own)
    extra = right_extra_rtt_ms or [0.0] * len(right)
    for index, (host, more) in enumerate(zip(right, extra, strict=True), start=1):
        access = None
        if more > 0:
            access = (f"{host}-access", LinkSpec(rate_mbps=ACCESS_RATE_MBPS, delay_ms=more / 2, jitter_ms=0.0,
                                                 buffer=Buffer(ACCESS_BUFFER_PKTS, "packets")), rtt_ms + more)
        b.host(host, "s2", RIGHT_LAN, index, site=sites[1], access=access)
    # Symmetric: the reverse direction inherits rate, delay and buffer (not loss).
    profile = LinkSpec(rate_mbps=rate_mbps, delay_ms=rtt_ms / 2, jitter_ms=0.0, buffer=Buffer(buffer_bdp, "bdp"))
    r1, r2 = b.wire("r1", "r2", link_id, profile, rtt_ms, f"{sites[0]} -> {sites[1]}")
    b.route("r1", f"{RIGHT_LAN}.0/24", r2)
    b.route("r2", f"{LEFT_LAN}.0/24", r1)
    endpoints = [{"src": a, "dst": z, "rtt_ms": rtt_ms + more} for a, z, more in zip(left, right, extra, strict=False)]
    return b.build(rtt_ms=rtt_ms, capacity_mbps=rate_mbps, endpoints=endpoints if right_extra_rtt_ms else endpoints[:1],
                   **metadata)


class PathArgs(Strict):
    """Arguments of a fixed research path: only its scale and size are the user's to choose."""

    scale: float = Field(1.0, gt=0, le=1, description="divides capacities, keeps delays")
    hosts: int = Field(2, ge=1, le=16, description="hosts per site (e.g. ucl, ucl2, ...)")
    buffer_bdp: float = Field(1.0, gt=0, le=1000, description="bottleneck buffer in BDP multiples (assumption)")
    sender_links: Literal["shared", "own"] = Field(
        "shared", description="own: each sending host (ucl, ucl2, ...) gets its own link <host>-link, no delay or "
                              "rate limit, so loss can be set per flow (links: {ucl-link: {loss: ...}})")


def research_path(name: str, args: PathArgs, sites: tuple[str, str], rate_mbps: float, rtt_ms: float) -> TopologyPlan:
    """A documented path between two sites; hosts are named after their site (ucl, ucl2, ...)."""
    def names(site: str) -> list[str]:
        return [site] + [f"{site}{k}" for k in range(2, args.hosts + 1)]

    left, right = (names(s.lower()) for s in sites)
    own = args.sender_links == "own"
    originals = {"bottleneck": rate_mbps} | ({f"{host}-link": ACCESS_RATE_MBPS for host in left} if own else {})
    return two_site(name, left, right, rate_mbps=rate_mbps * args.scale, rtt_ms=rtt_ms, buffer_bdp=args.buffer_bdp,
                    left_links=own, sites=sites, scale=args.scale, original_capacities_mbps=originals)
