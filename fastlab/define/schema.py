"""Experiment spec: the YAML schema and `--set` overrides.

The spec is the single source of truth for a run: the CLI, the web app, labs and bundle replay
all produce one and hand it to `load_spec`, then to `plan.validate`. Structural rules live here,
in the pydantic models (unknown fields are refused, ranges checked); semantic rules (does the
topology exist, are the endpoints its hosts, is the algorithm usable, are its parameters in
range) live in `fastlab/plan/prepare.py`, so the schema needs no topology. Every error names the field
it is about.
"""

from __future__ import annotations

import copy
import functools
import os
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal, cast

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from fastlab.base.documents import (
    MAX_DEPTH,
    MAX_VALUES,
    DocumentError,
    check_shape,
    one_line,
    read_file,
    read_yaml,
)

MTU_BYTES = 1500  # standard Ethernet frames: the default throughout (docs/design.md §5)
MTU_MIN_BYTES = 576  # the smallest datagram every IPv4 host must accept (RFC 791)
MTU_MAX_BYTES = 9000  # jumbo frames, as the 2002-2003 records used (Abilene, DataTAG)
# One table of ranges for a link's values, fixed or scheduled (all within linkemu's: 1 Tb/s, 1 h).
RATE_MAX_MBPS = 400_000
DELAY_MAX_MS = 10_000
DURATION_MAX_S = 3600
SCHEDULE_MAX_STEPS = 1024  # linkemu's EMU_SCHEDULE_MAX_STEPS
# Flows of a run in all, each entry's `count` added up: `count` is a shorthand for entries, not a way past
# the 64 entries `flows` takes (64 entries x count 64 validated 4,096 flows, issue 47). Each flow is a
# sender and a receiver process, a socket pair and a trace series: the runs at this bound are the largest
# measured here (the web form's maxima, 64 flows: +257 MB of server memory, issue 37; 16 flows' tools
# took 30 s to start in the 2-vCPU TCG guest, commit 187b272).
MAX_FLOWS = 64
# Repetitions of one spec (`repeat`): each is a whole run, one after another on this machine; 100 of the
# labs' 60-s steps is close to two hours, past which a sweep file (resumable, on a cluster) is the way.
MAX_REPEAT = 100
# A run records its flows and links once a sample period (1 / sample_hz): fewer than this many samples
# are no trace, no mean and no verdict (a 1e-300-s run was called done and faithful with 0 samples,
# issue 47). fastlab.plan.prepare adds the path's own bound: a few base RTTs.
MIN_SAMPLE_PERIODS = 4
TRACE_PATH_MAX = 4096  # PATH_MAX


class SpecError(ValueError):
    """An invalid experiment spec; the message names the offending field."""


