"""Parametric dumbbell: n sender/receiver pairs sharing one shaped bottleneck.

    h1, h3, ... -- s1 -- r1 ==[bottleneck]== r2 -- s2 -- h2, h4, ...

Pair k is h(2k-1) -> h(2k), so `h1 -> h2` names the first pair whatever n is. The bottleneck
queue is sized in BDP multiples of the path's base RTT.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from fastlab.define.schema import Strict
from fastlab.define.topology import TopologyPlan
from topologies.twosite import two_site

NAME = "dumbbell"
DESCRIPTION = "n sender/receiver pairs through one shaped bottleneck (h1->h2, h3->h4, ...)"


class Args(Strict):
    pairs: int = Field(1, ge=1, le=32, title="Pairs", description="sender/receiver pairs (h1->h2, h3->h4, ...)")
    rate_mbps: float = Field(100.0, gt=0, le=400_000, title="Capacity (Mb/s)",
                             description="bottleneck capacity, both ways")
    rtt_ms: float = Field(40.0, ge=0, le=10_000, title="Base RTT (ms)",
                          description="round-trip time with empty queues")
    buffer_bdp: float = Field(1.0, gt=0, le=1000, title="Buffer (× BDP)",
                              description="bottleneck buffer in multiples of capacity × base RTT; 1 = one BDP")
    pair_rtt_ms: list[float] | None = Field(
        None, description="base RTT of each pair (>= rtt_ms); the excess sits on the receiver's access link")

    @model_validator(mode="after")
    def _pair_rtts(self) -> Args:
        if self.pair_rtt_ms is not None:
            if len(self.pair_rtt_ms) != self.pairs:
                raise ValueError(f"pair_rtt_ms: give one RTT per pair ({self.pairs})")
            if any(not self.rtt_ms <= r <= 10_000 for r in self.pair_rtt_ms):
                raise ValueError(f"pair_rtt_ms: each RTT must be between rtt_ms ({self.rtt_ms:g}) and 10000")
        return self


def plan(args: Args) -> TopologyPlan:
    left = [f"h{2 * k - 1}" for k in range(1, args.pairs + 1)]
    right = [f"h{2 * k}" for k in range(1, args.pairs + 1)]
    extra = [r - args.rtt_ms for r in args.pair_rtt_ms] if args.pair_rtt_ms else None
    return two_site(NAME, left, right, rate_mbps=args.rate_mbps, rtt_ms=args.rtt_ms, buffer_bdp=args.buffer_bdp,
                    right_extra_rtt_ms=extra)
