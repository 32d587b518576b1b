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

from dataclasses import dataclass, field
from typing import Any

from fastlab.spec import MTU_BYTES

# A FAST flow aims at alpha packets queued at its bottleneck, i.e. alpha * MTU / C of queueing
# delay (2.4 ms for alpha = 200 at 1 Gb/s). Emulation delay above a quarter of that moves its
# equilibrium by more than a quarter of alpha (w = alpha * D / (D - d)): the lab's lessons about
# alpha stop holding. A quarter is an assumption: it keeps the equilibrium backlog within the
# spread the labs already allow for one run.
DELAY_SHARE_OF_TARGET = 0.25
# Loss-based flows (Reno, CUBIC, HSTCP, BBR) have no delay target; their rate is window / RTT,
# so emulation delay must stay below 1 % of the path's base RTT (a 1 % throughput error)...
LOSS_BASED_RTT_SHARE = 0.01
# ...but never below 0.5 ms: the wake-up latency of an idle VM's CPU is ~0.1 ms per hop.
MIN_BUDGET_MS = 0.5
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

ADVICE = ("lower the capacities (topology_args.scale), run fewer flows, or stop other programs on this "
          "machine; `fastlab doctor --self-test` says what this machine carries faithfully")


@dataclass(frozen=True)
class PathInfo:
    """One flow's path: the link directions its data and ACKs cross, and its delay budget's basis."""

    flow: str
    crossings: tuple[tuple[str, str], ...]  # (link id, "forward" | "reverse")
    base_rtt_ms: float
    target_queue_ms: float | None = None  # FAST: alpha packets at the bottleneck; None: loss-based


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


def fast_target_ms(alpha: float, bottleneck_mbps: float, mtu_bytes: int = MTU_BYTES) -> float:
    """Queueing delay of alpha MTU packets at the bottleneck, ms."""
    return alpha * mtu_bytes * 8 / (bottleneck_mbps * 1e6) * 1000


def budget_ms(path: PathInfo) -> float:
    if path.target_queue_ms is not None:
        return max(0.0, DELAY_SHARE_OF_TARGET * path.target_queue_ms)
    return max(MIN_BUDGET_MS, LOSS_BASED_RTT_SHARE * path.base_rtt_ms)


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


def assess(inp: Inputs) -> dict[str, Any]:
    """The verdict: faithful only if no threshold is crossed; each crossing is one reason."""
    reasons: list[str] = []
    links = {link: link_figures(stats) for link, stats in inp.emulators.items()}
    idle_links = {link: link_figures(stats) for link, stats in inp.idle_emulators.items()}
    crossed = {c for p in inp.paths for c in p.crossings}

    for link, direction in sorted(crossed):
        fig = links.get(link, {}).get(direction)
        if fig and fig["sock_drops"] > SOCK_DROPS_MAX:
            reasons.append(f"{link} ({direction}): the emulator's socket dropped {fig['sock_drops']} frames "
                           "(losses no link model decided)")
    paths = []
    for p in inp.paths:
        delay = path_delay_ms(p, links)
        budget = budget_ms(p)
        paths.append({"flow": p.flow, "emulation_delay_ms": delay, "budget_ms": round(budget, 3),
                      "basis": "FAST alpha queue" if p.target_queue_ms is not None else "base RTT",
                      "idle_emulation_delay_ms": path_delay_ms(p, idle_links)})
        if delay is not None and delay > budget:
            what = (f"{DELAY_SHARE_OF_TARGET:g} of the {p.target_queue_ms:.2f} ms queue FAST aims at"
                    if p.target_queue_ms is not None else
                    f"max({MIN_BUDGET_MS:g} ms, {LOSS_BASED_RTT_SHARE:.0%} of the {p.base_rtt_ms:g} ms RTT)")
            reasons.append(f"flow {p.flow}: the emulators added {delay:.2f} ms of delay (departure lateness), "
                           f"above {budget:.2f} ms = {what}")
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
        "unmeasured": [f"{link}: shaped by tc (departure times are the kernel's, not measured; "
                       "the rate it delivered while queued is)" for link in inp.tc_links],
        "thresholds": {"delay_share_of_fast_target": DELAY_SHARE_OF_TARGET,
                       "loss_based_rtt_share": LOSS_BASED_RTT_SHARE, "min_budget_ms": MIN_BUDGET_MS,
                       "sock_drops_max": SOCK_DROPS_MAX, "emulator_core_max": EMULATOR_CORE_MAX,
                       "machine_busy_max": MACHINE_BUSY_MAX, "sample_gap_max_s": gap_limit,
                       "tc_busy_share_min": TC_BUSY_SHARE_MIN},
    }


def headline(verdict: dict[str, Any] | None) -> str:
    """One line for the CLI and pages."""
    if not verdict:
        return "fidelity: not assessed (run made before fidelity verdicts)"
    if verdict["faithful"]:
        delays = [p["emulation_delay_ms"] for p in verdict["paths"] if p["emulation_delay_ms"] is not None]
        if not delays:
            return ("fidelity: faithful as far as measured (no emulated link: tc shaping's timing is not "
                    "measured, only the rate it delivered)")
        return f"fidelity: faithful (emulation delay ≤ {max(delays):.2f} ms on every path, no socket drops)"
    return "fidelity: NOT FAITHFUL — " + "; ".join(verdict["reasons"]) + f". To fix: {verdict['advice']}."


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
