"""The scorecard's figure: each claim on its own axis, the published figure and the measured one side by side.

One SVG, drawn here as text (deterministic: the same rows give the same bytes, so the unit tier holds it);
the PNG is that SVG rendered by Chromium (`fastlab.results.raster`), so the two formats cannot differ.
Units differ from claim to claim (utilization, seconds, packets, ms, ratios), so each claim gets its own
horizontal axis from 0 (or its least figure, if negative) to a little past its greatest figure (0..1.1 for
every utilization, so that figures of one kind compare across rows): the
published band (grey; open to the right when the paper gives only a lower bound), the published value (a
black diamond), and the measured median (a dot coloured by the verdict) with a whisker from the least to
the greatest run.
"""

from __future__ import annotations

from html import escape

from fastlab.labs.scorecard import FAIL, INCONCLUSIVE, MIXED, PASS, UNMEASURED, Row, measured_text, published_text

COLOURS = {PASS: "#1a7f37", FAIL: "#cf222e", MIXED: "#9a6700", INCONCLUSIVE: "#6e7781", UNMEASURED: "#8c959f"}
WIDTH = 1100
ROW_H = 34
TOP = 64  # the title and the legend
LABEL_W = 250  # claim id and lab/step
AXIS_X0, AXIS_X1 = 260, 620
TEXT_X = 640
UTILIZATION = "utilization"
FONT = "DejaVu Sans, Liberation Sans, Arial, sans-serif"


def height(rows: list[Row]) -> int:
    return TOP + ROW_H * len(rows) + 16


def _axis(row: Row) -> tuple[float, float] | None:
    p = row.claim.published
    values = [v for v in (p.value, p.low, p.high, row.least, row.most, row.median) if v is not None]
    if not values:
        return None
    lo = min(0.0, *values)
    hi = max(values) * 1.15 if max(values) > 0 else 1.0
    if row.claim.published.unit == UTILIZATION:  # one axis for every utilization: lab 10's fall shows
        hi = max(1.1, max(values) * 1.05)
    return (lo, hi) if hi > lo else (lo, lo + 1.0)


def _row(i: int, row: Row) -> list[str]:
    y = TOP + i * ROW_H
    mid = y + ROW_H / 2
    colour = COLOURS[row.verdict]
    out = [f'<g class="claim" data-claim="{escape(row.claim.id)}" data-verdict="{row.verdict}">']
    if i % 2:
        out.append(f'<rect x="0" y="{y}" width="{WIDTH}" height="{ROW_H}" fill="#f6f8fa"/>')
    out.append(f'<text x="8" y="{mid - 2:.1f}" font-size="12" font-weight="bold">{escape(row.claim.id)}</text>')
    out.append(f'<text x="8" y="{mid + 11:.1f}" font-size="10" fill="#57606a">lab {row.claim.lab} · '
               f'{escape(row.claim.step)} · scale {row.claim.scale:g}</text>')
    axis = _axis(row)
    out.append(f'<line x1="{AXIS_X0}" y1="{mid + 8:.1f}" x2="{AXIS_X1}" y2="{mid + 8:.1f}" stroke="#d0d7de"/>')
    if axis is not None:
        lo, hi = axis

        def x(v: float) -> float:
            return AXIS_X0 + (v - lo) / (hi - lo) * (AXIS_X1 - AXIS_X0)

        out.append(f'<text x="{AXIS_X0}" y="{mid + 17:.1f}" font-size="8" fill="#57606a">{lo:.4g}</text>')
        out.append(f'<text x="{AXIS_X1}" y="{mid + 17:.1f}" font-size="8" fill="#57606a" '
                   f'text-anchor="end">{hi:.4g}</text>')
        p = row.claim.published
        if p.low is not None or p.high is not None:
            x0 = x(p.low) if p.low is not None else AXIS_X0
            x1 = x(p.high) if p.high is not None else AXIS_X1
            out.append(f'<rect class="published-band" x="{x0:.1f}" y="{mid - 9:.1f}" width="{max(x1 - x0, 1):.1f}" '
                       f'height="8" fill="#afb8c1" opacity="0.6"/>')
        if p.value is not None:
            cx = x(p.value)
            out.append(f'<path class="published" d="M{cx:.1f},{mid - 11:.1f} l5,6 l-5,6 l-5,-6 z" fill="#24292f"/>')
        if row.median is not None:
            if row.least is not None and row.most is not None and row.most > row.least:
                out.append(f'<line x1="{x(row.least):.1f}" y1="{mid + 3:.1f}" x2="{x(row.most):.1f}" '
                           f'y2="{mid + 3:.1f}" stroke="{colour}" stroke-width="2"/>')
            out.append(f'<circle class="measured" cx="{x(row.median):.1f}" cy="{mid + 3:.1f}" r="5" '
                       f'fill="{colour}"/>')
    published = escape(published_text(row.claim.published))
    out.append(f'<text x="{TEXT_X}" y="{mid - 2:.1f}" font-size="11">published {published}</text>')
    out.append(f'<text x="{TEXT_X}" y="{mid + 11:.1f}" font-size="11">measured {escape(measured_text(row))} · '
               f'<tspan fill="{colour}" font-weight="bold">{row.verdict.upper()}</tspan></text>')
    out.append("</g>")
    return out


def svg(rows: list[Row], title: str = "fastlab reproduction scorecard") -> str:
    """The figure of the rows as an SVG document."""
    h = height(rows)
    legend = [(PASS, "pass"), (FAIL, "fail"), (MIXED, "mixed"), (INCONCLUSIVE, "inconclusive"),
              (UNMEASURED, "unmeasured")]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{h}" viewBox="0 0 {WIDTH} {h}" '
           f'font-family="{FONT}" fill="#24292f">',
           f'<rect width="{WIDTH}" height="{h}" fill="#ffffff"/>',
           f'<text x="8" y="22" font-size="16" font-weight="bold">{escape(title)}</text>',
           '<path d="M13,38 l5,6 l-5,6 l-5,-6 z" fill="#24292f"/>',
           '<text x="24" y="48" font-size="11">published value</text>',
           '<rect x="124" y="40" width="22" height="8" fill="#afb8c1" opacity="0.6"/>',
           '<text x="152" y="48" font-size="11">published band (open: a bound)</text>',
           '<text x="350" y="48" font-size="11">measured: the median, a whisker from the least to the greatest '
           'run, coloured by the verdict</text>']
    x = 640
    for verdict, word in legend:
        out.append(f'<circle cx="{x}" cy="18" r="5" fill="{COLOURS[verdict]}"/>')
        out.append(f'<text x="{x + 8}" y="22" font-size="11">{word}</text>')
        x += 16 + 7 * len(word) + 12
    for i, row in enumerate(rows):
        out += _row(i, row)
    out.append("</svg>")
    return "\n".join(out) + "\n"
