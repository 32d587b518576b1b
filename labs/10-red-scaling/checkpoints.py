"""Checkpoints of lab 10 (why TCP/RED does not scale and FAST does): the bottleneck's utilization,
how often its queue runs empty, RED's average against the model's fixed point, and how synchronized
the Reno flows' window cuts are, at each of four capacities carried by SHRiNK scaling (README.md),
each result with the linearized TCP/RED model's prediction for the point beside it
(fastlab.theory.red); and two checks of the mechanism that ties them together: the link delivers
what the flows' windows allow, and Reno regrows its window one packet per round trip.

A step's run carries N' flows through a C' = 100 Mb/s, 100 ms bottleneck; it stands for the slides'
N = 100 flows at C = C' N/N' (N' = 32, 16, 4, 1: 312 Mb/s, 625 Mb/s, 2.5 Gb/s, 10 Gb/s) with each
flow's window in packets, R C/N, kept. The model is evaluated at the carried point; red_theory.shrink
shows it is the real point's (the whole linearized loop is invariant; tests/unit/test_red_theory.py).

Figures are read from t0 (10 s: past every step's start-up, the slow-start overshoot and its recovery at
N' = 32 and 16) to a second before the run ends (the flows stop together and the queue drains).
"""

from __future__ import annotations

import numpy as np

from fastlab.labs.kit import CheckResult, MissingData, StepRun, checkpoint, loss_starts, within
from fastlab.theory.fast import packet_bits, run_mtu
from fastlab.theory.red import Point, Red, equilibrium, hmtg_condition, nyquist_gain_margin

REAL_FLOWS = 100  # the slides' experiment: 100 flows, 100 ms, 155 Mb/s .. 10 Gb/s (Low et al. 2002)
LINK = "bottleneck"
T0_S = 10.0
TAIL_S = 1.0


def _window(run: StepRun, t0: float) -> tuple[float, float]:
    end = float(run.spec["duration_s"]) - TAIL_S
    if end <= t0:
        raise MissingData(f"the run lasts {run.spec['duration_s']} s: nothing to read after {t0:g} s")
    return t0, end


def _carried(run: StepRun) -> tuple[int, float, float]:
    """(N' flows, C' packets/s, propagation RTT s) of the run, from its resolved spec."""
    args = run.spec.get("topology_args") or {}
    try:
        flows = sum(int(f.get("count", 1)) for f in run.spec["flows"])
        capacity_pps = float(args["rate_mbps"]) * 1e6 / packet_bits(run_mtu(run.spec))
        rtt_s = float(args["rtt_ms"]) / 1000
    except (KeyError, TypeError) as exc:
        raise MissingData(f"spec.yaml does not say the dumbbell's rate_mbps, rtt_ms and flows: {exc}") from None
    return flows, capacity_pps, rtt_s


def _red(run: StepRun) -> Red | None:
    aqm = ((run.spec.get("links") or {}).get(LINK) or {}).get("aqm")
    if not aqm or aqm.get("model") != "red":
        return None
    if aqm.get("mode", "packets") != "packets":
        raise MissingData("lab 10's model reads RED's thresholds in packets")
    return Red(float(aqm["min_th"]), float(aqm["max_th"]), float(aqm["max_p"]), float(aqm["wq"]),
               bool(aqm.get("gentle", True)))


