"""What a run shows, in words: the automatic "what happened" note of the results page and the report.

Pure functions of the theory's per-flow references (`fastlab.theory.fast.references`: bottleneck,
capacity, FAST's equilibrium) and the run's summary (utilization, mean backlog, random-loss and queue
drops per link, each flow's mean window). For FAST the test is its equilibrium: a bottleneck's queue
holds the sum of the alphas, so a mean backlog far below it with losses says the losses keep cutting
the window ("backlog 2.6 << alpha = 30"), near it with a full link says FAST is at equilibrium. Under
random loss, standard TCP's response function (Mathis: w = sqrt(3/2)/sqrt(p)) and HSTCP's (RFC 3649)
at the measured loss rate are the windows to compare with: `response_lines` adds them to the
references the window chart draws.
"""

from __future__ import annotations

import math
from typing import Any

from fastlab.base.record import LinkFigures, Segment, SegmentLink, Summary
from fastlab.theory.hstcp import RENO_C, HstcpParams

FULL = 0.9  # utilization from which a link counts as full
WHOLE_RUN = " over the whole run"  # where a note's figures come from, when they are the summary's


def loss_rate(link: LinkFigures | SegmentLink) -> float | None:
    """Random-loss drops per packet that arrived at a link (its forward direction), None without them (a
    segment's figures count no arrivals)."""
    arrivals = link.arrivals_pkts if isinstance(link, LinkFigures) else None
    if not arrivals or link.loss_drops is None or arrivals <= 0:
        return None
    return link.loss_drops / arrivals


def mathis_window(p: float) -> float:
    return RENO_C / math.sqrt(p)


HSTCP_DEFAULT = HstcpParams()  # RFC 3649's default response function (kernel-modules/core/hstcp_core.h's defaults)


def hstcp_window(p: float) -> float:
    """HSTCP's mean window w(p) with the default parameters."""
    return HSTCP_DEFAULT.window(p)


def path_loss(ref: dict[str, Any], rates: dict[str, float]) -> float:
    """Probability that a packet of the flow is lost at random somewhere on its path."""
    kept = 1.0
    for link in ref.get("links") or ():
        kept *= 1 - rates.get(link, 0.0)
    return 1 - kept


def configured_rates(spec_links: dict[str, Any]) -> dict[str, float]:
    """Bernoulli loss rates the spec sets per link (what a live run expects before any is measured)."""
    out = {}
    for link_id, link in (spec_links or {}).items():
        loss = (link or {}).get("loss") or {}
        if loss.get("model") == "bernoulli" and loss.get("rate"):
            out[link_id] = float(loss["rate"])
    return out


