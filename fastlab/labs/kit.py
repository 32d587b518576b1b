"""Guided labs: load and validate lab folders, run their steps, evaluate their checkpoints.

A lab is a folder `labs/NN-slug/` (format: `labs/README.md`): a handout `README.md`, a
declarative `lab.yaml` (steps, each an ordinary experiment spec plus `--set` overrides and
checkpoints), `checkpoints.py` (functions marked with `@checkpoint` that read a step's run
directory and return a `CheckResult`), `INSTRUCTOR.md` and `recorded/<step-id>/` runs.

A front end finds here, as plain data: `list_labs`, `load_lab` (steps, handout), `Lab.build_spec` (a
step's spec, normal or short form), `evaluate_step` (checkpoints on a run directory, INCONCLUSIVE on
a run the fidelity verdict calls unfaithful). Running labs is `fastlab.labs.run`'s; recordings are
`fastlab.labs.record`'s. Loading is strict: a malformed lab.yaml, an
unknown checkpoint or arguments a checkpoint does not take are a `LabError` naming the place.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import logging
import re
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fastlab.base import paths
from fastlab.base.documents import DocumentError
from fastlab.base.record import FlowFigures, LinkFigures, LinkTiming, ResolvedDirection, Shaping
from fastlab.base.rundir import RunReader
from fastlab.define.schema import (
    MAX_REPEAT,
    ExperimentSpec,
    SpecError,
    format_validation_error,
    load_spec,
    parse_yaml,
)
from fastlab.labs.scaling import AlphaScaling, described, scale_alphas
from fastlab.measure import window

log = logging.getLogger(__name__)

LABS_DIR = paths.labs_dir()
MAX_MINUTES = 10
FOLDER_RE = re.compile(r"^(\d\d)-([a-z0-9][a-z0-9-]*)$")
CHECKPOINT_MARK = "__fastlab_checkpoint__"
# A lab's recorded runs (fastlab.labs.record): recorded/full/<step>, recorded/short/<step>, and real runs
# kept as labelled fixtures in recorded/cases/<name>
RECORDED, FULL_FORM, SHORT_FORM, CASES = "recorded", "full", "short", "cases"
# ... and the repetitions of a step whose checkpoints are judged over draws: recorded/draws/<step>/seed-<n>
DRAWS = "draws"
TCPIP_HEADER_BYTES = 52  # IPv4 20 + TCP 20 + timestamps 12
# SC2002's utilization: goodput over the port's capacity less 40 bytes of TCP/IP headers per
# 1500-byte packet (925 Mb/s on a GbE port = 0.95). With TCP timestamps a packet carries 1448
# payload bytes, so a saturated port reads 1448/1460 = 0.992 at most.
SC2002_PAYLOAD_SHARE = 1460 / 1500
SC2002_CEILING = 1448 / 1460


class LabError(ValueError):
    """A lab that cannot be loaded or run as asked; the message names the file and field."""


class MissingData(LabError):
    """The run directory lacks what a checkpoint reads (a file, a column, a flow)."""


# --- checkpoints -------------------------------------------------------------------------------

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"


@dataclass
class CheckResult:
    """One checkpoint's verdict: what was measured, what was expected, and why that tolerance.

    `passed` is the figure against its band. On a run the fidelity verdict calls unfaithful (or a
    run without a verdict) the figure proves nothing either way: `inconclusive` then holds the
    verdict's reasons and the status is INCONCLUSIVE, whatever the figure (docs/design.md §10).
    """

    name: str
    passed: bool
    measured: float | str
    expected: str
    tolerance: str
    note: str = ""  # e.g. why it could not be evaluated
    # what the figure is, in the checkpoint's own words ("rate of f2 / rate of f1"): kept when
    # lab.yaml gives the call a name of its own ("rates follow alpha")
    quantity: str = ""
    inconclusive: str = ""  # why the run cannot judge it (the fidelity verdict's reasons); "" = conclusive
    evaluated: bool = True  # False: the run lacked what the checkpoint reads ("cannot evaluate")
    band: tuple[float, float] | None = None  # [lo, hi] of a `within` figure: what the fidelity window allows
    over_draws: bool = False  # a claim about the share of repetitions (kit.Draws): one run's status is not its verdict
    # a figure of one link's traffic as a whole (link_kept_busy): its window judges the disturbances by what the
    # flows through that link lost together (fastlab.measure.window.judge)
    of_link: str | None = None

    @property
    def status(self) -> str:
        return INCONCLUSIVE if self.inconclusive else PASS if self.passed else FAIL

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"status": self.status}

    def line(self) -> str:
        measured = f"{self.measured:.4g}" if isinstance(self.measured, float) else str(self.measured)
        text = f"{self.status.upper()} {self.name}: measured {measured}, expected {self.expected}"
        note = f" ({self.note})" if self.note else ""
        why = f"\n       why: {self.tolerance}" if self.tolerance else ""
        return text + note + why


Checkpoint = Callable[..., CheckResult]


def checkpoint(fn: Checkpoint) -> Checkpoint:
    """Mark a function of a lab's checkpoints.py as a checkpoint lab.yaml may name."""
    setattr(fn, CHECKPOINT_MARK, True)
    return fn


