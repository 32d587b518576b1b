"""fastlab.plan.prepare: the run's plan made once. `layout` (pure: no capability probe) is what the theory, explain
and the web form read; `prepare` extends the same layout with the machine's decisions, and the fidelity
verdict, the cost prediction and the theory read the routes and path figures it holds."""

from __future__ import annotations

import pytest

from fastlab.define.ccset import fast_target_ms
from fastlab.define.schema import SpecError, parse_spec
from fastlab.measure.verdict import fidelity_paths, fidelity_routes
from fastlab.plan.capabilities import Capabilities, Probe
from fastlab.plan.prepare import layout, prepare
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


def test_a_run_plan_holds_every_name_and_command_the_build_carries_out(tmp_path) -> None:
    """Issue 35 item 1: `for_run` binds the plan to a run's prefix and folder: each topology link's interface
    names (the network builds exactly these: fastlab.net.network reads `wiring`), and each shaped link's
    emulator command line, its drop log in the run's folder -- before anything is built."""
    from fastlab.base import rundir
    from fastlab.plan.prepare import for_run

    prep = prepare(parse_spec(SC2002), caps=bare_machine("linkemu", "bpf_struct_ops"))
    run = for_run(prep, "flab1", tmp_path)
    assert run.prefix == "flab1" and run.folder == tmp_path and set(run.links) == set(prep.links)
    assert len(run.wiring) == len(prep.plan.links)
    shaped = {w.devices.node: w for w in run.wiring if w.devices is not None}
    assert len(shaped) == sum(1 for link in prep.plan.links if link.shaped)
    for i, link in enumerate(prep.plan.links):
        wire = run.wiring[i]
        for node, dev in ((link.a, wire.a_dev), (link.b, wire.b_dev)):  # a switch port is in the root namespace
            switch = prep.plan.nodes[node].role == "switch"
            assert dev.startswith(f"flab1{node}-eth") if switch else dev.startswith("eth"), (node, dev)
    names = [dev for w in run.wiring for dev in (w.a_dev, w.b_dev) if dev.startswith("flab1")]
    assert len(names) == len(set(names))  # no two switch ports share a name
    for link_id, link_plan in run.links.items():
        argv = list(link_plan.emulator_argv)
        devices = next(w.devices for i, w in enumerate(run.wiring) if prep.plan.links[i].shaped == link_id)
        assert link_plan.backend == "emulator" and not link_plan.commands
        assert argv[argv.index("--if-a") + 1] == devices.dev_a and argv[argv.index("--if-b") + 1] == devices.dev_b
        assert argv[argv.index("--drops-log") + 1] == str(tmp_path / rundir.drops_log_name(link_id))
    assert not list(tmp_path.iterdir())  # pure: nothing written


def test_the_layout_needs_no_machine_where_prepare_refuses() -> None:
    """A run the machine cannot carry (no emulator here for a lossy link) still has its theory."""
    spec = parse_spec(SC2002 | {"links": {"datatag": {"loss": {"model": "bernoulli", "rate": 0.001}}}})
    with pytest.raises(SpecError, match="links.datatag"):
        prepare(spec, caps=bare_machine("bpf_struct_ops"))
    assert layout(spec).paths["f1"].figures.rtt_ms == 180.0


def test_the_layout_refuses_bad_input_naming_the_field() -> None:
    with pytest.raises(SpecError, match=r"flows\[0\].dst: unknown host 'mars'"):
        layout(parse_spec(SC2002 | {"flows": [{"src": "cern", "dst": "mars", "cc": "reno"}]}))