class Strict(BaseModel):
    """Every model of a spec (and a topology's arguments): no unknown field, and strict values -- a number
    where a number is meant (an integer counts as a float), not `true` (which ran a link at 1 Mb/s) nor
    "5" (issue 47), and a finite one; a boolean is true or false, not 1 or the text "true". A topology
    plugin's `Args` subclasses it."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


# --- buffers -----------------------------------------------------------------------------------

BUFFER_UNITS = {"packets": "packets", "pkts": "packets", "pkt": "packets", "p": "packets",
                "bytes": "bytes", "b": "bytes", "kb": "kb", "mb": "mb", "ms": "ms", "bdp": "bdp"}
_BUFFER_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]+)\s*$", re.I)


BufferUnit = Literal["packets", "bytes", "ms", "bdp"]


@dataclass(frozen=True)
class Buffer:
    """A queue size in one of four units, resolved to packets/bytes once the link is known."""

    value: float
    unit: BufferUnit

    def __str__(self) -> str:
        return f"{self.value:g} {self.unit}"

    def spec_text(self) -> str:
        """As a spec writes it, read back by parse_buffer: "100p", "150000B", "50ms", "1.5bdp"."""
        return f"{self.value:g}{ {'packets': 'p', 'bytes': 'B', 'ms': 'ms', 'bdp': 'bdp'}[self.unit]}"


def parse_buffer(raw: object) -> Buffer:
    """Accept 100, "100 packets", "150KB", "1.5MB", "50ms", "1.5bdp" or {"bdp": 1.5}."""
    try:
        return _parse_buffer(raw)
    except OverflowError:  # an integer too large for a float
        raise ValueError("buffer must be positive and sane, got a number too large") from None


def _parse_buffer(raw: object) -> Buffer:
    if isinstance(raw, Buffer):
        return raw
    if isinstance(raw, bool):
        raise ValueError("buffer must be a size, not a boolean")
    if isinstance(raw, (int, float)):
        value, unit = float(raw), "packets"
    elif isinstance(raw, dict) and len(raw) == 1:
        (unit, value), = raw.items()
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"buffer {unit} must be a number")
        value = float(value)
    elif isinstance(raw, str) and (m := _BUFFER_RE.match(raw)):
        value, unit = float(m.group(1)), m.group(2)
    else:
        raise ValueError(f"cannot read buffer {raw!r}: use e.g. 100 (packets), '150KB', '50ms', '1.5bdp'")
    canonical = BUFFER_UNITS.get(str(unit).lower())
    if canonical is None:
        raise ValueError(f"unknown buffer unit in {raw!r} (use packets, bytes, KB, MB, ms or bdp)")
    if canonical == "kb":
        value, canonical = value * 1000, "bytes"
    elif canonical == "mb":
        value, canonical = value * 1_000_000, "bytes"
    if not 0 < value <= 1e9:
        raise ValueError(f"buffer must be positive and sane, got {raw!r}")
    return Buffer(value, cast(BufferUnit, canonical))


BufferField = Annotated[Buffer, Field(json_schema_extra={"type": "string"})]


# --- loss models -------------------------------------------------------------------------------

class BernoulliLoss(Strict):
    model: Literal["bernoulli"]
    rate: float = Field(ge=0.0, le=1.0, title="Loss rate (fraction)",
                        description="drop probability per packet, a fraction: 0.01 = 1 % of packets lost at random")


class EveryNthLoss(Strict):
    model: Literal["every_nth"]
    n: int = Field(ge=1, le=1_000_000_000, description="drop each packet whose index is a multiple of n")


LOSS_AT_MAX = 16  # linkemu's LOSS_AT_MAX: a handful of planned losses is what an experiment can read


class PlannedLoss(Strict):
    """Drop exactly the packets with these 1-based arrival indices on the link (no randomness).

    One planned loss shows a single recovery, the experiment of Reno's regrowth after one loss,
    with the same packet lost on every run and with or without the fast path.
    """

    model: Literal["packets"]
    at: list[Annotated[StrictInt, Field(ge=1, le=2**63)]] = Field(min_length=1, max_length=LOSS_AT_MAX,
                                                             description="1-based indices, strictly increasing")

    @field_validator("at")
    @classmethod
    def _increasing(cls, at: list[int]) -> list[int]:
        if any(b <= a for a, b in zip(at, at[1:], strict=False)):
            raise ValueError("indices must be strictly increasing")
        return at


class GilbertElliottLoss(Strict):
    model: Literal["gilbert_elliott"]
    p: float = Field(ge=0.0, le=1.0, description="P(good -> bad) per packet")
    r: float = Field(ge=0.0, le=1.0, description="P(bad -> good) per packet")
    loss_bad: float = Field(1.0, ge=0.0, le=1.0, description="drop probability in the bad state")
    loss_good: float = Field(0.0, ge=0.0, le=1.0, description="drop probability in the good state")


LossSpec = Annotated[BernoulliLoss | EveryNthLoss | PlannedLoss | GilbertElliottLoss, Field(discriminator="model")]


# --- link-layer schedulers (emulator departure policies) ----------------------------------------

# The calibrated phantom element's fitted defaults: the output of `bench/docsis.py --fit` (stored in
# bench/data/docsis-phantom-fit.json; tests/unit hold these to it). Not derived from any mechanism.
PHANTOM_FIT_MAX_DELAY_MS = 35.0
PHANTOM_FIT_KNEE = 0.5
PHANTOM_FIT_FLOW_EXPONENT = 2.5
PHANTOM_WINDOW_MS = 1000.0
PHANTOM_FLOW_EXPONENT_STEP = 0.25  # linkemu takes the exponent in quarters (--XX-phantom-flow-exp-q)
PHANTOM_FLOW_EXPONENT_MAX = 4.0


class PhantomDelay(Strict):
    """Empirical, calibrated to Atov et al.'s measurements (TENCON 2005); the mechanism is unknown.

    A real Cisco CMTS and cable modem of about 2005 added ~45 ms of load-dependent delay to a 3 Mb/s
    downstream "when the link is highly, but not fully, utilised", its minimum RTT rising too; no
    documented DOCSIS mechanism gives it (fastlab's sourced MAC model gives 8-12 ms that do not depend
    on load). Two FAST flows needed alpha 22 each where one needed 13: more than the one flow's delay
    split between them, which a delay of the aggregate alone (load, aggregate window) cannot give. This
    element reproduces both, named as a calibration: every downstream packet is delayed after the
    shaper (so the link keeps its full rate) by D = max_delay_ms x min(1, load / knee) x N^flow_exponent,
    load = what the downstream carried over the last window_ms over its rate, N = the number of equally
    loaded flows that traffic amounts to, (sum of the flows' bytes)^2 / sum of their squares.
    `calibrated_load_delay` is the element without the flow term (flow_exponent 0), the form fitted on
    2026-11-27 and kept as the candidate the two-flow measurement refuted. linkemu/phantom.h.
    """

    model: Literal["calibrated_flow_delay", "calibrated_load_delay"]
    max_delay_ms: float = Field(PHANTOM_FIT_MAX_DELAY_MS, gt=0, le=10_000,
                                description="one flow's delay at and above the knee (fitted)")
    knee: float = Field(PHANTOM_FIT_KNEE, ge=1e-6, le=1.0,
                        description="the load share (of the link's rate) at which the delay is reached (fitted)")
    window_ms: float = Field(PHANTOM_WINDOW_MS, ge=0.064, le=60_000, description="the load is read over this span")
    flow_exponent: float = Field(PHANTOM_FIT_FLOW_EXPONENT, ge=0, le=PHANTOM_FLOW_EXPONENT_MAX,
                                 description="k of N^k, N the equally loaded flows in the window (fitted; "
                                             f"multiples of {PHANTOM_FLOW_EXPONENT_STEP:g}); "
                                             "calibrated_load_delay: 0")

    @model_validator(mode="before")
    @classmethod
    def _load_model_has_no_flow_term(cls, data: Any) -> Any:
        """The load-only model's exponent is 0 unless given (and must be: checked after)."""
        if isinstance(data, dict) and data.get("model") == "calibrated_load_delay" and "flow_exponent" not in data:
            return data | {"flow_exponent": 0.0}
        return data

    @field_validator("flow_exponent")
    @classmethod
    def _flow_exponent(cls, value: float, info: ValidationInfo) -> float:
        steps = value / PHANTOM_FLOW_EXPONENT_STEP
        if abs(steps - round(steps)) > 1e-9:
            raise ValueError(f"{value:g} is not a multiple of {PHANTOM_FLOW_EXPONENT_STEP:g} (linkemu takes quarters)")
        if info.data.get("model") == "calibrated_load_delay" and value:
            raise ValueError("calibrated_load_delay has no flow term (model: calibrated_flow_delay)")
        return value


class TokenBucketPolicy(Strict):
    """Token bucket at the link rate (max sustained rate), serializing at the peak rate while tokens last;
    optionally Cisco's downstream shaping (a frame short of tokens waits whole slots of `granularity_ms`,
    and is dropped when that wait would exceed `max_delay_ms`) and the calibrated phantom element."""

    model: Literal["token_bucket"]
    burst_bytes: int = Field(3044, ge=1, le=100_000_000, description="bucket depth (max traffic burst)")
    peak_mbps: float | None = Field(None, gt=0, le=400_000, description="peak (PHY) rate; none = unlimited")
    max_delay_ms: float | None = Field(None, ge=0.001, le=100_000,
                                       description="drop threshold on the shaping delay (Cisco max-delay: "
                                                   "128/256/512/1024 ms, IOS 12.2BC default 128); none = no threshold")
    granularity_ms: float | None = Field(None, ge=0.001, le=1000,
                                         description="shaping-queue slot width (Cisco: 1/2/4/8/16 ms, default 4); "
                                                     "none = exact delays")
    phantom: PhantomDelay | None = Field(None, description="the calibrated load- and flow-dependent delay; "
                                                             "none = off")


class DocsisUpstreamPolicy(Strict):
    """DOCSIS upstream request-grant MAC; the link rate is the max sustained rate of the service flow."""

    model: Literal["docsis_upstream"]
    map_interval_ms: float = Field(2.0, ge=0.001, le=1000)
    lookahead_ms: float = Field(1.6, ge=0, le=10_000, description="request-to-grant lookahead at the CMTS")
    request_transit_ms: float = Field(0.45, ge=0, le=10_000, description="request transit CM -> CMTS")
    phy_rate_mbps: float = Field(2.56, gt=0, le=10_000, description="upstream PHY rate (assumption)")
    max_burst_bytes: int = Field(3044, ge=1, le=100_000_000, description="upstream token-bucket depth")
    concatenation: bool = True
    piggyback: bool = True


PolicySpec = Annotated[TokenBucketPolicy | DocsisUpstreamPolicy, Field(discriminator="model")]


# --- active queue management (emulator; tc where the kernel has the qdisc: shaping.tc_aqm) -----------------

# The ranges linkemu accepts (linkemu/aqm.h, aqm.c's key tables), so that a spec the schema accepts is
# never refused by the emulator after the network is built; tests/unit/test_spec.py reads the C and holds
# every AQM field's range inside linkemu's.
AQM_TIME_MAX_MS = 60_000  # AQM_MAX_TIME_US: targets, intervals, bursts
PIE_TUPDATE_MIN_MS = 0.1  # AQM_PIE_MIN_TUPDATE_US: PIE catches up on its updates per arrival
PIE_GAIN_MAX_HZ = 100  # AQM_PIE_MAX_GAIN_HZ: alpha and beta
RED_TH_MAX = 2**30  # AQM_RED_MAX_TH: packets or bytes

class RedAqm(Strict):
    """RED (Floyd & Jacobson, "Random Early Detection Gateways for Congestion Avoidance", 1993): the
    average queue is an EWMA (weight `wq`) of the backlog at each arrival; between `min_th` and `max_th`
    a packet is dropped with p_a = p_b / (1 - count p_b), p_b = max_p (avg - min_th) / (max_th - min_th),
    count = packets since the last drop. `gentle` (Floyd 2000) raises p from max_p to 1 between max_th and
    2 max_th instead of dropping everything above max_th; `adaptive` (Floyd, Gummadi, Shenker 2001) moves
    max_p to keep the average between the thresholds. Thresholds in packets, or in bytes with
    `mode: bytes`. Defaults: Floyd's recommendations (wq 0.002, max_p 0.1, max_th = 3 min_th)."""

    model: Literal["red"]
    min_th: float = Field(5, gt=0, le=RED_TH_MAX - 1,
                          description="lower threshold of the average queue (packets, or bytes)")
    max_th: float = Field(15, ge=1, le=RED_TH_MAX, description="upper threshold (packets, or bytes)")
    max_p: float = Field(0.1, ge=1e-6, le=1, description="drop probability at max_th")
    wq: float = Field(0.002, ge=1e-6, le=1, description="weight of the newest backlog in the average")
    gentle: bool = True
    adaptive: bool = False
    mode: Literal["packets", "bytes"] = "packets"
    mean_pkt_bytes: int = Field(500, ge=40, le=65535, description="the idle decay's typical small packet")
    ecn: bool = Field(False, description="mark ECN-capable packets (CE) instead of dropping them")

    @model_validator(mode="after")
    def _thresholds(self) -> RedAqm:
        if self.max_th <= self.min_th:
            raise ValueError(f"max_th ({self.max_th:g}) must be above min_th ({self.min_th:g})")
        if self.mode == "packets" and (self.min_th != int(self.min_th) or self.max_th != int(self.max_th)):
            raise ValueError("thresholds in packets are whole numbers (mode: bytes for bytes)")
        return self


class CodelAqm(Strict):
    """CoDel (RFC 8289): a packet whose sojourn time at the head of the queue stayed above `target_ms` for
    `interval_ms` starts the dropping state; the next drops follow at interval/sqrt(count)."""

    model: Literal["codel"]
    target_ms: float = Field(5.0, ge=0.001, le=AQM_TIME_MAX_MS, description="acceptable standing queue delay")
    interval_ms: float = Field(100.0, ge=0.001, le=AQM_TIME_MAX_MS,
                               description="the sliding window, ~ a worst-case RTT")
    ecn: bool = Field(False, description="mark ECN-capable packets (CE) instead of dropping them")


class PieAqm(Strict):
    """PIE (RFC 8033): every `tupdate_ms` the drop probability moves by alpha (qdelay - target) + beta
    (qdelay - qdelay_old), scaled down while it is small; `max_burst_ms` of burst allowance after an idle
    queue."""

    model: Literal["pie"]
    target_ms: float = Field(15.0, ge=0.001, le=AQM_TIME_MAX_MS, description="target queueing delay")
    tupdate_ms: float = Field(15.0, ge=PIE_TUPDATE_MIN_MS, le=AQM_TIME_MAX_MS,
                              description="probability update interval")
    alpha: float = Field(0.125, ge=1e-6, le=PIE_GAIN_MAX_HZ,
                         description="weight of the delay's distance from target (1/s)")
    beta: float = Field(1.25, ge=1e-6, le=PIE_GAIN_MAX_HZ, description="weight of the delay's trend (1/s)")
    max_burst_ms: float = Field(150.0, ge=0, le=AQM_TIME_MAX_MS, description="burst allowance")
    ecn: bool = Field(False, description="mark ECN-capable packets (CE) instead of dropping them")


AqmSpec = Annotated[RedAqm | CodelAqm | PieAqm, Field(discriminator="model")]


# --- time-varying links (emulator) ---------------------------------------------------------------

class ScheduleStep(Strict):
    """One change of a time-varying link, `at_s` seconds after the flows start (the time zero of the charts
    and of links.csv's `t`): the values it sets hold until a later step sets them again; before the first
    step the link's own values hold (linkemu/README.md, "Time-varying links")."""

    at_s: float = Field(ge=0, le=DURATION_MAX_S, strict=True, allow_inf_nan=False,
                        description="seconds after the flows start")
    rate_mbps: float | None = Field(None, gt=0, le=RATE_MAX_MBPS, strict=True, allow_inf_nan=False,
                                    description="the rate from then on")
    delay_ms: float | None = Field(None, ge=0, le=DELAY_MAX_MS, strict=True, allow_inf_nan=False,
                                   description="the one-way delay from then on")
    loss: float | None = Field(None, ge=0, le=1, strict=True, allow_inf_nan=False,
                               description="Bernoulli loss probability from then on (a fraction)")

    @model_validator(mode="after")
    def _sets_something(self) -> ScheduleStep:
        if self.rate_mbps is None and self.delay_ms is None and self.loss is None:
            raise ValueError("a step sets at least one of rate_mbps, delay_ms, loss")
        return self


def schedule_us(at_s: float) -> int:
    """A step's time as linkemu counts it: whole microseconds."""
    return int(round(at_s * 1e6))


# --- links -------------------------------------------------------------------------------------

class LinkDirection(Strict):
    """Impairments of one direction of a shaped link; unset fields inherit."""

    rate_mbps: float | None = Field(None, gt=0, le=RATE_MAX_MBPS, title="Capacity (Mb/s)",
                                    description="this link's rate; empty = the topology's")
    delay_ms: float | None = Field(None, ge=0, le=DELAY_MAX_MS, title="Delay (ms)",
                                   description="one-way propagation delay")
    jitter_ms: float | None = Field(None, ge=0, le=DELAY_MAX_MS, title="Jitter (ms)",
                                    description="random variation of the delay")
    buffer: BufferField | None = None
    loss: LossSpec | None = None
    policy: PolicySpec | None = Field(None, description="link-layer scheduler (needs the emulator)")
    aqm: AqmSpec | None = Field(None, description="active queue management in front of the buffer (the emulator; "
                                "with backend tc, the kernel's sch_red, sch_codel or sch_pie where it has them)")
    schedule: list[ScheduleStep] | None = Field(None, min_length=1, max_length=SCHEDULE_MAX_STEPS,
                                                description="changes of rate, delay or loss during the run, "
                                                            "times increasing (needs the emulator)")
    trace: str | None = Field(None, min_length=1, max_length=TRACE_PATH_MAX,
                              description="a mahimahi packet-delivery trace file (mm-link's format) that sets "
                                          "the departures, in place of a rate (needs the emulator); relative to "
                                          "the spec file's folder")

    @field_validator("trace")
    @classmethod
    def _trace_path(cls, path: str | None) -> str | None:
        if path is not None and any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
            raise ValueError("the file name holds a control character")
        return path

    @field_validator("buffer", mode="before")
    @classmethod
    def _buffer(cls, raw: object) -> Buffer | None:
        return None if raw is None else parse_buffer(raw)

    @field_serializer("buffer")
    def _buffer_text(self, buffer: Buffer | None) -> str | None:
        # dumped as a spec writes it: model_dump made a {value, unit} mapping of it, which spec.yaml then held
        # and no spec reader accepts (a replayed bundle of a run with a buffer override was refused)
        return None if buffer is None else buffer.spec_text()

    @model_validator(mode="after")
    def _aqm_with_policy(self) -> LinkDirection:
        # CoDel decides where serialization starts, which a token bucket or the DOCSIS MAC decide themselves;
        # PIE reads the delay from departures the DOCSIS MAC only assigns later (linkemu/aqm.h)
        if isinstance(self.aqm, CodelAqm) and self.policy is not None:
            raise ValueError(f"aqm: codel cannot run with the {self.policy.model} policy, which sets departures "
                             "itself (red or pie can)")
        if isinstance(self.aqm, PieAqm) and isinstance(self.policy, DocsisUpstreamPolicy):
            raise ValueError("aqm: pie cannot run with the docsis_upstream policy (red can)")
        steps = self.schedule or []
        for i in range(1, len(steps)):
            if schedule_us(steps[i].at_s) <= schedule_us(steps[i - 1].at_s):
                raise ValueError(f"schedule[{i}].at_s ({steps[i].at_s:g}) must be after schedule[{i - 1}].at_s "
                                 f"({steps[i - 1].at_s:g}) by at least 1 us (times increase)")
        check_varying(self.schedule, self.trace is not None, self.rate_mbps is not None, self.policy, self.loss,
                      self.aqm)
        return self


def check_varying(schedule: list[ScheduleStep] | None, trace: bool, rate: bool, policy: object, loss: object,
                  aqm: object) -> None:
    """What a schedule or a trace cannot run with, as linkemu refuses it (linkemu/main.c check_policies): the
    one check of a direction as written and, in fastlab.plan.links.resolve, of one merged with its defaults."""
    if trace:
        if rate:
            raise ValueError("trace: the trace sets the link's capacity: rate_mbps cannot be given with it")
        if policy is not None:
            raise ValueError("trace: the trace sets the departures: no link-layer policy with it")
        if isinstance(aqm, CodelAqm):
            raise ValueError("trace: codel cannot run on a trace link (it decides departures itself; red or "
                             "pie can)")
    for i, step in enumerate(schedule or []):
        if step.rate_mbps is not None and trace:
            raise ValueError(f"schedule[{i}].rate_mbps: the trace sets the link's capacity (delay_ms and loss "
                             "steps can run with it)")
        if step.rate_mbps is not None and policy is not None:
            raise ValueError(f"schedule[{i}].rate_mbps: the link-layer policy sets its own rate (delay_ms and "
                             "loss steps can run with it)")
        if step.loss is not None and loss is not None and not isinstance(loss, BernoulliLoss):
            raise ValueError(f"schedule[{i}].loss: loss steps are Bernoulli: the link's loss must be none or "
                             "bernoulli")


class LinkSpec(LinkDirection):
    """A shaped link: fields describe the forward direction (a -> b); `reverse` overrides b -> a.

    Without `reverse`, the reverse direction has the same rate, delay and buffer, and no loss or
    link-layer policy.
    """

    backend: Literal["auto", "tc", "emulator"] = "auto"
    reverse: LinkDirection | None = None


# --- flows and experiment ----------------------------------------------------------------------

NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


class FlowSpec(Strict):
    src: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
    dst: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
    cc: str = Field("cubic", pattern=r"^[a-z0-9_]{1,15}$")
    count: int = Field(1, ge=1, le=64, strict=True)
    start_s: float = Field(0.0, ge=0, strict=True)
    stop_s: float | None = Field(None, gt=0, strict=True)
    cc_args: dict[str, Any] = Field(default_factory=dict)
    path: str | None = Field(None, pattern=r"^[a-z0-9_-]{1,32}$",
                             description="routed path through the topology's OpenFlow core (e.g. level3, abilene)")
    max_cwnd_pkts: int | None = Field(
        None, ge=1, le=1_000_000, strict=True,
        description="ceiling on each of these flows' congestion windows, packets, whatever the CC: "
                    "fixed-window experiments (a window below the path's BDP + buffer stays at it)")

    @model_validator(mode="after")
    def _window(self) -> FlowSpec:
        if self.stop_s is not None and self.stop_s <= self.start_s:
            raise ValueError(f"stop_s ({self.stop_s}) must be after start_s ({self.start_s})")
        if self.src == self.dst:
            raise ValueError("src and dst must differ")
        return self


class CcChange(Strict):
    """A scheduled change of a host's congestion-control parameters, e.g. alpha 20 -> 60 at 30 s."""

    at_s: float = Field(ge=0, strict=True, title="At (s)", description="seconds after the flows start")
    host: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,31}$", title="Host",
                      description="the sending host whose flows change")
    cc: str = Field(pattern=r"^[a-z0-9_]{1,15}$", title="Algorithm", description="the algorithm its flows run")
    args: dict[str, Any] = Field(min_length=1, title="New parameters",
                                 description="the parameters to set, e.g. alpha for FAST")


