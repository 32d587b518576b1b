"""Parameter sweeps: a spec with a `sweep:` section -> points -> one run directory each -> one table.

A sweep file is an experiment spec plus a top-level `sweep:` section (declarative data, like the
spec itself):

    sweep:
      params:                               # field path (as for --set) -> the values it takes
        flows.0.cc_args.alpha: [1, 5, 10, 20, 35]
        links.bottleneck.loss.rate: {from: 0, to: 0.001, num: 3}    # or {from, to, step}; scale: log
      mode: grid                            # grid: every combination; zip: the i-th values together
      repeat: 3                             # runs per combination; repetition r runs with seed + r
      scale_flows: {capacity: topology_args.rate_mbps, flow: 0, reference_flows: 4,
                    reference_capacity_mbps: 100}   # optional: N' = N C'/C flows (fastlab.sweep.scaling)

Pure: `parse_sweep`, `plan_sweep` (definition -> points: `--set` overrides and a seed each); `check_points`
validates every point before any runs; fastlab.sweep.run runs them into a sweep directory, kept here:

    sweep.yaml            the sweep file as run (after --set)
    sweep.json            the definition and every point's status (written atomically after each change)
    points/<id>/          a run directory per point (`point.json` is written last: the point is finished)
    aggregate.csv         one row per point (parameter combination x repetition): parameters + metrics,
                          and `faithful` (1/0, empty: not assessed) from the run's fidelity verdict
    aggregate_mean.csv    per combination: n, faithful_n, assessed_n, mean/std/min/max of every metric, and
                          over the faithful repetitions its median and 95 % interval (fastlab.sweep.spread)
    sweep.html            how many points were faithful (the unfaithful ones with their first reason),
                          mean with spread (std bars, min-max band) against each swept parameter

Rerunning the same command resumes: finished points are kept as they are, unfinished ones are
removed and run again (`prepare_directory`).
"""

from __future__ import annotations

import copy
import fcntl
import hashlib
import itertools
import json
import logging
import math
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import yaml
from pydantic import Field, ValidationError, model_validator

from fastlab.base import paths, rundir
from fastlab.base.documents import DocumentError, one_line, read_json_file
from fastlab.base.names import NameRefused, check_name, child
from fastlab.base.record import Summary
from fastlab.base.rundir import RunFolder, finished_points, is_finished
from fastlab.define.schema import (
    ExperimentSpec,
    SpecError,
    Strict,
    apply_overrides,
    format_validation_error,
    parse_override,
    parse_spec,
    read_spec_document,
    read_spec_file,
)
from fastlab.results.report import share_plotly
from fastlab.sweep.report import FAITHFUL, PointFidelity, aggregate, param_cell, render, summary_metrics
from fastlab.sweep.scaling import FlowScaling, scale_words, scaled_flows

log = logging.getLogger(__name__)

MAX_POINTS = 10_000
MAX_STATE_CHARS = rundir.SWEEP_STATE_MAX_CHARS
SWEEP_FILE = "sweep.yaml"
STATE_FILE = rundir.SWEEP_STATE
POINT_FILE = rundir.POINT_FILE
# `seed` may be swept: each point then runs its own value (+ r for repetition r), as the web form's
# seed sweeps do (one engine for both, issue 32).
RESERVED_PARAMS = {"name": "a sweep's points share its name", "sweep": "a sweep cannot sweep itself",
                   "repeat": "repetitions are sweep.repeat"}


class SweepError(ValueError):
    """A sweep that cannot be run or resumed as asked; one-line message."""


# --- definition --------------------------------------------------------------------------------

class ValueRange(Strict):
    """Evenly spaced values from `from` to `to` (both included): a `step`, or `num` values (linear or log).
    Finite numbers only: a NaN range made NaN values, which the check of repeated values called "listed
    twice" (issue 47)."""

    start: float = Field(alias="from", allow_inf_nan=False)
    to: float = Field(allow_inf_nan=False)
    step: float | None = Field(None, gt=0, allow_inf_nan=False)
    num: int | None = Field(None, ge=2, le=1000)
    scale: Literal["linear", "log"] = "linear"

    @model_validator(mode="after")
    def _one_spacing(self) -> ValueRange:
        if (self.step is None) == (self.num is None):
            raise ValueError("give either step or num")
        if self.to < self.start:
            raise ValueError(f"to ({self.to:g}) must not be below from ({self.start:g})")
        if self.scale == "log" and (self.num is None or self.start <= 0):
            raise ValueError("scale: log needs num and from > 0")
        if self.step is not None and (self.to - self.start) / self.step >= 1000:
            raise ValueError("more than 1000 values: use a larger step")
        return self

    def values(self) -> list[float | int]:
        num = self.num or 2  # _one_spacing: num is set whenever step is not
        if self.step is not None:
            count = int(math.floor((self.to - self.start) / self.step + 1e-9)) + 1
            raw = [self.start + i * self.step for i in range(count)]
        elif self.scale == "log":
            ratio = (self.to / self.start) ** (1 / (num - 1))
            raw = [self.start * ratio ** i for i in range(num)]
        else:
            raw = [self.start + i * (self.to - self.start) / (num - 1) for i in range(num)]
        integral = all(float(v).is_integer() for v in (self.start, self.to, self.step or 1)) and self.scale == "linear"
        return [round(v) if integral else float(f"{v:.12g}") for v in raw]


