"""What the publication figures draw, read from run folders: per flow its goodput, window and RTT over time,
the queues of the links that queued, the theory's lines (fastlab.results.chart_lines: the report's and the web
app's own), and the samples the CDFs and box plots count. Pure given a `Run` (fastlab.results.api): no
matplotlib here.

Goodput over time is smoothed as the report's chart smooths it (charts.js: a trailing moving average over
SMOOTH_RTTS of the flow's base RTT). The throughput samples of the CDFs and box plots are the goodput over
consecutive, non-overlapping windows of that length (each the bytes acknowledged in it over its span), so
that one sample is one window, not twenty overlapping ones. The RTT samples are the ones the summary's
percentiles count (fastlab.measure.analysis.rtt_samples).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from fastlab.define.schema import SpecError
from fastlab.measure import analysis
from fastlab.results import chart_lines
from fastlab.results.chart_data import with_goodput
from fastlab.theory import segments

log = logging.getLogger(__name__)

SMOOTH_RTTS = 10  # charts.js's SMOOTH_RTTS: the goodput chart's moving average, in base RTTs
SMOOTH_FALLBACK = 5  # samples, for a flow the theory cannot place (charts.js's SMOOTH_FALLBACK)
MAX_QUEUES = 3  # links drawn on the queue panel: those that queued most (a bottleneck, perhaps its reverse)
MAX_POINTS = 4000  # per line: a 120-s run at 20 Hz has 2,400 samples; longer ones are thinned by averaging


@dataclass
class FlowSeries:
    """One flow of a run: its algorithm, its traces over time (t s; goodput Mb/s smoothed; cwnd packets; srtt
    ms: None where the trace has no such column), its RTT samples (ms) and its windowed goodput samples
    (Mb/s), and the smoothing window (samples, s)."""

    id: str
    cc: str
    t: np.ndarray
    goodput: np.ndarray | None
    cwnd: np.ndarray | None
    srtt: np.ndarray | None
    rtt_samples: np.ndarray
    goodput_samples: np.ndarray
    window: int
    window_s: float


@dataclass
class RunData:
    """One run as its figures draw it: its flows, the queues of the links that queued (link -> (t, packets)),
    the theory's lines per chart (chart_lines.lines) and its verdict (True, False, None: not assessed)."""

    name: str
    flows: list[FlowSeries]
    queues: dict[str, tuple[np.ndarray, np.ndarray]]
    lines: dict[str, list[dict[str, Any]]]
    faithful: bool | None
    duration_s: float | None
    summary_flows: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Group:
    """Runs drawn as one: a run of its own, or a sweep point's repetitions (`label` names it in the
    legend)."""

    label: str
    runs: list[RunData]


def theory_refs(run: Any) -> list[dict[str, Any]]:
    """The run's theory references (chart_lines.references with its applied changes); none for a spec the
    theory can no longer lay out (said in the log: the figure is drawn without its lines)."""
    try:
        return chart_lines.references(run.experiment, run.summary, segments.applied_changes(run.environment))
    except (SpecError, ValueError, KeyError, TypeError, RuntimeError, OSError) as exc:
        log.warning("%s: no theory lines (%s)", run.name, str(exc).splitlines()[0][:200] if str(exc) else exc)
        return []


def _thin(t: np.ndarray, *ys: np.ndarray | None) -> tuple[Any, ...]:
    """At most MAX_POINTS points, each the mean of the samples it stands for (None stays None)."""
    step = max(1, math.ceil(len(t) / MAX_POINTS))
    if step == 1:
        return (t, *ys)

    def mean(a: np.ndarray | None) -> np.ndarray | None:
        if a is None:
            return None
        n = len(a) // step * step
        return np.nanmean(a[:n].reshape(-1, step), axis=1) if n else a

    return tuple(mean(a) for a in (t, *ys))


def _column(rows: pd.DataFrame, name: str) -> np.ndarray | None:
    if name not in rows or not rows[name].notna().any():
        return None
    return pd.to_numeric(rows[name], errors="coerce").to_numpy(dtype=float)


def _window(rows: pd.DataFrame, base_rtt_ms: float | None) -> tuple[int, float]:
    """The smoothing window of a flow (samples, seconds): SMOOTH_RTTS base RTTs at its sampling interval."""
    dt = float(np.median(np.diff(rows["t"].to_numpy(dtype=float)))) if len(rows) > 1 else 0.0
    if dt <= 0 or not math.isfinite(dt):
        return 1, 0.0
    n = max(1, round(SMOOTH_RTTS * base_rtt_ms / 1000 / dt)) if base_rtt_ms else SMOOTH_FALLBACK
    return n, n * dt


