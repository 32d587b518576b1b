"""Each link's backend chosen and carried out on paper (pure): `choose_backend` picks tc or the emulator
with the reason (called by the run's plan, fastlab.plan.prepare.prepare, and nowhere else); `plan_link`
turns that choice into tc commands (HTB, netem, the kernel's AQM from fastlab.plan.tc_aqm) or the
emulator's command line, with what the link resolved to (`LinkPlanResult`). The one tc planner;
fastlab.net.shaping runs what it returns.

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
import zlib
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from fastlab.base import paths
from fastlab.define.schema import (
    MTU_BYTES,
    PHANTOM_FLOW_EXPONENT_STEP,
    BernoulliLoss,
    CodelAqm,
    DocsisUpstreamPolicy,
    EveryNthLoss,
    GilbertElliottLoss,
    PieAqm,
    PlannedLoss,
    RedAqm,
    ScheduleStep,
    TokenBucketPolicy,
    schedule_us,
)
from fastlab.define.topology import TopologyPlan
from fastlab.plan.links import ETH_HEADER_BYTES, Direction, ResolvedLink, ShapingError, varies
from fastlab.plan.tc_aqm import TcAqm, tc_link_aqm

HTB_BURST_S = 0.001  # one ms of tokens: enough for timer granularity, small enough to stay smooth
# Emulators run SCHED_FIFO so that a release falling due while a host process holds the CPU is
# not delayed by it (Mininet-HiFi's lesson; measured: lateness p99 192 -> 93 us at 1 Gb/s).
# Low on the RT scale: kernel threads that use RT priorities stay above it.
EMULATOR_RT_PRIORITY = 10

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
class Wire:
    """Interface names of one topology link, in the order the network is built: a's and b's devices and, for a
    shaped link, the names around its link node (`Devices`)."""

    a_dev: str
    b_dev: str
    devices: Devices | None = None


def wiring(plan: TopologyPlan, prefix: str) -> list[Wire]:
    """Every link's interface names (pure; the one place they are made: fastlab.net.network builds what this
    says). A host's or router's interfaces are private to its namespace (eth0, eth1, ...); a switch's ports live
    in the root namespace and carry its run-prefixed name; a shaped link's node x<i> has <x>-a and <x>-b."""
    ports: dict[str, int] = {}

    def next_dev(node: str) -> str:
        ports[node] = ports.get(node, -1) + 1
        return f"{prefix}{node}-eth{ports[node]}" if plan.nodes[node].role == "switch" else f"eth{ports[node]}"

    wires = []
    for i, link in enumerate(plan.links):
        a_dev, b_dev = next_dev(link.a), next_dev(link.b)
        x = f"x{i}"
        wires.append(Wire(a_dev, b_dev, Devices(link.a, a_dev, link.b, b_dev, x, f"{x}-a", f"{x}-b")
                          if link.shaped else None))
    return wires


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
            if quarters := int(round(policy.phantom.flow_exponent / PHANTOM_FLOW_EXPONENT_STEP)):
                argv += [f"--{tag}-phantom-flow-exp-q", str(quarters)]
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



def plan_link(link: ResolvedLink, devs: Devices, *, decided: tuple[str, str], seed: int, stats_interval_ms: int,
              drops_log: str, gso: bool = True, upstream_bps: tuple[int, int] = (0, 0)) -> LinkPlanResult:
    """One link's plan, for the backend and its reason the run's plan `decided` (fastlab.plan.prepare.prepare,
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


