"""fastlab's own congestion controls, FAST and HSTCP, plugged into the CC registry.

Each has a parameter schema (the ranges of `kernel-modules/README.md`) and two loaders:
`BpfLoader` (struct_ops through `kernel-modules/fastlab-cc`, the default, per-namespace
parameters and ring-buffer events) and `ModuleLoader` (the Kbuild modules, global module
parameters, for kernels with module support). Loaders say what they did; a failure raises.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from fastlab.base import paths
from fastlab.define.cc import CCError, CongestionControl, ModuleMapping, Param, Registry, kernel_available
from fastlab.define.schema import MTU_BYTES

KERNEL_MODULES = paths.REPO / "kernel-modules"
TOOL = KERNEL_MODULES / "fastlab-cc"
PERIOD_PATTERN = r"^(rtt|2rtt|[0-9]{1,12}(us|ms))$"  # 12 digits: far past the range, far below int()'s limit
_DEFINE = re.compile(r"^#define\s+([A-Z][A-Z0-9_]*)\s+([0-9]+)U?(?:LL|L)?U?\b", re.MULTILINE)


def header_constants(text: str) -> dict[str, int]:
    """The integer `#define NAME 123U` constants of a C header (pure: parsed from its text)."""
    return {name: int(value) for name, value in _DEFINE.findall(text)}


# One source of the algorithms' ranges and defaults: the cores' C headers, which fastlab-cc, the
# BPF programs and the modules are built from. Python reads them, so a value refused by the tool
# after the network is built cannot pass the spec check before it (e.g. a FAST period of 5 us).
FAST_C = header_constants((KERNEL_MODULES / "core" / "fast_core.h").read_text())
HSTCP_C = header_constants((KERNEL_MODULES / "core" / "hstcp_core.h").read_text())

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


class ToolError(RuntimeError):
    """fastlab-cc refused or failed; its message is kept."""


def run_tool(*args: str, timeout: float = 30) -> dict[str, Any]:
    proc = subprocess.run([str(TOOL), *args], capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise ToolError(f"fastlab-cc {' '.join(args)}: {proc.stderr.strip() or f'exit {proc.returncode}'}")
    lines = proc.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else {}



@dataclass
class BpfLoader:
    """struct_ops build: registered with fastlab-cc, pinned under /sys/fs/bpf/fastlab/NAME."""

    name: str
    impl: str = "bpf"

    def available(self) -> tuple[bool, str]:
        if not TOOL.exists():
            return False, f"{TOOL} is not built (run `make setup`)"
        if not Path("/sys/kernel/btf/vmlinux").exists():
            return False, "no kernel BTF: BPF struct_ops cannot load"
        return True, "BPF struct_ops via fastlab-cc"

    def registered(self) -> bool:
        return self.name in kernel_available()

    def load(self) -> bool:
        """Register; True when this call registered it (so the caller owns the unload)."""
        ok, why = self.available()
        if not ok:
            raise ToolError(why)
        return run_tool("register", self.name).get("status") == "registered"

    def unload(self) -> str:
        return run_tool("unregister", self.name).get("status", "")

    def set(self, args: dict[str, Any], netns_pid: int | None = None) -> dict[str, Any]:
        if not args:
            return {}
        scope = ["--netns-pid", str(netns_pid)] if netns_pid is not None else []
        return run_tool("set", self.name, *(f"{k}={tool_value(k, v)}" for k, v in args.items()), *scope)

    def clear(self, netns_pid: int) -> None:
        """Drop a namespace's overrides (its inode may be reused by a later namespace)."""
        run_tool("set", self.name, "--netns-pid", str(netns_pid), "--clear")

    def events_argv(self) -> list[str]:
        return [str(TOOL), "events", self.name]

    def check_args(self, args: dict[str, Any]) -> None:
        """HSTCP's table parameters are checked by generating the table with fastlab-cc (pure, nothing
        registered): what only the generator knows (e.g. more than HSTCP_MAX_ROWS rows) is refused
        before the network is built, in the tool's own words."""
        table = {k: v for k, v in args.items() if self.name == "hstcp" and k in HSTCP_TABLE_KEYS}
        if table and TOOL.exists():
            generate_table(table)


