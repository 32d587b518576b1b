"""The plan of an experiment: every "can this spec run here, and how" decision, made once, before
anything is built. fastlab.define.schema is the schema alone (structure and ranges); here:

- `validate`: does the topology exist with these arguments, are the flows' hosts in it, are their
  algorithms usable with these parameters, do the link overrides, paths and reroutes name what exists;
- `layout`: the pure part, which needs no capability probe (theory, `explain`, the web form's checks
  read it): which hosts and links are built (no emulator for a link no flow crosses or that can never
  hold a packet), each link resolved, the flows numbered, every route their packets and ACKs may take
  (`trace`, the one place routes are found) and each flow's path figures and FAST target (`FlowPath`);
- `prepare`: the layout and the decisions that depend on the machine, which `environment.json` records
  as made: each shaped link's backend and why (`link_commands.choose_backend` is called here and nowhere
  else), the switch, the CC build and per-host parameters, socket buffers, the fast path (offloads),
  upstream rates. It raises SpecError naming the field, and touches nothing; `engine.run_experiment`
  carries the plan out, and the fidelity verdict and the cost prediction read it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from fastlab.base import rundir
from fastlab.define.cc import CCError, Registry
from fastlab.define.ccset import FAST_PARAMS, fast_target_ms
from fastlab.define.schema import ExperimentSpec, SpecError, numbered_flows
from fastlab.define.topology import TopologyError, TopologyPlan, build_plan
from fastlab.plan import routing
from fastlab.plan.capabilities import Capabilities, app_available, probe
from fastlab.plan.ccbuild import planned_registry
from fastlab.plan.flows import Flow, HostParams, expand_flows, plan_parameters
from fastlab.plan.link_commands import LinkPlanResult, Wire, choose_backend, plan_link, wiring
from fastlab.plan.links import ResolvedLink, resolve
from fastlab.plan.routing import Crossing, PathFigures


def validate(spec: ExperimentSpec, registry: Registry | None) -> TopologyPlan:
    """Semantic checks against the topology and the CC registry (none: the algorithms are not checked,
    as for the theory of a run made elsewhere); returns the topology plan."""
    try:
        plan = build_plan(spec.topology, spec.topology_args)
    except TopologyError as exc:
        raise SpecError(str(exc)) from None
    hosts = plan.host_names()
    for i, flow in enumerate(spec.flows):
        for end in ("src", "dst"):
            name = getattr(flow, end)
            if name not in hosts:
                raise SpecError(f"flows[{i}].{end}: unknown host {name!r} in topology {plan.name} "
                                f"(hosts: {', '.join(sorted(hosts))})")
        if registry is None:
            continue
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
            raise SpecError(f"links.{link_id}: topology {plan.name} has no shaped link {link_id!r} "
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
        raise SpecError(f"{field_name}: topology {plan.name} has no OpenFlow core with paths{hint}")
    for field_name, path in where:
        if path not in paths:
            raise SpecError(f"{field_name}: unknown path {path!r} (paths: {', '.join(paths)})")
    flow_ids = {flow_id for flow_id, _entry in numbered_flows(spec)}
    for i, reroute in enumerate(spec.reroutes):
        for flow_id in reroute.flows or []:
            if flow_id not in flow_ids:
                raise SpecError(f"reroutes[{i}].flows: no flow {flow_id} (flows: {', '.join(sorted(flow_ids))})")


RouteKey = tuple[str, str, str | None]  # (from host, to host, path of the OpenFlow core; None: no core)


@dataclass(frozen=True)
class Routes:
    """Every way packets may go between the flows' hosts, each way as the shaped link directions it
    crosses in order: both directions of each host pair, over every path of an OpenFlow core (a
    controller may move a flow to any). Found once, by `trace`; everything after reads them here."""

    default_path: str | None  # the OpenFlow core's default path (None: no core)
    ways: dict[RouteKey, tuple[Crossing, ...]]

    def of(self, src: str, dst: str, path: str | None = None) -> tuple[Crossing, ...]:
        """src -> dst over `path` (default: the core's default path)."""
        return self.ways[(src, dst, path or self.default_path)]

    def figures(self, links: dict[str, ResolvedLink], src: str, dst: str, path: str | None = None) -> PathFigures:
        """Base RTT, bottleneck and BDP of src -> dst over `path` (routing.figures on these routes)."""
        return routing.figures(links, src, dst, self.of(src, dst, path), self.of(dst, src, path))

    def keeping(self, links: Iterable[str]) -> Routes:
        """The same routes with only the crossings of `links` (the links still shaped)."""
        kept = set(links)
        return Routes(self.default_path, {key: tuple(c for c in way if c[0] in kept) for key, way in self.ways.items()})


def core_paths(plan: TopologyPlan) -> list[str | None]:
    """The paths of the topology's OpenFlow core ([None]: it has none, packets follow its routes)."""
    design = plan.metadata.get("openflow")
    return sorted(design["paths"]) if design else [None]


def trace(plan: TopologyPlan, ends: Iterable[tuple[str, str]]) -> Routes:
    """The routes between host pairs `ends`, both ways, over every path of an OpenFlow core: the one
    place the package follows routes (routing.hops)."""
    ways = {(a, b, path): routing.crossings(routing.hops(plan, a, b, path))
            for src, dst in dict.fromkeys(ends) for a, b in ((src, dst), (dst, src)) for path in core_paths(plan)}
    design = plan.metadata.get("openflow")
    return Routes(design["default_path"] if design else None, ways)


def flow_routes(plan: TopologyPlan, spec: ExperimentSpec, data: bool | None = None) -> list[RouteKey]:
    """(src, dst, path) of every way a flow's packets (data=True), its ACKs (data=False) or both
    may go, on any path of an OpenFlow core. A flow's route appears once per flow (repeats count)."""
    ends = [(f.src, f.dst) for f in spec.flows for _ in range(f.count)]
    pairs = (ends if data is not False else []) + ([(b, a) for a, b in ends] if data is not True else [])
    if data is None:
        pairs = list(dict.fromkeys(pairs))
    return [(a, b, path) for a, b in pairs for path in core_paths(plan)]


@dataclass(frozen=True)
class FlowPath:
    """One flow on its own path (`Flow.path`): the shaped link directions its data and its ACKs
    cross, the path's figures, and for FAST its alpha and the queueing delay alpha packets make at the
    bottleneck (the fidelity verdict's delay budget; the theory's equilibrium starts from it)."""

    flow: str
    data: tuple[Crossing, ...]
    acks: tuple[Crossing, ...]
    figures: PathFigures
    alpha: int | None = None  # FAST flows only
    target_queue_ms: float | None = None  # FAST with a bottleneck: alpha packets of the run's MTU queued


def flow_paths(flows: list[Flow], routes: Routes, links: dict[str, ResolvedLink], mtu: int) -> dict[str, FlowPath]:
    """Each flow's FlowPath, by flow id (pure)."""
    default_alpha = int(next(p.default for p in FAST_PARAMS if p.name == "alpha"))
    out = {}
    for f in flows:
        fig = routes.figures(links, f.src, f.dst, f.path)
        alpha = int(f.cc_args.get("alpha", default_alpha)) if f.cc == "fast" else None
        target = fast_target_ms(float(alpha), fig.bottleneck_mbps, mtu) if alpha is not None and \
            fig.bottleneck_mbps else None
        out[f.id] = FlowPath(f.id, routes.of(f.src, f.dst, f.path), routes.of(f.dst, f.src, f.path), fig, alpha,
                             target)
    return out


@dataclass
class Layout:
    """The pure part of a run's plan (`layout`): what is built and where every flow's packets go. The
    theory, `explain` and the web form read it without a capability probe; `Prepared` extends it."""

    spec: ExperimentSpec
    plan: TopologyPlan  # the hosts no flow uses pruned, the links no packet can queue on built plain
    flows: list[Flow]
    links: dict[str, ResolvedLink]  # the shaped links, resolved
    unused_links: dict[str, str]  # shaped links built plain, and why
    routes: Routes  # over the shaped links left
    paths: dict[str, FlowPath]  # by flow id
    idle_pings_s: float  # the longest the idle pings can take (idle_phase_s)


@dataclass
class Prepared(Layout):
    """The whole plan of a run: its layout and the decisions that depend on the machine."""

    caps: Capabilities
    registry: Registry
    backends: dict[str, tuple[str, str]]  # per shaped link: backend and why (choose_backend, here only)
    switch: tuple[str, str]
    openflow_switch: tuple[str, str] | None  # OVS datapath of the OpenFlow core, when the topology has one
    sockbuf_bytes: int
    cc_hosts: list[HostParams]
    cc_globals: dict[str, dict[str, Any]]
    offloads: tuple[bool, str] = (False, "")  # the fast path, and why it is on or off
    upstream: dict[Crossing, int] = field(default_factory=dict)  # routing.upstream_rates
    cc_impl: tuple[str, str] = ("bpf", "")  # build of fastlab's own algorithms, and why


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


SOCKBUF_MIN_BYTES = 8 * 1024 * 1024  # a host's socket buffer ceiling: 4 path BDPs, clamped to these
SOCKBUF_MAX_BYTES = 2**31 - 1  # the tcp_rmem/tcp_wmem sysctls take an int

# The idle pings before the flows (engine._idle_rtt): per path one warm-up ping and `idle_pings` more, each
# after a random gap of up to IDLE_PING_MAX_GAP_S, each a round trip. Their phase is bounded like the
# flows: a run may not spend more than this pinging (1,000 pings over a 4-s RTT would be over an hour).
IDLE_PING_MAX_GAP_S = 0.05
IDLE_PING_TIMEOUT_S = 5  # a ping's wait for its reply (ping -W)
# Pings a path may lose before the run stops on it: a path with 2 % loss each way loses 0.4 of 11 pings
# on average, more than 4 with probability ~1e-4; a broken path loses all of them.
IDLE_PINGS_LOST_MAX = 4
MAX_IDLE_PHASE_S = 600.0


# A run shorter than a few base RTTs of its longest path ends inside its flows' first round trips: TCP
# has not seen an ACK clock, a loss or a queue, and the run measures no congestion control at all (a run
# of 1e-300 s was called done and faithful, issue 47). Four RTTs: the handshake and the first rounds of
# slow start. The schema bounds it by the sample period too (fastlab.define.schema.MIN_SAMPLE_PERIODS).
MIN_RUN_RTTS = 4


def check_duration(spec: ExperimentSpec, routes: Routes, links: dict[str, ResolvedLink]) -> None:
    """SpecError naming duration_s when the run is shorter than MIN_RUN_RTTS base RTTs of its longest path."""
    rtt_ms = max(routes.figures(links, f.src, f.dst).rtt_ms for f in spec.flows)
    if spec.duration_s * 1000 < MIN_RUN_RTTS * rtt_ms:
        raise SpecError(f"duration_s: {spec.duration_s:g} s is shorter than {MIN_RUN_RTTS} base RTTs of the "
                        f"longest path ({rtt_ms:g} ms): at least {MIN_RUN_RTTS * rtt_ms / 1000:g} s")


def idle_phase_s(routes: Routes, links: dict[str, ResolvedLink], spec: ExperimentSpec) -> float:
    """The longest the idle pings can take with the queues empty, s: each path's pings, and the lost ones
    it may have, each waiting its timeout."""
    total = 0.0
    for src, dst in {(f.src, f.dst) for f in spec.flows}:
        rtt_s = routes.figures(links, src, dst).rtt_ms / 1000
        total += (spec.idle_pings + 1) * (rtt_s + IDLE_PING_MAX_GAP_S) + IDLE_PINGS_LOST_MAX * IDLE_PING_TIMEOUT_S
    return total


def _resolve(plan: TopologyPlan, spec: ExperimentSpec) -> dict[str, ResolvedLink]:
    links = {}
    for link_id, shaped in plan.shaped.items():
        try:
            links[link_id] = resolve(shaped, spec.links.get(link_id), spec.mtu)
        except RuntimeError as exc:
            raise SpecError(str(exc)) from None
    return links


def layout(spec: ExperimentSpec, registry: Registry | None = None) -> Layout:
    """The pure part of the plan (no probe, nothing touched): raises SpecError naming the field. With
    `registry` the flows' algorithms are checked usable here too (prepare); without, they are not (the
    theory of a run recorded on another machine)."""
    # Hosts no flow uses carry nothing: they are not built (nor their access links).
    plan = validate(spec, registry).pruned({e for f in spec.flows for e in (f.src, f.dst)})
    routes = trace(plan, [(f.src, f.dst) for f in spec.flows])
    # Links no flow crosses are built as plain links: no link node, no emulator process.
    crossed = {link_id for way in routes.ways.values() for link_id, _ in way}
    unused = {link: "no flow crosses it" for link in sorted(set(plan.shaped) - crossed)}
    plan = plan.unshaped(set(unused))
    links = _resolve(plan, spec)
    # ... and so are links that can never hold a packet (routing.idle_links).
    data, acks = ([routes.of(*key) for key in flow_routes(plan, spec, data=way)] for way in (True, False))
    idle = routing.idle_links(links, data, acks)
    plan = plan.unshaped(set(idle))
    links = {k: v for k, v in links.items() if k not in idle}
    routes = routes.keeping(links)
    check_duration(spec, routes, links)
    flows = expand_flows(spec, plan)
    return Layout(spec, plan, flows, links, unused | idle, routes, flow_paths(flows, routes, links, spec.mtu),
                  idle_phase_s(routes, links, spec))


def socket_buffer_bytes(lay: Layout) -> int:
    """Socket buffers: 4 x (BDP + bottleneck buffer) of the longest flow path (the kernel's accounting
    overhead takes about half of a buffer), capped at what the sysctl accepts. Flows that may be
    rerouted are sized for the longest of their paths."""
    path_bytes = 0.0
    detours = {r.path for r in lay.spec.reroutes}
    for f in lay.spec.flows:
        for path in {f.path, *detours} if lay.plan.metadata.get("openflow") else {None}:
            fig = lay.routes.figures(lay.links, f.src, f.dst, path)
            if fig.bottleneck_link is None or fig.bottleneck_mbps is None:
                continue
            queue = lay.links[fig.bottleneck_link].forward
            path_bytes = max(path_bytes, fig.bottleneck_mbps * 1e6 / 8 * fig.rtt_ms / 1000
                             + (queue.limit_bytes or (queue.limit_pkts or 0) * queue.mtu_bytes))
    return min(SOCKBUF_MAX_BYTES, max(SOCKBUF_MIN_BYTES, int(4 * path_bytes)))


def _switches(spec: ExperimentSpec, plan: TopologyPlan,
              caps: Capabilities) -> tuple[tuple[str, str], tuple[str, str] | None]:
    """The switch, and the OpenFlow core's datapath (with its controller checked) when there is one."""
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
    return switch, openflow_switch


def prepare(spec: ExperimentSpec, registry: Registry | None = None, caps: Capabilities | None = None) -> Prepared:
    """The whole plan: all checks that need no network; raises SpecError naming the field."""
    caps = caps or probe()
    cc_impl = caps.cc_impl_choice(spec.cc_impl)
    if cc_impl[0] == "unavailable" and spec.cc_impl != "auto":
        raise SpecError(f"cc_impl: {cc_impl[1]}")
    registry = registry or planned_registry(cc_impl[0] if cc_impl[0] != "unavailable" else "bpf")
    lay = layout(spec, registry)
    cc_hosts, cc_globals = plan_parameters(spec, registry)
    backends = {}
    for link_id, link in lay.links.items():
        try:
            backends[link_id] = choose_backend(link, caps.has("netem"), caps.has("linkemu"), caps.tc_aqms())
        except RuntimeError as exc:
            raise SpecError(str(exc)) from None
    for i, f in enumerate(spec.flows):
        if f.max_cwnd_pkts is not None and not caps.has("cwnd_clamp"):
            raise SpecError(f"flows[{i}].max_cwnd_pkts: cannot clamp windows here: "
                            f"{caps.probes['cwnd_clamp'].detail}")
    switch, openflow_switch = _switches(spec, lay.plan, caps)
    offloads = fast_path_choice(spec, backends, switch[0], openflow_switch[0] if openflow_switch else None)
    upstream = routing.upstream_rates(lay.links, [lay.routes.of(*key) for key in flow_routes(lay.plan, spec)]) \
        if offloads[0] else {}
    if lay.idle_pings_s > MAX_IDLE_PHASE_S:
        raise SpecError(f"idle_pings: {spec.idle_pings} pings a path over these paths take up to "
                        f"{lay.idle_pings_s:.0f} s before the flows start, more than {MAX_IDLE_PHASE_S:g} s: "
                        "ask for fewer")
    return Prepared(**{f.name: getattr(lay, f.name) for f in fields(Layout)}, caps=caps, registry=registry,
                    backends=backends, switch=switch, openflow_switch=openflow_switch,
                    sockbuf_bytes=socket_buffer_bytes(lay), cc_hosts=cc_hosts, cc_globals=cc_globals,
                    offloads=offloads, upstream=upstream, cc_impl=cc_impl)


@dataclass(frozen=True)
class RunPlan:
    """A prepared plan bound to one run (`for_run`): its prefix, its results folder, every link's interface
    names and each shaped link's tc commands or emulator command line (its drop log in that folder) -- all
    that the build stage carries out, made before anything is built."""

    prefix: str
    folder: Path
    wiring: tuple[Wire, ...]
    links: dict[str, LinkPlanResult]


def for_run(prep: Prepared, prefix: str, folder: Path) -> RunPlan:
    """The plan of one run of `prep` (pure): names from `prefix`, files in `folder` (fastlab.base.rundir's
    layout). Links running a mahimahi trace must already name the copy in `folder` (the engine copies them
    first, so what ran is what the folder keeps)."""
    spec = prep.spec
    wires = tuple(wiring(prep.plan, prefix))
    by_link = {link.shaped: wire.devices for link, wire in zip(prep.plan.links, wires, strict=True)
               if link.shaped and wire.devices is not None}
    links = {link_id: plan_link(link, by_link[link_id], decided=prep.backends[link_id], seed=spec.seed,
                                stats_interval_ms=max(1, int(1000 / spec.sample_hz)),
                                drops_log=str(folder / rundir.drops_log_name(link_id)), gso=prep.offloads[0],
                                upstream_bps=(prep.upstream.get((link_id, True), 0),
                                              prep.upstream.get((link_id, False), 0)))
             for link_id, link in prep.links.items()}
    return RunPlan(prefix, folder, wires, links)
