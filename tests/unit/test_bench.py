"""The benches' parsers, pure, on captured tool output."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def bench_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", REPO / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_softirq_share_on_captured_perf_script() -> None:
    """bench/emulator.py --perf: samples with a network softirq frame over all samples (captured from
    `perf record -g -p <linkemu>` at 1 Gb/s: 4 of these 12 samples ran the receiving host's stack)."""
    emulator = bench_module("emulator")
    captured = (REPO / "tests" / "fixtures" / "perf_script_linkemu.txt").read_text()
    assert emulator.softirq_share(captured) == (4 / 12, 12)
    share, samples = emulator.softirq_share("")
    assert samples == 0 and math.isnan(share)
