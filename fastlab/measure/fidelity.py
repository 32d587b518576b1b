"""Fidelity: was this run's emulation faithful? A verdict every run carries (summary.json).

Like Mininet-HiFi (Handigol et al., CoNEXT 2012), fastlab does not assume that an emulated link
behaved like the link it stands for: it checks. The link emulators report how late each
departure left (sent - scheduled, per MTU segment) and how many frames their sockets dropped;
the engine measures the emulators' and the machine's CPU use and the gaps in the traces. This
module turns those figures into `{faithful, reasons, ...}` with the thresholds below, each a
named constant with its reason. It is pure: the engine gathers the figures.

A path's emulation delay is the sum of the mean lateness over every link direction its data and
ACKs cross: what the emulation adds to a delay-based algorithm's average RTT while its minimum
(baseRTT) stays near the true one, i.e. what FAST would read as queueing. The mean is the right
statistic: FAST compares an average with a minimum, and a stall of the whole machine delays
every packet in flight at once. (Runs before the mean was reported fall back to the sum of the
medians plus the largest p99.)

The idle pings that measure each path's base RTT before the flows start are late too, and by more
than the flows' packets: an emulator idling between pings sleeps, and its wake-up on time is what a
busy or virtual machine does worst (measured in a software-emulated VM: the idle phase's p99 1.1-1.2
ms per direction, the whole run's p50 0.25-0.30 ms). So the verdict also reports the lateness as of
the end of the idle phase (`idle_links`, and `idle_emulation_delay_ms` per path): what the emulation
added to the idle RTT the summary reports. It is reported, not judged: no flow ran then.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from fastlab.base.record import Verdict
from fastlab.define.schema import MTU_BYTES
from fastlab.measure import effects
from fastlab.measure.budgets import (  # noqa: F401 - the verdict's budget, named here as before
    DELAY_SHARE_OF_TARGET,
    LOSS_BASED_RTT_SHARE,
    MIN_BUDGET_MS,
    Crossing,
    PathInfo,
    basis,
    budget_ms,
    budget_words,
)
from fastlab.measure.weighing import (
    accounting_figures,
    accounting_reasons,
    base_reasons,
    disturbances,
    effect_reasons,
    model_losses,
    startup_reasons,
)

# A frame dropped by an emulator's socket is a loss no link model decided; one loss costs Reno
# (W/2) * RTT to recover (22 minutes at 1 Gb/s x 180 ms), so there is no tolerable number.
SOCK_DROPS_MAX = 0
# An emulator is one thread: above 90 % of a core it cannot absorb bursts and falls behind.
EMULATOR_CORE_MAX = 0.90
# The whole machine busier than this leaves no headroom: senders, receivers and emulators
# compete, and timing is no longer the link's.
MACHINE_BUSY_MAX = 0.95
# A trace gap longer than this (or ten sample intervals, whichever is larger) means the
# samplers were starved: the traces miss what happened.
SAMPLE_GAP_MAX_S = 1.0
SAMPLE_GAP_INTERVALS = 10

# A link shaped by tc (HTB rate + FIFO) that kept packets queued across a sampling interval was
# busy all of it, so its counters must show the configured rate then. HTB loses link time whenever
# its watchdog fires later than its burst allowance covers (1 ms of tokens, at least two frames):
# e.g. in a VM emulated in software, where the qdisc's softirq waits behind the flows' own
# processes. Measured there (stock-kernel lane, 2026-11-25): 0.86-0.93 of 10 Mb/s while 9-65
# packets stayed queued, where linkemu on the same path delivered 1.00. The counters are read at
# times known to ~1 ms per 100-ms interval, so one busy second is known to ~1 %: 5 % short is a
# link slower than the one asked for (the loss-based flows' 1 % budget above is for delay, not rate).
TC_BUSY_SHARE_MIN = 0.95
# Intervals count as busy when both ends saw at least this many packets queued: one packet can be
# the last of a train, and a queue that empties between two samples idles the link for a reason of
# the traffic's, not the shaper's.
TC_BUSY_BACKLOG_PKTS = 2
# Judged only over at least this much busy time: fewer intervals are too few to average the
# sampling times out.
TC_BUSY_MIN_S = 1.0

# Conservation at a link. What reaches a shaped link direction over any window cannot exceed what the
# links feeding it delivered: its flows' slowest upstream links at their rates, plus what the links
# between those and it held queued, plus what an upstream emulator running late hands over at once
# (its p99 lateness at its rate), plus BURST_MTUS packets. More than that means something between the
# emulated links held packets and released them together -- a switch datapath (OVS in user space) or a
# host -- and the queue it leaves is a real queue the link models never decided. The emulators' lateness
# does not see it (measured, lab 08 short form, run r08 of a ×10 bench, 2026-11-27: 83 packets, 124.5 KB,
# queued at Sunnyvale's 20 Mb/s access link, fed by CERN's 20 Mb/s link through links that held at most
# one packet; the flow's RTT rose from 187.8 to 237 ms, FAST cut its window 313 -> 278).
BURST_MTUS = 2  # one packet in service at each end of the hop
BURST_WINDOW_S = 2.0  # windows up to this long: a longer one adds counter drift, not burst
BURST_RATE_DRIFT = 0.01  # the rate the counters may show above the configured one over a window
# Judged like the emulators' own delay: unfaithful when the excess, as queueing delay at the link, is
# above the delay budget of the flows crossing it -- and above BURST_NOISE_MTUS packets, the counters'
# sampling noise (the ×10 benches of all nine labs' short forms, 380 step runs: 0-1.6 packets in every
# run but lab 08's three, 7-45 packets there).
BURST_NOISE_MTUS = 4

ADVICE = ("lower the capacities (topology_args.scale), run fewer flows, or stop other programs on this "
          "machine; `fastlab doctor --self-test` says what this machine carries faithfully")




@dataclass(frozen=True)
class Counters:
    """One emulated link direction's sampled counters, for the conservation check."""

    rate_bps: int
    times: tuple[float, ...]
    arrived_bytes: tuple[float, ...]  # sent + queued (IP bytes): every byte that reached it, drops aside
    backlog_bytes: tuple[float, ...]
    late_p99_us: float = 0.0
    # departures at most at rate_bps: no policer or MAC model (a token bucket or DOCSIS grants release
    # bursts above the rate) and no jitter (which reorders and bunches); judged, and a feeder, only then
    paced: bool = True


