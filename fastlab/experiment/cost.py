"""A prepared run's predicted CPU cost, and whether it may start beside the runs already going.

Role: the one place that turns a plan (fastlab.plan.prepare.Prepared) into CPU cores, and the admission
rule a queue applies (fastlab's web queue; pure: costs in, a decision out). The cost is that of the
flows' phase, the part the fidelity verdict judges (its `machine_busy`): the work per bit on every
emulated hop a flow crosses (emulator, veth, the TCP stacks at both ends), a floor per emulated link
(an emulator wakes per packet, not per bit), a floor per flow (iperf3 at both ends, the engine's
sampling of it) and a floor per run. Building and tearing a network down costs more for a few
seconds but is not judged; the queue's cap on concurrent runs bounds it.

Figures (cores) on this machine (a 2-CPU VM), fitted to the short labs' recordings (machine busy
x 2 CPUs while the flows ran, 2026-11-26): lab 02 `live` (1 flow, 1 link, 20 Mb/s) 0.08, `equilibrium`
(2 flows, 2 links) 0.17; lab 03 `row-1` (1 flow at 50 Mb/s over 3 emulated hops) 0.39, `row-7`
(7 flows, 9 links, 70 Mb/s) 1.14, `row-10` (10 flows, 12 links, 100 Mb/s) 1.55. The fit: 0.04 per
link, 0.04 per flow, 1.5 per Gb/s per emulated hop (slow flows cost more per bit: their TSO bursts
are small) and 0.02 per run predict 0.13, 0.27, 0.41, 0.98 and 1.35 for those five: above the
measure where flows share a bottleneck (each is counted at its full rate), below it by 15 % for
the widest run, which exceeds the default budget and so runs alone. `fastlab doctor --self-test`
replaces the per-Gb/s figure with its own (its rate steps' machine busy over their rate).

The budget is FAITHFUL_SHARE of the machine's CPUs: the verdict calls a run unfaithful above 95 %
busy, and the share leaves the rest for neighbours' builds, the web app and the model's error.

Runs that must run alone: full scale (a flow at FULL_SCALE_MBPS or more, or at the self-test's
faithful rate), runs that set an algorithm's global parameters (the module build's, HSTCP's table:
one value for the whole kernel, so a neighbour's would change them), and runs predicted above the
budget by themselves.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

from fastlab.experiment import selftest
from fastlab.plan.prepare import Prepared

HOP_CORES_PER_GBPS = 1.5
LINK_FLOOR_CORES = 0.04
FLOW_FLOOR_CORES = 0.04
RUN_FLOOR_CORES = 0.02
FAITHFUL_SHARE = 0.5
FULL_SCALE_MBPS = 1000.0  # the SC2002 hosts' GbE ports: the lab's full-scale runs
MAX_RUNS = 4  # runs going at once at most on one machine (the web queue's default, a worker's run slots)
MAX_SELFTEST_MBPS = 100_000.0  # above any rate the self-test's ladder tries (10 Gb/s): a broken file


@dataclass(frozen=True)
class Figures:
    """The per-unit costs a prediction uses and the machine's budget, with where they come from."""

    hop_cores_per_gbps: float = HOP_CORES_PER_GBPS
    link_floor_cores: float = LINK_FLOOR_CORES
    flow_floor_cores: float = FLOW_FLOOR_CORES
    run_floor_cores: float = RUN_FLOOR_CORES
    budget_cores: float = 1.0
    full_scale_mbps: float = FULL_SCALE_MBPS
    source: str = "fastlab.experiment.cost's defaults"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def machine_figures(capacity: dict[str, Any] | None = None, cpus: int | None = None) -> Figures:
    """This machine's figures: the defaults, the budget from its CPUs, and what the last self-test
    measured (`capacity`, fastlab.experiment.selftest.load(): the machine's cores per Gb/s at the one-flow rate
    steps it passed, and its faithful rate as the full-scale line when lower)."""
    cpus = cpus or os.cpu_count() or 1
    budget = round(cpus * FAITHFUL_SHARE, 3)
    if capacity is None:
        return Figures(budget_cores=budget, source=f"defaults (no self-test); budget {FAITHFUL_SHARE:g} x {cpus} CPUs")
    def number(value: Any, top: float) -> float | None:  # the file is data: a hostile value counts as none
        ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= top
        return float(value) if ok else None

    per_gbps = []
    for step in capacity.get("steps", []) if isinstance(capacity.get("steps"), list) else []:
        busy = number(step.get("machine_busy"), 1.0) if isinstance(step, dict) else None
        rate = number(step.get("rate_mbps"), MAX_SELFTEST_MBPS) if isinstance(step, dict) else None
        if busy is not None and rate is not None and step.get("passed") is True and step.get("flows") == 1:
            per_gbps.append(busy * cpus / (rate / 1000))
    full = number(capacity.get("max_rate_mbps"), MAX_SELFTEST_MBPS)
    return Figures(hop_cores_per_gbps=round(max(per_gbps), 3) if per_gbps else HOP_CORES_PER_GBPS,
                   budget_cores=budget,
                   full_scale_mbps=min(FULL_SCALE_MBPS, full) if full is not None else FULL_SCALE_MBPS,
                   source=f"self-test of {capacity.get('measured', '?')}"
                          f"{' (cores per Gb/s measured)' if per_gbps else ''}; "
                          f"budget {FAITHFUL_SHARE:g} x {cpus} CPUs")