def prediction(run: StepRun) -> str:
    """The model's figures for the run's point, in words: what the result prints beside its measurement."""
    flows, capacity_pps, rtt_s = _carried(run)
    carried_mbps = capacity_pps * packet_bits(run_mtu(run.spec)) / 1e6
    pipe = rtt_s * capacity_pps / flows
    head = (f"point: N' = {flows} flows at {carried_mbps:g} Mb/s stands for {REAL_FLOWS} flows at "
            f"{carried_mbps * REAL_FLOWS / flows / 1000:.3g} Gb/s (per-flow pipe R C/N = {pipe:.0f} pkts)")
    red = _red(run)
    ccs = {f.get("cc") for f in run.spec["flows"]}
    if red is not None and ccs == {"reno"}:
        point = Point(flows, capacity_pps, rtt_s, red)
        eq = equilibrium(point)
        h = hmtg_condition(point)
        gm = nyquist_gain_margin(point, eq)
        verdict = "stable" if gm > 1 else "UNSTABLE"
        return (f"{head}; model (Reno/RED fluid equilibrium, HMTG 2001 linearization): W* = {eq.window_pkts:.1f} pkts, "
                f"drop rate p* = {eq.p:.2g}, avg queue q* = {eq.queue_pkts:.0f} pkts; HMTG condition "
                f"{h.lhs:.3g} <= {h.rhs:.6g}: {'holds' if h.stable else 'fails'} (margin {h.margin:.2g}); exact gain "
                f"margin {gm:.2g}: {verdict}; a Reno sawtooth from W*/2 takes W*/2 RTTs = "
                f"{eq.window_pkts / 2 * eq.rtt_s:.1f} s to refill")
    if ccs == {"fast"}:
        alphas = [int((f.get("cc_args") or {}).get("alpha", 0)) * int(f.get("count", 1)) for f in run.spec["flows"]]
        return (f"{head}; model (FAST's equilibrium, Jin-Wei-Low 2004): the queue holds sum(alpha) = {sum(alphas)} "
                "pkts whatever the capacity, so the link never idles; stability does not depend on capacity")
    aqm = ((run.spec.get("links") or {}).get(LINK) or {}).get("aqm") or {}
    if aqm.get("model") in ("codel", "pie") and ccs == {"reno"}:
        target_ms = float(aqm.get("target_ms", 5 if aqm["model"] == "codel" else 15))
        queue = target_ms / 1000 * capacity_pps
        window = (rtt_s * capacity_pps + queue) / flows
        return (f"{head}; model ({aqm['model']}, a delay target): the queue held near {target_ms:g} ms = "
                f"{queue:.0f} pkts at this capacity, the same {target_ms:g} ms at any; each flow's window "
                f"(pipe + queue)/N = {window:.1f} pkts, Reno's drop rate 1.5/W^2 = {1.5 / window**2:.2g}")
    return (f"{head}; drop-tail: no AQM loop to linearize; Reno's sawtooth takes W/2 RTTs = "
            f"{rtt_s * capacity_pps / flows / 2 * rtt_s:.1f} s from W/2 back to the pipe")


def _backlog(run: StepRun, t0: float) -> tuple[np.ndarray, float, float]:
    t0, end = _window(run, t0)
    rows = run.link(LINK)
    rows = rows[(rows["t"] >= t0) & (rows["t"] <= end)]
    if len(rows) < 20:
        raise MissingData(f"fewer than 20 samples of {LINK} between {t0:g} and {end:g} s")
    return rows["backlog_pkts"].to_numpy(dtype=float), t0, end


def link_utilization(run: StepRun, t0: float) -> tuple[float, float, float]:
    """(the bottleneck's delivered rate over its capacity, t0, end) from t0 to a second before the end."""
    t0, end = _window(run, t0)
    rows = run.link(LINK)
    rows = rows[(rows["t"] >= t0) & (rows["t"] <= end)].dropna(subset=["tx_bytes"])
    if len(rows) < 20:
        raise MissingData(f"fewer than 20 samples of {LINK} between {t0:g} and {end:g} s")
    sent = float(rows["tx_bytes"].iloc[-1] - rows["tx_bytes"].iloc[0])
    span = float(rows["t"].iloc[-1] - rows["t"].iloc[0])
    return sent * 8 / (run.capacity_mbps(LINK) * 1e6 * span), t0, end


@checkpoint
def utilization(run: StepRun, lo: float, hi: float, why: str, t0: float = T0_S) -> CheckResult:
    """The bottleneck's delivered rate over its capacity from t0 to a second before the end."""
    used, t0, end = link_utilization(run, t0)
    result = within(f"{LINK} utilization {t0:g}-{end:g} s", used, lo, hi, f"{why} [{prediction(run)}]")
    result.of_link = LINK  # the link's bytes: a disturbance counts by what its flows lost together
    return result


