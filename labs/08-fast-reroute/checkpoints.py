"""Checkpoints of lab 08 (FAST under a route change on the OpenFlow-switched SC2002 core).

Read from flows.csv (tcp_info: srtt, min RTT), cc_events.csv (FAST's per-update state and the
controller's `reroute` events) and links.csv (the controller's switch port counters, direction
`port`). The reroute times are the spec's; the physics: Abilene's path is 10 ms longer in RTT
than Level(3)'s, the first ACK over a new path returns one RTT (~0.19 s) after the rules change,
and a minimum (FAST's baseRTT) cannot rise when the path gets longer.
"""

from __future__ import annotations

import pandas as pd

from fastlab.labs import CheckResult, MissingData, StepRun, checkpoint, within

OVS_JITTER_MS = 4.0  # OVS userspace datapath: ~0.5 ms per bridge plus load-dependent jitter
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
    """The flow's smoothed RTT moves half the path difference within `within_s` of reroute `index`."""
    at_s = _reroute_times(run)[index]
    flow = run.flow("f1")
    before = float(_between(flow, at_s - 1.0, at_s)["srtt_ms"].mean())
    after = flow[flow["t"] >= at_s]
    sign = 1 if change_ms > 0 else -1
    moved = after[(after["srtt_ms"] - before) * sign >= abs(change_ms) / 2]
    delay = float(moved["t"].min() - at_s) if not moved.empty else float("inf")
    return within(f"time until srtt moved {abs(change_ms) / 2:g} ms {'up' if sign > 0 else 'down'}", delay, 0.0,
                  within_s, "one RTT (~0.19 s) for the first ACK over the new path, plus the 50 ms trace sampling "
                  "and the kernel's srtt smoothing; half the 10 ms difference leaves room for the flow's few "
                  "packets of queue", "s")


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
def phantom_backlog(run: StepRun, min_rise_pkts: float = 4.0) -> CheckResult:
    """On the longer path FAST's backlog estimate w(1 - baseRTT/avgRTT) jumps: it reads 10 ms as queue."""
    at_s = _reroute_times(run)[0]
    updates = _fast_updates(run)
    rise = float(_between(updates, at_s + 0.3, at_s + 4)["backlog"].mean()
                 - _between(updates, at_s - 3, at_s)["backlog"].mean())
    return within("rise of FAST's backlog estimate after the move to Abilene", rise, min_rise_pkts, 60.0,
                  f"10 ms more RTT with baseRTT unchanged adds w*10/190 packets to the estimate (>= {min_rise_pkts:g}"
                  " for w >= 80) while the real queue cannot grow: the flow's window did not", "pkts")


@checkpoint
def window_falls(run: StepRun) -> CheckResult:
    """FAST answers the phantom backlog by lowering its window on the longer path."""
    first, second = _reroute_times(run)[:2]
    updates = _fast_updates(run)
    before = float(_between(updates, first - 2, first)["cwnd"].mean())
    during = float(_between(updates, first + 4, second)["cwnd"].mean())
    return within("FAST window on Abilene / just before the move", during / before, 0.0, 0.9,
                  "the window heads for alpha*D/(D-d) with D-d inflated by 10 ms, i.e. about alpha*19 packets, "
                  "below the window it had (without the reroute it would have kept growing)")


@checkpoint
def window_on_longer_path(run: StepRun, alpha: int = 10, last_s: float = 3.0) -> CheckResult:
    """On Abilene FAST settles at its own equilibrium w = alpha*D/(D-d), with d the stale (Level(3)) baseRTT."""
    first, second = _reroute_times(run)[:2]
    rows = _between(_fast_updates(run), second - last_s, second)
    theory = float((alpha * rows["avg_rtt_us"] / (rows["avg_rtt_us"] - rows["base_rtt_us"])).mean())
    return within(f"FAST window / alpha*D/(D-d) over the last {last_s:g} s on Abilene",
                  float(rows["cwnd"].mean()) / theory, (alpha - 2) / alpha, 1.2,
                  f"D from FAST's avgRTT, d its baseRTT: w = {theory:.0f} packets, far below the path's BDP; the "
                  "integer floor puts the equilibrium between (alpha-2)/alpha and 1 of that, +20% for a window "
                  "still falling")


@checkpoint
def port_stats_rate(run: StepRun, min_hz: float = 5.0) -> CheckResult:
    """The controller's port statistics reached links.csv at >= 5 Hz per port."""
    ports = run.links[run.links["direction"] == "port"]
    if ports.empty:
        raise MissingData("links.csv has no port statistics")
    rates = [len(rows) / float(rows["t"].max() - rows["t"].min()) for _, rows in ports.groupby("link")]
    return within("slowest port's statistics rate", min(rates), min_hz, 60.0,
                  f"the spec polls at stats_hz; the issue asks for >= {min_hz:g} Hz", "Hz")
