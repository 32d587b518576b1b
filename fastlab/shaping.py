"""Link shaping: one pure planner, one executor that records exactly what it applied.

`resolve` merges a topology's default link profile with the spec's overrides into concrete
per-direction numbers. `choose_backend` picks a link's backend, with the reason (called by the run's
plan, fastlab.plan.prepare, and nowhere else); `plan_link` (pure) carries that choice out as tc
commands or an emulator command line. `Shaper` runs plans in the link's
namespaces, keeps the emulator processes, and turns their counters (or the tc queues' counters,
read over rtnetlink by `fastlab.qdisc_stats`) into link samples.

Backends:
- tc: inside the link node, netem delay/jitter/loss on an internal veth (the wire) and HTB
  rate + packet/byte FIFO on the egress toward the far end (the queue). Requires sch_netem for
  delay; netem loss is not seeded, so `auto` never picks tc for a lossy link when the emulator
  exists.
- emulator: `linkemu` bridges the link node's two interfaces and does rate, FIFO, delay,
  jitter and seeded loss per direction.
"""

from __future__ import annotations

import math
import queue
import signal
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from fastlab import linktrace, paths, placement, shared_emulator
from fastlab.qdisc_stats import QdiscReader, QdiscStatsError, queue_stats
from fastlab.spec import (
    MTU_BYTES,
    BernoulliLoss,
    Buffer,
    CodelAqm,
    DocsisUpstreamPolicy,
    EveryNthLoss,
    GilbertElliottLoss,
    LinkDirection,
    LinkSpec,
    PieAqm,
    PlannedLoss,
    RedAqm,
    ScheduleStep,
    TokenBucketPolicy,
    check_varying,
    schedule_us,
)
from fastlab.supervised import Supervised, stop_all
from fastlab.topology import ShapedLinkPlan

ETH_HEADER_BYTES = 14
HTB_BURST_S = 0.001  # one ms of tokens: enough for timer granularity, small enough to stay smooth
EMULATOR_READY_TIMEOUT_S = 10.0
EMULATOR_STOP_GRACE_S = 5.0  # linkemu exits within one loop iteration of SIGTERM
# Emulators run SCHED_FIFO so that a release falling due while a host process holds the CPU is
# not delayed by it (Mininet-HiFi's lesson; measured: lateness p99 192 -> 93 us at 1 Gb/s).
# Low on the RT scale: kernel threads that use RT priorities stay above it.
EMULATOR_RT_PRIORITY = 10
# Opening the socket and one dump take well under a second here; in the stock-kernel lane's
# software-emulated VM the poller has not answered within 15 s at a run's start in 3 of 8 lane runs
# (2026-11-25; a reader that made its socket in the namespace itself, without pyroute2's forked
# helper, missed it too, so that was not the cause; cause not found, the error names the step).
# A run waits for it rather than fail: a minute, still bounded.
TC_STATS_READY_TIMEOUT_S = 60.0


# The slowest rate a link may have: 1 kb/s, slower than any access link the labs model (a 512 kb/s
# upstream); below it the integer b/s of the emulator and tc rounds towards 0, which means unlimited.
MIN_RATE_BPS = 1000


class ShapingError(RuntimeError):
    """A link could not be shaped as asked; the run stops."""


@dataclass(frozen=True)
class Direction:
    """Concrete impairments of one direction. rate_bps counts IP bytes (L2 framing is free)."""

    rate_bps: int
    delay_us: int
    jitter_us: int
    limit_pkts: int | None
    limit_bytes: int | None
    loss: BernoulliLoss | EveryNthLoss | PlannedLoss | GilbertElliottLoss | None
    policy: TokenBucketPolicy | DocsisUpstreamPolicy | None = None
    mtu_bytes: int = MTU_BYTES  # the run's MTU: packet counts above are of this size
    aqm: RedAqm | CodelAqm | PieAqm | None = None
    schedule: tuple[ScheduleStep, ...] = ()  # changes after the flows start; rate_bps etc. hold before
    trace: linktrace.TraceFacts | None = None  # sets the departures; rate_bps is then its mean rate


