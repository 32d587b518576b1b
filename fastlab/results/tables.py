"""Tables of a run's summary.json rows (flows, links, backends) with headers in words: one source for
report.html and the web app's run page (both render them with templates/tables.html), so a quantity is
named the same way wherever a student reads it.

Pure: no plotting library is imported here, so the web app can use it cheaply.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from fastlab.base.record import Environment, LinkFigures, Segment, Summary

ASSETS = ("base.css", "charts.js")  # what report.html inlines and the web app serves from fastlab/templates


@functools.cache
def asset(name: str) -> str:
    """One of fastlab's shared page assets (templates/base.css: palette, type, tables; templates/charts.js:
    a run's charts): inlined into report.html and served to the web app's pages, so a run reads and is
    drawn the same in both."""
    if name not in ASSETS:
        raise ValueError(f"asset: {name!r} is not one of {', '.join(ASSETS)}")
    return resources.files("fastlab").joinpath("templates", name).read_text(encoding="utf-8")


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


def human_time(stamp: str | None) -> str:
    """'2026-11-24T14:02:52.351+00:00' -> '24 Nov 2026, 14:02:52 UTC' (run times are UTC);
    anything that is not such a time is shown as it is."""
    if not stamp:
        return ""
    try:
        when = dt.datetime.fromisoformat(stamp)
    except (TypeError, ValueError):
        return str(stamp)
    when = when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when.astimezone(dt.UTC)
    return f"{when.day} {when:%b %Y, %H:%M:%S} UTC"


# Table headers in words, with units; each cell keeps its summary.json key as a tooltip. A key
# not listed here is shown as it is (a new metric is never hidden).
HEADERS = {
    "id": "id", "src": "from", "dst": "to", "cc": "algorithm", "start_s": "start (s)", "stop_s": "stop (s)",
    "throughput_mbps": "goodput (Mb/s)", "mean_rtt_ms": "mean RTT (ms)", "min_rtt_ms": "min RTT (ms)",
    "rtt_p50_ms": "RTT p50 (ms)", "rtt_p95_ms": "RTT p95 (ms)", "rtt_p99_ms": "RTT p99 (ms)",
    "owd_p50_ms": "one-way p50 (ms)", "owd_p95_ms": "one-way p95 (ms)", "owd_p99_ms": "one-way p99 (ms)",
    "mean_cwnd_pkts": "mean window (packets)", "retransmits": "retransmitted packets", "samples": "samples",
    "capacity_mbps": "capacity (Mb/s)", "utilization": "busy (%)", "arrivals_pkts": "arrivals (packets)",
    "mean_backlog_pkts": "mean queue (packets)", "max_backlog_pkts": "max queue (packets)",
    "queue_drops": "dropped by the full queue", "loss_drops": "dropped by the loss model", "drops": "dropped in all",
    "aqm_drops": "dropped early by the AQM", "aqm_marks": "ECN-marked by the AQM",
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


def segment_rows(segments: list[Segment]) -> list[dict[str, Any]]:
    """summary.json's `segments` (fastlab.theory.segments) as rows: the part of the run, the change that began
    it, each busy link's utilization and mean queue and each flow's goodput over the part's settled
    time. A link no part used (an idle access link) is left out."""
    busy = {link.id for seg in segments for link in seg.links if (finite_number(link.utilization) or 0) > 0.01}
    used = [link.id for link in segments[0].links if link.id in busy] if segments else []
    rows = []
    for seg in segments:
        start, end, settled = (finite_number(v) for v in (seg.start_s, seg.end_s, seg.settled_from_s))
        row: dict[str, Any] = {
            "part": f"{start:.1f}–{end:.1f} s" if start is not None and end is not None else "-",
            "began with": "; ".join(seg.changes) or "the start",
            "judged from (s)": settled}
        links = {link.id: link for link in seg.links}
        for link_id in used:
            link = links.get(link_id)
            util = finite_number(link.utilization) if link is not None else None
            row[f"{link_id} busy (%)"] = None if util is None else round(100 * util, 1)
            row[f"{link_id} mean queue (packets)"] = finite_number(link.mean_backlog_pkts) if link is not None else None
        for flow in seg.flows:
            row[f"{flow.id} goodput (Mb/s)"] = finite_number(flow.throughput_mbps)
        rows.append(row)
    return rows


IDLE_SHARE = 0.001  # a link busier than this share of its capacity, or that queued or dropped, is shown


def idle(link: LinkFigures) -> bool:
    """A link that carried next to nothing of its forward capacity, never queued and dropped nothing: an
    unshaped access link of the topology (100,000 Mb/s, 0 %), which the tables leave out (issue 50)."""
    util = finite_number(link.utilization)
    return util is not None and util < IDLE_SHARE and not finite_number(link.max_backlog_pkts) \
        and not finite_number(link.drops)


def jain_text(summary: Summary) -> str:
    """The Jain fairness index as shown: three decimals, or a dash where one flow has nothing to share with."""
    if len(summary.flows) < 2:
        return "— (one flow)"
    jain = finite_number(summary.jain_index)
    return "-" if jain is None else f"{jain:.3f}"


def run_tables(summary: Summary, environment: Environment | None) -> dict[str, Any]:
    """A run's tables as report.html and the web app's run page show them (each a Table): flows, links (idle
    ones left out, their ids under `idle_links`), the parts of a run whose parameters changed, and (when the
    environment is known) which backend did each job and how each link was shaped."""
    env = environment or Environment()
    backends = [{"job": job, **choice.dump()} for job, choice in env.backends.items()]
    shaping = [{"link": a.link, "backend": a.backend, "why": a.why} for a in env.shaping]
    shown = [link for link in summary.links if not idle(link)] or summary.links
    return {"flows": table([f.dump() for f in summary.flows], "flow"),
            "links": table([link.dump() for link in shown], "link"),
            "idle_links": [link.id for link in summary.links if link not in shown],
            "segments": table(segment_rows(summary.segments or [])),
            "backends": table(backends), "shaping": table(shaping)}
