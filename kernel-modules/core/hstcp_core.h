/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hstcp_core.h - integer core of HighSpeed TCP, shared by the BPF struct_ops
 * program (bpf/hstcp.bpf.c), the loadable module (modules/tcp_hstcp.c) and
 * the user-space unit tests.
 *
 * S. Floyd, "HighSpeed TCP for Large Congestion Windows", RFC 3649, 2003;
 * S. Floyd, "Limited Slow-Start for TCP with Large Congestion Windows",
 * RFC 3742, 2004. Structure follows Linux net/ipv4/tcp_highspeed.c
 * (John Heffner).
 *
 * In congestion avoidance, per ACK cwnd += a(w)/w, on loss
 * cwnd = (1 - b(w)) w, with a(w), b(w) taken from a table indexed by the
 * window (RFC 3649 Appendix B). Below the second row the table gives a = 1,
 * b = 0.5: standard TCP.
 *
 * Differences from Linux tcp_highspeed.c (all deliberate, see README):
 *  1. The table is data, not code: user space (fastlab-cc) regenerates it
 *     from Low_Window, High_Window, High_P and High_Decrease and writes it to
 *     a BPF array map (double-buffered: two slots, the params say which one
 *     is live). The default is the RFC 3649 / Linux 72-row table.
 *  2. b(w) is kept in Q16 instead of Q8 so that small High_Decrease values
 *     stay representable; with the default table b_q16 >> 8 equals Linux's
 *     md column exactly.
 *  3. Limited Slow-Start (RFC 3742): above max_ssthresh, per acked packet
 *     cwnd += 1/K with K = int(cwnd / (0.5 max_ssthresh)); 0 = off (Linux).
 *  4. The increase honours the number of packets an ACK covers (stretch
 *     ACKs, GRO): cwnd += acked * a(w) / w. Linux adds a(w)/w once per ACK.
 *  5. The table index is recomputed from the current cwnd wherever it is
 *     used, including ssthresh(): Linux only moves the index inside
 *     congestion avoidance, so a loss that ends slow start used a stale
 *     (too small) index, i.e. b = 0.5 for a large window.
 *  6. Index lookup is a branch-free binary search (11 fixed steps for up
 *     to 1024 rows) instead of Linux's linear walk, so the BPF verifier
 *     sees a small constant bound.
 *  7. a(w) and b(w) are interpolated linearly between the row at or below
 *     cwnd and the next one (a in Q8), where Linux uses the first row >= cwnd
 *     (a(w) rounded up: a = 2, b = 0.44 from cwnd 39). With Linux's lookup
 *     the mean window under deterministic loss p = 1e-3 is +54% off the
 *     response function 0.12 / p^0.835 (+16% at 1e-4); see hstcp_ab() and
 *     tests/test_cores.c.
 */
#ifndef FASTLAB_HSTCP_CORE_H
#define FASTLAB_HSTCP_CORE_H

#include "cc_compat.h"

#define HSTCP_B_SHIFT		16	/* b(w) in Q16 */
#define HSTCP_A_SHIFT		8	/* interpolated a(w) in Q8 */
#define HSTCP_B_HALF		(1U << (HSTCP_B_SHIFT - 1))	/* b = 0.5 */
#define HSTCP_MAX_ROWS		1024	/* power of two: index masking for BPF */
#define HSTCP_ROW_MASK		(HSTCP_MAX_ROWS - 1)
#define HSTCP_SEARCH_STEPS	11	/* log2(HSTCP_MAX_ROWS) + 1 spare */
#define HSTCP_MIN_CWND		2U	/* packets: never below 2 */
/*
 * In congestion avoidance snd_cwnd_cnt (u32) counts up to cwnd << 8 (a(w) is
 * Q8), so the window is kept below 2^24 packets (Linux clamps at 2^25 for
 * its own Q8 arithmetic).
 */
#define HSTCP_CWND_MAX		((1U << 24) - 1)
#define HSTCP_TABLE_SLOTS	2	/* double buffer for live table updates */

CC_STATIC_ASSERT((HSTCP_MAX_ROWS & (HSTCP_MAX_ROWS - 1)) == 0,
		 "HSTCP_MAX_ROWS must be a power of two");
