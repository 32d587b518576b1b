/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fast_core.h - integer core of FAST TCP, shared by the BPF struct_ops
 * program (bpf/fast.bpf.c), the loadable module (modules/tcp_fast.c) and
 * the user-space unit tests (tests/test_cores.c).
 *
 * FAST TCP: C. Jin, D. X. Wei, S. H. Low, "FAST TCP: motivation,
 * architecture, algorithms, performance", IEEE INFOCOM 2004; and
 * C. Jin, D. X. Wei, S. H. Low et al., "FAST TCP: From Theory to
 * Experiments", IEEE Network 19(1), 2005 (Caltech, 2002-2004).
 *
 * Once per update period the window is set to
 *
 *     w_new = min(2w, (1 - gamma) w + gamma (baseRTT/avgRTT * w_old + alpha))
 *
 * where w is the current window, w_old the window when the acknowledged
 * packet was sent, baseRTT the minimum RTT seen, avgRTT an exponentially
 * weighted average of RTT samples (weight min(3/cwnd, 1/8) per sample) and
 * alpha the number of packets the flow aims to keep queued in the path.
 * Without rounding the equilibrium is w* = alpha * avgRTT / (avgRTT - baseRTT).
 *
 * Deviations from the paper and the Caltech Linux prototype (also listed in
 * kernel-modules/README.md):
 *  1. w_old is approximated by the window recorded at the last RTT boundary,
 *     i.e. the window one RTT ago. The prototype stamped every skb in the
 *     retransmit queue with the window at send time; neither BPF struct_ops
 *     nor a module can do that without touching tcp_output.c.
 *  2. An RTT boundary is detected Vegas style: an RTT ends when an ACK
 *     covers the snd_nxt recorded at the previous boundary.
 *  3. The update period is a parameter: every RTT (the paper), every other
 *     RTT (the prototype) or a fixed number of microseconds.
 *  4. Integer arithmetic: floor mode reproduces the prototype's floored
 *     update, whose equilibrium lies in [(alpha-2)D/(D-d), alpha D/(D-d)];
 *     carry mode keeps the fractional window (Q16) for the next update so
 *     that the equilibrium is alpha D/(D-d) to within one packet.
 *  5. Multiplicative-increase phase: while the queueing delay is ~0 -
 *     avgRTT - baseRTT below mi_threshold_us *and* the flow's backlog below
 *     alpha/2 (at high speed alpha packets can be less than the threshold;
 *     MI must not fight the equilibrium) - the window may grow per ACK
 *     like slow start, at most doubling per update period (the 2w cap of
 *     the update equation), and an update never shrinks it. Before the first
 *     update this is ordinary slow start.
 *  6. Loss: ssthresh = max(cwnd/2, 2) as Reno; the kernel's PRR / RTO
 *     machinery then moves cwnd. After an RTO the MI phase regrows the
 *     window up to ssthresh. baseRTT is the minimum over the connection's
 *     lifetime (no route-change detection).
 *  7. No growth while the sender is not cwnd-limited (decreases still apply).
 *  8. Pacing: see fast_pacing_rate() and the BPF/module glue.
 */
#ifndef FASTLAB_FAST_CORE_H
#define FASTLAB_FAST_CORE_H

#include "cc_compat.h"

/* ---- Fixed point ---------------------------------------------------- */
#define FAST_FP_SHIFT		16	/* windows, RTT average and weights: Q16 */
#define FAST_FP_ONE		(1ULL << FAST_FP_SHIFT)
#define FAST_FP_MASK		(FAST_FP_ONE - 1)
#define FAST_RATIO_SHIFT	32	/* baseRTT/avgRTT: Q32 */

/* ---- Constants from the paper --------------------------------------- */
#define FAST_MIN_CWND		2U	/* packets: never below 2 (Reno's floor) */
#define FAST_EWMA_CWND_NUM	3U	/* per-sample avgRTT weight 3/cwnd ... */
#define FAST_EWMA_CAP_DEF_Q16	(FAST_FP_ONE / 8)	/* ... capped at 1/8 */
#define FAST_USEC_PER_SEC	1000000ULL

/* ---- Parameters ------------------------------------------------------ */
enum fast_period_kind {
	FAST_PERIOD_RTT = 0,	/* update every RTT (paper) */
	FAST_PERIOD_2RTT = 1,	/* every other RTT (Caltech Linux prototype) */
	FAST_PERIOD_US = 2,	/* every period_us microseconds */
};

