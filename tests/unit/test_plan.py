"""fastlab.plan.prepare: the run's plan made once. `layout` (pure: no capability probe) is what the theory, explain
and the web form read; `prepare` extends the same layout with the machine's decisions, and the fidelity
verdict, the cost prediction and the theory read the routes and path figures it holds."""

from __future__ import annotations

import pytest

from fastlab.measure.verdict import fidelity_paths, fidelity_routes
from fastlab.plan.capabilities import Capabilities, Probe
from fastlab.plan.prepare import layout, prepare
from fastlab.spec.ccset import fast_target_ms
from fastlab.spec.schema import SpecError, parse_spec
from fastlab.theory import fast as fast_theory

SC2002 = {"name": "plan", "topology": "sc2002", "duration_s": 5, "topology_args": {"scale": 0.01},
          "flows": [{"src": "cern", "dst": "sunnyvale", "cc": "fast", "cc_args": {"alpha": 40}},
                    {"src": "cern2", "dst": "chicago", "cc": "reno"}]}


def bare_machine(*present: str) -> Capabilities:
    """A machine with only `present` (made up: the plan's machine decisions must come from it alone)."""
    c = Capabilities(kernel="test")
    for name in present:
        c.probes[name] = Probe(name, True, "")
    return c


def test_the_layout_holds_each_flows_route_figures_and_fast_target() -> None:
    lay = layout(parse_spec(SC2002))
    f1, f2 = lay.paths["f1"], lay.paths["f2"]
    # sunnyvale-gbe gets its data through cern-gbe, no faster than itself: it cannot queue, built plain
    assert "sunnyvale-gbe" in lay.unused_links and "sunnyvale-gbe" not in lay.links
    assert f1.data == (("cern-gbe", True), ("datatag", True), ("level3", True))
    assert f1.acks == (("level3", False), ("datatag", False), ("cern-gbe", False))
    assert (f1.figures.rtt_ms, f1.figures.bottleneck_link, f1.figures.bottleneck_mbps) == (180.0, "cern-gbe", 10.0)
    assert f1.alpha == 40 and f1.target_queue_ms == pytest.approx(fast_target_ms(40, 10.0)) == pytest.approx(48.0)
    assert f2.alpha is None and f2.target_queue_ms is None and f2.figures.rtt_ms == 118.0
    assert lay.routes.of("cern", "sunnyvale") == f1.data  # one table: the flows' paths are its rows


def test_prepare_extends_the_same_layout_and_its_readers_read_it() -> None:
    spec = parse_spec(SC2002)
    prep = prepare(spec, caps=bare_machine("linkemu", "bpf_struct_ops"))
    lay = layout(spec)
    assert prep.paths == lay.paths and prep.routes == lay.routes and prep.unused_links == lay.unused_links
    assert set(prep.backends) == set(prep.links) and {b for b, _ in prep.backends.values()} == {"emulator"}
    verdict_paths = {p.flow: p for p in fidelity_paths(prep)}
    refs = {r["flow"]: r for r in fast_theory.plan_references(prep)}
    for flow_id, path in prep.paths.items():
        assert verdict_paths[flow_id].base_rtt_ms == refs[flow_id]["base_rtt_ms"] == path.figures.rtt_ms
        assert verdict_paths[flow_id].target_queue_ms == path.target_queue_ms
        assert refs[flow_id]["bottleneck"] == path.figures.bottleneck_link
    assert fast_theory.references(spec) == fast_theory.plan_references(prep)
    assert set(fidelity_routes(prep)) == {tuple((link, "forward" if fwd else "reverse") for link, fwd in way)
                                         for way in (prep.paths["f1"].data, prep.paths["f1"].acks,
                                                     prep.paths["f2"].data, prep.paths["f2"].acks)}


def test_the_layout_needs_no_machine_where_prepare_refuses() -> None:
    """A run the machine cannot carry (no emulator here for a lossy link) still has its theory."""
    spec = parse_spec(SC2002 | {"links": {"datatag": {"loss": {"model": "bernoulli", "rate": 0.001}}}})
    with pytest.raises(SpecError, match="links.datatag"):
        prepare(spec, caps=bare_machine("bpf_struct_ops"))
    assert layout(spec).paths["f1"].figures.rtt_ms == 180.0


def test_the_layout_refuses_bad_input_naming_the_field() -> None:
    with pytest.raises(SpecError, match=r"flows\[0\].dst: unknown host 'mars'"):
        layout(parse_spec(SC2002 | {"flows": [{"src": "cern", "dst": "mars", "cc": "reno"}]}))
