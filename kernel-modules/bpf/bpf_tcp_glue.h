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
