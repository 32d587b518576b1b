"""Running guided labs and judging the runs: each step through the engine, its checkpoints evaluated as
it ends (`run_lab`, `lab.json` written as it goes), a finished lab run judged again (`check_lab_run`),
and the verdicts of a step and of a lab (PASS, FAIL, INCONCLUSIVE) with the CLI's exit status.

The lab format and the checkpoint kit lab authors import are `fastlab.labs.kit`; this module only runs them.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastlab.base import paths
from fastlab.base.documents import DocumentError, one_line, read_json_file
from fastlab.define.schema import MAX_REPEAT, SpecError
from fastlab.labs.draws import draw_calls, draw_seeds, draws_asked, judge_draws
from fastlab.labs.kit import (
    FAIL,
    INCONCLUSIVE,
    PASS,
    CheckResult,
    Lab,
    LabError,
    combined_status,
    evaluate_step,
    load_lab,
)

log = logging.getLogger(__name__)


@dataclass
class StepOutcome:
    """A step's run and its checkpoints; with `--repeat N` one per repetition (`seed` set: its folder is
    <step>/seed-<seed>), then one `over_draws` outcome judging the step's draw-judged checkpoints on the share
    of its repetitions (fastlab.labs.draws). A repetition's status leaves those checkpoints out: one draw is
    not their verdict."""

    id: str
    title: str
    directory: str
    duration_s: float
    checks: list[CheckResult]
    error: str = ""
    seed: int | None = None  # a repetition of the step: the seed it ran with
    over_draws: bool = False  # the step's draw-judged checkpoints over its repetitions

    @property
    def status(self) -> str:
        judged = [c for c in self.checks if self.over_draws or not c.over_draws]  # a claim over draws: its outcome's
        if self.error:
            return FAIL
        return combined_status([c.status for c in judged]) if judged or not self.checks else INCONCLUSIVE

    @property
    def passed(self) -> bool:
        return self.status == PASS

    @property
    def inconclusive(self) -> str:
        """The fidelity verdict's reasons when the step's run could not judge its checkpoints."""
        return next((c.inconclusive for c in self.checks if c.inconclusive and not c.over_draws), "")

    @property
    def one_draw(self) -> list[str]:
        """Checkpoints a single run cannot judge (claims over draws): their labels, when the run has them."""
        return [c.name for c in self.checks if c.over_draws and self.seed is None and not self.over_draws
                and c.inconclusive.startswith("one draw:")]

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "directory": self.directory, "status": self.status,
                "passed": self.passed, "inconclusive": self.inconclusive,
                "duration_s": round(self.duration_s, 1), "error": self.error, "seed": self.seed,
                "over_draws": self.over_draws, "checks": [c.as_dict() for c in self.checks]}


@dataclass
class LabRun:
    lab: Lab
    directory: Path
    short: bool
    started: str
    steps: list[StepOutcome] = field(default_factory=list)

    @property
    def status(self) -> str:
        return combined_status([s.status for s in self.steps])

    @property
    def passed(self) -> bool:
        return self.status == PASS

    def headline(self) -> str:
        """One line for the CLI: all pass, some FAIL, or inconclusive and why."""
        # a claim over draws run once is no verdict either way: said, not counted (fastlab.labs.draws)
        drawn = [f"step {s.id}'s {', '.join(s.one_draw)} is a claim over draws and this run one draw of it "
                 f"(judge it with --repeat {draws_asked(self.lab, s.id)})" for s in self.steps if s.one_draw]
        if self.status == PASS:
            return "; ".join([f"lab {self.lab.name}: all checkpoints pass", *drawn])
        if self.status == FAIL:
            return "; ".join([f"lab {self.lab.name}: some checkpoints FAIL", *drawn])
        unfaithful = ", ".join(s.id for s in self.steps if s.status == INCONCLUSIVE and s.inconclusive)
        undecided = ", ".join(s.id for s in self.steps if s.status == INCONCLUSIVE and not s.inconclusive
                              and not s.one_draw)
        parts = [f"the run of step(s) {unfaithful} was not faithful, so their checkpoints prove nothing either "
                 f"way; run them again on a quieter machine or at a lower scale"] if unfaithful else []
        parts += [f"step(s) {undecided}: the share of draws does not decide the claim yet (its 95 % interval holds "
                  f"the share claimed: more repetitions would tell)"] if undecided else []
        return f"lab {self.lab.name}: INCONCLUSIVE: " + "; ".join(parts + drawn)

    def as_dict(self) -> dict[str, Any]:
        return {"lab": self.lab.number, "name": self.lab.name, "title": self.lab.title, "short": self.short,
                "started": self.started, "status": self.status, "passed": self.passed,
                "steps": [s.as_dict() for s in self.steps]}

    def save(self) -> None:
        (self.directory / LAB_RECORD).write_text(json.dumps(self.as_dict(), indent=1))


# Exit status of `fastlab lab run` and `lab check`: 0 every checkpoint passed, 1 one failed, and this
# when none failed but a step's run was not faithful (its checkpoints inconclusive).
EXIT_INCONCLUSIVE = 3
EXIT_STATUS = {PASS: 0, FAIL: 1, INCONCLUSIVE: EXIT_INCONCLUSIVE}


def lab_runs_root() -> Path:
    return paths.results_root() / "labs"


def new_lab_run_dir(lab: Lab) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return lab_runs_root() / f"{stamp}-{lab.name}"


def latest_lab_run(lab: Lab) -> Path:
    runs = sorted(p for p in lab_runs_root().glob(f"*-{lab.name}") if (p / LAB_RECORD).is_file()) \
        if lab_runs_root().is_dir() else []
    if not runs:
        raise LabError(f"no finished run of lab {lab.name} under {lab_runs_root()}: run `fastlab lab run {lab.number}`")
    return runs[-1]


def check_repeat(repeat: object) -> int:
    """`--repeat N` as run_lab takes it: a whole number of runs from 1 to the spec's MAX_REPEAT (a spec's own
    `repeat:` bound: each repetition is a whole run), else one LabError line."""
    if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= MAX_REPEAT:
        shown = repr(repeat)[:40]
        raise LabError(f"--repeat {shown}: a whole number of runs from 1 to {MAX_REPEAT}")
    return repeat


def run_lab(lab: Lab, *, out: Path | None = None, short: bool = False, step_ids: list[str] | None = None,
            on_step: Callable[[StepOutcome], None] = lambda _outcome: None,
            on_sample: Callable[[dict[str, Any]], None] | None = None,
            cancel: threading.Event | None = None, repeat: int = 1) -> LabRun:
    """Run the lab's steps (or the ones named) in order through the engine and evaluate each.

    Every spec is built and checked by `prepare` before the first step runs, so a broken step
    stops the lab before anything is created. A step whose run fails is recorded with its error
    and the lab goes on to the next step (except when cancelled). With `repeat` N > 1 each step runs N
    times, repetition r with the step's seed + r (its own draw of random loss and start jitter) in
    <step>/seed-<seed>, and the step's claims over draws are then judged on the share of its repetitions
    (fastlab.labs.draws).
    """
    from fastlab.experiment.engine import RunError, prepare_run
    from fastlab.service.run import execute

    check_repeat(repeat)
    steps = [lab.step(s) for s in step_ids] if step_ids else lab.steps
    specs = {}
    for step in steps:
        specs[step.id] = lab.build_spec(step.id, short)
        try:
            prepare_run(specs[step.id])
        except SpecError as exc:
            raise LabError(f"{lab.name} step {step.id} ({step.spec}): {exc}") from None
    directory = out or new_lab_run_dir(lab)
    if directory.exists() and any(directory.iterdir()):
        raise LabError(f"{directory}: directory exists and is not empty")
    directory.mkdir(parents=True, exist_ok=True)
    run = LabRun(lab, directory, short, dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    run.save()
    for number, step in enumerate(steps, start=1):
        log.info("step %s (%d of %d, %g s of flows%s): %s", step.id, number, len(steps), specs[step.id].duration_s,
                 f", {repeat} repetitions" if repeat > 1 else "", step.title)
        seeds = draw_seeds(specs[step.id].seed, repeat) if repeat > 1 else [None]
        for seed in seeds:
            spec = specs[step.id] if seed is None else specs[step.id].model_copy(update={"seed": seed})
            step_dir = directory / step.id if seed is None else directory / step.id / f"seed-{seed}"
            t0 = time.monotonic()
            try:
                execute(spec, step_dir, on_sample=on_sample, cancel=cancel, scripts=directory)
                outcome = StepOutcome(step.id, step.title, str(step_dir), time.monotonic() - t0,
                                      evaluate_step(lab, step.id, step_dir, short), seed=seed)
            except RunError as exc:
                outcome = StepOutcome(step.id, step.title, str(step_dir), time.monotonic() - t0, [],
                                      f"run failed: {exc}", seed=seed)
            run.steps.append(outcome)
            run.save()
            on_step(outcome)
            if cancel is not None and cancel.is_set():
                return run
        if repeat > 1 and draw_calls(lab, step.id, short):
            outcome = draws_outcome(lab, step.id, directory / step.id, [o for o in run.steps if o.id == step.id],
                                    short)
            run.steps.append(outcome)
            run.save()
            on_step(outcome)
    return run


def draws_outcome(lab: Lab, step_id: str, directory: Path, repetitions: list[StepOutcome],
                  short: bool = False) -> StepOutcome:
    """The step's claims over draws judged on its finished repetitions (a failed run is no draw)."""
    runs = [(f"seed-{o.seed}", Path(o.directory)) for o in repetitions if o.seed is not None and not o.error]
    judged = [result for result, _ in judge_draws(lab, step_id, runs, short)]
    step = lab.step(step_id)
    return StepOutcome(step.id, f"{step.title}: over {len(runs)} draws", str(directory), 0.0, judged,
                       over_draws=True)


