/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bpf_tcp_glue.h - the small part of include/net/tcp.h a BPF congestion
 * control needs, re-expressed over vmlinux.h (as the kernel's BPF CC
 * selftests do: tools/testing/selftests/bpf/progs/bpf_cubic.c).
 */
#ifndef FASTLAB_BPF_TCP_GLUE_H
#define FASTLAB_BPF_TCP_GLUE_H

#include "fastlab_bpf.h"

/* Kernel functions a BPF CC may call (net/ipv4/bpf_tcp_ca.c kfunc set). */
extern u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline void *inet_csk_ca(const struct sock *sk)
{
	return (void *)inet_csk(sk)->icsk_ca_priv;
}

static __always_inline bool tcp_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/* include/net/tcp.h tcp_is_cwnd_limited(), as in bpf_cubic.c */
static __always_inline bool tcp_is_cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	/* If in slow start, ensure cwnd grows to twice what was ACKed. */
	if (tcp_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return !!BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited);
}

/*
 * Inode number of the socket's network namespace: what stat() reports for
 * /proc/PID/ns/net. A BTF pointer walk (CO-RE relocated), no helper needed.
 */
static __always_inline u32 sk_netns_ino(const struct sock *sk)
{
	return sk->__sk_common.skc_net.net->ns.inum;
}

/*
 * The event ring maps of a program: the shared ring and the per-netns rings
 * (fastlab_bpf.h, "Per-reader rings"). The inner map is a template: readers
 * insert rings they created with the same type and size (the kernel refuses
 * any other), so FASTLAB_RINGBUF_BYTES is the size on both sides.
 */
struct fastlab_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, FASTLAB_RINGBUF_BYTES);
};

#define FASTLAB_RING_MAPS(shared, rings)				\
	struct fastlab_ring shared SEC(".maps");			\
	struct {							\
		__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);		\
		__uint(max_entries, FASTLAB_MAX_RINGS);			\
		__type(key, u32);	/* netns inode number */	\
		__array(values, struct fastlab_ring);			\
	} rings SEC(".maps")

/*
 * Reserve @size bytes for an event of a socket in namespace @netns_ino: in
 * the ring a reader registered for that namespace in @rings, else in
 * @shared. NULL when the ring is full or nobody reads it: the event is
 * dropped (never moved to the shared ring, where another run's reader would
 * take it).
 */
static __always_inline void *fastlab_ring_reserve(void *shared, void *rings,
						  u32 netns_ino, u64 size)
{
	void *ring = bpf_map_lookup_elem(rings, &netns_ino);

	if (ring)
		return bpf_ringbuf_reserve(ring, size, 0);
	return bpf_ringbuf_reserve(shared, size, 0);
}

static __always_inline void fastlab_sockid(const struct sock *sk, u32 netns_ino,
					   struct fastlab_sockid *id)
{
	id->saddr = sk->__sk_common.skc_rcv_saddr;
	id->daddr = sk->__sk_common.skc_daddr;
	id->sport = sk->__sk_common.skc_num;
	id->dport = bpf_ntohs(sk->__sk_common.skc_dport);
	id->netns_ino = netns_ino;
}

#endif /* FASTLAB_BPF_TCP_GLUE_H */