def windowed_goodput(rows: pd.DataFrame, n: int) -> np.ndarray:
    """Goodput (Mb/s) over consecutive, non-overlapping windows of `n` samples: bytes acknowledged in each
    over its span (bytes_acked's differences; else the mean of the samples' goodput)."""
    if len(rows) < 2:
        return np.array([])
    t = rows["t"].to_numpy(dtype=float)
    if "bytes_acked" in rows and rows["bytes_acked"].notna().all():
        acked = rows["bytes_acked"].to_numpy(dtype=float)
        edges = np.arange(0, len(t), n)
        if len(edges) < 2:
            return np.array([])
        span = np.diff(t[edges])
        return np.where(span > 0, np.diff(acked[edges]) * 8 / 1e6 / np.where(span > 0, span, 1), np.nan)
    good = _column(rows, "goodput_mbps")
    if good is None:
        return np.array([])
    k = len(good) // n * n
    return np.nanmean(good[:k].reshape(-1, n), axis=1) if k else np.array([])


def _flow(flow: Any, rows: pd.DataFrame, base_rtt_ms: float | None) -> FlowSeries:
    rows = rows.sort_values("t")
    n, n_s = _window(rows, base_rtt_ms)
    goodput = _column(rows, "goodput_mbps")
    if goodput is not None:  # charts.js's smoothed(): a trailing mean over n samples
        goodput = pd.Series(goodput).rolling(n, min_periods=1).mean().to_numpy()
    t, goodput, cwnd, srtt = _thin(rows["t"].to_numpy(dtype=float), goodput, _column(rows, "cwnd_pkts"),
                                   _column(rows, "srtt_ms"))
    srtt = None if srtt is None else np.where(srtt > 0, srtt, np.nan)  # srtt 0: before the first ACK
    samples = windowed_goodput(rows, n)
    return FlowSeries(flow.id, flow.cc or "?", t, goodput, cwnd, srtt,
                      analysis.rtt_samples(rows).to_numpy(dtype=float), samples[np.isfinite(samples)], n, n_s)


def _queues(links: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The forward queues of the links that queued, most first (at most MAX_QUEUES), from the flows' start."""
    if links.empty or not {"t", "link", "direction", "backlog_pkts"} <= set(links):
        return {}
    rows = links[(links["direction"] == "forward") & (links["t"] >= 0)].dropna(subset=["backlog_pkts"])
    peaks = rows.groupby("link")["backlog_pkts"].max().sort_values(ascending=False)
    out = {}
    for link in [str(k) for k, v in peaks.items() if v > 0][:MAX_QUEUES]:
        part = rows[rows["link"] == link].sort_values("t")
        t, q = _thin(part["t"].to_numpy(dtype=float), part["backlog_pkts"].to_numpy(dtype=float))
        out[link] = (t, q)
    return out


def run_data(run: Any, name: str | None = None) -> RunData:
    """A run (fastlab.results.api.Run) as its figures draw it."""
    refs = theory_refs(run)
    base: dict[str, float] = {}
    for ref in refs:
        if ref.get("flow") and ref.get("base_rtt_ms"):
            base.setdefault(str(ref["flow"]), float(ref["base_rtt_ms"]))
    trace = with_goodput(run.flows)
    flows = []
    for flow in run.summary.flows:
        rows = trace[trace["flow"] == flow.id] if not trace.empty and "flow" in trace else pd.DataFrame()
        if "t" in rows and len(rows):
            flows.append(_flow(flow, rows, base.get(flow.id)))
    duration = run.spec.get("duration_s") if isinstance(run.spec, dict) else None
    # each flow's summary figures with its RTT percentiles: the summary's, or computed from flows.csv for a
    # run made before the summary kept them (api.Run.delay)
    delay = run.delay()
    figures = [f.dump() | ({k: delay.at[f.id, k] for k in analysis.RTT_PERCENTILES} if f.id in delay.index else {})
               for f in run.summary.flows]
    return RunData(name or run.name, flows, _queues(run.links), chart_lines.lines(refs), run.faithful,
                   float(duration) if isinstance(duration, int | float) else None, figures)


def point_label(params: dict[str, Any]) -> str:
    """A sweep point's parameters in a legend: the last part of each name, its value (`buffer_bdp=0.5`)."""
    return ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in params.items()) or "repetitions"
