"""Checkpoints of lab 08 (FAST under a route change on the OpenFlow-switched SC2002 core).

Read from flows.csv (tcp_info: srtt, min RTT), cc_events.csv (FAST's per-update state and the
controller's `reroute` events) and links.csv (the controller's switch port counters, direction
`port`). The reroute times are the spec's; the physics: Abilene's path is 10 ms longer in RTT
than Level(3)'s, the first ACK over a new path returns ~0.13 s after the rules change (the new RTT
less the CERN-StarLight leg the first switched packet had already crossed),
and a minimum (FAST's baseRTT) cannot rise when the path gets longer. The reroute step moves the flow
once FAST is at equilibrium (~17 s after the start on Level(3), ~15 s after the move on Abilene), where
its update law gives w(1 - d/D) = alpha and, with w = x*D, the model w = alpha + x*baseRTT.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
import yaml

from fastlab.define.schema import read_spec_text
from fastlab.labs.kit import CheckResult, MissingData, StepRun, checkpoint, within
from fastlab.theory.fast import packet_bits, references, run_mtu, serialization_ms

PATH_DIFFERENCE_MS = 10.0  # Abilene (190 ms) less Level(3) (180 ms)
HEADER_BYTES = 20 + 32 + 14  # IPv4, TCP with timestamps, Ethernet: what a port counts beyond the payload
BLIP_MS = 2.0  # the OVS userspace datapath's delay noise left in a 2-3 s mean of FAST's avgRTT (blips of
# 1-4 ms at equilibrium, measured 2026-11-24 in the quiet runs of INSTRUCTOR.md)


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


def _route(run: StepRun, flow: str) -> dict[str, Any]:
    """fastlab.theory.fast's figures of the flow's path at the start (its links, propagation RTT)."""
    refs = {r["flow"]: r for r in references(read_spec_text(yaml.safe_dump(run.spec)))}
    if flow not in refs:
        raise MissingData(f"the run's spec has no flow {flow}")
    return refs[flow]


@checkpoint
def path_rtt(run: StepRun, flow: str, rtt_ms: float) -> CheckResult:
    """The flow's minimum RTT is its path's propagation RTT plus what the emulated path itself adds:
    no less than the propagation, no more than the idle pings' minimum plus a data packet's
    serialization on each shaped link of the path."""
    measured = float(run.flow(flow)["min_rtt_ms"].min())
    route = _route(run, flow)
    ping = run.idle_ping_min_ms(flow)
    mtu = run_mtu(run.spec)
    serialized_ms = serialization_ms(mtu, (run.capacity_mbps(link) for link in route["links"]))
    return within(f"{flow} minimum RTT", measured, rtt_ms, ping + serialized_ms,
                  f"the path's propagation RTT {rtt_ms:g} ms (nothing is faster); at most the idle pings' minimum over "
                  f"this path before the flows ({ping:.2f} ms: the OVS userspace bridges, the link emulators and the "
                  f"stacks, as a minimum of 10, where the flow's is a minimum of thousands) plus one {mtu}-byte "
                  f"packet's serialization on {', '.join(route['links'])} ({serialized_ms:.2f} ms; a ping's "
                  "98 bytes take less than a data packet's and its ACK's)", "ms")


@checkpoint
def port_share(run: StepRun, port: str, flow: str, t0: float = 3.0) -> CheckResult:
    """A path's port on the StarLight switch carries one flow's data: its transmit rate is that
    flow's goodput plus each segment's headers, and no more than its access link carries."""
    rows = run.links[(run.links["link"] == port) & (run.links["direction"] == "port")]
    if rows.empty:
        raise MissingData(f"links.csv has no port statistics of {port}: was the controller running?")
    rows = _between(rows.sort_values("t"), t0, float("inf"))
    t1 = float(rows["t"].iloc[-1])
    mbps = float(rows["tx_bytes"].iloc[-1] - rows["tx_bytes"].iloc[0]) * 8 / 1e6 / (t1 - float(rows["t"].iloc[0]))
    mss = float(run.flow(flow)["mss_bytes"].dropna().median())
    expected = run.goodput_mbps(flow, t0, t1) * (mss + HEADER_BYTES) / mss
    capacity = run.capacity_mbps("cern-gbe")
    ceiling = capacity * (run_mtu(run.spec) + 14) / run_mtu(run.spec)
    rtt_s = float(run.flow_summary(flow).min_rtt_ms) / 1e3
    stats_hz = float((run.spec.get("controller") or {}).get("stats_hz", 10))
    spread = (2 / stats_hz + rtt_s) / (t1 - t0)
    return within(f"{port} transmit rate after {t0:g} s", mbps, expected * (1 - spread),
                  min(expected * (1 + spread), ceiling * (1 + spread)),
                  f"{flow}'s goodput with {HEADER_BYTES} bytes of IP, TCP and Ethernet headers per {mss:.0f}-byte "
                  f"segment: {expected:.2f} Mb/s, never above the {capacity:g} Mb/s access link's frames "
                  f"({ceiling:.2f} Mb/s); +-{spread:.1%}: the port counters are polled at {stats_hz:g} Hz (a poll "
                  f"interval at each end) and the ACKs that count the goodput lag the port by up to an RTT "
                  f"({rtt_s:.2f} s), over {t1 - t0:.0f} s; ~0 if the path carries no flow", "Mb/s")


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
                  within_s, "the first packet the switch at StarLight moves left CERN one CERN-StarLight leg (59 ms) "
                  "earlier, so its ACK is back ~0.13 s after the move (the new RTT less that leg); then srtt (gain "
                  "1/8 per ACK) covers half the step in ~5 ACKs, a few ms, and the trace samples every 50 ms; moving "
                  "back, packets on the shorter path overtake those still on the longer one and the reordering "
                  f"delays the RTT samples: {within_s:g} s is ~2.5 RTTs for all of it; "
                  f"the step expected is at least {abs(change_ms):g} ms (the paths "
                  "differ by 10 ms; onto Abilene the at most alpha/C = 6 ms of queue FAST kept drains first, back onto "
                  "Level(3) the flow has no queue), half of it leaves room for queue and OVS delay noise", "s")


@checkpoint
def base_rtt_unchanged(run: StepRun, t0: float = 3.0) -> CheckResult:
    """FAST's baseRTT (a minimum) never sees the longer path: it stays at the Level(3) value, and
    can only fall towards the propagation RTT."""
    base = _fast_updates(run)
    base = base[base["t"] >= t0]["base_rtt_us"] / 1000
    start_ms, floor_ms = float(base.iloc[0]), float(_route(run, "f1")["base_rtt_ms"])
    return within("spread of FAST's baseRTT over the run", float(base.max() - base.min()), 0.0,
                  max(0.0, start_ms - floor_ms),
                  f"a minimum can only fall, and never below the {floor_ms:g} ms of propagation of the path the flow "
                  f"starts on: from {start_ms:.2f} ms at {t0:g} s it can fall by {start_ms - floor_ms:.2f} ms at most "
                  f"(the OVS bridges' and emulators' delay it had not yet seen at its lowest); a baseRTT that "
                  f"followed the longer path would rise by {PATH_DIFFERENCE_MS:g} ms", "ms")


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
    w_over_d = float(after["cwnd"].mean()) / float(after["avg_rtt_us"].mean() / 1000)
    floor = w_over_d * (PATH_DIFFERENCE_MS - drained_ms)
    ceiling = w_over_d * (PATH_DIFFERENCE_MS + BLIP_MS)
    return within("rise of FAST's backlog estimate after the move to Abilene", rise, floor, ceiling,
                  f"the path is {PATH_DIFFERENCE_MS:g} ms longer and baseRTT stays, so the rise is w/D = "
                  f"{w_over_d:.2f} pkts per ms (w and D after the move) times the part of the 10 ms the queue does "
                  f"not absorb: at least 10 ms - alpha/C = {10 - drained_ms:.1f} ms (FAST kept at most alpha = "
                  f"{alpha:g} packets queued, which drain as the window no longer fills the longer pipe): "
                  f"{floor:.1f}; at most all of it plus {BLIP_MS:g} ms (one more OVS bridge each way on Abilene, "
                  f"~0.3 ms each, and the datapath's delay noise left in the 2-3 s means): {ceiling:.1f}", "pkts")


def _capacity_pps(run: StepRun) -> float:
    """The bottleneck (the CERN host's access link) in packets of the run's MTU per second."""
    capacity = run.capacity_mbps("cern-gbe")
    if not capacity:
        raise MissingData("summary.json has no capacity of link cern-gbe")
    return capacity * 1e6 / packet_bits(run_mtu(run.spec))


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


def _largest_lateness_ms(run: StepRun) -> float:
    """The latest departure of any emulated link direction over the run (its emulators' own figures,
    from the fidelity verdict): the largest delay blip the emulation put into the flow's RTT."""
    late = [float(fig.late_max_us) for sides in run.link_timing().values() for fig in sides.values()
            if fig.segments and fig.late_max_us is not None]
    return max(late, default=0.0) / 1000


@checkpoint
def link_full_before(run: StepRun, lo: float = 0.99, hi: float = 1.01) -> CheckResult:
    """At equilibrium on Level(3) FAST fills its access link: x = C, so w = alpha + C*baseRTT. The
    link idles only when FAST's queue empties, which takes a delay blip larger than that queue; where
    the emulators' own lateness reached that size the idle is theirs, so the low end then scales with
    the share of the 3 s the link was measured busy (CI, 2026-11-26: x/C 0.981, the link busy 0.982
    of the time with its queue never sampled empty, the emulators late by up to 9.5 ms against a
    6-ms queue). On a machine that kept them on time it stays 0.99."""
    at_s = _reroute_times(run)[0]
    state = _equilibrium(run, at_s)
    capacity = _capacity_pps(run)
    queue_ms = 1000 * state.alpha / capacity
    late_ms = _largest_lateness_ms(run)
    busy = run.link_busy_share("cern-gbe", at_s - EQUILIBRIUM_S, at_s)
    excused = busy is not None and late_ms > queue_ms
    emulator = min(busy, 1.0) if excused and busy is not None else 1.0
    per_ms = 0.5 * state.window / (state.avg_rtt_s * 1000)  # gamma * w / D: window lost per ms of delay blip
    busy_text = ("its queue held too few packets for 1 s to say" if busy is None else
                 f"the link sent at its rate {busy:.3f} of the 3 s (intervals that began and ended queued)")
    late_text = (f"the emulators ran late by up to {late_ms:.1f} ms, more than the {queue_ms:.0f} ms queue, so an "
                 f"idle link may be theirs: the low end is {lo:g} x that busy share" if excused else
                 f"the emulators ran late by at most {late_ms:.1f} ms, less than the {queue_ms:.0f} ms queue: "
                 "any idle is FAST's")
    result = within("FAST's delivered rate / the access link's, 3 s before the move", state.rate_pps / capacity,
                    lo * emulator, hi, f"x/C = 1 less the share of the 3 s the link idled, and it idles only if the "
                    f"queue empties: FAST keeps at most alpha = {state.alpha:g} packets ({queue_ms:.0f} ms) queued "
                    f"(less the OVS datapath's 1-3 ms it reads as queue too), and a delay blip of d ms takes "
                    f"gamma*w/D = {per_ms:.1f} packets per ms off the window, so the 1-4 ms blips of a quiet machine "
                    f"leave it busy; -{1 - lo:.0%} = {3000 * (1 - lo):.0f} ms of idle link (each packet the window "
                    f"falls short idles it {1000 / capacity:.1f} ms, the shortfall halving each update): one blip of "
                    f"~{(3 * (1 - lo) * capacity / 2 + state.alpha) / per_ms:.0f} ms; {busy_text}; {late_text}; "
                    f"+{hi - 1:.0%}: ACKs bunched at a window end by a blip (4 ms: 0.13 %) and the ACK counter's step "
                    "(2 segments: 0.04 %)", "")
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
