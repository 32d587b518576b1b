"""Repetitions as a spec option (`repeat: N`, issue 53 item 4): the spec field and its refusals, the plan
(a sweep without parameters, seed + r), the spread over the faithful runs (Student's t interval) and what
`fastlab run` prints. The live run of `fastlab run --repeat 3` is tests/integration/test_repeats.py."""

from __future__ import annotations

import math
import subprocess
import sys

import pandas as pd
import pytest

from fastlab.define.schema import SpecError, parse_spec
from fastlab.sweep import points as sweep
from fastlab.sweep import repeats
from fastlab.sweep.report import aggregate
from fastlab.sweep.spread import spread, t_quantile
from tests.conftest import EXAMPLE, REPO

BASE = {"name": "rep", "topology": "dumbbell", "topology_args": {"rate_mbps": 20, "rtt_ms": 20}, "duration_s": 4,
        "seed": 7, "flows": [{"src": "h1", "dst": "h2", "cc": "cubic"}]}


@pytest.mark.parametrize(("df", "table"), [(1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (29, 2.045),
                                           (60, 2.000), (120, 1.980)])
def test_the_t_quantile_is_the_tables(df: int, table: float) -> None:
    """Student's t at 0.975, computed (no SciPy), against the printed tables' three decimals."""
    assert t_quantile(0.975, df) == pytest.approx(table, abs=6e-4)


def test_the_t_quantile_refuses_what_has_none() -> None:
    for p, df in ((0.5, 3), (1.0, 3), (0.975, 0), (float("nan"), 3)):
        with pytest.raises(ValueError, match="t_quantile"):
            t_quantile(p, df)


def test_a_spread_over_runs_median_range_and_the_interval_of_the_mean() -> None:
    figure = spread([10.0, 11.0, 12.0, float("nan")])  # a run that lacks the figure is left out
    assert (figure.n, figure.median, figure.low, figure.high) == (3, 11.0, 10.0, 12.0)
    half = 4.303 * 1.0 / math.sqrt(3)  # t(0.975, 2) * s / sqrt(n), s = 1
    assert figure.ci_low == pytest.approx(11.0 - half, abs=1e-3) and figure.ci_high == pytest.approx(11.0 + half,
                                                                                                      abs=1e-3)
    one = spread([5.0])
    assert (one.n, one.median, one.ci_low, one.ci_high) == (1, 5.0, None, None)  # one run: no interval
    assert spread([]).median is None and spread([float("inf")]).n == 0


def test_the_spec_field_and_its_refusals_name_repeat() -> None:
    assert parse_spec(BASE).repeat == 1 and parse_spec({**BASE, "repeat": 3}).repeat == 3
    for bad in (0, -1, 101, 2.5, "3", True, None, float("nan"), [3], 10**40):
        with pytest.raises(SpecError, match=r"^repeat: "):
            parse_spec({**BASE, "repeat": bad})


def test_repetitions_plan_as_a_sweep_without_parameters_each_point_once() -> None:
    plan = repeats.plan_repeats(parse_spec({**BASE, "repeat": 3}))
    assert [(p.id, p.seed) for p in plan.points] == [("p00-r0", 7), ("p00-r1", 8), ("p00-r2", 9)]
    for point in plan.points:
        spec = parse_spec(plan.point_document(point))
        assert spec.repeat == 1 and spec.seed == point.seed  # a point is one run
    assert repeats.plan_repeats(parse_spec({**BASE, "repeat": 3})).digest == plan.digest  # same folder: resumes
    assert repeats.plan_repeats(parse_spec({**BASE, "repeat": 4})).digest != plan.digest


def test_a_sweep_file_gives_its_repetitions_once_and_cannot_sweep_repeat() -> None:
    both = {**BASE, "repeat": 2, "sweep": {"params": {"seed": [1, 5]}, "repeat": 2}}
    with pytest.raises(SpecError, match=r"^repeat: a sweep file gives its repetitions once"):
        sweep.plan_sweep(both)
    spec_repeat = sweep.plan_sweep({**BASE, "repeat": 2, "sweep": {"params": {"seed": [1, 5]}}})
    assert len(spec_repeat.points) == 4 and "repeat" not in spec_repeat.base
    with pytest.raises(SpecError, match=r"^sweep.params.repeat: cannot be swept"):
        sweep.plan_sweep({**BASE, "sweep": {"params": {"repeat": [1, 2]}}})


def table(faithful: list[int | None], goodput: list[float]) -> pd.DataFrame:
    n = len(goodput)
    return pd.DataFrame({"point": [f"p00-r{r}" for r in range(n)], "combo": [0] * n, "rep": list(range(n)),
                         "seed": list(range(n)), "faithful": pd.array(faithful, dtype="Int64"),
                         "throughput_mbps": goodput})


def test_the_figures_are_over_the_faithful_runs_the_unfaithful_named() -> None:
    means = aggregate(table([1, 1, 0, 1], [10.0, 11.0, 3.0, 12.0]), [])
    row = means.iloc[0]
    assert row["faithful_n"] == 3 and row["unfaithful"] == "p00-r2"
    assert row["throughput_mbps_median"] == 11.0  # 3.0, the unfaithful run's, is not in it
    assert row["throughput_mbps_ci95_low"] == pytest.approx(11.0 - 4.303 / math.sqrt(3), abs=1e-3)
    assert row["throughput_mbps_min"] == 3.0  # the all-runs columns keep every run, as before
    lines = repeats.figure_lines(means, {"p00-r2": "7.6 ms of queue held between links"})
    assert lines[0] == "repetitions: 3 of 4 faithful, 1 not"
    assert lines[1] == "  p00-r2: NOT FAITHFUL — 7.6 ms of queue held between links"
    assert lines[2] == "throughput_mbps: median 11, 95 % interval 8.516 to 13.48"


def test_the_folder_of_repetitions_has_its_tables_and_a_page_of_figures(tmp_path) -> None:
    """write_aggregates of a sweep without parameters: aggregate_mean.csv with the median and interval, and a
    sweep.html whose table is those figures (no plot: nothing to plot them against)."""
    from tests.unit.test_sweep import fake_point_dir

    plan = repeats.plan_repeats(parse_spec({**BASE, "repeat": 3}))
    sweep.prepare_directory(plan, tmp_path)
    for point in plan.points:
        fake_point_dir(tmp_path, point, finished=True)
    table = sweep.write_aggregates(plan, tmp_path)
    assert len(table) == 3
    means = pd.read_csv(tmp_path / "aggregate_mean.csv")
    assert {"throughput_mbps_median", "throughput_mbps_ci95_low", "throughput_mbps_ci95_high"} <= set(means.columns)
    page = (tmp_path / "sweep.html").read_text()
    assert "throughput_mbps_median" in page and "3 of 3 points finished" in page


def test_no_faithful_run_gives_no_figures() -> None:
    means = aggregate(table([0, 0], [10.0, 11.0]), [])
    assert pd.isna(means.iloc[0]["throughput_mbps_median"])
    lines = repeats.figure_lines(means, {})
    assert lines[0] == "repetitions: 0 of 2 faithful, 2 not" and lines[-1].startswith("no figures")


def test_the_cli_refuses_a_bad_repeat_in_one_line_before_anything_runs() -> None:
    """`fastlab run --repeat` is the field's override: checked as the spec is (no root needed to refuse)."""
    for bad in ("0", "x", "1e9", "nan"):
        proc = subprocess.run([sys.executable, "-m", "fastlab", "run", str(EXAMPLE), "--repeat", bad],
                              capture_output=True, text=True, cwd=REPO, timeout=60, check=False)
        assert proc.returncode != 0 and proc.stdout == ""
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "repeat" in lines[0], proc.stderr
