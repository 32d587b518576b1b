"""Lab 03's many-flow rows (SC2002 Table 1 rows 7, 9, 10) at a chosen scale and emulator mode, judged
by the lab's own checkpoint, repeated.

Each run is lab 03's own spec (`labs/03-sc2002-table/specs/row-N.yaml`: written at scale 1, FAST alpha 200,
pacing 120 %, 40 s) through the real CLI, `fastlab run SPEC --set topology_args.scale=S --set emulator.mode=M`
(plus any --set given here), with the alpha the labs' delay-preserving rule gives at S (fastlab.labs.scaling:
50 at 0.25, 2.4 ms of queue at each port) for every flow whose alpha a --set does not state. Per run it
prints: the fidelity verdict (and its reasons), the row's utilization in SC2002's sense as lab 03's
`row_utilization` checkpoint measures it (mean over the row's flows of goodput over each flow's GbE port less
40 header bytes per packet, over the run's second half) and whether that checkpoint passes, the worst
departure lateness p99 over every emulated link direction, the machine's busy share, and the emulators' cores.
Then, per (row, scale), the medians, how many runs were faithful and how many had lateness p99 <= 0.2 ms
(issue 34).

Run as root: `.venv/bin/python bench/labrows.py [--rows 7,9,10] [--scales 0.25,0.1] [--repeat 3]
[--mode shared] [--set KEY=VALUE ...] [--out DIR]`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fastlab.define.schema import load_spec  # noqa: E402
from fastlab.labs.kit import StepRun, load_lab_folder  # noqa: E402
from fastlab.labs.scaling import scale_alphas  # noqa: E402

LAB = REPO / "labs" / "03-sc2002-table"
PUBLISHED = {7: 0.90, 9: 0.90, 10: 0.88}
LATE_P99_TARGET_US = 200.0


def lab_checkpoints() -> dict[str, Any]:
    """Lab 03's checkpoints, loaded as `fastlab lab` loads them."""
    return load_lab_folder(LAB).checks


def run_argv(row: int, scale: float, mode: str, sets: list[str], out: Path) -> list[str]:
    """The CLI command of one run (pure)."""
    argv = [str(REPO / ".venv" / "bin" / "python"), "-m", "fastlab", "run", str(LAB / "specs" / f"row-{row}.yaml"),
            "--set", f"topology_args.scale={scale:g}", "--set", f"emulator.mode={mode}", "--out", str(out)]
    for item in [*sets, *rule_sets(row, scale, sets)]:
        argv += ["--set", item]
    return argv


def rule_sets(row: int, scale: float, sets: list[str]) -> list[str]:
    """The --set overrides of the labs' delay-preserving rule for the row at `scale` (fastlab.labs.scaling), as
    lab 03 applies it: each flow's alpha scaled from the spec file's, but where `sets` state it."""
    path, given = str(LAB / "specs" / f"row-{row}.yaml"), [f"topology_args.scale={scale:g}", *sets]
    scaling = scale_alphas(load_spec(path), load_spec(path, given), given)
    return scaling.overrides() if scaling is not None else []


def judge(row: int, out: Path, checks: Any) -> dict[str, Any]:
    """One finished run: verdict, lab 03's row utilization, lateness p99 (worst direction), CPU."""
    run = StepRun(out)
    fid = run.summary.fidelity.dump() if run.summary.fidelity is not None else {}
    flows = run.flow_ids()
    result = checks["row_utilization"](run, flows=flows, published=PUBLISHED[row])
    lates = [d["late_p99_us"] or 0 for link in fid["links"].values() for d in link.values()]
    return {"faithful": fid["faithful"], "utilization": result.measured, "row_check": result.passed,
            "late_p99_us": max(lates) if lates else float("nan"), "machine_busy": fid["machine_busy"],
            "emulator_cores": sum(fid["emulator_cores"].values()),
            "reasons": "; ".join(fid["reasons"])[:200]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="7,9,10")
    ap.add_argument("--scales", default="0.25")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mode", default="shared", help="emulator.mode: per_link or shared")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--out", type=Path, help="where the runs are kept (default: a new temporary folder)")
    args = ap.parse_args()
    rows = [int(r) for r in args.rows.split(",")]
    scales = [float(s) for s in args.scales.split(",")]
    if not set(rows) <= set(PUBLISHED) or os.geteuid() != 0:
        ap.error(f"--rows: of {sorted(PUBLISHED)}; run as root")
    root = args.out or Path(tempfile.mkdtemp(prefix="fastlab-labrows-"))
    checks = lab_checkpoints()
    table: dict[tuple[int, float], list[dict[str, Any]]] = {}
    for rep in range(args.repeat):
        for scale in scales:
            for row in rows:
                out = root / f"r{rep}-row{row}-{scale:g}"
                done = subprocess.run(run_argv(row, scale, args.mode, args.sets, out), capture_output=True,
                                      text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
                if done.returncode != 0:
                    print(json.dumps({"row": row, "scale": scale, "error": done.stderr.strip()[-300:]}), flush=True)
                    continue
                m = {"row": row, "scale": scale, "mode": args.mode, **judge(row, out, checks), "run": str(out)}
                table.setdefault((row, scale), []).append(m)
                print(json.dumps(m), flush=True)
    print(f"\nmedians ({args.mode}; lab 03's specs; sets {args.sets}):")
    for (row, scale), ms in table.items():
        med = {k: statistics.median(float(m[k]) for m in ms) for k in ("utilization", "late_p99_us", "machine_busy")}
        late_ok = sum(float(m["late_p99_us"]) <= LATE_P99_TARGET_US for m in ms)
        print(f"row {row:>2} scale {scale:g}: utilization {med['utilization']:.3f} (published {PUBLISHED[row]}), "
              f"row check passed {sum(bool(m['row_check']) for m in ms)}/{len(ms)}, faithful "
              f"{sum(bool(m['faithful']) for m in ms)}/{len(ms)}, lateness p99 {med['late_p99_us']:.0f} us "
              f"(<= {LATE_P99_TARGET_US:.0f} in {late_ok}/{len(ms)}), machine busy {med['machine_busy']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
