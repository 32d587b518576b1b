"""Delay accounting per flow: where each flow's round trip went (issue 53 item 1).

A flow's smoothed RTT sample (tcp_info's srtt, µs resolution) is split, sample by sample, into

- **propagation**: the configured one-way delays of every shaped link direction its data and ACKs cross;
- **serialization**: one packet's serialization at every such hop (linkemu measures its own per frame; a
  tc link's is a data segment, or an ACK, at its rate);
- **queueing**: what the links' models imposed -- waiting behind other packets, for tokens or a grant, and
  the model's extra latency (jitter, a MAC's) -- from linkemu's per-frame accounting (its `acct` report),
  or, on a tc link, its sampled backlog at its rate (Little's law: the qdisc's timing is the kernel's);
- **lateness**: what the emulators added beyond their models (linkemu's per-frame `sent - release`, and the
  socket wait of a policy that schedules from the moment it reads a frame);
- **hosts and datapath**: the rest -- the sending and receiving stacks, softirq, the switches and routers
  between the links, the ACK path, a tc link's late timers. It is measured as what is left, so it also
  carries the sampling error of the other parts (signed: a sample may read slightly below zero).

Each hop's figures are the means over the frames it sent in the window in which the flow's packets crossed
it -- its queueing, where the emulator accounted the flow's own frames (linkemu's flowacct.h, the run's
hop_flows.csv), over those alone: a packet acknowledged at time t was sent at t - rtt and left hop k at
about t - rtt + (the one-way delays up to and including k); linkemu's counters are cumulative (count and
mean), so the mean over any window is the difference of two interpolated totals.

What a flow's algorithm reads as queue is its RTT above its minimum: `read_as_queue = rtt - queueing - base`
is the part of that which is *not* a link's queue -- lateness and host delay above their share of the
minimum RTT (`base`: the kernel's minimum so far, but never below the path's propagation and a data
packet's serialization, which the handshake's minimum can be). FAST counts every such millisecond as queued
packets (alpha * MTU / C is its whole target), a loss-based flow's rate is window / RTT. The verdict judges its
median per flow (fastlab.measure.fidelity), and a delay-based flow's own baseRTT against the same floor.

Pure: DataFrames and the plan's hops in, a DataFrame and figures out; unit-tested on hand-made traces in
which a host delay of known size is injected and found.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from fastlab.define.schema import MTU_BYTES

ACK_IP_BYTES = 52  # a pure ACK: IPv4 20 + TCP 20 + timestamps 12 (a tc hop's ACK serialization)
# A hop's window with fewer frames than this borrows its mean from the WIDEN_S around it: one frame's
# figures are one packet's luck, not the link's state.
MIN_FRAMES = 2
WIDEN_S = 1.0
# The columns the accounting adds to flows.csv, ms (the chart "where the round trip went" stacks the first
# five; they add up to the RTT sample, `acct_rtt_ms`).
PARTS = ("propagation", "serialization", "queueing", "lateness", "hosts")
COLUMNS = tuple(f"acct_{p}_ms" for p in PARTS) + ("acct_rtt_ms", "acct_read_as_queue_ms", "acct_one_way_ms")
# `acct_one_way_ms`: the one-way delay the flow's data met in the emulated path -- each data hop's propagation,
# serialization, queueing and lateness, as linkemu timed each frame (a tc hop: its backlog at its rate) -- for the
# segment each RTT sample acknowledges. The hosts' share is not in it: no packet is timestamped at both ends, and
# only the round trip shows what the hosts add (`acct_hosts_ms`, both ways together).
QUANTILES = {"median": 0.5, "p99": 0.99}
# The kernel's smoothed RTT (tcp_rtt_estimator, RFC 6298): srtt += (sample - srtt) / SRTT_GAIN, one sample per ACK,
# an ACK per ACK_SEGMENTS full segments received (tcp_ack_snd_check: more than one full frame unacknowledged).
SRTT_GAIN = 8
ACK_SEGMENTS = 2
RECOVERY_STATES = ("recovery", "loss")  # tcp_info's ca_state while the cumulative ACK waits on a hole


@dataclass(frozen=True)
class Hop:
    """One shaped link direction a flow's packets cross, in path order."""

    link: str
    direction: str  # "forward" | "reverse"
    delay_ms: float
    rate_bps: int
    emulated: bool = True  # linkemu (measured per frame) or tc (sampled backlog, no lateness)
    # tbf, DOCSIS and trace policies schedule a frame from the moment linkemu reads it (sched.h): the time
    # it waited in the socket is then added to the link's delay, not part of it -- emulation error
    reads_late_count: bool = False


