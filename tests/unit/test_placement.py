"""CPU placement of emulators (fastlab.net.placement): the pure choices and the refusals; the pinning
itself runs in tests/integration (test_fullscale: environment.json's `colocated`)."""

from __future__ import annotations

from pathlib import Path

from fastlab.net import placement
from fastlab.net.runstate import TrackedPid


def test_emulators_take_cpus_from_the_last_down_in_turn() -> None:
    assert [placement.pick_cpu({0, 1}, n) for n in range(4)] == [1, 0, 1, 0]
    assert placement.pick_cpu({3}, 5) == 3


def test_no_threads_or_a_fast_link_pins_nothing() -> None:
    thread = [TrackedPid(2**22 + 5, 1, "napi eth1")]  # a pid no process has: nothing may be touched
    assert placement.colocate("x", 2**22 + 6, [], 10**9, 0)["cpu"] is None
    fast = placement.colocate("x", 2**22 + 6, thread, placement.COLOCATE_MAX_BPS + 1, 0)
    assert fast["cpu"] is None and "faster than 2 Gb/s" in fast["why"]
    assert placement.colocate("x", 2**22 + 6, thread, 0, 0)["cpu"] is None  # unlimited rate


def test_napi_threads_are_read_by_name(tmp_path: Path) -> None:
    for pid, comm in ((10, "napi/eth1-8193"), (11, "ksoftirqd/0"), (12, "napi/s1-eth2-81")):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "comm").write_text(comm + "\n")
    (tmp_path / "13").mkdir()  # gone while read: no comm
    (tmp_path / "self").mkdir()
    assert placement.napi_threads(tmp_path) == {10: "napi/eth1-8193", 12: "napi/s1-eth2-81"}


def test_runs_start_their_turn_over_the_cpus_at_their_prefix() -> None:
    """Runs going at once begin on different CPUs in turn (their prefixes' letters), not all on the last."""
    starts = {placement.pick_cpu({0, 1}, placement.run_offset(p)) for p in ("fl0000", "fl0001")}
    assert starts == {0, 1}
    assert placement.run_offset("fl000a") == 10 and placement.run_offset("fl") == 0
