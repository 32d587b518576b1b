"""Runs whose parameters change are judged per segment (fastlab.theory.segments, issue 32): the cuts, the theory
per part, the figures over each part's settled time and the words, on hand-computed traces and on lab
06's recorded α staircase."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from fastlab.base.record import RecordError, read_environment, read_summary
from fastlab.base.rundir import RunFolder
from fastlab.define.schema import parse_spec
from fastlab.results import tables
from fastlab.theory import explain, segments
from fastlab.theory.segments import Change
from webapp import create_app
from webapp.compare import differences

REPO = Path(__file__).resolve().parents[2]
DOCSIS = REPO / "labs" / "06-fast-docsis" / "recorded" / "short" / "docsis"

# one FAST flow over the 20 Mb/s x 40 ms dumbbell (1,667 packets/s of 1500 bytes): α 30, 60 from 6.4 s
SPEC = {"name": "live-alpha", "topology": "dumbbell", "topology_args": {"rate_mbps": 20, "rtt_ms": 40},
        "duration_s": 20, "seed": 1, "flows": [{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 30}}]}
LIVE = Change(6.4, "fast", {"alpha": 60}, "h1", live=True)


def test_a_live_change_cuts_the_run_and_steps_the_theory() -> None:
    spec = parse_spec(SPEC)
    parts = segments.segments(spec, [LIVE])
    assert [(p.start_s, p.end_s) for p in parts] == [(0.0, 6.4), (6.4, 20.0)]
    assert [p.spec.flows[0].cc_args["alpha"] for p in parts] == [30, 60]
    assert parts[1].changes == (LIVE,) and parts[1].before == ({"alpha": 30},)
    assert segments.described(spec, [LIVE]) == ["h1: α 30 → 60 at 6.4 s (live)"]
    spans = segments.reference_spans(spec, [LIVE])
    assert [(r["from_s"], r["to_s"], r["fast_queue_pkts"]) for r in spans] == [(0.0, 6.4, 30), (6.4, 20.0, 60)]
    # FAST's equilibrium RTT d + Σα/C: 40 ms + 30 (60) packets / 1,667 packets/s = 58 (76) ms, up to the
    # engine's exact packet size
    assert spans[0]["fast_rtt_ms"] == pytest.approx(58.0, abs=0.5)
    assert spans[1]["fast_rtt_ms"] == pytest.approx(76.0, abs=0.5)
    # without changes: one run-long span, the references of before
    assert [(r["from_s"], r["to_s"]) for r in segments.reference_spans(spec, [])] == [(0.0, 20.0)]


def test_changes_at_one_instant_together_global_ones_reach_every_flow_late_ones_begin_nothing() -> None:
    spec = parse_spec(SPEC | {"flows": [{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 30}},
                                        {"src": "h3", "dst": "h4", "cc": "fast"},
                                        {"src": "h3", "dst": "h4", "cc": "cubic"}], "topology": "dumbbell"})
    both = [Change(5, "fast", {"alpha": 50}, "h1"), Change(5, "fast", {"alpha": 70}, "h3"),
            Change(9, "fast", {"alpha": 10}), Change(20, "fast", {"alpha": 99}, "h1")]
    parts = segments.segments(spec, both)
    assert [(p.start_s, p.end_s) for p in parts] == [(0, 5), (5, 9), (9, 20)]
    assert [[f.cc_args.get("alpha") for f in p.spec.flows] for p in parts] == [[30, None, None], [50, 70, None],
                                                                               [10, 10, None]]
    # the second flow had set no alpha: the table's default is what it replaced
    from fastlab.define.ccset import FAST_PARAMS

    default = next(p.default for p in FAST_PARAMS if p.name == "alpha")
    assert parts[1].before == ({"alpha": 30}, {"alpha": default})
    assert parts[2].changes[0].text(parts[2].before[0]) == "every fast flow: α 50 → 10 at 9.0 s"


def test_applied_changes_read_the_environment_and_skip_what_is_not_a_change() -> None:
    env = read_environment({"congestion_control": {"applied": [
        {"cc": "fast", "impl": "bpf", "loaded_by_run": True}, {"cc": "fast", "scope": "host", "host": "h1",
                                                                "args": {"alpha": 30}},
        {"cc": "fast", "scope": "host", "host": "h1", "at_s": 12.0, "args": {"alpha": 5}},
        {"cc": "fast", "scope": "host", "host": "h1", "at_s": 6.4, "args": {"alpha": 60}, "live": True},
        {"cc": "fast", "scope": "global", "host": "h1", "at_s": 15, "args": {"alpha": 7}},
        {"at_s": 3, "args": {"alpha": 1}}, {"cc": "fast", "unload": "unregistered"}]}})
    assert segments.applied_changes(env) == [LIVE, Change(12.0, "fast", {"alpha": 5}, "h1"),
                                             Change(15.0, "fast", {"alpha": 7}, None)]
    assert segments.applied_changes(None) == [] and segments.applied_changes(read_environment({})) == []
    # what is no record of a change at all is refused where the record is read, naming the field
    for hostile, field in (("garbage", "applied[0]"), ({"at_s": "soon", "cc": "fast", "args": {}}, "applied[0].at_s"),
                           ({"at_s": 3, "cc": 5, "args": {}}, "applied[0].cc"),
                           ({"at_s": 3, "cc": "fast", "args": [1]}, "applied[0].args")):
        with pytest.raises(RecordError, match=rf"congestion_control\.{field.replace('[', '.').replace(']', '')}"
                           if False else "congestion_control"):
            read_environment({"congestion_control": {"applied": [hostile]}})
    with pytest.raises(RecordError, match="congestion_control.applied: Input should be a valid list"):
        read_environment({"congestion_control": {"applied": "x"}})


def _traces() -> tuple[pd.DataFrame, pd.DataFrame]:
    """20 s at 10 Hz: the flow acks 2.5 MB/s (20 Mb/s) throughout; the queue holds 30 packets before
    6.4 s, 45 during the 2-s transient after the change and 60 after it."""
    t = [round(0.1 * i, 1) for i in range(201)]
    flows = pd.DataFrame({"flow": "f1", "t": t, "bytes_acked": [2_500_000 * x for x in t],
                          "srtt_ms": [58.0 if x < 6.4 else 76.0 for x in t], "cwnd_pkts": 100.0})
    backlog = [30 if x < 6.4 else 45 if x < 8.4 else 60 for x in t]
    links = pd.DataFrame({"t": t, "link": "bottleneck", "direction": "forward", "backlog_pkts": backlog,
                          "tx_bytes": [2_500_000 * x for x in t], "queue_drops": 0, "loss_drops": 0})
    return flows, links


def test_each_part_is_measured_over_its_settled_time_and_judged_against_its_own_alpha() -> None:
    spec = parse_spec(SPEC)
    flows, links = _traces()
    measured = segments.measured(spec, [LIVE], flows, links, {"bottleneck": 20.0})
    assert [m.settled_from_s for m in measured] == [0.0, 8.4]  # 6.4 + SETTLE_S
    assert measured[0].links[0].mean_backlog_pkts == 30 and measured[1].links[0].mean_backlog_pkts == 60
    assert measured[1].links[0].utilization == pytest.approx(1.0)
    assert measured[1].flows[0].throughput_mbps == pytest.approx(20.0)
    assert measured[1].flows[0].mean_rtt_ms == 76.0
    assert measured[1].changes == ["h1: α 30 → 60 at 6.4 s (live)"]
    # the whole run's queue (mean ~52) against α 30 alone: "more queued than FAST's equilibrium" -- wrong
    summary = read_summary({"links": [{"id": "bottleneck", "utilization": 1.0, "mean_backlog_pkts": 52.4}],
                            "flows": [{"id": "f1", "cc": "fast"}], "jain_index": 1.0})
    assert "more queued than FAST's equilibrium" in " ".join(explain.what_happened(spec, summary))
    summary.segments = measured
    lines = explain.what_happened(spec, summary, [LIVE])
    assert lines[0].startswith("the run's parameters changed 1 time") and "α 30 → 60 at 6.4 s (live)" in lines[0]
    assert "0.0–6.4 s: bottleneck" in lines[1] and "≈ α = 30: FAST at equilibrium" in lines[1]
    assert "6.4–20.0 s (judged from 8.4 s): bottleneck" in lines[2] and "≈ α = 60: FAST at equilibrium" in lines[2]
    assert not any("more queued" in line for line in lines)


def test_a_short_part_is_judged_over_its_second_half() -> None:
    part = segments.Segment(6.0, 9.0, None, (LIVE,), ({},))
    assert segments.settled(part) == 7.5
    assert segments.settled(segments.Segment(0.0, 3.0, None)) == 0.0  # the first: from the start, as the summary


def test_lab06_recorded_staircase_in_parts() -> None:
    """Lab 06's recorded α staircase (1 -> 20 in 3-s steps over DOCSIS): seven parts; the link fills at
    α 12, as the lab's checkpoint reads it, and every part but the first is judged from its second half."""
    spec = parse_spec(yaml.safe_load((DOCSIS / "spec.yaml").read_text()))
    folder = RunFolder(DOCSIS)
    changes = segments.applied_changes(folder.environment())
    assert [c.args["alpha"] for c in changes] == [2, 4, 8, 12, 16, 20]
    capacities = {link.id: link.capacity_mbps or 0.0 for link in folder.summary().links}
    measured = segments.measured(spec, changes, folder.flows(), folder.links(), capacities)
    util = [next(x.utilization for x in m.links if x.id == "cable") for m in measured]
    assert len(measured) == 7 and [m.settled_from_s for m in measured[1:]] == [4.5, 7.5, 10.5, 13.5, 16.5, 19.5]
    assert max(util[:4]) < 0.95 <= min(util[4:]), util
    rows = tables.segment_rows(measured)
    assert rows[4]["began with"] == "server: α 8 → 12 at 12.0 s" and rows[4]["cable busy (%)"] >= 95
    assert "path busy (%)" in rows[0] or all("path" not in k for k in rows[0])  # idle links left out or shown


