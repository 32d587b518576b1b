"""Replay's comparison: pure functions of two runs' summaries, drop logs and environments."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from fastlab.base.record import Verdict, read_environment, read_summary
from fastlab.experiment.replay import TOLERANCES, RunFacts, compare, environment_differences, fidelity_notes, table

ENVIRONMENT = {
    "kernel": "6.18.0", "tools": {"fastlab": "d96cc2d", "iperf3": "iperf 3.12"},
    "backends": {"delay": {"backend": "emulator"}, "switch": {"backend": "ovs-user"}},
    "shaping": [{"link": "bottleneck", "backend": "emulator", "why": "loss must be seeded and repeatable"}],
    "congestion_control": {"applied": [{"cc": "fast", "impl": "bpf"}], "builds": {"fast.bpf.o": "a0" * 32}}}


def summary() -> dict[str, Any]:
    return {"flows": [{"id": "f1", "src": "h1", "dst": "h2", "throughput_mbps": 18.3, "mean_rtt_ms": 25.7,
                       "min_rtt_ms": 20.9, "retransmits": 9},
                      {"id": "f2", "src": "h3", "dst": "h4", "throughput_mbps": 1.2, "mean_rtt_ms": 26.0,
                       "min_rtt_ms": 21.0, "retransmits": 1}],
            "links": [{"id": "bottleneck", "utilization": 0.932, "mean_backlog_pkts": 7.0, "queue_drops": 0,
                       "loss_drops": 9, "arrivals_pkts": 9795, "reverse": {"arrivals_pkts": 5103, "loss_drops": 0}}],
            "jain_index": 0.58, "idle_rtt": [{"src": "h1", "dst": "h2", "median_ms": 21.18}]}


DROPS = [1273, 2172, 2966, 3261, 4849, 5483, 5567, 5788, 7362]


def facts(**changes: Any) -> RunFacts:
    s = summary()
    for key, value in changes.items():
        node: Any = s
        *path, last = key.split(".")
        for part in path:
            node = node[int(part)] if part.isdigit() else node[part]
        node[last] = value
    return RunFacts(read_summary(s), read_environment(ENVIRONMENT), {"bottleneck": {"forward": list(DROPS)}})


def row(rows: list[Any], metric: str) -> Any:
    return next(r for r in rows if r.metric.startswith(metric))


def test_the_same_run_is_consistent_and_every_metric_is_compared() -> None:
    rows = compare(facts(), facts())
    assert all(r.ok for r in rows)
    metrics = " ".join(r.metric for r in rows)
    for name in ("f1 throughput_mbps", "f2 mean_rtt_ms", "f1 min_rtt_ms", "f1 retransmits", "idle RTT h1->h2",
                 "bottleneck utilization", "bottleneck mean_backlog_pkts", "bottleneck queue_drops",
                 "bottleneck loss_drops", "bottleneck forward loss drops in packets 0..9794", "jain_index"):
        assert name in metrics, name


@pytest.mark.parametrize("change, metric, ok", [
    ({"links.0.utilization": 0.85}, "bottleneck utilization", True),        # within ±10 % of 0.932
    ({"links.0.utilization": 0.83}, "bottleneck utilization", False),
    ({"flows.0.mean_rtt_ms": 27.9}, "f1 mean_rtt_ms", True),               # within 10 %
    ({"flows.0.mean_rtt_ms": 29.0}, "f1 mean_rtt_ms", False),
    ({"flows.0.throughput_mbps": 16.6}, "f1 throughput_mbps", True),
    ({"flows.0.throughput_mbps": 15.0}, "f1 throughput_mbps", False),
    ({"flows.1.throughput_mbps": 1.6}, "f2 throughput_mbps", True),        # small flows: ±0.5 Mb/s floor
    ({"flows.0.retransmits": 12}, "f1 retransmits", True),
    ({"flows.0.retransmits": 30}, "f1 retransmits", False),
    ({"jain_index": 0.66}, "jain_index", False),
    ({"idle_rtt": [{"src": "h1", "dst": "h2", "median_ms": 25.0}]}, "idle RTT", False),
    ({"links.0.loss_drops": 11}, "bottleneck loss_drops", True),          # total: ±15 % (packet counts vary)
])
def test_tolerances(change: dict[str, Any], metric: str, ok: bool) -> None:
    rows = compare(facts(), facts(**change))
    assert row(rows, metric).ok is ok
    assert all(r.ok for r in rows if not r.metric.startswith(metric))


def test_seeded_loss_must_drop_the_very_same_packets() -> None:
    fewer_packets = facts(**{"links.0.arrivals_pkts": 6000})
    fewer_packets.loss_drops["bottleneck"]["forward"] = [i for i in DROPS if i < 6000]
    exact = row(compare(facts(), fewer_packets), "bottleneck forward loss drops")
    assert exact.ok and exact.metric.endswith("0..5999") and exact.original == exact.replay == 8
    shifted = facts()
    shifted.loss_drops["bottleneck"]["forward"][0] += 1  # same count, another packet
    rows = compare(facts(), shifted)
    assert not row(rows, "bottleneck forward loss drops").ok
    one_more = facts()
    one_more.loss_drops["bottleneck"]["forward"].append(100)
    assert not row(compare(facts(), one_more), "bottleneck forward loss drops").ok


def test_unseeded_loss_is_compared_as_random_counts() -> None:
    original, replay = facts(), facts(**{"links.0.loss_drops": 16})
    for run in (original, replay):
        run.environment.shaping[0].backend = "tc"
    rows = compare(original, replay)
    assert not any("loss drops in packets" in r.metric for r in rows)
    assert row(rows, "bottleneck loss_drops").ok  # 9 -> 16 is within 3 sqrt(9) + ...: Poisson spread
    assert "√n" in row(rows, "bottleneck loss_drops").tolerance
    assert not row(compare(original, facts(**{"links.0.loss_drops": 40})), "bottleneck loss_drops").ok


def test_missing_figures_differ() -> None:
    replay = facts()
    replay.summary.flows.pop()
    rows = compare(facts(), replay)
    assert not row(rows, "f2 throughput_mbps").ok


def test_every_tolerance_states_its_reason() -> None:
    for name, tolerance in TOLERANCES.items():
        assert len(tolerance.reason) > 20, name
    assert TOLERANCES["loss_drops_seeded"].describe() == "exact"
    assert TOLERANCES["utilization"].describe() == "±0.03 or ±10% (larger)"
    assert TOLERANCES["mean_rtt_ms"].describe() == "±1 or ±10% (larger)"


def test_table_lists_original_replay_diff_tolerance_ok() -> None:
    text = table(compare(facts(), facts(**{"links.0.utilization": 0.8})))
    header, *lines = text.splitlines()
    assert header.split() == ["metric", "original", "replay", "diff", "tolerance", "ok"]
    util = next(line for line in lines if line.startswith("bottleneck utilization"))
    assert "0.932" in util and "0.8" in util and "-0.132" in util and "±0.03" in util and "DIFFERS" in util


def test_environment_differences_name_each_backend() -> None:
    assert environment_differences(read_environment(ENVIRONMENT), read_environment(ENVIRONMENT)) == []
    other = copy.deepcopy(ENVIRONMENT)
    other["kernel"] = "6.8.0-45-generic"
    other["shaping"][0]["backend"] = "tc"
    other["backends"]["switch"]["backend"] = "ovs-kernel"
    other["congestion_control"] = {"applied": [{"cc": "fast", "impl": "module"}], "builds": {}}
    warnings = "\n".join(environment_differences(read_environment(ENVIRONMENT), read_environment(other)))
    for text in ("kernel: original 6.18.0, here 6.8.0-45-generic", "shaping of link bottleneck: original emulator, "
                 "here tc", "backend for switch: original ovs-user, here ovs-kernel",
                 "fast implementation: original bpf, here module", "CC build fast.bpf.o"):
        assert text in warnings, text


def test_facts_read_from_a_run_directory(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(json.dumps(summary()))
    (tmp_path / "environment.json").write_text(json.dumps(ENVIRONMENT))
    (tmp_path / "loss_drops_bottleneck.txt").write_text("ab 17\nba 3\nab 42\n")
    run = RunFacts.from_dir(tmp_path)
    assert run.loss_drops == {"bottleneck": {"forward": [17, 42], "reverse": [3]}}
    assert run.seeded_loss("bottleneck") and not run.seeded_loss("other")


def with_verdict(run: RunFacts, faithful: bool | None) -> RunFacts:
    if faithful is not None:
        run.summary.fidelity = Verdict.model_validate({
            "faithful": faithful, "paths": [], "links": {},
            "reasons": [] if faithful else ["the machine was 99% busy while the flows ran"],
            "advice": None if faithful else "run fewer flows"})
    return run


def test_fidelity_verdicts_are_reported_side_by_side_and_never_fail() -> None:
    rows = compare(with_verdict(facts(), True), with_verdict(facts(), False))
    verdict = row(rows, "emulation faithful")
    assert (verdict.original, verdict.replay, verdict.ok, verdict.informational) == (1, 0, True, True)
    assert all(r.ok for r in rows)  # a different verdict is worth a line, not a failure
    line = next(x for x in table(rows).splitlines() if x.startswith("emulation faithful"))
    assert line.split()[-1] == "(differs)" and "reported, not compared" in line
    notes = fidelity_notes(with_verdict(facts(), True), with_verdict(facts(), False))
    assert notes[0].startswith("original fidelity: faithful") and notes[1].startswith("replay   fidelity: NOT FAITH")
    assert "the fidelity verdicts differ: the emulation of this replay was not faithful" in notes[2]
    assert len(fidelity_notes(with_verdict(facts(), True), with_verdict(facts(), True))) == 2


def test_runs_without_a_verdict_are_not_assessed() -> None:
    old = row(compare(facts(), with_verdict(facts(), False)), "emulation faithful")
    assert (old.original, old.replay, old.ok) == (None, 0, True)
    notes = fidelity_notes(facts(), with_verdict(facts(), False))
    assert "not assessed" in notes[0] and len(notes) == 2  # no "differ" line against an old run
