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
from fastlab.define.schema import SpecError
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
    id: str
    title: str
    directory: str
    duration_s: float
    checks: list[CheckResult]
    error: str = ""

    @property
    def status(self) -> str:
        return FAIL if self.error else combined_status([c.status for c in self.checks])

    @property
    def passed(self) -> bool:
        return self.status == PASS

    @property
    def inconclusive(self) -> str:
        """The fidelity verdict's reasons when the step's run could not judge its checkpoints."""
        return next((c.inconclusive for c in self.checks if c.inconclusive), "")

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "directory": self.directory, "status": self.status,
                "passed": self.passed, "inconclusive": self.inconclusive,
                "duration_s": round(self.duration_s, 1), "error": self.error,
                "checks": [c.as_dict() for c in self.checks]}


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
        if self.status == PASS:
            return f"lab {self.lab.name}: all checkpoints pass"
        if self.status == FAIL:
            return f"lab {self.lab.name}: some checkpoints FAIL"
        steps = ", ".join(s.id for s in self.steps if s.status == INCONCLUSIVE)
        return (f"lab {self.lab.name}: INCONCLUSIVE: the run of step(s) {steps} was not faithful, so their "
                f"checkpoints prove nothing either way; run them again on a quieter machine or at a lower scale")

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


def run_lab(lab: Lab, *, out: Path | None = None, short: bool = False, step_ids: list[str] | None = None,
            on_step: Callable[[StepOutcome], None] = lambda _outcome: None,
            on_sample: Callable[[dict[str, Any]], None] | None = None,
            cancel: threading.Event | None = None) -> LabRun:
    """Run the lab's steps (or the ones named) in order through the engine and evaluate each.

    Every spec is built and checked by `prepare` before the first step runs, so a broken step
    stops the lab before anything is created. A step whose run fails is recorded with its error
    and the lab goes on to the next step (except when cancelled).
    """
    from fastlab.experiment.engine import RunError, prepare_run
    from fastlab.service.run import execute

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
        log.info("step %s (%d of %d, %g s of flows): %s", step.id, number, len(steps), specs[step.id].duration_s,
                 step.title)
        step_dir = directory / step.id
        t0 = time.monotonic()
        try:
            execute(specs[step.id], step_dir, on_sample=on_sample, cancel=cancel, scripts=directory)
            outcome = StepOutcome(step.id, step.title, str(step_dir), time.monotonic() - t0,
                                  evaluate_step(lab, step.id, step_dir, short))
        except RunError as exc:
            outcome = StepOutcome(step.id, step.title, str(step_dir), time.monotonic() - t0, [], f"run failed: {exc}")
        run.steps.append(outcome)
        run.save()
        on_step(outcome)
        if cancel is not None and cancel.is_set():
            break
    return run


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
        step_dir = directory / step.id
        if step_dir.is_dir():
            run.steps.append(StepOutcome(step.id, step.title, str(step_dir), entry.get("duration_s", 0.0),
                                         evaluate_step(lab, step.id, step_dir, run.short)))
        else:
            run.steps.append(StepOutcome(step.id, step.title, str(step_dir), 0.0, [], "no run directory"))
    if not run.steps:
        raise LabError(f"{directory}: the lab run has no finished step")
    return run
