"""`fastlab` command line: run, doctor, cleanup, topo, cc, lab, sweep, cluster, bundle.

One module per command group (run.py, cc.py, lab.py, sweep.py, bundle.py), each with its handlers
and the `register` that adds its subcommands to the parser; common.py holds what they share.
Bad input prints one line naming the problem and exits 2, before anything is created.
"""

from __future__ import annotations

import argparse
import sys

from fastlab.cli import bundle, cc, lab, run, sweep
from fastlab.cli.common import EXIT_USAGE, CliError, show_progress

__all__ = ["CliError", "build_parser", "main"]


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line and exit 2 (subcommand parsers inherit this class)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"fastlab: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    import fastlab

    parser = OneLineParser(prog="fastlab", description="TCP congestion-control emulation lab")
    parser.add_argument("--version", action="version", version=f"fastlab {fastlab.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in (run, cc, lab, sweep, bundle):
        group.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    show_progress()
    try:
        return args.func(args)
    except CliError as exc:
        print(f"fastlab: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("fastlab: interrupted; what the run created has been removed", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
