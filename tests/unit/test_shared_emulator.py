"""The shared emulator's command line and line routing (fastlab.net.shared_emulator), and the spec's
emulator.mode; the command line is checked by the real linkemu's parser (no root needed: it stops at
the first link's namespace, after every link's options were read)."""

from __future__ import annotations

import dataclasses
import subprocess

import pytest

from fastlab.base import paths
from fastlab.define.schema import LinkSpec, SpecError, parse_spec
from fastlab.define.topology import build_plan
from fastlab.net.shared_emulator import netns_path, partition, route, shared_argv
from fastlab.plan.link_commands import Devices, LinkPlanResult
from fastlab.plan.links import resolve
from tests.unit.test_shaping import planned


def plans() -> list[LinkPlanResult]:
    """Two emulated links of a dumbbell: the bottleneck with seeded loss, and an AQM link."""
    topo = build_plan("dumbbell", {"rate_mbps": 50, "rtt_ms": 40, "buffer_bdp": 1.0})
    out = []
    for link_id, override in (("bottleneck", {"loss": {"model": "bernoulli", "rate": 0.01}}),
                              ("second", {"aqm": {"model": "red"}})):
        link = resolve(topo.shaped["bottleneck"], LinkSpec.model_validate(override))
        link = dataclasses.replace(link, id=link_id)
        devs = Devices("r1", "r1-eth1", "r2", "r2-eth1", f"x-{link_id}", "x-a", "x-b")
        out.append(planned(link, devs, seed=3, stats_interval_ms=50, has_netem=False, has_emulator=True,
                           drops_log=f"/tmp/drops-{link_id}.txt"))
    return out


def test_each_link_keeps_its_own_command_line_after_its_link_and_namespace() -> None:
    ps = plans()
    argv = shared_argv(ps, {"bottleneck": "/proc/11/ns/net", "second": "/proc/12/ns/net"})
    assert argv[0] == ps[0].emulator_argv[0]
    first, second = argv.index("--link"), argv.index("--link", argv.index("--link") + 1)
    assert argv[first:first + 4] == ["--link", "bottleneck", "--netns", "/proc/11/ns/net"]
    assert argv[first + 4:second] == list(ps[0].emulator_argv[1:])
    assert argv[second:second + 4] == ["--link", "second", "--netns", "/proc/12/ns/net"]
    assert argv[second + 4:] == list(ps[1].emulator_argv[1:])
    assert netns_path(42) == "/proc/42/ns/net"


def test_linkemu_reads_every_links_options() -> None:
    """Every option of both links passes linkemu's parser: the first error is the first link's namespace,
    which is looked at only after the whole command line was read."""
    binary = paths.linkemu_binary()
    if not binary.exists():
        pytest.skip("linkemu is not built (make -C linkemu)")
    argv = shared_argv(plans(), {"bottleneck": "/nonexistent/ns-a", "second": "/nonexistent/ns-b"})
    done = subprocess.run([str(binary), *argv[1:]], capture_output=True, text=True, timeout=10, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "linkemu: link bottleneck: --netns: cannot open '/nonexistent/ns-a': No such file or directory"]


@pytest.mark.parametrize("bad", ["a b", "", "x" * 65, 'q"uote', "é"])
def test_an_id_linkemu_would_refuse_is_named(bad: str) -> None:
    plan = LinkPlanResult(bad, "emulator", "", emulator_argv=("linkemu", "--if-a", "a", "--if-b", "b"))
    with pytest.raises(ValueError, match="the shared emulator takes link ids"):
        shared_argv([plan], {bad: "/proc/1/ns/net"})
    with pytest.raises(ValueError, match="no emulated link"):
        shared_argv([], {})


def test_lines_go_to_their_links_handler_only() -> None:
    got: dict[str, list[dict]] = {"a": [], "b": []}
    on_message = route({k: got[k].append for k in got})
    for msg in ({"event": "stats", "link": "a", "t": 1}, {"event": "ready", "link": "b"},
                {"event": "exit"}, {"event": "stats", "link": "c"}, {"event": "stats", "link": ["a"]}):
        on_message(msg)
    assert got == {"a": [{"event": "stats", "link": "a", "t": 1}], "b": [{"event": "ready", "link": "b"}]}


@pytest.mark.parametrize("value", [{"mode": "both"}, {"mode": None}, {"mode": 1}, {"mode": float("nan")},
                                   {"mode": "shared", "processes": 0}, {"mode": "shared", "processes": 17},
                                   {"mode": "shared", "processes": 2.0}, {"mode": "shared", "processes": "2"},
                                   {"mode": "per_link", "processes": 2}, {"mode": "shared", "processes": 10**100},
                                   {"mode": {"shared": 1}}, {"mode": "shared", "threads": 2}, "shared", [],
                                   {"mode": "x" * 10_000}])
def test_a_bad_emulator_option_is_one_line_naming_the_field(value: object) -> None:
    base = {"name": "t", "topology": "dumbbell", "duration_s": 5, "flows": [{"src": "h1", "dst": "h2"}]}
    assert parse_spec(base).emulator.mode == "per_link"  # the default until the bench says otherwise
    assert parse_spec({**base, "emulator": {"mode": "shared"}}).emulator.mode == "shared"
    with pytest.raises(SpecError) as err:
        parse_spec({**base, "emulator": value})
    assert str(err.value).startswith("emulator") and "\n" not in str(err.value)


def test_links_spread_over_processes_heaviest_first_to_the_least_loaded() -> None:
    def link(name: str, mbps: int) -> LinkPlanResult:
        rate = {"rate_bps": mbps * 1_000_000}
        return LinkPlanResult(name, "emulator", "", resolved={"forward": rate, "reverse": {"rate_bps": None}})
    ports = [link(f"gbe{k}", 100) for k in range(1, 5)]
    level3, showfloor = link("level3", 1000), link("showfloor", 1000)
    groups = partition([*ports, showfloor, level3], 2)
    # the two shared links first, one each; then the ports alternate, each group in the plans' order
    assert [[p.link for p in g] for g in groups] == [["gbe1", "gbe3", "showfloor"], ["gbe2", "gbe4", "level3"]]
    assert [[p.link for p in g] for g in partition(ports, 1)] == [[p.link for p in ports]]
    assert len(partition(ports[:1], 3)) == 1  # never an empty process
    assert sorted(p.link for g in partition(ports, 3) for p in g) == sorted(p.link for p in ports)
