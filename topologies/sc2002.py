"""The SC2002 / DataTAG research WAN of the FAST TCP demonstrations (November 2002).

    cern*  --GbE-- s1 -- rcern ==DataTAG 2.5G, 59 ms== rstar ==Level(3) 10G, 31 ms== rsunny -- s3 --GbE-- sunnyvale*
                                                     |  \\==Abilene 2.5G (alt.)== rabil ==//
    chicago* --GbE-- s2 ----------------------------+
    baltimore* --GbE-- s4 -- rbalt ==show floor 10G, 11.5 ms== rstar

Sites: CERN (Geneva), StarLight (Chicago), the Level(3) PoP at Sunnyvale, the SC2002 show floor
(Baltimore), and the Abilene backbone as the alternative StarLight-Sunnyvale path. Hosts are
dual-GbE servers: each host's GbE access link is shaped (it is the bottleneck of the 1- and
2-flow runs); several hosts per site carry the multi-flow runs. One-way delays follow the
documented RTTs: CERN-Sunnyvale 180 ms, Baltimore-Sunnyvale 85 ms, and the assumed split
CERN-StarLight 118 ms, StarLight-Sunnyvale 62 ms, Baltimore-StarLight 23 ms (docs/design.md §5).

With `core: switched` the StarLight-Sunnyvale core is layer 2 under OpenFlow control instead:
rstar and rsunny share one subnet across the OVS switches s5 (StarLight) and s6 (Sunnyvale),
joined directly by Level(3) and through s7 (the Abilene core) by Abilene; the path is chosen per
run or per flow by flow rules — from a controller (controllers/), which can also reroute flows
mid-run, or installed statically.

    rstar -- s5 ==Level(3)== s6 -- rsunny
              \\==Abilene== s7 ==Abilene==//

`scale` divides every capacity and keeps every delay, so FAST's equilibrium queue (alpha
packets per flow) is unchanged while the machine emulates a fraction of the bandwidth.
Assumptions, named here: the Abilene path is 2.5 Gb/s (OC-48) with 72 ms RTT StarLight-Sunnyvale
via one Abilene core router; buffers are one BDP of the longest path through each link.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fastlab.define.schema import Buffer, LinkSpec, Strict
from fastlab.define.topology import PlanBuilder, TopologyPlan

NAME = "sc2002"
DESCRIPTION = "CERN-StarLight-Sunnyvale research WAN of the SC2002 FAST demos, with the show floor and Abilene"

GBE_MBPS = 1000.0
# (link id, a, b, capacity Mb/s, one-way delay ms, RTT of the longest path through it, description)
WAN = (
    ("datatag", "rcern", "rstar", 2500.0, 59.0, 180.0, "DataTAG CERN-StarLight OC-48"),
    ("level3", "rstar", "rsunny", 10000.0, 31.0, 180.0, "Level(3) StarLight-Sunnyvale OC-192 POS"),
    ("showfloor", "rbalt", "rstar", 10000.0, 11.5, 85.0, "SC2002 show floor (Baltimore)-StarLight"),
    ("abilene-east", "rstar", "rabil", 2500.0, 6.0, 190.0, "Abilene StarLight-core (assumption)"),
    ("abilene-west", "rabil", "rsunny", 2500.0, 30.0, 190.0, "Abilene core-Sunnyvale (assumption)"),
)
# switched core: shaped link -> (switch a, switch b), and the subnet rstar and rsunny share
CORE_LINKS = {"level3": ("s5", "s6"), "abilene-east": ("s5", "s7"), "abilene-west": ("s7", "s6")}
CORE_SUBNET = "10.30.0"
# site -> (router, switch, LAN prefix, default host count argument)
SITES = {"cern": ("rcern", "s1", "10.11.0"), "chicago": ("rstar", "s2", "10.12.0"),
         "sunnyvale": ("rsunny", "s3", "10.13.0"), "baltimore": ("rbalt", "s4", "10.14.0")}
DISTANCES_KM = {"cern-sunnyvale": 10037, "baltimore-sunnyvale": 3948}
PUBLISHED = [  # FAST averages, SC2002 (flows, Mb/s, utilization, path)
    {"flows": 1, "throughput_mbps": 925, "utilization": 0.95, "path": "cern-sunnyvale", "bottleneck": "1 GbE"},
    {"flows": 2, "throughput_mbps": 1797, "utilization": 0.92, "path": "cern-sunnyvale", "bottleneck": "2 x 1 GbE"},
    # rows 7-10: each flow behind its own GbE port, the ports sharing the 10 Gb/s path; utilization is
    # goodput over the ports less 40 header bytes per packet: 6,123 / (7 x 1000 x 1460/1500) = 0.90
    {"flows": 7, "throughput_mbps": 6123, "utilization": 0.90, "path": "baltimore-sunnyvale",
     "bottleneck": "7 x 1 GbE (sharing the 10 Gb/s path)"},
    {"flows": 9, "throughput_mbps": 7940, "utilization": 0.90, "path": "baltimore-sunnyvale",
     "bottleneck": "9 x 1 GbE (sharing the 10 Gb/s path)"},
    {"flows": 10, "throughput_mbps": 8609, "utilization": 0.88, "path": "baltimore-sunnyvale",
     "bottleneck": "10 x 1 GbE (sharing the 10 Gb/s path)"},
]


class Args(Strict):
    scale: float = Field(0.1, gt=0, le=1, description="divides capacities, keeps delays")
    cern_hosts: int = Field(3, ge=1, le=16, description="hosts at CERN (cern, cern2, ...)")
    chicago_hosts: int = Field(3, ge=1, le=16, description="hosts at StarLight (chicago, chicago2, ...)")
    sunnyvale_hosts: int = Field(10, ge=1, le=16, description="hosts at Sunnyvale (sunnyvale, sunnyvale2, ...)")
    baltimore_hosts: int = Field(10, ge=1, le=16, description="show-floor hosts (baltimore, baltimore2, ...)")
    starlight_sunnyvale: Literal["level3", "abilene"] = Field(
        "level3", description="StarLight-Sunnyvale path (the default path of the switched core)")
    core: Literal["routed", "switched"] = Field(
        "routed", description="StarLight-Sunnyvale core: static IP routes, or OpenFlow switches choosing the path")
    buffer_bdp: float = Field(1.0, gt=0, le=100, description="WAN router buffers, BDP multiples (assumption)")
    access_buffer_bdp: float = Field(1.0, gt=0, le=100, description="GbE access queues, BDP multiples")


def _profile(rate_mbps: float, one_way_ms: float, buffer_bdp: float) -> LinkSpec:
    return LinkSpec(rate_mbps=rate_mbps, delay_ms=one_way_ms, jitter_ms=0.0, buffer=Buffer(buffer_bdp, "bdp"))


def host_names(site: str, count: int) -> list[str]:
    return [site] + [f"{site}{k}" for k in range(2, count + 1)]


def plan(args: Args) -> TopologyPlan:
    b = PlanBuilder(NAME)
    for router, site in (("rcern", "CERN"), ("rstar", "StarLight"), ("rsunny", "Sunnyvale"),
                         ("rbalt", "Baltimore")) + ((("rabil", "Abilene"),) if args.core == "routed" else ()):
        b.router(router, site)
    counts = {"cern": args.cern_hosts, "chicago": args.chicago_hosts, "sunnyvale": args.sunnyvale_hosts,
              "baltimore": args.baltimore_hosts}
    for site, (router, switch, lan) in SITES.items():
        b.lan(router, switch, lan)
        access_rtt = 180.0 if site in ("cern", "sunnyvale") else 118.0 if site == "chicago" else 85.0
        for index, host in enumerate(host_names(site, counts[site]), start=1):
            access = _profile(GBE_MBPS * args.scale, 0.0, args.access_buffer_bdp)
            b.host(host, switch, lan, index, site=site, access=(f"{host}-gbe", access, access_rtt))
    addr = {}
    for link_id, a, z, rate, delay, rtt, description in WAN:
        profile = _profile(rate * args.scale, delay, args.buffer_bdp)
        if args.core == "switched" and link_id in CORE_LINKS:
            b.switch_wire(*CORE_LINKS[link_id], link_id, profile, rtt, description)
        else:
            addr[link_id] = b.wire(a, z, link_id, profile, rtt, description)
    cern, sunny, balt, chicago = (SITES[s][2] + ".0/24" for s in ("cern", "sunnyvale", "baltimore", "chicago"))
    b.route("rcern", "0.0.0.0/0", addr["datatag"][1])
    b.route("rbalt", "0.0.0.0/0", addr["showfloor"][1])
    b.route("rstar", cern, addr["datatag"][0])
    b.route("rstar", balt, addr["showfloor"][0])
    if args.core == "switched":
        for switch, site in (("s5", "StarLight"), ("s6", "Sunnyvale"), ("s7", "Abilene")):
            b.openflow_switch(switch, site)
        b.attach("rstar", "s5", f"{CORE_SUBNET}.1/24")
        b.attach("rsunny", "s6", f"{CORE_SUBNET}.2/24")
        b.route("rstar", sunny, f"{CORE_SUBNET}.2")
        b.route("rsunny", "0.0.0.0/0", f"{CORE_SUBNET}.1")
        openflow = {"switches": {"s5": {"core": "rstar", "paths": {"level3": "level3", "abilene": "abilene-east"}},
                                 "s6": {"core": "rsunny", "paths": {"level3": "level3", "abilene": "abilene-west"}},
                                 "s7": {"transit": ["abilene-east", "abilene-west"]}},
                    "paths": {"level3": {"links": ["level3"], "description": "Level(3) OC-192, 62 ms RTT"},
                              "abilene": {"links": ["abilene-east", "abilene-west"],
                                          "description": "Abilene OC-48 via its core, 72 ms RTT (assumption)"}},
                    "default_path": args.starlight_sunnyvale}
    else:
        star_to_sunny = addr["level3"][1] if args.starlight_sunnyvale == "level3" else addr["abilene-east"][1]
        sunny_to_star = addr["level3"][0] if args.starlight_sunnyvale == "level3" else addr["abilene-west"][0]
        b.route("rsunny", "0.0.0.0/0", sunny_to_star)
        b.route("rstar", sunny, star_to_sunny)
        b.route("rabil", sunny, addr["abilene-west"][1])
        for dst in (cern, balt, chicago):
            b.route("rabil", dst, addr["abilene-east"][0])
        openflow = None
    return b.build(
        scale=args.scale, distances_km=DISTANCES_KM, published_fast=PUBLISHED,
        original_capacities_mbps={link[0]: link[3] for link in WAN} | {"host access (GbE)": GBE_MBPS},
        endpoints=[{"src": "cern", "dst": "sunnyvale", "rtt_ms": 180.0},
                   {"src": "baltimore", "dst": "sunnyvale", "rtt_ms": 85.0},
                   {"src": "cern", "dst": "chicago", "rtt_ms": 118.0}],
        **({"openflow": openflow} if openflow else {}))