@dataclass(frozen=True)
class ResolvedLink:
    id: str
    forward: Direction
    reverse: Direction
    backend: str
    rtt_ms: float


def _limit(buffer: Buffer, rate_bps: int, rtt_ms: float, mtu_bytes: int = MTU_BYTES) -> tuple[int | None, int | None]:
    """Queue limit from a buffer spec: (packets, bytes); ms and BDP are converted at MTU size, so
    with jumbo frames the same BDP is fewer, bigger packets (the same bytes)."""
    if buffer.unit == "bytes":
        return None, max(mtu_bytes + ETH_HEADER_BYTES, int(buffer.value))
    if buffer.unit == "packets":
        return max(1, int(round(buffer.value))), None
    seconds = buffer.value / 1000 if buffer.unit == "ms" else buffer.value * rtt_ms / 1000
    return max(1, math.ceil(rate_bps * seconds / (8 * mtu_bytes) - 1e-9)), None


def _direction(d: LinkDirection, rtt_ms: float, mtu_bytes: int, trace: linktrace.TraceFacts | None) -> Direction:
    # only resolve() calls this, after refusing a direction without rate, delay or buffer.  A trace's
    # mean rate is the link's rate: a buffer in ms or BDP is sized at it (a schedule's: at the link's own)
    assert d.delay_ms is not None and d.buffer is not None, d
    if trace is not None:
        rate_bps = trace.mean_rate_bps
    else:
        assert d.rate_mbps is not None, d
        rate_bps = int(round(d.rate_mbps * 1e6))
    pkts, nbytes = _limit(d.buffer, rate_bps, rtt_ms, mtu_bytes)
    return Direction(rate_bps, int(round(d.delay_ms * 1000)), int(round((d.jitter_ms or 0) * 1000)),
                     pkts, nbytes, d.loss, d.policy, mtu_bytes, d.aqm, tuple(d.schedule or ()), trace)


def resolve(shaped: ShapedLinkPlan, override: LinkSpec | None, mtu_bytes: int = MTU_BYTES) -> ResolvedLink:
    """Default profile + spec override -> per-direction numbers (packets of `mtu_bytes`, the run's MTU).

    Forward fields set in the override replace the default's. The reverse direction takes the
    default's reverse, then the override's reverse; any of rate/delay/jitter/buffer still unset
    follows the forward direction. Loss, link-layer policy, AQM, schedule and trace are never inherited
    by it. A trace file is read and checked here, once (fastlab.linktrace); its mean rate is the
    direction's rate.
    """
    base = shaped.profile
    fields = ("rate_mbps", "delay_ms", "jitter_ms", "buffer", "loss", "policy", "aqm", "schedule", "trace")
    fwd = {k: getattr(base, k) for k in fields}
    if override is not None:
        fwd.update({k: getattr(override, k) for k in fields if k in override.model_fields_set})
    rev: dict[str, Any] = {k: fwd[k] for k in fields[:4]} | {k: None for k in fields[4:]}
    for layer in (base.reverse, override.reverse if override is not None else None):
        if layer is not None:
            rev.update({k: getattr(layer, k) for k in fields if k in layer.model_fields_set})
    backend = override.backend if override is not None and "backend" in override.model_fields_set \
        else base.backend
    for name, values in (("forward", fwd), ("reverse", rev)):
        if values["trace"] is not None:
            values["rate_mbps"] = None  # the trace is the capacity (a spec's own rate_mbps with it is refused)
        for key in ("rate_mbps", "delay_ms", "buffer"):
            if values[key] is None and not (key == "rate_mbps" and values["trace"] is not None):
                raise ShapingError(f"links.{shaped.id}: {name} {key} is not set")
    traces: dict[str, linktrace.TraceFacts | None] = {}
    for name, where, values in (("forward", "", fwd), ("reverse", ".reverse", rev)):
        # the merged direction: a default's policy or loss model may meet the spec's schedule or trace
        try:
            check_varying(values["schedule"], values["trace"] is not None, False, values["policy"], values["loss"],
                          values["aqm"])
        except ValueError as exc:
            raise ShapingError(f"links.{shaped.id}{where}: {exc}") from None
        try:
            traces[name] = linktrace.read(values["trace"], f"links.{shaped.id}{where}.trace") \
                if values["trace"] is not None else None
        except linktrace.TraceError as exc:
            raise ShapingError(str(exc)) from None
    forward = _direction(LinkDirection(**fwd), shaped.rtt_ms, mtu_bytes, traces["forward"])
    reverse = _direction(LinkDirection(**rev), shaped.rtt_ms, mtu_bytes, traces["reverse"])
    for name, direction in (("forward", forward), ("reverse", reverse)):
        if direction.rate_bps < MIN_RATE_BPS:  # e.g. 1e-300 Mb/s, or a tiny scale: 0 b/s would mean unlimited
            raise ShapingError(f"links.{shaped.id}: {name} rate {direction.rate_bps} b/s is below "
                               f"{MIN_RATE_BPS} b/s: no link is that slow (a rate of 0 would mean unlimited)")
        for i, step in enumerate(direction.schedule):
            if step.rate_mbps is not None and step.rate_mbps * 1e6 < MIN_RATE_BPS:
                raise ShapingError(f"links.{shaped.id}{'' if name == 'forward' else '.reverse'}.schedule[{i}]"
                                   f".rate_mbps: {step.rate_mbps:g} Mb/s is below {MIN_RATE_BPS} b/s: no link is "
                                   "that slow")
    return ResolvedLink(shaped.id, forward, reverse, backend, shaped.rtt_ms)