@checkpoint
def queue_empty(run: StepRun, lo: float, hi: float, why: str, t0: float = T0_S) -> CheckResult:
    """The share of the bottleneck's backlog samples (every 50 ms) that found the queue empty: the
    oscillation's depth. An empty queue is a link that may be idling."""
    backlog, t0, end = _backlog(run, t0)
    share = float(np.mean(backlog <= 0))
    p5, p95 = np.quantile(backlog, [0.05, 0.95])
    return within(f"{LINK} queue empty, share of samples {t0:g}-{end:g} s", share, lo, hi,
                  f"{why} (the queue's p5-p95: {p5:.0f}-{p95:.0f} pkts) [{prediction(run)}]")


def cut_times(run: StepRun, t0: float, end: float) -> dict[str, np.ndarray]:
    """Per flow, when its window was cut (a loss recovery begins, or ssthresh falls: labs.loss_starts)."""
    cuts = {}
    for flow in sorted(run.flows["flow"].unique()):
        rows = run.flow(flow).reset_index(drop=True)
        times = rows.loc[loss_starts(rows, reductions=True), "t"].to_numpy(dtype=float)
        cuts[str(flow)] = times[(times >= t0) & (times <= end)]
    return cuts


@checkpoint
def synchronized_cuts(run: StepRun, lo: float, hi: float, why: str, t0: float = T0_S) -> CheckResult:
    """How synchronized the flows' window cuts are, over chance: for each cut, the share of the other
    flows that cut within one propagation RTT of it, averaged; divided by what independent flows would
    show (2 R times a flow's cut rate)."""
    t0, end = _window(run, t0)
    flows, _, rtt_s = _carried(run)
    cuts = cut_times(run, t0, end)
    if len(cuts) < 2:
        raise MissingData("synchronization needs at least two flows")
    events = [(f, t) for f, times in cuts.items() for t in times]
    if len(events) < 4:
        raise MissingData(f"only {len(events)} window cuts between {t0:g} and {end:g} s")
    together = [sum(1 for g, times in cuts.items() if g != f and np.any(np.abs(times - t) <= rtt_s)) / (len(cuts) - 1)
                for f, t in events]
    chance = min(1.0, 2 * rtt_s * len(events) / len(cuts) / (end - t0))
    ratio = float(np.mean(together)) / chance
    return within("window cuts together, over chance", ratio, lo, hi,
                  f"{why} (measured: {np.mean(together):.3f} of the other flows cut within {rtt_s * 1e3:.0f} ms of a "
                  f"cut; independent flows with the same {len(events)} cuts: {chance:.3f}) [{prediction(run)}]")


@checkpoint
def average_queue(run: StepRun, lo: float, hi: float, why: str, t0: float = T0_S) -> CheckResult:
    """RED's own average queue (links.csv aqm_avg_queue, the EWMA it drops by), its mean from t0 on, over
    the model's equilibrium q*: near 1 where the loop is stable and the queue sits at its fixed point;
    far below 1 where it is unstable, the queue swinging down to empty and the average following it."""
    flows, capacity_pps, rtt_s = _carried(run)
    red = _red(run)
    if red is None:
        raise MissingData(f"{LINK} has no RED in the spec")
    t0, end = _window(run, t0)
    rows = run.link(LINK)
    rows = rows[(rows["t"] >= t0) & (rows["t"] <= end)].dropna(subset=["aqm_avg_queue"])
    if len(rows) < 20:
        raise MissingData(f"fewer than 20 samples of RED's average queue between {t0:g} and {end:g} s")
    q_star = equilibrium(Point(flows, capacity_pps, rtt_s, red)).queue_pkts
    measured = float(rows["aqm_avg_queue"].mean())
    return within(f"RED's average queue over the model's q* ({t0:g}-{end:g} s)", measured / q_star, lo, hi,
                  f"{why} (measured mean {measured:.1f} pkts, q* = {q_star:.1f}) [{prediction(run)}]")


SAMPLE_S = 0.05  # flows.csv samples every flow every 50 ms: one bin per sampling round


