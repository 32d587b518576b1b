"""UCL (London) -> CERN (Geneva): a HighSpeed TCP test path of the DataTAG work (2002).

100 Mb/s bottleneck, 20 ms RTT (docs/design.md §5); the one-BDP buffer is an assumption.
`scale` divides the capacity and keeps the delay.
"""

from __future__ import annotations

from fastlab.define.topology import TopologyPlan
from topologies.twosite import PathArgs, research_path

NAME = "ucl-cern"
DESCRIPTION = "UCL -> CERN, 100 Mb/s bottleneck, 20 ms RTT (HighSpeed TCP tests)"


class Args(PathArgs):
    pass


def plan(args: Args) -> TopologyPlan:
    return research_path(NAME, args, ("UCL", "CERN"), rate_mbps=100.0, rtt_ms=20.0)