def within(name: str, measured: float, lo: float, hi: float, tolerance: str, unit: str = "") -> CheckResult:
    """The common checkpoint shape: a measured figure inside [lo, hi]."""
    unit = f" {unit}" if unit else ""
    # six significant digits, not decimal places: a loss rate of 1e-6 must not print as 0
    return CheckResult(name, bool(lo <= measured <= hi), float(f"{float(measured):.6g}"),
                       f"{lo:.4g}..{hi:.4g}{unit}", tolerance, band=(float(lo), float(hi)))


def link_kept_busy(run: StepRun, link: str, t0: float, t1: float, why: str) -> CheckResult:
    """A link that sent at its capacity over [t0, t1): its mean tx rate over its capacity within one tx
    sample of 1 (a window of n samples can be off by one sample at either end). `why` says, from the
    lab's model, why its queue never empties; the reason adds the queue's least sample and the slack."""
    rows = run.link(link)
    run.measure_window(t0, t1)
    rows = rows[(rows["t"] >= t0) & (rows["t"] < t1)]
    if len(rows) < 10:
        raise MissingData(f"{link}: fewer than 10 samples between {t0:g} and {t1:g} s")
    used = float(rows["tx_mbps"].mean()) / run.capacity_mbps(link)
    interval = float(rows["t"].diff().median())
    slack = interval / (t1 - t0)
    result = within(f"{link} utilization {t0:g}-{t1:g} s", used, 1 - slack, 1 + slack,
                    f"{why} (the queue's least sample here: {rows['backlog_pkts'].min():.0f} packets), so the link "
                    f"sends at its capacity all along; +-{slack:.2%}: one {interval * 1e3:.0f}-ms tx sample of the "
                    f"{t1 - t0:g}-s window")
    result.of_link = link
    return result


LOSS_STATES = ("recovery", "loss")  # tcp_info ca_state values of loss recovery


def loss_starts(rows: pd.DataFrame, reductions: bool = False) -> list[int]:
    """Positions of the samples at which a flow's trace enters loss recovery: one per loss event.

    With `reductions`, also every sample whose ssthresh is below the previous one's: a recovery that
    began and ended between two samples, or a second reduction right after one (measured: a Reno flow
    leaving slow start recovered at ssthresh 2,011 and was open at 1,005 50 ms later, its second
    halving never seen in a loss state). Only for loss-based algorithms, whose ssthresh falls only at
    a loss (FAST lowers it when its MI phase ends).
    """
    in_loss = rows["ca_state"].isin(LOSS_STATES).to_numpy()
    starts = np.zeros(len(in_loss), dtype=bool)
    starts[1:] = in_loss[1:] & ~in_loss[:-1]
    if reductions:
        ssthresh = rows["ssthresh_pkts"].to_numpy(dtype=float)
        starts[1:] |= ssthresh[1:] < ssthresh[:-1]  # NaN (not yet set) compares False
    return np.flatnonzero(starts).tolist()


def fidelity_precondition(run: StepRun) -> str:
    """Why the run cannot judge a lab's physics, or "" when it can: a checkpoint counts only on a run
    whose fidelity verdict (summary.json) says the emulation kept time. An unfaithful run proves
    nothing either way, so its checkpoints are INCONCLUSIVE, never PASS or FAIL; a run made before
    verdicts existed cannot say, so the same holds."""
    verdict = run.summary.fidelity
    if verdict is None:
        return ("the run has no fidelity verdict (made before verdicts existed): whether its emulation kept time "
                "is unknown")
    if verdict.faithful:
        return ""
    return "the emulation was not faithful: " + "; ".join(verdict.reasons or ["no reason given"])


