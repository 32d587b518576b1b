"""`fastlab` command line: run, doctor, cleanup, topo, cc, lab, reproduce, sweep, cluster, bundle, plot, completion.

One module per command group (run.py, cc.py, lab.py, reproduce.py, sweep.py, bundle.py, plot.py, completion.py),
each with its handlers and the `register` that adds its subcommands to the parser; common.py holds what they
share, parsing.py the parser (an example under every command's help, usage errors in words). `fastlab` alone
prints the help. Bad input prints one line naming the problem and exits 2, before anything is created. """

from __future__ import annotations

import argparse
import sys

from fastlab.cli import bundle, cc, completion, lab, plot, reproduce, run, sweep
from fastlab.cli.common import EXIT_USAGE, CliError, show_progress
from fastlab.cli.parsing import Parser

__all__ = ["CliError", "build_parser", "main"]

DESCRIPTION = """TCP congestion-control emulation lab: real kernel TCP between network namespaces, links
shaped by tc or fastlab's link emulator, FAST TCP and HighSpeed TCP, guided labs, sweeps and bundles.
Commands that build namespaces or load BPF need root."""


def build_parser() -> argparse.ArgumentParser:
    import fastlab

    parser = Parser(prog="fastlab", description=DESCRIPTION, example="fastlab run examples/simple-cubic.yaml",
                    epilog="example: fastlab run examples/simple-cubic.yaml\n"
                           "each command's own help: fastlab COMMAND --help (e.g. fastlab lab run --help)")
    parser.add_argument("--version", action="version", version=f"fastlab {fastlab.__version__}")
    sub = parser.commands("command")
    for group in (run, cc, lab, reproduce, sweep, bundle, plot, completion):
        group.register(sub)
    parser.set_defaults(root_parser=parser)  # `fastlab completion` walks the whole command line
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    if not argv:  # `fastlab` alone: what it can do, not an error
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
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
