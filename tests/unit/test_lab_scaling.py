"""The labs' delay-preserving rule (fastlab.labs.scaling): a FAST step run at another scale than its spec file's
keeps alpha x MTU / C, the queueing delay FAST aims at, by scaling alpha with the capacities; an alpha the step's
overrides state is kept; the built spec says what alpha became and why."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fastlab.define.ccset import fast_target_ms
from fastlab.define.schema import load_spec
from fastlab.labs.kit import load_lab
from fastlab.labs.scaling import ALPHA_DEFAULT, ALPHA_MAX, DESCRIPTION_MAX, described, scale_alphas, topology_scale

GBE_MBPS = 1000.0


def spec_file(tmp_path: Path, **changes: object) -> str:
    """A two-flow SC2002 spec written at scale 1 (alpha 200 and a Reno flow), with `changes` to its fields."""
    data = {"name": "t", "description": "two flows", "topology": "sc2002",
            "topology_args": {"scale": 1.0, "cern_hosts": 2, "chicago_hosts": 1, "sunnyvale_hosts": 2,
                              "baltimore_hosts": 1},
            "duration_s": 10, "flows": [{"src": "cern", "dst": "sunnyvale", "cc": "fast",
                                         "cc_args": {"alpha": 200, "pacing_pct": 120}},
                                        {"src": "cern2", "dst": "sunnyvale2", "cc": "reno"}]} | changes
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def rule(path: str, overrides: list[str]):  # noqa: ANN201 - AlphaScaling | None
    return scale_alphas(load_spec(path), load_spec(path, overrides), overrides)


def test_lab03_rows_run_at_a_quarter_with_the_papers_queue() -> None:
    """Rows 7/9/10 are written as the paper ran them (alpha 200 at GbE) and run at 0.05, the largest scale they
    are faithful at here: alpha 10 for every flow, 2.4 ms of queue at a 50 Mb/s port as at 1 Gb/s, and the
    run's spec says so."""
    lab = load_lab(3)
    for step, flows in (("row-7", 7), ("row-9", 9), ("row-10", 10)):
        spec = lab.build_spec(step)
        assert spec.topology_args["scale"] == 0.05 and len(spec.flows) == flows
        assert {f.cc_args["alpha"] for f in spec.flows} == {10}
        assert {f.cc_args["pacing_pct"] for f in spec.flows} == {120}  # only alpha moved
        assert fast_target_ms(10, GBE_MBPS * 0.05) == pytest.approx(fast_target_ms(200, GBE_MBPS)) == 2.4
        assert "alpha 200 -> 10 packets" in spec.description and "delay-preserving" in spec.description
        short = lab.build_spec(step, short=True)  # the CI form states alpha 15 at 0.01: kept, not 2
        assert short.topology_args["scale"] == 0.01 and {f.cc_args["alpha"] for f in short.flows} == {15}
        assert "[Scaled" not in short.description


def test_an_alpha_the_overrides_state_is_kept(tmp_path: Path) -> None:
    path = spec_file(tmp_path)
    scaled = rule(path, ["topology_args.scale=0.05"])
    assert scaled is not None and [(c.where, c.written, c.scaled) for c in scaled.changes] == [("flows.0", 200, 10)]
    assert scaled.overrides() == ["flows.0.cc_args.alpha=10"]
    for stated in (["flows.0.cc_args.alpha=200"], ["flows.0.cc_args={alpha: 200}"],
                   ["flows.0={src: cern, dst: sunnyvale, cc: fast}"],
                   ["flows=[{src: cern, dst: sunnyvale, cc: fast, cc_args: {alpha: 200}}]"]):
        assert rule(path, ["topology_args.scale=0.05", *stated]) is None, stated
    # stating another field of the flow (its pacing) does not state its alpha: the rule applies
    assert rule(path, ["topology_args.scale=0.05", "flows.0.cc_args.pacing_pct=0"]) is not None
    # the row-1 short form states alpha 200 at 0.05 (its benched CI form): kept
    assert {f.cc_args["alpha"] for f in load_lab(3).build_spec("row-1", short=True).flows} == {200}


