"""Which build of FAST and HSTCP a run would load, and whether this machine has it, as the plan sees it.

The loaders that register, configure and unload the algorithms are the run stage's
(`fastlab.run.ccload`); the plan needs only their description: the build (`bpf` or `module`), whether it
is installed here (`build_available`, a read-only probe, the one answer the loaders give too) and the
checks a spec's parameters get without running anything. `planned_registry` is the registry `prepare`
checks specs against when its caller binds no loaders; checks that need `fastlab-cc` itself (HSTCP's
table: how many rows, whether the module takes it) are made when the run stage's loaders are bound
(`fastlab.experiment.engine.prepare_run`), before any network is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastlab.base import paths
from fastlab.define.cc import CCError, Registry
from fastlab.define.ccset import module_settable, register_ours

BTF = Path("/sys/kernel/btf/vmlinux")


def build_available(name: str, impl: str) -> tuple[bool, str]:
    """Whether the `impl` build ("bpf" or "module") of algorithm `name` can be loaded here, and why."""
    if impl == "bpf":
        tool = paths.cc_tool()
        if not tool.exists():
            return False, f"{tool} is not built (run `make setup`)"
        if not BTF.exists():
            return False, "no kernel BTF: BPF struct_ops cannot load"
        return True, "BPF struct_ops via fastlab-cc"
    if not Path("/proc/modules").exists():
        return False, "kernel without module support (CONFIG_MODULES off)"
    ko = paths.modules_dir() / f"tcp_{name}.ko"
    if not ko.exists():
        return False, f"{ko} not built (make -C kernel-modules modules)"
    return True, f"loadable module {ko.name}"


@dataclass
class PlannedBuild:
    """A build as the plan describes it (fastlab.define.cc.Loader): available() probes, check_args() makes
    the checks that need no tool; whatever would touch the machine is refused (the run binds loaders)."""

    name: str
    impl: str

    def available(self) -> tuple[bool, str]:
        return build_available(self.name, self.impl)

    def check_args(self, args: dict[str, Any]) -> None:
        if self.impl == "module":
            module_settable(self.name, args)

    def _unbound(self) -> CCError:
        return CCError(f"{self.name}: the plan's description of the {self.impl} build loads nothing; the run "
                       f"stage's loaders do (fastlab.run.ccload)")

    def registered(self) -> bool:
        raise self._unbound()

    def load(self) -> bool:
        raise self._unbound()

    def unload(self) -> str:
        raise self._unbound()

    def set(self, args: dict[str, Any], netns_pid: int | None = None) -> dict[str, Any]:
        raise self._unbound()

    def clear(self, netns_pid: int) -> None:
        raise self._unbound()

    def events_argv(self, netns_ino: list[int]) -> list[str] | None:
        raise self._unbound()


def planned_registry(impl: str = "bpf") -> Registry:
    """Kernel algorithms plus FAST and HSTCP described in their `impl` build (nothing loaded or run)."""
    return register_ours(Registry(), lambda name: PlannedBuild(name, impl))
