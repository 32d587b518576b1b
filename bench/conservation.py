"""The fidelity verdict's conservation check (fastlab.measure.fidelity.conservation) on finished runs: how many
more bytes reached each emulated link direction than the links feeding it could deliver, against the
budget that makes a run unfaithful -- per step run, and how many runs it would judge unfaithful.

It re-reads run folders' full traces (links.csv with tx_bytes and backlog_bytes, as the engine writes
them; recorded lab folders are trimmed and lack them), e.g. the ×10 benches of `bench/labs.py`:

    .venv/bin/python bench/conservation.py 'results/bench-labs/short/*/r*/*/'

Run as root (the plan's capability probe, as `fastlab run`). Made to validate the check against runs it was
not written from: the figures are printed, the verdict's thresholds are fastlab.measure.fidelity's.

`--rejudge` also writes the check into each judged run's summary.json as the engine now would (its
`conservation` figures, its reasons, `faithful` false when it gives one), noting `rejudged` -- for runs
made before the check existed that are kept as lab cases (`fastlab lab keep`).
"""

from __future__ import annotations

import argparse
import glob
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fastlab.base.rundir import LINKS, SPEC, RunFolder  # noqa: E402
from fastlab.define.schema import SpecError, load_spec  # noqa: E402
from fastlab.measure import fidelity  # noqa: E402
from fastlab.measure.verdict import fidelity_counters, fidelity_paths, fidelity_routes  # noqa: E402
from fastlab.plan.capabilities import probe  # noqa: E402
from fastlab.plan.prepare import prepare  # noqa: E402


def judge(folder: Path, caps: object) -> tuple[dict[fidelity.Crossing, dict], list[str]] | None:
    """(conservation figures, reasons) of one run folder, or None when it cannot be judged."""
    try:
        prep = prepare(load_spec(str(RunFolder(folder).path(SPEC))), caps=caps)  # type: ignore[arg-type]
    except SpecError:
        return None
    links = RunFolder(folder).links()
    if not {"tx_bytes", "backlog_bytes"} <= set(links.columns):
        return None
    verdict = RunFolder(folder).summary().fidelity
    late = verdict.links if verdict is not None else {}
    counters = fidelity_counters(prep, links, {(link, d): float(fig.late_p99_us or 0)
                                               for link, sides in late.items() for d, fig in sides.items()})
    bursts = fidelity.conservation(fidelity_routes(prep), counters, prep.spec.mtu)
    return bursts, fidelity.burst_reasons(bursts, fidelity_paths(prep), prep.spec.mtu)


def rejudge(folder: Path, bursts: dict[fidelity.Crossing, dict], reasons: list[str]) -> None:
    """The run's verdict as the engine would give it today: the conservation figures and reasons added."""
    run = RunFolder(folder)
    summary = run.summary()
    verdict = summary.fidelity
    if verdict is None:
        return  # a run made before verdicts: nothing to judge again
    verdict.conservation = {f"{link} ({direction})": fig for (link, direction), fig in bursts.items()}
    verdict.reasons = [r for r in verdict.reasons if "held and released together" not in r] + reasons
    verdict.faithful = not verdict.reasons
    verdict.advice = None if verdict.faithful else fidelity.ADVICE
    verdict.rejudged = "bench/conservation.py --rejudge (the conservation check, added after the run)"
    run.replace_summary(summary)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", help="a glob of run folders (quoted)")
    parser.add_argument("--rejudge", action="store_true", help="write the check into each run's summary.json")
    args = parser.parse_args()
    caps = probe()
    judged = unfaithful = 0
    print(f"{'run':64} {'worst link direction':28} {'excess':>9} {'ms':>7} {'budget':>7}")
    for name in sorted(glob.glob(args.folders)):
        folder = Path(name)
        if not RunFolder(folder).is_run() or not RunFolder(folder).has(LINKS):
            continue
        result = judge(folder, caps)
        if result is None:
            continue
        bursts, reasons = result
        judged += 1
        if args.rejudge:
            rejudge(folder, bursts, reasons)
        unfaithful += bool(reasons)
        if bursts:
            (link, direction), fig = max(bursts.items(), key=lambda kv: kv[1]["excess_ms"])
            print(f"{str(folder)[-64:]:64} {f'{link} ({direction})':28} {fig['excess_bytes']:8d}B "
                  f"{fig['excess_ms']:7.2f} {fig['budget_ms']:7.2f}{'  UNFAITHFUL' if reasons else ''}")
    print(f"{judged} runs judged, {unfaithful} unfaithful by conservation "
          f"(noise floor {fidelity.BURST_NOISE_MTUS} MTUs, windows up to {fidelity.BURST_WINDOW_S:g} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