# --- planning (pure) ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Devices:
    """Names around a shaped link: routers a and b, and the link node x between them."""

    a: str
    a_dev: str
    b: str
    b_dev: str
    node: str
    dev_a: str
    dev_b: str


@dataclass(frozen=True)
class Command:
    node: str
    argv: tuple[str, ...]


@dataclass(frozen=True)
class LinkPlanResult:
    link: str
    backend: str
    why: str
    commands: tuple[Command, ...] = ()
    emulator_argv: tuple[str, ...] = ()
    stats_devs: dict[str, tuple[str, str]] = field(default_factory=dict)  # direction -> (node, dev)
    resolved: dict[str, Any] = field(default_factory=dict)
    epoch: bool = False  # the emulator waits for the flows' start (SIGUSR1) to count its schedule/trace


def link_seed(seed: int, link_id: str) -> int:
    """Per-link seed: the same (seed, link) always gives the same drop pattern."""
    return (seed * 1_000_003 + zlib.crc32(link_id.encode())) & 0xFFFFFFFF


def loss_arg(loss: BernoulliLoss | EveryNthLoss | PlannedLoss | GilbertElliottLoss | None) -> str:
    if loss is None:
        return "none"
    if isinstance(loss, BernoulliLoss):
        return f"bernoulli:{loss.rate:.12g}"
    if isinstance(loss, EveryNthLoss):
        return f"every_nth:{loss.n}"
    if isinstance(loss, PlannedLoss):
        return "at:" + ",".join(str(i) for i in loss.at)
    return f"ge:{loss.p:.12g}:{loss.r:.12g}:{1 - loss.loss_bad:.12g}:{1 - loss.loss_good:.12g}"


