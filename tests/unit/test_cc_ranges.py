"""One definition of each CC parameter range: Python reads the cores' C headers, and the C tool
(fastlab-cc, built from the same headers) refuses exactly the values the spec check refuses.

The tool validates a `set` before it touches the kernel (exit 2 = out of range); it runs here as
the unprivileged user `nobody`, so a value it accepts can change nothing (it then stops at the
missing registration or permission, exit 1 or 3)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from fastlab.base import paths
from fastlab.define import ccset
from fastlab.define.cc import CCError, Param
from fastlab.define.cc_constants import FAST_C
from fastlab.define.ccset import FAST_PARAMS, GLOBAL_ONLY, HSTCP_PARAMS, check_fast
from fastlab.run import ccload
from fastlab.run.ccload import default_registry
from tests.conftest import REPO

KERNEL_MODULES = REPO / "kernel-modules"
TOOL = paths.cc_tool()
HSTCP_DEFAULTS_CHECKED = {p.name: p.check(p.default) for p in HSTCP_PARAMS}

# Around every edge of every numeric range, and the timed period's.
CASES = [
    ("alpha", 0), ("alpha", 1), ("alpha", 10_000), ("alpha", 10_001),
    ("gamma", 0.0005), ("gamma", 0.001), ("gamma", 1.0), ("gamma", 1.5),
    ("gamma", "1/3"), ("gamma", 1 / 3), ("gamma", 0.3333), ("gamma", "1/1001"), ("gamma", "0/5"), ("gamma", "4/3"),
    ("ewma_cap", 0.25), ("ewma_cap", 1.0), ("ewma_cap", 1.5), ("ewma_cap", 2e-6), ("ewma_cap", 1 / 65536),
    ("mi_threshold_us", 0), ("mi_threshold_us", 1_000_000), ("mi_threshold_us", 1_000_001),
    ("pacing_pct", 0), ("pacing_pct", 1000), ("pacing_pct", 1001),
    ("period", "5us"), ("period", "99us"), ("period", "100us"), ("period", "60000ms"), ("period", "60001ms"),
    ("period", "rtt"), ("period", "2rtt"),
]
HSTCP_CASES = [
    ("low_window", 3), ("low_window", 4), ("low_window", 100_000), ("low_window", 100_001),
    ("high_window", 100_000_000), ("high_window", 100_000_001),
    ("high_p", 9e-13), ("high_p", 1e-12), ("high_p", 0.01), ("high_p", 0.012),
    ("high_decrease", 0.0009), ("high_decrease", 0.001), ("high_decrease", 0.5), ("high_decrease", 0.6),
    ("max_ssthresh", 0), ("max_ssthresh", 1_000_000), ("max_ssthresh", 1_000_001),
]


def python_accepts(name: str, value: object, params: tuple[Param, ...] = FAST_PARAMS) -> bool:
    param = next(p for p in params if p.name == name)
    try:
        param.check(value)
        if params is FAST_PARAMS:
            check_fast({name: value})
    except CCError:
        return False
    return True


def tool_refuses(name: str, value: object, cc: str = "fast") -> bool:
    """The value as fastlab-cc gets it from a run (`tool_value`: gamma as its ratio N/M); table keys of
    HSTCP are global (no namespace)."""
    text = tool_value(name, value) if not (name == "gamma" and isinstance(value, str)) else value
    scope = [] if name in GLOBAL_ONLY[cc] else ["--netns-ino", "1"]
    argv = [str(TOOL), "set", cc, f"{name}={text}", *scope]
    if os.geteuid() == 0:  # never as root: an accepted value must not be able to change anything
        argv = [shutil.which("setpriv") or "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    assert proc.returncode != 0, proc  # as nobody nothing can succeed
    return proc.returncode == 2 and "out of range" in proc.stderr


def tool_value(name: str, value: object) -> str:
    try:
        return ccset.tool_value(name, value)
    except CCError:  # a value Python refuses: the tool gets it as a user would type it
        return ccset.format_value(value)


@pytest.mark.parametrize("name, value", CASES)
def test_python_and_the_c_tool_agree_on_fast_ranges(name: str, value: object) -> None:
    if not TOOL.is_file():
        pytest.fail(f"{TOOL} is not built: run `make setup` once")
    assert python_accepts(name, value) == (not tool_refuses(name, value)), (name, value)


@pytest.mark.parametrize("name, value", HSTCP_CASES)
def test_python_and_the_c_tool_agree_on_hstcp_ranges(name: str, value: object) -> None:
    if not TOOL.is_file():
        pytest.fail(f"{TOOL} is not built: run `make setup` once")
    assert python_accepts(name, value, HSTCP_PARAMS) == (not tool_refuses(name, value, "hstcp")), (name, value)


def module_parameters(source: str) -> set[str]:
    """The `module_param(NAME, ...)` and `module_param_cb(NAME, ...)` names of a module's C source."""
    return set(re.findall(r"^module_param(?:_cb)?\((\w+),", source, re.MULTILINE))