enum fast_mode {
	FAST_MODE_FLOOR = 0,	/* faithful: floor the new window */
	FAST_MODE_CARRY = 1,	/* carry the fractional part to the next update */
};

/* Ranges enforced by fastlab-cc; the core clamps defensively as well. */
#define FAST_ALPHA_MIN		1U	/* packets */
#define FAST_ALPHA_MAX		10000U	/* packets */
#define FAST_GAMMA_DEN_MAX	1000U	/* gamma has at most 3 decimals */
#define FAST_PERIOD_US_MIN	100U	/* µs */
#define FAST_PERIOD_US_MAX	60000000U	/* µs (60 s) */
#define FAST_MI_THRESH_US_MAX	1000000U	/* µs */
#define FAST_PACING_PCT_MAX	1000U	/* % of cwnd*mss/avgRTT */

/*
 * Defaults. alpha = 100 packets is an *assumption* between the Gb/s
 * experiments (hundreds) and low-speed links (tens); gamma = 1/2 as the
 * original kernel; one update per RTT as the paper; MI threshold 200 µs is an
 * *assumption* ("queueing delay ~0" above host timer/ACK jitter). Pacing off
 * by default: turning it on changes the socket's SO_MAX_PACING_RATE (the
 * only way a cong_avoid-style CC keeps its rate, see bpf/fast.bpf.c).
 */
#define FAST_DEF_ALPHA		100U
#define FAST_DEF_GAMMA_NUM	1U
#define FAST_DEF_GAMMA_DEN	2U
#define FAST_DEF_PERIOD_KIND	FAST_PERIOD_RTT
#define FAST_DEF_PERIOD_US	100000U
#define FAST_DEF_MODE		FAST_MODE_FLOOR
#define FAST_DEF_MI_THRESH_US	200U
#define FAST_DEF_PACING_PCT	0U

/* set_mask bits: which fields of a per-netns entry override the global ones */
#define FAST_P_ALPHA		(1U << 0)
#define FAST_P_GAMMA		(1U << 1)
#define FAST_P_PERIOD		(1U << 2)
#define FAST_P_EWMA_CAP		(1U << 3)
#define FAST_P_MODE		(1U << 4)
#define FAST_P_MI_THRESH	(1U << 5)
#define FAST_P_PACING		(1U << 6)
#define FAST_P_ALL		((1U << 7) - 1)

struct fast_params {
	u32 alpha;		/* packets kept queued at equilibrium */
	u32 gamma_num;		/* gamma = gamma_num / gamma_den, 0 < gamma <= 1 */
	u32 gamma_den;
	u32 period_kind;	/* enum fast_period_kind */
	u32 period_us;		/* µs, used when period_kind == FAST_PERIOD_US */
	u32 ewma_cap_q16;	/* cap of the avgRTT weight, Q16 (1/8 = 8192) */
	u32 mode;		/* enum fast_mode */
	u32 mi_threshold_us;	/* µs; 0 = MI only before the first update */
	u32 pacing_pct;		/* 0 = leave pacing alone */
	u32 set_mask;		/* FAST_P_* (per-netns entries only) */
};

CC_INLINE void fast_params_default(struct fast_params *p)
{
	p->alpha = FAST_DEF_ALPHA;
	p->gamma_num = FAST_DEF_GAMMA_NUM;
	p->gamma_den = FAST_DEF_GAMMA_DEN;
	p->period_kind = FAST_DEF_PERIOD_KIND;
	p->period_us = FAST_DEF_PERIOD_US;
	p->ewma_cap_q16 = FAST_EWMA_CAP_DEF_Q16;
	p->mode = FAST_DEF_MODE;
	p->mi_threshold_us = FAST_DEF_MI_THRESH_US;
	p->pacing_pct = FAST_DEF_PACING_PCT;
	p->set_mask = FAST_P_ALL;
}

/* Apply the fields a per-netns entry overrides on top of the global ones. */
CC_INLINE void fast_params_merge(struct fast_params *dst,
				 const struct fast_params *ovr)
{
	u32 m = ovr->set_mask;

	if (m & FAST_P_ALPHA)
		dst->alpha = ovr->alpha;
	if (m & FAST_P_GAMMA) {
		dst->gamma_num = ovr->gamma_num;
		dst->gamma_den = ovr->gamma_den;
	}
	if (m & FAST_P_PERIOD) {
		dst->period_kind = ovr->period_kind;
		dst->period_us = ovr->period_us;
	}
	if (m & FAST_P_EWMA_CAP)
		dst->ewma_cap_q16 = ovr->ewma_cap_q16;
	if (m & FAST_P_MODE)
		dst->mode = ovr->mode;
	if (m & FAST_P_MI_THRESH)
		dst->mi_threshold_us = ovr->mi_threshold_us;
	if (m & FAST_P_PACING)
		dst->pacing_pct = ovr->pacing_pct;
}

