"""Kernel AQM through tc (pure): the RED / CoDel / PIE command builders, the backend choice where the
kernel has sch_red / sch_codel / sch_pie, and what each refuses, naming the field.

The RED weight is checked against tc's own rule (iproute2 tc/tc_red.c, tc_red_eval_ewma, replicated in
`tc_aqm.red_ewma_wlog`) and against figures of `tc -s -d qdisc show` in the stock-kernel VM (iproute2
6.1, Linux 6.1), which printed `ewma 9` for `min 15000 avpkt 1500 burst 72` and `ewma 2` for
`min 7500 avpkt 1000 burst 9`."""

from __future__ import annotations

import math

import pytest

from fastlab.define.schema import CodelAqm, LinkSpec, PieAqm, RedAqm
from fastlab.define.topology import build_plan
from fastlab.plan.capabilities import Capabilities, Probe
from fastlab.plan.link_commands import Devices, choose_backend
from fastlab.plan.links import Direction, ShapingError, resolve
from fastlab.plan.tc_aqm import RED_MAX_P_TC, red_burst_for_wlog, red_ewma_wlog, tc_aqm, tc_codel, tc_pie, tc_red
from tests.unit.test_shaping import planned

DEVS = Devices("r1", "r1-eth1", "r2", "r2-eth1", "x2", "x2-a", "x2-b")
ALL = frozenset({"red", "codel", "pie"})


def bottleneck(override: dict | None = None, **args: float):
    plan = build_plan("dumbbell", {"rate_mbps": 10, "rtt_ms": 40, "buffer_bdp": 2.0, **args})
    return resolve(plan.shaped["bottleneck"], LinkSpec.model_validate(override) if override else None)


def red(**kw: object) -> RedAqm:
    return RedAqm.model_validate({"model": "red", "gentle": False, **kw})


def direction(aqm: object, limit_pkts: int | None = 66, limit_bytes: int | None = None,
              rate_bps: int = 10_000_000) -> Direction:
    return Direction(rate_bps, 20_000, 0, limit_pkts, limit_bytes, None, aqm=aqm)  # type: ignore[arg-type]


def test_red_in_packets_becomes_bytes_of_full_packets_and_wq_a_power_of_two() -> None:
    """The lane's RED: thresholds 10/30 packets of 1500 IP bytes, buffer 66 packets, wq 2^-9 exactly."""
    got = tc_red(red(min_th=10, max_th=30, max_p=0.1, wq=2**-9, mean_pkt_bytes=1500), direction(None), "links.b.aqm")
    assert got.argv == ("red", "limit", "99000", "min", "15000", "max", "45000", "avpkt", "1500", "burst", "72",
                        "probability", "0.1", "bandwidth", "10000000bit")
    assert got.effective["wq"] == 2**-9 and got.effective["wlog"] == 9
    assert (got.effective["min_bytes"], got.effective["max_bytes"], got.effective["limit_bytes"]) == \
        (15000, 45000, 99000)
    # the burst is the first that makes tc choose Wlog 9: one packet less gives 8
    assert red_ewma_wlog(15000, 72, 1500) == 9 and red_ewma_wlog(15000, 71, 1500) == 8


def test_red_wq_rounds_to_the_nearest_power_of_two_and_says_so() -> None:
    for wq, wlog in ((0.002, 9), (0.25, 2), (0.5, 1), (0.0015, 9), (0.0013, 10), (1e-4, 13)):
        got = tc_red(red(min_th=20, max_th=60, wq=wq, mean_pkt_bytes=40), direction(None, limit_pkts=5000),
                     "links.b.aqm")
        assert got.effective["wlog"] == wlog and got.effective["wq"] == 2.0**-wlog, (wq, got.effective)
        assert abs(math.log2(got.effective["wq"] / wq)) <= 0.5  # the nearest in log scale
        burst = got.effective["burst_pkts"]
        assert red_ewma_wlog(got.effective["min_bytes"], burst, 40) == wlog  # tc's own rule chooses it
    # the heaviest weight tc can give is 1/2
    assert tc_red(red(min_th=20, max_th=60, wq=1.0, mean_pkt_bytes=40), direction(None), "w").effective["wq"] == 0.5


