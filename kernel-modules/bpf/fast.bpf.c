// SPDX-License-Identifier: GPL-2.0
/*
 * fast.bpf.c - FAST TCP as a BPF struct_ops congestion control ("fast").
 *
 * C. Jin, D. X. Wei, S. H. Low, "FAST TCP: motivation, architecture,
 * algorithms, performance", IEEE INFOCOM 2004. The algorithm and every
 * deviation from the paper live in ../core/fast_core.h; this file only
 * connects the core to the kernel's tcp_congestion_ops hooks, the parameter
 * maps and the event ring buffer.
 *
 * BPF-specific notes:
 *  - Parameters: fast_params[0] holds the global values, fast_netns holds
 *    per-network-namespace overrides keyed by the namespace inode number
 *    (the socket's sk->__sk_common.skc_net.net->ns.inum). Both are read at
 *    every window update, so a change applies within one update period.
 *  - Pacing: when pacing_pct > 0 the program asks for TCP internal pacing
 *    (sk_pacing_status = SK_PACING_NEEDED) and at each update computes
 *    rate = cwnd * mss / avgRTT * pacing_pct / 100. Writing sk_pacing_rate
 *    alone does not last: for a cong_avoid-style CC, tcp_cong_control()
 *    calls tcp_update_pacing_rate() after every ACK, which recomputes
 *    cwnd * mss / srtt * 120% (200% in slow start). So the rate is also set
 *    as SO_MAX_PACING_RATE with bpf_setsockopt(): the kernel caps its own
 *    recomputation by it, and the effective rate is
 *    min(kernel rate, FAST rate). Side effect: FAST owns the socket's
 *    SO_MAX_PACING_RATE while pacing_pct > 0 (reset to unlimited when
 *    pacing_pct returns to 0; release() may not call setsockopt, so a socket
 *    switched to another CC keeps the last cap). Kernels that refuse the
 *    sk_pacing_* writes fail verification; the loader then sets
 *    pacing_write = false, the verifier prunes the writes as dead code and
 *    only the SO_MAX_PACING_RATE cap remains (it also requests internal
 *    pacing).
 *  - Written fields: snd_cwnd, snd_ssthresh, icsk_ca_priv, sk_pacing_*.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "../core/fast_core.h"
#include "bpf_tcp_glue.h"

char _license[] SEC("license") = "GPL";

/* Set by the loader before load; false when the kernel refuses pacing writes. */
const volatile bool pacing_write = true;

/* include/uapi/asm-generic/socket.h (macros are not in vmlinux.h) */
#define FASTLAB_SOL_SOCKET		1
#define FASTLAB_SO_MAX_PACING_RATE	47
/* bpf_setsockopt() takes an int: the largest cap is ~0U - 1 bytes/s. */
#define FASTLAB_PACING_CAP_MAX		0xfffffffeULL
#define FASTLAB_PACING_UNLIMITED	0xffffffffU

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct fast_params);
} fast_params SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FASTLAB_MAX_NETNS);
	__type(key, u32);			/* netns inode number */
	__type(value, struct fast_params);	/* fields in set_mask override */
} fast_netns SEC(".maps");

/* Events: per-reader rings by netns, else the shared ring (fastlab_bpf.h). */
FASTLAB_RING_MAPS(fast_events, fast_rings);

static __always_inline struct fast_state *fast_ca(const struct sock *sk)
{
	return (struct fast_state *)inet_csk_ca(sk);
}

/* Global params (defaults until user space wrote them), then netns overrides. */
static __always_inline void fast_load_params(u32 netns_ino, struct fast_params *p)
{
	const struct fast_params *g, *n;
	u32 zero = 0;

	g = bpf_map_lookup_elem(&fast_params, &zero);
	if (g && g->set_mask)
		*p = *g;
	else
		fast_params_default(p);
	n = bpf_map_lookup_elem(&fast_netns, &netns_ino);
	if (n)
		fast_params_merge(p, n);
	fast_params_sanitize(p);
}

static __always_inline void fast_emit(struct sock *sk, const struct fast_state *s,
				      const struct fast_params *p, u32 kind,
				      u32 cwnd_before, u32 cwnd, u32 ssthresh,
				      u64 pacing_rate, u32 pacing_how)
{
	struct fast_event *e;

	e = fastlab_ring_reserve(&fast_events, &fast_rings, s->netns_ino,
				 sizeof(*e));
	if (!e)
		return;		/* nobody reading or reader too slow: drop */
	e->ts_ns = bpf_ktime_get_ns();
	e->pacing_rate = pacing_rate;
	fastlab_sockid(sk, s->netns_ino, &e->id);
	e->kind = kind;
	e->base_rtt_us = fast_has_rtt(s) ? s->base_rtt_us : 0;
	e->avg_rtt_us = fast_avg_rtt_us(s);
	e->w_old = s->w_old;
	e->cwnd_before = cwnd_before;
	e->cwnd = cwnd;
	e->target = s->target;
	e->alpha = p->alpha;
	e->backlog = fast_backlog(s, cwnd);
	e->ssthresh = ssthresh;
	e->gamma_num = p->gamma_num;
	e->gamma_den = p->gamma_den;
	e->mode = p->mode;
	e->mi = !!(s->flags & FAST_F_MI);
	e->pacing = pacing_how;
	e->reserved = 0;
	bpf_ringbuf_submit(e, 0);
}

/*
 * Apply the pacing rate (see the header comment): the direct sk_pacing_*
 * writes only when the kernel accepted them at load (pacing_write), the
 * SO_MAX_PACING_RATE cap always (it also switches internal pacing on).
 * Returns FASTLAB_PACING_* bits.
 */
