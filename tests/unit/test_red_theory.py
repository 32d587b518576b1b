"""fastlab.theory.red (lab 10): RED's curve, the Reno/RED fluid equilibrium, HMTG's linearized loop and
its condition, the loop's exact gain margin, and SHRiNK's window-preserving scaling, on numbers worked
out by hand in each test's comment."""

from __future__ import annotations

import cmath
import math

import pytest

from fastlab.theory.red import (
    Point,
    Red,
    equilibrium,
    hmtg_condition,
    loop,
    nyquist_gain_margin,
    phase_crossover_rad_s,
    red_in_time,
    shrink,
)

# A point whose fixed point is exact: 10 flows, C = 1000 packets/s, T_p = 0.1 s (a 100-packet pipe);
# RED from 10 to 179 packets at max_p 0.1, so L_red = 0.1/169 = 1/1690, drop rate = the curve's p.
# At q = 30: R = 0.13 s, W = R C/N = 13, p = 20/1690 = 2/169, W^2 p = 2: the fixed point.
RED = Red(10, 179, 0.1, 0.002, gentle=True, uniform_spacing=False)
POINT = Point(10, 1000, 0.1, RED)


def test_red_curve_by_hand() -> None:
    red = Red(10, 30, 0.1, 0.002)
    assert red.l_red == pytest.approx(0.005)
    assert red.drop_probability(5) == 0.0
    assert red.drop_probability(20) == pytest.approx(0.05)  # 0.1 x 10/20
    assert red.drop_probability(40) == pytest.approx(0.4)  # gentle: 0.1 + 0.9 x 10/30
    assert red.drop_probability(60) == 1.0
    # the count method spaces drops uniformly on 1..1/p: they come at 2p/(1+p) = 0.1/1.05
    assert red.drop_rate(20) == pytest.approx(0.1 / 1.05)
    assert red.rate_slope(20) == pytest.approx(2 * 0.005 / 1.05 ** 2)
    assert red.curve_slope(40) == pytest.approx(0.9 / 30)
    # K = -ln(1 - 0.002) x 1000 = 2.002002..., a time constant of 0.4995 s
    assert red.ewma_pole_rad_s(1000) == pytest.approx(2.0020027, rel=1e-7)
    assert red.ewma_time_constant_s(1000) == pytest.approx(0.49950, rel=1e-4)


def test_equilibrium_by_hand() -> None:
    eq = equilibrium(POINT)
    assert eq.queue_pkts == pytest.approx(30, rel=1e-9)
    assert eq.window_pkts == pytest.approx(13, rel=1e-9)
    assert eq.p == pytest.approx(2 / 169, rel=1e-9)
    assert eq.rtt_s == pytest.approx(0.13, rel=1e-9)


def test_uniform_spacing_lowers_the_queue_it_needs() -> None:
    """Drops at twice the curve's p: the same W^2 p = 2 is met lower on the curve."""
    spaced = equilibrium(Point(10, 1000, 0.1, Red(10, 179, 0.1, 0.002)))
    assert 10 < spaced.queue_pkts < 30
    assert spaced.window_pkts ** 2 * spaced.p == pytest.approx(2, rel=1e-9)


def test_hmtg_loop_and_condition_by_hand() -> None:
    lp = loop(POINT)
    # gain L_red (RC)^3/(2N)^2 = 130^3/(1690 x 400) = 3.25; p_w = 2N/(R^2 C) = 20/16.9; p_q = 1/0.13
    assert lp.gain == pytest.approx(3.25, rel=1e-9)
    assert lp.window_pole_rad_s == pytest.approx(20 / 16.9, rel=1e-9)
    assert lp.queue_pole_rad_s == pytest.approx(1 / 0.13, rel=1e-9)
    h = hmtg_condition(POINT)
    # w_g = 0.1 min(1.18343, 7.6923) = 0.118343; rhs = sqrt((0.118343/2.002)^2 + 1) = 1.0017456
    assert h.crossover_rad_s == pytest.approx(0.118343, rel=1e-5)
    assert h.rhs == pytest.approx(1.0017456, rel=1e-6)
    assert h.margin == pytest.approx(1.0017456 / 3.25, rel=1e-6)
    assert not h.stable


