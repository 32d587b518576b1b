"""The fit of lab 06's calibrated DOCSIS element and its predictions, run through bench/docsis.py
(`--fit-stage`, `--fit`, `--predict`) on bench/docsis_runs.py's runs and the study's figures
(bench/data/atov2005.yaml).

The element (fastlab.define.schema.PhantomDelay, linkemu/phantom.h): D = max_delay x min(1, u / knee) x
N^k, u the downstream's load over the last second, N the equally loaded flows it carries. Its candidate
forms (`CANDIDATES`) differ in the flow term: k = 0 is the load-only element of 2026-11-27; k = 1 gives
every flow the same misread in packets (a hold of a fixed number of each flow's own packets); larger k
grow the delay faster than the flows share it. The fit, by code, in stages that each fit the machine's
30-minute share (raw runs under bench/data/docsis-fit/):

- `--fit-stage windows`: one flow, the fixed windows of `fit.docsis_mean_rtt_ms`, for every (max_delay_ms,
  knee) of FIT_GRID (N = 1: every candidate is the same element there);
- `--fit-stage alpha1`: one flow, FAST, each alpha its own run, at the best (max_delay_ms, knee);
- `--fit-stage flows [--candidates NAME,...]`: two flows, FAST, each alpha its own run, every candidate,
  alphas around its own equilibrium estimate;
- `--fit`: reads the stages' runs (nothing run), prints every candidate's figures and residuals (in
  half-widths of the published band), keeps the smallest form whose every residual is inside its band
  and writes bench/data/docsis-phantom-fit.json -- the source of fastlab.define.schema.PHANTOM_FIT_*
  (a unit test holds them to it).

`--predict`: live runs of the fitted element where the study's figures are held back -- one flow at
0.5, 1, 2 and 3 Mb/s, and 3, 4 and 6 flows at 3 Mb/s: the alpha per flow that fills the downstream, the
target queue alpha x MTU / C, whether the 512 ms shaping buffer still lets the flows fill the link. Raw
runs and the printed table under bench/data/docsis-predictions/. Nothing is fitted to them.
`--predict --stored`: the table of the stored runs, nothing run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from bench.docsis_runs import (
    DATA,
    FULL,
    PKT_BYTES,
    REPO,
    AlphaNeeded,
    Task,
    alpha_grid,
    alpha_needed,
    effective_element,
    equilibrium_alpha,
    faithful,
    run_all,
    timed,
)
from fastlab.define.schema import PhantomDelay

FIT_FILE = REPO / "bench" / "data" / "docsis-phantom-fit.json"
FIT_RUNS = REPO / "bench" / "data" / "docsis-fit"  # the fit's raw runs, one file a stage
PREDICT_DIR = REPO / "bench" / "data" / "docsis-predictions"
FIT_GRID = {"max_delay_ms": [30.0, 35.0, 40.0, 45.0, 50.0], "knee": [0.3, 0.5, 0.7]}


@dataclass(frozen=True)
class Candidate:
    """One form of the calibrated element: its flow exponent k (D grows as N^k) and what it stands for."""

    name: str
    model: str
    flow_exponent: float
    free_parameters: int  # fitted numbers: max_delay_ms and knee, and k where the form has a flow term
    reading: str


CANDIDATES = [
    Candidate("load", "calibrated_load_delay", 0.0, 2,
              "the aggregate load alone (the element of 2026-11-27): any delay of the aggregate -- load, "
              "aggregate window, CMTS queue -- gives each of n flows 1/n of one flow's misread"),
    Candidate("flows^1", "calibrated_flow_delay", 1.0, 3,
              "every flow misreads the same number of its own packets (a hold of a fixed count of each "
              "flow's packets): the alpha per flow stays one flow's"),
    Candidate("flows^1.5", "calibrated_flow_delay", 1.5, 3, "the flow exponent fitted: between"),
    Candidate("flows^2", "calibrated_flow_delay", 2.0, 3, "the flow exponent fitted: each flow's misread "
              "grows with the number of flows"),
    Candidate("flows^2.25", "calibrated_flow_delay", 2.25, 3, "the flow exponent fitted: a quarter steeper"),
    Candidate("flows^2.5", "calibrated_flow_delay", 2.5, 3, "the flow exponent fitted: steeper"),
    Candidate("flows^2.75", "calibrated_flow_delay", 2.75, 3, "the flow exponent fitted: a quarter steeper still"),
    Candidate("flows^3", "calibrated_flow_delay", 3.0, 3, "the flow exponent fitted: steeper still"),
]
CANDIDATE = {c.name: c for c in CANDIDATES}


def element_of(candidate: Candidate, max_delay_ms: float, knee: float) -> dict[str, Any]:
    """The phantom parameters of a candidate form at one (max_delay_ms, knee)."""
    params: dict[str, Any] = {"model": candidate.model, "max_delay_ms": max_delay_ms, "knee": knee}
    if candidate.flow_exponent:
        params["flow_exponent"] = candidate.flow_exponent
    return params


# --- the fit (pure) -----------------------------------------------------------------------------------

def residuals(rows: pd.DataFrame, points: list[dict[str, float]]) -> pd.DataFrame:
    """Per published point: the emulated median mean RTT at that window and its residual in units of the
    band's half-width (|r| <= 1: inside the published band)."""
    out = []
    for point in points:
        got = rows[rows["value"] == point["window"]]["mean_rtt_ms"].median()
        half = (point["high"] - point["low"]) / 2
        out.append({"window": point["window"], "published": point["value"], "emulated": got,
                    "residual": (got - point["value"]) / half})
    return pd.DataFrame(out)


