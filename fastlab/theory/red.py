"""TCP Reno over RED as a feedback loop: its equilibrium, the linearized model's stability, and the
window-preserving (SHRiNK) scaling that carries a many-flow, high-capacity experiment on a small machine.

Pure functions (no run folder, no network); lab 10 (labs/10-red-scaling) prints their figures beside
each run. Units are in the names: packets (`_pkts`, of the run's MTU), packets per second (`_pps`),
seconds (`_s`), radians per second (`_rad_s`).

Sources, and what was available of them (checked 2026-11-27 through the project's search corpora; only
abstracts of the two control papers were reachable, so the formulas below are derived here from the
fluid model and the derivation is given where it is used):

- Misra, Gong, Towsley, "Fluid-based analysis of a network of AQM routers supporting TCP flows with an
  application to RED", SIGCOMM 2000: the fluid model of N Reno flows through one queue,
  dW/dt = 1/R(t) - W(t) W(t-R) p(t-R) / (2 R(t-R)), dq/dt = N W/R - C (q >= 0), R = q/C + T_p.
  Its equilibrium (dW/dt = 0, dq/dt = 0): W* = R* C/N, W*^2 p* = 2, R* = T_p + q*/C, q* on RED's curve.
  (The sawtooth's mean window is sqrt(3/(2p)) rather than sqrt(2/p); the model's constant is kept, as
  the linearization below is of this model.)
- Hollot, Misra, Towsley, Gong, "A control theoretic analysis of RED", INFOCOM 2001 (HMTG): linearized
  about the equilibrium, with RED's EWMA a low-pass of pole K and its drop curve a gain L_red, the loop is
      L(s) = L_red (R C)^3/(2N)^2 e^{-sR} / ((1 + s/K)(1 + s/p_w)(1 + s/p_q)),
      p_w = 2N/(R^2 C) (the window's pole), p_q = 1/R (the queue's pole),
      L_red = max_p/(max_th - min_th), K = -ln(1 - w_q) C (the EWMA averages once per arriving packet,
      C packets a second, so after t seconds a sample weighs (1 - w_q)^(C t) = e^{-K t}).
  Check of the DC gain: L_red (C^2/(2N)) / (p_w p_q) = L_red C^3 R^3/(2N)^2.
  HMTG's sufficient condition (their Proposition): with w_g = 0.1 min(p_w, 1/R), the loop is stable if
      L_red (R C)^3/(2N)^2 <= sqrt(w_g^2/K^2 + 1).
  Why it suffices (derived here): the condition puts the gain crossover at or below w_g; there the delay
  costs w_g R <= 0.1 rad, each plant pole atan(0.1) < 0.1 rad, the EWMA at most pi/2: the phase stays
  above -pi by > 0.2 rad. It is conservative: `nyquist_gain_margin` computes the same loop's exact gain
  margin (the phase falls monotonically, so the loop is stable iff the gain at the phase crossover < 1).
- Low, Paganini, Wang, Doyle, "Linear stability of TCP/RED and a scalable control", Computer Networks 43
  (2003; INFOCOM 2002 "Dynamics of TCP/RED and a scalable control"): the same conclusion from a
  multi-link model — TCP/RED loses stability as delay or, more strikingly, capacity grows. Their
  condition (for heterogeneous delays) could not be retrieved exactly, so it is NOT implemented here;
  for one link and equal delays it concerns the same loop as HMTG's.
- Pan, Prabhakar, Psounis, Wischik, "SHRiNK: a method for scalable performance prediction and
  enabling ns-simulation of large networks", INFOCOM 2003: keep a fraction k of the flows, scale the
  capacity and the queue's thresholds by k, keep the delays; per-flow rates and windows, drop
  probabilities and queueing delays are kept. `shrink` adds what makes the linearized loop identical:
  the RED EWMA weight rescaled so its time constant in seconds is kept (w_q' = 1 - (1 - w_q)^(1/k)).
  Under it N -> kN, C -> kC, L_red -> L_red/k: the loop gain (1/k) k^3/k^2 = 1, p_w and K unchanged —
  the whole L(s) is the same function, so the prediction of every scaled point is the real point's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MODEL_W2P = 2.0  # the fluid model's equilibrium W^2 p = 2 (Misra, Gong, Towsley 2000)
HMTG_CROSSOVER_SHARE = 0.1  # HMTG's w_g: a tenth of the slower of the plant's poles
MAX_FLOWS = 1e9
MAX_PPS = 1e10  # 120 Tb/s of 1500-byte packets
MAX_RTT_S = 100.0


def _positive(name: str, value: object, upper: float) -> float:
    """`value` as a finite float in (0, upper], or ValueError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name}: expected a number, got {type(value).__name__}")
    out = float(value)
    if not math.isfinite(out) or out <= 0 or out > upper:
        raise ValueError(f"{name}: {value!r} must be a finite number in (0, {upper:g}]")
    return out


