"""Parameter sweeps: a spec with a `sweep:` section -> points -> one run directory each -> one table.

A sweep file is an experiment spec plus a top-level `sweep:` section (declarative data, like the
spec itself):

    sweep:
      params:                               # field path (as for --set) -> the values it takes
        flows.0.cc_args.alpha: [1, 5, 10, 20, 35]
        links.bottleneck.loss.rate: {from: 0, to: 0.001, num: 3}    # or {from, to, step}; scale: log
      mode: grid                            # grid: every combination; zip: the i-th values together
      repeat: 3                             # runs per combination; repetition r runs with seed + r

Pure parts, unit-tested: `parse_sweep` and `plan_sweep` (definition -> points, each a list of
`--set` overrides and a seed); the tables and the page (`summary_metrics`, `aggregate`, `figure`,
`render`) are in sweep_report.py. `check_points` validates every point's spec before anything runs. `run_sweep` runs the
points that are not finished yet, one after another here or on a Dask cluster, into a sweep
directory:

    sweep.yaml            the sweep file as run (after --set)
    sweep.json            the definition and every point's status (written atomically after each change)
    points/<id>/          a run directory per point (`point.json` is written last: the point is finished)
    aggregate.csv         one row per point (parameter combination x repetition): parameters + metrics,
                          and `faithful` (1/0, empty: not assessed) from the run's fidelity verdict
    aggregate_mean.csv    per combination: mean, std, min, max of every metric, n (repetitions),
                          faithful_n (faithful repetitions) and assessed_n (repetitions with a verdict)
    sweep.html            how many points were faithful (the unfaithful ones with their first reason),
                          mean with spread (std bars, min-max band) against each swept parameter

Rerunning the same command resumes: finished points are kept as they are, unfinished ones are
removed and run again. On a cluster every point needs a whole machine: tasks ask for the worker
resource `machine=1`, so workers are started one per host with `--resources machine=1`.
"""

from __future__ import annotations

import copy
import datetime as dt
import fcntl
import hashlib
import itertools
import json
import logging
import math
import os
import platform
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import yaml
from pydantic import Field, ValidationError, model_validator

from fastlab import bundle, fidelity_view, paths, rundir
from fastlab.rundir import finished_points, is_finished
from fastlab.spec import (
    ExperimentSpec,
    SpecError,
    Strict,
    apply_overrides,
    format_validation_error,
    parse_override,
    parse_spec,
    read_spec_document,
)
from fastlab.sweep_report import FAITHFUL, PointFidelity, aggregate, param_cell, render, summary_metrics

log = logging.getLogger(__name__)

MAX_POINTS = 10_000
SWEEP_FILE = "sweep.yaml"
STATE_FILE = rundir.SWEEP_STATE
POINT_FILE = rundir.POINT_FILE
RESERVED_PARAMS = {"seed": "seeds come from `repeat` (repetition r runs with seed + r)",
                   "name": "a sweep's points share its name", "sweep": "a sweep cannot sweep itself"}


class SweepError(ValueError):
    """A sweep that cannot be run or resumed as asked; one-line message."""


# --- definition --------------------------------------------------------------------------------

class ValueRange(Strict):
    """Evenly spaced values from `from` to `to` (both included): a `step`, or `num` values (linear or log)."""

    start: float = Field(alias="from")
    to: float
    step: float | None = Field(None, gt=0)
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

    params: dict[str, list[Any]] = Field(min_length=1, max_length=16)
    mode: Literal["grid", "zip"] = "grid"
    repeat: int = Field(1, ge=1, le=1000, description="runs per parameter combination")

    @model_validator(mode="after")
    def _sizes(self) -> SweepDef:
        lengths = {k: len(v) for k, v in self.params.items()}
        if self.mode == "zip" and len(set(lengths.values())) > 1:
            raise ValueError(f"mode: zip needs lists of one length, got {lengths}")
        combos = next(iter(lengths.values())) if self.mode == "zip" else math.prod(lengths.values())
        if combos * self.repeat > MAX_POINTS:
            raise ValueError(f"repeat: {combos} combinations x {self.repeat} repetitions exceed {MAX_POINTS} points")
        return self

    def combinations(self) -> list[dict[str, Any]]:
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

    def overrides(self) -> list[str]:
        return [f"{k}={yaml_value(v)}" for k, v in self.params.items()] + [f"seed={self.seed}"]

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
    base = {k: v for k, v in document.items() if k != "sweep"}
    sweep = parse_sweep(document["sweep"])
    base_seed = base.get("seed", ExperimentSpec.model_fields["seed"].default)
    if isinstance(base_seed, bool) or not isinstance(base_seed, int):
        raise SpecError(f"seed: must be an integer, got {base_seed!r}")
    combos = sweep.combinations()
    width = max(2, len(str(len(combos) - 1)))
    points = [Point(f"p{c:0{width}d}-r{r}", c, r, base_seed + r, params)
              for c, params in enumerate(combos) for r in range(sweep.repeat)]
    return SweepPlan(str(base.get("name", "sweep")), base, sweep, points)


