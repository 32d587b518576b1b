"""`fastlab` command line: run, doctor, cleanup, topo, cc, lab, sweep, bundle.

Bad input prints one line naming the problem and exits 2, before anything is created.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from fastlab import fidelity, paths

EXIT_USAGE = 2


class CliError(Exception):
    """One-line message, exit status 2."""


def _table(rows: list[dict[str, Any]], keys: list[str]) -> str:
    widths = {k: max(len(k), *(len(str(r.get(k, ""))) for r in rows)) for k in keys}
    lines = ["  ".join(k.ljust(widths[k]) for k in keys)]
    lines += ["  ".join(str(r.get(k, "")).ljust(widths[k]) for k in keys) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def _need_root(what: str) -> None:
    if os.geteuid() != 0:
        raise CliError(f"{what} needs root (network namespaces, tc): run it with sudo")


def cmd_run(args: argparse.Namespace) -> int:
    from fastlab.engine import RunError, prepare, run_experiment
    from fastlab.spec import SpecError, load_spec

    try:
        spec = load_spec(args.spec, args.set)
        if args.check:
            prepare(spec)
            print(f"{args.spec}: valid")
            return 0
    except SpecError as exc:
        raise CliError(str(exc)) from None
    _need_root("fastlab run")
    out = Path(args.out) if args.out else None
    if out is not None and out.exists() and any(out.iterdir()):
        raise CliError(f"--out {out}: directory exists and is not empty")

    cancel = _cancel_on_signals()
    try:
        result = run_experiment(spec, out=out, log=lambda m: print(m, file=sys.stderr), cancel=cancel)
    except SpecError as exc:
        raise CliError(str(exc)) from None
    except RunError as exc:
        if cancel.is_set():
            raise KeyboardInterrupt from None
        print(f"run failed: {exc}", file=sys.stderr)
        return 1
    for flow in result.summary["flows"]:
        print(f"{flow['id']} {flow['src']}->{flow['dst']} {flow['cc']}: {flow['throughput_mbps']:.2f} Mb/s, "
              f"min RTT {flow['min_rtt_ms']} ms, retransmits {flow['retransmits']}", file=sys.stderr)
    for link in result.summary["links"]:
        print(f"{link['id']}: utilization {link['utilization']:.3f}, mean backlog "
              f"{link['mean_backlog_pkts']:.1f} pkts, drops {link['drops']}", file=sys.stderr)
    print(fidelity.headline(result.summary.get("fidelity")), file=sys.stderr)
    print(result.directory)
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from fastlab import selftest
    from fastlab.capabilities import probe

    if args.self_test:
        _need_root("doctor --self-test")
        selftest.run(log=lambda msg: print(msg, file=sys.stderr))
    caps = probe()
    if args.json:
        print(json.dumps(caps.as_dict() | {"capacity": selftest.load()}, indent=1))
        return 0
    print(f"kernel {caps.kernel}\n")
    rows = [{"capability": k, "present": "yes" if p.present else "no", "detail": p.detail}
            for k, p in caps.probes.items()]
    print(_table(rows, ["capability", "present", "detail"]))
    print()
    rows = [{"job": job, "backend": b, "why": w} for job, (b, w) in caps.backends().items()]
    print(_table(rows, ["job", "backend", "why"]))
    print()
    print(selftest.describe(selftest.load()))
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    from fastlab.runstate import KEPT, cleanup

    _need_root("fastlab cleanup")
    removed = cleanup()
    for item in removed:
        print(item if item.startswith(KEPT) else f"removed {item}")
    print(f"{len(removed)} leftover(s) removed" if removed else "nothing to clean up")
    return 0


def cmd_topo_list(args: argparse.Namespace) -> int:
    from fastlab.topology import catalogue

    print(_table(catalogue(), ["name", "description", "arguments"]))
    return 0


def cmd_topo_show(args: argparse.Namespace) -> int:
    from fastlab import routing, selftest
    from fastlab.shaping import resolve
    from fastlab.spec import SpecError, parse_override
    from fastlab.topology import TopologyError, build_plan

    topo_args: dict[str, Any] = {}
    try:
        for item in args.arg:
            path, value = parse_override(item)
            topo_args[".".join(map(str, path))] = value
    except SpecError as exc:
        raise CliError(str(exc).replace("--set", "--arg")) from None
    if args.scale is not None:
        topo_args["scale"] = args.scale
    try:
        plan = build_plan(args.name, topo_args)
    except TopologyError as exc:
        raise CliError(str(exc)) from None
    scale = plan.metadata.get("scale", 1.0)
    originals = plan.metadata.get("original_capacities_mbps", {})
    print(f"{plan.name}: scale {scale:g} (capacities divided, delays kept)\n")
    roles: dict[str, list[str]] = {}
    for name, node in plan.nodes.items():
        roles.setdefault(node.role, []).append(name + (f" ({node.site})" if node.site else ""))
    for role, title in (("host", "hosts"), ("router", "routers"), ("switch", "switches")):
        print(f"{title}: {', '.join(sorted(roles.get(role, [])))}")
    links = {k: resolve(v, None) for k, v in plan.shaped.items()}
    rows: list[dict[str, Any]] = []
    for link_id, shaped in plan.shaped.items():
        fwd, rev = links[link_id].forward, links[link_id].reverse
        original = originals.get(link_id, plan.metadata.get("original_capacity_mbps", fwd.rate_bps / 1e6 / scale))
        rows.append({"link": link_id, "between": f"{shaped.a} -> {shaped.b}",
                     "capacity Mb/s": f"{fwd.rate_bps / 1e6:g}" + ("" if fwd.rate_bps == rev.rate_bps
                                                                  else f" / {rev.rate_bps / 1e6:g} up"),
                     "original Mb/s": f"{original:g}", "one-way ms": f"{fwd.delay_us / 1000:g}",
                     "buffer pkts": fwd.limit_pkts or f"{fwd.limit_bytes} B", "about": shaped.description})
    print()
    print(_table(rows, ["link", "between", "capacity Mb/s", "original Mb/s", "one-way ms", "buffer pkts", "about"]))
    capacity = selftest.load()
    design = plan.metadata.get("openflow")
    rows = []
    for end in plan.metadata.get("endpoints", []):
        for core_path in sorted(design["paths"]) if design else [None]:
            fig = routing.figures(plan, links, end["src"], end["dst"], core_path)
            over = selftest.over_capacity(fig.bottleneck_mbps or 0, capacity, len(fig.shaped_links))
            rows.append({"path": f"{fig.src} -> {fig.dst}", "via": core_path or "", "RTT ms": f"{fig.rtt_ms:g}",
                         "documented RTT ms": f"{end['rtt_ms']:g}", "bottleneck": fig.bottleneck_link,
                         "bottleneck Mb/s": f"{fig.bottleneck_mbps:g}" + (" (!)" if over else ""),
                         "BDP pkts": fig.bdp_pkts, "shaped links": " ".join(fig.shaped_links)})
    if rows:
        print()
        print(_table(rows, ["path", *(["via"] if design else []), "RTT ms", "documented RTT ms", "bottleneck",
                            "bottleneck Mb/s", "BDP pkts", "shaped links"]))
    print()
    print(selftest.describe(capacity))
    if any(r.get("bottleneck Mb/s", "").endswith("(!)") for r in rows):
        print("(!) a flow on this path needs more than this machine carries faithfully: lower --scale")
    if design:
        print(f"\nOpenFlow core: switches {', '.join(design['switches'])}; paths (per flow `path:`, "
              f"default {design['default_path']}):")
        for name, core_path in design["paths"].items():
            print(f"  {name}: {core_path['description']} ({' '.join(core_path['links'])})")
    return 0


def _raise_on_sigterm() -> None:
    """For commands that run no experiment here: SIGTERM stops them like Ctrl-C."""
    def on_term(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)


def _cancel_on_signals() -> threading.Event:
    """For commands that run experiments: SIGTERM and Ctrl-C ask the engine to stop, which it does
    after a full cleanup; an exception raised at an arbitrary point could cut a step in half (an
    algorithm registered but not yet recorded as the run's, so never unregistered)."""
    cancel = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        if not cancel.is_set():
            print(f"fastlab: signal {signum}: stopping after cleanup", file=sys.stderr, flush=True)
        cancel.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return cancel


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cmd_sweep_run(args: argparse.Namespace) -> int:
    from fastlab import sweep
    from fastlab.capabilities import probe
    from fastlab.engine import prepare
    from fastlab.spec import SpecError

    try:
        plan = sweep.load_sweep(args.file, args.set)
        caps = probe()
        specs = sweep.check_points(plan, lambda spec: prepare(spec, caps=caps))
    except SpecError as exc:
        raise CliError(str(exc)) from None
    out = Path(args.out) if args.out else sweep.default_directory(plan)
    if args.check:
        print(f"{args.file}: valid, {len(plan.points)} points -> {out}")
        return 0
    cancel = None
    if args.cluster is None:
        _need_root("fastlab sweep run")
        cancel = _cancel_on_signals()
    else:
        _raise_on_sigterm()
    try:
        result = sweep.run_sweep(plan, specs, out, cluster=args.cluster, log=_log, cancel=cancel)
    except sweep.SweepError as exc:
        raise CliError(str(exc)) from None
    except KeyboardInterrupt:
        print(f"fastlab: sweep interrupted; finished points are kept: rerun the same command to resume ({out})",
              file=sys.stderr)
        return 130
    print(result.directory)
    return 1 if result.failed else 0


def cmd_sweep_status(args: argparse.Namespace) -> int:
    from fastlab.sweep import SweepError, status_lines

    try:
        print("\n".join(status_lines(Path(args.directory))))
    except SweepError as exc:
        raise CliError(str(exc)) from None
    return 0


def cmd_bundle_export(args: argparse.Namespace) -> int:
    from fastlab.bundle import BundleError, export

    source = Path(args.directory)
    target = Path(args.output) if args.output else Path(f"{source.resolve().name}.zip")
    if target.exists():
        raise CliError(f"-o {target}: exists; choose another name or remove it")
    try:
        path = export(source, target)
    except BundleError as exc:
        raise CliError(str(exc)) from None
    print(path)
    return 0


def cmd_bundle_verify(args: argparse.Namespace) -> int:
    """Check a bundle against its manifest; if intact, say whether the bundled run's emulation was faithful."""
    from fastlab.bundle import BundleError, fidelity_lines, verify

    if not Path(args.bundle).is_file():
        raise CliError(f"{args.bundle}: no such file")
    problems = verify(args.bundle)
    for problem in problems:
        print(f"{args.bundle}: {problem}")
    print(f"{args.bundle}: {'intact' if not problems else f'NOT intact, {len(problems)} problem(s)'}")
    if not problems:
        try:
            for line in fidelity_lines(args.bundle):
                print(line)
        except BundleError as exc:
            print(f"fidelity: unknown ({exc})")
    return 1 if problems else 0


def cmd_bundle_replay(args: argparse.Namespace) -> int:
    import shutil

    from fastlab.bundle import BundleError, verify
    from fastlab.engine import RunError
    from fastlab.replay import default_directory, replay_bundle, table
    from fastlab.spec import SpecError

    bundle_path = Path(args.bundle)
    if not bundle_path.is_file():
        raise CliError(f"{args.bundle}: no such file")
    problems = verify(bundle_path)
    if problems:
        raise CliError(f"{args.bundle}: fails verification ({len(problems)} problem(s)), first: {problems[0]}")
    out = Path(args.out) if args.out else default_directory(bundle_path)
    if out.exists() and any(out.iterdir()):
        raise CliError(f"--out {out}: directory exists and is not empty")
    _need_root("fastlab bundle replay")
    cancel = _cancel_on_signals()
    try:
        outcomes = replay_bundle(bundle_path, out, point=args.point, log=_log, cancel=cancel)
    except (BundleError, SpecError) as exc:
        shutil.rmtree(out, ignore_errors=True)
        raise CliError(str(exc)) from None
    except RunError as exc:
        if cancel.is_set():
            raise KeyboardInterrupt from None
        print(f"replay run failed: {exc}", file=sys.stderr)
        return 1
    for outcome in outcomes:
        print(f"\n== {outcome.point or outcome.original_dir.name}: replayed in {outcome.replay_dir}")
        print(table(outcome.rows))
        for warning in outcome.warnings:
            print(f"warning: this machine differs from the original: {warning}")
        for line in outcome.fidelity:
            print(line)
        print(f"verdict: {'consistent' if outcome.consistent else 'differs'}")
    consistent = all(o.consistent for o in outcomes)
    if len(outcomes) > 1:
        print(f"\nverdict over {len(outcomes)} points: {'consistent' if consistent else 'differs'}")
    print(out / "replay.json")
    return 0 if consistent else 1


def cluster_argv(role: str, args: argparse.Namespace) -> list[str]:
    """The `dask scheduler` / `dask worker` command a cluster host runs (pure): a worker offers one
    `machine` (every point needs a whole host) and one thread."""
    argv = [sys.executable, "-m", "dask", role]
    if role == "worker":
        argv += [args.address, "--nthreads", "1", "--resources", "machine=1"]
    if args.host:
        argv += ["--host", args.host]
    if role == "scheduler":
        argv += ["--port", str(args.port)]
        if args.scheduler_file:
            argv += ["--scheduler-file", args.scheduler_file]
    elif args.local_directory:
        argv += ["--local-directory", args.local_directory]
    return argv + ["--no-dashboard"]


def cmd_cluster(args: argparse.Namespace) -> int:
    """Start a Dask scheduler or worker for `sweep run --cluster` that cannot be started wrong: with
    this checkout on its Python path (a scheduler without fastlab importable fails every point with
    "Error during deserialization of the task graph") and a worker's machine resource."""
    if args.role == "worker":
        _need_root("fastlab cluster worker")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(paths.REPO), os.environ.get("PYTHONPATH", "")) if p)}
    argv = cluster_argv(args.role, args)
    print("fastlab: " + " ".join(argv[1:]), file=sys.stderr, flush=True)
    os.execve(sys.executable, argv, env)
    return 1  # not reached


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line and exit 2 (subcommand parsers inherit this class)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"fastlab: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def _cc(name: str, impl: str) -> Any:
    from fastlab.cc import CCError
    from fastlab.ccset import default_registry

    try:
        cc = default_registry(impl).lookup(name)
    except CCError as exc:
        raise CliError(str(exc)) from None
    if cc.origin != "fastlab":
        raise CliError(f"{name} is a kernel algorithm: it needs no loading and has no run-time parameters here")
    return cc