def best_fit(table: pd.DataFrame, points: list[dict[str, float]]) -> tuple[dict[str, float], pd.DataFrame]:
    """The grid point whose residuals have the least sum of squares; its parameters and the per-point
    summary of every grid point (sum of squares, worst residual)."""
    summary = []
    for (delay, knee), rows in table.groupby(["max_delay_ms", "knee"]):
        res = residuals(rows, points)
        summary.append({"max_delay_ms": delay, "knee": knee, "sum_sq": float((res["residual"] ** 2).sum()),
                        "worst": float(res["residual"].abs().max())})
    ranked = pd.DataFrame(summary).sort_values(["sum_sq", "max_delay_ms", "knee"]).reset_index(drop=True)
    best = {"max_delay_ms": float(ranked["max_delay_ms"].iloc[0]), "knee": float(ranked["knee"].iloc[0])}
    return best, ranked


def band_residual(value: float | None, band: dict[str, float]) -> float:
    """(value - published) in half-widths of the published band; inf when nothing was found."""
    if value is None:
        return math.inf
    return (value - band["value"]) / ((band["high"] - band["low"]) / 2)


def min_rtt_share(rows: pd.DataFrame, windows: list[int]) -> float:
    """The least, over `windows`, of the minimum RTT's rise above the idle RTT over the mean RTT's rise
    (medians by window): the study's minimum RTT rose with the window."""
    med = rows[rows["value"].isin(windows)].groupby("value")[["mean_rtt_ms", "min_rtt_ms", "idle_rtt_ms"]].median()
    return float(((med["min_rtt_ms"] - med["idle_rtt_ms"]) / (med["mean_rtt_ms"] - med["idle_rtt_ms"])).min())


