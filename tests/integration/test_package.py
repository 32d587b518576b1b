"""fastlab as an installed package (issue 48 items 1 and 2): `pip install <checkout>` and `pip install -e
<checkout>` into fresh virtualenvs outside the checkout give `import fastlab`, `fastlab --version` and
`fastlab topo list` from any folder, with nothing found through the checkout; then a user's topology file
in a temporary folder runs for real from the installed CLI and from a Python script (root, namespaces).

Offline: the virtualenvs are made from the system python3 with its site-packages (Mininet) and see the
set-up .venv's site-packages through a .pth (the dependencies, as a wheelhouse would give them);
`pip install --no-index --no-build-isolation` then builds and installs fastlab with no network. The
checkout is copied first (its tracked and new files), so the build writes nothing into it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, machine_leftovers

SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, with Mininet in its site-packages
EXAMPLE = REPO / "examples" / "plugin-topology"


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user who never heard of this checkout: no PYTHONPATH, no fastlab variables."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith(("FASTLAB_", "VIRTUAL_ENV"))}
    return {**env, **extra}


def checkout_copy(dest: Path) -> Path:
    """The checkout's tracked and new (not ignored) files, copied: what `pip install` of a clone builds."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"],
                            capture_output=True, text=True, check=True, timeout=60).stdout.split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def fresh_venv(path: Path) -> Path:
    """A virtualenv of the system python3 (Mininet visible) that also sees the set-up .venv's packages."""
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--system-site-packages", str(path)], check=True, timeout=120)
    purelib = subprocess.run([str(path / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['purelib'])"], capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "fastlab-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return path


def pip_install(venv: Path, *args: str) -> None:
    out = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                          "--no-index", "--no-build-isolation", *args], capture_output=True, text=True,
                         env=clean_env(), cwd=venv, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with `pip install <copy of the checkout>` (not editable)."""
    if not Path(SYSTEM_PYTHON).exists():
        pytest.fail(f"{SYSTEM_PYTHON} is missing: run `make setup`")
    root = tmp_path_factory.mktemp("package")
    source = checkout_copy(root / "checkout")
    venv = fresh_venv(root / "venv")
    pip_install(venv, str(source))
    shutil.rmtree(source)  # an installed package must not need the tree it was built from
    return venv


def run_in(venv: Path, argv: list[str], cwd: Path, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=clean_env(**env), timeout=timeout)


def test_the_installed_package_works_from_any_folder(installed: Path, tmp_path: Path) -> None:
    bin_ = installed / "bin"
    out = run_in(installed, [str(bin_ / "fastlab"), "--version"], tmp_path)
    assert (out.returncode, out.stdout.strip()) == (0, "fastlab 0.1.0"), out.stderr
    out = run_in(installed, [str(bin_ / "python"), "-c", "import fastlab, fastlab.base.paths as p, fastlab.labs.kit"
                             " as k; print(fastlab.__file__, p.SOURCE_TREE, k.LABS_DIR, p.examples_dir())"], tmp_path)
    assert out.returncode == 0, out.stderr
    module, tree, labs, examples = out.stdout.split()
    assert module.startswith(str(installed)) and tree == "None"  # not the checkout's
    assert Path(labs, "01-long-fat-pipes", "lab.yaml").is_file() and Path(examples, "simple-cubic.yaml").is_file()
    out = run_in(installed, [str(bin_ / "fastlab"), "topo", "list"], tmp_path)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    names = [line.split()[0] for line in out.stdout.splitlines()[1:]]
    assert names == ["docsis", "dumbbell", "sc2002", "ucl-cern", "ucl-slac"]  # the package's entry points
    out = run_in(installed, [str(bin_ / "fastlab"), "lab", "list"], tmp_path)
    assert out.returncode == 0 and "long-fat-pipes" in out.stdout, out.stderr
    out = run_in(installed, [str(bin_ / "python"), "-c", "import webapp, controllers, topologies.sc2002;"
                             "from webapp import create_app; print('ok')"], tmp_path)
    assert out.stdout.strip() == "ok", out.stderr


def test_an_editable_install_runs_the_checkout(tmp_path: Path) -> None:
    """`pip install -e`: the same commands, the code being the checkout's (a copy of it here)."""
    source = checkout_copy(tmp_path / "checkout")
    venv = fresh_venv(tmp_path / "venv")
    pip_install(venv, "-e", str(source))
    out = run_in(venv, [str(venv / "bin" / "python"), "-c", "import fastlab, fastlab.base.paths as p;"
                        "print(fastlab.__file__, p.SOURCE_TREE)"], tmp_path)
    assert out.stdout.split() == [str(source / "fastlab" / "__init__.py"), str(source)], out.stderr
    out = run_in(venv, [str(venv / "bin" / "fastlab"), "topo", "list"], tmp_path)
    assert out.returncode == 0 and "parking-lot" not in out.stdout and "dumbbell" in out.stdout, out.stderr
    out = run_in(venv, [str(venv / "bin" / "fastlab"), "topo", "list"], tmp_path,
                 FASTLAB_TOPOLOGIES=str(EXAMPLE / "parking_lot.py"))
    assert [r.split()[-1] for r in out.stdout.splitlines() if r.startswith("parking-lot")] == ["configured"]


@pytest.mark.usefixtures("as_root")
def test_a_users_topology_file_runs_from_the_installed_cli_and_a_script(installed: Path, tmp_path: Path) -> None:
    """A real run (namespaces, the emulator, 5 s of three CUBIC flows) of a topology file in a user's own
    folder, once from `fastlab run --topology-file` and once from a Python script, both from the installed
    package: each run folder holds the file it ran (topology.py, named by spec.yaml) and every flow moved
    data. The native tools come from a configured folder (FASTLAB_NATIVE_DIR), as an installed package
    finds them."""
    user = tmp_path / "my-project"
    user.mkdir()
    shutil.copy(EXAMPLE / "parking_lot.py", user / "my_topo.py")
    spec = yaml.safe_load((EXAMPLE / "parking-lot.yaml").read_text())
    spec["topology"] = "dumbbell"  # the command line's --topology-file replaces it
    (user / "spec.yaml").write_text(yaml.safe_dump(spec))
    script = (EXAMPLE / "run.py").read_text().replace('with_name("parking_lot.py")', 'with_name("my_topo.py")')
    (user / "run.py").write_text(script)
    native = tmp_path / "native"
    native.mkdir()
    for tool in ("linkemu/linkemu", "kernel-modules/fastlab-cc", "kernel-modules/fastlab-clamp"):
        (native / Path(tool).name).symlink_to(REPO / tool)
    env = {"FASTLAB_NATIVE_DIR": str(native), "FASTLAB_RESULTS": str(tmp_path / "results")}
    before = machine_leftovers()

    cli = run_in(installed, [str(installed / "bin" / "fastlab"), "run", "spec.yaml", "--topology-file", "my_topo.py",
                             "--out", str(tmp_path / "cli-run")], user, timeout=300, **env)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    from_script = run_in(installed, [str(installed / "bin" / "python"), "run.py"], user, timeout=300, **env)
    assert from_script.returncode == 0, from_script.stdout + from_script.stderr
    script_run = Path(from_script.stdout.strip().splitlines()[-1].split("results in ")[1])
    assert script_run.parent == tmp_path / "results"

    for folder in (tmp_path / "cli-run", script_run):
        ran = yaml.safe_load((folder / "spec.yaml").read_text())
        assert ran["topology"] == {"file": "topology.py"}
        assert (folder / "topology.py").read_text() == (user / "my_topo.py").read_text()
        flows = json.loads((folder / "summary.json").read_text())["flows"]
        assert [(f["src"], f["dst"]) for f in flows] == [("h1", "h2"), ("h3", "h4"), ("h5", "h6")]
        assert all(f["throughput_mbps"] > 1.0 for f in flows), flows  # 20 Mb/s links: each flow moved data
        environment = json.loads((folder / "environment.json").read_text())
        assert environment["tools"]["fastlab"] == "0.1.0"  # the package's version: no checkout to describe
    table = from_script.stdout.splitlines()[:-1]  # the script's run.table("flows"), then its last line
    assert [line.split()[:3] for line in table[1:]] == [["f1", "h1", "h2"], ["f2", "h3", "h4"], ["f3", "h5", "h6"]]
    assert machine_leftovers() == before
