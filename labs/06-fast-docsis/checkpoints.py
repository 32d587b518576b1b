"""Checkpoints of lab 06 (FAST over DOCSIS against the simple link).

Each alpha-sweep run steps FAST's alpha up every few seconds (`cc_changes`); a segment's figures are
taken over its second half, after FAST has settled on the new alpha. Utilization is the flows'
goodput plus headers over the 3 Mb/s downstream. The perceived queue is FAST's own estimate
w(1 - baseRTT/avgRTT); the real queue is the CMTS downstream backlog the emulator reports.

Every bound follows from fastlab's models, which the lab runs:
- the upstream MAC (linkemu/README.md, policy docsis): a lone request waits (0, 2] ms for the
  contention slot, 4 ms to its grant (0.45 ms transit + 1.6 ms lookahead, rounded up to 2 ms MAPs)
  and then crosses the 2.56 Mb/s PHY (84-byte ping 0.26 ms, 52-byte ACK 0.16 ms); a piggybacked
  request is sent at a grant's start and also waits 4 ms, so no upstream frame waits less;
- the downstream shaper (3 Mb/s, bucket 3044 bytes, peak 38 Mb/s: a 1500-byte packet that finds
  tokens leaves in 0.32 ms; one short of tokens waits whole 4-ms slots) and the simple link's
  serialization (1500 bytes at 3 Mb/s: 4 ms, a 52-byte ACK at 512 kb/s: 0.81 ms);
- the calibrated phantom element where the step has it -- NOT a mechanism: a curve fitted to the
  2005 study's fixed-window mean RTTs and two-flow alpha (bench/docsis.py --fit; linkemu/phantom.h):
  every downstream packet is delayed after the shaper by D = max_delay x min(1, u / knee) x N^k, u
  the load of the last second, N the equally loaded flows it carried (1 for one flow). Its
  parameters are read from the run's own environment.json;
- EPSILON_MS for what the hosts and the emulators' wake-ups add to any RTT;
- FAST's floored update (fast_core.h, gamma = 1/2): w <- floor((w + w_old d/D + alpha)/2). With
  w_old = w it holds w exactly while the perceived backlog q = w(1 - d/D) is in (alpha - 2, alpha],
  grows while q <= alpha - 2 and shrinks while q > alpha. A window below the BDP has q >= 0, so at
  alpha = 1 (and, once any delay noise makes q > 0, at alpha = 2) every window <= BDP is a fixed
  point and the floored update can only lower it: where it sits is where the start left it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from fastlab.labs.kit import CheckResult, MissingData, StepRun, checkpoint, within

PACKET_BYTES = 1500
# Hosts, bridges and the emulators' wake-ups add to any RTT: ~0.1 ms per emulator crossing here (an
# idle ping crosses four: the path and the cable link, each way), up to ~0.4 ms each on a loaded or
# virtual machine (fastlab/measure/fidelity.py); the simple link's steps measure it alone (0.49-0.52 ms in the
# recorded runs).
EPSILON_MS = 1.5


@dataclass(frozen=True)
class Segment:
    alpha: int
    start: float
    end: float

    @property
    def settled(self) -> tuple[float, float]:
        return (self.start + self.end) / 2, self.end


def segments(run: StepRun) -> list[Segment]:
    """(alpha, start, end) of each part of the run, from the first flow's alpha and the cc_changes."""
    changes = sorted((float(c["at_s"]), int(c["args"]["alpha"])) for c in run.spec.get("cc_changes", [])
                     if "alpha" in c["args"])
    points = [(0.0, int(run.spec["flows"][0]["cc_args"]["alpha"])), *changes]
    ends = [t for t, _ in points[1:]] + [float(run.spec["duration_s"])]
    return [Segment(alpha, start, end) for (start, alpha), end in zip(points, ends, strict=True)]