def test_segment_rows_take_odd_figures_and_hostile_segments_are_refused_where_read() -> None:
    odd = read_summary('{"segments": [{"start_s": NaN, "end_s": 1e308, "changes": [], "links": [{"id": "l"}],'
                       ' "flows": [{"id": "f1", "throughput_mbps": null}]}, {"start_s": 0, "end_s": 1}]}')
    rows = tables.segment_rows(odd.segments or [])
    assert rows[0]["part"] == "-" and rows[0]["f1 goodput (Mb/s)"] is None and rows[1]["began with"] == "the start"
    assert tables.run_tables(read_summary({}), None)["segments"].rows == []
    for hostile, field in (("nonsense", "segments"),
                           ([{"start_s": 0, "end_s": 1, "changes": [None]}], "segments[0].changes[0]"),
                           ([{"start_s": 0, "end_s": 1, "links": [None]}], "segments[0].links[0]"),
                           ([{"start_s": 0, "end_s": 1, "flows": [{"id": "f1", "throughput_mbps": "fast"}]}],
                            "segments[0].flows[0].throughput_mbps")):
        with pytest.raises(RecordError, match=rf"^summary: {re.escape(field)}: "):
            read_summary({"segments": hostile})


def test_compare_lists_the_changes_no_spec_holds() -> None:
    rows = differences([SPEC, SPEC], ["h1: α 30 → 60 at 6.4 s (live)", "none"])
    assert rows == [{"field": "changes during the run", "values": ["h1: α 30 → 60 at 6.4 s (live)", "none"]}]
    assert differences([SPEC, SPEC], ["none", "none"]) == []