@dataclass
class ModuleLoader:
    """Kbuild module build (tcp_fast.ko / tcp_hstcp.ko): global module parameters, no events."""

    name: str
    impl: str = "module"

    @property
    def module(self) -> str:
        return f"tcp_{self.name}"

    def available(self) -> tuple[bool, str]:
        if not Path("/proc/modules").exists():
            return False, "kernel without module support (CONFIG_MODULES off)"
        ko = paths.modules_dir() / f"{self.module}.ko"
        if not ko.exists():
            return False, f"{ko} not built (make -C kernel-modules modules)"
        return True, f"loadable module {ko.name}"

    def registered(self) -> bool:
        return Path("/sys/module", self.module).exists()

    def load(self) -> bool:
        ok, why = self.available()
        if not ok:
            raise ToolError(why)
        if self.registered():
            return False
        _checked(["insmod", str(paths.modules_dir() / f"{self.module}.ko")])
        return True

    def unload(self) -> str:
        _checked(["rmmod", self.module])
        return "unloaded"

    @property
    def params(self) -> dict[str, Param]:
        """This algorithm's rows of the one parameter table."""
        return {p.name: p for p in (FAST_PARAMS if self.name == "fast" else HSTCP_PARAMS)}

    def check_args(self, args: dict[str, Any]) -> None:
        self.module_values(args)

    def module_values(self, args: dict[str, Any]) -> dict[str, int | str]:
        """The module's own parameters (sysfs names and values) for checked spec `args`, by the one
        table (e.g. gamma 1/3 -> gamma_num 1, gamma_den 3; HSTCP's table parameters -> `table`, the
        rows fastlab-cc generates from them); CCError names a key it cannot take."""
        params = self.params
        values: dict[str, int | str] = {}
        through: dict[str, dict[str, Any]] = {}
        for key, value in args.items():
            mapping = params[key].module
            if mapping is None:
                raise CCError(f"{key}: the module build of {self.name} cannot set it; use cc_impl: bpf")
            if mapping.through:
                through.setdefault(mapping.through, {})[key] = value
            else:
                values.update(mapping.values(value))
        if "table" in through:
            values["table"] = module_table(through["table"])
        return values

    def set(self, args: dict[str, Any], netns_pid: int | None = None) -> dict[str, Any]:
        if netns_pid is not None and args:
            raise ToolError("the module build has global parameters only: use the BPF build for per-host values")
        try:
            self.write(self.module_values(args))
        except CCError as exc:
            raise ToolError(str(exc)) from None
        return dict(args)

    def write(self, values: dict[str, int | str] | dict[str, str]) -> None:
        """Write module parameters as sysfs names them."""
        for key, value in values.items():
            path = Path("/sys/module", self.module, "parameters", key)
            if not path.exists():
                raise ToolError(f"module {self.module} has no parameter {key}")
            path.write_text(str(value))

    def get(self, keys: list[str]) -> dict[str, str]:
        """Current values of the module parameters that spec `keys` are written as, as `write` puts them
        back: sysfs's text, and for HSTCP's table parameters the `table` line regenerated from the four
        parameters the module reports (the compiled-in table is fastlab-cc's default one)."""
        params = self.params
        values = {}
        for key in keys:
            mapping = params[key].module
            if mapping and mapping.through:
                continue
            for name in mapping.names if mapping else ():
                values[name] = self._read(name)
        if any((m := params[k].module) and m.through for k in keys):
            try:
                values["table"] = module_table({p.name: p.module.read(self._read(p.module.names[0]))
                                                for p in params.values() if p.module and p.module.read})
            except CCError as exc:
                raise ToolError(f"module {self.module}: its table cannot be regenerated: {exc}") from None
        return values

    def _read(self, name: str) -> str:
        path = Path("/sys/module", self.module, "parameters", name)
        if not path.exists():
            raise ToolError(f"module {self.module} has no parameter {name}")
        return path.read_text().strip()

    def clear(self, netns_pid: int) -> None:
        """Module parameters are global: nothing is kept per namespace."""

    def events_argv(self) -> list[str] | None:
        return None