def policy_args(tag: str, policy: TokenBucketPolicy | DocsisUpstreamPolicy | None) -> list[str]:
    """linkemu options for a direction's link-layer policy (the sustained rate is --XX-rate-bps)."""
    if isinstance(policy, TokenBucketPolicy):
        argv = [f"--{tag}-policy", "tbf", f"--{tag}-tbf-burst-bytes", str(policy.burst_bytes),
                f"--{tag}-tbf-peak-bps", str(int(round(policy.peak_mbps * 1e6)) if policy.peak_mbps else 0)]
        if policy.max_delay_ms:
            argv += [f"--{tag}-tbf-max-delay-us", str(max(1, int(round(policy.max_delay_ms * 1000))))]
        if policy.granularity_ms:
            argv += [f"--{tag}-tbf-granularity-us", str(max(1, int(round(policy.granularity_ms * 1000))))]
        if policy.phantom is not None:
            argv += [f"--{tag}-phantom-max-delay-us", str(max(1, int(round(policy.phantom.max_delay_ms * 1000)))),
                     f"--{tag}-phantom-knee-ppm", str(max(1, int(round(policy.phantom.knee * 1e6)))),
                     f"--{tag}-phantom-window-us", str(int(round(policy.phantom.window_ms * 1000)))]
        return argv
    if isinstance(policy, DocsisUpstreamPolicy):
        us = lambda ms: str(int(round(ms * 1000)))  # noqa: E731
        return [f"--{tag}-policy", "docsis", "--docsis-map-interval-us", us(policy.map_interval_ms),
                "--docsis-lookahead-us", us(policy.lookahead_ms),
                "--docsis-request-transit-us", us(policy.request_transit_ms),
                "--docsis-phy-rate-bps", str(int(round(policy.phy_rate_mbps * 1e6))),
                "--docsis-max-burst-bytes", str(policy.max_burst_bytes),
                "--docsis-concatenation", str(int(policy.concatenation)),
                "--docsis-piggyback", str(int(policy.piggyback))]
    return []


def aqm_args(tag: str, aqm: RedAqm | CodelAqm | PieAqm | None) -> list[str]:
    """linkemu's --XX-aqm for a direction's AQM (linkemu/aqm.h's spec string: times in us, thresholds in
    packets or bytes); none without one."""
    if aqm is None:
        return []
    def us(ms: float) -> str:
        return str(max(1, int(round(ms * 1000))))

    def dec(x: float) -> str:  # linkemu reads plain decimals (no exponent); the spec keeps these >= 1e-6
        return f"{x:.9f}".rstrip("0").rstrip(".")

    if isinstance(aqm, RedAqm):
        unit = "pkts" if aqm.mode == "packets" else "bytes"
        keys = [f"min_th_{unit}={int(aqm.min_th)}", f"max_th_{unit}={int(aqm.max_th)}", f"max_p={dec(aqm.max_p)}",
                f"wq={dec(aqm.wq)}", f"gentle={int(aqm.gentle)}", f"adaptive={int(aqm.adaptive)}",
                f"mean_pkt_bytes={aqm.mean_pkt_bytes}"]
    elif isinstance(aqm, CodelAqm):
        keys = [f"target_us={us(aqm.target_ms)}", f"interval_us={us(aqm.interval_ms)}"]
    else:
        keys = [f"target_us={us(aqm.target_ms)}", f"tupdate_us={us(aqm.tupdate_ms)}", f"alpha={dec(aqm.alpha)}",
                f"beta={dec(aqm.beta)}", f"max_burst_us={int(round(aqm.max_burst_ms * 1000))}"]
    return [f"--{tag}-aqm", f"{aqm.model}:{','.join([*keys, f'ecn={int(aqm.ecn)}'])}"]


def plain_decimal(x: float) -> str:
    """A number as linkemu reads decimals: digits and a point, no exponent (1e-05 -> 0.00001)."""
    return f"{x:.12f}".rstrip("0").rstrip(".") or "0"


def schedule_arg(steps: tuple[ScheduleStep, ...]) -> str:
    """linkemu's --XX-schedule for a direction's steps (schedule.h: T in us, rate in b/s, delay in us)."""
    out = []
    for step in steps:
        items = ([f"rate_bps={int(round(step.rate_mbps * 1e6))}"] if step.rate_mbps is not None else []) + \
                ([f"delay_us={int(round(step.delay_ms * 1000))}"] if step.delay_ms is not None else []) + \
                ([f"loss={plain_decimal(step.loss)}"] if step.loss is not None else [])
        out.append(f"{schedule_us(step.at_s)}:{','.join(items)}")
    return ";".join(out)


def mean_rate_bps(d: Direction, t0: float, t1: float) -> float:
    """The rate in force over [t0, t1] (s after the flows' start), averaged: a schedule's rate steps each
    weighted by how long it held in that window (the direction's own rate before the first step); a fixed
    direction's rate, or a trace's mean. The capacity a run's utilization is judged against."""
    steps = [(-math.inf, float(d.rate_bps))] + [(s.at_s, s.rate_mbps * 1e6) for s in d.schedule
                                                if s.rate_mbps is not None]
    if t1 <= t0 or len(steps) == 1:
        return float(d.rate_bps)
    held = 0.0
    for i, (start, rate) in enumerate(steps):
        end = steps[i + 1][0] if i + 1 < len(steps) else math.inf
        held += rate * max(0.0, min(end, t1) - max(start, t0))
    return held / (t1 - t0)