def cmd_cc_list(args: argparse.Namespace) -> int:
    from fastlab.ccset import default_registry

    print(_table(default_registry(args.impl).listing(), ["name", "origin", "usable", "how", "description"]))
    return 0


def cmd_cc_load(args: argparse.Namespace) -> int:
    from fastlab.ccset import ToolError

    _need_root("fastlab cc load")
    cc = _cc(args.name, args.impl)
    try:
        if args.command_cc == "load":
            print(f"{cc.name}: {'loaded' if cc.build.load() else 'already loaded'} ({cc.build.impl})")
        else:
            print(f"{cc.name}: {cc.build.unload()}")
    except ToolError as exc:
        print(f"fastlab: {exc}", file=sys.stderr)
        return 1
    return 0


def live_host_pid(host: str, run: str | None) -> int:
    """The PID inside `host`'s namespace in a running run (the only one, or --run PREFIX)."""
    from fastlab import paths
    from fastlab.runstate import RunState

    states = [RunState.load(p) for p in sorted(paths.STATE_DIR.glob("fl*.json"))] if paths.STATE_DIR.is_dir() else []
    found = [s for s in states if s.engine_alive() and host in s.hosts and run in (None, s.prefix)]
    if not found:
        raise CliError(f"--host {host}: no running fastlab run has a host {host!r}")
    if len(found) > 1:
        raise CliError(f"--host {host}: several runs have it ({', '.join(s.prefix for s in found)}): add --run")
    return found[0].hosts[host]


