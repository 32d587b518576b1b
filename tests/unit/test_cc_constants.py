"""The define stage's CC constants (fastlab/define/cc_constants.py) are the cores' C headers' own: the
table is generated from them (scripts/cc_constants.py) and read without opening a file, so `define`
imports with no side effect and installs without the C sources."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from tests.conftest import REPO

GENERATOR = REPO / "scripts" / "cc_constants.py"


def generator():  # noqa: ANN201 - the script, imported as a module
    spec = importlib.util.spec_from_file_location("cc_constants_generator", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_is_the_headers() -> None:
    """The committed table is what the generator makes of today's headers (else: `make cc-constants`)."""
    from fastlab.define import cc_constants

    gen = generator()
    assert (REPO / "fastlab" / "define" / "cc_constants.py").read_text() == gen.render(REPO)
    for name, rel in gen.HEADERS.items():
        assert getattr(cc_constants, name) == gen.header_constants((REPO / rel).read_text())
    assert cc_constants.FAST_C["FAST_ALPHA_MAX"] == 10_000 and cc_constants.HSTCP_C["HSTCP_DEF_LOW_WINDOW"] == 38


def test_header_constants_reads_integer_defines_only() -> None:
    text = "#define A_MAX\t\t10000U\t/* packets */\n#define B (1U << 3)\n#define C 100000000ULL\n#define d 5\n"
    assert generator().header_constants(text) == {"A_MAX": 10000, "C": 100000000}


def test_a_changed_header_is_seen(tmp_path) -> None:  # noqa: ANN001
    """The check fails on a header whose value moved (a copy of the tree with alpha's maximum changed)."""
    gen = generator()
    for rel in gen.HEADERS.values():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text((REPO / rel).read_text())
    header = tmp_path / gen.HEADERS["FAST_C"]
    header.write_text(header.read_text().replace("FAST_ALPHA_MAX\t\t10000U", "FAST_ALPHA_MAX\t\t20000U"))
    assert '"FAST_ALPHA_MAX": 20000' in gen.render(tmp_path) != gen.render(REPO)


def test_importing_define_opens_no_header() -> None:
    """`define` (its CC tables included) imports without reading the C sources or running fastlab-cc:
    a fresh interpreter that fails every open() of a .h file and every subprocess still imports it."""
    code = ("import builtins, io, subprocess\n"
            "real = builtins.open\n"
            "def guard(file, *a, **k):\n"
            "    assert not str(file).endswith('.h'), file\n"
            "    return real(file, *a, **k)\n"
            "builtins.open = io.open = guard\n"
            "subprocess.Popen = None\n"
            "import fastlab.define.ccset, fastlab.define.topology, fastlab.define.schema\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
