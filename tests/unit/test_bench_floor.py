"""The pure builders of bench/tcpfloor.py, bench/manyflows.py's tc0 mode and bench/labrows.py (issue 34)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastlab.define.schema import parse_spec
from fastlab.plan.link_commands import choose_backend
from fastlab.plan.links import ShapingError
from fastlab.plan.prepare import layout
from tests.unit.test_bench import bench_module


def test_tc0_spec_shapes_every_path_link_by_tc_without_delay() -> None:
    """manyflows --modes tc0: the row-10 path's links all go to tc (no sch_netem, linkemu built), with
    no delay left on any of them, so tc can run them here; the other modes keep their delays."""
    manyflows = bench_module("manyflows")
    plan = layout(parse_spec(manyflows.spec_for(10, 100, "tc0", 25)))
    assert set(plan.links) >= {"showfloor", "level3", "baltimore-gbe", "baltimore10-gbe"}
    for link in plan.links.values():
        assert choose_backend(link, has_netem=False, has_emulator=True)[0] == "tc"
        assert link.forward.delay_us == 0 and link.reverse.delay_us == 0
    shared = layout(parse_spec(manyflows.spec_for(10, 100, "shared", 25)))
    assert shared.links["level3"].forward.delay_us > 0


def test_tc0_links_names_only_the_flows_hosts() -> None:
    manyflows = bench_module("manyflows")
    links = manyflows.tc0_links(2)
    assert sorted(links) == ["baltimore-gbe", "baltimore2-gbe", "level3", "showfloor", "sunnyvale-gbe",
                             "sunnyvale2-gbe"]
    assert all(v == {"backend": "tc", "delay_ms": 0} for v in links.values())


def test_tcpfloor_htb_one_class_and_filter_per_flow() -> None:
    floor = bench_module("tcpfloor")
    cmds = floor.htb_commands("veth0", 3, 100)
    classes = [c for c in cmds if c[:2] == ["tc", "class"] and "1:999" not in c]
    filters = [c for c in cmds if c[:2] == ["tc", "filter"]]
    assert len(classes) == 3 and all("100mbit" in c for c in classes)
    assert [c[c.index("dport") + 1] for c in filters] == [str(floor.BASE_PORT + k) for k in range(3)]
    assert "--fq-rate" in floor.client_argv(0, "pace", 100, 5, "cubic")
    assert "--fq-rate" not in floor.client_argv(0, "htb", 100, 5, "cubic")


def test_labrows_argv_sets_scale_and_mode(tmp_path: Path) -> None:
    labrows = bench_module("labrows")
    argv = labrows.run_argv(10, 0.25, "shared", ["flows.0.cc_args.alpha=50"], tmp_path)
    assert argv[argv.index("run") + 1].endswith("labs/03-sc2002-table/specs/row-10.yaml")
    joined = " ".join(argv)
    assert "--set topology_args.scale=0.25" in joined and "--set emulator.mode=shared" in joined
    assert "--set flows.0.cc_args.alpha=50" in joined


def test_tc0_refuses_a_link_tc_cannot_delay() -> None:
    """The reason tc0 zeroes the delays: a tc link with delay needs sch_netem, which is missing here."""
    manyflows = bench_module("manyflows")
    spec = manyflows.spec_for(1, 100, "tc0", 25)
    spec["links"]["level3"] = {"backend": "tc"}
    link = layout(parse_spec(spec)).links["level3"]
    with pytest.raises(ShapingError, match="sch_netem"):
        choose_backend(link, has_netem=False, has_emulator=True)