@dataclass(frozen=True)
class Red:
    """RED's drop curve and EWMA in packets (Floyd & Jacobson 1993; gentle: Floyd 2000): p rises from 0
    at min_th to max_p at max_th, and with `gentle` on to 1 at 2 max_th (1 beyond); the average moves
    a share w_q towards the backlog at each arrival."""

    min_th_pkts: float
    max_th_pkts: float
    max_p: float
    wq: float
    gentle: bool = True
    # Floyd & Jacobson's count method (p_a = p_b/(1 - count p_b)) spaces drops uniformly: the packets
    # between two drops are uniform on 1..1/p_b, so drops come at the rate 2 p_b/(1 + p_b), about twice
    # the curve's p_b. linkemu's RED does this (aqm_red.c). HMTG model the curve's p as the drop rate;
    # with `uniform_spacing` the equilibrium and the loop use the realized rate (and its slope) instead.
    uniform_spacing: bool = True

    def __post_init__(self) -> None:
        _positive("min_th_pkts", self.min_th_pkts, 1e12)
        _positive("max_th_pkts", self.max_th_pkts, 1e12)
        _positive("max_p", self.max_p, 1.0)
        _positive("wq", self.wq, 1.0)
        if self.wq >= 1.0:
            raise ValueError(f"wq: {self.wq!r} must be below 1 (1 is no average at all: K is infinite)")
        if self.max_th_pkts <= self.min_th_pkts:
            raise ValueError(f"max_th_pkts: {self.max_th_pkts:g} must be above min_th_pkts ({self.min_th_pkts:g})")

    @property
    def l_red(self) -> float:
        """HMTG's L_red = max_p/(max_th - min_th): the drop curve's slope, per packet of average queue."""
        return self.max_p / (self.max_th_pkts - self.min_th_pkts)

    def drop_probability(self, avg_pkts: float) -> float:
        if avg_pkts < self.min_th_pkts:
            return 0.0
        if avg_pkts < self.max_th_pkts:
            return self.l_red * (avg_pkts - self.min_th_pkts)
        if self.gentle and avg_pkts < 2 * self.max_th_pkts:
            return self.max_p + (1 - self.max_p) * (avg_pkts - self.max_th_pkts) / self.max_th_pkts
        return 1.0

    def curve_slope(self, avg_pkts: float) -> float:
        """dp_b/d(avg) of the curve: L_red on the ramp, (1 - max_p)/max_th on gentle's, 0 elsewhere."""
        if self.min_th_pkts <= avg_pkts < self.max_th_pkts:
            return self.l_red
        if self.gentle and self.max_th_pkts <= avg_pkts < 2 * self.max_th_pkts:
            return (1 - self.max_p) / self.max_th_pkts
        return 0.0

    def drop_rate(self, avg_pkts: float) -> float:
        """The share of arriving packets dropped at a steady average: p_b, or 2 p_b/(1 + p_b) with the
        count method's uniform spacing (on gentle's ramp too, as in ns-2 and linkemu); 1 past the curve."""
        p = self.drop_probability(avg_pkts)
        return 2 * p / (1 + p) if self.uniform_spacing else p

    def rate_slope(self, avg_pkts: float) -> float:
        """d(drop_rate)/d(avg): the loop's gain from the average queue to the drops."""
        if self.uniform_spacing:
            return 2 * self.curve_slope(avg_pkts) / (1 + self.drop_probability(avg_pkts)) ** 2
        return self.curve_slope(avg_pkts)

    def ewma_pole_rad_s(self, capacity_pps: float) -> float:
        """HMTG's K = -ln(1 - w_q) C: the average's pole when a packet arrives every 1/C seconds."""
        return -math.log1p(-self.wq) * _positive("capacity_pps", capacity_pps, MAX_PPS)

    def ewma_time_constant_s(self, capacity_pps: float) -> float:
        return 1.0 / self.ewma_pole_rad_s(capacity_pps)


