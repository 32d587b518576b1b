"""DOCSIS cable access, the low-speed FAST evaluation path, and its simple-link twin.

    server* -- s1 -- rnet ==[path: 100 ms RTT emulator, 2048 KB buffer]== rcmts ==[cable]== rcm -- s2 -- client*

The cable link's forward direction is the downstream (CMTS -> cable modem): a 3 Mb/s token
bucket (peak at the downstream PHY rate) behind the CMTS buffer, up to 512 ms (Cisco default).
Its reverse direction is the upstream: 512 kb/s through the request-grant MAC of the emulator
(MAP interval, request-to-grant lookahead, request transit, piggybacked requests,
concatenation, upstream token bucket), whose parameters default to DESIGN.md §5 and are
overridable under `links.cable.reverse.policy`. `mode: simple` is the baseline twin: the same
capacities, buffers and RTT, plain rate-limited queues, no MAC.

Assumptions, named: the path emulator carries 100 Mb/s (it is not the bottleneck); the downstream
PHY rate is 38 Mb/s (one 256-QAM 6 MHz channel); the cable modem's upstream buffer is 512 ms of
upstream capacity like the CMTS's.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from fastlab.spec import Buffer, DocsisUpstreamPolicy, LinkDirection, LinkSpec, Strict, TokenBucketPolicy
from fastlab.topology import PlanBuilder, TopologyPlan

NAME = "docsis"
DESCRIPTION = "DOCSIS cable access (3 Mb/s down, 512 kb/s up, request-grant MAC) or its simple-link twin"

INTERNET_LAN, HOME_LAN = "10.21.0", "10.22.0"
PATH_RATE_MBPS = 100.0
PING_BYTES = 84  # IP bytes of a default ping


class Args(Strict):
    mode: Literal["docsis", "simple"] = Field("docsis", description="docsis: request-grant MAC; simple: plain link")
    downstream_mbps: float = Field(3.0, gt=0, le=10_000)
    upstream_kbps: float = Field(512.0, gt=0, le=10_000_000)
    base_rtt_ms: float = Field(100.0, ge=0, le=10_000, description="added by the path emulator")
    cmts_buffer_ms: float = Field(512.0, gt=0, le=100_000, description="CMTS downstream buffer")
    upstream_buffer_ms: float = Field(512.0, gt=0, le=100_000, description="cable modem buffer (assumption)")
    path_buffer_kb: float = Field(2048.0, gt=0, le=10_000_000, description="the path emulator's own buffer")
    downstream_phy_mbps: float = Field(38.0, gt=0, le=100_000, description="downstream token-bucket peak")
    servers: int = Field(1, ge=1, le=8, description="hosts on the Internet side (server, server2, ...)")
    clients: int = Field(1, ge=1, le=8, description="hosts behind the modem (client, client2, ...)")


def idle_mac_latency_ms(policy: DocsisUpstreamPolicy, frame_bytes: int = PING_BYTES) -> tuple[float, float]:
    """Range of the MAC's extra delay for a lone upstream frame: wait for the next contention
    slot (0..one MAP), the request's transit + lookahead rounded up to whole MAPs, then the
    frame on the PHY (fragmented over further MAPs if one MAP cannot carry it)."""
    m = policy.map_interval_ms
    to_grant = math.ceil((policy.request_transit_ms + policy.lookahead_ms) / m - 1e-9) * m
    per_map_bytes = policy.phy_rate_mbps * 1e6 / 8 * m / 1000
    extra_maps = max(0, math.ceil(frame_bytes / per_map_bytes) - 1)
    wire = (frame_bytes * 8 / (policy.phy_rate_mbps * 1e6) * 1000) if extra_maps == 0 else extra_maps * m
    return to_grant + wire, to_grant + wire + m


def names(site: str, count: int) -> list[str]:
    return [site] + [f"{site}{k}" for k in range(2, count + 1)]


def plan(args: Args) -> TopologyPlan:
    b = PlanBuilder(NAME)
    b.router("rnet", "Internet")
    b.router("rcmts", "CMTS")
    b.router("rcm", "cable modem")
    b.lan("rnet", "s1", INTERNET_LAN)
    b.lan("rcm", "s2", HOME_LAN)
    for index, host in enumerate(names("server", args.servers), start=1):
        b.host(host, "s1", INTERNET_LAN, index, site="Internet")
    for index, host in enumerate(names("client", args.clients), start=1):
        b.host(host, "s2", HOME_LAN, index, site="home")
    path = LinkSpec(rate_mbps=PATH_RATE_MBPS, delay_ms=args.base_rtt_ms / 2, jitter_ms=0.0,
                    buffer=Buffer(args.path_buffer_kb * 1000, "bytes"))
    docsis = args.mode == "docsis"
    upstream_mac = DocsisUpstreamPolicy(model="docsis_upstream")
    cable = LinkSpec(
        rate_mbps=args.downstream_mbps, delay_ms=0.0, jitter_ms=0.0, buffer=Buffer(args.cmts_buffer_ms, "ms"),
        policy=TokenBucketPolicy(model="token_bucket", peak_mbps=args.downstream_phy_mbps) if docsis else None,
        reverse=LinkDirection(rate_mbps=args.upstream_kbps / 1000, delay_ms=0.0, jitter_ms=0.0,
                              buffer=Buffer(args.upstream_buffer_ms, "ms"), policy=upstream_mac if docsis else None))
    net, cmts = b.wire("rnet", "rcmts", "path", path, args.base_rtt_ms, "path emulator (Internet)")
    head, modem = b.wire("rcmts", "rcm", "cable", cable, args.base_rtt_ms,
                         "DOCSIS downstream / upstream" if docsis else "simple link, same capacities")
    b.route("rnet", f"{HOME_LAN}.0/24", cmts)
    b.route("rcmts", f"{HOME_LAN}.0/24", modem)
    b.route("rcmts", f"{INTERNET_LAN}.0/24", net)
    b.route("rcm", "0.0.0.0/0", head)
    endpoint = {"src": "server", "dst": "client", "rtt_ms": args.base_rtt_ms}
    if docsis:
        endpoint["mac_latency_ms"] = list(idle_mac_latency_ms(upstream_mac))
    return b.build(mode=args.mode, rtt_ms=args.base_rtt_ms, capacity_mbps=args.downstream_mbps,
                   upstream_mbps=args.upstream_kbps / 1000, endpoints=[endpoint])