CC_STATIC_ASSERT((1 << (HSTCP_SEARCH_STEPS - 1)) >= HSTCP_MAX_ROWS,
		 "binary search needs log2(rows) + 1 steps");

/* RFC 3649 default parameters (Sec. 5). */
#define HSTCP_DEF_LOW_WINDOW	38U		/* packets */
#define HSTCP_DEF_HIGH_WINDOW	83000U		/* packets */
#define HSTCP_DEF_HIGH_P_FEMTO	100000000ULL	/* High_P = 1e-7, in 1e-15 */
#define HSTCP_DEF_HIGH_DEC_PPM	100000U		/* High_Decrease = 0.1, in 1e-6 */
/* RFC 3742 recommends 100 when Limited Slow-Start is used; 0 = off (Linux). */
#define HSTCP_DEF_MAX_SSTHRESH	0U		/* packets */

/* Ranges enforced by fastlab-cc. */
#define HSTCP_LOW_WINDOW_MIN	4U
#define HSTCP_LOW_WINDOW_MAX	100000U
#define HSTCP_HIGH_WINDOW_MAX	100000000U
#define HSTCP_MAX_SSTHRESH_MAX	1000000U
/*
 * High_P in 1e-15 (both ends accepted): HSTCP's response function is meant
 * for loss rates far below standard TCP's region; at 1e-2 and a Low_Window
 * of 10 (Low_P 0.0144) the table already needs more than HSTCP_MAX_ROWS rows.
 */
#define HSTCP_HIGH_P_MIN_FEMTO	1000ULL			/* 1e-12 */
#define HSTCP_HIGH_P_MAX_FEMTO	10000000000000ULL	/* 1e-2 */
#define HSTCP_HIGH_DEC_MIN_PPM	1000U		/* High_Decrease 0.001 */
#define HSTCP_HIGH_DEC_MAX_PPM	500000U		/* High_Decrease 0.5 */

#define HSTCP_P_MAX_SSTHRESH	(1U << 0)	/* set_mask: per-netns override */
#define HSTCP_P_TABLE		(1U << 1)	/* table params: global only */
#define HSTCP_P_ALL		((1U << 2) - 1)

/*
 * Parameters. The four table parameters are stored in integer units (the
 * table itself is generated in user space with floating point); the BPF
 * program and the module only use max_ssthresh and table_slot.
 */
struct hstcp_params {
	u32 low_window;		/* packets */
	u32 high_window;	/* packets */
	u64 high_p_femto;	/* High_P in units of 1e-15 */
	u32 high_decrease_ppm;	/* High_Decrease in units of 1e-6 */
	u32 max_ssthresh;	/* packets; 0 = Limited Slow-Start off */
	u32 table_slot;		/* which hstcp_table map slot is live */
	u32 set_mask;		/* HSTCP_P_* (per-netns entries only) */
};

CC_INLINE void hstcp_params_default(struct hstcp_params *p)
{
	p->low_window = HSTCP_DEF_LOW_WINDOW;
	p->high_window = HSTCP_DEF_HIGH_WINDOW;
	p->high_p_femto = HSTCP_DEF_HIGH_P_FEMTO;
	p->high_decrease_ppm = HSTCP_DEF_HIGH_DEC_PPM;
	p->max_ssthresh = HSTCP_DEF_MAX_SSTHRESH;
	p->table_slot = 0;
	p->set_mask = HSTCP_P_ALL;
}

CC_INLINE void hstcp_params_merge(struct hstcp_params *dst,
				  const struct hstcp_params *ovr)
{
	if (ovr->set_mask & HSTCP_P_MAX_SSTHRESH)
		dst->max_ssthresh = ovr->max_ssthresh;
}

struct hstcp_row {
	u32 cwnd;	/* first window (packets) this row applies to */
	u32 a;		/* a(w): packets added per RTT */
	u32 b_q16;	/* b(w) in Q16: fraction removed on loss */
};

struct hstcp_table {
	u32 nrows;	/* 1..HSTCP_MAX_ROWS; anything else = standard TCP */
	u32 reserved;
	struct hstcp_row rows[HSTCP_MAX_ROWS];
};

