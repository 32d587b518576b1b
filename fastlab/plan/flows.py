"""A run's flows and congestion-control arguments, planned (pure): each flow's id, ports, addresses and
path through an OpenFlow core (`Flow`), and the per-host and per-run arguments of fastlab's congestion
controls with the conflicts refused before anything is built (`HostParams`, `plan_parameters`). The run
stage carries them out (fastlab.run.traffic, fastlab.run.ccruntime)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastlab.define.cc import CCError, Registry
from fastlab.define.ccset import GLOBAL_ONLY
from fastlab.define.schema import ExperimentSpec, SpecError, numbered_flows
from fastlab.define.topology import TopologyPlan

BASE_PORT = 5001  # flow n's receiver listens on BASE_PORT + n


@dataclass(frozen=True)
class Flow:
    id: str
    src: str
    dst: str
    cc: str
    cc_args: dict[str, Any]
    start_s: float
    stop_s: float
    port: int
    dst_ip: str
    src_ip: str
    path: str | None = None  # path through the topology's OpenFlow core, when it has one
    max_cwnd_pkts: int | None = None  # ceiling on the window (fastlab.run.cwndclamp), None: the CC's own


def expand_flows(spec: ExperimentSpec, plan: TopologyPlan) -> list[Flow]:
    design = plan.metadata.get("openflow")
    return [Flow(flow_id, entry.src, entry.dst, entry.cc, dict(entry.cc_args), entry.start_s,
                 entry.stop_s if entry.stop_s is not None else spec.duration_s,
                 BASE_PORT + n, plan.address_of(entry.dst), plan.address_of(entry.src),
                 entry.path or (design["default_path"] if design else None), entry.max_cwnd_pkts)
            for n, (flow_id, entry) in enumerate(numbered_flows(spec))]


@dataclass(frozen=True)
class HostParams:
    host: str
    cc: str
    args: dict[str, Any]


def plan_parameters(spec: ExperimentSpec, registry: Registry) -> tuple[list[HostParams], dict[str, dict[str, Any]]]:
    """Per-(host, CC) arguments and per-CC global arguments; conflicting flows are refused."""
    per_host: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
    global_args: dict[str, tuple[int, dict[str, Any]]] = {}
    for i, flow in enumerate(spec.flows):
        cc = registry.lookup(flow.cc)
        if cc.origin != "fastlab":
            continue
        args = cc.validate_args(flow.cc_args)
        everything_global = cc.build.impl == "module"  # module parameters: one value per kernel
        glob = {k: v for k, v in args.items() if everything_global or k in GLOBAL_ONLY[cc.name]}
        local = {k: v for k, v in args.items() if k not in glob}
        key = (flow.src, flow.cc)
        if key in per_host and per_host[key][1] != local:
            raise SpecError(f"flows[{i}].cc_args: {flow.src} already runs {flow.cc} with {per_host[key][1]} "
                            f"(flows[{per_host[key][0]}]); flows from one host share its parameters")
        per_host.setdefault(key, (i, local))
        if everything_global and flow.cc in global_args and global_args[flow.cc][1] != glob:
            raise SpecError(f"flows[{i}].cc_args: the module build of {flow.cc} has global parameters only, "
                            f"and flows[{global_args[flow.cc][0]}] asks for {global_args[flow.cc][1]} "
                            f"(cc_impl: bpf sets them per host)")
        if glob and flow.cc in global_args and global_args[flow.cc][1] != glob:
            raise SpecError(f"flows[{i}].cc_args: {', '.join(glob)} of {flow.cc} are global for the run and "
                            f"differ from flows[{global_args[flow.cc][0]}]")
        if glob or everything_global:
            global_args.setdefault(flow.cc, (i, glob))
    for i, change in enumerate(spec.cc_changes):
        try:
            cc = registry.lookup(change.cc)
        except CCError as exc:
            raise SpecError(f"cc_changes[{i}].cc: {exc}") from None
        if cc.origin != "fastlab":
            raise SpecError(f"cc_changes[{i}].cc: {change.cc} has no run-time parameters")
        if (change.host, change.cc) not in per_host:
            raise SpecError(f"cc_changes[{i}].host: no flow from {change.host} uses {change.cc}")
        try:
            args = cc.validate_args(change.args)
        except CCError as exc:
            raise SpecError(f"cc_changes[{i}].args: {exc}") from None
        if set(args) & GLOBAL_ONLY[cc.name]:
            raise SpecError(f"cc_changes[{i}].args: {', '.join(set(args) & GLOBAL_ONLY[cc.name])} "
                            f"cannot change mid-run (global table)")
        sharing = sorted({host for host, name in per_host if name == change.cc})
        if cc.build.impl == "module" and len(sharing) > 1:
            raise SpecError(f"cc_changes[{i}].host: the module build's parameters are global and "
                            f"{', '.join(sharing)} all run {change.cc} (cc_impl: bpf changes one host)")
        if change.at_s >= spec.duration_s:
            raise SpecError(f"cc_changes[{i}].at_s: after the run ends ({spec.duration_s:g} s)")
    hosts = [HostParams(host, cc, args) for (host, cc), (_i, args) in per_host.items()]
    return hosts, {cc: args for cc, (_i, args) in global_args.items()}