LAB_RECORD = "lab.json"
# lab.json: a lab run's record, a few kB (one entry a step); a folder handed on may hold anything.
LAB_RECORD_MAX_CHARS = 1_000_000


def read_lab_record(directory: Path) -> dict[str, Any]:
    """A lab run folder's lab.json as `LabRun.save` writes it, read by the one bounded reader (a regular
    file, its size, depth and numbers bounded: one linked to /dev/zero made `lab check --run` read for
    ever); LabError "DIR: not a lab run (lab.json: why)" in one line for anything else."""
    def refused(why: str) -> LabError:
        return LabError(f"{directory}: not a lab run ({LAB_RECORD}: {one_line(why)[:200]})")

    try:
        record = read_json_file(directory / LAB_RECORD, max_chars=LAB_RECORD_MAX_CHARS)
    except OSError as exc:
        raise refused(exc.strerror or exc.__class__.__name__) from None
    except DocumentError as exc:
        raise refused(str(exc)) from None
    if not isinstance(record, dict) or not isinstance(record.get("name"), str):
        raise refused("an object naming its lab")
    entries = record.get("steps")
    if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("id"), str)
                                                for e in entries):
        raise refused("steps: a list of {id: ...} objects")
    durations = [e.get("duration_s", 0.0) for e in entries]
    if not all(isinstance(d, int | float) and not isinstance(d, bool) and math.isfinite(d) for d in durations):
        raise refused("steps[].duration_s: a number")
    return record


