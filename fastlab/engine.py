"""The experiment engine: spec -> network -> shaped links -> flows -> traces -> results.

`fastlab.plan.prepare` does everything that can fail without touching the machine (validation,
backend choice, shaping plans that need no device names); `run_experiment` then owns a run prefix,
builds, runs, tears down exactly what it made, and writes the run directory:
spec.yaml, environment.json, flows.csv, links.csv, summary.json, report.html (and rtt_samples.csv
when flows are clamped: the RTT sample of every ACK as per-second statistics).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import logging
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fastlab import analysis, explain, fidelity, paths, report, routing, segments
from fastlab.capabilities import Capabilities
from fastlab.cc import Registry
from fastlab.ccruntime import CCRuntime, LiveControl
from fastlab.ccset import KERNEL_MODULES
from fastlab.controller import OpenFlowControl
from fastlab.cwndclamp import RTT_COLUMNS, ClampError, CwndClamp
from fastlab.network import Network
from fastlab.plan import IDLE_PING_MAX_GAP_S, IDLE_PING_TIMEOUT_S, IDLE_PINGS_LOST_MAX, Prepared, prepare
from fastlab.rundir import RunFolder
from fastlab.runstate import RunState, new_prefix
from fastlab.shaping import Devices, Shaper, plan_link
from fastlab.spec import ExperimentSpec, to_plain
from fastlab.tracing import SampleBus
from fastlab.traffic import Flow, Traffic

log = logging.getLogger(__name__)  # progress at INFO: the CLI prints it, the web app streams it

SENDER_GRACE_S = 10.0
PROGRESS_EVERY_S = 10.0  # runs longer than this report elapsed / total time at this period
# An emulator writes stats every sample interval: waiting up to three for one written after the idle
# pings returned leaves room for a late line on a busy machine, and costs a run 0.15 s at 20 Hz.
IDLE_STATS_WAIT_INTERVALS = 3
PROC_STAT = Path("/proc/stat")  # machine CPU around the flows, for the fidelity verdict
ROOT_SYSCTLS = ("net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
                "net.ipv4.tcp_allowed_congestion_control", "net.ipv4.tcp_available_congestion_control",
                "net.core.default_qdisc")


class RunError(RuntimeError):
    """The run failed after it started; what it created has been removed."""


def _tc_queues(prep: Prepared, links_df: Any) -> dict[str, dict[str, tuple[int, list[tuple[float, float, float]]]]]:
    """Each tc-shaped link's sampled queue per direction, with its configured rate, for the verdict."""
    out: dict[str, dict[str, tuple[int, list[tuple[float, float, float]]]]] = {}
    tc = [k for k, (b, _) in prep.backends.items() if b != "emulator" and k in prep.links]
    if links_df.empty or not tc or not {"backlog_pkts", "tx_bytes"} <= set(links_df.columns):
        return out
    for link in tc:
        for direction in ("forward", "reverse"):
            rows = links_df[(links_df["link"] == link) & (links_df["direction"] == direction)]
            rows = rows.dropna(subset=["backlog_pkts", "tx_bytes"]).sort_values("t")
            if not rows.empty:
                rate = getattr(prep.links[link], direction).rate_bps
                out.setdefault(link, {})[direction] = (rate, list(zip(
                    rows["t"].astype(float), rows["backlog_pkts"].astype(float), rows["tx_bytes"].astype(float),
                    strict=True)))
    return out


def _fidelity(prep: Prepared, shaper: Shaper, cpu: dict[str, Any], flows_df: Any, links_df: Any,
              spec: ExperimentSpec, idle_stats: dict[str, dict[str, Any]]) -> dict[str, Any]:
    (stat0, cores0, t0), (stat1, cores1, t1) = cpu["start"], cpu["end"]
    span = max(t1 - t0, 1e-9)
    times = {str(flow): list(rows["t"]) for flow, rows in flows_df.groupby("flow")} if not flows_df.empty else {}
    return fidelity.assess(fidelity.Inputs(
        emulators=dict(shaper.final), paths=fidelity_paths(prep),
        emulator_cores={link: (cores1[link] - cores0.get(link, 0.0)) / span for link in cores1},
        machine_busy=fidelity.busy_fraction(fidelity.cpu_times(stat0), fidelity.cpu_times(stat1)),
        machine_steal=fidelity.busy_fraction(fidelity.steal_times(stat0), fidelity.steal_times(stat1)),
        sample_gaps_s=fidelity.sample_gaps(times), sample_interval_s=1.0 / spec.sample_hz,
        tc_links=tuple(k for k, (b, _) in prep.backends.items() if b != "emulator"), idle_emulators=idle_stats,
        tc_queues=_tc_queues(prep, links_df), routes=fidelity_routes(prep),
        counters=fidelity_counters(prep, links_df, {
            (link, d): float(fig["late_p99_us"] or 0) for link, stats in shaper.final.items()
            for d, fig in fidelity.link_figures(stats).items()})))


