"""Where things live: the package's resources, the native tools, run state and results.

fastlab runs from an installed package (`pip install <checkout>`), an editable install or a checkout
on PYTHONPATH; nothing here assumes one of them. Each resource is found in this order:

- a configured folder (an environment variable, named below), when it is set;
- the source tree the package was imported from, when it was imported from one (`SOURCE_TREE`: a
  checkout, an editable install): its native builds and its top-level folders as docs/design.md §2 lays out;
- the installed package's own resources (`importlib.resources`): the labs and examples a wheel carries
  under `fastlab/_data/`, the native tools where `make setup` installs them (`NATIVE_DEFAULT`).

| resource | variable | source tree | installed |
|---|---|---|---|
| linkemu, fastlab-cc, fastlab-clamp | FASTLAB_NATIVE_DIR | linkemu/, kernel-modules/ | NATIVE_DEFAULT |
| tcp_fast.ko, tcp_hstcp.ko | FASTLAB_MODULES_DIR | kernel-modules/modules/ | NATIVE_DEFAULT/modules |
| the guided labs | FASTLAB_LABS_DIR | labs/ | fastlab/_data/labs |
| the example specs | - | examples/ | fastlab/_data/examples |
| results | FASTLAB_RESULTS | results/ | $XDG_DATA_HOME/fastlab/results |
| run state | FASTLAB_STATE_DIR | /run/fastlab | /run/fastlab |
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # the fastlab package's folder


def _source_tree(package: Path) -> Path | None:
    """The checkout `package` sits in (its pyproject.toml names the fastlab project), else None."""
    tree = package.parent
    try:
        text = (tree / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return tree if 'name = "fastlab"' in text and (tree / "kernel-modules").is_dir() else None


SOURCE_TREE = _source_tree(PACKAGE)
MOUNTS = Path("/proc/self/mounts")
STATE_DIR = Path(os.environ.get("FASTLAB_STATE_DIR", "/run/fastlab"))
# Where `make setup` installs the native tools (scripts/setup.sh, FASTLAB_PREFIX=/usr/local): found there
# by an installed package that is not a checkout's.
NATIVE_DEFAULT = Path(os.environ.get("FASTLAB_PREFIX", "/usr/local")) / "lib" / "fastlab"
# Native tools as the source tree builds them (relative to it) and as a native folder holds them (flat).
_TREE_NATIVE = {"linkemu": "linkemu/linkemu", "fastlab-cc": "kernel-modules/fastlab-cc",
                "fastlab-clamp": "kernel-modules/fastlab-clamp", "modules": "kernel-modules/modules"}


def package_parent() -> Path:
    """The folder that holds the fastlab package (a checkout or site-packages): the working folder and
    path of the helper programs fastlab starts as `python -m fastlab.x` (flow tools run as `python -S`,
    without site-packages, and find the package there)."""
    return PACKAGE.parent


def native(name: str) -> Path:
    """A native tool (linkemu, fastlab-cc, fastlab-clamp) or the modules folder: FASTLAB_NATIVE_DIR/name,
    else the source tree's build, else NATIVE_DEFAULT/name. The path may not exist (not built)."""
    configured = os.environ.get("FASTLAB_NATIVE_DIR")
    if configured:
        return Path(configured) / name
    if SOURCE_TREE is not None:
        return SOURCE_TREE / _TREE_NATIVE[name]
    return NATIVE_DEFAULT / name


def linkemu_binary() -> Path:
    return native("linkemu")


def clamp_binary() -> Path:
    return native("fastlab-clamp")


def cc_tool() -> Path:
    """fastlab-cc: registers FAST and HSTCP as BPF struct_ops (their objects are built into it), sets
    their parameters, streams their events and generates HSTCP's table."""
    return native("fastlab-cc")


def cc_bpf_object(name: str) -> Path:
    """The BPF object fastlab-cc embeds for algorithm `name`, where the source tree keeps it; elsewhere
    the tool itself (its hash then stands for the objects it carries)."""
    if SOURCE_TREE is not None and not os.environ.get("FASTLAB_NATIVE_DIR"):
        return SOURCE_TREE / "kernel-modules" / "build" / f"{name}.bpf.o"
    return cc_tool()


def modules_dir() -> Path:
    """Where the loadable-module build of FAST and HSTCP is (tcp_fast.ko, tcp_hstcp.ko): FASTLAB_MODULES_DIR
    (the stock-kernel lane builds them for the VM's kernel elsewhere, so the host's own build is left
    alone), else the native folder's `modules`."""
    configured = os.environ.get("FASTLAB_MODULES_DIR")
    return Path(configured) if configured else native("modules")


def data_dir(name: str) -> Path:
    """A top-level data folder of the project ("labs", "examples"): the source tree's, else the one the
    installed package carries (fastlab/_data/<name>, mapped there when the wheel is built)."""
    if SOURCE_TREE is not None:
        return SOURCE_TREE / name
    from importlib import resources  # here: a flow tool (python -S) imports this module and never needs it

    return Path(str(resources.files("fastlab") / "_data" / name))


def labs_dir() -> Path:
    """The guided labs: FASTLAB_LABS_DIR (an instructor's own folder of labs), else the project's."""
    configured = os.environ.get("FASTLAB_LABS_DIR")
    return Path(configured) if configured else data_dir("labs")


def examples_dir() -> Path:
    return data_dir("examples")


def results_root() -> Path:
    """FASTLAB_RESULTS, else the source tree's results/, else $XDG_DATA_HOME/fastlab/results."""
    configured = os.environ.get("FASTLAB_RESULTS")
    if configured:
        return Path(configured)
    if SOURCE_TREE is not None:
        return SOURCE_TREE / "results"
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "fastlab" / "results"


def python() -> str:
    """The interpreter of this environment (used to start helper programs in namespaces)."""
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
