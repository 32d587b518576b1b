"""`fastlab lab`: list, run and check the guided labs."""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import Any

from fastlab.cli.common import CliError, cancel_on_signals, need_root, table


def _lab(ref: str) -> Any:
    from fastlab.labs.kit import LabError, load_lab

    try:
        return load_lab(ref)
    except LabError as exc:
        raise CliError(str(exc)) from None


def _print_step(outcome: Any) -> None:
    seed = f" seed {outcome.seed}" if outcome.seed is not None else ""
    print(f"step {outcome.id}{seed}: {outcome.title} ({outcome.duration_s:.0f} s) -> {outcome.directory}")
    if outcome.error:
        print(f"  FAIL {outcome.error}")
    if outcome.inconclusive:
        print(f"  INCONCLUSIVE: {outcome.inconclusive}; the figures below prove nothing either way")
    for check in outcome.checks:
        print(f"  {check.line()}")


def cmd_lab_list(args: argparse.Namespace) -> int:
    from fastlab.labs.kit import LabError, list_labs

    try:
        labs = list_labs()
    except LabError as exc:
        raise CliError(str(exc)) from None
    rows = [{"lab": lab.number, "name": lab.name, "title": lab.title, "minutes": f"{lab.minutes:g}",
             "steps": len(lab.steps)} for lab in labs]
    print(table(rows, ["lab", "name", "title", "minutes", "steps"]) if rows else "no labs")
    return 0


def cmd_lab_run(args: argparse.Namespace) -> int:
    from fastlab.labs.kit import LabError
    from fastlab.labs.run import EXIT_STATUS, check_repeat, run_lab

    lab = _lab(args.lab)
    out = Path(args.out) if args.out else None
    try:
        check_repeat(args.repeat)
        for step_id in args.step:
            lab.step(step_id)
        if out is not None and out.exists() and any(out.iterdir()):
            raise LabError(f"--out {out}: directory exists and is not empty")
        need_root("fastlab lab run")
        cancel = cancel_on_signals()
        run = run_lab(lab, out=out, short=args.short, step_ids=args.step or None, on_step=_print_step,
                      cancel=cancel, repeat=args.repeat)
    except LabError as exc:
        raise CliError(str(exc)) from None
    if cancel.is_set():
        raise KeyboardInterrupt
    print(run.headline())
    print(run.directory)
    return EXIT_STATUS[run.status]


def cmd_lab_check(args: argparse.Namespace) -> int:
    from fastlab.labs.kit import LabError
    from fastlab.labs.run import EXIT_STATUS, check_lab_run, latest_lab_run

    try:
        directory = Path(args.run) if args.run else latest_lab_run(_lab(args.lab))
        run = check_lab_run(directory)
        if run.lab.number != _lab(args.lab).number:
            raise LabError(f"--run {directory}: it is a run of lab {run.lab.name}, not lab {args.lab}")
    except LabError as exc:
        raise CliError(str(exc)) from None
    for outcome in run.steps:
        _print_step(outcome)
    print(run.headline())
    return EXIT_STATUS[run.status]


def cmd_lab_record(args: argparse.Namespace) -> int:
    """Run the lab's steps (or the ones named) in the forms asked and store each run on which every
    checkpoint passes as the step's recording (fastlab.labs.record); a run that does not is kept where it
    ran and named, not stored."""
    from fastlab.labs.kit import LabError
    from fastlab.labs.record import size_of, store_recording
    from fastlab.labs.run import lab_runs_root, run_lab

    lab = _lab(args.lab)
    if args.draws:
        return _record_draws(lab, args)
    forms = {"full": [False], "short": [True], "both": [False, True]}[args.form]
    refused = 0
    try:
        for step_id in args.step:
            lab.step(step_id)
        need_root("fastlab lab record")
        cancel = cancel_on_signals()
        for short in forms:
            form = "short" if short else "full"
            out = lab_runs_root() / f"record-{dt.datetime.now():%Y%m%d-%H%M%S}-{lab.name}-{form}"
            run = run_lab(lab, out=out, short=short, step_ids=args.step or None, on_step=_print_step, cancel=cancel)
            if cancel.is_set():
                raise KeyboardInterrupt
            for outcome in run.steps:
                try:
                    target, report = store_recording(lab, outcome.id, short, Path(outcome.directory))
                except LabError as exc:
                    refused += 1
                    print(f"NOT RECORDED {outcome.id} ({form}): {exc}; the run stays in {outcome.directory}")
                    continue
                dropped = sum(len(c) for c in report.dropped.values())
                print(f"recorded {outcome.id} ({form}) -> {target} ({size_of(target) / 1e3:.0f} kB, "
                      f"{dropped} trace columns no checkpoint reads left out)")
    except LabError as exc:
        raise CliError(str(exc)) from None
    return 1 if refused else 0