def cmd_cc_set(args: argparse.Namespace) -> int:
    from fastlab.cc import CCError
    from fastlab.ccruntime import per_host_args
    from fastlab.ccset import ToolError
    from fastlab.spec import SpecError, parse_override

    _need_root("fastlab cc set")
    cc = _cc(args.name, args.impl)
    values: dict[str, Any] = {}
    try:
        for item in args.values:
            path, value = parse_override(item)
            values[".".join(map(str, path))] = value
        checked = per_host_args(cc, values) if args.host else cc.validate_args(values)
    except (SpecError, CCError) as exc:
        raise CliError(str(exc).replace("--set ", "")) from None
    pid = live_host_pid(args.host, args.run) if args.host else None
    try:
        print(json.dumps(cc.build.set(checked, netns_pid=pid)))
    except ToolError as exc:
        print(f"fastlab: {exc}", file=sys.stderr)
        return 1
    return 0


def _lab(ref: str) -> Any:
    from fastlab.labs import LabError, load_lab

    try:
        return load_lab(ref)
    except LabError as exc:
        raise CliError(str(exc)) from None


def _print_step(outcome: Any) -> None:
    print(f"step {outcome.id}: {outcome.title} ({outcome.duration_s:.0f} s) -> {outcome.directory}")
    if outcome.error:
        print(f"  FAIL {outcome.error}")
    for check in outcome.checks:
        print(f"  {check.line()}")


