"""Link shaping carried out: `Shaper` runs each link's plan (fastlab.plan.link_commands) in the link's
namespaces, keeps the emulator processes (one per link, or one shared by every link of the run), and turns
their counters (or the tc queues' counters, read over rtnetlink by `fastlab.net.qdisc_stats`) into link
samples; the parsers of the emulator's statistics lines are pure and tested on captured output.
"""

from __future__ import annotations

import math
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from fastlab.base.supervised import Supervised, stop_all
from fastlab.net import placement, shared_emulator
from fastlab.net.qdisc_stats import QdiscReader, QdiscStatsError, queue_stats
from fastlab.plan.link_commands import LinkPlanResult
from fastlab.plan.links import ETH_HEADER_BYTES, ShapingError

EMULATOR_READY_TIMEOUT_S = 10.0
EMULATOR_STOP_GRACE_S = 5.0  # linkemu exits within one loop iteration of SIGTERM
# Opening the socket and one dump take well under a second here; in the stock-kernel lane's
# software-emulated VM the poller has not answered within 15 s at a run's start in 3 of 8 lane runs
# (2026-11-25; a reader that made its socket in the namespace itself, without pyroute2's forked
# helper, missed it too, so that was not the cause; cause not found, the error names the step).
# A run waits for it rather than fail: a minute, still bounded.
TC_STATS_READY_TIMEOUT_S = 60.0


# --- statistics parsers (pure) -----------------------------------------------------------------

EMU_DIRECTIONS = {"ab": "forward", "ba": "reverse"}


def aqm_figures(c: dict[str, Any]) -> dict[str, Any]:
    """A direction's AQM counters and state from linkemu's stats (none without an AQM): early drops and
    ECN marks; RED's average queue (packets or bytes, its mode's) and p_b, PIE's drop probability and queue delay. A
    direction without an AQM adds no columns (linkemu reports its zero counters anyway)."""
    state = c.get("aqm")
    if not isinstance(state, dict):  # no AQM on this direction: no columns for it
        return {}
    avg = state.get("avg_pkts", state.get("avg_bytes"))
    qdelay = state.get("qdelay_us")
    return {"aqm_drops": c.get("aqm_drops", 0), "aqm_marks": c.get("aqm_marks", 0),
            "aqm_avg_queue": avg, "aqm_avg_pkts": state.get("avg_pkts"),  # the charts': packets mode's only
            "aqm_drop_prob": state.get("drop_prob"),
            "aqm_qdelay_ms": qdelay / 1000 if isinstance(qdelay, int | float) else None}


def emulator_samples(link: str, msg: dict[str, Any]) -> list[dict[str, Any]]:
    """An emulator stats line -> one link sample per direction, bytes counted at the IP layer."""
    out = []
    for tag, direction in EMU_DIRECTIONS.items():
        c = msg[tag]
        out.append({"t": float(msg["t"]), "link": link, "direction": direction,
                    "backlog_pkts": c["backlog_pkts"],
                    "backlog_bytes": c["backlog_bytes"] - ETH_HEADER_BYTES * c["backlog_pkts"],
                    "queue_drops": c["queue_drops"], "loss_drops": c["loss_drops"],
                    "tx_bytes": c["tx_bytes"] - ETH_HEADER_BYTES * c["tx_pkts"], "tx_pkts": c["tx_pkts"],
                    "rx_pkts": c["rx_pkts"], "sock_drops": c.get("sock_drops", 0),
                    "late_p99_us": (c.get("late_us") or {}).get("p99")} | lateness_totals(c))
        out[-1] |= aqm_figures(c)
        if "mac" in c:
            out[-1] |= {"mac_grants": c["mac"]["grants"], "mac_requests": c["mac"]["requests"],
                        "mac_piggybacked": c["mac"]["piggybacked_requests"],
                        "mac_grant_delay_mean_us": c["mac"]["req_grant_delay_mean_us"]}
        out[-1] |= varying_figures(c)
    return out