@dataclass(frozen=True)
class Cost:
    """A run's predicted cores while its flows run, the parts they come from, and why it must run
    alone (None: it may share the machine)."""

    cores: float
    parts: dict[str, float] = field(default_factory=dict)
    alone: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"cores": self.cores, "parts": self.parts, "alone": self.alone}


def predict(prep: Prepared, figures: Figures) -> Cost:
    """The cores a prepared run's flows need: each flow at its path's bottleneck rate (an upper bound:
    flows sharing a bottleneck share it) over each shaped hop on its way, plus the floors."""
    links: set[str] = set()  # emulated links (an emulator process each) some flow's packets or ACKs cross
    fastest, hop_gbps = 0.0, 0.0
    for flow in prep.flows:
        path = prep.paths[flow.id]
        mbps = path.figures.bottleneck_mbps or 0.0
        fastest = max(fastest, mbps)
        for way, there in ((path.data, True), (path.acks, False)):  # data one way, ACKs the other
            for link, _forward in way:
                hop_gbps += mbps / 1000 if there else 0.0  # a tc-shaped hop's work is the kernel's
                if prep.backends.get(link, ("",))[0] == "emulator":
                    links.add(link)
    parts = {"per_bit": round(hop_gbps * figures.hop_cores_per_gbps, 3),
             "links": round(len(links) * figures.link_floor_cores, 3),
             "flows": round(len(prep.flows) * figures.flow_floor_cores, 3), "run": figures.run_floor_cores}
    cores = round(sum(parts.values()), 3)
    alone = None
    if fastest >= figures.full_scale_mbps:
        alone = (f"full scale: a flow at {fastest / 1000:g} Gb/s "
                 f"(full scale from {figures.full_scale_mbps / 1000:g} Gb/s)")
    elif prep.cc_globals:
        alone = (f"it sets global parameters of {', '.join(sorted(prep.cc_globals))} (one value for the whole "
                 "kernel: a neighbour's run would share them)")
    elif cores > figures.budget_cores:
        alone = f"predicted {cores:g} cores, more than the budget of {figures.budget_cores:g}"
    return Cost(cores, parts, alone)


@dataclass(frozen=True)
class Decision:
    """Whether the next queued run starts now, and the figures that decided it."""

    start: bool
    why: str
    running_cores: float
    candidate_cores: float
    budget_cores: float
    running: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def admit(running: list[Cost], candidate: Cost, budget_cores: float, max_running: int) -> Decision:
    """Start `candidate` beside `running` while their sum stays within the budget and fewer than
    `max_running` go; a run that must run alone starts only on an empty machine, and nothing starts
    beside it. An empty machine takes any run (a run over the budget by itself still runs, alone)."""
    used = round(sum(c.cores for c in running), 3)

    def decide(start: bool, why: str) -> Decision:
        return Decision(start, why, used, candidate.cores, budget_cores, len(running))

    if not running:
        return decide(True, "nothing else runs" + (f"; it runs alone: {candidate.alone}" if candidate.alone else ""))
    lone = next((c for c in running if c.alone), None)
    if lone is not None:
        return decide(False, f"waits: a run that runs alone is going ({lone.alone})")
    if candidate.alone:
        return decide(False, f"waits for an empty machine: it runs alone ({candidate.alone})")
    if len(running) >= max_running:
        return decide(False, f"waits: {len(running)} runs going, at most {max_running} at once")
    if used + candidate.cores > budget_cores + 1e-9:
        return decide(False, f"waits: {used:g} + {candidate.cores:g} cores would exceed the budget of "
                             f"{budget_cores:g}")
    return decide(True, f"fits: {used:g} + {candidate.cores:g} of {budget_cores:g} cores, "
                        f"{len(running) + 1} runs at once")


def for_spec(prep: Prepared) -> tuple[Cost, Figures]:
    """A prepared run's cost with this machine's figures (its CPUs, its last self-test)."""
    figures = machine_figures(selftest.load())
    return predict(prep, figures), figures


def carry_warning(cost: Cost, figures: Figures) -> str | None:
    """What to tell a person before they start a run this machine cannot carry faithfully (None: it can): its
    flows are predicted to need more cores than the machine has below the fidelity verdict's busy limit
    (fastlab.measure.fidelity.MACHINE_BUSY_MAX), so the verdict would call it unfaithful and its checkpoints
    inconclusive. A run that merely exceeds the queue's budget runs alone, and is said so."""
    from fastlab.measure.fidelity import MACHINE_BUSY_MAX

    cpus = figures.budget_cores / FAITHFUL_SHARE
    if cost.cores > cpus * MACHINE_BUSY_MAX:
        return (f"this machine cannot carry it faithfully: the cost model predicts up to {cost.cores:.3g} cores for "
                f"its flows (each counted at its path's full rate), and the machine has {cpus:g}, of which the "
                f"fidelity verdict allows {MACHINE_BUSY_MAX:.0%} busy: the run would be unfaithful and its checkpoints "
                "inconclusive; lower the rates (the topology's scale) or the number of flows")
    if cost.alone:
        return f"it will run alone on this machine: {cost.alone}"
    return None
