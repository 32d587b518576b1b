"""Tables of a run's summary.json rows (flows, links, backends) with headers in words: one source for
report.html and the web app's run page (both render them with templates/tables.html), so a quantity is
named the same way wherever a student reads it.

Pure: no plotting library is imported here, so the web app can use it cheaply.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


def finite_number(value: Any) -> float | None:
    """A summary value as a float, or None for what is not a finite number (null, text, a bool, NaN,
    an int too large for a float, as a hostile bundle may carry)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


# Table headers in words, with units; each cell keeps its summary.json key as a tooltip. A key
# not listed here is shown as it is (a new metric is never hidden).
HEADERS = {
    "id": "id", "src": "from", "dst": "to", "cc": "algorithm", "start_s": "start (s)", "stop_s": "stop (s)",
    "throughput_mbps": "goodput (Mb/s)", "mean_rtt_ms": "mean RTT (ms)", "min_rtt_ms": "min RTT (ms)",
    "mean_cwnd_pkts": "mean window (packets)", "retransmits": "retransmitted packets", "samples": "samples",
    "capacity_mbps": "capacity (Mb/s)", "utilization": "busy (%)", "arrivals_pkts": "arrivals (packets)",
    "mean_backlog_pkts": "mean queue (packets)", "max_backlog_pkts": "max queue (packets)",
    "queue_drops": "dropped by the full queue", "loss_drops": "dropped by the loss model", "drops": "dropped in all",
    "job": "job", "backend": "backend", "why": "why", "link": "link",
}
PERCENT = {"utilization"}  # fractions shown as percentages


def cell(key: str, value: Any) -> str:
    """One value as a table cell's text: 4 significant digits, fractions as percentages, '-' for none."""
    if value is None:
        return "-"
    if isinstance(value, float):
        if key in PERCENT:
            return f"{value * 100:.1f}"
        return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.4g}"  # 10000, not 1e+04
    return str(value)


@dataclass(frozen=True)
class Table:
    """A table for the template (templates/tables.html): (summary.json key, header) per column, whether
    each column holds numbers (right-aligned), and each row's cell texts."""

    columns: list[tuple[str, str]]
    rows: list[list[str]]
    numeric: list[bool] = field(default_factory=list)


def table(rows: list[dict[str, Any]], id_header: str = "id") -> Table:
    """Rows of summary.json (flows, links, ...) as a Table; nested values (e.g. a link's reverse) are
    not columns."""
    if not rows:
        return Table([], [])
    keys = [k for k in rows[0] if not isinstance(rows[0][k], dict)]
    headers = HEADERS | {"id": id_header}
    numeric = [all(isinstance(r.get(k), int | float) and not isinstance(r.get(k), bool)
                   for r in rows if r.get(k) is not None) for k in keys]
    return Table([(k, headers.get(k, k)) for k in keys], [[cell(k, r.get(k)) for k in keys] for r in rows], numeric)


def run_tables(summary: dict[str, Any], environment: dict[str, Any] | None) -> dict[str, Table]:
    """A run's tables as report.html and the web app's run page show them: flows, links, and (when the
    environment is known) which backend did each job and how each link was shaped."""
    env = environment or {}
    backends = [{"job": job, **choice} for job, choice in (env.get("backends") or {}).items()]
    shaping = [{"link": a["link"], "backend": a["backend"], "why": a["why"]} for a in env.get("shaping") or []]
    return {"flows": table(summary.get("flows") or [], "flow"), "links": table(summary.get("links") or [], "link"),
            "backends": table(backends), "shaping": table(shaping)}
