"""Guided labs without root: strict loading (every refusal names its place), the CLI's usage errors,
every lab in labs/ loads, and every lab's checkpoint code passes on its recorded runs and fails on
an altered copy of them (so a checkpoint that cannot fail, or a broken one, cannot land)."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

from fastlab.base.record import Verdict
from fastlab.base.rundir import RunFolder
from fastlab.labs.kit import (
    LABS_DIR,
    CheckResult,
    Lab,
    LabError,
    MissingData,
    StepRun,
    evaluate_run,
    evaluate_step,
    lab_folders,
    load_lab_folder,
    loss_starts,
)
from fastlab.labs.record import Case, fingerprint, judge_case, load_cases, spec_drift, trim
from fastlab.labs.run import check_lab_run
from tests.conftest import EXAMPLE, fastlab

CHECKPOINTS = '''
from fastlab.labs.kit import checkpoint, within


@checkpoint
def throughput(run, flow="f1", minimum=1.0):
    return within("throughput", run.flow_summary(flow).throughput_mbps, minimum, 1e9, "any traffic")
'''
LAB_YAML = """
title: A throwaway lab
summary: Loads, or says where it does not.
minutes: 2
steps:
  - id: one
    title: The example
    spec: specs/simple.yaml
    set: [duration_s=5]
    checkpoints:
      - {check: throughput, args: {minimum: 2}}
