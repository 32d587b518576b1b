"""What a run records of the machine it ran on (environment.json): the versions of the tools it used, the
host's sysctls that shape TCP and bridged frames, and the hashes of the BPF objects its own algorithms were
loaded from. Read once per process where they cannot change under a running engine."""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from fastlab.base import paths

log = logging.getLogger(__name__)

ROOT_SYSCTLS = ("net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
                "net.ipv4.tcp_allowed_congestion_control", "net.ipv4.tcp_available_congestion_control",
                "net.core.default_qdisc",
                # bridged frames pass the host's netfilter hooks when these are 1 (cost: bench/brnf.py)
                "net.bridge.bridge-nf-call-iptables", "net.bridge.bridge-nf-call-ip6tables",
                "net.bridge.bridge-nf-call-arptables", "net.netfilter.nf_conntrack_count")


def _first_line(argv: list[str]) -> str | None:
    """First line a version command prints, or None when it fails or takes over 10 s (a slow file
    system: `git describe --dirty` stats every file, which over a VM's 9p root takes longer)."""
    if not shutil.which(argv[0]):
        return None
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except subprocess.TimeoutExpired:
        log.warning("%s took over 10 s: its version is not recorded", argv[0])
        return None
    if out.returncode != 0 and argv[0] == "git":
        return None
    return ((out.stdout or out.stderr).strip().splitlines() or [""])[0]


@functools.cache
def tool_versions() -> dict[str, str]:
    """Versions of what a run uses, once per process: they cannot change under a running engine
    (whose own code is as it was imported), and `git describe --dirty` stats every file of the
    checkout, which takes seconds on a slow file system. fastlab's own: the checkout's `git describe`
    when it runs from one, else the installed package's version."""
    import fastlab

    versions = {"python": sys.version.split()[0], "fastlab": fastlab.__version__}
    given = os.environ.get("FASTLAB_GIT_DESCRIBE", "").strip()[:100]  # the lane's host's: git takes >10 s over 9p
    commands = {"tc": ["tc", "-V"], **{tool: [tool, "--version"] for tool in ("iperf3", "ovs-vsctl", "ethtool")}}
    if given:
        versions["fastlab"] = given
    elif paths.SOURCE_TREE is not None:
        commands["fastlab"] = ["git", "-C", str(paths.SOURCE_TREE), "describe", "--always", "--dirty"]
    for name, argv in commands.items():
        line = _first_line(argv)
        if line is not None:
            versions[name] = line
    try:
        from mininet.net import VERSION
        versions["mininet"] = VERSION
    except ImportError:
        pass
    import pandas
    import plotly
    versions["pandas"], versions["plotly"] = pandas.__version__, plotly.__version__
    return versions


def cc_build_hashes(ccs: list[Any]) -> dict[str, str]:
    """SHA-256 of the BPF objects the run's own algorithms were loaded from."""
    hashes = {}
    for cc in ccs:
        obj = paths.cc_bpf_object(cc.name)
        if cc.build.impl == "bpf" and obj.exists():
            hashes[obj.name] = hashlib.sha256(obj.read_bytes()).hexdigest()
    return hashes


def read_sysctls() -> dict[str, str]:
    values = {}
    for key in ROOT_SYSCTLS:
        path = Path("/proc/sys") / key.replace(".", "/")
        if path.exists():
            values[key] = path.read_text().strip()
    return values
