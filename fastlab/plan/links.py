"""A shaped link resolved (pure): `resolve` merges a topology's default link profile with the spec's
overrides into concrete per-direction numbers (`ResolvedLink`, one `Direction` each way), checked against
what any backend can carry. fastlab.plan.link_commands chooses each link's backend and turns it into
commands; fastlab.net.shaping runs them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from fastlab.define import linktrace
from fastlab.define.schema import (
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
)
from fastlab.define.topology import ShapedLinkPlan

ETH_HEADER_BYTES = 14


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
    by it. A trace file is read and checked here, once (fastlab.define.linktrace); its mean rate is the
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


