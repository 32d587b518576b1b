"""`fastlab plot`: publication figures of a run, of several runs side by side, or of a sweep (issue 51 item 2),
drawn by fastlab.results.figures and written as PDF (the default), SVG or PNG files.

PDF is the default: vector (it scales without blur), what LaTeX's \\includegraphics takes directly, its text
TrueType (editable, accepted by IEEE's PDF checker). SVG for the web and for editing, PNG (300 dpi) for slides
and word processors.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
from pathlib import Path
from typing import Any

from fastlab.cli.common import CliError

log = logging.getLogger(__name__)


def _subject(paths: list[str], scratch: Path) -> Any:
    """What the paths are: one sweep folder (or bundle, unpacked under `scratch`), or run folders (or bundles);
    CliError otherwise."""
    from fastlab.base.record import RecordError
    from fastlab.results import api, figures

    loaded = []
    for i, path in enumerate(paths):
        try:
            loaded.append(api.load(path, scratch / str(i) if path.endswith(".zip") else None))
        except (api.ResultsError, RecordError) as exc:
            raise CliError(str(exc)) from None
    sweeps = [x for x in loaded if isinstance(x, api.Sweep)]
    if sweeps and len(loaded) > 1:
        raise CliError(f"{len(loaded)} paths with a sweep among them: plot a sweep on its own, or runs together")
    try:
        return figures.for_sweep(sweeps[0]) if sweeps else figures.for_runs(loaded)
    except figures.DRAW_ERRORS as exc:
        raise CliError(f"{paths[0]}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None


def cmd_plot(args: argparse.Namespace) -> int:
    """Write the chosen figures of the run(s) or sweep into --out, one file each; print each file's path."""
    with tempfile.TemporaryDirectory(prefix="fastlab-plot-") as scratch:  # bundles unpacked: gone when drawn
        return _plot(args, _subject(args.paths, Path(scratch)))


def _plot(args: argparse.Namespace, subject: Any) -> int:
    """The chosen figures of `subject` into --out, one file each."""
    from fastlab.base.names import is_name
    from fastlab.results import figures

    chosen = args.figure or subject.figures()
    unknown = [f for f in chosen if f not in subject.figures()]
    if unknown:
        raise CliError(f"--figure {unknown[0]}: a {subject.kind} has the figures {', '.join(subject.figures())}")
    for group in subject.groups:
        for run in group.runs:
            if run.faithful is False:
                print(f"warning: {run.name}: the emulation was NOT faithful (its verdict): its figures show the "
                      "machine, not the path")
    for point in subject.left_out:
        print(f"left out of the sweep's figures: {point}")
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"--out {out}: cannot create it ({exc.strerror or exc})") from None
    stem = subject.name if is_name(subject.name) else subject.kind  # a folder's name, as the files' (checked)
    for name in chosen:
        target = out / f"{stem}-{name}.{args.format}"
        try:
            target.write_bytes(figures.render(subject, name, args.format, wide=args.wide))
        except OSError as exc:
            raise CliError(f"{target}: cannot write it ({exc.strerror or exc})") from None
        print(target)
    return 0


def register(sub: Any) -> None:
    """The `plot` command on the top-level subparsers."""
    from fastlab.results.figures import FIGURES, FORMATS

    plot = sub.add_parser("plot", help="publication figures (PDF, SVG, PNG) of a run, runs side by side or a sweep",
                          description=__doc__, example="fastlab plot results/20261128-101500-simple-cubic-fl3a9c "
                                                       "--format svg")
    plot.positional("paths", metavar="PATH", nargs="+", words="the run folder(s), a sweep folder or a bundle",
                    help="a run folder, several (drawn side by side), a sweep folder, or a bundle (.zip) of either",
                    example="results/20261128-101500-simple-cubic-fl3a9c")
    plot.add_argument("--format", choices=FORMATS, default="pdf",
                      help="file format: pdf (default: vector, for LaTeX), svg (vector, editable) or png (300 dpi)")
    plot.add_argument("--out", metavar="DIRECTORY", default="figures",
                      help="where the files go (default: ./figures); a file of the same name is replaced")
    plot.add_argument("--figure", action="append", choices=list(FIGURES), metavar="NAME",
                      help="only this figure (repeatable): " + "; ".join(f"{k}: {v}" for k, v in FIGURES.items())
                           + " (default: all the subject has)")
    plot.add_argument("--wide", action="store_true",
                      help="a page wide (7.16 in, both columns of a two-column paper) instead of one column (3.5 in)")
    plot.set_defaults(func=cmd_plot)