def _flow_utilizations(run: StepRun, segment: Segment) -> dict[str, float]:
    """Each flow's share of the downstream's capacity over the segment's settled half."""
    return {f: run.utilization(f, "cable", *segment.settled) for f in run.flow_ids()}


def _utilization(run: StepRun, segment: Segment) -> float:
    return sum(_flow_utilizations(run, segment).values())


def _real_backlog(run: StepRun, t0: float, t1: float) -> float:
    rows = run.link("cable")
    # keep the emulator's own counter series only: its byte counter never runs backwards
    rows = rows[rows["tx_bytes"] >= rows["tx_bytes"].cummax()]
    rows = rows[(rows["t"] >= t0) & (rows["t"] <= t1)]
    if rows.empty:
        raise MissingData(f"links.csv has no cable samples in {t0:g}..{t1:g} s")
    return float(rows["backlog_pkts"].mean())


def _perceived_backlog(run: StepRun, t0: float, t1: float) -> float:
    total = 0.0
    for flow in run.flow_ids():
        updates = run.events(flow)
        updates = updates[(updates["event"] == "update") & (updates["t"] >= t0) & (updates["t"] <= t1)]
        if updates.empty:
            raise MissingData(f"cc_events.csv has no FAST updates of flow {flow} in {t0:g}..{t1:g} s")
        total += float(updates["backlog"].mean())
    return total


def utilization_table(run: StepRun) -> pd.DataFrame:
    """Per alpha: utilization, FAST's perceived queue and the real CMTS queue (packets, all flows)."""
    rows = []
    for s in segments(run):
        flows = _flow_utilizations(run, s)
        total = sum(flows.values())
        rows.append({"alpha": s.alpha, "utilization": total, "perceived": _perceived_backlog(run, *s.settled),
                     "real": _real_backlog(run, *s.settled),
                     "shares": {f: u / total for f, u in flows.items()} if total > 0 else None})
    return pd.DataFrame(rows)


@checkpoint
def alpha_for_full_utilization(run: StepRun, lo: int | None = None, hi: int | None = None,
                               threshold: float = 0.95) -> CheckResult:
    """The smallest alpha from which on every segment reaches `threshold` utilization. Without `lo` and `hi`
    the band is the model's, from the run's own element and baseRTTs (model_alpha_band)."""
    table = utilization_table(run)
    full = table["utilization"] >= threshold
    needed = next((int(table["alpha"].iloc[i]) for i in range(len(table)) if full.iloc[i:].all()), None)
    measured = float(needed) if needed is not None else float("inf")
    phantom = phantom_of(run)
    flows = flow_count(run)
    per_flow = phantom_packets(run, phantom, 1.0) / flows
    absorbed = base_rtt_absorbed(run, 1.0) / flows if phantom is not None else 0.0
    delay = phantom_delay_ms(phantom, 1.0, flows) if phantom is not None else 0.0
    element = ("" if phantom is None else
               f" plus the calibrated element's {phantom['max_delay_ms']:g} ms x {flows}^"
               f"{phantom.get('flow_exponent', 0.0):g} = {delay:g} ms at full load, x each flow's "
               f"{downstream_pps(run) / flows:g} packets/s = {per_flow:.1f} packets (it delays every packet after "
               "the shaper, so the CMTS queue never holds them)"
               + ("" if flows == 1 else
                  f", less what the flows' own baseRTTs already hold of it (a flow whose first samples carried the "
                  f"others' load: {absorbed:.1f} packets a flow in this run)")
               + f": m = {per_flow - absorbed:.1f}..{per_flow + MAC_MISREAD_MAX:.1f}, so from the first of the "
               "run's alphas above m to the first with alpha - 2 >= m")
    name = f"smallest alpha{' per flow' if flows > 1 else ''} with utilization >= {threshold:.0%}"
    if lo is None or hi is None:
        lo, hi = model_alpha_band([int(a) for a in table["alpha"]], per_flow - absorbed, per_flow + MAC_MISREAD_MAX)
    result = within(name, measured, lo, hi,
                    "the floored update holds each flow's perceived backlog q in (alpha-2, alpha]; the real queue "
                    "is q less the delay FAST misreads as queueing, m packets a flow: the MAC's wait above its "
                    "minimum, <= 1.4 (the 'perceived - real' check)" + element + "; so the queue never empties "
                    "once alpha - 2 >= m"
                    + ("" if flows == 1 else f" for each of the {flows} flows (n flows keep n (alpha - 2) packets "
                       "at least: without an element alpha - 2 >= 0 for each flow, the sum then above the MAC's "
                       "1.4 from alpha 2.7 on: the alpha per flow halves)")
                    + ": of the run's alphas 1, 2, 4, 8, ..., alpha = 4 where m <= 1.4. alpha 1 and 2 hold whatever "
                    "window the start left (below the BDP). From alpha = 2's window alpha = 4 adds up to two packets "
                    "per RTT (floor((4 - q)/2) while q <= 2): 14 -> 27 packets takes ~7 RTTs, under a second, "
                    "inside the short form's 3-s segments before their settled second half")
    result.note = "utilization by alpha: " + ", ".join(f"{a}: {u:.2f}" for a, u in zip(table["alpha"],
                                                                                        table["utilization"],
                                                                                        strict=True))
    return result


