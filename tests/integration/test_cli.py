"""The CLI as users meet it: doctor, topo list, and bad input that creates nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastlab.define.cc import kernel_available
from tests.conftest import EXAMPLE, fastlab, machine_leftovers

pytestmark = pytest.mark.usefixtures("as_root")


def test_doctor_reports_capabilities_and_backends() -> None:
    proc = fastlab("doctor")
    assert proc.returncode == 0, proc.stderr
    for word in ("netem", "modules", "bpf_struct_ops", "ovs_kernel", "tcp_probe", "tun", "nfqueue", "iperf3",
                 "mininet", "linkemu", "delay", "switch"):
        assert word in proc.stdout, word


def test_topo_list() -> None:
    proc = fastlab("topo", "list")
    assert proc.returncode == 0 and "dumbbell" in proc.stdout


@pytest.mark.parametrize("sets, field", [
    (["topology=nosuch"], "topology"),
    (["flows.0.cc=nosuchcc"], "flows[0].cc"),
    (["topology_args.rate_mbps=-50"], "topology_args.rate_mbps"),
    (["links.bottleneck.loss={model: bernoulli, rate: 1.5}"], "links.bottleneck.loss.rate"),
    (["flows.0.ccc=cubic"], "flows[0].ccc"),
    (["flows.0.cc_args={alpha: 20}"], "flows[0].cc_args"),
])
def test_invalid_specs_exit_2_and_create_nothing(tmp_path: Path, sets: list[str], field: str) -> None:
    before = machine_leftovers()
    out = tmp_path / "never"
    args = ["run", str(EXAMPLE), "--out", str(out)]
    for item in sets:
        args += ["--set", item]
    proc = fastlab(*args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0], proc.stderr
    assert not out.exists()
    assert machine_leftovers() == before


def test_unreadable_spec_file(tmp_path: Path) -> None:
    proc = fastlab("run", str(tmp_path / "missing.yaml"))
    assert proc.returncode == 2 and "cannot read" in proc.stderr


def test_cleanup_keeps_the_state_of_an_algorithm_it_could_not_unregister() -> None:
    """A dead run's state names a registered algorithm whose unload fails (the kernel's own bbr, which
    fastlab-cc refuses to touch): cleanup says so, and keeps the state for the next cleanup instead
    of forgetting it."""
    from fastlab.net.runstate import RunState, new_prefix

    state = RunState(new_prefix(), engine_pid=4_194_304, cc_loaded=["bbr:bpf"])  # > pid_max: dead
    state.save()
    try:
        proc = fastlab("cleanup")
        assert proc.returncode == 0, proc.stderr
        assert "kept: congestion control bbr stays registered" in proc.stdout, proc.stdout
        assert RunState.load(state.path).cc_loaded == ["bbr:bpf"]
        assert "bbr" in kernel_available()
    finally:
        state.release()
    assert machine_leftovers()["state_files"] == []


def test_cleanup_passes_over_an_algorithm_recorded_but_never_registered() -> None:
    """A run records an algorithm before registering it; killed in between, its state names one that
    is not registered: cleanup has nothing to undo and removes the state."""
    from fastlab.net.runstate import RunState, new_prefix

    state = RunState(new_prefix(), engine_pid=4_194_304, cc_loaded=["fastlabnever:module"])
    state.save()
    try:
        proc = fastlab("cleanup")
        assert proc.returncode == 0, proc.stderr
        assert "congestion control fastlabnever (was not registered)" in proc.stdout, proc.stdout
        assert not state.path.exists()
    finally:
        if state.path.exists():
            state.release()
    assert machine_leftovers()["state_files"] == []


@pytest.mark.parametrize("mount, expected", [("ro,size=8m", "not writable (read-only file system?)"),
                                             ("size=1m", "not enough free space")])
def test_results_that_cannot_be_written_fail_before_anything_is_built(tmp_path: Path, mount: str,
                                                                      expected: str) -> None:
    """--out on a read-only file system, or on one too small for the run's traces and report: one
    line, exit 1, nothing created (they used to end in a traceback, or a half-written folder)."""
    import subprocess

    target = tmp_path / "mnt"
    target.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", mount, "fastlab-test", str(target)], check=True)
    try:
        before = machine_leftovers()
        proc = fastlab("run", str(EXAMPLE), "--out", str(target / "run"))
        assert proc.returncode == 1, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0] and "Traceback" not in proc.stderr, proc.stderr
        assert not (target / "run").exists() and machine_leftovers() == before
    finally:
        subprocess.run(["umount", str(target)], check=True)
