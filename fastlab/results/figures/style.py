"""One style for every publication figure (`fastlab plot`, the web app's figure downloads): sizes and fonts for
a two-column paper, a colour per flow, algorithm, run or sweep point that stays the same across the figures of
one call, and the one way a figure becomes PNG, SVG or PDF bytes.

Sizes: a column of a two-column paper (IEEE, ACM) is 3.3-3.5 in wide, the page 7.0-7.2 in: a figure is drawn
at COLUMN_IN (or PAGE_IN for `wide`) so that it goes in at 100 %, its 8-pt text as large as the paper's
captions (a figure scaled down to fit shrinks its text below legibility). Lines 1.2 pt, theory lines dashed.

Colours: the Okabe-Ito palette (distinct in every common colour-vision deficiency, and in greyscale by its
lightness with the line styles), given out in a stable order: `Palette` hands out a colour per key in the
natural order of the keys (f2 before f10), so flow f1 is the same blue in the time series, the CDF and the box
plot. A key that is an algorithm everyone knows has its own colour (CC_COLOURS), the same in every figure.

Matplotlib is imported here and only when a figure is drawn (`import fastlab` and the web app do not load
it). Figures are `matplotlib.figure.Figure` objects, never pyplot's global state: the web app draws from
several threads. Matplotlib's rcParams are global, so drawing and saving happen under one lock with the style
in force (`styled`, `to_bytes`).
"""

from __future__ import annotations

import functools
import io
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FORMATS = ("pdf", "png", "svg")
MEDIA_TYPES = {"pdf": "application/pdf", "png": "image/png", "svg": "image/svg+xml"}
COLUMN_IN = 3.5  # one column of a two-column paper (IEEE: 3.5 in; ACM: 3.33 in)
PAGE_IN = 7.16  # both columns (IEEE's text width)
PNG_DPI = 300  # a PNG printed at its size: 300 dpi is what publishers ask for line art at least
FONT_PT = 8.0  # captions' size in IEEE and ACM templates
SMALL_PT = 6.5  # tick labels, legends, theory lines' labels

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
# an algorithm has its colour in every figure (a comparison of FAST and CUBIC, a sweep of either)
CC_COLOURS = {"fast": "#0072B2", "cubic": "#E69F00", "reno": "#009E73", "hstcp": "#D55E00", "bbr": "#CC79A7",
              "vegas": "#56B4E9"}
LINK_COLOURS = ("#222222", "#777777", "#8C564B", "#AAAAAA")  # links' queues: greys, apart from the flows
THEORY_GREY = "#555555"  # a line the flows share (a capacity, Σα)
LINE_STYLES = ("-", "--", ":", "-.")  # a second dimension where colour is taken (flows of compared runs)

STYLE: dict[str, Any] = {
    "font.family": "serif",
    "font.serif": ["STIXGeneral", "DejaVu Serif"],  # STIX: Times-like, matching most papers' text
    "mathtext.fontset": "stix",
    "font.size": FONT_PT,
    "axes.titlesize": FONT_PT,
    "axes.labelsize": FONT_PT,
    "xtick.labelsize": SMALL_PT,
    "ytick.labelsize": SMALL_PT,
    "legend.fontsize": SMALL_PT,
    "legend.frameon": False,
    "legend.handlelength": 1.6,
    "axes.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.linewidth": 0.4,
    "grid.alpha": 0.35,
    "lines.linewidth": 1.2,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "xtick.major.size": 2.5,
    "ytick.major.size": 2.5,
    "pdf.fonttype": 42,  # TrueType in the PDF: editable text, and accepted by IEEE's PDF checker (no Type 3)
    "svg.fonttype": "none",  # text as text in the SVG (searchable, its labels readable by a test)
    "svg.hashsalt": "fastlab",  # the same figure gives the same SVG
    "savefig.bbox": "tight",
    "savefig.pad_inches": 0.02,
}

_LOCK = threading.RLock()
P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def _in_style() -> Iterator[None]:
    import matplotlib

    with _LOCK, matplotlib.rc_context(cast(Any, STYLE)):  # its keys typed as literals: a dict of ours is not
        yield


def styled(build: Callable[P, R]) -> Callable[P, R]:
    """A figure builder run with the style in force (its text and lines take their sizes when drawn)."""

    @functools.wraps(build)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with _in_style():
            return build(*args, **kwargs)

    return wrapper


def new_figure(rows: int, cols: int = 1, height_in: float = 1.6, wide: bool = False,
               sharex: bool = False) -> tuple[Figure, Any]:
    """A Figure of `rows` x `cols` axes, each row `height_in` tall, a column or a page wide; its axes as a
    2-D array (call inside a `styled` builder)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(PAGE_IN if wide else COLUMN_IN, rows * height_in), layout="constrained")
    axes = fig.subplots(rows, cols, sharex=sharex, squeeze=False)
    return fig, axes


def to_bytes(fig: Figure, fmt: str) -> bytes:
    """The figure as a PDF, PNG (PNG_DPI) or SVG file's bytes. ValueError for another format. PDF and SVG
    carry no creation date, so the same figure gives the same bytes."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt[:20]!r}: one of {', '.join(FORMATS)}")
    out = io.BytesIO()
    metadata = {"pdf": {"CreationDate": None, "Creator": "fastlab"}, "svg": {"Date": None, "Creator": "fastlab"},
                "png": {"Software": "fastlab"}}[fmt]
    with _in_style():
        fig.savefig(out, format=fmt, dpi=PNG_DPI, metadata=metadata)
    return out.getvalue()


def gid(*parts: str) -> str:
    """An element id for a figure's series ("rtt-f1", "theory-cwnd-0"): the SVG names its group by it, so a
    reader (or a test) finds each series; characters other than letters, digits, '.', '_' and '-' as '_'."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", "-".join(parts))


def natural_key(text: str) -> list[Any]:
    """f2 before f10: digits compared as numbers."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


class Palette:
    """A colour per key, stable across the figures drawn with it: keys in natural order take OKABE_ITO's
    colours in turn (an algorithm CC_COLOURS' own when `by_cc`); beyond eight keys the colours repeat."""

    def __init__(self, keys: Iterable[str], by_cc: bool = False) -> None:
        ordered = sorted(set(keys), key=natural_key)
        self.colours: dict[str, str] = {}
        spare = [c for c in OKABE_ITO if not by_cc or c not in CC_COLOURS.values()] or list(OKABE_ITO)
        for i, key in enumerate(ordered):
            own = CC_COLOURS.get(key.lower()) if by_cc else None
            self.colours[key] = own or (OKABE_ITO[i % len(OKABE_ITO)] if not by_cc else spare[i % len(spare)])

    def __call__(self, key: str) -> str:
        return self.colours.get(key, THEORY_GREY)
