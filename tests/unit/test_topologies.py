"""Topology plans (pure): names, scaling, routes and the RTTs they imply, the DOCSIS MAC options."""

from __future__ import annotations

import json

import pytest

from fastlab.define.schema import (
    PHANTOM_FIT_FLOW_EXPONENT,
    PHANTOM_FIT_KNEE,
    PHANTOM_FIT_MAX_DELAY_MS,
    DocsisUpstreamPolicy,
    TokenBucketPolicy,
)
from fastlab.define.topology import TopologyError, build_plan, catalogue, known
from fastlab.plan.link_commands import Devices
from fastlab.plan.links import resolve
from fastlab.plan.prepare import trace
from tests.unit.test_shaping import planned
from topologies.docsis import idle_mac_latency_ms

BUILT_INS = {"dumbbell", "sc2002", "docsis", "ucl-cern", "ucl-slac"}  # pyproject.toml's entry points


def resolved(plan):
    return {k: resolve(v, None) for k, v in plan.shaped.items()}


def figures(plan, links, src: str, dst: str, path: str | None = None):
    """src -> dst's path figures over `plan`, as the run's plan computes them (fastlab.plan.prepare.trace)."""
    return trace(plan, [(src, dst)]).figures(links, src, dst, path)


@pytest.mark.parametrize("name", sorted(BUILT_INS))
def test_routes_give_the_documented_rtt_between_named_endpoints(name: str) -> None:
    plan = build_plan(name, {})
    links = resolved(plan)
    assert plan.metadata["endpoints"]
    for end in plan.metadata["endpoints"]:
        assert figures(plan, links, end["src"], end["dst"]).rtt_ms == pytest.approx(end["rtt_ms"])


def test_sc2002_scale_divides_capacities_and_keeps_delays() -> None:
    full, tenth = build_plan("sc2002", {"scale": 1.0}), build_plan("sc2002", {"scale": 0.1})
    for link_id in ("datatag", "level3", "showfloor", "cern-gbe"):
        a, b = resolve(full.shaped[link_id], None).forward, resolve(tenth.shaped[link_id], None).forward
        assert b.rate_bps * 10 == a.rate_bps and a.delay_us == b.delay_us
    assert resolve(full.shaped["datatag"], None).forward.rate_bps == 2_500_000_000
    fig = figures(tenth, resolved(tenth), "cern", "sunnyvale")
    assert (fig.bottleneck_link, fig.bottleneck_mbps, fig.bdp_pkts) == ("cern-gbe", 100, 1500)
    assert fig.shaped_links == ["cern-gbe", "datatag", "level3", "sunnyvale-gbe"]
    assert {"cern", "cern2", "chicago", "sunnyvale10", "baltimore10"} <= tenth.host_names()


def test_sc2002_abilene_path_is_longer() -> None:
    plan = build_plan("sc2002", {"starlight_sunnyvale": "abilene"})
    fig = figures(plan, resolved(plan), "cern", "sunnyvale")
    assert fig.rtt_ms == 190 and "abilene-west" in fig.shaped_links and "level3" not in fig.shaped_links


def test_pruning_keeps_only_used_hosts() -> None:
    plan = build_plan("sc2002", {}).pruned({"cern", "sunnyvale"})
    assert plan.host_names() == {"cern", "sunnyvale"}
    assert "baltimore-gbe" not in plan.shaped and "cern-gbe" in plan.shaped
    assert figures(plan, resolved(plan), "cern", "sunnyvale").rtt_ms == 180


