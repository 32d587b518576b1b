"""Topologies as plugins (issue 48 item 2): a Python file anywhere, a file an instructor configures
(FASTLAB_TOPOLOGIES), an installed package's entry point (group fastlab.topologies) -- the built-ins are
fastlab's own entry points. A bad plugin is one line naming it, never a traceback. The example in
examples/plugin-topology plans here; it runs for real in tests/integration/test_package.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fastlab.define import topology
from fastlab.define.schema import SpecError, TopologyFile, load_spec, read_spec_text
from fastlab.define.topology import TopologyError, build_plan, catalogue_with_problems, known, load_module
from fastlab.plan.prepare import layout
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "plugin-topology"
GOOD = '''
from pydantic import Field
from fastlab import Buffer, LinkSpec, PlanBuilder, Strict

NAME = "NAME_HERE"
DESCRIPTION = "one shaped wire between two sites"


class Args(Strict):
    rate_mbps: float = Field(10.0, gt=0)


def plan(args):
    b = PlanBuilder(NAME)
    b.router("r1"); b.router("r2")
    b.lan("r1", "s1", "10.1.0"); b.lan("r2", "s2", "10.2.0")
    b.host("a", "s1", "10.1.0", 1); b.host("z", "s2", "10.2.0", 1)
    link = LinkSpec(rate_mbps=args.rate_mbps, delay_ms=5.0, jitter_ms=0.0, buffer=Buffer(1.0, "bdp"))
    r1, r2 = b.wire("r1", "r2", "wire", link, 10.0, "r1 -> r2")
    b.route("r1", "10.2.0.0/24", r2); b.route("r2", "10.1.0.0/24", r1)
    return b.build(endpoints=[{"src": "a", "dst": "z", "rtt_ms": 10.0}])
'''


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def spec_text(topology: str) -> str:
    return f"name: t\ntopology: {topology}\nduration_s: 5\nflows: [{{src: a, dst: z, cc: cubic}}]\n"


def test_a_file_anywhere_is_a_topology(tmp_path: Path) -> None:
    path = write(tmp_path, "wire.py", GOOD.replace("NAME_HERE", "my-wire"))
    plan = build_plan(TopologyFile(file=str(path)), {"rate_mbps": 20})
    assert plan.name == "my-wire" and sorted(plan.host_names()) == ["a", "z"]
    assert plan.shaped["wire"].profile.rate_mbps == 20
    with pytest.raises(TopologyError, match=r"^topology_args\.rate_mbps"):
        build_plan(TopologyFile(file=str(path)), {"rate_mbps": -1})
    with pytest.raises(TopologyError, match=r"^topology_args\.ports: unknown field"):
        build_plan(TopologyFile(file=str(path)), {"ports": 2})


def test_a_spec_names_its_topology_file_relative_to_its_folder(tmp_path: Path) -> None:
    write(tmp_path, "wire.py", GOOD.replace("NAME_HERE", "my-wire"))
    (tmp_path / "spec.yaml").write_text(spec_text("{file: wire.py}"))
    spec = load_spec(str(tmp_path / "spec.yaml"))
    assert isinstance(spec.topology, TopologyFile) and spec.topology.file == str(tmp_path / "wire.py")
    lay = layout(spec)  # the plan's own checks (hosts, links) on the plugin's network
    assert lay.plan.name == "my-wire" and set(lay.links) == {"wire"}
    bad_host = read_spec_text(spec_text(f"{{file: {tmp_path / 'wire.py'}}}").replace("dst: z", "dst: h2"))
    with pytest.raises(SpecError, match=r"flows\[0\]\.dst: unknown host 'h2' in topology my-wire"):
        layout(bad_host)


@pytest.mark.parametrize("text, message", [
    ("def plan(args:\n", r"topology file .*broken\.py, line 1: "),
    ("DESCRIPTION = 'x'\ndef plan(args): pass\n", r"broken\.py: no NAME"),
    ("NAME = 'Bad Name'\nDESCRIPTION = 'x'\ndef plan(args): pass\n", r"broken\.py: no NAME, or not a topology name"),
    ("NAME = 'b'\ndef plan(args): pass\n", r"broken\.py: no DESCRIPTION"),
    ("NAME = 'b'\nDESCRIPTION = 'x'\n", r"broken\.py: no plan\(args\)"),
    ("NAME = 'b'\nDESCRIPTION = 'x'\nArgs = dict\ndef plan(args): pass\n",
     r"broken\.py: Args must be a pydantic model"),
    ("raise RuntimeError('no network here')\n", r"broken\.py: importing it raised RuntimeError: no network here"),
    ("import no_such_module_here\n", r"broken\.py: importing it raised ModuleNotFoundError"),
    ("NAME = 'b'\nDESCRIPTION = 'x'\ndef plan(args): raise KeyError('r9')\n",
     r"^topology b \(.*broken\.py\): plan\(\) raised KeyError: 'r9'"),
    ("NAME = 'b'\nDESCRIPTION = 'x'\ndef plan(args): return {}\n", r"plan\(\) returned dict, not a TopologyPlan"),
])
def test_a_bad_plugin_is_one_line_naming_its_file(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "broken.py", text)
    with pytest.raises(TopologyError, match=message) as err:
        build_plan(TopologyFile(file=str(path)), {})
    assert "\n" not in str(err.value) and "Traceback" not in str(err.value)


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match=r"^topology file .*nowhere\.py: No such file"):
        load_module(TopologyFile(file=str(tmp_path / "nowhere.py")))
    with pytest.raises(SpecError, match=r"^topology: file: 'wire\.txt' is not a Python file"):
        read_spec_text(spec_text("{file: wire.txt}"))
    with pytest.raises(SpecError, match=r"^topology: must be a topology's name or \{file"):
        read_spec_text(spec_text("[dumbbell]"))


def test_an_edited_file_is_imported_again(tmp_path: Path) -> None:
    path = write(tmp_path, "wire.py", GOOD.replace("NAME_HERE", "first"))
    assert build_plan(TopologyFile(file=str(path)), {}).name == "first"
    path.write_text(GOOD.replace("NAME_HERE", "second-version"))  # another size: another version
    assert build_plan(TopologyFile(file=str(path)), {}).name == "second-version"


def test_configured_files_are_offered_by_name_and_bad_ones_are_one_line_each(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "topos"
    folder.mkdir()
    write(folder, "wire.py", GOOD.replace("NAME_HERE", "class-wire"))
    write(folder, "taken.py", GOOD.replace("NAME_HERE", "dumbbell"))  # a built-in's name: not offered
    write(folder, "broken.py", "NAME = 'broken'\n")
    single = write(tmp_path, "single.py", GOOD.replace("NAME_HERE", "single"))
    monkeypatch.setenv(topology.CONFIG_VAR, os.pathsep.join([str(folder), str(single)]))
    assert known()[:5] == ["docsis", "dumbbell", "sc2002", "ucl-cern", "ucl-slac"]
    assert {"class-wire", "single"} <= set(known()) and "broken" not in known()
    rows, problems = catalogue_with_problems()
    assert {r["name"]: r["origin"] for r in rows}["class-wire"] == "configured"
    assert any("taken.py: topology 'dumbbell' is already entry point dumbbell" in p for p in problems)
    assert any(p.endswith("broken.py: no DESCRIPTION (one line saying what the network is)") for p in problems)
    assert build_plan("class-wire", {}).name == "class-wire"  # a spec names it like any other


def test_entry_points_of_installed_packages_are_offered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package offering a topology: its dist-info's entry_points.txt (as pip writes it) and its module,
    on sys.path; one whose module is missing is one line naming the entry point."""
    site = tmp_path / "site"
    (site / "acme_topos").mkdir(parents=True)
    (site / "acme_topos" / "__init__.py").write_text("")
    (site / "acme_topos" / "wire.py").write_text(GOOD.replace("NAME_HERE", "acme-wire"))
    info = site / "acme_topos-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-topos\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[fastlab.topologies]\nacme-wire = acme_topos.wire\n"
                                           "acme-gone = acme_topos.gone\n")
    monkeypatch.syspath_prepend(str(site))
    rows, problems = catalogue_with_problems()
    assert {r["name"]: r["origin"] for r in rows}["acme-wire"] == "package acme-topos"
    assert build_plan("acme-wire", {}).name == "acme-wire"
    assert problems == ["entry point acme-gone = acme_topos.gone (package acme-topos): importing it raised "
                        "ModuleNotFoundError: No module named 'acme_topos.gone'"]