def load_sweep(path: str | Path, overrides: list[str] | None = None) -> SweepPlan:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"spec: cannot read {path}: {exc.strerror}") from None
    return plan_sweep(read_spec_document(text), overrides)


def check_points(plan: SweepPlan, check: Callable[[ExperimentSpec], object] = lambda _spec: None,
                 ) -> dict[str, ExperimentSpec]:
    """Every point's spec, validated (structure, then `check`, e.g. engine.prepare) before any runs."""
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

def point_row(point: Point, summary: dict[str, Any]) -> dict[str, Any]:
    return {"point": point.id, "combo": point.combo, "rep": point.rep, "seed": point.seed,
            **{k: param_cell(v) for k, v in point.params.items()}, **summary_metrics(summary)}


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
        raw = json.loads(path.read_text())
        return cls(**{**raw, "points": [PointState(**p) for p in raw["points"]]})

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
def _exclusive(directory: Path) -> Iterator[None]:
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
    elif directory.exists() and any(directory.iterdir()):
        raise SweepError(f"--out {directory}: directory exists, is not empty and holds no sweep")
    else:
        state = SweepState.new(plan)
        (directory / "points").mkdir(parents=True, exist_ok=True)
        (directory / SWEEP_FILE).write_text(yaml.safe_dump(plan.document, sort_keys=False))
    done = 0
    for point in state.points:
        point_dir = directory / "points" / point.id
        if is_finished(point_dir):
            point.status, done = "done", done + 1
            continue
        if point_dir.exists():
            log.info(f"{point.id}: unfinished run directory removed; it runs again")
            shutil.rmtree(point_dir)
        point.status, point.error = "pending", None
    for stray in (directory / "points").glob(".incoming-*"):
        shutil.rmtree(stray)
    state.save(state_path)
    if done:
        log.info(f"resuming {directory}: {done} of {len(state.points)} points already finished (kept, not rerun)")
    return state


def write_aggregates(plan: SweepPlan, directory: Path) -> pd.DataFrame:
    """aggregate.csv, aggregate_mean.csv and sweep.html from the finished points; returns the per-point table."""
    rows, verdicts = [], []
    for point in plan.points:
        point_dir = directory / "points" / point.id
        if is_finished(point_dir):
            summary = json.loads((point_dir / "summary.json").read_text())
            rows.append(point_row(point, summary))
            verdicts.append(PointFidelity.of(point, summary))
    table = pd.DataFrame(rows)
    if FAITHFUL in table:
        table[FAITHFUL] = table[FAITHFUL].astype("Int64")  # 1, 0 or empty in the CSV
    params = list(plan.sweep.params)
    means = aggregate(table, params)
    table.to_csv(directory / "aggregate.csv", index=False)
    means.to_csv(directory / "aggregate_mean.csv", index=False)
    (directory / "sweep.html").write_text(render(plan.name, means, params, len(rows), len(plan.points), verdicts))
    return table


# --- running -----------------------------------------------------------------------------------

def _eta(seconds_per_point: float, remaining: int) -> str:
    if not remaining:
        return ""
    seconds = seconds_per_point * remaining
    return f"; ETA {int(seconds // 60)} min {int(seconds % 60)} s" if seconds >= 60 else f"; ETA {seconds:.0f} s"


