"""Checkpoints of lab 07 (loss versus delay as the congestion signal).

Every flow has its own GbE host link (its bottleneck) and the same seeded random loss rate p on
the shared show-floor link, so a flow's throughput is its algorithm's answer to p alone.
Figures are taken after the first third of the run (slow start and its overshoot are over).

Every bound here is computed from a model and the spread of the number of loss events the
measured window holds. Random loss makes that number a Poisson count: a window expected to hold
n events holds n +- sqrt(n), and a rate estimated from n events is uncertain by 1/sqrt(n); through
the square root of a response function (w ~ 1/sqrt(p)) that is a factor exp(+-1/(2 sqrt(n))) on the
window, taken here at 99 % (z = 2.58). A short run holds a handful of events, so its bounds are
wider than a full run's: the reason printed with each checkpoint gives the numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fastlab.labs.kit import CheckResult, MissingData, StepRun, checkpoint, loss_starts, within

MATHIS_C = math.sqrt(1.5)  # Reno's mean window under periodic loss: sqrt(3/(2p)) = 1.22/sqrt(p)
Z99 = 2.576  # two-sided 99 % of a normal spread
IP_PACKET_BYTES = 1500
RTO_MIN_S = 0.2  # Linux's tcp_rto_min: RTO = srtt + max(4 rttvar, 200 ms)
FAST_GAMMA = 0.5  # fast_core.h's default gamma


def _window(run: StepRun) -> tuple[float, float]:
    duration = float(run.spec["duration_s"])
    return duration / 3, duration


def _loss_rate(run: StepRun) -> float:
    rates = [link["loss"]["rate"] for link in run.spec.get("links", {}).values() if "loss" in link]
    if len(rates) != 1:
        raise MissingData("the spec must set exactly one Bernoulli loss rate")
    return float(rates[0])


def _port(run: StepRun, flow: str) -> str:
    return f"{run.flow_summary(flow).src}-gbe"


def _utilization(run: StepRun, cc: str) -> float:
    flow = run.flow_running(cc)
    return run.utilization(flow, _port(run, flow), *_window(run))


def count_spread(events: float, z: float = Z99) -> float:
    """The factor exp(z / (2 sqrt(n))) by which 1/sqrt(p), estimated from n Poisson loss events, can be
    off at the confidence z stands for (the count's relative error 1/sqrt(n), halved by the root)."""
    return math.exp(z / (2 * math.sqrt(events)))


def padhye_over_mathis(p: float, rtt_s: float, rto_s: float) -> float:
    """Padhye et al.'s throughput (growth one packet per RTT, timeouts T0 = rto_s) over Mathis's at p."""
    mathis = rtt_s * math.sqrt(2 * p / 3)
    return mathis / (mathis + rto_s * min(1.0, 3 * math.sqrt(3 * p / 8)) * p * (1 + 32 * p * p))


@dataclass(frozen=True)
class RenoWindow:
    """Reno's figures over the measured window."""

    goodput_mbps: float
    packets: float  # delivered in the window
    events: int  # loss events met in the window
    rtt_s: float  # mean smoothed RTT
    rto_s: float  # Linux's RTO from the mean srtt and rttvar
    mss: float


def _reno(run: StepRun) -> RenoWindow:
    flow = run.flow_running("reno")
    t0, t1 = _window(run)
    rows = run.flow(flow).reset_index(drop=True)
    starts = [i for i in loss_starts(rows, reductions=True) if t0 <= rows["t"].iloc[i] <= t1]
    rows = rows[(rows["t"] >= t0) & (rows["t"] <= t1)]
    mss, rtt_s = float(rows["mss_bytes"].median()), float(rows["srtt_ms"].mean()) / 1000
    rto_s = rtt_s + max(4 * float(rows["rttvar_ms"].mean()) / 1000, RTO_MIN_S)
    goodput = run.goodput_mbps(flow, t0, t1)
    packets = goodput * 1e6 / 8 * (t1 - t0) / mss
    return RenoWindow(goodput, packets, len(starts), rtt_s, rto_s, mss)


# One loss event is no rate: two are needed to delimit a sawtooth cycle.
MIN_LOSS_EVENTS = 2


@checkpoint
def reno_follows_mathis(run: StepRun) -> CheckResult:
    """Reno's goodput over the Mathis et al. prediction 1.22 MSS / (RTT sqrt(p)), RTT its mean smoothed RTT.

    p is what the law means by it, the congestion signals the flow met per packet it delivered, counted
    in the measured window (loss-recovery entries and ssthresh falls of its trace), not the link's nominal
    rate (one seed gives every step the same luck: the recorded runs met 1.3-1.5x the nominal rate at all
    three). The bound follows from that count: n events fix 1/sqrt(p) to within a factor
    exp(+-2.58/(2 sqrt(n))) at 99 %; the lower end also carries Padhye's timeout term (RTO = srtt + 200 ms)
    at the p met, which small windows add to the law.
    """
    p_link = _loss_rate(run)
    t0, t1 = _window(run)
    reno = _reno(run)
    if reno.events < MIN_LOSS_EVENTS:
        raise MissingData(f"Reno met {reno.events} loss event(s) in {t0:g}..{t1:g} s, fewer than "
                          f"{MIN_LOSS_EVENTS}: no loss rate to test the law at (lengthen the run)")
    p = reno.events / reno.packets
    predicted = MATHIS_C * reno.mss * 8 / 1e6 / (reno.rtt_s * math.sqrt(p))
    spread = count_spread(reno.events)
    timeouts = padhye_over_mathis(p, reno.rtt_s, reno.rto_s)
    result = within(f"Reno / Mathis at p={p_link:g}", reno.goodput_mbps / predicted, timeouts / spread, spread,
                    f"p is counted: {reno.events} loss events (a Poisson count, +-sqrt(n)) fix 1/sqrt(p) to within "
                    f"exp(+-2.58/(2 sqrt({reno.events}))) = x{spread:.2f} at 99 %; at the low end Padhye's timeouts "
                    f"(RTO {reno.rto_s * 1000:.0f} ms) take {1 - timeouts:.1%} more. The random-loss sawtooth's own "
                    "constant is within 5 % of 1.22 (a per-RTT fluid model of Reno under Bernoulli loss: median "
                    "1.00-1.06). The law's slope is a factor 2 per 4x loss: a count below 4 events cannot show it")
    result.note = (f"{reno.goodput_mbps:.2f} Mb/s measured, {predicted:.2f} Mb/s predicted at the p={p:.2g} Reno met: "
                   f"{reno.events} loss events in {reno.packets:.0f} packets")
    return result


def _bdp_packets(run: StepRun, flow: str) -> tuple[float, float, float]:
    """The flow's port capacity in IP packets/s, its base RTT (s) and BDP (packets)."""
    capacity = run.capacity_mbps(_port(run, flow)) * 1e6 / 8 / IP_PACKET_BYTES
    base = float(run.flow(flow)["min_rtt_ms"].min()) / 1000
    return capacity, base, capacity * base


@checkpoint
def bbr_ignores_loss(run: StepRun, probe_rtt_s: float = 0.2) -> CheckResult:
    """BBR's utilization of its port against BBR v1's own costs: the lost share p, ProbeRTT and the drain phase."""
    flow = run.flow_running("bbr")
    p = _loss_rate(run)
    t0, t1 = _window(run)
    _, base, _ = _bdp_packets(run, flow)
    probes = math.floor((t1 - t0) / 10) + 1  # min_rtt expires after 10 s: at most this many ProbeRTTs
    probe_share = probes * (probe_rtt_s + base) / (t1 - t0)
    drain = 0.25 / 8  # ProbeBW's 0.75-gain phase, one RTT in eight, if it empties the queue
    lo = (1 - p) * (1 - probe_share) - drain
    return within(f"bbr utilization at p={p:g}", _utilization(run, "bbr"), lo, 1.02,
                  f"BBR v1 paces at its bandwidth estimate and cuts only above ~20 % loss, so the port stays busy "
                  f"except for the lost share p = {p:.1%} (dropped after the port), ProbeRTT (at most {probes} in "
                  f"{t1 - t0:.0f} s, each {probe_rtt_s * 1000:.0f} ms at 4 packets plus an RTT to refill: "
                  f"{probe_share:.1%}) and ProbeBW's 0.75-gain phase (<= 1/8 x 0.25 = 3.1 % if it empties the "
                  "queue); the port's shaping granularity allows 2 % over")


@dataclass(frozen=True)
class FastModel:
    utilization: float  # expected at the nominal p
    low: float  # 99 % low end given the loss events the window holds
    events: float  # expected loss events in the window
    deficit: float  # packets of link time one loss costs


def fast_model(run: StepRun, p: float) -> FastModel:
    """FAST under random loss: it halves at a loss from its target BDP + alpha and regrows by its update law,
    gamma*alpha packets per RTT while the queue is empty (fastlab's MI phase stays off at 10 Mb/s: see the
    instructor notes), after one RTT of loss recovery at half (measured at p = 5e-4: 90 -> 45 in recovery,
    then 50, 58, 67, 76, 84, 90 at each update). Rare losses: each costs the link sum(BDP - w_k) packets over
    the RTTs w_k < BDP,
    so U = 1 / (1 + p * deficit). Losses every few RTTs: it is AIMD(gamma*alpha, 1/2), w = 1.22 sqrt(gamma*alpha/p).
    """
    flow = run.flow_running("fast")
    alpha = float(next(f for f in run.spec["flows"] if f.get("cc") == "fast").get("cc_args", {}).get("alpha", 100))
    step = FAST_GAMMA * alpha
    capacity, _, bdp = _bdp_packets(run, flow)
    w = (bdp + alpha) / 2
    deficit = bdp - w  # the recovery's RTT at half the window; the first update comes an RTT after it
    while w < bdp:
        deficit += bdp - w
        w += step
    rare, aimd = 1 / (1 + p * deficit), MATHIS_C * math.sqrt(step / p) / bdp
    u = min(rare, aimd)
    t0, t1 = _window(run)
    events = p * capacity * u * (t1 - t0)
    # the count's spread: on the lost share 1 - U where each loss costs its deficit, on 1/sqrt(p) for AIMD
    low = 1 - (1 - u) * (1 + Z99 / math.sqrt(events)) if rare <= aimd else u / count_spread(events)
    return FastModel(u, low, events, deficit)


@checkpoint
def fast_leads_reno(run: StepRun) -> CheckResult:
    """FAST's utilization over Reno's, against the least the two models allow at the nominal p."""
    p = _loss_rate(run)
    fast, reno_u = _utilization(run, "fast"), _utilization(run, "reno")
    reno = _reno(run)
    capacity, _, _ = _bdp_packets(run, run.flow_running("reno"))
    u_reno = MATHIS_C / math.sqrt(p) / (capacity * reno.rtt_s)
    reno_events = p * reno.packets
    reno_high = min(1.0, u_reno * count_spread(reno_events))
    model = fast_model(run, p)
    least = model.low / reno_high
    result = within(f"fast / reno at p={p:g}", fast / max(reno_u, 1e-9), least, math.inf,
                    f"Reno: 1.22/sqrt(p) over its RTT, {u_reno:.2f} of the port, up to {reno_high:.2f} with the "
                    f"{reno_events:.1f} loss events its window should hold (x{count_spread(reno_events):.2f} at "
                    f"99 %, never above the port). FAST halves like Reno but regrows {FAST_GAMMA:g}*alpha packets "
                    f"per RTT (Reno 1) after an RTT of recovery: each loss costs the link {model.deficit:.0f} "
                    "packets, and with losses every few RTTs it is AIMD(gamma*alpha, 1/2); model "
                    f"{model.utilization:.2f}, at least {model.low:.2f} with {model.events:.0f} events. The lead "
                    f"must reach {model.low:.2f}/{reno_high:.2f}")
    result.note = f"{fast:.3f} vs {reno_u:.3f}"
    return result
