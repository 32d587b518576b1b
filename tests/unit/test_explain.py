"""fastlab.theory.explain: the "what happened" note and the response-function lines, from the theory's
references and a run's summary (pure)."""

from __future__ import annotations

import math

import pytest

from fastlab.base.record import LinkFigures, Summary, read_environment, read_summary
from fastlab.theory import explain
from fastlab.theory.hstcp import HstcpParams

FAST_REF = {"flow": "f1", "bottleneck": "bottleneck", "capacity_mbps": 20, "base_rtt_ms": 40, "alpha": 30,
            "fast_queue_pkts": 30, "cc": "fast", "links": ("bottleneck",)}


def summary(backlog: float, util: float, loss_drops: int = 0, queue_drops: int = 0, arrivals: int = 10_000,
            window: float = 20.0, **more: object) -> Summary:
    return read_summary({"flows": [{"id": "f1", "cc": "fast", "mean_cwnd_pkts": window}],
                         "links": [{"id": "bottleneck", "utilization": util, "mean_backlog_pkts": backlog,
                                    "loss_drops": loss_drops, "queue_drops": queue_drops, "arrivals_pkts": arrivals}],
                         "jain_index": 1.0} | more)


def test_losses_that_keep_fast_below_its_equilibrium_are_named() -> None:
    notes = explain.notes([FAST_REF], summary(2.6, 0.27, loss_drops=100))
    assert notes[0] == ("bottleneck: utilization 0.27, mean backlog 2.6 packets over the whole run ≪ α = 30: losses "
                        "(random loss of 1 %) keep cutting FAST's window before the queue reaches its equilibrium")
    assert notes[1].startswith("f1 (fast): mean window 20 packets at a random loss rate p = 1 %; standard TCP's "
                               "response function 1.22/√p gives 12")


def test_fast_at_equilibrium() -> None:
    assert explain.notes([FAST_REF], summary(29.8, 0.99)) == [
        "bottleneck: utilization 0.99, mean backlog 29.8 packets over the whole run ≈ α = 30: FAST at equilibrium "
        "(the queue holds the sum of the alphas, the link is full)"]


@pytest.mark.parametrize(("backlog", "util", "drops", "words"), [
    (10, 0.7, 0, "with no loss: FAST had not reached its equilibrium"),
    (20, 0.95, 3, "< α = 30: losses (3 queue drops)"),
    (30, 0.5, 0, "but the link is not full"),
    (80, 1.0, 0, "> α = 30: more queued than FAST's equilibrium"),
])
def test_other_fast_outcomes(backlog: float, util: float, drops: int, words: str) -> None:
    assert words in explain.notes([FAST_REF], summary(backlog, util, queue_drops=drops))[0]


def test_two_fast_flows_compare_with_the_sum_of_alphas_and_loss_based_links() -> None:
    refs = [FAST_REF, FAST_REF | {"flow": "f2", "alpha": 10}]
    refs = [r | {"fast_queue_pkts": 40} for r in refs]
    assert "≈ Σα = 40: FAST at equilibrium" in explain.notes(refs, summary(38.5, 0.98))[0]
    cubic = [{"flow": "f1", "bottleneck": "bottleneck", "cc": "cubic", "links": ("bottleneck",)}]
    assert explain.notes(cubic, summary(50, 0.97)) == [
        "bottleneck: utilization 0.97: the flows keep it full (mean backlog 50.0 packets)"]
    assert "leave 60 % of it unused" in explain.notes(cubic, summary(0, 0.4))[0]
    unfair = summary(50, 0.97, flows=[{"id": "f1"}, {"id": "f2"}], jain_index=0.6)
    assert explain.notes(cubic, unfair)[-1] == "the flows did not share fairly: Jain index 0.60 (1 = equal shares)"
    assert explain.notes(cubic, None) == [] and explain.notes([], Summary()) == []


