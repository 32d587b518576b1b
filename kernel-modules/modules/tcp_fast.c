// SPDX-License-Identifier: GPL-2.0
/*
 * tcp_fast.c - FAST TCP congestion control as a loadable module ("fast").
 *
 * C. Jin, D. X. Wei, S. H. Low, "FAST TCP: motivation, architecture,
 * algorithms, performance", IEEE INFOCOM 2004 (Caltech, 2002-2004).
 *
 * The algorithm, its constants and every deviation from the paper live in
 * core/fast_core.h, shared with the BPF struct_ops build (bpf/fast.bpf.c)
 * and the user-space unit tests. This file connects the core to
 * tcp_congestion_ops, like net/ipv4/tcp_vegas.c.
 *
 * Parameters are module parameters (global defaults, writable at run time
 * in /sys/module/tcp_fast/parameters/, read at every window update so a
 * change applies within one update period). Unlike the BPF build there are
 * no per-network-namespace overrides and no event ring buffer; the state is
 * exported through INET_DIAG in the Vegas format (ss -i shows avgRTT as
 * "rtt" and baseRTT as "minrtt").
 *
 * Pacing (pacing_pct > 0): internal TCP pacing is requested and
 * cwnd * mss / avgRTT * pacing_pct / 100 is written to sk_pacing_rate and,
 * because tcp_update_pacing_rate() recomputes sk_pacing_rate after every
 * ACK, also to sk_max_pacing_rate, which caps that recomputation (the
 * module thereby owns SO_MAX_PACING_RATE while pacing is on).
 */
#include <linux/module.h>
#include <linux/version.h>
#include <linux/inet_diag.h>
#include <net/tcp.h>

#include "fast_core.h"

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

static uint alpha __read_mostly = FAST_DEF_ALPHA;
module_param(alpha, uint, 0644);
MODULE_PARM_DESC(alpha, "packets kept queued at equilibrium (1..10000)");

static uint gamma_num __read_mostly = FAST_DEF_GAMMA_NUM;
module_param(gamma_num, uint, 0644);
MODULE_PARM_DESC(gamma_num, "gamma numerator (gamma = num/den, 0 < gamma <= 1)");

static uint gamma_den __read_mostly = FAST_DEF_GAMMA_DEN;
module_param(gamma_den, uint, 0644);
MODULE_PARM_DESC(gamma_den, "gamma denominator (1..1000)");

static uint period_kind __read_mostly = FAST_DEF_PERIOD_KIND;
module_param(period_kind, uint, 0644);
MODULE_PARM_DESC(period_kind, "update period: 0 = every RTT, 1 = every other RTT, 2 = every period_us");

static uint period_us __read_mostly = FAST_DEF_PERIOD_US;
module_param(period_us, uint, 0644);
MODULE_PARM_DESC(period_us, "update period in microseconds when period_kind = 2 (100..60000000)");

static uint ewma_cap_q16 __read_mostly = FAST_EWMA_CAP_DEF_Q16;
module_param(ewma_cap_q16, uint, 0644);
MODULE_PARM_DESC(ewma_cap_q16, "cap of the avgRTT weight per sample, Q16 (8192 = 1/8)");

static uint mode __read_mostly = FAST_DEF_MODE;
module_param(mode, uint, 0644);
MODULE_PARM_DESC(mode, "0 = floor the new window (faithful), 1 = carry the fraction");

static uint mi_threshold_us __read_mostly = FAST_DEF_MI_THRESH_US;
module_param(mi_threshold_us, uint, 0644);
MODULE_PARM_DESC(mi_threshold_us, "queueing delay below which the multiplicative-increase phase runs (us, 0..1000000)");

static uint pacing_pct __read_mostly = FAST_DEF_PACING_PCT;
module_param(pacing_pct, uint, 0644);
MODULE_PARM_DESC(pacing_pct, "pacing rate in % of cwnd*mss/avgRTT (0 = leave pacing alone, ..1000)");

/* Snapshot of the module parameters, sanitized like a map from user space. */
static void fast_read_params(struct fast_params *p)
{
	p->alpha = READ_ONCE(alpha);
	p->gamma_num = READ_ONCE(gamma_num);
	p->gamma_den = READ_ONCE(gamma_den);
	p->period_kind = READ_ONCE(period_kind);
	p->period_us = READ_ONCE(period_us);
	p->ewma_cap_q16 = READ_ONCE(ewma_cap_q16);
	p->mode = READ_ONCE(mode);
	p->mi_threshold_us = READ_ONCE(mi_threshold_us);
	p->pacing_pct = READ_ONCE(pacing_pct);
	p->set_mask = FAST_P_ALL;
	fast_params_sanitize(p);
}

static void tcp_fast_init(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct fast_state *s = inet_csk_ca(sk);
	struct fast_params p;

	fast_read_params(&p);
	fast_init(s, &p, tcp_snd_cwnd(tp), tp->snd_nxt, tp->tcp_mstamp, 0);
	if (p.pacing_pct)
		cmpxchg(&sk->sk_pacing_status, SK_PACING_NONE, SK_PACING_NEEDED);
}

