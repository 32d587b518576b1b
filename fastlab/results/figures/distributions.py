"""Distributions of delay and throughput, as Flent and Pantheon report them: CDFs and box plots of each flow's
RTT samples and windowed goodput samples (fastlab.results.figures.data), per flow of a run, per run of a
comparison, per point of a sweep (its repetitions' samples pooled); and, for a sweep with repetitions, each
repetition's per-flow goodput and RTT p95 as points over a box per sweep point. Pure: `Group`s in, a
matplotlib Figure out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from fastlab.results.figures.data import Group
from fastlab.results.figures.style import LINE_STYLES, THEORY_GREY, Palette, gid, new_figure, styled

if TYPE_CHECKING:
    from matplotlib.figure import Figure

RTT_LABEL = "RTT (ms)"
GOODPUT_LABEL = "goodput (Mb/s)"
WHISKERS = (5, 95)  # the boxes' whiskers: 5th and 95th percentiles (20-Hz samples make Tukey's fences noise)


def _series(groups: list[Group]) -> list[tuple[str, str, int, np.ndarray, np.ndarray]]:
    """(legend key, colour key, flow index, RTT samples, goodput samples) per flow of each group, its runs'
    samples pooled; a single group's keys are its flows."""
    single = len(groups) == 1
    out = []
    for group in groups:
        ids = sorted({f.id for r in group.runs for f in r.flows}, key=lambda s: (len(s), s))
        for k, flow_id in enumerate(ids):
            flows = [f for r in group.runs for f in r.flows if f.id == flow_id]
            rtt = np.concatenate([f.rtt_samples for f in flows]) if flows else np.array([])
            good = np.concatenate([f.goodput_samples for f in flows]) if flows else np.array([])
            cc = flows[0].cc if flows else "?"
            if single:
                out.append((f"{flow_id} ({cc})", flow_id, 0, rtt, good))
            else:
                out.append((group.label + (f" {flow_id}" if len(ids) > 1 else ""), group.label, k, rtt, good))
    return out


def _no_data(ax: Any) -> None:
    ax.text(0.5, 0.5, "not in the traces", transform=ax.transAxes, ha="center", va="center", color=THEORY_GREY)


@styled
def cdf(groups: list[Group], wide: bool = False) -> Figure:
    """Two panels side by side: the empirical CDF of the RTT samples and of the windowed goodput samples,
    one step line per flow (one run) or per run's flow (several); dotted marks at each line's p50/p95/p99
    on the RTT panel's curve for one run."""
    fig, axes = new_figure(1, 2, height_in=1.9, wide=wide)
    series = _series(groups)
    colours = Palette([c for _l, c, _k, _r, _g in series], by_cc=len(groups) > 1)
    handles: dict[str, Any] = {}
    for ax, index, label, kind in ((axes[0, 0], 3, RTT_LABEL, "rtt"), (axes[0, 1], 4, GOODPUT_LABEL, "goodput")):
        drawn = False
        for row in series:
            samples = row[3] if index == 3 else row[4]
            values = np.sort(samples[np.isfinite(samples)])
            if not len(values):
                continue
            y = np.arange(1, len(values) + 1) / len(values)
            (h,) = ax.step(values, y, where="post", color=colours(row[1]), linestyle=LINE_STYLES[row[2] % 4],
                            gid=gid("cdf", kind, row[0]))
            handles.setdefault(row[0], h)
            drawn = True
        if not drawn:
            _no_data(ax)
        ax.set_xlabel(label)
        ax.set_ylim(0, 1.02)
        for q in (0.5, 0.95, 0.99):
            ax.axhline(q, color=THEORY_GREY, linewidth=0.4, linestyle=":", zorder=1)
    axes[0, 0].set_ylabel("fraction of samples")
    fig.legend(list(handles.values()), list(handles.keys()), loc="outside upper center",
               ncol=min(4, max(1, len(handles))))
    return fig


