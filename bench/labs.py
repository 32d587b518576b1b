"""Pass rates of the labs' checkpoints over repeated live runs, and the spread of what they measure.

A lab's physics is judged on recorded runs in the unit tier; this bench says how often a *live* run
on this machine agrees (docs/design.md §10). It runs each lab's short form (or named steps, or the full
form) N times through the real CLI (`fastlab lab run`) and prints, per checkpoint:

- `pass`: passes over the runs the fidelity verdict called faithful (an unfaithful run proves nothing
  either way: it is counted apart, as `faithful`), and the rate;
- the measured figure's median, standard deviation and range over the faithful runs, beside the
  band's median ends (most bands are computed from each run's own figures, so they move a little);
- for each live property of lab.yaml (what a CI run asserts): the band, and how many standard
  deviations of the measured spread lie between the median and its nearer edge (`margin`, which
  must be at least fastlab.labs.kit.LIVE_MARGIN_SIGMAS).

Every checkpoint a handout presents as the lab's result should pass in at least 95 % of faithful
runs on a quiet machine (`--repeat 10`): the table ends with the ones that do not. Runs are kept
under --out; a run whose lab.json is already there is read, not run again (a bench cut short goes
on where it stopped), and a run read back is judged again by today's checkpoints. `--json` writes every
figure for later reading.

Run as root: `sudo .venv/bin/python bench/labs.py [LAB ...] [--repeat N] [--step ID] [--full]
[--out DIR] [--json FILE]`. One lab's short form takes 1-2 minutes a run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fastlab.labs.kit import LIVE_MARGIN_SIGMAS, CheckResult, Lab, lab_folders, load_lab  # noqa: E402
from fastlab.labs.run import check_lab_run  # noqa: E402

PASS_RATE_MIN = 0.95  # a handout's claim must hold in this share of faithful runs
BAND_RE = re.compile(r"^(\S+)\.\.(\S+)")
RUN_TIMEOUT_S = 1800


@dataclass
class Figures:
    """One checkpoint (or live property) over the repeats."""

    step: str
    name: str
    statuses: list[str] = field(default_factory=list)  # per run: pass / fail / inconclusive
    measured: list[float] = field(default_factory=list)  # faithful runs only
    lows: list[float] = field(default_factory=list)
    highs: list[float] = field(default_factory=list)

    @property
    def faithful(self) -> int:
        return sum(s != "inconclusive" for s in self.statuses)

    @property
    def passes(self) -> int:
        return self.statuses.count("pass")

    @property
    def rate(self) -> float:
        return self.passes / self.faithful if self.faithful else math.nan


def band(expected: str) -> tuple[float, float] | None:
    """A checkpoint's "lo..hi unit" expectation as numbers (None: not a range)."""
    m = BAND_RE.match(expected or "")
    if m is None:
        return None
    try:
        return float(m.group(1)), float(m.group(2))
    except ValueError:
        return None


def spread(values: list[float]) -> tuple[float, float]:
    """Median and sample standard deviation of the finite values (nan with fewer than two)."""
    values = [v for v in values if math.isfinite(v)]
    if not values:
        return math.nan, math.nan
    return statistics.median(values), statistics.stdev(values) if len(values) > 1 else math.nan


def margin_sigmas(values: list[float], lo: float, hi: float) -> float:
    """Standard deviations between the median and the band's nearer edge (inf with no spread)."""
    median, sd = spread(values)
    if math.isnan(median):
        return math.nan
    room = min(median - lo, hi - median)
    if math.isnan(sd) or sd == 0:
        return math.inf if room > 0 else -math.inf
    return room / sd


def collect(records: list[dict[str, Any]], lab: Lab) -> tuple[dict[tuple[str, str], Figures],
                                                                dict[tuple[str, str], Figures]]:
    """Per (step, checkpoint) and per (step, live property): the figures of every run's lab.json."""
    checks: dict[tuple[str, str], Figures] = {}
    live: dict[tuple[str, str], Figures] = {}
    for record in records:
        for step in record["steps"]:
            # the run's own fidelity (a claim over draws run once is inconclusive without the run being unfaithful)
            inconclusive = (bool(step.get("inconclusive")) if "inconclusive" in step
                            else step.get("status") == "inconclusive")
            for check in step["checks"]:
                fig = checks.setdefault((step["id"], check["name"]), Figures(step["id"], check["name"]))
                fig.statuses.append(check.get("status") or ("pass" if check["passed"] else "fail"))
                ends = band(check["expected"])
                if not inconclusive and isinstance(check["measured"], int | float):
                    fig.measured.append(float(check["measured"]))
                    if ends:
                        fig.lows.append(ends[0])
                        fig.highs.append(ends[1])
            definition = lab.step(step["id"])
            results = [CheckResult(c["name"], c["passed"], c["measured"], c["expected"], "") for c in step["checks"]]
            for prop in definition.live:
                fig = live.setdefault((step["id"], prop.of), Figures(step["id"], prop.of))
                fig.lows, fig.highs = [prop.within[0]], [prop.within[1]]
                verdict = prop.judge(definition, results)
                fig.statuses.append("inconclusive" if inconclusive else verdict.status)
                if not inconclusive and verdict.evaluated:
                    fig.measured.append(float(verdict.measured))
    return checks, live


