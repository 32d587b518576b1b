"""A figure's spread over repeated runs (pure): median, min, max, standard deviation and Student's t 95 %
interval of the mean, for `repeat: N` (fastlab.sweep.repeats) and every sweep's per-combination table.

The interval is mean ± t(0.975, n − 1)·s/√n: it assumes the runs' figures are independent draws from one
roughly normal spread (repetitions differ by their seeds: random loss and start jitter). It needs two runs;
with one, the figure is that run's and there is no interval.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95
# Simpson's rule on the t density from 0 to the quantile: this many intervals put the 0.975 quantile within
# 1e-6 of the tables' values from 1 degree of freedom on (tests/unit/test_repeats.py).
_SIMPSON_STEPS = 2000


def _t_pdf(x: float, df: int) -> float:
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1) / 2 * math.log1p(x * x / df))


def _t_cdf_above_half(x: float, df: int) -> float:
    """P(T <= x) - 0.5 for x >= 0 (Simpson's rule on the density)."""
    h = x / _SIMPSON_STEPS
    total = _t_pdf(0.0, df) + _t_pdf(x, df)
    total += sum((4 if i % 2 else 2) * _t_pdf(i * h, df) for i in range(1, _SIMPSON_STEPS))
    return total * h / 3


def t_quantile(p: float, df: int) -> float:
    """The p quantile (0.5 < p < 1) of Student's t with `df` degrees of freedom: bisection on the CDF. Pure;
    no SciPy (not a dependency of fastlab)."""
    if not 0.5 < p < 1 or df < 1:
        raise ValueError(f"t_quantile: needs 0.5 < p < 1 and df >= 1, got p={p}, df={df}")
    target = p - 0.5
    low, high = 0.0, 1.0
    while _t_cdf_above_half(high, df) < target:  # 12.7 for df 1 at 0.975: a few doublings
        high *= 2
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if _t_cdf_above_half(mid, df) < target else (low, mid)
    return (low + high) / 2


@dataclass(frozen=True)
class Spread:
    """One figure over the faithful runs: n, median, min, max, sample standard deviation and the 95 %
    interval of the mean (None where it needs more runs than there were)."""

    n: int
    median: float | None
    low: float | None  # smallest value
    high: float | None  # largest value
    sd: float | None
    ci_low: float | None
    ci_high: float | None


def spread(values: Sequence[float]) -> Spread:
    """A figure's spread over the runs given (the faithful ones); NaN values (a figure a run lacks) left
    out. Pure."""
    clean = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    n = len(clean)
    if not n:
        return Spread(0, None, None, None, None, None, None)
    median = statistics.median(clean)
    if n < 2:
        return Spread(1, median, clean[0], clean[0], None, None, None)
    sd = statistics.stdev(clean)
    half = t_quantile((1 + CONFIDENCE) / 2, n - 1) * sd / math.sqrt(n)
    mean = statistics.fmean(clean)
    return Spread(n, median, min(clean), max(clean), sd, mean - half, mean + half)