@checkpoint
def window_limited(run: StepRun, lo: float = 0.94, hi: float = 1.07, t0: float = T0_S) -> CheckResult:
    """The link's utilization over what the flows' windows allow: each 50-ms round, the flows together
    send at most sum(cwnd x packet / srtt), the link at most its capacity; the mean of the smaller of the
    two over the window is the utilization the windows allow. Where the link idles it is because the
    windows are below the pipe (Reno's halvings refilled one packet an RTT), not because of anything
    else the emulation did."""
    t0, end = _window(run, t0)
    flows = run.flows[(run.flows["t"] >= t0) & (run.flows["t"] <= end)].dropna(subset=["cwnd_pkts", "srtt_ms"])
    if flows.empty:
        raise MissingData(f"flows.csv has no cwnd and srtt samples between {t0:g} and {end:g} s")
    capacity_bps = run.capacity_mbps(LINK) * 1e6
    offered = (flows["cwnd_pkts"] * packet_bits(run_mtu(run.spec)) / (flows["srtt_ms"] / 1000) / capacity_bps)
    rounds = offered.groupby((flows["t"] / SAMPLE_S).round().astype(int)).sum()
    allowed = float(np.minimum(rounds, 1.0).mean())
    used, _, _ = link_utilization(run, t0)
    return within(f"{LINK} utilization over what the windows allow ({t0:g}-{end:g} s)", used / allowed, lo, hi,
                  f"measured {used:.3f}, the windows allow {allowed:.3f}: the link delivers what the flows' windows "
                  f"put in flight, capped at its capacity; -6%..+7%: srtt is the kernel's smoothed RTT (a queue "
                  f"building in a round reads late) and a round's windows are sampled once (measured 0.977-1.036 "
                  f"over every run of lab 10's points, 2026-11-27: a tenth less delivered falls out) "
                  f"[{prediction(run)}]")


RECOVERED_S = 0.5  # after a cut, the window is read from this long on: fast recovery is over
MIN_SEGMENT_S = 2.0  # a stretch between two cuts this long at least, to fit a slope to


@checkpoint
def additive_increase(run: StepRun, lo: float = 0.9, hi: float = 1.1, t0: float = T0_S) -> CheckResult:
    """Reno's growth between cuts, in packets per round trip: the slope of each flow's cwnd over every
    stretch of at least 2 s without a cut (from half a second after one), times the stretch's mean srtt;
    the median over the stretches. One packet per RTT is why a halved window of W takes W/2 RTTs to
    refill the pipe: 42 s at the 10 Gb/s point."""
    t0, end = _window(run, t0)
    slopes = []
    for flow in sorted(run.flows["flow"].unique()):
        rows = run.flow(str(flow)).reset_index(drop=True)
        cuts = [float(rows["t"].iloc[0]), *rows.loc[loss_starts(rows, reductions=True), "t"].astype(float),
                float(rows["t"].iloc[-1])]
        # numpy arrays, not DataFrame masks: a run with thousands of cuts made this loop the unit tier's
        # slowest checkpoint (45 of its ~150 s in pandas indexing, 2026-11-28); the same rows are selected.
        t, cwnd, srtt = (rows[c].to_numpy(float) for c in ("t", "cwnd_pkts", "srtt_ms"))
        is_open = (rows["ca_state"] == "open").to_numpy()
        for a, b in zip(cuts, cuts[1:], strict=False):
            lo_t, hi_t = max(a + RECOVERED_S, t0), min(b - SAMPLE_S, end)
            seg = (t >= lo_t) & (t <= hi_t) & is_open
            if hi_t - lo_t >= MIN_SEGMENT_S and seg.sum() >= MIN_SEGMENT_S / SAMPLE_S / 2:
                slope = float(np.polyfit(t[seg], cwnd[seg], 1)[0])
                slopes.append(slope * float(np.nanmean(srtt[seg])) / 1000)
    if not slopes:
        raise MissingData(f"no flow ran {MIN_SEGMENT_S:g} s without a cut between {t0:g} and {end:g} s")
    return within("Reno's window growth between cuts, pkts per RTT", float(np.median(slopes)), lo, hi,
                  f"Reno's congestion avoidance adds one packet per round trip (Linux counts the packets each ACK "
                  f"covers, so delayed ACKs do not halve it); median of {len(slopes)} stretches, +-10%: a slope "
                  f"fitted to 50-ms samples of a window that rises by steps (measured 0.99-1.01) [{prediction(run)}]")


# --- Part 4: CoDel and PIE beside RED and drop-tail, at one capacity ------------------------------