class ControllerSpec(Strict):
    """An OpenFlow 1.3 controller app (controllers/) that programs the topology's OpenFlow switches."""

    app: Literal["paths"] = "paths"
    stats_hz: float = Field(10.0, ge=5, le=50, description="port statistics polls per second")


class Reroute(Strict):
    """At `at_s`, move flows (ids f1, f2, ...; default: all) onto another path of the OpenFlow core."""

    at_s: float = Field(ge=0)
    path: str = Field(pattern=r"^[a-z0-9_-]{1,32}$")
    flows: list[Annotated[str, Field(pattern=r"^f[0-9]{1,3}$")]] | None = Field(None, min_length=1, max_length=64)


class EmulatorSpec(Strict):
    """How the run's emulated links are served: one linkemu process per link (per_link) or one process
    for all of them, one event loop and one timer (shared: fewer wake-ups as links and flows are added)."""

    mode: Literal["per_link", "shared"] = Field(
        "per_link", description="per_link: one emulator process per emulated link; shared: one process serves "
                                "every emulated link of the run")
    processes: int = Field(1, ge=1, le=16, strict=True,
                           description="shared mode: how many processes share the links (each an event loop "
                                       "of its own, on a CPU of its own with its links' receive threads)")

    @model_validator(mode="after")
    def _processes_need_shared(self) -> EmulatorSpec:
        if self.processes > 1 and self.mode != "shared":
            raise ValueError("processes: more than one needs mode shared")
        return self


