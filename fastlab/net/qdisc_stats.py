"""Queue statistics of tc-shaped links over rtnetlink: one socket per link node, no process per sample.

A tc-shaped direction is an HTB root (handle 1:, class 1:1) with a pfifo/bfifo child under 1:1, or a
red/codel/pie child where the link runs a kernel AQM (`link_commands._tc_queue`). Its sample needs the root's
sent bytes/packets and the child's backlog and drops, which the kernel reports in every RTM_NEWQDISC
message of a qdisc dump (TCA_STATS2 with TCA_STATS_BASIC and TCA_STATS_QUEUE, as `tc -s qdisc show`
prints them), and for an AQM its extended statistics (TCA_STATS_APP: early drops, marks, delay).

Two parts, kept apart:
- pure: `qdisc_from_message` (one RTM_NEWQDISC message, as pyroute2 decodes it -> `Qdisc`) and
  `queue_stats` (a device's qdiscs -> one link sample's counters). Tested on a dump reply
  captured from a real kernel.
- query: `QdiscReader` opens one pyroute2 `IPRoute` inside the network namespace of a process (a
  Mininet node's shell, by `/proc/<pid>/ns/net`) and dumps qdiscs on demand over that socket.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyroute2 import IPRoute

TC_H_ROOT = 0xFFFFFFFF  # tcmsg parent of a device's root qdisc
FIFO_KINDS = ("pfifo", "bfifo")
AQM_KINDS = ("red", "codel", "pie")  # the kernel AQM qdiscs shaping.tc_aqm puts where the FIFO would be
QUEUE_KINDS = FIFO_KINDS + AQM_KINDS

# The AQM qdiscs' extended statistics (TCA_STATS_APP), as include/uapi/linux/pkt_sched.h lays them out
# (host byte order, as netlink carries them): field names and struct format.
XSTATS_LAYOUT: dict[str, tuple[tuple[str, ...], str]] = {
    "red": (("early", "pdrop", "other", "marked"), "=4I"),  # tc_red_xstats
    "codel": (("maxpacket", "count", "lastcount", "ldelay", "drop_next", "drop_overlimit", "ecn_mark",
               "dropping", "ce_mark"), "=4Ii4I"),  # tc_codel_xstats (drop_next is signed)
    "pie": (("prob", "delay", "avg_dq_rate", "dq_rate_estimating", "packets_in", "dropped", "overlimit",
             "maxq", "ecn_mark"), "=Q8I"),  # tc_pie_xstats
}
# sch_pie reports its drop probability as a fraction of 2^64 (since Linux 5.7: vars.prob << 8, prob
# itself out of U64_MAX >> 8).
PIE_PROB_ONE = 2**64


class QdiscStatsError(RuntimeError):
    """Queue statistics could not be read or do not show the shaped HTB + FIFO layout."""


@dataclass(frozen=True)
class Qdisc:
    """One qdisc as an RTM_NEWQDISC message reports it: where it sits and its counters.

    `bytes`/`packets` were sent (dequeued) by this qdisc; `qlen`/`backlog` are queued now;
    `drops` counts packets it refused. With a size table (`stab overhead -14`) the byte counts
    are in the table's units: IP bytes here.
    """

    ifindex: int
    handle: int
    parent: int
    kind: str
    bytes: int = 0
    packets: int = 0
    qlen: int = 0
    backlog: int = 0
    drops: int = 0
    xstats: tuple[tuple[str, int], ...] = ()  # an AQM qdisc's extended statistics (XSTATS_LAYOUT), by name


# --- pure parsing ------------------------------------------------------------------------------

def qdisc_from_message(msg: Any) -> Qdisc:
    """A decoded RTM_NEWQDISC message (pyroute2 `tcmsg`) -> `Qdisc`.

    Counters come from TCA_STATS2 (basic: bytes/packets, queue: qlen/backlog/drops), else from
    the legacy TCA_STATS struct, else they are zero (a qdisc without statistics, e.g. noqueue).
    """
    counters = {"bytes": 0, "packets": 0, "qlen": 0, "backlog": 0, "drops": 0}
    stats2 = msg.get_attr("TCA_STATS2")
    legacy = msg.get_attr("TCA_STATS")
    if stats2 is not None:
        basic, queue = stats2.get_attr("TCA_STATS_BASIC"), stats2.get_attr("TCA_STATS_QUEUE")
        if basic is not None:
            counters |= {"bytes": basic["bytes"], "packets": basic["packets"]}
        if queue is not None:
            counters |= {"qlen": queue["qlen"], "backlog": queue["backlog"], "drops": queue["drops"]}
    elif legacy is not None:
        counters = {"bytes": legacy["bytes"], "packets": legacy["packets"], "qlen": legacy["qlen"],
                    "backlog": legacy["backlog"], "drops": legacy["drop"]}
    kind = msg.get_attr("TCA_KIND") or ""
    app = stats2.get_attr("TCA_STATS_APP") if stats2 is not None else None
    return Qdisc(ifindex=msg["index"], handle=msg["handle"], parent=msg["parent"], kind=kind,
                 **{k: int(v) for k, v in counters.items()}, xstats=xstats_fields(kind, app))


def xstats_fields(kind: str, app: Any) -> tuple[tuple[str, int], ...]:
    """An AQM qdisc's TCA_STATS_APP -> (name, value) pairs; () for other kinds or none at all.

    pyroute2 0.9.7 decodes CoDel's (an nla with the struct's fields) and leaves RED's and PIE's as
    colon-separated hex; both become the struct's fields. A shorter struct than the layout (another
    kernel's) is refused rather than read wrong."""
    layout = XSTATS_LAYOUT.get(kind)
    if layout is None or app is None:
        return ()
    names, fmt = layout
    if isinstance(app, str):
        raw = bytes.fromhex(app.replace(":", ""))
        if len(raw) < struct.calcsize(fmt):
            raise QdiscStatsError(f"{kind} xstats: {len(raw)} bytes, expected {struct.calcsize(fmt)}")
        values = struct.unpack_from(fmt, raw)
    else:
        values = tuple(app[name] for name in names)
    return tuple((name, int(v)) for name, v in zip(names, values, strict=True))


