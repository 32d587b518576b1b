"""The benches' parsers, pure, on captured tool output."""

from __future__ import annotations

import importlib.util
import json
import math
import statistics
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def bench_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", REPO / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_softirq_share_on_captured_perf_script() -> None:
    """bench/emulator.py --perf: samples with a network softirq frame over all samples (captured from
    `perf record -g -p <linkemu>` at 1 Gb/s: 4 of these 12 samples ran the receiving host's stack)."""
    emulator = bench_module("emulator")
    captured = (REPO / "tests" / "fixtures" / "perf_script_linkemu.txt").read_text()
    assert emulator.softirq_share(captured) == (4 / 12, 12)
    share, samples = emulator.softirq_share("")
    assert samples == 0 and math.isnan(share)


def test_proc_cpu_ticks_on_captured_stat_lines() -> None:
    """bench/emulator.py's receive-thread CPU: utime + stime (fields 14 and 15 of proc(5)); a comm with
    spaces and parentheses must not shift the fields (captured from /proc/14/stat, ksoftirqd/0)."""
    emulator = bench_module("emulator")
    line = ("14 (ksoftirqd/0) S 2 0 0 0 -1 69238848 0 0 0 0 812 1093 0 0 20 0 1 0 11 0 0 "
            "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0")
    assert emulator.proc_cpu_ticks(line) == 812 + 1093
    odd = line.replace("(ksoftirqd/0)", "(napi/a) b) (c-7)")
    assert emulator.proc_cpu_ticks(odd) == 812 + 1093


def test_docsis_fit_ranks_the_grid_by_residuals_in_band_units() -> None:
    """bench/docsis.py --fit: each grid point's emulated mean RTTs against the published ones, in
    half-widths of the published band; the least sum of squares wins (ties: the smaller delay)."""
    import pandas as pd

    docsis = bench_module("docsis")
    points = [{"window": 20, "value": 145, "low": 130, "high": 160},
              {"window": 38, "value": 145, "low": 130, "high": 160}]
    rows = pd.DataFrame([
        {"max_delay_ms": 30.0, "knee": 0.5, "value": 20, "mean_rtt_ms": 130.0},  # -1 half-width
        {"max_delay_ms": 30.0, "knee": 0.5, "value": 38, "mean_rtt_ms": 152.5},  # +0.5
        {"max_delay_ms": 40.0, "knee": 0.5, "value": 20, "mean_rtt_ms": 145.0},
        {"max_delay_ms": 40.0, "knee": 0.5, "value": 38, "mean_rtt_ms": 152.5},
    ])
    best, ranked = docsis.best_fit(rows, points)
    assert best == {"max_delay_ms": 40.0, "knee": 0.5}
    assert list(ranked["sum_sq"]) == [0.25, 1.25] and list(ranked["worst"]) == [0.5, 1.0]
    res = docsis.residuals(rows[rows["max_delay_ms"] == 30.0], points)
    assert list(res["residual"]) == [-1.0, 0.5]


def test_docsis_smallest_alpha_that_stays_full() -> None:
    """The smallest alpha from which every larger alpha measured fills the link (a lucky small alpha
    followed by one that does not is not it)."""
    import pandas as pd

    docsis = bench_module("docsis")
    assert docsis.smallest_full_alpha(pd.Series({1: 0.5, 2: 0.96, 3: 0.9, 4: 0.97, 6: 0.99})) == 4
    assert docsis.smallest_full_alpha(pd.Series({1: 0.5, 2: 0.6})) is None
    data = docsis.published()
    assert docsis.simple_mean_rtt_ms(20, data) == 100 and docsis.simple_mean_rtt_ms(30, data) == 120


