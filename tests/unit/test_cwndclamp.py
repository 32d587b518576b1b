"""The window clamp's pure parts: finding cgroup v2, the sender's membership check, the tool's argv."""

from __future__ import annotations

from pathlib import Path

from fastlab import paths
from fastlab.cwndclamp import attach_argv, cgroup2_root
from fastlab.flowtool import in_cgroup

HYBRID_MOUNTS = """tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
"""


def test_cgroup2_root_on_hybrid_and_unified_hosts() -> None:
    assert cgroup2_root(HYBRID_MOUNTS) == Path("/sys/fs/cgroup/unified")
    assert cgroup2_root("cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n") == Path("/sys/fs/cgroup")
    assert cgroup2_root("cgroup2 /mnt/my\\040cg cgroup2 rw 0 0\n") == Path("/mnt/my cg")
    assert cgroup2_root("cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n") is None
    assert cgroup2_root("") is None


def test_membership_reads_only_the_v2_line() -> None:
    text = "4:memory:/fastlab-flab12\n0::/fastlab-flab12\n"
    assert in_cgroup(text, "fastlab-flab12")
    assert not in_cgroup("4:memory:/fastlab-flab12\n0::/\n", "fastlab-flab12")
    assert not in_cgroup("0::/fastlab-flab12/child\n", "fastlab-flab12")


def test_attach_argv_lists_each_port_once_in_order() -> None:
    argv = attach_argv(Path("/sys/fs/cgroup/fastlab-flab12"), {5003: 38, 5001: 20})
    assert argv == [str(paths.clamp_binary()), "attach", "/sys/fs/cgroup/fastlab-flab12", "5001=20", "5003=38"]
