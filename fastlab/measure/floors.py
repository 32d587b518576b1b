"""The base check's zero (fastlab.measure.weighing.base_reasons): the least queue a delay-based flow's baseRTT
can have held on its path, so that what its base holds beyond propagation, serialization and that queue is a
delay the links did not impose -- the hosts' at its start, taken for path.

- Where an emulator accounted the flow's own frames at every emulated hop (linkemu's flowacct.h, the run's
  hop_flows.csv): the least queueing its own data met at each hop (own_floor_ms), and at a tc hop the most
  its backlog samples and sent bytes allow it to have held when the packet that set the base crossed it (the
  base's time from the algorithm's own reports: base_windows, tc_base_floor_ms).
- Else the least backlog the path held while the flow ran (queue_floor_ms).

Pure, as fastlab.measure.accounting, whose hop series it reads.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fastlab.measure.accounting import (
    FlowRoute,
    FlowSeries,
    HopSeries,
    RunSeries,
    own_burst_ms,
    per_route,
    run_series,
    tc_bounds_ms,
)


def own_floor_ms(route: FlowRoute, series: dict[tuple[str, str], HopSeries], own: FlowSeries,
                 base_sent: tuple[float, float] | None = None) -> float | None:
    """The least queue the flow's own RTT samples can have met: at each data hop the least over its frames that
    carried data there (flowacct.h: a SYN that found the queue empty is no RTT sample, and the data behind it may
    never find it so -- two FAST flows started together on the 3 Mb/s simple link: the second's first window
    waits 35 ms behind the first's, and the queue never drains again), at each ACK hop over its frames, summed.
    An RTT sample times its skb's last segment, and where an upstream hop sent the skb's k segments as frames of
    their own the least frame may be an skb's first: the sample's floor then lies up to (k - k_hop) segment
    times higher (own_burst_ms's whole wait, not its mean), and the floor is taken at that top -- a baseRTT
    above it is above anything the flow's packets met (two FAST flows on the simple link: the late flow's base
    4.2-4.4 ms above its least frame, 0.7-0.9 above the top; the others' 3.0-3.7 below the top). A sum of
    least values, which one packet meets together only on a path with one queue: elsewhere it lies below the
    least any packet met. A tc hop accounts no flow's frames: its share is the most it can have queued when the
    packet that set the flow's baseRTT crossed it (`base_sent`, base_windows; tc_base_floor_ms). None unless every
    emulated hop accounted the flow, and the baseRTT's time is known where a tc hop is crossed."""
    first = series.get((route.data[0].link, route.data[0].direction)) if route.data else None
    skb_segments = first.segments_per_frame if first is not None and route.data[0].emulated else None
    total = 0.0
    if any(not h.emulated for h in (*route.data, *route.acks)):
        tc = tc_base_floor_ms(route, series, base_sent) if base_sent is not None else None
        if tc is None:
            return None
        total += tc
    for hop, is_ack in [(h, False) for h in route.data] + [(h, True) for h in route.acks]:
        if not hop.emulated:
            continue
        mine = own.get((hop.link, hop.direction, route.flow))
        if mine is None:
            return None
        if is_ack or mine[2] is None:
            total += mine[1]
            continue
        segment_ms = route.mtu_bytes * 8 / hop.rate_bps * 1000 if hop.rate_bps > 0 else 0.0
        total += mine[2] + 2 * own_burst_ms(skb_segments, series.get((hop.link, hop.direction)), segment_ms)
    return round(total, 4)


def base_windows(own_rtts: dict[str, pd.DataFrame]) -> dict[str, tuple[float, float]]:
    """When the packet that set each flow's last baseRTT was sent, as a span (s), from its algorithm's own RTTs
    (t, avg_rtt_ms, base_rtt_ms: fastlab.measure.verdict.algorithm_rtts): the algorithm first reports its final
    baseRTT at t_i, from the ACKs since its report before (t_{i-1}; FAST updates once an RTT), so the packet left
    between t_{i-1} - 2 avgRTT (an update may take an RTT's ACKs, each an RTT after its send) and t_i - baseRTT.
    Not the kernel's minimum: a handshake's SYN on the empty path sets that, while a FAST flow joining another's
    standing queue never meets the empty path with data (lab 04's fast-pair: min_rtt 118.7 ms, FAST's base
    21 ms above it)."""
    out: dict[str, tuple[float, float]] = {}
    for flow, rows in own_rtts.items():
        if rows.empty:
            continue
        t = rows["t"].to_numpy(dtype=float)
        base = rows["base_rtt_ms"].to_numpy(dtype=float)
        avg = rows["avg_rtt_ms"].to_numpy(dtype=float)
        i = int(np.argmax(base <= base[-1] + 1e-9))
        before = t[i - 1] if i > 0 else t[i]
        out[flow] = (before - 2 * max(avg[i], base[i]) / 1000, t[i] - base[i] / 1000)
    return out


def tc_base_floor_ms(route: FlowRoute, series: dict[tuple[str, str], HopSeries],
                     sent: tuple[float, float]) -> float | None:
    """The most queue the flow's tc hops can have held, summed, for the packet that set its baseRTT (sent within
    `sent`, base_windows; each hop reached after the configured delays before it), ms: tc_bounds_ms's top over
    that span. A tc hop's samples cannot rule out more, and a baseRTT above propagation, serialization and this
    is above anything its links can have held. A FIFO that a loss-based flow keeps from emptying is the path's
    physics for a FAST flow that joins it, and so is the start-up burst of flows that start together on a slow
    link: lab 04's fast-pair, two FAST flows and a Reno flow through a tc uplink at 5 Mb/s, each sending its
    first window at once: a FAST flow's base 17-27 ms above the empty path, set in its first round trip by ~20
    packets that came and went between two samples (reading 0 and 2 while the link sent 20), or while the
    backlog was not sampled at all (1.35 s between the idle pings' last sample and the flows' first). None where
    a tc hop has no sampled backlog."""
    total = 0.0
    reach = 0.0
    for hop in (*route.data, *route.acks):
        if not hop.emulated:
            s = series.get((hop.link, hop.direction))
            if s is None or s.backlog_bytes is None or hop.rate_bps <= 0 or len(s.t) == 0:
                return None
            _, top = tc_bounds_ms(s, hop.rate_bps, np.array([sent[0] + reach]), np.array([sent[1] + reach]))
            total += float(top[0])
        reach += hop.delay_ms / 1000
    return round(total, 4)


def queue_floor_ms(route: FlowRoute, samples: pd.DataFrame, series: dict[tuple[str, str], HopSeries]) -> float | None:
    """The least queue the flow's path held while the flow ran, ms: the sum over its hops (data, then ACKs)
    of each one's sampled backlog at its rate, each read when a packet sent at the same moment would reach it
    (its configured delays along the way), at the least of the hops' reports between the flow's first packet
    and its last sample. A delay-based algorithm's baseRTT is its least RTT sample, so it lies above the
    path's propagation, serialization and this floor by what the hosts added to that sample -- or by a delay
    it met and took for path (weighing.base_reasons). Instantaneous backlogs, not the accounting's per-window
    means: a slow-start burst's frames meet 0 to its whole length in queue, their mean about half of it, and
    the least of such means put the floor 1.2-2.8 ms above the empty queue lab 02's flows started on (quiet
    runs read their baseRTT that far *below* the floor, and a run whose flow took 2-4 ms of host delay for path
    passed a 3-ms budget). None without RTT samples or a hop with sampled backlogs."""
    rows = samples.dropna(subset=["srtt_ms"]) if "srtt_ms" in samples else pd.DataFrame()
    rows = rows[rows["srtt_ms"] > 0].sort_values("t") if len(rows) else rows
    hops: list[tuple[HopSeries, np.ndarray, float]] = []  # (series, backlog ms, when a packet reaches it, s)
    reach = 0.0
    for h in (*route.data, *route.acks):
        s = series.get((h.link, h.direction))
        if s is not None and s.backlog_bytes is not None and h.rate_bps > 0:
            hops.append((s, np.nan_to_num(s.backlog_bytes) * 8 / h.rate_bps * 1000, reach))
        reach += h.delay_ms / 1000
    if rows.empty or not hops:
        return None
    first = float(rows["t"].iloc[0]) - float(rows["srtt_ms"].iloc[0]) / 1000  # the flow's first packet left
    last = float(rows["t"].iloc[-1])
    grid = np.unique(np.concatenate([s.t[(s.t >= first) & (s.t <= last)] for s, _, _ in hops]))
    if len(grid) == 0:
        return None
    total = np.zeros(len(grid))
    for s, backlog_ms, at in hops:
        total += np.interp(grid + at, s.t, backlog_ms)
    return round(float(total.min()), 4)


def queue_floors(routes: list[FlowRoute], flows: pd.DataFrame, links: pd.DataFrame,
                 hop_flows: pd.DataFrame | None = None,
                 base_sent: dict[str, tuple[float, float]] | None = None,
                 series: RunSeries | None = None) -> dict[str, float]:
    """Every flow's least queue, by flow id (the base check's zero): what its own packets met where every
    emulated hop accounted them and, at a tc hop, what it held when the flow's baseRTT was taken (`base_sent`,
    base_windows) -- own_floor_ms -- else what its path held while it ran (queue_floor_ms); none where it has
    neither. `series`: the run's hop and per-flow series as accounting.run_series built them (then `links` and
    `hop_flows` are not read again)."""
    series = series or run_series(routes, links, hop_flows)
    out: dict[str, float] = {}
    for route, rows in per_route(routes, flows):
        floor = own_floor_ms(route, series.hops, series.own, (base_sent or {}).get(route.flow))
        floor = floor if floor is not None else queue_floor_ms(route, rows, series.hops)
        if floor is not None:
            out[route.flow] = floor
    return out
