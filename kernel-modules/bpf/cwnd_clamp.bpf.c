// SPDX-License-Identifier: GPL-2.0
/*
 * cwnd_clamp.bpf.c - a per-flow ceiling on the congestion window, for any
 * congestion control ("max_cwnd_pkts" in a fastlab spec).
 *
 * Why: fixed-window experiments (Atov, Andrew, Kennedy, Wydrowski, "FAST
 * TCP over low-speed DOCSIS access": throughput, mean and minimum RTT
 * against a window held constant) need the sender's window held at w
 * packets whatever the algorithm would do.  User space has no socket
 * option for that: TCP_WINDOW_CLAMP caps the *receive* window and kernel
 * 6.18's receive-buffer tuning raises it again (measured here: 28,960 B ->
 * 744,156 B within 1.5 s, tcp_moderate_rcvbuf=0 and SO_RCVBUF locked), and
 * a route's "cwnd lock" only applies through an existing tcp_metrics
 * entry.  The kernel's own clamp, tp->snd_cwnd_clamp, is honoured by every
 * congestion control (tcp_cong_avoid_ai, tcp_slow_start, CUBIC, BBR, and
 * fastlab's FAST and HSTCP cores) and by the initial window
 * (tcp_init_cwnd); BPF sock_ops may set it (TCP_BPF_SNDCWND_CLAMP).
 *
 * How: attached to a run-scoped cgroup v2 that only the run's clamped
 * senders join, this program looks the connection's destination port up in
 * cwnd_clamp_ports (filled by fastlab-clamp from the spec: every flow has
 * its own receiver port) and sets the clamp when the connection starts
 * (TCP_CONNECT_CB, before the initial window is chosen) and again when it
 * is established (after tcp_init_metrics, which may lower ssthresh from a
 * cached metric but never raises the clamp).
 *
 * It also records the RTT sample of every ACK that newly acknowledges data
 * (per flow and second: minimum, maximum, sum, count, in rtt_per_second,
 * which fastlab-clamp dumps at the end of the run): the study plots the
 * *minimum* RTT against the window, and tcp_info has only the smoothed RTT
 * (an EWMA, gain 1/8) and the connection's minimum (which includes the
 * handshake's small packets).  The sample is RACK's: tp->rack.rtt_us, the
 * RTT of the most recently sent segment an ACK delivered (Karn-filtered),
 * with tp->rack.mstamp its send time -- the same sample as the kernel's
 * ca_rtt_us, which its min_rtt filter and the congestion controls see.
 * Sock_ops has no callback after each ACK, so the program asks for two
 * that follow ACKs and records the sample the last ACK left whenever
 * rack.mstamp has moved: HDR_OPT_LEN, which the kernel calls as it builds
 * each outgoing segment's options (an ACK that opens the window sends at
 * once; the program reserves no option bytes, so the segments do not
 * change), and PARSE_ALL_HDR_OPT, before each incoming segment that takes
 * the slow path (header prediction skips it for plain in-order ACKs,
 * measured: 19 calls in a 12-s flow).  An ACK that sends nothing leaves its
 * sample to the next ACK that does, which overwrites it: a sample lost,
 * never one counted twice.
 *
 * Why not RTT_CB: the kernel calls it from tcp_rtt_estimator() only when an
 * ACK ends a round (snd_una passes rtt_seq), once per RTT with that ACK's
 * sample.  That ACK covers the last segment of the previous flight, the one
 * a delayed-ACK receiver holds for up to 40 ms, so those samples run high:
 * measured here (20 Mb/s x 40 ms, window 8) a mean of 60.3 ms against srtt
 * 44.9 ms, samples spread 41-79 ms each second.  An fentry program on
 * tcp_ack's path would see every ACK directly, but this machine refuses
 * tracing programs (EPERM) while it allows sock_ops.
 *
 * Deviation from a pure "fixed window": TCP_BPF_SNDCWND_CLAMP also sets
 * ssthresh to the clamp, so slow start ends there; a loss still lowers the
 * window as the algorithm decides (a ceiling, not a floor).  Below the
 * path's BDP + buffer no loss occurs and the window stays at the clamp.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "cwnd_clamp.h"

char _license[] SEC("license") = "GPL";

/* From include/uapi/linux/tcp.h (macros are not in vmlinux.h). */
#define SOL_TCP_LEVEL		6
#define BPF_SNDCWND_CLAMP	1002	/* TCP_BPF_SNDCWND_CLAMP */