def test_no_rule_at_the_written_scale_or_without_fast(tmp_path: Path) -> None:
    path = spec_file(tmp_path)
    assert rule(path, []) is None and rule(path, ["topology_args.scale=1"]) is None
    assert rule(path, ["topology_args.scale=0.5", "flows.0.cc=reno", "flows.0.cc_args={}"]) is None
    # a topology without a scale (the dumbbell's capacity is its own rate_mbps): nothing to follow
    dumbbell = spec_file(tmp_path, topology="dumbbell", topology_args={"rate_mbps": 20},
                         flows=[{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 20}}])
    assert topology_scale(load_spec(dumbbell)) is None
    assert rule(dumbbell, ["topology_args.rate_mbps=10"]) is None


def test_the_topologys_default_scale_is_the_written_one(tmp_path: Path) -> None:
    """A spec file without a scale is written at the topology's default (sc2002: 0.1)."""
    path = spec_file(tmp_path, topology_args={"cern_hosts": 2, "sunnyvale_hosts": 2})
    assert topology_scale(load_spec(path)) == 0.1
    scaled = rule(path, ["topology_args.scale=0.2"])
    assert scaled is not None and scaled.changes[0].scaled == 400


def test_default_alpha_clamping_and_scheduled_changes(tmp_path: Path) -> None:
    path = spec_file(tmp_path, topology_args={"scale": 0.01, "cern_hosts": 2, "sunnyvale_hosts": 2},
                     flows=[{"src": "cern", "dst": "sunnyvale", "cc": "fast"},
                            {"src": "cern2", "dst": "sunnyvale2", "cc": "fast", "cc_args": {"alpha": 500}}],
                     cc_changes=[{"at_s": 5, "host": "cern", "cc": "fast", "args": {"alpha": 30}}])
    scaled = rule(path, ["topology_args.scale=1"])
    assert scaled is not None
    assert [(c.where, c.written, c.scaled) for c in scaled.changes] == [
        ("flows.0", ALPHA_DEFAULT, ALPHA_MAX), ("flows.1", 500, ALPHA_MAX), ("cc_changes.0", 30, 3000)]
    assert "clamped" in scaled.words()
    assert "cc_changes.0.args.alpha=3000" in scaled.overrides()
    down = rule(path, ["topology_args.scale=0.001", "cc_changes=[]"])  # never below one packet
    assert down is not None and [c.scaled for c in down.changes] == [10, 50]
    tiny = rule(path, ["topology_args.scale=0.0001"])
    assert tiny is not None and [c.scaled for c in tiny.changes] == [1, 5, 1] and "clamped" in tiny.words()


def test_the_description_stays_within_its_limit(tmp_path: Path) -> None:
    path = spec_file(tmp_path)
    scaled = rule(path, ["topology_args.scale=0.25"])
    assert scaled is not None
    long = described("x" * 5000, scaled)
    assert len(long) <= DESCRIPTION_MAX and long.endswith(scaled.words()) and "..." in long
    assert described("", scaled) == scaled.words()


def test_the_words_name_runs_of_entries(tmp_path: Path) -> None:
    fast = [{"src": "cern", "dst": "sunnyvale", "cc": "fast", "cc_args": {"alpha": 200}} for _ in range(6)]
    path = spec_file(tmp_path, flows=[*fast[:3], {"src": "cern2", "dst": "sunnyvale2", "cc": "reno"}, *fast[3:]])
    scaled = rule(path, ["topology_args.scale=0.25", "flows.1.cc_args.alpha=7"])
    assert scaled is not None and "alpha 200 -> 50 packets (flows.0, flows.2, flows.4-6)" in scaled.words()