@pytest.mark.parametrize("cc, params", [("fast", FAST_PARAMS), ("hstcp", HSTCP_PARAMS)])
def test_the_table_names_exactly_the_modules_parameters(cc: str, params: tuple[Param, ...]) -> None:
    """Every sysfs parameter of tcp_<cc>.ko is written by one entry of the table, and the table
    writes no name the module lacks (the spec's `gamma` once went to sysfs as `gamma`, which
    tcp_fast.ko does not have: the run failed after the network was built)."""
    source = (KERNEL_MODULES / "modules" / f"tcp_{cc}.c").read_text()
    named = [n for p in params if p.module for n in p.module.names]
    through = {p.module.through for p in params if p.module and p.module.through}  # HSTCP's `table`
    assert len(named) == len(set(named)) and set(named) | through == module_parameters(source), named
    # a parameter written through another is read-only in sysfs (0444): only its writer sets it
    for name in (n for p in params if p.module and p.module.through for n in p.module.names):
        assert re.search(rf"^module_param_cb\({name}, &\w+, &{name}, 0444\);", source, re.MULTILINE), name


def test_the_module_build_gets_its_own_parameters_and_refuses_the_table_before_the_run() -> None:
    fast, hstcp = (default_registry("module").lookup(n) for n in ("fast", "hstcp"))
    checked = fast.validate_args({"gamma": "1/3", "period": "2rtt", "ewma_cap": 0.25, "mode": "carry"})
    assert fast.build.module_values(checked) == {"gamma_num": 1, "gamma_den": 3, "period_kind": 1,
                                                 "ewma_cap_q16": 16384, "mode": 1}
    assert fast.build.module_values({"period": "20ms"}) == {"period_kind": 2, "period_us": 20_000}
    assert hstcp.build.module_values(hstcp.validate_args({"max_ssthresh": 100})) == {"max_ssthresh": 100}


def module_table_rows(text: str) -> tuple[list[int], list[tuple[int, int, int]]]:
    """tcp_hstcp.ko's `table` text: its four parameters and its rows (w, a, b_q16)."""
    head, rows = text.split()[:5], text.split()[5:]
    assert int(head[4]) == len(rows), text
    return [int(x) for x in head[:4]], [tuple(int(x) for x in row.split(",")) for row in rows]  # type: ignore[misc]


@pytest.mark.parametrize("args", [{"low_window": 10}, {"high_window": 20_000, "high_decrease": 0.2},
                                  {"low_window": 38, "high_window": 83_000, "high_p": 1e-7, "high_decrease": 0.1}])
def test_the_module_build_writes_hstcps_table_as_the_generator_makes_it(args: dict[str, object]) -> None:
    """HSTCP's table parameters go to tcp_hstcp.ko as the rows fastlab-cc generates (the module has no
    floating point): the `table` text carries the parameters in the units the module reports them
    (read-only low_window, high_window, high_p_femto, high_decrease_ppm, by the one table's mappings)
    and the same rows as the generator's JSON (b there to 4 decimals)."""
    if not TOOL.is_file():
        pytest.fail(f"{TOOL} is not built: run `make setup` once")
    hstcp = default_registry("module").lookup("hstcp")
    checked = hstcp.validate_args(args)
    values = hstcp.build.module_values(checked)
    assert set(values) == {"table"}
    head, rows = module_table_rows(str(values["table"]))
    full = {**HSTCP_DEFAULTS_CHECKED, **checked}
    expected = {}
    for name in ("low_window", "high_window", "high_p", "high_decrease"):
        mapping = next(p for p in HSTCP_PARAMS if p.name == name).module
        assert mapping is not None and mapping.through == "table"
        expected.update(mapping.values(full[name]))
    assert dict(zip(("low_window", "high_window", "high_p_femto", "high_decrease_ppm"), head, strict=True)) == expected
    generated = ccload.run_tool("table", *(f"{k}={ccset.tool_value(k, v)}" for k, v in checked.items()))
    assert [(w, a) for w, a, _b in rows] == [(r["w"], r["a"]) for r in generated["rows"]]
    assert all(abs(b / 65536 - r["b"]) <= 5e-5 for (_w, _a, b), r in zip(rows, generated["rows"], strict=True))
    assert all(0 < b <= 32768 for _w, _a, b in rows) and [w for w, _a, _b in rows] == sorted({w for w, _a, _b in rows})


