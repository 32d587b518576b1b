"""The benches' parsers, pure, on captured tool output."""

from __future__ import annotations

import importlib.util
import json
import math
import statistics
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

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

    docsis = bench_module("docsis_fit")
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

    runs, docsis = bench_module("docsis_runs"), bench_module("docsis")
    assert runs.smallest_full_alpha(pd.Series({1: 0.5, 2: 0.96, 3: 0.9, 4: 0.97, 6: 0.99})) == 4
    assert runs.smallest_full_alpha(pd.Series({1: 0.5, 2: 0.6})) is None
    data = runs.published()
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
    (issues 31 and 49): the spec's constants must equal the fit file's best point, which must be the least
    sum of squares of its own ranked grid (fitted to the `fit` figures only), and its flow exponent the
    kept candidate's -- the smallest form that fits, by the bench's own rule, among every candidate tried,
    which the stored stage runs give again when the fit is recomputed from them."""
    import pandas as pd

    from fastlab.define.schema import (
        PHANTOM_FIT_FLOW_EXPONENT,
        PHANTOM_FIT_KNEE,
        PHANTOM_FIT_MAX_DELAY_MS,
        PHANTOM_WINDOW_MS,
        PhantomDelay,
    )

    docsis = bench_module("docsis_fit")
    fit = json.loads(docsis.FIT_FILE.read_text())
    best = fit["best"]
    assert (best["max_delay_ms"], best["knee"], best["flow_exponent"]) == (
        PHANTOM_FIT_MAX_DELAY_MS, PHANTOM_FIT_KNEE, PHANTOM_FIT_FLOW_EXPONENT)
    assert fit["window_ms"] == PHANTOM_WINDOW_MS and "fit.docsis_mean_rtt_ms" in fit["fitted_to"]
    assert "fit.two_flow_alpha_per_flow" in fit["fitted_to"]
    top = min(fit["ranked"], key=lambda row: row["sum_sq"])
    assert (top["max_delay_ms"], top["knee"]) == (best["max_delay_ms"], best["knee"])
    table = pd.DataFrame(fit["candidates"])
    assert list(table["candidate"]) == [c.name for c in docsis.CANDIDATES]
    assert docsis.keep(table) == best["candidate"] and not table.set_index("candidate").loc["load", "fits"]
    assert docsis.CANDIDATE[best["candidate"]].flow_exponent == best["flow_exponent"]
    data = bench_module("docsis_runs").published()
    again = docsis.fitted_one_flow(data)[0]
    assert again == {"max_delay_ms": best["max_delay_ms"], "knee": best["knee"]}
    recomputed = docsis.candidate_table(*_stage_tables(docsis, again), data)
    assert docsis.keep(recomputed) == best["candidate"]
    assert list(recomputed["alpha_2"].fillna(-1)) == list(table["alpha_2"].fillna(-1))
    element = PhantomDelay(model="calibrated_flow_delay")
    assert (element.max_delay_ms, element.knee, element.flow_exponent) == (
        PHANTOM_FIT_MAX_DELAY_MS, PHANTOM_FIT_KNEE, PHANTOM_FIT_FLOW_EXPONENT)


def _stage_tables(docsis: ModuleType, best: dict[str, float]) -> tuple[Any, ...]:
    """The fit's stored stage runs as candidate_table takes them."""
    import pandas as pd

    windows = pd.DataFrame(docsis.read_stage("windows")["runs"])
    return (windows, best, pd.DataFrame(docsis.read_stage("alpha1")["runs"]),
            pd.DataFrame(docsis.read_stage("flows")["runs"]))


def test_docsis_candidates_fit_only_inside_every_band() -> None:
    """bench/docsis.py --fit's rule on made-up runs: a candidate fits when the mean RTTs, the minimum RTT's
    share, the one-flow and two-flow alphas (each seed's runs over the alphas) are all inside the published
    bands, its alphas run reach from below 95 % to above it, and two flows' total alpha exceeds twice one
    flow's; the smallest form that fits is kept (fewest free parameters, then the least sum of squares)."""
    import pandas as pd

    docsis = bench_module("docsis_fit")
    data = bench_module("docsis_runs").published()
    best = {"max_delay_ms": 35.0, "knee": 0.5}
    windows = pd.DataFrame([{**best, "value": p["window"], "mean_rtt_ms": 146.0, "min_rtt_ms": 144.0,
                             "idle_rtt_ms": 105.0, "faithful": True} for p in data["fit"]["docsis_mean_rtt_ms"]])

    def sweep(threshold: int, alphas: list[int], candidate: str = "") -> list[dict[str, Any]]:
        return [{"value": a, "seed": s, "utilization": 1.0 if a >= threshold else 0.8, "faithful": True,
                 "candidate": candidate} for s in (1, 2) for a in alphas]

    alpha1 = pd.DataFrame(sweep(12, list(range(8, 16))))
    flows = pd.DataFrame(sweep(6, list(range(3, 11)), "load") + sweep(12, list(range(8, 16)), "flows^1")
                         + sweep(22, list(range(12, 28, 2)), "flows^2") + sweep(24, list(range(20, 36, 2)), "flows^2.5")
                         + sweep(12, [12, 14], "flows^3"))  # not bracketed: never below 95 %
    table = docsis.candidate_table(windows, best, alpha1, flows, data).set_index("candidate")
    assert table.loc["load", "alpha_2"] == 6 and not table.loc["load", "fits"]  # halves: below 18
    assert table.loc["flows^1", "alpha_2"] == 12 and not table.loc["flows^1", "fits"]
    assert table.loc["flows^2", "fits"] and table.loc["flows^2.5", "fits"] and not table.loc["flows^3", "fits"]
    assert table.loc["flows^1.5", "alpha_2_seeds"] == "not run" and not table.loc["flows^1.5", "fits"]
    assert abs(table.loc["flows^2", "r_alpha_2"]) < 1e-9 and table.loc["flows^2.5", "r_alpha_2"] == 0.5
    assert docsis.keep(table.reset_index()) == "flows^2"
    assert docsis.keep(table.reset_index().assign(fits=False)) is None
    # an unfaithful run proves nothing: a seed of nothing but unfaithful runs is not counted
    unfaithful_seed = pd.DataFrame(sweep(22, [20, 22, 24])).assign(faithful=lambda t: t["seed"] == 1)
    need = bench_module("docsis_runs").alpha_needed(unfaithful_seed)
    assert need.median == 22 and need.per_seed == [22] and need.unfaithful == 3


