"""The kernel's AQM qdiscs for a tc-shaped direction (pure): the spec's RED, CoDel and PIE models (the
papers' units, which linkemu runs as written) mapped onto what sch_red, sch_codel and sch_pie can express,
what they cannot refused in one line naming the field, and what the kernel actually gets (`TcAqm.effective`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from fastlab.define.schema import (
    CodelAqm,
    PieAqm,
    RedAqm,
)
from fastlab.plan.links import Direction, ResolvedLink, ShapingError

# Where the kernel has sch_red / sch_codel / sch_pie (a stock distribution kernel; not the development
# machine's), a tc-shaped direction with an AQM gets that qdisc under HTB class 1:1 instead of the FIFO.
# The builders map the spec's models (the papers' units, which linkemu runs as written) onto what each
# qdisc can express, refuse what it cannot in one line naming the field, and return what the kernel
# actually gets (`TcAqm.effective`, recorded in environment.json with the link's plan).

TC_RATE_MAX_BPS = 8 * (2**32 - 1)  # tc keeps a rate as u32 bytes/s (get_rate): ~34.4 Gb/s at most
# tc sends RED's max_p as u32(probability * 2^32): 1.0 would wrap to 0, which makes the kernel fall back to
# the coarse 2^-Plog form. The largest exact value is (2^32 - 1) / 2^32.
RED_MAX_P_TC = (2**32 - 1) / 2**32
RED_WLOG_MAX = 31  # include/net/red.h: Wlog < 32, and fls(qth) + Wlog < 32 (qth in bytes, shifted by Wlog)
RED_QTH_BITS = 32
# include/net/pie.h / sch_pie.c: alpha and beta arrive as integers in 1/16 Hz (tc-pie's range 0..32, i.e.
# 0..2 Hz; 0 means "not given", so the kernel keeps its default); the burst allowance is fixed at 150 ms.
PIE_GAIN_STEPS_PER_HZ = 16
PIE_GAIN_MAX_STEPS = 32
PIE_KERNEL_BURST_MS = 150.0


@dataclass(frozen=True)
class TcAqm:
    """A direction's AQM as a tc child qdisc: its kind and options (`tc qdisc add ... parent 1:1 handle 10:`
    then these), and the parameters the kernel gets, in the spec's units where they differ from it."""

    argv: tuple[str, ...]
    effective: dict[str, Any]


def red_ewma_wlog(qmin_bytes: int, burst_pkts: int, avpkt_bytes: int) -> int:
    """tc's choice of RED's EWMA weight W = 2^-Wlog from `burst` (iproute2 tc/tc_red.c, tc_red_eval_ewma,
    the same double arithmetic): the smallest Wlog with burst + 1 - qmin/avpkt <= (1 - (1 - W)^burst) / W,
    i.e. an average that lets `burst` back-to-back packets of avpkt through an empty queue before it
    reaches qmin. -1 where tc refuses (burst too small, or no Wlog below 32)."""
    a = float(burst_pkts) + 1 - float(qmin_bytes) / avpkt_bytes
    if a < 1.0:
        return -1
    w = 0.5
    for wlog in range(1, 32):
        if a <= (1 - math.pow(1 - w, burst_pkts)) / w:
            return wlog
        w /= 2
    return -1