TOPOLOGY_NAME_RE = r"^[a-z0-9_-]{1,32}$"


class TopologyFile(Strict):
    """A topology given as a Python file (fastlab.define.topology: NAME, DESCRIPTION, Args, plan), not
    by the name of one installed or configured: `topology: {file: my_topo.py}`."""

    file: str = Field(min_length=1, max_length=TRACE_PATH_MAX,
                      description="the topology's Python file; relative to the spec file's folder")

    @field_validator("file")
    @classmethod
    def _file_path(cls, path: str) -> str:
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
            raise ValueError("the file name holds a control character")
        if not path.endswith(".py"):
            raise ValueError(f"{path!r} is not a Python file (.py)")
        return path


class ExperimentSpec(Strict):
    """An experiment, the single source of truth for the CLI, the web app, labs and bundles: its topology
    (a name, or `{file: my_topo.py}`) and arguments, duration, flows (src, dst, algorithm and its
    parameters), link overrides and the choices of backends. Build it from fields (`fastlab.Spec(name=...,
    topology=..., duration_s=..., flows=[...])`, nested models as mappings) or read it from YAML
    (`fastlab.load_spec`); pydantic's ValidationError, or SpecError naming the field, when it is wrong.
    Whether it can run *here* (hosts, algorithms, backends) is checked when it is run."""

    name: str = Field(pattern=NAME_RE)
    description: str = Field("", max_length=2000)

    topology: Annotated[str, Field(pattern=TOPOLOGY_NAME_RE)] | TopologyFile = Field(
        description="a topology's name (fastlab topo list) or {file: my_topo.py}")
    topology_args: dict[str, Any] = Field(default_factory=dict)
    duration_s: float = Field(gt=0, le=DURATION_MAX_S, strict=True, title="Duration (s)",  # strict: not true, not '5'
                              description="how long the flows run")
    seed: int = Field(1, ge=0, le=2**32 - 1, strict=True, title="Seed",
                      description="random loss and start jitter repeat with the same seed")
    repeat: int = Field(1, ge=1, le=MAX_REPEAT, strict=True, title="Repetitions",
                        description="runs of this spec, repetition r with seed + r; each headline figure then "
                                    "as median, spread and a 95 % interval over the faithful runs")
    sample_hz: float = Field(20.0, ge=1, le=200, strict=True, title="Samples per second",
                             description="trace samples per second per flow and link")
    idle_pings: int = Field(10, ge=1, le=1000, strict=True, description="pings per flow path before the flows start")
    cc_changes: list[CcChange] = Field(default_factory=list, max_length=1000)
    flows: list[FlowSpec] = Field(min_length=1, max_length=64)
    links: dict[str, LinkSpec] = Field(default_factory=dict)
    controller: ControllerSpec | None = None
    reroutes: list[Reroute] = Field(default_factory=list, max_length=1000)
    switch: Literal["auto", "ovs", "bridge"] = Field(
        "auto", description="switch implementation: auto = OVS kernel datapath, else Linux bridge; "
                            "ovs = OVS (kernel, else userspace datapath); bridge = Linux bridge")
    cc_impl: Literal["auto", "bpf", "module"] = Field(
        "auto", description="build of fastlab's FAST and HSTCP: auto = BPF struct_ops where the kernel has them "
                            "(per-host parameters, state events), else the loadable modules; bpf; module (global "
                            "parameters through /sys/module/tcp_*/parameters)")
    mtu: int = Field(MTU_BYTES, ge=MTU_MIN_BYTES, le=MTU_MAX_BYTES, strict=True, title="MTU (bytes)",
                     description="IP MTU of every interface: 1500 = standard Ethernet frames, 9000 = jumbo "
                                 "frames (a window of 6x fewer packets); buffers in BDP or ms keep their bytes")
    fast_path: Literal["auto", "off"] = Field(
        "auto", description="auto: TSO/GSO super-frames cross the network whole (offloads on) where every shaped "
                            "link is emulated and no switch needs offloads off; off: one frame per MTU packet, "
                            "offloads off everywhere (slower; for comparison)")
    emulator: EmulatorSpec = Field(default_factory=lambda: EmulatorSpec(mode="per_link", processes=1),
                                   description="how the emulated links are served (linkemu processes)")

    @field_validator("name")
    @classmethod
    def _name_is_one_path_segment(cls, name: str) -> str:
        # A run folder and URL segment: '..' would be refused by every later lookup (run page, bundle).
        if ".." in name:
            raise ValueError("may not contain '..'")
        return name

    @field_validator("topology", mode="before")
    @classmethod
    def _topology_name_or_file(cls, value: Any) -> Any:
        """One line for either form (the union's own errors name both of its branches)."""
        if isinstance(value, str):
            if not re.fullmatch(TOPOLOGY_NAME_RE, value):
                raise ValueError(f"{value[:40]!r} is no topology name (a-z, 0-9, _ and -, at most 32; "
                                 "or {file: my_topo.py})")
            return value
        if isinstance(value, dict | TopologyFile):
            try:
                return TopologyFile.model_validate(value)
            except ValidationError as err:
                raise ValueError(format_validation_error(err)) from None
        raise ValueError("must be a topology's name or {file: my_topo.py}")

    @field_validator("fast_path", mode="before")
    @classmethod
    def _fast_path_yaml_words(cls, value: Any) -> Any:
        """YAML 1.1 reads `off` (and `no`, `false`) as false: `--set fast_path=off` must mean off."""
        if value is False:
            return "off"
        return value

    @model_validator(mode="after")
    def _flows_within_run(self) -> ExperimentSpec:
        total = sum(flow.count for flow in self.flows)
        if total > MAX_FLOWS:
            raise ValueError(f"flows: {total:,} flows in all (each entry's count added up): at most {MAX_FLOWS}")
        if self.duration_s * self.sample_hz < MIN_SAMPLE_PERIODS:
            raise ValueError(f"duration_s: {self.duration_s:g} s holds fewer than {MIN_SAMPLE_PERIODS} sample "
                             f"periods at {self.sample_hz:g} samples per second: at least "
                             f"{MIN_SAMPLE_PERIODS / self.sample_hz:g} s")
        for i, flow in enumerate(self.flows):
            if flow.start_s >= self.duration_s:
                raise ValueError(f"flows[{i}].start_s ({flow.start_s}) must be before duration_s ({self.duration_s})")
            if flow.stop_s is not None and flow.stop_s > self.duration_s:
                raise ValueError(f"flows[{i}].stop_s ({flow.stop_s}) is after duration_s ({self.duration_s})")
        for i, reroute in enumerate(self.reroutes):
            if reroute.at_s >= self.duration_s:
                raise ValueError(f"reroutes[{i}].at_s ({reroute.at_s}) must be before duration_s ({self.duration_s})")
        for link_id, link in self.links.items():
            for where, direction in (("", link), (".reverse", link.reverse)):
                for i, step in enumerate((direction.schedule or []) if direction is not None else []):
                    if step.at_s >= self.duration_s:
                        raise ValueError(f"links.{link_id}{where}.schedule[{i}].at_s: {step.at_s:g} s is not "
                                         f"before duration_s ({self.duration_s:g} s): the step would never come")
        if self.reroutes and self.controller is None:
            raise ValueError("reroutes: a reroute needs a controller (add `controller: {app: paths}`)")
        return self

    def to_yaml(self) -> str:
        return yaml.safe_dump(to_plain(self), sort_keys=False)