class StepRun(RunReader):
    """A step's run directory read through the one reader of run folders (`fastlab.base.rundir.RunReader`:
    CSVs may be stored gzipped, `flows.csv.gz`; the record typed, fastlab.base.record), with what checkpoints
    read of it; a missing file, flow or link is MissingData."""

    def __init__(self, directory: Path | str) -> None:
        super().__init__(directory)
        # the time windows the checkpoint being evaluated measured over (evaluate_run clears it before each):
        # its fidelity is judged over them (fastlab.measure.window)
        self.windows: list[tuple[float, float]] = []

    def missing(self, exc: FileNotFoundError) -> Exception:
        return MissingData(str(exc))

    def measure_window(self, t0: float, t1: float) -> None:
        """Note that the checkpoint being evaluated measures over [t0, t1] (run time, s): the accessors that
        take a window note theirs; a checkpoint that slices traces itself may say so here."""
        self.windows.append((float(t0), float(t1)))

    def read_as_queue_ms(self, flow_id: str, t0: float, t1: float) -> float:
        """The delay the flow read as queue that no link queued, mean over [t0, t1] (ms): the emulators'
        lateness and the hosts' delay above their share of its minimum RTT, from flows.csv's delay
        accounting (fastlab.measure.accounting). A delay-based flow counts it as queued packets, so a
        model of its queue takes it off. A run made before the accounting: the verdict's mean emulation
        delay of the flow's path (lateness only, emulation_delay_ms), 0 without a verdict."""
        self.measure_window(t0, t1)
        rows = self.flow(flow_id)
        if "acct_read_as_queue_ms" in rows:
            inside = rows[(rows["t"] >= t0) & (rows["t"] <= t1)]["acct_read_as_queue_ms"].dropna()
            if not inside.empty:
                return max(0.0, float(inside.mean()))
        return self.emulation_delay_ms(flow_id)

    def flow(self, flow_id: str) -> pd.DataFrame:
        """flows.csv rows of one flow, in time order."""
        rows = self.flows[self.flows["flow"] == flow_id].sort_values("t")
        if rows.empty:
            raise MissingData(f"flows.csv has no samples of flow {flow_id}")
        return rows

    def link(self, link_id: str, direction: str = "forward") -> pd.DataFrame:
        """links.csv rows of one shaped link and direction, in time order."""
        rows = self.links[(self.links["link"] == link_id) & (self.links["direction"] == direction)].sort_values("t")
        if rows.empty:
            raise MissingData(f"links.csv has no samples of link {link_id} ({direction})")
        return rows

    def events(self, flow_id: str) -> pd.DataFrame:
        """cc_events.csv rows of one flow, in time order."""
        rows = self.cc_events[self.cc_events["flow"] == flow_id].sort_values("t")
        if rows.empty:
            raise MissingData(f"cc_events.csv has no events of flow {flow_id}")
        return rows

    def flow_running(self, cc: str) -> str:
        """The id of the (first) flow that runs congestion control `cc`."""
        for flow in self.summary.flows:
            if flow.cc == cc:
                return flow.id
        raise MissingData(f"summary.json has no {cc} flow")

    def flow_ids(self, cc: str | tuple[str, ...] | None = None, src: str | None = None) -> list[str]:
        """The ids of the run's flows, in order; those running `cc` (one of them, for several) and sent from
        `src` when given."""
        ccs = (cc,) if isinstance(cc, str) else cc
        return [f.id for f in self.summary.flows if (ccs is None or f.cc in ccs) and (src is None or f.src == src)]

    def emulation_delay_ms(self, flow_id: str) -> float:
        """The delay the emulators added on the flow's path (the fidelity verdict's figure), ms; 0 for a run
        without a verdict or a path no emulator measured."""
        paths = self.summary.fidelity.paths if self.summary.fidelity is not None else []
        return next((float(p.emulation_delay_ms) for p in paths
                     if p.flow == flow_id and p.emulation_delay_ms is not None), 0.0)

    def link_timing(self, link_id: str | None = None) -> dict[str, dict[str, LinkTiming]]:
        """The emulators' departure lateness per link and direction (the fidelity verdict's; {} without one),
        of one link when `link_id` is given."""
        links = self.summary.fidelity.links if self.summary.fidelity is not None else {}
        return links if link_id is None else {link_id: links.get(link_id, {})}

    def shaping(self, link_id: str) -> Shaping:
        """How the run shaped the link (environment.json)."""
        shaped = self.environment.shaping_of(link_id)
        if shaped is None:
            raise MissingData(f"environment.json has no shaping record of link {link_id}")
        return shaped

    def goodput_mbps(self, flow_id: str, t0: float, t1: float, outside_recovery: bool = True) -> float:
        """A flow's acknowledged payload rate over [t0, t1] (run time, s), from its bytes_acked counter.

        During loss recovery the cumulative ACK stands at the first hole while data keeps arriving,
        and jumps when the hole is filled: a window that opens inside a recovery is credited with data
        delivered before it (measured: CUBIC at 1.017 of its port's payload ceiling, the window opening
        0.1 s into a recovery that then acked 7.8 MB in 0.3 s), and one that closes inside a recovery
        misses what was delivered since the hole. So by default each end of the window moves to the
        nearest sample inside it outside a loss state, where the cumulative ACK has caught up with what
        was delivered. `outside_recovery=False` keeps the window as asked: only for a caller that
        compares with a model over exactly that window (e.g. a replay that starts at a loss).
        """
        rows = self._goodput_rows(flow_id, t0, t1, outside_recovery)
        acked = rows["bytes_acked"].iloc[-1] - rows["bytes_acked"].iloc[0]
        return float(acked) * 8 / 1e6 / float(rows["t"].iloc[-1] - rows["t"].iloc[0])

    def goodput_window(self, flow_id: str, t0: float, t1: float, outside_recovery: bool = True) -> tuple[float, float]:
        """The samples `goodput_mbps` measures between (run time, s): a checkpoint that sets the rate
        beside another trace (the queue's backlog) must read that trace over the same span."""
        rows = self._goodput_rows(flow_id, t0, t1, outside_recovery)
        return float(rows["t"].iloc[0]), float(rows["t"].iloc[-1])

    def _goodput_rows(self, flow_id: str, t0: float, t1: float, outside_recovery: bool) -> pd.DataFrame:
        self.measure_window(t0, t1)
        rows = self.flow(flow_id)
        rows = rows[(rows["t"] >= t0) & (rows["t"] <= t1)].dropna(subset=["bytes_acked"])
        if outside_recovery and "ca_state" in rows:
            settled = np.flatnonzero(~rows["ca_state"].isin(LOSS_STATES).to_numpy())
            rows = rows.iloc[settled[0]:settled[-1] + 1] if len(settled) else rows.iloc[:0]
        if len(rows) < 2 or rows["t"].iloc[-1] <= rows["t"].iloc[0]:
            where = " outside loss recovery" if outside_recovery else ""
            raise MissingData(f"flows.csv has fewer than two samples of flow {flow_id} in {t0:g}..{t1:g} s{where}")
        return rows

    def utilization(self, flow_id: str, link_id: str, t0: float, t1: float) -> float:
        """The flow's share of a link's capacity over [t0, t1]: its goodput plus TCP/IP headers
        (52 bytes a segment, timestamps on) over the capacity, which counts IP bytes as shaping does."""
        mss = float(self.flow(flow_id)["mss_bytes"].dropna().median())
        ip_mbps = self.goodput_mbps(flow_id, t0, t1) * (mss + TCPIP_HEADER_BYTES) / mss
        return ip_mbps / self.capacity_mbps(link_id)

    def sc2002_utilization(self, flow_id: str, link_id: str, t0: float, t1: float) -> float:
        """Utilization in the SC2002 papers' sense: goodput over the link's capacity less 40 header
        bytes per 1500-byte packet (see SC2002_PAYLOAD_SHARE), over a window whose ends are outside
        loss recovery (goodput_mbps's default: a ceiling checkpoint must not see a recovery's catch-up
        as extra rate)."""
        capacity = self.capacity_mbps(link_id)
        return self.goodput_mbps(flow_id, t0, t1) / (capacity * SC2002_PAYLOAD_SHARE)

    def flow_summary(self, flow_id: str) -> FlowFigures:
        """The flow's figures in summary.json (fastlab.base.record.FlowFigures)."""
        flow = self.summary.flow(flow_id)
        if flow is None:
            raise MissingData(f"summary.json has no flow {flow_id}")
        return flow

    def idle_ping_min_ms(self, flow_id: str) -> float:
        """The minimum of the idle pings the run sent over the flow's path (its hosts) before the flows
        started: the path's RTT with its queues empty, emulators and stacks included."""
        info = self.flow_summary(flow_id)
        idle = self.summary.idle(str(info.src), str(info.dst))
        if idle is None or not idle.min_ms:
            raise MissingData(f"summary.json has no idle pings of {info.src} -> {info.dst}")
        return float(idle.min_ms)

    def link_busy_share(self, link_id: str, t0: float, t1: float) -> float | None:
        """The share of its rate a link delivered over [t0, t1] while it kept packets queued: its own
        counters over the sampling intervals that began and ended with at least two packets queued
        (fastlab.measure.fidelity's busy share; None over too little busy time). Below 1 the link lost time that
        no flow's window can be blamed for: the emulator stalled (a late wake-up: in a lab 03 bench run a
        10-ms stall with 53 packets queued left 0.991), or the queue emptied between two samples."""
        from fastlab.measure.fidelity import tc_busy_share

        self.measure_window(t0, t1)
        rows = self.link(link_id)
        rows = rows[(rows["t"] >= t0) & (rows["t"] <= t1)].dropna(subset=["backlog_pkts", "tx_bytes"])
        capacity = self.capacity_mbps(link_id)
        samples = list(zip(rows["t"].astype(float), rows["backlog_pkts"].astype(float),
                           rows["tx_bytes"].astype(float), strict=True))
        return tc_busy_share(samples, int(capacity * 1e6))["delivered_share"]

    def link_summary(self, link_id: str) -> LinkFigures:
        """The link's figures in summary.json (fastlab.base.record.LinkFigures)."""
        link = self.summary.link(link_id)
        if link is None:
            raise MissingData(f"summary.json has no link {link_id}")
        return link

    def capacity_mbps(self, link_id: str) -> float:
        """The link's capacity, Mb/s (a schedule's: averaged over the flows' active window)."""
        capacity = self.link_summary(link_id).capacity_mbps
        if capacity is None:
            raise MissingData(f"summary.json has no capacity of link {link_id}")
        return float(capacity)

    def resolved(self, link_id: str, direction: str = "forward") -> ResolvedDirection:
        """One direction of the link as the run resolved and applied it (environment.json)."""
        resolved = self.shaping(link_id).resolved
        side = None if resolved is None else resolved.forward if direction == "forward" else resolved.reverse
        if side is None:
            raise MissingData(f"environment.json has no resolved {direction} direction of link {link_id}")
        return side

    def buffer_pkts(self, link_id: str, direction: str = "forward") -> int:
        """The buffer the link's direction was given, packets (environment.json's resolved shaping)."""
        limit = self.resolved(link_id, direction).limit_pkts
        if not limit:
            raise MissingData(f"environment.json has no buffer in packets of link {link_id} ({direction})")
        return int(limit)