MAC_MISREAD_MAX = 1.4  # packets: the MAC's wait above its minimum, at most, at 3 Mb/s (queue_fast_misreads)


def model_alpha_band(alphas: list[int], m_lo: float, m_hi: float) -> tuple[int, int]:
    """The run's alphas the floored update allows as the first full one. The perceived backlog q lies in
    (alpha - 2, alpha] and the real queue is q - m: no alpha <= m can fill the link (necessary: alpha > m),
    every alpha with alpha - 2 >= m does (sufficient). So from the first alpha above m's low end to the first
    with alpha - 2 at or above its high end (the last alpha run if none is)."""
    ordered = sorted(alphas)
    first = next((a for a in ordered if a > m_lo), ordered[-1])
    return first, next((a for a in ordered if a - 2 >= m_hi), ordered[-1])


@checkpoint
def utilization_at(run: StepRun, alpha: int, lo: float, hi: float = 1.02) -> CheckResult:
    """Utilization of the downstream in the segment run with `alpha`."""
    for segment in segments(run):
        if segment.alpha == alpha:
            return within(f"utilization at alpha {alpha}", _utilization(run, segment), lo, hi,
                          "alpha = 1 holds any window below the BDP, so the start decides: IW 10 -> 11 at the first "
                          "update, slow-start-like MI doubles it to 21 within the next RTT, whose burst queues at "
                          "the 3 Mb/s bottleneck, so the second update leaves MI at floor((21 + 11 d/D + 1)/2) = 15 "
                          "and the next ones, while the RTT average still holds that queue, lower it further: to 14 "
                          "with one flow, to 10-12 each with two (two bursts, d/D down to 0.7). Afterwards the "
                          "floored update can only lower it, one packet each time avgRTT rises D/w (~8 ms) above "
                          "baseRTT so that q > 1: on the simple link each delayed ACK releases two packets back to "
                          "back, the second waits a packet time (4 ms), and the average peaks at two (8-9 ms), which "
                          "ratchets one flow's window to 12 and no further (12 x 9/110 < 1); on DOCSIS it peaks at "
                          "~6 ms. One flow: 12-16 packets over C x RTT = 250/s x 105-112 ms: 0.43-0.61; two flows: "
                          "2 x 10 = 20 packets or more: >= 0.71")
    raise MissingData(f"the run has no segment with alpha {alpha}")


def phantom_of(run: StepRun) -> dict[str, float] | None:
    """The calibrated phantom element of the cable's downstream, as the run applied it (environment.json),
    or None where the run has none."""
    policy = run.resolved("cable").policy or {}
    phantom = policy.get("phantom")
    return {k: float(v) for k, v in phantom.items() if k != "model"} if phantom else None


