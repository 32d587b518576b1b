"""FAST's step-response model (fastlab.fast_theory.step_response, lab 09) against what its
linearisation says, and the step figures against a hand-made series."""

from __future__ import annotations

import pytest

from fastlab.fast_theory import step_figures, step_response

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


def test_step_figures_on_a_hand_made_series() -> None:
    fig = step_figures(100, [110, 125, 118, 119, 120, 120, 120, 120], band=2)
    assert fig.final == 120 and fig.overshoot == pytest.approx(0.25) and fig.undershoot == pytest.approx(0.1)
    assert fig.settling == 2  # 125 is the last value outside 120 +- 2 (118 is on its edge, inside)
    with pytest.raises(ValueError, match="no step"):
        step_figures(120, [120, 120.5, 120], band=1)
