"""Checkpoints of lab 04 (the SC2002 fairness experiment): one 180 ms flow to Sunnyvale and two
118 ms flows to Chicago, FAST on one side and Linux TCP on the other, both ways round.

At full scale (each flow on its own GbE port, DataTAG shared, a named background loss): the loss
rate the spec assumes, each Linux flow's average replayed from its own losses (one packet per RTT
after each), and FAST ahead of Linux. As an exploration, on one CERN host's shared uplink: how the
three split that access link. Rates come from the bytes ACKed (flows.csv) after `t0`, the queue from
the access link's trace (links.csv); which flows run FAST and with which alpha is read from the run.

Theory of the shared uplink: FAST gives every flow x = alpha/q whatever its RTT, and against Reno it
still keeps alpha packets of its own in the queue: its share of the link is alpha / backlog.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fastlab.define.schema import parse_spec
from fastlab.labs.kit import (
    LOSS_STATES,
    CheckResult,
    MissingData,
    StepRun,
    checkpoint,
    link_kept_busy,
    loss_starts,
    within,
)
from fastlab.theory import fast as fast_theory
from fastlab.theory.fast import SharedQueue


def _fast_alphas(run: StepRun) -> dict[str, int]:
    """FAST flows of the run and their alpha, from its resolved spec (flow ids numbered as the engine does)."""
    alphas, number = {}, 0
    for entry in run.spec["flows"]:
        for _ in range(entry.get("count", 1)):
            number += 1
            if entry.get("cc") == "fast":
                alphas[f"f{number}"] = int(entry.get("cc_args", {}).get("alpha", 0))
    if not alphas:
        raise MissingData("no flow of this run uses fast")
    return alphas


def _jain(rates: list[float]) -> float:
    x = np.array(rates)
    return float(x.sum() ** 2 / (len(x) * (x**2).sum()))


@checkpoint
def jain_index(run: StepRun, flows: tuple[str, ...] = ("f1", "f2", "f3"), t0: float = 10.0,
               link: str = "cern-gbe") -> CheckResult:
    """Jain's index (sum x)^2 / (n sum x^2) of FAST flows with one alpha and one RTT through one queue:
    1 for equal shares, 1/n when one flow takes all.

    Model: each FAST flow's rate is its packets queued over the common queueing delay, so equal alphas
    give equal rates; what can split them is Reno's overflows, which halve a FAST flow they hit. The
    fluid model of the run (as in `fast_keeps_alpha`) gives each flow's queued packets / alpha between
    its floor (every overflow hits it) and its ceiling (none does): the most unequal pair is one flow
    at each end, a rate ratio r = floor / ceiling and an index (1 + r)^2 / (2 (1 + r^2))."""
    alphas = _fast_alphas(run)
    if any(f not in alphas for f in flows) or len({alphas[f] for f in flows}) != 1:
        raise MissingData(f"{', '.join(flows)} must all run FAST with one alpha")
    rates = [run.goodput_mbps(f, t0, float(run.spec["duration_s"])) for f in flows]
    model = shared_queue(run, link, t0)
    floor = min(fast_theory.fast_queued_over_alpha(model, True, seed) for seed in range(SHARED_QUEUE_SEEDS))
    ceiling = max(fast_theory.fast_queued_over_alpha(model, False, seed) for seed in range(SHARED_QUEUE_SEEDS))
    ratio = min(floor / ceiling, 1.0)
    lowest = _jain([ratio] + [1.0] * (len(flows) - 1))
    result = within(f"Jain's fairness index of {', '.join(flows)}", _jain(rates), lowest, 1.0,
                    f"equal alphas give equal rates alpha/q; Reno's overflows can halve one FAST flow and spare the "
                    f"other: the fluid model of this run puts each flow's queued packets / alpha between {floor:.2f} "
                    f"(every overflow hits it) and {ceiling:.2f} (none does), so the most unequal split is a rate "
                    f"ratio of {ratio:.2f}, index {lowest:.3f}")
    result.note = ", ".join(f"{f} {r:.2f} Mb/s" for f, r in zip(flows, rates, strict=True))
    return result


# The fluid model's resolution: the recorded full-scale runs sit up to 0.03 above its ceiling
# (packets in flight counted at 50 ms samples, integer windows); a margin of 0.1 either side. The
# 0.1 is a judgement (about three times that excess), not derived: the floor and ceiling are.
SHARED_QUEUE_MODEL_MARGIN = 0.1
SHARED_QUEUE_SEEDS = 5  # Reno's drops are drawn: the band takes the widest of these


def shared_queue(run: StepRun, link: str, t0: float) -> SharedQueue:
    """The run's shared uplink as the fluid model takes it: capacity, buffer, each flow's base RTT."""
    refs = fast_theory.references(parse_spec(run.spec))
    buffer = run.buffer_pkts(link)
    fast = [r for r in refs if r["cc"] == "fast"]
    reno = [r for r in refs if r["cc"] == "reno"]
    if not fast or len(fast) + len(reno) != len(refs):
        raise MissingData("the shared-queue model takes FAST and Reno flows only")
    return SharedQueue(run.capacity_mbps(link), int(buffer),
                       tuple(r["base_rtt_ms"] for r in fast), tuple(int(r["alpha"]) for r in fast),
                       tuple(r["base_rtt_ms"] for r in reno), float(run.spec["duration_s"]), t0,
                       mtu_bytes=fast_theory.run_mtu(run.spec))


REPLAY_LEAD_S = 5.0  # the replay starts this long before the window, from the run's window then: FAST
# halves its distance to equilibrium every update (gamma 1/2, one per ~0.3 s RTT), so any start is
# forgotten within 2-3 s


def path_rtt_ms(run: StepRun, flow: str) -> float:
    """The flow's path RTT with its queues empty (propagation, the emulators and the stacks, there
    and back): the least of the idle pings over the same hosts before the flows start and the
    kernel's min_rtt of the flow, whose handshake crosses the path before its data does. Noise only
    ever adds to an RTT, so the least is the best reading (the short form sends a single ping)."""
    min_rtt = run.flow_summary(flow).min_rtt_ms
    try:
        ping = run.idle_ping_min_ms(flow)
    except MissingData:
        if not min_rtt:
            raise
        return float(min_rtt)
    return min(ping, float(min_rtt)) if min_rtt else ping


@dataclass(frozen=True)
class QueuedShare:
    """A FAST flow's packets in the shared queue as `fast_keeps_alpha` reads them, every figure over
    the one span its goodput is measured on (run time, s)."""

    span: tuple[float, float]
    backlog: float  # mean packets queued over the span
    link_used: float  # the link's mean sending rate over its capacity, over the span
    ratio: float  # the flow's share of what the link sent x backlog / alpha


def queued_share(run: StepRun, flow: str, alpha: int, link: str, t0: float) -> QueuedShare:
    """The flow's share of the link x the mean backlog / alpha from t0 on. The goodput's span ends
    outside loss recovery (`StepRun.goodput_window`): a flow whose loss comes near the end is
    measured up to it, and the backlog must be read over the same span -- the rate of [10, 13] times
    the mean queue of [10, 17] mixes two queues (FAST's rate follows alpha/q)."""
    a, b = run.goodput_window(flow, t0, math.inf)
    queue = run.link(link)
    queue = queue[(queue["t"] >= a) & (queue["t"] <= b)]
    if len(queue) < 2:
        raise MissingData(f"{link}: fewer than two queue samples in {a:g}..{b:g} s")
    backlog = float(queue["backlog_pkts"].mean())
    used = float(queue["tx_mbps"].mean()) / run.capacity_mbps(link)
    return QueuedShare((a, b), backlog, used, run.utilization(flow, link, a, b) / used * backlog / alpha)


def replayed_ceiling(run: StepRun, flow: str, alpha: int, link: str, share: QueuedShare) -> tuple[float, float]:
    """The flow's queued packets / alpha if none of the queue's overflows had hit it, and FAST's
    baseRTT less the path's (ms): FAST's update law replayed against the backlog this run measured
    (fastlab.theory.fast.fast_rate_against_queue), from the flow's window and baseRTT REPLAY_LEAD_S
    before the span, each packet's RTT the path's empty-queue RTT (`path_rtt_ms`) plus the backlog it
    met, read over the flow's span as `queued_share` reads the run."""
    queue = run.link(link)
    capacity = run.capacity_mbps(link)
    c_pkts = capacity * 1e6 / fast_theory.packet_bits(fast_theory.run_mtu(run.spec))
    t0, t1 = share.span
    start = max(t0 - REPLAY_LEAD_S, 0.0)
    rows = run.flow(flow)
    rows = rows[rows["t"] <= start]
    updates = run.events(flow)
    updates = updates[(updates["event"] == "update") & (updates["t"] <= start)]
    if rows.empty or updates.empty:
        raise MissingData(f"{flow} has no window or FAST update before {start:g} s to replay from")
    base_s, path_s = float(updates["base_rtt_us"].iloc[-1]) / 1e6, path_rtt_ms(run, flow) / 1e3
    rate = fast_theory.fast_rate_against_queue(
        queue["t"].tolist(), queue["backlog_pkts"].tolist(), c_pkts, base_s,
        alpha, float(rows["cwnd_pkts"].iloc[-1]), start, t0, t1, path_rtt_s=path_s)
    return rate / (share.link_used * c_pkts) * share.backlog / alpha, (base_s - path_s) * 1e3


@checkpoint
def fast_keeps_alpha(run: StepRun, link: str = "cern-gbe", t0: float = 10.0) -> CheckResult:
    """Each FAST flow's packets in the shared FIFO queue (its share of the traffic x the backlog) ~ alpha,
    between what the fluid model of the run (fastlab.theory.fast.fast_queued_over_alpha) gives when
    every overflow of the queue halves FAST's window, and what FAST's update law gives replayed against
    the queue this run measured when no overflow hits it (`replayed_ceiling`).

    Why the ceiling is a replay: the fluid model's Reno sawtooth is regular, and a real one swings
    further (timeouts, both Reno flows halving at one overflow, bursts); FAST, following alpha/q(t) one
    update behind, gains from every swing. Measured in the short form (2026-11-25): the fluid ceiling
    0.96 while a CI run measured 1.084; six local runs measured 0.71-0.98 against replays (with
    their losses) of 0.86-1.03, each measured value below its replay. The replay takes each packet's
    RTT as the path's (idle pings) plus the backlog it met, and FAST's update its own baseRTT: one
    taken late (the flows start together; in the short form the queue never empties again) hides
    queueing from FAST, which keeps x (baseRTT - d) packets more (locally +2.3-2.8 ms on the Chicago
    pair; a CI run measured 1.095 against a replay of 0.96 that assumed baseRTT exact)."""
    alphas = _fast_alphas(run)
    shares = {flow: queued_share(run, flow, alpha, link, t0) for flow, alpha in alphas.items()}
    ratios = {flow: share.ratio for flow, share in shares.items()}
    model = shared_queue(run, link, t0)
    floor = min(fast_theory.fast_queued_over_alpha(model, True, seed) for seed in range(SHARED_QUEUE_SEEDS))
    fluid_ceiling = max(fast_theory.fast_queued_over_alpha(model, False, seed) for seed in range(SHARED_QUEUE_SEEDS))
    replays = {flow: replayed_ceiling(run, flow, alpha, link, shares[flow]) for flow, alpha in alphas.items()}
    ceilings = {flow: ceiling for flow, (ceiling, _) in replays.items()}
    lo = floor - SHARED_QUEUE_MODEL_MARGIN
    # the worst flow: the furthest outside its band, else the furthest from alpha
    worst = max(ratios, key=lambda f: (max(lo - ratios[f], ratios[f] - ceilings[f] - SHARED_QUEUE_MODEL_MARGIN, 0.0),
                                       abs(np.log(ratios[f]))))
    ceiling = ceilings[worst]
    drawn = sorted(fast_theory.fast_queued_over_alpha(model, None, seed) for seed in range(SHARED_QUEUE_SEEDS))
    hi = ceiling + SHARED_QUEUE_MODEL_MARGIN
    result = within("FAST flows' queued packets / alpha (worst flow)", ratios[worst], lo, hi,
                    f"mean backlog {shares[worst].backlog:.0f} pkts over {shares[worst].span[0]:.1f}-"
                    f"{shares[worst].span[1]:.1f} s (its goodput's span, outside loss recovery). Alone, FAST "
                    f"keeps alpha queued (1: its equilibrium, Jin, Wei & Low 2004); against Reno's sawtooth "
                    f"its rate follows alpha/q(t) (mean(1/q)*mean(q) >= 1) and each overflow of the queue that "
                    f"drops one of its packets halves it. Fluid model of this run: {floor:.2f} if every overflow "
                    f"hits FAST; FAST's update law replayed against this run's measured queue with no overflow "
                    f"hitting {worst}: {ceiling:.2f} (its baseRTT {replays[worst][1]:+.1f} ms from the idle "
                    f"path's: a baseRTT taken late hides that much queueing from FAST; the fluid model's "
                    f"regular sawtooth: {fluid_ceiling:.2f}); "
                    f"+-{SHARED_QUEUE_MODEL_MARGIN:g} for the models' resolution (a judgement)")
    median = drawn[len(drawn) // 2]
    result.note = f"{worst}; the fluid model with Reno's drops drawn by share of the arrivals: median {median:.2f}"
    return result


@checkpoint
def utilization(run: StepRun, link: str = "cern-gbe", t0: float = 10.0) -> CheckResult:
    """The shared uplink stays busy while the flows run.

    Model: the link idles only while its queue is empty. Its buffer is one BDP of the longest path, so
    a Reno flow halving at an overflow (from BDP + buffer to at least one BDP) still fills the pipe, and
    FAST keeps alpha packets queued: the queue never empties and the link sends at its capacity."""
    # the flows' end, not the run's data: after the flows stop the queue drains
    return link_kept_busy(run, link, t0, float(run.spec["duration_s"]),
                          "a buffer of one BDP keeps the queue from emptying through Reno's halvings, FAST keeps "
                          "alpha queued")


# --- the SC2002 arrangement: own GbE ports, shared DataTAG, background loss ----------------------------

SC2002_PAYLOAD = 1448 / 1500  # a saturated GbE port carries this share as TCP payload (timestamps on)


@checkpoint
def background_loss_rate(run: StepRun, link: str = "datatag", sigmas: float = 4.0) -> CheckResult:
    """The shared path dropped packets at the rate the spec assumes: the assumption, checked on the run."""
    loss = run.spec.get("links", {}).get(link, {}).get("loss") or {}
    if loss.get("model") != "bernoulli":
        raise MissingData(f"the spec sets no Bernoulli loss on {link}")
    p = float(loss["rate"])
    figures = run.link_summary(link)
    if figures.arrivals_pkts is None or figures.loss_drops is None:
        raise MissingData(f"summary.json counts no arrivals or loss drops on {link}")
    n, k = float(figures.arrivals_pkts), float(figures.loss_drops)
    if n <= 0:
        raise MissingData(f"no packet crossed {link}")
    sd = math.sqrt(n * p * (1 - p)) / n
    per_million = 1e6
    return within(f"{link} background loss rate", k / n * per_million, max(p - sigmas * sd, 0.0) * per_million,
                  (p + sigmas * sd) * per_million,
                  f"Bernoulli({p:g}) over {n:.0f} packets: {n * p:.0f} drops expected ({k:.0f} seen), +-{sigmas:g} "
                  "binomial sigmas", "per million packets")


def _flows_running(run: StepRun, ccs: tuple[str, ...]) -> list[str]:
    flows = run.flow_ids(ccs)
    if not flows:
        raise MissingData(f"no flow of this run uses {' or '.join(ccs)}")
    return flows


def _port_mbps(run: StepRun, flow: str) -> float:
    """The flow's own access port (its sender's `<host>-gbe` link)."""
    return run.capacity_mbps(f"{run.flow_summary(flow).src}-gbe")


def _aimd_prediction(rows: pd.DataFrame, cap_mbps: float) -> tuple[float, float, float, int]:
    """Replay Reno from the flow's own loss events: at each one the window becomes the ssthresh it set,
    in between it grows one packet per RTT (each sample interval in its own srtt); one window per RTT,
    at most the port's payload rate. Returns (t0, t1, predicted mean Mb/s, losses)."""
    in_loss = rows["ca_state"].isin(LOSS_STATES).to_numpy()
    starts = loss_starts(rows, reductions=True)  # Reno only: its ssthresh falls only at a loss
    if not starts:
        raise MissingData("the Linux flow lost no packet: its average is not set by regrowth")
    first = starts[0]
    t = rows["t"].to_numpy()
    srtt_s = rows["srtt_ms"].to_numpy() / 1e3
    mss_bits = float(rows["mss_bytes"].iloc[-1]) * 8
    ssthresh = rows["ssthresh_pkts"].to_numpy()
    w, rate_sum, loss_set = float(ssthresh[first]), 0.0, set(starts)
    for i in range(first + 1, len(rows)):
        if i in loss_set:
            w = float(ssthresh[i])
        elif not in_loss[i]:
            w += (t[i] - t[i - 1]) / srtt_s[i]
        rate_sum += min(w * mss_bits / srtt_s[i] / 1e6, cap_mbps * SC2002_PAYLOAD) * (t[i] - t[i - 1])
    return float(t[first]), float(t[-1]), rate_sum / (t[-1] - t[first]), len(starts)


@checkpoint
def linux_set_by_regrowth(run: StepRun) -> CheckResult:
    """Each Reno flow's average after its first loss is what one-packet-per-RTT regrowth from its losses gives.

    The prediction never looks at the flow's cwnd: only at when it lost packets and the ssthresh each
    loss set. The worst flow's measured / predicted is reported. The replay is Reno's law (RFC 5681):
    a CUBIC flow is not held to it.

    What the replay leaves out bounds the ratio: during each recovery (about one RTT) the window's
    worth in flight at the loss, 2 x ssthresh, still arrives while the replay holds ssthresh, up to
    ssthresh packets more per loss; a recovery that falls back to a timeout restarts from one packet
    and slow-starts back to ssthresh, up to ssthresh x log2(ssthresh) packets less; and each end of
    the window is read at a 10-Hz sample, up to one sample interval of the flow's rate either way.
    """
    results: list[tuple[float, tuple[float, float]]] = []  # (measured / predicted, band) per flow
    notes = []
    for flow in _flows_running(run, ("reno",)):
        rows = run.flow(flow)
        t0, t1, predicted, losses = _aimd_prediction(rows, _port_mbps(run, flow))
        # The replay starts at the flow's first loss (a sample in recovery) and runs over exactly
        # [t0, t1]; the measurement must cover the same window, so its ends stay where they are
        # (not moved out of recovery): at t0 the cumulative ACK has just stopped at the hole, so the
        # window is credited at most one sample interval of data delivered before it.
        measured = run.goodput_mbps(flow, t0, t1, outside_recovery=False)
        mss_bits = float(rows["mss_bytes"].iloc[-1]) * 8
        packets = measured * 1e6 / mss_bits * (t1 - t0)
        starts = [i for i in loss_starts(rows, reductions=True) if rows["t"].iloc[i] >= t0]
        ssthresh = rows["ssthresh_pkts"].to_numpy(dtype=float)
        states = rows["ca_state"].to_numpy()
        more = sum(ssthresh[i] for i in starts)
        timeouts = [i for i in starts if states[i] == "loss"]
        less = sum(ssthresh[i] * math.log2(max(ssthresh[i], 2.0)) for i in timeouts)
        ends = 2 * float(rows["t"].diff().median()) * measured * 1e6 / mss_bits
        band = (1 - (less + ends) / packets, 1 + (more + ends) / packets)
        notes.append(f"{flow}: {measured:.1f} Mb/s measured, {predicted:.1f} predicted, {losses} losses "
                     f"({len(timeouts)} timeouts), band {band[0]:.4f}..{band[1]:.4f}")
        results.append((measured / predicted, band))
    # the flow nearest to (or furthest beyond) an edge of its band
    worst, worst_band = min(results, key=lambda rb: min(rb[0] - rb[1][0], rb[1][1] - rb[0]))
    result = within("Reno flows' average / AIMD replay of their own losses (worst flow)", worst, worst_band[0],
                    worst_band[1],
                    "Reno: each loss sets the window to ssthresh, then one packet per RTT, one window per RTT up to "
                    "the port's rate. The replay holds ssthresh through each recovery (the 2 x ssthresh in flight at "
                    "the loss still arrive: up to ssthresh more), takes no timeout's slow start (ssthresh x "
                    "log2(ssthresh) less) and the window's ends are 10-Hz samples (one interval's packets either "
                    "way): those packets over the flow's packets in the window are the band")
    result.note = "; ".join(notes)
    return result


@checkpoint
def fast_outlasts_linux(run: StepRun, t0: float = 10.0) -> CheckResult:
    """Under background loss every FAST flow averages more than every Linux flow, whichever RTT each has.

    From the models: after a loss FAST regains its window in seconds (its update law, lab 01), Reno in
    (W/2) RTTs, minutes at these windows; with losses every 12-15 s per flow Reno never gets back.
    """
    linux = _flows_running(run, ("reno", "cubic"))
    fast = run.flow_ids("fast")
    if not fast:
        raise MissingData("no flow of this run uses fast")
    rates = {f: run.goodput_mbps(f, t0, math.inf) for f in fast + linux}
    margin = min(rates[f] for f in fast) / max(rates[f] for f in linux)
    result = within("slowest FAST flow / fastest Linux flow", margin, 1.0, math.inf,
                    "> 1: FAST's regrowth after a loss takes seconds, Reno's minutes", "")
    result.note = ", ".join(f"{f} {rates[f]:.0f} Mb/s" for f in fast + linux)
    return result


