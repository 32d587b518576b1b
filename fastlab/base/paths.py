"""Where things live: the checkout, native builds, run state and results."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # fastlab/base/paths.py -> the checkout
MOUNTS = Path("/proc/self/mounts")
STATE_DIR = Path(os.environ.get("FASTLAB_STATE_DIR", "/run/fastlab"))


def linkemu_binary() -> Path:
    return REPO / "linkemu" / "linkemu"


def clamp_binary() -> Path:
    return REPO / "kernel-modules" / "fastlab-clamp"


def modules_dir() -> Path:
    """Where the loadable-module build of FAST and HSTCP is (tcp_fast.ko, tcp_hstcp.ko): the checkout's
    Kbuild output, or FASTLAB_MODULES_DIR (the stock-kernel lane builds them for the VM's kernel
    elsewhere, so the host's own build is left alone)."""
    return Path(os.environ.get("FASTLAB_MODULES_DIR", REPO / "kernel-modules" / "modules"))


def results_root() -> Path:
    return Path(os.environ.get("FASTLAB_RESULTS", REPO / "results"))


def python() -> str:
    """The interpreter of this environment (used to start helper programs in namespaces)."""
    import sys
    return sys.executable


def cgroup2_root(mounts: str | None = None) -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (pure on `mounts`, the text of /proc/self/mounts)."""
    if mounts is None:
        try:
            mounts = MOUNTS.read_text()
        except OSError:
            return None
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2] == "cgroup2":
            return Path(parts[1].replace("\\040", " "))
    return None
