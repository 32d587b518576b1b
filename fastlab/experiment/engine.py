"""The experiment engine: spec -> network -> shaped links -> flows -> traces -> results.

`fastlab.plan.prepare.prepare` does everything that can fail without touching the machine (validation,
backend choices, routes, parameters) and `for_run` binds it to a run prefix and results folder (interface
names, each link's commands); `run_experiment` then builds what that plan says, runs, tears down exactly
what it made, and writes the run directory: spec.yaml, environment.json, flows.csv, links.csv, summary.json,
report.html (and rtt_samples.csv when flows are clamped: the RTT sample of every ACK as per-second statistics).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import platform
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from fastlab.base import paths, rundir
from fastlab.base.record import Environment, FlowDelay, IdleRtt, Summary, Verdict
from fastlab.base.rundir import RunFolder, RunFolderError, expected_bytes
from fastlab.define import linktrace
from fastlab.define.cc import Registry
from fastlab.define.schema import ExperimentSpec, TopologyFile, to_plain
from fastlab.experiment import machine
from fastlab.measure import accounting, analysis, fidelity
from fastlab.measure.verdict import RunAccounts, account_run, assess_run, hop_flows_of, note_neighbours
from fastlab.net.network import Network
from fastlab.net.runstate import Neighbours, RunState, new_prefix
from fastlab.net.shaping import Shaper
from fastlab.plan.capabilities import Capabilities, probe
from fastlab.plan.flows import Flow
from fastlab.plan.links import mean_rate_bps
from fastlab.plan.prepare import (
    IDLE_PING_MAX_GAP_S,
    IDLE_PING_TIMEOUT_S,
    IDLE_PINGS_LOST_MAX,
    Prepared,
    RunPlan,
    for_run,
    prepare,
)
from fastlab.results import chart_lines, report
from fastlab.run import ccload
from fastlab.run.ccruntime import CCRuntime, LiveControl
from fastlab.run.controller import OpenFlowControl
from fastlab.run.cwndclamp import RTT_COLUMNS, ClampError, CwndClamp
from fastlab.run.tracing import SampleBus
from fastlab.run.traffic import Traffic
from fastlab.theory import explain, segments
from fastlab.theory import fast as fast_theory

log = logging.getLogger(__name__)  # progress at INFO: the CLI prints it, the web app streams it

SENDER_GRACE_S = 10.0
PROGRESS_EVERY_S = 10.0  # runs longer than this report elapsed / total time at this period
# An emulator writes stats every sample interval: waiting up to three for one written after the idle
# pings returned leaves room for a late line on a busy machine, and costs a run 0.15 s at 20 Hz.
IDLE_STATS_WAIT_INTERVALS = 3
PROC_STAT = Path("/proc/stat")  # machine CPU around the flows, for the fidelity verdict


class RunError(RuntimeError):
    """The run failed after it started; what it created has been removed."""


@dataclass
class RunResult:
    """A finished run: its results folder (`fastlab.load(result.directory)` reads it), its summary and
    its environment (what ran, with which backends and why)."""

    directory: Path
    summary: Summary
    environment: Environment = field(default_factory=Environment)


def parse_ping(out: str) -> dict[str, float] | None:
    """ping's summary line (µs resolution, unlike its per-packet lines above 100 ms)."""
    m = re.search(r"= ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+) ms", out)
    return None if m is None else dict(zip(("min_ms", "mean_ms", "max_ms", "mdev_ms"), map(float, m.groups()),
                                           strict=True))


PING_NO_REPLY_OK = (0, 1)  # ping exits 1 when no reply came (a lost ping), 2 on any other error