def varies(link: ResolvedLink) -> bool:
    """A link with a schedule or a trace: the emulator must know when the flows start (its epoch)."""
    return any(d.schedule or d.trace is not None for d in (link.forward, link.reverse))


def choose_backend(link: ResolvedLink, has_netem: bool, has_emulator: bool,
                   tc_aqms: frozenset[str] = frozenset()) -> tuple[str, str]:
    """A link's backend and why. `tc_aqms`: the AQM models whose kernel qdisc exists here (sch_red,
    sch_codel, sch_pie; `Capabilities.tc_aqms`).

    An AQM runs in the emulator unless the spec asks for tc, or linkemu is not built: linkemu runs the
    papers' models exactly and seeded (gentle RED, byte-mode probabilities, ECN); tc gets the kernel's
    qdiscs, mapped by `tc_aqm`, which refuses in one line what a kernel qdisc cannot express."""
    if varies(link) and (link.backend == "tc" or not has_emulator):
        field = "trace" if any(d.trace is not None for d in (link.forward, link.reverse)) else "schedule"
        raise ShapingError(f"links.{link.id}.{field}: only the emulator runs a time-varying link (tc cannot)"
                           + ("" if has_emulator else ", and linkemu is not built"))
    lossy = link.forward.loss is not None or link.reverse.loss is not None
    scheduled = link.forward.policy is not None or link.reverse.policy is not None
    models = {d.aqm.model: where for d, where in ((link.reverse, "reverse.aqm"), (link.forward, "aqm"))
              if d.aqm is not None}
    managed = bool(models)
    if managed and (link.backend == "tc" or not has_emulator):
        missing = sorted(m for m in models if m not in tc_aqms)
        if missing:
            # the development kernel has none of them (CONFIG_NET_SCH_RED etc. off)
            raise ShapingError(f"links.{link.id}.{models[missing[0]]}: this kernel has no sch_{missing[0]}: only "
                               "the emulator runs it here" + ("" if has_emulator else ", and linkemu is not built"))
        if scheduled:
            raise ShapingError(f"links.{link.id}.backend: tc cannot run a link-layer policy; use the emulator")
        tc_link_aqm(link)  # refuses, naming the field, what the kernel's qdisc cannot express
        qdiscs = ", ".join(f"sch_{m}" for m in sorted(models))
        # the rest of the link (delay, loss) decided as without an AQM, by tc alone
        backend, why = choose_backend(replace(link, forward=replace(link.forward, aqm=None),
                                              reverse=replace(link.reverse, aqm=None)), has_netem, False)
        if link.backend == "tc":
            return backend, f"{why}; the kernel's {qdiscs} runs the AQM"
        return backend, f"linkemu is not built: the kernel's {qdiscs} runs the AQM ({why})"
    scheduled = scheduled or managed or varies(link)
    if scheduled and not has_emulator:
        raise ShapingError(f"links.{link.id}: a link-layer policy (token bucket, DOCSIS MAC) needs the emulator")
    if scheduled and link.backend == "tc":
        raise ShapingError(f"links.{link.id}.backend: tc cannot run a link-layer policy; use the emulator")
    delayed = any(d.delay_us or d.jitter_us for d in (link.forward, link.reverse))
    if link.backend == "emulator":
        if not has_emulator:
            raise ShapingError(f"links.{link.id}.backend: emulator requested but linkemu is not built")
        return "emulator", "the spec asks for the userspace emulator"
    if link.backend == "tc":
        if delayed and not has_netem:
            raise ShapingError(f"links.{link.id}.backend: tc cannot delay this link: sch_netem is missing")
        return "tc", "the spec asks for tc" + (" (netem loss is not seeded)" if lossy else "")
    if has_emulator and (lossy or scheduled or not has_netem):
        return "emulator", ("the link varies in time (a schedule or a mahimahi trace)" if varies(link) else
                            "the link runs active queue management (RED / CoDel / PIE)" if managed else
                            "the link runs a link-layer policy (token bucket / DOCSIS MAC)" if scheduled else
                            "loss must be seeded and repeatable" if lossy else
                            "sch_netem is missing, so delay comes from the userspace emulator" if delayed else
                            "sch_netem is missing: the emulator shapes every link, so all of them count "
                            "and carry TSO super-frames the same way")
    if has_netem or not delayed:
        return "tc", "sch_netem present: kernel shaping (HTB + netem)" if has_netem else \
            "no delay asked: HTB rate and FIFO suffice"
    raise ShapingError(f"links.{link.id}: delay needs sch_netem or the link emulator; neither is available")