@dataclass(frozen=True)
class FlowRoute:
    """A flow's hops, its data's and its ACKs', each in the order its packets cross them."""

    flow: str
    data: tuple[Hop, ...]
    acks: tuple[Hop, ...]
    mtu_bytes: int = MTU_BYTES


@dataclass(frozen=True)
class HopSeries:
    """One hop's cumulative counters as arrays (time order), for windowed means."""

    t: np.ndarray
    totals: dict[str, tuple[np.ndarray, np.ndarray]]  # figure -> (count, count x mean)
    backlog_bytes: np.ndarray | None
    delay_ms: np.ndarray | None  # a schedule's delay in force (None: the configured one throughout)
    segments_per_frame: float | None = None  # segments it sent per frame over the run (None: not counted)
    sent_bytes: np.ndarray | None = None  # bytes it sent so far (cumulative, links.csv's tx_bytes)


# linkemu's per-frame means (count column, mean column), and the socket wait (per frame too)
_FIGURES = {"ser": ("acct_frames", "acct_ser_mean_us"), "queue": ("acct_frames", "acct_queue_mean_us"),
            "extra": ("acct_frames", "acct_extra_mean_us"), "late": ("acct_frames", "acct_late_mean_us"),
            "rx_wait": ("rx_wait_n", "rx_wait_mean_us")}


def _series(rows: pd.DataFrame) -> HopSeries:
    rows = rows.sort_values("t")
    t = rows["t"].to_numpy(dtype=float)
    totals = {}
    for name, (n_col, mean_col) in _FIGURES.items():
        if n_col in rows and mean_col in rows:
            n = rows[n_col].to_numpy(dtype=float)
            m = rows[mean_col].to_numpy(dtype=float)
            ok = ~(np.isnan(n) | np.isnan(m))
            if ok.sum() >= 2:
                totals[name] = (np.interp(t, t[ok], n[ok]), np.interp(t, t[ok], n[ok] * m[ok]))
    backlog = rows["backlog_bytes"].to_numpy(dtype=float) if "backlog_bytes" in rows else None
    delay = rows["schedule_delay_ms"].to_numpy(dtype=float) if "schedule_delay_ms" in rows else None
    if delay is not None and np.isnan(delay).all():
        delay = None
    per_frame = None
    if {"tx_pkts", "acct_frames"} <= set(rows.columns):
        sent = rows.dropna(subset=["tx_pkts", "acct_frames"])
        frames = float(sent["acct_frames"].iloc[-1] - sent["acct_frames"].iloc[0]) if len(sent) > 1 else 0.0
        if frames > 0:
            per_frame = float(sent["tx_pkts"].iloc[-1] - sent["tx_pkts"].iloc[0]) / frames
    sent = rows["tx_bytes"].to_numpy(dtype=float) if "tx_bytes" in rows else None
    if sent is not None and np.isnan(sent).all():
        sent = None
    return HopSeries(t, totals, backlog, delay, per_frame, sent)


