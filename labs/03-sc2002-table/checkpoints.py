"""Checkpoints of lab 03 (the SC2002 table): each row's utilization in the paper's sense, at full
scale for rows 1 and 2, Linux TCP on the same path, FAST at its equilibrium, FAST against the
others under periodic loss (every n-th packet of each server's port), and the fidelity of every run.

Utilization is SC2002's: goodput over the flow's GbE port less 40 bytes of TCP/IP headers per
1500-byte packet, so a saturated port reads 1448/1460 = 0.992 (TCP timestamps take 12 of the 40).
It is measured from 40 s to the end of the 120 s full-scale runs (the paper's figures are
hour-long averages in which FAST's start-up is negligible; at full scale paced FAST fills its
port in ~30 s on a quiet machine and ~35-40 s when the host stalls now and then), or over the
second half of shorter runs such as the 1/100-scale rows and the short forms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fastlab.define.schema import MTU_BYTES, parse_spec
from fastlab.define.topology import build_plan
from fastlab.labs.kit import (
    SC2002_CEILING,
    CheckResult,
    MissingData,
    StepRun,
    checkpoint,
    within,
)
from fastlab.measure.fidelity import TC_BUSY_SHARE_MIN
from fastlab.theory import fast as fast_theory

FROM_S = 40.0  # after FAST's start-up at full scale (see the module docstring)
GBE_PAYLOAD_MBPS = 1000 * 1460 / 1500  # the paper's utilization denominator per port



def _window(run: StepRun) -> tuple[float, float]:
    duration = float(run.spec["duration_s"])
    return min(FROM_S, duration / 2), duration


def _utilization(run: StepRun, flow_id: str) -> float:
    """The flow's SC2002 utilization of its sender's GbE port (`<host>-gbe`), its bottleneck."""
    return run.sc2002_utilization(flow_id, f"{run.flow_summary(flow_id).src}-gbe", *_window(run))


def _ceiling() -> float:
    return SC2002_CEILING + 0.005  # +0.005: goodput is sampled at the window's ends (10 Hz)


@checkpoint
def row_utilization(run: StepRun, flows: list[str], published: float, margin: float = 0.0) -> CheckResult:
    """Mean SC2002 utilization of the row's FAST flows, each over its own GbE port.

    Model: converged FAST keeps alpha packets queued at its port, so the port never idles and the
    row reads the payload ceiling 0.992 less whatever start-up falls inside the window. The lab
    asks for the published figure (less `margin` where a step runs off its paper conditions, e.g.
    the short forms' smaller scale), and no more than the ceiling (above it the shaping leaks)."""
    for f in flows:
        if run.flow_summary(f).cc != "fast":
            raise MissingData(f"flow {f} runs {run.flow_summary(f).cc}, not fast: this row is FAST's")
    values = [_utilization(run, f) for f in flows]
    mean = sum(values) / len(values)
    t0, t1 = _window(run)
    result = within(f"{len(flows)}-flow row utilization ({t0:g}-{t1:g} s)", mean, published - margin, _ceiling(),
                    f"model: converged FAST keeps alpha packets queued at its port, so the port never idles and "
                    f"each flow reads the payload ceiling {SC2002_CEILING:.3f} (1448 of 1460 bytes with TCP "
                    f"timestamps; +0.005 for the counters read at the window's ends). The lower bound is the "
                    f"published {published:.0%}: the emulation must reproduce at least the paper's row (the "
                    "paper's hosts lost what the clean emulated path does not)")
    result.note = "per flow: " + ", ".join(f"{v:.3f}" for v in values) + _bmps_note(run, flows, published)
    return result


def _bmps_note(run: StepRun, flows: list[str], published: float) -> str:
    """The row in bit-metres per second (throughput x distance), measured against published, at full scale.

    A scaled-down run's bmps is divided by its scale so that both figures describe the real path."""
    plan = build_plan(run.spec["topology"], run.spec.get("topology_args", {}))
    site = "".join(c for c in run.flow_summary(flows[0]).src if not c.isdigit())
    km = plan.metadata.get("distances_km", {}).get(f"{site}-sunnyvale")
    if km is None:
        return ""
    scale = float(plan.metadata.get("scale", 1.0))
    metres = km * 1e3
    t0, t1 = _window(run)
    measured = sum(run.goodput_mbps(f, t0, t1) for f in flows) * 1e6 * metres / scale
    paper = published * len(flows) * GBE_PAYLOAD_MBPS * 1e6 * metres
    return f"; {measured:.3g} bmps at full scale (published {paper:.3g})"


def _port_buffer_pkts(run: StepRun, port: str) -> float:
    return float(run.buffer_pkts(port))


BETA = {"reno": 0.5, "cubic": 0.7}  # the window kept at a loss (RFC 5681; RFC 8312 as Linux sets it)


def _window_kept(run: StepRun, flow: str, t0: float, t1: float) -> tuple[float, list[float]]:
    """The least ssthresh the flow held from t0 (or its last value before) to t1 -- the window it kept
    after its cuts -- and the ssthresh values it went through up to t1, in order."""
    rows = run.flow(flow)
    rows = rows[rows["t"] <= t1].dropna(subset=["ssthresh_pkts"])
    if rows.empty:
        raise MissingData(f"flow {flow} never left slow start before {t1:g} s: no window kept after a loss")
    held = rows["ssthresh_pkts"].astype(float)
    steps = [float(v) for v in held[held.ne(held.shift())]]
    return float(held[rows["t"] >= min(t0, float(rows["t"].iloc[-1]))].min()), steps


@checkpoint
def clean_path_utilization(run: StepRun, flow: str) -> CheckResult:
    """A loss-based flow alone on a clean path (no loss but its own queue's overflow).

    Model: on a clean path a loss comes only when the window exceeds BDP + buffer, so one cut keeps
    beta x (BDP + buffer). The slow-start overflow's recovery can cut more than once, though: the
    flow keeps half the window it had when it *detected* the loss, an RTT after the overflow began,
    i.e. about the BDP + buffer again, and the packets it sent meanwhile overflow the queue once
    more; their loss is detected an RTT later still, with the window already cut, and cuts it again
    (recorded at full scale: ssthresh 30,041 then 15,020; CI, 2026-11-26, at 1/20: 1502, 751, 375
    and Reno's utilization 0.507). So the window the flow kept is read from its trace (its least
    ssthresh up to the window's end), and the port idles only while the window is below what covers
    the RTT (the BDP plus the up to two packets of the sender's own TSO burst)."""
    cc = run.flow_summary(flow).cc
    if cc not in BETA:
        raise MissingData(f"flow {flow} runs {cc}: the model takes Reno or CUBIC")
    port = f"{run.flow_summary(flow).src}-gbe"
    ref = next(r for r in fast_theory.references(parse_spec(run.spec)) if r["flow"] == flow)
    pps = run.capacity_mbps(port) * 1e6 / (MTU_BYTES * 8)
    bdp = pps * (ref["base_rtt_ms"] / 1e3 + 1 / pps)
    buffer = _port_buffer_pkts(run, port)
    one_cut = BETA[cc] * (bdp + buffer)
    t0, t1 = _window(run)
    kept, steps = _window_kept(run, flow, t0, t1)
    path = ", ".join(f"{v:.0f}" for v in steps[:6]) + (", ..." if len(steps) > 6 else "")
    covers = bdp + max(BURST_QUEUE_PKTS)
    busy = run.link_busy_share(port, t0, t1)
    # the emulator's shortfall is taken out only as far as a faithful link may fall short: 95 % (the
    # fidelity verdict's floor for a tc link's delivered share; below it no window is the cause)
    link = min(1.0, max(TC_BUSY_SHARE_MIN, busy)) if busy is not None else 1.0
    lo = SC2002_CEILING * min(1.0, kept / covers) * link - 0.005
    result = within(f"{cc} ({flow}) utilization", _utilization(run, flow), lo, _ceiling(),
                    f"a loss comes only above BDP + buffer = {bdp:.0f} + {buffer:.0f} packets, so one cut keeps "
                    f"{BETA[cc]:g} x that = {one_cut:.0f} packets; the slow-start overflow's recovery may cut again "
                    f"(losses of packets sent before a cut took effect are detected after it), so the window kept "
                    f"is read from the trace: {kept:.0f} packets (ssthresh {path}), against "
                    f"{covers:.0f} that keep the port busy (BDP + 2 packets of its own TSO burst): "
                    f"{SC2002_CEILING:.3f} x min(1, {kept:.0f}/{covers:.0f}) x the share of its rate the port "
                    f"delivered while it kept packets queued ({link:.3f}: below 1 the emulator lost link time no "
                    f"window is to blame for) = {lo + 0.005:.3f}, -0.005 for the counters read at the window's ends")
    result.note = f"window kept {kept:.0f} (ssthresh {path}); one cut keeps {one_cut:.0f}"
    return result


@checkpoint
def fast_equilibrium(run: StepRun, flows: list[str]) -> CheckResult:
    """FAST's own backlog estimate w_old (1 - baseRTT/avgRTT), averaged over its updates in the window,
    against what its update law gives.

    Law (floor mode): w = floor((w_cur + w_old d/D + alpha)/2), i.e. per update
    w_old (1 - d/D) = alpha + (w_old - w_cur) - 2 (w - w_cur) - 2 frac, frac in [0, 1). Averaged over
    the K updates: alpha - [0, 2) plus the window's drift terms, which the run's own updates give
    (zero when the window is stationary)."""
    t0, t1 = _window(run)
    rows = []  # (how far outside its band, flow, estimate, lo, hi, alpha, gamma, drift, updates)
    for f in flows:
        updates = run.events(f)
        updates = updates[(updates["event"] == "update") & (updates["t"] >= t0) & (updates["t"] <= t1)]
        if len(updates) < 10:
            raise MissingData(f"cc_events.csv has {len(updates)} FAST updates of flow {f} in the window (10 needed)")
        alpha = float(updates["alpha"].iloc[-1])
        gamma = float(updates["gamma"].iloc[-1]) if "gamma" in updates else 0.5
        estimate = float((updates["w_old"] * (1 - updates["base_rtt_us"] / updates["avg_rtt_us"])).mean())
        drift = float((updates["w_old"] - updates["cwnd_before"]).mean()
                      - (updates["cwnd"] - updates["cwnd_before"]).mean() / gamma)
        lo, hi = alpha - 1 / gamma + drift, alpha + drift
        rows.append((max(lo - estimate, estimate - hi, 0.0), f, estimate, lo, hi, alpha, gamma, drift, len(updates)))
    _off, flow, estimate, lo, hi, alpha, gamma, drift, _k = max(rows, key=lambda r: r[0])
    result = within(f"FAST backlog estimate per flow (worst: {flow})", estimate, lo, hi,
                    f"the update law w = floor((w_cur + w_old d/D + alpha)/2) makes the mean of w_old (1 - d/D) over "
                    f"the updates alpha = {alpha:g} less the floor's 0..1/gamma = {1 / gamma:g} packets, plus the "
                    f"window's drift (mean of w_old - w_cur - (w - w_cur)/gamma, {drift:+.2f} here: zero at a "
                    "stationary window)", "packets")
    result.note = ", ".join(f"{r[1]}: {r[2]:.1f} ({r[8]} updates, drift {r[7]:+.2f})" for r in rows)
    return result


# --- the compare step: loss-limited flows under periodic loss ----------------------------------

# Linux sends at least two segments per TSO burst (tcp_min_tso_segs): a burst reaching an idle port
# at line rate leaves up to two packets queued, even with the window below the BDP.
BURST_QUEUE_PKTS = (0.0, 2.0)


@dataclass(frozen=True)
class Sawtooth:
    """One flow alone on its own port, every n-th packet dropped: the per-RTT model of its window."""

    cc: str  # "reno" or "fast"
    bdp_pkts: float  # port rate x (base RTT + one packet's serialization)
    rtt_s: float
    every_nth: int
    window_s: float  # the measured window's length
    alpha: int = 0
    buffer_pkts: float = math.inf

    def replay(self, burst_q: float, recovery_rtts: int, lag: bool) -> tuple[float, float]:
        """(lowest, highest) SC2002 utilization of a window of window_s in the periodic steady state,
        over every phase the window can start at.

        Each RTT the flow delivers its window w; the RTT is the base RTT plus the queue (w - BDP or the
        burst queue, whichever is larger) over the port rate. The RTT in which the n-th packet arrives
        is followed by a halving (the loss is known one RTT later) and `recovery_rtts` RTTs without
        growth (fast recovery). Reno then grows one packet per RTT; FAST takes its update
        w <- w + floor((alpha - queued)/2) (gamma 1/2, the faithful floor), and with `lag` its first
        update after the loss still sees half the queue of before (avgRTT is an average)."""
        c = self.bdp_pkts / self.rtt_s  # packets per second
        w = self.bdp_pkts + self.alpha if self.cc == "fast" else self.bdp_pkts / 2
        t, arrived, next_drop, halve, hold, lag_q = 0.0, 0.0, float(self.every_nth), False, 0, None
        times, delivered = [0.0], [0.0]
        horizon = 40 * self.every_nth / c + 3 * self.window_s
        while t < horizon:
            queued = max(w - self.bdp_pkts, burst_q)
            t += self.rtt_s + queued / c
            times.append(t)
            delivered.append(delivered[-1] + w)
            arrived += w
            if halve:
                w, halve, hold = max(w / 2, 1.0), False, recovery_rtts
                lag_q = queued / 2 if lag else None
                continue
            if arrived >= next_drop or w > self.bdp_pkts + self.buffer_pkts:
                next_drop += self.every_nth
                halve = True
            if hold:
                hold -= 1
            elif self.cc == "reno":
                w += 1
            else:
                seen = lag_q if lag_q is not None else max(w - self.bdp_pkts, burst_q)
                w, lag_q = min(2 * w, math.floor(w + (self.alpha - seen) / 2)), None
        ts, acked = np.array(times), np.array(delivered)
        starts = np.linspace(ts[-1] / 3, ts[-1] - self.window_s, 500)  # past the start-up, every phase
        busy = (np.interp(starts + self.window_s, ts, acked) - np.interp(starts, ts, acked)) / (c * self.window_s)
        return float(busy.min()) * SC2002_CEILING, float(busy.max()) * SC2002_CEILING

    def band(self) -> tuple[float, float]:
        """The lowest and highest utilization over the model's unknowns: the burst queue (0-2 packets),
        0-1 RTT of recovery and, for FAST, its first update's lag."""
        lags = (False, True) if self.cc == "fast" else (False,)
        ends = [self.replay(q, rec, lag) for q in BURST_QUEUE_PKTS for rec in (0, 1) for lag in lags]
        return min(lo for lo, _ in ends), max(hi for _, hi in ends)

    def describe(self) -> str:
        growth = "one packet per RTT" if self.cc == "reno" else f"floor((alpha {self.alpha} - queue)/2) per RTT"
        return (f"{self.cc}: BDP {self.bdp_pkts:.0f} pkts at {self.rtt_s * 1e3:.0f} ms, every {self.every_nth}th "
                f"packet dropped, halved one RTT later, then {growth}")


def sawtooth(run: StepRun, flow: str) -> Sawtooth:
    """The compare step's model of one flow, from the run's spec: its port, loss, base RTT and alpha."""
    ref = next(r for r in fast_theory.references(parse_spec(run.spec)) if r["flow"] == flow)
    port = f"{run.flow_summary(flow).src}-gbe"
    loss = (run.spec.get("links", {}).get(port) or {}).get("loss") or {}
    if loss.get("model") != "every_nth" or ref["cc"] not in ("reno", "fast"):
        raise MissingData(f"the periodic-loss model takes a Reno or FAST flow on a port with every_nth loss ({flow})")
    pps = run.capacity_mbps(port) * 1e6 / (MTU_BYTES * 8)
    # the path's RTT as the flow meets it: propagation, the packet's own serialization at its port, the
    # delay no link queued over the measured window (the emulators' lateness and the hosts' delay, from
    # the run's delay accounting; the verdict's mean lateness for a run made before it) and the mean queue
    # the other flows keep on the shared links of the path (their backlog / their rate)
    late_ms = run.read_as_queue_ms(flow, *_window(run))
    shared_ms = sum(float(link.mean_backlog_pkts or 0.0) * MTU_BYTES * 8 / (run.capacity_mbps(link.id) * 1e3)
                    for link in run.summary.links if link.id in ref["links"] and link.id != port)
    rtt_s = (ref["base_rtt_ms"] + late_ms + shared_ms) / 1e3 + 1 / pps
    shaped = run.environment.shaping_of(port)
    side = shaped.resolved.forward if shaped is not None and shaped.resolved is not None else None
    buffer = side.limit_pkts if side is not None else None
    t0, t1 = _window(run)
    return Sawtooth(ref["cc"], pps * rtt_s, rtt_s, int(loss["n"]), t1 - t0, int(ref["alpha"] or 0),
                    float(buffer) if buffer else math.inf)


@checkpoint
def loss_limited_utilization(run: StepRun, flow: str) -> CheckResult:
    """One flow's SC2002 utilization of its own port under periodic loss, against the per-RTT model."""
    model = sawtooth(run, flow)
    lo, hi = model.band()
    return within(f"{model.cc} ({flow}) utilization under every-{model.every_nth}th loss", _utilization(run, flow),
                  lo, hi,
                  f"per-RTT model ({model.describe()}; 0-2 packets of its own TSO burst queued, 0-1 RTT of recovery "
                  f"without growth): {lo:.3f}..{hi:.3f} over every phase of the sawtooth a {model.window_s:g}-s "
                  "window can start in")


@checkpoint
def utilization_gap(run: StepRun, better: str, worse: str) -> CheckResult:
    """How much more of its port flow `better` uses than flow `worse` does (same path, same loss rate),
    against the difference of their per-RTT models' bands."""
    a, b = _utilization(run, better), _utilization(run, worse)
    (a_lo, a_hi), (b_lo, b_hi) = sawtooth(run, better).band(), sawtooth(run, worse).band()
    names = f"{run.flow_summary(better).cc} - {run.flow_summary(worse).cc}"
    result = within(f"utilization gap {names}", a - b, a_lo - b_hi, a_hi - b_lo,
                    f"each flow's per-RTT model under the same every-nth loss (see its utilization): "
                    f"{a_lo:.3f}..{a_hi:.3f} against {b_lo:.3f}..{b_hi:.3f}. Reno's sawtooth peaks where n packets fit "
                    "in one cycle, W = sqrt(8n/3) (Mathis: mean 1.22/sqrt(p)), and is loss-limited where W is below "
                    "the BDP; FAST regrows alpha/2 per RTT after halving")
    result.note = f"{a:.3f} vs {b:.3f}"
    return result


@checkpoint
def loss_rate(run: StepRun, link: str) -> CheckResult:
    """The loss the spec asks for was applied: drops / arrivals on the link."""
    loss = run.spec["links"][link]["loss"]
    figures = run.link_summary(link)
    arrivals = figures.arrivals_pkts or 0
    if arrivals <= 0:
        raise MissingData(f"links.csv counts no arrivals on {link}")
    drops = (figures.loss_drops or 0) / arrivals
    if loss["model"] == "every_nth":
        n = int(loss["n"])
        expected = arrivals // n
        return within(f"loss rate on {link}", drops, max(0, expected - 1) / arrivals, (expected + 1) / arrivals,
                      f"every {n}th packet: exactly arrivals / {n} drops, give or take the one in flight "
                      "when the counters were read")
    asked = float(loss["rate"])
    expected = asked * arrivals
    spread = 4 * expected ** 0.5 + 1
    return within(f"loss rate on {link}", drops, max(0.0, expected - spread) / arrivals, (expected + spread) / arrivals,
                  f"Bernoulli drops at p = {asked:g}: the count is binomial, +-4 standard deviations")