/*
 * Maps are written by user space: never trust them with a divisor. Clamp
 * every field into its documented range so the arithmetic below cannot
 * divide by zero or overflow u64.
 */
CC_INLINE void fast_params_sanitize(struct fast_params *p)
{
	p->alpha = CC_MAX_U32(CC_MIN_U32(p->alpha, FAST_ALPHA_MAX), FAST_ALPHA_MIN);
	if (p->gamma_den == 0 || p->gamma_den > FAST_GAMMA_DEN_MAX ||
	    p->gamma_num == 0 || p->gamma_num > p->gamma_den) {
		p->gamma_num = FAST_DEF_GAMMA_NUM;
		p->gamma_den = FAST_DEF_GAMMA_DEN;
	}
	if (p->period_kind > FAST_PERIOD_US)
		p->period_kind = FAST_DEF_PERIOD_KIND;
	p->period_us = CC_MAX_U32(CC_MIN_U32(p->period_us, FAST_PERIOD_US_MAX),
				  FAST_PERIOD_US_MIN);
	if (p->ewma_cap_q16 == 0 || p->ewma_cap_q16 > FAST_FP_ONE)
		p->ewma_cap_q16 = FAST_EWMA_CAP_DEF_Q16;
	if (p->mode > FAST_MODE_CARRY)
		p->mode = FAST_DEF_MODE;
	p->mi_threshold_us = CC_MIN_U32(p->mi_threshold_us, FAST_MI_THRESH_US_MAX);
	p->pacing_pct = CC_MIN_U32(p->pacing_pct, FAST_PACING_PCT_MAX);
}

/* ---- Per-socket state (lives in icsk_ca_priv) ----------------------- */
#define FAST_F_MI		(1U << 0)	/* multiplicative-increase phase */
#define FAST_F_UPDATED		(1U << 1)	/* at least one window update done */
#define FAST_F_RTT_END		(1U << 2)	/* this ACK ended an RTT */
#define FAST_F_PACED		(1U << 3)	/* glue capped the pacing rate */

struct fast_state {
	u64 avg_rtt_q16;	/* avgRTT, µs in Q16; 0 = no sample yet */
	u64 last_update_us;	/* tcp_mstamp of the last update, µs */
	u32 base_rtt_us;	/* baseRTT = min RTT sample, µs; U32_MAX = none */
	u32 beg_snd_nxt;	/* the current RTT ends when this is acked */
	u32 w_boundary;		/* cwnd at the last RTT boundary: next w_old */
	u32 w_old;		/* w_old used by the last update (events) */
	u32 target;		/* baseRTT/avgRTT * w_old + alpha, last update */
	u32 mi_cap;		/* MI: per-ACK growth allowed up to this cwnd */
	u32 carry_q16;		/* carry mode: fractional window, Q16 */
	u32 period_us;		/* cached at each update from the params */
	u32 ewma_cap_q16;	/* cached at each update from the params */
	u32 netns_ino;		/* netns inode of the socket (param lookup) */
	u16 rtt_count;		/* RTT boundaries since the last update */
	u8 period_kind;		/* cached enum fast_period_kind */
	u8 flags;		/* FAST_F_* */
};

CC_STATIC_ASSERT(sizeof(struct fast_state) <= CC_CA_PRIV_SIZE,
		 "FAST state must fit in ICSK_CA_PRIV_SIZE");

/* Everything the core needs to know about one ACK; cwnd is in/out. */
struct fast_ack {
	u64 now_us;		/* tcp_mstamp */
	u32 ack;		/* cumulative ACK sequence */
	u32 snd_nxt;
	u32 cwnd;		/* in: current cwnd; out: new cwnd */
	u32 cwnd_clamp;		/* snd_cwnd_clamp */
	u32 ssthresh;		/* in/out: lowered to cwnd when MI ends */
	u32 acked;		/* packets newly acked (> 1 for stretch ACKs) */
	bool cwnd_limited;	/* tcp_is_cwnd_limited() */
};