def numbered_flows(spec: ExperimentSpec) -> list[tuple[str, FlowSpec]]:
    """Every flow of the spec with its id: f1, f2, ... in the order of `flows`, an entry with `count`
    n giving n in a row. The one place flows are numbered (the engine's flows, the plan's checks and
    the theory's references all read it)."""
    entries = [entry for entry in spec.flows for _ in range(entry.count)]
    return [(f"f{n}", entry) for n, entry in enumerate(entries, start=1)]


def trace_files(spec: ExperimentSpec) -> list[tuple[str, str]]:
    """(field, file) of every direction of `spec` that runs a trace file, the field as errors name it
    (links.X.trace, links.X.reverse.trace)."""
    out = []
    for link_id, link in spec.links.items():
        for where, direction in (("", link), (".reverse", link.reverse)):
            if direction is not None and direction.trace is not None:
                out.append((f"links.{link_id}{where}.trace", direction.trace))
    return out


def to_plain(spec: ExperimentSpec) -> dict[str, Any]:
    """The spec as plain data (buffers as strings), suitable for YAML/JSON."""
    def plain(value: Any) -> Any:
        if isinstance(value, Buffer):
            return value.spec_text()
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value
    return plain(spec.model_dump(exclude_none=True))


# --- parsing, overrides and errors -------------------------------------------------------------

