"""Congestion-control registry: which algorithms a run may name, their parameters, how each loads.

One place answers "can a flow use CC X here, with these cc_args?". Kernel algorithms are
available when the kernel lists them (or, on kernels with module support, when their module
file exists: setting TCP_CONGESTION as root autoloads it). fastlab's own algorithms register
here with a parameter schema and a loader; a spec naming one is refused while no build of it is
installed.
"""

from __future__ import annotations

import math
import platform
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

AVAILABLE_PATH = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


class CCError(ValueError):
    """A congestion control or one of its parameters is not acceptable."""


class BuildError(RuntimeError):
    """A build of an algorithm refused or failed to load, unload or configure it (the run stage's loaders,
    fastlab.run.ccload, raise it as ToolError); its message is kept."""


@dataclass(frozen=True)
class ModuleMapping:
    """How a module build writes one parameter: its sysfs parameters' names, and their integer
    values from a checked value (e.g. gamma 1/3 -> gamma_num 1, gamma_den 3). With `through`, the
    names are read-only and report the value, which is written through that parameter instead
    (HSTCP's low_window: read back as low_window, written as rows of tcp_hstcp.ko's `table`)."""

    names: tuple[str, ...]
    values: Callable[[Any], dict[str, int]]
    through: str = ""
    read: Callable[[str], Any] | None = None  # with `through`: the spec's value from its sysfs text


@dataclass(frozen=True)
class Param:
    """One run-time parameter of an algorithm, with its accepted closed range."""

    name: str
    kind: type  # int, float or str
    minimum: float
    maximum: float
    default: float | str
    unit: str = ""
    help: str = ""
    pattern: str = ""  # for str parameters
    # A value form of its own (e.g. a ratio "1/3" for a float): returns the checked value or raises CCError.
    parse: Callable[[object], float | str] | None = None
    # The module build's parameters (sysfs names) this one is written as, and their values; None: the
    # module build cannot set it at run time.
    module: ModuleMapping | None = None

    def check(self, value: object) -> float | str:
        if self.parse is not None:
            checked = self.parse(value)
            if not isinstance(checked, str) and not self.minimum <= checked <= self.maximum:
                raise CCError(f"{self.name}={value!r} is out of range [{self.minimum}, {self.maximum}]")
            return checked
        if self.kind is str:
            if not isinstance(value, str) or not re.fullmatch(self.pattern, value):
                raise CCError(f"{self.name}={value!r} is not of the form {self.pattern}")
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CCError(f"{self.name} must be a number, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise CCError(f"{self.name} must be a finite number, got {value!r}")
        if self.kind is int and isinstance(value, float) and not value.is_integer():
            raise CCError(f"{self.name} must be a whole number, got {value!r}")
        if not self.minimum <= value <= self.maximum:
            shown = value if abs(value) < 10**15 else f"a {len(str(abs(int(value))))}-digit number"
            raise CCError(f"{self.name}={shown} is out of range [{self.minimum}, {self.maximum}]"
                          + (f" {self.unit}" if self.unit else ""))
        return self.kind(value)


class Loader(Protocol):
    """How a non-kernel algorithm becomes usable: loaded for a run, unloaded after."""

    impl: str

    def available(self) -> tuple[bool, str]: ...
    def registered(self) -> bool: ...
    def load(self) -> bool: ...
    def unload(self) -> str: ...
    def set(self, args: dict[str, Any], netns_pid: int | None = None) -> dict[str, Any]: ...
    def clear(self, netns_pid: int) -> None: ...
    def events_argv(self, netns_ino: list[int]) -> list[str] | None: ...
    def check_args(self, args: dict[str, Any]) -> None:
        """Refuse (CCError naming the key) what this build cannot set, before anything is built."""


@dataclass(frozen=True)
class CongestionControl:
    name: str
    origin: str  # "kernel" or "fastlab"
    description: str
    params: tuple[Param, ...] = ()
    loader: Loader | None = None
    check: Callable[[dict[str, Any]], None] | None = None  # cross-parameter rules

    @property
    def build(self) -> Loader:
        """The loader of one of fastlab's own algorithms; the kernel's have none (CCError)."""
        if self.loader is None:
            raise CCError(f"{self.name} is the kernel's own: fastlab loads and configures nothing of it")
        return self.loader

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in self.params) or "none"
        raise CCError(f"{self.name} takes no parameter {name!r} (its parameters: {known})")

    def validate_args(self, args: dict[str, object]) -> dict[str, float | str]:
        checked = {key: self.param(key).check(value) for key, value in args.items()}
        if self.check is not None:
            self.check(checked)
        if self.loader is not None:
            self.loader.check_args(checked)
        return checked


