"""Who averages more under random loss, over a run of a given length: a sawtooth model of FAST and Reno flows,
each on its own port, meeting independent (Bernoulli) losses -- lab 04's SC2002 fairness runs.

Why a model: which side of lab 04's fairness run takes more in one 120-s run is the draw of the background loss
(fastlab.labs.draws judges the claim on the share of draws). The model says what that share is for other loss
rates and run lengths than the lab's, which runs cannot cover here (each draw is a 2-minute full-scale run).

Each flow, in packets of the run's MTU, between its base RTT R and its port's rate C (packets/s):
- **Reno**: slow start (the window doubles every RTT) until its port's buffer overflows (window > C·R + buffer);
  the loss is seen a base RTT later, the window grown by 2^(R / RTT) meanwhile, and ssthresh is half of that
  (slow start's overshoot: a Reno flow leaves it at about its port's rate); then congestion avoidance: +1 packet
  per RTT, halved at every loss (ssthresh = W/2), its port's buffer overflowing again included.
- **FAST** (fastlab's core, kernel-modules/core/fast_core.h): the update law every RTT (the core's default),
  w <- w + gamma (alpha - what it reads as queue), what it reads being its port's queue (W - C·R when the window
  exceeds the BDP) and `read_delay_s` times its rate: the delay above its baseRTT that no queue of its own
  explains (the hosts, the shared link's bursts; lab 04's draws: ~0.9 ms, so at 33,000 packets/s it reads 30
  packets of queue that are not there). Multiplicative increase (doubling per RTT) while that is below alpha/2
  and the delay read below the core's MI threshold (200 us: a flow whose hosts add more grows linearly from its
  start -- lab 04's FAST flows need 25-30 s to reach their port's rate);
  a loss halves the window (ssthresh = W/2, deviation 6 of the core) and ends MI: it regrows by the update
  law, +gamma (alpha - x·read_delay) per RTT -- in seconds what Reno needs minutes for, but not at once: at
  alpha 200 on 180 ms, from 7,500 back to 15,000 packets takes 75-100 RTTs (14-18 s).
- **losses**: each packet sent is lost with the path's probability p (the sum of its links' Bernoulli rates),
  independently: a Poisson process of rate p·x(t) for a flow sending x packets/s.
- the RTT a window meets is max(R, W/C) (a window above the BDP queues at the port).

Long-run averages (the sawtooth's mean, no port limit): with independent losses Reno's window is 1.31/sqrt(p)
(Ott, Kemperman, Mathis 1996: 1.3098; the periodic-loss sawtooth of Mathis et al. 1997 gives sqrt(1.5) = 1.22);
FAST's is 1.31·sqrt(gamma·alpha/p), the same law with gamma·alpha packets of growth per RTT instead of 1: at
gamma·alpha 100, ten times Reno's window. A run starts from the ports' rate, though, and a Reno flow gets there only
through its losses: its average over a run of length T depends on how many losses it met and when -- the draw.

Not modelled (said where the model is used): the shared DataTAG link (the three 1-Gb/s ports exceed its 2.5 Gb/s
only while all three run near their port rate), timeouts, SACK recovery's own dynamics, pacing, the 10-Hz
sampling of the real runs. Pure, seeded: the same arguments give the same figures. Vectorized over draws.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np

from fastlab.base.record import Summary
from fastlab.measure.analysis import share_interval
from fastlab.plan.prepare import Layout

PAYLOAD_BYTES = 1448  # what a 1500-byte packet carries with TCP timestamps: goodput counts it
STEP_S = 0.005  # the simulation's time step: 1/24 of the shortest RTT it is used on (118 ms)
# FAST's multiplicative increase ends once avgRTT - baseRTT reaches this (FAST_DEF_MI_THRESH_US): a flow whose
# hosts add more (lab 04: ~0.9 ms) grows linearly from its start, +gamma alpha per RTT (27 s to 15,000 packets)
MI_THRESHOLD_S = 200e-6
# The mean window of +1 per RTT halved at independent losses of rate p is this / sqrt(p) (Ott, Kemperman and
# Mathis, "The stationary behavior of ideal TCP congestion avoidance", 1996)
RANDOM_LOSS_CONSTANT = 1.3098
MAX_DRAWS = 20_000
MAX_STEPS = 2_000_000  # duration / STEP_S: a run of at most ~2.8 hours


@dataclass(frozen=True)
class RaceFlow:
    """One flow of the model: its algorithm ("fast" or "reno"), base RTT, port rate, port buffer, loss rate of
    its path, and FAST's alpha and gamma."""

    id: str
    cc: str
    rtt_s: float
    port_pkts_s: float
    buffer_pkts: float
    loss_rate: float
    alpha: float = 0.0
    gamma: float = 0.5
    read_delay_s: float = 0.0  # FAST: delay above its baseRTT that no queue of its own explains (a measured input)

    def __post_init__(self) -> None:
        if self.cc not in ("fast", "reno"):
            raise ValueError(f"flow {self.id}: the model knows fast and reno, not {self.cc!r}")
        for name in ("rtt_s", "port_pkts_s"):
            if not (math.isfinite(getattr(self, name)) and getattr(self, name) > 0):
                raise ValueError(f"flow {self.id}: {name} must be a positive number")
        if not (math.isfinite(self.loss_rate) and 0 <= self.loss_rate < 1):
            raise ValueError(f"flow {self.id}: loss_rate must be in [0, 1)")
        if self.cc == "fast" and not (self.alpha > 0 and 0 < self.gamma <= 1):
            raise ValueError(f"flow {self.id}: FAST needs alpha > 0 and 0 < gamma <= 1")
        if not (math.isfinite(self.read_delay_s) and 0 <= self.read_delay_s < self.rtt_s):
            raise ValueError(f"flow {self.id}: read_delay_s must be in [0, rtt_s)")

    @property
    def bdp(self) -> float:
        return self.port_pkts_s * self.rtt_s

    def long_run_window(self) -> float:
        """The sawtooth's mean window under loss alone (packets), capped by what its port carries."""
        growth = self.gamma * self.alpha if self.cc == "fast" else 1.0
        cap = self.bdp + (self.alpha if self.cc == "fast" else self.buffer_pkts)
        return cap if self.loss_rate == 0 else min(cap, RANDOM_LOSS_CONSTANT * math.sqrt(growth / self.loss_rate))


