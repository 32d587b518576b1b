"""The reproduction scorecard: every published claim of the seed papers that the labs reproduce, the
figure the labs measure for it, and the verdict the lab's own checkpoint gives.

The claims are data (`labs/claims.yaml`, read through the bounded reader `fastlab.base.documents` and typed
here): each names its paper and where in it, the published figure with its unit, and the lab, step and
checkpoint (its label in lab.yaml) that measure it, at which scale. A row of the scorecard is that claim
judged on runs of the step:

- **from recordings** (the default, deterministic, the unit tier): the step's recorded full-form run
  (`recorded/full/<step>`) and every kept case of the full form (`recorded/cases/*`, step named in its
  case.yaml), each a run folder read through `StepRun`;
- **from re-runs** (`rerun`, `fastlab reproduce --run`): the step run N times on this machine (live).

The figure of a row is the checkpoint's own measured figure on each run: its median, and its spread as the
least and greatest over the runs. The verdict is the checkpoint's own verdict on each run, through
`fastlab.labs.kit.evaluate_run` -- never a second copy of a checkpoint's logic -- combined over the runs
(`combine`): an unfaithful run is INCONCLUSIVE and counts neither way; runs that disagree are MIXED. A claim
whose lab has no such step (yet) or no run of it is UNMEASURED, said with the reason.
"""

from __future__ import annotations

import logging
import math
import statistics
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from fastlab.base.documents import DocumentError, read_yaml_file
from fastlab.define.schema import format_validation_error
from fastlab.labs.draws import Draw, judge_share, share_words
from fastlab.labs.kit import (
    FAIL,
    INCONCLUSIVE,
    LABS_DIR,
    PASS,
    CheckpointCall,
    Lab,
    LabError,
    MissingData,
    StepRun,
    evaluate_run,
    load_lab,
)
from fastlab.labs.record import load_cases

log = logging.getLogger(__name__)

CLAIMS_FILE = "claims.yaml"  # in the labs folder, beside the labs it names
MAX_CLAIMS_CHARS = 200_000  # the project's file is ~12 kB
MAX_CLAIMS = 200
MIXED, UNMEASURED = "mixed", "unmeasured"
VERDICTS = (PASS, FAIL, MIXED, INCONCLUSIVE, UNMEASURED)
MAX_REPEAT = 20  # `--run --repeat N`: each repetition is a live run of minutes