def test_docsis_aggregate_leaves_unfaithful_runs_out_and_the_plot_shows_the_published_bands() -> None:
    """bench/docsis.py --plot: medians, min and max over the faithful runs only (an unfaithful run proves
    nothing either way), the unfaithful ones counted; the page draws the published bands beside them."""
    import pandas as pd

    docsis = bench_module("docsis")

    def row(value: int, util: float, faithful: bool, kind: str = "window") -> dict:
        return {"kind": kind, "link": "docsis", "value": value, "seed": 1, "downstream_mbps": 3.0, "flows": 1,
                "utilization": util, "mean_rtt_ms": 140.0, "min_rtt_ms": 130.0, "cwnd_mean": 20.0,
                "faithful": faithful}

    table = pd.DataFrame([row(30, 0.8, True), row(30, 0.9, True), row(30, 0.1, False), row(40, 0.97, True)])
    agg = docsis.aggregate(table, ["utilization"]).set_index("value")
    assert abs(agg.loc[30, "utilization_median"] - 0.85) < 1e-9 and agg.loc[30, "utilization_min"] == 0.8
    assert agg.loc[30, "runs"] == 3 and agg.loc[30, "unfaithful"] == 1 and agg.loc[40, "unfaithful"] == 0
    dump = {"windows": [row(30, 0.8, True), row(40, 0.97, True)], "alphas": [row(12, 0.99, True, "alpha")]}
    page = docsis.plot_html([dump], docsis.published())
    assert page.lstrip().lower().startswith("<!doctype html>") and "published: DOCSIS full by w 38-42" in page
    assert "full from alpha ~13" in page and '<script src="http' not in page  # self-contained: no network


def test_phantom_defaults_are_the_fit_output() -> None:
    """The calibrated element's defaults come from `bench/docsis.py --fit`'s output, not from hand tuning
    (issue 31): the spec's constants must equal the fit file's best point, which must be the least sum of
    squares of its own ranked grid, fitted to the `fit` figures only."""
    from fastlab.define.schema import PHANTOM_FIT_KNEE, PHANTOM_FIT_MAX_DELAY_MS, PHANTOM_WINDOW_MS, PhantomDelay

    docsis = bench_module("docsis")
    fit = json.loads(docsis.FIT_FILE.read_text())
    assert (fit["best"]["max_delay_ms"], fit["best"]["knee"]) == (PHANTOM_FIT_MAX_DELAY_MS, PHANTOM_FIT_KNEE)
    assert fit["window_ms"] == PHANTOM_WINDOW_MS and "fit.docsis_mean_rtt_ms" in fit["fitted_to"]
    top = min(fit["ranked"], key=lambda row: row["sum_sq"])
    assert (top["max_delay_ms"], top["knee"]) == (fit["best"]["max_delay_ms"], fit["best"]["knee"])
    element = PhantomDelay(model="calibrated_load_delay")
    assert (element.max_delay_ms, element.knee) == (PHANTOM_FIT_MAX_DELAY_MS, PHANTOM_FIT_KNEE)


def test_red_lane_judges_only_faithful_pairs_and_says_how_far_apart() -> None:
    """bench/red_lane.py on two pairs the lane recorded (2026-11-27, on a busy host: both unfaithful, so
    nothing is judged), then on the same pairs as if faithful: each pair's relative differences (tc's
    figure against linkemu's) and the pass rate of "both within 20 %"."""
    red = bench_module("red_lane")
    pairs = json.loads((REPO / "tests" / "fixtures" / "red_lane_pairs.json").read_text())
    busy = red.judge(pairs)
    assert busy["faithful_pairs"] == 0 and "medians" not in busy
    assert "no faithful pair among 2" in red.report(busy)
    for p in pairs:
        p["tc"]["faithful"] = p["emulator"]["faithful"] = True
    j = red.judge(pairs)
    tc, emu = pairs[0]["tc"], pairs[0]["emulator"]
    assert j["pairs"][0]["d_drop"] == abs(tc["drop_rate"] - emu["drop_rate"]) / emu["drop_rate"]
    assert 0.01 < j["pairs"][0]["d_drop"] < 0.03  # 0.0285 against 0.0291
    assert j["faithful_pairs"] == 2 and j["passes"] == 2
    # one pair 30 % apart on drops fails "both within 20 %"
    pairs[1]["tc"]["drop_rate"] = pairs[1]["emulator"]["drop_rate"] * 1.3
    assert red.judge(pairs)["passes"] == 1
    assert "both within 20 %: 1/2" in red.report(red.judge(pairs)).replace("20%", "20 %")


