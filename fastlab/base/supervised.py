"""Supervised processes: the one way the engine starts, watches and stops the tools a run needs.

Every tool a run starts (linkemu per emulated link, a flowtool sender and receiver per flow, the
CC event streams, the OpenFlow controller app) is a `Supervised`: its PID goes into the run's
state (`RunState.add_pid`, with its start time, so `fastlab cleanup` can stop exactly it after a
crash and never a reused PID), one thread reads its stdout as JSON lines and hands each object to
the owner's callback, and stopping it is one sequence: ask (the tool's own stop command, or
SIGTERM), wait `grace_s`, then SIGKILL and reap. The owner keeps what each tool means (samples,
events, errors); this module keeps how a process lives and dies.

`stop_all` asks every process first and then waits for each, so N flows stop in one grace period,
not N.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import subprocess
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

log = logging.getLogger(__name__)

Message = dict[str, Any]
# A piped stderr is drained while the tool runs (a tool that fills the 64 KiB pipe would otherwise
# block on its next warning) and its last this-many characters are kept: enough for any tool's
# error lines, bounded for one that repeats a warning for hours.
STDERR_KEEP_CHARS = 64 * 1024
Popen = Callable[..., "subprocess.Popen[str]"]  # subprocess.Popen, or a Mininet node's popen


def json_objects(lines: Iterable[str]) -> Iterable[Message]:
    """The JSON objects among a tool's output lines (anything else, e.g. a partial line, skipped)."""
    for line in lines:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict):
            yield msg


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a live process, from /proc (fields 14 and 15)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Supervised:
    """One running tool: the process, what it is (for the run state and messages) and its reader."""

    what: str
    proc: subprocess.Popen[str]
    ask_stop: Callable[[], None] | None = None  # the tool's own stop command; default SIGTERM
    _reader: threading.Thread | None = field(default=None, repr=False)
    _stderr_reader: threading.Thread | None = field(default=None, repr=False)
    _stderr_tail: collections.deque[str] = field(default_factory=collections.deque, repr=False)

    @classmethod
    def start(cls, what: str, argv: list[str], *, state: Any, on_message: Callable[[Message], None] | None = None,
              on_exit: Callable[[Supervised], None] | None = None, popen: Popen = subprocess.Popen,
              stdin: bool = False, stderr: IO[str] | int = subprocess.PIPE, cwd: str | None = None,
              ask_stop: Callable[[Supervised], None] | None = None) -> Supervised:
        """Start `argv` (through `popen`: in a node's namespace, or here), record its PID in `state`
        (a RunState) and read its stdout: each JSON object to `on_message`; at its end `on_exit`."""
        proc = popen(argv, stdin=subprocess.PIPE if stdin else None, stdout=subprocess.PIPE, stderr=stderr,
                     text=True, bufsize=1, cwd=cwd)
        state.add_pid(proc.pid, what)
        self = cls(what, proc)
        if ask_stop is not None:
            self.ask_stop = lambda: ask_stop(self)

        def read() -> None:
            assert proc.stdout is not None  # stdout=PIPE
            for msg in json_objects(proc.stdout):
                if on_message is not None:
                    on_message(msg)
            if on_exit is not None:
                proc.wait()
                on_exit(self)

        self._reader = threading.Thread(target=read, name=what, daemon=True)
        self._reader.start()
        if proc.stderr is not None:
            self._stderr_reader = threading.Thread(target=self._drain_stderr, name=f"{what} stderr", daemon=True)
            self._stderr_reader.start()
        log.debug("started %s (pid %d): %s", what, proc.pid, argv[0])
        return self

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def running(self) -> bool:
        return self.proc.poll() is None

    def cpu_seconds(self) -> float | None:
        return process_cpu_seconds(self.proc.pid) if self.running() else None

    def _drain_stderr(self) -> None:
        """Read a piped stderr as it comes, keeping its last STDERR_KEEP_CHARS characters."""
        assert self.proc.stderr is not None
        kept = 0
        with contextlib.suppress(OSError, ValueError):
            for line in self.proc.stderr:
                self._stderr_tail.append(line)
                kept += len(line)
                while kept > STDERR_KEEP_CHARS and len(self._stderr_tail) > 1:
                    kept -= len(self._stderr_tail.popleft())

    def stderr_text(self) -> str:
        """What it wrote to a piped stderr (its last STDERR_KEEP_CHARS characters), stripped, once it
        has ended; "" if not piped."""
        if self._stderr_reader is None:
            return ""
        if self._stderr_reader is not threading.current_thread():
            self._stderr_reader.join(timeout=5)
        return "".join(self._stderr_tail).strip()

    def send(self, msg: Message) -> None:
        """One JSON line to its stdin (started with stdin=True)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def request_stop(self) -> None:
        """Ask it to stop (its stop command, else SIGTERM); returns at once."""
        if not self.running():
            return
        if self.ask_stop is not None:
            with contextlib.suppress(OSError, ValueError):  # a closed pipe: it is going anyway
                self.ask_stop()
                return
        with contextlib.suppress(ProcessLookupError):
            self.proc.terminate()

    def wait_stopped(self, grace_s: float) -> int:
        """Wait up to `grace_s` for it to end, then kill it; join its reader. Its exit code."""
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            log.warning("%s (pid %d) ignored the stop request for %.0f s: killed", self.what, self.proc.pid, grace_s)
            self.proc.kill()
            self.proc.wait()
        self.join_reader(grace_s)
        return self.proc.returncode

    def join_reader(self, timeout_s: float) -> None:
        """Wait until its output has been read to the end (every message handed over)."""
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout=timeout_s)

    def stop(self, grace_s: float) -> int:
        self.request_stop()
        return self.wait_stopped(grace_s)


def stop_all(procs: Iterable[Supervised], grace_s: float) -> None:
    """Ask every process to stop, then wait for each (kill after `grace_s`)."""
    procs = list(procs)
    for p in procs:
        p.request_stop()
    for p in procs:
        p.wait_stopped(grace_s)
