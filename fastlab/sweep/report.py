"""A sweep's tables and page (pure): run records -> their headline figures (fastlab.base.record.headline) ->
one row per point -> per combination mean, std, min and max (and over the faithful repetitions, median and
a 95 % interval) -> sweep.html with the points' fidelity and
the plots.

sweep.py defines, plans and runs sweeps and keeps their folder; what it writes to
aggregate.csv, aggregate_mean.csv and sweep.html comes from here.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Any, Protocol

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from fastlab.base.record import Summary, headline
from fastlab.results import fidelity_view
from fastlab.results.report import PLOTLY_FILE
from fastlab.results.tables import HEADERS
from fastlab.sweep.spread import spread

# Metrics shown in sweep.html, in this order; links add their own rows (utilization, backlog).
PLOTTED = ("throughput_mbps", "mean_rtt_ms", "retransmits", "jain_index")
# A point's fidelity verdict as a column: 1 faithful, 0 not, empty not assessed (a run made before verdicts).
FAITHFUL = "faithful"


class PointLike(Protocol):
    """What the page needs of a sweep point (sweep.Point, a frozen dataclass)."""

    @property
    def id(self) -> str: ...

    def label(self) -> str: ...


def summary_metrics(summary: Summary) -> dict[str, float | int | str | None]:
    """A run's record as one row of flat metrics: its headline figures (fastlab.base.record.headline), totals
    first (with `faithful`: 1/0/None for a run without a fidelity verdict), then per link (`<link>_<name>`)
    and per flow (`<flow>_<name>`)."""
    return headline(summary).flat()


def param_cell(value: Any) -> Any:
    """A parameter value as a table cell: scalars as they are, anything else as JSON."""
    return value if value is None or isinstance(value, (bool, int, float, str)) else json.dumps(value, sort_keys=True)


def aggregate(rows: pd.DataFrame, params: list[str]) -> pd.DataFrame:
    """Per parameter combination: n (repetitions), faithful_n and assessed_n (repetitions whose
    emulation was faithful / had a verdict), `unfaithful` (their point ids), mean, std, min, max of every
    metric over all repetitions, and over the faithful ones alone its median and 95 % interval of the mean
    (`<metric>_median`, `_ci95_low`, `_ci95_high`: fastlab.sweep.spread; empty where too few were
    faithful)."""
    if rows.empty:
        return pd.DataFrame(columns=["combo", *params, "n"])
    metrics = [c for c in rows.columns if c not in {"point", "combo", "rep", "seed", FAITHFUL, *params}
               and pd.api.types.is_numeric_dtype(rows[c])]
    grouped = rows.sort_values(["combo", "rep"]).groupby("combo", sort=True)
    table = grouped[params].first()
    table["n"] = grouped.size()
    if FAITHFUL in rows:
        flags = pd.to_numeric(rows[FAITHFUL], errors="coerce").astype(float).groupby(rows["combo"])
        table["faithful_n"] = flags.sum().astype(int)
        table["assessed_n"] = flags.count()
        verdict = pd.to_numeric(rows[FAITHFUL], errors="coerce")
        table["unfaithful"] = rows["point"].where(verdict == 0).groupby(rows["combo"]).agg(
            lambda ids: " ".join(sorted(ids.dropna().astype(str)))) if "point" in rows else ""
        faithful = rows[verdict == 1]
    else:
        faithful = rows.iloc[0:0]
    stats = grouped[metrics].agg(["mean", "std", "min", "max"])
    stats.columns = [f"{metric}_{stat}" for metric, stat in stats.columns]
    spreads: dict[Any, dict[str, float | None]] = {}
    for combo in table.index:
        group = faithful[faithful["combo"] == combo]
        cells = spreads.setdefault(combo, {})
        for metric in metrics:
            figure = spread(group[metric].tolist())
            cells |= {f"{metric}_median": figure.median, f"{metric}_ci95_low": figure.ci_low,
                      f"{metric}_ci95_high": figure.ci_high}
    over_faithful = pd.DataFrame.from_dict(spreads, orient="index", dtype=float)
    return table.join(stats).join(over_faithful).reset_index()


def plotted_metrics(means: pd.DataFrame) -> list[tuple[str, str]]:
    """(metric, title) pairs for the plot: totals, then each link's utilization and mean backlog."""
    links = [c.removesuffix("_utilization_mean") for c in means.columns if c.endswith("_utilization_mean")]
    titles = {"throughput_mbps": f"total {HEADERS['throughput_mbps']}", "mean_rtt_ms": HEADERS["mean_rtt_ms"],
              "retransmits": HEADERS["retransmits"], "jain_index": "Jain index"}
    out = [(m, titles[m]) for m in PLOTTED[:1]]
    out += [(f"{link}_utilization", f"{link} busy (fraction)") for link in links]  # the mean of fractions
    out += [(m, titles[m]) for m in PLOTTED[1:2]]
    out += [(f"{link}_mean_backlog_pkts", f"{link} {HEADERS['mean_backlog_pkts']}") for link in links]
    return [(m, t) for m, t in out + [(m, titles[m]) for m in PLOTTED[2:]] if f"{m}_mean" in means.columns]