# --- lab.yaml ----------------------------------------------------------------------------------

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Draws(_Strict):
    """A checkpoint whose claim is about a share of draws, not about one run: which side a run favours is the
    draw of something random (a seeded background loss), so one run cannot carry the claim. It is judged on
    `runs` repetitions of the step, each with its own seed (fastlab.labs.draws): the share of the conclusive
    draws in which it passes, with its 95 % interval, PASS when the whole interval lies above `share`, FAIL
    when it lies below, INCONCLUSIVE while it straddles `share` (more draws would tell). On a single run the
    checkpoint is INCONCLUSIVE, its figure still shown: one draw proves nothing either way."""

    runs: int = Field(ge=3, le=MAX_REPEAT, strict=True,
                      description="repetitions to run (seeds seed .. seed + runs - 1)")
    share: float = Field(gt=0, lt=1, allow_inf_nan=False, description="the claim: it holds in more than this share")
    why: str = Field(min_length=40, max_length=1000, description="why one run cannot judge it")


class CheckpointCall(_Strict):
    check: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="a function in checkpoints.py")
    name: str | None = Field(None, max_length=80, description="label when a step calls one check twice")
    args: dict[str, Any] = Field(default_factory=dict)
    full_only: str | None = Field(None, min_length=10, max_length=300,
                                  description="why a short run cannot show this: the short form skips it")
    draws: Draws | None = Field(None, description="judged on the share of repetitions in which it passes")

    @property
    def label(self) -> str:
        return self.name or self.check