def test_red_burst_search_finds_every_weight_tc_can_express() -> None:
    for qmin, avpkt in ((15000, 1500), (7500, 1000), (3000, 1500), (1_000_000, 40)):
        for wlog in range(1, 17):
            burst = red_burst_for_wlog(qmin, avpkt, wlog)
            assert burst and red_ewma_wlog(qmin, burst, avpkt) == wlog, (qmin, avpkt, wlog)
            if burst > math.ceil(qmin / avpkt):  # the smallest: one less gives a lighter weight or none
                assert red_ewma_wlog(qmin, burst - 1, avpkt) < wlog
    # with min_th barely above avpkt, tc's weight jumps as burst grows (bursts 2, 3, 4: 2^-4, 2^-6, 2^-7):
    # the heavy weights and 2^-5 are out of its reach, and refused
    assert [red_burst_for_wlog(1600, 1500, w) for w in range(1, 8)] == [0, 0, 0, 2, 0, 3, 4]
    with pytest.raises(ShapingError, match=r"^w.wq: tc cannot derive a weight of 2\^-2 from any burst"):
        tc_red(red(min_th=1600, max_th=4800, mode="bytes", wq=0.25, mean_pkt_bytes=1500), direction(None), "w")


def test_red_options_ecn_adaptive_bytes_and_max_p_one() -> None:
    got = tc_red(red(min_th=30000, max_th=90000, mode="bytes", max_p=1, ecn=True, adaptive=True, wq=2**-4),
                 direction(None, limit_pkts=None, limit_bytes=200_000, rate_bps=100_000_000_000), "links.b.aqm")
    argv = got.argv
    assert argv[argv.index("min") + 1] == "30000" and argv[argv.index("limit") + 1] == "200000"
    # forced marks are drops in linkemu (ns-2): harddrop; adaptive is the kernel's own ARED
    assert argv[-3:] == ("adaptive", "ecn", "harddrop")
    # 1 would wrap to 0 in tc's u32: the largest exact probability instead
    assert argv[argv.index("probability") + 1] == "0.9999999998" and got.effective["max_p"] == RED_MAX_P_TC
    # tc keeps the bandwidth (the idle decay's packet time) as u32 bytes/s
    assert argv[argv.index("bandwidth") + 1] == f"{8 * (2**32 - 1)}bit"


@pytest.mark.parametrize(("aqm", "field", "why"), [
    ({"gentle": True}, "links.b.aqm.gentle", "no gentle mode"),
    ({"min_th": 1, "max_th": 3, "mean_pkt_bytes": 1500}, "links.b.aqm.min_th", "above mean_pkt_bytes"),
    ({"min_th": 100_000, "max_th": 300_000, "wq": 1e-6}, "links.b.aqm.wq", "at least 2"),
])
def test_red_refuses_what_sch_red_cannot_express(aqm: dict, field: str, why: str) -> None:
    with pytest.raises(ShapingError, match=rf"^{field}: .*{why}"):
        tc_red(red(**aqm), direction(None, limit_pkts=100_000), "links.b.aqm")


def test_codel_and_pie_map_times_gains_and_limits() -> None:
    codel = tc_codel(CodelAqm(model="codel", target_ms=5, interval_ms=100, ecn=True),
                     direction(None, limit_pkts=None, limit_bytes=15_001))
    # a byte buffer as packets of the MTU, rounded up
    assert codel.argv == ("codel", "limit", "11", "target", "5000us", "interval", "100000us", "ecn")
    pie = tc_pie(PieAqm(model="pie", target_ms=15, tupdate_ms=15, alpha=0.125, beta=1.25), direction(None), "w")
    assert pie.argv == ("pie", "limit", "66", "target", "15000us", "tupdate", "15000us", "alpha", "2", "beta", "20",
                        "noecn")
    # gains in steps of 1/16 Hz: 0.13 is the nearest step to 0.125 (2 steps); the effective one is recorded
    pie = tc_pie(PieAqm(model="pie", alpha=0.13, beta=2), direction(None), "w")
    assert (pie.effective["alpha"], pie.effective["beta"]) == (0.125, 2.0)


@pytest.mark.parametrize(("aqm", "field"), [
    ({"alpha": 2.5}, "w.alpha"), ({"beta": 0.01}, "w.beta"), ({"max_burst_ms": 100}, "w.max_burst_ms")])
def test_pie_refuses_gains_and_bursts_the_kernel_cannot_take(aqm: dict, field: str) -> None:
    with pytest.raises(ShapingError, match=rf"^{field}: the kernel's sch_pie"):
        tc_pie(PieAqm.model_validate({"model": "pie", **aqm}), direction(None), "w")