def _field_path(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts[-1:] = [f"{parts[-1] if parts else ''}[{item}]"]
        elif item in ("bernoulli", "every_nth", "packets", "gilbert_elliott", "token_bucket", "docsis_upstream",
                      "calibrated_load_delay", "calibrated_flow_delay",
                      "function-after[_window()]",
                      "function-after[_flows_within_run()]"):
            continue
        else:
            parts.append(str(item))
    return ".".join(parts) or "spec"


def format_validation_error(err: ValidationError) -> str:
    msgs = []
    for e in err.errors():
        path = _field_path(tuple(e["loc"]))
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown field (misspelled?)"
        elif e["type"] == "missing":
            msg = "required field is missing"
        # whole-spec checks already start their message with the field they are about
        msgs.append(f"{path}: {msg}" if e["loc"] else msg)
    return one_line("; ".join(msgs))


def parse_override(item: str) -> tuple[list[str | int], Any]:
    """`flows.0.cc=bbr` -> (["flows", 0, "cc"], "bbr"); the value is read as a YAML scalar."""
    if "=" not in item:
        raise SpecError(f"--set {item!r}: expected key=value")
    key, raw = item.split("=", 1)
    # Segments are field names, list indices, or link and host ids (which may hold '-': cern1-gbe).
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.([A-Za-z_][A-Za-z0-9_-]*|[0-9]+))*", key):
        raise SpecError(f"--set {item!r}: malformed key {key!r}")
    try:  # the bounded reader: a 649-byte value of nested anchors expanded 10^6 values through an unbounded walk
        value = read_yaml(raw, max_chars=MAX_OVERRIDE_CHARS, max_values=MAX_OVERRIDE_VALUES) if raw.strip() else ""
    except DocumentError as exc:
        raise SpecError(f"--set {key}: {exc}") from None
    return [int(p) if p.isdigit() else p for p in key.split(".")], value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    for item in overrides:
        path, value = parse_override(item)
        node: Any = data
        for depth, part in enumerate(path[:-1]):
            nxt = path[depth + 1]
            if isinstance(part, int):
                if not isinstance(node, list) or part >= len(node):
                    raise SpecError(f"--set {item}: no element {part} at {'.'.join(map(str, path[:depth + 1]))}")
                node = node[part]
            else:
                if not isinstance(node, dict):
                    raise SpecError(f"--set {item}: {part!r} is not inside a mapping")
                node = node.setdefault(part, [] if isinstance(nxt, int) else {})
        last = path[-1]
        if isinstance(last, int):
            if not isinstance(node, list) or last > len(node):
                raise SpecError(f"--set {item}: no element {last}")
            if last == len(node):  # one past the end appends, e.g. another flow
                node.append(value)
            else:
                node[last] = value
        elif isinstance(node, dict):
            node[last] = value
        else:
            raise SpecError(f"--set {item}: {last!r} is not inside a mapping")
    return data