"""


def make_lab(root: Path, name: str = "09-throwaway", lab_yaml: str = LAB_YAML, checkpoints: str = CHECKPOINTS) -> Path:
    folder = root / name
    (folder / "specs").mkdir(parents=True)
    shutil.copy(EXAMPLE, folder / "specs" / "simple.yaml")
    (folder / "lab.yaml").write_text(lab_yaml)
    (folder / "checkpoints.py").write_text(checkpoints)
    return folder


def test_throwaway_lab_loads(tmp_path: Path) -> None:
    lab = load_lab_folder(make_lab(tmp_path))
    assert (lab.number, lab.slug, [s.id for s in lab.steps]) == (9, "throwaway", ["one"])
    assert lab.build_spec("one").duration_s == 5 and set(lab.checks) == {"throughput"}


@pytest.mark.parametrize("change, place", [
    (("minutes: 2", "minutes: [2"), "not valid YAML at line"),
    (("minutes: 2", "minutes: " + "[" * 5000 + "]" * 5000), "nested deeper than"),
    (("title: A throwaway lab\n", ""), "lab.yaml: title"),
    (("minutes: 2", "minutes: 12"), "lab.yaml: minutes"),
    (("minutes: 2", "minutes: 2\ncolour: red"), "lab.yaml: colour"),
    (("check: throughput", "check: goodput"), "steps[0].checkpoints[0].check: unknown checkpoint 'goodput'"),
    (("{minimum: 2}", "{maximum: 2}"), "steps[0].checkpoints[0].args: throughput"),
    (("specs/simple.yaml", "../outside.yaml"), "steps[0].spec"),
    (("specs/simple.yaml", "specs/missing.yaml"), "steps[0].spec"),
    (("set: [duration_s=5]", "set: [duration_s=5]\n    steps: 3"), "steps[0].steps"),
    (("{minimum: 2}}", "{minimum: 2}, full_only: short}"), "steps[0].checkpoints[0].full_only"),
])
def test_malformed_lab_yaml_names_the_place(tmp_path: Path, change: tuple[str, str], place: str) -> None:
    (tmp_path / "outside.yaml").write_text(EXAMPLE.read_text())  # a real spec, but not the lab's
    folder = make_lab(tmp_path, lab_yaml=LAB_YAML.replace(*change))
    with pytest.raises(LabError, match="09-throwaway") as err:
        load_lab_folder(folder)
    assert place in str(err.value)


def test_full_only_checkpoints_are_skipped_in_the_short_form(tmp_path: Path) -> None:
    twice = LAB_YAML.replace("      - {check: throughput, args: {minimum: 2}}",
                             "      - {check: throughput, args: {minimum: 2}}\n"
                             "      - {check: throughput, name: needs a long run, args: {minimum: 1000000},\n"
                             "         full_only: a short run never reaches this rate}")
    lab = load_lab_folder(make_lab(tmp_path, lab_yaml=twice))
    recorded = load_lab_folder(LABS_DIR / "01-long-fat-pipes").recording("reno")
    full = evaluate_step(lab, "one", recorded)
    short = evaluate_step(lab, "one", recorded, short=True)
    assert [r.passed for r in full] == [True, False] and full[1].name == "needs a long run"
    assert [(r.name, r.passed) for r in short] == [("throughput", True)]
    # a name of lab.yaml's own keeps the checkpoint's words for what it measured
    assert [r.quantity for r in full] == ["throughput", "throughput"]


def test_duplicate_step_id(tmp_path: Path) -> None:
    step = LAB_YAML[LAB_YAML.index("  - id: one"):]
    folder = make_lab(tmp_path, lab_yaml=LAB_YAML + step)
    with pytest.raises(LabError, match=r"lab.yaml: steps\[1\].id: duplicate step id 'one'"):
        load_lab_folder(folder)


@pytest.mark.parametrize("name", ["9-short-number", "09_underscore", "09-Capital", "lab-09"])
def test_bad_folder_name(tmp_path: Path, name: str) -> None:
    with pytest.raises(LabError, match="NN-slug"):
        load_lab_folder(make_lab(tmp_path, name=name))


@pytest.mark.parametrize("checkpoints, place", [
    (CHECKPOINTS + "\n1 / 0\n", "checkpoints.py: ZeroDivisionError"),
    (CHECKPOINTS.replace("@checkpoint\n", ""), "unknown checkpoint 'throughput' (checkpoints.py defines: none)"),
])
def test_broken_checkpoints_module(tmp_path: Path, checkpoints: str, place: str) -> None:
    with pytest.raises(LabError) as err:
        load_lab_folder(make_lab(tmp_path, checkpoints=checkpoints))
    assert place in str(err.value)


def test_bad_step_override_names_the_step(tmp_path: Path) -> None:
    lab = load_lab_folder(make_lab(tmp_path, lab_yaml=LAB_YAML.replace("duration_s=5", "duration_s=-5")))
    with pytest.raises(LabError, match=r"09-throwaway step one \(specs/simple.yaml\): .*duration_s"):
        lab.build_spec("one")
    with pytest.raises(LabError, match="no step 'two'"):
        lab.build_spec("two")


# --- the CLI ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["lab", "list", "extra"], "unrecognized arguments"),
    (["lab", "check"], "missing the lab"),
    (["lab", "check", "99"], "no lab '99'"),
    (["lab", "check", "1", "--run", "/nonexistent/run"], "not a lab run"),
    (["lab", "run", "99"], "no lab '99'"),
    (["lab", "run", "1", "--step", "nope"], "no step 'nope'"),
    (["lab", "check", "²"], "no lab '²'"),  # a digit to str.isdigit, not to int()
    (["lab", "run", "²"], "no lab '²'"),
    (["lab", "check", "9" * 5000], "no lab '999"),  # past Python's int-conversion limit
    (["lab", "check", "1", "--run", "/"], "not a lab run"),
])
def test_lab_usage_errors_exit_2(args: list[str], message: str) -> None:
    proc = fastlab(*args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("record", [
    '[1, 2]', '{"name": "02-fast-equilibrium", "steps": [1]}', '{"name": "02-fast-equilibrium", "steps": "x"}',
    '{"name": ["x"], "steps": []}', '{"name": "02-fast-equilibrium", "steps": [{"id": 5}]}',
    '{"name": "02-fast-equilibrium", "steps": [{"id": "live", "duration_s": "long"}]}',
    '{"name": "02-fast-equilibrium", "steps": [{"id": "nope"}]}', "[" * 10_000 + "]" * 10_000, "\udcff",
])
def test_lab_check_of_a_crafted_lab_json_is_one_line(tmp_path: Path, record: str) -> None:
    """`fastlab lab check --run` on a lab.json that fastlab did not write: exit 2, one line, no traceback."""
    (tmp_path / "lab.json").write_bytes(record.encode("utf-8", "surrogateescape"))
    proc = fastlab("lab", "check", "2", "--run", str(tmp_path))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr[-500:]
    assert "Traceback" not in proc.stderr


def test_lab_run_refuses_a_full_out_directory(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    proc = fastlab("lab", "run", "1", "--out", str(tmp_path))
    assert proc.returncode == 2 and "directory exists and is not empty" in proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_lab_list_shows_every_lab() -> None:
    proc = fastlab("lab", "list")
    assert proc.returncode == 0, proc.stderr
    for folder in lab_folders():
        assert folder.name in proc.stdout


# --- every lab in labs/ ----------------------------------------------------------------------------

def lab_steps(folders: list[Path]) -> list[tuple[Path, str, bool]]:
    """(lab folder, step id, short form?) of every lab, each step in both forms; a lab that does not load
    gives one item whose test reports why."""
    items: list[tuple[Path, str, bool]] = []
    for folder in folders:
        try:
            items += [(folder, step.id, short) for step in load_lab_folder(folder).steps for short in (False, True)]
        except LabError:
            items.append((folder, "unloadable", False))
    return items


LABS = lab_folders()
STEPS = lab_steps(LABS)


def step_label(item: object) -> str:
    if isinstance(item, bool):
        return "short" if item else "full"
    return item.name if isinstance(item, Path) else str(item)


def recording(folder: Path, step_id: str, short: bool) -> Path:
    """The step's recording of that form; a missing one fails with the command that makes it."""
    lab = load_lab_folder(folder)
    directory = lab.recording(step_id, short)
    if not (directory / "summary.json").is_file():
        form = "short" if short else "full"
        pytest.fail(f"{lab.name} step {step_id} has no {form}-form recording: "
                    f"run `sudo fastlab lab record {lab.number} --step {step_id} --form {form}`")
    return directory