@dataclass
class Race:
    """The model's draws: each flow's goodput (Mb/s) per draw over [t0, duration], and the share of draws in which
    every FAST flow averaged more than every other flow, with its 95 % interval."""

    goodput_mbps: dict[str, np.ndarray]
    fast_ahead: int
    draws: int

    @property
    def share(self) -> float:
        return self.fast_ahead / self.draws

    def interval(self) -> tuple[float, float]:
        return share_interval(self.fast_ahead, self.draws)

    def mean_mbps(self) -> dict[str, float]:
        return {f: float(v.mean()) for f, v in self.goodput_mbps.items()}


def race(flows: list[RaceFlow], duration_s: float, t0_s: float = 10.0, draws: int = 1000, seed: int = 1) -> Race:
    """`draws` runs of the model, each `duration_s` long, goodput counted from t0_s (as lab 04's checkpoint)."""
    if not flows or not any(f.cc == "fast" for f in flows) or all(f.cc == "fast" for f in flows):
        raise ValueError("the race needs FAST flows and others")
    if not (math.isfinite(duration_s) and 0 <= t0_s < duration_s and duration_s / STEP_S <= MAX_STEPS):
        raise ValueError(f"duration_s {duration_s}: after t0_s {t0_s}, at most {MAX_STEPS * STEP_S:.0f} s")
    if isinstance(draws, bool) or not isinstance(draws, int) or not 1 <= draws <= MAX_DRAWS:
        raise ValueError(f"draws {draws!r}: a whole number from 1 to {MAX_DRAWS}")
    rng = np.random.default_rng(seed)
    window = {f.id: np.full(draws, 10.0) for f in flows}
    starting = {f.id: np.ones(draws, dtype=bool) for f in flows}  # slow start / MI
    sent = {f.id: np.zeros(draws) for f in flows}
    for step in range(int(round(duration_s / STEP_S))):
        counting = step * STEP_S >= t0_s
        for f in flows:
            w, up = window[f.id], starting[f.id]
            rtt = np.maximum(f.rtt_s, w / f.port_pkts_s)
            rate = np.minimum(w / rtt, f.port_pkts_s)
            if counting:
                sent[f.id] += rate * STEP_S
            if f.cc == "fast":  # the update law against what it reads as queue; MI while that is below alpha/2
                queued = np.maximum(0.0, w - f.bdp)
                read = queued + rate * f.read_delay_s
                up = up & (read < f.alpha / 2) & (queued / f.port_pkts_s + f.read_delay_s < MI_THRESHOLD_S)
                w = np.where(up, w * 2.0 ** (STEP_S / rtt), w + f.gamma * (f.alpha - read) * STEP_S / rtt)
                w = np.minimum(w, f.bdp + f.buffer_pkts)
            else:  # Reno: +1 packet per RTT (doubling in slow start); its port's buffer overflows: a loss of its own
                w = np.where(up, w * 2.0 ** (STEP_S / rtt), w + STEP_S / rtt)
                cap = f.bdp + f.buffer_pkts
                over = w > cap
                # seen a base RTT after the overflow: in slow start the window has grown by 2^(R / RTT) meanwhile
                # (lab 04's draws: ssthresh 10,574 where this gives 11,215 and halving the buffer's top 6,791)
                seen = np.where(up, cap * 2.0 ** (f.rtt_s / max(f.rtt_s, cap / f.port_pkts_s)), cap)
                w = np.where(over, seen / 2, w)
                up = up & ~over
            lost = rng.random(draws) < f.loss_rate * rate * STEP_S
            window[f.id] = np.where(lost, np.maximum(w / 2, 2.0), w)
            starting[f.id] = up & ~lost
    span = duration_s - t0_s
    goodput = {f: v / span * PAYLOAD_BYTES * 8 / 1e6 for f, v in sent.items()}
    fast = np.min(np.stack([goodput[f.id] for f in flows if f.cc == "fast"]), axis=0)
    other = np.max(np.stack([goodput[f.id] for f in flows if f.cc != "fast"]), axis=0)
    return Race(goodput, int(np.sum(fast > other)), draws)