def _window_means(series: HopSeries, figure: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The mean of a cumulative figure (µs) over each window [a_i, b_i) of the hop's sampled counters; NaN
    where the hop reports no such figure. A window with fewer than MIN_FRAMES frames takes the mean over
    WIDEN_S either side of it (NaN if that is empty too)."""
    if figure not in series.totals:
        return np.full(len(a), np.nan)
    n, s = series.totals[figure]

    def mean(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        dn = np.interp(hi, series.t, n) - np.interp(lo, series.t, n)
        ds = np.interp(hi, series.t, s) - np.interp(lo, series.t, s)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(dn > 0, ds / np.where(dn > 0, dn, 1.0), np.nan), dn

    out, dn = mean(a, b)
    thin = dn < MIN_FRAMES
    if thin.any():
        wide, wide_n = mean(a[thin] - WIDEN_S, b[thin] + WIDEN_S)
        out[thin] = np.where(wide_n >= MIN_FRAMES, wide, np.nan)
    return out


def _backlog_ms(series: HopSeries, rate_bps: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A tc hop's queueing over each window: its mean sampled backlog at its rate (Little's law), the
    nearest sample where none falls inside."""
    if series.backlog_bytes is None or rate_bps <= 0 or len(series.t) == 0:
        return np.zeros(len(a))
    backlog = np.nan_to_num(series.backlog_bytes)
    cum = np.concatenate([[0.0], np.cumsum(backlog)])
    lo, hi = np.searchsorted(series.t, a), np.searchsorted(series.t, b)
    nearest = backlog[np.clip(np.searchsorted(series.t, b), 0, len(backlog) - 1)]
    count = hi - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, (cum[hi] - cum[lo]) / np.where(count > 0, count, 1), nearest)
    return mean * 8 / rate_bps * 1000