def hop_flow_samples(link: str, msg: dict[str, Any]) -> list[dict[str, Any]]:
    """An emulator stats line -> one sample per TCP flow per direction (linkemu's `flows`, flowacct.h): its
    4-tuple as the frames carry it (`key`, "saddr:sport>daddr:dport"), its frames so far, their mean queueing
    (queue and the model's extra latency, µs) and the least of it, over all its frames and over those that
    carried data (None before one did). Cumulative, like the link's own; none from an emulator without it."""
    out = []
    for tag, direction in EMU_DIRECTIONS.items():
        for f in (msg.get(tag) or {}).get("flows") or ():
            if isinstance(f, dict) and isinstance(f.get("key"), str):
                out.append({"t": float(msg["t"]), "link": link, "direction": direction, "key": f["key"],
                            "frames": f.get("frames"), "queue_mean_us": f.get("queue"),
                            "queue_min_us": f.get("queue_min"), "data_min_us": f.get("data_min")})
    return out


def lateness_totals(c: dict[str, Any]) -> dict[str, Any]:
    """A direction's lateness and socket wait so far (linkemu's cumulative counts and means, µs): the
    difference of two samples gives the mean over any window (fastlab.measure.fidelity.window_mean_us), e.g. a
    checkpoint's, where the verdict judges the whole run."""
    late, wait = c.get("late_us") or {}, c.get("rx_wait_us") or {}
    return {"late_n": late.get("n"), "late_mean_us": late.get("mean"),
            "rx_wait_n": wait.get("n"), "rx_wait_mean_us": wait.get("mean")} | accounting_totals(c)


def accounting_totals(c: dict[str, Any]) -> dict[str, Any]:
    """A direction's delay accounting so far (linkemu's `acct`: per-frame means since start, µs): frames
    sent, one segment's serialization, queueing, the model's extra latency (jitter, a policy's) and the
    emulator's lateness, per frame; the p99 of the per-frame queueing. The difference of two samples
    gives the means over any window (fastlab.measure.accounting). None from an emulator without it."""
    acct, queue = c.get("acct") or {}, c.get("queue_us") or {}
    return {"acct_frames": acct.get("frames"), "acct_ser_mean_us": acct.get("ser"),
            "acct_queue_mean_us": acct.get("queue"), "acct_extra_mean_us": acct.get("extra"),
            "acct_late_mean_us": acct.get("late"), "queue_p99_us": queue.get("p99")}


def varying_figures(c: dict[str, Any]) -> dict[str, Any]:
    """A time-varying direction's state from linkemu's stats (none for a fixed one): the schedule's step in
    force (-1: the link's own values, before the first step or the flows' start) and its values; a trace's
    delivery opportunities since the flows' start (its capacity so far: 1504 bytes each). A trace direction
    has no rate of its own in force, so no schedule rate is reported for it."""
    out: dict[str, Any] = {}
    step = c.get("schedule")
    if isinstance(step, dict):
        out = {"schedule_step": step.get("step"), "schedule_delay_ms": step.get("delay_us", 0) / 1000,
               "schedule_loss": step.get("loss")}
        if "trace" not in c:
            out["schedule_rate_mbps"] = step.get("rate_bps", 0) / 1e6
    trace = c.get("trace")
    if isinstance(trace, dict):
        out["trace_opportunities"] = trace.get("opportunities")
    return out


# --- execution ---------------------------------------------------------------------------------

def distinct(emulators: Iterable[Supervised]) -> list[Supervised]:
    """Each emulator process once, in order: in the shared mode several links map to one process."""
    return list({id(e): e for e in emulators}.values())