def red_burst_for_wlog(qmin_bytes: int, avpkt_bytes: int, wlog: int) -> int:
    """The smallest `burst` (packets) for which tc picks exactly this Wlog, or 0 if none does.

    tc cannot be given Wlog itself, only `burst`; the Wlog it derives grows with burst, so a bisection over
    burst finds the first burst that reaches it, checked with tc's own formula: where min_th is only a few
    avpkt the Wlog jumps by more than one per packet of burst (1600 B over 1500: 4, 6, 7, ...), and a
    weight it jumps over cannot be given at all."""
    def reached(burst: int) -> bool:
        got = red_ewma_wlog(qmin_bytes, burst, avpkt_bytes)
        return got >= wlog or (got < 0 and burst >= qmin_bytes / avpkt_bytes)

    lo = max(1, math.ceil(qmin_bytes / avpkt_bytes))  # below it tc refuses the burst as too small
    hi = lo
    while not reached(hi):
        if hi > 1 << 40:
            return 0
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if reached(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo if red_ewma_wlog(qmin_bytes, lo, avpkt_bytes) == wlog else 0


def _dec(x: float) -> str:
    return f"{x:.10g}"


def tc_red(aqm: RedAqm, d: Direction, where: str) -> TcAqm:
    """sch_red for the spec's RED: tc-red's `limit min max avpkt burst probability bandwidth [adaptive]
    [ecn harddrop]`. Faithful where the kernel allows, approximate (and said so) where it does not:

    - Units: the kernel averages the backlog in bytes (the HTB root's size table makes them IP bytes) and
      its thresholds are bytes. Thresholds in packets become packets x the MTU (IP bytes of a full-sized
      packet): the same for a queue of full-sized data packets, which is what a bottleneck holds; an ACK
      or SYN in it counts as a fraction of a packet here and as one packet in linkemu. Byte thresholds and
      byte buffers are passed as given (IP bytes; linkemu counts 14 more per packet, its Ethernet header,
      so the same threshold holds ~1 % fewer full packets there). The kernel never scales the drop
      probability by packet size (linkemu's byte mode does, pb x size/MTU): equal for full-sized packets.
    - The hard limit is the link's buffer in bytes (a packet buffer: packets x MTU).
    - w_q: the kernel's weight is a power of two, 2^-Wlog, and tc derives Wlog from `burst`; the spec's wq
      becomes the nearest power of two (in log scale) and `burst` the smallest that makes tc choose it.
      The weight the kernel gets is `effective.wq`; a run comparing with linkemu gives both that wq.
      The kernel also needs fls(max threshold in bytes) + Wlog < 32.
    - max_p: exact to 2^-32 (TCA_RED_MAX_P); 1 becomes (2^32 - 1) / 2^32.
    - The idle decay: avpkt = mean_pkt_bytes at `bandwidth` = the link's rate (tc tabulates (1-W)^m,
      m = idle time / avpkt's transmission time, in 256 cells; linkemu computes it exactly).
    - The drop decision: the kernel draws one uniform number after each drop and drops when
      count x p_b exceeds it (red.h, the "divisionless" Fig. 17 of the paper), which spaces drops like the
      paper's p_a = p_b / (1 - count p_b); the average is taken of the backlog before the arrival, as
      linkemu does (the kernel's excludes the packet being sent, linkemu's includes it: < 1 packet).
    - gentle: sch_red has none (everything above max_th is dropped): refused; set gentle: false.
    - ecn: sch_red marks forced drops too unless `harddrop`; linkemu drops them (ns-2), so `harddrop`.
    - adaptive: the kernel's Adaptive RED is the same rule (every 500 ms, alpha min(0.01, max_p/4),
      beta 0.9, band 0.4-0.6), driven by a timer instead of arrivals.
    """
    if aqm.gentle:
        raise ShapingError(f"{where}.gentle: Linux's sch_red has no gentle mode (it drops every packet above "
                           "max_th): set gentle: false to run RED through tc, or use the emulator")
    pkt = d.mtu_bytes
    qmin, qmax = (int(round(aqm.min_th * pkt)), int(round(aqm.max_th * pkt))) if aqm.mode == "packets" \
        else (int(aqm.min_th), int(aqm.max_th))
    limit = d.limit_bytes or (d.limit_pkts or 0) * pkt
    avpkt = aqm.mean_pkt_bytes
    if qmin <= avpkt:
        raise ShapingError(f"{where}.min_th: tc needs min_th ({qmin} B) above mean_pkt_bytes ({avpkt} B): its "
                           "EWMA weight is derived from a burst of packets that size")
    wlog = min(RED_WLOG_MAX, max(1, int(round(-math.log2(aqm.wq)))))
    if qmax.bit_length() + wlog >= RED_QTH_BITS:
        raise ShapingError(f"{where}.wq: the kernel keeps the average in 32 bits shifted by log2(1/wq): with "
                           f"max_th = {qmax} B, wq must be at least 2^-{RED_QTH_BITS - 1 - qmax.bit_length()}")
    burst = red_burst_for_wlog(qmin, avpkt, wlog)
    if not burst:
        raise ShapingError(f"{where}.wq: tc cannot derive a weight of 2^-{wlog} from any burst with min_th "
                           f"{qmin} B and mean_pkt_bytes {avpkt} (use the emulator)")
    max_p = min(aqm.max_p, RED_MAX_P_TC)
    argv = ["red", "limit", str(limit), "min", str(qmin), "max", str(qmax), "avpkt", str(avpkt),
            "burst", str(burst), "probability", _dec(max_p),
            "bandwidth", f"{min(d.rate_bps, TC_RATE_MAX_BPS)}bit"]
    if aqm.adaptive:
        argv.append("adaptive")
    if aqm.ecn:
        argv += ["ecn", "harddrop"]
    effective = {"qdisc": "red", "min_bytes": qmin, "max_bytes": qmax, "limit_bytes": limit,
                 "wq": 2.0**-wlog, "wlog": wlog, "burst_pkts": burst, "avpkt_bytes": avpkt,
                 "max_p": int(max_p * 2**32) / 2**32, "gentle": False, "adaptive": aqm.adaptive, "ecn": aqm.ecn}
    return TcAqm(tuple(argv), effective)


def _limit_pkts(d: Direction) -> int:
    """A packet limit for the qdiscs that count packets (CoDel, PIE): the buffer's, or a byte buffer in
    MTU-sized packets (rounded up: a buffer of 1.5 packets holds 2 small ones)."""
    return d.limit_pkts or max(1, math.ceil((d.limit_bytes or 0) / d.mtu_bytes))


def _us(ms: float) -> int:
    return max(1, int(round(ms * 1000)))


def tc_codel(aqm: CodelAqm, d: Direction) -> TcAqm:
    """sch_codel for the spec's CoDel (the kernel's is RFC 8289's algorithm, times in us as linkemu's):
    `limit PACKETS target interval ecn|noecn`. Its MAXPACKET is the device's MTU + header, as linkemu's.
    Approximation: a byte buffer becomes a packet limit (MTU-sized packets)."""
    limit = _limit_pkts(d)
    argv = ("codel", "limit", str(limit), "target", f"{_us(aqm.target_ms)}us",
            "interval", f"{_us(aqm.interval_ms)}us", "ecn" if aqm.ecn else "noecn")
    return TcAqm(argv, {"qdisc": "codel", "limit_pkts": limit, "target_us": _us(aqm.target_ms),
                        "interval_us": _us(aqm.interval_ms), "ecn": aqm.ecn})


def tc_pie(aqm: PieAqm, d: Direction, where: str) -> TcAqm:
    """sch_pie for the spec's PIE (RFC 8033): `limit PACKETS target tupdate alpha beta ecn|noecn`.

    alpha and beta reach the kernel in steps of 1/16 Hz, 1..32 steps (0.0625..2 Hz; RFC 8033's 0.125 and
    1.25 are exact): the nearest step, refused outside that range. The kernel's burst allowance is fixed
    at 150 ms: another max_burst_ms is refused. Its queue delay comes from timestamps (no dequeue-rate
    estimator: the 6.x default), linkemu's from its departure times. A byte buffer becomes a packet
    limit (MTU-sized packets)."""
    if aqm.max_burst_ms != PIE_KERNEL_BURST_MS:
        raise ShapingError(f"{where}.max_burst_ms: the kernel's sch_pie has a fixed {PIE_KERNEL_BURST_MS:g} ms "
                           f"burst allowance, not {aqm.max_burst_ms:g}: use the emulator")
    gains = {}
    for name in ("alpha", "beta"):
        value = float(getattr(aqm, name))
        steps = int(round(value * PIE_GAIN_STEPS_PER_HZ))
        if not 1 <= steps <= PIE_GAIN_MAX_STEPS:
            raise ShapingError(f"{where}.{name}: the kernel's sch_pie takes {name} in steps of 1/16 from 0.0625 "
                               f"to 2, not {value:g}: use the emulator")
        gains[name] = steps
    limit = _limit_pkts(d)
    argv = ("pie", "limit", str(limit), "target", f"{_us(aqm.target_ms)}us", "tupdate", f"{_us(aqm.tupdate_ms)}us",
            "alpha", str(gains["alpha"]), "beta", str(gains["beta"]), "ecn" if aqm.ecn else "noecn")
    return TcAqm(argv, {"qdisc": "pie", "limit_pkts": limit, "target_us": _us(aqm.target_ms),
                        "tupdate_us": _us(aqm.tupdate_ms), "alpha": gains["alpha"] / PIE_GAIN_STEPS_PER_HZ,
                        "beta": gains["beta"] / PIE_GAIN_STEPS_PER_HZ, "max_burst_ms": PIE_KERNEL_BURST_MS,
                        "ecn": aqm.ecn})


def tc_link_aqm(link: ResolvedLink) -> tuple[TcAqm | None, TcAqm | None]:
    """The kernel qdiscs of a link's forward and reverse AQM (None where a direction has none)."""
    return (tc_aqm(link.forward, f"links.{link.id}.aqm"), tc_aqm(link.reverse, f"links.{link.id}.reverse.aqm"))


def tc_aqm(d: Direction, where: str) -> TcAqm | None:
    """The kernel qdisc for a direction's AQM (None without one); `where` names its spec field."""
    if isinstance(d.aqm, RedAqm):
        return tc_red(d.aqm, d, where)
    if isinstance(d.aqm, CodelAqm):
        return tc_codel(d.aqm, d)
    if isinstance(d.aqm, PieAqm):
        return tc_pie(d.aqm, d, where)
    return None