def check_lab_run(directory: Path) -> LabRun:
    """Re-evaluate the checkpoints of a finished lab run (its lab.json names the lab and steps)."""
    record = read_lab_record(directory)
    lab = load_lab(record["name"][:200])
    entries = record["steps"]
    run = LabRun(lab, directory, bool(record.get("short")), str(record.get("started", ""))[:100])
    for entry in entries:
        step = lab.step(entry["id"][:100])
        seed = entry.get("seed")
        if isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 2**31:
            step_dir = directory / step.id / f"seed-{seed}"
        elif entry.get("over_draws") is True:
            repetitions = [o for o in run.steps if o.id == step.id and o.seed is not None]
            run.steps.append(draws_outcome(lab, step.id, directory / step.id, repetitions, run.short))
            continue
        else:
            seed, step_dir = None, directory / step.id
        if step_dir.is_dir():
            run.steps.append(StepOutcome(step.id, step.title, str(step_dir), entry.get("duration_s", 0.0),
                                         evaluate_step(lab, step.id, step_dir, run.short), seed=seed))
        else:
            run.steps.append(StepOutcome(step.id, step.title, str(step_dir), 0.0, [], "no run directory", seed=seed))
    if not run.steps:
        raise LabError(f"{directory}: the lab run has no finished step")
    return run