MAX_SPEC_CHARS = 1_000_000  # a spec file, or an API body's spec: far more than any experiment needs
MAX_NESTING = MAX_DEPTH  # levels of mappings/lists in a spec (the schema itself uses 5)
MAX_DOCUMENT_VALUES = MAX_VALUES  # values of a spec with its aliases expanded (the labs' largest: ~300)
MAX_OVERRIDE_CHARS = 10_000  # one --set value (a flow, a link's schedule); a spec file is the way to more
MAX_OVERRIDE_VALUES = 10_000  # values in one --set value, aliases expanded (a 64-step schedule: ~200)


def check_nesting(data: object, where: str = "spec") -> None:
    """Refuse data nested deeper than MAX_NESTING or larger than MAX_DOCUMENT_VALUES, shared nodes counted
    once per reference but walked once (fastlab.base.documents.shape): a spec that overrides have filled
    with aliased values costs its size, not its expansion."""
    try:
        check_shape(data, max_depth=MAX_NESTING, max_values=MAX_DOCUMENT_VALUES)
    except DocumentError as exc:
        raise SpecError(f"{where}: {exc}") from None


def parse_spec(data: object) -> ExperimentSpec:
    if not isinstance(data, dict):
        raise SpecError("spec: the document must be a mapping of fields")
    check_nesting(data)
    try:
        return ExperimentSpec.model_validate(data)
    except ValidationError as err:
        raise SpecError(format_validation_error(err)) from None


