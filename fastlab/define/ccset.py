"""fastlab's own congestion controls, FAST and HSTCP, as the define stage knows them: pure tables.

Each has a parameter schema (the ranges of `kernel-modules/README.md`, from the cores' C headers through
the generated table `fastlab.define.cc_constants`) and cross-parameter checks. Nothing here touches the
machine or opens a file: the builds that load them (BPF struct_ops through `fastlab-cc`, the Kbuild
modules) are the run stage's (`fastlab.run.ccload`), and the plan describes them from the capability
probe (`fastlab.plan.ccbuild`). `register_ours` puts both algorithms in a registry with the build each
caller binds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from fastlab.define.cc import CCError, CongestionControl, Loader, ModuleMapping, Param, Registry
from fastlab.define.cc_constants import FAST_C, HSTCP_C
from fastlab.define.schema import MTU_BYTES

PERIOD_PATTERN = r"^(rtt|2rtt|[0-9]{1,12}(us|ms))$"  # 12 digits: far past the range, far below int()'s limit

FP_ONE = 1 << FAST_C["FAST_FP_SHIFT"]  # Q16: the cores' fixed point (ewma_cap_q16)
PERIOD_KINDS = {"rtt": 0, "2rtt": 1}  # enum fast_period_kind; FAST_PERIOD_US = 2 with period_us
MODES = {"floor": 0, "carry": 1}  # enum fast_mode


def parse_gamma(value: object) -> float:
    """gamma as the cores take it: N/M with M <= FAST_GAMMA_DEN_MAX, or a number of at most 3
    decimals (the same rule as fastlab-cc's parse_ratio), 0 < gamma <= 1; a float that is such a
    ratio to 1e-9 (1/3 from JSON) is that ratio. Returns its value."""
    return float(gamma_ratio(value))


def gamma_ratio(value: object) -> Fraction:
    den_max = FAST_C["FAST_GAMMA_DEN_MAX"]
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,7}/[0-9]{1,7}", value):
        num, den = (int(x) for x in value.split("/"))
        ratio = Fraction(num, den) if den else None
    elif (isinstance(value, int) and not isinstance(value, bool)) or \
            (isinstance(value, float) and math.isfinite(value)):  # an int may be too large for a float
        ratio = Fraction(value).limit_denominator(den_max)
        ratio = ratio if abs(ratio - Fraction(value)) <= Fraction(1, 10**9) else None
    else:
        raise CCError(f"gamma must be a number or a ratio N/M, got {value!r}")
    if ratio is None or not 0 < ratio <= 1 or ratio.denominator > den_max:
        raise CCError(f"gamma={value!r} is out of range: 0 < gamma <= 1, at most 3 decimals or N/M with M <= "
                      f"{den_max} (e.g. 0.5, 1/3)")
    return ratio


def _period_module(period: str) -> dict[str, int]:
    if period in PERIOD_KINDS:
        return {"period_kind": PERIOD_KINDS[period]}
    return {"period_kind": 2, "period_us": int(period[:-2]) * (1000 if period.endswith("ms") else 1)}


def _same(name: str) -> ModuleMapping:
    return ModuleMapping((name,), lambda value: {name: int(value)})


# The one table of fastlab's CC parameters: name, type, range, default, unit and help (the spec's
# checks and the web form read these) and, per parameter, the module build's sysfs parameters and
# their values (ModuleLoader writes these). Ranges and defaults come from the cores' headers, which
# fastlab-cc's checks are compiled from; tests/unit/test_cc_ranges.py holds fastlab-cc and the
# modules' own parameter lists to it.
FAST_PARAMS = (
    Param("alpha", int, FAST_C["FAST_ALPHA_MIN"], FAST_C["FAST_ALPHA_MAX"], FAST_C["FAST_DEF_ALPHA"], "packets",
          "packets each flow keeps queued at equilibrium: the bottleneck queue settles at the sum of the alphas "
          "(queueing delay Σα/C); larger α fills an empty link sooner but queues more", module=_same("alpha")),
    Param("gamma", float, 1 / FAST_C["FAST_GAMMA_DEN_MAX"], 1.0,
          FAST_C["FAST_DEF_GAMMA_NUM"] / FAST_C["FAST_DEF_GAMMA_DEN"], "",
          "step toward the target window per update: 1 jumps at once (may ring), small values converge slowly; "
          "a ratio N/M (M <= 1000) or at most 3 decimals",
          parse=parse_gamma, module=ModuleMapping(("gamma_num", "gamma_den"), lambda value: {
              "gamma_num": (r := gamma_ratio(value)).numerator, "gamma_den": r.denominator})),
    Param("period", str, 0, 0, 0, "", "update period: rtt, 2rtt, <N>us or <N>ms", pattern=PERIOD_PATTERN,
          module=ModuleMapping(("period_kind", "period_us"), _period_module)),
    Param("ewma_cap", float, 1 / FP_ONE, 1.0, 1 / 8, "",  # FAST_EWMA_CAP_DEF_Q16 = FAST_FP_ONE / 8
          "cap of the avgRTT sample weight min(3/cwnd, cap)",
          module=ModuleMapping(("ewma_cap_q16",), lambda value: {"ewma_cap_q16": round(value * FP_ONE)})),
    Param("mode", str, 0, 0, 0, "", "floor (faithful) or carry (remainder-carrying)", pattern=r"^(floor|carry)$",
          module=ModuleMapping(("mode",), lambda value: {"mode": MODES[value]})),
    Param("mi_threshold_us", int, 0, FAST_C["FAST_MI_THRESH_US_MAX"], FAST_C["FAST_DEF_MI_THRESH_US"], "us",
          "multiplicative increase below this queueing delay", module=_same("mi_threshold_us")),
    Param("pacing_pct", int, 0, FAST_C["FAST_PACING_PCT_MAX"], FAST_C["FAST_DEF_PACING_PCT"], "%",
          "pacing rate = cwnd*mss/avgRTT*pct/100; 0 = off", module=_same("pacing_pct")),
)
# The four table parameters are written to tcp_hstcp.ko as the rows fastlab-cc generates from them
# (kernel code has no floating point to do it) through its `table` parameter; the module reports each
# under its own name in integer units (high_p in 1e-15, high_decrease in 1e-6, as hstcp_core.h keeps them).
def _table(name: str, scale: int = 1) -> ModuleMapping:
    return ModuleMapping((name,), lambda value: {name: round(value * scale)}, through="table",
                         read=lambda text: int(text) / scale if scale != 1 else int(text))


HSTCP_PARAMS = (
    Param("low_window", int, HSTCP_C["HSTCP_LOW_WINDOW_MIN"], HSTCP_C["HSTCP_LOW_WINDOW_MAX"],
          HSTCP_C["HSTCP_DEF_LOW_WINDOW"], "packets", "standard TCP up to this window (global)",
          module=_table("low_window")),
    Param("high_window", int, HSTCP_C["HSTCP_LOW_WINDOW_MIN"] + 1, HSTCP_C["HSTCP_HIGH_WINDOW_MAX"],
          HSTCP_C["HSTCP_DEF_HIGH_WINDOW"], "packets", "window reached at loss rate high_p (global)",
          module=_table("high_window")),
    Param("high_p", float, HSTCP_C["HSTCP_HIGH_P_MIN_FEMTO"] / 1e15, HSTCP_C["HSTCP_HIGH_P_MAX_FEMTO"] / 1e15,
          HSTCP_C["HSTCP_DEF_HIGH_P_FEMTO"] / 1e15, "", "loss rate at high_window (global)",
          module=_table("high_p_femto", 10**15)),
    Param("high_decrease", float, HSTCP_C["HSTCP_HIGH_DEC_MIN_PPM"] / 1e6, HSTCP_C["HSTCP_HIGH_DEC_MAX_PPM"] / 1e6,
          HSTCP_C["HSTCP_DEF_HIGH_DEC_PPM"] / 1e6, "", "b(w) at high_window (global)",
          module=_table("high_decrease_ppm", 10**6)),
    Param("max_ssthresh", int, 0, HSTCP_C["HSTCP_MAX_SSTHRESH_MAX"], HSTCP_C["HSTCP_DEF_MAX_SSTHRESH"], "packets",
          "RFC 3742 Limited Slow-Start; 0 = off", module=_same("max_ssthresh")),
)
HSTCP_TABLE_KEYS = ("low_window", "high_window", "high_p", "high_decrease")
HSTCP_DEFAULTS: dict[str, float] = {p.name: float(p.default) for p in HSTCP_PARAMS}  # RFC 3649's, from the header


def check_fast(args: dict[str, Any]) -> None:
    """FAST's timed update period within the core's range (the tool checks it again)."""
    period = args.get("period")
    if isinstance(period, str) and period[-2:] in ("us", "ms"):
        us = int(period[:-2]) * (1000 if period.endswith("ms") else 1)
        lo, hi = FAST_C["FAST_PERIOD_US_MIN"], FAST_C["FAST_PERIOD_US_MAX"]
        if not lo <= us <= hi:
            raise CCError(f"period={period} is out of range [{lo}us, {hi // 1_000_000} s]")
GLOBAL_ONLY = {"hstcp": set(HSTCP_TABLE_KEYS), "fast": set()}


def check_hstcp(args: dict[str, Any]) -> None:
    """Cross-parameter rules of RFC 3649 (the tool checks them again)."""
    low = args.get("low_window", HSTCP_DEFAULTS["low_window"])
    if args.get("high_window", HSTCP_DEFAULTS["high_window"]) <= low:
        raise CCError(f"high_window must exceed low_window ({low:g})")
    if args.get("high_p", HSTCP_DEFAULTS["high_p"]) >= (1.2 / low) ** 2:
        raise CCError(f"high_p must be below Low_P = (1.2/low_window)^2 = {(1.2 / low) ** 2:.3g}")


def module_settable(name: str, args: dict[str, Any]) -> None:
    """Refuse (CCError naming the key) a parameter the module build of `name` cannot set at run time."""
    params = {p.name: p for p in (FAST_PARAMS if name == "fast" else HSTCP_PARAMS)}
    for key in args:
        if params[key].module is None:
            raise CCError(f"{key}: the module build of {name} cannot set it; use cc_impl: bpf")


def register_ours(registry: Registry, build: Callable[[str], Loader]) -> Registry:
    """Put FAST and HSTCP in `registry`, each with the build `build(name)` gives: the run stage's loaders
    (fastlab.run.ccload.LOADERS[impl]) or the plan's description of them (fastlab.plan.ccbuild)."""
    registry.register(CongestionControl(
        "fast", "fastlab", "FAST TCP (Jin, Wei, Low 2004): delay-based, alpha packets queued per flow",
        FAST_PARAMS, build("fast"), check=check_fast))
    registry.register(CongestionControl(
        "hstcp", "fastlab", "HighSpeed TCP (RFC 3649) with Limited Slow-Start (RFC 3742), tunable table",
        HSTCP_PARAMS, build("hstcp"), check=check_hstcp))
    return registry


def tool_value(key: str, value: Any) -> str:
    """A checked value as fastlab-cc parses it: gamma as its exact ratio N/M (1/3, not 0.333333333333)."""
    if key == "gamma":
        ratio = gamma_ratio(value)
        return f"{ratio.numerator}/{ratio.denominator}"
    return format_value(value)


def format_value(value: Any) -> str:
    return f"{value:.12g}" if isinstance(value, float) else str(value)


def fast_target_ms(alpha: float, bottleneck_mbps: float, mtu_bytes: int = MTU_BYTES) -> float:
    """Queueing delay of alpha MTU packets at the bottleneck, ms."""
    return alpha * mtu_bytes * 8 / (bottleneck_mbps * 1e6) * 1000