def _record_draws(lab: Any, args: argparse.Namespace) -> int:
    """`fastlab lab record N --step ID --draws [--from DIR]`: the step's repetitions (its claims over draws)
    as its recorded draws, from a finished lab run made with --repeat (or run here, as many as it asks)."""
    from fastlab.labs.draws import draw_calls, draws_asked
    from fastlab.labs.kit import LabError
    from fastlab.labs.record import size_of, store_draws
    from fastlab.labs.run import lab_runs_root, run_lab

    try:
        if len(args.step) != 1 or not draw_calls(lab, lab.step(args.step[0]).id):
            raise LabError("--draws: name one step (--step ID) that has a checkpoint judged over draws")
        step = lab.step(args.step[0])
        if args.source_run:
            folder = Path(args.source_run) / step.id
            runs = sorted(p for p in folder.glob("seed-*") if p.is_dir()) if folder.is_dir() else []
        else:
            need_root("fastlab lab record --draws")
            cancel = cancel_on_signals()
            out = lab_runs_root() / f"record-{dt.datetime.now():%Y%m%d-%H%M%S}-{lab.name}-draws"
            asked = draws_asked(lab, step.id)
            run = run_lab(lab, out=out, step_ids=[step.id], on_step=_print_step, cancel=cancel, repeat=asked)
            if cancel.is_set():
                raise KeyboardInterrupt
            runs = [Path(o.directory) for o in run.steps if o.seed is not None and not o.error]
        stored = store_draws(lab, step.id, runs)
    except LabError as exc:
        raise CliError(str(exc)) from None
    for target in stored:
        print(f"recorded draw {target} ({size_of(target) / 1e3:.0f} kB)")
    return 0


def cmd_lab_keep(args: argparse.Namespace) -> int:
    """Keep a step of a finished lab run as a labelled case (recorded/cases/NAME) with its verdict."""
    from fastlab.labs.kit import LabError
    from fastlab.labs.record import keep_case, size_of
    from fastlab.labs.run import read_lab_record

    lab = _lab(args.lab)
    run_dir = Path(args.run)
    try:
        short = bool(read_lab_record(run_dir).get("short"))
        step_dir = run_dir / lab.step(args.step).id
        if not step_dir.is_dir():
            raise LabError(f"--run {run_dir}: no run of step {args.step}")
        target, _ = keep_case(lab, step_dir, args.step, short, args.name, args.expect, args.why, args.source)
    except LabError as exc:
        raise CliError(str(exc)) from None
    print(f"kept {target} ({size_of(target) / 1e3:.0f} kB): it must stay {args.expect}")
    return 0


def register(sub: Any) -> None:
    """The `lab` command groups on the top-level subparsers."""
    lab = sub.add_parser("lab", help="guided labs: list, run, check, record, keep", example="fastlab lab list")
    lab_sub = lab.commands("command_lab")
    lab_ref: dict[str, str] = {"metavar": "LAB", "words": "the lab: its number, folder name or slug",
                               "help": "lab number, folder name or slug", "example": "2"}
    lab_sub.add_parser("list", help="the labs in labs/", example="fastlab lab list").set_defaults(func=cmd_lab_list)
    lab_run = lab_sub.add_parser("run", help="run a lab's steps and evaluate its checkpoints",
                                 example="fastlab lab run 2 --short")
    lab_run.positional("lab", **lab_ref)
    lab_run.add_argument("--short", action="store_true", help="the shortened form (CI)")
    lab_run.add_argument("--out", metavar="DIRECTORY", help="lab run directory (default: results/labs/<time>-NN-slug)")
    lab_run.add_argument("--step", action="append", default=[], metavar="ID",
                         help="only this step (repeatable), e.g. --step live")
    lab_run.add_argument("--repeat", type=int, default=1, metavar="N",
                         help="run each step N times, repetition r with the step's seed + r; a step's claims over "
                              "draws are judged on the share of them (e.g. lab 4's fairness: --repeat 10)")
    lab_run.set_defaults(func=cmd_lab_run)
    lab_check = lab_sub.add_parser("check", help="re-evaluate the checkpoints of a finished lab run",
                                   example="fastlab lab check 2")
    lab_check.positional("lab", **lab_ref)
    lab_check.add_argument("--run", metavar="DIRECTORY", help="lab run directory (default: the latest run of the lab)")
    lab_check.set_defaults(func=cmd_lab_check)
    record = lab_sub.add_parser("record", help="run steps and store them as the lab's recorded runs (unit tier)",
                                example="fastlab lab record 2 --step live --form short")
    record.positional("lab", **lab_ref)
    record.add_argument("--step", action="append", default=[], metavar="ID", help="only this step (repeatable)")
    record.add_argument("--form", choices=["full", "short", "both"], default="both", help="which forms (default both)")
    record.add_argument("--draws", action="store_true",
                        help="store the step's repetitions as its recorded draws (recorded/draws/<step>/seed-<n>)")
    record.add_argument("--from", dest="source_run", metavar="DIRECTORY",
                        help="with --draws: take them from this lab run (made with --repeat) instead of running")
    record.set_defaults(func=cmd_lab_record)
    keep = lab_sub.add_parser("keep", help="keep a step of a lab run as a labelled case with its verdict",
                              example="fastlab lab keep 2 --run results/labs/20261128-101500-02-fast-equilibrium "
                                      "--step live --as late-change --expect pass --why 'the change came late' "
                                      "--source 'CI, 2026-11-28'")
    keep.positional("lab", **lab_ref)
    keep.add_argument("--run", required=True, metavar="DIRECTORY", help="the lab run directory (holds lab.json)")
    keep.add_argument("--step", required=True, metavar="ID", help="the step to keep")
    keep.add_argument("--as", dest="name", required=True, metavar="NAME", help="the case's name (a-z, 0-9, -)")
    keep.add_argument("--expect", required=True, choices=["pass", "fail", "inconclusive"],
                      help="the step's verdict the case must keep getting")
    keep.add_argument("--why", required=True, help="what happened in the run and why that verdict")
    keep.add_argument("--source", required=True, help="where the run came from (CI, bench; date, commit)")
    keep.set_defaults(func=cmd_lab_keep)
