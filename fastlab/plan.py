"""The plan of an experiment: every "can this spec run here, and how" decision, made once, before
anything is built. spec.py is the schema alone (structure and ranges); here:

- `validate`: does the topology exist with these arguments, are the flows' hosts in it, are their
  algorithms usable with these parameters, do the link overrides, paths and reroutes name what exists;
- `prepare`: the decisions `environment.json` records as made: which hosts and links are built (no
  emulator for a link no flow crosses), each shaped link's backend, the switch, the CC build and
  per-host parameters, socket buffers, the fast path (offloads), upstream rates. It raises
  SpecError naming the field, and touches nothing; `engine.run_experiment` carries the plan out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastlab import routing
from fastlab.capabilities import Capabilities, probe
from fastlab.cc import CCError, Registry
from fastlab.ccruntime import HostParams, plan_parameters
from fastlab.ccset import default_registry
from fastlab.controller import app_available
from fastlab.network import SOCKBUF_MAX_BYTES, SOCKBUF_MIN_BYTES
from fastlab.shaping import ResolvedLink, choose_backend, resolve
from fastlab.spec import ExperimentSpec, SpecError, numbered_flows
from fastlab.topology import TopologyError, TopologyPlan, build_plan
from fastlab.traffic import Flow, expand_flows


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
    flow_ids = {flow_id for flow_id, _entry in numbered_flows(spec)}
    for i, reroute in enumerate(spec.reroutes):
        for flow_id in reroute.flows or []:
            if flow_id not in flow_ids:
                raise SpecError(f"reroutes[{i}].flows: no flow {flow_id} (flows: {', '.join(sorted(flow_ids))})")


@dataclass
class Prepared:
    spec: ExperimentSpec
    plan: TopologyPlan
    caps: Capabilities
    flows: list[Flow]
    links: dict[str, ResolvedLink]
    backends: dict[str, tuple[str, str]]
    switch: tuple[str, str]
    openflow_switch: tuple[str, str] | None  # OVS datapath of the OpenFlow core, when the topology has one
    sockbuf_bytes: int
    registry: Registry
    cc_hosts: list[HostParams]
    cc_globals: dict[str, dict[str, Any]]
    offloads: tuple[bool, str] = (False, "")  # the fast path, and why it is on or off
    unused_links: dict[str, str] = field(default_factory=dict)  # shaped links built plain, and why
    upstream: dict[tuple[str, bool], int] = field(default_factory=dict)  # routing.upstream_rates
    cc_impl: tuple[str, str] = ("bpf", "")  # build of fastlab's own algorithms, and why


def flow_routes(plan: TopologyPlan, spec: ExperimentSpec,
                data: bool | None = None) -> list[tuple[str, str, str | None]]:
    """(src, dst, path) of every way a flow's packets (data=True), its ACKs (data=False) or both
    may go, on any path of an OpenFlow core. A flow's route appears once per flow (repeats count)."""
    design = plan.metadata.get("openflow")
    paths: list[str | None] = sorted(design["paths"]) if design else [None]
    ends = [(f.src, f.dst) for f in spec.flows for _ in range(f.count)]
    pairs = (ends if data is not False else []) + ([(b, a) for a, b in ends] if data is not True else [])
    if data is None:
        pairs = list(dict.fromkeys(pairs))
    return [(a, b, path) for a, b in pairs for path in paths]


def crossed_links(plan: TopologyPlan, spec: ExperimentSpec) -> set[str]:
    """Shaped links some flow's packets or ACKs cross."""
    return {h.link.shaped for a, b, path in flow_routes(plan, spec)
            for h in routing.hops(plan, a, b, path) if h.link.shaped}


def fast_path_choice(spec: ExperimentSpec, backends: dict[str, tuple[str, str]], switch: str,
                     openflow_switch: str | None) -> tuple[bool, str]:
    """Offloads on (TSO/GSO super-frames end to end) only where every hop keeps per-segment semantics."""
    if spec.fast_path == "off":
        return False, "the spec asks for fast_path: off (one frame per MTU packet)"
    tc_links = sorted(k for k, (b, _) in backends.items() if b != "emulator")
    if tc_links:
        return False, f"links shaped by tc ({', '.join(tc_links)}) must see MTU frames: offloads off"
    if "ovs-user" in (switch, openflow_switch):
        return False, "the OVS userspace datapath needs offloads off"
    return True, ("every shaped link is emulated: TSO/GSO super-frames cross each hop whole; linkemu "
                  "decides loss, queue and rate per MTU segment and cuts a super-frame where needed")


# The idle pings before the flows (engine._idle_rtt): per path one warm-up ping and `idle_pings` more, each
# after a random gap of up to IDLE_PING_MAX_GAP_S, each a round trip. Their phase is bounded like the
# flows: a run may not spend more than this pinging (1,000 pings over a 4-s RTT would be over an hour).
IDLE_PING_MAX_GAP_S = 0.05
IDLE_PING_TIMEOUT_S = 5  # a ping's wait for its reply (ping -W)
# Pings a path may lose before the run stops on it: a path with 2 % loss each way loses 0.4 of 11 pings
# on average, more than 4 with probability ~1e-4; a broken path loses all of them.
IDLE_PINGS_LOST_MAX = 4
MAX_IDLE_PHASE_S = 600.0


