"""`fastlab reproduce`: the reproduction scorecard -- every published claim the labs reproduce, published
against measured, with the lab's own verdict (fastlab.labs.scorecard), and its figure as SVG and PNG."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fastlab.cli.common import CliError, cancel_on_signals, need_root, table

COLUMNS = ["claim", "source", "published", "measured", "scale", "lab/step", "verdict"]
FILES = ("scorecard.txt", "scorecard.json", "scorecard.svg", "scorecard.png")


def _out(args: argparse.Namespace) -> Path:
    from fastlab.base import paths

    out = Path(args.out) if args.out else paths.results_root() / "reproduce"
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {out}: not a directory")
    return out


def cmd_reproduce(args: argparse.Namespace) -> int:
    from fastlab.labs import scorecard
    from fastlab.labs.kit import LabError
    from fastlab.labs.scorecard_figure import WIDTH, height, svg
    from fastlab.results.raster import RasterError, svg_to_png

    try:
        claims = scorecard.load_claims(Path(args.claims) if args.claims else None)
        known = {c.id for c in claims.claims}
        for claim_id in args.claim:
            if claim_id not in known:
                shown = claim_id if len(claim_id) <= 48 else claim_id[:48] + "..."
                raise scorecard.ClaimsError(f"--claim {shown!r}: no such claim (see fastlab reproduce)")
        only = args.claim or None
        out = _out(args)
        if args.run:
            if not 1 <= args.repeat <= scorecard.MAX_REPEAT:
                raise scorecard.ClaimsError(f"--repeat {args.repeat}: between 1 and {scorecard.MAX_REPEAT}")
            need_root("fastlab reproduce --run")
            cancel = cancel_on_signals()
            rows = scorecard.rerun(claims, out / "runs", args.repeat, args.short, only, cancel=cancel, on_run=print)
            if cancel.is_set():
                raise KeyboardInterrupt
        else:
            if args.short or args.repeat != 1:
                raise scorecard.ClaimsError("--short and --repeat go with --run (the recordings are the full form)")
            rows = scorecard.score(claims, only=only)
    except (scorecard.ClaimsError, LabError) as exc:
        raise CliError(str(exc)) from None
    text = table(scorecard.table_rows(rows), COLUMNS)
    print(text)
    counts = {v: sum(r.verdict == v for r in rows) for v in scorecard.VERDICTS}
    print(", ".join(f"{n} {v}" for v, n in counts.items() if n) + f" of {len(rows)} claims"
          + ("" if args.run else " (judged on the recorded runs)"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "scorecard.txt").write_text(text + "\n")
    data: dict[str, Any] = {"source": "re-runs" if args.run else "recordings", "rows": [r.as_dict() for r in rows]}
    (out / "scorecard.json").write_text(json.dumps(data, indent=1) + "\n")
    figure = svg(rows)
    (out / "scorecard.svg").write_text(figure)
    written = [out / "scorecard.svg"]
    if not args.no_png:
        try:
            written.append(svg_to_png(figure, out / "scorecard.png", WIDTH, height(rows)))
        except RasterError as exc:
            print(f"fastlab: {exc}; the SVG is written")
    print("figure: " + ", ".join(str(p) for p in written))
    return 1 if counts[scorecard.FAIL] or counts[scorecard.MIXED] else 0


def register(sub: Any) -> None:
    """The `reproduce` command on the top-level subparsers."""
    rep = sub.add_parser(
        "reproduce", help="the reproduction scorecard: each published claim the labs reproduce, published "
                          "against measured, with the lab's own verdict",
        example="fastlab reproduce --claim sc2002-row-1",
        description="One row per published claim of the seed papers (labs/claims.yaml): the published figure "
                    "and its source, the figure the lab's checkpoint measures (median, least..greatest over the "
                    "runs), the scale, and the verdict of the lab's own checkpoint (an unfaithful run is "
                    "inconclusive). By default judged on the labs' recorded runs (no root, deterministic); with "
                    "--run each claim's step is re-run on this machine (root; minutes per step). Writes "
                    "scorecard.txt, .json, .svg and .png to --out. Exit 1 when a claim fails or its runs disagree.")
    rep.add_argument("--claims", metavar="FILE", help="the claims file (default: labs/claims.yaml)")
    rep.add_argument("--claim", action="append", default=[], metavar="ID", help="only this claim (repeatable)")
    rep.add_argument("--out", metavar="DIRECTORY", help="where the files go (default: results/reproduce)")
    rep.add_argument("--run", action="store_true", help="re-measure: run each claim's step on this machine (root)")
    rep.add_argument("--repeat", type=int, default=1, metavar="N", help="with --run: runs of each step (default 1)")
    rep.add_argument("--short", action="store_true", help="with --run: the steps' short forms (other scales: said)")
    rep.add_argument("--no-png", action="store_true", help="the SVG only (the PNG needs Playwright and Chromium)")
    rep.set_defaults(func=cmd_reproduce)