def test_docsis_cable_runs_token_bucket_down_and_mac_up() -> None:
    plan = build_plan("docsis", {})
    link = resolve(plan.shaped["cable"], None)
    assert (link.forward.rate_bps, link.reverse.rate_bps) == (3_000_000, 512_000)
    assert link.forward.limit_pkts == 256  # twice 512 ms at 3 Mb/s: max-delay is the limit, not the buffer
    result = planned(link, Devices("rcmts", "eth1", "rcm", "eth0", "x9", "x9-a", "x9-b"), seed=1,
                       stats_interval_ms=50, has_netem=True, has_emulator=True, drops_log="-")
    argv = list(result.emulator_argv)
    assert result.backend == "emulator" and "link-layer policy" in result.why
    assert argv[argv.index("--ab-policy") + 1] == "tbf" and argv[argv.index("--ba-policy") + 1] == "docsis"
    assert argv[argv.index("--docsis-map-interval-us") + 1] == "2000"
    assert argv[argv.index("--docsis-request-transit-us") + 1] == "450"
    # Cisco's downstream shaping: max-delay a drop threshold (the study's 512 ms), 4-ms slots, and the
    # calibrated phantom element with its fitted defaults
    assert argv[argv.index("--ab-tbf-max-delay-us") + 1] == "512000"
    assert argv[argv.index("--ab-tbf-granularity-us") + 1] == "4000"
    assert argv[argv.index("--ab-phantom-max-delay-us") + 1] == str(int(PHANTOM_FIT_MAX_DELAY_MS * 1000))
    assert argv[argv.index("--ab-phantom-knee-ppm") + 1] == str(int(PHANTOM_FIT_KNEE * 1e6))
    assert argv[argv.index("--ab-phantom-flow-exp-q") + 1] == str(int(PHANTOM_FIT_FLOW_EXPONENT * 4))
    assert plan.metadata["calibrated"]["flow_exponent"] == PHANTOM_FIT_FLOW_EXPONENT
    assert "calibrated" in plan.metadata["calibrated"]["note"] and "mechanism is unknown" in plan.metadata[
        "calibrated"]["note"]
    simple = resolve(build_plan("docsis", {"mode": "simple"}).shaped["cable"], None)
    assert simple.forward.policy is None and simple.reverse.policy is None
    assert (simple.forward.rate_bps, simple.reverse.rate_bps) == (3_000_000, 512_000)
    assert simple.forward.limit_pkts == 128  # the twin's buffer: 512 ms at 3 Mb/s


@pytest.mark.parametrize("value", ["off", False])  # YAML reads a bare `off` as false
def test_docsis_phantom_off_is_the_sourced_mechanisms_alone(value: object) -> None:
    plan = build_plan("docsis", {"phantom": value})
    policy = resolve(plan.shaped["cable"], None).forward.policy
    assert isinstance(policy, TokenBucketPolicy) and policy.phantom is None
    assert policy.max_delay_ms == 512 and policy.granularity_ms == 4 and "calibrated" not in plan.metadata \
        or plan.metadata.get("calibrated") is None
    with pytest.raises(TopologyError, match="topology_args.phantom"):
        build_plan("docsis", {"phantom": "maybe"})


@pytest.mark.parametrize("phantom, field", [
    ({"knee": 0}, "knee"), ({"knee": 1.5}, "knee"), ({"max_delay_ms": -1}, "max_delay_ms"),
    ({"max_delay_ms": float("nan")}, "max_delay_ms"), ({"max_delay_ms": float("inf")}, "max_delay_ms"),
    ({"window_ms": 0}, "window_ms"), ({"colour": 1}, "colour"), ({"knee": "half"}, "knee"),
])
def test_bad_phantom_parameters_name_the_field(phantom: dict, field: str) -> None:
    from fastlab.define.schema import SpecError, read_spec_text

    text = "name: x\ntopology: docsis\nduration_s: 5\nflows: [{src: server, dst: client, cc: fast}]\n"
    element = {"model": "calibrated_load_delay"} | phantom
    with pytest.raises(SpecError, match=rf"links.cable.policy.phantom.{field}"):
        read_spec_text(text, ["links.cable.policy=" + json.dumps({"model": "token_bucket", "phantom": element})])


@pytest.mark.parametrize("phantom, field, why", [
    ({"model": "calibrated_flow_delay", "flow_exponent": 1.1}, "flow_exponent", "multiple of 0.25"),
    ({"model": "calibrated_flow_delay", "flow_exponent": 4.25}, "flow_exponent", "less than or equal to 4"),
    ({"model": "calibrated_flow_delay", "flow_exponent": float("nan")}, "flow_exponent", ""),
    ({"model": "calibrated_flow_delay", "flow_exponent": -0.25}, "flow_exponent", "greater than or equal to 0"),
    ({"model": "calibrated_flow_delay", "flow_exponent": [2]}, "flow_exponent", ""),
    ({"model": "calibrated_load_delay", "flow_exponent": 2}, "flow_exponent", "has no flow term"),
    ({"model": "calibrated_delay"}, "model", ""),
])
def test_bad_flow_term_names_the_field(phantom: dict, field: str, why: str) -> None:
    """The element's flow exponent: quarters from 0 to 4 (linkemu's --XX-phantom-flow-exp-q), and none on the
    load-only element; each refusal names the field."""
    from fastlab.define.schema import SpecError, read_spec_text

    text = "name: x\ntopology: docsis\nduration_s: 5\nflows: [{src: server, dst: client, cc: fast}]\n"
    with pytest.raises(SpecError, match=rf"links.cable.policy.phantom.{field}.*{why}"):
        read_spec_text(text, ["links.cable.policy=" + json.dumps({"model": "token_bucket", "phantom": phantom})])


