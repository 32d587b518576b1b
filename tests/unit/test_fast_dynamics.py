"""FAST's step-response model (fastlab.theory.fast.step_response, lab 09) against what its
linearisation says, and the step figures against a hand-made series."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from fastlab.theory.fast import (
    SharedQueue,
    fast_queued_over_alpha,
    fast_rate_against_queue,
    step_figures,
    step_response,
)

BDP = 66.7  # 20 Mb/s x 40 ms in 1500-byte packets


def test_gamma_one_rings_and_decays() -> None:
    w = step_response(BDP, 20, 60, 1.0, updates=40)
    fig = step_figures(86, [float(v) for v in w], band=4)
    assert w[0] == 126  # the first update aims at BDP + alpha from the old RTT
    assert fig.overshoot > 0.5 and fig.undershoot > 0.1  # complex roots: it swings both ways
    assert abs(w[-1] - 126) <= 1  # |z| = sqrt(rho) < 1: it settles


def test_gamma_half_overshoots_once_and_gamma_eighth_not_at_all() -> None:
    half = step_figures(86, [float(v) for v in step_response(BDP, 20, 60, 0.5)], band=4)
    eighth = step_response(BDP, 20, 60, 0.125)
    assert 0.05 < half.overshoot < 0.4 and half.undershoot < 0.1
    assert all(b >= a for a, b in zip(eighth, eighth[1:], strict=False))  # real roots: monotone
    assert 126 - 8 <= eighth[-1] < 126  # the floor stops it up to 1/gamma packets short


def test_updating_every_other_rtt_removes_the_ringing() -> None:
    every = step_figures(86, [float(v) for v in step_response(BDP, 20, 60, 1.0)], band=2)
    other = step_figures(86, [float(v) for v in step_response(BDP, 20, 60, 1.0, period_rtts=2)], band=2)
    assert other.overshoot < every.overshoot / 3 and other.undershoot == 0


@pytest.mark.parametrize("bdp", [66.7, 266.7, 15_000.0])
def test_stable_whatever_the_pipe(bdp: float) -> None:
    w = step_response(bdp, 20, 60, 0.5, updates=80)
    assert abs(w[-1] - (bdp + 60)) <= 3, w[-10:]


def test_fewer_acks_a_round_make_avgrtt_lag_and_the_window_overshoot_more() -> None:
    """Lab 09's 80 Mb/s step: 7-segment TSO bursts ACKed once each; the measured overshoot (348 from
    291 toward 331, 2026-11-25) lies between one ACK per 2 segments and one per 7."""
    bdp = 80e6 / 12_000 * 0.0407
    figs = [step_figures(291, [float(v) for v in step_response(bdp, 20, 60, 0.5, window_before=291,
                                                               acks_per_pkt=a)], band=4) for a in (0.5, 1 / 7)]
    assert figs[0].overshoot < (348 - 331) / 40 < figs[1].overshoot
    assert step_response(BDP, 20, 60, 0.5) == step_response(BDP, 20, 60, 0.5, acks_per_pkt=0.5)


def test_step_figures_on_a_hand_made_series() -> None:
    fig = step_figures(100, [110, 125, 118, 119, 120, 120, 120, 120], band=2)
    assert fig.final == 120 and fig.overshoot == pytest.approx(0.25) and fig.undershoot == pytest.approx(0.1)
    assert fig.settling == 2  # 125 is the last value outside 120 +- 2 (118 is on its edge, inside)
    with pytest.raises(ValueError, match="no step"):
        step_figures(120, [120, 120.5, 120], band=1)


# --- FAST against Reno in one drop-tail queue (lab 04's band) ----------------------------------------

SHORT = SharedQueue(5, 75, (180,), (12,), (118, 118), 19, 10)  # lab 04 fast-one, short form


def test_fast_alone_keeps_alpha_queued_within_its_floor_band() -> None:
    """No Reno: the update law's equilibrium, alpha less the floor's 0..1/gamma packets (lab 02)."""
    alone = SharedQueue(20, 300, (180,), (50,), (), 30, 10)
    ratio = fast_queued_over_alpha(alone, None)
    assert (50 - 2) / 50 - 0.01 <= ratio <= 1.01, ratio


def test_reno_overflows_bound_fast_between_every_hit_and_none() -> None:
    floor = fast_queued_over_alpha(SHORT, True)
    ceiling = fast_queued_over_alpha(SHORT, False)
    drawn = [fast_queued_over_alpha(SHORT, None, seed) for seed in range(5)]
    # each halving costs FAST several RTTs of its share: losing at every overflow costs a lot
    assert floor < 0.7 < 0.85 < ceiling <= 1.02, (floor, ceiling)
    assert all(floor - 0.02 <= r <= ceiling + 0.02 for r in drawn), drawn
    assert fast_queued_over_alpha(SHORT, None, 3) == drawn[3]  # seeded: the same draw


def test_more_time_between_overflows_means_less_lost_share() -> None:
    """A bigger pipe and buffer (the full form, 4x) makes Reno's sawtooth 4x longer, so each halving
    costs FAST a smaller fraction of the window: the floor rises."""
    full = SharedQueue(20, 300, (180,), (50,), (118, 118), 60, 10)
    def mean_floor(q: SharedQueue) -> float:  # Reno's own drops are drawn: over five draws
        return sum(fast_queued_over_alpha(q, True, seed) for seed in range(5)) / 5

    assert mean_floor(full) > mean_floor(SHORT) + 0.1


# --- FAST's update law replayed against a measured queue (lab 04's ceiling) ----------------------------

C_PKTS = 5e6 / (1500 * 8)  # 5 Mb/s in 1500-byte packets


def replayed_ratio(times: list[float], backlog: list[float], alpha: int = 12) -> float:
    """Queued packets / alpha over 10-17 s as lab 04 reads it, the link busy all along."""
    rate = fast_rate_against_queue(times, backlog, C_PKTS, 0.180, alpha, 20, 5.0, 10.0, 17.0)
    window = [b for t, b in zip(times, backlog, strict=True) if t >= 10]
    return rate / C_PKTS * (sum(window) / len(window)) / alpha


def test_a_steady_queue_gives_alpha_less_the_floor() -> None:
    """Against a queue that does not move, FAST settles where its floored update stops: alpha less
    0..1/gamma packets (lab 02), whatever the queue."""
    times = [i * 0.05 for i in range(400)]
    for level in (30.0, 60.0):
        assert (12 - 2) / 12 - 0.01 <= replayed_ratio(times, [level] * len(times)) <= 1.0 + 0.01, level


def test_a_swinging_queue_lifts_fast_above_alpha() -> None:
    """Same mean backlog, but a sawtooth from 10 to 90 packets (Reno's slow rise, sudden halving):
    FAST's rate follows alpha/q(t) one update behind and the product of the means exceeds alpha,
    above the steady queue's figure -- why a run can measure more than the fluid model's ceiling."""
    times = [i * 0.05 for i in range(400)]
    sawtooth = [10 + 80 * ((t % 2.0) / 2.0) for t in times]
    steady = replayed_ratio(times, [50.0] * len(times))
    swinging = replayed_ratio(times, sawtooth)
    assert swinging > 1.0 and swinging > steady + 0.05, (steady, swinging)


def test_a_base_rtt_above_the_path_hides_queueing_from_fast() -> None:
    """FAST's baseRTT taken 24 ms late (its first samples met packets already queued, and the queue
    never empties again): against a steady 50-packet queue (120 ms) FAST sees 96 ms and keeps
    alpha x 120/96 packets, 25% more, by the same floored law. A queue that empties once in the
    replay corrects baseRTT (the least sample) and the excess goes: back inside the floor's band
    (alpha less 0..2 packets; from above it stops at its top)."""
    times = [i * 0.05 for i in range(400)]
    steady = [50.0] * len(times)

    def ratio(backlog: list[float], base_s: float) -> float:
        rate = fast_rate_against_queue(times, backlog, C_PKTS, base_s, 12, 20, 5.0, 10.0, 17.0, path_rtt_s=0.180)
        return rate / C_PKTS * 50.0 / 12

    exact, late = ratio(steady, 0.180), ratio(steady, 0.204)
    assert late / exact == pytest.approx(120 / 96, rel=0.05), (exact, late)
    emptied = [0.0 if 5.0 <= t < 5.5 else 50.0 for t in times]
    assert (12 - 2) / 12 - 0.01 <= ratio(emptied, 0.204) <= 1.0 + 0.01


def test_the_replay_refuses_an_empty_trace_or_a_window_before_it() -> None:
    with pytest.raises(ValueError, match="empty"):
        fast_rate_against_queue([], [], C_PKTS, 0.18, 12, 20, 5.0, 10.0, 17.0)
    with pytest.raises(ValueError, match="must start after"):
        fast_rate_against_queue([0.0], [1.0], C_PKTS, 0.18, 12, 20, 11.0, 10.0, 17.0)


# --- packets are the run's MTU (jumbo frames: lab 01 question 9) ------------------------------------

def test_packet_size_comes_from_the_runs_mtu() -> None:
    from fastlab.define.schema import read_spec_text
    from fastlab.theory.fast import packet_bits, run_mtu

    assert packet_bits() == 12_000 and packet_bits(9000) == 72_000
    assert run_mtu({}) == 1500 and run_mtu({"mtu": 9000}) == 9000  # a recorded spec.yaml, with and without
    assert run_mtu(read_spec_text("name: x\ntopology: dumbbell\nduration_s: 5\nmtu: 9000\nflows:\n"
                                  "  - {src: h1, dst: h2, cc: fast}\n")) == 9000


def test_a_9000_byte_mtu_makes_the_bdp_six_times_fewer_packets() -> None:
    """20 Mb/s x 40 ms is 66.7 packets of 1500 bytes and 11.1 of 9000: FAST's equilibrium window
    w = BDP + alpha (one flow) and its queueing delay alpha/C follow the packet size."""
    from fastlab.define.schema import read_spec_text
    from fastlab.theory.fast import fast_equilibrium, references

    std = fast_equilibrium(20, {"f1": 20}, {"f1": 40.0})["f1"]
    jumbo = fast_equilibrium(20, {"f1": 20}, {"f1": 40.0}, 9000)["f1"]
    assert std[2] - 20 == pytest.approx(BDP, abs=0.05) and jumbo[2] - 20 == pytest.approx(BDP / 6, abs=0.05)
    assert jumbo[1] - 40 == pytest.approx(6 * (std[1] - 40))  # alpha jumbo packets queue 6x longer
    assert std[3] == pytest.approx(20) and jumbo[3] == pytest.approx(20)  # either way the link is full
    text = ("name: x\ntopology: dumbbell\ntopology_args: {rate_mbps: 20, rtt_ms: 40, buffer_bdp: 4}\n"
            "duration_s: 5\nMTUflows:\n  - {src: h1, dst: h2, cc: fast, cc_args: {alpha: 20}}\n")
    ref = references(read_spec_text(text.replace("MTU", "")))[0]
    ref_jumbo = references(read_spec_text(text.replace("MTU", "mtu: 9000\n")))[0]
    assert ref["fast_window_pkts"] == 86.7 and ref_jumbo["fast_window_pkts"] == pytest.approx(31.1, abs=0.05)
    # lab 04's shared-queue model counts its buffer in the same packets
    alone = SharedQueue(20, 300, (180,), (50,), (), 30, 10, mtu_bytes=9000)
    assert (50 - 2) / 50 - 0.01 <= fast_queued_over_alpha(alone, None) <= 1.01


def _with_mtu(recorded: Path, out: Path, mtu: int) -> Path:
    """A copy of a recorded run whose spec says `mtu`."""
    shutil.copytree(recorded, out)
    spec = yaml.safe_load((out / "spec.yaml").read_text())
    (out / "spec.yaml").write_text(yaml.safe_dump({**spec, "mtu": mtu}, sort_keys=False))
    return out


@pytest.mark.parametrize("lab_no, step, module_fn", [
    (1, "reno", lambda m, run: m._bdp_pkts(run, "f1", "cern-gbe")),
    (8, "reroute", lambda m, run: m._capacity_pps(run)),
    (9, "gamma-half", lambda m, run: m._step(run, "f1").bdp),
])
def test_labs_count_the_bdp_in_packets_of_the_runs_mtu(lab_no: int, step: str, module_fn: Any, tmp_path: Path) -> None:
    """Labs 01, 08 and 09 read the packet size from the run's spec: the same run said to have a
    9000-byte MTU has a BDP (or capacity) of 6x fewer packets."""
    from fastlab.labs.kit import StepRun, load_lab

    lab = load_lab(lab_no)
    module = sys.modules["fastlab_lab_" + lab.name.replace("-", "_")]
    recorded = lab.recording(step)
    std = module_fn(module, StepRun(recorded))
    jumbo = module_fn(module, StepRun(_with_mtu(recorded, tmp_path / step, 9000)))
    assert jumbo == pytest.approx(std / 6)