@dataclass(frozen=True)
class Point:
    """One experiment point: N Reno flows with one propagation RTT through a C packets/s RED queue."""

    n_flows: float
    capacity_pps: float
    prop_rtt_s: float
    red: Red

    def __post_init__(self) -> None:
        _positive("n_flows", self.n_flows, MAX_FLOWS)
        _positive("capacity_pps", self.capacity_pps, MAX_PPS)
        _positive("prop_rtt_s", self.prop_rtt_s, MAX_RTT_S)
        if not isinstance(self.red, Red):
            raise ValueError(f"red: expected a Red, got {type(self.red).__name__}")


@dataclass(frozen=True)
class Equilibrium:
    """The fluid model's fixed point: drop rate, per-flow window, queue (the average's), RTT."""

    p: float  # the share of packets dropped (RED's realized rate)
    window_pkts: float
    queue_pkts: float
    rtt_s: float


def equilibrium(point: Point) -> Equilibrium:
    """W* = R* C/N, W*^2 p* = 2, p* = RED(q*), R* = T_p + q*/C: solved for q* by bisection.

    f(q) = (R(q) C/N)^2 p(q) - 2 rises with q (both factors do) from -2 at q = 0; it passes 2 before
    2 max_th with gentle on (p reaches 1 and the window is at least the pipe's share, >= 1 packet when
    N <= R C), so the root is bracketed. Without gentle, or with more flows than the pipe holds packets,
    a root may need p >= max_p: then ValueError (the equilibrium sits at RED's cliff, the model says no
    more)."""
    c, n, tp, red = point.capacity_pps, point.n_flows, point.prop_rtt_s, point.red

    def excess(q: float) -> float:
        w = (tp + q / c) * c / n
        return w * w * red.drop_rate(q) - MODEL_W2P

    lo, hi = red.min_th_pkts, (2 if red.gentle else 1) * red.max_th_pkts
    hi = math.nextafter(hi, 0.0)  # just under the cliff: p < 1
    if excess(hi) < 0:
        raise ValueError(f"n_flows: {n:g} flows over a {tp * c:.0f}-packet pipe need a drop probability past RED's "
                         "curve (windows under sqrt(2) packets): the equilibrium is at the cliff")
    for _ in range(200):
        mid = (lo + hi) / 2
        if excess(mid) < 0:
            lo = mid
        else:
            hi = mid
    q = (lo + hi) / 2
    rtt = tp + q / c
    return Equilibrium(p=red.drop_rate(q), window_pkts=rtt * c / n, queue_pkts=q, rtt_s=rtt)


@dataclass(frozen=True)
class Loop:
    """The linearized TCP/RED loop at a point (HMTG 2001): its DC gain, poles and delay."""

    gain: float  # L_red (R C)^3 / (2N)^2 at the equilibrium's R and RED's local slope
    window_pole_rad_s: float  # p_w = 2N/(R^2 C)
    queue_pole_rad_s: float  # p_q = 1/R
    ewma_pole_rad_s: float  # K
    rtt_s: float  # R: the loop's delay

    def magnitude(self, omega_rad_s: float) -> float:
        return self.gain / math.sqrt((1 + (omega_rad_s / self.ewma_pole_rad_s) ** 2)
                                     * (1 + (omega_rad_s / self.window_pole_rad_s) ** 2)
                                     * (1 + (omega_rad_s / self.queue_pole_rad_s) ** 2))

    def phase_rad(self, omega_rad_s: float) -> float:
        return -(omega_rad_s * self.rtt_s + math.atan(omega_rad_s / self.ewma_pole_rad_s)
                 + math.atan(omega_rad_s / self.window_pole_rad_s) + math.atan(omega_rad_s / self.queue_pole_rad_s))


def loop(point: Point, eq: Equilibrium | None = None) -> Loop:
    """The loop at the point's equilibrium: R = R*, and the slope of RED's drop rate where q* sits
    (L_red on the ramp, twice it with uniform spacing)."""
    eq = eq or equilibrium(point)
    c, n, r = point.capacity_pps, point.n_flows, eq.rtt_s
    slope = point.red.rate_slope(eq.queue_pkts)
    return Loop(gain=slope * (r * c) ** 3 / (2 * n) ** 2, window_pole_rad_s=2 * n / (r * r * c),
                queue_pole_rad_s=1 / r, ewma_pole_rad_s=point.red.ewma_pole_rad_s(c), rtt_s=r)


@dataclass(frozen=True)
class Hmtg:
    """HMTG's sufficient condition lhs <= rhs; margin = rhs/lhs (>= 1: stable by it)."""

    lhs: float  # L_red (R C)^3/(2N)^2
    rhs: float  # sqrt(w_g^2/K^2 + 1)
    crossover_rad_s: float  # w_g

    @property
    def margin(self) -> float:
        return self.rhs / self.lhs

    @property
    def stable(self) -> bool:
        return self.lhs <= self.rhs