def candidate_table(windows: pd.DataFrame, best: dict[str, float], alpha1: pd.DataFrame, flows: pd.DataFrame,
                    data: dict[str, Any]) -> pd.DataFrame:
    """Every candidate form at the fitted (max_delay_ms, knee): its figures and residuals against every
    published figure it must meet, and whether it meets them all. One flow is the same element for every
    candidate (N = 1), so the one-flow figures are shared; the two-flow ones are the candidate's own."""
    points = data["fit"]["docsis_mean_rtt_ms"]
    chosen = windows[(windows["max_delay_ms"] == best["max_delay_ms"]) & (windows["knee"] == best["knee"])]
    chosen = chosen[faithful(chosen)]
    rtt = residuals(chosen, points)
    share_ref = data["out_of_sample"]["docsis_min_rtt_share_of_mean_rise"]
    share = min_rtt_share(chosen, [p["window"] for p in points])
    one_band = data["out_of_sample"]["alpha_for_full"]["docsis"]
    two_band = data["fit"]["two_flow_alpha_per_flow"]
    times = data["fit"]["superlinear_total_queue"]["more_than_times_one_flow"]
    one = alpha_needed(alpha1)
    out = []
    for cand in CANDIDATES:
        rows = flows[flows["candidate"] == cand.name] if not flows.empty else flows
        two = alpha_needed(rows) if not rows.empty else AlphaNeeded(None)
        r1, r2 = band_residual(one.median, one_band), band_residual(two.median, two_band)
        ratio = (two_band["flows"] * two.median / one.median) if one.median and two.median else math.nan
        fits = (not rows.empty and float(rtt["residual"].abs().max()) <= 1 and share >= share_ref["at_least"]
                and abs(r1) <= 1 and abs(r2) <= 1 and ratio > times and two.bracketed)
        out.append({"candidate": cand.name, "k": cand.flow_exponent, "free": cand.free_parameters,
                    "rtt_worst": float(rtt["residual"].abs().max()), "min_share": share,
                    "alpha_1": one.median, "r_alpha_1": r1, "alpha_2": two.median, "r_alpha_2": r2,
                    "alpha_2_seeds": two.seeds_text() if not rows.empty else "not run",
                    "total_2_over_1": ratio, "bracketed": two.bracketed, "fits": fits,
                    "sum_sq": r1**2 + r2**2 + float((rtt["residual"] ** 2).sum())})
    return pd.DataFrame(out)


def keep(table: pd.DataFrame) -> str | None:
    """The smallest candidate form that fits: the fewest free parameters, then the least sum of squared
    residuals, then the smallest flow exponent. None when none fits."""
    fitting = table[table["fits"]].sort_values(["free", "sum_sq", "k"])
    return None if fitting.empty else str(fitting["candidate"].iloc[0])


# --- the fit's stages (live runs; raw figures kept) ------------------------------------------------------

def stage_file(stage: str) -> Path:
    return FIT_RUNS / f"{stage}.json"


def read_stage(stage: str) -> dict[str, Any]:
    """A stage's stored runs and settings; SystemExit naming the stage to run when it is missing."""
    path = stage_file(stage)
    if not path.is_file():
        raise SystemExit(f"{path.relative_to(REPO)}: missing: run `bench/docsis.py --fit-stage {stage}` first")
    return json.loads(path.read_text())


def write_stage(stage: str, settings: dict[str, Any], runs: list[dict[str, Any]]) -> None:
    FIT_RUNS.mkdir(parents=True, exist_ok=True)
    stage_file(stage).write_text(json.dumps({"stage": stage, **settings, "runs": runs}, indent=1,
                                            default=str) + "\n")
    print(f"written: {stage_file(stage).relative_to(REPO)} ({len(runs)} runs)")


def stage_windows(args: argparse.Namespace, root: Path, data: dict[str, Any]) -> None:
    """One flow, the published fixed windows, every (max_delay_ms, knee) of the grid (k = 0: N = 1)."""
    windows = [int(p["window"]) for p in data["fit"]["docsis_mean_rtt_ms"]]
    tasks = [Task("window", "docsis", w, args.first_seed + r,
                  element=element_of(CANDIDATE["load"], d, k), duration_s=args.duration, warmup_s=args.warmup)
             for d, k in itertools.product(FIT_GRID["max_delay_ms"], FIT_GRID["knee"])
             for r in range(args.repeat) for w in windows]
    write_stage("windows", {"grid": FIT_GRID, "repeat": args.repeat, "first_seed": args.first_seed},
                run_all(tasks, args.jobs, root))


def fitted_one_flow(data: dict[str, Any]) -> tuple[dict[str, float], pd.DataFrame, pd.DataFrame]:
    """The best (max_delay_ms, knee) of the windows stage, its ranked grid and the stage's runs."""
    table = pd.DataFrame(read_stage("windows")["runs"])
    best, ranked = best_fit(table[faithful(table)], data["fit"]["docsis_mean_rtt_ms"])
    return best, ranked, table


