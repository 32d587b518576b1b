"""The delay budget of a flow's path: how much delay that no link queued its algorithm may read before a run
stops showing the lab's physics. The fidelity verdict (fastlab.measure.fidelity) judges the emulators'
lateness and the delay accounting (fastlab.measure.accounting) against it, per path.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastlab.define.schema import MTU_BYTES

# A FAST flow aims at alpha packets queued at its bottleneck, i.e. alpha * MTU / C of queueing
# delay (2.4 ms for alpha = 200 at 1 Gb/s). Emulation delay above a quarter of that moves its
# equilibrium by more than a quarter of alpha (w = alpha * D / (D - d)): the lab's lessons about
# alpha stop holding. A quarter is an assumption: it keeps the equilibrium backlog within the
# spread the labs already allow for one run.
DELAY_SHARE_OF_TARGET = 0.25
# Loss-based flows (Reno, CUBIC, HSTCP, BBR) have no delay target; their rate is window / RTT,
# so emulation delay must stay below 1 % of the path's base RTT (a 1 % throughput error)...
LOSS_BASED_RTT_SHARE = 0.01
# ...but never below 0.5 ms: the wake-up latency of an idle VM's CPU is ~0.1 ms per hop.
MIN_BUDGET_MS = 0.5
# What a path's budget is a share of, as the records name it (summary.json's delay_accounting `basis`)
FAST_BASIS = "FAST alpha queue"
LOSS_BASED_BASIS = "base RTT"


@dataclass(frozen=True)
class PathInfo:
    """One flow's path: the link directions its data and ACKs cross, and its delay budget's basis."""

    flow: str
    crossings: tuple[tuple[str, str], ...]  # (link id, "forward" | "reverse")
    base_rtt_ms: float
    target_queue_ms: float | None = None  # FAST: alpha packets at the bottleneck; None: loss-based
    mtu_bytes: int = MTU_BYTES
    # a link of the path delays each packet by a model of its own that varies packet to packet (a MAC's grants,
    # DOCSIS's load-dependent element, jitter, a schedule, a trace): no data packet meets the empty path, so a
    # delay-based flow's baseRTT rightly holds part of it (weighing.base_reasons does not judge it there)
    variable_delay: bool = False



Crossing = tuple[str, str]  # (link id, "forward" | "reverse")


def budget_ms(path: PathInfo) -> float:
    if path.target_queue_ms is not None:
        return max(0.0, DELAY_SHARE_OF_TARGET * path.target_queue_ms)
    return max(MIN_BUDGET_MS, LOSS_BASED_RTT_SHARE * path.base_rtt_ms)


def basis(path: PathInfo) -> str:
    """What the path's budget is a share of, as the records name it."""
    return FAST_BASIS if path.target_queue_ms is not None else LOSS_BASED_BASIS


def budget_words(p: PathInfo) -> str:
    """Where the path's budget comes from, in words."""
    return (f"{DELAY_SHARE_OF_TARGET:g} of the {p.target_queue_ms:.2f} ms queue FAST aims at"
            if p.target_queue_ms is not None else
            f"max({MIN_BUDGET_MS:g} ms, {LOSS_BASED_RTT_SHARE:.0%} of the {p.base_rtt_ms:g} ms RTT)")
