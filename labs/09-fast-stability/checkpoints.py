"""Checkpoints of lab 09 (FAST's stability): how one FAST flow answers a step in its set point
(alpha 20 -> 60 while it runs), window and bottleneck queue, against the per-RTT model of
fastlab.theory.fast.step_response, and how Reno's loss-driven queue swings where FAST's stands still.

The window is read from FAST's own update events (cc_events.csv: the window after every update,
exact, no sampling) of flow f1: `before` is the median window over the 1.5 s before the change, the
series every window from the change on, `final` the median of its last quarter. The queue is read
from the bottleneck's instantaneous backlog samples (links.csv, every 50 ms) the same way. The model
takes the same run's inputs: capacity and FAST's measured baseRTT (the BDP, in packets of the run's
MTU), the window before the step, the alphas, gamma and the period from the spec.

Every bound is the model's figure with its expected spread, said in each result:
- the model's own spread over what it does not know exactly: the BDP (FAST's baseRTT, +-1 ms of it)
  and how many ACKs a round carries (the per-ACK avgRTT average moves with each): one per 2 segments
  with delayed ACKs, down to one per TSO burst when the receiver's GRO takes a burst whole (measured
  2026-11-25 at 80 Mb/s, 8-segment bursts: the window follows the model at 1 ACK per ~4 segments);
  the model is run at each corner;
- the integer floor: the window stops anywhere up to 1/gamma packets short of its target, so the
  model's final window and the kernel's need not be the same integer, and the floor takes up to a
  packet from the peak: (1/gamma + 1) packets of the step;
- for the queue only: a sample is instantaneous, and the sender releases a TSO burst at once (Linux
  sizes it to ~1 ms of its pacing rate, sk_pacing_shift 10, at least 2 segments), which the
  bottleneck then drains: a sample reads w - BDP to within +-1 burst (measured at 80 Mb/s, 7-segment
  bursts: 52-67 packets around a 60-packet queue).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fastlab.define.ccset import FAST_PARAMS
from fastlab.labs.kit import CheckResult, MissingData, StepRun, checkpoint, within
from fastlab.theory.fast import StepFigures, packet_bits, run_mtu, step_figures, step_response

SETTLE_BAND = 0.10  # of the step: "settled" = within this (or the 1/gamma floor band, or the RTT noise) of final
BEFORE_S = 1.5  # window before the change: its median over this long
BASE_RTT_READ_S = 0.001  # FAST's baseRTT (a minimum of RTT samples) against the pipe's true delay
DELAYED_ACK_SEGS = 2  # a delayed ACK covers two full segments; a GRO'd TSO burst up to all of it
TSO_SHIFT = 10  # Linux sk_pacing_shift: a TSO burst is ~1/1024 s of the pacing rate
MIN_TSO_SEGS = 2  # net.ipv4.tcp_min_tso_segs
TAIL_S = 1.0  # queue samples end this long before the trace: the flow stops first and its queue drains
# The model's resolution at a peak or a trough: it runs whole round trips (a round's queue growth and
# its RTT samples lumped at the round's start), and its windows follow the recorded 20 Mb/s runs update
# by update within 1-3 packets, their peaks and troughs within 2 (INSTRUCTOR.md's table: gamma 1/2 135
# vs 134, every other RTT 133-134 vs 132, 160 ms 339 vs 338, gamma 1's trough 116 vs 117).
MODEL_PEAK_PKTS = 2
DEFAULTS = {p.name: p.default for p in FAST_PARAMS}



@dataclass(frozen=True)
class StepRead:
    """A run's alpha step: the measured and the modelled response, and the model's inputs."""

    measured: StepFigures
    model: StepFigures  # at the nominal inputs
    corners: list[StepFigures]  # at each corner of the inputs the model does not know exactly
    corner_series: list[list[float]]  # the model's windows at each corner
    before: float  # the window before the step
    series: list[float]  # the window after every update from the change on
    update_t: list[float]  # when each of those updates came (run time, s)
    at: float  # the change (run time, s)
    gamma: float
    step: float  # packets
    band: float  # the settling band, packets
    noise: float  # packets: the capacity x the RTT noise the bottleneck's emulator adds (`_rtt_noise_ms`)
    bdp: float  # packets
    bdp_read: float  # packets: how far off the BDP may be (BASE_RTT_READ_S of the capacity)
    alpha_after: int
    capacity_mbps: float
    burst: int  # segments of a TSO burst: an ACK covers 2 of them, up to all of them
    inputs: str  # the model's inputs, said in each result

    def corner_range(self, figure: str) -> tuple[float, float]:
        values = [float(getattr(f, figure)) for f in self.corners]
        return min(values), max(values)

    @property
    def floor_share(self) -> float:
        """(1/gamma + 1) packets as a fraction of the step: where in its floor band each window stops."""
        return (1 / self.gamma + 1) / self.step


def _rtt_noise_ms(run: StepRun, link: str = "bottleneck") -> float:
    """The RTT noise the link's emulator adds: its departure lateness at the 99th percentile, forward
    and reverse (fastlab.measure.fidelity; none measured for a tc-shaped link). FAST's window at its fixed
    point follows the RTT it measures, so a noise of d ms moves it by C x d packets: nothing at
    20 Mb/s (1.2 ms, 2 packets), but at 80 Mb/s a p99 of 0.6-0.9 ms each way is 8-10 packets, and
    one late burst (a 5-7 ms maximum) kicked a settled window 6 packets off and back (local, 2026-11-26)."""
    figures = run.link_timing(link)[link]
    return sum(float(figures[d].late_p99_us or 0.0) for d in ("forward", "reverse") if d in figures) / 1000


def _model(bdp: float, alpha0: int, alpha1: int, gamma: float, period: str, rounds: int, w0: float,
           acks_per_pkt: float) -> list[float]:
    model = step_response(bdp, alpha0, alpha1, gamma, 2 if period == "2rtt" else 1, updates=max(rounds, 20),
                          window_before=w0, acks_per_pkt=acks_per_pkt)
    if period == "2rtt":
        model = model[1::2]  # the model counts rounds; an update comes every other round
    return [float(v) for v in model]


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
    capacity = run.capacity_mbps("bottleneck")
    pkts_per_s = capacity * 1e6 / packet_bits(run_mtu(run.spec))
    bdp = pkts_per_s * base_ms / 1000
    w0 = float(np.median(before))
    rounds = int(math.ceil((float(after["t"].iloc[-1]) - at) / (float(after["avg_rtt_us"].mean()) / 1e6)))
    series = [float(v) for v in after["cwnd"]]
    step = abs(series[-1] - w0)
    noise = pkts_per_s * _rtt_noise_ms(run) / 1000
    band = max(SETTLE_BAND * step, 1 / gamma, noise)
    read = pkts_per_s * BASE_RTT_READ_S
    burst = _tso_burst(run, flow, at, float(after["t"].iloc[-1]))
    acks_per_pkt = sorted({1 / DELAYED_ACK_SEGS, 1 / max(burst, DELAYED_ACK_SEGS)})
    corner_series = [_model(b, alpha0, alpha1, gamma, period, rounds, w0, acks)
                     for b in (bdp - read, bdp + read) for acks in acks_per_pkt]
    corners = [step_figures(w0, m, band) for m in corner_series]
    model = step_figures(w0, _model(bdp, alpha0, alpha1, gamma, period, rounds, w0, 1 / DELAYED_ACK_SEGS), band)
    inputs = (f"model: BDP {bdp:.1f} pkts ({capacity:g} Mb/s x baseRTT {base_ms:.1f} ms, {run_mtu(run.spec)}-byte "
              f"packets), alpha {alpha0}->{alpha1}, gamma {gamma:g}, period {period}")
    return StepRead(step_figures(w0, series, band), model, corners, corner_series, w0, series,
                    [float(t) for t in after["t"]], at, gamma, step, band, noise, bdp, read, alpha1, capacity, burst,
                    inputs)


def _spread_text(r: StepRead, lo: float, hi: float, extra: str = "") -> str:
    return (f"the model over BDP +-{r.bdp_read:.1f} pkts (baseRTT +-1 ms) and {_acks_text(r)} gives "
            f"{lo:.2f}..{hi:.2f}; +-{r.floor_share:.2f} for the floor "
            f"(1/gamma + 1 = {1 / r.gamma + 1:g} pkts of the {r.step:.0f}-packet step: the final window anywhere in "
            f"its floor band, a packet off the peak){extra}")


def _acks_text(r: StepRead) -> str:
    if r.burst <= DELAYED_ACK_SEGS:
        return "an ACK per 2 segments (delayed ACKs; 2-segment TSO bursts)"
    return f"an ACK per 2 to {r.burst} segments (delayed ACKs up to a {r.burst}-segment TSO burst GRO'd whole)"


_RESOLUTION_TEXT = (f"; +-{MODEL_PEAK_PKTS} pkts for the model's resolution: it runs whole round trips, and its "
                    f"peaks and troughs sit within {MODEL_PEAK_PKTS} pkts of the recorded runs'")


def _figure_check(r: StepRead, figure: str, measured: float, label: str, extra_share: float = 0.0,
                  extra: str = "") -> CheckResult:
    lo, hi = r.corner_range(figure)
    tol = r.floor_share + extra_share
    return within(label, measured, max(0.0, lo - tol), hi + tol,
                  f"{r.inputs}: {figure} {getattr(r.model, figure):.2f}; " + _spread_text(r, lo, hi, extra))


@checkpoint
def equilibrium(run: StepRun, flow: str = "f1") -> CheckResult:
    """Where the window settles after the step: w* = BDP + alpha (the pipe plus alpha queued)."""
    r = _step(run, flow)
    target = r.bdp + r.alpha_after
    return within(f"{flow} settled window after the step", r.measured.final, target - 1 / r.gamma - 1, target + 1,
                  f"{r.inputs}: w* = BDP + alpha = {target:.1f} pkts (FAST's fixed point w(1 - d/D) = alpha with "
                  f"D = w/C, d its own baseRTT); the integer floor stops it anywhere up to 1/gamma = {1 / r.gamma:g} "
                  "pkts short (it moves only while gamma*(alpha - backlog) >= 1); +-1: the window is an integer and "
                  "D reaches the update through the avgRTT average", "pkts")


@checkpoint
def overshoot(run: StepRun, flow: str = "f1") -> CheckResult:
    """The highest window after the step, above where it settles, as a fraction of the step."""
    r = _step(run, flow)
    return _figure_check(r, "overshoot", r.measured.overshoot,
                         f"{flow} overshoot after the alpha step (fraction of the step)",
                         MODEL_PEAK_PKTS / r.step, _RESOLUTION_TEXT)


@checkpoint
def ringing(run: StepRun, flow: str = "f1") -> CheckResult:
    """How far the window falls back below its final value after first reaching it: the swing of
    an oscillation (0 for a monotone or once-overshooting approach)."""
    r = _step(run, flow)
    return _figure_check(r, "undershoot", r.measured.undershoot,
                         f"{flow} undershoot after first reaching the final window (fraction of the step)",
                         MODEL_PEAK_PKTS / r.step, _RESOLUTION_TEXT)


def _band_text(r: StepRead) -> str:
    return (f"+-{r.band:.3g} pkts (the widest of 10% of the step, 1/gamma and the window's share of the "
            f"emulator's RTT noise, {r.noise:.1f} pkts)")


@checkpoint
def settling(run: StepRun, flow: str = "f1") -> CheckResult:
    """Updates until the window stays within max(10 % of the step, 1/gamma packets, the capacity x the
    emulator's RTT noise) of its final value."""
    r = _step(run, flow)
    lo, hi = r.corner_range("settling")
    return within(f"{flow} updates to settle after the alpha step", float(r.measured.settling),
                  max(0.0, lo - 1), hi + 1,
                  f"{r.inputs}: {r.model.settling} updates within {_band_text(r)}; the model over BDP +-1 ms of "
                  f"baseRTT and {_acks_text(r)} settles in {lo:.0f}..{hi:.0f}; +-1 update: the change comes "
                  "anywhere in a round, so the kernel's first update with the new alpha can see one round more or "
                  "less of the old RTT than the model's", "updates")


# --- the queue ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class QueueRead:
    """The bottleneck queue around the alpha step: samples after it and the figures read from them."""

    before: float  # median over BEFORE_S before the change
    final: float  # median of the last quarter after it
    peak: float
    times: list[float]  # samples from the change on
    values: list[float]


def _tso_burst(run: StepRun, flow: str, t0: float, t1: float) -> int:
    """Segments Linux puts in one TSO burst: its pacing rate over 2^sk_pacing_shift, at least 2
    (tcp_tso_autosize; FAST paces nothing itself here, the rate only sizes the bursts)."""
    rows = run.flow(flow)
    rows = rows[(rows["t"] >= t0) & (rows["t"] <= t1)].dropna(subset=["pacing_rate_mbps", "mss_bytes"])
    if rows.empty:
        raise MissingData(f"flows.csv has no pacing rate of {flow} between {t0:g} and {t1:g} s")
    bytes_per_burst = float(rows["pacing_rate_mbps"].median()) * 1e6 / 8 / 2 ** TSO_SHIFT
    return max(MIN_TSO_SEGS, int(bytes_per_burst // float(rows["mss_bytes"].median())))


def _queue(run: StepRun, r: StepRead, flow: str, link: str = "bottleneck") -> QueueRead:
    rows = run.link(link)
    end = float(rows["t"].iloc[-1]) - TAIL_S  # the flow stops before the trace does: its queue drains
    before = rows[(rows["t"] >= r.at - BEFORE_S) & (rows["t"] < r.at)]["backlog_pkts"]
    after = rows[(rows["t"] >= r.at) & (rows["t"] <= end)]
    if len(before) < 10 or len(after) < 20:
        raise MissingData(f"{link}: {len(before)} queue samples before and {len(after)} after the change")
    values = [float(v) for v in after["backlog_pkts"]]
    tail = sorted(values[-max(1, len(values) // 4):])
    return QueueRead(float(np.median(before)), tail[len(tail) // 2], max(values), [float(t) for t in after["t"]],
                     values)


@checkpoint
def queue_level(run: StepRun, flow: str = "f1") -> CheckResult:
    """The queue FAST settles at after the step: its window less the pipe, w - C*d = alpha (the
    floor: up to 1/gamma less)."""
    r = _step(run, flow)
    q = _queue(run, r, flow)
    lo, hi = r.alpha_after - 1 / r.gamma - 1 - r.burst, r.alpha_after + r.burst
    return within("bottleneck queue after the step (median of the last quarter)", q.final, lo, hi,
                  f"FAST's fixed point holds w - C*d = alpha = {r.alpha_after} pkts queued, less up to 1/gamma = "
                  f"{1 / r.gamma:g} (the floor) and 1 (the integer window); +-{r.burst}: a sample reads the queue "
                  f"within a TSO burst ({r.burst} segments, ~1 ms of the pacing rate, sent at once and drained at "
                  "the link's rate)", "pkts")


@checkpoint
def queue_overshoot(run: StepRun, flow: str = "f1") -> CheckResult:
    """The bottleneck queue's highest sample after the step above where it settles, as a fraction
    of its step: the queue is the window less the pipe, so the model's window overshoot."""
    r = _step(run, flow)
    q = _queue(run, r, flow)
    step = q.final - q.before
    if step < 1:
        raise MissingData(f"the queue did not step: {q.before:g} -> {q.final:g} pkts")
    measured = (q.peak - q.final) / step
    share = 2 * r.burst / r.step
    return _figure_check(r, "overshoot", measured, "bottleneck queue overshoot after the step (fraction of its step)",
                         share, f"; +-{share:.2f}: the peak sample and the final level each read w - BDP within a TSO "
                         f"burst ({r.burst} segments, ~1 ms of the pacing rate); the peak window lasts an update "
                         "interval, about the 50 ms between samples, so a sample falls in it")


@checkpoint
def queue_settling(run: StepRun, flow: str = "f1") -> CheckResult:
    """Window updates until the queue stays within the window's settling band (plus a burst) of
    its final level: the queue follows the window within one update."""
    r = _step(run, flow)
    q = _queue(run, r, flow)
    band = r.band + r.burst
    # read through a running median of 3 samples (150 ms): a lone sample off the band (measured: one
    # of 28 packets in a 62-packet queue at 80 Mb/s, a sender stall of ~5 ms the window did not
    # answer) is a disturbance after the step, not the step still settling
    smooth = pd.Series(q.values).rolling(3, center=True, min_periods=1).median().tolist()
    outside = [t for t, v in zip(q.times, smooth, strict=True) if abs(v - q.final) > band]
    measured = sum(1 for t in r.update_t if outside and t <= outside[-1])
    # the queue reads w - BDP within a burst: inside `band` whenever the window is inside r.band (at
    # most one update later: the queue fills or drains a window's change within an update), and
    # possibly earlier, while the window is within r.band + 2 bursts of its final value
    lo = min(step_figures(r.before, m, r.band + 2 * r.burst).settling for m in r.corner_series)
    hi = max(f.settling for f in r.corners)
    return within("updates until the bottleneck queue settles", float(measured), max(0.0, lo - 1), hi + 2,
                  f"{r.inputs}: queue samples read through a running median of 3 (150 ms); the window settles "
                  f"within {_band_text(r)} in {r.model.settling} updates; the "
                  f"queue, w - BDP to within a TSO burst of {r.burst}, within +-{band:g}: the model over BDP +-1 ms "
                  f"and {_acks_text(r)} gives {lo}..{hi} (the low end with the band 2 bursts wider); -1/+1 for the "
                  "round the change falls in, +1 for the update the queue needs to follow the window", "updates")


@checkpoint
def queue_swing(run: StepRun, at_least_buffer: float | None = None, fast_flow: str | None = None,
                t0: float | None = None, link: str = "bottleneck") -> CheckResult:
    """The spread (5th to 95th percentile) of the bottleneck queue from t0 (FAST: from where the
    model says the window has settled) to 1 s before the end: a loss-driven sawtooth sweeps most of
    the buffer; FAST in equilibrium holds still."""
    rows = run.link(link)
    end = float(rows["t"].iloc[-1]) - TAIL_S
    r = _step(run, fast_flow) if fast_flow is not None else None
    if t0 is None:
        if r is None:
            raise MissingData("queue_swing needs t0 or fast_flow")
        # where the step's own dynamics have settled: the model's band without the RTT noise, which
        # widens what counts as settled but does not make the window get there sooner
        band = max(SETTLE_BAND * r.step, 1 / r.gamma)
        hi = max(step_figures(r.before, m, band).settling for m in r.corner_series) + 2
        t0 = r.update_t[min(hi, len(r.update_t) - 1)]
    rows = rows[(rows["t"] >= t0) & (rows["t"] <= end)]
    if len(rows) < 20:
        raise MissingData(f"fewer than 20 queue samples of {link} between {t0:g} and {end:g} s")
    swing = float(rows["backlog_pkts"].quantile(0.95) - rows["backlog_pkts"].quantile(0.05))
    if at_least_buffer is not None:
        buffer = float(run.buffer_pkts(link))
        return within(f"{link} queue swing (p95 - p5) after {t0:g} s", swing, at_least_buffer * buffer, buffer + 1,
                      f"Reno's window runs from BDP + buffer to half of it at each loss, so with a one-BDP buffer "
                      f"the queue climbs from empty to the full {buffer:.0f} packets one packet per RTT, the RTT "
                      "growing from d to 2d as it fills: p95 - p5 = 0.89 of the buffer over whole cycles; at least "
                      f"{at_least_buffer:.0%}: the window cuts a cycle short at its ends (~4 s cycles, 1.7 of them in "
                      "the short form's 7 s, 5.7 in the full form's 24 s): even with all of a partial cycle at one end "
                      "of the range the spread keeps ~0.85", "pkts")
    if r is None:
        raise MissingData("queue_swing needs at_least_buffer or fast_flow")
    at_most = 1 / r.gamma + r.noise + 2 * r.burst
    return within(f"{link} queue swing (p95 - p5) after {t0:.1f} s", swing, 0.0, at_most,
                  f"at most {at_most:.3g} packets: FAST's window at its fixed point moves inside its floor band "
                  f"(1/gamma = {1 / r.gamma:g} pkts) and follows the RTT noise the emulator adds (its p99 lateness "
                  f"both ways x the capacity: {r.noise:.1f} pkts), and an instantaneous sample "
                  f"of the queue reads w - BDP within +-1 TSO burst ({r.burst} segments, ~1 ms of the pacing "
                  "rate); from the model's last settling update + 2", "pkts")


@checkpoint
def monotone(run: StepRun, flow: str = "f1") -> CheckResult:
    """After the step the window only climbs: the largest fall below its running maximum, in packets."""
    r = _step(run, flow)
    series = np.asarray(r.series)
    fall = float(np.max(np.maximum.accumulate(series) - series))
    return within(f"{flow} largest fall of the window after the step", fall, 0.0, 1.0,
                  f"{r.inputs}: real roots, no overshoot; at most 1 packet: the integer floor can take back the "
                  "packet the rounding gave", "pkts")