def parse_yaml(text: str) -> Any:
    """The YAML reader of specs, sweep files and lab.yaml: fastlab.base.documents.read_yaml's bounds (depth,
    alias expansion, integer size, duplicate keys; its failures one line, a DocumentError). A text up to
    YAML_CACHED_CHARS is read once per process (the labs' files, read again and again) and a copy returned
    (callers may change it); a longer one, as a client may send, is read each time and not kept."""
    if len(text) > YAML_CACHED_CHARS:
        return _parse_yaml_once.__wrapped__(text)
    return copy.deepcopy(_parse_yaml_once(text))


# The cache holds at most 128 texts of at most 64 KiB (8 MiB): a web client sending distinct 1-MB specs
# cannot make a long-lived server keep them (the labs' largest file is ~6 KiB).
YAML_CACHED_CHARS = 64 * 1024


# Reading each text once keeps it cheap: the unit tier loaded the labs' files ~450 times, 35 of its 53 s in
# the parser (2026-11-28).
@functools.lru_cache(maxsize=128)
def _parse_yaml_once(text: str) -> Any:
    return read_yaml(text, max_chars=MAX_SPEC_CHARS)


def read_spec_document(text: str) -> Any:
    """A spec or sweep file's text as data: too long, broken or too deeply nested -> one-line SpecError."""
    if len(text) > MAX_SPEC_CHARS:
        raise SpecError(f"spec: larger than {MAX_SPEC_CHARS:,} characters (the limit of a spec)")
    try:
        return parse_yaml(text)
    except DocumentError as exc:
        raise SpecError(f"spec: {exc}") from None


def read_spec_text(text: str, overrides: list[str] | None = None) -> ExperimentSpec:
    data = read_spec_document(text)
    if isinstance(data, dict) and overrides:
        data = apply_overrides(data, overrides)
    return parse_spec(data)


def _traces_beside(data: Any, folder: str) -> None:
    """A spec file's relative trace paths, made relative to its folder (in place): a trace named beside a
    spec, as a run folder's copy is beside its spec.yaml, is found wherever fastlab runs."""
    links = data.get("links") if isinstance(data, dict) else None
    for link in (links.values() if isinstance(links, dict) else []):
        for direction in (link, link.get("reverse") if isinstance(link, dict) else None):
            if isinstance(direction, dict) and isinstance(direction.get("trace"), str) and direction["trace"] \
                    and not os.path.isabs(direction["trace"]):
                direction["trace"] = os.path.join(folder, direction["trace"])


def _topology_beside(data: Any, folder: str) -> None:
    """A spec file's relative `topology: {file: ...}`, made relative to its folder (in place), as its traces."""
    topology = data.get("topology") if isinstance(data, dict) else None
    if isinstance(topology, dict) and isinstance(topology.get("file"), str) and topology["file"] \
            and not os.path.isabs(topology["file"]):
        topology["file"] = os.path.join(folder, topology["file"])


def read_spec_file(path: str) -> str:
    """A spec or sweep file's text (a regular file, at most MAX_SPEC_CHARS); SpecError in one line."""
    try:
        return read_file(path, max_bytes=4 * MAX_SPEC_CHARS).decode("utf-8")
    except OSError as exc:
        raise SpecError(f"spec: cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise SpecError(f"spec: {path} is not UTF-8 text") from None
    except DocumentError as exc:
        raise SpecError(f"spec: cannot read {path}: {exc}") from None


def load_spec(path: str, overrides: list[str] | None = None) -> ExperimentSpec:
    """The spec in the YAML file `path`, with `overrides` ("topology_args.rate_mbps=20", as `--set` takes
    them) applied; traces and a topology file it names relative to its folder are found there. Returns the
    checked ExperimentSpec; SpecError (one line naming the field) otherwise."""
    data = read_spec_document(read_spec_file(path))
    if isinstance(data, dict) and overrides:
        data = apply_overrides(data, overrides)
    _traces_beside(data, os.path.dirname(os.path.abspath(path)))
    _topology_beside(data, os.path.dirname(os.path.abspath(path)))
    return parse_spec(data)