static void tcp_fast_pkts_acked(struct sock *sk, const struct ack_sample *sample)
{
	/* rtt_us < 0: no valid sample (Karn: retransmitted data). */
	if (sample->rtt_us > 0)
		fast_rtt_sample(inet_csk_ca(sk), (u32)sample->rtt_us,
				tcp_snd_cwnd(tcp_sk(sk)));
}

static void tcp_fast_pace(struct sock *sk, struct fast_state *s,
			  const struct fast_params *p, u32 cwnd)
{
	u64 rate;

	if (!p->pacing_pct) {
		if (s->flags & FAST_F_PACED) {	/* pacing switched off: uncap */
			WRITE_ONCE(sk->sk_max_pacing_rate, ~0UL);
			s->flags &= (u8)~FAST_F_PACED;
		}
		return;
	}
	rate = fast_pacing_rate(s, cwnd, tcp_sk(sk)->mss_cache, p->pacing_pct);
	if (!rate)
		return;
	cmpxchg(&sk->sk_pacing_status, SK_PACING_NONE, SK_PACING_NEEDED);
	WRITE_ONCE(sk->sk_max_pacing_rate, rate);
	WRITE_ONCE(sk->sk_pacing_rate, rate);
	s->flags |= FAST_F_PACED;
}

static void tcp_fast_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct fast_state *s = inet_csk_ca(sk);
	struct fast_ack a = {
		.now_us = tp->tcp_mstamp,
		.ack = ack,
		.snd_nxt = tp->snd_nxt,
		.cwnd = tcp_snd_cwnd(tp),
		.cwnd_clamp = tp->snd_cwnd_clamp,
		.ssthresh = tp->snd_ssthresh,
		.acked = acked,
		.cwnd_limited = tcp_is_cwnd_limited(sk),
	};
	u32 before = a.cwnd;

	if (fast_ack_begin(s, &a)) {
		struct fast_params p;

		fast_read_params(&p);
		fast_update(s, &p, &a);
		tcp_fast_pace(sk, s, &p, a.cwnd);
		tp->snd_ssthresh = a.ssthresh;
	}
	fast_ack_end(s, &a);
	if (a.cwnd != before)
		tcp_snd_cwnd_set(tp, a.cwnd);
}

static u32 tcp_fast_ssthresh(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	u32 ssthresh = fast_ssthresh(tcp_snd_cwnd(tp));

	fast_on_loss(inet_csk_ca(sk), ssthresh, tp->snd_nxt, false);
	return ssthresh;
}

static void tcp_fast_cwnd_event(struct sock *sk, enum tcp_ca_event ev)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	/* tcp_enter_loss(): ssthresh() was just called, cwnd is about to be ~1. */
	if (ev == CA_EVENT_LOSS)
		fast_on_loss(inet_csk_ca(sk), tp->snd_ssthresh, tp->snd_nxt, true);
}

/* INET_DIAG in the Vegas format: avgRTT as rtt, baseRTT as minrtt. */
static size_t tcp_fast_get_info(struct sock *sk, u32 ext, int *attr,
				union tcp_cc_info *info)
{
	const struct fast_state *s = inet_csk_ca(sk);

	if (ext & (1 << (INET_DIAG_VEGASINFO - 1))) {
		info->vegas.tcpv_enabled = 1;
		info->vegas.tcpv_rttcnt = s->rtt_count;
		info->vegas.tcpv_rtt = fast_avg_rtt_us(s);
		info->vegas.tcpv_minrtt = fast_has_rtt(s) ? s->base_rtt_us : 0;
		*attr = INET_DIAG_VEGASINFO;
		return sizeof(struct tcpvegas_info);
	}
	return 0;
}

static struct tcp_congestion_ops tcp_fast __read_mostly = {
	.init		= tcp_fast_init,
	.ssthresh	= tcp_fast_ssthresh,
	.undo_cwnd	= tcp_reno_undo_cwnd,
	.cong_avoid	= tcp_fast_cong_avoid,
	.pkts_acked	= tcp_fast_pkts_acked,
	.cwnd_event	= tcp_fast_cwnd_event,
	.get_info	= tcp_fast_get_info,

	.owner		= THIS_MODULE,
	.name		= "fast",
};

static int __init tcp_fast_register(void)
{
	BUILD_BUG_ON(sizeof(struct fast_state) > ICSK_CA_PRIV_SIZE);
	return tcp_register_congestion_control(&tcp_fast);
}

static void __exit tcp_fast_unregister(void)
{
	tcp_unregister_congestion_control(&tcp_fast);
}

module_init(tcp_fast_register);
module_exit(tcp_fast_unregister);

MODULE_AUTHOR("fastlab");
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("FAST TCP (Jin, Wei, Low; INFOCOM 2004)");
MODULE_VERSION("1.0");