def phantom_delay_ms(phantom: dict[str, float], load: float, flows: float = 1.0) -> float:
    """The element's curve: D = max_delay x min(1, u / knee) x N^k (k = 0 for the load-only element)."""
    return (phantom["max_delay_ms"] * min(1.0, max(0.0, load) / phantom["knee"])
            * flows ** phantom.get("flow_exponent", 0.0))


def flow_count(run: StepRun) -> int:
    """The run's flows (all of one host pair here, with equal alphas: equally loaded, N = their count)."""
    return len(run.flow_ids())


def downstream_pps(run: StepRun) -> float:
    """The downstream's rate in packets of PACKET_BYTES a second."""
    return float(run.spec["topology_args"].get("downstream_mbps", 3.0)) * 1e6 / (PACKET_BYTES * 8)


def equal_flows(shares: dict[str, float] | None, run: StepRun) -> float:
    """N of the element: the equally loaded flows the traffic amounts to, (sum of shares)^2 / sum of their
    squares; the run's flow count when the shares are not given (flows with equal alphas: equal shares)."""
    if not shares:
        return float(flow_count(run))
    return sum(shares.values()) ** 2 / sum(v * v for v in shares.values())


def phantom_packets(run: StepRun, phantom: dict[str, float] | None, utilization: float,
                    shares: dict[str, float] | None = None) -> float:
    """Packets' worth of the phantom delay at a segment's load, all flows together: each flow counts D x its
    packet rate as queue, and the flows' rates add up to the downstream's at that load."""
    if phantom is None:
        return 0.0
    delay = phantom_delay_ms(phantom, utilization, equal_flows(shares, run))
    return delay / 1000 * downstream_pps(run) * utilization


def base_rtt_absorbed(run: StepRun, utilization: float, shares: dict[str, float] | None = None) -> float:
    """Packets of the element's delay that sit in the flows' own baseRTTs, all flows together: a flow whose
    first RTT sample already carried the other flows' load has that much of the delay in d, where it
    costs nothing (a delay present from a flow's first packet is not queueing to FAST). Each flow at its
    share of the load (equal when not given), its baseRTT above the least flow's: 0 for one flow."""
    updates = run.cc_events[run.cc_events["event"] == "update"]
    if updates.empty:
        raise MissingData("cc_events.csv has no FAST updates")
    base = updates.groupby("flow")["base_rtt_us"].min() / 1000
    flows = flow_count(run)
    pps = downstream_pps(run) * utilization
    return float(sum((d - base.min()) / 1000 * pps * (shares[str(f)] if shares else 1 / flows)
                     for f, d in base.items()))


ABSORBED_SAID = ", less what the flows' own baseRTTs hold of it"