def test_response_lines_at_the_measured_else_configured_loss_rate() -> None:
    hstcp = {"flow": "f1", "cc": "hstcp", "links": ("a", "b")}
    measured = read_summary({"links": [{"id": "a", "loss_drops": 1, "arrivals_pkts": 100_000},
                                       {"id": "b", "loss_drops": 0, "arrivals_pkts": 100_000}]})
    (line,) = explain.response_lines([hstcp], measured)
    assert line["loss_rate"] == 1e-5 and line["mathis_window_pkts"] == round(math.sqrt(1.5 / 1e-5), 1)
    assert line["hstcp_window_pkts"] == round(HstcpParams().window(1e-5), 1) > line["mathis_window_pkts"]
    (line,) = explain.response_lines([hstcp], None, {"b": {"loss": {"model": "bernoulli", "rate": 0.01}}})
    assert line["loss_rate"] == 0.01 and "hstcp_window_pkts" not in line  # p above Low_P: HSTCP is standard TCP
    assert explain.response_lines([hstcp], None, {}) == [hstcp]  # no loss: no lines
    # a finished run that lost nothing at random: no line, whatever the spec asked for
    lossy = {"b": {"loss": {"model": "bernoulli", "rate": 0.01}}}
    assert explain.response_lines([hstcp], Summary(), lossy) == [hstcp]
    assert explain.path_loss({"links": ("a", "b")}, {"a": 0.5, "b": 0.5}) == 0.75
    assert explain.loss_rate(LinkFigures(id="a", loss_drops=3)) is None
    assert explain.loss_rate(LinkFigures(id="a", arrivals_pkts=0)) is None


def test_what_happened_from_a_spec() -> None:
    from fastlab.define.schema import parse_spec

    spec = parse_spec({"name": "x", "topology": "dumbbell", "topology_args": {"rate_mbps": 20, "rtt_ms": 40},
                       "duration_s": 10, "flows": [{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 30}}]})
    assert "FAST at equilibrium" in explain.what_happened(spec, summary(29.8, 0.99))[0]


def test_the_report_shows_the_note_escaped() -> None:
    import pandas as pd

    from fastlab.results import report

    env = read_environment({"run": {"name": "n", "prefix": "flabcd", "started": "2026-11-24T03:00:00+00:00"},
                            "kernel": "6.18", "backends": {}, "shaping": [], "tools": {}})
    empty = pd.DataFrame()

    def page(summary: dict) -> str:
        return report.render("name: n\n", read_summary({"flows": [], "links": [], "jain_index": 1.0} | summary), env,
                             empty, empty, empty)

    assert "What happened" not in page({})
    section = page({"what_happened": ["backlog 2.6 ≪ α = 30", "<b>x</b>"]})
    assert '<h2>What happened</h2><ul class="what-happened"><li>backlog 2.6 ≪ α = 30</li>' in section
    assert "&lt;b&gt;x&lt;/b&gt;" in section and "<b>x</b>" not in section


@pytest.mark.parametrize("p", [1e-9, 1e-7, 1e-5, 1e-3, 0.01, 0.2])
def test_the_notes_hstcp_response_function_is_the_headers_default(p: float) -> None:
    """The note draws RFC 3649's response function with the kernel header's defaults (no constants of its own:
    it reads fastlab.theory.hstcp, which the issue-35 stages let the theory import)."""
    from fastlab.define.ccset import HSTCP_DEFAULTS

    fields = HstcpParams.__dataclass_fields__
    assert {k: getattr(explain.HSTCP_DEFAULT, k) for k in fields} == {k: HSTCP_DEFAULTS[k] for k in fields}
    headers = HstcpParams(**{k: HSTCP_DEFAULTS[k] for k in fields})
    assert explain.hstcp_window(p) == pytest.approx(headers.window(p), rel=1e-12)
    assert explain.hstcp_window(1.5 / 38 ** 2) == pytest.approx(38.0)  # RFC 3649: Low_Window 38 at Low_P