class SweepDef(Strict):
    """The `sweep:` section, its value lists resolved (`parse_sweep`)."""

    params: dict[str, list[Any]] = Field(default_factory=dict, max_length=16)
    mode: Literal["grid", "zip"] = "grid"
    repeat: int = Field(1, ge=1, le=1000, description="runs per parameter combination (or of the spec alone)")
    scale_flows: FlowScaling | None = Field(None, description="scale a flows row's count with the swept "
                                                              "capacity, keeping each flow's window")

    @model_validator(mode="after")
    def _sizes(self) -> SweepDef:
        if not self.params and self.repeat < 2:  # a sweep without parameters only repeats its spec
            raise ValueError("params: give at least one parameter to sweep (or repeat the spec: repeat 2 or more)")
        lengths = {k: len(v) for k, v in self.params.items()}
        if self.mode == "zip" and len(set(lengths.values())) > 1:
            raise ValueError(f"mode: zip needs lists of one length, got {lengths}")
        combos = next(iter(lengths.values()), 1) if self.mode == "zip" else math.prod(lengths.values())
        if combos * self.repeat > MAX_POINTS:
            raise ValueError(f"repeat: {combos} combinations x {self.repeat} repetitions exceed {MAX_POINTS} points")
        scale = self.scale_flows
        if scale is not None:
            if scale.capacity.rsplit(".", 1)[-1] != "rate_mbps":
                raise ValueError(f"scale_flows.capacity: {scale.capacity} is not a capacity in Mb/s (a rate_mbps "
                                 "field: topology_args.rate_mbps, links.<link>.rate_mbps)")
            if scale.capacity not in self.params:
                raise ValueError(f"scale_flows.capacity: {scale.capacity} is not a swept parameter "
                                 f"({', '.join(self.params)})")
            if f"flows.{scale.flow}.count" in self.params:
                raise ValueError(f"scale_flows.flow: flows.{scale.flow}.count is swept itself; the scaling sets it")
        return self

    def combinations(self) -> list[dict[str, Any]]:
        if not self.params:
            return [{}]  # the base spec alone (its repetitions)
        keys = list(self.params)
        rows = zip(*self.params.values(), strict=True) if self.mode == "zip" else itertools.product(
            *self.params.values())
        return [dict(zip(keys, row, strict=True)) for row in rows]


def resolve_values(key: str, values: object) -> list[Any]:
    """One `params` entry: its field path checked, a range turned into its list of values."""
    where = f"sweep.params.{key}"
    try:
        path, _ = parse_override(f"{key}=0")
    except SpecError:
        raise SpecError(f"{where}: not a field path like flows.0.cc_args.alpha") from None
    if path[0] in RESERVED_PARAMS:
        raise SpecError(f"{where}: cannot be swept: {RESERVED_PARAMS[str(path[0])]}")
    if isinstance(values, dict):
        try:
            values = ValueRange.model_validate(values).values()
        except ValidationError as err:
            raise SpecError(f"{where}: {format_validation_error(err)}") from None
    if not isinstance(values, list) or not values:
        raise SpecError(f"{where}: give a list of values or a range {{from, to, step or num}}")
    if any(isinstance(v, float) and not math.isfinite(v) for v in values):
        raise SpecError(f"{where}: values must be finite numbers (not NaN or infinity)")
    if len({json.dumps(v, sort_keys=True) for v in values}) != len(values):
        raise SpecError(f"{where}: a value is listed twice")
    return values


