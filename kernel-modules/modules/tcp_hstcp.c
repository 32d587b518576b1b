// SPDX-License-Identifier: GPL-2.0
/*
 * tcp_hstcp.c - HighSpeed TCP (RFC 3649) with Limited Slow-Start (RFC 3742)
 * as a loadable module ("hstcp").
 *
 * S. Floyd, "HighSpeed TCP for Large Congestion Windows", RFC 3649;
 * S. Floyd, "Limited Slow-Start for TCP with Large Congestion Windows",
 * RFC 3742. After Linux net/ipv4/tcp_highspeed.c (John Heffner); the
 * differences from it are listed in core/hstcp_core.h.
 *
 * The a(w)/b(w) table is compiled in from core/hstcp_table_default.h (the
 * RFC 3649 Appendix B table): a module cannot do the floating-point
 * regeneration. To build with other Low_Window/High_Window/High_P/
 * High_Decrease values, replace the rows in that header with the output of
 * `fastlab-cc table low_window=... --c` and rebuild. max_ssthresh is a
 * run-time module parameter (global; the BPF build also has per-netns
 * overrides), re-read once per RTT.
 */
#include <linux/module.h>
#include <linux/version.h>
#include <net/tcp.h>

#include "hstcp_core.h"
#include "hstcp_table_default.h"

#if LINUX_VERSION_CODE < KERNEL_VERSION(5, 19, 0)
static inline u32 tcp_snd_cwnd(const struct tcp_sock *tp)
{
	return tp->snd_cwnd;
}

static inline void tcp_snd_cwnd_set(struct tcp_sock *tp, u32 val)
{
	tp->snd_cwnd = val;
}
#endif

static uint max_ssthresh __read_mostly = HSTCP_DEF_MAX_SSTHRESH;
module_param(max_ssthresh, uint, 0644);
MODULE_PARM_DESC(max_ssthresh, "RFC 3742 Limited Slow-Start threshold in packets (0 = off, RFC recommends 100)");

/* Filled once at module load from the compiled-in default rows. */
static struct hstcp_table hstcp_tab __read_mostly;

static void hstcp_read_params(struct hstcp_params *p)
{
	hstcp_params_default(p);
	p->max_ssthresh = READ_ONCE(max_ssthresh);
}

static void tcp_hstcp_init(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct hstcp_params p;

	hstcp_read_params(&p);
	hstcp_init(inet_csk_ca(sk), &p, tp->snd_nxt, 0);
	/* As Linux clamps for its Q8 arithmetic (the core also caps growth). */
	tp->snd_cwnd_clamp = min_t(u32, tp->snd_cwnd_clamp, HSTCP_CWND_MAX);
}

static void tcp_hstcp_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct hstcp_state *s = inet_csk_ca(sk);
	struct hstcp_ack a;

	if (hstcp_rtt_end(s, ack, tp->snd_nxt)) {
		struct hstcp_params p;

		hstcp_read_params(&p);
		hstcp_refresh(s, &p);
	}
	if (!tcp_is_cwnd_limited(sk))
		return;

	a.cwnd = tcp_snd_cwnd(tp);
	a.cwnd_cnt = tp->snd_cwnd_cnt;
	a.ssthresh = tp->snd_ssthresh;
	a.cwnd_clamp = tp->snd_cwnd_clamp;
	a.acked = acked;
	hstcp_cong_avoid(s, &hstcp_tab, s->max_ssthresh, &a);
	tcp_snd_cwnd_set(tp, a.cwnd);
	tp->snd_cwnd_cnt = a.cwnd_cnt;
}

static u32 tcp_hstcp_ssthresh(struct sock *sk)
{
	/* Fresh index from the current window (Linux: stale after slow start). */
	return hstcp_ssthresh(inet_csk_ca(sk), &hstcp_tab, tcp_snd_cwnd(tcp_sk(sk)));
}

static struct tcp_congestion_ops tcp_hstcp __read_mostly = {
	.init		= tcp_hstcp_init,
	.ssthresh	= tcp_hstcp_ssthresh,
	.undo_cwnd	= tcp_reno_undo_cwnd,
	.cong_avoid	= tcp_hstcp_cong_avoid,

	.owner		= THIS_MODULE,
	.name		= "hstcp",
};

static int __init tcp_hstcp_register(void)
{
	BUILD_BUG_ON(sizeof(struct hstcp_state) > ICSK_CA_PRIV_SIZE);
	BUILD_BUG_ON(HSTCP_DEFAULT_ROWS > HSTCP_MAX_ROWS);

	memcpy(hstcp_tab.rows, hstcp_default_rows, sizeof(hstcp_default_rows));
	hstcp_tab.nrows = HSTCP_DEFAULT_ROWS;
	return tcp_register_congestion_control(&tcp_hstcp);
}

static void __exit tcp_hstcp_unregister(void)
{
	tcp_unregister_congestion_control(&tcp_hstcp);
}

module_init(tcp_hstcp_register);
module_exit(tcp_hstcp_unregister);

MODULE_AUTHOR("fastlab");
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("HighSpeed TCP (RFC 3649) with Limited Slow-Start (RFC 3742)");
MODULE_VERSION("1.0");