@dataclass
class Inputs:
    emulators: dict[str, dict[str, Any]] = field(default_factory=dict)  # link -> final stats line
    paths: list[PathInfo] = field(default_factory=list)
    emulator_cores: dict[str, float] = field(default_factory=dict)  # link -> cores used while flows ran
    machine_busy: float | None = None  # fraction of all CPUs busy while flows ran
    machine_steal: float | None = None  # fraction of all CPU time the hypervisor gave to others (steal)
    sample_gaps_s: dict[str, float] = field(default_factory=dict)  # flow -> longest gap between samples
    sample_interval_s: float = 0.05
    tc_links: tuple[str, ...] = ()  # shaped by tc: departure times are the kernel's, not measured
    # tc link -> direction -> (configured rate in IP bits/s, samples (t s, backlog packets, sent IP bytes))
    tc_queues: dict[str, dict[str, tuple[int, list[tuple[float, float, float]]]]] = field(default_factory=dict)
    idle_emulators: dict[str, dict[str, Any]] = field(default_factory=dict)  # link -> stats line after the idle pings
    # Conservation: every route a flow's data or ACKs take (all its paths, reroutes included) as ordered
    # crossings, and the counters of the emulated crossings.
    routes: tuple[tuple[Crossing, ...], ...] = ()
    counters: dict[Crossing, Counters] = field(default_factory=dict)
    # Weighing by effect (issue 53): each flow's samples (t, bytes_acked, cwnd_pkts and the delay accounting's
    # acct_* columns, fastlab.measure.accounting), each crossing's cumulative lateness (t, late_n, late_mean_us)
    # and (t, steal jiffies, total jiffies) samples of /proc/stat while the flows ran. Without flows the verdict
    # judges as before: the mean lateness and each burst by its size.
    flows: dict[str, pd.DataFrame] = field(default_factory=dict)
    # flow -> its algorithm's own RTTs (t, avg_rtt_ms, base_rtt_ms: verdict.algorithm_rtts)
    algorithm_rtts: dict[str, pd.DataFrame] = field(default_factory=dict)
    queue_floor_ms: dict[str, float] = field(default_factory=dict)  # flow -> its path's least queue while it ran
    lateness: dict[Crossing, pd.DataFrame] = field(default_factory=dict)
    steal_samples: list[tuple[float, int, int]] = field(default_factory=list)
    # each crossing's cumulative drop counters (t, loss_drops: the seeded loss model's, queue_drops): a flow's
    # loss the path's loss model made is physics, and a disturbance is weighed only up to it (effects.measure)
    drops: dict[Crossing, pd.DataFrame] = field(default_factory=dict)




