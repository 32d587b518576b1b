"""The self-test's pure parts: the ladders, each step's verdict, what is kept and how it is told."""

from __future__ import annotations

from pathlib import Path

from fastlab.base.record import Verdict
from fastlab.experiment import selftest

FAITHFUL = Verdict(faithful=True, reasons=[])


def test_ladders_rise_and_name_their_load() -> None:
    rates, flows = selftest.ladder()
    assert [s.rate_mbps for s in rates] == sorted(s.rate_mbps for s in rates) and all(s.flows == 1 for s in rates)
    assert [s.flows for s in flows] == list(selftest.FLOW_LADDER)
    assert all(s.rate_mbps == s.flows * selftest.PER_FLOW_MBPS for s in flows)
    spec = selftest.step_spec(flows[0], 10)
    assert spec["flows"][0]["count"] == flows[0].flows and spec["topology_args"]["rate_mbps"] == flows[0].rate_mbps


def test_a_step_passes_only_faithful_and_carrying_its_rate() -> None:
    assert selftest.judge(0.95, FAITHFUL)[0]
    ok, why = selftest.judge(0.5, FAITHFUL)
    assert not ok and "not carried" in why
    ok, why = selftest.judge(0.99, Verdict(faithful=False, reasons=["the machine was 99% busy"]))
    assert not ok and "99% busy" in why
    ok, why = selftest.judge(0.99, None)
    assert not ok and why == "not faithful"


def test_saved_result_is_loaded_and_described(tmp_path: Path) -> None:
    path = tmp_path / "capacity.json"
    assert selftest.load(path) is None and "not measured" in selftest.describe(None)
    result = {"measured": "2026-11-24T05:30:00+00:00", "kernel": "6.18", "max_rate_mbps": 5000, "max_flows": 4,
              "steps": []}
    selftest.save(result, path)
    loaded = selftest.load(path)
    assert loaded == result
    assert "5 Gb/s" in selftest.describe(loaded) and "4 flows" in selftest.describe(loaded)
    assert selftest.over_capacity(10000, loaded) and not selftest.over_capacity(1000, loaded)
    assert selftest.over_capacity(1000, loaded, emulated_links=6)  # 6 links x 1 Gb/s > 5 Gb/s
    assert not selftest.over_capacity(10000, None)  # never measured: nothing is marked
    assert "not even" in selftest.describe(result | {"max_rate_mbps": 0})


def test_a_damaged_file_reads_as_never_measured(tmp_path: Path) -> None:
    path = tmp_path / "capacity.json"
    for text in ("", "{", "[]", '{"kernel": "x"}', "\x00" * 10):
        path.write_text(text)
        assert selftest.load(path) is None
