"""tcp_info parsing against bytes captured from a real kernel socket, and the run summaries."""

from __future__ import annotations

import pandas as pd
import pytest

from fastlab.measure import analysis
from fastlab.run import tcpinfo
from tests.conftest import FIXTURES


def test_parse_captured_tcp_info() -> None:
    # Captured on kernel 6.18: a reno socket that had sent 200 x 64 KiB over loopback, all acked.
    raw = (FIXTURES / "tcp_info_reno_loopback.bin").read_bytes()
    info = tcpinfo.parse(raw)
    assert info["state"] == 1  # TCP_ESTABLISHED
    assert info["bytes_acked"] == 200 * 65536 + 1  # the SYN counts one
    assert info["snd_cwnd"] >= 10 and info["rtt"] > 0 and info["snd_mss"] > 1000
    sample = tcpinfo.sample(info)
    assert sample["cwnd_pkts"] == info["snd_cwnd"] and sample["ca_state"] == "open"
    assert sample["srtt_ms"] == info["rtt"] / 1000


def test_short_tcp_info_from_old_kernels() -> None:
    info = tcpinfo.parse((FIXTURES / "tcp_info_reno_loopback.bin").read_bytes()[:104])
    assert "snd_cwnd" in info and "bytes_acked" not in info


def test_jain_index() -> None:
    assert analysis.jain_index([10, 10, 10]) == 1.0
    assert analysis.jain_index([10, 0]) == 0.5
    assert analysis.jain_index([3, 1]) == pytest.approx(16 / 20)


def test_summary_from_traces() -> None:
    flows = pd.DataFrame([{"t": t / 10, "flow": "f1", "srtt_ms": 40 + t, "min_rtt_ms": 40.1, "cwnd_pkts": 100,
                           "retransmits": 0, "bytes_acked": t * 125_000} for t in range(1, 101)])
    links = pd.DataFrame([{"t": t / 10, "link": "bottleneck", "direction": d, "backlog_pkts": 10,
                           "queue_drops": t // 50, "loss_drops": 0, "rx_pkts": t * 100,
                           "tx_bytes": t * 125_000 if d == "forward" else 0} for t in range(0, 101)
                          for d in ("forward", "reverse")])
    info = [analysis.FlowInfo("f1", "h1", "h2", "cubic", 0.0, 10.0)]
    done = {"f1": {"t": 110.0, "start": 100.0, "bytes_acked": 12_500_000, "retransmits": 3, "min_rtt_ms": 40.05}}
    summary = analysis.summarize(info, flows, done, analysis.add_rates(links), {"bottleneck": 10.0})
    flow, link = summary.flows[0], summary.links[0]
    assert flow.throughput_mbps == pytest.approx(10.0) and flow.retransmits == 3
    assert flow.min_rtt_ms == 40.05 and flow.mean_rtt_ms == pytest.approx(40 + 50.5)
    assert link.utilization == pytest.approx(1.0) and link.mean_backlog_pkts == 10
    assert link.drops == 2 and link.arrivals_pkts == 10_000 and link.reverse and link.reverse.utilization == 0
    assert summary.jain_index == 1.0


def test_ping_summary_parser() -> None:
    from fastlab.experiment.engine import parse_ping

    out = ("PING 10.2.0.2 (10.2.0.2) 56(84) bytes of data.\n64 bytes from 10.2.0.2: icmp_seq=1 ttl=62 time=181 ms\n\n"
           "--- 10.2.0.2 ping statistics ---\n5 packets transmitted, 5 received, 0% packet loss, time 802ms\n"
           "rtt min/avg/max/mdev = 180.512/180.601/180.734/0.081 ms\n")
    assert parse_ping(out) == {"min_ms": 180.512, "mean_ms": 180.601, "max_ms": 180.734, "mdev_ms": 0.081}
    assert parse_ping("1 packets transmitted, 0 received, 100% packet loss") is None