CC_INLINE void fast_init(struct fast_state *s, const struct fast_params *p,
			 u32 cwnd, u32 snd_nxt, u64 now_us, u32 netns_ino)
{
	s->avg_rtt_q16 = 0;
	s->last_update_us = now_us;
	s->base_rtt_us = CC_U32_MAX;
	s->beg_snd_nxt = snd_nxt;
	s->w_boundary = cwnd;
	s->w_old = cwnd;
	s->target = 0;
	/* Before the first update: slow start, i.e. MI with a doubling cap. */
	s->mi_cap = CC_MAX_U32(cwnd, 1U) * 2;
	s->carry_q16 = 0;
	s->period_us = p->period_us;
	s->ewma_cap_q16 = p->ewma_cap_q16;
	s->netns_ino = netns_ino;
	s->rtt_count = 0;
	s->period_kind = (u8)p->period_kind;
	s->flags = FAST_F_MI;
}

CC_INLINE u32 fast_avg_rtt_us(const struct fast_state *s)
{
	return (u32)(s->avg_rtt_q16 >> FAST_FP_SHIFT);
}

CC_INLINE bool fast_has_rtt(const struct fast_state *s)
{
	return s->avg_rtt_q16 != 0 && s->base_rtt_us != CC_U32_MAX;
}

/*
 * One RTT sample (pkts_acked). baseRTT is the minimum; avgRTT moves towards
 * the sample by min(3/cwnd, cap): with a large window each sample only nudges
 * the average, but there are cwnd samples per RTT, so the average still
 * follows queueing changes on sub-RTT time scales (paper, Sec. "Estimation").
 * Unsigned arithmetic in both directions: BPF has no signed division and
 * the core avoids signed arithmetic altogether.
 */
CC_INLINE void fast_rtt_sample(struct fast_state *s, u32 rtt_us, u32 cwnd)
{
	u64 x, w_q16, d;

	if (rtt_us == 0)
		rtt_us = 1;	/* a sub-µs RTT (loopback) still counts */
	if (rtt_us < s->base_rtt_us)
		s->base_rtt_us = rtt_us;

	x = (u64)rtt_us << FAST_FP_SHIFT;
	if (s->avg_rtt_q16 == 0) {
		s->avg_rtt_q16 = x;
		return;
	}
	w_q16 = CC_DIV64((u64)FAST_EWMA_CWND_NUM << FAST_FP_SHIFT,
			 CC_MAX_U32(cwnd, 1U));
	w_q16 = CC_MIN_U64(w_q16, s->ewma_cap_q16);
	/* |x - avg| < 2^47 (rtt_us < 2^31), times w_q16 <= 2^16: fits u64 */
	if (x >= s->avg_rtt_q16) {
		d = ((x - s->avg_rtt_q16) * w_q16) >> FAST_FP_SHIFT;
		s->avg_rtt_q16 += d;
	} else {
		d = ((s->avg_rtt_q16 - x) * w_q16) >> FAST_FP_SHIFT;
		s->avg_rtt_q16 -= d;
	}
	if (s->avg_rtt_q16 == 0)
		s->avg_rtt_q16 = 1;
}

/* Queueing delay avgRTT - baseRTT in µs (0 when no sample or negative). */
CC_INLINE u32 fast_queue_delay_us(const struct fast_state *s)
{
	u32 avg = fast_avg_rtt_us(s);

	if (!fast_has_rtt(s) || avg <= s->base_rtt_us)
		return 0;
	return avg - s->base_rtt_us;
}

/*
 * baseRTT/avgRTT in Q32 without losing the low bits of avgRTT: a long
 * division in two 16-bit steps keeps every intermediate below 2^64
 * (base < 2^32, avg_q16 < 2^48). Capped at 1.0: avgRTT >= baseRTT by
 * construction, the cap only guards against a corrupted state.
 */
CC_INLINE u64 fast_rtt_ratio_q32(u32 base_us, u64 avg_q16)
{
	u64 num = (u64)base_us << 32;	/* base in Q16, shifted by 16 more */
	u64 q, r;

	if (avg_q16 == 0)
		return 1ULL << FAST_RATIO_SHIFT;
	q = CC_DIV64(num, avg_q16);		/* Q16 */
	r = num - q * avg_q16;			/* < avg_q16 < 2^48 */
	q = (q << 16) + CC_DIV64(r << 16, avg_q16);	/* Q32 */
	return CC_MIN_U64(q, 1ULL << FAST_RATIO_SHIFT);
}