def measured_rates(summary: Summary | Segment | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for link in summary.links if summary is not None else []:
        p = loss_rate(link)
        if p:
            out[link.id] = p
    return out


def response_lines(refs: list[dict[str, Any]], summary: Summary | None,
                   spec_links: dict[str, Any] | None = None, mtu_bytes: int = 1500) -> list[dict[str, Any]]:
    """The references with, for each flow whose path loses packets at random, the loss rate (measured,
    else the spec's), Mathis' window and, where it differs (p below HSTCP's Low_P) and the flow runs
    HSTCP, HSTCP's window w(p); and, for each flow through a RED bottleneck of the spec's links, RED's
    thresholds, max_p and the Reno/RED model's q* (fastlab.theory.red.reference_lines)."""
    from fastlab.theory import red

    if spec_links:
        refs = red.reference_lines(refs, spec_links, mtu_bytes)
        traced = {k for k, v in spec_links.items() if isinstance(v, dict) and v.get("trace")}
        refs = [r | {"capacity_is_trace_mean": True} if r.get("bottleneck") in traced else r for r in refs]
    rates = measured_rates(summary) if summary else configured_rates(spec_links or {})
    out = []
    for ref in refs:
        p = path_loss(ref, rates)
        extra: dict[str, Any] = {}
        if p > 0:
            extra = {"loss_rate": round(p, 6), "mathis_window_pkts": round(mathis_window(p), 1)}
            if ref.get("cc") == "hstcp" and p < HSTCP_DEFAULT.low_p:
                extra["hstcp_window_pkts"] = round(hstcp_window(p), 1)
        out.append(ref | extra)
    return out


def _pct(p: float) -> str:
    return f"{100 * p:.2g} %"


def fast_note(link: LinkFigures | SegmentLink, total_alpha: float, flows: int, p: float | None,
              over: str = "") -> str:
    """One bottleneck shared by FAST flows only: its mean backlog against the sum of the alphas."""
    backlog, util = float(link.mean_backlog_pkts or 0), float(link.utilization or 0)
    drops = int(link.loss_drops or 0) + int(link.queue_drops or 0)
    tol = max(2 * flows + 1, 0.15 * total_alpha)  # the integer update keeps up to 2 packets per flow below
    alpha = f"α = {total_alpha:g}" if flows == 1 else f"Σα = {total_alpha:g}"
    head = f"{link.id}: utilization {util:.2f}, mean backlog {backlog:.1f} packets{over}"
    if backlog < total_alpha - tol:
        much = "≪" if backlog < 0.5 * total_alpha else "<"
        if drops:
            cause = f"random loss of {_pct(p)}" if p else f"{drops} queue drops"
            return (f"{head} {much} {alpha}: losses ({cause}) keep cutting FAST's window before the queue "
                    f"reaches its equilibrium")
        return (f"{head} {much} {alpha} with no loss: FAST had not reached its equilibrium (a short run, or a "
                f"window held down by something else)")
    if backlog <= total_alpha + tol:
        if util >= FULL:
            return f"{head} ≈ {alpha}: FAST at equilibrium (the queue holds the sum of the alphas, the link is full)"
        return f"{head} ≈ {alpha}, but the link is not full: the queue is at FAST's equilibrium, the rate is not"
    return (f"{head} > {alpha}: more queued than FAST's equilibrium (other traffic, or a buffer that cannot "
            f"hold Σα{f': {drops} drops' if drops else ''})")


def red_note(link: LinkFigures | SegmentLink, ref: dict[str, Any], over: str = "") -> str:
    """A RED bottleneck (fastlab.theory.red.reference_lines' figures on its flows' references): its queue
    against the thresholds and the Reno/RED model's q*, its drops (the run's figures count arrivals and RED's
    drops; a segment's do not), and what the loop's gain margin says."""
    backlog, util = float(link.mean_backlog_pkts or 0), float(link.utilization or 0)
    arrivals, dropped = ((float(link.arrivals_pkts or 0), int(link.aqm_drops or 0)) if isinstance(link, LinkFigures)
                         else (0.0, 0))
    head = (f"{link.id} (RED, min_th {ref['red_min_th_pkts']:g}, max_th {ref['red_max_th_pkts']:g} packets): "
            f"utilization {util:.2f}, mean backlog {backlog:.1f} packets{over}")
    drops = f"; RED dropped {dropped} packets ({100 * dropped / arrivals:.2g} % of arrivals)" if arrivals else ""
    margin, q_star = ref.get("red_gain_margin"), ref.get("red_q_star_pkts")
    if margin is None or q_star is None:
        return head + drops
    n = int(ref.get("red_flows") or 0)
    model = (f"; the Reno/RED model for {n} flow{'s' if n != 1 else ''} puts RED's average at q* = {q_star:g} "
             f"packets with a gain margin of {margin:.2g}")
    cut = "the flows cut their windows together" if n != 1 else "the flow halves its window"
    if margin > 1:
        verdict = ": stable, the queue holds near q* and keeps the link busy" + (
            "" if util >= FULL else f", yet the link was {100 * (1 - util):.0f} % idle")
    else:
        verdict = (f": unstable, the queue swings to empty as {cut}"
                   + (f", the link {100 * (1 - util):.0f} % idle" if util < FULL else
                      ", though over this run the link stayed busy") + " (RED's average cannot steer the loop at this"
                   " capacity: the gain grows as C³)")
    return head + drops + model + verdict


def link_notes(refs: list[dict[str, Any]], summary: Summary | Segment, over: str = "") -> list[str]:
    """One line per bottleneck (of the run, or of one of its segments; `over` says whose figures they are):
    FAST's queue against Σα where only FAST flows share it, RED's queue against its model, else how full."""
    links: dict[str, LinkFigures | SegmentLink] = {link.id: link for link in summary.links}
    rates = measured_rates(summary)
    out: list[str] = []
    by_link: dict[str, list[dict[str, Any]]] = {}
    for ref in refs:
        if ref.get("bottleneck"):
            by_link.setdefault(ref["bottleneck"], []).append(ref)
    for link_id, members in by_link.items():
        link = links.get(link_id)
        if link is None or link.utilization is None:
            continue
        util = float(link.utilization)
        if all(r.get("fast_queue_pkts") for r in members):
            out.append(fast_note(link, float(members[0]["fast_queue_pkts"]), len(members), rates.get(link_id), over))
        elif members[0].get("red_max_th_pkts"):
            out.append(red_note(link, members[0], over))
        elif util >= FULL:
            out.append(f"{link_id}: utilization {util:.2f}: the flows keep it full "
                       f"(mean backlog {float(link.mean_backlog_pkts or 0):.1f} packets)")
        else:
            out.append(f"{link_id}: utilization {util:.2f}: the flows leave {100 * (1 - util):.0f} % of it unused")
    return out


def flow_notes(refs: list[dict[str, Any]], summary: Summary) -> list[str]:
    """Each lossy flow's mean window against the response functions at its loss rate; unfair sharing."""
    out: list[str] = []
    for ref in response_lines(refs, summary):
        flow = summary.flow(ref["flow"])
        p, window = ref.get("loss_rate"), flow.mean_cwnd_pkts if flow is not None else None
        if not p or window is None or flow is None:
            continue
        line = (f"{ref['flow']} ({ref.get('cc') or flow.cc}): mean window {float(window):.0f} packets at a "
                f"random loss rate p = {_pct(p)}; standard TCP's response function 1.22/√p gives "
                f"{ref['mathis_window_pkts']:.0f}")
        if ref.get("hstcp_window_pkts"):
            line += f", HSTCP's w(p) {ref['hstcp_window_pkts']:.0f}"
        out.append(line)
    jain = summary.jain_index
    if len(summary.flows) > 1 and jain is not None and jain < 0.9:
        out.append(f"the flows did not share fairly: Jain index {jain:.2f} (1 = equal shares)")
    return out


def notes(refs: list[dict[str, Any]], summary: Summary | None) -> list[str]:
    """The "what happened" lines of a finished run, most telling first; [] without a summary."""
    if summary is None:
        return []
    # the whole run's figures, start-up included, said so: a lab's checkpoint on the same page measures its
    # settled part ("mean backlog after 6 s"), and two unlabelled figures of one quantity read as a contradiction
    return link_notes(refs, summary, WHOLE_RUN) + flow_notes(refs, summary)


def what_happened(spec: Any, summary: Summary, changes: list[Any] | None = None,
                  refs: list[dict[str, Any]] | None = None) -> list[str]:
    """The notes of an ExperimentSpec's finished run (none where the theory cannot place its flows).
    A run whose parameters changed (`changes`: fastlab.theory.segments.Change, with the summary's segments
    measured) is judged per segment, each against its own values: the queue after α 30 -> 60 is
    compared with 60, not 30; the loss and fairness lines stay over the whole run. `refs`: the run's
    references when its plan is at hand (the engine's: fast_theory.plan_references), else from the spec."""
    from fastlab.define.schema import to_plain
    from fastlab.theory import fast as fast_theory
    from fastlab.theory import red, segments

    try:
        refs = refs if refs is not None else fast_theory.references(spec)
        refs = red.reference_lines(refs, to_plain(spec).get("links"), spec.mtu)  # a RED bottleneck's model
        parts = segments.segments(spec, changes or [])
        seg_refs = [fast_theory.references(part.spec) for part in parts] if changes else []
    except (ValueError, KeyError, TypeError, RuntimeError):
        return []
    measured = summary.segments or []
    if not changes or len(measured) != len(parts):
        return notes(refs, summary)
    said = [text for figures in measured for text in figures.changes]
    out = [f"the run's parameters changed {len(said)} time{'s' if len(said) > 1 else ''}: each part is judged "
           f"against its own values ({'; '.join(said[:3])}{'; …' if len(said) > 3 else ''})"]
    for part, figures, part_refs in zip(parts, measured, seg_refs, strict=True):
        settled = figures.settled_from_s
        span = f"{part.label()}" + (f" (judged from {settled:.1f} s)" if settled is not None and settled > part.start_s
                                    else "")
        out += [f"{span}: {line}" for line in link_notes(part_refs, figures)]
    return out + flow_notes(refs, summary)