def test_gain_margin_is_the_loops_own_at_its_phase_crossover() -> None:
    """Against the loop's transfer function written out in complex arithmetic."""
    lp = loop(POINT)
    w = phase_crossover_rad_s(lp)
    s = 1j * w
    transfer = lp.gain * cmath.exp(-s * lp.rtt_s) / ((1 + s / lp.ewma_pole_rad_s) * (1 + s / lp.window_pole_rad_s)
                                                      * (1 + s / lp.queue_pole_rad_s))
    assert abs(abs(cmath.phase(transfer)) - math.pi) < 1e-6  # on the negative real axis
    assert nyquist_gain_margin(POINT) == pytest.approx(1 / abs(transfer), rel=1e-6)
    # HMTG's condition fails here (0.31), yet the loop is stable: the slow EWMA (K = 2 rad/s) has cut
    # the gain of 3.25 to under 1/2 by the time the phase reaches -pi. The condition is conservative.
    assert 1 < nyquist_gain_margin(POINT) < 3.25


@pytest.mark.parametrize("n_flows", [5, 10, 20, 40, 80, 160])
def test_hmtg_is_sufficient_for_the_exact_margin(n_flows: int) -> None:
    """HMTG's condition is a sufficient one: wherever it holds the exact margin is above 1."""
    for wq in (0.0005, 0.002, 0.02):
        point = Point(n_flows, 1000, 0.1, Red(10, 1000, 0.01, wq))
        h = hmtg_condition(point)
        if h.stable:
            assert nyquist_gain_margin(point) > 1
        assert h.margin < nyquist_gain_margin(point) * 1.5  # never far more optimistic than the exact figure


def test_shrink_by_hand() -> None:
    # k = 500/1000 = 0.5: 5 flows, thresholds 5 and 89.5, w_q' = 1 - 0.998^2 = 0.003996
    shrunk = shrink(POINT, 500)
    assert shrunk.scale == pytest.approx(0.5)
    assert shrunk.point.n_flows == pytest.approx(5)
    assert shrunk.point.red.min_th_pkts == pytest.approx(5) and shrunk.point.red.max_th_pkts == pytest.approx(89.5)
    assert shrunk.point.red.wq == pytest.approx(0.003996, rel=1e-9)
    assert shrunk.point.red.ewma_pole_rad_s(500) == pytest.approx(RED.ewma_pole_rad_s(1000), rel=1e-12)


@pytest.mark.parametrize("capacity_mbps", [155.52, 622.08, 2488.32, 9953.28])  # OC-3 .. OC-192
def test_shrink_keeps_the_window_the_drops_and_the_whole_loop(capacity_mbps: float) -> None:
    """The slides' 100 flows at 100 ms carried at 100 Mb/s: N' = 100 x 100/C; the fixed point's window,
    drop rate and queueing delay, HMTG's figures and the exact margin are the real point's."""
    c = capacity_mbps * 1e6 / 12000
    real = Point(100, c, 0.1, red_in_time(c, 0.005, 0.05, 0.02, 0.05))
    shrunk = shrink(real, 100e6 / 12000)
    assert shrunk.point.n_flows == pytest.approx(100 * 100 / capacity_mbps)
    eq_real, eq_small = equilibrium(real), equilibrium(shrunk.point)
    assert eq_small.window_pkts == pytest.approx(eq_real.window_pkts, rel=1e-9)
    assert eq_small.p == pytest.approx(eq_real.p, rel=1e-9)
    assert eq_small.queue_pkts == pytest.approx(eq_real.queue_pkts * shrunk.scale, rel=1e-9)
    assert eq_small.rtt_s == pytest.approx(eq_real.rtt_s, rel=1e-9)
    lr, ls = loop(real), loop(shrunk.point)
    for field in ("gain", "window_pole_rad_s", "queue_pole_rad_s", "ewma_pole_rad_s", "rtt_s"):
        assert getattr(ls, field) == pytest.approx(getattr(lr, field), rel=1e-9), field
    assert hmtg_condition(shrunk.point).margin == pytest.approx(hmtg_condition(real).margin, rel=1e-9)
    assert nyquist_gain_margin(shrunk.point) == pytest.approx(nyquist_gain_margin(real), rel=1e-9)