@dataclass
class Shaper:
    """Applies link plans in a built network and streams link samples to `emit`. `mode`: the spec's
    emulator.mode: per_link starts one linkemu per emulated link as its plan is applied; shared keeps
    the plans and `start_shared` starts one process for all of them (fastlab.net.shared_emulator)."""

    net: Any  # fastlab.net.network.Network
    emit: Callable[[dict[str, Any]], None]
    mode: str = "per_link"
    processes: int = 1  # shared mode: how many linkemu processes share the links
    emit_flow: Callable[[dict[str, Any]], None] = lambda _sample: None  # each TCP flow's figures per hop
    _pending: list[LinkPlanResult] = field(default_factory=list)  # shared mode: links not started yet
    _shared: dict[int, str] = field(default_factory=dict)  # id() of each shared process -> its CPU key
    applied: list[dict[str, Any]] = field(default_factory=list)
    _emulators: dict[str, Supervised] = field(default_factory=dict)
    _threads: list[threading.Thread] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    final: dict[str, dict[str, Any]] = field(default_factory=dict)  # link -> its emulator's latest stats line
    _lines: dict[str, int] = field(default_factory=dict)  # link -> stats lines read so far
    _fresh: threading.Condition = field(default_factory=threading.Condition)
    _colocated: int = 0  # emulators placed on a CPU with their receive threads so far
    _epoch_links: list[str] = field(default_factory=list)  # links whose emulator waits for the epoch
    _flows_t0: float | None = None  # when the flows started (time.monotonic()), set by start_epoch

    def apply(self, plan: LinkPlanResult, sample_interval_s: float) -> None:
        record: dict[str, Any] = {"link": plan.link, "backend": plan.backend, "why": plan.why,
                                  "resolved": plan.resolved, "commands": []}
        self.applied.append(record)
        for cmd in plan.commands:
            self.net.run(cmd.node, list(cmd.argv))
            record["commands"].append([cmd.node, *cmd.argv])
        if plan.emulator_argv:
            record["emulator_argv"] = list(plan.emulator_argv)
            record["emulator_mode"] = self.mode
            if self.mode == "shared":
                self._pending.append(plan)
                return
            self._start_emulator(plan)
            record["colocated"] = self._colocate(plan)
        else:
            self._start_tc_poller(plan, sample_interval_s)

    def _start_emulator(self, plan: LinkPlanResult) -> None:
        node = self.net.node(self.net.link_ends[plan.link].node)
        ready = threading.Event()
        emulator = Supervised.start(f"linkemu {plan.link}", list(plan.emulator_argv), state=self.net.state,
                                    on_message=self._handler(plan, ready), popen=node.popen)
        self._emulators[plan.link] = emulator
        if plan.epoch:
            self._epoch_links.append(plan.link)
        if not ready.wait(EMULATOR_READY_TIMEOUT_S):
            emulator.stop(EMULATOR_STOP_GRACE_S)
            raise ShapingError(f"links.{plan.link}: linkemu did not start: "
                               f"{emulator.stderr_text() or 'no ready line'}")

    def start_shared(self) -> None:
        """Shared mode: the emulated links applied so far spread over `processes` linkemu processes
        (shared_emulator.partition), started here in the root namespace (each link's sockets are opened
        in its node's); each link's lines are read as its own emulator's would be. With more than one,
        each is placed on a CPU of its own with its links' receive threads (placement.colocate). Nothing
        to do in the per_link mode or without an emulated link."""
        plans, self._pending = self._pending, []
        groups = shared_emulator.partition(plans, self.processes) if plans else []
        for k, group in enumerate(groups):
            self._start_group(group, k, len(groups))

    def _start_group(self, plans: list[LinkPlanResult], k: int, groups: int) -> None:
        netns = {p.link: shared_emulator.netns_path(self.net.node(self.net.link_ends[p.link].node).pid)
                 for p in plans}
        try:
            argv = shared_emulator.shared_argv(plans, netns)
        except ValueError as exc:
            raise ShapingError(str(exc)) from None
        ready = {p.link: threading.Event() for p in plans}
        key = shared_emulator.SHARED_KEY + (f" {k + 1}" if groups > 1 else "")
        emulator = Supervised.start(f"linkemu ({key}: {len(plans)} links)", argv, state=self.net.state,
                                    on_message=shared_emulator.route({p.link: self._handler(p, ready[p.link])
                                                                      for p in plans}))
        self._shared[id(emulator)] = key
        placed: dict[str, Any] = {"cpu": None, "why": f"one emulator serves {len(plans)} links (emulator.mode "
                                                      "shared): the scheduler places it"}
        if groups > 1:
            threads = [t for p in plans for t in self.net.receive_threads.get(p.link, [])]
            rate = max(shared_emulator.link_load_bps(p) for p in plans)
            placed = placement.colocate(key, emulator.pid, threads, rate, k + placement.run_offset(self.net.prefix))
        for plan in plans:
            self._emulators[plan.link] = emulator
            self._epoch_links += [plan.link] if plan.epoch else []
            self._record(plan.link)["colocated"] = placed | {"emulator": key}
        deadline = time.monotonic() + EMULATOR_READY_TIMEOUT_S
        if not all(e.wait(max(0.0, deadline - time.monotonic())) for e in ready.values()):
            emulator.stop(EMULATOR_STOP_GRACE_S)
            raise ShapingError(f"the {key} ({len(plans)} links) did not start: "
                               f"{emulator.stderr_text() or 'no ready line for every link'}")

    def _record(self, link: str) -> dict[str, Any]:
        """What environment.json records of how `link` was shaped (its entry in `applied`)."""
        return next(r for r in self.applied if r["link"] == link)

    def _handler(self, plan: LinkPlanResult, ready: threading.Event) -> Callable[[dict[str, Any]], None]:
        """What to do with each line a link's emulator writes: ready, its epoch, its stats (samples)."""
        def on_message(msg: dict[str, Any]) -> None:
            if msg.get("event") == "ready":
                ready.set()
            elif msg.get("event") == "epoch" and self._flows_t0 is not None:
                # the emulator's time origin against the flows' (the charts' zero): the gap it was late by
                late_ms = round((msg["t"] - self._flows_t0) * 1e3, 3)
                self._record(plan.link)["epoch"] = {"t": msg["t"], "after_flows_start_ms": late_ms}
            elif msg.get("event") == "stats":
                with self._fresh:
                    self.final[plan.link] = msg
                    self._lines[plan.link] = self._lines.get(plan.link, 0) + 1
                    self._fresh.notify_all()
                for sample in emulator_samples(plan.link, msg):
                    self.emit(sample)
                for sample in hop_flow_samples(plan.link, msg):
                    self.emit_flow(sample)
        return on_message

    def _colocate(self, plan: LinkPlanResult) -> dict[str, Any]:
        """The emulator and the receive threads it wakes on one CPU, if its link is slow enough."""
        threads = self.net.receive_threads.get(plan.link, [])
        rate = shared_emulator.link_load_bps(plan)
        placed = placement.colocate(plan.link, self._emulators[plan.link].pid, threads, rate,
                                    self._colocated + placement.run_offset(self.net.prefix))
        self._colocated += placed["cpu"] is not None
        return placed

    def _start_tc_poller(self, plan: LinkPlanResult, interval_s: float) -> None:
        """Sample the link's tc queues every `interval_s` over rtnetlink, without a process per sample.

        The poller thread opens one `QdiscReader` per link node (pyroute2 sockets belong to the
        thread that opens them), checks that each direction's device shows the HTB + FIFO
        layout, then dumps the node's qdiscs once per tick for both directions. A failure up to
        that point raises `ShapingError` here; once running, a failed dump or a vanished queue
        means the network is going down, and the poller stops quietly.
        """
        pids = {node: self.net.node(node).pid for node, _ in plan.stats_devs.values()}
        started: queue.Queue[str | None] = queue.Queue(maxsize=1)

        def samples(readers: dict[str, QdiscReader], where: dict[str, tuple[str, int]]) -> dict[str, dict[str, int]]:
            dumps = {node: reader.dump() for node, reader in readers.items()}
            return {direction: queue_stats(dumps[node], ifindex) for direction, (node, ifindex) in where.items()}

        step = ["starting"]  # what the poller was doing, for the error if it does not answer in time

        def poll() -> None:
            readers: dict[str, QdiscReader] = {}
            try:
                try:
                    for node, pid in pids.items():
                        step[0] = f"opening a socket in {node}"
                        readers[node] = QdiscReader.of_pid(pid, node)
                    step[0] = "looking up the shaped interfaces"
                    where = {direction: (node, readers[node].ifindex(dev))
                             for direction, (node, dev) in plan.stats_devs.items()}
                    step[0] = "the first qdisc dump"
                    samples(readers, where)
                except QdiscStatsError as e:
                    started.put(str(e))
                    return
                started.put(None)
                tick = time.monotonic()
                while True:
                    now = time.monotonic()
                    tick += interval_s * max(1, math.ceil((now - tick) / interval_s))  # skip missed ticks
                    if self._stop.wait(tick - now):
                        return
                    t = time.monotonic()
                    try:
                        counters = samples(readers, where)
                    except QdiscStatsError:  # the network is going down
                        return
                    for direction, stats in counters.items():
                        self.emit({"t": t, "link": plan.link, "direction": direction, "rx_pkts": None, **stats})
            finally:
                for reader in readers.values():
                    reader.close()

        thread = threading.Thread(target=poll, name=f"tcstats-{plan.link}", daemon=True)
        thread.start()
        self._threads.append(thread)
        try:
            error = started.get(timeout=TC_STATS_READY_TIMEOUT_S)
        except queue.Empty:
            error = f"no answer within {TC_STATS_READY_TIMEOUT_S:g} s (still {step[0]})"
        if error is not None:
            self._stop.set()
            raise ShapingError(f"links.{plan.link}: cannot read tc queue statistics over rtnetlink: {error}")

    def start_epoch(self, t0: float) -> None:
        """The flows start at `t0` (time.monotonic()): every emulator running a schedule or a trace counts its
        times from now (SIGUSR1, linkemu/README.md "Time-varying links"); each answers with an epoch line,
        recorded with its gap from `t0` in the shaping record."""
        self._flows_t0 = t0
        for emulator in distinct(self._emulators[link] for link in self._epoch_links):
            if emulator.running():  # (a shared one once: every link it serves takes the epoch)
                emulator.proc.send_signal(signal.SIGUSR1)

    def fresh_stats(self, timeout_s: float) -> dict[str, dict[str, Any]]:
        """Each emulator's first stats line written after this call (its counters are cumulative, so
        it covers everything the emulator did until now), by link; an emulator that writes none
        within `timeout_s` is left out."""
        with self._fresh:
            seen = {link: self._lines.get(link, 0) for link in self._emulators}
            self._fresh.wait_for(lambda: all(self._lines.get(k, 0) > n for k, n in seen.items()), timeout_s)
            return {link: self.final[link] for link, n in seen.items() if self._lines.get(link, 0) > n}

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time each running emulator has used so far, by link (a shared one once, under
        shared_emulator.SHARED_KEY, numbered when there are several)."""
        used = {self._shared.get(id(emulator), link): emulator.cpu_seconds()
                for link, emulator in self._emulators.items()}
        return {link: s for link, s in used.items() if s is not None}

    def stop(self) -> None:
        self._stop.set()
        for link, emulator in self._emulators.items():
            if emulator.running():
                record = next(r for r in self.applied if r["link"] == link)
                record["emulator_cpu_s"] = emulator.cpu_seconds()
        stop_all(distinct(self._emulators.values()), EMULATOR_STOP_GRACE_S)  # each once, even if one failed
        for thread in self._threads:
            thread.join(timeout=5)
        for link, emulator in self._emulators.items():
            if emulator.returncode not in (0, -signal.SIGTERM):
                raise ShapingError(f"linkemu for {link} exited with {emulator.returncode}: {emulator.stderr_text()}")
