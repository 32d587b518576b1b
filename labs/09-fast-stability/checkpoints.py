"""Checkpoints of lab 09 (FAST's stability): how one FAST flow answers a step in its set point
(alpha 20 -> 60 while it runs), against the per-RTT model of fastlab.fast_theory.step_response, and
how Reno's loss-driven queue swings where FAST's stands still.

Measured from FAST's own update events (cc_events.csv: the window after every update, exact, no
sampling) of flow f1: `before` is the median window over the 1.5 s before the change, the series
every window from the change on, `final` the median of its last quarter. The model takes the same
run's inputs: capacity and FAST's measured baseRTT (the BDP), the alphas, gamma and the period from
the spec. Tolerances come from two sources, stated in each result:
- the integer floor: FAST stops up to 1/gamma packets short of its target, at the peak and at the
  end alike, so an overshoot read as a fraction of the step is uncertain by 2/(gamma*step);
- the model's lumping: it moves every ACK of a round at once and assumes delayed ACKs (w/2 ACKs a
  round) for the avgRTT average: MODEL_SLACK of the step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fastlab.ccset import FAST_PARAMS
from fastlab.fast_theory import PKT_BITS, StepFigures, step_figures, step_response
from fastlab.labs import CheckResult, MissingData, StepRun, checkpoint, emulation_faithful, within

MODEL_SLACK = 0.05  # of the step: the per-round model against the per-ACK kernel
SETTLE_BAND = 0.10  # of the step: "settled" = within this (or the 1/gamma floor band) of final
BEFORE_S = 1.5  # window before the change: its median over this long
DEFAULTS = {p.name: p.default for p in FAST_PARAMS}

faithful = checkpoint(emulation_faithful)


@dataclass(frozen=True)
class StepRead:
    """A run's alpha step: the measured and the modelled response, and the model's inputs."""

    measured: StepFigures
    model: StepFigures
    series: list[float]  # the window after every update from the change on
    gamma: float
    step: float  # packets
    bdp: float  # packets
    alpha_after: int
    inputs: str  # the model's inputs, said in each result


def _step(run: StepRun, flow: str) -> StepRead:
    """Read the run's alpha step from FAST's update events and model it from the same run's inputs."""
    changes = run.spec.get("cc_changes") or []
    if not changes:
        raise MissingData("the run's spec has no cc_changes: alpha never stepped")
    at = float(changes[0]["at_s"])
    args = dict(run.spec["flows"][0].get("cc_args") or {})
    gamma = float(args.get("gamma", DEFAULTS["gamma"]))
    period = args.get("period", "rtt")
    if period not in ("rtt", "2rtt"):
        raise MissingData(f"period {period!r}: the model counts in round trips (rtt or 2rtt)")
    alpha0 = int(args.get("alpha", DEFAULTS["alpha"]))
    alpha1 = int(changes[0]["args"]["alpha"])
    updates = run.events(flow)
    updates = updates[updates["event"] == "update"]
    before = updates[(updates["t"] >= at - BEFORE_S) & (updates["t"] < at)]["cwnd"]
    after = updates[updates["t"] >= at]
    if len(before) < 5 or len(after) < 20:
        raise MissingData(f"{flow}: {len(before)} updates before and {len(after)} after the change at {at:g} s")
    base_ms = float(after["base_rtt_us"].iloc[-1]) / 1000
    capacity = run.link_summary("bottleneck")["capacity_mbps"]
    bdp = capacity * 1e6 / PKT_BITS * base_ms / 1000
    w0 = float(np.median(before))
    rounds = int(math.ceil((float(after["t"].iloc[-1]) - at) / (float(after["avg_rtt_us"].mean()) / 1e6)))
    series = [float(v) for v in after["cwnd"]]
    step = abs(series[-1] - w0)
    band = max(SETTLE_BAND * step, 1 / gamma)
    model = step_response(bdp, alpha0, alpha1, gamma, 2 if period == "2rtt" else 1, updates=max(rounds, 20),
                          window_before=w0)
    if period == "2rtt":
        model = model[1::2]  # the model counts rounds; an update comes every other round
    inputs = (f"model: BDP {bdp:.1f} pkts ({capacity:g} Mb/s x baseRTT {base_ms:.1f} ms), alpha {alpha0}->{alpha1}, "
              f"gamma {gamma:g}, period {period}")
    return StepRead(step_figures(w0, series, band), step_figures(w0, [float(v) for v in model], band), series,
                    gamma, step, bdp, alpha1, inputs)


def _tolerance(gamma: float, step: float) -> tuple[float, str]:
    floor = 2 / (gamma * step)
    return floor + MODEL_SLACK, (f"+-{floor + MODEL_SLACK:.2f} of the step: the floor band 1/gamma = {1 / gamma:g} "
                                 f"pkts at the peak and at the end ({floor:.2f} of a {step:.0f}-packet step) and "
                                 f"{MODEL_SLACK} for the per-round model")