@dataclass
class RunResult:
    directory: Path
    summary: dict[str, Any]
    environment: dict[str, Any] = field(default_factory=dict)


REPORT_BYTES = 6 * 1024**2  # report.html inlines plotly (~4.6 MB)
ROW_BYTES = 400  # a sample in flows/links.csv and the web app's partial.jsonl, generously


def results_bytes(spec: ExperimentSpec, flows: int, links: int) -> int:
    """What a run's folder will take, generously (pure): its traces at sample_hz plus the report."""
    rows = spec.sample_hz * spec.duration_s * (flows + 2 * links)
    return int(REPORT_BYTES + rows * ROW_BYTES)


def results_room(directory: Path, need_bytes: int) -> str | None:
    """Why the results cannot be written there (read-only, not a folder, not enough free space), or None.
    Checked on the nearest existing ancestor before the run builds anything."""
    probe = directory
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        return f"cannot write the results in {directory}: {probe} is not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"cannot write the results in {directory}: {probe} is not writable (read-only file system?)"
    try:
        free = shutil.disk_usage(probe).free
    except OSError as exc:
        return f"cannot write the results in {directory}: {exc.strerror}"
    if free < need_bytes:
        return (f"not enough free space for the results in {probe}: {free / 1e6:.1f} MB free, the run needs "
                f"about {need_bytes / 1e6:.1f} MB (its traces at sample_hz and the report)")
    return None


def _results_dir(spec: ExperimentSpec, prefix: str, out: Path | None) -> Path:
    if out is not None:
        return out
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return paths.results_root() / f"{stamp}-{spec.name}-{prefix}"


def _first_line(argv: list[str]) -> str | None:
    """First line a version command prints, or None when it fails or takes over 10 s (a slow file
    system: `git describe --dirty` stats every file, which over a VM's 9p root takes longer)."""
    if not shutil.which(argv[0]):
        return None
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except subprocess.TimeoutExpired:
        log.warning("%s took over 10 s: its version is not recorded", argv[0])
        return None
    if out.returncode != 0 and argv[0] == "git":
        return None
    return ((out.stdout or out.stderr).strip().splitlines() or [""])[0]


@functools.cache
def _tool_versions() -> dict[str, str]:
    """Versions of what a run uses, once per process: they cannot change under a running engine
    (whose own code is the checkout as it was imported), and `git describe --dirty` stats every
    file of the checkout, which takes seconds on a slow file system."""
    versions = {"python": sys.version.split()[0]}
    for name, argv in (("fastlab", ["git", "-C", str(paths.REPO), "describe", "--always", "--dirty"]),
                       ("iperf3", ["iperf3", "--version"]), ("tc", ["tc", "-V"]),
                       ("ovs-vsctl", ["ovs-vsctl", "--version"]), ("ethtool", ["ethtool", "--version"])):
        line = _first_line(argv)
        if line is not None:
            versions[name] = line
    try:
        from mininet.net import VERSION
        versions["mininet"] = VERSION
    except ImportError:
        pass
    import pandas
    import plotly
    versions["pandas"], versions["plotly"] = pandas.__version__, plotly.__version__
    return versions


def cc_build_hashes(ccs: list[Any]) -> dict[str, str]:
    """SHA-256 of the BPF objects the run's own algorithms were loaded from."""
    hashes = {}
    for cc in ccs:
        obj = KERNEL_MODULES / "build" / f"{cc.name}.bpf.o"
        if cc.build.impl == "bpf" and obj.exists():
            hashes[obj.name] = hashlib.sha256(obj.read_bytes()).hexdigest()
    return hashes


