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


def test_proc_cpu_ticks_on_captured_stat_lines() -> None:
    """bench/emulator.py's receive-thread CPU: utime + stime (fields 14 and 15 of proc(5)); a comm with
    spaces and parentheses must not shift the fields (captured from /proc/14/stat, ksoftirqd/0)."""
    emulator = bench_module("emulator")
    line = ("14 (ksoftirqd/0) S 2 0 0 0 -1 69238848 0 0 0 0 812 1093 0 0 20 0 1 0 11 0 0 "
            "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0")
    assert emulator.proc_cpu_ticks(line) == 812 + 1093
    odd = line.replace("(ksoftirqd/0)", "(napi/a) b) (c-7)")
    assert emulator.proc_cpu_ticks(odd) == 812 + 1093