/* Flows one run may clamp: a spec holds at most 64 flow entries of 64 each. */
#define CWND_CLAMP_MAX_FLOWS	4096

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CWND_CLAMP_MAX_FLOWS);
	__type(key, u16);	/* destination port, host byte order */
	__type(value, u32);	/* ceiling on snd_cwnd, packets */
} cwnd_clamp_ports SEC(".maps");

#define NSEC_PER_SEC		1000000000ULL
/* Seconds x flows of RTT statistics one run may hold: 64 flows x 1 hour. */
#define RTT_MAX_BUCKETS		(64 * 3600)

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RTT_MAX_BUCKETS);
	__uint(map_flags, BPF_F_NO_PREALLOC);	/* memory only for seconds used */
	__type(key, struct rtt_key);
	__type(value, struct rtt_stats);
} rtt_per_second SEC(".maps");

/* This run's clamped sockets: set by cwnd_clamp() when the connection is
 * established, freed with the socket. */
struct clamp_tag {
	u64 last_sent;	/* tp->rack.mstamp of the last sample recorded, us */
	u16 port;	/* destination port, host byte order: the key of the stats */
	u16 pad[3];
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct clamp_tag);
} clamped_socks SEC(".maps");

_Static_assert(sizeof(struct clamp_tag) == 16, "clamp_tag: one small value per socket");

static void record_rtt(u16 port, u32 mrtt_us)
{
	struct rtt_key key = { .port = port,
			       .second = (u32)(bpf_ktime_get_ns() / NSEC_PER_SEC) };
	struct rtt_stats *st, fresh = { .min_us = mrtt_us, .max_us = mrtt_us,
					.n = 1, .sum_us = mrtt_us };

	st = bpf_map_lookup_elem(&rtt_per_second, &key);
	if (!st) {
		/* Full map: the sample is lost, the flow is not disturbed. */
		bpf_map_update_elem(&rtt_per_second, &key, &fresh, BPF_NOEXIST);
		return;
	}
	/* One flow's ACKs are processed under its socket's lock: no lost updates. */
	if (mrtt_us < st->min_us)
		st->min_us = mrtt_us;
	if (mrtt_us > st->max_us)
		st->max_us = mrtt_us;
	st->n++;
	st->sum_us += mrtt_us;
}

/*
 * After an ACK of a tagged socket: record the sample the last ACK left in
 * tp->rack, if it left a new one (rack.mstamp moved).
 */
static void collect_rtt(struct bpf_sock *sk)
{
	struct clamp_tag *tag;
	struct tcp_sock *tp;
	u64 sent;
	u32 rtt_us;

	tag = bpf_sk_storage_get(&clamped_socks, sk, NULL, 0);
	if (!tag)
		return;
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return;
	sent = tp->rack.mstamp;
	rtt_us = tp->rack.rtt_us;
	if (sent == tag->last_sent || !rtt_us)
		return;
	tag->last_sent = sent;
	record_rtt(tag->port, rtt_us);
}

SEC("sockops")
int cwnd_clamp(struct bpf_sock_ops *skops)
{
	struct clamp_tag *tag;
	struct bpf_sock *sk;
	u16 port;
	u32 *pkts;
	int val;

	/* One read of skops->sk: the verifier's NULL check binds to that load. */
	sk = skops->sk;
	if (skops->op == BPF_SOCK_OPS_HDR_OPT_LEN_CB ||
	    skops->op == BPF_SOCK_OPS_PARSE_HDR_OPT_CB) {
		if (sk)
			collect_rtt(sk);
		return 1;	/* no option bytes reserved */
	}
	if (skops->op != BPF_SOCK_OPS_TCP_CONNECT_CB &&
	    skops->op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB)
		return 1;
	/*
	 * remote_port is the be16 port shifted into the high half of a be32
	 * (samples/bpf/tcp_bufs_kern.c compares bpf_ntohl() of it).
	 */
	port = (u16)bpf_ntohl(skops->remote_port);
	pkts = bpf_map_lookup_elem(&cwnd_clamp_ports, &port);
	if (!pkts)
		return 1;
	val = (int)*pkts;
	bpf_setsockopt(skops, SOL_TCP_LEVEL, BPF_SNDCWND_CLAMP, &val,
		       sizeof(val));
	if (skops->op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB || !sk)
		return 1;
	tag = bpf_sk_storage_get(&clamped_socks, sk, NULL,
				 BPF_SK_STORAGE_GET_F_CREATE);
	if (!tag)
		return 1;
	tag->port = port;
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
				  BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG |
				  BPF_SOCK_OPS_PARSE_ALL_HDR_OPT_CB_FLAG);
	return 1;
}