def _read_sysctls() -> dict[str, str]:
    values = {}
    for key in ROOT_SYSCTLS:
        path = Path("/proc/sys") / key.replace(".", "/")
        if path.exists():
            values[key] = path.read_text().strip()
    return values


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


def fidelity_routes(prep: Prepared) -> tuple[tuple[fidelity.Crossing, ...], ...]:
    """Every route the flows' data and ACKs take over the run (each flow's path and every reroute's) as
    ordered shaped crossings: the feeders of the conservation check."""
    routes = []
    for f in prep.flows:
        for path in {f.path, *(r.path for r in prep.spec.reroutes if not r.flows or f.id in r.flows)}:
            for a, b in ((f.src, f.dst), (f.dst, f.src)):
                routes.append(tuple((h.link.shaped, "forward" if h.forward else "reverse")
                                    for h in routing.hops(prep.plan, a, b, path) if h.link.shaped))
    return tuple(dict.fromkeys(routes))


def fidelity_counters(prep: Prepared, links_df: Any,
                      late_p99_us: dict[fidelity.Crossing, float]) -> dict[fidelity.Crossing, fidelity.Counters]:
    """The emulated link directions' sampled byte counters (sent + queued) with their rates and p99
    lateness, for the conservation check (also bench/conservation.py's, on finished runs)."""
    out: dict[fidelity.Crossing, fidelity.Counters] = {}
    if links_df.empty or not {"tx_bytes", "backlog_bytes"} <= set(links_df.columns):
        return out
    for link in [k for k, (b, _) in prep.backends.items() if b == "emulator" and k in prep.links]:
        for direction in ("forward", "reverse"):
            rows = links_df[(links_df["link"] == link) & (links_df["direction"] == direction)]
            rows = rows.dropna(subset=["tx_bytes", "backlog_bytes"]).sort_values("t")
            side = getattr(prep.links[link], direction)
            if len(rows) >= 2:
                out[(link, direction)] = fidelity.Counters(
                    side.rate_bps, tuple(rows["t"].astype(float)),
                    tuple((rows["tx_bytes"] + rows["backlog_bytes"]).astype(float)),
                    tuple(rows["backlog_bytes"].astype(float)), late_p99_us.get((link, direction), 0.0),
                    paced=side.policy is None and not side.jitter_us)
    return out


def fidelity_paths(prep: Prepared) -> list[fidelity.PathInfo]:
    """Each flow's emulated crossings (data and ACKs) and the basis of its delay budget."""
    out = []
    for f in prep.flows:
        crossings = tuple((h.link.shaped, "forward" if h.forward else "reverse")
                          for a, b in ((f.src, f.dst), (f.dst, f.src))
                          for h in routing.hops(prep.plan, a, b, f.path) if h.link.shaped)
        fig = routing.figures(prep.plan, prep.links, f.src, f.dst, f.path)
        target = None
        if f.cc == "fast" and fig.bottleneck_mbps:
            alpha = f.cc_args.get("alpha", prep.registry.lookup("fast").param("alpha").default)
            target = fidelity.fast_target_ms(float(alpha), fig.bottleneck_mbps, prep.spec.mtu)
        out.append(fidelity.PathInfo(f.id, crossings, fig.rtt_ms, target, prep.spec.mtu))
    return out


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


