"""fastlab.experiment.cost: a prepared run's predicted cores (from real plans of the labs' specs) and the queue's
admission rule (costs in, a decision out)."""

from __future__ import annotations

import json
import math

import pytest

from fastlab.experiment.cost import FAITHFUL_SHARE, HOP_CORES_PER_GBPS, Cost, Figures, admit, machine_figures, predict
from fastlab.labs.kit import load_lab
from fastlab.plan.capabilities import Capabilities, Probe
from fastlab.plan.prepare import Prepared, prepare


def caps() -> Capabilities:
    """This machine: the emulator, BPF struct_ops, no netem (so every shaped link is emulated)."""
    c = Capabilities(kernel="test")
    for name in ("linkemu", "htb", "tbf", "bpf_struct_ops", "mininet", "iperf3"):
        c.probes[name] = Probe(name, True, "")
    return c


def lab_step(lab: int, step: str, *extra: str) -> Prepared:
    return prepare(load_lab(lab).build_spec(step, short=True, extra=list(extra)), caps=caps())


FIG = Figures(budget_cores=1.0)


def test_lab02_short_steps_cost_what_their_parts_say() -> None:
    one = predict(lab_step(2, "live"), FIG)  # 1 flow at 20 Mb/s over 1 emulated link
    assert one.parts == {"per_bit": round(0.02 * HOP_CORES_PER_GBPS, 3), "links": 0.04, "flows": 0.04, "run": 0.02}
    assert one.cores == pytest.approx(sum(one.parts.values())) and one.alone is None
    two = predict(lab_step(2, "equilibrium"), FIG)  # 2 flows, one of them over the access link too
    assert two.parts["links"] == 0.08 and two.parts["flows"] == 0.08
    assert two.parts["per_bit"] == round(3 * 0.02 * HOP_CORES_PER_GBPS, 3)  # f1 one hop, f2 two
    assert two.cores > one.cores


def test_a_faster_link_costs_more_per_bit() -> None:
    slow = predict(lab_step(2, "live"), FIG)
    fast = predict(lab_step(2, "live", "topology_args.rate_mbps=200"), FIG)
    assert fast.parts["per_bit"] == pytest.approx(10 * slow.parts["per_bit"])


def test_full_scale_and_global_parameters_run_alone() -> None:
    full = predict(lab_step(2, "live", "topology_args.rate_mbps=1000"), FIG)
    assert full.alone is not None and full.alone.startswith("full scale: a flow at 1 Gb/s")
    tuned = predict(lab_step(5, "tuned"), FIG)  # HSTCP's table: global for the kernel
    assert tuned.alone is not None and "global parameters of hstcp" in tuned.alone
    big = predict(lab_step(3, "row-10"), FIG)
    assert big.alone is not None and "more than the budget of 1" in big.alone


def c(cores: float, alone: str | None = None) -> Cost:
    return Cost(cores, {}, alone)


@pytest.mark.parametrize(("running", "candidate", "start", "why"), [
    ([], c(5.0), True, "nothing else runs"),
    ([], c(0.1, "full scale"), True, "it runs alone: full scale"),
    ([c(0.3), c(0.3)], c(0.3), True, "fits: 0.6 + 0.3 of 1 cores, 3 runs at once"),
    ([c(0.3), c(0.3)], c(0.41), False, "would exceed the budget of 1"),
    ([c(0.5), c(0.5)], c(0.0), True, "fits"),  # exactly the budget is within it
    ([c(0.1, "full scale")], c(0.1), False, "a run that runs alone is going (full scale)"),
    ([c(0.1)], c(0.1, "global hstcp"), False, "waits for an empty machine: it runs alone (global hstcp)"),
    ([c(0.1)] * 4, c(0.1), False, "4 runs going, at most 4 at once"),
])
def test_admission(running: list[Cost], candidate: Cost, start: bool, why: str) -> None:
    decision = admit(running, candidate, budget_cores=1.0, max_running=4)
    assert decision.start is start and why in decision.why, decision
    assert decision.running == len(running) and decision.budget_cores == 1.0
    assert json.loads(json.dumps(decision.as_dict()))["start"] is start  # environment.json carries it