/* Slow-start mode reported in events. */
enum hstcp_mode {
	HSTCP_MODE_SS = 0,	/* standard slow start */
	HSTCP_MODE_LSS = 1,	/* RFC 3742 Limited Slow-Start */
	HSTCP_MODE_CA = 2,	/* congestion avoidance with a(w) */
};

struct hstcp_state {
	u32 ai;			/* table index used last (events) */
	u32 beg_snd_nxt;	/* RTT boundary marker: params refresh, events */
	u32 netns_ino;		/* netns inode of the socket */
	u32 max_ssthresh;	/* cached from the params, refreshed every RTT */
	u8 table_slot;		/* cached live table slot, refreshed every RTT */
	u8 mode;		/* enum hstcp_mode, last ACK */
	u8 reserved[2];
};

CC_STATIC_ASSERT(sizeof(struct hstcp_state) <= CC_CA_PRIV_SIZE,
		 "HSTCP state must fit in ICSK_CA_PRIV_SIZE");

/* One ACK's view of the socket; cwnd, cwnd_cnt are in/out. */
struct hstcp_ack {
	u32 cwnd;
	u32 cwnd_cnt;		/* snd_cwnd_cnt: fractional increase, 1/cwnd units */
	u32 ssthresh;
	u32 cwnd_clamp;
	u32 acked;		/* packets newly acked */
};

CC_INLINE void hstcp_init(struct hstcp_state *s, const struct hstcp_params *p,
			  u32 snd_nxt, u32 netns_ino)
{
	s->ai = 0;
	s->beg_snd_nxt = snd_nxt;
	s->netns_ino = netns_ino;
	s->max_ssthresh = CC_MIN_U32(p->max_ssthresh, HSTCP_MAX_SSTHRESH_MAX);
	s->table_slot = (u8)(p->table_slot % HSTCP_TABLE_SLOTS);
	s->mode = HSTCP_MODE_SS;
}

/* Refresh the cached parameters (once per RTT; a change applies within one RTT). */
CC_INLINE void hstcp_refresh(struct hstcp_state *s, const struct hstcp_params *p)
{
	s->max_ssthresh = CC_MIN_U32(p->max_ssthresh, HSTCP_MAX_SSTHRESH_MAX);
	s->table_slot = (u8)(p->table_slot % HSTCP_TABLE_SLOTS);
}

/* True once per RTT: the ACK covers the snd_nxt recorded an RTT ago. */
CC_INLINE bool hstcp_rtt_end(struct hstcp_state *s, u32 ack, u32 snd_nxt)
{
	if (!cc_seq_after(ack, s->beg_snd_nxt))
		return false;
	s->beg_snd_nxt = snd_nxt;
	return true;
}

CC_INLINE bool hstcp_table_valid(const struct hstcp_table *t)
{
	return t && t->nrows >= 1 && t->nrows <= HSTCP_MAX_ROWS;
}

/* a(w) in Q8 must fit a u32 (hstcp_ab). */
#define HSTCP_ROW_A_MAX		((1U << (32 - HSTCP_A_SHIFT)) - 1)

/*
 * A table handed in from outside (the module's `table` parameter): 0 if
 * the lookup can use it as is, else -1. Rows strictly increasing in cwnd,
 * 1 <= a(w) <= HSTCP_ROW_A_MAX, 0 < b(w) <= 0.5. The BPF build needs no
 * such check (only fastlab-cc, as root, writes its map).
 */
CC_INLINE int hstcp_table_check(const struct hstcp_table *t)
{
	u32 i;

	if (!hstcp_table_valid(t))
		return -1;
	for (i = 0; i < t->nrows; i++) {
		const struct hstcp_row *r = &t->rows[i & HSTCP_ROW_MASK];

		if (r->a < 1 || r->a > HSTCP_ROW_A_MAX ||
		    r->b_q16 < 1 || r->b_q16 > HSTCP_B_HALF)
			return -1;
		if (i && r->cwnd <= t->rows[(i - 1) & HSTCP_ROW_MASK].cwnd)
			return -1;
	}
	return 0;
}

