"""Capacity sweeps that scale the number of flows (issue 33 item 4): a sweep file's `sweep.scale_flows`.

    sweep:
      params:
        topology_args.rate_mbps: [25, 50, 100]
      scale_flows: {capacity: topology_args.rate_mbps, flow: 0, reference_flows: 4, reference_capacity_mbps: 100}

Each point's flows row `flow` carries N' = N C'/C whole flows (N, C: the reference), so each flow's window
in packets, R C/N, stays the reference's: SHRiNK's sample of the flows (Pan et al. 2003), computed by
fastlab.theory.red.window_preserving_flows, the function lab 10's `shrink` uses. Rounding rule: N' is
rounded half up to whole flows, and refused when that moves each flow's window by more than
MAX_WINDOW_ROUNDING, when N' < 1, or when it exceeds what a flows row carries. Each point's spec says its
N' and the reference in its description; fastlab.sweep.points plans the points (`scaled_flows`: the overrides a
combination adds) and its report says the same words (`scale_words`). Pure.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field

from fastlab.define.schema import SpecError, Strict

# Whole flows: N' is rounded half up, and the rounding may change each flow's window by this share at
# most (10 %: beyond it the point carries another experiment's windows, e.g. N' = 1.4 run as 1 flow has
# windows 40 % larger than the reference's).
MAX_WINDOW_ROUNDING = 0.10


class FlowScaling(Strict):
    """`sweep.scale_flows`: a sweep over a link's capacity that scales the number of flows with it, so each
    flow's window in packets (its share of the capacity times the RTT) stays what it was at a reference
    point: N' = N C'/C (SHRiNK, Pan et al. 2003; fastlab.theory.red.window_preserving_flows, lab 10)."""

    capacity: str = Field(description="the swept parameter that is the link's capacity in Mb/s, e.g. "
                                      "topology_args.rate_mbps or links.bottleneck.rate_mbps")
    flow: int = Field(0, ge=0, le=63, strict=True, description="the flows row whose count is scaled")
    reference_flows: int = Field(ge=1, le=1_000_000, strict=True, description="N: flows at the reference")
    reference_capacity_mbps: float = Field(gt=0, le=1e7, allow_inf_nan=False,
                                           description="C: the reference capacity (Mb/s)")

    def words(self, flows: int) -> str:
        """What a point carries, in words (the point's spec description and the sweep's report)."""
        def many(n: int) -> str:
            return f"{n} flow" + ("s" if n != 1 else "")

        return (f"scaled: {many(flows)} carr{'y' if flows != 1 else 'ies'} the per-flow window of "
                f"{many(self.reference_flows)} at {self.reference_capacity_mbps:g} Mb/s")

    def flows_at(self, capacity: object) -> int:
        """N' for a swept capacity (Mb/s): N C'/C rounded half up to whole flows; SpecError (one line) for a
        capacity that is not a number, N' below 1, more flows than a flows row holds, or a rounding that
        changes each flow's window by more than MAX_WINDOW_ROUNDING."""
        from fastlab.define.schema import FlowSpec
        from fastlab.theory.red import window_preserving_flows

        where = "sweep.scale_flows"
        if isinstance(capacity, bool) or not isinstance(capacity, int | float) or not math.isfinite(capacity) \
                or capacity <= 0:
            raise SpecError(f"{where}.capacity: {self.capacity} takes {capacity!r}, not a capacity in Mb/s")
        try:
            _k, exact = window_preserving_flows(self.reference_flows, self.reference_capacity_mbps, capacity)
        except ValueError as exc:
            raise SpecError(f"{where}: {exc}") from None
        if exact < 1:
            raise SpecError(f"{where}: at {capacity:g} Mb/s, N' = {self.reference_flows} x {capacity:g}/"
                            f"{self.reference_capacity_mbps:g} = {exact:.3g} flows, fewer than one")
        flows = math.floor(exact + 0.5)
        most = FlowSpec.model_fields["count"].metadata
        cap = next(m.le for m in most if hasattr(m, "le"))
        if flows > cap:
            raise SpecError(f"{where}: at {capacity:g} Mb/s, N' = {flows} flows, more than a flows row carries "
                            f"({cap})")
        if abs(exact / flows - 1) > MAX_WINDOW_ROUNDING:
            unit = "flows" if flows != 1 else "flow"
            raise SpecError(f"{where}: at {capacity:g} Mb/s, N' = {exact:.3g} rounds to {flows} {unit}, which "
                            f"changes each flow's window by {abs(exact / flows - 1):.0%} (at most "
                            f"{MAX_WINDOW_ROUNDING:.0%}): choose capacities near multiples of "
                            f"{self.reference_capacity_mbps / self.reference_flows:g} Mb/s")
        return flows


def scale_words(scale: FlowScaling, capacity: float, flows: int) -> str:
    """One point's scaling in words: "at 20 Mb/s, scaled: 4 flows carry the per-flow window of 2 flows at
    10 Mb/s" (its spec's description and the sweep's report)."""
    return f"at {capacity:g} Mb/s, {scale.words(flows)}"


def scaled_flows(scale: FlowScaling | None, base: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """The overrides a combination's flow scaling sets (pure): the flows row's count, N', and the spec's
    description saying it and the reference (`FlowScaling.words`); {} without scale_flows."""
    if scale is None:
        return {}
    flows = base.get("flows")
    if not isinstance(flows, list) or not scale.flow < len(flows):
        raise SpecError(f"sweep.scale_flows.flow: the spec has no flows.{scale.flow} to scale")
    count = scale.flows_at(params[scale.capacity])
    said = scale_words(scale, params[scale.capacity], count)
    before = base.get("description")
    return {f"flows.{scale.flow}.count": count,
            "description": f"{before}; {said}" if isinstance(before, str) and before else said}