# A lab's recordings, all forms and cases: 3.5 MB. Lab 10, the largest, has 16 steps, six of them 32 Reno flows
# sampled at 20 Hz (flows.csv, 170-240 kB each once trimmed): 3.07 MB on 2026-11-27.
RECORDED_MAX_BYTES = 3_500_000


@pytest.mark.parametrize("folder", LABS, ids=step_label)
def test_lab_loads_and_is_complete(folder: Path) -> None:
    lab = load_lab_folder(folder)
    for part in ("README.md", "INSTRUCTOR.md"):
        assert (folder / part).stat().st_size > 500, part
    assert f"fastlab lab run {lab.number}" in lab.handout()
    size = sum(p.stat().st_size for p in (folder / "recorded").rglob("*") if p.is_file())
    assert size < RECORDED_MAX_BYTES, size
    for step in lab.steps:
        lab.build_spec(step.id)
        lab.build_spec(step.id, short=True)


@pytest.mark.parametrize("folder, step_id, short", STEPS, ids=step_label)
def test_recording_was_made_from_the_steps_spec(folder: Path, step_id: str, short: bool) -> None:
    """A recording stands for its step only while the step's spec is the one it ran: a changed spec (a
    halved alpha, another scale) fails here until `fastlab lab record` makes the recording again."""
    drift = spec_drift(load_lab_folder(folder), step_id, short, recording(folder, step_id, short))
    assert not drift, f"the recording no longer matches the step's spec (record it again): {drift}"


@pytest.mark.parametrize("folder, step_id, short", STEPS, ids=step_label)
def test_checkpoints_pass_on_the_recorded_run(folder: Path, step_id: str, short: bool) -> None:
    """Every checkpoint passes on the step's recording; one judged over draws (lab.yaml's `draws`) is
    INCONCLUSIVE on it, saying one run is one draw, and passes on it taken as a draw."""
    lab = load_lab_folder(folder)
    results = evaluate_step(lab, step_id, recording(folder, step_id, short), short)
    lines = "\n".join(r.line() for r in results)
    assert results and all(r.status == "pass" for r in results if not r.over_draws), lines
    assert all(r.status == "inconclusive" and r.inconclusive.startswith("one draw: ") for r in results
               if r.over_draws), lines
    as_draw = evaluate_run(lab, step_id, StepRun(recording(folder, step_id, short)), short, as_draw=True)
    assert all(r.status == "pass" for r in as_draw), "\n".join(r.line() for r in as_draw)


def scaled_copy(recorded: Path, out: Path, factor: float, columns: tuple[str, ...] = (
        "cwnd_pkts", "bytes_acked", "goodput_mbps", "delivery_rate_mbps", "backlog_pkts", "backlog_bytes",
        "tx_mbps", "tx_bytes", "cwnd"), summary_keys: tuple[str, ...] = (
        "throughput_mbps", "mean_cwnd_pkts", "mean_backlog_pkts", "utilization")) -> Path:
    """The recorded run with the named trace columns and summary figures multiplied by `factor`."""
    out.mkdir(parents=True)
    for path in recorded.iterdir():
        if path.name.endswith(".csv.gz"):
            frame = pd.read_csv(path)
            for column in columns:
                if column in frame:
                    frame[column] = frame[column] * factor
            frame.to_csv(out / path.name.removesuffix(".gz"), index=False)
        elif path.name == "summary.json":  # through the record: its figures are typed fields
            summary = RunFolder(recorded).summary()
            for item in [*summary.flows, *summary.links]:
                for key in summary_keys:
                    if isinstance(getattr(item, key, None), int | float):
                        setattr(item, key, getattr(item, key) * factor)
            RunFolder(out).write_summary(summary)
        else:
            shutil.copy(path, out / path.name)
    return out


def doubled_copy(recorded: Path, out: Path) -> Path:
    """The recorded run with every window, queue and rate doubled: no lab's physics survives that."""
    return scaled_copy(recorded, out, 2.0)


@pytest.mark.parametrize("folder, step_id, short", STEPS, ids=step_label)
def test_checkpoints_fail_on_an_altered_run(folder: Path, step_id: str, short: bool, tmp_path: Path) -> None:
    lab = load_lab_folder(folder)
    altered = doubled_copy(recording(folder, step_id, short), tmp_path / step_id)
    results = evaluate_step(lab, step_id, altered, short)
    assert any(r.status == "fail" for r in results), "\n".join(r.line() for r in results)


@pytest.mark.parametrize("folder, step_id, short", STEPS, ids=step_label)
def test_recorded_run_keeps_traces_gzipped(folder: Path, step_id: str, short: bool) -> None:
    run = StepRun(recording(folder, step_id, short))
    assert run.spec["name"] and run.summary.flows
    assert not list(run.directory.glob("*.csv")), "store traces as .csv.gz"
    with gzip.open(run.directory / "flows.csv.gz", "rt") as handle:
        assert handle.readline().startswith("flow,t")