# sysfs hands a parameter's store at most one page (x86-64: 4096 bytes); a longer `table` would
# arrive cut and be refused by the module after the network is built, so it is refused before.
MODULE_TABLE_MAX_BYTES = 4095


def generate_table(args: dict[str, Any], *options: str) -> str:
    """`fastlab-cc table` for checked HSTCP table parameters `args` (the others at their defaults; pure,
    nothing registered): its output, or CCError in the tool's words, which start with the field at
    fault (e.g. `high_window: table would need more than 1024 rows ...`)."""
    first = next(iter(args))
    argv = [str(TOOL), "table", *(f"{k}={tool_value(k, v)}" for k, v in args.items()), *options]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CCError(f"{first}: fastlab-cc table: {exc}") from None
    if proc.returncode != 0:
        raise CCError(proc.stderr.strip().removeprefix("fastlab-cc: ").removeprefix("table: ")
                      or f"{first}: fastlab-cc table: exit {proc.returncode}")
    return proc.stdout.strip()


def module_table(args: dict[str, Any]) -> str:
    """tcp_hstcp.ko's `table` line for checked table parameters `args` (`fastlab-cc table --module`).
    CCError names the first key when fastlab-cc is missing or the rows do not fit one sysfs write
    (about 270 rows)."""
    first = next(iter(args))
    if not TOOL.exists():
        raise CCError(f"{first}: {TOOL} is not built (run `make setup`); the module build gets HSTCP's "
                      f"table from it")
    text = generate_table(args, "--module")
    if len(text) > MODULE_TABLE_MAX_BYTES:
        raise CCError(f"{first}: the module build takes an HSTCP table of at most {MODULE_TABLE_MAX_BYTES} "
                      f"bytes (one sysfs write), and these parameters give {text.split()[4]} rows "
                      f"({len(text)} bytes); use cc_impl: bpf")
    return text


def _checked(argv: list[str]) -> None:
    if not shutil.which(argv[0]):
        raise ToolError(f"{argv[0]} is not installed")
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    if proc.returncode != 0:
        raise ToolError(f"{' '.join(argv)}: {proc.stderr.strip()}")


def tool_value(key: str, value: Any) -> str:
    """A checked value as fastlab-cc parses it: gamma as its exact ratio N/M (1/3, not 0.333333333333)."""
    if key == "gamma":
        ratio = gamma_ratio(value)
        return f"{ratio.numerator}/{ratio.denominator}"
    return format_value(value)


def format_value(value: Any) -> str:
    return f"{value:.12g}" if isinstance(value, float) else str(value)


LOADERS: dict[str, type[BpfLoader] | type[ModuleLoader]] = {"bpf": BpfLoader, "module": ModuleLoader}


def register_ours(registry: Registry, impl: str = "bpf") -> Registry:
    registry.register(CongestionControl(
        "fast", "fastlab", "FAST TCP (Jin, Wei, Low 2004): delay-based, alpha packets queued per flow",
        FAST_PARAMS, LOADERS[impl]("fast"), check=check_fast))
    registry.register(CongestionControl(
        "hstcp", "fastlab", "HighSpeed TCP (RFC 3649) with Limited Slow-Start (RFC 3742), tunable table",
        HSTCP_PARAMS, LOADERS[impl]("hstcp"), check=check_hstcp))
    return registry


def default_registry(impl: str = "bpf") -> Registry:
    """Kernel algorithms plus fastlab's FAST and HSTCP (BPF build unless `impl` says module)."""
    return register_ours(Registry(), impl)


def fast_target_ms(alpha: float, bottleneck_mbps: float, mtu_bytes: int = MTU_BYTES) -> float:
    """Queueing delay of alpha MTU packets at the bottleneck, ms."""
    return alpha * mtu_bytes * 8 / (bottleneck_mbps * 1e6) * 1000
