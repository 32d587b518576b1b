"""Capacity sweeps with flow-count scaling (issue 33 item 4, `sweep.scale_flows`): each point's flows row
carries N' = N C'/C whole flows, so each flow's window in packets stays the reference's (SHRiNK, through
fastlab.theory.red's one scaling function, as lab 10 scales); each point's spec says N' and the reference;
the report says it in words; nonsensical scalings are one line naming the field."""

from __future__ import annotations

import copy
import math
from typing import Any

import pandas as pd
import pytest

from fastlab.base.record import Summary
from fastlab.define.schema import SpecError, parse_spec
from fastlab.sweep import points as sweep
from fastlab.sweep import report as sweep_report
from fastlab.sweep import scaling as sweep_scaling
from fastlab.theory import red as red_theory

SCALE = {"capacity": "topology_args.rate_mbps", "reference_flows": 4, "reference_capacity_mbps": 10}


def document(values: list[Any], scale: dict[str, Any] | None = None, **base: Any) -> dict[str, Any]:
    doc = {"name": "scaled", "topology": "dumbbell", "topology_args": {"rate_mbps": 10, "rtt_ms": 40},
           "duration_s": 5, "flows": [{"src": "h1", "dst": "h2", "cc": "reno", "count": 1}],
           "sweep": {"params": {"topology_args.rate_mbps": values}, "scale_flows": scale or SCALE}}
    return doc | base


def test_each_point_carries_the_reference_per_flow_window_and_says_so() -> None:
    plan = sweep.plan_sweep(document([5, 10, 20, 40, 160]))
    specs = [parse_spec(plan.point_document(p)) for p in plan.points]
    assert [s.flows[0].count for s in specs] == [2, 4, 8, 16, 64]
    assert [s.topology_args["rate_mbps"] for s in specs] == [5, 10, 20, 40, 160]
    for s in specs:  # C'/N' is the reference's C/N: each flow's pipe (and window) in packets kept
        assert s.topology_args["rate_mbps"] / s.flows[0].count == pytest.approx(10 / 4)
    assert specs[2].description == "at 20 Mb/s, scaled: 8 flows carry the per-flow window of 4 flows at 10 Mb/s"
    assert plan.points[2].overrides() == ["topology_args.rate_mbps=20", "flows.0.count=8",
                                          "description='at 20 Mb/s, scaled: 8 flows carry the per-flow window of 4 "
                                          "flows at 10 Mb/s'", "seed=1"]
    # deterministic: the same document, the same points and digest; the scaling is part of the identity
    again = sweep.plan_sweep(copy.deepcopy(document([5, 10, 20, 40, 160])))
    assert [p.overrides() for p in again.points] == [p.overrides() for p in plan.points]
    assert again.digest == plan.digest
    assert sweep.plan_sweep(document([5, 10, 20, 40, 160], SCALE | {"reference_flows": 2})).digest != plan.digest
    assert sweep.scaling_lines(plan)[0] == "at 5 Mb/s, scaled: 2 flows carry the per-flow window of 4 flows at 10 Mb/s"
    assert len(sweep.scaling_lines(plan)) == 5
    # a description of the spec's own is kept before it; repetitions share their combination's N'
    plan = sweep.plan_sweep(document([20, 40], description="Reno over RED") | {"sweep": {
        "params": {"topology_args.rate_mbps": [20, 40]}, "scale_flows": SCALE, "repeat": 2}})
    assert plan.point_document(plan.points[3])["description"] == (
        "Reno over RED; at 40 Mb/s, scaled: 16 flows carry the per-flow window of 4 flows at 10 Mb/s")
    assert [plan.point_document(p)["flows"][0]["count"] for p in plan.points] == [8, 8, 16, 16]


def test_the_scaling_is_red_theorys_shrink_as_lab_10_carries_it() -> None:
    """Lab 10's table: 100 flows at 2.5 Gb/s carried at 100 Mb/s are 4 flows; at 10 Gb/s, 1; the sweep's N'
    is the one red_theory.shrink computes (the same function)."""
    red = red_theory.red_in_time(2500e6 / 12000, 0.005, 0.015, 0.1, 0.1)
    for real_mbps, carried in ((2500, 4), (10_000, 1), (625, 16)):
        real = red_theory.Point(100, real_mbps * 1e6 / 12000, 0.1, red)
        shrunk = red_theory.shrink(real, 100e6 / 12000)
        scale = sweep_scaling.FlowScaling(capacity="x", reference_flows=100, reference_capacity_mbps=real_mbps)
        assert scale.flows_at(100) == shrunk.flows_rounded == carried
        assert red_theory.window_preserving_flows(100, real_mbps, 100)[1] == pytest.approx(shrunk.point.n_flows)