@checkpoint
def queue_fast_misreads(run: StepRun, lo: float, hi: float, min_alpha: int = 4) -> CheckResult:
    """FAST's perceived queue minus the real CMTS queue, averaged over the segments with alpha >= min_alpha."""
    table = utilization_table(run)
    table = table[table["alpha"] >= min_alpha]
    if table.empty:
        raise MissingData(f"the run has no segment with alpha >= {min_alpha}")
    gap = float((table["perceived"] - table["real"]).mean())
    phantom = phantom_of(run)
    flows = flow_count(run)
    misread = float(sum(phantom_packets(run, phantom, u, shares) - (base_rtt_absorbed(run, u, shares) if phantom
                                                                       else 0.0)
                        for u, shares in zip(table["utilization"], table["shares"], strict=True)) / len(table))
    lo, hi = lo + misread, hi + misread
    phantom_said = ("" if phantom is None else
                    f" On top, the calibrated element: {phantom['max_delay_ms']:g} ms x min(1, u / "
                    f"{phantom['knee']:g}) x N^{phantom.get('flow_exponent', 0.0):g} at the segments' load u"
                    + (f" and flows' shares (N = {flows} equal flows at most)" if flows > 1 else " (one flow: N = 1)")
                    + ", "
                    f"times the packet rate{ABSORBED_SAID if flows > 1 else ''}: "
                    f"{misread:.1f} packets FAST counts as queue that the CMTS never holds (it is added after the "
                    "shaper).")
    result = within("perceived - real queue", gap, lo, hi,
                    "FAST's estimate w(1 - d/D) is the rate (250 packets/s, 0.25 per ms) times every delay above "
                    "baseRTT; the real queue's share of it is the emulator's backlog. The rest: on DOCSIS the "
                    "MAC's wait above its minimum, at most one 2 ms MAP (0.5 packet), on the simple link none; on "
                    f"both the hosts' and emulators' {EPSILON_MS:g} ms at most (0.4 packet). Both sides are "
                    "averages of a queue the floored window moves by a packet, sampled differently (the backlog "
                    "at 10 Hz, the estimate at each update): +-0.5. Up to a packet under as well: on the simple "
                    "link the packet in service is inside baseRTT (its 4 ms serialization) yet may be in the "
                    "emulator's backlog, and while the window still climbs (right after a step of alpha in a 3 s "
                    "segment) the RTT samples are a round trip old. The check averages the segments from "
                    f"alpha {min_alpha} on, of which only the first may still climb: that packet counts a fraction. "
                    "DOCSIS -1..1.4 (0.5 + 0.4 + 0.5 above; 0.5 + 1/3 below, rounded out), simple "
                    "-1.85..0.9 (0.4 + 0.5 above; the packet in service 1 + 0.5 + 1/3 below)." + phantom_said,
                    "packets")
    result.note = ", ".join(f"alpha {a}: {p:.1f} vs {r:.1f}" for a, p, r in
                            zip(table["alpha"], table["perceived"], table["real"], strict=True))
    return result


def _fast_delays(run: StepRun, flow: str, t0: float, t1: float) -> tuple[float, float]:
    """A flow's (avgRTT, baseRTT) in ms as FAST held them over [t0, t1]: the mean of its updates' avgRTT and
    the least baseRTT it had by then."""
    updates = run.events(flow)
    updates = updates[updates["event"] == "update"]
    inside = updates[(updates["t"] >= t0) & (updates["t"] <= t1)]
    if inside.empty:
        raise MissingData(f"cc_events.csv has no FAST updates of flow {flow} in {t0:g}..{t1:g} s")
    return float(inside["avg_rtt_us"].mean()) / 1000, float(updates[updates["t"] <= t1]["base_rtt_us"].min()) / 1000