CASES = [(folder, case) for folder in LABS for case in load_cases(load_lab_folder(folder))]


@pytest.mark.parametrize("folder, case", CASES, ids=lambda item: item.name if hasattr(item, "name") else str(item))
def test_kept_runs_get_the_verdict_their_case_says(folder: Path, case: Case) -> None:
    """Real runs kept as labelled fixtures (CI failures, bench findings): each still gets the verdict its
    case.yaml says -- a model change that turns a known failure into a pass, or back, shows here."""
    problems = judge_case(load_lab_folder(folder), case)
    assert not problems, f"{case.directory}: {problems} (why kept: {case.file.why})"


def with_verdict(recorded: Path, out: Path, faithful: bool | None) -> Path:
    """A copy of a recorded run whose fidelity verdict says `faithful` (None: no verdict at all)."""
    shutil.copytree(recorded, out)
    folder = RunFolder(out)
    summary = folder.summary()
    if faithful is None:
        summary.fidelity = None
    else:
        summary.fidelity = summary.fidelity or Verdict(faithful=faithful, paths=[])
        summary.fidelity.faithful = faithful
        summary.fidelity.reasons = [] if faithful else ["the machine was 99% busy"]
    folder.replace_summary(summary)
    return out


def test_an_unfaithful_run_is_inconclusive_never_pass_or_fail(tmp_path: Path) -> None:
    """The fidelity verdict is a precondition: on a run it calls unfaithful every checkpoint is still
    computed (the figure shown) but INCONCLUSIVE with the verdict's reasons -- whether its figure is in
    its band (the recorded run) or not (the doubled copy); a run without a verdict cannot say either.
    `lab check` says so and exits 3."""
    lab = load_lab_folder(LABS_DIR / "02-fast-equilibrium")
    recorded = lab.recording("equilibrium")
    for name, run_dir in (("good", recorded), ("bad", doubled_copy(recorded, tmp_path / "doubled"))):
        for faithful in (False, None):
            copy = with_verdict(run_dir, tmp_path / f"{name}-{faithful}" / "equilibrium", faithful)
            results = evaluate_step(lab, "equilibrium", copy)
            assert results and {r.status for r in results} == {"inconclusive"}, [r.line() for r in results]
            assert all(isinstance(r.measured, float) for r in results)  # computed all the same
            why = "99% busy" if faithful is False else "no fidelity verdict"
            assert all(why in r.inconclusive for r in results)
    lab_run = tmp_path / "False"
    for step in lab.steps:
        if step.id != "equilibrium":
            with_verdict(lab.recording(step.id), lab_run / step.id, True)
    shutil.copytree(tmp_path / "good-False" / "equilibrium", lab_run / "equilibrium")
    (lab_run / "lab.json").write_text(json.dumps({"name": lab.name, "steps": [{"id": s.id} for s in lab.steps]}))
    assert check_lab_run(lab_run).status == "inconclusive"
    proc = fastlab("lab", "check", "2", "--run", str(lab_run))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "INCONCLUSIVE" in proc.stdout and "99% busy" in proc.stdout and " FAIL " not in proc.stdout


def test_a_halved_alpha_fails_the_unit_tier(tmp_path: Path) -> None:
    """Mutation: lab 02 with FAST's alpha silently halved in its spec no longer matches its recordings
    (the spec-drift test names the field), and with the halving in its checkpoints' arguments instead, its
    checkpoints fail on the recorded runs."""
    copy = tmp_path / "02-fast-equilibrium"
    shutil.copytree(LABS_DIR / "02-fast-equilibrium", copy)
    spec = copy / "specs" / "fast-two-rtts.yaml"
    text = spec.read_text()
    assert text.count("alpha: 20") >= 1
    spec.write_text(text.replace("alpha: 20", "alpha: 10"))
    lab = load_lab_folder(copy)
    drift = spec_drift(lab, "equilibrium", False, lab.recording("equilibrium"))
    assert any("alpha" in line and "10" in line for line in drift), drift
    shutil.copy(LABS_DIR / "02-fast-equilibrium" / "specs" / "fast-two-rtts.yaml", spec)
    lab_yaml = copy / "lab.yaml"
    lab_yaml.write_text(lab_yaml.read_text().replace("alphas: [20, 20]", "alphas: [10, 10]")
                        .replace("alpha: 20}", "alpha: 10}"))
    lab = load_lab_folder(copy)
    assert not spec_drift(lab, "equilibrium", False, lab.recording("equilibrium"))
    for short in (False, True):
        results = evaluate_step(lab, "equilibrium", lab.recording("equilibrium", short), short)
        assert sum(r.status == "fail" for r in results) >= 3, [r.line() for r in results]


