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
 * The a(w)/b(w) table starts as the RFC 3649 Appendix B table compiled in
 * from core/hstcp_table_default.h. A module cannot regenerate it (no floating
 * point in the kernel), so user space does: `fastlab-cc table ... --module`
 * prints the rows for other Low_Window/High_Window/High_P/High_Decrease
 * values as one line, which is written to the `table` parameter:
 *
 *   LOW_WINDOW HIGH_WINDOW HIGH_P_FEMTO HIGH_DEC_PPM NROWS w,a,b_q16 ...
 *
 * The rows are checked (hstcp_table_check) and swapped in whole under RCU;
 * the four read-only parameters low_window, high_window, high_p_femto and
 * high_decrease_ppm then report what the live table was generated from.
 * Like everything of this build the table is global (the BPF build has
 * per-netns overrides of max_ssthresh only, too). max_ssthresh is a run-time
 * module parameter, re-read once per RTT.
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

/*
 * Two tables: the live one (readers under RCU) and a spare that a `table`
 * write fills before it is published. Writes are serialised by the module
 * parameter lock; after synchronize_rcu() no reader holds the old table,
 * which becomes the next spare.
 */
static struct hstcp_table hstcp_tabs[2];
static struct hstcp_table __rcu *hstcp_live;
static unsigned int hstcp_spare;

/* What the live table was generated from (read-only; set with it). */
static uint low_window = HSTCP_DEF_LOW_WINDOW;
static uint high_window = HSTCP_DEF_HIGH_WINDOW;
static unsigned long long high_p_femto = HSTCP_DEF_HIGH_P_FEMTO;
static uint high_decrease_ppm = HSTCP_DEF_HIGH_DEC_PPM;

/*
 * Parse a `table` write into @t and the four parameters it was generated
 * from into @p. Numbers are read as 64-bit and range-checked (a 32-bit
 * conversion would wrap silently); anything else is -EINVAL.
 */
static int hstcp_parse_table(const char *val, struct hstcp_table *t,
			     struct hstcp_params *p)
{
	unsigned long long lw, hw, hp, hd, nrows, w, a, b;
	u32 i;
	int n;

	if (sscanf(val, "%llu %llu %llu %llu %llu%n", &lw, &hw, &hp, &hd,
		   &nrows, &n) != 5)
		return -EINVAL;
	if (lw < HSTCP_LOW_WINDOW_MIN || lw > HSTCP_LOW_WINDOW_MAX ||
	    hw <= lw || hw > HSTCP_HIGH_WINDOW_MAX ||
	    hp < HSTCP_HIGH_P_MIN_FEMTO || hp > HSTCP_HIGH_P_MAX_FEMTO ||
	    hd < HSTCP_HIGH_DEC_MIN_PPM || hd > HSTCP_HIGH_DEC_MAX_PPM ||
	    nrows < 1 || nrows > HSTCP_MAX_ROWS)
		return -EINVAL;
	p->low_window = lw;
	p->high_window = hw;
	p->high_p_femto = hp;
	p->high_decrease_ppm = hd;
	val += n;
	for (i = 0; i < nrows; i++) {
		if (sscanf(val, " %llu,%llu,%llu%n", &w, &a, &b, &n) != 3 ||
		    w > U32_MAX || a > U32_MAX || b > U32_MAX)
			return -EINVAL;
		t->rows[i].cwnd = w;
		t->rows[i].a = a;
		t->rows[i].b_q16 = b;
		val += n;
	}
	t->nrows = nrows;
	/* A truncated or over-long write is refused whole. */
	if (*skip_spaces(val) || hstcp_table_check(t))
		return -EINVAL;
	return 0;
}

static int hstcp_table_set(const char *val, const struct kernel_param *kp)
{
	struct hstcp_table *t = &hstcp_tabs[hstcp_spare];
	struct hstcp_params p;
	int err;

	err = hstcp_parse_table(val, t, &p);
	if (err)
		return err;
	rcu_assign_pointer(hstcp_live, t);
	hstcp_spare ^= 1;
	WRITE_ONCE(low_window, p.low_window);
	WRITE_ONCE(high_window, p.high_window);
	WRITE_ONCE(high_p_femto, p.high_p_femto);
	WRITE_ONCE(high_decrease_ppm, p.high_decrease_ppm);
	synchronize_rcu();	/* the old table is nobody's now: the next spare */
	return 0;
}

static int hstcp_table_get(char *buf, const struct kernel_param *kp)
{
	const struct hstcp_table *t;
	u32 nrows;

	rcu_read_lock();
	t = rcu_dereference(hstcp_live);
	nrows = t ? t->nrows : 0;
	rcu_read_unlock();
	return sysfs_emit(buf, "%u rows\n", nrows);
}

static const struct kernel_param_ops hstcp_table_ops = {
	.set = hstcp_table_set,
	.get = hstcp_table_get,
};
module_param_cb(table, &hstcp_table_ops, NULL, 0644);
MODULE_PARM_DESC(table, "a(w)/b(w) table: LOW_WINDOW HIGH_WINDOW HIGH_P_FEMTO HIGH_DEC_PPM NROWS w,a,b_q16 ... (fastlab-cc table --module)");
/* Set with the table only: a load-time low_window=N would label rows it did not make. */
static int hstcp_label_set(const char *val, const struct kernel_param *kp)
{
	return -EPERM;
}

static const struct kernel_param_ops hstcp_uint_label_ops = {
	.set = hstcp_label_set,
	.get = param_get_uint,
};

static const struct kernel_param_ops hstcp_ullong_label_ops = {
	.set = hstcp_label_set,
	.get = param_get_ullong,
};

module_param_cb(low_window, &hstcp_uint_label_ops, &low_window, 0444);
MODULE_PARM_DESC(low_window, "Low_Window of the live table, packets (set with table)");
module_param_cb(high_window, &hstcp_uint_label_ops, &high_window, 0444);
MODULE_PARM_DESC(high_window, "High_Window of the live table, packets (set with table)");
module_param_cb(high_p_femto, &hstcp_ullong_label_ops, &high_p_femto, 0444);
MODULE_PARM_DESC(high_p_femto, "High_P of the live table, in 1e-15 (set with table)");
module_param_cb(high_decrease_ppm, &hstcp_uint_label_ops, &high_decrease_ppm, 0444);
MODULE_PARM_DESC(high_decrease_ppm, "High_Decrease of the live table, in 1e-6 (set with table)");

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
	rcu_read_lock();
	hstcp_cong_avoid(s, rcu_dereference(hstcp_live), s->max_ssthresh, &a);
	rcu_read_unlock();
	tcp_snd_cwnd_set(tp, a.cwnd);
	tp->snd_cwnd_cnt = a.cwnd_cnt;
}

static u32 tcp_hstcp_ssthresh(struct sock *sk)
{
	u32 ssthresh;

	/* Fresh index from the current window (Linux: stale after slow start). */
	rcu_read_lock();
	ssthresh = hstcp_ssthresh(inet_csk_ca(sk), rcu_dereference(hstcp_live),
				  tcp_snd_cwnd(tcp_sk(sk)));
	rcu_read_unlock();
	return ssthresh;
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

	/* A table given at load time (insmod ... table=...) is already live. */
	if (!rcu_access_pointer(hstcp_live)) {
		struct hstcp_table *t = &hstcp_tabs[hstcp_spare];

		memcpy(t->rows, hstcp_default_rows, sizeof(hstcp_default_rows));
		t->nrows = HSTCP_DEFAULT_ROWS;
		rcu_assign_pointer(hstcp_live, t);
		hstcp_spare ^= 1;
	}
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