@checkpoint
def share_follows_base_rtts(run: StepRun, min_alpha: int) -> CheckResult:
    """The larger flow's share of the goodput against FAST's equilibrium with each flow's own baseRTT,
    averaged over the segments with alpha >= min_alpha."""
    flows = run.flow_ids()
    if len(flows) != 2:
        raise MissingData(f"the run has {len(flows)} flows; this check compares two")
    measured, low, high, notes = [], [], [], []
    for segment in (s for s in segments(run) if s.alpha >= min_alpha):
        rates = [run.goodput_mbps(f, *segment.settled) for f in flows]
        delays = [_fast_delays(run, f, *segment.settled) for f in flows]
        big = 0 if rates[0] >= rates[1] else 1
        inv = [1 / max(avg - base, 1e-3) for avg, base in delays]  # x_i = q_i / (D_i - d_i)
        a, b, q = inv[big], inv[1 - big], float(segment.alpha)
        measured.append(rates[big] / sum(rates))
        low.append((q - 2) * a / ((q - 2) * a + q * b))
        high.append(q * a / (q * a + (q - 2) * b))
        notes.append(f"alpha {segment.alpha}: {measured[-1]:.3f} (baseRTTs {delays[0][1]:.1f}/{delays[1][1]:.1f} "
                     f"ms, avgRTT {delays[0][0]:.1f}/{delays[1][0]:.1f})")
    if not measured:
        raise MissingData(f"the run has no segment with alpha >= {min_alpha}")
    result = within("the larger flow's share of the goodput", sum(measured) / len(measured),
                    sum(low) / len(low), sum(high) / len(high),
                    "FAST gives each flow a perceived backlog x_i (D_i - d_i) in (alpha - 2, alpha] (the floored "
                    "update), so its rate is x_i = q_i / (D_i - d_i): with D_i its avgRTT and d_i its own baseRTT. "
                    "Both flows cross the same queue and element (D_1 ~ D_2), but a flow whose first RTT samples "
                    "already carried the other's load holds part of the element's delay in d: it counts less of "
                    "it as queue and takes more of the link. The band: both flows at the ends of the floor band, "
                    "q_big/q_small from (alpha-2)/alpha to alpha/(alpha-2), averaged over the segments; equal "
                    "baseRTTs make it ~0.5 either way")
    result.note = "; ".join(notes)
    return result


PING_IP_BYTES = 84  # ping's default 56 bytes of data + ICMP 8 + IPv4 20
DATA_IP_BYTES = 1500
ACK_IP_BYTES = 52  # IPv4 20 + TCP 20 + timestamps 12


def _simple_serialization_ms(run: StepRun, down_bytes: int, up_bytes: int) -> float:
    """On the simple link every packet is serialized at the link's rate (the DOCSIS downstream is a
    token bucket with a 38 Mb/s peak and the upstream a MAC whose waits the bounds already hold):
    a packet down plus its answer up, ms."""
    args = run.spec.get("topology_args", {})
    if args.get("mode", "docsis") != "simple":
        return 0.0
    down_bps = float(args.get("downstream_mbps", 3.0)) * 1e6
    up_bps = float(args.get("upstream_kbps", 512.0)) * 1e3
    return (down_bytes * 8 / down_bps + up_bytes * 8 / up_bps) * 1000


# Linux's initial window (RFC 6928), the first round trip's load on the element (segments of PACKET_BYTES)
INITIAL_WINDOW_PKTS = 10


def first_window_element_ms(run: StepRun, phantom: dict[str, float] | None) -> float:
    """The calibrated element's delay on the last packet of the flow's first window: its load then is that
    window over the element's load window (u = IW x 1500 B x 8 / (rate x window)), nothing before it."""
    if phantom is None:
        return 0.0
    rate_bps = float(run.spec["topology_args"].get("downstream_mbps", 3.0)) * 1e6
    load = INITIAL_WINDOW_PKTS * PACKET_BYTES * 8 / (rate_bps * phantom["window_ms"] / 1000)
    return phantom_delay_ms(phantom, load)


