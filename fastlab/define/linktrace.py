"""mahimahi packet-delivery traces (`mm-link`'s format) for a spec's `links.X.trace`: read and checked
once, in Python, before anything is built, so a bad file is one line naming the field, the file and
the line, and linkemu (which checks it again, the same way, linkemu/policy_trace.c) never refuses it.

The format: one line per 1504-byte delivery opportunity, the millisecond it occurs (a plain unsigned
decimal), non-decreasing; the trace repeats with a period equal to its last line, which must be above
0 (linkemu/README.md, "Time-varying links"). What fastlab needs from it besides the check: the number
of opportunities and the period, hence the mean rate (the link's capacity for buffers given in ms or
BDP and for the charts), and a digest to tell the copy in the run folder is the file that was checked.

An error names the file and the line, never what the line holds: a spec names a path, and the file there
may be one its reader may not otherwise see (a bundle's spec naming a root-only file had `bundle replay`,
as root, quote its first bytes; issue 47).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from fastlab.base.documents import DocumentError, read_file

# linkemu/policy_trace.h: what one opportunity carries (mahimahi's PACKET_SIZE: a 1500-byte MTU and
# the 4-byte packet-information header of its TUN device)
OPPORTUNITY_BYTES = 1504
MAX_MS = 604_800_000  # linkemu's EMU_TRACE_MAX_MS: one week
# Far below linkemu's own bounds (64 MiB, 2^23 lines), above every public mahimahi trace: the largest in
# ravinet/mahimahi/traces, TMobile-LTE-driving.down, is 3.4 MB (~580,000 lines).
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_LINES = 1_048_576


class TraceError(ValueError):
    """A trace file that cannot be run, as one line naming the field, the file and the line."""


@dataclass(frozen=True)
class TraceFacts:
    """What fastlab keeps of a checked trace (the file itself is copied, never held)."""

    path: str  # absolute
    lines: int  # opportunities per period
    period_ms: int  # the last line: the trace repeats after it
    sha256: str

    @property
    def mean_rate_bps(self) -> int:
        """Opportunity bits per second over a period, linkemu's emu_trace_mean_rate_bps (integer)."""
        return self.lines * OPPORTUNITY_BYTES * 8 * 1000 // self.period_ms


def parse(data: bytes, name: str) -> tuple[int, int]:
    """(lines, period in ms) of a trace's bytes, checked as linkemu checks them; TraceError "name:line:
    why" or "name is/has ..." (without the field, and without the line's content) otherwise."""
    if len(data) > MAX_FILE_BYTES:
        raise TraceError(f"{name} is larger than {MAX_FILE_BYTES:,} bytes")
    if not data:
        raise TraceError(f"{name} is empty (no timestamps)")
    rows = data.split(b"\n")
    if rows[-1] == b"":  # the last line's newline (the last line may lack one)
        rows.pop()
    if len(rows) > MAX_LINES:
        raise TraceError(f"{name} has more than {MAX_LINES:,} lines")
    prev = 0
    for number, raw in enumerate(rows, start=1):
        if not raw:
            raise TraceError(f"{name}:{number}: empty line")
        if not raw.isdigit() or not raw.isascii():
            raise TraceError(f"{name}:{number}: not a millisecond timestamp (digits only)")
        if len(raw) > 10 or int(raw) > MAX_MS:
            raise TraceError(f"{name}:{number}: above the largest timestamp, {MAX_MS} ms")
        value = int(raw)
        if value < prev:
            raise TraceError(f"{name}:{number}: below the line before (timestamps must be non-decreasing)")
        prev = value
    if prev == 0:
        raise TraceError(f"{name}:{len(rows)}: the last timestamp is the period and must be above 0 ms")
    return len(rows), prev


def read(path: str, field: str) -> TraceFacts:
    """Read and check the trace at `path` once; TraceError naming `field` (e.g. links.x.trace)."""
    try:  # a regular file only (a FIFO would block the check), a longer one refused, not cut
        data = read_file(path, max_bytes=MAX_FILE_BYTES)
    except OSError as exc:
        raise TraceError(f"{field}: cannot read {path}: {exc.strerror}") from None
    except DocumentError as exc:
        raise TraceError(f"{field}: cannot read {path}: {exc}") from None
    try:
        lines, period = parse(data, path)
    except TraceError as exc:
        raise TraceError(f"{field}: {exc}") from None
    return TraceFacts(str(Path(path).resolve()), lines, period, hashlib.sha256(data).hexdigest())


def digest(path: Path) -> str:
    """The sha256 of a file (the run folder's copy, against the one that was checked)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()
