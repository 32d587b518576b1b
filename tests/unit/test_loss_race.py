"""The loss-race model (fastlab.theory.loss_race): its sawtooth against the closed forms it must meet, its inputs
refused by name, and its predictions against lab 04's recorded draws, which it was not fitted to."""

from __future__ import annotations

import math
import statistics

import pytest

from fastlab.labs.draws import judge_draws
from fastlab.labs.kit import INCONCLUSIVE, StepRun, load_lab
from fastlab.measure.analysis import share_interval
from fastlab.plan.prepare import layout
from fastlab.theory.loss_race import RaceFlow, flows_of, measured_read_delay_s, race

BIG_PORT = 1e9  # packets/s: no port limit
P = 1e-4


def test_the_sawtooth_meets_mathis_and_fasts_law_over_a_long_run() -> None:
    """With loss alone (no port limit, a run of 600 s, 0.1-s RTT) the model's mean windows are the closed forms
    within 3 %: Reno 1.31/sqrt(p) = 131 packets for independent losses (Ott, Kemperman, Mathis 1996; not the
    periodic sawtooth's 1.22), FAST 1.31 sqrt(gamma alpha / p) = 10x that at gamma alpha 100 -- derived apart
    from the simulation."""
    reno = RaceFlow("r", "reno", 0.1, BIG_PORT, 1e6, P)
    fast = RaceFlow("f", "fast", 0.1, BIG_PORT, 1e6, P, alpha=200, gamma=0.5)
    result = race([fast, reno], 600.0, t0_s=100.0, draws=200, seed=3)
    to_window = 0.1 / (1448 * 8 / 1e6)  # Mb/s -> packets in flight at 0.1 s
    assert result.mean_mbps()["r"] * to_window == pytest.approx(reno.long_run_window(), rel=0.03)
    assert reno.long_run_window() == pytest.approx(1.3098 / math.sqrt(P), rel=1e-4)
    assert result.mean_mbps()["f"] * to_window == pytest.approx(fast.long_run_window(), rel=0.03)
    assert fast.long_run_window() == pytest.approx(10 * reno.long_run_window(), rel=1e-9)
    assert result.share == 1.0


def test_the_model_is_seeded_and_refuses_what_it_cannot_model() -> None:
    flows = [RaceFlow("f", "fast", 0.1, 1e4, 100, 1e-5, alpha=20), RaceFlow("r", "reno", 0.1, 1e4, 100, 1e-5)]
    a, b = race(flows, 30.0, draws=50, seed=7), race(flows, 30.0, draws=50, seed=7)
    assert a.fast_ahead == b.fast_ahead and a.mean_mbps() == b.mean_mbps()
    for bad, words in [(dict(cc="cubic"), "knows fast and reno"), (dict(rtt_s=math.nan), "rtt_s"),
                       (dict(port_pkts_s=-1.0), "port_pkts_s"), (dict(loss_rate=math.inf), "loss_rate"),
                       (dict(loss_rate=1.0), "loss_rate"), (dict(alpha=0.0), "alpha"),
                       (dict(read_delay_s=0.2), "read_delay_s")]:
        fields = dict(id="f", cc="fast", rtt_s=0.1, port_pkts_s=1e4, buffer_pkts=100.0, loss_rate=1e-5, alpha=20.0)
        with pytest.raises(ValueError, match=words):
            RaceFlow(**(fields | bad))  # type: ignore[arg-type]
    for kwargs, words in [(dict(draws=0), "draws"), (dict(draws=True), "draws"), (dict(draws=10**6), "draws"),
                          (dict(duration_s=1e9), "duration_s"), (dict(duration_s=5.0), "duration_s")]:
        with pytest.raises(ValueError, match=words):
            race(flows, **({"duration_s": 30.0} | kwargs))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="FAST flows and others"):
        race(flows[:1], 30.0)


LAB04 = load_lab(4)


@pytest.mark.parametrize("step", ["sc2002-fast-one", "sc2002-fast-pair"])
def test_the_model_predicts_the_recorded_draws_it_was_not_fitted_to(step: str) -> None:
    """Lab 04's plan (RTTs, ports, buffers, DataTAG's 1e-6, alpha) and one measured input -- the delay the FAST
    flows read as queue that is not theirs (their RTT median above propagation and serialization) -- and nothing
    fitted: the model's mean goodput of every flow over [10, 120] s lies within 3 standard errors of the recorded
    draws' mean (plus 5 % for what the model leaves out: DataTAG's sharing, pacing, SACK recovery), and the
    share of draws with FAST's side ahead lies inside the measured share's 95 % interval."""
    folders = LAB04.draw_recordings(step)
    runs = [StepRun(d) for d in folders]
    ((_, draws),) = judge_draws(LAB04, step, [(d.name, d) for d in folders])
    conclusive = [r for r, d in zip(runs, draws, strict=True) if d.status != INCONCLUSIVE]
    assert len(conclusive) >= 8
    fast = conclusive[0].flow_ids("fast")
    read_delay = measured_read_delay_s([r.summary for r in conclusive], fast)
    model = race(flows_of(layout(LAB04.build_spec(step)), read_delay), 120.0, draws=1000)
    for flow, predicted in model.mean_mbps().items():
        figures = [r.goodput_mbps(flow, 10.0, 1e9) for r in conclusive]
        mean, se = statistics.fmean(figures), statistics.stdev(figures) / math.sqrt(len(figures))
        assert abs(predicted - mean) <= 3 * se + 0.05 * mean, (flow, predicted, mean, se)
    ahead = sum(d.status == "pass" for d in draws if d.status != INCONCLUSIVE)
    low, high = share_interval(ahead, len(conclusive))
    assert low <= model.share <= high, (model.share, low, high)