def figure(means: pd.DataFrame, params: list[str]) -> go.Figure:
    """Mean (line, std error bars) and min-max band of each metric against each swept parameter;
    one trace per combination of the other parameters."""
    metrics = plotted_metrics(means)
    fig = make_subplots(rows=max(1, len(metrics)), cols=len(params), vertical_spacing=0.06,
                        subplot_titles=[f"{title} vs {p}" for _, title in metrics for p in params])
    for col, param in enumerate(params, start=1):
        others = [p for p in params if p != param]
        groups = means.groupby(others, dropna=False, sort=False) if others else [((), means)]
        for key, rows in groups:
            rows = rows.sort_values(param)
            key = key if isinstance(key, tuple) else (key,)
            name = ", ".join(f"{p}={v}" for p, v in zip(others, key, strict=True)) or "mean"
            x = rows[param].astype(str) if not pd.api.types.is_numeric_dtype(rows[param]) else rows[param]
            for row, (metric, _title) in enumerate(metrics, start=1):
                std = rows[f"{metric}_std"].fillna(0.0)
                band = dict(mode="lines", line={"width": 0}, showlegend=False, legendgroup=name, hoverinfo="skip")
                fig.add_trace(go.Scatter(x=x, y=rows[f"{metric}_max"], **band), row=row, col=col)
                fig.add_trace(go.Scatter(x=x, y=rows[f"{metric}_min"], fill="tonexty", opacity=0.2, **band),
                              row=row, col=col)
                fig.add_trace(go.Scatter(x=x, y=rows[f"{metric}_mean"], mode="lines+markers", name=name,
                                         legendgroup=name, showlegend=row == 1 and col == 1,
                                         error_y={"type": "data", "array": std, "visible": True}), row=row, col=col)
        fig.update_xaxes(title_text=param, row=len(metrics), col=col)
    fig.update_layout(height=300 * max(1, len(metrics)), margin={"l": 60, "r": 20, "t": 50, "b": 50},
                      font={"size": 14})
    return fig


@dataclass(frozen=True)
class PointFidelity:
    """A finished point's fidelity verdict for sweep.html: faithful (None: not assessed), first reason."""

    point: str
    label: str
    faithful: bool | None
    first_reason: str | None = None

    @classmethod
    def of(cls, point: PointLike, summary: Summary) -> PointFidelity:
        return cls(point.id, point.label(), summary.faithful, fidelity_view.first_reason(summary.fidelity))


def fidelity_html(points: list[PointFidelity]) -> str:
    """How many finished points were faithful; the unfaithful ones, each with its first reason."""
    if not points:
        return ""
    if all(p.faithful is None for p in points):
        return '<p id="fidelity-count">Emulation fidelity: not assessed (the points ran before fidelity verdicts).</p>'
    good = sum(p.faithful is True for p in points)
    bad = [p for p in points if p.faithful is False]
    unknown = sum(p.faithful is None for p in points)
    counts = [f"{good} of {len(points)} finished points faithful"]
    counts += [f"{len(bad)} not faithful"] if bad else []
    counts += [f"{unknown} not assessed (run before fidelity verdicts)"] if unknown else []
    text = f'<p id="fidelity-count">Emulation fidelity: {"; ".join(counts)}.</p>'
    if not bad:
        return text
    items = "".join(f"<li><strong>{html.escape(p.point)}</strong> ({html.escape(p.label)}): "
                    f"{html.escape(p.first_reason or 'no reason recorded')}</li>" for p in bad)
    return (text + '<div id="fidelity" class="fidelity fidelity-unfaithful" data-fidelity="unfaithful">'
            '<p><strong class="fidelity-title">⚠ Not faithful: do not trust these points as they stand</strong></p>'
            "<p>This machine could not keep up with the network in the spec during these runs: their figures partly "
            "measure the machine (each point's report.html says why and what to do). First reason of each:</p>"
            f'<ul class="fidelity-reasons">{items}</ul></div>')


def render(name: str, means: pd.DataFrame, params: list[str], finished: int, total: int,
           fidelity: list[PointFidelity] | None = None, notes: list[str] | None = None) -> str:
    """sweep.html: fidelity of the points, what the sweep scaled (`notes`: a scale_flows sweep's lines), the
    mean table and the plots (plotly.js the sweep folder's one copy, beside the page: `write_aggregates`)."""
    # a sweep without parameters (a spec's repetitions) has nothing to plot against: its table is the figures
    plot = pio.to_html(figure(means, params), include_plotlyjs=PLOTLY_FILE, full_html=False) \
        if params and not means.empty else ""
    shown = ["combo", *params, "n", "faithful_n", "assessed_n"] + (
        [f"{m}_mean" for m, _ in plotted_metrics(means)] if params else
        [f"{m}_{s}" for m, _ in plotted_metrics(means) for s in ("median", "ci95_low", "ci95_high")])
    table = means[[c for c in shown if c in means.columns]].to_html(index=False, float_format=lambda v: f"{v:.4g}")
    scaled_html = ('<ul class="scaling">' + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>"
                   if notes else "")
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>fastlab sweep {html.escape(name)}</title>
<style>body{{font-family:sans-serif;margin:2em;font-size:16px}} table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #bbb;padding:4px 8px;text-align:right}}
{fidelity_view.CSS}</style></head><body>
<h1>fastlab sweep: {html.escape(name)}</h1>
<p>{finished} of {total} points finished. Lines: mean over repetitions with &plusmn;1 std bars; shaded: min to max.
Full tables: aggregate.csv (every point, with faithful: 1, 0 or empty for not assessed), aggregate_mean.csv
(per combination; faithful_n of assessed_n repetitions were faithful).</p>
{fidelity_html(fidelity or [])}
{scaled_html}
{table}
{plot}
</body></html>
"""