# Steps whose only utilization claim is a reproduction of a published figure far below what the emulated
# path delivers: row 10's floor is the paper's 88 % and the recordings measure 0.984-0.992, so a tenth
# less still reproduces the paper (its other checkpoint, FAST's queue per flow, is what pins the model).
REPRODUCTION_FLOORS = {("03-sc2002-table", "row-10")}
UTILIZATION_STEPS = [(f, s, short) for f, s, short in STEPS if s != "unloadable" and any(
    "utilization" in c.label for c in load_lab_folder(f).step(s).checkpoints if not (short and c.full_only))
    and (f.name, s) not in REPRODUCTION_FLOORS]


@pytest.mark.parametrize("folder, step_id, short", UTILIZATION_STEPS, ids=step_label)
def test_a_tenth_less_utilization_fails(folder: Path, step_id: str, short: bool, tmp_path: Path) -> None:
    """Mutation: every recording with a utilization checkpoint (but REPRODUCTION_FLOORS), its rates and
    delivered bytes lowered by 10 %, fails that checkpoint: no utilization band is loose enough to miss a
    tenth."""
    lab = load_lab_folder(folder)
    lowered = scaled_copy(recording(folder, step_id, short), tmp_path / step_id, 0.9,
                          columns=("bytes_acked", "goodput_mbps", "delivery_rate_mbps", "tx_mbps", "tx_bytes"),
                          summary_keys=("throughput_mbps", "utilization"))
    results = [r for r in evaluate_step(lab, step_id, lowered, short) if "utilization" in r.name]
    assert results and any(r.status == "fail" for r in results), "\n".join(r.line() for r in results)


def test_trim_keeps_only_the_columns_checkpoints_read(tmp_path: Path) -> None:
    """A recording keeps the traces' columns some checkpoint reads and nothing else: trimming lab 02's
    recorded live step again leaves the same results, and a column it kept is one that matters."""
    lab = load_lab_folder(LABS_DIR / "02-fast-equilibrium")
    source = lab.recording("live")
    before = fingerprint(evaluate_step(lab, "live", source))
    report = trim(lab, "live", False, source, tmp_path / "live")
    assert fingerprint(evaluate_step(lab, "live", tmp_path / "live")) == before
    assert not list((tmp_path / "live").glob("*.csv")) and (tmp_path / "live" / "spec.yaml").is_file()
    kept = [c for c in report.kept["links.csv"] if c not in ("flow", "link", "direction", "t", "event")]
    assert "backlog_pkts" in kept
    frame = pd.read_csv(tmp_path / "live" / "links.csv.gz").drop(columns=["backlog_pkts"])
    (tmp_path / "live" / "links.csv.gz").unlink()
    frame.to_csv(tmp_path / "live" / "links.csv", index=False)
    assert fingerprint(evaluate_step(lab, "live", tmp_path / "live")) != before


def test_case_files_are_strict(tmp_path: Path) -> None:
    """case.yaml: a missing field, an unknown status or step is refused naming the file and field."""
    copy = tmp_path / "02-fast-equilibrium"
    shutil.copytree(LABS_DIR / "02-fast-equilibrium", copy)
    case = copy / "recorded" / "cases" / "odd"
    shutil.copytree(copy / "recorded" / "full" / "live", case)
    good = {"step": "live", "short": False, "expect": {"status": "pass"}, "why": "a run kept to test the loader",
            "source": "unit test"}
    for change, message in (({"expect": {"status": "maybe"}}, "expect.status"), ({"step": "nope"}, "no step 'nope'"),
                            ({"colour": "red"}, "colour"), ({"why": "short"}, "why")):
        (case / "case.yaml").write_text(yaml.safe_dump(good | change))
        with pytest.raises(LabError, match=message):
            load_cases(load_lab_folder(copy))
    (case / "case.yaml").write_text(yaml.safe_dump(good))
    [loaded] = [c for c in load_cases(load_lab_folder(copy)) if c.directory.name == "odd"]
    assert judge_case(load_lab_folder(copy), loaded) == []
    (case / "case.yaml").write_text(yaml.safe_dump(good | {"expect": {"status": "fail"}}))
    [loaded] = [c for c in load_cases(load_lab_folder(copy)) if c.directory.name == "odd"]
    assert judge_case(load_lab_folder(copy), loaded) == ["the step is pass, the case expects fail"]


@pytest.mark.parametrize("folder, step_id, short", [i for i in STEPS if i[2]], ids=step_label)
def test_live_properties_hold_on_the_short_recording(folder: Path, step_id: str, short: bool) -> None:
    """What a live CI run asserts (lab.yaml `live:`) holds on the step's short recording, read from the
    checkpoint it names."""
    lab = load_lab_folder(folder)
    step = lab.step(step_id)
    results = evaluate_step(lab, step_id, recording(folder, step_id, True), True)
    for prop in step.live:
        verdict = prop.judge(step, results)
        assert verdict.passed and verdict.evaluated, verdict.line()
        assert verdict.measured == next(r.measured for r, c in zip(results, [c for c in step.checkpoints
                                                                            if not c.full_only], strict=True)
                                        if c.label == prop.of)


