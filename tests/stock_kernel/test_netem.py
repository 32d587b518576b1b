"""tc + netem, the shaping every stock-kernel user gets, end to end and side by side with linkemu on
the same small experiment, both over the Open vSwitch kernel datapath (openvswitch.ko; the
development kernel has neither). README, "netem and linkemu", explains what still differs.

Idle RTT: both reproduce the configured 40 ms: their medians over 15 pings each must agree within
1 ms once linkemu's own measured lateness on those pings is taken out. The median, not the minimum:
under software emulation a ping's own processing varies by ~2 ms (one netem run's pings spread
41.5-44.0 ms), so the minimum of either is one outlier. The lateness: a user-space process released
by timers in a VM emulated in software on a busy host is late, which is the emulation's own error,
reported as such, not a difference between the two link models. It is the idle phase's lateness
(`fidelity.idle_links`, its median per direction) that is taken out: an emulator idling between
pings wakes later than one kept busy by a flow (measured here: the idle pings' p99 1.1-1.2 ms per
direction, the whole run's p50 0.25-0.30 ms). Subtracting the whole run's figure instead left up to
2.4 ms unexplained in one CI run (idle median 44.4 ms against netem's 41.5). Both medians are also
within 40 + 5 ms, linkemu's once its idle lateness is taken out as above: the guest's network stack
costs 1.5-4.3 ms of a ping here (a CI run of 2026-11-25: netem 44.3 ms; linkemu 46.2 ms with 2.1 ms
of idle lateness, 44.1 without, its verdict unfaithful).
Goodput: one CUBIC flow with a 2-BDP buffer keeps a 10 Mb/s link busy whichever emulator queues
it (within 10 %)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fastlab.capabilities import Capabilities
from fastlab.engine import run_experiment
from fastlab.spec import parse_spec
from tests.stock_kernel.conftest import dumbbell, steady_goodput_mbps

pytestmark = pytest.mark.usefixtures("ovs")


def bridges() -> set[str]:
    return set(subprocess.run(["ovs-vsctl", "list-br"], capture_output=True, text=True, check=True).stdout.split())


def test_netem_and_linkemu_agree_over_the_ovs_kernel_datapath(lane_out: Path, caps: Capabilities) -> None:
    before, figures = bridges(), {}
    for backend in ("tc", "emulator"):
        datapath: list[str] = []

        def look(sample: dict[str, Any], seen: list[str] = datapath) -> None:
            if not seen and sample.get("t", 0) >= 3:  # while the flow runs: the kernel datapath's ports
                seen.append(subprocess.run(["ovs-dpctl", "show"], capture_output=True, text=True,
                                           timeout=30, check=False).stdout)

        spec = parse_spec(dumbbell(f"side-{backend}", 8, [{"src": "h1", "dst": "h2", "cc": "cubic"}],
                                   switch="ovs", idle_pings=15, links={"bottleneck": {"backend": backend}}))
        result = run_experiment(spec, out=lane_out / f"side-{backend}", on_sample=look, caps=caps)
        env = json.loads((result.directory / "environment.json").read_text())
        assert env["backends"]["switch"]["backend"] == "ovs-kernel", env["backends"]["switch"]
        assert datapath and "system@ovs-system" in datapath[0] and "port " in datapath[0], datapath
        shaping = {s["link"]: s for s in env["shaping"]}
        assert shaping["bottleneck"]["backend"] == backend, shaping
        link = next(x for x in result.summary["links"] if x["id"] == "bottleneck")
        late = result.summary["fidelity"].get("idle_links", {}).get("bottleneck", {})
        # linkemu measured the idle pings (and the ARP before them) in both directions; tc measures nothing
        assert (backend == "tc") == (not late) and all(d["segments"] >= 15 for d in late.values()), late
        figures[backend] = {"idle_ms": result.summary["idle_rtt"][0]["median_ms"],
                            "idle_min_ms": result.summary["idle_rtt"][0]["min_ms"],
                            "late_ms": sum((d.get("late_p50_us") or 0) for d in late.values()) / 1000,
                            "faithful": result.summary["fidelity"]["faithful"],
                            "goodput": steady_goodput_mbps(result.directory, 3), "drops": link["drops"]}
    print("netem vs linkemu:", figures)
    netem, emu = figures["tc"], figures["emulator"]
    # the guest's stack allowance holds for the link models; linkemu's own lateness is reported apart
    assert 40 <= netem["idle_ms"] <= 45 and 40 <= emu["idle_ms"] - emu["late_ms"] <= 45, figures
    assert netem["late_ms"] == 0  # tc has no lateness to report
    assert abs(netem["idle_ms"] - (emu["idle_ms"] - emu["late_ms"])) <= 1.0, figures
    assert abs(netem["goodput"] - emu["goodput"]) <= 0.10 * emu["goodput"], figures
    assert bridges() == before  # the run's bridges are gone
