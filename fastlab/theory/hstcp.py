"""HighSpeed TCP's theory (RFC 3649): the response function, its increase and decrease (pure).

Between (Low_Window, Low_P = 1.5/Low_Window^2) and (High_Window, High_P) the response function is a
straight line in log-log, w(p) = Low_Window (p/Low_P)^S with S = ln(High_Window/Low_Window) /
ln(High_P/Low_P) (defaults: w = 0.12/p^0.835); below Low_Window it is standard TCP's 1.22/sqrt(p).
b(w) falls from 0.5 at Low_Window to High_Decrease at High_Window linearly in ln w;
a(w) = w^2 p(w) 2 b(w) / (2 - b(w)). Limited Slow-Start (RFC 3742) grows at most max_ssthresh/2
segments per RTT above max_ssthresh.

The checks that hold a run's HSTCP flow to it are fastlab.labs.hstcp_checks; the "what happened" note
(fastlab.theory.explain) draws the response function from `HstcpParams`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fastlab.define.ccset import HSTCP_DEFAULTS

RENO_C = math.sqrt(1.5)  # standard TCP's mean window 1.22/sqrt(p)


@dataclass(frozen=True)
class HstcpParams:
    low_window: float = HSTCP_DEFAULTS["low_window"]  # RFC 3649's defaults, from core/hstcp_core.h
    high_window: float = HSTCP_DEFAULTS["high_window"]
    high_p: float = HSTCP_DEFAULTS["high_p"]
    high_decrease: float = HSTCP_DEFAULTS["high_decrease"]

    @property
    def low_p(self) -> float:
        return 1.5 / self.low_window ** 2

    @property
    def slope(self) -> float:
        return math.log(self.high_window / self.low_window) / math.log(self.high_p / self.low_p)

    def window(self, p: float) -> float:
        """Mean window w(p) of the response function."""
        if p >= self.low_p:
            return RENO_C / math.sqrt(p)
        return self.low_window * (p / self.low_p) ** self.slope

    def loss_rate(self, w: float) -> float:
        return self.low_p * (w / self.low_window) ** (1 / self.slope)

    def decrease(self, w: float) -> float:
        if w <= self.low_window:
            return 0.5
        x = (math.log(w) - math.log(self.low_window)) / (math.log(self.high_window) - math.log(self.low_window))
        return (self.high_decrease - 0.5) * min(x, 1.0) + 0.5

    def increase(self, w: float) -> float:
        if w <= self.low_window:
            return 1.0
        b = self.decrease(w)
        return w * w * self.loss_rate(w) * 2 * b / (2 - b)