def cmd_lab_list(args: argparse.Namespace) -> int:
    from fastlab.labs import LabError, list_labs

    try:
        labs = list_labs()
    except LabError as exc:
        raise CliError(str(exc)) from None
    rows = [{"lab": lab.number, "name": lab.name, "title": lab.title, "minutes": f"{lab.minutes:g}",
             "steps": len(lab.steps)} for lab in labs]
    print(_table(rows, ["lab", "name", "title", "minutes", "steps"]) if rows else "no labs")
    return 0


def cmd_lab_run(args: argparse.Namespace) -> int:
    from fastlab.labs import LabError, run_lab

    lab = _lab(args.lab)
    out = Path(args.out) if args.out else None
    try:
        for step_id in args.step:
            lab.step(step_id)
        if out is not None and out.exists() and any(out.iterdir()):
            raise LabError(f"--out {out}: directory exists and is not empty")
        _need_root("fastlab lab run")
        cancel = _cancel_on_signals()
        run = run_lab(lab, out=out, short=args.short, step_ids=args.step or None,
                      log=lambda m: print(m, file=sys.stderr), on_step=_print_step, cancel=cancel)
    except LabError as exc:
        raise CliError(str(exc)) from None
    if cancel.is_set():
        raise KeyboardInterrupt
    print(f"lab {lab.name}: {'all checkpoints pass' if run.passed else 'some checkpoints FAIL'}")
    print(run.directory)
    return 0 if run.passed else 1


