"""Repetitions of one spec (`repeat: N`, issue 53 item 4): N runs with their own seeds, each headline
figure as its median, spread and a 95 % interval over the faithful runs.

A spec with `repeat: N` runs as a sweep without parameters (`plan_repeats`): the same folder layout,
resuming, bundles, tables and page as any sweep (fastlab.sweep.points and .run); repetition r runs with
seed + r. Only runs the fidelity verdict calls faithful enter the figures: an unfaithful run measured the
machine, not the path (docs/design.md §10), so it is counted and named, never averaged in.
The spread and interval are fastlab.sweep.spread's.
"""

from __future__ import annotations

import pandas as pd

from fastlab.define.schema import ExperimentSpec, to_plain
from fastlab.sweep.points import SweepPlan, plan_sweep


def plan_repeats(spec: ExperimentSpec) -> SweepPlan:
    """A checked spec with `repeat: N` -> the sweep that runs it N times (no parameters; point r with
    seed + r, each point a single run). The spec as checked (its topology file and traces resolved where
    it was read) is the sweep's base, so its digest names the same folder every time: rerunning resumes."""
    return plan_sweep({**to_plain(spec), "sweep": {}})


def figure_lines(means: pd.DataFrame, reasons: dict[str, str]) -> list[str]:
    """What `fastlab run` prints after a spec's repetitions (pure): how many were faithful, each unfaithful
    one with its first reason, then each headline figure as its median, range and 95 % interval over the
    faithful runs. `means` is the sweep's per-combination table (one row: fastlab.sweep.report.aggregate),
    `reasons` the unfaithful points' first reasons."""
    if means.empty:
        return ["repetitions: none finished"]
    row = means.iloc[0]
    n, faithful = int(row["n"]), int(row.get("faithful_n", 0) or 0)
    unfaithful = str(row.get("unfaithful") or "").split()
    lines = [f"repetitions: {faithful} of {n} faithful" + (f", {len(unfaithful)} not" if unfaithful else "")]
    lines += [f"  {point}: NOT FAITHFUL — {reasons.get(point, 'no reason recorded')}" for point in unfaithful]
    if faithful == 0:
        return lines + ["no figures: no repetition was faithful (an unfaithful run measured the machine)"]
    metrics = [c.removesuffix("_median") for c in means.columns if c.endswith("_median")]
    for metric in metrics:
        median = row[f"{metric}_median"]
        if pd.isna(median):
            continue
        ci_low, ci_high = row[f"{metric}_ci95_low"], row[f"{metric}_ci95_high"]
        interval = f", 95 % interval {ci_low:.4g} to {ci_high:.4g}" if pd.notna(ci_low) else ""
        lines.append(f"{metric}: median {median:.4g}{interval}")
    return lines
