"""One definition of each CC parameter range: Python reads the cores' C headers, and the C tool
(fastlab-cc, built from the same headers) refuses exactly the values the spec check refuses.

The tool validates a `set` before it touches the kernel (exit 2 = out of range); it runs here as
the unprivileged user `nobody`, so a value it accepts can change nothing (it then stops at the
missing registration or permission, exit 1 or 3)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from fastlab.cc import CCError
from fastlab.ccset import FAST_PARAMS, HSTCP_PARAMS, KERNEL_MODULES, check_fast, header_constants

TOOL = KERNEL_MODULES / "fastlab-cc"

# Around every edge of every numeric range, and the timed period's.
CASES = [
    ("alpha", 0), ("alpha", 1), ("alpha", 10_000), ("alpha", 10_001),
    ("gamma", 0.0005), ("gamma", 0.001), ("gamma", 1.0), ("gamma", 1.5),
    ("mi_threshold_us", 0), ("mi_threshold_us", 1_000_000), ("mi_threshold_us", 1_000_001),
    ("pacing_pct", 0), ("pacing_pct", 1000), ("pacing_pct", 1001),
    ("period", "5us"), ("period", "99us"), ("period", "100us"), ("period", "60000ms"), ("period", "60001ms"),
    ("period", "rtt"), ("period", "2rtt"),
]


def python_accepts(name: str, value: object) -> bool:
    param = next(p for p in FAST_PARAMS if p.name == name)
    try:
        param.check(value)
        check_fast({name: value})
    except CCError:
        return False
    return True


def tool_refuses(name: str, value: object) -> bool:
    argv = [str(TOOL), "set", "fast", f"{name}={value}", "--netns-ino", "1"]
    if os.geteuid() == 0:  # never as root: an accepted value must not be able to change anything
        argv = [shutil.which("setpriv") or "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    assert proc.returncode != 0, proc  # as nobody nothing can succeed
    return proc.returncode == 2 and "out of range" in proc.stderr


@pytest.mark.parametrize("name, value", CASES)
def test_python_and_the_c_tool_agree_on_fast_ranges(name: str, value: object) -> None:
    if not TOOL.is_file():
        pytest.fail(f"{TOOL} is not built: run `make setup` once")
    assert python_accepts(name, value) == (not tool_refuses(name, value)), (name, value)


def test_ranges_come_from_the_headers() -> None:
    fast = header_constants((KERNEL_MODULES / "core" / "fast_core.h").read_text())
    alpha = next(p for p in FAST_PARAMS if p.name == "alpha")
    assert (alpha.minimum, alpha.maximum, alpha.default) == (fast["FAST_ALPHA_MIN"], fast["FAST_ALPHA_MAX"],
                                                              fast["FAST_DEF_ALPHA"])
    low = next(p for p in HSTCP_PARAMS if p.name == "low_window")
    assert low.default == 38 and low.minimum == 4


def test_header_constants_reads_integer_defines_only() -> None:
    text = "#define A_MAX\t\t10000U\t/* packets */\n#define B (1U << 3)\n#define C 100000000ULL\n#define d 5\n"
    assert header_constants(text) == {"A_MAX": 10000, "C": 100000000}


def test_a_too_short_period_is_refused_before_anything_is_built() -> None:
    with pytest.raises(CCError, match=r"period=5us is out of range \[100us, 60 s\]"):
        check_fast({"period": "5us"})