@pytest.mark.parametrize("values, scale, error", [
    ([10, 2], SCALE, r"^sweep\.scale_flows: at 2 Mb/s, N' = 4 x 2/10 = 0\.8 flows, fewer than one$"),
    ([10, 12], SCALE | {"reference_flows": 2},
     r"^sweep\.scale_flows: at 12 Mb/s, N' = 2\.4 rounds to 2 flows, which changes each flow's window by 20% "
     r"\(at most 10%\): choose capacities near multiples of 5 Mb/s$"),
    ([10, 170], SCALE, r"^sweep\.scale_flows: at 170 Mb/s, N' = 68 flows, more than a flows row carries \(64\)$"),
    ([10, "fast"], SCALE, r"^sweep\.scale_flows\.capacity: topology_args\.rate_mbps takes 'fast', not a capacity"),
    ([10, True], SCALE, r"^sweep\.scale_flows\.capacity: topology_args\.rate_mbps takes True, not a capacity"),
    ([10, -5], SCALE, r"^sweep\.scale_flows\.capacity: .* takes -5, not a capacity"),
    ([10, 1e308 * 10], SCALE, r"^sweep\.params\.topology_args\.rate_mbps: values must be finite numbers"),
    ([10, 20], SCALE | {"capacity": "links.bottleneck.rate_mbps"},
     r"^sweep\.scale_flows\.capacity: links\.bottleneck\.rate_mbps is not a swept parameter"),
    ([10, 20], SCALE | {"flow": 3}, r"^sweep\.scale_flows\.flow: the spec has no flows\.3 to scale$"),
    ([10, 20], SCALE | {"reference_flows": 0}, r"^sweep\.scale_flows\.reference_flows: "),
    ([10, 20], SCALE | {"reference_flows": 2.5}, r"^sweep\.scale_flows\.reference_flows: "),
    ([10, 20], SCALE | {"reference_flows": "4"}, r"^sweep\.scale_flows\.reference_flows: "),
    ([10, 20], SCALE | {"reference_capacity_mbps": math.nan}, r"^sweep\.scale_flows\.reference_capacity_mbps: "),
    ([10, 20], SCALE | {"reference_capacity_mbps": math.inf}, r"^sweep\.scale_flows\.reference_capacity_mbps: "),
    ([10, 20], SCALE | {"reference_capacity_mbps": 0}, r"^sweep\.scale_flows\.reference_capacity_mbps: "),
    ([10, 20], SCALE | {"flows": 4}, r"^sweep\.scale_flows\.flows: "),
])
def test_nonsensical_scalings_are_one_line_naming_the_field(values: list[Any], scale: dict[str, Any],
                                                            error: str) -> None:
    with pytest.raises(SpecError, match=error) as caught:
        sweep.plan_sweep(document(values, scale))
    assert "\n" not in str(caught.value)


def test_the_count_cannot_be_swept_and_scaled_and_rounding_within_the_bound_is_carried() -> None:
    doc = document([10, 20])
    doc["sweep"]["params"]["flows.0.count"] = [1, 2]
    with pytest.raises(SpecError, match=r"^sweep\.scale_flows\.flow: flows\.0\.count is swept itself"):
        sweep.plan_sweep(doc)
    # 10 flows at 10 Mb/s; 10.5 Mb/s -> N' = 10.5, half up to 11 (4.5 % off the window: carried)
    plan = sweep.plan_sweep(document([10, 10.5], SCALE | {"reference_flows": 10}))
    assert [plan.point_document(p)["flows"][0]["count"] for p in plan.points] == [10, 11]
    # without scale_flows nothing is derived: the point is its parameters
    plain = sweep.plan_sweep({**document([10, 20]), "sweep": {"params": {"topology_args.rate_mbps": [10, 20]}}})
    assert [p.derived for p in plain.points] == [{}, {}] and sweep.scaling_lines(plain) == []


def test_the_report_says_the_scaling_in_words_and_the_table_has_n_prime() -> None:
    plan = sweep.plan_sweep(document([10, 20]))
    row = sweep.point_row(plan.points[1], Summary())
    assert row["flows.0.count"] == 8 and row["topology_args.rate_mbps"] == 20
    page = sweep_report.render("scaled", pd.DataFrame(), ["topology_args.rate_mbps"], 0, 2,
                               notes=sweep.scaling_lines(plan))
    assert "<li>at 20 Mb/s, scaled: 8 flows carry the per-flow window of 4 flows at 10 Mb/s</li>" in page
    assert 'class="scaling"' not in sweep_report.render("plain", pd.DataFrame(), ["x"], 0, 2)
