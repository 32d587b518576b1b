"""What a run's charts draw (fastlab/templates/charts.js), from its rows: the samples the engine streamed
to the live page (`kind` flow, link, event; the columns of flows.csv, links.csv and cc_events.csv), so
report.html and the replay of a run made without the web app (no partial.jsonl: a CLI run, a bundle's)
draw through the live page's own code.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd
from markupsafe import Markup

from fastlab.base.record import Summary

# The columns of each kind of sample the charts read (fastlab/templates/charts.js), as the engine streams them
# to the live page: a report carries no more than its charts draw.
SAMPLE_COLUMNS = {
    "flow": ("t", "flow", "goodput_mbps", "cwnd_pkts", "srtt_ms"),
    "link": ("t", "link", "direction", "backlog_pkts", "tx_bytes", "aqm_avg_pkts", "aqm_drop_prob"),
    "event": ("t", "flow", "event", "base_rtt_us", "avg_rtt_us", "target", "cwnd", "path"),
}
CHART_EVENTS = ("update", "reroute")  # the events the charts draw


def _finite(value: Any) -> Any:
    """A JSON-safe cell: NaN/inf and pandas' missing values -> None, numpy numbers -> Python's."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, bool | str):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(number):
        return None
    return int(value) if float(number).is_integer() and not isinstance(value, float) else number


def with_goodput(flows: pd.DataFrame) -> pd.DataFrame:
    """flows.csv with `goodput_mbps`: as recorded, or, in a recording trimmed to the columns its checkpoints
    read, from `bytes_acked` as the flow tool computes it (bytes acknowledged since the flow's previous
    sample over the time between them; fastlab.run.flowtool), so its goodput chart is drawn too."""
    if flows.empty or "goodput_mbps" in flows or not {"flow", "t", "bytes_acked"} <= set(flows):
        return flows
    ordered = flows.sort_values(["flow", "t"], kind="stable")
    by_flow = ordered.groupby("flow", sort=False)
    delta_bits = by_flow["bytes_acked"].diff() * 8
    delta_t = by_flow["t"].diff().clip(lower=1e-6)
    return ordered.assign(goodput_mbps=delta_bits / 1e6 / delta_t).sort_index()


def chart_samples(flows: pd.DataFrame, links: pd.DataFrame, events: pd.DataFrame) -> list[dict[str, Any]]:
    """A run's rows as the samples its live page was streamed (`kind` flow, link, event), in time order,
    with the columns the charts read: what report.html's charts draw, through the live page's own code."""
    flows = with_goodput(flows)
    if not links.empty and "aqm_avg_pkts" not in links and "aqm_avg_queue" in links:
        # a recording trimmed to what its checkpoints read keeps RED's average as aqm_avg_queue; the labs' RED
        # counts in packets (none of their specs sets mode: bytes), where the two columns are one figure
        links = links.assign(aqm_avg_pkts=links["aqm_avg_queue"])
    out: list[dict[str, Any]] = []
    for kind, frame in (("flow", flows), ("link", links), ("event", events)):
        if frame.empty or "t" not in frame:
            continue
        if kind == "event":
            frame = frame[frame["event"].isin(CHART_EVENTS)] if "event" in frame else frame.iloc[0:0]
        columns = [c for c in SAMPLE_COLUMNS[kind] if c in frame]
        for row in frame[columns].itertuples(index=False, name=None):
            sample = {"kind": kind} | {c: _finite(v) for c, v in zip(columns, row, strict=True)}
            if isinstance(sample["t"], int | float):
                out.append(sample)
    out.sort(key=lambda s: s["t"])
    return out


def script_json(data: Any) -> Markup:
    """JSON to sit inside a <script type="application/json">: no '<', '>' or '&' that could end it."""
    text = json.dumps(data, allow_nan=False, separators=(",", ":"))
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))  # noqa: S704


# "Where the round trip went" (fastlab.measure.accounting's columns of flows.csv): at most this many points
# per flow, each the mean of the samples it stands for (a 120-s run at 10 Hz keeps every sample).
ROUND_TRIP_POINTS = 1200
ROUND_TRIP_PARTS = ("serialization", "queueing", "lateness", "hosts")  # stacked above the propagation


def round_trip(flows: pd.DataFrame, summary: Summary | None = None) -> dict[str, Any]:
    """Per flow: its RTT samples' parts above the propagation (ms), over time, and the summary's medians
    (the record's FlowFigures.delay_accounting, as data), for charts.js's drawRoundTrip; {} for a run without
    the accounting."""
    if flows.empty or "acct_rtt_ms" not in flows or "flow" not in flows:
        return {}
    figures = {f.id: f.delay_accounting.dump() for f in (summary.flows if summary is not None else [])
               if f.delay_accounting is not None}
    out: dict[str, Any] = {}
    for flow, rows in flows.dropna(subset=["acct_rtt_ms"]).groupby("flow", sort=True):
        rows = rows.sort_values("t")
        step = max(1, math.ceil(len(rows) / ROUND_TRIP_POINTS))
        binned = rows.groupby(pd.RangeIndex(len(rows)) // step).mean(numeric_only=True)
        series: dict[str, Any] = {"t": [round(float(v), 3) for v in binned["t"]]}
        for part in ROUND_TRIP_PARTS:
            series[part] = [_finite(round(float(v), 4)) for v in binned[f"acct_{part}_ms"]]
        series["propagation_ms"] = _finite(round(float(rows["acct_propagation_ms"].median()), 3))
        series["figures"] = figures.get(str(flow))
        out[str(flow)] = series
    return out
