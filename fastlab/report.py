"""report.html: one self-contained page per run (plotly.js inlined, works offline).

Near the top, the run's fidelity verdict (`fastlab.fidelity_view`): a warning box with the
reasons and what to do when the emulation was not faithful, a short note otherwise, "not
assessed" for runs made before verdicts; then the measurements behind it.
"""

from __future__ import annotations

import json
from typing import Any

import jinja2
import pandas as pd
import plotly.colors
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from fastlab import fidelity_view
from fastlab.tables import run_tables

PANELS = (("goodput_mbps", "Goodput (Mb/s)"), ("cwnd_pkts", "cwnd (packets)"), ("srtt_ms", "smoothed RTT (ms)"))


PALETTE = plotly.colors.qualitative.D3  # one colour per flow on every panel, in flow order
LINK_PALETTE = plotly.colors.qualitative.Dark2  # links (queues panel): a palette of their own
STATE_DASH = {"target": "dot", "backlog": "solid", "cwnd": "dash", "a": "dashdot"}  # the CC state panel


def flow_colours(*frames: pd.DataFrame) -> dict[str, str]:
    """Each flow id of the frames (their `flow` column) -> its colour, f1, f2, ... in number order."""
    ids = {str(f) for frame in frames if not frame.empty and "flow" in frame for f in frame["flow"].dropna()}
    ordered = sorted(ids, key=lambda f: (len(f), f))  # f2 before f10
    return {f: PALETTE[i % len(PALETTE)] for i, f in enumerate(ordered)}


def figure(flows: pd.DataFrame, links: pd.DataFrame, events: pd.DataFrame,
           marks: list[tuple[float, str]] | None = None) -> go.Figure:
    updates = events[events["event"].isin(["update", "rtt"])] if not events.empty else events
    colour = flow_colours(flows, updates)
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
                                     legendgroup=str(flow_id), line={"color": colour[str(flow_id)]}),
                          row=row, col=1)
    if not links.empty:
        forward = links[links["direction"] == "forward"]
        for i, (link, rows) in enumerate(forward.groupby("link")):
            fig.add_trace(go.Scatter(x=rows["t"], y=rows["backlog_pkts"], mode="lines", name=f"{link} backlog",
                                     line={"color": LINK_PALETTE[i % len(LINK_PALETTE)], "dash": "dot"}),
                          row=len(PANELS) + 1, col=1)
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
                    fig.add_trace(go.Scatter(x=rows["t"], y=rows[column], mode="lines", name=f"{flow_id} {column}",
                                             legendgroup=str(flow_id),
                                             line={"color": colour[str(flow_id)], "dash": STATE_DASH[column]}),
                                  row=len(titles), col=1)
    for at_s, text in marks or []:  # each change of the run's parameters (summary.json's segments)
        fig.add_vline(x=at_s, line_dash="dot", line_color="#7b3294", annotation_text=text,
                      annotation_font_color="#7b3294")
    fig.update_xaxes(title_text="time since run start (s)", row=len(titles), col=1)
    fig.update_layout(height=280 * len(titles), margin={"l": 60, "r": 20, "t": 40, "b": 40},
                      font={"size": 14})
    return fig


def fidelity_section(summary: dict[str, Any]) -> str:
    """The verdict's banner and, for an assessed run, its measurements under a heading."""
    verdict = fidelity_view.verdict_of(summary)
    details = fidelity_view.details_html(verdict)
    return fidelity_view.banner_html(verdict) + (f"\n<h2>Emulation fidelity</h2>{details}" if details else "")


TEMPLATES = jinja2.Environment(loader=jinja2.PackageLoader("fastlab", "templates"),
                               autoescape=True, undefined=jinja2.StrictUndefined)


def render(spec_yaml: str, summary: dict[str, Any], environment: dict[str, Any],
           flows: pd.DataFrame, links: pd.DataFrame, events: pd.DataFrame) -> str:
    """report.html (templates/report.html): fidelity, what happened, the tables (a run whose parameters
    changed: its parts), the traces with a marker at each change, how it ran."""
    marks = [(seg["start_s"], "; ".join(seg["changes"])) for seg in summary.get("segments") or [] if seg.get("changes")]
    plot = pio.to_html(figure(flows, links, events, marks), include_plotlyjs=True, full_html=False)
    return TEMPLATES.get_template("report.html").render(
        run=environment["run"], kernel=environment["kernel"], jain_index=summary["jain_index"],
        fidelity_css=fidelity_view.CSS, fidelity=fidelity_section(summary),
        what_happened=[str(line) for line in summary.get("what_happened") or []],
        **run_tables(summary, environment), plot=plot, spec_yaml=spec_yaml,
        tools=json.dumps(environment["tools"], indent=1))
