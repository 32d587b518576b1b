"""The builds that load fastlab's FAST and HSTCP into the kernel: what touches the machine.

`BpfLoader` registers the struct_ops build through `fastlab-cc` (fastlab.base.paths.cc_tool: the BPF
objects are built into it; per-namespace parameters, ring-buffer events); `ModuleLoader` loads the Kbuild
modules (global module parameters, for kernels with module support). Loaders say what they did; a
failure raises ToolError. `default_registry(impl)` binds them to the define stage's tables
(fastlab.define.ccset), which is what a run, `fastlab cc` and the checks before a run use; the plan
describes the same builds without loading anything (fastlab.plan.ccbuild). `cleanup` removes what dead
runs left, their algorithms included.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastlab.base import paths
from fastlab.define.cc import BuildError, CCError, Param, Registry, kernel_available
from fastlab.define.ccset import FAST_PARAMS, HSTCP_PARAMS, HSTCP_TABLE_KEYS, register_ours, tool_value
from fastlab.net import runstate
from fastlab.plan.ccbuild import build_available


class ToolError(BuildError):
    """fastlab-cc (or insmod, rmmod, sysfs) refused or failed; its message is kept."""


def run_tool(*args: str, timeout: float = 30) -> dict[str, Any]:
    proc = subprocess.run([str(paths.cc_tool()), *args], capture_output=True, text=True, timeout=timeout, check=False)
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
        return build_available(self.name, self.impl)

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

    def events_argv(self, netns_ino: list[int]) -> list[str]:
        """The events reader of the sockets in these namespaces: its own ring buffer, which the BPF
        program fills with their events only (kernel-modules/bpf/fastlab_bpf.h, "Per-reader rings")."""
        return [str(paths.cc_tool()), "events", self.name, "--netns", ",".join(map(str, netns_ino))]

    def check_args(self, args: dict[str, Any]) -> None:
        """HSTCP's table parameters are checked by generating the table with fastlab-cc (pure, nothing
        registered): what only the generator knows (e.g. more than HSTCP_MAX_ROWS rows) is refused
        before the network is built, in the tool's own words."""
        table = {k: v for k, v in args.items() if self.name == "hstcp" and k in HSTCP_TABLE_KEYS}
        if table and paths.cc_tool().exists():
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
        return build_available(self.name, self.impl)

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

    def events_argv(self, netns_ino: list[int]) -> list[str] | None:
        return None


# sysfs hands a parameter's store at most one page (x86-64: 4096 bytes); a longer `table` would
# arrive cut and be refused by the module after the network is built, so it is refused before.
MODULE_TABLE_MAX_BYTES = 4095


def generate_table(args: dict[str, Any], *options: str) -> str:
    """`fastlab-cc table` for checked HSTCP table parameters `args` (the others at their defaults; pure,
    nothing registered): its output, or CCError in the tool's words, which start with the field at
    fault (e.g. `high_window: table would need more than 1024 rows ...`)."""
    first = next(iter(args))
    argv = [str(paths.cc_tool()), "table", *(f"{k}={tool_value(k, v)}" for k, v in args.items()), *options]
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
    if not paths.cc_tool().exists():
        raise CCError(f"{first}: {paths.cc_tool()} is not built (run `make setup`); the module build gets HSTCP's "
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


LOADERS: dict[str, type[BpfLoader] | type[ModuleLoader]] = {"bpf": BpfLoader, "module": ModuleLoader}


def default_registry(impl: str = "bpf") -> Registry:
    """Kernel algorithms plus fastlab's FAST and HSTCP, bound to their `impl` build's loaders (BPF unless
    `impl` says module)."""
    return register_ours(Registry(), LOADERS[impl])


def loader(name: str, impl: str) -> BpfLoader | ModuleLoader:
    """The loader of a run state's `name:impl` entry (what cleanup unloads)."""
    return LOADERS[impl](name)


def cleanup(include_live: bool = False) -> list[str]:
    """`fastlab cleanup`: remove what dead fastlab runs left behind (fastlab.net.runstate.cleanup), the
    algorithms they registered included; returns what was removed."""
    return runstate.cleanup(include_live, cc_loader=loader)