def parse_sweep(raw: object) -> SweepDef:
    """The `sweep:` section -> SweepDef (ranges resolved); SpecError naming the field (`sweep.<field>: ...`)."""
    if not isinstance(raw, dict):
        raise SpecError("sweep: must be a mapping with params (and mode, repeat)")
    params = raw.get("params")
    if isinstance(params, dict):
        raw = {**raw, "params": {str(k): resolve_values(str(k), v) for k, v in params.items()}}
    try:
        return SweepDef.model_validate(raw)
    except ValidationError as err:
        raise SpecError("; ".join(f"sweep.{m}" for m in format_validation_error(err).split("; "))) from None


# --- points ------------------------------------------------------------------------------------

def yaml_value(value: Any) -> str:
    """A value as `--set` reads it back (YAML flow style: 1e-05 stays a float, 'yes' stays a string)."""
    return yaml.safe_dump(value, default_flow_style=True, width=1_000_000).strip().removesuffix("...").strip()


@dataclass(frozen=True)
class Point:
    """One run of the sweep: a parameter combination and a repetition with its seed."""

    id: str
    combo: int
    rep: int
    seed: int
    params: dict[str, Any]
    derived: dict[str, Any] = field(default_factory=dict)  # set from the params (scale_flows: the count)

    def overrides(self) -> list[str]:
        return [f"{k}={yaml_value(v)}" for k, v in (self.params | self.derived).items()] + [f"seed={self.seed}"]

    def label(self) -> str:
        return " ".join(f"{k}={yaml_value(v)}" for k, v in self.params.items()) + f" seed={self.seed}"


@dataclass(frozen=True)
class SweepPlan:
    """A sweep file resolved: the base spec document, the definition and every point."""

    name: str
    base: dict[str, Any]
    sweep: SweepDef
    points: list[Point]

    @property
    def document(self) -> dict[str, Any]:
        return {**self.base, "sweep": self.sweep.model_dump()}

    @property
    def digest(self) -> str:
        """Identity of the sweep: same file and overrides -> same digest -> same (resumable) directory."""
        return hashlib.sha256(json.dumps(self.document, sort_keys=True, default=str).encode()).hexdigest()

    def point_document(self, point: Point) -> dict[str, Any]:
        return apply_overrides(copy.deepcopy(self.base), point.overrides())


def plan_sweep(document: object, overrides: list[str] | None = None) -> SweepPlan:
    """A sweep file's document (with `--set` overrides applied first) -> SweepPlan; pure."""
    if not isinstance(document, dict):
        raise SpecError("spec: the document must be a mapping of fields")
    document = apply_overrides(copy.deepcopy(document), overrides or [])
    if "sweep" not in document:
        raise SpecError("sweep: missing: a sweep file is a spec with a `sweep:` section (params, mode, repeat)")
    base = {k: v for k, v in document.items() if k not in ("sweep", "repeat")}
    raw_sweep = document["sweep"]
    if document.get("repeat", 1) != 1 and isinstance(raw_sweep, dict):  # the spec's repetitions: the sweep's
        if "repeat" in raw_sweep:  # (a spec's default repeat: 1, as the form sends it, repeats nothing)
            raise SpecError("repeat: a sweep file gives its repetitions once, as sweep.repeat")
        raw_sweep = {**raw_sweep, "repeat": document["repeat"]}
    sweep = parse_sweep(raw_sweep)
    base_seed = base.get("seed", ExperimentSpec.model_fields["seed"].default)
    if isinstance(base_seed, bool) or not isinstance(base_seed, int):
        raise SpecError(f"seed: must be an integer, got {base_seed!r}")
    for value in sweep.params.get("seed", []):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SpecError(f"sweep.params.seed: seeds are whole numbers from 0, got {value!r}")
    combos = sweep.combinations()
    width = max(2, len(str(len(combos) - 1)))
    derived = [scaled_flows(sweep.scale_flows, base, params) for params in combos]
    points = [Point(f"p{c:0{width}d}-r{r}", c, r, params.get("seed", base_seed) + r, params, derived[c])
              for c, params in enumerate(combos) for r in range(sweep.repeat)]
    return SweepPlan(str(base.get("name", "sweep")), base, sweep, points)


def load_sweep(path: str | Path, overrides: list[str] | None = None) -> SweepPlan:
    return plan_sweep(read_spec_document(read_spec_file(str(path))), overrides)


def check_points(plan: SweepPlan, check: Callable[[ExperimentSpec], object] = lambda _spec: None,
                 ) -> dict[str, ExperimentSpec]:
    """Every point's spec, validated (structure, then `check`, e.g. plan.prepare) before any runs."""
    specs = {}
    for point in plan.points:
        try:
            spec = parse_spec(plan.point_document(point))
            check(spec)
        except SpecError as exc:
            raise SpecError(f"sweep point {point.id} ({point.label()}): {exc}") from None
        specs[point.id] = spec
    return specs


