"""A parking lot: two bottlenecks in a row, a long flow through both and a short flow through each.

    h1, h3 -- s1 -- r1 ==[left]== r2 ==[right]== r3 -- s3 -- h2, h6
                                  |
                                 s2 -- h4, h5

h1 -> h2 crosses both links (twice the RTT), h3 -> h4 only the left one, h5 -> h6 only the right one:
the classic network in which a loss-based TCP starves the long flow and FAST shares by its alpha. A
topology plugin for fastlab, outside fastlab: NAME, DESCRIPTION, Args and plan(args), composed with
fastlab's PlanBuilder. Run it with `fastlab run --topology-file`, a spec's `topology: {file: ...}`, a
script (run.py beside it) or, configured by the instructor (FASTLAB_TOPOLOGIES), from the web form.
"""

from __future__ import annotations

from pydantic import Field

from fastlab import Buffer, LinkSpec, PlanBuilder, Strict, TopologyPlan

NAME = "parking-lot"
DESCRIPTION = "two bottlenecks in a row: a long flow h1->h2 through both, short flows h3->h4 and h5->h6"


class Args(Strict):
    rate_mbps: float = Field(20.0, gt=0, le=10_000, title="Capacity (Mb/s)", description="each bottleneck's")
    hop_rtt_ms: float = Field(10.0, ge=0, le=1_000, title="RTT per hop (ms)",
                              description="round-trip time one bottleneck adds (the long flow sees two)")
    buffer_bdp: float = Field(1.0, gt=0, le=100, title="Buffer (x BDP)",
                              description="each bottleneck's buffer, in BDPs of the long flow's RTT")


def plan(args: Args) -> TopologyPlan:
    b = PlanBuilder(NAME)
    lans = {"r1": ("s1", "10.1.0"), "r2": ("s2", "10.2.0"), "r3": ("s3", "10.3.0")}
    for router, (switch, subnet) in lans.items():
        b.router(router, site=router)
        b.lan(router, switch, subnet)
    for host, router, index in (("h1", "r1", 1), ("h3", "r1", 3), ("h4", "r2", 4), ("h5", "r2", 5),
                                ("h2", "r3", 2), ("h6", "r3", 6)):
        b.host(host, lans[router][0], lans[router][1], index, site=router)
    long_rtt = 2 * args.hop_rtt_ms
    hop = LinkSpec(rate_mbps=args.rate_mbps, delay_ms=args.hop_rtt_ms / 2, jitter_ms=0.0,
                   buffer=Buffer(args.buffer_bdp, "bdp"))
    r1_left, r2_left = b.wire("r1", "r2", "left", hop, long_rtt, "r1 -> r2, the first bottleneck")
    r2_right, r3_right = b.wire("r2", "r3", "right", hop, long_rtt, "r2 -> r3, the second bottleneck")
    b.route("r1", "10.2.0.0/24", r2_left)
    b.route("r1", "10.3.0.0/24", r2_left)
    b.route("r2", "10.1.0.0/24", r1_left)
    b.route("r2", "10.3.0.0/24", r3_right)
    b.route("r3", "10.1.0.0/24", r2_right)
    b.route("r3", "10.2.0.0/24", r2_right)
    return b.build(rtt_ms=long_rtt, capacity_mbps=args.rate_mbps,
                   endpoints=[{"src": "h1", "dst": "h2", "rtt_ms": long_rtt},
                              {"src": "h3", "dst": "h4", "rtt_ms": args.hop_rtt_ms},
                              {"src": "h5", "dst": "h6", "rtt_ms": args.hop_rtt_ms}])
