"""The shaping planner (pure), the statistics parsers against captured tool output, and the tc poller."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from fastlab.base.supervised import json_objects
from fastlab.define.schema import BernoulliLoss, EveryNthLoss, GilbertElliottLoss, LinkDirection, LinkSpec, PlannedLoss
from fastlab.define.topology import build_plan
from fastlab.net import shaping
from fastlab.net.qdisc_stats import TC_H_ROOT, Qdisc, QdiscStatsError
from fastlab.net.shaping import Shaper, emulator_samples, hop_flow_samples
from fastlab.plan.link_commands import Devices, LinkPlanResult, choose_backend, link_seed, loss_arg, plan_link
from fastlab.plan.links import ShapingError, resolve

DEVS = Devices("r1", "r1-eth1", "r2", "r2-eth1", "x2", "x2-a", "x2-b")


def planned(link, devs: Devices = DEVS, *, has_netem: bool, has_emulator: bool,
            tc_aqms: frozenset[str] = frozenset(), **kw):
    """plan_link for the backend choose_backend picks on a machine with these capabilities, as the run's
    plan (fastlab.plan.prepare.prepare) decides it."""
    return plan_link(link, devs, decided=choose_backend(link, has_netem, has_emulator, tc_aqms), **kw)


def bottleneck(override: dict | None = None, **args: float):
    plan = build_plan("dumbbell", {"rate_mbps": 50, "rtt_ms": 40, "buffer_bdp": 1.0, **args})
    return resolve(plan.shaped["bottleneck"], LinkSpec.model_validate(override) if override else None)


def test_dumbbell_defaults_resolve_to_half_rtt_each_way_and_one_bdp() -> None:
    link = bottleneck()
    # 50 Mb/s x 40 ms = 250 kB = 166.7 packets of 1500 B -> 167
    for d in (link.forward, link.reverse):
        assert (d.rate_bps, d.delay_us, d.limit_pkts, d.limit_bytes, d.loss) == (50_000_000, 20_000, 167, None, None)


def test_buffer_units_resolve_against_rate_and_rtt() -> None:
    assert bottleneck({"buffer": "20ms"}).forward.limit_pkts == 84  # 50e6 * 0.02 / 12000 = 83.3
    assert bottleneck({"buffer": "2bdp"}).forward.limit_pkts == 334
    assert bottleneck({"buffer": 10}).forward.limit_pkts == 10
    fwd = bottleneck({"buffer": "64KB"}).forward
    assert (fwd.limit_pkts, fwd.limit_bytes) == (None, 64_000)


def test_override_changes_forward_and_reverse_follows_except_loss() -> None:
    link = bottleneck({"rate_mbps": 10, "loss": {"model": "bernoulli", "rate": 0.01}})
    assert link.forward.rate_bps == link.reverse.rate_bps == 10_000_000
    assert isinstance(link.forward.loss, BernoulliLoss) and link.reverse.loss is None
    link = bottleneck({"reverse": {"rate_mbps": 1, "loss": {"model": "every_nth", "n": 10}}})
    assert (link.forward.rate_bps, link.reverse.rate_bps) == (50_000_000, 1_000_000)
    assert isinstance(link.reverse.loss, EveryNthLoss)


def test_backend_choice() -> None:
    plain, lossy = bottleneck(), bottleneck({"loss": {"model": "bernoulli", "rate": 0.01}})
    assert choose_backend(plain, has_netem=False, has_emulator=True)[0] == "emulator"
    assert choose_backend(plain, has_netem=True, has_emulator=True)[0] == "tc"
    assert choose_backend(lossy, has_netem=True, has_emulator=True)[0] == "emulator"
    assert choose_backend(bottleneck(rtt_ms=0), has_netem=False, has_emulator=False)[0] == "tc"
    with pytest.raises(ShapingError, match="sch_netem"):
        choose_backend(bottleneck({"backend": "tc"}), has_netem=False, has_emulator=True)
    with pytest.raises(ShapingError, match="neither"):
        choose_backend(plain, has_netem=False, has_emulator=False)


def test_emulator_plan_carries_every_direction_parameter() -> None:
    link = bottleneck({"loss": {"model": "gilbert_elliott", "p": 0.01, "r": 0.5, "loss_bad": 0.9}})
    plan = planned(link, DEVS, seed=7, stats_interval_ms=50, has_netem=False, has_emulator=True,
                     drops_log="/tmp/d.txt")
    argv = list(plan.emulator_argv)
    opt = dict(zip(argv[1::2], argv[2::2], strict=True))
    assert plan.backend == "emulator" and plan.commands == ()
    assert (opt["--if-a"], opt["--if-b"], opt["--ab-rate-bps"], opt["--ba-delay-us"]) == ("x2-a", "x2-b",
                                                                                          "50000000", "20000")
    assert opt["--ab-limit-pkts"] == "167" and opt["--ab-loss"] == "ge:0.01:0.5:0.1:1" and opt["--ba-loss"] == "none"
    assert opt["--seed"] == str(link_seed(7, "bottleneck"))


def test_tc_plan_shapes_inside_the_link_node_only() -> None:
    plan = planned(bottleneck(), DEVS, seed=1, stats_interval_ms=50, has_netem=True, has_emulator=False,
                     drops_log="-")
    assert {c.node for c in plan.commands} == {"x2"}  # never on an end node, never on a sending host
    argv = [" ".join(c.argv) for c in plan.commands]
    queue_fwd = [a for a in argv if "dev x2-b" in a and ("htb" in a or "pfifo" in a)]
    assert any("htb rate 50000000bit ceil 50000000bit burst 6250" in a for a in queue_fwd)
    assert any("pfifo limit 167" in a for a in queue_fwd)
    assert any("stab overhead -14" in a for a in queue_fwd)
    netem = [a for a in argv if "netem" in a]
    assert netem == ["tc qdisc replace dev wire-a root netem limit 1954 delay 20000us",
                     "tc qdisc replace dev wire-b root netem limit 1954 delay 20000us"]
    assert plan.stats_devs == {"forward": ("x2", "x2-b"), "reverse": ("x2", "x2-a")}


def test_netem_wire_limit_grows_with_the_pipe() -> None:
    plan = planned(bottleneck(rate_mbps=1000, rtt_ms=180), DEVS, seed=1, stats_interval_ms=50,
                     has_netem=True, has_emulator=False, drops_log="-")
    netem = next(c.argv for c in plan.commands if "netem" in c.argv)
    assert int(netem[netem.index("limit") + 1]) >= 1e9 * 0.09 / (8 * 64)


def test_loss_arguments() -> None:
    assert loss_arg(None) == "none"
    assert loss_arg(BernoulliLoss(model="bernoulli", rate=0.01)) == "bernoulli:0.01"
    assert loss_arg(EveryNthLoss(model="every_nth", n=100)) == "every_nth:100"
    assert loss_arg(PlannedLoss(model="packets", at=[20_000, 20_001])) == "at:20000,20001"
    assert loss_arg(GilbertElliottLoss(model="gilbert_elliott", p=0.1, r=0.2)) == "ge:0.1:0.2:0:1"


def test_link_seed_is_stable_and_per_link() -> None:
    assert link_seed(1, "bottleneck") == link_seed(1, "bottleneck")
    # all three differ (a chained != would let the first equal the third)
    assert len({link_seed(1, "bottleneck"), link_seed(2, "bottleneck"), link_seed(1, "uplink")}) == 3


def test_emulator_stats_line_becomes_two_samples_in_ip_bytes() -> None:
    counters = {"rx_pkts": 10, "rx_bytes": 15140, "tx_pkts": 8, "tx_bytes": 12112, "queue_drops": 1,
                "loss_drops": 1, "backlog_pkts": 0, "backlog_bytes": 0, "delay_line_pkts": 2}
    line = json.dumps({"event": "stats", "t": 12.5, "ab": counters, "ba": counters})
    # what the supervised reader hands over: the JSON objects among the lines (a cut line is skipped)
    (msg,) = json_objects(["garbage\n", line + "\n", '{"event": "sta\n', "[1, 2]\n"])
    fwd, rev = emulator_samples("bottleneck", msg)
    assert fwd["direction"] == "forward" and rev["direction"] == "reverse"
    assert fwd["tx_bytes"] == 12112 - 8 * 14 and fwd["t"] == 12.5 and fwd["loss_drops"] == 1


def test_an_emulators_per_flow_figures_become_samples_of_their_own() -> None:
    """linkemu's `flows` (flowacct.h) per direction: one sample per flow, its key as the frames carry it; a
    direction without them, or a malformed entry, gives none."""
    flows = [{"key": "10.11.0.1:41954>10.12.0.1:5002", "frames": 120, "queue": 812.5, "queue_min": 2.4,
              "data_min": 310.0},
             {"frames": 3}, "x"]
    msg = {"event": "stats", "t": 3.25, "ab": {"flows": flows, "flows_other": 4}, "ba": {}}
    (one,) = hop_flow_samples("uplink", msg)
    assert one == {"t": 3.25, "link": "uplink", "direction": "forward", "key": "10.11.0.1:41954>10.12.0.1:5002",
                   "frames": 120, "queue_mean_us": 812.5, "queue_min_us": 2.4, "data_min_us": 310.0}
    assert hop_flow_samples("uplink", {"event": "stats", "t": 1.0, "ab": {}, "ba": {}}) == []


def test_reverse_only_link_direction_model() -> None:
    assert LinkDirection(rate_mbps=1).delay_ms is None


# --- the tc statistics poller, with the rtnetlink reader replaced ------------------------------

class FakeReader:
    """Stands in for `QdiscReader`: a link node whose HTB + FIFO sent `tx` bytes so far."""

    opened: list[FakeReader] = []
    fail_open: str | None = None
    fail_dump_after: int | None = None

    def __init__(self, name: str) -> None:
        self.name, self.dumps, self.closed = name, 0, False

    @classmethod
    def of_pid(cls, pid: int, name: str = "") -> FakeReader:
        if cls.fail_open:
            raise QdiscStatsError(cls.fail_open)
        reader = cls(name)
        cls.opened.append(reader)
        return reader

    def ifindex(self, dev: str) -> int:
        return {"x2-b": 2, "x2-a": 3}[dev]

    def dump(self) -> list[Qdisc]:
        self.dumps += 1
        if self.fail_dump_after is not None and self.dumps > self.fail_dump_after:
            raise QdiscStatsError("qdisc dump failed: the namespace is gone")
        return [q for i in (2, 3) for q in (Qdisc(i, 0x10000, TC_H_ROOT, "htb", bytes=1000 * self.dumps),
                                            Qdisc(i, 0x100000, 0x10001, "pfifo", qlen=1))]

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake_reader(monkeypatch: pytest.MonkeyPatch) -> type[FakeReader]:
    monkeypatch.setattr(shaping, "QdiscReader", FakeReader)
    FakeReader.opened, FakeReader.fail_open, FakeReader.fail_dump_after = [], None, None
    return FakeReader


def tc_plan() -> LinkPlanResult:
    return LinkPlanResult("bottleneck", "tc", "test", stats_devs={"forward": ("x2", "x2-b"), "reverse": ("x2", "x2-a")})


def fake_net() -> SimpleNamespace:
    return SimpleNamespace(node=lambda name: SimpleNamespace(pid=4242), run=None)


def test_tc_poller_samples_both_directions_from_one_reader_per_node(fake_reader: type[FakeReader]) -> None:
    samples: list[dict] = []
    shaper = Shaper(fake_net(), samples.append)
    shaper.apply(tc_plan(), 0.01)
    time.sleep(0.2)
    shaper.stop()
    assert len(fake_reader.opened) == 1 and fake_reader.opened[0].closed
    forward = [s for s in samples if s["direction"] == "forward"]
    assert 5 <= len(forward) <= 21 and len(samples) == 2 * len(forward)  # 20 ticks, fewer on a busy machine
    assert [s["tx_bytes"] for s in forward] == sorted({s["tx_bytes"] for s in forward})  # one dump per tick
    assert forward[0] | {"t": 0} == {"t": 0, "link": "bottleneck", "direction": "forward", "rx_pkts": None,
                                      "backlog_pkts": 1, "backlog_bytes": 0, "queue_drops": 0, "loss_drops": 0,
                                      "tx_bytes": forward[0]["tx_bytes"], "tx_pkts": 0}


def test_tc_poller_stops_quietly_when_the_network_goes_down(fake_reader: type[FakeReader]) -> None:
    fake_reader.fail_dump_after = 3
    samples: list[dict] = []
    shaper = Shaper(fake_net(), samples.append)
    shaper.apply(tc_plan(), 0.01)
    shaper._threads[0].join(timeout=5)
    assert not shaper._threads[0].is_alive() and fake_reader.opened[0].closed
    assert len(samples) == 2 * 2  # the check at start took one dump, then two ticks
    shaper.stop()


def test_tc_poller_start_errors_raise_one_line(fake_reader: type[FakeReader]) -> None:
    fake_reader.fail_open = "cannot open rtnetlink in x2 (/proc/4242/ns/net): FileNotFoundError"
    with pytest.raises(ShapingError) as raised:
        Shaper(fake_net(), lambda sample: None).apply(tc_plan(), 0.01)
    assert str(raised.value) == ("links.bottleneck: cannot read tc queue statistics over rtnetlink: "
                                 "cannot open rtnetlink in x2 (/proc/4242/ns/net): FileNotFoundError")
    fake_reader.fail_open, fake_reader.fail_dump_after = None, 0  # opens, but the first dump fails
    with pytest.raises(ShapingError, match="qdisc dump failed"):
        Shaper(fake_net(), lambda sample: None).apply(tc_plan(), 0.01)
    assert fake_reader.opened[-1].closed


def test_jumbo_frames_hold_the_same_bytes_in_fewer_packets() -> None:
    """spec `mtu`: a buffer given as BDP or ms is the same bytes, counted in packets of the run's MTU
    (50 Mb/s x 40 ms = 250 kB = 27.8 jumbo packets -> 28); a count of packets stays a count."""
    plan = build_plan("dumbbell", {"rate_mbps": 50, "rtt_ms": 40, "buffer_bdp": 1.0})
    jumbo = resolve(plan.shaped["bottleneck"], None, 9000)
    assert (jumbo.forward.limit_pkts, jumbo.forward.mtu_bytes, jumbo.reverse.mtu_bytes) == (28, 9000, 9000)
    assert resolve(plan.shaped["bottleneck"], LinkSpec.model_validate({"buffer": 10}), 9000).forward.limit_pkts == 10
    small = resolve(plan.shaped["bottleneck"], LinkSpec.model_validate({"buffer": "1KB"}), 9000).forward
    assert small.limit_bytes == 9000 + 14  # never below one frame
    tc = [" ".join(c.argv) for c in planned(jumbo, DEVS, seed=1, stats_interval_ms=50, has_netem=True,
                                               has_emulator=False, drops_log="-").commands]
    assert "ip link set wire-a mtu 9000" in tc and "ip link set wire-b mtu 9000" in tc
    assert any("htb rate 50000000bit ceil 50000000bit burst 18028" in a for a in tc)  # two jumbo frames
    standard = [" ".join(c.argv) for c in planned(bottleneck(), DEVS, seed=1, stats_interval_ms=50,
                                                    has_netem=True, has_emulator=False, drops_log="-").commands]
    assert not any(" mtu " in a for a in standard)


def test_fast_target_counts_alpha_in_packets_of_the_mtu() -> None:
    from fastlab.define.ccset import fast_target_ms

    assert fast_target_ms(100, 1000) == pytest.approx(1.2)  # 100 x 1500 B at 1 Gb/s
    assert fast_target_ms(100, 1000, 9000) == pytest.approx(7.2)


def test_aqm_runs_in_the_emulator_forward_only_with_the_papers_units() -> None:
    """A link's AQM: the forward direction's (the reverse never inherits it, as with loss and policies),
    handed to linkemu as its spec string (linkemu/aqm.h: times in us, thresholds in packets or bytes), in
    the emulator whatever netem can do; tc is refused in one line naming the field where the kernel lacks
    the qdisc (sch_red, sch_codel and sch_pie are not in the development kernel; test_tc_aqm.py: where
    they are)."""
    red = bottleneck({"aqm": {"model": "red", "min_th": 10, "max_th": 40, "max_p": 0.05, "ecn": True}})
    assert red.reverse.aqm is None
    assert choose_backend(red, has_netem=True, has_emulator=True) == (
        "emulator", "the link runs active queue management (RED / CoDel / PIE)")
    argv = list(planned(red, DEVS, seed=1, stats_interval_ms=50, has_netem=True, has_emulator=True,
                          drops_log="-").emulator_argv)
    assert argv[argv.index("--ab-aqm") + 1] == ("red:min_th_pkts=10,max_th_pkts=40,max_p=0.05,wq=0.002,gentle=1,"
                                                "adaptive=0,mean_pkt_bytes=500,ecn=1")
    assert "--ba-aqm" not in argv
    codel = bottleneck({"aqm": {"model": "codel"}, "reverse": {"aqm": {"model": "pie", "alpha": 0.0000015}}})
    argv = list(planned(codel, DEVS, seed=1, stats_interval_ms=50, has_netem=False, has_emulator=True,
                          drops_log="-").emulator_argv)
    assert argv[argv.index("--ab-aqm") + 1] == "codel:target_us=5000,interval_us=100000,ecn=0"
    # no exponent: linkemu reads plain decimals
    assert argv[argv.index("--ba-aqm") + 1] == ("pie:target_us=15000,tupdate_us=15000,alpha=0.0000015,beta=1.25,"
                                                "max_burst_us=150000,ecn=0")
    with pytest.raises(ShapingError, match=r"^links.bottleneck.aqm: this kernel has no sch_codel: only the emulator "
                                           r"runs it here$"):
        choose_backend(bottleneck({"aqm": {"model": "codel"}, "backend": "tc"}), has_netem=True, has_emulator=True)
    with pytest.raises(ShapingError, match="linkemu is not built"):
        choose_backend(codel, has_netem=True, has_emulator=False)


def test_aqm_counters_and_state_become_link_columns() -> None:
    """linkemu's AQM counters and state (RED's average, PIE's probability and delay) in the link samples;
    a direction without an AQM adds no columns, though linkemu reports its zero counters."""
    base = {"rx_pkts": 10, "rx_bytes": 15140, "tx_pkts": 8, "tx_bytes": 12112, "queue_drops": 0, "loss_drops": 0,
            "aqm_drops": 0, "aqm_marks": 0, "backlog_pkts": 0, "backlog_bytes": 0, "delay_line_pkts": 2}
    red = base | {"aqm_drops": 3, "aqm_marks": 1, "aqm": {"model": "red", "avg_pkts": 7.25, "count": 2, "max_p": 0.1}}
    pie = base | {"aqm_drops": 5, "aqm": {"model": "pie", "drop_prob": 0.02, "accu_prob": 0.1, "qdelay_us": 15500,
                                          "burst_us": 0}}
    fwd, rev = emulator_samples("bottleneck", {"event": "stats", "t": 1.0, "ab": red, "ba": base})
    assert (fwd["aqm_drops"], fwd["aqm_marks"], fwd["aqm_avg_queue"], fwd["aqm_drop_prob"]) == (3, 1, 7.25, None)
    assert not any(k.startswith("aqm") for k in rev)
    fwd, _ = emulator_samples("bottleneck", {"event": "stats", "t": 1.0, "ab": pie, "ba": base})
    assert (fwd["aqm_drops"], fwd["aqm_drop_prob"], fwd["aqm_qdelay_ms"], fwd["aqm_avg_queue"]) == (5, 0.02, 15.5, None)