def test_run_page_and_references_api_step_at_the_change(tmp_path: Path) -> None:
    run_id = "20261127-100000-live-alpha-flabcd"
    flows, links = _traces()
    spec = parse_spec(SPEC)
    measured = segments.measured(spec, [LIVE], flows, links, {"bottleneck": 20.0})
    summary = read_summary({"flows": [{"id": "f1", "cc": "fast", "throughput_mbps": 20.0}], "jain_index": 1.0,
                            "links": [{"id": "bottleneck", "capacity_mbps": 20, "utilization": 1.0,
                                       "mean_backlog_pkts": 52.4}]})
    summary.segments = measured
    summary.what_happened = explain.what_happened(spec, summary, [LIVE])
    (tmp_path / run_id).mkdir()
    RunFolder(tmp_path / run_id).write(
        spec_yaml=yaml.safe_dump(SPEC), summary=summary,
        environment=read_environment({
            "run": {"name": "live-alpha", "prefix": "flabcd", "started": "2026-11-27T10:00:00+00:00"},
            "kernel": "6.18", "congestion_control": {"applied": [
                {"cc": "fast", "scope": "host", "host": "h1", "at_s": 6.4, "args": {"alpha": 60}, "live": True}]}}))
    client = create_app(results_root=tmp_path).test_client()
    page = client.get(f"/runs/{run_id}").get_data(as_text=True)
    assert "Parts of the run" in page and "h1: α 30 → 60 at 6.4 s (live)" in page
    assert "≈ α = 60: FAST at equilibrium" in page and "more queued" not in page
    assert "data-marks=" in page and "&#34;at_s&#34;: 6.4" in page
    data = client.get(f"/api/runs/{run_id}/references").get_json()
    assert data["changes"] == [{"at_s": 6.4, "text": "h1: α 30 → 60", "live": True}]
    assert [(r["from_s"], r["to_s"], r["fast_queue_pkts"]) for r in data["refs"]] == [(0, 6.4, 30), (6.4, 20, 60)]
    assert client.get("/api/runs/nope/references").status_code == 404
