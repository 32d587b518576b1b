"""`fastlab run`, `doctor`, `cleanup` and `topo`: one experiment, and what this machine and the topologies offer."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from fastlab.cli.common import CliError, cancel_on_signals, need_root, run_failed, table
from fastlab.cli.sweep import run_plan
from fastlab.measure import fidelity


def cmd_run(args: argparse.Namespace) -> int:
    from fastlab.define.schema import SpecError, load_spec
    from fastlab.experiment.engine import RunError, prepare_run
    from fastlab.service.run import execute

    try:
        repeat = [f"repeat={args.repeat}"] if args.repeat is not None else []  # checked as the field is
        spec = load_spec(args.spec, [*args.set, *repeat])
        if args.topology_file:
            spec = with_topology_file(spec, args.topology_file)
        if args.check:
            prepare_run(spec)
            print(f"{args.spec}: valid")
            return 0
    except SpecError as exc:
        raise CliError(str(exc)) from None
    need_root("fastlab run")
    if spec.repeat > 1:
        return run_repeats(spec, args)
    out = Path(args.out) if args.out else None
    if out is not None and out.exists() and any(out.iterdir()):
        raise CliError(f"--out {out}: directory exists and is not empty")

    cancel = cancel_on_signals()
    try:
        result = execute(spec, out, cancel=cancel)
    except SpecError as exc:
        raise CliError(str(exc)) from None
    except RunError as exc:
        return run_failed("run", exc, cancel)
    for flow in result.summary.flows:
        print(f"{flow.id} {flow.src}->{flow.dst} {flow.cc}: {flow.throughput_mbps or 0.0:.2f} Mb/s, "
              f"min RTT {flow.min_rtt_ms} ms, retransmits {flow.retransmits}", file=sys.stderr)
    for link in result.summary.links:
        print(f"{link.id}: utilization {link.utilization or 0.0:.3f}, mean backlog "
              f"{link.mean_backlog_pkts or 0.0:.1f} pkts, drops {link.drops}", file=sys.stderr)
    print(fidelity.headline(result.summary.fidelity), file=sys.stderr)
    print(result.directory)
    return 0


def run_repeats(spec: Any, args: argparse.Namespace) -> int:
    """`fastlab run` of a spec with `repeat: N`: its N runs as a sweep without parameters (resumable: the
    same command goes on where it stopped), then each headline figure over the faithful runs."""
    from fastlab.base.rundir import RunFolder
    from fastlab.define.schema import SpecError
    from fastlab.experiment.engine import prepare_run
    from fastlab.plan.capabilities import probe
    from fastlab.results import fidelity_view
    from fastlab.sweep import points as sweep
    from fastlab.sweep import repeats
    from fastlab.sweep.report import aggregate

    try:
        plan = repeats.plan_repeats(spec)
        caps = probe()
        specs = sweep.check_points(plan, lambda point_spec: prepare_run(point_spec, caps=caps))
    except SpecError as exc:
        raise CliError(str(exc)) from None
    out = Path(args.out) if args.out else sweep.default_directory(plan)
    result = run_plan(plan, specs, out, "repetitions", cancel=cancel_on_signals())
    if result is None:
        return 130
    means = aggregate(result.table, [])
    unfaithful = str(means.iloc[0].get("unfaithful") or "").split() if not means.empty else []
    reasons = {p: str(fidelity_view.first_reason(RunFolder(sweep.point_folder(out, p)).summary().fidelity))
               for p in unfaithful}
    for line in repeats.figure_lines(means, reasons):
        print(line, file=sys.stderr)
    print(result.directory)
    return 1 if result.failed else 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from fastlab.experiment import selftest
    from fastlab.plan.capabilities import probe

    if args.self_test:
        need_root("doctor --self-test")
        selftest.run()
    caps = probe()
    if args.json:
        print(json.dumps(caps.as_dict() | {"capacity": selftest.load()}, indent=1))
        return 0
    print(f"kernel {caps.kernel}\n")
    rows = [{"capability": k, "present": "yes" if p.present else "no", "detail": p.detail}
            for k, p in caps.probes.items()]
    print(table(rows, ["capability", "present", "detail"]))
    print()
    rows = [{"job": job, "backend": b, "why": w} for job, (b, w) in caps.backends().items()]
    print(table(rows, ["job", "backend", "why"]))
    print()
    print(selftest.describe(selftest.load()))
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    from fastlab.net.runstate import KEPT
    from fastlab.run.ccload import cleanup

    need_root("fastlab cleanup")
    removed = cleanup()
    for item in removed:
        print(item if item.startswith(KEPT) else f"removed {item}")
    print(f"{len(removed)} leftover(s) removed" if removed else "nothing to clean up")
    return 0


def with_topology_file(spec: Any, file: str) -> Any:
    """`spec` run on the topology in `file` (--topology-file: relative to the working folder)."""
    from fastlab.define.schema import parse_spec, to_plain

    return parse_spec({**to_plain(spec), "topology": {"file": str(Path(file).expanduser().resolve())}})


def topology_ref(name: str) -> Any:
    """A topology named on the command line: a name, or a Python file (it ends in .py)."""
    from fastlab.define.schema import TopologyFile

    return TopologyFile(file=str(Path(name).expanduser().resolve())) if name.endswith(".py") else name


def cmd_topo_list(args: argparse.Namespace) -> int:
    """Every topology a spec may name (fastlab's, installed packages', FASTLAB_TOPOLOGIES'); a plugin that
    cannot be offered is one line on stderr."""
    from fastlab.define.topology import catalogue_with_problems

    rows, problems = catalogue_with_problems()
    print(table(rows, ["name", "description", "arguments", "origin"]))
    for problem in problems:
        print(f"fastlab: {problem}", file=sys.stderr)
    return 0


def cmd_topo_show(args: argparse.Namespace) -> int:
    from fastlab.define.schema import SpecError, parse_override
    from fastlab.define.topology import TopologyError, build_plan
    from fastlab.experiment import selftest
    from fastlab.plan.links import resolve
    from fastlab.plan.prepare import core_paths, trace

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
        plan = build_plan(topology_ref(args.name), topo_args)
    except (TopologyError, ValueError) as exc:
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
    print(table(rows, ["link", "between", "capacity Mb/s", "original Mb/s", "one-way ms", "buffer pkts", "about"]))
    capacity = selftest.load()
    design = plan.metadata.get("openflow")
    rows = []
    routes = trace(plan, [(end["src"], end["dst"]) for end in plan.metadata.get("endpoints", [])])
    for end in plan.metadata.get("endpoints", []):
        for core_path in core_paths(plan):
            fig = routes.figures(links, end["src"], end["dst"], core_path)
            over = selftest.over_capacity(fig.bottleneck_mbps or 0, capacity, len(fig.shaped_links))
            rows.append({"path": f"{fig.src} -> {fig.dst}", "via": core_path or "", "RTT ms": f"{fig.rtt_ms:g}",
                         "documented RTT ms": f"{end['rtt_ms']:g}", "bottleneck": fig.bottleneck_link,
                         "bottleneck Mb/s": f"{fig.bottleneck_mbps:g}" + (" (!)" if over else ""),
                         "BDP pkts": fig.bdp_pkts, "shaped links": " ".join(fig.shaped_links)})
    if rows:
        print()
        print(table(rows, ["path", *(["via"] if design else []), "RTT ms", "documented RTT ms", "bottleneck",
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
    calibrated = plan.metadata.get("calibrated")
    if calibrated:
        print(f"\nCalibrated element ({calibrated['element']}): every downstream packet delayed by "
              f"{calibrated['max_delay_ms']:g} ms x min(1, load / {calibrated['knee']:g}) x "
              f"flows^{calibrated.get('flow_exponent', 0):g}, the load and the flows (equally loaded ones the "
              f"traffic amounts to) read over {calibrated['window_ms']:g} ms -- {calibrated['note']}. "
              "`--arg phantom=off`: the documented mechanisms alone.")
    return 0


def register(sub: Any) -> None:
    """The `run` command groups on the top-level subparsers."""
    run = sub.add_parser("run", help="run an experiment spec",
                         example="fastlab run examples/simple-cubic.yaml --set flows.0.cc=bbr")
    run.positional("spec", metavar="SPEC", words="the experiment spec, a YAML file",
                   help="experiment spec (YAML)", example="examples/simple-cubic.yaml")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="override a field, e.g. --set topology_args.rate_mbps=20 --set flows.0.cc=bbr")
    run.add_argument("--out", metavar="DIRECTORY",
                     help="results directory (default: results/<time>-<name>-<run>, or under $FASTLAB_RESULTS)")
    run.add_argument("--check", action="store_true",
                     help="validate the spec against this machine and stop: creates nothing, but probes the "
                          "kernel (qdiscs, iptables) in a throwaway network namespace (unshare -n) that vanishes "
                          "with the probe")
    run.add_argument("--repeat", metavar="N",
                     help="run the spec N times, repetition r with seed + r (its repeat: field): a folder of runs "
                          "and each figure's median and 95 %% interval over the faithful ones; resumable")
    run.add_argument("--topology-file", metavar="FILE.py",
                     help="run on the topology in this Python file (NAME, DESCRIPTION, Args, plan) instead of "
                          "the spec's, e.g. --topology-file my_topo.py")
    run.set_defaults(func=cmd_run)
    doctor = sub.add_parser("doctor", help="what this machine can do, and the backend for each job",
                            example="fastlab doctor --json")
    doctor.add_argument("--json", action="store_true", help="the capabilities, backends and measured capacity as JSON")
    doctor.add_argument("--self-test", action="store_true",
                        help="first measure the highest rate and flow count this machine emulates faithfully "
                             "(runs experiments, ~2 minutes, root)")
    doctor.set_defaults(func=cmd_doctor)
    sub.add_parser("cleanup", help="remove leftovers of fastlab runs (only)",
                   example="fastlab cleanup").set_defaults(func=cmd_cleanup)
    topo = sub.add_parser("topo", help="topologies: list, show", example="fastlab topo show sc2002 --scale 0.1")
    topo_sub = topo.commands("topo_command")
    topo_sub.add_parser("list", help="list topologies and their arguments",
                        example="fastlab topo list").set_defaults(func=cmd_topo_list)
    show = topo_sub.add_parser("show", help="nodes, links, capacities, RTTs and BDPs of a topology",
                               example="fastlab topo show docsis --arg mode=simple")
    show.positional("name", metavar="TOPOLOGY", words="the topology's name, as fastlab topo list shows it, or its file",
                    help="a topology's name, as `fastlab topo list` shows, or its Python file (FILE.py)",
                    example="sc2002")
    show.add_argument("--scale", type=float, help="capacity scale factor (topologies that take one), e.g. 0.1")
    show.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                      help="another topology argument, e.g. --arg rate_mbps=20")
    show.set_defaults(func=cmd_topo_show)