def stage_alpha1(args: argparse.Namespace, root: Path, data: dict[str, Any]) -> None:
    """One flow, FAST, each alpha its own run, at the fitted (max_delay_ms, knee) (k = 0: N = 1)."""
    best, _, _ = fitted_one_flow(data)
    element = element_of(CANDIDATE["load"], best["max_delay_ms"], best["knee"])
    alphas = alpha_grid(equilibrium_alpha(element, 1, 3.0))
    tasks = [timed(Task("alpha", "docsis", a, args.first_seed + r, element=element), args.duration, args.warmup)
             for r in range(args.repeat) for a in alphas]
    write_stage("alpha1", {"best": best, "alphas": alphas, "repeat": args.repeat, "first_seed": args.first_seed},
                run_all(tasks, args.jobs, root))


def stage_flows(args: argparse.Namespace, root: Path, data: dict[str, Any]) -> None:
    """Two flows, FAST, each alpha its own run, for each candidate asked (all by default), around its own
    equilibrium estimate; the runs of candidates not asked are kept from the stage's file."""
    best, _, _ = fitted_one_flow(data)
    flows = int(data["fit"]["two_flow_alpha_per_flow"]["flows"])
    names = args.candidates or [c.name for c in CANDIDATES]
    if unknown := [n for n in names if n not in CANDIDATE]:
        raise SystemExit(f"--candidates: unknown {unknown} (known: {', '.join(CANDIDATE)})")
    kept = [r for r in read_stage("flows")["runs"] if r["candidate"] not in names] if stage_file("flows").is_file() \
        else []
    tasks, names_of = [], []
    for name in names:
        element = element_of(CANDIDATE[name], best["max_delay_ms"], best["knee"])
        for r in range(args.repeat):
            for a in alpha_grid(equilibrium_alpha(element, flows, 3.0)):
                tasks.append(timed(Task("alpha", "docsis", a, args.first_seed + r, flows=flows, element=element),
                                   args.duration, args.warmup))
                names_of.append(name)
    runs = [row | {"candidate": name} for row, name in zip(run_all(tasks, args.jobs, root), names_of, strict=True)]
    write_stage("flows", {"best": best, "repeat": args.repeat, "first_seed": args.first_seed}, kept + runs)


def fit(data: dict[str, Any]) -> int:
    """The fit from the stages' stored runs (nothing run): every candidate's figures and residuals, the one
    kept, and the fit file."""
    points = data["fit"]["docsis_mean_rtt_ms"]
    best, ranked, windows = fitted_one_flow(data)
    alpha1 = pd.DataFrame(read_stage("alpha1")["runs"])
    flows = pd.DataFrame(read_stage("flows")["runs"])
    print(f"stage 1: one flow, fixed windows, DOCSIS: {len(points)} published mean RTTs; (max_delay_ms, knee) "
          f"grid, residuals in half-widths of the published band ({int((~faithful(windows)).sum())} of "
          f"{len(windows)} runs unfaithful, left out):")
    print(ranked.to_string(index=False, float_format="{:.3f}".format))
    chosen = windows[(windows["max_delay_ms"] == best["max_delay_ms"]) & (windows["knee"] == best["knee"])]
    res = residuals(chosen[faithful(chosen)], points)
    print(f"\nbest: max_delay_ms {best['max_delay_ms']:g}, knee {best['knee']:g}; its residuals:")
    print(res.to_string(index=False, float_format="{:.2f}".format))
    table = candidate_table(windows, best, alpha1, flows, data)
    print("\nstage 2: the candidate forms at that point (alpha: the smallest per flow with >= 95 % utilization, "
          "from the median by alpha; residuals in half-widths of the published bands: one flow 13 (10-16), two "
          "flows 22 (18-26) per flow; total_2_over_1: two flows' total alpha over one flow's, published > 2):")
    for cand in CANDIDATES:
        print(f"  {cand.name:10s} k = {cand.flow_exponent:g}: {cand.reading}")
    print(table.to_string(index=False, float_format="{:.2f}".format))
    kept_name = keep(table)
    if kept_name is None:
        print("\nno candidate fits every published figure: nothing written")
        return 1
    kept_cand = CANDIDATE[kept_name]
    print(f"\nkept: {kept_name} (the smallest form that fits: {kept_cand.free_parameters} free parameters)")
    FIT_FILE.write_text(json.dumps({
        "element": "links.cable.policy.phantom (fastlab.define.schema.PhantomDelay)",
        "form": "D = max_delay_ms x min(1, u / knee) x N^flow_exponent",
        "best": best | {"flow_exponent": kept_cand.flow_exponent, "model": kept_cand.model, "candidate": kept_name},
        "window_ms": 1000.0, "grid": FIT_GRID,
        "fitted_to": f"{DATA.name}: fit.docsis_mean_rtt_ms (max_delay_ms, knee); fit.two_flow_alpha_per_flow "
                     "and fit.superlinear_total_queue (the flow term)",
        "stages": {stage: {k: v for k, v in read_stage(stage).items() if k != "runs"} | {
            "runs": len(read_stage(stage)["runs"])} for stage in ("windows", "alpha1", "flows")},
        "residuals": res.round(3).to_dict("records"), "ranked": ranked.round(4).to_dict("records"),
        "candidates": json.loads(table.round(3).to_json(orient="records")),
        "unfaithful_runs": int((~faithful(windows)).sum() + (~faithful(alpha1)).sum() + (~faithful(flows)).sum()),
    }, indent=1) + "\n")
    print(f"written: {FIT_FILE.relative_to(REPO)}")
    return 0