def fmt(value: float) -> str:
    if math.isnan(value):
        return "-"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.4g}"


def table(rows: list[list[str]], head: list[str]) -> str:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in [head, *rows])


def report(lab: Lab, records: list[dict[str, Any]], minutes: float) -> tuple[str, list[str]]:
    """The lab's table, and the checkpoints below the pass rate (or live properties below the margin)."""
    checks, live = collect(records, lab)
    faithful_steps = sum(s.get("status") != "inconclusive" for r in records for s in r["steps"])
    all_steps = sum(len(r["steps"]) for r in records)
    lines = [f"lab {lab.name}: {len(records)} runs, {minutes:.1f} min, steps faithful {faithful_steps}/{all_steps}"]
    rows, short = [], []
    for fig in checks.values():
        median, sd = spread(fig.measured)
        rows.append([fig.step, fig.name[:44], f"{fig.passes}/{fig.faithful}", fmt(100 * fig.rate), fmt(median), fmt(sd),
                     f"{fmt(min(fig.measured, default=math.nan))}..{fmt(max(fig.measured, default=math.nan))}",
                     f"{fmt(spread(fig.lows)[0])}..{fmt(spread(fig.highs)[0])}"])
        if fig.faithful and fig.rate < PASS_RATE_MIN:
            short.append(f"{lab.name} {fig.step} '{fig.name}': passes {fig.passes}/{fig.faithful}")
    lines.append(table(rows, ["step", "checkpoint", "pass", "%", "median", "sd", "range", "band (median ends)"]))
    if live:
        rows = []
        for fig in live.values():
            median, sd = spread(fig.measured)
            margin = margin_sigmas(fig.measured, fig.lows[0], fig.highs[0])
            rows.append([fig.step, fig.name[:44], f"{fig.passes}/{fig.faithful}", fmt(median), fmt(sd),
                         f"{fmt(fig.lows[0])}..{fmt(fig.highs[0])}", fmt(margin)])
            if fig.faithful and (fig.rate < 1 or not margin >= LIVE_MARGIN_SIGMAS):
                short.append(f"{lab.name} {fig.step} live '{fig.name}': passes {fig.passes}/{fig.faithful}, "
                             f"margin {fmt(margin)} sd (needs {LIVE_MARGIN_SIGMAS})")
        lines.append("live properties (CI):")
        lines.append(table(rows, ["step", "of", "pass", "median", "sd", "band", "margin (sd)"]))
    return "\n".join(lines), short


def run_once(lab: Lab, out: Path, full: bool, steps: list[str]) -> dict[str, Any]:
    """One lab run through the CLI (read back if its lab.json is already complete)."""
    record_path = out / "lab.json"
    if record_path.is_file():
        record = json.loads(record_path.read_text())
        if len(record["steps"]) == len(steps or lab.steps):
            return check_lab_run(out).as_dict()  # judged again by today's checkpoints
        raise SystemExit(f"{out}: an unfinished run is in the way: remove it")
    args = [sys.executable, "-m", "fastlab", "lab", "run", str(lab.number), "--out", str(out),
            *([] if full else ["--short"]), *(a for s in steps for a in ("--step", s))]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(args, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env, cwd=REPO, check=False)
    if not record_path.is_file():
        raise SystemExit(f"{' '.join(args)}: no lab.json (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(record_path.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labs", nargs="*", help="lab numbers or names (default: every lab)")
    parser.add_argument("--repeat", type=int, default=10, help="runs per lab (default 10)")
    parser.add_argument("--step", action="append", default=[], metavar="ID", help="only this step (repeatable)")
    parser.add_argument("--full", action="store_true", help="the full form instead of the short one")
    parser.add_argument("--out", default=str(REPO / "results" / "bench-labs"), help="where the runs are kept")
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat: at least 1")
    if os.geteuid() != 0:
        parser.error("runs labs: needs root")
    labs = [load_lab(ref) for ref in args.labs] if args.labs else [load_lab(f.name) for f in lab_folders()]
    form = "full" if args.full else "short"
    below: list[str] = []
    dump: dict[str, Any] = {}
    for lab in labs:
        t0 = time.monotonic()
        records = []
        for r in range(1, args.repeat + 1):
            out = Path(args.out) / form / lab.name / f"r{r:02d}"
            out.parent.mkdir(parents=True, exist_ok=True)
            records.append(run_once(lab, out, args.full, args.step))
            print(f"  {lab.name} run {r}/{args.repeat}: {records[-1].get('status')}", file=sys.stderr, flush=True)
        text, short = report(lab, records, (time.monotonic() - t0) / 60)
        print(text + "\n", flush=True)
        below += short
        dump[lab.name] = records
    print(f"pass rate < {PASS_RATE_MIN:.0%} of faithful runs, or a live margin < {LIVE_MARGIN_SIGMAS} sd:")
    print("\n".join(f"  {line}" for line in below) if below else "  none")
    if args.json:
        Path(args.json).write_text(json.dumps(dump, indent=1))
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