class ClaimsError(ValueError):
    """A claims file that cannot be taken, as one line naming the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


Text = Field(min_length=1, max_length=400)


class Published(_Strict):
    """The published figure: a value (null when the paper states the claim only in words), the band the
    source gives (either end optional), its unit, and how the source says it."""

    value: float | int | None = None
    low: float | int | None = None
    high: float | int | None = None
    unit: str = Field(min_length=1, max_length=60)
    stated: str = Field(min_length=1, max_length=300)

    @field_validator("value", "low", "high")
    @classmethod
    def _finite(cls, v: float | int | None) -> float | int | None:
        if v is not None and not (math.isfinite(v) and abs(v) < 1e12):
            raise ValueError("must be a finite number below 1e12")
        return v

    @model_validator(mode="after")
    def _band(self) -> Published:
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError("low must not be above high")
        return self


class Paper(_Strict):
    cite: str = Field(min_length=1, max_length=400)
    note: str = Field("", max_length=600)


class Claim(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,47}$")
    paper: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,47}$")
    where: str = Field(min_length=1, max_length=200)
    published: Published
    lab: int = Field(ge=1, le=99)
    step: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,15}$")
    check: str = Field(min_length=1, max_length=80, description="the checkpoint's label in the step (lab.yaml)")
    scale: float | int = Field(gt=0, le=1, description="the capacities' scale the step runs at (1: the paper's)")


class ClaimsFile(_Strict):
    papers: dict[str, Paper] = Field(min_length=1, max_length=50)
    claims: list[Claim] = Field(min_length=1, max_length=MAX_CLAIMS)

    @model_validator(mode="after")
    def _refs(self) -> ClaimsFile:
        seen: set[str] = set()
        for i, claim in enumerate(self.claims):
            if claim.id in seen:
                raise ValueError(f"claims[{i}].id: duplicate claim id {claim.id!r}")
            seen.add(claim.id)
            if claim.paper not in self.papers:
                raise ValueError(f"claims[{i}].paper: no paper {claim.paper!r} under papers")
        return self


def claims_path(labs_root: Path = LABS_DIR) -> Path:
    return labs_root / CLAIMS_FILE


def load_claims(path: Path | None = None) -> ClaimsFile:
    """The claims file (default: the labs folder's), bounded and typed; anything else is one ClaimsError."""
    path = path or claims_path()
    try:
        data = read_yaml_file(path, max_chars=MAX_CLAIMS_CHARS)
    except OSError as exc:
        raise ClaimsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except DocumentError as exc:
        raise ClaimsError(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise ClaimsError(f"{path}: the document must be a mapping with papers and claims")
    try:
        return ClaimsFile.model_validate(data)
    except ValidationError as err:
        raise ClaimsError(f"{path}: {format_validation_error(err)}") from None


# --- judging a claim on runs ---------------------------------------------------------------------

@dataclass
class Judged:
    """One run's word on a claim: the checkpoint's figure (None when it measured nothing) and status."""

    run: str  # where the run is (a recording's folder relative to the labs folder, or a re-run's path)
    status: str
    figure: float | None
    note: str = ""


@dataclass
class Row:
    """A claim of the scorecard: the published figure, what the runs measured, the verdict."""

    claim: Claim
    paper: Paper
    runs: list[Judged] = field(default_factory=list)
    reason: str = ""  # why it is UNMEASURED, or the scale the runs ran at when it is not the claim's
    verdict: str = UNMEASURED
    median: float | None = None
    least: float | None = None
    most: float | None = None
    counted: int = 0  # runs the figure is taken over (the conclusive ones, or all when none is)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.claim.id, "paper": self.claim.paper, "cite": self.paper.cite, "where": self.claim.where,
                "published": self.claim.published.model_dump(), "lab": self.claim.lab, "step": self.claim.step,
                "check": self.claim.check, "scale": self.claim.scale, "verdict": self.verdict,
                "measured": {"median": self.median, "least": self.least, "most": self.most, "runs": self.counted},
                "reason": self.reason, "runs": [vars(r) for r in self.runs]}


def combine(statuses: list[str]) -> str:
    """The claim's verdict over its runs: INCONCLUSIVE runs count neither way; the conclusive ones all PASS
    (PASS), all FAIL (FAIL) or disagree (MIXED); none conclusive: INCONCLUSIVE; no run: UNMEASURED."""
    if not statuses:
        return UNMEASURED
    conclusive = {s for s in statuses if s != INCONCLUSIVE}
    if not conclusive:
        return INCONCLUSIVE
    return conclusive.pop() if len(conclusive) == 1 else MIXED


def claim_call(lab: Lab, claim: Claim) -> CheckpointCall | None:
    """The checkpoint call of the claim's step that measures it (None: the step has no such label)."""
    return next((c for c in lab.step(claim.step).checkpoints if c.label == claim.check), None)


def judge_run(lab: Lab, claim: Claim, run: StepRun, label: str, short: bool = False) -> Judged:
    """The claim's checkpoint on one run, by the lab's own evaluation of the whole step (the results come in
    the order of the step's calls, the short form skipping `full_only` ones). A checkpoint judged over draws
    gives each run's own status here (the run as one draw); the row's verdict is then the share's."""
    step = lab.step(claim.step)
    calls = [c for c in step.checkpoints if not (short and c.full_only)]
    results = evaluate_run(lab, claim.step, run, short, as_draw=True)
    for call, result in zip(calls, results, strict=True):
        if call.label == claim.check:
            figure = result.measured if isinstance(result.measured, int | float) else None
            if figure is not None and not math.isfinite(figure):
                figure = None
            return Judged(label, result.status, None if figure is None else float(figure), result.note)
    raise ClaimsError(f"claim {claim.id}: check: lab {lab.number} step {claim.step} has no checkpoint "
                      f"{claim.check!r} (it has: {', '.join(c.label for c in calls)})")


def recorded_runs(lab: Lab, step_id: str) -> list[tuple[str, Path]]:
    """The step's recorded runs of the full form: its recording and the kept cases of that step and form,
    each as (its folder relative to the labs folder, its path); a step with recorded draws
    (`recorded/draws/<step>/seed-<n>`, its repetitions by seed) is those draws alone -- the recording is
    one more run of the first seed, counted once."""
    draws = lab.draw_recordings(step_id)
    if draws:
        return [(f"{lab.name}/{d.relative_to(lab.folder)}", d) for d in draws]
    runs = []
    recording = lab.recording(step_id)
    if recording.is_dir():
        runs.append((f"{lab.name}/{recording.relative_to(lab.folder)}", recording))
    for case in load_cases(lab):
        if case.file.step == step_id and not case.file.short:
            runs.append((f"{lab.name}/{case.directory.relative_to(lab.folder)}", case.directory))
    return runs


RunsOf = Callable[[Lab, str], list[tuple[str, Path]]]


def score(claims: ClaimsFile, labs_root: Path = LABS_DIR, runs_of: RunsOf = recorded_runs,
          short: bool = False, only: list[str] | None = None) -> list[Row]:
    """One row per claim (those named in `only`, in the file's order), judged on `runs_of(lab, step)`."""
    chosen = [c for c in claims.claims if only is None or c.id in only]
    labs: dict[int, Lab | str] = {}
    rows = []
    for claim in chosen:
        row = Row(claim, claims.papers[claim.paper])
        rows.append(row)
        if claim.lab not in labs:
            try:
                labs[claim.lab] = load_lab(claim.lab, labs_root)
            except LabError as exc:
                labs[claim.lab] = str(exc)
        lab = labs[claim.lab]
        if isinstance(lab, str):
            row.reason = lab
            continue
        if claim.step not in {s.id for s in lab.steps}:
            row.reason = f"lab {lab.name} has no step {claim.step} in this checkout"
            continue
        skipped = [c.full_only for c in lab.step(claim.step).checkpoints if c.label == claim.check and c.full_only]
        if short and skipped:
            row.reason = f"the short form skips {claim.check}: {skipped[0]}"
            continue
        found = runs_of(lab, claim.step)
        if not found:
            row.reason = f"no run of {lab.name} step {claim.step}"
            continue
        for label, directory in found:
            run = StepRun(directory)
            row.runs.append(judge_run(lab, claim, run, label, short))
            try:
                ran_at = (run.spec.get("topology_args") or {}).get("scale")
            except MissingData:
                ran_at = None
            if isinstance(ran_at, int | float) and not math.isclose(float(ran_at), float(claim.scale)):
                row.reason = f"ran at scale {ran_at:g}, the claim's step at {claim.scale:g}"
        _sum_up(row, claim_call(lab, claim))
    return rows


def _sum_up(row: Row, call: CheckpointCall | None = None) -> None:
    row.verdict = combine([r.status for r in row.runs])
    if call is not None and call.draws is not None and row.runs:  # a claim about the share of draws
        share = judge_share(call, [Draw(r.run, r.status, r.figure if r.figure is not None else "n/a")
                                   for r in row.runs])
        row.verdict = share.status
        row.reason = "; ".join(filter(None, [row.reason, share_words(share), share.inconclusive]))
    conclusive = [r.figure for r in row.runs if r.status != INCONCLUSIVE and r.figure is not None]
    figures = conclusive or [r.figure for r in row.runs if r.figure is not None]
    if figures:
        row.median, row.least, row.most = statistics.median(figures), min(figures), max(figures)
        row.counted = len(figures)


# --- re-measuring on this machine ---------------------------------------------------------------------

def rerun(claims: ClaimsFile, out: Path, repeat: int = 1, short: bool = False, only: list[str] | None = None,
          labs_root: Path = LABS_DIR, cancel: threading.Event | None = None,
          on_run: Callable[[str], None] = lambda _line: None) -> list[Row]:
    """Run each step the chosen claims name `repeat` times on this machine (live, root) under `out`, each
    run a lab run of one step (`fastlab.labs.run.run_lab`), repetition r with the step's seed + r (its own
    draw of random loss and start jitter), and score the claims on those runs."""
    from fastlab.labs.run import run_lab

    if not 1 <= repeat <= MAX_REPEAT:
        raise ClaimsError(f"--repeat {repeat}: between 1 and {MAX_REPEAT}")
    done: dict[tuple[int, str], list[tuple[str, Path]]] = {}
    for claim in claims.claims:
        if only is not None and claim.id not in only or (claim.lab, claim.step) in done:
            continue
        done[(claim.lab, claim.step)] = []
        lab = load_lab(claim.lab, labs_root)
        if claim.step not in {s.id for s in lab.steps}:
            continue
        if cancel is not None and cancel.is_set():
            break

        def said(outcome: Any, lab: Lab = lab, step: str = claim.step) -> None:
            if not outcome.over_draws:  # the repetitions' own outcome, not the share run_lab adds after them
                where = f"seed {outcome.seed}" if outcome.seed is not None else "run"
                on_run(f"{lab.name} step {step} {where} of {repeat}: {outcome.error or outcome.status}")

        # the lab's own repetitions (run_lab, repetition r with the step's seed + r): one lab run a step
        run = run_lab(lab, out=out / f"{lab.name}-{claim.step}", short=short, step_ids=[claim.step], cancel=cancel,
                      repeat=repeat, on_step=said)
        done[(claim.lab, claim.step)] = [(o.directory, Path(o.directory)) for o in run.steps
                                         if not o.over_draws and not o.error]

    def runs_of(lab: Lab, step_id: str) -> list[tuple[str, Path]]:
        return done.get((lab.number, step_id), [])

    return score(claims, labs_root, runs_of, short, only)


# --- words ---------------------------------------------------------------------------------------------

def number(x: float) -> str:
    """A figure in four significant digits, thousands grouped (1,238; 0.9749; 2.051)."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def published_text(p: Published) -> str:
    """The published figure in one phrase: value, band and unit, or the bound, or 'in words'."""
    if p.value is not None:
        band = f" ({number(p.low)}..{number(p.high)})" if p.low is not None and p.high is not None else ""
        return f"{number(p.value)}{band} {p.unit}"
    if p.low is not None or p.high is not None:
        if p.low is not None and p.high is not None:
            return f"{number(p.low)}..{number(p.high)} {p.unit}"
        return f"> {number(p.low)} {p.unit}" if p.low is not None else f"< {number(p.high)} {p.unit}"  # type: ignore[arg-type]
    return f"in words: {p.stated}"


def measured_text(row: Row) -> str:
    """The median over the runs, with the least and greatest and the count when more than one run counts."""
    if row.median is None:
        return "-"
    if row.counted == 1:
        return f"{number(row.median)} (1 run)"
    return f"{number(row.median)} ({number(row.least or 0)}..{number(row.most or 0)}, {row.counted} runs)"


def table_rows(rows: list[Row]) -> list[dict[str, str]]:
    """The scorecard as text cells: claim, source, published, measured, scale, verdict (and why unmeasured)."""
    return [{"claim": r.claim.id, "source": f"{r.claim.paper}: {r.claim.where}",
             "published": published_text(r.claim.published), "measured": measured_text(r),
             "scale": f"{r.claim.scale:g}", "lab/step": f"{r.claim.lab}/{r.claim.step}",
             "verdict": r.verdict.upper() + (f" ({r.reason})" if r.reason else "")} for r in rows]