class LiveProperty(_Strict):
    """A robust physical property a live run of the step's short form must show (tests/labs): the figure
    a checkpoint measured (`of`, its label) inside a band wide enough that the run-to-run spread
    `bench/labs.py` measured cannot reach its edges -- at least LIVE_MARGIN_SIGMAS standard deviations
    from the median on each side. `why` says the physics of the band and the bench's figures."""

    of: str = Field(min_length=1, max_length=80, description="the label of one of the step's checkpoints")
    within: tuple[float, float] = Field(description="[lo, hi] of the measured figure")
    why: str = Field(min_length=40, max_length=1000)

    def judge(self, step: Step, checks: list[CheckResult]) -> CheckResult:
        """The property on a short-form run's checkpoint results, in the order of the step's calls (a
        figure that was not measured fails it)."""
        lo, hi = self.within
        labels = [c.label for c in step.checkpoints if not c.full_only]
        figure = checks[labels.index(self.of)].measured if len(checks) == len(labels) else None
        name = f"live: {self.of}"
        if not isinstance(figure, int | float) or isinstance(figure, bool):
            return CheckResult(name, False, "n/a", f"{lo:g}..{hi:g}", self.why, note="the checkpoint measured nothing",
                               evaluated=False)
        return within(name, float(figure), lo, hi, self.why)


