"""tc queue statistics over rtnetlink: the pure parser against a dump reply captured from a real kernel.

The fixture is the raw RTM_GETQDISC dump reply from a scratch namespace holding a veth pair
x0-b (ifindex 2) / x0-a (ifindex 3), each shaped by the commands `shaping._tc_queue` plans:
x0-b at 8 kbit/s with `pfifo limit 10` after 30 UDP datagrams of 1428 IP bytes (3 sent, 10
queued, 17 dropped), x0-a at 50 Mbit/s with `bfifo limit 30000` after 40 of them (drained, 13
dropped). `tc -s -j qdisc show` run right after it printed the same counters.
"""

from __future__ import annotations

import struct

import pytest
from pyroute2.netlink.rtnl import RTM_NEWQDISC
from pyroute2.netlink.rtnl.marshal import MarshalRtnl

from fastlab.qdisc_stats import TC_H_ROOT, Qdisc, QdiscStatsError, qdisc_from_message, queue_stats
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
