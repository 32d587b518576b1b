"""Goodput, congestion window, queue and RTT over time, one panel each, with the theory's dashed lines: of one
run (a colour per flow), or of several runs or sweep points (a colour per run, a line style per flow). Pure:
`Group`s in, a matplotlib Figure out (fastlab.results.figures.style draws it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from fastlab.results.figures.data import FlowSeries, Group
from fastlab.results.figures.style import LINE_STYLES, LINK_COLOURS, THEORY_GREY, Palette, gid, new_figure, styled

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# panel -> (chart of chart_lines whose theory lines it carries, y label); the report's charts' axes
PANELS = {"goodput": ("goodput", "goodput (Mb/s)"), "cwnd": ("cwnd", "cwnd (packets)"),
          "queue": ("queue", "queue (packets)"), "rtt": ("rtt", "RTT (ms)")}
X_LABEL = "time since the flows started (s)"
TOP_MARGIN = 1.15  # an axis with a "top" theory line (RED's max_th) ends this far above it


def _series(flow: FlowSeries, panel: str) -> np.ndarray | None:
    return {"goodput": flow.goodput, "cwnd": flow.cwnd, "rtt": flow.srtt}.get(panel)


def short_label(text: str) -> str:
    """A theory line's label on the figure: lines merged at one value (chart_lines.lines joins their labels
    with " · ") said once when they say the same for each flow ("Mathis 26.2 pkts", not five times)."""
    parts = text.split(" · ")
    if len(parts) < 2:
        return text
    rests = {p.split(" ", 1)[1] if p[:1] == "f" and " " in p else p for p in parts}
    return next(iter(rests)) if len(rests) == 1 else text


def _theory(ax: Any, lines: list[dict[str, Any]], colour_of: Any, labelled: bool, x_end: float,
            chart: str) -> float | None:
    """The chart's theory lines, dashed over their span, their short label at the right end (one run); the
    highest "top" line, if any (the axis ends above it, not at a start-up spike)."""
    top = None
    for i, line in enumerate(lines):
        colour = THEORY_GREY if line.get("flow") is None else colour_of(str(line["flow"]))
        x0 = float(line.get("from_s") or 0)
        x1 = x_end if line.get("to_s") is None else float(line["to_s"])
        ax.plot([x0, x1], [line["y"], line["y"]], linestyle=(0, (4, 2)), linewidth=0.8, color=colour, zorder=3,
                gid=gid("theory", chart, str(i)))
        if labelled:
            ax.annotate(short_label(line["short"]), (x1, line["y"]), xytext=(-1, 1.5), textcoords="offset points",
                        ha="right", va="bottom", fontsize=5.5, color=colour, zorder=4)
        if line.get("top"):
            top = max(top or 0.0, float(line["y"]))
    return top


@styled
def timeseries(groups: list[Group], wide: bool = False, title: str | None = None) -> Figure:
    """Four panels sharing the time axis: each flow's goodput (smoothed as the report smooths it), window and
    smoothed RTT, the queues of the links that queued, each with its theory lines. One group of one run: a
    colour per flow, theory lines labelled. Several: a colour per group (its first run drawn), a line style
    per flow, theory lines unlabelled."""
    fig, axes = new_figure(len(PANELS), 1, height_in=1.05, wide=wide, sharex=True)
    single = len(groups) == 1
    runs = [g.runs[0] for g in groups if g.runs]
    flow_ids = sorted({f.id for r in runs for f in r.flows})
    colours = Palette(flow_ids) if single else Palette([g.label for g in groups], by_cc=True)
    x_end = max([r.duration_s or 0.0 for r in runs] + [float(f.t[-1]) for r in runs for f in r.flows if len(f.t)]
                + [1.0])
    handles: dict[str, Any] = {}
    for (panel, (chart, ylabel)), ax in zip(PANELS.items(), axes[:, 0], strict=True):
        drawn = False
        for group, run in zip(groups, runs, strict=False):
            if panel == "queue":
                for i, (link, (t, q)) in enumerate(run.queues.items()):
                    colour = LINK_COLOURS[i % len(LINK_COLOURS)] if single else colours(group.label)
                    label = link if single else f"{group.label}: {link}"
                    (h,) = ax.plot(t, q, color=colour, linestyle=LINE_STYLES[i % len(LINE_STYLES)] if not single
                                   else "-", linewidth=0.9, label=label, gid=gid("queue", label))
                    if single:
                        handles.setdefault(f"queue {link}", h)
                    drawn = True
            for k, flow in enumerate(run.flows):
                y = _series(flow, panel)
                if y is None:
                    continue
                colour = colours(flow.id) if single else colours(group.label)
                style = "-" if single else LINE_STYLES[k % len(LINE_STYLES)]
                (h,) = ax.plot(flow.t, y, color=colour, linestyle=style,
                               gid=gid(panel, flow.id if single else f"{group.label}-{flow.id}"))
                key = f"{flow.id} ({flow.cc})" if single else f"{group.label}" + (f" {flow.id}" if k else "")
                handles.setdefault(key, h)
                drawn = True
            top = _theory(ax, run.lines.get(chart, []), colours if single else (lambda _f, g=group: colours(g.label)),
                          single, x_end, chart)
            if top:
                ax.set_ylim(top=top * TOP_MARGIN)
        if not drawn:
            ax.text(0.5, 0.5, "not in the traces", transform=ax.transAxes, ha="center", va="center",
                    color=THEORY_GREY)
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.set_xlim(0, x_end)
    axes[-1, 0].set_xlabel(X_LABEL)
    if single and any(r.queues for r in runs):  # the queue panel names its links in its own corner
        axes[2, 0].legend(loc="lower right", handlelength=1.2)
    flows_handles = {k: h for k, h in handles.items() if not k.startswith("queue ")}
    fig.legend(list(flows_handles.values()), list(flows_handles.keys()), loc="outside upper center",
               ncol=min(4, max(1, len(flows_handles))))
    if title:
        fig.suptitle(title)
    return fig
