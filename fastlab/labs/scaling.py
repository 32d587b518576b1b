"""The labs' rule for a FAST step run at another scale: delay-preserving scaling of alpha (issue 49 item 4).

A topology's `scale` divides every capacity and keeps every delay. A FAST flow aims at alpha packets queued
at its bottleneck, alpha * MTU / C of queueing delay: with alpha kept in packets, scaling C by k multiplies
that delay by 1/k. What the delay competes with does not scale: the hosts and the datapath add ~1 ms to
every round trip (issue 53's delay accounting: ~1.2 ms above the minimum at 250 Mb/s, ~0.4 ms of it the
port's queue of TSO bursts), and FAST reads all of it as its own queue. Measured on SC2002 Table 1's
rows 7/9/10 at scale 0.25 with the 1/100 form's alpha 15 (0.72 ms of target queue at a 250 Mb/s port,
below what the hosts add): utilization 0.58-0.62; with alpha 50 (2.4 ms, the paper's alpha 200 at
1 Gb/s), 0.978 / 0.930 / 0.927 (issue 49). The rule keeps the fidelity verdict's budget for that delay (a
quarter of alpha * MTU / C, 0.6 ms at the paper's 2.4 ms) the same at every scale, while what the hosts add
does not shrink with the rate: with nine or ten flows here, 0.43-0.66 ms plus 0.2 ms of emulator lateness at
scales 0.1-0.25 (unfaithful), within it at 0.05 (2026-11-29, bench/labrows.py). A smaller scale is then
chosen for the machine's load (frames per second), not to buy FAST a larger queue.

So a lab step's spec file states its FAST flows' alpha at the scale it is written at (the paper's, for
the SC2002 rows: alpha 200 at scale 1), and when a form of the step runs it at another scale (the step's
`set`, its short form, or a caller's extra overrides changing `topology_args.scale`), each of those flows'
alpha becomes round(alpha * scale / written scale) packets: alpha * MTU / C stays what the spec file
states. The built spec carries the new alpha and, in its description, what it became and why; the run's
spec.yaml records both. An alpha the overrides themselves state (`flows.N.cc_args.alpha=...`,
`flows.N.cc_args={...}`, a whole flow or flow list) is the step author's choice for that scale and is
kept as stated; so is a scheduled alpha change the overrides state. Pure: `Lab.build_spec` calls it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from fastlab.define.ccset import FAST_PARAMS
from fastlab.define.schema import ExperimentSpec, parse_override
from fastlab.define.topology import TopologyError, load_module

_ALPHA = next(p for p in FAST_PARAMS if p.name == "alpha")
ALPHA_MIN, ALPHA_MAX, ALPHA_DEFAULT = int(_ALPHA.minimum), int(_ALPHA.maximum), int(_ALPHA.default)
FAST = "fast"
DESCRIPTION_MAX = 2000  # ExperimentSpec.description's limit


@dataclass(frozen=True)
class ScaledAlpha:
    """One alpha the rule changed: where (`flows.N` or `cc_changes.N`), from what to what."""

    where: str
    written: int
    scaled: int


@dataclass(frozen=True)
class AlphaScaling:
    """What the rule did to a step's spec: the scales, each alpha changed, and the overrides that carry it."""

    written_scale: float
    scale: float
    changes: tuple[ScaledAlpha, ...]

    def overrides(self) -> list[str]:
        """`--set` overrides giving each changed alpha its scaled value."""
        out = []
        for change in self.changes:
            field = "cc_args" if change.where.startswith("flows.") else "args"
            out.append(f"{change.where}.{field}.alpha={change.scaled}")
        return out

    def words(self) -> str:
        """The rule and what it did, for the spec's description (and so the run's spec.yaml)."""
        groups: dict[tuple[int, int], list[str]] = {}
        for change in self.changes:
            groups.setdefault((change.written, change.scaled), []).append(change.where)
        done = "; ".join(f"alpha {a} -> {b} packets ({_spans(wheres)})" for (a, b), wheres in groups.items())
        clamped = any(c.scaled in (ALPHA_MIN, ALPHA_MAX) and c.scaled != round(c.written * self.ratio)
                      for c in self.changes)
        return (f"[Scaled by the labs' rule (delay-preserving): run at scale {self.scale:g}, the spec file written "
                f"at {self.written_scale:g}, so {done}: alpha x MTU / C, the queueing delay FAST aims at, stays "
                f"the spec file's, above the ~1 ms the hosts add to every round trip"
                + (f" (clamped to FAST's range {ALPHA_MIN}..{ALPHA_MAX})" if clamped else "") + ".]")

    @property
    def ratio(self) -> float:
        return self.scale / self.written_scale