def aqm_text(run: StepRun) -> str:
    """The bottleneck's queue discipline and the delay it aims at, in words."""
    aqm = ((run.spec.get("links") or {}).get(LINK) or {}).get("aqm") or {}
    model = aqm.get("model")
    if model == "codel":
        return (f"CoDel (RFC 8289): target {aqm.get('target_ms', 5):g} ms of sojourn time, interval "
                f"{aqm.get('interval_ms', 100):g} ms")
    if model == "pie":
        return f"PIE (RFC 8033): target {aqm.get('target_ms', 15):g} ms of queueing delay"
    if model == "red":
        return f"RED: min_th {aqm.get('min_th')} and max_th {aqm.get('max_th')} packets"
    return "drop-tail"


@checkpoint
def queue_delay(run: StepRun, lo: float, hi: float, why: str, t0: float = T0_S) -> CheckResult:
    """The bottleneck's mean queueing delay in ms from t0: its backlog samples (every 50 ms) in packet
    times (a packet that finds n packets queued waits n packet times at the link's rate). It is what
    every flow's RTT carries above the propagation delay, and what the AQMs compared here aim at."""
    backlog, t0, end = _backlog(run, t0)
    _, capacity_pps, _ = _carried(run)
    delays = backlog / capacity_pps * 1e3
    p5, p95 = np.quantile(delays, [0.05, 0.95])
    return within(f"{LINK} mean queueing delay {t0:g}-{end:g} s, ms", float(delays.mean()), lo, hi,
                  f"{why} ({aqm_text(run)}; the delay's p5-p95: {p5:.1f}-{p95:.1f} ms) [{prediction(run)}]", "ms")


def _drops(run: StepRun, t0: float) -> tuple[float, float, float, float]:
    """(AQM drops, buffer-overflow drops, packets delivered, end) on the bottleneck's forward direction
    from t0 to a second before the end: differences of linkemu's cumulative counters."""
    t0, end = _window(run, t0)
    rows = run.link(LINK)
    rows = rows[(rows["t"] >= t0) & (rows["t"] <= end)].dropna(subset=["tx_bytes"])
    if len(rows) < 20 or "queue_drops" not in rows:
        raise MissingData(f"fewer than 20 samples of {LINK}'s drop counters between {t0:g} and {end:g} s")

    def grew(column: str) -> float:
        if column not in rows or rows[column].isna().all():
            return 0.0  # drop-tail: no AQM, no AQM drops
        values = rows[column].dropna()
        return float(values.iloc[-1] - values.iloc[0])

    delivered = grew("tx_bytes") / (packet_bits(run_mtu(run.spec)) / 8)
    return grew("aqm_drops"), grew("queue_drops"), delivered, end


@checkpoint
def aqm_drops(run: StepRun, lo: float, hi: float, why: str, t0: float = T0_S) -> CheckResult:
    """The share of the bottleneck's drops that its AQM made early, the rest being the buffer overflowing:
    an AQM that holds the delay at its target never lets a two-BDP buffer fill."""
    aqm, overflow, delivered, end = _drops(run, t0)
    if aqm + overflow < 1:
        raise MissingData(f"{LINK} dropped nothing between {t0:g} and {end:g} s")
    return within(f"{LINK} drops made by the AQM, share ({t0:g}-{end:g} s)", aqm / (aqm + overflow), lo, hi,
                  f"{why} (measured: {aqm:.0f} early drops, {overflow:.0f} overflows, {delivered:.0f} packets "
                  f"delivered; {aqm_text(run)}) [{prediction(run)}]")