@checkpoint
def equilibrium(run: StepRun, flow: str = "f1") -> CheckResult:
    """Where the window settles after the step: w* = BDP + alpha (the pipe plus alpha queued)."""
    r = _step(run, flow)
    target = r.bdp + r.alpha_after
    return within(f"{flow} settled window after the step", r.measured.final, target - 1 / r.gamma - 2, target + 2,
                  f"{r.inputs}: w* = BDP + alpha = {target:.1f} pkts; the integer floor stops up to 1/gamma = "
                  f"{1 / r.gamma:g} pkts short, +-2 pkts for the BDP read from FAST's measured baseRTT "
                  "(1 ms of it is 1.7 packets at 20 Mb/s)", "pkts")


@checkpoint
def overshoot(run: StepRun, flow: str = "f1") -> CheckResult:
    """The highest window after the step, above where it settles, as a fraction of the step."""
    r = _step(run, flow)
    tol, why = _tolerance(r.gamma, r.step)
    return within(f"{flow} overshoot after the alpha step (fraction of the step)", r.measured.overshoot,
                  max(0.0, r.model.overshoot - tol), r.model.overshoot + tol,
                  f"{r.inputs}: overshoot {r.model.overshoot:.2f}; {why}")


@checkpoint
def ringing(run: StepRun, flow: str = "f1") -> CheckResult:
    """How far the window falls back below its final value after first reaching it: the swing of
    an oscillation (0 for a monotone or once-overshooting approach)."""
    r = _step(run, flow)
    tol, why = _tolerance(r.gamma, r.step)
    return within(f"{flow} undershoot after first reaching the final window (fraction of the step)",
                  r.measured.undershoot, max(0.0, r.model.undershoot - tol), r.model.undershoot + tol,
                  f"{r.inputs}: undershoot {r.model.undershoot:.2f}; {why}")


@checkpoint
def settling(run: StepRun, flow: str = "f1") -> CheckResult:
    """Updates until the window stays within max(10 % of the step, 1/gamma packets) of its final value."""
    r = _step(run, flow)
    slack = 2 + 0.3 * r.model.settling
    return within(f"{flow} updates to settle after the alpha step", float(r.measured.settling),
                  max(0.0, r.model.settling - slack), r.model.settling + slack,
                  f"{r.inputs}: {r.model.settling} updates; +-(2 + 30 %): where inside the floor band the window "
                  "stops decides by an update or two when it enters the settling band", "updates")


@checkpoint
def queue_swing(run: StepRun, at_least_buffer: float | None = None, at_most_pkts: float | None = None,
                t0: float = 5.0, link: str = "bottleneck") -> CheckResult:
    """The spread (5th to 95th percentile) of the bottleneck queue from t0 to 1 s before the end:
    a loss-driven sawtooth sweeps most of the buffer; FAST in equilibrium holds still."""
    rows = run.link(link)
    end = float(rows["t"].iloc[-1]) - 1.0
    rows = rows[(rows["t"] >= t0) & (rows["t"] <= end)]
    if len(rows) < 20:
        raise MissingData(f"fewer than 20 queue samples of {link} between {t0:g} and {end:g} s")
    swing = float(rows["backlog_pkts"].quantile(0.95) - rows["backlog_pkts"].quantile(0.05))
    if at_least_buffer is not None:
        shaped = [s for s in run.environment.get("shaping", []) if s["link"] == link]
        if not shaped or not shaped[0]["resolved"]["forward"].get("limit_pkts"):
            raise MissingData(f"environment.json does not say {link}'s buffer in packets")
        buffer = float(shaped[0]["resolved"]["forward"]["limit_pkts"])
        return within(f"{link} queue swing (p95 - p5) after {t0:g} s", swing, at_least_buffer * buffer, buffer + 1,
                      f"at least {at_least_buffer:.0%} of the {buffer:.0f}-packet buffer: Reno's window runs from "
                      "BDP + buffer down to half of it at every loss, so the queue sweeps from full to near empty",
                      "pkts")
    if at_most_pkts is None:
        raise MissingData("queue_swing needs at_least_buffer or at_most_pkts")
    return within(f"{link} queue swing (p95 - p5) after {t0:g} s", swing, 0.0, at_most_pkts,
                  f"at most {at_most_pkts:g} packets: FAST at equilibrium holds alpha packets queued, give or take "
                  "its floor band and the 20 Hz sampling of the queue", "pkts")


@checkpoint
def monotone(run: StepRun, flow: str = "f1") -> CheckResult:
    """After the step the window only climbs: the largest fall below its running maximum, in packets."""
    r = _step(run, flow)
    series = np.asarray(r.series)
    fall = float(np.max(np.maximum.accumulate(series) - series))
    return within(f"{flow} largest fall of the window after the step", fall, 0.0, 1.0,
                  f"{r.inputs}: real roots, no overshoot; at most 1 packet: the integer floor can take back the "
                  "packet the rounding gave", "pkts")