def test_load_only_element_keeps_its_command_line() -> None:
    """A spec (or a recording) naming the load-only element of 2026-11-27 runs that element: flow exponent 0
    and no flow option on linkemu's command line, so old recordings and bundles keep their physics."""
    from fastlab.define.schema import PhantomDelay
    from fastlab.plan.link_commands import policy_args

    policy = TokenBucketPolicy(model="token_bucket", phantom=PhantomDelay(model="calibrated_load_delay"))
    argv = policy_args("ab", policy)
    assert policy.phantom is not None and policy.phantom.flow_exponent == 0
    assert "--ab-phantom-max-delay-us" in argv and not any("flow-exp" in a for a in argv)
    flows = policy_args("ab", policy.model_copy(update={"phantom": PhantomDelay(model="calibrated_flow_delay",
                                                                                flow_exponent=1.5)}))
    assert flows[flows.index("--ab-phantom-flow-exp-q") + 1] == "6"


@pytest.mark.parametrize("sets", [["links.bottleneck.rate_mbps=1e-300"], ["topology_args.rate_mbps=1e-300"],
                                  ["links.bottleneck.reverse={rate_mbps: 1e-9}"]])
def test_a_near_zero_rate_is_refused_not_made_unlimited(sets: list[str]) -> None:
    """1e-300 Mb/s rounds to 0 b/s, which the emulator and tc read as an unlimited link: refused before
    the build, naming the link and direction (issue 37); the phantom element, which reads the load against
    the rate, never meets a link without one."""
    from fastlab.define.schema import SpecError, read_spec_text
    from fastlab.plan.prepare import prepare

    text = "name: x\ntopology: dumbbell\nduration_s: 5\nflows: [{src: h1, dst: h2, cc: cubic}]\n"
    with pytest.raises(SpecError, match=r"links.bottleneck: (forward|reverse) rate 0 b/s is below 1000 b/s"):
        prepare(read_spec_text(text, sets))


def test_idle_mac_latency_model() -> None:
    lo, hi = idle_mac_latency_ms(DocsisUpstreamPolicy(model="docsis_upstream"))
    # 0.45 + 1.6 ms rounds up to two 2 ms MAPs; 84 bytes at 2.56 Mb/s take 0.2625 ms
    assert (lo, hi) == pytest.approx((4.2625, 6.2625))


def test_unknown_topology_and_arguments() -> None:
    with pytest.raises(TopologyError, match="unknown topology"):
        build_plan("ring", {})
    with pytest.raises(TopologyError, match="topology_args.scale"):
        build_plan("sc2002", {"scale": 2})
    assert {row["name"] for row in catalogue()} == set(known()) >= BUILT_INS


def test_research_path_sender_links_carry_per_flow_loss_without_changing_the_path() -> None:
    shared = build_plan("ucl-slac", {"scale": 0.03})
    own = build_plan("ucl-slac", {"scale": 0.03, "sender_links": "own"})
    assert set(own.shaped) == {"bottleneck", "ucl-link", "ucl2-link"} and set(shared.shaped) == {"bottleneck"}
    link = own.shaped["ucl-link"]
    assert (link.a, link.b) == ("ucl", "s1")  # forward = the sender's data direction, where loss applies
    assert link.profile.delay_ms == 0 and link.profile.rate_mbps > 100 * shared.metadata["capacity_mbps"]
    for plan in (shared, own):
        fig = figures(plan, resolved(plan), "ucl", "slac")
        assert (fig.rtt_ms, fig.bottleneck_link) == (135, "bottleneck")
    assert "ucl2-link" not in own.pruned({"ucl", "slac"}).shaped
    with pytest.raises(TopologyError, match="sender_links"):
        build_plan("ucl-slac", {"sender_links": "mine"})