WIRE_A, WIRE_B = "wire-a", "wire-b"


def _tc_link_node(node: str, dev_a: str, dev_b: str, mtu_bytes: int = MTU_BYTES) -> list[Command]:
    """Inside the link node: dev_a -- br-a -- wire-a <veth> wire-b -- br-b -- dev_b.

    Each direction then crosses two egresses of its own inside the link node: the wire
    (netem delay/loss, on wire-a forward and wire-b reverse) and the queue (HTB rate + FIFO,
    on dev_b forward and dev_a reverse). Nothing is shaped on the end nodes, so a host can
    sit on a shaped link without delay on its own egress.
    """
    argv = [("ip", "link", "add", WIRE_A, "type", "veth", "peer", "name", WIRE_B),
            ("ip", "link", "add", "br-a", "type", "bridge"), ("ip", "link", "add", "br-b", "type", "bridge"),
            ("ip", "link", "set", dev_a, "master", "br-a"), ("ip", "link", "set", WIRE_A, "master", "br-a"),
            ("ip", "link", "set", WIRE_B, "master", "br-b"), ("ip", "link", "set", dev_b, "master", "br-b")]
    for dev in (WIRE_A, WIRE_B):
        argv.append(("ethtool", "-K", dev, "tx", "off", "tso", "off", "gso", "off", "gro", "off"))
        if mtu_bytes != MTU_BYTES:  # the run's MTU (the network sets it on every other interface)
            argv.append(("ip", "link", "set", dev, "mtu", str(mtu_bytes)))
    argv += [("ip", "link", "set", dev, "up") for dev in (WIRE_A, WIRE_B, "br-a", "br-b")]
    return [Command(node, a) for a in argv]


def _tc_queue(node: str, dev: str, d: Direction, aqm: TcAqm | None = None) -> list[Command]:
    """HTB rate on `dev`'s root and, under its class 1:1, the queue: the direction's AQM qdisc (`tc_aqm`)
    or a packet/byte FIFO of the buffer's size."""
    burst = max(2 * (d.mtu_bytes + ETH_HEADER_BYTES), int(d.rate_bps / 8 * HTB_BURST_S))
    # stab overhead -14: HTB charges IP bytes, like the emulator (L2 framing is free).
    cmds = [Command(node, ("tc", "qdisc", "replace", "dev", dev, "root", "handle", "1:", "stab", "overhead",
                           str(-ETH_HEADER_BYTES), "htb", "default", "1")),
            Command(node, ("tc", "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb",
                           "rate", f"{d.rate_bps}bit", "ceil", f"{d.rate_bps}bit",
                           "burst", str(burst), "cburst", str(burst)))]
    fifo = aqm.argv if aqm is not None else \
        ("pfifo", "limit", str(d.limit_pkts)) if d.limit_pkts else ("bfifo", "limit", str(d.limit_bytes))
    cmds.append(Command(node, ("tc", "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", *fifo)))
    return cmds