def test_verdict_bench_bands_from_quiet_repeats_and_its_error_classes() -> None:
    """bench/verdict.py: each figure's band comes from the quiet repeats the verdict judged faithful (a new run's
    99 % Student-t prediction interval, the reference's figures at once, at least +-2 %); a reference without
    three of them takes the lab checkpoint's band. A run is false-faithful when judged faithful with any figure
    outside, a false alarm when unfaithful with all inside."""
    verdict = bench_module("verdict")
    assert abs(verdict.t_quantile(0.975, 4) - 2.776) < 1e-3 and abs(verdict.t_quantile(0.999, 14) - 3.787) < 1e-3

    def rec(kind: str, faithful: bool, util: float, backlog: float | None = None, ref: str = "lab02") -> dict:
        figures = {"bottleneck utilization 6-15 s": util} | ({"mean bottleneck backlog after 6 s": backlog}
                                                              if backlog is not None else {})
        return {"ref": ref, "kind": kind, "faithful": faithful, "figures": figures, "at": "t", "index": 0,
                "reasons": ["why"], "checkpoints": [{"name": "7-flow row utilization (20-40 s)", "band": [0.9, 0.997]}]}

    backlogs = (36.0, 38.0, 38.5, 39.0, 39.5, 40.0, 42.0)
    quiet = [rec("none", True, 1.0, b) for b in backlogs]
    bands = verdict.bands(quiet + [rec("none", False, 0.5, 20.0)])
    lo, hi, why = bands[("lab02", "mean bottleneck backlog after 6 s")]
    # two figures: 0.5 % a side each; t(0.9975, 6) = 4.317
    half = verdict.t_quantile(1 - 0.01 / 4, 6) * statistics.stdev(backlogs) * (1 + 1 / 7) ** 0.5
    assert abs(verdict.t_quantile(1 - 0.01 / 4, 6) - 4.317) < 2e-3
    assert (lo, hi) == (statistics.mean(backlogs) - half, statistics.mean(backlogs) + half)
    assert why.startswith("quiet: 7 faithful repeats, a new run's 99% prediction (2 figures)")
    assert bands[("lab02", "bottleneck utilization 6-15 s")][:2] == (1.0 - 0.02, 1.0 + 0.02)  # no spread: 2 %
    assert verdict.classify(rec("cpu", True, 0.967, 39.0), bands) == "false faithful"
    assert verdict.classify(rec("cpu", False, 0.999, 39.2), bands) == "false alarm"
    assert verdict.classify(rec("cpu", False, 0.97, 39.2), bands) == "true alarm"
    assert verdict.classify(rec("cpu", True, 1.0, 38.5), bands) == "true faithful"
    assert verdict.outside(rec("cpu", True, 0.967, 39.0), bands) == [
        "bottleneck utilization 6-15 s 0.967 not in 0.98..1.02"]
    rows = [rec("none", False, 0.6, ref="row7") | {"figures": {"7-flow row utilization (20-40 s)": 0.6}}]
    lab = verdict.bands(rows)[("row7", "7-flow row utilization")]
    assert lab[:2] == (0.9, 0.997) and "the lab checkpoint's own band" in lab[2]
    assert verdict.classify(rows[0], verdict.bands(rows)) == "true alarm"  # 0.6 is not the row's physics


def test_verdict_bench_plans_the_cells_still_short_of_their_repeats() -> None:
    verdict = bench_module("verdict")
    done = [{"ref": "lab02", "kind": "none", "index": 0}, {"ref": "lab02", "kind": "conc2", "index": 0},
            {"ref": "lab02", "kind": "conc2", "index": 1}]
    todo = verdict.plan(done, ["lab02", "cubic"], ["none", "cpu", "conc2"],
                        {"none": 2, "other": 1, "conc2": 1, "conc4": 1, "conc8": 1})
    # lab02 has one quiet repeat of two and its conc2 cell (two runs, one cell); cubic has nothing yet
    assert sorted(todo) == sorted([("lab02", "none"), ("cubic", "none"), ("cubic", "none"), ("lab02", "cpu"),
                                   ("cubic", "cpu"), ("cubic", "conc2")])
