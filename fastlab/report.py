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

from fastlab import chart_lines, fidelity_view
from fastlab.tables import base_css, human_time, run_tables

PANELS = (("goodput_mbps", "Goodput (Mb/s)"), ("cwnd_pkts", "cwnd (packets)"), ("srtt_ms", "smoothed RTT (ms)"))
WORDS = {"goodput_mbps": "goodput", "cwnd_pkts": "window", "srtt_ms": "RTT"}  # legend names, as on the live page
SMOOTH_SAMPLES = 5  # goodput's moving average, as the live page's default (said in the panel's title)
# The charts whose theory lines (fastlab.chart_lines, shared with the live page) the report draws: row.
THEORY_ROWS = {"goodput": 1, "cwnd": 2, "rtt": 3, "queue": 4}


PALETTE = plotly.colors.qualitative.D3  # one colour per flow on every panel, in flow order
LINK_PALETTE = plotly.colors.qualitative.Dark2  # links (queues panel): a palette of their own
STATE_DASH = {"target": "dot", "backlog": "solid", "cwnd": "dash", "a": "dashdot"}  # the CC state panel


def flow_colours(*frames: pd.DataFrame) -> dict[str, str]:
    """Each flow id of the frames (their `flow` column) -> its colour, f1, f2, ... in number order."""
    ids = {str(f) for frame in frames if not frame.empty and "flow" in frame for f in frame["flow"].dropna()}
    ordered = sorted(ids, key=lambda f: (len(f), f))  # f2 before f10
    return {f: PALETTE[i % len(PALETTE)] for i, f in enumerate(ordered)}


def theory_lines(fig: go.Figure, refs: list[dict[str, Any]], colour: dict[str, str], end_s: float,
                 marked: bool = False) -> None:
    """The theory's lines (fastlab.chart_lines: the live page's list) dashed over their spans, each labelled at
    its start -- with its value alone where the run is in parts (`marked`: it has change markers), as the live
    page does; a line the flows share (a bottleneck's capacity or Σα) grey."""
    charts = chart_lines.lines(refs)
    segmented = marked or any(line["from_s"] > 0 for rows in charts.values() for line in rows)
    for chart, row in THEORY_ROWS.items():
        for line in charts[chart]:
            x0, x1 = line["from_s"], line["to_s"] if line["to_s"] is not None else end_s
            tint = colour.get(str(line["flow"]), "#444444") if line["flow"] else "#444444"
            fig.add_shape(type="line", x0=x0, x1=x1, y0=line["y"], y1=line["y"],
                          line={"color": tint, "dash": "dash", "width": 1.5}, row=row, col=1)
            fig.add_annotation(x=x0, y=line["y"], text=line["short"] if segmented else line["label"], showarrow=False,
                               xanchor="left", yanchor="bottom", font={"color": tint, "size": 11}, row=row, col=1)


def figure(flows: pd.DataFrame, links: pd.DataFrame, events: pd.DataFrame,
           marks: list[tuple[float, str]] | None = None, refs: list[dict[str, Any]] | None = None,
           duration_s: float | None = None) -> go.Figure:
    """The report's panels, as the live page draws them: goodput (its moving average), window, RTT per
    flow; the queues; switch ports and FAST's state when there are any; the theory's dashed lines over
    their spans and a dotted marker at each change of the run's parameters; time since the flows
    started, from 0 to the run's duration."""
    updates = events[events["event"].isin(["update", "rtt"])] if not events.empty else events
    colour = flow_colours(flows, updates)
    ports = links[links["direction"] == "port"] if not links.empty else links
    titles = [title if column != "goodput_mbps" else f"{title}, moving average of {SMOOTH_SAMPLES} samples"
              for column, title in PANELS] + ["Queues (packets)"]
    if not ports.empty:
        titles.append("OpenFlow switch ports, transmitted (Mb/s)")
    if not updates.empty:
        titles.append("CC internal state (packets)")
    fig = make_subplots(rows=len(titles), cols=1, shared_xaxes=True, subplot_titles=titles, vertical_spacing=0.05)
    for row, (column, _title) in enumerate(PANELS, start=1):
        if flows.empty:
            continue
        for flow_id, rows in flows.groupby("flow"):
            y = rows[column]
            if column == "goodput_mbps":
                y = y.rolling(SMOOTH_SAMPLES, min_periods=1).mean()
            fig.add_trace(go.Scatter(x=rows["t"], y=y, mode="lines", name=f"{flow_id} {WORDS[column]}",
                                     legendgroup=str(flow_id), line={"color": colour[str(flow_id)]}),
                          row=row, col=1)
    if not links.empty:
        forward = links[links["direction"] == "forward"]
        # a link that never queued (an idle access link) adds a flat 0: left out, as on the live page
        busy = [(link, rows) for link, rows in forward.groupby("link") if (rows["backlog_pkts"].fillna(0) > 0).any()]
        for i, (link, rows) in enumerate(busy):
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
    end = float(duration_s) if duration_s else float(flows["t"].max()) if not flows.empty else 1.0
    theory_lines(fig, refs or [], colour, end, bool(marks))
    fig.update_xaxes(range=[0, end])
    fig.update_xaxes(title_text="time since the flows started (s)", row=len(titles), col=1)
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
TEMPLATES.filters["when"] = human_time


def render(spec_yaml: str, summary: dict[str, Any], environment: dict[str, Any],
           flows: pd.DataFrame, links: pd.DataFrame, events: pd.DataFrame,
           refs: list[dict[str, Any]] | None = None, duration_s: float | None = None) -> str:
    """report.html (templates/report.html): fidelity, what happened, the tables (a run whose parameters
    changed: its parts), the traces with a marker at each change, how it ran."""
    marks = [(seg["start_s"], "; ".join(seg["changes"])) for seg in summary.get("segments") or [] if seg.get("changes")]
    plot = pio.to_html(figure(flows, links, events, marks, refs, duration_s), include_plotlyjs=True, full_html=False)
    return TEMPLATES.get_template("report.html").render(
        run=environment["run"], kernel=environment["kernel"], jain_index=summary["jain_index"],
        base_css=base_css(), fidelity_css=fidelity_view.CSS, fidelity=fidelity_section(summary),
        what_happened=[str(line) for line in summary.get("what_happened") or []],
        **run_tables(summary, environment), plot=plot, spec_yaml=spec_yaml,
        tools=json.dumps(environment["tools"], indent=1))