def test_a_table_too_long_for_one_sysfs_write_is_refused_for_the_module_build_only() -> None:
    """high_window 300000 needs 910 rows (~14 KB): the BPF build's map takes them, the module's `table`
    (one sysfs write, at most a page) cannot: refused before anything is built, the field named."""
    if not TOOL.is_file():
        pytest.fail(f"{TOOL} is not built: run `make setup` once")
    default_registry("bpf").lookup("hstcp").validate_args({"high_window": 300_000})
    with pytest.raises(CCError, match=r"^high_window: the module build takes an HSTCP table of at most 4095 "
                                      r"bytes .* 910 rows"):
        default_registry("module").lookup("hstcp").validate_args({"high_window": 300_000})


@pytest.mark.parametrize("args, field", [({"low_window": 10, "high_p": 0.009}, "high_window"),
                                         ({"low_window": 10, "high_p": 0.012}, "high_p"),
                                         ({"high_decrease": float("nan")}, "high_decrease")])
def test_the_module_build_refuses_what_the_generator_refuses_naming_the_field(args: dict[str, object],
                                                                             field: str) -> None:
    with pytest.raises(CCError, match=rf"^{field}"):
        default_registry("module").lookup("hstcp").validate_args(args)


@pytest.mark.parametrize("impl", ["bpf", "module"])
def test_a_high_p_above_the_headers_range_is_refused_naming_it(impl: str) -> None:
    """Issue 35: {low_window: 10, high_p: 0.012} passed Python (below Low_P = 0.0144) and fastlab-cc
    refused it after the network was built (its range ends at 1e-2)."""
    with pytest.raises(CCError, match=r"^high_p=0.012 is out of range \[1e-12, 0.01\]"):
        default_registry(impl).lookup("hstcp").validate_args({"low_window": 10, "high_p": 0.012})


def test_a_table_only_the_generator_refuses_is_refused_before_the_run() -> None:
    """0.009 is in range and below Low_P, but the table would need more than 1024 rows: the BPF build asks
    fastlab-cc's generator (pure, nothing registered) during the check."""
    if not TOOL.is_file():
        pytest.fail(f"{TOOL} is not built: run `make setup` once")
    with pytest.raises(CCError, match=r"table would need more than 1024 rows"):
        default_registry("bpf").lookup("hstcp").validate_args({"low_window": 10, "high_p": 0.009})


def test_ranges_come_from_the_headers() -> None:
    fast = FAST_C  # the generated table, held equal to the headers by test_cc_constants.py
    alpha = next(p for p in FAST_PARAMS if p.name == "alpha")
    assert (alpha.minimum, alpha.maximum, alpha.default) == (fast["FAST_ALPHA_MIN"], fast["FAST_ALPHA_MAX"],
                                                              fast["FAST_DEF_ALPHA"])
    low = next(p for p in HSTCP_PARAMS if p.name == "low_window")
    assert low.default == 38 and low.minimum == 4


def test_a_too_short_period_is_refused_before_anything_is_built() -> None:
    with pytest.raises(CCError, match=r"period=5us is out of range \[100us, 60 s\]"):
        check_fast({"period": "5us"})


@pytest.mark.parametrize("name, value", [("low_window", 10), ("high_window", 83_000), ("high_p", 1e-7),
                                         ("high_p", 0.01), ("high_p", 1e-12), ("high_decrease", 0.1),
                                         ("high_decrease", 0.001)])
def test_a_table_parameter_reads_back_from_the_modules_text_as_it_was_written(name: str, value: float) -> None:
    """What `ModuleLoader.get` regenerates a table from (to put it back after a run): the module's
    report of a parameter, in its integer units, gives back the spec's value."""
    mapping = next(p for p in HSTCP_PARAMS if p.name == name).module
    assert mapping is not None and mapping.read is not None
    (text,) = (str(v) for v in mapping.values(value).values())
    assert mapping.read(text) == value


HSTCP_LITERALS = re.compile(r"\b83_?000\b|\bhigh_p\b[^\n]{0,20}\b1e-0?7\b|\blow_window\b[^\n]{0,20}\b38\b")


def test_hstcps_defaults_are_typed_only_in_the_header() -> None:
    """RFC 3649's Low_Window 38, High_Window 83000 and High_P 1e-7 come from core/hstcp_core.h (via
    ccset.HSTCP_DEFAULTS): no engine, web or lab source types them again (issue 35 found four copies)."""
    repo = REPO
    sources = [p for d in ("fastlab", "webapp", "labs", "bench", "controllers", "topologies")
               for p in (repo / d).rglob("*") if p.suffix in (".py", ".js", ".html")
               and p.name != "cc_constants.py"]  # the headers' own table, generated from them
    assert len(sources) > 50
    found = [f"{p.relative_to(repo)}: {m.group(0)}" for p in sources for m in HSTCP_LITERALS.finditer(p.read_text())]
    assert not found, found