def _spans(wheres: list[str]) -> str:
    """`flows.0, flows.1, flows.2, cc_changes.0` -> `flows.0-2, cc_changes.0`: runs of consecutive entries."""
    out: list[str] = []
    runs: list[tuple[str, int, int]] = []
    for where in wheres:
        kind, index = where.rsplit(".", 1)
        if runs and runs[-1][0] == kind and runs[-1][2] + 1 == int(index):
            runs[-1] = (kind, runs[-1][1], int(index))
        else:
            runs.append((kind, int(index), int(index)))
    for kind, first, last in runs:
        out.append(f"{kind}.{first}" if first == last else f"{kind}.{first}-{last}")
    return ", ".join(out)


def topology_scale(spec: ExperimentSpec) -> float | None:
    """The scale the spec runs its topology at: its topology_args' `scale`, else the topology's default;
    None for a topology without one (or one that cannot be loaded: running the spec will say why)."""
    given = spec.topology_args.get("scale")
    if isinstance(given, int | float) and not isinstance(given, bool):
        return float(given)
    try:
        field = load_module(spec.topology).Args.model_fields.get("scale")
    except (TopologyError, AttributeError):
        return None
    default = field.default if field is not None else None
    return float(default) if isinstance(default, int | float) and not isinstance(default, bool) else None


def _stated(overrides: list[str]) -> tuple[bool, set[int], bool]:
    """What the overrides state of the flows' alpha: (the whole flow list, the flows whose alpha they
    state, the scheduled changes)."""
    whole, flows, changes = False, set(), False
    for item in overrides:
        path, _value = parse_override(item)
        if path[0] == "flows":
            if len(path) == 1:
                whole = True
            elif isinstance(path[1], int) and (len(path) == 2 or path[2] == "cc_args"
                                                and (len(path) == 3 or path[3] == "alpha")):
                flows.add(path[1])
        elif path[0] == "cc_changes":
            changes = True
    return whole, flows, changes


def _scaled(alpha: int, ratio: float) -> int:
    return max(ALPHA_MIN, min(ALPHA_MAX, int(math.floor(alpha * ratio + 0.5))))


def _alpha(args: dict[str, Any]) -> int | None:
    value = args.get("alpha", ALPHA_DEFAULT)
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def scale_alphas(written: ExperimentSpec, built: ExperimentSpec, overrides: list[str]) -> AlphaScaling | None:
    """The rule applied to a step: `written` is its spec file as written, `built` the same with the step's
    `overrides` applied. None when the scale is the written one (or the topology has none) or no FAST alpha
    follows it; else the alphas that change (an alpha the overrides state is kept)."""
    before, after = topology_scale(written), topology_scale(built)
    if before is None or after is None or math.isclose(before, after):
        return None
    ratio = after / before
    whole, stated_flows, stated_changes = _stated(overrides)
    changes = []
    if not whole:
        for i, (was, now) in enumerate(zip(written.flows, built.flows, strict=False)):
            if i in stated_flows or was.cc != FAST or now.cc != FAST:
                continue
            alpha = _alpha(was.cc_args)
            if alpha is not None and _alpha(now.cc_args) == alpha and _scaled(alpha, ratio) != alpha:
                changes.append(ScaledAlpha(f"flows.{i}", alpha, _scaled(alpha, ratio)))
    if not stated_changes:
        for i, change in enumerate(built.cc_changes):
            alpha = change.args.get("alpha")
            if change.cc == FAST and isinstance(alpha, int) and not isinstance(alpha, bool) \
                    and _scaled(alpha, ratio) != alpha:
                changes.append(ScaledAlpha(f"cc_changes.{i}", alpha, _scaled(alpha, ratio)))
    return AlphaScaling(before, after, tuple(changes)) if changes else None


def described(description: str, scaling: AlphaScaling) -> str:
    """The spec's description with the rule's words appended, within the description's limit (the words
    are kept whole; the description is cut before them)."""
    words = scaling.words()
    room = DESCRIPTION_MAX - len(words) - 1
    text = description.strip()
    if len(text) > room:
        text = text[:max(0, room - 3)].rstrip() + "..."
    return f"{text} {words}".strip()
