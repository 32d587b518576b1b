"""Lab 04's fairness claim over loss draws: what the recorded draws measured, and what the loss-race model
(fastlab.theory.loss_race) says for other loss rates and run lengths (issue 49 item 5).

The SC2002 fairness runs put a seeded Bernoulli loss (1e-6) on DataTAG; which side takes more in one 120-s run is
the draw. This reads each fairness step's repetitions (lab 04's `recorded/draws/<step>/seed-<n>`, or `--runs
DIR` holding seed-<n> run folders of one step) and prints, side by side:

1. **measured**, per step: each flow's goodput from 10 s, per draw and its mean; the checkpoint's status per draw
   and the share of conclusive draws in which every FAST flow averaged more than every Linux flow, with Wilson's
   95 % interval (fastlab.labs.draws, the recorded checkpoint's judgement); and the same share with the run cut
   at 40, 60, 90 s (goodput over [10, T] of the same runs: how the share grows with the run's length);
2. **the model**, not fitted: the step's plan (RTTs, ports, buffers, loss rate, alpha) and one measured input,
   the delay FAST reads as queue that is not its own (the FAST flows' RTT median above propagation and
   serialization, from their summaries' delay accounting, median over the draws); its mean goodputs and share
   at the same run lengths beside the measured ones, then the share over run lengths of 120 s to 20 minutes and
   loss rates 1e-7 to 1e-5: what makes the paper's outcome typical.

Pure reading and computing (no run, no root): `.venv/bin/python bench/fairness.py [--draws N] [--runs DIR --step
ID]`. About 2 minutes with the default 2,000 model draws per cell.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fastlab.labs.draws import judge_draws  # noqa: E402
from fastlab.labs.kit import INCONCLUSIVE, PASS, StepRun, load_lab  # noqa: E402
from fastlab.measure.analysis import share_interval  # noqa: E402
from fastlab.plan.prepare import layout  # noqa: E402
from fastlab.theory.loss_race import RaceFlow, flows_of, measured_read_delay_s, race  # noqa: E402

STEPS = ("sc2002-fast-one", "sc2002-fast-pair")
T0_S = 10.0  # the checkpoint's measurement start
CUTS_S = (40.0, 60.0, 90.0, 120.0)
LENGTHS_S = (120.0, 300.0, 600.0, 1200.0)
LOSS_RATES = (1e-7, 3e-7, 1e-6, 3e-6, 1e-5)


def ahead(rates: dict[str, float], fast: list[str]) -> bool:
    return min(rates[f] for f in fast) > max(r for f, r in rates.items() if f not in fast)


def share_text(k: int, n: int) -> str:
    if not n:
        return "-"
    lo, hi = share_interval(k, n)
    return f"{k}/{n} = {k / n:.2f} ({lo:.2f}..{hi:.2f})"


def measured(step: str, folders: list[Path]) -> tuple[list[StepRun], list[str], str]:
    lab = load_lab(4)
    runs = [StepRun(d) for d in folders]
    ((verdict, draws),) = judge_draws(lab, step, [(d.name, d) for d in folders])
    flows = [f.id for f in runs[0].summary.flows]
    fast = runs[0].flow_ids("fast")
    conclusive = [r for r, d in zip(runs, draws, strict=True) if d.status != INCONCLUSIVE]
    print(f"\n== {step}: {len(runs)} draws, {len(conclusive)} conclusive (FAST: {', '.join(fast)})")
    print("  draw      status        " + "  ".join(f"{f:>7}" for f in flows) + "   (Mb/s from 10 s)")
    for run, d in zip(runs, draws, strict=True):
        rates = [run.goodput_mbps(f, T0_S, 1e9) for f in flows]
        print(f"  {d.label:<9} {d.status:<13} " + "  ".join(f"{r:7.0f}" for r in rates))
    means = {f: statistics.fmean(r.goodput_mbps(f, T0_S, 1e9) for r in conclusive) for f in flows} if conclusive else {}
    print("  mean      (conclusive)  " + "  ".join(f"{means.get(f, float('nan')):7.0f}" for f in flows))
    print(f"  the checkpoint over draws: {verdict.status.upper()} -- {verdict.note.split('; draws:')[0]}")
    for cut in CUTS_S:
        k = sum(ahead({f: r.goodput_mbps(f, T0_S, cut) for f in flows}, fast) for r in conclusive)
        print(f"  FAST's side ahead, goodput over [10, {cut:.0f}] s: {share_text(k, len(conclusive))}")
    return conclusive, fast, verdict.status


def model(step: str, flows: list[RaceFlow], draws: int, conclusive: list[StepRun], fast: list[str]) -> None:
    print(f"  model (read delay {flows[[f.cc for f in flows].index('fast')].read_delay_s * 1000:.2f} ms, "
          f"{draws} draws a cell, not fitted):")
    for cut in CUTS_S:
        r = race(flows, cut, T0_S, draws)
        means = r.mean_mbps()
        measured_means = ({f: statistics.fmean(x.goodput_mbps(f, T0_S, cut) for x in conclusive) for f in means}
                          if conclusive else {})
        side = "  ".join(f"{f} {means[f]:.0f} (measured {measured_means[f]:.0f})" if f in measured_means
                         else f"{f} {means[f]:.0f}" for f in means)
        print(f"    run to {cut:5.0f} s: FAST ahead {share_text(r.fast_ahead, r.draws)}; mean Mb/s {side}")


def outlook(step: str, flows: list[RaceFlow], draws: int) -> None:
    print(f"  the model's share of draws with FAST's side ahead, {step} "
          "(rows: loss rate on DataTAG; columns: run length)")
    print("    loss rate  " + "  ".join(f"{t / 60:>6.0f} min" if t >= 60 else f"{t:>7.0f} s" for t in LENGTHS_S))
    for p in LOSS_RATES:
        cells = []
        for length in LENGTHS_S:
            lossy = [RaceFlow(f.id, f.cc, f.rtt_s, f.port_pkts_s, f.buffer_pkts, p, f.alpha, f.gamma, f.read_delay_s)
                     for f in flows]
            cells.append(f"{race(lossy, length, T0_S, draws).share:10.3f}")
        print(f"    {p:9.0e}  " + "  ".join(cells))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2000, help="model draws per cell (default 2000)")
    parser.add_argument("--runs", type=Path,
                        help="a folder of seed-<n> run folders of one step (default: the recordings)")
    parser.add_argument("--step", choices=STEPS, help="with --runs: the step they ran")
    args = parser.parse_args()
    lab = load_lab(4)
    steps = [args.step] if args.runs else list(STEPS)
    if args.runs and not args.step:
        parser.error("--runs needs --step")
    for step in steps:
        folders = (sorted((p for p in args.runs.glob("seed-*") if p.is_dir()), key=lambda p: int(p.name[5:]))
                   if args.runs else lab.draw_recordings(step))
        if not folders:
            print(f"{step}: no draws recorded (fastlab lab record 4 --step {step} --draws)")
            continue
        conclusive, fast, _status = measured(step, folders)
        flows = flows_of(layout(lab.build_spec(step)),
                         measured_read_delay_s([r.summary for r in conclusive or [StepRun(folders[0])]], fast))
        model(step, flows, args.draws, conclusive, fast)
        outlook(step, flows, args.draws // 4)
    print(f"\n(PASS/FAIL per draw: the fast_outlasts_linux checkpoint on that run; {PASS}: FAST's side ahead)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
