"""A run's headline figures with their units: the one flattening of summary.json (`headline`) that the
results API's compare, the sweeps' tables, the web app's compare page and its sweep aggregates all read."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from fastlab.base.record.part import unit_of
from fastlab.base.record.summary import FlowFigures, LinkFigures, Summary

HEADLINE_FLOW = {"cc": "algorithm", "throughput_mbps": "throughput", "mean_rtt_ms": "mean RTT",
                 "min_rtt_ms": "min RTT", "retransmits": "retransmits"}
HEADLINE_LINK = {"utilization": "utilization", "mean_backlog_pkts": "mean backlog",
                 "max_backlog_pkts": "max backlog", "queue_drops": "queue drops", "loss_drops": "random-loss drops"}
Of = Literal["run", "flow", "link"]


@dataclass(frozen=True)
class Figure:
    """One headline figure: the record field (or total) it is, of what (the run, a flow, a link), its
    value and unit, and a label in words."""

    name: str
    of: Of
    subject: str  # the flow's or link's id; "" for the run
    label: str
    value: float | int | str | None
    unit: str

    @property
    def key(self) -> str:
        """Its column name in a flat table (a sweep's aggregate.csv): the name for the run's, else
        `<id>_<name>`."""
        return self.name if self.of == "run" else f"{self.subject}_{self.name}"

    def shown(self) -> Figure:
        """The figure as people read it: a fraction as a percentage (one decimal), else as it is."""
        if self.unit == "fraction":
            value = round(100 * self.value, 1) if isinstance(self.value, int | float) else None
            return Figure(self.name, self.of, self.subject, self.label, value, shown_unit(self.unit))
        return self


def shown_unit(unit: str) -> str:
    """The unit a figure of `unit` is shown in (Figure.shown): a fraction as a percentage."""
    return "%" if unit == "fraction" else unit


def _number(value: Any) -> float | int | None:
    """A figure's value as it is when it is a finite number (an int stays an int: a count), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if isinstance(value, int) or math.isfinite(value) else None


@dataclass(frozen=True)
class Headline:
    """A run's headline figures (`headline`): the run's totals, then each link's, then each flow's."""

    figures: tuple[Figure, ...]

    def flat(self) -> dict[str, float | int | str | None]:
        """Key -> value (Figure.key), in order: one row of a table of runs."""
        return {f.key: f.value for f in self.figures}

    def run(self, name: str) -> Figure:
        return next(f for f in self.figures if f.of == "run" and f.name == name)

    def of(self, kind: Of, subject: str) -> list[Figure]:
        """The figures of one flow or link."""
        return [f for f in self.figures if f.of == kind and f.subject == subject]

    def subjects(self, kind: Of) -> list[str]:
        """The flows' or links' ids, in the record's order."""
        out: list[str] = []
        for f in self.figures:
            if f.of == kind and f.subject not in out:
                out.append(f.subject)
        return out

    def busiest_link(self) -> str | None:
        """The link with the highest utilization (the first of equals; a run's bottleneck), or None."""
        links = [(f.value, f.subject) for f in self.figures if f.of == "link" and f.name == "utilization"
                 and isinstance(f.value, int | float)]
        best = max((u for u, _ in links), default=None)
        return next((s for u, s in links if u == best), None)


def headline(summary: Summary) -> Headline:
    """A run's headline figures with units -- the one flattening of summary.json that the results API's
    compare, the sweeps' tables, the web app's compare page and sweep aggregates read:

    - the run: total goodput, the flows' mean RTT (mean of those measured), total retransmits, Jain's index
      and the verdict (faithful: 1, 0, or None when not assessed);
    - each link (HEADLINE_LINK): utilization, mean and max backlog, queue and random-loss drops;
    - each flow (HEADLINE_FLOW): its algorithm, goodput, mean and min RTT, retransmits.

    A figure the record lacks is None (a value that is not a finite number, as a hostile bundle may
    carry, too)."""
    flows, links = summary.flows, summary.links
    rates = [_number(f.throughput_mbps) for f in flows]
    rtts = [r for r in (_number(f.mean_rtt_ms) for f in flows) if r is not None]
    resent = [f.retransmits for f in flows if isinstance(f.retransmits, int)]
    faithful = summary.faithful
    out = [Figure("throughput_mbps", "run", "", "total goodput", round(sum(r or 0.0 for r in rates), 4), "Mb/s"),
           Figure("mean_rtt_ms", "run", "", "mean RTT of the flows", round(sum(rtts) / len(rtts), 4) if rtts else None,
                  "ms"),
           Figure("retransmits", "run", "", "retransmits, all flows", sum(resent), "packets"),
           Figure("jain_index", "run", "", "Jain's fairness index", _number(summary.jain_index), ""),
           Figure("faithful", "run", "", "emulation", None if faithful is None else int(faithful), "")]
    for link in links:
        for name, words in HEADLINE_LINK.items():
            out.append(Figure(name, "link", link.id, f"{link.id} {words}", _number(getattr(link, name)),
                              unit_of(LinkFigures, name) or ""))
    for flow in flows:
        for name, words in HEADLINE_FLOW.items():
            value = getattr(flow, name)
            out.append(Figure(name, "flow", flow.id, f"{flow.id} {words}",
                              value if isinstance(value, str) else _number(value), unit_of(FlowFigures, name) or ""))
    return Headline(tuple(out))