def _brief(summary: dict[str, Any]) -> str:
    """A finished point in one line for the log: throughput, utilizations, and a warning if not faithful."""
    m = summary_metrics(summary)
    links = [f"{k.removesuffix('_utilization')} utilization {v}" for k, v in m.items() if k.endswith("_utilization")]
    warning = ([f"NOT FAITHFUL: {fidelity_view.first_reason(fidelity_view.verdict_of(summary))}"]
               if m[FAITHFUL] == 0 else [])
    return ", ".join([f"{m['throughput_mbps']} Mb/s", *links, *warning])


def _finish_point(directory: Path, state: SweepState, point: Point, host: str, seconds: float) -> None:
    """Mark a point finished: point.json last in its run directory, then sweep.json."""
    point_dir = directory / "points" / point.id
    tmp = point_dir / f".{POINT_FILE}.tmp"
    tmp.write_text(json.dumps({**asdict(point), "sweep": state.name, "digest": state.digest, "host": host,
                               "duration_s": round(seconds, 1)}, indent=1))
    tmp.replace(point_dir / POINT_FILE)
    entry = state.point(point.id)
    entry.status, entry.host, entry.duration_s, entry.error = "done", host, round(seconds, 1), None
    state.save(directory / STATE_FILE)


def _fail_point(directory: Path, state: SweepState, point: Point, status: str, error: str) -> None:
    entry = state.point(point.id)
    entry.status, entry.error = status, error  # type: ignore[assignment]
    state.save(directory / STATE_FILE)


@dataclass
class SweepResult:
    directory: Path
    total: int
    finished: int
    failed: list[str]
    table: pd.DataFrame


def run_sweep(plan: SweepPlan, specs: dict[str, ExperimentSpec], directory: Path, *, cluster: str | None = None,
              cancel: threading.Event | None = None) -> SweepResult:
    """Run every unfinished point (locally, or on the Dask scheduler at `cluster`), then aggregate.

    `specs` are the points' validated specs (`check_points`). Setting `cancel` (locally) or
    KeyboardInterrupt (on a cluster) leaves the sweep resumable: the point that was running is
    marked interrupted and rerun next time, and KeyboardInterrupt is raised.
    """
    client = connect(cluster) if cluster else None  # before anything is created
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with _exclusive(directory):
            state = prepare_directory(plan, directory)
            todo = [p for p in plan.points if state.point(p.id).status != "done"]
            counter = itertools.count(len(plan.points) - len(todo) + 1)
            if client is not None:
                failed = _run_on_cluster(client, plan, specs, directory, state, todo, counter)
            else:
                failed = _run_locally(plan, specs, directory, state, todo, counter, cancel)
            table = write_aggregates(plan, directory)
    finally:
        if client is not None:
            client.close()
    failures = f", {len(failed)} failed ({', '.join(failed)})" if failed else ""
    log.info(f"sweep {plan.name}: {len(table)} of {len(plan.points)} points finished{failures}; "
        f"table {directory / 'aggregate.csv'}")
    return SweepResult(directory, len(plan.points), len(table), failed, table)


def _run_locally(plan: SweepPlan, specs: dict[str, ExperimentSpec], directory: Path, state: SweepState,
                 todo: list[Point], counter: Iterator[int], cancel: threading.Event | None) -> list[str]:
    from fastlab.capabilities import probe
    from fastlab.engine import RunError, run_experiment

    caps, durations, failed = probe(), [], []
    for left, point in enumerate(todo):
        if cancel is not None and cancel.is_set():
            raise KeyboardInterrupt("sweep cancelled")
        log.info(f"[{next(counter)}/{len(plan.points)}] {point.id} {point.label()}: running")
        entry = state.point(point.id)
        entry.status, entry.started = "running", dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        state.save(directory / STATE_FILE)
        began = time.monotonic()
        try:
            result = run_experiment(specs[point.id], out=directory / "points" / point.id, caps=caps, cancel=cancel)
        except (RunError, SpecError) as exc:
            if cancel is not None and cancel.is_set():
                _fail_point(directory, state, point, "interrupted", "interrupted; reruns when the sweep resumes")
                raise KeyboardInterrupt("sweep cancelled") from None
            _fail_point(directory, state, point, "failed", str(exc))
            failed.append(point.id)
            log.info(f"  {point.id} failed: {exc}")
            continue
        durations.append(time.monotonic() - began)
        _finish_point(directory, state, point, platform.node(), durations[-1])
        log.info(f"  {point.id} done in {durations[-1]:.1f} s: {_brief(result.summary)}"
            f"{_eta(sum(durations) / len(durations), len(todo) - left - 1)}")
    return failed