/*
 * Packets of this flow queued in the path (paper: alpha is the target of
 * this quantity): cwnd * (avgRTT - baseRTT) / avgRTT = cwnd - cwnd * ratio.
 */
CC_INLINE u32 fast_backlog(const struct fast_state *s, u32 cwnd)
{
	u64 kept;

	if (!fast_has_rtt(s))
		return 0;
	/* rounded to nearest; cwnd * ratio < 2^64 as ratio <= 2^32 */
	kept = ((u64)cwnd * fast_rtt_ratio_q32(s->base_rtt_us, s->avg_rtt_q16) +
		(1ULL << (FAST_RATIO_SHIFT - 1))) >> FAST_RATIO_SHIFT;
	return cwnd - (u32)kept;
}

/*
 * The FAST window equation, in Q16:
 *   target = baseRTT/avgRTT * w_old + alpha
 *   w_new  = min(2w, (1 - gamma) w + gamma target),  w_new >= 2
 * In floor mode the fraction is dropped (the prototype); in carry mode it is
 * kept in *carry_q16 and added at the next update. Overflow budget: w, w_old
 * < 2^32, gamma_den <= 1000 < 2^10, alpha <= 10^4: every product < 2^60.
 */
CC_INLINE u32 fast_window_update(const struct fast_params *p, u32 w, u32 w_old,
				 u32 base_us, u64 avg_q16, u32 *carry_q16,
				 u32 *target)
{
	u64 ratio = fast_rtt_ratio_q32(base_us, avg_q16);
	u64 t_q16, num, wn_q16, w_new, frac;

	t_q16 = (((u64)w_old * ratio) >> (FAST_RATIO_SHIFT - FAST_FP_SHIFT)) +
		((u64)p->alpha << FAST_FP_SHIFT);
	*target = (u32)CC_MIN_U64(t_q16 >> FAST_FP_SHIFT, CC_U32_MAX);

	num = (u64)(p->gamma_den - p->gamma_num) * ((u64)w << FAST_FP_SHIFT) +
	      (u64)p->gamma_num * t_q16;
	wn_q16 = CC_DIV64(num, p->gamma_den);
	if (p->mode == FAST_MODE_CARRY)
		wn_q16 += *carry_q16;

	w_new = wn_q16 >> FAST_FP_SHIFT;
	frac = wn_q16 & FAST_FP_MASK;
	if (w_new >= 2 * (u64)w) {		/* at most double per update */
		w_new = 2 * (u64)w;
		frac = 0;
	}
	if (w_new < FAST_MIN_CWND) {
		w_new = FAST_MIN_CWND;
		frac = 0;
	}
	if (w_new > CC_U32_MAX) {
		w_new = CC_U32_MAX;
		frac = 0;
	}
	*carry_q16 = p->mode == FAST_MODE_CARRY ? (u32)frac : 0;
	return (u32)w_new;
}

/*
 * Per-ACK bookkeeping, called before the glue decides whether to update.
 * Grows cwnd in the MI phase and reports whether an update is due.
 */
CC_INLINE bool fast_ack_begin(struct fast_state *s, struct fast_ack *a)
{
	bool due = false;

	s->flags &= (u8)~FAST_F_RTT_END;
	if (cc_seq_after(a->ack, s->beg_snd_nxt)) {
		s->flags |= FAST_F_RTT_END;
		if (s->rtt_count < 0xffff)
			s->rtt_count++;
	}

	/* MI phase: slow-start-like growth, at most doubling per period. */
	if ((s->flags & FAST_F_MI) && a->cwnd_limited && a->cwnd < s->mi_cap) {
		u64 c = (u64)a->cwnd + a->acked;

		c = CC_MIN_U64(c, s->mi_cap);
		a->cwnd = (u32)CC_MIN_U64(c, a->cwnd_clamp);
	}

	switch (s->period_kind) {
	case FAST_PERIOD_2RTT:
		due = (s->flags & FAST_F_RTT_END) && s->rtt_count >= 2;
		break;
	case FAST_PERIOD_US:
		due = a->now_us - s->last_update_us >= s->period_us;
		break;
	default:
		due = s->flags & FAST_F_RTT_END;
		break;
	}
	return due && fast_has_rtt(s);
}

/*
 * The once-per-period window update. @p has been merged and sanitized by
 * the caller and is read afresh at every update, so a parameter change takes
 * effect within one period. Returns the new cwnd in a->cwnd.
 */