def cmd_lab_check(args: argparse.Namespace) -> int:
    from fastlab.labs import LabError, check_lab_run, latest_lab_run

    try:
        directory = Path(args.run) if args.run else latest_lab_run(_lab(args.lab))
        run = check_lab_run(directory)
        if run.lab.number != _lab(args.lab).number:
            raise LabError(f"--run {directory}: it is a run of lab {run.lab.name}, not lab {args.lab}")
    except LabError as exc:
        raise CliError(str(exc)) from None
    for outcome in run.steps:
        _print_step(outcome)
    print(f"lab {run.lab.name}: {'all checkpoints pass' if run.passed else 'some checkpoints FAIL'}")
    return 0 if run.passed else 1


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="fastlab", description="TCP congestion-control emulation lab")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run an experiment spec")
    run.add_argument("spec", help="experiment spec (YAML)")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="override a field, e.g. --set topology_args.rate_mbps=20 --set flows.0.cc=bbr")
    run.add_argument("--out", help="results directory (default: results/<time>-<name>-<run>)")
    run.add_argument("--check", action="store_true", help="validate only; create nothing")
    run.set_defaults(func=cmd_run)
    doctor = sub.add_parser("doctor", help="what this machine can do, and the backend for each job")
    doctor.add_argument("--json", action="store_true")
    doctor.add_argument("--self-test", action="store_true",
                        help="first measure the highest rate and flow count this machine emulates faithfully "
                             "(runs experiments, ~2 minutes, root)")
    doctor.set_defaults(func=cmd_doctor)
    sub.add_parser("cleanup", help="remove leftovers of fastlab runs (only)").set_defaults(func=cmd_cleanup)
    topo = sub.add_parser("topo", help="topologies")
    topo_sub = topo.add_subparsers(dest="topo_command", required=True)
    topo_sub.add_parser("list", help="list topologies").set_defaults(func=cmd_topo_list)
    show = topo_sub.add_parser("show", help="nodes, links, capacities, RTTs and BDPs of a topology")
    show.add_argument("name")
    show.add_argument("--scale", type=float, help="capacity scale factor (topologies that take one)")
    show.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE", help="another topology argument")
    show.set_defaults(func=cmd_topo_show)
    cc = sub.add_parser("cc", help="congestion controls: list, load, unload, set parameters")
    cc_sub = cc.add_subparsers(dest="command_cc", required=True)
    impl: dict[str, Any] = {"choices": ["bpf", "module"], "default": "bpf", "help": "build to use (default: bpf)"}
    cc_list = cc_sub.add_parser("list", help="kernel algorithms here and fastlab's, and how each loads")
    cc_list.add_argument("--impl", **impl)
    cc_list.set_defaults(func=cmd_cc_list)
    for verb in ("load", "unload"):
        p = cc_sub.add_parser(verb, help=f"{verb} fast or hstcp")
        p.add_argument("name")
        p.add_argument("--impl", **impl)
        p.set_defaults(func=cmd_cc_load)
    cc_set = cc_sub.add_parser("set", help="set parameters, globally or for one host of a running run")
    cc_set.add_argument("name")
    cc_set.add_argument("values", nargs="+", metavar="KEY=VALUE")
    cc_set.add_argument("--host", help="a host of a running run (per-namespace override)")
    cc_set.add_argument("--run", help="run prefix, when several runs have the host")
    cc_set.add_argument("--impl", **impl)
    cc_set.set_defaults(func=cmd_cc_set)
    lab = sub.add_parser("lab", help="guided labs: list, run, check")
    lab_sub = lab.add_subparsers(dest="command_lab", required=True)
    lab_sub.add_parser("list", help="the labs in labs/").set_defaults(func=cmd_lab_list)
    lab_run = lab_sub.add_parser("run", help="run a lab's steps and evaluate its checkpoints")
    lab_run.add_argument("lab", help="lab number, folder name or slug")
    lab_run.add_argument("--short", action="store_true", help="the shortened form (CI)")
    lab_run.add_argument("--out", help="lab run directory (default: results/labs/<time>-NN-slug)")
    lab_run.add_argument("--step", action="append", default=[], metavar="ID", help="only this step (repeatable)")
    lab_run.set_defaults(func=cmd_lab_run)
    lab_check = lab_sub.add_parser("check", help="re-evaluate the checkpoints of a finished lab run")
    lab_check.add_argument("lab", help="lab number, folder name or slug")
    lab_check.add_argument("--run", help="lab run directory (default: the latest run of the lab)")
    lab_check.set_defaults(func=cmd_lab_check)
    sweep = sub.add_parser("sweep", help="parameter sweeps: run (resumable), status")
    sweep_sub = sweep.add_subparsers(dest="command_sweep", required=True)
    sweep_run = sweep_sub.add_parser("run", help="run a spec's sweep: section; rerun the same command to resume")
    sweep_run.add_argument("file", help="experiment spec with a top-level sweep: section (YAML)")
    sweep_run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                           help="override a field of the spec or the sweep, e.g. --set sweep.repeat=1")
    sweep_run.add_argument("--out", help="sweep directory (default: results/sweeps/<name>-<digest>)")
    sweep_run.add_argument("--cluster", metavar="ADDRESS", help="Dask scheduler, e.g. tcp://10.0.0.5:8786; "
                           "workers: one per host, started with --resources machine=1")
    sweep_run.add_argument("--check", action="store_true", help="validate every point only; create nothing")
    sweep_run.set_defaults(func=cmd_sweep_run)
    sweep_status = sweep_sub.add_parser("status", help="points of a sweep directory and their status")
    sweep_status.add_argument("directory")
    sweep_status.set_defaults(func=cmd_sweep_status)
    cluster = sub.add_parser("cluster", help="a Dask scheduler or worker for sweep run --cluster")
    cluster_sub = cluster.add_subparsers(dest="role", required=True)
    scheduler = cluster_sub.add_parser("scheduler", help="the cluster's scheduler (any one host)")
    scheduler.add_argument("--host", help="address to listen on, e.g. 10.0.0.5")
    scheduler.add_argument("--port", type=int, default=8786)
    scheduler.add_argument("--scheduler-file", help="write the scheduler's address to this JSON file")
    scheduler.set_defaults(func=cmd_cluster)
    worker = cluster_sub.add_parser("worker", help="a worker: one per lab host, as root")
    worker.add_argument("address", help="the scheduler, e.g. tcp://10.0.0.5:8786")
    worker.add_argument("--host", help="this host's address on the lab network")
    worker.add_argument("--local-directory", help="Dask's scratch directory")
    worker.set_defaults(func=cmd_cluster)
    bundle = sub.add_parser("bundle", help="result bundles: export, verify, replay")
    bundle_sub = bundle.add_subparsers(dest="command_bundle", required=True)
    bundle_export = bundle_sub.add_parser("export", help="a run or sweep directory as a zip with a SHA-256 manifest")
    bundle_export.add_argument("directory", help="run or sweep directory")
    bundle_export.add_argument("-o", "--output", metavar="FILE.zip", help="bundle to write (default: <name>.zip)")
    bundle_export.set_defaults(func=cmd_bundle_export)
    bundle_verify = bundle_sub.add_parser("verify", help="check every file against the manifest (exit 1: altered)")
    bundle_verify.add_argument("bundle", metavar="FILE.zip")
    bundle_verify.set_defaults(func=cmd_bundle_verify)
    bundle_replay = bundle_sub.add_parser("replay", help="rerun a bundle's spec here and compare (exit 1: differs)")
    bundle_replay.add_argument("bundle", metavar="FILE.zip")
    bundle_replay.add_argument("--out", help="replay directory (default: results/replays/<time>-<bundle>)")
    bundle_replay.add_argument("--point", metavar="ID", help="of a sweep bundle, only this point")
    bundle_replay.set_defaults(func=cmd_bundle_replay)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except CliError as exc:
        print(f"fastlab: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("fastlab: interrupted; what the run created has been removed", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