def test_bench_labs_margin_in_standard_deviations() -> None:
    """bench/labs.py: a live band's margin is the median's distance to its nearer edge over the spread."""
    from tests.unit.test_bench import bench_module

    labs = bench_module("labs")
    assert labs.band("0.95..1.02 pkts") == (0.95, 1.02) and labs.band("faithful") is None
    assert labs.margin_sigmas([1.0, 2.0, 3.0], 0.0, 10.0) == pytest.approx(2.0)  # median 2, sd 1
    assert labs.margin_sigmas([5.0, 5.0], 0.0, 10.0) == float("inf")
    assert labs.margin_sigmas([5.0, 5.0], 6.0, 10.0) == float("-inf")


def test_lab_check_on_a_lab_run_made_of_recorded_steps(tmp_path: Path) -> None:
    """`fastlab lab check` re-evaluates a finished lab run: one assembled from lab 01's recorded steps."""
    lab = load_lab_folder(LABS[0])
    for step in lab.steps:
        shutil.copytree(lab.recording(step.id), tmp_path / "good" / step.id)
        doubled_copy(lab.recording(step.id), tmp_path / "bad" / step.id)
    for run_dir in (tmp_path / "good", tmp_path / "bad"):
        (run_dir / "lab.json").write_text(json.dumps({"name": lab.name, "steps": [{"id": s.id} for s in lab.steps]}))
    assert check_lab_run(tmp_path / "good").passed and not check_lab_run(tmp_path / "bad").passed
    good = fastlab("lab", "check", str(lab.number), "--run", str(tmp_path / "good"))
    assert good.returncode == 0 and "all checkpoints pass" in good.stdout, good.stdout + good.stderr
    bad = fastlab("lab", "check", lab.slug, "--run", str(tmp_path / "bad"))
    assert bad.returncode == 1 and "FAIL" in bad.stdout, bad.stdout + bad.stderr
    other = load_lab_folder(LABS[1]) if len(LABS) > 1 else None
    if other is not None:
        wrong = fastlab("lab", "check", str(other.number), "--run", str(tmp_path / "good"))
        assert wrong.returncode == 2 and f"it is a run of lab {lab.name}" in wrong.stderr, wrong.stderr


def test_loss_starts_sees_reductions_between_samples_when_asked() -> None:
    """The trace of a Reno flow leaving slow start (CI, lab 04 short form): in recovery at ssthresh
    2,011, then open at 1,005 one sample later, its second halving never seen in a loss state; later
    a recovery seen as such. Without `reductions` the replay started from 2,011 and predicted 192 Mb/s
    for a flow that carried 105."""
    rows = pd.DataFrame({"ca_state": ["open", "open", "recovery", "open", "open", "recovery", "open"],
                         "ssthresh_pkts": [np.nan, np.nan, 2011, 1005, 1005, 530, 530]})
    assert loss_starts(rows) == [2, 5]
    assert loss_starts(rows, reductions=True) == [2, 3, 5]
    undo = pd.DataFrame({"ca_state": ["open", "recovery", "open"], "ssthresh_pkts": [np.nan, 500, 1000]})
    assert loss_starts(undo, reductions=True) == [1]  # an undo raises ssthresh: no new event


def test_goodput_window_outside_recovery_drops_the_catch_up(tmp_path: Path) -> None:
    """A 100 Mb/s flow (12.5 MB/s) whose window opens in a recovery: the cumulative ACK stands still
    and then jumps by what arrived meanwhile. Counted from inside the recovery the jump inflates the
    rate; with the window's ends outside loss states it is the rate the flow carried."""
    t = [10.0 + 0.1 * i for i in range(31)]  # 10.0 .. 13.0 s
    state = ["recovery"] * 4 + ["open"] * 27  # in recovery 10.0-10.3, open from 10.4
    # at the recovery's end the ACK jumps by 10 MB: 5 arrived during it, 5 before the window opened
    acked = [100e6] * 4 + [100e6 + 10e6 + 1.25e6 * (i - 4) for i in range(4, 31)]
    pd.DataFrame({"flow": "f1", "t": t, "ca_state": state, "bytes_acked": acked}).to_csv(tmp_path / "flows.csv",
                                                                                            index=False)
    run = StepRun(tmp_path)
    assert run.goodput_mbps("f1", 10.0, 13.0, outside_recovery=False) > 110  # the catch-up counted as rate
    assert run.goodput_mbps("f1", 10.0, 13.0) == pytest.approx(100, rel=1e-6)  # the default


