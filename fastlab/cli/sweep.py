"""`fastlab sweep` and `fastlab cluster`: parameter sweeps, here or on a Dask cluster."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from fastlab.base import paths
from fastlab.cli.common import CliError, cancel_on_signals, need_root, raise_on_sigterm


def cmd_sweep_run(args: argparse.Namespace) -> int:
    from fastlab.define.schema import SpecError
    from fastlab.experiment.engine import prepare_run
    from fastlab.plan.capabilities import probe
    from fastlab.sweep import points as sweep

    try:
        plan = sweep.load_sweep(args.file, args.set)
        caps = probe()
        specs = sweep.check_points(plan, lambda spec: prepare_run(spec, caps=caps))
    except SpecError as exc:
        raise CliError(str(exc)) from None
    out = Path(args.out) if args.out else sweep.default_directory(plan)
    if args.check:
        print(f"{args.file}: valid, {len(plan.points)} points -> {out}")
        return 0
    cancel = None
    if args.cluster is None:
        need_root("fastlab sweep run")
        cancel = cancel_on_signals()
    else:
        raise_on_sigterm()
    result = run_plan(plan, specs, out, "sweep", cluster=args.cluster, cancel=cancel)
    if result is None:
        return 130
    print(result.directory)
    return 1 if result.failed else 0


def run_plan(plan: Any, specs: dict[str, Any], out: Path, what: str, *, cluster: str | None = None,
             cancel: Any = None) -> Any:
    """A sweep plan's points run into `out` (fastlab.sweep.run.run_sweep): its SweepResult, or None when
    interrupted (said on stderr: the finished points are kept, the same command resumes); CliError in one
    line for a folder it cannot run in. `what` names it in the message (a sweep, repetitions)."""
    from fastlab.sweep import points as sweep
    from fastlab.sweep import run as sweep_run

    try:
        return sweep_run.run_sweep(plan, specs, out, cluster=cluster, cancel=cancel)
    except sweep.SweepError as exc:
        raise CliError(str(exc)) from None
    except KeyboardInterrupt:
        print(f"fastlab: {what} interrupted; finished runs are kept: rerun the same command to resume ({out})",
              file=sys.stderr)
        return None


def cmd_sweep_status(args: argparse.Namespace) -> int:
    from fastlab.sweep.points import SweepError, status_lines

    try:
        print("\n".join(status_lines(Path(args.directory))))
    except SweepError as exc:
        raise CliError(str(exc)) from None
    return 0


def cluster_argv(role: str, args: argparse.Namespace, resources: str = "machine=1") -> list[str]:
    """The `dask scheduler` / `dask worker` command a cluster host runs (pure): a worker offers
    `resources` (fastlab.service.worker.worker_resources: one `machine`, every sweep point needs a whole
    host; the web queue's run slots and cores), one thread per run slot, and cleans up after dead runs
    at its start (`--preload fastlab.service.worker`)."""
    from fastlab.experiment.cost import MAX_RUNS

    argv = [sys.executable, "-m", "dask", role]
    if role == "worker":
        argv += [args.address, "--nthreads", str(MAX_RUNS), "--resources", resources,
                 "--preload", "fastlab.service.worker"]
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
    """Start a Dask scheduler or worker for `sweep run --cluster` (and the web app's `--cluster`) that
    cannot be started wrong: with this fastlab on its Python path (a scheduler without fastlab
    importable fails every point with "Error during deserialization of the task graph") and a worker's
    resources (its machine, run slots and this machine's budget of cores, fastlab.experiment.cost)."""
    resources = "machine=1"
    if args.role == "worker":
        need_root("fastlab cluster worker")
        from fastlab.experiment import selftest
        from fastlab.experiment.cost import machine_figures
        from fastlab.service.worker import resources_arg, worker_resources
        resources = resources_arg(worker_resources(machine_figures(selftest.load())))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(paths.package_parent()), os.environ.get("PYTHONPATH", "")) if p)}
    argv = cluster_argv(args.role, args, resources)
    print("fastlab: " + " ".join(argv[1:]), file=sys.stderr, flush=True)
    os.execve(sys.executable, argv, env)
    return 1  # not reached


def register(sub: Any) -> None:
    """The `sweep` command groups on the top-level subparsers."""
    sweep = sub.add_parser("sweep", help="parameter sweeps: run (resumable), status",
                           example="fastlab sweep run examples/sweep-alpha.yaml --check")
    sweep_sub = sweep.commands("command_sweep")
    sweep_run = sweep_sub.add_parser("run", help="run a spec's sweep: section; rerun the same command to resume",
                                     example="fastlab sweep run examples/sweep-alpha.yaml --set sweep.repeat=1")
    sweep_run.positional("file", metavar="SPEC", words="the sweep's spec, a YAML file with a sweep: section",
                         help="experiment spec with a top-level sweep: section (YAML)",
                         example="examples/sweep-alpha.yaml")
    sweep_run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                           help="override a field of the spec or the sweep, e.g. --set sweep.repeat=1")
    sweep_run.add_argument("--out", metavar="DIRECTORY",
                           help="sweep directory (default: results/sweeps/<name>-<digest>)")
    sweep_run.add_argument("--cluster", metavar="ADDRESS", help="Dask scheduler, e.g. tcp://10.0.0.5:8786; "
                           "workers: one per host, started with fastlab cluster worker")
    sweep_run.add_argument("--check", action="store_true",
                           help="validate every point against this machine and stop: creates nothing, but probes the "
                                "kernel in a throwaway network namespace (unshare -n)")
    sweep_run.set_defaults(func=cmd_sweep_run)
    sweep_status = sweep_sub.add_parser("status", help="points of a sweep directory and their status",
                                        example="fastlab sweep status results/sweeps/sweep-alpha-3f2a9c1d")
    sweep_status.positional("directory", metavar="DIRECTORY", words="the sweep's directory",
                            help="a sweep directory", example="results/sweeps/sweep-alpha-3f2a9c1d")
    sweep_status.set_defaults(func=cmd_sweep_status)
    cluster = sub.add_parser("cluster", help="a Dask scheduler or worker for sweep run --cluster and "
                             "python -m webapp --cluster", example="fastlab cluster scheduler --host 10.0.0.5")
    cluster_sub = cluster.commands("role")
    scheduler = cluster_sub.add_parser("scheduler", help="the cluster's scheduler (any one host)",
                                       example="fastlab cluster scheduler --host 10.0.0.5")
    scheduler.add_argument("--host", help="address to listen on, e.g. 10.0.0.5")
    scheduler.add_argument("--port", type=int, default=8786, help="port to listen on (default 8786)")
    scheduler.add_argument("--scheduler-file", metavar="FILE", help="write the scheduler's address to this JSON file")
    scheduler.set_defaults(func=cmd_cluster)
    worker = cluster_sub.add_parser("worker", help="a worker: one per lab host, as root",
                                    example="fastlab cluster worker tcp://10.0.0.5:8786 --host 10.0.0.7")
    worker.positional("address", metavar="ADDRESS", words="the scheduler's address",
                      help="the scheduler's address", example="tcp://10.0.0.5:8786")
    worker.add_argument("--host", help="this host's address on the lab network, e.g. 10.0.0.7")
    worker.add_argument("--local-directory", metavar="DIRECTORY", help="Dask's scratch directory")
    worker.set_defaults(func=cmd_cluster)
