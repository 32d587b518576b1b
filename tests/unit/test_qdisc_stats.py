"""tc queue statistics over rtnetlink: the pure parser against a dump reply captured from a real kernel.

The fixture is the raw RTM_GETQDISC dump reply from a scratch namespace holding a veth pair
x0-b (ifindex 2) / x0-a (ifindex 3), each shaped by the commands `link_commands._tc_queue` plans:
x0-b at 8 kbit/s with `pfifo limit 10` after 30 UDP datagrams of 1428 IP bytes (3 sent, 10
queued, 17 dropped), x0-a at 50 Mbit/s with `bfifo limit 30000` after 40 of them (drained, 13
dropped). `tc -s -j qdisc show` run right after it printed the same counters.
"""

from __future__ import annotations

import struct

import pytest
from pyroute2.netlink.rtnl import RTM_NEWQDISC
from pyroute2.netlink.rtnl.marshal import MarshalRtnl

from fastlab.net.qdisc_stats import TC_H_ROOT, Qdisc, QdiscStatsError, qdisc_from_message, queue_stats
from tests.conftest import FIXTURES

LO, X0_B, X0_A = 1, 2, 3


def decode(data: bytes) -> list[Qdisc]:
    """Raw dump reply bytes -> Qdiscs, decoded as pyroute2 decodes what the socket receives."""
    return [qdisc_from_message(m) for m in MarshalRtnl().parse(data) if m["header"]["type"] == RTM_NEWQDISC]


@pytest.fixture
def dump() -> list[Qdisc]:
    return decode((FIXTURES / "rtnl_qdisc_dump_htb_fifo.bin").read_bytes())


def test_every_qdisc_of_the_namespace_is_decoded(dump: list[Qdisc]) -> None:
    assert [(q.ifindex, q.kind, q.handle, q.parent) for q in dump] == [
        (LO, "noqueue", 0, TC_H_ROOT),
        (X0_B, "htb", 0x10000, TC_H_ROOT), (X0_B, "pfifo", 0x100000, 0x10001),
        (X0_A, "htb", 0x10000, TC_H_ROOT), (X0_A, "bfifo", 0x100000, 0x10001)]


def test_backlogged_queue_counts_ip_bytes(dump: list[Qdisc]) -> None:
    # stab overhead -14: 1442-byte frames are charged as 1428 IP bytes, sent and queued alike
    assert queue_stats(dump, X0_B) == {"backlog_pkts": 10, "backlog_bytes": 10 * 1428, "queue_drops": 17,
                                       "loss_drops": 0, "tx_bytes": 3 * 1428, "tx_pkts": 3}


def test_drained_byte_fifo(dump: list[Qdisc]) -> None:
    assert queue_stats(dump, X0_A) == {"backlog_pkts": 0, "backlog_bytes": 0, "queue_drops": 13,
                                       "loss_drops": 0, "tx_bytes": 27 * 1428, "tx_pkts": 27}


def test_sent_counters_are_the_roots_and_queue_counters_the_fifos() -> None:
    # HTB lets packets out of its direct queue too: those count as sent, not as the FIFO's backlog
    qdiscs = [Qdisc(X0_B, 0x10000, TC_H_ROOT, "htb", bytes=5000, packets=5, qlen=3, backlog=300, drops=4),
              Qdisc(X0_B, 0x100000, 0x10001, "pfifo", bytes=4000, packets=4, qlen=2, backlog=200, drops=1),
              Qdisc(X0_A, 0x10000, TC_H_ROOT, "htb", bytes=9, packets=9)]
    stats = queue_stats(qdiscs, X0_B)
    assert (stats["tx_bytes"], stats["tx_pkts"]) == (5000, 5)
    assert (stats["backlog_pkts"], stats["backlog_bytes"], stats["queue_drops"]) == (2, 200, 1)


def test_a_device_without_the_shaped_layout_is_an_error(dump: list[Qdisc]) -> None:
    with pytest.raises(QdiscStatsError, match=r"ifindex 1 \(qdiscs: noqueue 0:\)"):
        queue_stats(dump, LO)
    with pytest.raises(QdiscStatsError, match="qdiscs: none"):
        queue_stats(dump, 99)  # the device is gone (the network is going down)
    fifo_elsewhere = [Qdisc(X0_B, 0x10000, TC_H_ROOT, "htb"), Qdisc(X0_B, 0x100000, 0x20001, "pfifo")]
    with pytest.raises(QdiscStatsError):
        queue_stats(fifo_elsewhere, X0_B)


def test_legacy_tca_stats_when_stats2_is_absent() -> None:
    # Rebuild the captured pfifo message without TCA_STATS2: the struct tc_stats fallback
    data = (FIXTURES / "rtnl_qdisc_dump_htb_fifo.bin").read_bytes()
    pfifo = next(m for m in MarshalRtnl().parse(data) if m.get_attr("TCA_KIND") == "pfifo")
    pfifo["attrs"] = [a for a in pfifo["attrs"] if a[0] != "TCA_STATS2"]
    assert qdisc_from_message(pfifo) == Qdisc(X0_B, 0x100000, 0x10001, "pfifo", bytes=3 * 1428, packets=3,
                                              qlen=10, backlog=10 * 1428, drops=17)