def run_point_remote(spec_yaml: str) -> dict[str, Any]:
    """On a Dask worker: run one point with the engine and send its run directory back as a bundle."""
    from fastlab.engine import run_experiment
    from fastlab.spec import read_spec_text

    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fastlab-point-") as tmp:
        result = run_experiment(read_spec_text(spec_yaml), out=Path(tmp) / "run")
        zip_path = bundle.export(result.directory, Path(tmp) / "run.zip")
        return {"bundle": zip_path.read_bytes(), "host": platform.node(), "seconds": time.monotonic() - began}


def _store_remote(directory: Path, point: Point, payload: dict[str, Any]) -> dict[str, Any]:
    """Unpack a worker's bundle (verified on the way) as points/<id>/, exactly like a local run."""
    incoming = directory / "points" / f".incoming-{point.id}"
    shutil.rmtree(incoming, ignore_errors=True)
    incoming.mkdir()
    try:
        (incoming / "run.zip").write_bytes(payload["bundle"])
        root = bundle.extract(incoming / "run.zip", incoming / "x", bundle_files=False)
        root.rename(directory / "points" / point.id)
    finally:
        shutil.rmtree(incoming, ignore_errors=True)
    return json.loads((directory / "points" / point.id / "summary.json").read_text())


def machine_workers(scheduler_info: dict[str, Any]) -> list[str]:
    """Workers that offer the `machine` resource (one per host, each point takes a whole machine)."""
    return sorted(addr for addr, w in scheduler_info.get("workers", {}).items()
                  if w.get("resources", {}).get("machine", 0) >= 1)


def connect(cluster: str) -> Any:
    """A Dask client of the scheduler at `cluster` that has at least one machine worker."""
    from distributed import Client

    try:
        client = Client(cluster, timeout="15s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise SweepError(f"--cluster {cluster}: cannot reach the Dask scheduler: {exc}") from None
    workers = machine_workers(client.scheduler_info())
    if not workers:
        client.close()
        raise SweepError(f"--cluster {cluster}: no worker offers the resource machine=1 "
                         "(start one worker per host with `dask worker ADDRESS --resources machine=1`)")
    log.info(f"cluster {cluster}: {len(workers)} machine worker(s)")
    return client


def _run_on_cluster(client: Any, plan: SweepPlan, specs: dict[str, ExperimentSpec], directory: Path,
                    state: SweepState, todo: list[Point], counter: Iterator[int]) -> list[str]:
    from distributed import as_completed

    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    futures = {}
    for point in todo:
        future = client.submit(run_point_remote, specs[point.id].to_yaml(), resources={"machine": 1},
                               pure=False, key=f"fastlab-{plan.digest[:8]}-{point.id}-{os.urandom(4).hex()}")
        futures[future] = point
        entry = state.point(point.id)
        entry.status, entry.started = "running", started
    state.save(directory / STATE_FILE)
    began, failed = time.monotonic(), []
    try:
        for done, future in enumerate(as_completed(futures), start=1):
            point = futures[future]
            step = f"[{next(counter)}/{len(plan.points)}] {point.id} {point.label()}"
            try:
                payload = future.result()
                summary = _store_remote(directory, point, payload)
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # the worker's exception, re-raised here by Dask
                _fail_point(directory, state, point, "failed", f"{type(exc).__name__}: {exc}")
                failed.append(point.id)
                log.info(f"{step}: failed on the cluster: {type(exc).__name__}: {exc}")
                continue
            _finish_point(directory, state, point, payload["host"], payload["seconds"])
            log.info(f"{step}: done on {payload['host']} in {payload['seconds']:.1f} s: {_brief(summary)}"
                f"{_eta((time.monotonic() - began) / done, len(todo) - done)}")
    except KeyboardInterrupt:
        client.cancel(list(futures))
        for future, point in futures.items():
            if not future.done():
                _fail_point(directory, state, point, "interrupted", "interrupted; reruns when the sweep resumes")
        raise
    return failed


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
    return lines