def _idle_rtt(net: Network, flow: Flow, count: int, rng: random.Random,
              check: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """Ping across the empty network: connectivity check and the base RTT actually emulated.

    One ping per process, parsed from its µs-resolution summary, with random gaps so the
    probes do not lock onto a periodic schedule (a MAC's MAP grid) and sample its phases.
    """
    argv = ["ping", "-n", "-c", "1", "-W", str(IDLE_PING_TIMEOUT_S), flow.dst_ip]
    lost = 0

    def ping() -> dict[str, float] | None:
        """One ping's RTT, or None when it was lost: a path with seeded or random loss drops pings too,
        which is the path's physics, not a broken path (ping exits 1 on no reply)."""
        nonlocal lost
        stats = parse_ping(net.run(flow.src, argv, timeout=30, record=False, ok_codes=PING_NO_REPLY_OK))
        if stats is None:
            lost += 1
            if lost > IDLE_PINGS_LOST_MAX:
                raise RunError(f"{flow.src} cannot reach {flow.dst} ({flow.dst_ip}): {lost} idle pings lost, "
                               f"more than a lossy path explains ({IDLE_PINGS_LOST_MAX} allowed)")
        return stats

    while ping() is None:  # the warm-up also resolves ARP along the path
        check()
    samples: list[float] = []
    while len(samples) < count:
        check()  # a cancel stops the pings within one of them, not after the path's last
        time.sleep(rng.uniform(0.0, IDLE_PING_MAX_GAP_S))
        stats = ping()
        if stats is not None:
            samples.append(stats["min_ms"])
    ordered = sorted(samples)
    return {"src": flow.src, "dst": flow.dst, "pings": count, "min_ms": ordered[0],
            "median_ms": ordered[len(ordered) // 2], "mean_ms": round(sum(samples) / count, 3),
            "max_ms": ordered[-1], "samples_ms": samples, "lost": lost}


class Teardown(contextlib.ExitStack):
    """The run's teardown, `with Teardown() as teardown:` around everything that builds or starts a
    part: each part's stop is registered with `teardown.stop(...)` and they run in reverse order of
    registration however the run ends (cancelled, failed or done). Every stop gets its turn even when
    one fails; the first failure is then raised as a RunError (a run state that still lists a
    registered algorithm is kept for `fastlab cleanup`)."""

    def __init__(self) -> None:
        super().__init__()
        self.failures: list[Exception] = []
        self.callback(self._raise_first)  # registered first: runs last

    def stop(self, fn: Callable[[], Any]) -> None:
        def guarded() -> None:
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 - every teardown step must get its turn
                self.failures.append(exc)

        self.callback(guarded)

    def _raise_first(self) -> None:
        if self.failures:
            raise RunError(f"teardown: {self.failures[0]}") from self.failures[0]


@dataclass
class _Run:
    """A run's parts, made before anything is built (each registers its stop with the teardown), and
    what the phases measure on the way: the state the phases below share."""

    spec: ExperimentSpec
    prep: Prepared
    run_plan: RunPlan  # prefix, names, commands and emulator arguments (plan.prepare.for_run)
    folder: RunFolder
    state: RunState
    bus: SampleBus
    net: Network
    control: OpenFlowControl | None
    shaper: Shaper
    traffic: Traffic
    clamp: CwndClamp
    ccs: CCRuntime
    cancel: threading.Event | None = None
    live: LiveControl | None = None
    started: str = ""
    idle: list[dict[str, Any]] = field(default_factory=list)  # idle RTTs per host pair
    idle_stats: dict[str, dict[str, Any]] = field(default_factory=dict)  # the emulators' on the idle pings
    cpu: dict[str, Any] = field(default_factory=dict)  # machine and emulator CPU at the start and end of the flows
    rtt_samples: list[dict[str, object]] = field(default_factory=list)  # clamped flows' per-second RTTs
    admission: dict[str, Any] | None = None  # the queue's decision that started it (fastlab.experiment.cost), if any
    neighbours: Neighbours | None = None  # other runs seen while the flows ran

    @property
    def prefix(self) -> str:
        return self.run_plan.prefix

    def neighbours_seen(self) -> list[dict[str, Any]]:
        return list(self.neighbours.seen.values()) if self.neighbours is not None else []

    def stop_if_cancelled(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise RunError("cancelled")

    def stops(self) -> list[Callable[[], Any]]:
        """Each part's stop, in the order they are registered (so run in reverse): the run state last,
        after every process and the network."""
        state = self.state
        return [lambda: None if state.cc_loaded else state.release(), self.bus.close, self.net.stop,
                self.shaper.stop, self.ccs.stop, *([self.control.stop] if self.control else []),
                self.clamp.stop, self.traffic.stop, *([self.live.unbind] if self.live is not None else [])]


def _open_folder(spec: ExperimentSpec, prep: Prepared, prefix: str, out: Path | None) -> RunFolder:
    """The run's results folder (fastlab.base.rundir names, checks and creates it): before anything else exists,
    so a run whose results would not fit stops with no network, no folder and no state."""
    try:
        return RunFolder.open(spec.name, prefix, out,
                              expected_bytes(spec.sample_hz, spec.duration_s, len(prep.flows), len(prep.links)))
    except RunFolderError as exc:
        raise RunError(str(exc)) from None


def _copy_traces(prep: Prepared, folder: RunFolder) -> dict[tuple[str, str], str]:
    """Each mahimahi trace a link runs, copied into the run folder, and the link set to run the copy (what
    ran is what the folder holds); the copy must be the file the plan checked. (link, direction) -> the
    copy's name."""
    copies = {}
    for link_id, link in prep.links.items():
        for name in ("forward", "reverse"):
            d = getattr(link, name)
            if d.trace is None:
                continue
            try:
                copy = folder.copy_in(Path(d.trace.path), rundir.trace_name(link_id, name))
            except RunFolderError as exc:
                raise RunError(str(exc)) from None
            if linktrace.digest(copy) != d.trace.sha256:
                raise RunError(f"links.{link_id}{'' if name == 'forward' else '.reverse'}.trace: {d.trace.path} "
                               "changed since it was checked")
            link = replace(link, **{name: replace(d, trace=replace(d.trace, path=str(copy)))})
            copies[(link_id, name)] = copy.name
        prep.links[link_id] = link
    return copies


def _copy_topology(spec: ExperimentSpec, folder: RunFolder) -> str | None:
    """A topology file the spec names, copied into the run folder (what ran is what the folder holds, and
    a bundle carries it); the copy's name, or None for a named topology."""
    if not isinstance(spec.topology, TopologyFile):
        return None
    try:
        return folder.copy_in(Path(spec.topology.file).expanduser().resolve(), rundir.TOPOLOGY_COPY).name
    except RunFolderError as exc:
        raise RunError(str(exc)) from None


def _spec_yaml(spec: ExperimentSpec, copies: dict[tuple[str, str], str], topology: str | None = None) -> str:
    """spec.yaml: the spec as run, its traces and topology file named by their copies beside it."""
    data = to_plain(spec)
    if topology is not None:
        data["topology"] = {"file": topology}
    for (link_id, name), copy in copies.items():
        node = data.get("links", {}).get(link_id, {})
        node = node.get("reverse", {}) if name == "reverse" else node
        if "trace" in node:
            node["trace"] = copy
    return yaml.safe_dump(data, sort_keys=False)


def _parts(spec: ExperimentSpec, prep: Prepared, run_plan: RunPlan, folder: RunFolder,
           on_sample: Callable[[dict[str, Any]], None] | None, cancel: threading.Event | None,
           live: LiveControl | None) -> _Run:
    """Every part of the run, made (nothing built or started yet)."""
    prefix = run_plan.prefix
    state = RunState(prefix, results_dir=str(folder.directory))
    state.save()
    bus = SampleBus(time.monotonic(), recorded_only=frozenset({"hop_flow"}))  # the run folder's, not the page's
    if on_sample:
        bus.subscribe(on_sample)
    net = Network(prep.plan, prefix, run_plan.wiring, prep.switch[0], state,
                  openflow_kind=prep.openflow_switch[0] if prep.openflow_switch else "ovs-user",
                  offloads=prep.offloads[0], mtu=spec.mtu)
    design = prep.plan.metadata.get("openflow")
    control = OpenFlowControl(net, design, prep.flows, spec.controller, bus.emit,
                              folder.directory / "controller.log") if design else None
    return _Run(spec, prep, run_plan, folder, state, bus, net, control,
                shaper=Shaper(net, lambda s: bus.emit("link", s), spec.emulator.mode, spec.emulator.processes,
                              lambda s: bus.emit("hop_flow", s)),
                traffic=Traffic(net, prep.flows, bus.emit, 1.0 / spec.sample_hz),
                clamp=CwndClamp(state, {f.port: f.max_cwnd_pkts for f in prep.flows if f.max_cwnd_pkts}),
                ccs=CCRuntime(prep.registry, state, bus.emit, prep.cc_hosts, prep.cc_globals),
                cancel=cancel, live=live, started=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))


def _build(run: _Run) -> None:
    """Build phase: algorithms loaded, network built, links shaped, controller up, hosts set, CC events read."""
    spec, prep, net = run.spec, run.prep, run.net
    run.ccs.load()
    run.stop_if_cancelled()
    log.info("run %s: building %s on Mininet (%s switches)", run.prefix, prep.plan.name, prep.switch[0])
    net.build(prep.sockbuf_bytes)
    for link_plan in run.run_plan.links.values():
        run.shaper.apply(link_plan, 1.0 / spec.sample_hz)
    run.shaper.start_shared()  # emulator.mode shared: one linkemu for every emulated link, started now
    run.stop_if_cancelled()
    if run.control is not None:
        run.control.start()
    run.state.hosts = {name: net.node(name).pid for name in prep.plan.host_names()}
    run.state.save()
    run.ccs.configure(run.state.hosts)
    run.ccs.start_events(prep.flows, run.state.hosts)


def _idle_phase(run: _Run) -> None:
    """Idle pings per host pair, then the emulators' lateness on them (cumulative counters as of now),
    before any flow's."""
    log.info("run %s: network built; idle RTTs (%d pings a host pair)", run.prefix, run.spec.idle_pings)
    for flow in {(f.src, f.dst): f for f in run.prep.flows}.values():
        run.idle.append(_idle_rtt(run.net, flow, run.spec.idle_pings, random.Random(run.spec.seed),
                                  run.stop_if_cancelled))
        run.stop_if_cancelled()
    run.idle_stats.update(run.shaper.fresh_stats(IDLE_STATS_WAIT_INTERVALS / run.spec.sample_hz))


def _flows_phase(run: _Run) -> None:
    """The flows for the spec's duration: clamps, time zero, senders, scheduled changes, live control
    and reroutes; progress every PROGRESS_EVERY_S; the machine's CPU around it; the clamped flows' RTTs."""
    spec, bus, traffic, control = run.spec, run.bus, run.traffic, run.control
    try:
        run.clamp.start()
    except ClampError as exc:
        raise RunError(str(exc)) from None
    traffic.cgroup = run.clamp.cgroup
    started = time.monotonic()
    try:
        traffic.prepare()  # every receiver listening and every sender ready before time zero
    except RuntimeError as exc:
        raise RunError(str(exc)) from None
    log.info("run %s: %d flow(s) for %g s (their %d tools started in %.1f s)", run.prefix, len(run.prep.flows),
             spec.duration_s, 2 * len(run.prep.flows), time.monotonic() - started)
    run.cpu["start"] = (PROC_STAT.read_text(), run.shaper.cpu_seconds(), time.monotonic())
    t0 = time.monotonic()
    run.shaper.start_epoch(t0)  # schedules and traces count from here, the charts' time zero
    bus.start(t0)
    run.neighbours = neighbours = Neighbours(run.prefix)
    neighbours.look(0.0, force=True)
    traffic.go(bus.t0)
    run.ccs.schedule(spec, bus.t0, run.state.hosts)
    if run.live is not None:
        run.live.bind(run.ccs, run.state.hosts, bus.t0)
    if control is not None:
        control.schedule(spec.reroutes, bus.t0)
    end = bus.t0 + spec.duration_s
    next_progress = bus.t0 + PROGRESS_EVERY_S
    run.cpu["steal"] = []
    while time.monotonic() < end:
        neighbours.look(time.monotonic() - bus.t0)
        # the hypervisor's steal over time: the verdict says the machine's share of a disturbance
        run.cpu["steal"].append((time.monotonic() - bus.t0, *fidelity.steal_times(PROC_STAT.read_text())))
        if traffic.errors or (control is not None and control.errors):
            raise RunError("; ".join(traffic.errors + (control.errors if control else [])))
        run.stop_if_cancelled()
        if spec.duration_s > PROGRESS_EVERY_S and time.monotonic() >= next_progress:
            elapsed = time.monotonic() - bus.t0
            log.info("run %s: %.0f / %g s (%.0f%%)", run.prefix, elapsed, spec.duration_s,
                     100 * elapsed / spec.duration_s)
            next_progress += PROGRESS_EVERY_S
        time.sleep(min(0.2, max(0.0, end - time.monotonic())))
    run.cpu["end"] = (PROC_STAT.read_text(), run.shaper.cpu_seconds(), time.monotonic())
    neighbours.look(time.monotonic() - bus.t0, force=True)
    traffic.wait(SENDER_GRACE_S)
    if traffic.errors:
        raise RunError("; ".join(traffic.errors))
    try:
        run.rtt_samples = run.clamp.rtt_samples(bus.t0, {f.port: f.id for f in run.prep.flows})
    except ClampError as exc:
        raise RunError(str(exc)) from None


def _summary(run: _Run, flows_df: Any, links_df: Any, accounted: RunAccounts) -> Summary:
    """Collect phase: summary.json from the traces, the idle RTTs, the delay accounting per flow, the fidelity
    verdict, the parts of a run whose parameters changed (scheduled or live: measured and judged per part)
    and the note."""
    spec, prep = run.spec, run.prep
    infos = [analysis.FlowInfo(f.id, f.src, f.dst, f.cc, f.start_s, f.stop_s) for f in prep.flows]
    # a schedule's capacity: its rate in force averaged over the flows' active window (analysis.summarize's)
    active = (min(f.start_s for f in prep.flows), max(f.stop_s for f in prep.flows))
    capacities = {k: round(mean_rate_bps(link.forward, *active) / 1e6, 6) for k, link in prep.links.items()}
    summary = analysis.summarize(infos, flows_df, run.traffic.finished, links_df, capacities)
    accounts, routes = accounted.accounts, accounted.routes
    for flow in summary.flows:  # where each flow's round trip went (fastlab.measure.accounting)
        if flow.id in accounts and flow.id in routes:
            flow.delay_accounting = FlowDelay.model_validate(
                accounting.flow_figures(routes[flow.id], accounts[flow.id], flow.min_rtt_ms))
            for name, value in analysis.one_way_percentiles(accounts[flow.id]).items():
                setattr(flow, name, value)
    summary.idle_rtt = [IdleRtt.model_validate(p) for p in run.idle]
    summary.fidelity = Verdict.model_validate(note_neighbours(assess_run(
        prep, run.shaper.final, run.cpu, flows_df, links_df, run.idle_stats, accounted),
        run.neighbours_seen()))
    changes = segments.changes_of(run.ccs.applied)
    if changes:
        summary.segments = segments.measured(spec, changes, flows_df, links_df, capacities)
    summary.what_happened = explain.what_happened(spec, summary, changes,  # the note of the results page
                                                  fast_theory.plan_references(prep))
    return summary


def _environment(run: _Run) -> Environment:
    """environment.json: where and how the run ran (the plan's decisions, what was applied, the tools)."""
    prep = run.prep
    environment = {
        "run": {"name": run.spec.name, "prefix": run.prefix, "started": run.started, "host": platform.node()},
        "kernel": platform.release(),
        "capabilities": prep.caps.as_dict()["probes"],
        "backends": {job: {"backend": b, "why": w} for job, (b, w) in prep.caps.backends().items()}
        | {"switch": {"backend": prep.switch[0], "why": prep.switch[1]},
           "congestion control": dict(zip(("backend", "why"), Capabilities.cc_backend(prep.cc_impl), strict=True)),
           "fast path": {"backend": "on" if prep.offloads[0] else "off", "why": prep.offloads[1]}},
        "links_not_emulated": {link: f"{why}: built as a plain link" for link, why in prep.unused_links.items()},
        "shaping": run.shaper.applied,
        "network_commands": run.net.applied,
        "socket_buffer_max_bytes": prep.sockbuf_bytes,
        "sysctls": machine.read_sysctls(),
        "tools": dict(machine.tool_versions()),
        "flows": {f.id: {"cc": f.cc, "cc_args": f.cc_args, "port": f.port, "path": f.path}
                  | ({"max_cwnd_pkts": f.max_cwnd_pkts} if f.max_cwnd_pkts else {}) for f in prep.flows},
        **({"cwnd_clamp": run.clamp.attached} if run.clamp.attached else {}),
        "congestion_control": {"applied": run.ccs.applied, "builds": machine.cc_build_hashes(run.ccs.ours())},
    }
    if run.control is not None:
        environment["openflow"] = run.control.applied
    environment["concurrency"] = {"neighbours": run.neighbours_seen(), "admission": run.admission}
    return Environment.model_validate(environment)


def prepare_run(spec: ExperimentSpec, registry: Registry | None = None, caps: Capabilities | None = None) -> Prepared:
    """`prepare` with the algorithms' loaders bound (fastlab.run.ccload, in the build the spec's cc_impl
    picks here), so every check a run makes before building its network is made: the plan's own checks
    and those only fastlab-cc can make (HSTCP's table). What `fastlab run --check`, labs and sweeps check
    specs with; raises SpecError naming the field."""
    caps = caps or probe()
    if registry is None:
        impl = caps.cc_impl_choice(spec.cc_impl)[0]
        registry = ccload.default_registry(impl if impl != "unavailable" else "bpf")
    return prepare(spec, registry, caps)


def run_experiment(spec: ExperimentSpec, *, out: Path | None = None, registry: Registry | None = None,
                   caps: Capabilities | None = None, on_sample: Callable[[dict[str, Any]], None] | None = None,
                   cancel: threading.Event | None = None, live: LiveControl | None = None,
                   admission: dict[str, Any] | None = None, scripts: Path | None = None) -> RunResult:
    """Run a spec; setting `cancel` stops it early (RunError "cancelled") after a full cleanup;
    `live` is bound while the flows run, so a front end can change CC parameters then; `admission`
    is the queue's decision that started it beside other runs (fastlab.experiment.cost), kept in environment.json.
    `scripts` is the folder above `out` that keeps report.html's plotly.js once for all its runs (a results
    folder, a sweep's folder); by default the results folder when `out` is not given, else the run's own.

    The phases: prepare (nothing touched) -> the results folder -> build -> idle pings -> flows ->
    teardown (whatever happened) -> collect -> write. Stopping is cooperative (checked between phases
    and every 0.2 s while flows run) so that no step, such as registering an algorithm and recording
    it, is cut in half."""
    prep = prepare_run(spec, registry, caps)
    prefix = new_prefix()
    folder = _open_folder(spec, prep, prefix, out)
    copies = _copy_traces(prep, folder)
    topology_copy = _copy_topology(spec, folder)
    run = replace(_parts(spec, prep, for_run(prep, prefix, folder.directory), folder, on_sample, cancel, live),
                  admission=admission)
    with Teardown() as teardown:
        for stop in run.stops():
            teardown.stop(stop)
        _build(run)
        _idle_phase(run)
        _flows_phase(run)
        flows_ended = time.monotonic()
    written_from = time.monotonic()
    log.info("run %s: network and processes removed in %.1f s", prefix, written_from - flows_ended)
    flows_df, links_df, events_df = (run.bus.frame("flow"), analysis.add_rates(run.bus.frame("link")),
                                     run.bus.frame("event"))
    hop_flows = hop_flows_of(run.prep, run.bus.frame("hop_flow"))
    accounted = account_run(run.prep, flows_df, links_df, hop_flows, events_df)
    flows_df = accounting.with_columns(flows_df, accounted.accounts)  # flows.csv carries each sample's accounting
    summary = _summary(run, flows_df, links_df, accounted)
    environment = _environment(run)
    spec_yaml = _spec_yaml(spec, copies, topology_copy)
    # the report's theory lines: the live page's (per part of a run whose parameters changed)
    refs = chart_lines.references(spec, summary, segments.applied_changes(environment))  # RED's lines too
    try:
        folder.finish(lambda: report.render(spec_yaml, summary, environment, flows_df, links_df, events_df,
                                            refs, spec.duration_s),
                      spec_yaml=spec_yaml, environment=environment, summary=summary, flows=flows_df,
                      links=links_df, events=events_df, rtt_samples=run.rtt_samples, rtt_columns=RTT_COLUMNS,
                      hop_flows=hop_flows)
        report.keep_plotly(folder.directory, scripts or (paths.results_root() if out is None else None))
    except RunFolderError as exc:
        raise RunError(str(exc)) from None
    except OSError as exc:
        raise RunError(f"{folder.directory}: cannot write plotly.js beside report.html: {exc}") from None
    log.info("run %s: results and report written in %.1f s", prefix, time.monotonic() - written_from)
    return RunResult(folder.directory, summary, environment)
