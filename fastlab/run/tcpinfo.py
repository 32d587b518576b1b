"""Parse Linux `struct tcp_info` (include/uapi/linux/tcp.h) into a flow sample.

Pure: bytes in, dict out, so it is tested against captured kernel output. Fields past what an
older kernel returns are simply absent (the kernel copies min(len, sizeof) bytes).
"""

from __future__ import annotations

import struct

# (name, struct code) in kernel order; bitfield bytes are read whole.
_FIELDS: tuple[tuple[str, str], ...] = (
    ("state", "B"), ("ca_state", "B"), ("retransmits", "B"), ("probes", "B"), ("backoff", "B"),
    ("options", "B"), ("wscale", "B"), ("flags", "B"),
    ("rto", "I"), ("ato", "I"), ("snd_mss", "I"), ("rcv_mss", "I"),
    ("unacked", "I"), ("sacked", "I"), ("lost", "I"), ("retrans", "I"), ("fackets", "I"),
    ("last_data_sent", "I"), ("last_ack_sent", "I"), ("last_data_recv", "I"), ("last_ack_recv", "I"),
    ("pmtu", "I"), ("rcv_ssthresh", "I"), ("rtt", "I"), ("rttvar", "I"), ("snd_ssthresh", "I"),
    ("snd_cwnd", "I"), ("advmss", "I"), ("reordering", "I"), ("rcv_rtt", "I"), ("rcv_space", "I"),
    ("total_retrans", "I"),
    ("pacing_rate", "Q"), ("max_pacing_rate", "Q"), ("bytes_acked", "Q"), ("bytes_received", "Q"),
    ("segs_out", "I"), ("segs_in", "I"), ("notsent_bytes", "I"), ("min_rtt", "I"),
    ("data_segs_in", "I"), ("data_segs_out", "I"), ("delivery_rate", "Q"),
    ("busy_time", "Q"), ("rwnd_limited", "Q"), ("sndbuf_limited", "Q"),
    ("delivered", "I"), ("delivered_ce", "I"), ("bytes_sent", "Q"), ("bytes_retrans", "Q"),
    ("dsack_dups", "I"), ("reord_seen", "I"), ("rcv_ooopack", "I"), ("snd_wnd", "I"),
)
TCP_INFO_BYTES = struct.calcsize("<" + "".join(code for _, code in _FIELDS))
INFINITE_SSTHRESH = 0x7FFFFFFF
CA_STATES = ("open", "disorder", "cwr", "recovery", "loss")


def parse(raw: bytes) -> dict[str, int]:
    """All fields the buffer holds, by name (native little-endian layout, natural alignment)."""
    values: dict[str, int] = {}
    offset = 0
    for name, code in _FIELDS:
        size = struct.calcsize(code)
        if offset + size > len(raw):
            break
        (values[name],) = struct.unpack_from("<" + code, raw, offset)
        offset += size
    return values


def sample(info: dict[str, int]) -> dict[str, float | int | str | None]:
    """The flow-trace view of tcp_info: units spelled out in the names."""
    ssthresh = info["snd_ssthresh"]
    return {
        "cwnd_pkts": info["snd_cwnd"],
        "ssthresh_pkts": None if ssthresh >= INFINITE_SSTHRESH else ssthresh,
        "srtt_ms": info["rtt"] / 1000,
        "rttvar_ms": info["rttvar"] / 1000,
        "min_rtt_ms": info["min_rtt"] / 1000 if info.get("min_rtt") else None,
        "delivery_rate_mbps": info.get("delivery_rate", 0) * 8 / 1e6,
        "pacing_rate_mbps": None if info.get("pacing_rate", 0) >= 2**63 else info.get("pacing_rate", 0) * 8 / 1e6,
        "bytes_acked": info.get("bytes_acked", 0),
        "retransmits": info["total_retrans"],
        "unacked_pkts": info["unacked"],
        "lost_pkts": info["lost"],
        "mss_bytes": info["snd_mss"],
        "ca_state": CA_STATES[info["ca_state"]] if info["ca_state"] < len(CA_STATES) else str(info["ca_state"]),
    }


# getsockopt(TCP_CC_INFO) (include/uapi/linux/tcp.h; not in Python's socket module): the algorithm's
# own state through its get_info(). Two answer in the Vegas format (struct tcpvegas_info: enabled,
# rttcnt, rtt, minrtt; u32 each, microseconds) but fill it differently:
# - Linux Vegas (net/ipv4/tcp_vegas.c): rtt = its baseRTT, minrtt = the smallest RTT of the last
#   round (its current estimate), 0x7fffffff while it has none;
# - fastlab's FAST module (kernel-modules/modules/tcp_fast.c): rtt = avgRTT, minrtt = baseRTT, 0
#   while it has none -- the module build's counterpart of the BPF build's state events.
TCP_CC_INFO = 26
CC_INFO_BYTES = 16
VEGAS_FORMAT_CCS = frozenset({"vegas", "fast"})
_NO_RTT = (0, 0x7FFFFFFF, 0xFFFFFFFF)


def cc_info_sample(cc: str, raw: bytes) -> dict[str, float | None]:
    """The algorithm's own RTT view from TCP_CC_INFO: `cc_rtt_ms` (its current estimate: FAST's
    avgRTT, Vegas's minimum of the last round) and `cc_base_rtt_ms` (its baseRTT); None where it
    has none (yet), or answers in no Vegas format (the BPF build has no get_info: 0 bytes)."""
    none: dict[str, float | None] = {"cc_rtt_ms": None, "cc_base_rtt_ms": None}
    if cc not in VEGAS_FORMAT_CCS or len(raw) < CC_INFO_BYTES:
        return none
    # `enabled` is not a validity flag: Vegas clears it for rounds with too few RTT samples to steer
    # by (it then behaves like Reno) while its baseRTT stays valid; the sentinels say "none".
    _enabled, _rttcnt, rtt_us, minrtt_us = struct.unpack_from("<4I", raw)
    current_us, base_us = (rtt_us, minrtt_us) if cc == "fast" else (minrtt_us, rtt_us)
    return {"cc_rtt_ms": None if current_us in _NO_RTT else current_us / 1000,
            "cc_base_rtt_ms": None if base_us in _NO_RTT else base_us / 1000}