# --- predictions where the published figures are held back ---------------------------------------------

def prediction_conditions(data: dict[str, Any]) -> list[tuple[float, int]]:
    """(downstream Mb/s, flows) of every prediction: one flow at each held-back rate and at 3 Mb/s, then the
    held-back flow counts at 3 Mb/s."""
    held = data["held_back"]
    rates = sorted({*map(float, held["one_flow_downstream_mbps"]), float(data["path"]["downstream_mbps"])})
    return [(r, 1) for r in rates] + [(float(data["path"]["downstream_mbps"]), int(n))
                                      for n in held["flows_at_3_mbps"]]


def condition_name(downstream: float, flows: int) -> str:
    return f"{downstream:g}x{flows}"


def queue_ms(packets: float, downstream_mbps: float) -> float:
    """Packets of MTU at the downstream rate, in ms: the target queueing delay alpha x MTU / C."""
    return packets * PKT_BYTES * 8 / (downstream_mbps * 1e3)


def prediction_table(runs: pd.DataFrame, buffer_ms: float) -> pd.DataFrame:
    """Per condition: the alpha per flow that fills the downstream (median by alpha; each seed's), its target
    queueing delay per flow and in all, the authors' reading (the total target queue against the buffer),
    and the element's answer: whether the flows held the link full (>= FULL at some alpha and every larger
    one run) with the shaper's max-delay at `buffer_ms`, the CMTS's real queue, drops and the RTT there, and
    the most drops any run of the condition met."""
    out = []
    for (down, flows), rows in runs.groupby(["downstream_mbps", "flows"], sort=True):
        need = alpha_needed(rows)
        kept = rows[faithful(rows)]
        at = kept[kept["value"] == need.median] if need.median is not None else kept.iloc[0:0]
        best_util = float(kept.groupby("value")["utilization"].median().max()) if not kept.empty else math.nan
        total = flows * need.median if need.median is not None else math.nan
        out.append({
            "downstream_mbps": down, "flows": flows,
            "alpha_per_flow": need.median if need.median is not None else "none",
            "seeds": need.seeds_text(), "alphas_run": f"{int(rows['value'].min())}-{int(rows['value'].max())}",
            "target_ms_per_flow": queue_ms(need.median, down) if need.median is not None else math.nan,
            "total_queue_pkts": total, "total_queue_ms": queue_ms(total, down),
            "total_within_buffer": bool(queue_ms(total, down) <= buffer_ms) if total == total else False,
            "full_rate": need.median is not None, "best_utilization": best_util,
            "most_drops": int(kept["cmts_drops"].max()) if not kept.empty else 0,
            "cmts_queue_pkts": float(at["cmts_queue_pkts"].median()) if not at.empty else math.nan,
            "cmts_drops": int(at["cmts_drops"].max()) if not at.empty else 0,
            "rtt_ms": float(at["mean_rtt_ms"].median()) if not at.empty else math.nan,
            "equilibrium_estimate": equilibrium_alpha(effective_element("docsis", None), flows, down),
            "bracketed": need.bracketed, "unfaithful": need.unfaithful})
    return pd.DataFrame(out)