def test_admission_fills_the_budget_in_order() -> None:
    """Twenty lab 02 steps (costs from their plans) started in queue order as the rule allows: at most
    the budget at once, and never a run overtaking the head of the queue."""
    costs = [predict(lab_step(2, step), FIG) for step in ("equilibrium", "alphas", "live") * 7][:20]
    running: list[Cost] = []
    started = 0
    for cost in costs:
        if not admit(running, cost, FIG.budget_cores, 8).start:
            break
        running.append(cost)
        started += 1
    assert sum(r.cores for r in running) <= FIG.budget_cores
    assert started == 4  # 0.27 + 0.27 + 0.13 + 0.27 = 0.94; a fifth (0.27) would pass 1.0


def test_machine_figures_from_a_self_test() -> None:
    assert machine_figures(None, cpus=2).budget_cores == 2 * FAITHFUL_SHARE
    measured = {"measured": "2026-11-27", "max_rate_mbps": 2500,
                "steps": [{"rate_mbps": 1000, "flows": 1, "passed": True, "machine_busy": 0.4},
                          {"rate_mbps": 2500, "flows": 1, "passed": True, "machine_busy": 0.6},
                          {"rate_mbps": 5000, "flows": 1, "passed": False, "machine_busy": 0.99},
                          {"rate_mbps": 2000, "flows": 2, "passed": True, "machine_busy": 0.9}]}
    fig = machine_figures(measured, cpus=2)
    assert fig.hop_cores_per_gbps == 0.8  # 0.4 x 2 CPUs per 1 Gb/s, the dearest passed one-flow step
    assert fig.full_scale_mbps == 1000 and "self-test of 2026-11-27" in fig.source
    assert machine_figures({"measured": "x", "max_rate_mbps": 500, "steps": []}, cpus=2).full_scale_mbps == 500


@pytest.mark.parametrize("hostile", [None, "x", math.nan, -1, [], {"passed": True}, 1e308])
def test_a_hostile_self_test_file_keeps_the_defaults(hostile: object) -> None:
    fig = machine_figures({"measured": "x", "max_rate_mbps": hostile,
                           "steps": [hostile, {"rate_mbps": hostile, "flows": 1, "passed": True,
                                               "machine_busy": hostile}]}, cpus=2)
    assert fig.hop_cores_per_gbps == HOP_CORES_PER_GBPS or fig.hop_cores_per_gbps < 1e-300
    assert math.isfinite(fig.full_scale_mbps) and fig.full_scale_mbps > 0


def test_a_warning_before_a_run_the_machine_cannot_carry() -> None:
    """Issue 50: a 20 Gb/s, 64-flow spec was called "valid" with no word that a 2-core machine cannot carry it."""
    from fastlab.experiment.cost import Cost, Figures, carry_warning

    two_cpus = Figures(budget_cores=1.0)  # FAITHFUL_SHARE of 2 CPUs
    assert carry_warning(Cost(0.27), two_cpus) is None
    assert carry_warning(Cost(1.5, {}, "predicted 1.5 cores, more than the budget of 1"), two_cpus) == \
        "it will run alone on this machine: predicted 1.5 cores, more than the budget of 1"
    warning = carry_warning(Cost(1923.0, {"per_bit": 1920.0}), two_cpus)
    assert warning is not None and warning.startswith("this machine cannot carry it faithfully")
    assert "up to 1.92e+03 cores" in warning and "has 2," in warning
    assert carry_warning(Cost(1.89), two_cpus) is None  # below 95 % of the 2 CPUs
    assert carry_warning(Cost(1.91), two_cpus) is not None