def _boxes(ax: Any, data: list[np.ndarray], colours: list[str], names: list[str], kind: str) -> None:
    kept = [(d[np.isfinite(d)], c, n) for d, c, n in zip(data, colours, names, strict=True)]
    kept = [(d, c, n) for d, c, n in kept if len(d)]
    if not kept:
        _no_data(ax)
        return
    parts = ax.boxplot([d for d, _c, _n in kept], whis=WHISKERS, showfliers=False, widths=0.55,
                       patch_artist=True, medianprops={"color": "black", "linewidth": 1.0},
                       whiskerprops={"linewidth": 0.7}, capprops={"linewidth": 0.7})
    for patch, (_d, colour, name) in zip(parts["boxes"], kept, strict=True):
        patch.set(facecolor=colour, alpha=0.55, edgecolor="black", linewidth=0.7, gid=gid("box", kind, name))
    tilt = len(kept) > 3 and max(len(n.split("\n")[0]) for _d, _c, n in kept) > 6  # long names side by side
    ax.set_xticks(range(1, len(kept) + 1), [n for _d, _c, n in kept], rotation=30 if tilt else 0,
                  ha="right" if tilt else "center")
    ax.grid(axis="x", visible=False)


@styled
def box(groups: list[Group], wide: bool = False) -> Figure:
    """Two panels: box plots of the RTT samples and of the windowed goodput samples per flow (one run) or per
    run's flow (several); boxes from the 25th to the 75th percentile, the median a line, whiskers at the
    5th and 95th (WHISKERS), no outliers drawn."""
    fig, axes = new_figure(1, 2, height_in=1.9, wide=wide)
    series = _series(groups)
    colours = Palette([c for _l, c, _k, _r, _g in series], by_cc=len(groups) > 1)
    names = [row[0] for row in series]
    _boxes(axes[0, 0], [row[3] for row in series], [colours(row[1]) for row in series], names, "rtt")
    _boxes(axes[0, 1], [row[4] for row in series], [colours(row[1]) for row in series], names, "goodput")
    axes[0, 0].set_ylabel(RTT_LABEL)
    axes[0, 1].set_ylabel(GOODPUT_LABEL)
    for ax in axes[0]:
        ax.set_ylim(bottom=0)
    return fig


def repetition_values(groups: list[Group], field: str) -> list[np.ndarray]:
    """Per group: each of its runs' per-flow `field` of summary.json (throughput_mbps, rtt_p95_ms), finite
    ones only."""
    out = []
    for group in groups:
        values = [f.get(field) for r in group.runs for f in r.summary_flows]
        out.append(np.array([float(v) for v in values if isinstance(v, int | float) and np.isfinite(v)]))
    return out


@styled
def repeats(groups: list[Group], wide: bool = False) -> Figure:
    """A sweep's points side by side: per point, each repetition's per-flow goodput and RTT p95 (its
    summary.json) as dots over a box of them (quartiles, whiskers at the 5th and 95th percentiles); n under
    each point's name."""
    fig, axes = new_figure(1, 2, height_in=1.9, wide=wide)
    colours = Palette([g.label for g in groups], by_cc=True)
    axis, ticks = _tick_names(groups)
    for ax, field, label in ((axes[0, 0], "rtt_p95_ms", "RTT p95 (ms)"),
                             (axes[0, 1], "throughput_mbps", GOODPUT_LABEL)):
        values = repetition_values(groups, field)
        names = [f"{tick}\nn={len(v)}" for tick, v in zip(ticks, values, strict=True)]
        _boxes(ax, values, [colours(g.label) for g in groups], names, field)
        shown = [v for v in values if len(v)]
        rng = np.random.default_rng(0)  # the dots' jitter, the same every time
        for i, v in enumerate(shown, start=1):
            ax.scatter(i + rng.uniform(-0.12, 0.12, len(v)), v, s=5, color="black", zorder=4, linewidths=0)
        ax.set_ylabel(label)  # not from 0: the spread over repetitions is what this figure shows
        if axis:
            ax.set_xlabel(axis)
    return fig


def _tick_names(groups: list[Group]) -> tuple[str, list[str]]:
    """The axis' name and each point's tick: when every point sets one same parameter (`buffer_bdp=0.5`), the
    parameter names the axis and the values are the ticks; else the points' labels."""
    parts = [g.label.split("=", 1) for g in groups]
    if all(len(p) == 2 and "," not in g.label for p, g in zip(parts, groups, strict=True)) \
            and len({p[0] for p in parts}) == 1:
        return parts[0][0], [p[1] for p in parts]
    return "", [g.label for g in groups]