@checkpoint
def base_rtt_extra(run: StepRun, lo_ms: float, hi_ms: float) -> CheckResult:
    """FAST's baseRTT (the smallest RTT any of its flows saw under load) above the path's base RTT."""
    base = float(run.spec["topology_args"].get("base_rtt_ms", 100.0))
    events = run.cc_events
    updates = events[events["event"] == "update"]
    if updates.empty:
        raise MissingData("cc_events.csv has no FAST updates")
    ser = _simple_serialization_ms(run, DATA_IP_BYTES, ACK_IP_BYTES)
    extra = float(updates["base_rtt_us"].min()) / 1000 - base - ser
    phantom = phantom_of(run)
    element = first_window_element_ms(run, phantom)
    element_said = ("" if phantom is None else
                    f" With the calibrated element the sample also carries the element's delay at the load of the "
                    f"first round trip, the only time the load is low: 0 for the flow's first packet up to "
                    f"{element:.1f} ms for the last of its initial window ({INITIAL_WINDOW_PKTS} x {PACKET_BYTES} B "
                    f"over {phantom['window_ms']:g} ms at the downstream rate, u = "
                    f"{element / phantom['max_delay_ms'] * phantom['knee']:.3f}, D = {phantom['max_delay_ms']:g} ms "
                    f"x u / {phantom['knee']:g}); the upper end rises by it. Every later sample sees more load "
                    "(the run's RTT samples show it), so the minimum is one of the first window's")
    return within("FAST's baseRTT above base" + (f" and {ser:.2f} ms of serialization" if ser else ""), extra,
                  lo_ms, hi_ms + element,
                  "DOCSIS: the fastest sample is a data packet that found tokens (0.32 ms at the 38 Mb/s peak) "
                  "whose ACK waited least in the MAC: 4 ms to the grant and 0.16 ms on the PHY at best (a "
                  "piggybacked request waits 4 ms too), plus the contention phase, which need not reach 0 over the "
                  "run (the downstream sends a packet every 4 ms = 2 MAPs, so the ACKs' phase can lock): "
                  f"4.5..6.5 ms, plus the hosts' and emulators' 0..{EPSILON_MS:g} ms: 4.4..8.0." + element_said
                  + " Simple link: the packet's own serialization is physics and is taken off first (a 1500-byte "
                  f"packet at 3 Mb/s: 4.0 ms, its ACK at 512 kb/s: 0.81 ms); the rest is the 0..{EPSILON_MS:g} ms",
                  "ms")


@checkpoint
def idle_extra_rtt(run: StepRun, lo_ms: float, hi_ms: float) -> CheckResult:
    """Idle ping RTT (minimum) above the path's base RTT, before any flow starts."""
    base = float(run.spec["topology_args"].get("base_rtt_ms", 100.0))
    idle = run.summary.idle_rtt
    if not idle or idle[0].min_ms is None:
        raise MissingData("summary.json has no idle RTT")
    ser = _simple_serialization_ms(run, PING_IP_BYTES, PING_IP_BYTES)
    extra = float(idle[0].min_ms) - base - ser
    pings = idle[0].pings if idle[0].pings is not None else 10
    worst_phase = 2 * (1 - 0.01 ** (1 / pings))
    return within("idle RTT above base" + (f" and {ser:.2f} ms of serialization" if ser else ""), extra,
                  lo_ms, hi_ms,
                  "DOCSIS: a lone upstream ping waits (0, 2] ms for the contention slot, 4 ms to its grant and "
                  f"0.26 ms on the PHY: 4.26..6.26 ms; the minimum of {pings} pings sent at random phases of the "
                  f"2 ms MAP grid waits less than {worst_phase:.2f} ms for its slot at 99 % (2 (1 - 0.01^(1/"
                  f"{pings}))), plus the hosts' and emulators' 0..{EPSILON_MS:g} ms: 4.2..6.5 for 10 pings. "
                  "Simple link: the ping's own serialization (84 bytes: 0.22 ms down at 3 Mb/s, 1.31 ms up at "
                  f"512 kb/s) is taken off first; the rest is the 0..{EPSILON_MS:g} ms", "ms")


# --- the fixed-window step: the study's measurement, the element's own figures ----------------------

WINDOW_WARMUP_S = 3.0  # slow start to the clamp (~1 s) and one load window (1 s) of the element


def _window_rtts(run: StepRun) -> tuple[float, float, float]:
    """(mean, minimum, idle) RTT in ms of the clamped flow after the warm-up: the mean and minimum of every
    ACK's RTT sample (rtt_samples.csv), and the idle pings' minimum before the flow."""
    rows = run.rtt_samples
    rows = rows[(rows["t"] >= WINDOW_WARMUP_S) & (rows["samples"] > 0)]
    if len(rows) < 3:
        raise MissingData(f"rtt_samples.csv has fewer than 3 seconds of samples after {WINDOW_WARMUP_S:g} s")
    mean = float((rows["mean_rtt_ms"] * rows["samples"]).sum() / rows["samples"].sum())
    idle = run.summary.idle_rtt
    if not idle or idle[0].min_ms is None:
        raise MissingData("summary.json has no idle RTT")
    return mean, float(rows["min_rtt_ms"].min()), float(idle[0].min_ms)


