"""`fastlab run --repeat 3` on the real machine (issue 53 item 4): three runs of one spec with their own
seeds, a resumable folder of them, and each headline figure's median and 95 % interval over the faithful
ones. The arithmetic is tests/unit/test_repeats.py's; this test holds the path from the CLI to the table."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from fastlab.base.rundir import RunFolder
from tests.conftest import EXAMPLE, fastlab, machine_leftovers

pytestmark = pytest.mark.usefixtures("as_root")


def test_three_repetitions_give_figures_over_the_faithful_runs(tmp_path: Path) -> None:
    before = machine_leftovers()
    out = tmp_path / "rep"
    proc = fastlab("run", str(EXAMPLE), "--repeat", "3", "--set", "duration_s=3", "--set", "seed=40",
                   "--out", str(out), timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(out)
    points = sorted(p.name for p in (out / "points").iterdir())
    assert points == ["p00-r0", "p00-r1", "p00-r2"]
    seeds = [RunFolder(out / "points" / p).spec()["seed"] for p in points]
    assert seeds == [40, 41, 42]  # repetition r with seed + r, each a run of its own
    means = pd.read_csv(out / "aggregate_mean.csv")
    row = means.iloc[0]
    assert row["n"] == 3
    faithful = int(row["faithful_n"])
    assert f"repetitions: {faithful} of 3 faithful" in proc.stderr
    if faithful < 2:
        pytest.skip(f"inconclusive: {3 - faithful} of 3 runs were unfaithful (no interval from one run)")
    median, low, high = (row[f"throughput_mbps_{s}"] for s in ("median", "ci95_low", "ci95_high"))
    assert math.isfinite(low) and math.isfinite(high) and low <= high
    assert 0 < median <= 50 * 1.02  # a 50-Mb/s dumbbell
    assert f"throughput_mbps: median {median:.4g}, 95 % interval {low:.4g} to {high:.4g}" in proc.stderr
    stamps = [(out / "points" / p / "summary.json").stat().st_mtime_ns for p in points]
    again = fastlab("run", str(EXAMPLE), "--repeat", "3", "--set", "duration_s=3", "--set", "seed=40",
                    "--out", str(out), timeout=60)  # every point finished: resuming runs nothing
    assert again.returncode == 0 and "repetitions:" in again.stderr
    assert [(out / "points" / p / "summary.json").stat().st_mtime_ns for p in points] == stamps
    assert machine_leftovers() == before


def test_a_lab_step_repeated_judges_its_claim_over_draws(tmp_path: Path) -> None:
    """`fastlab lab run --repeat 3` on a throwaway lab whose checkpoint is a claim over draws: three real runs
    with seeds 7, 8, 9 in <step>/seed-<n>, then the claim judged on the share of them (a 3-s CUBIC run fills
    its 50-Mb/s dumbbell to at least 2 Mb/s: 3 of 3, Wilson 0.44..1 above 0.3), lab.json as written, and
    `lab check` judging the folder again to the same verdicts."""
    import json

    from tests.unit.test_labs import LAB_YAML, make_lab

    labs = tmp_path / "labs"
    make_lab(labs, lab_yaml=LAB_YAML.replace("set: [duration_s=5]", "set: [duration_s=3, seed=7, idle_pings=1]")
             .replace("      - {check: throughput, args: {minimum: 2}}",
                      "      - {check: throughput, args: {minimum: 2}}\n"
                      "      - {check: throughput, name: most draws, args: {minimum: 2},\n"
                      "         draws: {runs: 3, share: 0.3, why: which way one run goes is the draw of its seed}}"))
    before = machine_leftovers()
    out = tmp_path / "run"
    env = {"FASTLAB_LABS_DIR": str(labs)}
    proc = fastlab("lab", "run", "9", "--repeat", "3", "--out", str(out), timeout=240, env=env)
    record = json.loads((out / "lab.json").read_text())
    seeds = [e["seed"] for e in record["steps"][:3]]
    assert seeds == [7, 8, 9] and all((out / "one" / f"seed-{n}" / "summary.json").is_file() for n in seeds)
    assert [RunFolder(out / "one" / f"seed-{n}").spec()["seed"] for n in seeds] == seeds
    last = record["steps"][3]
    assert last["over_draws"] is True and last["checks"][0]["name"] == "most draws over draws"
    faithful = sum(not e["inconclusive"] for e in record["steps"][:3])
    if faithful < 3:
        pytest.skip(f"inconclusive: {3 - faithful} of 3 runs were unfaithful")
    assert last["status"] == "pass" and "3 of 3 conclusive draws" in last["checks"][0]["note"], last
    assert proc.returncode == 0, proc.stderr
    again = fastlab("lab", "check", "9", "--run", str(out), timeout=60, env=env)
    assert again.returncode == 0 and again.stdout.count("3 of 3 conclusive draws") == 1, again.stdout
    assert machine_leftovers() == before