# A live property's band must stand this many standard deviations of the bench's spread from the median
LIVE_MARGIN_SIGMAS = 4


class Step(_Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,15}$")
    title: str = Field(min_length=1, max_length=200)
    spec: str = Field(min_length=1, description="experiment spec, relative to the lab folder")
    set: list[str] = Field(default_factory=list, description="--set overrides applied to the spec")
    short: list[str] = Field(default_factory=list, description="extra overrides of the short (CI) form")
    checkpoints: list[CheckpointCall] = Field(min_length=1)
    live: list[LiveProperty] = Field(default_factory=list, description="what a live CI run of the short form asserts")


class LabFile(_Strict):
    title: str = Field(min_length=1, max_length=200)
    summary: str = Field(min_length=1, max_length=4000)
    minutes: float = Field(gt=0, le=MAX_MINUTES, description="wall time of the default-scale run")
    steps: list[Step] = Field(min_length=1)


@dataclass
class Lab:
    number: int
    slug: str
    folder: Path
    title: str
    summary: str
    minutes: float
    steps: list[Step]
    checks: dict[str, Checkpoint] = field(repr=False)

    @property
    def name(self) -> str:
        return self.folder.name

    def handout(self) -> str:
        return (self.folder / "README.md").read_text(encoding="utf-8")

    def instructor_notes(self) -> str:
        return (self.folder / "INSTRUCTOR.md").read_text(encoding="utf-8")

    def step(self, step_id: str) -> Step:
        for step in self.steps:
            if step.id == str(step_id):
                return step
        raise LabError(f"lab {self.name}: no step {step_id!r} (steps: {', '.join(s.id for s in self.steps)})")

    def recording(self, step_id: str, short: bool = False) -> Path:
        """The folder of the step's recorded run, full or short form (`fastlab.labs.record` writes it)."""
        return self.folder / RECORDED / (SHORT_FORM if short else FULL_FORM) / self.step(step_id).id

    def draw_recordings(self, step_id: str) -> list[Path]:
        """The recorded repetitions of the step's full form (`recorded/draws/<step>/seed-<n>`), by seed."""
        folder = self.folder / RECORDED / DRAWS / self.step(step_id).id
        found = [p for p in folder.glob("seed-*") if p.is_dir() and p.name[5:].isdigit()] if folder.is_dir() else []
        return sorted(found, key=lambda p: int(p.name[5:]))

    def overrides(self, step: Step, short: bool = False) -> list[str]:
        return [*step.set, *(step.short if short else [])]

    def build_spec(self, step_id: str, short: bool = False, extra: list[str] | None = None) -> ExperimentSpec:
        """The step's experiment spec with its overrides (and the short form's), validated structurally; run at
        another scale than its spec file's, its FAST flows' alpha follows the labs' delay-preserving rule
        (fastlab.labs.scaling: alpha x MTU / C stays the spec file's), said in its description."""
        return self._built(step_id, short, extra)[0]

    def alpha_scaling(self, step_id: str, short: bool = False, extra: list[str] | None = None) -> AlphaScaling | None:
        """What the labs' delay-preserving rule did to the step's FAST alphas in that form (None: nothing)."""
        return self._built(step_id, short, extra)[1]

    def _built(self, step_id: str, short: bool, extra: list[str] | None) -> tuple[ExperimentSpec, AlphaScaling | None]:
        step = self.step(step_id)
        path, overrides = str(self.folder / step.spec), [*self.overrides(step, short), *(extra or [])]
        try:
            built = load_spec(path, overrides)
            scaling = scale_alphas(load_spec(path), built, overrides)
            if scaling is None:
                return built, None
            log.info("%s step %s: %s", self.name, step.id, scaling.words())
            built = load_spec(path, [*overrides, *scaling.overrides()])
        except SpecError as exc:
            raise LabError(f"{self.name} step {step.id} ({step.spec}): {exc}") from None
        return built.model_copy(update={"description": described(built.description, scaling)}), scaling

    def as_dict(self) -> dict[str, Any]:
        """Plain data for a front end: the lab, its steps and their checkpoints."""
        return {"number": self.number, "slug": self.slug, "name": self.name, "title": self.title,
                "summary": self.summary, "minutes": self.minutes,
                "steps": [{"id": s.id, "title": s.title, "spec": s.spec, "set": s.set, "short": s.short,
                           "checkpoints": [{"check": c.check, "name": c.label, "args": c.args,
                                            "full_only": c.full_only} for c in s.checkpoints]}
                          for s in self.steps]}


