"""DOCSIS cable access, the low-speed FAST evaluation path, and its simple-link twin.

    server* -- s1 -- rnet ==[path: 100 ms RTT emulator, 2048 KB buffer]== rcmts ==[cable]== rcm -- s2 -- client*

The cable link's forward direction is the downstream (CMTS -> cable modem): Cisco's downstream
"token-bucket shaping" (CISCO-DOCS-EXT-MIB cdxQosIfRateLimitAlgm; Cisco Broadband Cable Command
Reference) at 3 Mb/s with a peak at the downstream PHY rate: a packet short of tokens is given the
delay until they refill, rounded up to the shaping queue's `granularity` (4 ms, the IOS default),
and dropped when that delay would exceed `max-delay`, a drop threshold, not a buffer size (512 ms,
the study's stated configuration; the IOS 12.2BC default is 128). Its reverse direction is the
upstream: 512 kb/s through the request-grant MAC of the emulator (MAP interval, request-to-grant
lookahead, request transit, piggybacked requests, concatenation, upstream token bucket), whose
parameters default to docs/design.md §5 and are overridable under `links.cable.reverse.policy`.

On top of that sourced model sits one element that is NOT a mechanism: `phantom: calibrated` (the
default) adds the load- and flow-dependent delay Atov et al. measured on a real Cisco CMTS and modem
and call unexplained (one flow: ~45 ms when busy; two flows: enough more that each needed alpha 22
where one needed 13) -- empirical, calibrated to Atov et al.'s measurements; the mechanism is unknown
(`fastlab.define.schema.PhantomDelay`, linkemu/phantom.h; its parameters under `links.cable.policy.phantom`,
fitted by `bench/docsis.py --fit`). `phantom: off` gives the documented mechanisms alone, which do
not explain the measurement. `mode: simple` is the baseline twin: the same capacities, buffering and
RTT, plain rate-limited queues, no MAC, no shaping slots, no phantom.

Assumptions, named: the path emulator carries 100 Mb/s (it is not the bottleneck); the downstream
PHY rate is 38 Mb/s (one 256-QAM 6 MHz channel); the cable modem's upstream buffer is 512 ms of
upstream capacity like the CMTS's.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, field_validator

from fastlab.define.schema import (
    Buffer,
    DocsisUpstreamPolicy,
    LinkDirection,
    LinkSpec,
    PhantomDelay,
    Strict,
    TokenBucketPolicy,
)
from fastlab.define.topology import PlanBuilder, TopologyPlan

NAME = "docsis"
DESCRIPTION = "DOCSIS cable access (3 Mb/s down, 512 kb/s up, request-grant MAC) or its simple-link twin"

INTERNET_LAN, HOME_LAN = "10.21.0", "10.22.0"
PATH_RATE_MBPS = 100.0
PING_BYTES = 84  # IP bytes of a default ping


CISCO_MAX_DELAY_DEFAULT_MS = 128.0  # IOS 12.2BC's max-delay default, beside the study's 512
CISCO_GRANULARITY_DEFAULT_MS = 4.0  # IOS default slot width of the shaping queue


class Args(Strict):
    mode: Literal["docsis", "simple"] = Field("docsis", description="docsis: request-grant MAC; simple: plain link")
    phantom: Literal["calibrated", "off"] = Field(
        "calibrated", description="docsis: the load- and flow-dependent delay calibrated to Atov et al.'s "
                                  "measurements "
                                  "(empirical; the mechanism is unknown), or the documented mechanisms alone")
    downstream_mbps: float = Field(3.0, gt=0, le=10_000)
    upstream_kbps: float = Field(512.0, gt=0, le=10_000_000)
    base_rtt_ms: float = Field(100.0, ge=0, le=10_000, description="added by the path emulator")
    cmts_buffer_ms: float = Field(512.0, gt=0, le=100_000,
                                  description="CMTS downstream: docsis: the shaper's max-delay, a drop threshold on "
                                              "the shaping delay (the study's 512; IOS 12.2BC default 128); simple: "
                                              "a buffer of that many ms of the rate")
    shaping_granularity_ms: float = Field(CISCO_GRANULARITY_DEFAULT_MS, ge=0.001, le=1000,
                                          description="docsis: the shaping queue's slot width (Cisco 1/2/4/8/16)")

    @field_validator("phantom", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        """YAML reads a bare `off` (and `on`) as a boolean: `phantom: off` means the element is off."""
        if value is False:
            return "off"
        if value is True:
            return "calibrated"
        return value
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
    phantom = PhantomDelay(model="calibrated_flow_delay") if args.phantom == "calibrated" else None
    shaper = TokenBucketPolicy(model="token_bucket", peak_mbps=args.downstream_phy_mbps,
                               max_delay_ms=args.cmts_buffer_ms, granularity_ms=args.shaping_granularity_ms,
                               phantom=phantom)
    # docsis: max-delay limits the shaping queue; the byte limit behind it is twice that, never reached
    cable = LinkSpec(
        rate_mbps=args.downstream_mbps, delay_ms=0.0, jitter_ms=0.0,
        buffer=Buffer(args.cmts_buffer_ms * (2 if docsis else 1), "ms"),
        policy=shaper if docsis else None,
        reverse=LinkDirection(rate_mbps=args.upstream_kbps / 1000, delay_ms=0.0, jitter_ms=0.0,
                              buffer=Buffer(args.upstream_buffer_ms, "ms"), policy=upstream_mac if docsis else None))
    net, cmts = b.wire("rnet", "rcmts", "path", path, args.base_rtt_ms, "path emulator (Internet)")
    about = (f"DOCSIS downstream (shaper max-delay {args.cmts_buffer_ms:g} ms, slots "
             f"{args.shaping_granularity_ms:g} ms{', calibrated phantom delay' if phantom else ''}) / upstream MAC"
             if docsis else "simple link, same capacities")
    head, modem = b.wire("rcmts", "rcm", "cable", cable, args.base_rtt_ms, about)
    b.route("rnet", f"{HOME_LAN}.0/24", cmts)
    b.route("rcmts", f"{HOME_LAN}.0/24", modem)
    b.route("rcmts", f"{INTERNET_LAN}.0/24", net)
    b.route("rcm", "0.0.0.0/0", head)
    endpoint = {"src": "server", "dst": "client", "rtt_ms": args.base_rtt_ms}
    if docsis:
        endpoint["mac_latency_ms"] = list(idle_mac_latency_ms(upstream_mac))
    calibrated = None
    if docsis and phantom is not None:
        calibrated = {"element": "links.cable.policy.phantom", "max_delay_ms": phantom.max_delay_ms,
                      "knee": phantom.knee, "window_ms": phantom.window_ms, "flow_exponent": phantom.flow_exponent,
                      "note": "empirical, calibrated to Atov et al.'s measurements (TENCON 2005); the mechanism "
                              "is unknown: bench/docsis.py --fit"}
    return b.build(mode=args.mode, rtt_ms=args.base_rtt_ms, capacity_mbps=args.downstream_mbps,
                   upstream_mbps=args.upstream_kbps / 1000, endpoints=[endpoint], calibrated=calibrated)
