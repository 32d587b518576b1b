"""What every `fastlab` command shares: the one-line error, tables, root, signals, progress lines."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from typing import Any

EXIT_USAGE = 2


class CliError(Exception):
    """One-line message, exit status 2."""


def table(rows: list[dict[str, Any]], keys: list[str]) -> str:
    widths = {k: max(len(k), *(len(str(r.get(k, ""))) for r in rows)) for k in keys}
    lines = ["  ".join(k.ljust(widths[k]) for k in keys)]
    lines += ["  ".join(str(r.get(k, "")).ljust(widths[k]) for k in keys) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def need_root(what: str) -> None:
    if os.geteuid() != 0:
        raise CliError(f"{what} needs root (network namespaces, tc): run it with sudo")


def raise_on_sigterm() -> None:
    """For commands that run no experiment here: SIGTERM stops them like Ctrl-C."""
    def on_term(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)


def cancel_on_signals() -> threading.Event:
    """For commands that run experiments: SIGTERM and Ctrl-C ask the engine to stop, which it does
    after a full cleanup; an exception raised at an arbitrary point could cut a step in half (an
    algorithm registered but not yet recorded as the run's, so never unregistered)."""
    cancel = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        if not cancel.is_set():
            print(f"fastlab: signal {signum}: stopping after cleanup", file=sys.stderr, flush=True)
        cancel.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return cancel


def run_failed(what: str, exc: Exception, cancel: threading.Event) -> int:
    """A run that raised: stopped by Ctrl-C or SIGTERM is an interruption (exit 130 in main), anything
    else one line and exit status 1."""
    if cancel.is_set():
        raise KeyboardInterrupt from None
    print(f"{what} failed: {exc}", file=sys.stderr)
    return 1


class ProgressLines(logging.Handler):
    """Each record as one line on the stderr of the moment (`sys.stderr` when it is emitted, so a
    caller that swaps it, like a test capturing output, gets the lines)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - logging's contract: report, never raise
            self.handleError(record)


def show_progress() -> None:
    """fastlab's progress lines (INFO) and warnings on stderr, one message a line, as they come: the
    engine, labs, sweeps and replays report through `logging` (loggers under "fastlab")."""
    logger = logging.getLogger("fastlab")
    if not any(isinstance(h, ProgressLines) for h in logger.handlers):
        handler = ProgressLines()
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # a root handler set by an embedding program would print it twice
