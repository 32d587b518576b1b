"""Summaries of a run from its traces: pure functions of DataFrames, unit-tested.

Conventions: link byte counters and capacities count IP bytes (L2 framing is not charged, as
in the shaping layer); utilization is measured over the window in which any flow was active.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from fastlab.base.record import Summary


@dataclass(frozen=True)
class FlowInfo:
    id: str
    src: str
    dst: str
    cc: str
    start_s: float
    stop_s: float


def jain_index(values: list[float]) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 is perfectly fair, 1/n is one flow hogging."""
    if not values:
        return 1.0
    squares = sum(v * v for v in values)
    return 1.0 if squares == 0 else sum(values) ** 2 / (len(values) * squares)


# z of a two-sided 95 % interval (the normal distribution's 0.975 quantile)
Z_95 = 1.959963984540054


def share_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The 95 % interval of a share (`successes` of `trials` independent draws): Wilson's score interval.

    Why Wilson and not p +- z sqrt(p(1-p)/n): with 10 draws and 9 or 10 successes the normal form gives an
    interval past 1 or of width 0; Wilson's stays inside [0, 1] and keeps its coverage near 95 % at small n
    (E. B. Wilson, J. Am. Stat. Assoc. 22, 1927). Pure; ValueError on counts that are no counts.
    """
    if isinstance(successes, bool) or isinstance(trials, bool) or not 0 <= successes <= trials or trials < 1:
        raise ValueError(f"share_interval: needs 0 <= successes <= trials and trials >= 1, got {successes} of {trials}")
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * np.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, float(centre - half)), min(1.0, float(centre + half))


def add_rates(links: pd.DataFrame) -> pd.DataFrame:
    """Transmitted rate per sample interval, per link and direction."""
    if links.empty:
        return links
    links = links.sort_values("t").copy()
    grouped = links.groupby(["link", "direction"])
    links["tx_mbps"] = (grouped["tx_bytes"].diff() * 8 / 1e6 / grouped["t"].diff()).fillna(0.0)
    return links


def counter_delta(rows: pd.DataFrame, column: str, t0: float, t1: float) -> tuple[float, float]:
    """Increase of a cumulative counter between the samples nearest t0 and t1, and the span."""
    rows = rows.dropna(subset=[column])
    if rows.empty:
        return 0.0, 0.0
    first = rows.iloc[(rows["t"] - t0).abs().argmin()]
    last = rows.iloc[(rows["t"] - t1).abs().argmin()]
    return float(last[column] - first[column]), float(last["t"] - first["t"])


def steady_goodput_mbps(samples: pd.DataFrame, t_from: float) -> float:
    """Sum over flows of the bytes each acked from `t_from` to its last sample, over that span, Mb/s: the
    benches' steady-state goodput (the start-up left out). ValueError when no flow has two samples from
    `t_from` on: that is no measurement, and 0 Mb/s would read as one."""
    total, measured = 0.0, False
    steady = samples[samples["t"] >= t_from] if not samples.empty else samples
    for _flow, rows in (steady.groupby("flow") if not steady.empty else ()):
        span = float(rows["t"].iloc[-1] - rows["t"].iloc[0])
        if span > 0:
            measured = True
            total += float(rows["bytes_acked"].iloc[-1] - rows["bytes_acked"].iloc[0]) * 8 / 1e6 / span
    if not measured:
        raise ValueError(f"no flow has two samples from {t_from:g} s on: no steady goodput to measure")
    return total


# summary.json's RTT percentiles of a flow (FlowFigures.rtt_p50_ms ...): field -> percentile
RTT_PERCENTILES = {"rtt_p50_ms": 50.0, "rtt_p95_ms": 95.0, "rtt_p99_ms": 99.0}


def rtt_samples(rows: pd.DataFrame) -> pd.Series:
    """A flow's RTT samples as its percentiles count them: flows.csv's `srtt_ms` (tcp_info's smoothed RTT,
    one sample per trace interval, µs resolution) over the flow's whole trace -- from its first sample after
    it started to its last before it stopped, slow start included (the summary has no warm-up: its mean RTT
    is over the same span) -- leaving out what is no measurement: a missing or non-finite value, and 0 (the
    kernel's srtt before the first ACK). Empty when the trace has no srtt_ms column (a recording trimmed to
    what its checkpoints read)."""
    if rows.empty or "srtt_ms" not in rows:
        return pd.Series(dtype=float)
    values = pd.to_numeric(rows["srtt_ms"], errors="coerce").astype(float)
    return values[np.isfinite(values) & (values > 0)]


def percentiles(values: Any, fields: dict[str, float]) -> dict[str, float | None]:
    """`fields` (name -> percentile) of `values`, ms, 4 decimals: numpy's linear interpolation between the two
    nearest samples (the default method; with n samples, p99 of fewer than 100 lies between the two largest).
    Non-finite values are left out; None each when none is left."""
    array = np.asarray(values, dtype=float)
    array = array[np.isfinite(array)]
    if not len(array):
        return dict.fromkeys(fields)
    return {name: round(float(np.percentile(array, q)), 4) for name, q in fields.items()}


def rtt_percentiles(rows: pd.DataFrame) -> dict[str, float | None]:
    """The flow's RTT percentiles (RTT_PERCENTILES) over its `rtt_samples` (`percentiles`)."""
    return percentiles(rtt_samples(rows).to_numpy(), RTT_PERCENTILES)