def _tc_wire(node: str, dev: str, d: Direction) -> list[Command]:
    if not (d.delay_us or d.jitter_us or d.loss):
        return []
    # The wire holds rate x delay worth of packets (at the smallest frames, ACKs); netem's
    # default 1000-packet limit would drop long-fat-pipe traffic on the wire itself.
    wire_pkts = max(1000, math.ceil(d.rate_bps * (d.delay_us + d.jitter_us) / 1e6 / (8 * 64)))
    argv = ["tc", "qdisc", "replace", "dev", dev, "root", "netem", "limit", str(wire_pkts),
            "delay", f"{d.delay_us}us"]
    if d.jitter_us:
        argv += [f"{d.jitter_us}us"]
    if isinstance(d.loss, BernoulliLoss):
        argv += ["loss", "random", f"{d.loss.rate * 100:.10g}%"]
    elif isinstance(d.loss, GilbertElliottLoss):
        argv += ["loss", "gemodel", f"{d.loss.p * 100:.10g}%", f"{d.loss.r * 100:.10g}%",
                 f"{d.loss.loss_bad * 100:.10g}%", f"{(1 - d.loss.loss_good) * 100:.10g}%"]
    elif isinstance(d.loss, EveryNthLoss | PlannedLoss):
        raise ShapingError(f"{d.loss.model} loss needs the emulator backend")
    return [Command(node, tuple(argv))]


# --- kernel AQM through tc (pure) --------------------------------------------------------------
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


def plan_link(link: ResolvedLink, devs: Devices, *, decided: tuple[str, str], seed: int, stats_interval_ms: int,
              drops_log: str, gso: bool = True, upstream_bps: tuple[int, int] = (0, 0)) -> LinkPlanResult:
    """One link's plan, for the backend and its reason the run's plan `decided` (fastlab.plan.prepare,
    by `choose_backend`). `gso`: the emulator takes TSO/GSO super-frames whole (the network's offloads
    are on); without it, one frame per MTU packet (offloads off). `upstream_bps`: forward and reverse
    rate of the slowest hop before this link (routing.upstream_rates)."""
    backend, why = decided
    resolved: dict[str, Any] = {"forward": asdict(link.forward), "reverse": asdict(link.reverse),
                                "rtt_ms": link.rtt_ms}
    for direction in ("forward", "reverse"):
        for key in ("loss", "policy", "aqm"):
            if resolved[direction][key] is not None:
                resolved[direction][key] = getattr(getattr(link, direction), key).model_dump()
        resolved[direction]["schedule"] = [s.model_dump(exclude_none=True)
                                           for s in getattr(link, direction).schedule]
    if backend == "emulator":
        argv = [str(paths.linkemu_binary()), "--if-a", devs.dev_a, "--if-b", devs.dev_b,
                "--seed", str(link_seed(seed, link.id)), "--stats-interval-ms", str(stats_interval_ms),
                "--drops-log", drops_log, "--gso", "1" if gso else "0",
                "--rt-priority", str(EMULATOR_RT_PRIORITY)]
        for tag, d, up in (("ab", link.forward, upstream_bps[0]), ("ba", link.reverse, upstream_bps[1])):
            argv += [f"--{tag}-rate-bps", str(d.rate_bps), f"--{tag}-upstream-bps", str(up),
                     f"--{tag}-delay-us", str(d.delay_us),
                     f"--{tag}-jitter-us", str(d.jitter_us), f"--{tag}-limit-pkts", str(d.limit_pkts or 0),
                     f"--{tag}-limit-bytes", str(d.limit_bytes or 0), f"--{tag}-loss", loss_arg(d.loss)]
            argv += policy_args(tag, d.policy) + aqm_args(tag, d.aqm)
            argv += [f"--{tag}-schedule", schedule_arg(d.schedule)] if d.schedule else []
            argv += [f"--{tag}-trace", d.trace.path] if d.trace is not None else []
        if varies(link):  # steps wait for the flows' start; until then the link's own values hold
            argv.append("--epoch-on-signal")
        docsis = [d.policy for d in (link.forward, link.reverse) if isinstance(d.policy, DocsisUpstreamPolicy)]
        if len(docsis) == 2 and docsis[0] != docsis[1]:
            raise ShapingError(f"links.{link.id}: both directions run a DOCSIS MAC with different parameters")
        return LinkPlanResult(link.id, backend, why, emulator_argv=tuple(argv), resolved=resolved,
                              epoch=varies(link))
    cmds = _tc_link_node(devs.node, devs.dev_a, devs.dev_b, link.forward.mtu_bytes)
    cmds += _tc_wire(devs.node, WIRE_A, link.forward) + _tc_wire(devs.node, WIRE_B, link.reverse)
    fwd_aqm, rev_aqm = tc_link_aqm(link)
    for direction, chosen in (("forward", fwd_aqm), ("reverse", rev_aqm)):
        if chosen is not None:
            resolved[direction]["tc_aqm"] = chosen.effective  # what the kernel got (environment.json)
    cmds += _tc_queue(devs.node, devs.dev_b, link.forward, fwd_aqm) + \
        _tc_queue(devs.node, devs.dev_a, link.reverse, rev_aqm)
    return LinkPlanResult(link.id, backend, why, commands=tuple(cmds),
                          stats_devs={"forward": (devs.node, devs.dev_b), "reverse": (devs.node, devs.dev_a)},
                          resolved=resolved)


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


