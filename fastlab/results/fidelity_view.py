"""How a run's fidelity verdict is shown to people: report.html, the web app, sweeps, bundles, replay.

`fastlab.measure.fidelity.assess()` puts a verdict in every run's summary.json under "fidelity"
(fastlab.base.record.Verdict); this module only presents it. It is pure and tolerant: no verdict (runs
made before verdicts existed) is "not assessed", and a verdict missing some figures still renders. Every piece
of text that reaches HTML goes through `html.escape`; the HTML carries class names only, each
page styles them (report.html with `CSS`, the web app with its style.css).

- `verdict_of`, `state`, `first_reason`: a run's verdict, the verdict in one word, its first reason (as
  1/0/None: fastlab.base.record.headline's `faithful`).
- `banner` -> `Banner` (title, plain-words lead, reasons, advice) and `banner_html`: the box at
  the top of a run's pages.
- `path_rows`, `link_rows`, `details_html`: the measurements behind the verdict (per-path
  emulation delay against its budget, per-link departure lateness and socket drops).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any, Literal

from fastlab.base.record import PathDelay, Summary, Verdict
from fastlab.measure.budgets import FAST_BASIS, LOSS_BASED_BASIS

State = Literal["faithful", "unfaithful", "unassessed"]

# The budget bases assess() names, in plain words.
# Steal below 0.5 % of the CPU time is a VM's background noise, not worth a line.
STEAL_SHOWN = 0.005
BASIS_WORDS = {FAST_BASIS: "¼ of the queue FAST aims at (α packets)",
               LOSS_BASED_BASIS: "1% of the base RTT (at least 0.5 ms)"}

CSS = """\
.fidelity{border:2px solid #bbb;border-radius:6px;padding:0.5em 1em;margin:0.8em 0;max-width:70em}
.fidelity code{white-space:nowrap;background:#fff;padding:0 0.2em} .fidelity p{margin:0.35em 0}
.fidelity ul{margin:0.3em 0 0.4em 0;padding-left:1.4em}
.fidelity-unfaithful{border-color:#b00020;background:#fff1f1}
.fidelity-unfaithful .fidelity-title{color:#b00020;font-size:1.15em}
.fidelity-faithful{border-color:#9ac59e;background:#f3faf3;padding:0.3em 1em}
.fidelity-faithful .fidelity-title{color:#176b1e}
.fidelity-unassessed{border-color:#ccc;border-style:dashed;color:#444;padding:0.3em 1em}
.fidelity-details td.over{color:#b00020;font-weight:700} .fidelity-details caption{text-align:left;font-weight:600}
.fidelity-details th,.fidelity-details td{text-align:left} .fidelity-details td.num{text-align:right}
"""


def verdict_of(summary: Summary | None) -> Verdict | None:
    """The verdict of a run's record, or None (an old run, or no summary at all)."""
    return summary.fidelity if summary is not None else None


def state(verdict: Verdict | None) -> State:
    if verdict is None:
        return "unassessed"
    return "faithful" if verdict.faithful else "unfaithful"


def first_reason(verdict: Verdict | None) -> str | None:
    reasons = verdict.reasons if verdict is not None else []
    return str(reasons[0]) if reasons else None


_CODE_RE = re.compile(r"`([^`]+)`")


def inline_html(text: str) -> str:
    """Escaped text with `backticked` spans (commands in assess()'s advice) as <code>."""
    return _CODE_RE.sub(r"<code>\1</code>", html.escape(text))


def _num(value: Any, fmt: str = "{:.2f}") -> str:
    return "–" if value is None else fmt.format(value)


# --- the banner --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Banner:
    """What the box at the top of a run's page says: a title, one plain-words sentence, and for an
    unfaithful run the reasons (as assess() wrote them) and what to do."""

    state: State
    title: str
    lead: str
    reasons: tuple[str, ...] = ()
    advice: str | None = None


def _worst_path(verdict: Verdict) -> PathDelay | None:
    measured = [p for p in verdict.paths if p.emulation_delay_ms is not None]
    return max(measured, key=lambda p: (p.emulation_delay_ms or 0.0) / max(p.budget_ms or 1e-9, 1e-9), default=None)


def banner(verdict: Verdict | None) -> Banner:
    kind = state(verdict)
    if kind == "unassessed":
        return Banner(kind, "Fidelity not assessed",
                      "this run was made before fastlab checked its emulation, so nothing says whether the "
                      "emulated links kept their timing.")
    assert verdict is not None
    if kind == "unfaithful":
        advice = verdict.advice
        return Banner(kind, "Not faithful: do not trust these results as they stand",
                      "This machine could not keep up with the network in the spec during this run. The emulated "
                      "links added delay or dropped packets of their own, so the figures below partly measure this "
                      "machine, not only the congestion control.",
                      tuple(str(r) for r in verdict.reasons),
                      advice[:1].upper() + advice[1:] if advice else None)
    worst = _worst_path(verdict)
    accounted = list(verdict.delay_accounting.values())
    if accounted:
        top = max(accounted, key=lambda a: a.read_as_queue_median_ms / max(a.budget_ms or 1e-9, 1e-9))
        lead = (f"every flow read at most {top.read_as_queue_median_ms:.2f} ms of delay no link queued "
                f"(median; budget {_num(top.budget_ms)} ms), what disturbed the flows cost them no more "
                "than their limit, the emulated links dropped no packets of their own, and the CPU kept headroom.")
    elif worst is None:
        lead = "no threshold was crossed (no emulator measured a path's delay: its links were shaped by tc)."
    else:
        lead = (f"the emulated links added at most {worst.emulation_delay_ms or 0.0:.2f} ms of delay (budget "
                f"{_num(worst.budget_ms)} ms), dropped no packets of their own, and the CPU kept headroom.")
    return Banner(kind, "Faithful emulation", lead)


def banner_html(verdict: Verdict | None) -> str:
    """The box at the top of report.html and the web app's run page (id "fidelity", data-fidelity = state).

    Unfaithful: a red box with the title, a plain-words sentence, the reasons and what to do.
    Faithful and not assessed: one short line.
    """
    b = banner(verdict)
    esc = html.escape
    icon = {"unfaithful": "⚠ ", "faithful": "✓ ", "unassessed": ""}[b.state]
    role = "alert" if b.state == "unfaithful" else "status"
    title = f'<strong class="fidelity-title">{icon}{esc(b.title)}</strong>'
    parts = [f'<div id="fidelity" class="fidelity fidelity-{b.state}" data-fidelity="{b.state}" role="{role}">']
    if b.state == "unfaithful":
        parts.append(f'<p>{title}</p><p class="fidelity-lead">{esc(b.lead)}</p>')
    else:
        parts.append(f'<p>{title}: <span class="fidelity-lead">{esc(b.lead)}</span></p>')
    if b.reasons:
        parts.append('<p><strong>Why:</strong></p><ul class="fidelity-reasons">'
                     + "".join(f"<li>{inline_html(r)}</li>" for r in b.reasons) + "</ul>")
    if b.advice:
        parts.append(f'<p class="fidelity-advice"><strong>What to do:</strong> {inline_html(b.advice)}</p>')
    parts.append("</div>")
    return "".join(parts)


# --- the measurements ----------------------------------------------------------------------------

@dataclass(frozen=True)
class PathRow:
    """One flow's path: the delay the emulators added (None: not measured) against its budget."""

    flow: str
    delay_ms: float | None
    budget_ms: float | None
    basis: str

    @property
    def over(self) -> bool:
        return self.delay_ms is not None and self.budget_ms is not None and self.delay_ms > self.budget_ms


@dataclass(frozen=True)
class LinkRow:
    """One direction of one emulated link: departure lateness (µs), segments sent, socket drops, CPU."""

    link: str
    direction: str
    mean_us: float | None
    p50_us: float | None
    p99_us: float | None
    max_us: float | None
    segments: int
    sock_drops: int
    cores: float | None
    drops_over: bool
    cores_over: bool


def path_rows(verdict: Verdict | None) -> list[PathRow]:
    return [PathRow(p.flow, p.emulation_delay_ms, p.budget_ms, BASIS_WORDS.get(str(p.basis), str(p.basis or "")))
            for p in (verdict.paths if verdict is not None else [])]


def link_rows(verdict: Verdict | None) -> list[LinkRow]:
    if verdict is None:
        return []
    limits = verdict.thresholds
    drops_max, cores_max = limits.get("sock_drops_max", 0), limits.get("emulator_core_max")
    rows = []
    for link, directions in sorted(verdict.links.items()):
        c = verdict.emulator_cores.get(link)
        for direction, fig in directions.items():
            drops = int(fig.sock_drops or 0)
            rows.append(LinkRow(link, direction, fig.late_mean_us, fig.late_p50_us, fig.late_p99_us, fig.late_max_us,
                                int(fig.segments or 0), drops, c, drops > drops_max,
                                c is not None and cores_max is not None and c > cores_max))
    return rows


def _cell(text: str, over: bool = False) -> str:
    return f'<td class="num{" over" if over else ""}">{html.escape(text)}</td>'


def _accounting_html(verdict: Verdict) -> list[str]:
    """The delay accounting judged per flow (fastlab.measure.accounting) and the disturbances weighed by their
    effect (fastlab.measure.effects): tables, none for a run made before them."""
    esc = html.escape
    out = []
    if verdict.delay_accounting:
        out.append("<table class=\"fidelity-accounting\"><caption>Delay each flow read as queue that no link queued "
                   "(median over its samples; the rest of the hosts' delay is in its minimum RTT)</caption><tr>"
                   "<th>flow</th><th>read as queue (ms)</th><th>p99 (ms)</th><th>emulators' lateness (ms)</th>"
                   "<th>hosts and datapath (ms)</th><th>budget (ms)</th></tr>")
        for flow, a in sorted(verdict.delay_accounting.items()):
            over = a.read_as_queue_median_ms > (a.budget_ms or float("inf"))
            out.append(f"<tr><td>{esc(flow)}</td>{_cell(_num(a.read_as_queue_median_ms), over)}"
                       f"{_cell(_num(a.read_as_queue_p99_ms))}{_cell(_num(a.lateness_median_ms))}"
                       f"{_cell(_num(a.hosts_median_ms))}{_cell(_num(a.budget_ms))}</tr>")
        out.append("</table>")
    spans = [(flow, e) for flow, fig in sorted(verdict.effects.items()) for e in fig.spans]
    if spans:
        limit = verdict.thresholds.get("delivered_share_max")
        caption = ("What disturbed the flows and what it cost them (bytes short of their rate just before, over "
                   "the disturbance and its settling time" + (f"; limit {limit:.0%} of a flow's bytes" if limit else "")
                   + ")")
        out.append(f"<table class=\"fidelity-effects\"><caption>{esc(caption)}</caption><tr><th>flow</th>"
                   "<th>from (s)</th><th>to (s)</th><th>what</th><th>bytes short (MB)</th><th>window cut</th>"
                   "<th>most read as queue (ms)</th></tr>")
        for flow, e in spans[:MAX_EFFECT_ROWS]:
            short, cut = e.deficit_bytes, e.window_cut
            cells = [_cell(_num(e.t0_s, "{:.1f}")), _cell(_num(e.t1_s, "{:.1f}")),
                     f"<td>{esc(', '.join(e.kinds))}</td>",
                     _cell("–" if short is None else f"{max(0.0, short) / 1e6:.2f}"),
                     _cell("–" if cut is None else f"{cut:.0%}"), _cell(_num(e.read_as_queue_max_ms))]
            out.append(f"<tr><td>{esc(flow)}</td>{''.join(cells)}</tr>")
        out.append("</table>")
        if len(spans) > MAX_EFFECT_ROWS:
            out.append(f'<p class="note">… and {len(spans) - MAX_EFFECT_ROWS} more (summary.json, '
                       "fidelity.effects).</p>")
    return out


MAX_EFFECT_ROWS = 20  # a run disturbed all along lists its first ones; summary.json holds every one


def details_html(verdict: Verdict | None) -> str:
    """Per-path emulation delay vs budget and per-link lateness, plus CPU and trace gaps; "" if not assessed."""
    if state(verdict) == "unassessed":
        return ""
    assert verdict is not None
    esc = html.escape
    out = ['<div class="fidelity-details">']
    paths = path_rows(verdict)
    if paths:
        out.append("<table class=\"fidelity-paths\"><caption>Delay the emulators added on each flow's path</caption>"
                   "<tr><th>flow</th><th>emulation delay (ms)</th><th>budget (ms)</th><th>budget is</th></tr>")
        out += [f"<tr><td>{esc(p.flow)}</td>{_cell('not measured' if p.delay_ms is None else _num(p.delay_ms), p.over)}"
                f"{_cell(_num(p.budget_ms))}<td>{esc(p.basis)}</td></tr>" for p in paths]
        out.append("</table>")
    out += _accounting_html(verdict)
    links = link_rows(verdict)
    if links:
        out.append("<table class=\"fidelity-links\"><caption>How late the link emulators sent packets "
                   "(departure lateness; a path's emulation delay is the sum of its means)</caption><tr><th>link</th>"
                   "<th>direction</th><th>mean (µs)</th><th>p50 (µs)</th>"
                   "<th>p99 (µs)</th><th>max (µs)</th><th>segments</th><th>socket drops</th>"
                   "<th>emulator CPU (cores)</th></tr>")
        span = {link: sum(r.link == link for r in links) for link in {r.link for r in links}}
        for i, r in enumerate(links):
            first = i == 0 or links[i - 1].link != r.link  # one CPU cell per link: its emulator serves both ways
            cores = (f'<td rowspan="{span[r.link]}" class="num{" over" if r.cores_over else ""}">'
                     f"{esc(_num(r.cores))}</td>") if first else ""
            out.append(f"<tr><td>{esc(r.link)}</td><td>{esc(r.direction)}</td>{_cell(_num(r.mean_us, '{:.0f}'))}"
                       f"{_cell(_num(r.p50_us, '{:.0f}'))}"
                       f"{_cell(_num(r.p99_us, '{:.0f}'))}{_cell(_num(r.max_us, '{:.0f}'))}{_cell(str(r.segments))}"
                       f"{_cell(str(r.sock_drops), r.drops_over)}{cores}</tr>")
        out.append("</table>")
    limits = verdict.thresholds
    facts = []
    busy = verdict.machine_busy
    if busy is not None:
        limit = limits.get("machine_busy_max")
        facts.append(f"machine busy while the flows ran: {busy:.0%}"
                     + (f" (limit {limit:.0%})" if limit is not None else ""))
    steal = verdict.machine_steal
    if steal is not None and steal >= STEAL_SHOWN:
        facts.append(f"the hypervisor ran other work for {steal:.1%} of this machine's CPU time (steal): "
                     "an emulator due to send then waits, whatever this machine was doing")
    gaps = verdict.sample_gaps_s
    if gaps:
        flow, gap = max(gaps.items(), key=lambda kv: kv[1])
        limit = limits.get("sample_gap_max_s")
        facts.append(f"longest gap in the traces: {gap:.2f} s (flow {flow}"
                     + (f", limit {limit:g} s)" if limit is not None else ")"))
    idle = [(p.flow, p.idle_emulation_delay_ms) for p in verdict.paths if p.idle_emulation_delay_ms is not None]
    if idle:  # what the emulators' lateness put into the idle RTTs the summary reports (no flow ran: not judged)
        facts.append("delay the emulators added to the idle pings (the base RTTs in the summary include it): "
                     + ", ".join(f"{flow} {ms:.2f} ms" for flow, ms in idle))
    queued = [(link, direction, fig) for link, sides in sorted(verdict.tc_queues.items())
              for direction, fig in sorted(sides.items()) if fig.delivered_share is not None]
    if queued:  # tc links: the rate they kept while packets waited (TC_BUSY_SHARE_MIN judges it)
        limit = limits.get("tc_busy_share_min")
        facts.append("rate tc delivered while packets were queued: "
                     + ", ".join(f"{link} {direction} {fig.delivered_share or 0.0:.0%} over {fig.busy_s or 0.0:.1f} s"
                                 for link, direction, fig in queued)
                     + (f" (limit {limit:.0%})" if limit is not None else ""))
    facts += [str(u) for u in verdict.unmeasured]
    if facts:
        out.append('<p class="note">' + "; ".join(esc(f) for f in facts) + ".</p>")
    out.append("</div>")
    return "".join(out)