# summary.json's one-way delay percentiles of a flow's data through the emulated path (FlowFigures.owd_p50_ms ...),
# over the delay accounting's `acct_one_way_ms` (fastlab.measure.accounting: one value per RTT sample)
OWD_PERCENTILES = {"owd_p50_ms": 50.0, "owd_p95_ms": 95.0, "owd_p99_ms": 99.0}


def one_way_percentiles(rows: pd.DataFrame) -> dict[str, float | None]:
    """The flow's one-way delay percentiles (OWD_PERCENTILES) over its accounted samples' `acct_one_way_ms`
    (None each when the trace has none: a run made before it, or a flow without RTT samples)."""
    if rows.empty or "acct_one_way_ms" not in rows:
        return dict.fromkeys(OWD_PERCENTILES)
    return percentiles(pd.to_numeric(rows["acct_one_way_ms"], errors="coerce").to_numpy(), OWD_PERCENTILES)


def flow_summary(info: FlowInfo, samples: pd.DataFrame, done: dict[str, Any] | None) -> dict[str, Any]:
    rows = samples[samples["flow"] == info.id] if not samples.empty else samples
    if done is not None and done["t"] > done["start"]:
        throughput = done["bytes_acked"] * 8 / 1e6 / (done["t"] - done["start"])
    elif not rows.empty:
        acked, span = counter_delta(rows, "bytes_acked", float(rows["t"].min()), float(rows["t"].max()))
        throughput = acked * 8 / 1e6 / span if span else 0.0
    else:
        throughput = 0.0
    mins = rows["min_rtt_ms"].dropna() if not rows.empty else pd.Series(dtype=float)
    min_rtt = done["min_rtt_ms"] if done else (float(mins.min()) if not mins.empty else None)
    return {"id": info.id, "src": info.src, "dst": info.dst, "cc": info.cc,
            "start_s": info.start_s, "stop_s": info.stop_s,
            "throughput_mbps": round(throughput, 4),
            "mean_rtt_ms": round(float(rows["srtt_ms"].mean()), 4) if not rows.empty else None,
            "min_rtt_ms": round(min_rtt, 4) if min_rtt is not None else None,
            **rtt_percentiles(rows),
            "mean_cwnd_pkts": round(float(rows["cwnd_pkts"].mean()), 2) if not rows.empty else None,
            "retransmits": int(done["retransmits"]) if done else
            (int(rows["retransmits"].max()) if not rows.empty else 0),
            "samples": int(len(rows))}


def link_summary(link_id: str, capacity_mbps: float, links: pd.DataFrame, t0: float, t1: float) -> dict[str, Any]:
    """Forward-direction figures over [t0, t1] plus both directions' drop counts."""
    out: dict[str, Any] = {"id": link_id, "capacity_mbps": capacity_mbps}
    for direction in ("forward", "reverse"):
        rows = links[(links["link"] == link_id) & (links["direction"] == direction)] if not links.empty else links
        window = rows[(rows["t"] >= t0) & (rows["t"] <= t1)] if not rows.empty else rows
        sent, span = counter_delta(rows, "tx_bytes", t0, t1) if not rows.empty else (0.0, 0.0)
        queue_drops = int(rows["queue_drops"].max()) if not rows.empty else 0
        loss_drops = int(rows["loss_drops"].max()) if not rows.empty else 0
        # the AQM's (linkemu's or the kernel qdisc's aqm_drops / aqm_marks; none on a link without one)
        aqm_drops, aqm_marks = (int(rows[c].max()) if not rows.empty and c in rows and rows[c].notna().any() else 0
                                for c in ("aqm_drops", "aqm_marks"))
        arrivals = int(rows["rx_pkts"].max()) if not rows.empty and rows["rx_pkts"].notna().any() else None
        figures = {"queue_drops": queue_drops, "loss_drops": loss_drops, "aqm_drops": aqm_drops, "aqm_marks": aqm_marks,
                   "drops": queue_drops + loss_drops + aqm_drops,
                   "arrivals_pkts": arrivals,
                   "mean_backlog_pkts": round(float(window["backlog_pkts"].mean()), 3) if not window.empty else 0.0,
                   "max_backlog_pkts": int(window["backlog_pkts"].max()) if not window.empty else 0,
                   "utilization": round(sent * 8 / 1e6 / (capacity_mbps * span), 4) if span else 0.0}
        if direction == "forward":
            out.update(figures)
        else:
            out["reverse"] = figures
    return out


def summarize(flows: list[FlowInfo], flow_samples: pd.DataFrame, done: dict[str, dict[str, Any]],
              link_samples: pd.DataFrame, capacities: dict[str, float]) -> Summary:
    """summary.json's measured part (fastlab.base.record.Summary): each flow, each link over the flows'
    active window, Jain's index of the goodputs and that window."""
    per_flow = [flow_summary(f, flow_samples, done.get(f.id)) for f in flows]
    t0 = min(f.start_s for f in flows)
    t1 = max(f.stop_s for f in flows)
    per_link = [link_summary(link, cap, link_samples, t0, t1) for link, cap in capacities.items()]
    return Summary.model_validate({"flows": per_flow, "links": per_link,
                                   "jain_index": round(jain_index([f["throughput_mbps"] for f in per_flow]), 4),
                                   "active_window_s": [t0, t1]})
