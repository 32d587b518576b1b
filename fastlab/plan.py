"""The semantic checks of an experiment spec: does the topology exist with these arguments, are the
flows' hosts in it, are their algorithms usable with these parameters, do the link overrides, paths
and reroutes name what exists. spec.py is the schema alone (structure and ranges); this is the first
stage of the plan, which `engine.prepare` continues (backends, switch, CC parameters, buffers)."""

from __future__ import annotations

from fastlab.cc import CCError, Registry
from fastlab.spec import ExperimentSpec, SpecError
from fastlab.topology import TopologyError, TopologyPlan, build_plan


def validate(spec: ExperimentSpec, registry: Registry) -> TopologyPlan:
    """Semantic checks against the topology and the CC registry; returns the topology plan."""
    try:
        plan = build_plan(spec.topology, spec.topology_args)
    except TopologyError as exc:
        raise SpecError(str(exc)) from None
    hosts = plan.host_names()
    for i, flow in enumerate(spec.flows):
        for end in ("src", "dst"):
            name = getattr(flow, end)
            if name not in hosts:
                raise SpecError(f"flows[{i}].{end}: unknown host {name!r} in topology {spec.topology} "
                                f"(hosts: {', '.join(sorted(hosts))})")
        try:
            cc = registry.check_usable(flow.cc)
        except CCError as exc:
            raise SpecError(f"flows[{i}].cc: {exc}") from None
        try:
            cc.validate_args(flow.cc_args)
        except CCError as exc:
            raise SpecError(f"flows[{i}].cc_args: {exc}") from None
    _validate_paths(spec, plan)
    for link_id in spec.links:
        if link_id not in plan.shaped:
            raise SpecError(f"links.{link_id}: topology {spec.topology} has no shaped link {link_id!r} "
                            f"(shaped links: {', '.join(sorted(plan.shaped))})")
    return plan


def _validate_paths(spec: ExperimentSpec, plan: TopologyPlan) -> None:
    """Flow paths and reroutes name paths of the topology's OpenFlow core and flows that exist."""
    design = plan.metadata.get("openflow")
    paths = sorted(design["paths"]) if design else []
    where = [(f"flows[{i}].path", f.path) for i, f in enumerate(spec.flows) if f.path is not None]
    where += [(f"reroutes[{i}].path", r.path) for i, r in enumerate(spec.reroutes)]
    if (where or spec.controller) and not design:
        field_name = where[0][0] if where else "controller"
        hint = " (sc2002: set topology_args.core: switched)" if spec.topology == "sc2002" else ""
        raise SpecError(f"{field_name}: topology {spec.topology} has no OpenFlow core with paths{hint}")
    for field_name, path in where:
        if path not in paths:
            raise SpecError(f"{field_name}: unknown path {path!r} (paths: {', '.join(paths)})")
    flow_ids = {f"f{n}" for n in range(1, sum(f.count for f in spec.flows) + 1)}
    for i, reroute in enumerate(spec.reroutes):
        for flow_id in reroute.flows or []:
            if flow_id not in flow_ids:
                raise SpecError(f"reroutes[{i}].flows: no flow {flow_id} (flows: {', '.join(sorted(flow_ids))})")