def test_tc_runs_the_kernels_aqm_under_htb_in_place_of_the_fifo() -> None:
    link = bottleneck({"backend": "tc", "aqm": {"model": "red", "min_th": 10, "max_th": 30, "wq": 0.002,
                                                "gentle": False, "mean_pkt_bytes": 1500},
                       "reverse": {"aqm": {"model": "codel"}}})
    backend, why = choose_backend(link, has_netem=True, has_emulator=True, tc_aqms=ALL)
    assert (backend, why) == ("tc", "the spec asks for tc; the kernel's sch_codel, sch_red runs the AQM")
    plan = planned(link, DEVS, seed=1, stats_interval_ms=50, has_netem=True, has_emulator=True, drops_log="-",
                     tc_aqms=ALL)
    children = [c.argv for c in plan.commands if "parent" in c.argv and "1:1" in c.argv and "qdisc" in c.argv]
    assert [(a[4], a[9]) for a in children] == [("x2-b", "red"), ("x2-a", "codel")]
    assert not any(a[9] in ("pfifo", "bfifo") for a in children)
    # the weight the kernel got, in environment.json with the link's plan
    assert plan.resolved["forward"]["tc_aqm"]["wq"] == 2**-9 and plan.resolved["forward"]["aqm"]["wq"] == 0.002
    assert plan.resolved["reverse"]["tc_aqm"]["qdisc"] == "codel"


def test_backend_choice_with_kernel_aqm() -> None:
    red_link = {"aqm": {"model": "red", "gentle": False, "min_th": 10, "max_th": 30}}
    auto = bottleneck(red_link)
    # auto keeps the emulator where it is built: the papers' models, seeded
    assert choose_backend(auto, True, True, ALL)[0] == "emulator"
    # without linkemu, the kernel's qdisc (netem delays the link)
    assert choose_backend(auto, True, False, ALL) == (
        "tc", "linkemu is not built: the kernel's sch_red runs the AQM "
              "(sch_netem present: kernel shaping (HTB + netem))")
    with pytest.raises(ShapingError, match=r"^links.bottleneck.aqm: this kernel has no sch_red: only the emulator "
                                           r"runs it here, and linkemu is not built"):
        choose_backend(auto, True, False, frozenset({"codel"}))
    with pytest.raises(ShapingError, match=r"^links.bottleneck.reverse.aqm: this kernel has no sch_pie"):
        choose_backend(bottleneck({"backend": "tc", "reverse": {"aqm": {"model": "pie"}}}), True, True,
                       frozenset({"red"}))
    with pytest.raises(ShapingError, match=r"^links.bottleneck.backend: tc cannot delay this link: sch_netem"):
        choose_backend(bottleneck({"backend": "tc", **red_link}), False, True, ALL)
    with pytest.raises(ShapingError, match=r"^links.bottleneck.aqm.gentle: Linux's sch_red has no gentle mode"):
        choose_backend(bottleneck({"backend": "tc", "aqm": {"model": "red"}}), True, True, ALL)
    with pytest.raises(ShapingError, match=r"^links.bottleneck.backend: tc cannot run a link-layer policy"):
        choose_backend(bottleneck({"backend": "tc", **red_link,
                                   "policy": {"model": "token_bucket", "burst_bytes": 3000}}), True, True, ALL)


def test_capabilities_name_the_kernel_aqm_qdiscs() -> None:
    caps = Capabilities(kernel="test")
    for name, present in (("sch_red", True), ("sch_codel", False), ("sch_pie", True), ("linkemu", True)):
        caps.probes[name] = Probe(name, present, "")
    assert caps.tc_aqms() == frozenset({"red", "pie"})
    backend, why = caps.backends()["aqm"]
    assert backend == "emulator" and "backend: tc use the kernel's sch_pie, sch_red" in why
    caps.probes["linkemu"] = Probe("linkemu", False, "")
    assert caps.backends()["aqm"][0] == "tc"
    caps.probes["sch_red"] = caps.probes["sch_pie"] = Probe("sch_x", False, "")
    assert caps.backends()["aqm"] == ("none", "linkemu is not built and this kernel has no sch_red, sch_codel or "
                                              "sch_pie")


def test_every_model_has_a_builder() -> None:
    assert tc_aqm(direction(None), "w") is None
    for aqm in (red(min_th=10, max_th=30, mean_pkt_bytes=1500), CodelAqm(model="codel"), PieAqm(model="pie")):
        built = tc_aqm(direction(aqm), "w")
        assert built is not None and built.argv[0] == aqm.model == built.effective["qdisc"]