def test_fast_equilibrium_lines_follow_the_theory() -> None:
    """fastlab.theory.fast on lab 02's first spec: one FAST flow, alpha 20, 20 Mb/s x 40 ms: q = 20 /
    1666.7 per s = 12 ms, D = 52 ms, w = 20 * 52 / 12 = 86.7 (lab 02 recorded 87-88); two flows of
    alpha 30 share it: q = 36 ms each at 10 Mb/s; a Reno flow beside FAST leaves only the capacity."""
    from fastlab.define.schema import read_spec_text
    from fastlab.theory.fast import references

    base = ("name: x\ntopology: dumbbell\ntopology_args: {rate_mbps: 20, rtt_ms: 40, buffer_bdp: 4}\n"
            "duration_s: 5\nflows:\n")
    one = references(read_spec_text(base + "  - {src: h1, dst: h2, cc: fast, cc_args: {alpha: 20}}\n"))
    assert one[0]["fast_queue_pkts"] == 20 and one[0]["fast_rtt_ms"] == 52.0 and one[0]["fast_window_pkts"] == 86.7
    assert one[0]["capacity_mbps"] == 20 and one[0]["base_rtt_ms"] == 40
    two = references(read_spec_text(base + "  - {src: h1, dst: h2, cc: fast, cc_args: {alpha: 30}, count: 2}\n"))
    assert [r["flow"] for r in two] == ["f1", "f2"] and all(r["fast_rate_mbps"] == 10.0 for r in two)
    assert all(r["fast_queue_pkts"] == 60 and r["fast_rtt_ms"] == 76.0 for r in two)
    mixed = references(read_spec_text(base + "  - {src: h1, dst: h2, cc: fast}\n  - {src: h1, dst: h2, cc: reno}\n"))
    assert mixed[0]["alpha"] == 100 and mixed[0]["fast_window_pkts"] is None and mixed[1]["capacity_mbps"] == 20


def test_cc_info_in_the_vegas_format() -> None:
    import struct

    from fastlab.run.tcpinfo import cc_info_sample

    # FAST's module: rtt = avgRTT, minrtt = baseRTT (µs)
    raw = struct.pack("<4I", 1, 12, 52_400, 40_100)
    assert cc_info_sample("fast", raw) == {"cc_rtt_ms": 52.4, "cc_base_rtt_ms": 40.1}
    # Linux Vegas: rtt = baseRTT, minrtt = the last round's minimum; 0x7fffffff = none this round
    assert cc_info_sample("vegas", raw) == {"cc_rtt_ms": 40.1, "cc_base_rtt_ms": 52.4}
    assert cc_info_sample("vegas", struct.pack("<4I", 1, 0, 40_684, 0x7FFFFFFF)) == {
        "cc_rtt_ms": None, "cc_base_rtt_ms": 40.684}
    empty = {"cc_rtt_ms": None, "cc_base_rtt_ms": None}
    assert cc_info_sample("fast", b"") == empty  # the BPF build has no get_info: 0 bytes
    assert cc_info_sample("cubic", raw) == empty  # another format (or none): not read as Vegas
    assert cc_info_sample("fast", struct.pack("<4I", 1, 0, 0, 0)) == empty  # no RTT sample yet
    # Vegas steering off for a round (too few samples): its baseRTT is still valid
    assert cc_info_sample("vegas", struct.pack("<4I", 0, 2, 40_500, 0x7FFFFFFF))["cc_base_rtt_ms"] == 40.5


def test_steady_goodput_sums_flows_after_the_warmup_and_refuses_no_samples() -> None:
    """Bytes acked over each flow's span from t_from on, summed; a run with nothing after the warm-up is
    no measurement (ValueError), not 0 Mb/s."""
    steady_goodput_mbps = analysis.steady_goodput_mbps
    rows = pd.DataFrame({"flow": ["f1", "f1", "f1", "f2", "f2"], "t": [0.0, 2.0, 4.0, 2.0, 4.0],
                         "bytes_acked": [0, 1_000_000, 3_000_000, 0, 500_000]})
    # f1: 2 MB over 2 s = 8 Mb/s (its first sample, before t_from, left out); f2: 0.5 MB over 2 s = 2 Mb/s
    assert steady_goodput_mbps(rows, 1.0) == pytest.approx(10.0)
    for t_from in (4.0, 5.0):  # one sample each, then none
        with pytest.raises(ValueError, match="no flow has two samples"):
            steady_goodput_mbps(rows, t_from)
    with pytest.raises(ValueError, match="no flow has two samples"):
        steady_goodput_mbps(rows.iloc[0:0], 0.0)