def tc_bounds_ms(series: HopSeries, rate_bps: int, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The least and the most queueing (ms) a packet that reached a tc hop within [a_i, b_i) can have met, from
    its backlog B_k sampled at times t_k and the bytes it sent between samples, D_k (C its rate; all as ms at C).
    FIFO and conservation bound it, and nothing else is assumed of the queue between samples: a packet that
    arrived at tau in [t_k, t_k+1) found at least B_k - (tau - t_k) still queued, and what was ahead of it left
    within [tau, t_k+1) or was still there at t_k+1, so it waited at most D_k + B_k+1, and at most
    (t_k+1 - tau) + B_k+1. A busy link sends its rate between samples: its queue between two 50-ms samples is
    then known to 50 ms whatever the rate, and a host's delay below that cannot be told from it (lab 04's
    fast-pair, two FAST flows beside Reno on a tc uplink at 5 Mb/s, 2.4 ms a packet: the three flows' first
    windows made a queue of ~20 packets that came and went between two samples reading 0 and 2; its mean taken
    for the queue read 40-90 ms of host delay in start-up and 2-8 ms after; a model of the queue between samples
    as moving within its neighbours' range held for 6 runs and failed 7 of the next 10). Without the sent
    bytes, the bound from time alone. Outside the samples, the nearest sample's backlog both ways."""
    t = series.t
    q = (np.nan_to_num(series.backlog_bytes) * 8 / rate_bps * 1000 if series.backlog_bytes is not None
         and rate_bps > 0 else np.zeros(len(t)))
    if len(t) < 2:
        edge = np.full(len(a), q[0] if len(q) else 0.0)
        return edge, edge.copy()
    # bytes sent between two samples, ms at the rate (NaN where a sample lacks the counter: the time bound then)
    sent_ms = (np.diff(series.sent_bytes) * 8 / rate_bps * 1000
               if series.sent_bytes is not None and rate_bps > 0 else None)
    first = np.searchsorted(t, a, side="right") - 1  # the interval [t_k, t_k+1) holding a
    last = np.searchsorted(t, b, side="left") - 1  # ... and the one holding b's left side
    inside = (first >= 0) & (last < len(t) - 1) & (b > a)
    k0 = np.clip(first, 0, len(t) - 2)
    k1 = np.clip(np.maximum(last, first), 0, len(t) - 2)
    lo = np.full(len(a), np.inf)
    hi = np.full(len(a), -np.inf)
    for j in range(int((k1 - k0).max(initial=0)) + 1):
        k = np.minimum(k0 + j, len(t) - 2)
        use = k0 + j <= k1
        start, end = np.maximum(a, t[k]), np.minimum(b, t[k + 1])
        ahead = (t[k + 1] - start) * 1000
        if sent_ms is not None:
            ahead = np.where(np.isnan(sent_ms[k]), ahead, np.minimum(ahead, np.maximum(0.0, sent_ms[k])))
        hi = np.where(use, np.maximum(hi, ahead + q[k + 1]), hi)
        lo = np.where(use, np.minimum(lo, np.maximum(0.0, q[k] - (end - t[k]) * 1000)), lo)
    nearest = _backlog_ms(series, rate_bps, a, b)
    return np.where(inside, lo, nearest), np.where(inside, hi, nearest)


def _delay_ms(hop: Hop, series: HopSeries | None, at: np.ndarray) -> np.ndarray:
    """The hop's propagation delay at each time: a schedule's step in force, else the configured one."""
    if series is None or series.delay_ms is None:
        return np.full(len(at), hop.delay_ms)
    ok = ~np.isnan(series.delay_ms)
    idx = np.clip(np.searchsorted(series.t[ok], at, side="right") - 1, 0, ok.sum() - 1)
    return np.where(at >= series.t[ok][0], series.delay_ms[ok][idx], hop.delay_ms)


def _hop_parts(hop: Hop, s: HopSeries | None, a: np.ndarray, b: np.ndarray, nominal_ser: float) -> np.ndarray:
    """A hop's serialization, queueing (with the model's extra latency) and lateness over each window
    [a_i, b_i), ms, as rows of one array."""
    if hop.emulated and s is not None and "ser" in s.totals:
        ser = np.nan_to_num(_window_means(s, "ser", a, b) / 1000, nan=nominal_ser)
        queue = np.nan_to_num((_window_means(s, "queue", a, b) + _window_means(s, "extra", a, b)) / 1000)
        late = np.nan_to_num(_window_means(s, "late", a, b) / 1000)
        if hop.reads_late_count:
            late = late + np.nan_to_num(_window_means(s, "rx_wait", a, b) / 1000)
        return np.vstack([ser, queue, late])
    # a tc link (or an emulator without accounting): its backlog at its rate; its lateness is unmeasured
    queue = _backlog_ms(s, hop.rate_bps, a, b) if s is not None else np.zeros(len(a))
    return np.vstack([np.full(len(a), nominal_ser), queue, np.zeros(len(a))])


def _sampled(hop: Hop, s: HopSeries | None) -> bool:
    """A hop whose queueing is read from its sampled backlog (a tc link), not timed per frame."""
    return (s is not None and s.backlog_bytes is not None and hop.rate_bps > 0
            and not (hop.emulated and "ser" in s.totals))


def own_burst_ms(skb_segments: float | None, s: HopSeries | None, segment_ser_ms: float) -> float:
    """The wait of an RTT sample's last segment behind its own skb's earlier ones at a hop that sends them as
    separate frames, above the mean of those frames' queueing (ms). A sender times one RTT sample per skb, from
    its send to the ACK of its last segment; an upstream emulator passes the skb's k segments on as k frames, and
    at the next hop the i-th waits (i - 1) segment times behind the others: the frames' mean queueing holds
    (k - 1) / 2 of them, the sample all k - 1. So (k - k_hop) / 2 segment times, k the segments per frame where
    the flow's data enter the emulated path (its sender's skbs) and k_hop at this hop. Two FAST flows on the
    simple 3 Mb/s link: k = 2 (tcp_min_tso_segs), 4.0 ms a segment, and FAST read 2.0 ms as queue that no link
    queued (its budget at alpha 1: 1.0 ms), which is this; 0.3 ms at lab 02's 20 Mb/s."""
    if skb_segments is None or s is None or s.segments_per_frame is None:
        return 0.0
    return max(0.0, skb_segments - s.segments_per_frame) / 2 * segment_ser_ms


# (link, direction, flow) -> (its frames' queueing, the least of it over its frames, and over those with data)
FlowSeries = dict[tuple[str, str, str], tuple[HopSeries, float, float | None]]


def cumulative(rows: pd.DataFrame, count: str, mean: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """linkemu's cumulative (count, mean) columns as (t, count, count x mean) in time order, over the rows that
    have both: the difference of two interpolated totals gives the mean over any window. None under 2 rows."""
    rows = rows.dropna(subset=[count, mean]).sort_values("t")
    if len(rows) < 2:
        return None
    n = rows[count].to_numpy(dtype=float)
    return rows["t"].to_numpy(dtype=float), n, n * rows[mean].to_numpy(dtype=float)


def resolve_hop_flows(samples: pd.DataFrame, servers: dict[tuple[str, int], str]) -> pd.DataFrame:
    """linkemu's per-flow samples (fastlab.net.shaping.hop_flow_samples: a 4-tuple `key`, "saddr:sport>daddr:dport")
    with each key's flow id (`flow`) in place of the key: the flow whose receiver (address, port) is the key's
    destination (its data) or source (its ACKs), `servers`; other keys (a ping, a controller) left out."""
    columns = ["t", "link", "direction", "flow", "frames", "queue_mean_us", "queue_min_us", "data_min_us"]
    if samples.empty or "key" not in samples:
        return pd.DataFrame(columns=columns)

    def flow_of(key: str) -> str | None:
        ends = [end.rpartition(":") for end in str(key).split(">")]
        if len(ends) != 2 or not all(port.isdigit() for _, _, port in ends):
            return None
        (src, _, sport), (dst, _, dport) = ends
        return servers.get((dst.strip("[]"), int(dport))) or servers.get((src.strip("[]"), int(sport)))

    named = samples.assign(flow=samples["key"].map(flow_of)).dropna(subset=["flow"])
    return named.reindex(columns=columns).reset_index(drop=True)


def flow_series(hop_flows: pd.DataFrame | None) -> FlowSeries:
    """Each flow's frames at each hop as a cumulative series (its mean queueing over any window, as HopSeries's
    "queue") and the least queueing any of them met over the run, and any that carried data (ms; None where
    none did)."""
    out: FlowSeries = {}
    if hop_flows is None or hop_flows.empty:
        return out
    # unsorted groups: the order is not needed, and sorting them (an int64 argsort of the group ids) crashed the
    # stock-kernel lane's Python once under QEMU's emulated CPU (a segmentation fault in pandas' groupby, CI of
    # 2c9e46e; the same test passed on a rerun)
    for (link, direction, flow), rows in hop_flows.groupby(["link", "direction", "flow"], sort=False):
        rows = rows.dropna(subset=["frames", "queue_mean_us"]).sort_values("t")
        counted = cumulative(rows, "frames", "queue_mean_us")
        if counted is None:
            continue
        t, n, total = counted
        least = float(rows["queue_min_us"].iloc[-1]) / 1000
        data = rows["data_min_us"].iloc[-1] if "data_min_us" in rows else None
        least_data = float(data) / 1000 if data is not None and np.isfinite(data) else None
        out[(str(link), str(direction), str(flow))] = (HopSeries(t, {"queue": (n, total)}, None, None), least,
                                                       least_data)
    return out


def hop_series(links: pd.DataFrame, hops: set[tuple[str, str]]) -> dict[tuple[str, str], HopSeries]:
    """links.csv rows of each hop as cumulative series (the hops a run's flows cross)."""
    out: dict[tuple[str, str], HopSeries] = {}
    if links.empty or not {"link", "direction", "t"} <= set(links.columns):
        return out
    for (link, direction), rows in links.groupby(["link", "direction"]):
        if (link, direction) in hops and len(rows) >= 2:
            out[(str(link), str(direction))] = _series(rows)
    return out


def srtt_samples(rows: pd.DataFrame) -> np.ndarray | None:
    """The RTT samples the kernel took in each row's interval: one per ACK (tcp_ack -> tcp_rtt_estimator), an
    ACK for every ACK_SEGMENTS full segments delivered (delayed ACKs), from the rise of bytes_acked. None
    without bytes_acked and the MSS: the rows are then taken as the srtt's own samples."""
    if not {"bytes_acked", "mss_bytes"} <= set(rows.columns):
        return None
    acked = rows["bytes_acked"].to_numpy(dtype=float)
    mss = rows["mss_bytes"].to_numpy(dtype=float)
    if np.isnan(acked).any() or not (np.nan_to_num(mss) > 0).any():
        return None
    mss = np.where(mss > 0, mss, np.nanmax(mss))
    n = np.maximum(0.0, np.diff(acked, prepend=acked[0])) / (ACK_SEGMENTS * mss)
    if "ca_state" not in rows:
        return n
    # In loss recovery the cumulative ACK waits for the hole while SACKs go on timing the segments they cover
    # (tcp_sacktag_write_queue's sack_rtt_us): samples the rise of bytes_acked does not show, and the ACK that
    # fills the hole is one sample, not the recovery's many segments (lab 04's fast-one: 26 segments in the row
    # that ended a recovery, the srtt barely moved, and taken for 13 samples the queue's view fell 33 ms ahead of
    # it, read as 20 ms of host delay). Those rows take the flow's usual samples per row instead.
    held = rows["ca_state"].astype(str).str.lower().isin(RECOVERY_STATES).to_numpy()
    after = np.concatenate([[False], held[:-1]]) & ~held
    usual = n[~held & ~after & (n > 0)]
    if not held.any() or not len(usual):
        return n
    typical = float(np.median(usual))
    return np.where(held, typical, np.where(after, np.minimum(n, typical), n))


def srtt_view(part: np.ndarray, samples: np.ndarray | None) -> np.ndarray:
    """A part of the RTT as the kernel's srtt holds it: the srtt moves 1/SRTT_GAIN of the way to each sample
    (RFC 6298), so after n samples of the row's mean it has moved 1 - (1 - 1/SRTT_GAIN)^n of the way (none in a
    row without an ACK). A slow flow's srtt spans many rows (1 Mb/s: an ACK every 24 ms, 8 of them 190 ms) and
    lags a queue that moves within them; the hops' means per row do not."""
    if samples is None or len(part) < 2:
        return part
    keep = (1 - 1 / SRTT_GAIN) ** samples
    out = np.empty(len(part))
    out[0] = part[0]
    for i in range(1, len(part)):
        out[i] = part[i] + keep[i] * (out[i - 1] - part[i])
    return out


def account_flow(route: FlowRoute, samples: pd.DataFrame, series: dict[tuple[str, str], HopSeries],
                 own: FlowSeries | None = None) -> pd.DataFrame:
    """The flow's RTT samples split into PARTS (ms), one row per sample that has an RTT, with its time and
    `acct_read_as_queue_ms` (rtt - queueing - the flow's minimum RTT so far). `samples` are the flow's rows
    of flows.csv (t, srtt_ms, min_rtt_ms). A hop that accounted the flow's own frames (`own`, flow_series)
    gives their queueing, not the mean of every flow's: on a slow link each flow meets its own place in the
    queue (two FAST flows on the 3 Mb/s simple link, 4 ms a segment)."""
    rows = samples.dropna(subset=["srtt_ms"]).sort_values("t")
    rows = rows[rows["srtt_ms"] > 0]
    if len(rows) < 2:
        return pd.DataFrame(columns=["t", *COLUMNS])
    t = rows["t"].to_numpy(dtype=float)
    rtt = rows["srtt_ms"].to_numpy(dtype=float)
    start = np.concatenate([[t[0] - (t[1] - t[0])], t[:-1]])  # each sample covers the interval before it
    prop = np.zeros(len(t))
    ser, queue, late = (np.zeros(len(t)) for _ in range(3))
    slack_lo, slack_hi = np.zeros(len(t)), np.zeros(len(t))  # what tc hops' samples leave open, ms
    offset = np.zeros(len(t))  # one-way delays so far along the way there and back, ms
    one_way = np.zeros(len(t))  # the data's way alone (offset once the last data hop is taken)
    first = series.get((route.data[0].link, route.data[0].direction)) if route.data else None
    skb_segments = first.segments_per_frame if first is not None and route.data[0].emulated else None
    for hop, is_ack in [(h, False) for h in route.data] + [(h, True) for h in route.acks]:
        s = series.get((hop.link, hop.direction))
        size = ACK_IP_BYTES if is_ack else route.mtu_bytes
        nominal_ser = size * 8 / hop.rate_bps * 1000 if hop.rate_bps > 0 else 0.0
        # the flow's packet left this hop (was sent on by its emulator) at about t - rtt + offset, the
        # offset taking the hop's own delay, serialization, queueing and lateness too: found in two passes
        d_ms = _delay_ms(hop, s, t - (rtt - offset) / 1000)
        parts = np.zeros((3, len(t)))
        mine = (own or {}).get((hop.link, hop.direction, route.flow))
        for _pass in range(2):
            at = offset + d_ms + parts.sum(axis=0)
            a, b = start - (rtt - at) / 1000, t - (rtt - at) / 1000
            parts = _hop_parts(hop, s, a, b, nominal_ser)
            if mine is not None:
                queued = _window_means(mine[0], "queue", a, b) / 1000
                parts[1] = np.where(np.isnan(queued), parts[1], queued)
        if _sampled(hop, s):
            lo, hi = tc_bounds_ms(s, hop.rate_bps, a, b)  # type: ignore[arg-type]  # _sampled: s is not None
            slack_lo += np.minimum(0.0, lo - parts[1])
            slack_hi += np.maximum(0.0, hi - parts[1])
        if not is_ack:
            parts[1] += own_burst_ms(skb_segments, s, nominal_ser)
        offset = offset + d_ms + parts.sum(axis=0)
        if not is_ack:
            one_way = offset.copy()
        prop += d_ms
        ser += parts[0]
        queue += parts[1]
        late += parts[2]
    acks = srtt_samples(rows)
    prop, ser, queue, late = (srtt_view(part, acks) for part in (prop, ser, queue, late))
    if slack_lo.any() or slack_hi.any():
        # a tc hop's queue is known only within its samples' bounds: the RTT's rest is the hosts' only beyond them
        queue = np.clip(rtt - prop - ser - late, queue + srtt_view(slack_lo, acks), queue + srtt_view(slack_hi, acks))
    min_rtt = rows["min_rtt_ms"].to_numpy(dtype=float) if "min_rtt_ms" in rows else np.full(len(t), np.nan)
    min_rtt = np.fmin.accumulate(np.where(np.isnan(min_rtt), rtt, np.fmin(min_rtt, rtt)))
    # the kernel's minimum may be the handshake's (a SYN serializes in no time): a data packet's RTT, which is
    # what a delay-based algorithm takes for its base, is never below its propagation and serialization
    # (lab 02 at 20 Mb/s: 0.6 ms of a segment's serialization read as queue otherwise)
    base = np.maximum(min_rtt, prop + ser)
    hosts = rtt - prop - ser - queue - late
    out = pd.DataFrame({"t": t, "acct_propagation_ms": prop, "acct_serialization_ms": ser,
                        "acct_queueing_ms": queue, "acct_lateness_ms": late, "acct_hosts_ms": hosts,
                        "acct_rtt_ms": rtt, "acct_read_as_queue_ms": rtt - queue - base,
                        "acct_one_way_ms": one_way})
    return out.round({c: 4 for c in COLUMNS})  # t kept exact: flows.csv's samples are matched on it


def _quantiles(values: pd.Series) -> dict[str, float | None]:
    v = values.dropna()
    return {name: (round(float(v.quantile(q)), 4) if not v.empty else None) for name, q in QUANTILES.items()}


def flow_figures(route: FlowRoute, acct: pd.DataFrame, min_rtt_ms: float | None) -> dict[str, Any]:
    """summary.json's `delay_accounting` of one flow: each part's median and p99 over its samples (ms), what
    it read as queue that no link queued, and the hosts' floor (the part of its minimum RTT that is neither
    propagation nor serialization: what the hosts add to every packet, which the flow takes for path)."""
    out: dict[str, Any] = {"samples": int(len(acct))}
    for part in (*PARTS, "rtt", "read_as_queue"):
        out[f"{part}_ms"] = _quantiles(acct[f"acct_{part}_ms"]) if len(acct) else {k: None for k in QUANTILES}
    floor = None
    if min_rtt_ms is not None and len(acct):
        floor = round(float(min_rtt_ms) - float(acct["acct_propagation_ms"].median())
                      - float(acct["acct_serialization_ms"].median()), 4)
    out["hosts_floor_ms"] = floor
    out["hops_unmeasured"] = [f"{h.link} ({h.direction})" for h in (*route.data, *route.acks) if not h.emulated]
    return out


@dataclass(frozen=True)
class RunSeries:
    """A run's hop series (links.csv, hop_series) and its flows' own series at the emulated hops (hop_flows.csv,
    flow_series), built once: the accounting and the base check's floors (fastlab.measure.floors) read both."""

    hops: dict[tuple[str, str], HopSeries]
    own: FlowSeries


def run_series(routes: list[FlowRoute], links: pd.DataFrame, hop_flows: pd.DataFrame | None = None) -> RunSeries:
    """The series of every hop the routes cross, and the emulators' per-flow figures where the run has them."""
    return RunSeries(hop_series(links, {(h.link, h.direction) for r in routes for h in (*r.data, *r.acks)}),
                     flow_series(hop_flows))


def per_route(routes: list[FlowRoute], flows: pd.DataFrame) -> list[tuple[FlowRoute, pd.DataFrame]]:
    """Each route with its flow's rows of flows.csv."""
    return [(route, flows[flows["flow"] == route.flow] if not flows.empty and "flow" in flows else pd.DataFrame())
            for route in routes]


def account(routes: list[FlowRoute], flows: pd.DataFrame, links: pd.DataFrame,
            hop_flows: pd.DataFrame | None = None, series: RunSeries | None = None) -> dict[str, pd.DataFrame]:
    """Every flow's accounting (account_flow), by flow id; flows without RTT samples get an empty frame.
    `hop_flows`: the emulators' per-flow figures (resolve_hop_flows), where the run has them; `series`: both as
    run_series built them (then `links` and `hop_flows` are not read again)."""
    series = series or run_series(routes, links, hop_flows)
    return {route.flow: (account_flow(route, rows, series.hops, series.own) if "srtt_ms" in rows
                         else pd.DataFrame(columns=["t", *COLUMNS]))
            for route, rows in per_route(routes, flows)}


def with_columns(flows: pd.DataFrame, accounts: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """flows.csv with the accounting's COLUMNS beside each sample (NaN where a sample had no RTT)."""
    if flows.empty or not accounts:
        return flows
    parts = [acct.assign(flow=flow) for flow, acct in accounts.items() if len(acct)]
    if not parts:
        return flows
    extra = pd.concat(parts, ignore_index=True)
    merged = flows.drop(columns=[c for c in COLUMNS if c in flows]).merge(extra, on=["flow", "t"], how="left")
    return merged
