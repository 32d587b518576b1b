"""Checkpoints of lab 03 (the SC2002 table): each row's utilization in the paper's sense, at full
scale for rows 1 and 2, Linux TCP on the same path, FAST at its equilibrium, FAST against the
others under random loss, and the fidelity of every run.

Utilization is SC2002's: goodput over the flow's GbE port less 40 bytes of TCP/IP headers per
1500-byte packet, so a saturated port reads 1448/1460 = 0.992 (TCP timestamps take 12 of the 40).
It is measured from 40 s to the end of the 120 s full-scale runs (the paper's figures are
hour-long averages in which FAST's start-up is negligible; at full scale paced FAST fills its
port in ~30 s on a quiet machine and ~35-40 s when the host stalls now and then), or over the
second half of shorter runs such as the 1/100-scale rows and the short forms.
"""

from __future__ import annotations

from fastlab.labs import (
    SC2002_CEILING,
    CheckResult,
    MissingData,
    StepRun,
    checkpoint,
    emulation_faithful,
    within,
)
from fastlab.topology import build_plan

FROM_S = 40.0  # after FAST's start-up at full scale (see the module docstring)
GBE_PAYLOAD_MBPS = 1000 * 1460 / 1500  # the paper's utilization denominator per port

faithful = checkpoint(emulation_faithful)


def _window(run: StepRun) -> tuple[float, float]:
    duration = float(run.spec["duration_s"])
    return min(FROM_S, duration / 2), duration


def _utilization(run: StepRun, flow_id: str) -> float:
    """The flow's SC2002 utilization of its sender's GbE port (`<host>-gbe`), its bottleneck."""
    return run.sc2002_utilization(flow_id, f"{run.flow_summary(flow_id)['src']}-gbe", *_window(run))


def _ceiling() -> float:
    return SC2002_CEILING + 0.005  # +0.005: goodput is sampled at the window's ends (10 Hz)


@checkpoint
def row_utilization(run: StepRun, flows: list[str], published: float, margin: float = 0.0) -> CheckResult:
    """Mean SC2002 utilization of the row's FAST flows, each over its own GbE port.

    Model: converged FAST keeps alpha packets queued at its port, so the port never idles and the
    row reads the payload ceiling 0.992 less whatever start-up falls inside the window. The lab
    asks for the published figure (less `margin` where a step runs off its paper conditions, e.g.
    the short forms' smaller scale), and no more than the ceiling (above it the shaping leaks)."""
    for f in flows:
        if run.flow_summary(f)["cc"] != "fast":
            raise MissingData(f"flow {f} runs {run.flow_summary(f)['cc']}, not fast: this row is FAST's")
    values = [_utilization(run, f) for f in flows]
    mean = sum(values) / len(values)
    t0, t1 = _window(run)
    result = within(f"{len(flows)}-flow row utilization ({t0:g}-{t1:g} s)", mean, published - margin, _ceiling(),
                    f"SC2002 published {published:.0%} (goodput over GbE less 40 header bytes); converged FAST "
                    f"keeps its port busy, so the emulated row should reach it; the ceiling {SC2002_CEILING:.3f} "
                    "is a saturated port with TCP timestamps")
    result.note = "per flow: " + ", ".join(f"{v:.3f}" for v in values) + _bmps_note(run, flows, published)
    return result


def _bmps_note(run: StepRun, flows: list[str], published: float) -> str:
    """The row in bit-metres per second (throughput x distance), measured against published, at full scale.

    A scaled-down run's bmps is divided by its scale so that both figures describe the real path."""
    plan = build_plan(run.spec["topology"], run.spec.get("topology_args", {}))
    site = "".join(c for c in run.flow_summary(flows[0])["src"] if not c.isdigit())
    km = plan.metadata.get("distances_km", {}).get(f"{site}-sunnyvale")
    if km is None:
        return ""
    scale = float(plan.metadata.get("scale", 1.0))
    metres = km * 1e3
    t0, t1 = _window(run)
    measured = sum(run.goodput_mbps(f, t0, t1) for f in flows) * 1e6 * metres / scale
    paper = published * len(flows) * GBE_PAYLOAD_MBPS * 1e6 * metres
    return f"; {measured:.3g} bmps at full scale (published {paper:.3g})"


