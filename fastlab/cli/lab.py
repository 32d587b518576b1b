"""`fastlab lab`: list, run and check the guided labs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fastlab.cli.common import CliError, cancel_on_signals, need_root, table


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
    print(table(rows, ["lab", "name", "title", "minutes", "steps"]) if rows else "no labs")
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
        need_root("fastlab lab run")
        cancel = cancel_on_signals()
        run = run_lab(lab, out=out, short=args.short, step_ids=args.step or None, on_step=_print_step,
                      cancel=cancel)
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


def register(sub: Any) -> None:
    """The `lab` command groups on the top-level subparsers."""
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