# --- aggregation -------------------------------------------------------------------------------

def point_row(point: Point, summary: Summary) -> dict[str, Any]:
    scaled = {k: v for k, v in point.derived.items() if k != "description"}  # N' of a scale_flows sweep
    return {"point": point.id, "combo": point.combo, "rep": point.rep, "seed": point.seed,
            **{k: param_cell(v) for k, v in (point.params | scaled).items()}, **summary_metrics(summary)}


# --- sweep directory ---------------------------------------------------------------------------

@dataclass
class PointState:
    """A point as recorded in sweep.json."""

    id: str
    combo: int
    rep: int
    seed: int
    params: dict[str, Any]
    status: Literal["pending", "running", "done", "failed", "interrupted"] = "pending"
    host: str | None = None
    started: str | None = None
    duration_s: float | None = None
    error: str | None = None


@dataclass
class SweepState:
    name: str
    digest: str
    definition: dict[str, Any]
    parameters: dict[str, list[Any]]
    repetitions: int
    points: list[PointState] = field(default_factory=list)

    @classmethod
    def new(cls, plan: SweepPlan) -> SweepState:
        return cls(plan.name, plan.digest, plan.sweep.model_dump(), plan.sweep.params, plan.sweep.repeat,
                   [PointState(p.id, p.combo, p.rep, p.seed, p.params) for p in plan.points])

    @classmethod
    def load(cls, path: Path) -> SweepState:
        """sweep.json as written by `save`; anything else (not JSON, not UTF-8, nested too deeply, a list,
        a key missing or unknown) is a SweepError naming the file, not a traceback."""
        try:
            raw = read_json_file(path, max_chars=MAX_STATE_CHARS)
            state = cls(**{**raw, "points": [PointState(**p) for p in raw["points"]]})
        except OSError as exc:
            raise SweepError(f"{path}: cannot read: {exc.strerror}") from None
        except RecursionError:
            raise SweepError(f"{path}: not a sweep's state: nested too deeply") from None
        except DocumentError as exc:
            raise SweepError(f"{path}: not a sweep's state: {exc}") from None
        except (ValueError, TypeError, KeyError) as exc:  # UnicodeDecodeError is a ValueError
            raise SweepError(f"{path}: not a sweep's state ({exc.__class__.__name__}: {str(exc)[:200]})") from None
        if not all(isinstance(p.id, str) and isinstance(p.params, dict) for p in state.points):
            raise SweepError(f"{path}: not a sweep's state (its points are not what fastlab writes)")
        for p in state.points:  # a point id becomes a folder that a resume may remove: a plain name only
            try:
                check_name(p.id, "point id")
            except NameRefused as exc:
                raise SweepError(f"{path}: not a sweep's state ({exc})") from None
        return state

    def save(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1, default=str))
        tmp.replace(path)

    def point(self, point_id: str) -> PointState:
        return next(p for p in self.points if p.id == point_id)


def default_directory(plan: SweepPlan) -> Path:
    """results/sweeps/<name>-<digest>: the same sweep file and overrides always resume the same directory."""
    return paths.results_root() / "sweeps" / f"{plan.name}-{plan.digest[:8]}"