@checkpoint
def window_mean_rtt(run: StepRun, lo_ms: float, hi_ms: float) -> CheckResult:
    """The mean RTT of a flow whose window is held fixed at 30 packets: the study's figure."""
    mean, _, idle = _window_rtts(run)
    phantom = phantom_of(run)
    said = ("no calibrated element in this run" if phantom is None else
            f"the calibrated element adds {phantom['max_delay_ms']:g} ms x min(1, u / {phantom['knee']:g}) (one flow: "
            "N^k = 1)")
    result = within("mean RTT, window 30", mean, lo_ms, hi_ms,
                    "the study's band for windows of 20-38 packets at 3 Mb/s (mean RTT ~145 ms). IN SAMPLE: the "
                    "calibrated element was fitted to these very figures (bench/docsis.py --fit, bench/data/"
                    "atov2005.yaml), so this checks that the fit holds in this run, not a prediction. Without the "
                    "element the sourced MAC and shaper give the idle RTT plus a few ms (step mechanistic)", "ms")
    result.note = f"idle RTT {idle:.1f} ms; {said}"
    return result


@checkpoint
def window_min_rtt_rise(run: StepRun, at_least: float = 0.5) -> CheckResult:
    """How much of the mean RTT's rise above the idle RTT the minimum RTT shows: every packet is late, not a few."""
    mean, least, idle = _window_rtts(run)
    if mean - idle <= 1.0:
        raise MissingData(f"the mean RTT is only {mean - idle:.2f} ms above the idle RTT: nothing to compare")
    share = (least - idle) / (mean - idle)
    result = within("minimum RTT's rise / mean RTT's rise", share, at_least, 1.05,
                    f"out of sample (the element was fitted to mean RTTs only): the study found the minimum RTT rising "
                    f"with the window, at least half as much as the mean (>= {at_least:g}); a delay that hit a few "
                    "packets (bursts, a queue) would leave the minimum at the idle RTT (0). The element delays every "
                    "packet by D(u) of the last second's load, which a fixed window keeps steady: its model gives "
                    "the minimum all of the rise but the queue's and the MAC's variation, ~0.9; above 1 (+0.05 "
                    "for the per-second minima's granularity) the minimum would exceed the mean", "")
    result.note = f"mean {mean:.1f} ms, minimum {least:.1f} ms, idle {idle:.1f} ms"
    return result


@checkpoint
def window_rate(run: StepRun) -> CheckResult:
    """Goodput over window / mean RTT: a window-limited flow sends a window per round trip."""
    mean, _, _ = _window_rtts(run)
    flow = run.flow_ids()[0]
    window = float(run.spec["flows"][0]["max_cwnd_pkts"])
    mss = float(run.flow(flow)["mss_bytes"].dropna().median())
    end = float(run.spec["duration_s"])
    goodput = run.goodput_mbps(flow, WINDOW_WARMUP_S, end)
    expected = window * mss * 8 / 1e3 / mean
    result = within("goodput / (w x MSS / mean RTT)", goodput / expected, 0.9, 1.1,
                    "below the path's BDP + buffer nothing is lost and the window stays at w: the flow delivers w "
                    "segments per mean RTT (+-10 %: the goodput window's ends at 10 Hz and the RTT samples' own "
                    "spread). With the element this is what makes the study's link 'highly, but not fully, "
                    "utilised': 30 packets over ~145 ms is 2.4 of the 3 Mb/s")
    result.note = f"{goodput:.2f} Mb/s against {expected:.2f} Mb/s"
    return result