static __always_inline u32 fast_pace(struct sock *sk, struct fast_state *s,
				     const struct fast_params *p, u32 cwnd,
				     u64 *rate_out)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 how = FASTLAB_PACING_OFF;
	u64 rate;
	int cap;

	if (!p->pacing_pct) {
		if (s->flags & FAST_F_PACED) {	/* pacing switched off: uncap */
			cap = FASTLAB_PACING_UNLIMITED;
			bpf_setsockopt(sk, FASTLAB_SOL_SOCKET,
				       FASTLAB_SO_MAX_PACING_RATE, &cap, sizeof(cap));
			s->flags &= (u8)~FAST_F_PACED;
		}
		return how;
	}
	rate = fast_pacing_rate(s, cwnd, tp->mss_cache, p->pacing_pct);
	if (!rate)
		return how;
	rate = CC_MIN_U64(rate, FASTLAB_PACING_CAP_MAX);
	*rate_out = rate;
	if (pacing_write) {
		sk->sk_pacing_status = SK_PACING_NEEDED;
		sk->sk_pacing_rate = rate;
		how |= FASTLAB_PACING_WRITE;
	}
	cap = (int)(u32)rate;
	if (!bpf_setsockopt(sk, FASTLAB_SOL_SOCKET, FASTLAB_SO_MAX_PACING_RATE,
			    &cap, sizeof(cap))) {
		s->flags |= FAST_F_PACED;
		how |= FASTLAB_PACING_CAP;
	}
	return how;
}

SEC("struct_ops/fast_init")
void BPF_PROG(fastlab_fast_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct fast_state *s = fast_ca(sk);
	u32 ino = sk_netns_ino(sk);
	struct fast_params p;

	fast_load_params(ino, &p);
	fast_init(s, &p, tp->snd_cwnd, tp->snd_nxt, tp->tcp_mstamp, ino);
	if (pacing_write && p.pacing_pct)
		sk->sk_pacing_status = SK_PACING_NEEDED;
	fast_emit(sk, s, &p, FASTLAB_EV_INIT, tp->snd_cwnd, tp->snd_cwnd,
		  tp->snd_ssthresh, 0, FASTLAB_PACING_OFF);
}

SEC("struct_ops/fast_pkts_acked")
void BPF_PROG(fastlab_fast_pkts_acked, struct sock *sk,
	      const struct ack_sample *sample)
{
	/* rtt_us < 0: no valid sample (Karn: retransmitted data). */
	if (sample->rtt_us > 0)
		fast_rtt_sample(fast_ca(sk), (u32)sample->rtt_us,
				tcp_sk(sk)->snd_cwnd);
}

SEC("struct_ops/fast_cong_avoid")
void BPF_PROG(fastlab_fast_cong_avoid, struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct fast_state *s = fast_ca(sk);
	struct fast_ack a = {
		.now_us = tp->tcp_mstamp,
		.ack = ack,
		.snd_nxt = tp->snd_nxt,
		.cwnd = tp->snd_cwnd,
		.cwnd_clamp = tp->snd_cwnd_clamp,
		.ssthresh = tp->snd_ssthresh,
		.acked = acked,
		.cwnd_limited = tcp_is_cwnd_limited(sk),
	};
	u32 before = a.cwnd;

	if (fast_ack_begin(s, &a)) {
		struct fast_params p;
		u64 rate = 0;
		u32 upd_before = a.cwnd, how = FASTLAB_PACING_OFF;

		fast_load_params(s->netns_ino, &p);
		fast_update(s, &p, &a);
		how = fast_pace(sk, s, &p, a.cwnd, &rate);
		if (a.ssthresh != tp->snd_ssthresh)
			tp->snd_ssthresh = a.ssthresh;
		fast_emit(sk, s, &p, FASTLAB_EV_UPDATE, upd_before, a.cwnd,
			  a.ssthresh, rate, how);
	}
	fast_ack_end(s, &a);
	if (a.cwnd != before)
		tp->snd_cwnd = a.cwnd;
}

SEC("struct_ops/fast_ssthresh")
u32 BPF_PROG(fastlab_fast_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct fast_state *s = fast_ca(sk);
	u32 ssthresh = fast_ssthresh(tp->snd_cwnd);
	struct fast_params p;

	fast_on_loss(s, ssthresh, tp->snd_nxt, false);
	fast_load_params(s->netns_ino, &p);
	fast_emit(sk, s, &p, FASTLAB_EV_LOSS, tp->snd_cwnd, tp->snd_cwnd,
		  ssthresh, 0, FASTLAB_PACING_OFF);
	return ssthresh;
}

SEC("struct_ops/fast_cwnd_event")
void BPF_PROG(fastlab_fast_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct fast_state *s = fast_ca(sk);
	struct fast_params p;

	/* tcp_enter_loss(): ssthresh() was just called, cwnd is about to be ~1. */
	if (ev != CA_EVENT_LOSS)
		return;
	fast_on_loss(s, tp->snd_ssthresh, tp->snd_nxt, true);
	fast_load_params(s->netns_ino, &p);
	fast_emit(sk, s, &p, FASTLAB_EV_RTO, tp->snd_cwnd, tp->snd_cwnd,
		  tp->snd_ssthresh, 0, FASTLAB_PACING_OFF);
}

SEC("struct_ops/fast_undo_cwnd")
u32 BPF_PROG(fastlab_fast_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops fast = {
	.init		= (void *)fastlab_fast_init,
	.ssthresh	= (void *)fastlab_fast_ssthresh,
	.cong_avoid	= (void *)fastlab_fast_cong_avoid,
	.pkts_acked	= (void *)fastlab_fast_pkts_acked,
	.cwnd_event	= (void *)fastlab_fast_cwnd_event,
	.undo_cwnd	= (void *)fastlab_fast_undo_cwnd,
	.name		= "fast",
};