@checkpoint
def drop_rate(run: StepRun, lo: float, hi: float, why: str, t0: float = T0_S) -> CheckResult:
    """The bottleneck's drop rate (drops per packet delivered) over Reno's response function at the
    flows' measured mean window: a sawtooth between 2W/3 and 4W/3 loses one packet per cycle of W/3
    RTTs, W^2/2 packets: p = 1.5/W^2 (Mathis et al. 1997). Near 1 where each drop is a loss event of
    its own, as an AQM's spread-out drops are; above 1 where drops come in bursts."""
    aqm, overflow, delivered, end = _drops(run, t0)
    flows = run.flows[(run.flows["t"] >= t0) & (run.flows["t"] <= end)].dropna(subset=["cwnd_pkts"])
    if flows.empty or delivered < 1:
        raise MissingData(f"no windows or no deliveries between {t0:g} and {end:g} s")
    window = float(flows["cwnd_pkts"].mean())
    p = (aqm + overflow) / delivered
    p_reno = 1.5 / window**2
    return within(f"{LINK} drop rate over Reno's 1.5/W^2 ({t0:g}-{end:g} s)", p / p_reno, lo, hi,
                  f"{why} (measured: {p:.2g} of the delivered packets dropped, the flows' mean window "
                  f"{window:.1f} pkts gives 1.5/W^2 = {p_reno:.2g}; {aqm_text(run)}) [{prediction(run)}]")


# --- Part 5: a time-varying link: FAST and CUBIC following a capacity step ------------------------

def segments(run: StepRun) -> list[tuple[float, float, float]]:
    """The bottleneck's capacity over the run as (from s, to s, Mb/s): the topology's rate until the first
    scheduled step that sets one, each such step's from then on (links.bottleneck.schedule)."""
    link = (run.spec.get("links") or {}).get(LINK) or {}
    try:
        rate = float(link.get("rate_mbps") or (run.spec.get("topology_args") or {})["rate_mbps"])
        steps = [(float(s["at_s"]), float(s["rate_mbps"])) for s in link.get("schedule") or []
                 if s.get("rate_mbps") is not None]
        duration = float(run.spec["duration_s"])
    except (KeyError, TypeError, ValueError) as exc:
        raise MissingData(f"spec.yaml does not say the bottleneck's rate and schedule: {exc}") from None
    starts = [(0.0, rate), *steps]
    return [(a, b, r) for (a, r), (b, _) in zip(starts, [*starts[1:], (duration, 0.0)], strict=True)]


def _segment(run: StepRun, segment: int, settle_s: float = 0.0) -> tuple[float, float, float]:
    """(from s, to s, Mb/s) of one segment of the schedule, its end a second before the run's (the flows
    stop together); `segment` and `settle_s` as lab.yaml gave them, checked here (no schema types them)."""
    if isinstance(segment, bool) or not isinstance(segment, int):
        raise MissingData(f"segment: {segment!r} is not a segment number (0, 1, ...)")
    if isinstance(settle_s, bool) or not isinstance(settle_s, int | float) or not 0 <= settle_s < 3600:
        raise MissingData(f"settle_s: {settle_s!r} is not a number of seconds from 0 to 3600")
    spans = segments(run)
    if not 0 <= segment < len(spans):
        raise MissingData(f"the bottleneck's schedule has {len(spans)} segments: no segment {segment}")
    start, end, rate = spans[segment]
    return start, min(end, float(run.spec["duration_s"]) - TAIL_S), rate


def _alpha_pkts(run: StepRun) -> int:
    """The packets FAST's flows keep queued together: the sum of their alphas (0 without FAST)."""
    return sum(int((f.get("cc_args") or {}).get("alpha", 0)) * int(f.get("count", 1))
               for f in run.spec["flows"] if f.get("cc") == "fast")


def _base_rtt_s(run: StepRun) -> float:
    try:
        return float((run.spec.get("topology_args") or {})["rtt_ms"]) / 1000
    except (KeyError, TypeError, ValueError):
        raise MissingData("spec.yaml does not say the dumbbell's rtt_ms") from None


def _schedule_text(run: StepRun) -> str:
    return " -> ".join(f"{r:g} Mb/s from {a:g} s" for a, _, r in segments(run))


@checkpoint
def follows_capacity(run: StepRun, segment: int, settle_s: float, lo: float, hi: float, why: str) -> CheckResult:
    """What the bottleneck delivered over its scheduled capacity in one segment of the schedule, from
    `settle_s` after the capacity changed to the segment's end: the flow found the new capacity."""
    start, end, rate = _segment(run, segment, settle_s)
    rows = run.link(LINK)
    rows = rows[(rows["t"] >= start + settle_s) & (rows["t"] <= end)].dropna(subset=["tx_bytes"])
    if len(rows) < 20:
        raise MissingData(f"fewer than 20 samples of {LINK} between {start + settle_s:g} and {end:g} s")
    sent = float(rows["tx_bytes"].iloc[-1] - rows["tx_bytes"].iloc[0])
    span = float(rows["t"].iloc[-1] - rows["t"].iloc[0])
    return within(f"{LINK} delivered over its {rate:g} Mb/s, {start + settle_s:g}-{end:g} s",
                  sent * 8 / (rate * 1e6 * span), lo, hi, f"{why} (schedule: {_schedule_text(run)})")