def test_a_server_imports_no_file_a_spec_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """only_catalogued (what `python -m webapp` calls): a spec's file is refused before it is opened; the
    same file configured by the instructor is offered by name."""
    path = write(tmp_path, "wire.py", GOOD.replace("NAME_HERE", "served-wire") + "\nopen('/dev/null')\n")
    monkeypatch.setattr(topology, "_FILES_REFUSED", None)
    topology.only_catalogued("the web app imports no topology file a spec names")
    with pytest.raises(TopologyError, match=r"^topology\.file: the web app imports no topology file"):
        build_plan(TopologyFile(file=str(path)), {})
    with pytest.raises(SpecError, match=r"^topology\.file: the web app"):
        layout(read_spec_text(spec_text(f"{{file: {path}}}")))
    monkeypatch.setenv(topology.CONFIG_VAR, str(path))
    assert build_plan("served-wire", {}).name == "served-wire"


def test_the_example_plans_and_its_spec_checks() -> None:
    spec = load_spec(str(EXAMPLE / "parking-lot.yaml"))
    lay = layout(spec)
    assert lay.plan.name == "parking-lot" and set(lay.links) == {"left", "right"}
    rtts = {(f.src, f.dst): lay.paths[f.id].figures.rtt_ms for f in lay.flows}
    assert rtts == {("h1", "h2"): 20.0, ("h3", "h4"): 10.0, ("h5", "h6"): 10.0}  # the long flow: both hops
    crossing = {(f.src, f.dst): lay.paths[f.id].figures.shaped_links for f in lay.flows}
    assert crossing[("h1", "h2")] == ["left", "right"] and crossing[("h3", "h4")] == ["left"]
    assert len((EXAMPLE / "run.py").read_text().splitlines()) <= 15


