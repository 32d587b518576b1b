"""Checkpoints of lab 04 (fairness on CERN's shared uplink): how one 180 ms flow to Sunnyvale and
two 118 ms flows to Chicago split the CERN host's access link, under Reno, under FAST, and mixed
both ways round. Rates come from the bytes ACKed (flows.csv) after `t0`, the queue from the
access link's trace (links.csv); which flows run FAST and with which alpha is read from the run.

Theory: Reno's AIMD rate goes as 1/(RTT * sqrt(p)); with a shared drop-tail queue the loss rates
differ with the RTT too, so the long flow's share relative to a short one lies between
(D_short/D_long)^2 (synchronised losses) and D_short/D_long, with D the mean RTTs including
the shared queue. FAST gives every flow x = alpha/q whatever its RTT, and against Reno it
still keeps alpha packets of its own in the queue: its share of the link is alpha / backlog.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fastlab.labs import CheckResult, MissingData, StepRun, checkpoint, within


def _after(frame: pd.DataFrame, t0: float) -> pd.DataFrame:
    rows = frame[frame["t"] >= t0]
    if len(rows) < 20:
        raise MissingData(f"fewer than 20 samples after {t0:g} s: the run is too short")
    return rows


def _rate_ratio(run: StepRun, long: str, short: tuple[str, ...], t0: float) -> float:
    """The long-RTT flow's goodput over the mean goodput of the short-RTT ones, from t0 to the end."""
    short_mean = float(np.mean([run.goodput_mbps(f, t0, math.inf) for f in short]))
    return run.goodput_mbps(long, t0, math.inf) / short_mean


def _mean_rtt_ms(run: StepRun, flow: str, t0: float) -> float:
    return float(_after(run.flow(flow), t0)["srtt_ms"].mean())


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


@checkpoint
def reno_rtt_unfairness(run: StepRun, long: str = "f1", short: tuple[str, ...] = ("f2", "f3"),
                        t0: float = 10.0, below: float = 0.5, above: float = 0.15) -> CheckResult:
    """The long-RTT flow gets less than a short one: between (D_s/D_l)^2 and D_s/D_l of its rate."""
    ratio = _rate_ratio(run, long, short, t0)
    rtt_ratio = float(np.mean([_mean_rtt_ms(run, f, t0) for f in short])) / _mean_rtt_ms(run, long, t0)
    lo, hi = rtt_ratio**2 * (1 - below), rtt_ratio * (1 + above)
    return within(f"rate of {long} / mean rate of {', '.join(short)}", ratio, lo, hi,
                  f"mean RTT ratio {rtt_ratio:.2f}: AIMD gives between its square (synchronised losses) and itself; "
                  f"+{above:.0%} above; -{below:.0%} below the square: a run holds only a few sawtooth cycles, and at "
                  "small windows timeouts hit the long-RTT flow first (the short form saw 0.6 of the square law)")


@checkpoint
def rtt_independent(run: StepRun, long: str = "f1", short: tuple[str, ...] = ("f2", "f3"), t0: float = 10.0,
                    tolerance: float = 0.2) -> CheckResult:
    """FAST's equilibrium rate is alpha/q for every flow: equal alphas, equal rates, whatever the RTT."""
    ratio = _rate_ratio(run, long, short, t0)
    return within(f"rate of {long} / mean rate of {', '.join(short)}", ratio, 1 - tolerance, 1 + tolerance,
                  f"1 for equal alphas; +-{tolerance:.0%}: the integer floor keeps each flow 0-2 packets under alpha, "
                  "and baseRTT errors of a few ms shift a flow's share")


@checkpoint
def jain_index(run: StepRun, flows: tuple[str, ...] = ("f1", "f2", "f3"), t0: float = 10.0,
               minimum: float = 0.95) -> CheckResult:
    """Jain's index (sum x)^2 / (n sum x^2): 1 for equal shares, 1/n when one flow takes all."""
    rates = np.array([run.goodput_mbps(f, t0, math.inf) for f in flows])
    index = float(rates.sum() ** 2 / (len(rates) * (rates**2).sum()))
    return within(f"Jain's fairness index of {', '.join(flows)}", index, minimum, 1.0,
                  f">= {minimum}: shares within about +-20% of each other give 0.95 or more")


@checkpoint
def fast_keeps_alpha(run: StepRun, link: str = "cern-gbe", t0: float = 10.0, lo: float = 0.6,
                     hi: float = 1.6) -> CheckResult:
    """Each FAST flow's packets in the shared FIFO queue (its share of the traffic x the backlog) ~ alpha."""
    alphas = _fast_alphas(run)
    queue = _after(run.link(link), t0)
    backlog = float(queue["backlog_pkts"].mean())
    link_used = float(queue["tx_mbps"].mean()) / run.link_summary(link)["capacity_mbps"]
    ratios = [run.utilization(flow, link, t0, math.inf) / link_used * backlog / alpha for flow, alpha in alphas.items()]
    worst = max(ratios, key=lambda r: abs(np.log(r)))
    return within("FAST flows' queued packets / alpha (worst flow)", worst, lo, hi,
                  f"1 in equilibrium (mean backlog {backlog:.0f} pkts); {lo}-{hi}: against Reno's sawtooth FAST's rate "
                  "follows alpha/q(t), so its mean rate is alpha*mean(1/q) >= alpha/mean(q), and Reno's losses hit it")


@checkpoint
def utilization(run: StepRun, link: str = "cern-gbe", t0: float = 10.0, minimum: float = 0.85) -> CheckResult:
    """The shared uplink stays busy."""
    used = float(_after(run.link(link), t0)["tx_mbps"].mean()) / run.link_summary(link)["capacity_mbps"]
    return within(f"{link} utilization after {t0:g} s", used, minimum, 1.05,
                  f">= {minimum:.0%}: a buffer of one BDP keeps the link busy through Reno's halvings; "
                  "up to 105%: tx rate samples are 50 ms apart")
