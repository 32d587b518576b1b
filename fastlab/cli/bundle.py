"""`fastlab bundle`: export, verify and replay result bundles."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fastlab.cli.common import CliError, cancel_on_signals, need_root, run_failed


def cmd_bundle_export(args: argparse.Namespace) -> int:
    from fastlab.results.bundle import BundleError, export

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
    from fastlab.results.bundle import BundleError, fidelity_lines, verify

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

    from fastlab.define.schema import SpecError
    from fastlab.experiment.engine import RunError
    from fastlab.experiment.replay import default_directory, replay_bundle, table
    from fastlab.results.bundle import BundleError, verify

    bundle_path = Path(args.bundle)
    if not bundle_path.is_file():
        raise CliError(f"{args.bundle}: no such file")
    problems = verify(bundle_path)
    if problems:
        raise CliError(f"{args.bundle}: fails verification ({len(problems)} problem(s)), first: {problems[0]}")
    out = Path(args.out) if args.out else default_directory(bundle_path)
    if out.exists() and any(out.iterdir()):
        raise CliError(f"--out {out}: directory exists and is not empty")
    need_root("fastlab bundle replay")
    cancel = cancel_on_signals()
    try:
        outcomes = replay_bundle(bundle_path, out, point=args.point, cancel=cancel)
    except (BundleError, SpecError) as exc:
        shutil.rmtree(out, ignore_errors=True)
        raise CliError(str(exc)) from None
    except RunError as exc:
        return run_failed("replay run", exc, cancel)
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


def register(sub: Any) -> None:
    """The `bundle` command groups on the top-level subparsers."""
    bundle = sub.add_parser("bundle", help="result bundles: export, verify, replay",
                            example="fastlab bundle verify run.zip")
    bundle_sub = bundle.commands("command_bundle")
    bundle_export = bundle_sub.add_parser("export", help="a run or sweep directory as a zip with a SHA-256 manifest",
                                          example="fastlab bundle export results/20261128-101500-simple-cubic-fl3a9c "
                                                  "-o run.zip")
    bundle_export.positional("directory", metavar="DIRECTORY", words="the run or sweep directory to export",
                             help="run or sweep directory", example="results/20261128-101500-simple-cubic-fl3a9c")
    bundle_export.add_argument("-o", "--output", metavar="FILE.zip", help="bundle to write (default: <name>.zip)")
    bundle_export.set_defaults(func=cmd_bundle_export)
    bundle_verify = bundle_sub.add_parser("verify", help="check every file against the manifest (exit 1: altered)",
                                          example="fastlab bundle verify run.zip")
    bundle_verify.positional("bundle", metavar="FILE.zip", words="the bundle, a .zip file",
                             help="a bundle made by fastlab bundle export or the web app", example="run.zip")
    bundle_verify.set_defaults(func=cmd_bundle_verify)
    bundle_replay = bundle_sub.add_parser("replay", help="rerun a bundle's spec here and compare (exit 1: differs)",
                                          example="fastlab bundle replay sweep.zip --point p03-r1")
    bundle_replay.positional("bundle", metavar="FILE.zip", words="the bundle, a .zip file",
                             help="a bundle made by fastlab bundle export or the web app", example="run.zip")
    bundle_replay.add_argument("--out", metavar="DIRECTORY",
                               help="replay directory (default: results/replays/<time>-<bundle>)")
    bundle_replay.add_argument("--point", metavar="ID", help="of a sweep bundle, only this point, e.g. p03-r1")
    bundle_replay.set_defaults(func=cmd_bundle_replay)
