"""Queue statistics of tc-shaped links over rtnetlink: one socket per link node, no process per sample.

A tc-shaped direction is an HTB root (handle 1:, class 1:1) with a pfifo/bfifo child under 1:1
(`shaping._tc_queue`). Its sample needs the root's sent bytes/packets and the FIFO's backlog and
drops, which the kernel reports in every RTM_NEWQDISC message of a qdisc dump (TCA_STATS2 with
TCA_STATS_BASIC and TCA_STATS_QUEUE, as `tc -s qdisc show` prints them).

Two parts, kept apart:
- pure: `qdisc_from_message` (one RTM_NEWQDISC message, as pyroute2 decodes it -> `Qdisc`) and
  `queue_stats` (a device's qdiscs -> one link sample's counters). Tested on a dump reply
  captured from a real kernel.
- query: `QdiscReader` opens one pyroute2 `IPRoute` inside the network namespace of a process (a
  Mininet node's shell, by `/proc/<pid>/ns/net`) and dumps qdiscs on demand over that socket.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyroute2 import IPRoute

TC_H_ROOT = 0xFFFFFFFF  # tcmsg parent of a device's root qdisc
FIFO_KINDS = ("pfifo", "bfifo")


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
    return Qdisc(ifindex=msg["index"], handle=msg["handle"], parent=msg["parent"],
                 kind=msg.get_attr("TCA_KIND") or "", **{k: int(v) for k, v in counters.items()})


def queue_stats(qdiscs: Iterable[Qdisc], ifindex: int) -> dict[str, int]:
    """The shaped queue of one device -> a link sample's counters.

    Sent bytes/packets are the root's (everything HTB let out); backlog and queue drops are the
    FIFO's under the root (the shaped queue). The same dict `tc -s qdisc show` gave before:
    backlog_pkts, backlog_bytes, queue_drops, loss_drops (always 0: tc drops no packets by
    loss here), tx_bytes, tx_pkts.
    """
    on_dev = [q for q in qdiscs if q.ifindex == ifindex]
    root = next((q for q in on_dev if q.parent == TC_H_ROOT), None)
    fifo = None
    if root is not None:
        fifo = next((q for q in on_dev if q.kind in FIFO_KINDS and q.parent >> 16 == root.handle >> 16), None)
    if root is None or fifo is None:
        kinds = ", ".join(f"{q.kind} {q.handle >> 16:x}:" for q in on_dev) or "none"
        raise QdiscStatsError(f"no shaped FIFO under a root qdisc on ifindex {ifindex} (qdiscs: {kinds})")
    return {"backlog_pkts": fifo.qlen, "backlog_bytes": fifo.backlog, "queue_drops": fifo.drops,
            "loss_drops": 0, "tx_bytes": root.bytes, "tx_pkts": root.packets}


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