def test_docsis_cli_names_every_stage_of_the_fit() -> None:
    """bench/docsis.py's --fit-stage choices are bench/docsis_fit.py's stages, in their order (the script
    lists them without importing the fit module, which imports the runs it drives)."""
    stages = bench_module("docsis").FIT_STAGES
    assert stages == list(bench_module("docsis_fit").STAGES)


def test_docsis_grids_centre_on_fast_equilibrium_and_runs_last_enough_round_trips() -> None:
    """The alphas run for a condition surround FAST's equilibrium with the element (floor band + MAC + the
    element's delay at full load times each flow's packet rate): a grid, not a result; a run lasts at least
    RUN_RTTS round trips of the element's full-load RTT."""
    docsis = bench_module("docsis_runs")
    element = {"model": "calibrated_flow_delay", "max_delay_ms": 40.0, "knee": 0.3, "flow_exponent": 2.0}
    assert docsis.equilibrium_alpha(element, 1, 3.0) == 3.0 + 0.040 * 250  # 13
    assert docsis.equilibrium_alpha(element, 2, 3.0) == 3.0 + 0.160 * 125  # 23
    assert docsis.equilibrium_alpha(None, 2, 3.0) == 3.0
    assert docsis.alpha_grid(13.0) == [9, 10, 11, 12, 13, 14, 15, 16]
    assert docsis.alpha_grid(63.0) == [43, 48, 53, 58, 63, 68, 73, 78] and docsis.alpha_grid(2.0)[0] == 1
    task = docsis.Task("alpha", "docsis", 60, 1, flows=6, element=element)
    long = docsis.timed(task, 20.0, 6.0)
    assert long.duration_s == 78 and long.warmup_s == 31  # RTT 0.105 + 1.44 s: 50 and 20 round trips
    assert docsis.timed(docsis.Task("alpha", "simple", 4, 1), 20.0, 6.0).duration_s == 20.0


def test_docsis_prediction_table_says_the_authors_reading_and_the_elements() -> None:
    """bench/docsis.py --predict's table from made-up runs: alpha per flow (median by alpha), target queue
    alpha x 1500 B / C per flow and in all, the authors' reading (the total against 512 ms) beside the
    element's answer (did the flows fill the link), the CMTS queue at the alpha needed."""
    import pandas as pd

    docsis = bench_module("docsis_fit")
    rows = [{"downstream_mbps": 3.0, "flows": 4, "value": a, "seed": s, "utilization": 0.99 if a >= 44 else 0.7,
             "faithful": True, "cmts_queue_pkts": 9.0, "cmts_drops": 0, "mean_rtt_ms": 760.0}
            for s in (1, 2, 3) for a in (36, 40, 44, 48)]
    rows += [{"downstream_mbps": 1.0, "flows": 1, "value": a, "seed": 1, "utilization": 0.99 if a >= 6 else 0.6,
              "faithful": True, "cmts_queue_pkts": 1.0, "cmts_drops": 0, "mean_rtt_ms": 160.0} for a in (4, 6, 8)]
    table = docsis.prediction_table(pd.DataFrame(rows), 512.0).set_index("flows")
    four = table.loc[4]
    assert four["alpha_per_flow"] == 44 and four["total_queue_pkts"] == 176
    assert abs(four["total_queue_ms"] - 704.0) < 1e-9 and not four["total_within_buffer"] and four["full_rate"]
    one = table.loc[1]
    assert one["alpha_per_flow"] == 6 and abs(one["target_ms_per_flow"] - 72.0) < 1e-9 and one["total_within_buffer"]
    # six flows that never hold the link full (a lucky 0.96 between two below): no alpha, not full, drops said
    rows += [{"downstream_mbps": 3.0, "flows": 6, "value": a, "seed": 1, "utilization": u, "faithful": True,
              "cmts_queue_pkts": 60.0, "cmts_drops": d, "mean_rtt_ms": 1300.0}
             for a, u, d in ((88, 0.78, 3000), (154, 0.96, 8700), (165, 0.94, 9600))]
    six = docsis.prediction_table(pd.DataFrame(rows), 512.0).set_index("flows").loc[6]
    assert six["alpha_per_flow"] == "none" and not six["full_rate"] and six["most_drops"] == 9600
    assert abs(six["best_utilization"] - 0.96) < 1e-9 and not six["bracketed"]
    text = docsis.prediction_text(pd.DataFrame(rows), {"max_delay_ms": 40.0, "knee": 0.3, "flow_exponent": 2.0}, 512)
    assert "N^2" in text and "without fitting" in text


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