def aqm_counters(q: Qdisc) -> dict[str, Any]:
    """An AQM qdisc's counters as the link sample's columns (the emulator's: `shaping.aqm_figures`):
    aqm_drops (early drops, apart from tail drops), aqm_marks (ECN marks), queue_drops (the buffer
    overflowing), and the state the kernel reports: CoDel's and PIE's queue delay, PIE's drop probability.
    The kernel does not report RED's average queue: aqm_avg_queue is None. {} for a FIFO."""
    x = dict(q.xstats)
    if not x:
        return {}
    if q.kind == "red":
        # every drop counts in qstats.drops: early (prob_drop + forced_drop), pdrop (the child FIFO's
        # limit) and other; marked = prob_mark + forced_mark
        early, marks, qdelay, prob = x["early"], x["marked"], None, None
    elif q.kind == "codel":
        # drop_overlimit: arrivals over the packet limit; every other drop is CoDel's, at dequeue; ldelay is
        # the sojourn time (us) of the last packet dequeued
        early, marks, qdelay, prob = q.drops - x["drop_overlimit"], x["ecn_mark"], x["ldelay"] / 1000, None
    else:
        # dropped: PIE's own drops at enqueue, overlimit: the limit; delay in us
        early, marks, qdelay, prob = x["dropped"], x["ecn_mark"], x["delay"] / 1000, x["prob"] / PIE_PROB_ONE
    return {"queue_drops": max(0, q.drops - early), "aqm_drops": early, "aqm_marks": marks,
            "aqm_avg_queue": None, "aqm_avg_pkts": None, "aqm_drop_prob": prob, "aqm_qdelay_ms": qdelay}


