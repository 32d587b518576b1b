// SPDX-License-Identifier: GPL-2.0
/*
 * hstcp.bpf.c - HighSpeed TCP (RFC 3649) with Limited Slow-Start (RFC 3742)
 * as a BPF struct_ops congestion control ("hstcp").
 *
 * The algorithm and its differences from Linux tcp_highspeed.c live in
 * ../core/hstcp_core.h. This file connects the core to the kernel hooks:
 *  - the a(w)/b(w) table is read from hstcp_table[slot], written by user
 *    space (fastlab-cc regenerates it from Low_Window, High_Window, High_P,
 *    High_Decrease); the live slot and max_ssthresh come from hstcp_params[0]
 *    and per-netns overrides (max_ssthresh only) from hstcp_netns;
 *  - parameters are re-read once per RTT (and at init and loss), so a
 *    change applies within one RTT without a map lookup on every ACK;
 *  - events: one per RTT, one per slow-start mode change, one per loss.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "../core/hstcp_core.h"
#include "bpf_tcp_glue.h"

char _license[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct hstcp_params);
} hstcp_params SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FASTLAB_MAX_NETNS);
	__type(key, u32);			/* netns inode number */
	__type(value, struct hstcp_params);	/* fields in set_mask override */
} hstcp_netns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HSTCP_TABLE_SLOTS);	/* double buffer */
	__type(key, u32);
	__type(value, struct hstcp_table);
} hstcp_table SEC(".maps");

/* Events: per-reader rings by netns, else the shared ring (fastlab_bpf.h). */
FASTLAB_RING_MAPS(hstcp_events, hstcp_rings);

static __always_inline struct hstcp_state *hstcp_ca(const struct sock *sk)
{
	return (struct hstcp_state *)inet_csk_ca(sk);
}

static __always_inline void hstcp_load_params(u32 netns_ino,
					      struct hstcp_params *p)
{
	const struct hstcp_params *g, *n;
	u32 zero = 0;

	g = bpf_map_lookup_elem(&hstcp_params, &zero);
	if (g && g->set_mask)
		*p = *g;
	else
		hstcp_params_default(p);
	n = bpf_map_lookup_elem(&hstcp_netns, &netns_ino);
	if (n)
		hstcp_params_merge(p, n);
}

/* NULL until user space has written a table: the core then acts as Reno. */
static __always_inline const struct hstcp_table *hstcp_live_table(const struct hstcp_state *s)
{
	u32 slot = s->table_slot % HSTCP_TABLE_SLOTS;

	return bpf_map_lookup_elem(&hstcp_table, &slot);
}

static __always_inline void hstcp_emit(struct sock *sk, const struct hstcp_state *s,
				       const struct hstcp_table *t, u32 kind,
				       u32 cwnd, u32 ssthresh)
{
	struct hstcp_event *e;

	e = fastlab_ring_reserve(&hstcp_events, &hstcp_rings, s->netns_ino,
				 sizeof(*e));
	if (!e)
		return;
	e->ts_ns = bpf_ktime_get_ns();
	fastlab_sockid(sk, s->netns_ino, &e->id);
	e->kind = kind;
	e->cwnd = cwnd;
	e->ssthresh = ssthresh;
	e->ai = hstcp_table_index(t, cwnd);
	hstcp_ab(t, e->ai, cwnd, &e->a_q8, &e->b_q16);
	e->mode = s->mode;
	e->max_ssthresh = s->max_ssthresh;
	bpf_ringbuf_submit(e, 0);
}

SEC("struct_ops/hstcp_init")
void BPF_PROG(fastlab_hstcp_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct hstcp_state *s = hstcp_ca(sk);
	u32 ino = sk_netns_ino(sk);
	struct hstcp_params p;

	hstcp_load_params(ino, &p);
	hstcp_init(s, &p, tp->snd_nxt, ino);
	hstcp_emit(sk, s, hstcp_live_table(s), FASTLAB_EV_INIT, tp->snd_cwnd,
		   tp->snd_ssthresh);
}

SEC("struct_ops/hstcp_cong_avoid")
void BPF_PROG(fastlab_hstcp_cong_avoid, struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct hstcp_state *s = hstcp_ca(sk);
	const struct hstcp_table *t;
	struct hstcp_ack a;
	bool rtt_end;
	u8 mode_before = s->mode;

	rtt_end = hstcp_rtt_end(s, ack, tp->snd_nxt);
	if (rtt_end) {
		struct hstcp_params p;

		hstcp_load_params(s->netns_ino, &p);
		hstcp_refresh(s, &p);
	}
	t = hstcp_live_table(s);

	if (tcp_is_cwnd_limited(sk)) {
		a.cwnd = tp->snd_cwnd;
		a.cwnd_cnt = tp->snd_cwnd_cnt;
		a.ssthresh = tp->snd_ssthresh;
		a.cwnd_clamp = tp->snd_cwnd_clamp;
		a.acked = acked;
		hstcp_cong_avoid(s, t, s->max_ssthresh, &a);
		if (a.cwnd != tp->snd_cwnd)
			tp->snd_cwnd = a.cwnd;
		if (a.cwnd_cnt != tp->snd_cwnd_cnt)
			tp->snd_cwnd_cnt = a.cwnd_cnt;
	}

	if (s->mode != mode_before)
		hstcp_emit(sk, s, t, FASTLAB_EV_MODE, tp->snd_cwnd,
			   tp->snd_ssthresh);
	else if (rtt_end)
		hstcp_emit(sk, s, t, FASTLAB_EV_RTT, tp->snd_cwnd,
			   tp->snd_ssthresh);
}

SEC("struct_ops/hstcp_ssthresh")
u32 BPF_PROG(fastlab_hstcp_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct hstcp_state *s = hstcp_ca(sk);
	struct hstcp_params p;
	const struct hstcp_table *t;
	u32 ssthresh;

	hstcp_load_params(s->netns_ino, &p);
	hstcp_refresh(s, &p);
	t = hstcp_live_table(s);
	ssthresh = hstcp_ssthresh(s, t, tp->snd_cwnd);	/* fresh index */
	hstcp_emit(sk, s, t, FASTLAB_EV_LOSS, tp->snd_cwnd, ssthresh);
	return ssthresh;
}

SEC("struct_ops/hstcp_undo_cwnd")
u32 BPF_PROG(fastlab_hstcp_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops hstcp = {
	.init		= (void *)fastlab_hstcp_init,
	.ssthresh	= (void *)fastlab_hstcp_ssthresh,
	.cong_avoid	= (void *)fastlab_hstcp_cong_avoid,
	.undo_cwnd	= (void *)fastlab_hstcp_undo_cwnd,
	.name		= "hstcp",
};
