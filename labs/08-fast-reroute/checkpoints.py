"""Checkpoints of lab 08 (FAST under a route change on the OpenFlow-switched SC2002 core).

Read from flows.csv (tcp_info: srtt, min RTT), cc_events.csv (FAST's per-update state and the
controller's `reroute` events) and links.csv (the controller's switch port counters, direction
`port`). The reroute times are the spec's; the physics: Abilene's path is 10 ms longer in RTT
than Level(3)'s, the first ACK over a new path returns one RTT (~0.19 s) after the rules change,
and a minimum (FAST's baseRTT) cannot rise when the path gets longer. The reroute step moves the flow
once FAST is at equilibrium (~17 s after the start on Level(3), ~15 s after the move on Abilene), where
its update law gives w(1 - d/D) = alpha and, with w = x*D, the model w = alpha + x*baseRTT.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from fastlab.labs import CheckResult, MissingData, StepRun, checkpoint, within

OVS_JITTER_MS = 4.0  # OVS userspace datapath: ~0.5 ms per bridge plus load-dependent jitter
PATH_DIFFERENCE_MS = 10.0  # Abilene (190 ms) less Level(3) (180 ms)
BASE_RTT_DRIFT_MS = 3.0  # how far a minimum RTT still falls after the first seconds (measured up to 1.2)


def _between(frame: pd.DataFrame, t0: float, t1: float) -> pd.DataFrame:
    rows = frame[(frame["t"] >= t0) & (frame["t"] < t1)]
    if len(rows) < 3:
        raise MissingData(f"fewer than 3 samples between {t0:g} and {t1:g} s")
    return rows


def _reroute_times(run: StepRun) -> list[float]:
    times = [float(r["at_s"]) for r in run.spec.get("reroutes") or []]
    if not times:
        raise MissingData("the run's spec has no reroutes")
    return times


def _fast_updates(run: StepRun, flow: str = "f1") -> pd.DataFrame:
    events = run.events(flow)
    updates = events[events["event"] == "update"]
    if updates.empty:
        raise MissingData(f"cc_events.csv has no FAST updates of {flow}: is it a FAST flow?")
    return updates


@checkpoint
def path_rtt(run: StepRun, flow: str, rtt_ms: float) -> CheckResult:
    """The flow's minimum RTT is its path's propagation RTT (plus the OVS bridges' own delay)."""
    measured = float(run.flow(flow)["min_rtt_ms"].min())
    return within(f"{flow} minimum RTT", measured, rtt_ms, rtt_ms + OVS_JITTER_MS,
                  f"the path's RTT {rtt_ms:g} ms; up to {OVS_JITTER_MS:g} ms more from the OVS userspace bridges "
                  "(~0.5 ms each way per bridge) and the link emulators' scheduling", "ms")


@checkpoint
def port_share(run: StepRun, port: str, t0: float = 3.0) -> CheckResult:
    """A path's port on the StarLight switch carries one flow's data: its rate is near one access link's."""
    rows = run.links[(run.links["link"] == port) & (run.links["direction"] == "port")]
    if rows.empty:
        raise MissingData(f"links.csv has no port statistics of {port}: was the controller running?")
    rows = _between(rows.sort_values("t"), t0, float("inf"))
    mbps = float(rows["tx_bytes"].iloc[-1] - rows["tx_bytes"].iloc[0]) * 8 / 1e6 / float(
        rows["t"].iloc[-1] - rows["t"].iloc[0])
    capacity = next((link["capacity_mbps"] for link in run.summary["links"] if link["id"] == "cern-gbe"), 0.0)
    return within(f"{port} transmit rate after {t0:g} s", mbps, 0.5 * capacity, 1.1 * capacity,
                  f"one flow's data on its own path: between half (FAST still converging) and all of a "
                  f"{capacity:g} Mb/s access link; ~0 if the path carries no flow",
                  "Mb/s")


@checkpoint
def reroute_applied(run: StepRun, within_s: float = 0.5) -> CheckResult:
    """The controller confirmed every scheduled reroute (after a barrier) within `within_s`."""
    scheduled = _reroute_times(run)
    events = run.cc_events[run.cc_events["event"] == "reroute"].drop_duplicates("scheduled_s")
    late = [float(r["t"] - r["scheduled_s"]) for _, r in events.iterrows()]
    if len(late) != len(scheduled):
        return CheckResult("reroutes confirmed", False, f"{len(late)} of {len(scheduled)}", "all", "",
                           note="a reroute was not confirmed by the controller")
    return within("latest reroute confirmation after its scheduled time", max(late), 0.0, within_s,
                  "FlowMods plus a barrier over loopback take milliseconds; the flow needs the rest of the "
                  "0.5 s budget to show the new RTT", "s")


@checkpoint
def rtt_step(run: StepRun, index: int, change_ms: float, within_s: float = 0.5) -> CheckResult:
    """The flow's smoothed RTT moves half the expected step `change_ms` within `within_s` of reroute `index`."""
    at_s = _reroute_times(run)[index]
    flow = run.flow("f1")
    before = float(_between(flow, at_s - 1.0, at_s)["srtt_ms"].mean())
    after = flow[flow["t"] >= at_s]
    sign = 1 if change_ms > 0 else -1
    moved = after[(after["srtt_ms"] - before) * sign >= abs(change_ms) / 2]
    delay = float(moved["t"].min() - at_s) if not moved.empty else float("inf")
    return within(f"time until srtt moved {abs(change_ms) / 2:g} ms {'up' if sign > 0 else 'down'}", delay, 0.0,
                  within_s, f"one RTT (~0.19 s) for the first ACK over the new path, plus the 50 ms trace sampling "
                  f"and the kernel's srtt smoothing; the step expected is at least {abs(change_ms):g} ms (the paths "
                  "differ by 10 ms; onto Abilene the at most alpha/C = 6 ms of queue FAST kept drains first, back onto "
                  "Level(3) the flow has no queue), half of it leaves room for queue and OVS delay noise", "s")


@checkpoint
def base_rtt_unchanged(run: StepRun, t0: float = 3.0) -> CheckResult:
    """FAST's baseRTT (a minimum) never sees the longer path: it stays at the Level(3) value."""
    base = _fast_updates(run)
    base = base[base["t"] >= t0]["base_rtt_us"] / 1000
    return within("spread of FAST's baseRTT over the run", float(base.max() - base.min()), 0.0, BASE_RTT_DRIFT_MS,
                  "a minimum can only fall, and the run starts and ends on the shorter path: it drifts down by a "
                  "millisecond or two as the OVS userspace datapath's delay dips, while following the longer path "
                  "would add 10 ms", "ms")


@checkpoint
def phantom_backlog(run: StepRun) -> CheckResult:
    """On the longer path FAST's backlog estimate w(1 - baseRTT/avgRTT) jumps: it reads the part of the
    10 ms its own queue does not absorb as queue."""
    at_s = _reroute_times(run)[0]
    updates = _fast_updates(run)
    before = _between(updates, at_s - 3, at_s)
    after = _between(updates, at_s + 0.3, at_s + 2)
    rise = float(after["backlog"].mean() - before["backlog"].mean())
    alpha = float(before["alpha"].iloc[-1])
    drained_ms = 1000 * alpha / _capacity_pps(run)
    floor = float(after["cwnd"].mean()) * (PATH_DIFFERENCE_MS - drained_ms) / float(after["avg_rtt_us"].mean() / 1000)
    return within("rise of FAST's backlog estimate after the move to Abilene", rise, floor, 60.0,
                  f"the path is {PATH_DIFFERENCE_MS:g} ms longer; at most alpha/C = {drained_ms:.1f} ms of it is "
                  "absorbed by the queue FAST kept (the estimate alpha is that queue plus OVS and burst delay; the "
                  "queue drains as the window no longer fills the longer pipe), the rest, w*(10 ms - alpha/C)/D "
                  f"= {floor:.1f} packets with w and D after the move, reads as backlog since baseRTT stays", "pkts")


def _capacity_pps(run: StepRun) -> float:
    """The bottleneck (the CERN host's access link) in 1500-byte packets per second."""
    capacity = next((link["capacity_mbps"] for link in run.summary["links"] if link["id"] == "cern-gbe"), None)
    if not capacity:
        raise MissingData("summary.json has no capacity of link cern-gbe")
    return float(capacity) * 1e6 / 8 / 1500


@dataclass(frozen=True)
class Equilibrium:
    """FAST's state over the last `EQUILIBRIUM_S` seconds before a reroute."""

    window: float  # mean FAST cwnd, packets
    drift: float  # mean window in the last second less that in the first, packets
    rate_pps: float  # delivered segments per second (bytes_acked / MSS)
    base_rtt_s: float  # FAST's baseRTT
    avg_rtt_s: float  # FAST's avgRTT
    alpha: float

    @property
    def model(self) -> float:
        """w = alpha + x*baseRTT: FAST's equilibrium w(1 - d/D) = alpha with w = x*D (Little's law)."""
        return self.alpha + self.rate_pps * self.base_rtt_s


EQUILIBRIUM_S = 3.0  # ~15 updates at the 0.19 s RTT


def _equilibrium(run: StepRun, until_s: float) -> Equilibrium:
    updates = _between(_fast_updates(run), until_s - EQUILIBRIUM_S, until_s)
    first = updates[updates["t"] < until_s - EQUILIBRIUM_S + 1]["cwnd"].mean()
    last = updates[updates["t"] >= until_s - 1]["cwnd"].mean()
    flow = run.flow("f1")
    mss = float(flow["mss_bytes"].dropna().median())
    rate = run.goodput_mbps("f1", until_s - EQUILIBRIUM_S, until_s) * 1e6 / 8 / mss
    return Equilibrium(float(updates["cwnd"].mean()), float(last - first), rate,
                       float(updates["base_rtt_us"].mean()) / 1e6, float(updates["avg_rtt_us"].mean()) / 1e6,
                       float(updates["alpha"].iloc[-1]))


@checkpoint
def at_equilibrium(run: StepRun, index: int, max_drift: float = 5.0) -> CheckResult:
    """FAST's window has stopped moving in the last seconds before reroute `index`: it is at equilibrium."""
    at_s = _reroute_times(run)[index]
    state = _equilibrium(run, at_s)
    result = within(f"FAST window drift over the {EQUILIBRIUM_S:g} s before reroute {index}", state.drift, -max_drift,
                    max_drift, "away from equilibrium FAST's window moves by at least one packet per update (the "
                    "integer floor of gamma*(alpha - backlog)), >= 10 packets between the first and the last second "
                    "(climbing: ~15 per second); at equilibrium it only answers delay noise, a 1-4 ms blip moving "
                    "the target by gamma*w*dD/D = 1-3 packets and the window returning (the distance halves at every "
                    f"update while a queue exists): +-{max_drift:g}, half the slowest approach", "pkts")
    result.note = f"window {state.window:.0f} packets, backlog estimate alpha = {state.alpha:g} is the target"
    return result


@checkpoint
def link_full_before(run: StepRun, lo: float = 0.97) -> CheckResult:
    """At equilibrium on Level(3) FAST fills its access link: x = C, so w = alpha + C*baseRTT."""
    state = _equilibrium(run, _reroute_times(run)[0])
    capacity = _capacity_pps(run)
    queue_ms = 1000 * state.alpha / capacity
    result = within("FAST's delivered rate / the access link's, 3 s before the move", state.rate_pps / capacity, lo,
                    1.02, f"at equilibrium FAST keeps alpha = {state.alpha:g} packets ({queue_ms:.0f} ms) in the "
                    "bottleneck queue, so the link never idles and x = C; "
                    f"{1 - lo:.0%} for a delay blip that empties the queue for a moment and the 20 Hz sampling",
                    "")
    result.note = f"w {state.window:.0f} against alpha + C*baseRTT = {state.alpha + capacity * state.base_rtt_s:.0f}"
    return result


@checkpoint
def window_falls(run: StepRun, spread: float = 0.05) -> CheckResult:
    """FAST's equilibrium window on Abilene over that on Level(3), against w = alpha + x*baseRTT on each side."""
    first, second = _reroute_times(run)[:2]
    before, during = _equilibrium(run, first), _equilibrium(run, second)
    model = during.model / before.model
    result = within("FAST equilibrium window on Abilene / on Level(3)", during.window / before.window,
                    model * (1 - spread), model * (1 + spread),
                    f"model w = alpha + x*baseRTT (FAST's equilibrium w(1 - d/D) = alpha with w = x*D) with each "
                    f"side's delivered rate x and baseRTT d: ratio {model:.3f}; the integer floor holds the backlog "
                    "estimate in (alpha-2, alpha], 2/w = 0.6-1.3 % of each window, and x over 3 s is good to ~1 %: "
                    f"+-{spread:.0%}")
    result.note = (f"Level(3): w {before.window:.0f}, x {before.rate_pps:.0f}/s (model {before.model:.0f}); Abilene: "
                   f"w {during.window:.0f}, x {during.rate_pps:.0f}/s (model {during.model:.0f})")
    return result


@checkpoint
def window_on_longer_path(run: StepRun) -> CheckResult:
    """On Abilene FAST settles at its own equilibrium w = alpha*D/(D-d), with d the stale (Level(3)) baseRTT."""
    second = _reroute_times(run)[1]
    rows = _between(_fast_updates(run), second - EQUILIBRIUM_S, second)
    alpha = float(rows["alpha"].iloc[-1])
    theory = float((alpha * rows["avg_rtt_us"] / (rows["avg_rtt_us"] - rows["base_rtt_us"])).mean())
    return within(f"FAST window / alpha*D/(D-d) over the last {EQUILIBRIUM_S:g} s on Abilene",
                  float(rows["cwnd"].mean()) / theory, (alpha - 2) / alpha, 1.05,
                  f"D from FAST's avgRTT, d its baseRTT: w = {theory:.0f} packets, far below the path's BDP; at "
                  "equilibrium the integer floor holds w(1 - d/D) in (alpha-2, alpha], so the ratio in "
                  "((alpha-2)/alpha, 1]; 5 % for the updates where the window still moves a packet and the avgRTT "
                  "noise in the mean of D/(D-d)")


@checkpoint
def port_stats_rate(run: StepRun, min_hz: float = 5.0) -> CheckResult:
    """The controller's port statistics reached links.csv at >= 5 Hz per port."""
    ports = run.links[run.links["direction"] == "port"]
    if ports.empty:
        raise MissingData("links.csv has no port statistics")
    rates = [len(rows) / float(rows["t"].max() - rows["t"].min()) for _, rows in ports.groupby("link")]
    return within("slowest port's statistics rate", min(rates), min_hz, 60.0,
                  f"the spec polls at stats_hz; the issue asks for >= {min_hz:g} Hz", "Hz")