def idle_phase_s(plan: TopologyPlan, links: dict[str, ResolvedLink], spec: ExperimentSpec) -> float:
    """The longest the idle pings can take with the queues empty, s: each path's pings, and the lost ones
    it may have, each waiting its timeout."""
    total = 0.0
    for src, dst in {(f.src, f.dst) for f in spec.flows}:
        rtt_s = routing.figures(plan, links, src, dst).rtt_ms / 1000
        total += (spec.idle_pings + 1) * (rtt_s + IDLE_PING_MAX_GAP_S) + IDLE_PINGS_LOST_MAX * IDLE_PING_TIMEOUT_S
    return total


def prepare(spec: ExperimentSpec, registry: Registry | None = None, caps: Capabilities | None = None) -> Prepared:
    """All checks that need no network: raises SpecError naming the field."""
    caps = caps or probe()
    cc_impl = caps.cc_impl_choice(spec.cc_impl)
    if cc_impl[0] == "unavailable" and spec.cc_impl != "auto":
        raise SpecError(f"cc_impl: {cc_impl[1]}")
    registry = registry or default_registry(cc_impl[0] if cc_impl[0] != "unavailable" else "bpf")
    # Hosts no flow uses carry nothing: they are not built (nor their access links).
    plan = validate(spec, registry).pruned({e for f in spec.flows for e in (f.src, f.dst)})
    # Links no flow crosses are built as plain links: no link node, no emulator process.
    unused = {link: "no flow crosses it" for link in sorted(set(plan.shaped) - crossed_links(plan, spec))}
    plan = plan.unshaped(set(unused))
    cc_hosts, cc_globals = plan_parameters(spec, registry)
    links = {}
    for link_id, shaped in plan.shaped.items():
        try:
            links[link_id] = resolve(shaped, spec.links.get(link_id), spec.mtu)
        except RuntimeError as exc:
            raise SpecError(str(exc)) from None
    # ... and so are links that can never hold a packet (routing.idle_links).
    data, acks = flow_routes(plan, spec, data=True), flow_routes(plan, spec, data=False)
    idle = routing.idle_links(plan, links, data, acks)
    plan = plan.unshaped(set(idle))
    links = {k: v for k, v in links.items() if k not in idle}
    unused |= idle
    backends = {}
    for link_id, link in links.items():
        try:
            backends[link_id] = choose_backend(link, caps.has("netem"), caps.has("linkemu"), caps.tc_aqms())
        except RuntimeError as exc:
            raise SpecError(str(exc)) from None
    for i, f in enumerate(spec.flows):
        if f.max_cwnd_pkts is not None and not caps.has("cwnd_clamp"):
            raise SpecError(f"flows[{i}].max_cwnd_pkts: cannot clamp windows here: "
                            f"{caps.probes['cwnd_clamp'].detail}")
    switch = caps.switch_choice(spec.switch)
    if switch[0] == "unavailable":
        raise SpecError(f"switch: {switch[1]}")
    openflow_switch = None
    if plan.metadata.get("openflow"):
        openflow_switch = caps.switch_choice("ovs")
        if openflow_switch[0] == "unavailable":
            raise SpecError(f"topology_args: the OpenFlow core needs Open vSwitch: {openflow_switch[1]}")
        ok, why = app_available() if spec.controller else (True, "")
        if not ok:
            raise SpecError(f"controller: {why}")
    # Socket buffers: 4 x (BDP + bottleneck buffer) of the longest flow path (the kernel's
    # accounting overhead takes about half of a buffer), capped at what the sysctl accepts.
    # Flows that may be rerouted are sized for the longest of their paths.
    path_bytes = 0.0
    detours = {r.path for r in spec.reroutes}
    for f in spec.flows:
        for path in {f.path, *detours} if plan.metadata.get("openflow") else {None}:
            fig = routing.figures(plan, links, f.src, f.dst, path)
            if fig.bottleneck_link is None or fig.bottleneck_mbps is None:
                continue
            queue = links[fig.bottleneck_link].forward
            path_bytes = max(path_bytes, fig.bottleneck_mbps * 1e6 / 8 * fig.rtt_ms / 1000
                             + (queue.limit_bytes or (queue.limit_pkts or 0) * queue.mtu_bytes))
    sockbuf = min(SOCKBUF_MAX_BYTES, max(SOCKBUF_MIN_BYTES, int(4 * path_bytes)))
    offloads = fast_path_choice(spec, backends, switch[0], openflow_switch[0] if openflow_switch else None)
    upstream = routing.upstream_rates(plan, links, flow_routes(plan, spec)) if offloads[0] else {}
    pings_s = idle_phase_s(plan, links, spec)
    if pings_s > MAX_IDLE_PHASE_S:
        raise SpecError(f"idle_pings: {spec.idle_pings} pings a path over these paths take up to {pings_s:.0f} s "
                        f"before the flows start, more than {MAX_IDLE_PHASE_S:g} s: ask for fewer")
    return Prepared(spec, plan, caps, expand_flows(spec, plan), links, backends, switch, openflow_switch, sockbuf,
                    registry, cc_hosts, cc_globals, offloads, unused, upstream, cc_impl)