def queue_stats(qdiscs: Iterable[Qdisc], ifindex: int) -> dict[str, Any]:
    """The shaped queue of one device -> a link sample's counters.

    Sent bytes/packets are the root's (everything HTB let out); backlog and queue drops are the
    FIFO's (or AQM qdisc's) under the root (the shaped queue). The same dict `tc -s qdisc show` gave before:
    backlog_pkts, backlog_bytes, queue_drops, loss_drops (always 0: tc drops no packets by
    loss here), tx_bytes, tx_pkts; with an AQM qdisc, its columns too (`aqm_counters`).
    """
    on_dev = [q for q in qdiscs if q.ifindex == ifindex]
    root = next((q for q in on_dev if q.parent == TC_H_ROOT), None)
    fifo = None
    if root is not None:
        fifo = next((q for q in on_dev if q.kind in QUEUE_KINDS and q.parent >> 16 == root.handle >> 16), None)
    if root is None or fifo is None:
        kinds = ", ".join(f"{q.kind} {q.handle >> 16:x}:" for q in on_dev) or "none"
        raise QdiscStatsError(f"no shaped FIFO or AQM under a root qdisc on ifindex {ifindex} (qdiscs: {kinds})")
    return {"backlog_pkts": fifo.qlen, "backlog_bytes": fifo.backlog, "queue_drops": fifo.drops,
            "loss_drops": 0, "tx_bytes": root.bytes, "tx_pkts": root.packets} | aqm_counters(fifo)


# --- querying ----------------------------------------------------------------------------------

class QdiscReader:
    """One rtnetlink socket inside a network namespace, opened once, dumping qdiscs on demand.

    pyroute2 opens the socket in the namespace once (a short-lived helper that enters the
    namespace and hands the socket back); every dump after that is a request on that socket.
    pyroute2 keeps sockets per thread, so one thread opens, uses and closes a reader. The open
    socket holds the namespace: close the reader before the network is torn down.
    """

    def __init__(self, ns_path: str, name: str = "") -> None:
        from pyroute2 import IPRoute

        self.ns_path = ns_path
        self.where = f"{name} ({ns_path})" if name else ns_path  # for messages
        try:
            # flags=0: never create the namespace; groups=0: no multicast events to queue up.
            self._ipr: IPRoute | None = IPRoute(netns=ns_path, flags=0, groups=0)
        except Exception as e:  # pyroute2 raises OSError, TimeoutError or its own errors here
            raise QdiscStatsError(f"cannot open rtnetlink in {self.where}: {_one_line(e)}") from None

    @classmethod
    def of_pid(cls, pid: int, name: str = "") -> QdiscReader:
        """A reader in the network namespace of process `pid` (a Mininet node's shell, `name`)."""
        return cls(f"/proc/{pid}/ns/net", name)

    def _query(self) -> IPRoute:
        if self._ipr is None:
            raise QdiscStatsError(f"rtnetlink reader for {self.where} is closed")
        return self._ipr

    def ifindex(self, dev: str) -> int:
        """The index of interface `dev` in the namespace."""
        try:
            found = self._query().link_lookup(ifname=dev)
        except Exception as e:
            raise QdiscStatsError(f"looking up {dev} in {self.where} failed: {_one_line(e)}") from None
        if not found:
            raise QdiscStatsError(f"no interface {dev} in {self.where}")
        return int(found[0])

    def dump(self) -> list[Qdisc]:
        """Every qdisc of the namespace with its counters: one RTM_GETQDISC dump."""
        try:
            return [qdisc_from_message(m) for m in self._query().get_qdiscs()]
        except QdiscStatsError:
            raise
        except Exception as e:  # NetlinkError, OSError: the namespace or socket is gone
            raise QdiscStatsError(f"qdisc dump in {self.where} failed: {_one_line(e)}") from None

    def close(self) -> None:
        if self._ipr is not None:
            self._ipr.close()
            self._ipr = None


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__