/*
 * Index of the last row whose cwnd is <= the current window (row 0 below
 * the table); hstcp_ab() interpolates from there towards the next row.
 *
 * A branch-free upper_bound with a fixed number of steps: every step halves
 * the candidate range and moves the base by (row <= cwnd ? half : 0), the
 * condition being the sign bit of a 64-bit difference turned into a mask.
 * Without data-dependent branches the BPF verifier walks the loop once
 * instead of forking on every comparison (a plain binary search exceeds its
 * one-million-instruction budget). CC_OPAQUE() keeps the compiler from
 * turning the mask back into a compare-and-branch. Indices are masked so
 * every access is provably in bounds.
 */
CC_INLINE u32 hstcp_table_index(const struct hstcp_table *t, u32 cwnd)
{
	u32 n, base = 0, half, le;
	u64 d;
	int i;

	if (!hstcp_table_valid(t))
		return 0;
	n = t->nrows;
	for (i = 0; i < HSTCP_SEARCH_STEPS; i++) {
		half = n >> 1;
		/* d < 2^63 <=> row <= cwnd */
		d = (u64)cwnd - t->rows[(base + half) & HSTCP_ROW_MASK].cwnd;
		CC_OPAQUE(d);
		le = 1U - (u32)(d >> 63);
		base += half & (0U - le);
		n -= half;
	}
	d = (u64)cwnd - t->rows[base & HSTCP_ROW_MASK].cwnd;
	CC_OPAQUE(d);
	base += 1U - (u32)(d >> 63);	/* base = number of rows <= cwnd */
	return (CC_MAX_U32(base, 1U) - 1) & HSTCP_ROW_MASK;
}

CC_INLINE u32 hstcp_row_a(const struct hstcp_table *t, u32 ai)
{
	if (!hstcp_table_valid(t))
		return 1;
	return CC_MAX_U32(t->rows[ai & HSTCP_ROW_MASK].a, 1U);
}

CC_INLINE u32 hstcp_row_b_q16(const struct hstcp_table *t, u32 ai)
{
	if (!hstcp_table_valid(t))
		return HSTCP_B_HALF;
	return CC_MIN_U32(t->rows[ai & HSTCP_ROW_MASK].b_q16, HSTCP_B_HALF);
}

/*
 * a(w) (Q8) and b(w) (Q16) at @cwnd, interpolated linearly between row @ai
 * (the last row <= cwnd) and the next one. The table holds a(w) only where
 * it crosses an integer; between rows the true a(w) lies between a_i and
 * a_i+1 and b(w) between b_i and b_i+1. Interpolating keeps the response
 * function within a few percent of w = 0.12 / p^0.835 where the rows are
 * far apart (p ~ 1e-4: -19% with the row below, +16% with the row above as
 * Linux uses). Beyond the last row (or with one row) the row values apply.
 */
CC_INLINE void hstcp_ab(const struct hstcp_table *t, u32 ai, u32 cwnd,
			u32 *a_q8, u32 *b_q16)
{
	const struct hstcp_row *r0, *r1;
	u32 span, a1, b1;
	u64 frac;

	*a_q8 = hstcp_row_a(t, ai) << HSTCP_A_SHIFT;
	*b_q16 = hstcp_row_b_q16(t, ai);
	if (!hstcp_table_valid(t) || ai + 1 >= t->nrows)
		return;
	r0 = &t->rows[ai & HSTCP_ROW_MASK];
	r1 = &t->rows[(ai + 1) & HSTCP_ROW_MASK];
	if (cwnd <= r0->cwnd || r1->cwnd <= cwnd)
		return;
	span = r1->cwnd - r0->cwnd;
	frac = CC_DIV64((u64)(cwnd - r0->cwnd) << 16, span);	/* Q16, < 1 */
	a1 = hstcp_row_a(t, ai + 1);
	b1 = hstcp_row_b_q16(t, ai + 1);
	if (a1 > (*a_q8 >> HSTCP_A_SHIFT))
		*a_q8 += (u32)(((a1 - (*a_q8 >> HSTCP_A_SHIFT)) * frac) >>
			       (16 - HSTCP_A_SHIFT));
	if (b1 < *b_q16)
		*b_q16 -= (u32)(((*b_q16 - b1) * frac) >> 16);
}