def test_rounding_the_flows_is_what_breaks_the_invariance() -> None:
    """N' = 64.3 carried as 64 flows: the window grows by 64.3/64, the loop gain by about its square."""
    c = 155.52e6 / 12000
    real = Point(100, c, 0.1, red_in_time(c, 0.005, 0.05, 0.02, 0.05))
    shrunk = shrink(real, 100e6 / 12000)
    carried = shrunk.carried()
    assert carried.n_flows == 64 and shrunk.flows_rounded == 64
    ratio = equilibrium(carried).window_pkts / equilibrium(real).window_pkts
    assert ratio == pytest.approx(shrunk.point.n_flows / 64, rel=0.01)


def test_red_in_time_by_hand() -> None:
    red = red_in_time(1000, 0.005, 0.05, 0.1, 1.0)
    assert (red.min_th_pkts, red.max_th_pkts) == pytest.approx((5, 50))
    assert red.wq == pytest.approx(1 - math.exp(-1 / 1000), rel=1e-12)
    assert red.ewma_time_constant_s(1000) == pytest.approx(1.0, rel=1e-12)


def test_capacity_grows_the_gain_as_its_cube_at_fixed_flows() -> None:
    """HMTG's gain L_red (RC)^3/(2N)^2 with fixed RED thresholds in packets: C x4 (and the queue
    held at min_th) multiplies it by about 64 when the RTT is mostly propagation."""
    red = Red(50, 550, 0.1, 0.002)
    small, big = Point(100, 12_960, 0.1, red), Point(100, 4 * 12_960, 0.1, red)
    assert 40 < loop(big).gain / loop(small).gain < 70
    assert nyquist_gain_margin(big) < nyquist_gain_margin(small)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"n_flows": math.nan}, "n_flows"),
    ({"n_flows": 0}, "n_flows"),
    ({"n_flows": 1e12}, "n_flows"),
    ({"capacity_pps": math.inf}, "capacity_pps"),
    ({"capacity_pps": -5}, "capacity_pps"),
    ({"capacity_pps": "1000"}, "capacity_pps"),
    ({"prop_rtt_s": True}, "prop_rtt_s"),
    ({"prop_rtt_s": 1e6}, "prop_rtt_s"),
    ({"red": {"min_th_pkts": 5}}, "red"),
])
def test_hostile_points_name_the_argument(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {"n_flows": 10, "capacity_pps": 1000, "prop_rtt_s": 0.1, "red": RED, **kwargs}
    with pytest.raises(ValueError, match=f"^{field}: "):
        Point(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize(("args", "field"), [
    ((10, 5, 0.1, 0.002), "max_th_pkts"),
    ((10, 10, 0.1, 0.002), "max_th_pkts"),
    ((math.nan, 30, 0.1, 0.002), "min_th_pkts"),
    ((10, 30, 1.5, 0.002), "max_p"),
    ((10, 30, 0.1, 1.0), "wq"),
    ((10, 30, 0.1, -0.1), "wq"),
    ((10, 30, None, 0.002), "max_p"),
])
def test_hostile_red_names_the_argument(args: tuple[object, ...], field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field}: "):
        Red(*args)  # type: ignore[arg-type]


def test_hostile_scaling_and_settings_name_the_argument() -> None:
    with pytest.raises(ValueError, match="^capacity_pps: "):
        shrink(POINT, 0)
    with pytest.raises(ValueError, match="^capacity_pps: "):
        shrink(POINT, math.nan)
    with pytest.raises(ValueError, match="^capacity_pps: "):
        shrink(POINT, 1e-9)  # so far down that w_q' would be 1
    with pytest.raises(ValueError, match="^ewma_s: "):
        red_in_time(1000, 0.005, 0.05, 0.1, math.inf)
    with pytest.raises(ValueError, match="^max_th_pkts: "):
        red_in_time(1000, 0.05, 0.005, 0.1, 0.1)


def test_more_flows_than_the_pipe_holds_is_refused() -> None:
    """1000 flows over a 100-packet pipe: windows of 0.1 packet cannot meet W^2 p = 2 on RED's curve."""
    with pytest.raises(ValueError, match="^n_flows: "):
        equilibrium(Point(1000, 1000, 0.1, Red(10, 20, 0.1, 0.002, gentle=False)))