# A lab's checkpoints.py imported once per text per process (importing it builds its dataclasses: the unit
# tier loaded the labs ~340 times, 3.7 s of compiling): the same source gives the same checkpoints.
_IMPORTED: dict[tuple[str, bytes], dict[str, Checkpoint]] = {}


def _import_checkpoints(folder: Path) -> dict[str, Checkpoint]:
    path = folder / "checkpoints.py"
    if not path.is_file():
        raise LabError(f"{folder.name}: checkpoints.py is missing")
    key = (str(path.resolve()), hashlib.sha256(path.read_bytes()).digest())
    if key not in _IMPORTED:
        _IMPORTED[key] = _import_module(folder, path)
    return dict(_IMPORTED[key])


def _import_module(folder: Path, path: Path) -> dict[str, Checkpoint]:
    module_name = "fastlab_lab_" + folder.name.replace("-", "_")
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling look their module up there
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the lab author's code: report it as a load error
        sys.modules.pop(module_name, None)
        raise LabError(f"{folder.name}/checkpoints.py: {exc.__class__.__name__}: {exc}") from None
    return {name: fn for name, fn in vars(module).items() if callable(fn) and getattr(fn, CHECKPOINT_MARK, False)}


def _check_call(lab: str, where: str, call: CheckpointCall, checks: dict[str, Checkpoint]) -> None:
    fn = checks.get(call.check)
    if fn is None:
        raise LabError(f"{lab}/lab.yaml: {where}.check: unknown checkpoint {call.check!r} "
                       f"(checkpoints.py defines: {', '.join(sorted(checks)) or 'none'})")
    try:
        inspect.signature(fn).bind(None, **call.args)
    except TypeError as exc:
        raise LabError(f"{lab}/lab.yaml: {where}.args: {call.check}: {exc}") from None


def load_lab_folder(folder: Path) -> Lab:
    m = FOLDER_RE.match(folder.name)
    if m is None:
        raise LabError(f"{folder}: a lab folder is named NN-slug (e.g. 01-long-fat-pipes)")
    try:
        data = parse_yaml((folder / "lab.yaml").read_text(encoding="utf-8"))
    except OSError as exc:
        raise LabError(f"{folder.name}/lab.yaml: cannot read: {exc.strerror}") from None
    except DocumentError as exc:
        raise LabError(f"{folder.name}/lab.yaml: {exc}") from None
    if not isinstance(data, dict):
        raise LabError(f"{folder.name}/lab.yaml: the document must be a mapping of fields")
    try:
        parsed = LabFile.model_validate(data)
    except ValidationError as err:
        raise LabError(f"{folder.name}/lab.yaml: {format_validation_error(err)}") from None
    seen: set[str] = set()
    for i, step in enumerate(parsed.steps):
        if step.id in seen:
            raise LabError(f"{folder.name}/lab.yaml: steps[{i}].id: duplicate step id {step.id!r}")
        seen.add(step.id)
        spec_path = (folder / step.spec).resolve()
        if not spec_path.is_relative_to(folder.resolve()) or not spec_path.is_file():
            raise LabError(f"{folder.name}/lab.yaml: steps[{i}].spec: no file {step.spec!r} inside the lab folder")
    checks = _import_checkpoints(folder)
    for i, step in enumerate(parsed.steps):
        for j, call in enumerate(step.checkpoints):
            _check_call(folder.name, f"steps[{i}].checkpoints[{j}]", call, checks)
        short_labels = {c.label for c in step.checkpoints if not c.full_only}
        for j, prop in enumerate(step.live):
            if prop.of not in short_labels:
                raise LabError(f"{folder.name}/lab.yaml: steps[{i}].live[{j}].of: no checkpoint {prop.of!r} in the "
                               f"short form (it has: {', '.join(sorted(short_labels))})")
            if not prop.within[0] < prop.within[1]:
                raise LabError(f"{folder.name}/lab.yaml: steps[{i}].live[{j}].within: lo must be below hi")
    return Lab(int(m.group(1)), m.group(2), folder, parsed.title, parsed.summary, parsed.minutes,
               list(parsed.steps), checks)


def lab_folders(root: Path = LABS_DIR) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and FOLDER_RE.match(p.name)) if root.is_dir() else []