/* Packets cwnd may still grow before reaching @cap. */
CC_INLINE u32 hstcp_room(u32 cwnd, u32 cap)
{
	return cwnd < cap ? cap - cwnd : 0;
}

/*
 * Per-ACK increase (cong_avoid). The caller has already checked that the
 * sender is cwnd-limited. Returns the mode used.
 */
CC_INLINE u8 hstcp_cong_avoid(struct hstcp_state *s, const struct hstcp_table *t,
			      u32 max_ssthresh, struct hstcp_ack *a)
{
	u32 acked = a->acked;
	u32 limit = CC_MIN_U32(CC_MAX_U32(a->cwnd_clamp, HSTCP_MIN_CWND),
			       HSTCP_CWND_MAX);
	u32 ss_cap = CC_MIN_U32(a->ssthresh, limit), a_q8, b_q16;
	u64 cnt, inc, win;

	if (a->cwnd < a->ssthresh) {
		if (max_ssthresh == 0 || a->cwnd <= max_ssthresh) {
			/* Standard slow start; the remainder goes to CA below. */
			u32 grow = CC_MIN_U32(acked, hstcp_room(a->cwnd, ss_cap));

			a->cwnd += grow;
			acked -= grow;
			s->mode = HSTCP_MODE_SS;
			if (!acked || a->cwnd < a->ssthresh)
				return s->mode;
		} else {
			/*
			 * RFC 3742: K = int(cwnd / (0.5 max_ssthresh)); cwnd += 1/K
			 * per acked packet, i.e. at most max_ssthresh/2 per RTT.
			 * snd_cwnd_cnt counts acked packets towards the next K.
			 */
			u32 k = (u32)CC_DIV64(2 * (u64)a->cwnd, max_ssthresh);

			k = CC_MAX_U32(k, 1U);
			cnt = (u64)a->cwnd_cnt + acked;
			inc = CC_DIV64(cnt, k);
			a->cwnd_cnt = (u32)(cnt - inc * k);
			inc = CC_MIN_U64(inc, hstcp_room(a->cwnd, ss_cap));
			a->cwnd += (u32)inc;
			s->mode = HSTCP_MODE_LSS;
			return s->mode;
		}
	}

	/*
	 * Congestion avoidance: cwnd += acked * a(w) / w. snd_cwnd_cnt counts
	 * in 1/256 packet units here (a(w) is Q8), so whole windows are
	 * cwnd << 8; the kernel only ever resets it to 0.
	 */
	s->ai = hstcp_table_index(t, a->cwnd);
	s->mode = HSTCP_MODE_CA;
	if (a->cwnd >= limit)
		return s->mode;
	hstcp_ab(t, s->ai, a->cwnd, &a_q8, &b_q16);
	cnt = (u64)a->cwnd_cnt + (u64)acked * a_q8;
	win = (u64)a->cwnd << HSTCP_A_SHIFT;
	if (cnt >= win) {
		inc = CC_DIV64(cnt, win);
		cnt -= inc * win;
		a->cwnd = (u32)CC_MIN_U64((u64)a->cwnd + inc, limit);
	}
	a->cwnd_cnt = (u32)CC_MIN_U64(cnt, CC_U32_MAX);
	return s->mode;
}

/*
 * Multiplicative decrease: ssthresh = w - b(w) w, with the index recomputed
 * from the window at the time of the loss (fresh even if the loss ended
 * slow start).
 */
CC_INLINE u32 hstcp_ssthresh(struct hstcp_state *s, const struct hstcp_table *t,
			     u32 cwnd)
{
	u32 a_q8, b_q16;
	u64 dec;

	s->ai = hstcp_table_index(t, cwnd);
	hstcp_ab(t, s->ai, cwnd, &a_q8, &b_q16);
	dec = ((u64)cwnd * b_q16) >> HSTCP_B_SHIFT;
	return CC_MAX_U32(cwnd - (u32)dec, HSTCP_MIN_CWND);
}

#endif /* FASTLAB_HSTCP_CORE_H */