DIRECTION_TAGS = {"forward": "ab", "reverse": "ba"}


def link_figures(stats: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """An emulator's final stats line -> per direction: lateness (µs) and socket drops."""
    out = {}
    for direction, tag in DIRECTION_TAGS.items():
        d = stats.get(tag, {})
        late = d.get("late_us") or {}
        out[direction] = {"late_mean_us": late.get("mean"), "late_p50_us": late.get("p50"),
                          "late_p99_us": late.get("p99"),
                          "late_max_us": late.get("max"), "segments": late.get("n", 0),
                          "sock_drops": int(d.get("sock_drops", 0))}
    return out


def path_delay_ms(path: PathInfo, links: dict[str, dict[str, dict[str, Any]]]) -> float | None:
    """Σ mean lateness over the path's emulated crossings, ms (None: none measured)."""
    figs = [fig for link, direction in path.crossings
            if (fig := links.get(link, {}).get(direction)) and fig["segments"]]
    if not figs:
        return None
    if all(fig.get("late_mean_us") is not None for fig in figs):
        return round(sum(float(fig["late_mean_us"]) for fig in figs) / 1000, 3)
    return round((sum(fig["late_p50_us"] for fig in figs) + max(fig["late_p99_us"] for fig in figs)) / 1000, 3)


def window_mean_us(rows: Any, t0: float, t1: float, figure: str = "late") -> float | None:
    """The mean of a direction's lateness ("late") or socket wait ("rx_wait"), µs, over the samples in
    [t0, t1) of its links.csv rows (pure): linkemu reports both cumulatively (`<figure>_n` counts, a
    mean each), so the window's is (n1 m1 - n0 m0) / (n1 - n0) between its first and last samples.
    None where the columns are missing (runs before they were recorded, tc links) or nothing was counted."""
    n_col, mean_col = f"{figure}_n", f"{figure}_mean_us"
    if n_col not in rows or mean_col not in rows:
        return None
    inside = rows[(rows["t"] >= t0) & (rows["t"] < t1)].dropna(subset=[n_col, mean_col])
    if len(inside) < 2:
        return None
    (n0, m0), (n1, m1) = (inside.iloc[i][[n_col, mean_col]].astype(float) for i in (0, -1))
    return (n1 * m1 - n0 * m0) / (n1 - n0) if n1 > n0 else None


def tc_busy_share(samples: list[tuple[float, float, float]], rate_bps: int) -> dict[str, Any]:
    """What a tc queue delivered while it stayed busy: over the sampling intervals whose both ends saw
    at least TC_BUSY_BACKLOG_PKTS queued, sent bytes / (configured rate x time). `samples` are
    (t s, backlog packets, cumulative sent IP bytes), in time order; the share is None below
    TC_BUSY_MIN_S of busy time."""
    busy_s = sent = 0.0
    for (t0, q0, b0), (t1, q1, b1) in zip(samples, samples[1:], strict=False):
        if q0 >= TC_BUSY_BACKLOG_PKTS and q1 >= TC_BUSY_BACKLOG_PKTS and t1 > t0 and b1 >= b0:
            busy_s += t1 - t0
            sent += b1 - b0
    share = sent * 8 / (rate_bps * busy_s) if busy_s >= TC_BUSY_MIN_S and rate_bps > 0 else None
    return {"busy_s": round(busy_s, 3), "delivered_share": None if share is None else round(share, 3)}


def feeders(routes: tuple[tuple[Crossing, ...], ...],
            rates: dict[Crossing, int]) -> dict[Crossing, tuple[frozenset[Crossing], frozenset[Crossing]] | None]:
    """Per crossing: its flows' slowest upstream crossings (the nearest of equal rate) and the crossings
    between those and it; None where a route reaches it first (a host feeds it: no bound)."""
    out: dict[Crossing, tuple[frozenset[Crossing], frozenset[Crossing]] | None] = {}
    for route in routes:
        for k, here in enumerate(route):
            if here in out and out[here] is None:
                continue
            prefix = route[:k]
            if not prefix:
                out[here] = None
                continue
            slowest = min(range(k), key=lambda i: (rates[prefix[i]], -i))
            slow, between = out.get(here) or (frozenset(), frozenset())
            out[here] = (slow | {prefix[slowest]}, between | set(prefix[slowest + 1:]))
    return out


def burst_excess(here: Counters, limit_bps: float, slack_bytes: float) -> tuple[float, float | None]:
    """The most bytes that reached `here` within BURST_WINDOW_S beyond limit x time + slack (pure), and
    when that window ended (burst_span's, without its start)."""
    worst, at, _start = burst_span(here, limit_bps, slack_bytes)
    return worst, at


def burst_span(here: Counters, limit_bps: float, slack_bytes: float) -> tuple[float, float | None, float | None]:
    """burst_excess with the window's start: max over j of v_j - min over earlier i in the window of v_i,
    with v = arrived - limit x t (a sliding minimum: O(samples)); (excess, t_j, t_i)."""
    per_s = limit_bps * (1 + BURST_RATE_DRIFT) / 8
    lows: deque[int] = deque()
    worst, at, start = 0.0, None, None
    v = [a - per_s * t for t, a in zip(here.times, here.arrived_bytes, strict=True)]
    for j, t in enumerate(here.times):
        while lows and here.times[lows[0]] < t - BURST_WINDOW_S:
            lows.popleft()
        if lows and v[j] - v[lows[0]] - slack_bytes > worst:
            worst, at, start = v[j] - v[lows[0]] - slack_bytes, t, here.times[lows[0]]
        while lows and v[lows[-1]] >= v[j]:
            lows.pop()
        lows.append(j)
    return worst, at, start


def conservation(routes: tuple[tuple[Crossing, ...], ...], counters: dict[Crossing, Counters],
                 mtu_bytes: int = MTU_BYTES) -> dict[Crossing, dict[str, Any]]:
    """Per judged crossing ("link direction"): the bytes that reached it beyond what its feeders could
    deliver, and that excess as queueing delay at its rate. Judged where it and every feeder are emulated
    (byte counters, measured lateness) and paced, and no host feeds it."""
    rates = {c: k.rate_bps for c, k in counters.items()}
    out: dict[Crossing, dict[str, Any]] = {}
    for here, fed in feeders(routes, {c: rates.get(c, 0) for route in routes for c in route}).items():
        involved = {here} | fed[0] | fed[1] if fed is not None else set()
        if fed is None or not all(c in counters and counters[c].paced for c in involved):
            continue
        slow, between = fed
        slack = (BURST_MTUS * mtu_bytes + sum(max(counters[b].backlog_bytes, default=0.0) for b in between)
                 + sum(counters[c].rate_bps / 8 * counters[c].late_p99_us / 1e6 for c in slow | between))
        excess, at, start = burst_span(counters[here], sum(rates[c] for c in slow), slack)
        out[here] = {
            "excess_bytes": round(excess), "excess_ms": round(excess * 8 / rates[here] * 1000, 2),
            "at_s": None if at is None else round(at, 2), "from_s": None if start is None else round(start, 2),
            "slack_bytes": round(slack),
            "fed_by": sorted(f"{c[0]} ({c[1]})" for c in slow)}
    return out


def burst_reasons(bursts: dict[Crossing, dict[str, Any]], paths: list[PathInfo],
                  mtu_bytes: int = MTU_BYTES) -> list[str]:
    """The conservation figures judged: a reason per crossing whose excess, as queueing delay there, is above
    the delay budget of the flows crossing it and above BURST_NOISE_MTUS packets (each figure gets its
    `budget_ms`)."""
    reasons = []
    for crossing, fig in sorted(bursts.items()):
        budgets = [budget_ms(p) for p in paths if crossing in p.crossings] or [MIN_BUDGET_MS]
        fig["budget_ms"] = round(min(budgets), 3)
        if fig["excess_ms"] > min(budgets) and fig["excess_bytes"] > BURST_NOISE_MTUS * mtu_bytes:
            fed_by = ", ".join(fig["fed_by"])
            reasons.append(f"{crossing[0]} ({crossing[1]}): {fig['excess_bytes'] / 1000:.1f} kB more reached it by "
                           f"{fig['at_s']:g} s than {fed_by} could deliver ({fig['excess_ms']:.1f} ms of queue, "
                           f"above {min(budgets):.2f} ms): packets held and released together between the "
                           "emulated links (the switches' datapath or the hosts)")
    return reasons


def _judge_paths(inp: Inputs, links: dict[str, Any], idle_links: dict[str, Any],
                 by_effect: bool) -> tuple[list[dict[str, Any]], dict[str, Any], list[str]]:
    """Each path's figures, its delay accounting (with the flows' samples) and the reasons they give: the
    delay the flow read as queue that no link queued where accounted, else the emulators' mean lateness."""
    paths, accounted, reasons, judged = [], {}, [], []
    for p in inp.paths:
        delay = path_delay_ms(p, links)
        budget = budget_ms(p)
        paths.append({"flow": p.flow, "emulation_delay_ms": delay, "budget_ms": round(budget, 3),
                      "basis": basis(p),
                      "idle_emulation_delay_ms": path_delay_ms(p, idle_links),
                      "crossings": [[link, direction] for link, direction in p.crossings]})
        acct = (accounting_figures(p, inp.flows.get(p.flow), budget, inp.algorithm_rtts.get(p.flow),
                                   inp.queue_floor_ms.get(p.flow, 0.0)) if by_effect else None)
        if acct is not None:
            accounted[p.flow] = acct
            judged.append((p, acct))
        elif delay is not None and delay > budget:
            reasons.append(f"flow {p.flow}: the emulators added {delay:.2f} ms of delay (departure lateness), "
                           f"above {budget:.2f} ms = {budget_words(p)}")
    return paths, accounted, accounting_reasons(judged, inp.machine_steal) + base_reasons(judged) + reasons


def _judge_disturbances(inp: Inputs, bursts: dict[Crossing, dict[str, Any]],
                        mtu: int) -> tuple[list[effects.Disturbance], dict[str, Any], list[str]]:
    """Every disturbance found (fastlab.measure.weighing), weighed by its effect on the flows it touched."""
    for crossing, fig in bursts.items():  # each figure gets its budget_ms, as burst_reasons gives it
        fig["budget_ms"] = round(min([budget_ms(p) for p in inp.paths if crossing in p.crossings]
                                     or [MIN_BUDGET_MS]), 3)
    found = disturbances(inp.paths, bursts, BURST_NOISE_MTUS * mtu, inp.flows, inp.lateness, inp.steal_samples,
                         inp.sample_interval_s)
    rtts = {p.flow: p.base_rtt_ms / 1000 for p in inp.paths}
    weighed = effects.weigh(found, inp.flows, rtts, model_losses(inp.paths, inp.flows, inp.drops))
    reasons, figures = effect_reasons(weighed, inp.flows, inp.machine_steal, inp.steal_samples, rtts)
    return found, figures, startup_reasons(found, inp.flows, rtts) + reasons


def assess(inp: Inputs) -> dict[str, Any]:
    """The verdict: faithful only if no threshold is crossed; each crossing is one reason.

    With the flows' samples (`inp.flows`) the delay a flow read as queue that no link queued is judged by its
    median (the delay accounting), and disturbances -- bursts held between the links, late departures, host
    delay, stalled traces -- by what they cost the flows they touched; without them, as before, the mean
    lateness and each burst by its size."""
    reasons: list[str] = []
    links = {link: link_figures(stats) for link, stats in inp.emulators.items()}
    idle_links = {link: link_figures(stats) for link, stats in inp.idle_emulators.items()}
    crossed = {c for p in inp.paths for c in p.crossings}
    by_effect = bool(inp.flows)

    for link, direction in sorted(crossed):
        fig = links.get(link, {}).get(direction)
        if fig and fig["sock_drops"] > SOCK_DROPS_MAX:
            reasons.append(f"{link} ({direction}): the emulator's socket dropped {fig['sock_drops']} frames "
                           "(losses no link model decided)")
    paths, accounted, more = _judge_paths(inp, links, idle_links, by_effect)
    reasons += more
    mtu = inp.paths[0].mtu_bytes if inp.paths else MTU_BYTES
    bursts = conservation(inp.routes, inp.counters, mtu)
    if by_effect:
        found, effect_figures, more = _judge_disturbances(inp, bursts, mtu)
        reasons += more
    else:
        found, effect_figures = [], {}
        reasons += burst_reasons(bursts, inp.paths, mtu)
    for link, cores in sorted(inp.emulator_cores.items()):
        if cores > EMULATOR_CORE_MAX:
            reasons.append(f"{link}: its emulator used {cores:.2f} of a core (limit {EMULATOR_CORE_MAX:g}): "
                           "it cannot absorb bursts")
    if inp.machine_busy is not None and inp.machine_busy > MACHINE_BUSY_MAX:
        reasons.append(f"the machine was {inp.machine_busy:.0%} busy while the flows ran "
                       f"(limit {MACHINE_BUSY_MAX:.0%}): no CPU headroom")
    tc_queues = {link: {direction: tc_busy_share(samples, rate) for direction, (rate, samples) in sides.items()}
                 for link, sides in inp.tc_queues.items()}
    for link, sides in sorted(tc_queues.items()):
        for direction, fig in sorted(sides.items()):
            if fig["delivered_share"] is not None and fig["delivered_share"] < TC_BUSY_SHARE_MIN:
                rate = inp.tc_queues[link][direction][0] / 1e6
                reasons.append(f"{link} ({direction}): tc delivered {fig['delivered_share']:.0%} of its {rate:g} Mb/s "
                               f"over {fig['busy_s']:.1f} s with packets queued (limit {TC_BUSY_SHARE_MIN:.0%}): "
                               "the kernel's timers fired late; the emulator backend keeps the rate")
    gap_limit = max(SAMPLE_GAP_MAX_S, SAMPLE_GAP_INTERVALS * inp.sample_interval_s)
    for flow, gap in sorted(inp.sample_gaps_s.items()):
        if gap > gap_limit:
            reasons.append(f"flow {flow}: its trace has a {gap:.2f} s gap (limit {gap_limit:g} s): "
                           "the samplers were starved")
    faithful = not reasons
    return {
        "faithful": faithful,
        "reasons": reasons,
        "advice": None if faithful else ADVICE,
        "paths": paths,
        "links": links,
        "idle_links": idle_links,
        "emulator_cores": {k: round(v, 3) for k, v in inp.emulator_cores.items()},
        "machine_busy": None if inp.machine_busy is None else round(inp.machine_busy, 3),
        "machine_steal": None if inp.machine_steal is None else round(inp.machine_steal, 4),
        "sample_gaps_s": {k: round(v, 3) for k, v in inp.sample_gaps_s.items()},
        "tc_queues": tc_queues,
        "conservation": {f"{link} ({direction})": fig for (link, direction), fig in bursts.items()},
        "delay_accounting": accounted,
        "disturbances": [d.as_dict() for d in found],
        "effects": effect_figures,
        "unmeasured": [f"{link}: shaped by tc (departure times are the kernel's, not measured; the rate it "
                       "delivered while queued is; its queue is known from backlog samples "
                       f"{inp.sample_interval_s * 1000:g} ms apart, so a host's delay on a path through it is told "
                       "only beyond what the link can have queued between two samples: up to that interval while "
                       "it sends at its rate)" for link in inp.tc_links],
        "thresholds": {"delay_share_of_fast_target": DELAY_SHARE_OF_TARGET,
                       "loss_based_rtt_share": LOSS_BASED_RTT_SHARE, "min_budget_ms": MIN_BUDGET_MS,
                       "sock_drops_max": SOCK_DROPS_MAX, "emulator_core_max": EMULATOR_CORE_MAX,
                       "machine_busy_max": MACHINE_BUSY_MAX, "sample_gap_max_s": gap_limit,
                       "tc_busy_share_min": TC_BUSY_SHARE_MIN, "burst_noise_mtus": BURST_NOISE_MTUS,
                       "delivered_share_max": effects.DELIVERED_SHARE_MAX},
    }


def headline(verdict: Verdict | None) -> str:
    """One line for the CLI and pages, of a run's verdict (fastlab.base.record.Verdict)."""
    if verdict is None:
        return "fidelity: not assessed (run made before fidelity verdicts)"
    if verdict.faithful:
        accounted = [a.read_as_queue_median_ms for a in verdict.delay_accounting.values()]
        if accounted:
            return (f"fidelity: faithful (delay read as queue that no link queued <= {max(accounted):.2f} ms on every "
                    "path, disturbances within what the flows may lose, no socket drops)")
        delays = [p.emulation_delay_ms for p in verdict.paths if p.emulation_delay_ms is not None]
        if not delays:
            return ("fidelity: faithful as far as measured (no emulated link: tc shaping's timing is not "
                    "measured, only the rate it delivered)")
        return f"fidelity: faithful (emulation delay ≤ {max(delays):.2f} ms on every path, no socket drops)"
    return "fidelity: NOT FAITHFUL — " + "; ".join(verdict.reasons) + f". To fix: {verdict.advice}."


# --- machine CPU (the engine samples /proc/stat around the flows) -------------------------------

def cpu_times(stat_text: str) -> tuple[int, int]:
    """`/proc/stat` -> (busy, total) jiffies over all CPUs (idle and iowait are not busy)."""
    fields = [int(x) for x in stat_text.splitlines()[0].split()[1:]]
    total = sum(fields[:8])  # user nice system idle iowait irq softirq steal (guest is inside user)
    return total - fields[3] - fields[4], total


def steal_times(stat_text: str) -> tuple[int, int]:
    """`/proc/stat` -> (steal, total) jiffies over all CPUs. Steal is time a virtual machine's CPU was
    ready to run while the hypervisor ran something else: an emulator woken then leaves late, whatever
    this machine was doing. Reported beside the verdict (it explains lateness), not judged: the
    lateness it causes is what the verdict judges."""
    fields = [int(x) for x in stat_text.splitlines()[0].split()[1:]]
    return fields[7], sum(fields[:8])


def busy_fraction(before: tuple[int, int], after: tuple[int, int]) -> float | None:
    total = after[1] - before[1]
    return None if total <= 0 else (after[0] - before[0]) / total


def sample_gaps(times_by_flow: dict[str, list[float]]) -> dict[str, float]:
    """Longest gap between consecutive samples of each flow, s."""
    out = {}
    for flow, times in times_by_flow.items():
        ts = sorted(times)
        out[flow] = max((b - a for a, b in zip(ts, ts[1:], strict=False)), default=0.0)
    return out