@checkpoint
def clean_path_utilization(run: StepRun, flow: str, lo: float) -> CheckResult:
    """A loss-based flow alone on a clean path (no loss but its own queue's overflow)."""
    return within(f"{run.flow_summary(flow)['cc']} ({flow}) utilization", _utilization(run, flow), lo, _ceiling(),
                  "on a clean path a loss-based flow's window after its slow-start loss is about half of what "
                  "overflowed the one-BDP queue, i.e. about one BDP: the port stays busy while the window "
                  "regrows by one packet per RTT; lower only if recovery fell back to a timeout")


@checkpoint
def fast_equilibrium(run: StepRun, flows: list[str], spread: float = 0.1) -> CheckResult:
    """FAST's own backlog estimate w(1 - baseRTT/avgRTT), averaged over the window, is alpha."""
    t0, t1 = _window(run)
    backlogs: dict[str, float] = {}
    alpha = 0
    for f in flows:
        updates = run.events(f)
        updates = updates[(updates["event"] == "update") & (updates["t"] >= t0) & (updates["t"] <= t1)]
        if updates.empty:
            raise MissingData(f"cc_events.csv has no FAST updates of flow {f}")
        alpha = int(updates["alpha"].iloc[-1])
        backlogs[f] = float(updates["backlog"].mean())
    worst = max(backlogs.values(), key=lambda b: abs(b - alpha))
    lo, hi = min(alpha - 3, alpha * (1 - spread)), max(alpha + 2, alpha * (1 + spread))
    result = within("FAST backlog per flow (worst flow)", worst, lo, hi,
                    f"at equilibrium each FAST flow keeps alpha = {alpha} packets queued; the floor mode's band is "
                    f"alpha-2..alpha; at Gb/s the per-RTT estimate also carries the emulators' delay noise "
                    f"(fidelity budget: a quarter of alpha's queueing delay), so +-{spread:.0%} of alpha at "
                    "large alpha", "packets")
    result.note = ", ".join(f"{f}: {b:.1f}" for f, b in backlogs.items())
    return result


@checkpoint
def utilization(run: StepRun, flow: str, lo: float, hi: float | None = None, why: str = "") -> CheckResult:
    """One flow's SC2002 utilization of its own GbE over the window."""
    return within(f"{run.flow_summary(flow)['cc']} ({flow}) utilization", _utilization(run, flow), lo,
                  hi if hi is not None else _ceiling(), why or "above the ceiling the shaping would leak")


@checkpoint
def utilization_gap(run: StepRun, better: str, worse: str, min_gap: float, max_gap: float = 1.0) -> CheckResult:
    """How much more of its GbE flow `better` uses than flow `worse` does (same path, same loss rate)."""
    a, b = _utilization(run, better), _utilization(run, worse)
    names = f"{run.flow_summary(better)['cc']} - {run.flow_summary(worse)['cc']}"
    result = within(f"utilization gap {names}", a - b, min_gap, max_gap,
                    "losing one packet in 1/p, Reno's window saws between W/2 and W = sqrt(8/(3p)) packets and "
                    "averages 1.22/sqrt(p) (Mathis et al. 1997, periodic loss): where that is well below the path's "
                    "BDP + queue, loss limits Reno "
                    "and FAST (which climbs back within a few RTTs after halving) leads by tens of points; where "
                    "it is not, both fill the link")
    result.note = f"{a:.3f} vs {b:.3f}"
    return result


@checkpoint
def loss_rate(run: StepRun, link: str) -> CheckResult:
    """The loss the spec asks for was applied: drops / arrivals on the link."""
    loss = run.spec["links"][link]["loss"]
    summary = run.link_summary(link)
    arrivals = summary.get("arrivals_pkts") or 0
    if arrivals <= 0:
        raise MissingData(f"links.csv counts no arrivals on {link}")
    drops = summary["loss_drops"] / arrivals
    if loss["model"] == "every_nth":
        n = int(loss["n"])
        expected = arrivals // n
        return within(f"loss rate on {link}", drops, max(0, expected - 1) / arrivals, (expected + 1) / arrivals,
                      f"every {n}th packet: exactly arrivals / {n} drops, give or take the one in flight "
                      "when the counters were read")
    asked = float(loss["rate"])
    expected = asked * arrivals
    spread = 4 * expected ** 0.5 + 1
    return within(f"loss rate on {link}", drops, max(0.0, expected - spread) / arrivals, (expected + spread) / arrivals,
                  f"Bernoulli drops at p = {asked:g}: the count is binomial, +-4 standard deviations")