def measured_read_delay_s(summaries: list[Summary], fast: list[str]) -> float:
    """The model's one measured input: the delay FAST reads as queue that is not its own -- each FAST flow's RTT
    median above its propagation and serialization (summary.json's delay accounting), median over the flows
    and runs given (0 without any)."""
    values = []
    for summary in summaries:
        for flow in summary.flows:
            acct = flow.delay_accounting
            if flow.id not in fast or acct is None:
                continue
            medians = [q.median if q is not None else None
                       for q in (acct.rtt_ms, acct.propagation_ms, acct.serialization_ms)]
            if None not in medians:
                rtt, prop, ser = (float(m) for m in medians if m is not None)
                values.append(rtt - prop - ser)
    return max(0.0, statistics.median(values)) / 1000 if values else 0.0


def flows_of(layout: Layout, read_delay_s: float = 0.0) -> list[RaceFlow]:
    """The model's flows from a run's plan (fastlab.plan.prepare.layout): each flow's base RTT, its bottleneck
    port's rate and buffer, the Bernoulli loss rates of its data path summed, FAST's alpha and gamma, and the
    delay FAST reads as queue that is not its own (`read_delay_s`, measured: the plan cannot know it)."""
    mtu_bits = layout.spec.mtu * 8
    out = []
    for flow in layout.flows:
        path = layout.paths[flow.id]
        fig = path.figures
        if fig.bottleneck_link is None or fig.bottleneck_mbps is None:
            raise ValueError(f"flow {flow.id}: no bottleneck on its path")
        port = layout.links[fig.bottleneck_link].forward
        loss = 0.0
        for link, forward in path.data:
            side = layout.links[link].forward if forward else layout.links[link].reverse
            loss += getattr(side.loss, "rate", 0.0) if side.loss is not None else 0.0
        if port.limit_pkts is None:
            raise ValueError(f"flow {flow.id}: its port's buffer is not in packets")
        gamma = float(flow.cc_args.get("gamma", 0.5)) if flow.cc == "fast" else 0.5
        out.append(RaceFlow(flow.id, flow.cc, fig.rtt_ms / 1000, port.rate_bps / mtu_bits, float(port.limit_pkts),
                            loss, float(path.alpha or 0), gamma, read_delay_s if flow.cc == "fast" else 0.0))
    return out
