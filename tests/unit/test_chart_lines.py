"""fastlab.results.chart_lines: the one list of the theory's lines that report.html and the live page draw."""

from __future__ import annotations

import math

import pytest

from fastlab.results import chart_lines


def ref(flow: str, **figures: object) -> dict[str, object]:
    return {"flow": flow, "bottleneck": "core", "from_s": 0, "to_s": None, **figures}


def test_each_figure_goes_on_its_charts_with_its_label() -> None:
    lines = chart_lines.lines([ref("f1", capacity_mbps=100, fast_rate_mbps=40.0, fast_window_pkts=52,
                                   base_rtt_ms=40, fast_rtt_ms=41.2, fast_queue_pkts=20, hstcp_window_pkts=83,
                                   mathis_window_pkts=27, loss_rate=0.001)])
    assert [(x["y"], x["flow"], x["label"]) for x in lines["goodput"]] == [
        (100, None, "core capacity 100 Mb/s"), (40.0, "f1", "f1 FAST rate α/q 40.00 Mb/s")]
    assert [x["label"] for x in lines["links"]] == ["core capacity 100 Mb/s"]
    assert [x["label"] for x in lines["cwnd"]] == [
        "f1 FAST window αD/(D−d) 52 pkts", "f1 Mathis 1.22/√p = 27 pkts at p = 0.1 %", "f1 HSTCP w(p) = 83 pkts"]
    # every label carries its unit, the short ones a changed run's spans show too (issue 50)
    assert [x["short"] for x in lines["cwnd"]] == ["f1 52 pkts", "f1 Mathis 27 pkts", "f1 HSTCP 83 pkts"]
    assert [x["short"] for x in lines["goodput"]] == ["100 Mb/s", "f1 40.00 Mb/s"]
    assert [x["short"] for x in lines["rtt"]] == ["f1 d 40 ms", "f1 41.2 ms"]
    assert lines["queue"] == [{"y": 20, "flow": None, "label": "core: FAST equilibrium Σα = 20 pkts",
                               "short": "Σα = 20 pkts", "from_s": 0.0, "to_s": None}]


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


@pytest.mark.parametrize("links, drawn", [
    ({"bottleneck": {"aqm": {"model": "red"}}}, True),
    ({"bottleneck": {"reverse": {"aqm": {"model": "pie"}}}}, True),
    ({"bottleneck": {"aqm": {"model": "codel"}}}, False),  # CoDel has no probability: its drops are counted
    ({"bottleneck": {"rate_mbps": 10}}, False),
    ({}, False),
    ({"bottleneck": "not a mapping", "x": {"aqm": "red"}}, False),  # a hostile spec draws nothing, fails nothing
    ({"bottleneck": {"reverse": [1], "aqm": {"model": "pie"}}, "x": {"reverse": {"aqm": {"model": ["red"]}}}}, True),
    ({"x": {"reverse": {"aqm": {"model": {"red": 1}}}}, "y": {"aqm": None}}, False),
])
def test_the_aqm_chart_is_there_for_a_red_or_pie_link_only(links: dict, drawn: bool) -> None:
    """templates/charts.html: the drop-probability chart's <div> (charts.js draws RED's p_b and PIE's p there)
    exists when a link direction runs RED or PIE, for the run page and report.html alike."""
    from fastlab.results.report import TEMPLATES

    macro = TEMPLATES.get_template("charts.html").module.charts  # type: ignore[attr-defined]
    html = str(macro({"name": "x", "flows": [{"cc": "reno"}], "links": links}, [], [], True))
    assert ('id="chart-aqm"' in html) is drawn, html[-400:]
    assert 'id="chart-queue"' in html


def test_chart_samples_carry_reds_average_and_drop_probability() -> None:
    """fastlab.results.chart_data: a link's RED average (packets mode) and drop probability reach the charts."""
    import pandas as pd

    from fastlab.results.chart_data import chart_samples

    links = pd.DataFrame([{"t": 1.0, "link": "bottleneck", "direction": "forward", "backlog_pkts": 12,
                           "tx_bytes": 1500, "aqm_avg_pkts": 9.5, "aqm_drop_prob": 0.045, "aqm_avg_queue": 9.5}])
    (sample,) = chart_samples(pd.DataFrame(), links, pd.DataFrame())
    assert (sample["aqm_avg_pkts"], sample["aqm_drop_prob"]) == (9.5, 0.045)
    assert "aqm_avg_queue" not in sample  # a report carries no more than its charts draw