def lateness_totals(c: dict[str, Any]) -> dict[str, Any]:
    """A direction's lateness and socket wait so far (linkemu's cumulative counts and means, µs): the
    difference of two samples gives the mean over any window (fastlab.fidelity.window_mean_us), e.g. a
    checkpoint's, where the verdict judges the whole run."""
    late, wait = c.get("late_us") or {}, c.get("rx_wait_us") or {}
    return {"late_n": late.get("n"), "late_mean_us": late.get("mean"),
            "rx_wait_n": wait.get("n"), "rx_wait_mean_us": wait.get("mean")}


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
    the plans and `start_shared` starts one process for all of them (fastlab.shared_emulator)."""

    net: Any  # fastlab.network.Network
    emit: Callable[[dict[str, Any]], None]
    mode: str = "per_link"
    processes: int = 1  # shared mode: how many linkemu processes share the links
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
            rate = max(int(p.resolved[d]["rate_bps"] or 0) for p in plans for d in ("forward", "reverse"))
            placed = placement.colocate(key, emulator.pid, threads, rate, k + placement.run_offset(self.net.prefix))
        for plan in plans:
            self._emulators[plan.link] = emulator
            self._epoch_links += [plan.link] if plan.epoch else []
            record = next(r for r in self.applied if r["link"] == plan.link)
            record["colocated"] = placed | {"emulator": key}
        deadline = time.monotonic() + EMULATOR_READY_TIMEOUT_S
        if not all(e.wait(max(0.0, deadline - time.monotonic())) for e in ready.values()):
            emulator.stop(EMULATOR_STOP_GRACE_S)
            raise ShapingError(f"the {key} ({len(plans)} links) did not start: "
                               f"{emulator.stderr_text() or 'no ready line for every link'}")

    def _handler(self, plan: LinkPlanResult, ready: threading.Event) -> Callable[[dict[str, Any]], None]:
        """What to do with each line a link's emulator writes: ready, its epoch, its stats (samples)."""
        def on_message(msg: dict[str, Any]) -> None:
            if msg.get("event") == "ready":
                ready.set()
            elif msg.get("event") == "epoch" and self._flows_t0 is not None:
                # the emulator's time origin against the flows' (the charts' zero): the gap it was late by
                record = next(r for r in self.applied if r["link"] == plan.link)
                late_ms = round((msg["t"] - self._flows_t0) * 1e3, 3)
                record["epoch"] = {"t": msg["t"], "after_flows_start_ms": late_ms}
            elif msg.get("event") == "stats":
                with self._fresh:
                    self.final[plan.link] = msg
                    self._lines[plan.link] = self._lines.get(plan.link, 0) + 1
                    self._fresh.notify_all()
                for sample in emulator_samples(plan.link, msg):
                    self.emit(sample)
        return on_message

    def _colocate(self, plan: LinkPlanResult) -> dict[str, Any]:
        """The emulator and the receive threads it wakes on one CPU, if its link is slow enough."""
        threads = self.net.receive_threads.get(plan.link, [])
        rate = max(int(plan.resolved[d]["rate_bps"] or 0) for d in ("forward", "reverse"))
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