def predict(args: argparse.Namespace, root: Path, data: dict[str, Any]) -> int:
    """Live runs of the fitted element (the topology's own) at every prediction condition asked (all by
    default); the runs of conditions not asked are kept from the stored file; the table of them all is
    printed and stored beside the runs."""
    conditions = prediction_conditions(data)
    names = args.conditions or [condition_name(*c) for c in conditions]
    known = {condition_name(*c): c for c in conditions}
    if unknown := [n for n in names if n not in known]:
        raise SystemExit(f"--conditions: unknown {unknown} (known: {', '.join(known)})")
    runs_file = PREDICT_DIR / "runs.json"
    stored = json.loads(runs_file.read_text())["runs"] if runs_file.is_file() else []
    if args.stored:
        if not stored:
            raise SystemExit(f"{runs_file.relative_to(REPO)}: no stored runs: run `bench/docsis.py --predict` first")
        write_predictions(pd.DataFrame(stored), data)
        return 0
    kept = [r for r in stored if condition_name(r["downstream_mbps"], r["flows"]) not in names]
    tasks = []
    for name in names:
        down, flows = known[name]
        centre = equilibrium_alpha(effective_element("docsis", None), flows, down)
        tasks += [timed(Task("alpha", "docsis", a, args.first_seed + r, downstream_mbps=down, flows=flows),
                        args.duration, args.warmup)
                  for r in range(args.repeat) for a in alpha_grid(centre)]
    runs = kept + run_all(tasks, args.jobs, root)
    PREDICT_DIR.mkdir(parents=True, exist_ok=True)
    element = PhantomDelay(model="calibrated_flow_delay").model_dump()
    runs_file.write_text(json.dumps({"element": element, "repeat": args.repeat, "runs": runs}, indent=1,
                                    default=str) + "\n")
    print(f"written: {runs_file.relative_to(REPO)}")
    write_predictions(pd.DataFrame(runs), data)
    return 0


def write_predictions(runs: pd.DataFrame, data: dict[str, Any]) -> None:
    """Print the predictions table of `runs` and store it beside them (predictions.txt)."""
    element = PhantomDelay(model="calibrated_flow_delay").model_dump()
    buffer_ms = float(data["out_of_sample"]["authors_flow_limit"]["buffer_ms"])
    text = prediction_text(runs, element, buffer_ms)
    (PREDICT_DIR / "predictions.txt").write_text(text + "\n")
    print(text)
    print(f"written: {(PREDICT_DIR / 'predictions.txt').relative_to(REPO)}")


def prediction_text(runs: pd.DataFrame, element: dict[str, Any], buffer_ms: float) -> str:
    """The printed predictions: the element, then one line per condition."""
    table = prediction_table(runs, buffer_ms)
    head = (f"Predictions of the calibrated element (D = {element['max_delay_ms']:g} ms x min(1, u / "
            f"{element['knee']:g}) x N^{element['flow_exponent']:g}), made without fitting to them: live runs, "
            f"each alpha its own run, {int(runs['seed'].nunique())} seed(s) a condition; alpha per flow = the "
            f"smallest with >= {FULL:.0%} utilization (median by alpha; each seed's own after it); target = "
            f"alpha x {PKT_BYTES} B / C; total = flows x that; 'within {buffer_ms:g}' is the authors' reading "
            f"(the total target queue must fit the CMTS's {buffer_ms:g} ms shaping buffer); 'full' is the "
            f"element's answer (the flows held the downstream full from some alpha on, the shaper's max-delay "
            f"at {buffer_ms:g} ms); CMTS queue, drops and RTT at the alpha needed; most_drops: the most any "
            "run of the condition met; estimate = FAST's equilibrium with the element's "
            "delay, for comparison (not a result).")
    return head + "\n" + table.to_string(index=False, float_format="{:.2f}".format)


STAGES = {"windows": stage_windows, "alpha1": stage_alpha1, "flows": stage_flows}