def hmtg_condition(point: Point, eq: Equilibrium | None = None) -> Hmtg:
    """HMTG 2001's condition at the point (R and L_red at its equilibrium)."""
    lp = loop(point, eq)
    w_g = HMTG_CROSSOVER_SHARE * min(lp.window_pole_rad_s, 1 / lp.rtt_s)
    return Hmtg(lhs=lp.gain, rhs=math.sqrt((w_g / lp.ewma_pole_rad_s) ** 2 + 1), crossover_rad_s=w_g)


def phase_crossover_rad_s(lp: Loop) -> float:
    """The frequency where the loop's phase is -pi (it falls monotonically from 0 to -inf)."""
    lo, hi = 0.0, math.pi / lp.rtt_s  # the delay alone costs pi there
    for _ in range(200):
        mid = (lo + hi) / 2
        if lp.phase_rad(mid) > -math.pi:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def nyquist_gain_margin(point: Point, eq: Equilibrium | None = None) -> float:
    """The linearized loop's exact gain margin 1/|L(j w_pc)|: above 1 the equilibrium is locally stable,
    below 1 it is not and the loop oscillates (the open loop is stable, its phase and gain both fall
    monotonically, so the Nyquist plot encircles -1 iff it crosses the negative axis beyond it)."""
    lp = loop(point, eq)
    return 1.0 / lp.magnitude(phase_crossover_rad_s(lp))


# --- SHRiNK: carrying a point at a capacity this machine emulates ---------------------------------------

@dataclass(frozen=True)
class Shrunk:
    """A real point carried at `capacity_pps`: k = C'/C, and the point with N' = kN flows (not rounded:
    `flows_rounded` is what a run can carry), RED's thresholds times k, its w_q rescaled."""

    scale: float
    point: Point

    @property
    def flows_rounded(self) -> int:
        return max(1, round(self.point.n_flows))

    def carried(self) -> Point:
        """The point the run actually carries: N' rounded to whole flows."""
        p = self.point
        return Point(float(self.flows_rounded), p.capacity_pps, p.prop_rtt_s, p.red)


def window_preserving_flows(n_flows: float, capacity: float, carried: float) -> tuple[float, float]:
    """SHRiNK's sample of the flows (Pan et al. 2003): (k, N') with k = C'/C and N' = kN, so that each
    flow's window R C/N in packets, and its share of the capacity, are kept. Both capacities in one unit
    (packets/s here, Mb/s in a sweep's scale_flows). N' is not rounded: what a run carries is whole flows."""
    n = _positive("n_flows", n_flows, MAX_FLOWS)
    c = _positive("capacity", capacity, MAX_PPS)
    k = _positive("carried capacity", carried, MAX_PPS) / c
    return k, n * k


def shrink(real: Point, capacity_pps: float) -> Shrunk:
    """SHRiNK (Pan et al. 2003) with the EWMA kept in seconds: k = C'/C; N' = kN; min_th, max_th times k
    (so L_red C and the queueing delays are kept); w_q' = 1 - (1 - w_q)^(1/k), so that
    K' = -ln(1 - w_q') C' = -ln(1 - w_q) C. The per-flow window R C/N, the drop probability and the
    whole linearized loop are unchanged (module docstring). Thresholds come out fractional: in a spec
    they go in bytes (RED's `mode: bytes`) or are rounded, which `carried` does not do for them."""
    carried = _positive("capacity_pps", capacity_pps, MAX_PPS)
    k, n_carried = window_preserving_flows(real.n_flows, real.capacity_pps, carried)
    red = real.red
    wq = -math.expm1(math.log1p(-red.wq) / k)
    if not wq < 1.0:
        raise ValueError(f"capacity_pps: {carried:g} is so far below the real {real.capacity_pps:g} that RED's average "
                         "would need w_q = 1 (no averaging) to keep its time constant")
    scaled = Red(red.min_th_pkts * k, red.max_th_pkts * k, red.max_p, wq, red.gentle, red.uniform_spacing)
    return Shrunk(scale=k, point=Point(n_carried, carried, real.prop_rtt_s, scaled))


def red_in_time(capacity_pps: float, min_th_s: float, max_th_s: float, max_p: float, ewma_s: float,
                gentle: bool = True) -> Red:
    """RED configured in seconds of the link, as an operator sets one policy for links of any speed:
    thresholds of min_th_s, max_th_s of queueing delay and an average over ewma_s seconds."""
    c = _positive("capacity_pps", capacity_pps, MAX_PPS)
    _positive("min_th_s", min_th_s, MAX_RTT_S)
    _positive("max_th_s", max_th_s, MAX_RTT_S)
    wq = -math.expm1(-1.0 / (_positive("ewma_s", ewma_s, MAX_RTT_S) * c))
    return Red(min_th_s * c, max_th_s * c, max_p, wq, gentle)