def test_goodput_window_closing_in_recovery_ends_where_the_ack_caught_up(tmp_path: Path) -> None:
    """The other end: a 100 Mb/s flow that enters a recovery 0.3 s before the window closes. Its
    cumulative ACK stands still at the hole while 3.75 MB arrive, so a window closing there reads low;
    by default the window ends at the last sample outside the recovery. A window wholly inside a
    recovery has no rate to give."""
    t = [10.0 + 0.1 * i for i in range(31)]
    state = ["open"] * 27 + ["recovery"] * 4  # in recovery from 12.7 s
    acked = [1.25e6 * i for i in range(27)] + [1.25e6 * 26] * 4
    pd.DataFrame({"flow": "f1", "t": t, "ca_state": state, "bytes_acked": acked}).to_csv(tmp_path / "flows.csv",
                                                                                            index=False)
    run = StepRun(tmp_path)
    assert run.goodput_mbps("f1", 10.0, 13.0, outside_recovery=False) == pytest.approx(100 * 2.6 / 3.0, rel=1e-6)
    assert run.goodput_mbps("f1", 10.0, 13.0) == pytest.approx(100, rel=1e-6)
    with pytest.raises(MissingData, match="outside loss recovery"):
        run.goodput_mbps("f1", 12.75, 13.0)


def test_mathis_checkpoint_takes_the_loss_rate_reno_met(tmp_path: Path) -> None:
    """Lab 07 tests Mathis at the congestion signals Reno met per packet, as the law defines p: the
    recorded p = 2e-3 step met 12 loss events (p = 0.0023, 1.15x the link's rate), and its ratio is 0.91
    there. A window without two loss events has no rate to test the law at."""
    lab = load_lab_folder(next(f for f in lab_folders() if f.name.startswith("07-")))
    recorded = lab.recording("p2e-3")
    [mathis] = [r for r in evaluate_step(lab, "p2e-3", recorded) if r.name.startswith("Reno / Mathis")]
    assert "12 loss events" in mathis.note and 0.85 < float(mathis.measured) < 0.95, mathis
    quiet = tmp_path / "p2e-3"
    shutil.copytree(recorded, quiet)
    flows = pd.read_csv(quiet / "flows.csv.gz")
    reno = flows["flow"] == "f1"
    flows.loc[reno, "ca_state"] = "open"
    flows.loc[reno, "ssthresh_pkts"] = np.nan
    (quiet / "flows.csv.gz").unlink()
    flows.to_csv(quiet / "flows.csv", index=False)
    [refused] = [r for r in evaluate_step(lab, "p2e-3", quiet) if r.name == "reno_follows_mathis"]
    assert not refused.passed and "0 loss event(s)" in refused.note, refused


def test_hstcp_reno_fairness_asks_for_cuts_of_both_flows(tmp_path: Path) -> None:
    """Lab 05's HSTCP/Reno ratio is a steady-state figure: a window in which Reno met fewer than 3 cuts
    still holds the share its slow start gave it. The recorded 30-s cern run cut to its first 8 s (the
    old short form) has 2 HSTCP cuts and no Reno cut in 2.7..8 s: the checkpoint says "run longer"
    instead of a verdict, while the whole run is judged."""
    folder = next(f for f in LABS if f.name == "05-hstcp")
    recorded, cut = load_lab_folder(folder).recording("cern"), tmp_path / "cern"
    shutil.copytree(recorded, cut)
    spec = yaml.safe_load((cut / "spec.yaml").read_text())
    spec["duration_s"] = 8
    (cut / "spec.yaml").write_text(yaml.safe_dump(spec))
    for name in ("flows.csv.gz", "cc_events.csv.gz", "links.csv.gz"):
        frame = pd.read_csv(cut / name)
        frame[frame["t"] <= 8].to_csv(cut / name, index=False, compression="gzip")
    full = {r.name: r for r in evaluate_step(load_lab_folder(folder), "cern", recorded)}
    short = {r.name: r for r in evaluate_step(load_lab_folder(folder), "cern", cut)}
    assert full["HSTCP / Reno goodput, one RTT"].passed
    fairness = [r for r in short.values() if "fairness" in r.name or "HSTCP / Reno" in r.name]
    assert len(fairness) == 1 and not fairness[0].passed, [r.line() for r in short.values()]
    assert "fewer than 3" in fairness[0].line() and "run longer" in fairness[0].line(), fairness[0].line()


def test_hstcp_reno_loss_sharing_limits_are_ordered_and_meet_where_hstcp_is_reno() -> None:
    """Lab 05's three limits of HSTCP's share against Reno's at one RTT: cuts in proportion to each
    flow's increase per RTT (the drop-tail end least kind to HSTCP), independent losses, synchronized
    losses. Above Low_Window they are ordered so; below it HSTCP is Reno and all three are 1."""
    load_lab_folder(next(f for f in LABS if f.name == "05-hstcp"))
    module = sys.modules["fastlab_lab_05_hstcp"]  # the checkpoints module, as the loader imported it
    params = module.HstcpParams()
    by_increase = module._synchronized_ratio(params, 249, cuts_follow_increase=True)
    independent, synchronized = module._independent_ratio(params, 249), module._synchronized_ratio(params, 249)
    assert 1 < by_increase < independent < synchronized, (by_increase, independent, synchronized)
    for ratio in (module._synchronized_ratio(params, 40, cuts_follow_increase=True),
                  module._independent_ratio(params, 40), module._synchronized_ratio(params, 40)):
        assert ratio == pytest.approx(1.0, abs=0.02)


