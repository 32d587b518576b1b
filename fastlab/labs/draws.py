"""Checkpoints judged over draws: the share of a step's repetitions in which a claim holds, with its interval.

Some claims are about a distribution, not a run. Lab 04's fairness runs put a seeded background loss on the
shared path; which flow meets its losses early is the draw of the seed, and one 120-s run cannot say whether
FAST's side typically takes more (a Reno flow that met two losses out-earned FAST once; one that met six did
not). A checkpoint call with `draws: {runs: N, share: S, why: ...}` (fastlab.labs.kit.Draws) states that; this
module judges it on N repetitions of the step, repetition r run with the spec's seed + r:

- each repetition is evaluated by the lab's own evaluation (`kit.evaluate_run`, `as_draw`): a run the
  fidelity verdict calls unfaithful is inconclusive and counts neither way;
- of the k conclusive draws, the share s that pass, with Wilson's 95 % interval (measure.analysis);
- PASS when the interval lies wholly above S, FAIL when wholly below, INCONCLUSIVE while it straddles S (N
  is how many repetitions to run; the interval, not the count, decides).

`judge_draws` is pure on run folders (the unit tier judges the recorded draws, `recorded/draws/<step>/
seed-<n>`); `draw_seeds` is the one rule for which seed a repetition runs.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from fastlab.labs.kit import (
    INCONCLUSIVE,
    PASS,
    CheckpointCall,
    CheckResult,
    Lab,
    StepRun,
    evaluate_run,
)
from fastlab.measure.analysis import share_interval

DRAWS_LISTED = "; draws: "  # where a share verdict's note goes on to list each draw


def draw_seeds(seed: int, runs: int) -> list[int]:
    """The seeds of a step's `runs` repetitions: repetition r runs with seed + r (as a spec's `repeat: N`)."""
    return [seed + r for r in range(runs)]


def draws_asked(lab: Lab, step_id: str) -> int:
    """The repetitions the step's claims over draws ask for (the most any asks; 0: the step has none)."""
    return max((c.draws.runs for c in draw_calls(lab, step_id) if c.draws is not None), default=0)


@dataclass
class Draw:
    """One repetition's word on a checkpoint: its label (e.g. seed-3), status and figure."""

    label: str
    status: str
    figure: float | str


def draw_calls(lab: Lab, step_id: str, short: bool = False) -> list[CheckpointCall]:
    """The step's checkpoint calls judged over draws (in the short form, those it does not skip)."""
    return [c for c in lab.step(step_id).checkpoints if c.draws is not None and not (short and c.full_only)]


def judge_draws(lab: Lab, step_id: str, runs: list[tuple[str, Path]],
                short: bool = False) -> list[tuple[CheckResult, list[Draw]]]:
    """Each of the step's draw-judged checkpoints over the runs given (label, folder) of that form: the verdict
    on the share, and each run's own word."""
    calls = draw_calls(lab, step_id, short)
    evaluated = [(label, evaluate_run(lab, step_id, StepRun(directory), short, as_draw=True))
                 for label, directory in runs]
    # evaluate_run gives one result per call of the form, in the step's order
    labels = [c.label for c in lab.step(step_id).checkpoints if not (short and c.full_only)]
    out = []
    for call in calls:
        at = labels.index(call.label)
        draws = [Draw(label, results[at].status, results[at].measured) for label, results in evaluated]
        out.append((judge_share(call, draws), draws))
    return out


def share_words(result: CheckResult) -> str:
    """A share verdict's figures in one phrase ("9 of 10 conclusive draws, 95 % interval ..."), without the
    per-draw list its note ends with."""
    return result.note.split(DRAWS_LISTED)[0]


def judge_share(call: CheckpointCall, draws: list[Draw]) -> CheckResult:
    """The verdict of one draw-judged checkpoint on its draws (pure)."""
    assert call.draws is not None
    want, asked = call.draws.share, call.draws.runs
    conclusive = [d for d in draws if d.status != INCONCLUSIVE]
    passes = sum(d.status == PASS for d in conclusive)
    name = f"{call.label} over draws"
    expected = f"> {want:g} of {asked} draws (95 % interval above {want:g})"
    figures = [d.figure for d in conclusive if isinstance(d.figure, int | float)]
    spread = (f"; its figure median {statistics.median(figures):.4g} ({min(figures):.4g}..{max(figures):.4g})"
              if figures else "")
    each = ", ".join(f"{d.label} {d.status}" + (f" {d.figure:.3g}" if isinstance(d.figure, int | float) else "")
                     for d in draws)
    if not conclusive:
        return CheckResult(name, False, "n/a", expected, call.draws.why, note=f"{DRAWS_LISTED[2:]}{each or 'none'}",
                           quantity="share of draws in which it holds",
                           inconclusive=f"no conclusive draw of {len(draws)} (an unfaithful run counts neither way)")
    share = passes / len(conclusive)
    low, high = share_interval(passes, len(conclusive))
    note = (f"{passes} of {len(conclusive)} conclusive draws, 95 % interval {low:.2f}..{high:.2f}{spread}; "
            f"{len(draws) - len(conclusive)} inconclusive{DRAWS_LISTED}{each}")
    result = CheckResult(name, low > want, round(share, 4), expected, call.draws.why, note=note,
                         quantity="share of draws in which it holds")
    if low <= want <= high:  # the interval, not the count asked, decides: 9 of 9 conclusive draws can tell
        result.inconclusive = (f"the share's 95 % interval {low:.2f}..{high:.2f} holds {want:g}: "
                               f"{len(conclusive)} conclusive draws cannot tell on which side of {want:g} it lies"
                               + (f" ({asked} asked)" if len(draws) < asked else ""))
    return result