@contextmanager
def exclusive(directory: Path) -> Iterator[None]:
    fd = os.open(directory, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SweepError(f"{directory}: another fastlab sweep is running in it") from None
        yield
    finally:
        os.close(fd)


def prepare_directory(plan: SweepPlan, directory: Path) -> SweepState:
    """Create or resume a sweep directory: keep finished points, remove partial ones."""
    state_path = directory / STATE_FILE
    if state_path.is_file():
        state = SweepState.load(state_path)
        if state.digest != plan.digest:
            raise SweepError(f"{directory}: holds another sweep (the file or --set differ): use another --out")
        # The digest is the plan's, so the points must be the plan's: a sweep.json whose points were edited
        # (an id that is a path, one missing or added) is refused before anything in the folder is touched.
        if [(p.id, p.combo, p.rep, p.seed) for p in state.points] != \
                [(p.id, p.combo, p.rep, p.seed) for p in plan.points]:
            raise SweepError(f"{state_path}: its points are not the sweep's own (edited?): nothing was changed")
    elif directory.exists() and any(directory.iterdir()):
        raise SweepError(f"--out {directory}: directory exists, is not empty and holds no sweep")
    else:
        state = SweepState.new(plan)
        (directory / "points").mkdir(parents=True, exist_ok=True)
        (directory / SWEEP_FILE).write_text(yaml.safe_dump(plan.document, sort_keys=False))
    done = 0
    for point in state.points:
        point_dir = point_folder(directory, point.id)
        if is_finished(point_dir):
            point.status, done = "done", done + 1
            continue
        if point_dir.exists():
            log.info(f"{point.id}: unfinished run directory removed; it runs again")
            shutil.rmtree(point_dir)
        point.status, point.error = "pending", None
    for stray in (directory / "points").glob(".incoming-*"):
        if stray.is_symlink() or not stray.is_dir():
            stray.unlink()  # the link itself, never where it points
        else:
            shutil.rmtree(stray)
    state.save(state_path)
    if done:
        log.info(f"resuming {directory}: {done} of {len(state.points)} points already finished (kept, not rerun)")
    return state


def point_folder(directory: Path, point_id: str) -> Path:
    """A point's run directory, `points/<id>` inside the sweep directory: the id a plain name, the path not a
    symbolic link (fastlab.base.names.child); SweepError otherwise."""
    try:
        return child(directory / "points", point_id, "point id")
    except NameRefused as exc:
        raise SweepError(f"{directory}: {exc}") from None


def finish_point(directory: Path, state: SweepState, point: Point, host: str, seconds: float) -> None:
    """Mark a point finished: point.json last in its run directory, then sweep.json."""
    point_dir = point_folder(directory, point.id)
    tmp = point_dir / f".{POINT_FILE}.tmp"
    tmp.write_text(json.dumps({**asdict(point), "sweep": state.name, "digest": state.digest, "host": host,
                               "duration_s": round(seconds, 1)}, indent=1))
    tmp.replace(point_dir / POINT_FILE)
    entry = state.point(point.id)
    entry.status, entry.host, entry.duration_s, entry.error = "done", host, round(seconds, 1), None
    state.save(directory / STATE_FILE)


def write_aggregates(plan: SweepPlan, directory: Path) -> pd.DataFrame:
    """aggregate.csv, aggregate_mean.csv and sweep.html from the finished points; returns the per-point table."""
    rows, verdicts = [], []
    for point in plan.points:
        point_dir = directory / "points" / point.id
        if is_finished(point_dir):
            summary = RunFolder(point_dir).summary()
            rows.append(point_row(point, summary))
            verdicts.append(PointFidelity.of(point, summary))
    table = pd.DataFrame(rows)
    if FAITHFUL in table:
        table[FAITHFUL] = table[FAITHFUL].astype("Int64")  # 1, 0 or empty in the CSV
    means = aggregate(table, params := list(plan.sweep.params))
    table.to_csv(directory / "aggregate.csv", index=False)
    means.to_csv(directory / "aggregate_mean.csv", index=False)
    share_plotly(directory)  # sweep.html's and its points' reports' plotly.js, once
    (directory / "sweep.html").write_text(render(plan.name, means, params, len(rows), len(plan.points), verdicts,
                                                 notes=scaling_lines(plan)))
    return table


def scaling_lines(plan: SweepPlan) -> list[str]:
    """A scale_flows sweep's scaling in words, one line per capacity (the report says it): "at 20 Mb/s,
    scaled: 4 flows carry the per-flow window of 2 flows at 10 Mb/s"; [] for any other sweep."""
    scale, lines = plan.sweep.scale_flows, list[str]()
    if scale is None:
        return lines
    for point in plan.points:
        line = scale_words(scale, point.params[scale.capacity], point.derived[f"flows.{scale.flow}.count"])
        if line not in lines:
            lines.append(line)
    return lines


# --- running -----------------------------------------------------------------------------------

def status_lines(directory: Path) -> list[str]:
    """A sweep directory's points and their status, for `fastlab sweep status`."""
    state_path = directory / STATE_FILE
    if not state_path.is_file():
        raise SweepError(f"{directory}: not a sweep directory (no {STATE_FILE})")
    state = SweepState.load(state_path)
    finished = set(finished_points(directory))
    lines = [f"sweep {state.name}: {len(finished)} of {len(state.points)} points finished"]
    for p in state.points:
        status = "done" if p.id in finished else p.status if p.status != "done" else "pending"
        extra = f" on {p.host}, {p.duration_s} s" if status == "done" else f": {p.error}" if p.error else ""
        params = " ".join(f"{k}={yaml_value(v)}" for k, v in p.params.items())
        lines.append(f"  {p.id}  {params} seed={p.seed}  {status}{extra}")
    # sweep.json is a file anyone may have edited: each point stays one line whatever its texts hold
    return [one_line(line) for line in lines]

