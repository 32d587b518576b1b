"""Recorded lab runs: the run folders on which the unit tier judges every checkpoint of every lab.

A lab's physics is judged deterministically on recordings, never by a live run's luck (docs/design.md
§10). Under a lab folder:

- `recorded/full/<step>/` and `recorded/short/<step>/`: a faithful run of the step's full and short
  form on which every checkpoint passes. Made by `fastlab lab record N` (one command for a lab or a
  step, both forms); a recording whose spec no longer matches the step's (`spec_drift`) fails the
  unit tier until it is recorded again.
- `recorded/cases/<name>/`: a real run kept as a labelled fixture (a CI failure, a flaky case found
  by `bench/labs.py`), with `case.yaml` saying which step and form it ran, the verdict it must get
  now (`expect`: the step's status, optionally a status per checkpoint) and why. Made by
  `fastlab lab keep N --run DIR --step ID --as NAME --expect STATUS --why TEXT`.

A recording is kept small: spec.yaml, summary.json and environment.json whole, and of the traces only
the columns some checkpoint reads -- found by dropping each column in turn and keeping it dropped when
every checkpoint's result stays identical (`trim`). The rest of a run folder (report, drop logs,
RTT samples) is not copied.
"""

from __future__ import annotations

import logging
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fastlab.base import rundir
from fastlab.define.schema import SpecError, format_validation_error, load_spec, parse_yaml, to_plain
from fastlab.labs.kit import (
    CASES,
    DRAWS,
    FAIL,
    INCONCLUSIVE,
    PASS,
    RECORDED,
    CheckResult,
    Lab,
    LabError,
    StepRun,
    combined_status,
    evaluate_run,
)

log = logging.getLogger(__name__)

TRACES = {rundir.FLOWS: "flows", rundir.LINKS: "links", rundir.EVENTS: "cc_events",  # file -> StepRun attribute
          rundir.RTT_SAMPLES: "rtt_samples"}
# Columns never dropped: what identifies a row (the checkpoints select rows by them)
KEY_COLUMNS = frozenset({"flow", "link", "direction", "t", "event"})
CASE_FILE = "case.yaml"
CASE_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,59}")
# Spec fields that do not change what a run does: a recording stays valid when only they differ
NOT_PHYSICS = frozenset({"description", "name"})


# --- does a recording still stand for its step? ---------------------------------------------------

def _differences(recorded: Any, now: Any, path: str = "") -> list[str]:
    if isinstance(recorded, dict) and isinstance(now, dict):
        out = []
        for key in sorted(set(recorded) | set(now), key=str):
            if not path and key in NOT_PHYSICS:
                continue
            where = f"{path}.{key}" if path else str(key)
            out += _differences(recorded.get(key, "<absent>"), now.get(key, "<absent>"), where)
        return out
    if isinstance(recorded, list) and isinstance(now, list) and len(recorded) == len(now):
        pairs = enumerate(zip(recorded, now, strict=True))
        return [d for i, (a, b) in pairs for d in _differences(a, b, f"{path}[{i}]")]
    return [] if recorded == now else [f"{path}: recorded {recorded!r}, the step now {now!r}"]


def spec_drift(lab: Lab, step_id: str, short: bool, directory: Path, seed: int | None = None) -> list[str]:
    """How the step's spec (its form's overrides applied; `seed`: a repetition's) differs from the one its
    recording ran, field by field. The recorded spec is read through today's schema, so fields added since
    with their defaults are not differences; a changed value, field or default the spec names is."""
    try:
        recorded = to_plain(load_spec(str(directory / rundir.SPEC)))
    except SpecError as exc:
        return [f"the recorded spec.yaml no longer loads: {exc}"]
    return _differences(recorded, to_plain(lab.build_spec(step_id, short, None if seed is None else [f"seed={seed}"])))


# --- trimming ----------------------------------------------------------------------------------------

def fingerprint(results: list[CheckResult]) -> list[tuple[Any, ...]]:
    """Everything a checkpoint's result says, to compare two evaluations."""
    return [(r.name, r.passed, r.measured, r.expected, r.tolerance, r.note, r.inconclusive) for r in results]


@dataclass
class TrimReport:
    kept: dict[str, list[str]]
    dropped: dict[str, list[str]]


def _traces(directory: Path) -> dict[str, pd.DataFrame]:
    folder = rundir.RunFolder(directory)
    return {name: folder.csv(name) for name in TRACES if folder.has(name)}