def _lab10() -> Lab:
    return load_lab_folder(next(f for f in lab_folders() if f.name.startswith("10-")))


def _rewrite(folder: Path, name: str, change: Callable[[pd.DataFrame], None]) -> None:
    """One trace of a copied recording, changed in place and stored back gzipped."""
    frame = pd.read_csv(folder / f"{name}.csv.gz")
    change(frame)
    (folder / f"{name}.csv.gz").unlink()
    frame.to_csv(folder / f"{name}.csv.gz", index=False)


def _by_label(lab: Lab, step_id: str, run: Path) -> dict[str, CheckResult]:
    """A step's results on a run folder, by the label lab.yaml gives each checkpoint call."""
    labels = [c.label for c in lab.step(step_id).checkpoints]
    return dict(zip(labels, evaluate_step(lab, step_id, run), strict=True))


def test_lab10_capacity_segments_follow_the_schedule(tmp_path: Path) -> None:
    """Lab 10's capacity step reads the bottleneck's capacity over time from the spec's schedule: the
    topology's rate, then each step that sets a rate; a step that sets only the delay changes nothing."""
    lab = _lab10()
    recorded = lab.recording("step-fast")
    segments = sys.modules["fastlab_lab_10_red_scaling"].segments  # load_lab_folder imported it
    assert segments(StepRun(recorded)) == [(0.0, 10.0, 40.0), (10.0, 20.0, 10.0), (20.0, 30.0, 40.0)]
    copy = tmp_path / "step-fast"
    shutil.copytree(recorded, copy)
    spec = yaml.safe_load((copy / "spec.yaml").read_text())
    spec["links"]["bottleneck"]["schedule"].insert(1, {"at_s": 15.0, "delay_ms": 30.0})
    (copy / "spec.yaml").write_text(yaml.safe_dump(spec))
    assert segments(StepRun(copy)) == [(0.0, 10.0, 40.0), (10.0, 20.0, 10.0), (20.0, 30.0, 40.0)]


@pytest.mark.parametrize("args, message", [
    ({"segment": 7, "settle_s": 2}, "no segment 7"), ({"segment": "1", "settle_s": 2}, "segment: '1'"),
    ({"segment": True, "settle_s": 2}, "segment: True"), ({"segment": 1, "settle_s": float("nan")}, "settle_s: nan"),
    ({"segment": 1, "settle_s": -1}, "settle_s: -1"), ({"segment": 1, "settle_s": 1e300}, "settle_s: 1e+300")])
def test_lab10_capacity_step_refuses_bad_arguments_by_name(args: dict[str, Any], message: str) -> None:
    """A segment that is no segment number, or a settling time that is not a sane number of seconds, is one
    clear line naming the argument (the checkpoint measured nothing), never a crash."""
    lab = _lab10()
    with pytest.raises(MissingData, match=re.escape(message)):
        lab.checks["follows_capacity"](StepRun(lab.recording("step-fast")), lo=0.9, hi=1.02, why="x", **args)


def test_lab10_fast_settling_late_fails(tmp_path: Path) -> None:
    """FAST's queue held at 100 packets for the 3 s after the step down (60 base RTTs, where the recording
    settles in ~12) fails the settling checkpoint and FAST's queue at 10 Mb/s."""
    lab = _lab10()
    copy = tmp_path / "step-fast"
    shutil.copytree(lab.recording("step-fast"), copy)

    def swell(links: pd.DataFrame) -> None:
        links.loc[(links["t"] >= 10.0) & (links["t"] <= 13.0) & (links["direction"] == "forward"),
                  "backlog_pkts"] = 100

    _rewrite(copy, "links", swell)
    results = _by_label(lab, "step-fast", copy)
    assert not results["settle_down"].passed and float(results["settle_down"].measured) > 55, results["settle_down"]
    assert results["settle_up"].passed


def test_lab10_buffer_overflows_fail_the_aqm_share(tmp_path: Path) -> None:
    """CoDel's step, with 500 buffer overflows added over its window: the drops are no longer the AQM's."""
    lab = _lab10()
    copy = tmp_path / "codel-312m"
    shutil.copytree(lab.recording("codel-312m"), copy)

    def overflow(links: pd.DataFrame) -> None:
        late = (links["t"] >= 15.0) & (links["direction"] == "forward")
        links.loc[late, "queue_drops"] = links.loc[late, "queue_drops"] + 500

    _rewrite(copy, "links", overflow)
    share = _by_label(lab, "codel-312m", copy)["aqm_drops"]
    assert not share.passed and float(share.measured) < 0.5, share