def list_labs(root: Path = LABS_DIR) -> list[Lab]:
    return [load_lab_folder(folder) for folder in lab_folders(root)]


def find_lab_folder(ref: str | int, root: Path = LABS_DIR) -> Path:
    """A lab by number (1, "01"), folder name ("01-long-fat-pipes") or slug."""
    text = str(ref)
    # a lab number is at most a few ASCII digits: '²' is a digit to str.isdigit but not to int(), and a
    # 5,000-digit number is no lab (and past Python's int-conversion limit)
    number_asked = int(text) if text.isascii() and text.isdigit() and len(text) <= 4 else None
    for folder in lab_folders(root):
        number, slug = FOLDER_RE.match(folder.name).groups()  # type: ignore[union-attr]
        if text in (folder.name, slug) or number_asked == int(number):
            return folder
    names = ", ".join(p.name for p in lab_folders(root)) or "none"
    shown = text if len(text) <= 40 else text[:40] + "..."
    raise LabError(f"no lab {shown!r} (labs: {names})")


def load_lab(ref: str | int, root: Path = LABS_DIR) -> Lab:
    return load_lab_folder(find_lab_folder(ref, root))


# --- evaluation --------------------------------------------------------------------------------

def evaluate_step(lab: Lab, step_id: str, directory: Path | str, short: bool = False) -> list[CheckResult]:
    """Run a step's checkpoints on a run directory; a checkpoint that cannot read what it needs fails.

    A run of the short form skips the checkpoints marked `full_only` (a property only a full-length
    run can show, the reason stated in lab.yaml); every other checkpoint applies to both forms. On a
    run that fails the fidelity precondition every checkpoint is still computed (its figure is shown)
    but is INCONCLUSIVE, with the verdict's reasons.
    """
    return evaluate_run(lab, step_id, StepRun(directory), short)


def evaluate_run(lab: Lab, step_id: str, run: StepRun, short: bool = False, as_draw: bool = False) -> list[CheckResult]:
    """`evaluate_step` on a StepRun already open (whose traces a caller may have replaced in memory). A
    checkpoint judged over draws (its call's `draws`) is INCONCLUSIVE on one run, saying so, unless the run
    is evaluated `as_draw` (one of the repetitions fastlab.labs.draws judges together)."""
    step = lab.step(step_id)
    try:
        precondition = fidelity_precondition(run)
    except MissingData:
        precondition = ""  # no summary.json: a broken run, whose checkpoints cannot evaluate and FAIL
    results = []
    for call in step.checkpoints:
        if short and call.full_only:
            continue
        run.windows = []
        try:
            result = lab.checks[call.check](run, **call.args)
            result.quantity = result.quantity or result.name
            result.name = call.label if call.name else (result.name or call.label)
        except (LookupError, ValueError, ArithmeticError, OSError) as exc:  # data it cannot use: a FAIL, not a crash
            result = CheckResult(call.label, False, "n/a", "", "", note=f"cannot evaluate: {exc}", evaluated=False)
        result.inconclusive = precondition or _window_precondition(run, result)
        if call.draws is not None:
            result.over_draws = True
            if not as_draw and not result.inconclusive:
                result.inconclusive = one_draw_reason(call)
        results.append(result)
    return results


def one_draw_reason(call: CheckpointCall) -> str:
    """Why a checkpoint judged over draws proves nothing on one run, and where its verdict is."""
    assert call.draws is not None
    return (f"one draw: {call.label} is judged on the share of {call.draws.runs} repetitions in which it holds "
            f"(more than {call.draws.share:g}), not on one run -- {call.draws.why} "
            f"(`fastlab lab run LAB --step ID --repeat {call.draws.runs}`, or the step's recorded draws)")


def _window_precondition(run: StepRun, result: CheckResult) -> str:
    """The fidelity of the checkpoint's own measurement window (fastlab.measure.window), "" where the checkpoint
    noted no window: the run's verdict stands for it."""
    if not run.windows or not result.evaluated:
        return ""
    try:
        return window.judge(run.summary.fidelity, run.flows, (min(a for a, _ in run.windows),
                            max(b for _, b in run.windows)), result.band, result.measured, result.passed,
                            result.of_link)
    except MissingData:
        return ""


def combined_status(statuses: list[str]) -> str:
    """One verdict of several: FAIL if any failed, else INCONCLUSIVE if any was, else PASS (none: FAIL)."""
    if not statuses or FAIL in statuses:
        return FAIL
    return INCONCLUSIVE if INCONCLUSIVE in statuses else PASS