def _evaluate_with(lab: Lab, step_id: str, short: bool, directory: Path,
                   frames: dict[str, pd.DataFrame]) -> list[tuple[Any, ...]]:
    run = StepRun(directory)
    for name, frame in frames.items():
        run.__dict__[TRACES[name]] = frame  # functools.cached_property keeps its value there
    return fingerprint(evaluate_run(lab, step_id, run, short))


def trim(lab: Lab, step_id: str, short: bool, source: Path, target: Path) -> TrimReport:
    """Copy the run `source` to `target` (made anew) as a recording: the whole files, and the traces
    gzipped with only the columns whose removal changes some checkpoint's result."""
    frames = _traces(source)
    reference = _evaluate_with(lab, step_id, short, source, frames)
    kept: dict[str, list[str]] = {}
    dropped: dict[str, list[str]] = {}
    for name in frames:
        for column in list(frames[name].columns):
            if column in KEY_COLUMNS:
                continue
            trial = dict(frames) | {name: frames[name].drop(columns=[column])}
            try:
                same = _evaluate_with(lab, step_id, short, source, trial) == reference
            except Exception:  # noqa: BLE001 - a checkpoint that crashes without the column reads it
                same = False
            if same:
                frames = trial
                dropped.setdefault(name, []).append(column)
        kept[name] = list(frames[name].columns)
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    rundir.RunFolder(target).write_recording(rundir.RunFolder(source), frames)
    # a trace left with its keys alone (no checkpoint reads a figure of it) goes whole when no result needs
    # the file: lab 04's links.csv kept 42 kB of (t, link, direction) per draw
    for name, frame in frames.items():
        path = target / f"{name}.gz" if (target / f"{name}.gz").exists() else target / name
        if set(frame.columns) <= KEY_COLUMNS and path.exists():
            aside = path.with_name(path.name + ".aside")
            path.rename(aside)
            try:
                same = _evaluate_with(lab, step_id, short, target, {}) == reference
            except Exception:  # noqa: BLE001 - a checkpoint that needs the file crashes without it
                same = False
            if same:
                aside.unlink()
                dropped.setdefault(name, []).append("(the whole file)")
            else:
                aside.rename(path)
    if _evaluate_with(lab, step_id, short, target, {}) != reference:  # read back from disk: the same verdicts
        raise LabError(f"{target}: the trimmed recording does not give the run's results again")
    return TrimReport(kept, dropped)


# --- recordings and cases ------------------------------------------------------------------------------

def store_recording(lab: Lab, step_id: str, short: bool, run_dir: Path) -> tuple[Path, TrimReport]:
    """Make `run_dir` (a finished run of the step) the step's recording of that form. Only a run on which
    every checkpoint passes can stand for the step: anything else is refused with the reasons (keep it as
    a case instead)."""
    results = evaluate_run(lab, step_id, StepRun(run_dir), short, as_draw=True)  # a claim over draws: this one's
    statuses = {r.status for r in results}
    if statuses != {PASS}:
        bad = "; ".join(r.line().splitlines()[0] for r in results if r.status != PASS)
        raise LabError(f"{lab.name} step {step_id}: not stored as its recording, not every checkpoint passed: {bad}")
    target = lab.recording(step_id, short)
    return target, trim(lab, step_id, short, run_dir, target)


def store_draws(lab: Lab, step_id: str, runs: list[Path]) -> list[Path]:
    """Make `runs` (finished full-form repetitions of the step, each with its own seed) the step's recorded
    draws, `recorded/draws/<step>/seed-<seed>`, the folder made anew, each trimmed as a recording. Every run
    is kept, faithful or not (an unfaithful draw counts neither way, and says so); a run of another spec
    than the step's at its seed, two runs of one seed, or fewer than the draws the step asks are refused."""
    from fastlab.labs.draws import draws_asked

    asked = draws_asked(lab, step_id)
    if not asked:
        raise LabError(f"{lab.name} step {step_id}: no checkpoint of it is judged over draws")
    if len(runs) < asked:
        raise LabError(f"{lab.name} step {step_id}: {len(runs)} finished repetitions, the step's draws ask {asked}")
    seeds: dict[int, Path] = {}
    for run_dir in runs:
        seed = StepRun(run_dir).spec.get("seed")
        if not isinstance(seed, int) or isinstance(seed, bool) or seed in seeds:
            raise LabError(f"{run_dir}: its spec's seed {seed!r} is no seed of its own among the repetitions")
        drift = spec_drift(lab, step_id, False, run_dir, seed)
        if drift:
            raise LabError(f"{run_dir}: not a run of {lab.name} step {step_id} at seed {seed}: {'; '.join(drift[:3])}")
        seeds[seed] = run_dir
    root = lab.folder / RECORDED / DRAWS / lab.step(step_id).id
    if root.exists():
        shutil.rmtree(root)
    stored = []
    for seed, run_dir in sorted(seeds.items()):
        target = root / f"seed-{seed}"
        trim(lab, step_id, False, run_dir, target)
        stored.append(target)
    return stored


