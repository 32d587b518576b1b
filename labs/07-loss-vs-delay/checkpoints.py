"""Checkpoints of lab 07 (loss versus delay as the congestion signal).

Every flow has its own GbE host link (its bottleneck) and the same seeded random loss rate p on
the shared show-floor link, so a flow's throughput is its algorithm's answer to p alone.
Figures are taken after the first third of the run (slow start and its overshoot are over).
"""

from __future__ import annotations

import math

from fastlab.labs import CheckResult, MissingData, StepRun, checkpoint, within

MATHIS_C = math.sqrt(1.5)  # Reno's mean window under periodic loss: sqrt(3/(2p)) = 1.22/sqrt(p)


def _window(run: StepRun) -> tuple[float, float]:
    duration = float(run.spec["duration_s"])
    return duration / 3, duration


def _loss_rate(run: StepRun) -> float:
    rates = [link["loss"]["rate"] for link in run.spec.get("links", {}).values() if "loss" in link]
    if len(rates) != 1:
        raise MissingData("the spec must set exactly one Bernoulli loss rate")
    return float(rates[0])


def _utilization(run: StepRun, cc: str) -> float:
    flow = run.flow_running(cc)
    return run.utilization(flow, f"{run.flow_summary(flow)['src']}-gbe", *_window(run))


@checkpoint
def reno_follows_mathis(run: StepRun, lo: float = 0.6, hi: float = 1.5) -> CheckResult:
    """Reno's goodput over the Mathis et al. prediction 1.22 MSS / (RTT sqrt(p)), RTT its mean smoothed RTT."""
    flow, p = run.flow_running("reno"), _loss_rate(run)
    t0, t1 = _window(run)
    rows = run.flow(flow)
    rows = rows[(rows["t"] >= t0) & (rows["t"] <= t1)]
    mss, rtt_s = float(rows["mss_bytes"].median()), float(rows["srtt_ms"].mean()) / 1000
    predicted = MATHIS_C * mss * 8 / 1e6 / (rtt_s * math.sqrt(p))
    measured = run.goodput_mbps(flow, t0, t1)
    result = within(f"Reno / Mathis at p={p:g}", measured / predicted, lo, hi,
                    "1.22/sqrt(p) is the periodic-loss sawtooth; random loss, timeouts at small windows and a "
                    "sampled RTT move the constant by tens of percent, not by the factor 2 per 4x loss of the law")
    result.note = f"{measured:.2f} Mb/s measured, {predicted:.2f} Mb/s predicted"
    return result


@checkpoint
def utilization(run: StepRun, cc: str, lo: float, hi: float = 1.02, why: str = "") -> CheckResult:
    """The utilization of the flow running `cc` on its own GbE link lies in [lo, hi]."""
    return within(f"{cc} utilization at p={_loss_rate(run):g}", _utilization(run, cc), lo, hi, why)


@checkpoint
def leads(run: StepRun, better: str, worse: str, min_ratio: float, why: str = "") -> CheckResult:
    """The flow running `better` carries at least `min_ratio` times the throughput of the one running `worse`."""
    a, b = _utilization(run, better), _utilization(run, worse)
    result = within(f"{better} / {worse} at p={_loss_rate(run):g}", a / max(b, 1e-9), min_ratio, math.inf, why)
    result.note = f"{a:.3f} vs {b:.3f}"
    return result
