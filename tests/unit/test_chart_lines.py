"""fastlab.chart_lines: the one list of the theory's lines that report.html and the live page draw."""

from __future__ import annotations

import math

from fastlab import chart_lines


def ref(flow: str, **figures: object) -> dict[str, object]:
    return {"flow": flow, "bottleneck": "core", "from_s": 0, "to_s": None, **figures}


def test_each_figure_goes_on_its_charts_with_its_label() -> None:
    lines = chart_lines.lines([ref("f1", capacity_mbps=100, fast_rate_mbps=40.0, fast_window_pkts=52,
                                   base_rtt_ms=40, fast_rtt_ms=41.2, fast_queue_pkts=20, hstcp_window_pkts=83,
                                   mathis_window_pkts=27, loss_rate=0.001)])
    assert [(x["y"], x["flow"], x["label"]) for x in lines["goodput"]] == [
        (100, None, "core capacity 100 Mb/s"), (40.0, "f1", "f1 FAST rate α/q 40.00 Mb/s")]
    assert [x["label"] for x in lines["links"]] == ["core capacity 100 Mb/s"]
    assert [x["label"] for x in lines["cwnd"]] == ["f1 FAST window αD/(D−d) 52", "f1 Mathis 1.22/√p = 27 at p = 0.1 %",
                                                   "f1 HSTCP w(p) = 83"]
    assert [x["short"] for x in lines["rtt"]] == ["f1 d 40", "f1 41.2 ms"]
    assert lines["queue"] == [{"y": 20, "flow": None, "label": "core: FAST equilibrium Σα = 20 pkts",
                               "short": "Σα = 20", "from_s": 0.0, "to_s": None}]


def test_coinciding_lines_merge_and_spans_stay_apart() -> None:
    """Two flows at one base RTT: one grey line naming both; the capacity both share once; FAST's rate equal
    to the capacity (one flow fills the link) not drawn twice; each span of a changed run its own line."""
    refs = [ref("f1", capacity_mbps=10, base_rtt_ms=40, fast_rate_mbps=10.0),
            ref("f2", capacity_mbps=10, base_rtt_ms=40),
            {**ref("f1", fast_queue_pkts=30), "to_s": 6.4}, {**ref("f1", fast_queue_pkts=60), "from_s": 6.4}]
    lines = chart_lines.lines(refs)
    assert [(x["flow"], x["label"]) for x in lines["rtt"]] == [(None, "f1 base RTT 40 ms · f2 base RTT 40 ms")]
    assert [x["y"] for x in lines["goodput"]] == [10]
    assert [(x["from_s"], x["to_s"], x["y"]) for x in lines["queue"]] == [(0.0, 6.4, 30), (6.4, None, 60)]


def test_figures_the_theory_has_nothing_for_draw_nothing() -> None:
    """None, 0, NaN, ±inf, an int too large for a float, a bool or a string (a hostile or old summary) is no
    line, and nothing raises."""
    for value in (None, 0, math.nan, math.inf, -math.inf, 10**400, True, "40", [40], {"y": 1}):
        lines = chart_lines.lines([ref("f1", capacity_mbps=value, base_rtt_ms=value, fast_queue_pkts=value)])
        assert all(rows == [] for rows in lines.values()), (value, lines)