def run_experiment(spec: ExperimentSpec, *, out: Path | None = None, registry: Registry | None = None,
                   caps: Capabilities | None = None,
                   on_sample: Callable[[dict[str, Any]], None] | None = None,
                   cancel: threading.Event | None = None, live: LiveControl | None = None) -> RunResult:
    """Run a spec; setting `cancel` stops it early (RunError "cancelled") after a full cleanup;
    `live` is bound while the flows run, so a front end can change CC parameters then.

    Stopping is cooperative (checked between phases and every 0.2 s while flows run) so that no
    step, such as registering an algorithm and recording it, is cut in half."""
    prep = prepare(spec, registry, caps)
    prefix = new_prefix()
    directory = _results_dir(spec, prefix, out)
    why = results_room(directory, results_bytes(spec, len(prep.flows), len(prep.links)))
    if why:
        raise RunError(why)  # before anything exists: no network, no folder, no state
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunError(f"cannot create the results folder {directory}: {exc.strerror}") from None
    state = RunState(prefix, results_dir=str(directory))
    state.save()
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    bus = SampleBus(time.monotonic())
    if on_sample:
        bus.subscribe(on_sample)
    net = Network(prep.plan, prefix, prep.switch[0], state,
                  openflow_kind=prep.openflow_switch[0] if prep.openflow_switch else "ovs-user",
                  offloads=prep.offloads[0], mtu=spec.mtu)
    design = prep.plan.metadata.get("openflow")
    control = OpenFlowControl(net, design, prep.flows, spec.controller, bus.emit,
                              directory / "controller.log") if design else None
    shaper = Shaper(net, lambda sample: bus.emit("link", sample))
    traffic = Traffic(net, prep.flows, bus.emit, 1.0 / spec.sample_hz)
    clamp = CwndClamp(state, {f.port: f.max_cwnd_pkts for f in prep.flows if f.max_cwnd_pkts})
    ccs = CCRuntime(prep.registry, state, bus.emit, prep.cc_hosts, prep.cc_globals)
    idle: list[dict[str, Any]] = []
    idle_stats: dict[str, dict[str, Any]] = {}
    cpu: dict[str, Any] = {}  # machine and emulator CPU at the start and end of the flows
    rtt_samples: list[dict[str, object]] = []  # clamped flows' per-second RTT statistics

    def stop_if_cancelled() -> None:
        if cancel is not None and cancel.is_set():
            raise RunError("cancelled")

    with Teardown() as teardown:
        # in reverse order of stopping: the run state last, after every process and the network
        teardown.stop(lambda: None if state.cc_loaded else state.release())
        for stop in (bus.close, net.stop, shaper.stop, ccs.stop, *([control.stop] if control else []),
                     clamp.stop, traffic.stop, *([live.unbind] if live is not None else [])):
            teardown.stop(stop)
        ccs.load()
        stop_if_cancelled()
        log.info("run %s: building %s on Mininet (%s switches)", prefix, spec.topology, prep.switch[0])
        net.build(prep.sockbuf_bytes)
        for link_id, link in prep.links.items():
            e = net.link_ends[link_id]
            plan = plan_link(link, Devices(e.a, e.a_dev, e.b, e.b_dev, e.node, e.dev_a, e.dev_b),
                             seed=spec.seed, stats_interval_ms=max(1, int(1000 / spec.sample_hz)),
                             has_netem=prep.caps.has("netem"), has_emulator=prep.caps.has("linkemu"),
                             drops_log=str(directory / f"loss_drops_{link_id}.txt"), gso=prep.offloads[0],
                             upstream_bps=(prep.upstream.get((link_id, True), 0),
                                           prep.upstream.get((link_id, False), 0)))
            shaper.apply(plan, 1.0 / spec.sample_hz)
        stop_if_cancelled()
        if control is not None:
            control.start()
        state.hosts = {name: net.node(name).pid for name in prep.plan.host_names()}
        state.save()
        ccs.configure(state.hosts)
        ccs.start_events(prep.flows, state.hosts)
        for flow in {(f.src, f.dst): f for f in prep.flows}.values():
            idle.append(_idle_rtt(net, flow, spec.idle_pings, random.Random(spec.seed), stop_if_cancelled))
            stop_if_cancelled()
        # the emulators' lateness on the idle pings (cumulative counters as of now), before any flow's
        idle_stats.update(shaper.fresh_stats(IDLE_STATS_WAIT_INTERVALS / spec.sample_hz))
        try:
            clamp.start()
        except ClampError as exc:
            raise RunError(str(exc)) from None
        traffic.cgroup = clamp.cgroup
        log.info("run %s: %d flow(s) for %g s", prefix, len(prep.flows), spec.duration_s)
        cpu["start"] = (PROC_STAT.read_text(), shaper.cpu_seconds(), time.monotonic())
        bus.start(time.monotonic())
        traffic.start(bus.t0)
        ccs.schedule(spec, bus.t0, state.hosts)
        if live is not None:
            live.bind(ccs, state.hosts, bus.t0)
        if control is not None:
            control.schedule(spec.reroutes, bus.t0)
        end = bus.t0 + spec.duration_s
        next_progress = bus.t0 + PROGRESS_EVERY_S
        while time.monotonic() < end:
            if traffic.errors or (control is not None and control.errors):
                raise RunError("; ".join(traffic.errors + (control.errors if control else [])))
            stop_if_cancelled()
            if spec.duration_s > PROGRESS_EVERY_S and time.monotonic() >= next_progress:
                elapsed = time.monotonic() - bus.t0
                log.info("run %s: %.0f / %g s (%.0f%%)", prefix, elapsed, spec.duration_s,
                         100 * elapsed / spec.duration_s)
                next_progress += PROGRESS_EVERY_S
            time.sleep(min(0.2, max(0.0, end - time.monotonic())))
        cpu["end"] = (PROC_STAT.read_text(), shaper.cpu_seconds(), time.monotonic())
        traffic.wait(SENDER_GRACE_S)
        if traffic.errors:
            raise RunError("; ".join(traffic.errors))
        try:
            rtt_samples = clamp.rtt_samples(bus.t0, {f.port: f.id for f in prep.flows})
        except ClampError as exc:
            raise RunError(str(exc)) from None
    flows_df = bus.frame("flow")
    links_df = analysis.add_rates(bus.frame("link"))
    events_df = bus.frame("event")
    infos = [analysis.FlowInfo(f.id, f.src, f.dst, f.cc, f.start_s, f.stop_s) for f in prep.flows]
    capacities = {k: link.forward.rate_bps / 1e6 for k, link in prep.links.items()}
    summary = analysis.summarize(infos, flows_df, traffic.finished, links_df, capacities)
    summary["idle_rtt"] = idle
    summary["fidelity"] = _fidelity(prep, shaper, cpu, flows_df, links_df, spec, idle_stats)
    # a run whose parameters changed (scheduled or live) is measured and judged per segment
    changes = segments.applied_changes({"congestion_control": {"applied": ccs.applied}})
    if changes:
        summary["segments"] = segments.measured(spec, changes, flows_df, links_df, capacities)
    summary["what_happened"] = explain.what_happened(spec, summary, changes)  # the note of the results page
    environment = {
        "run": {"name": spec.name, "prefix": prefix, "started": started, "host": platform.node()},
        "kernel": platform.release(),
        "capabilities": prep.caps.as_dict()["probes"],
        "backends": {job: {"backend": b, "why": w} for job, (b, w) in prep.caps.backends().items()}
        | {"switch": {"backend": prep.switch[0], "why": prep.switch[1]},
           "congestion control": dict(zip(("backend", "why"), Capabilities.cc_backend(prep.cc_impl), strict=True)),
           "fast path": {"backend": "on" if prep.offloads[0] else "off", "why": prep.offloads[1]}},
        "links_not_emulated": {link: f"{why}: built as a plain link" for link, why in prep.unused_links.items()},
        "shaping": shaper.applied,
        "network_commands": net.applied,
        "socket_buffer_max_bytes": prep.sockbuf_bytes,
        "sysctls": _read_sysctls(),
        "tools": dict(_tool_versions()),
        "flows": {f.id: {"cc": f.cc, "cc_args": f.cc_args, "port": f.port, "path": f.path}
                  | ({"max_cwnd_pkts": f.max_cwnd_pkts} if f.max_cwnd_pkts else {}) for f in prep.flows},
        **({"cwnd_clamp": clamp.attached} if clamp.attached else {}),
        "congestion_control": {"applied": ccs.applied, "builds": cc_build_hashes(ccs.ours())},
    }
    if control is not None:
        environment["openflow"] = control.applied
    try:
        spec_yaml = yaml.safe_dump(to_plain(spec), sort_keys=False)
        folder = RunFolder(directory)
        folder.write(spec_yaml=spec_yaml, environment=environment, summary=summary, flows=flows_df, links=links_df,
                     events=events_df, rtt_samples=rtt_samples, rtt_columns=RTT_COLUMNS)
        folder.write_report(report.render(spec_yaml, summary, environment, flows_df, links_df, events_df))
    except OSError as exc:  # e.g. the disk filled up during the run: say so, and mark what is there
        incomplete = directory.with_name(directory.name + ".incomplete")
        with contextlib.suppress(OSError):
            directory.rename(incomplete)
        raise RunError(f"cannot write the results in {directory}: {exc.strerror}; what was written is in "
                       f"{incomplete}") from None
    os.chmod(directory, 0o755)
    return RunResult(directory, summary, environment)
