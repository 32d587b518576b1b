"""report.html: one self-contained page per run (plotly.js inlined, works offline).

Near the top, the run's fidelity verdict (`fastlab.fidelity_view`): a warning box with the
reasons and what to do when the emulation was not faithful, a short note otherwise, "not
assessed" for runs made before verdicts; then the measurements behind it.
"""

from __future__ import annotations

import html
import json
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from fastlab import fidelity_view

PANELS = (("goodput_mbps", "Goodput (Mb/s)"), ("cwnd_pkts", "cwnd (packets)"), ("srtt_ms", "smoothed RTT (ms)"))


def figure(flows: pd.DataFrame, links: pd.DataFrame, events: pd.DataFrame) -> go.Figure:
    updates = events[events["event"].isin(["update", "rtt"])] if not events.empty else events
    ports = links[links["direction"] == "port"] if not links.empty else links
    titles = [title for _, title in PANELS] + ["Queues (packets)"]
    if not ports.empty:
        titles.append("OpenFlow switch ports, transmitted (Mb/s)")
    if not updates.empty:
        titles.append("CC internal state (packets)")
    fig = make_subplots(rows=len(titles), cols=1, shared_xaxes=True, subplot_titles=titles, vertical_spacing=0.05)
    for row, (column, _title) in enumerate(PANELS, start=1):
        if flows.empty:
            continue
        for flow_id, rows in flows.groupby("flow"):
            fig.add_trace(go.Scatter(x=rows["t"], y=rows[column], mode="lines", name=f"{flow_id} {column}",
                                     legendgroup=str(flow_id)), row=row, col=1)
    if not links.empty:
        for (link, direction), rows in links.groupby(["link", "direction"]):
            if direction == "forward":
                fig.add_trace(go.Scatter(x=rows["t"], y=rows["backlog_pkts"], mode="lines",
                                         name=f"{link} backlog"), row=len(PANELS) + 1, col=1)
    for link, rows in ports.groupby("link") if not ports.empty else ():
        rows = rows.sort_values("t")
        fig.add_trace(go.Scatter(x=rows["t"], y=rows["tx_mbps"], mode="lines", name=f"{link} tx"),
                      row=len(PANELS) + 2, col=1)
    reroutes = events[events["event"] == "reroute"] if not events.empty else events
    for _, row in reroutes.drop_duplicates(["t", "path"]).iterrows() if not reroutes.empty else ():
        fig.add_vline(x=row["t"], line_dash="dot", annotation_text=f"reroute: {row['path']}")
    if not updates.empty:
        for flow_id, rows in updates.groupby("flow"):
            for column in ("target", "backlog", "cwnd", "a"):
                if column in rows and rows[column].notna().any():
                    fig.add_trace(go.Scatter(x=rows["t"], y=rows[column], mode="lines",
                                             name=f"{flow_id} {column}"), row=len(titles), col=1)
    fig.update_xaxes(title_text="time since run start (s)", row=len(titles), col=1)
    fig.update_layout(height=280 * len(titles), margin={"l": 60, "r": 20, "t": 40, "b": 40},
                      font={"size": 14})
    return fig


def _table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "<p>none</p>"
    keys = [k for k in rows[0] if not isinstance(rows[0][k], dict)]
    head = "".join(f"<th>{html.escape(k)}</th>" for k in keys)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(r.get(k)))}</td>" for k in keys) + "</tr>"
                   for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def fidelity_section(summary: dict[str, Any]) -> str:
    """The verdict's banner and, for an assessed run, its measurements under a heading."""
    verdict = fidelity_view.verdict_of(summary)
    details = fidelity_view.details_html(verdict)
    return fidelity_view.banner_html(verdict) + (f"\n<h2>Emulation fidelity</h2>{details}" if details else "")


def what_happened_section(summary: dict[str, Any]) -> str:
    """The run's automatic note (fastlab.explain, written to summary.json by the engine)."""
    lines = summary.get("what_happened") or []
    if not lines:
        return ""
    items = "".join(f"<li>{html.escape(str(line))}</li>" for line in lines)
    return f'<h2>What happened</h2><ul class="what-happened">{items}</ul>'


def render(spec_yaml: str, summary: dict[str, Any], environment: dict[str, Any],
           flows: pd.DataFrame, links: pd.DataFrame, events: pd.DataFrame) -> str:
    plot = pio.to_html(figure(flows, links, events), include_plotlyjs=True, full_html=False)
    backends = [{"job": job, **choice} for job, choice in environment["backends"].items()]
    shaping = [{"link": a["link"], "backend": a["backend"], "why": a["why"]} for a in environment["shaping"]]
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>fastlab run {html.escape(environment['run']['name'])}</title>
<style>body{{font-family:sans-serif;margin:2em;font-size:16px}} table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #bbb;padding:4px 8px;text-align:right}}
.what-happened li{{margin:.3em 0}} pre{{background:#f4f4f4;padding:1em}}
.note{{color:#555}}
{fidelity_view.CSS}</style>
</head><body>
<h1>fastlab run: {html.escape(environment['run']['name'])}</h1>
<p>run {html.escape(environment['run']['prefix'])}, started {html.escape(environment['run']['started'])},
kernel {html.escape(environment['kernel'])}; Jain index {summary['jain_index']}</p>
{fidelity_section(summary)}
{what_happened_section(summary)}
<h2>Flows</h2>{_table(summary['flows'])}
<h2>Links</h2>{_table(summary['links'])}
<h2>Backends</h2>{_table(backends)}{_table(shaping)}
{plot}
<h2>Spec</h2><pre>{html.escape(spec_yaml)}</pre>
<h2>Environment</h2><pre>{html.escape(json.dumps(environment['tools'], indent=1))}</pre>
</body></html>
"""