@checkpoint
def settle_rtts(run: StepRun, segment: int, lo: float, hi: float, why: str, band_lo: float = 0.5,
                band_hi: float = 2.0) -> CheckResult:
    """How long after the capacity changed the queue came back to FAST's equilibrium for good, in base
    RTTs: the time of the last backlog sample (every 50 ms) in the segment outside [band_lo, band_hi] x
    sum(alpha), counted from the step. FAST's window update moves halfway (gamma 1/2) to its target
    every RTT, so the distance to equilibrium halves each RTT and a few tens of RTTs cover any step."""
    alpha = _alpha_pkts(run)
    if alpha <= 0:
        raise MissingData("no FAST flow: no alpha to settle at")
    start, end, rate = _segment(run, segment)
    rows = run.link(LINK)
    rows = rows[(rows["t"] >= start) & (rows["t"] <= end)].dropna(subset=["backlog_pkts"])
    if len(rows) < 20:
        raise MissingData(f"fewer than 20 samples of {LINK} between {start:g} and {end:g} s")
    backlog = rows["backlog_pkts"].to_numpy(dtype=float)
    times = rows["t"].to_numpy(dtype=float)
    outside = (backlog < band_lo * alpha) | (backlog > band_hi * alpha)
    last = float(times[outside][-1]) if outside.any() else start
    rtt = _base_rtt_s(run)
    peak = float(backlog.max())
    return within(f"FAST's queue back to alpha after the step to {rate:g} Mb/s at {start:g} s, base RTTs",
                  (last - start) / rtt, lo, hi,
                  f"{why} (the queue within {band_lo:g}-{band_hi:g} x alpha = {band_lo * alpha:.0f}-"
                  f"{band_hi * alpha:.0f} pkts for good from {last:.2f} s; its peak after the step {peak:.0f} pkts; "
                  f"base RTT {rtt * 1e3:.0f} ms; schedule: {_schedule_text(run)})")


@checkpoint
def segment_queue(run: StepRun, segment: int, settle_s: float, lo: float, hi: float, why: str,
                  per: str = "alpha") -> CheckResult:
    """The bottleneck's mean backlog in one segment of the schedule, from `settle_s` after the step to the
    segment's end, over sum(alpha) (per: alpha, FAST's equilibrium) or over the buffer (per: buffer, what
    a loss-based flow fills); the mean queueing delay it makes at the segment's capacity beside it."""
    start, end, rate = _segment(run, segment, settle_s)
    rows = run.link(LINK)
    rows = rows[(rows["t"] >= start + settle_s) & (rows["t"] <= end)].dropna(subset=["backlog_pkts"])
    if len(rows) < 20:
        raise MissingData(f"fewer than 20 samples of {LINK} between {start + settle_s:g} and {end:g} s")
    if per == "alpha":
        unit, scale = "sum(alpha)", float(_alpha_pkts(run))
    elif per == "buffer":
        unit, scale = "the buffer", float(run.buffer_pkts(LINK))
    else:
        raise MissingData(f"per: {per!r} is neither alpha nor buffer")
    if scale <= 0:
        raise MissingData(f"{unit} is 0 packets: nothing to compare the queue with")
    mean = float(rows["backlog_pkts"].mean())
    delay_ms = mean * packet_bits(run_mtu(run.spec)) / (rate * 1e6) * 1e3
    return within(f"{LINK} mean queue over {unit}, {start + settle_s:g}-{end:g} s", mean / scale, lo, hi,
                  f"{why} (measured mean {mean:.0f} pkts, {unit} {scale:.0f} pkts: {delay_ms:.0f} ms of queueing "
                  f"at {rate:g} Mb/s; schedule: {_schedule_text(run)})")