CC_INLINE void fast_update(struct fast_state *s, const struct fast_params *p,
			   struct fast_ack *a)
{
	u32 w = a->cwnd, w_old = CC_MAX_U32(s->w_boundary, 1U), w_eq, w_new;
	u32 qdelay = fast_queue_delay_us(s);

	s->period_kind = (u8)p->period_kind;
	s->period_us = p->period_us;
	s->ewma_cap_q16 = p->ewma_cap_q16;

	w_eq = fast_window_update(p, w, w_old, s->base_rtt_us, s->avg_rtt_q16,
				  &s->carry_q16, &s->target);

	if (qdelay < p->mi_threshold_us &&
	    2 * (u64)fast_backlog(s, w) < p->alpha) {
		/*
		 * Queue ~empty (below the threshold and below alpha/2 of our
		 * own packets, so MI never fights the equilibrium, whose
		 * backlog is alpha): keep what MI grew, double next period.
		 */
		s->flags |= FAST_F_MI;
		if (w_eq < w) {
			w_new = w;
			s->carry_q16 = 0;
		} else {
			w_new = w_eq;
		}
		s->mi_cap = (u32)CC_MIN_U64(2 * (u64)w_new, CC_U32_MAX);
	} else {
		/*
		 * Queueing seen: the equation rules. Like Vegas leaving slow
		 * start, pull ssthresh down so the kernel (pacing ratio,
		 * cwnd-limited test, ss -i) sees congestion avoidance.
		 */
		s->flags &= (u8)~FAST_F_MI;
		w_new = w_eq;
		a->ssthresh = CC_MIN_U32(a->ssthresh, CC_MAX_U32(w_new, FAST_MIN_CWND));
	}

	if (w_new > w && !a->cwnd_limited) {	/* application-limited */
		w_new = w;
		s->carry_q16 = 0;
	}
	a->cwnd = CC_MIN_U32(w_new, CC_MAX_U32(a->cwnd_clamp, FAST_MIN_CWND));

	s->w_old = w_old;
	s->last_update_us = a->now_us;
	s->rtt_count = 0;
	s->flags |= FAST_F_UPDATED;
}

/* After the (optional) update: close the RTT if this ACK ended one. */
CC_INLINE void fast_ack_end(struct fast_state *s, const struct fast_ack *a)
{
	if (s->flags & FAST_F_RTT_END) {
		s->w_boundary = a->cwnd;
		s->beg_snd_nxt = a->snd_nxt;
	}
}

/* ssthresh on loss: halve, like Reno, never below 2. */
CC_INLINE u32 fast_ssthresh(u32 cwnd)
{
	return CC_MAX_U32(cwnd >> 1, FAST_MIN_CWND);
}

/*
 * Loss (fast retransmit or RTO). Restart the period so that the first
 * update after recovery compares against the post-loss window, drop the
 * carried fraction. After an RTO (cwnd collapsed to ~1) re-enter MI up to
 * ssthresh so a massive loss recovers like slow start.
 */
CC_INLINE void fast_on_loss(struct fast_state *s, u32 ssthresh, u32 snd_nxt,
			    bool rto)
{
	s->beg_snd_nxt = snd_nxt;
	s->rtt_count = 0;
	s->carry_q16 = 0;
	if (rto) {
		s->flags |= FAST_F_MI;
		s->mi_cap = CC_MAX_U32(ssthresh, FAST_MIN_CWND);
		s->w_boundary = FAST_MIN_CWND;
	} else {
		s->flags &= (u8)~FAST_F_MI;
		s->w_boundary = ssthresh;
	}
}

/*
 * Pacing rate in bytes/s: cwnd * mss / avgRTT * pct/100. Overflow: cwnd*mss
 * is below 2^48; it is multiplied by 10^6 only when below 2^43.
 */
CC_INLINE u64 fast_pacing_rate(const struct fast_state *s, u32 cwnd, u32 mss,
			       u32 pct)
{
	u64 bytes = (u64)cwnd * mss, avg = fast_avg_rtt_us(s), rate;

	if (!fast_has_rtt(s) || avg == 0)
		return 0;
	if (bytes < (1ULL << 43))
		rate = CC_DIV64(bytes * FAST_USEC_PER_SEC, avg);
	else
		rate = CC_DIV64(bytes, avg) * FAST_USEC_PER_SEC;
	if (rate < (1ULL << 53))
		return CC_DIV64(rate * pct, 100);
	return CC_DIV64(rate, 100) * pct;
}

#endif /* FASTLAB_FAST_CORE_H */