# Kernel algorithms a researcher may meet; whether each is usable is read from the kernel.
KERNEL_CCS: dict[str, str] = {
    "reno": "NewReno AIMD (RFC 5681), the kernel's reference",
    "cubic": "CUBIC (RFC 9438), Linux default",
    "bbr": "BBR v1, model-based (Cardwell et al. 2016)",
    "vegas": "TCP Vegas, delay-based (Brakmo & Peterson 1995)",
    "highspeed": "Linux HighSpeed TCP (RFC 3649, fixed parameters)",
    "htcp": "H-TCP (Leith & Shorten)",
    "illinois": "TCP Illinois, loss-delay hybrid",
    "westwood": "TCP Westwood+",
    "hybla": "TCP Hybla, for long-RTT links",
    "scalable": "Scalable TCP (Kelly 2003)",
    "veno": "TCP Veno",
    "yeah": "YeAH-TCP",
    "lp": "TCP Low Priority",
    "nv": "TCP New Vegas",
    "dctcp": "DCTCP (needs ECN)",
    "cdg": "CAIA delay-gradient",
    "bic": "BIC TCP",
}


def kernel_available() -> set[str]:
    try:
        return set(AVAILABLE_PATH.read_text().split())
    except OSError:
        return set()


def kernel_module_ccs() -> set[str]:
    """Kernel CCs present as module files (autoloaded on first use); empty without module support."""
    if not Path("/proc/modules").exists():
        return set()
    ipv4 = Path("/lib/modules") / platform.release() / "kernel" / "net" / "ipv4"
    if not ipv4.is_dir():
        return set()
    return {f.name.split(".")[0][4:] for f in ipv4.iterdir() if f.name.startswith("tcp_")}


@dataclass
class Registry:
    """All known algorithms by name; kernel ones are discovered, fastlab ones registered."""

    ours: dict[str, CongestionControl] = field(default_factory=dict)
    kernel_listing: Callable[[], set[str]] = kernel_available
    module_listing: Callable[[], set[str]] = kernel_module_ccs

    def register(self, cc: CongestionControl) -> None:
        self.ours[cc.name] = cc

    def lookup(self, name: str) -> CongestionControl:
        if name in self.ours:  # ours first: once registered, the kernel lists them too
            return self.ours[name]
        if name in self.kernel_listing() or name in self.module_listing():
            return CongestionControl(name, "kernel", KERNEL_CCS.get(name, "kernel algorithm"))
        raise CCError(f"unknown congestion control {name!r} (available here: "
                      f"{', '.join(sorted(self.usable()))})")

    def usable(self) -> set[str]:
        names = (self.kernel_listing() | self.module_listing()) - set(self.ours)
        return names | {n for n, cc in self.ours.items() if cc.loader and cc.loader.available()[0]}

    def check_usable(self, name: str) -> CongestionControl:
        cc = self.lookup(name)
        if cc.origin == "fastlab":
            ok, why = cc.loader.available() if cc.loader else (False, "no build registered")
            if not ok:
                raise CCError(f"{name} cannot be loaded here: {why}")
        return cc

    def listing(self) -> list[dict[str, str]]:
        """Rows for `fastlab cc list`: every algorithm known, whether usable, and how it loads."""
        loaded = self.kernel_listing()
        modules = self.module_listing()
        rows = []
        for name in sorted((set(KERNEL_CCS) | loaded | modules) - set(self.ours)):
            how = "built in" if name in loaded else "kernel module (autoload)" if name in modules else "absent"
            rows.append({"name": name, "origin": "kernel", "usable": str(how != "absent").lower(),
                         "how": how, "description": KERNEL_CCS.get(name, "")})
        for name, cc in sorted(self.ours.items()):
            ok, why = cc.loader.available() if cc.loader else (False, "no build registered")
            state = "registered now" if ok and cc.loader is not None and cc.loader.registered() else "loaded per run"
            rows.append({"name": name, "origin": "fastlab", "usable": str(ok).lower(),
                         "how": f"{why}; {state}" if ok else why, "description": cc.description})
        return rows

