"""UCL (London) -> SLAC (Menlo Park): a HighSpeed TCP test path of the DataTAG work (2002).

135 ms RTT (docs/design.md §5); the bottleneck is the 1 GbE host interface and the buffer one BDP
(both assumptions). The default scale 0.1 keeps it within what one core emulates here.
"""

from __future__ import annotations

from pydantic import Field

from fastlab.define.topology import TopologyPlan
from topologies.twosite import PathArgs, research_path

NAME = "ucl-slac"
DESCRIPTION = "UCL -> SLAC, 1 GbE host bottleneck (assumption), 135 ms RTT (HighSpeed TCP tests)"


class Args(PathArgs):
    scale: float = Field(0.1, gt=0, le=1, description="divides capacities, keeps delays")


def plan(args: Args) -> TopologyPlan:
    return research_path(NAME, args, ("UCL", "SLAC"), rate_mbps=1000.0, rtt_ms=135.0)