class CaseExpectation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    status: str = Field(pattern=f"^({PASS}|{FAIL}|{INCONCLUSIVE})$", description="the step's status it must get")
    checks: dict[str, str] = Field(default_factory=dict, description="checkpoint name -> the status it must get")


class CaseFile(BaseModel):
    """case.yaml of a kept run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step: str = Field(min_length=1)
    short: bool
    expect: CaseExpectation
    why: str = Field(min_length=20, max_length=4000,
                     description="what happened in the run and why it must get this verdict")
    source: str = Field(min_length=1, max_length=400, description="where the run came from (CI, bench, date, commit)")


@dataclass
class Case:
    name: str
    directory: Path
    file: CaseFile


def load_cases(lab: Lab) -> list[Case]:
    """The lab's kept runs, each with its case.yaml validated (LabError naming the file and field)."""
    root = lab.folder / RECORDED / CASES
    cases = []
    for directory in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
        where = f"{lab.name}/{RECORDED}/{CASES}/{directory.name}/{CASE_FILE}"
        try:
            data = parse_yaml((directory / CASE_FILE).read_text(encoding="utf-8"))
            case = CaseFile.model_validate(data)
        except OSError as exc:
            raise LabError(f"{where}: cannot read: {exc.strerror}") from None
        except ValidationError as err:
            raise LabError(f"{where}: {format_validation_error(err)}") from None
        except ValueError as exc:
            raise LabError(f"{where}: {exc}") from None
        lab.step(case.step)
        for check in case.expect.checks.values():
            if check not in (PASS, FAIL, INCONCLUSIVE):
                raise LabError(f"{where}: expect.checks: {check!r} is not one of pass, fail, inconclusive")
        cases.append(Case(directory.name, directory, case))
    return cases


def judge_case(lab: Lab, case: Case) -> list[str]:
    """How the kept run's verdict today differs from the one its case.yaml says it must get ([] = as said)."""
    results = evaluate_run(lab, case.file.step, StepRun(case.directory), case.file.short)
    problems = []
    status = combined_status([r.status for r in results])
    if status != case.file.expect.status:
        problems.append(f"the step is {status}, the case expects {case.file.expect.status}")
    by_name = {r.name: r for r in results}
    for name, expected in case.file.expect.checks.items():
        got = by_name.get(name)
        if got is None:
            problems.append(f"no checkpoint named {name!r} (the step has: {', '.join(by_name)})")
        elif got.status != expected:
            problems.append(f"{got.line().splitlines()[0]} -- the case expects {expected}")
    return problems


def keep_case(lab: Lab, run_dir: Path, step_id: str, short: bool, name: str, expect: str, why: str,
              source: str) -> tuple[Path, TrimReport]:
    """Keep a real run of a step as `recorded/cases/<name>`, with the status of the step and of each
    checkpoint it gets today as the verdict it must keep getting. Refused when the step's status is not
    `expect` (a case records what the checkpoints do, not a wish)."""
    if not CASE_NAME.fullmatch(name):
        raise LabError(f"--as {name!r}: a case name is lower-case letters, digits and dashes (at most 60)")
    step_id = lab.step(step_id).id
    results = evaluate_run(lab, step_id, StepRun(run_dir), short)
    status = combined_status([r.status for r in results])
    if status != expect:
        raise LabError(f"{lab.name} step {step_id}: the run is {status} today, not {expect}: not kept")
    case = CaseFile(step=step_id, short=short, why=why, source=source,
                    expect=CaseExpectation(status=status, checks={r.name: r.status for r in results}))
    target = lab.folder / RECORDED / CASES / name
    report = trim(lab, step_id, short, run_dir, target)
    (target / CASE_FILE).write_text(yaml.safe_dump(case.model_dump(), sort_keys=False, width=100))
    return target, report


def size_of(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