def test_the_cli_lists_runs_and_shows_a_topology_file(tmp_path: Path) -> None:
    """`fastlab topo list` (a bad configured plugin: one line on stderr, the rest listed), `topo show FILE`,
    `run --topology-file --check` (a file relative to the working folder), as a user would type them."""
    write(tmp_path, "broken.py", "def plan(:\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), topology.CONFIG_VAR: str(tmp_path / "broken.py")}
    cli = [sys.executable, "-m", "fastlab"]
    out = subprocess.run([*cli, "topo", "list"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert out.returncode == 0 and "dumbbell" in out.stdout and "origin" in out.stdout
    assert out.stderr.strip().splitlines() == [f"fastlab: topology file {tmp_path / 'broken.py'}, line 1: "
                                               "invalid syntax"]
    out = subprocess.run([*cli, "topo", "show", str(EXAMPLE / "parking_lot.py")], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=60)
    assert out.returncode == 0 and "parking-lot" in out.stdout and "h1 -> h2" in out.stdout, out.stderr
    write(tmp_path, "wire.py", GOOD.replace("NAME_HERE", "cli-wire"))
    (tmp_path / "spec.yaml").write_text(spec_text("dumbbell"))
    out = subprocess.run([*cli, "run", "spec.yaml", "--topology-file", "wire.py", "--check"], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=60)
    assert (out.returncode, out.stdout.strip()) == (0, "spec.yaml: valid"), out.stderr
    out = subprocess.run([*cli, "run", "spec.yaml", "--topology-file", "broken.py", "--check"], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=60)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "broken.py, line 1" in out.stderr
