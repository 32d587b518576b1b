"""routing.idle_links: which shaped links can never hold a packet (and so get no emulator)."""

from __future__ import annotations

from typing import Any

from fastlab.define.schema import parse_spec
from fastlab.plan.prepare import prepare

HOSTS = {"cern_hosts": 2, "chicago_hosts": 1, "sunnyvale_hosts": 2, "baltimore_hosts": 1, "scale": 0.01}


def plain_links(flows: list[dict[str, Any]], links: dict[str, Any] | None = None) -> dict[str, str]:
    spec = parse_spec({"name": "idle", "topology": "sc2002", "duration_s": 5, "topology_args": HOSTS,
                       "flows": flows, "links": links or {}})
    return prepare(spec).unused_links


def test_a_receivers_port_behind_an_equal_sender_port_cannot_queue() -> None:
    plain = plain_links([{"src": "cern", "dst": "sunnyvale", "cc": "cubic"}])
    assert "cannot queue" in plain["sunnyvale-gbe"]
    assert "cern-gbe" not in plain  # a host's bursts enter it: it queues
    assert "datatag" not in plain and "level3" not in plain  # they delay


def test_data_from_the_host_behind_it_makes_it_a_real_queue() -> None:
    plain = plain_links([{"src": "cern", "dst": "sunnyvale", "cc": "cubic"},
                         {"src": "sunnyvale", "dst": "cern2", "cc": "cubic"}])
    assert "sunnyvale-gbe" not in plain and "cern2-gbe" in plain


def test_two_senders_into_one_port_can_overflow_it() -> None:
    plain = plain_links([{"src": "cern", "dst": "sunnyvale", "cc": "cubic"},
                         {"src": "cern2", "dst": "sunnyvale", "cc": "cubic"}])
    assert "sunnyvale-gbe" not in plain  # 2 x its rate may arrive


def test_loss_or_a_forced_backend_keeps_the_emulator() -> None:
    flows = [{"src": "cern", "dst": "sunnyvale", "cc": "cubic"}]
    assert "sunnyvale-gbe" not in plain_links(flows, {"sunnyvale-gbe": {"loss": {"model": "every_nth", "n": 100}}})
    assert "sunnyvale-gbe" not in plain_links(flows, {"sunnyvale-gbe": {"backend": "emulator"}})
    assert "sunnyvale-gbe" not in plain_links(flows, {"sunnyvale-gbe": {"delay_ms": 1}})
