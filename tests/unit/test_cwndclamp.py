"""The window clamp's pure parts: finding cgroup v2, the sender's membership check, the tool's argv."""

from __future__ import annotations

from pathlib import Path

from fastlab.base.paths import cgroup2_root
from fastlab.run.cwndclamp import attach_args, rtt_rows
from fastlab.run.flowtool import in_cgroup

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


def test_attach_args_list_each_port_once_in_order() -> None:
    args = attach_args(Path("/sys/fs/cgroup/fastlab-flab12"), {5003: 38, 5001: 20})
    assert args == ["attach", "/sys/fs/cgroup/fastlab-flab12", "5001=20", "5003=38"]


def test_rtt_rows_from_a_dump() -> None:
    dump = "\n".join([
        '{"port":5001,"second":1002,"min_us":104500,"max_us":150000,"sum_us":1200000,"n":10}',
        '{"port":5001,"second":1001,"min_us":104000,"max_us":109000,"sum_us":530000,"n":5}',
        '{"port":5002,"second":1001,"min_us":1,"max_us":1,"sum_us":1,"n":1}',  # not a flow of this run
        '{"port":5001,"second":1003,"min_us":1,"max_us":1,"sum_us":0,"n":0}',  # no samples
        'not json', '{"port":"x"}', "[]", ""])
    rows = rtt_rows(dump, 1000.25, {5001: "f1"})
    assert rows == [
        {"flow": "f1", "t": 0.75, "min_rtt_ms": 104.0, "mean_rtt_ms": 106.0, "max_rtt_ms": 109.0, "samples": 5},
        {"flow": "f1", "t": 1.75, "min_rtt_ms": 104.5, "mean_rtt_ms": 120.0, "max_rtt_ms": 150.0, "samples": 10}]