def figures(point: Point) -> dict[str, float | bool]:
    """The model's figures at a point, as a student tabulates them (lab 10's step 1; the web page's
    calculator): the equilibrium's window, drop rate, average queue (packets and ms) and RTT, HMTG's
    sufficient condition and the exact gain margin. ValueError (naming the field) where the model has
    no equilibrium."""
    eq = equilibrium(point)
    hmtg = hmtg_condition(point, eq)
    margin = nyquist_gain_margin(point, eq)
    return {"n_flows": point.n_flows, "window_pkts": eq.window_pkts, "drop_rate": eq.p, "queue_pkts": eq.queue_pkts,
            "queue_ms": eq.queue_pkts / point.capacity_pps * 1e3, "rtt_ms": eq.rtt_s * 1e3,
            "loop_gain": loop(point, eq).gain, "hmtg_lhs": hmtg.lhs, "hmtg_rhs": hmtg.rhs, "hmtg_holds": hmtg.stable,
            "gain_margin": margin, "stable": margin > 1}


# --- the theory's lines on a RED run's charts --------------------------------------------------------------

def from_aqm(aqm: object, mtu_bytes: int) -> Red | None:
    """The model's RED of a link's `aqm` in a (plain) spec: thresholds in packets, or in bytes over the
    MTU with `mode: bytes`; None for another AQM, or anything the model cannot take (a hostile value)."""
    if not isinstance(aqm, dict) or aqm.get("model") != "red":
        return None
    per = float(mtu_bytes) if aqm.get("mode") == "bytes" else 1.0
    try:
        return Red(float(aqm.get("min_th", 5)) / per, float(aqm.get("max_th", 15)) / per,
                   float(aqm.get("max_p", 0.1)), float(aqm.get("wq", 0.002)), bool(aqm.get("gentle", True)))
    except (TypeError, ValueError):
        return None


EQUAL_RTTS = 0.1  # the model has one RTT: flows whose base RTTs differ by more than this share get no q*


def reference_lines(refs: list[dict[str, Any]], spec_links: Any, mtu_bytes: int) -> list[dict[str, Any]]:
    """The references, each flow through a RED bottleneck with RED's thresholds and max_p (`red_min_th_pkts`,
    `red_max_th_pkts`, `red_max_p`) and, where only Reno flows with one base RTT share it, the model's
    equilibrium average queue q* (`red_q_star_pkts`) and the linearized loop's exact gain margin there
    (`red_gain_margin`, with `red_flows`): the lines a RED run's queue and drop-probability charts draw
    (fastlab.results.chart_lines), and what "What happened" says of the loop (fastlab.theory.explain)."""
    links = spec_links if isinstance(spec_links, dict) else {}
    groups: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for ref in refs:
        groups.setdefault((ref.get("bottleneck"), ref.get("from_s")), []).append(ref)
    out = []
    for ref in refs:
        link = links.get(ref.get("bottleneck")) if isinstance(ref.get("bottleneck"), str) else None
        red = from_aqm(link.get("aqm") if isinstance(link, dict) else None, mtu_bytes)
        if red is None:
            out.append(ref)
            continue
        extra: dict[str, Any] = {"red_min_th_pkts": red.min_th_pkts, "red_max_th_pkts": red.max_th_pkts,
                                 "red_max_p": red.max_p}
        sharing = groups[(ref.get("bottleneck"), ref.get("from_s"))]
        rtts = [float(r.get("base_rtt_ms") or 0) for r in sharing]
        capacity = float(ref.get("capacity_mbps") or 0)
        if all(r.get("cc") == "reno" for r in sharing) and capacity > 0 and min(rtts) > 0 \
                and max(rtts) <= (1 + EQUAL_RTTS) * min(rtts):
            try:
                point = Point(len(sharing), capacity * 1e6 / (8 * mtu_bytes), sum(rtts) / len(rtts) / 1e3, red)
                eq = equilibrium(point)
                extra |= {"red_q_star_pkts": round(eq.queue_pkts, 1), "red_flows": len(sharing),
                          "red_gain_margin": round(nyquist_gain_margin(point, eq), 3)}
            except ValueError:
                pass  # at RED's cliff: the model has no equilibrium to draw
        out.append(ref | extra)
    return out