def test_fixture_is_one_complete_dump() -> None:
    data = (FIXTURES / "rtnl_qdisc_dump_htb_fifo.bin").read_bytes()
    offset, types = 0, []
    while offset < len(data):
        length, kind = struct.unpack_from("=IH", data, offset)
        types.append(kind)
        offset += (length + 3) & ~3
    assert types == [RTM_NEWQDISC] * 5 + [3]  # five qdiscs, then NLMSG_DONE


# --- kernel AQM qdiscs ------------------------------------------------------------------------------
# rtnl_qdisc_dump_htb_aqm.bin: the raw dump reply of a scratch namespace in the stock-kernel VM (Linux
# 6.1.0-56, Debian's), three veth pairs each shaped by `link_commands._tc_queue` at 1 Mbit/s with the child
# `tc_aqm.tc_aqm` built: r0-b (ifindex 3) `red limit 150000 min 7500 max 22500 avpkt 1000 burst 9
# probability 0.1` after 200 back-to-back UDP datagrams of 1428 IP bytes (the average crossed max_th at
# once with wq 1/4: 179 early drops, forced ones among them), c0-b (5) `codel limit 40` after 200 more
# (156 over the limit, 5 CoDel drops), p0-b (7) `pie limit 1000` after 1.5 s at twice its rate (18 PIE
# drops, 4 still queued). `tc -s -d qdisc show` a moment later printed the same drop counters ("marked 0
# early 179 pdrop 0 other 0"; "drop_overlimit 156", dropped 161; "overlimit 0 dropped 18") and "ewma 2".
R0_B, C0_B, P0_B = 3, 5, 7


@pytest.fixture
def aqm_dump() -> list[Qdisc]:
    return decode((FIXTURES / "rtnl_qdisc_dump_htb_aqm.bin").read_bytes())


def test_aqm_qdiscs_and_their_extended_statistics_are_decoded(aqm_dump: list[Qdisc]) -> None:
    kinds = [(q.ifindex, q.kind, q.parent) for q in aqm_dump if q.kind not in ("noqueue", "htb")]
    assert kinds == [(R0_B, "red", 0x10001), (C0_B, "codel", 0x10001), (P0_B, "pie", 0x10001)]
    xstats = {q.kind: dict(q.xstats) for q in aqm_dump if q.xstats}
    assert xstats["red"] == {"early": 179, "pdrop": 0, "other": 0, "marked": 0}
    assert (xstats["codel"]["drop_overlimit"], xstats["codel"]["maxpacket"], xstats["codel"]["ldelay"]) == \
        (156, 1428, 311828)
    assert (xstats["pie"]["dropped"], xstats["pie"]["overlimit"], xstats["pie"]["packets_in"]) == (18, 0, 167)


def test_aqm_drops_apart_from_tail_drops_in_the_links_columns(aqm_dump: list[Qdisc]) -> None:
    red = queue_stats(aqm_dump, R0_B)
    assert (red["aqm_drops"], red["queue_drops"], red["aqm_marks"], red["tx_pkts"]) == (179, 0, 0, 25)
    assert red["aqm_avg_queue"] is None and red["aqm_drop_prob"] is None  # the kernel does not report them
    codel = queue_stats(aqm_dump, C0_B)
    assert (codel["aqm_drops"], codel["queue_drops"], codel["aqm_qdelay_ms"]) == (5, 156, 311.828)
    pie = queue_stats(aqm_dump, P0_B)
    assert (pie["aqm_drops"], pie["queue_drops"], pie["backlog_pkts"], pie["backlog_bytes"]) == (18, 0, 4, 4 * 1428)
    assert pie["aqm_qdelay_ms"] == 469.68
    assert pie["aqm_drop_prob"] == pytest.approx(3939585846322811392 / 2**64)  # 0.2136, a fraction of 2^64
    # a FIFO adds no AQM columns
    assert not any(k.startswith("aqm") for k in queue_stats(decode((FIXTURES / "rtnl_qdisc_dump_htb_fifo.bin")
                                                                   .read_bytes()), X0_B))


def test_red_drops_split_early_from_the_limits() -> None:
    red = Qdisc(X0_B, 0x100000, 0x10001, "red", qlen=3, backlog=4500, drops=50,
                xstats=(("early", 40), ("pdrop", 9), ("other", 1), ("marked", 7)))
    stats = queue_stats([Qdisc(X0_B, 0x10000, TC_H_ROOT, "htb"), red], X0_B)
    assert (stats["aqm_drops"], stats["queue_drops"], stats["aqm_marks"]) == (40, 10, 7)


def test_short_or_unknown_xstats() -> None:
    from fastlab.net.qdisc_stats import xstats_fields

    assert xstats_fields("pfifo", "00:01") == () and xstats_fields("red", None) == ()
    assert xstats_fields("red", "01:00:00:00:02:00:00:00:03:00:00:00:04:00:00:00") == \
        (("early", 1), ("pdrop", 2), ("other", 3), ("marked", 4))
    with pytest.raises(QdiscStatsError, match="red xstats: 8 bytes, expected 16"):
        xstats_fields("red", "00:" * 7 + "00")
