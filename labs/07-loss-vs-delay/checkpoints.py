"""Checkpoints of lab 07 (loss versus delay as the congestion signal).

Every flow has its own GbE host link (its bottleneck) and the same seeded random loss rate p on
the shared show-floor link, so a flow's throughput is its algorithm's answer to p alone.
Figures are taken after the first third of the run (slow start and its overshoot are over).
"""

from __future__ import annotations

import math

from fastlab.labs import CheckResult, MissingData, StepRun, checkpoint, loss_starts, within

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


# Fewer loss events than this in the measured window and "the losses Reno met per packet" is not a
# rate: one event cannot delimit a sawtooth cycle.
MIN_LOSS_EVENTS = 2


@checkpoint
def reno_follows_mathis(run: StepRun, lo: float = 0.6, hi: float = 1.5) -> CheckResult:
    """Reno's goodput over the Mathis et al. prediction 1.22 MSS / (RTT sqrt(p)), RTT its mean smoothed RTT.

    p is what the law means by it, the congestion signals the flow met per packet it delivered, counted
    in the measured window (loss-recovery entries and ssthresh falls of its trace), not the link's nominal
    rate. A short run meets few losses: at p = 2e-3 Reno delivers ~300 packets/s, ~6 losses in a 10-s
    window, so the count alone moves the nominal-p prediction by +-40 % (1/sqrt(6)), and one seed gives
    every step the same luck (its drops at a low rate are a subset of those at a higher one): the recorded
    runs met 1.3-1.5x the nominal rate at all three, their ratios 0.85/0.80/0.72 at the nominal rate and
    1.05/0.91/0.87 at the rate met. CI's failed short run measured 0.595 against the nominal rate.
    """
    flow, p_link = run.flow_running("reno"), _loss_rate(run)
    t0, t1 = _window(run)
    rows = run.flow(flow).reset_index(drop=True)
    starts = [i for i in loss_starts(rows, reductions=True) if t0 <= rows["t"].iloc[i] <= t1]
    rows = rows[(rows["t"] >= t0) & (rows["t"] <= t1)]
    mss, rtt_s = float(rows["mss_bytes"].median()), float(rows["srtt_ms"].mean()) / 1000
    measured = run.goodput_mbps(flow, t0, t1)
    packets = measured * 1e6 / 8 * (t1 - t0) / mss
    if len(starts) < MIN_LOSS_EVENTS:
        raise MissingData(f"Reno met {len(starts)} loss event(s) in {t0:g}..{t1:g} s, fewer than "
                          f"{MIN_LOSS_EVENTS}: no loss rate to test the law at (lengthen the run)")
    p = len(starts) / packets
    predicted = MATHIS_C * mss * 8 / 1e6 / (rtt_s * math.sqrt(p))
    result = within(f"Reno / Mathis at p={p_link:g}", measured / predicted, lo, hi,
                    "1.22/sqrt(p) is the periodic-loss sawtooth; random loss, timeouts at small windows and a "
                    "sampled RTT move the constant by tens of percent, not by the factor 2 per 4x loss of the law")
    result.note = (f"{measured:.2f} Mb/s measured, {predicted:.2f} Mb/s predicted at the p={p:.2g} Reno met: "
                   f"{len(starts)} loss events in {packets:.0f} packets")
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
