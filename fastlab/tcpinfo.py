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
