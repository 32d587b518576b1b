/*
 * aqm_red.c - Random Early Detection (S. Floyd, V. Jacobson, "Random Early
 * Detection Gateways for Congestion Avoidance", IEEE/ACM ToN 1(4), 1993),
 * with the gentle variant (S. Floyd, "Recommendation on using the gentle_
 * variant of RED", 2000) and, as an option, Adaptive RED (S. Floyd,
 * R. Gummadi, S. Shenker, "Adaptive RED: An Algorithm for Increasing the
 * Robustness of RED's Active Queue Management", 2001).
 *
 * Per arriving packet (the paper's Figure 2), with q the backlog it finds:
 *
 *   if q > 0:  avg <- (1 - w_q) avg + w_q q
 *   else:      avg <- (1 - w_q)^m avg,  m = idle time / s
 *   if min_th <= avg < max_th:
 *       count <- count + 1
 *       p_b <- max_p (avg - min_th) / (max_th - min_th)
 *       p_a <- p_b / (1 - count p_b)
 *       with probability p_a: mark the packet, count <- 0
 *   else if max_th <= avg: mark the packet, count <- 0
 *   else count <- -1
 *
 * gentle: between max_th and 2 max_th, p_b <- max_p + (1 - max_p)
 * (avg - max_th) / max_th (and p_a from it, with count, as ns-2 does); every
 * packet is marked only from 2 max_th on.  Byte mode: q, min_th and max_th
 * in bytes, and p_b <- p_b PacketSize / MaximumPacketSize (the paper's
 * section 4, so that large packets are marked more often).  A "mark" is a
 * drop, or with ecn=1 the CE codepoint on an ECN-capable packet.
 *
 * Adaptive RED (the 2001 paper's Figure 2), checked on each arrival at least
 * `interval` after the last adaptation, as ns-2 does (an idle link does not
 * adapt): avg above the target band and max_p <= 0.5: max_p += min(0.01,
 * max_p / 4); below it and max_p >= 0.01: max_p *= 0.9.  The band is
 * [min_th + 0.4 (max_th - min_th), min_th + 0.6 (max_th - min_th)].
 *
 * Deviations and choices, each deliberate:
 *  - q is linkemu's backlog: what waits plus the packet being serialized
 *    (the quantity --XX-limit-pkts bounds), so the queue "empties", and the
 *    idle time starts, when the last packet's serialization ends.  A router
 *    counts only what waits; the average differs by at most one packet.
 *  - s, the typical transmission time of the idle decay, is mean_pkt_bytes
 *    (IP bytes, ns-2's mean_pktsize_, default 500) at the link's rate:
 *    m = idle_ns * rate / (8e9 * mean_pkt_bytes).  With no rate (infinite)
 *    any idle time empties the average.
 *  - Forced marks (avg >= max_th, or >= 2 max_th when gentle) are drops even
 *    with ecn=1, as in ns-2 (Floyd's simulator): an ECN flow that ignores
 *    marks still meets drops.  Linux's sch_red marks them unless harddrop.
 *  - A drop-tail drop (full buffer) leaves the RED state as the arrival
 *    made it: the average and count are updated for every arrival the loss
 *    model lets through, before the buffer is checked (ns-2's order).
 *  - Adaptive RED adapts max_p only; its automatic w_q = 1 - exp(-1/C) and
 *    max_th = 3 min_th are not applied: give them as parameters.
 *
 * Arithmetic: avg and w_q in units of 2^-32 (AQM_FRAC_ONE), probabilities
 * in units of 2^-56 (AQM_PROB_ONE); products in 128 bits.  (1 - w_q)^m by
 * squaring (at most 64 multiplications, only after an idle period).
 */
#include "aqm.h"

__extension__ typedef unsigned __int128 u128;

#define RED_ADAPT_INTERVAL_NS	(500 * 1000000ULL)	/* 0.5 s */
#define RED_ADAPT_ALPHA_MAX	(AQM_PROB_ONE / 100)	/* alpha <= 0.01 */
#define RED_ADAPT_UP_MAX_P	(AQM_PROB_ONE / 2)	/* increase while max_p <= 0.5 */
#define RED_ADAPT_DOWN_MIN_P	(AQM_PROB_ONE / 100)	/* decrease while max_p >= 0.01 */
#define RED_ADAPT_BETA_NUM	9			/* beta = 0.9 */
#define RED_ADAPT_BETA_DEN	10
#define RED_TARGET_LO_TENTHS	4	/* target band, tenths of (max_th - min_th) */
#define RED_TARGET_HI_TENTHS	6
/* q beyond this is as good as infinite: 2 max_th <= 2^31 marks everything. */
#define RED_Q_MAX		((1ULL << 31) - 1)

/* x * y for x, y <= 2^32 in units of 2^-32 (the product stays below 2^64). */
static uint64_t frac_mul(uint64_t x, uint64_t y)
{
	return (uint64_t)(((u128)x * y) >> AQM_FRAC_SHIFT);
}

/* base^m, base <= 1 in units of 2^-32. */
static uint64_t frac_pow(uint64_t base, uint64_t m)
{
	uint64_t r = AQM_FRAC_ONE;

	while (m && r) {
		if (m & 1)
			r = frac_mul(r, base);
		base = frac_mul(base, base);
		m >>= 1;
	}
	return r;
}

/* Packet transmissions of mean_pkt_bytes that fit in idle_ns at the rate. */
static uint64_t idle_packets(const struct aqm_cfg *c, uint64_t idle_ns)
{
	u128 m;

	if (!c->rate_bps)
		return UINT64_MAX;
	m = (u128)idle_ns * c->rate_bps /
	    ((u128)AQM_BITS_PER_BYTE * AQM_NS_PER_SEC * c->red.mean_pkt_bytes);
	return m > UINT64_MAX ? UINT64_MAX : (uint64_t)m;
}

static void red_average(struct aqm *a, const struct aqm_arrival *arr)
{
	const struct aqm_red_cfg *c = &a->cfg.red;
	uint64_t q = c->bytes ? arr->q_bytes : arr->q_pkts;
	uint64_t wq = c->wq;

	if (q) {
		if (q > RED_Q_MAX)
			q = RED_Q_MAX;
		a->red.avg = (uint64_t)(((u128)a->red.avg * (AQM_FRAC_ONE - wq) +
					 ((u128)q << AQM_FRAC_SHIFT) * wq) >>
					AQM_FRAC_SHIFT);
	} else {
		uint64_t idle = arr->now_ns > arr->idle_since_ns ?
				arr->now_ns - arr->idle_since_ns : 0;

		a->red.avg = frac_mul(a->red.avg,
				      frac_pow(AQM_FRAC_ONE - wq,
					       idle_packets(&a->cfg, idle)));
	}
}

/* Adaptive RED's max_p step, at most once per interval. */
static void red_adapt(struct aqm *a, uint64_t now)
{
	const struct aqm_red_cfg *c = &a->cfg.red;
	uint64_t span = c->max_th - c->min_th;
	uint64_t lo = (c->min_th << AQM_FRAC_SHIFT) +
		      ((span << AQM_FRAC_SHIFT) / 10) * RED_TARGET_LO_TENTHS;
	uint64_t hi = (c->min_th << AQM_FRAC_SHIFT) +
		      ((span << AQM_FRAC_SHIFT) / 10) * RED_TARGET_HI_TENTHS;
	uint64_t *max_p = &a->red.max_p;

	if (now - a->red.last_adapt_ns < RED_ADAPT_INTERVAL_NS)
		return;
	a->red.last_adapt_ns = now;
	if (a->red.avg > hi && *max_p <= RED_ADAPT_UP_MAX_P) {
		uint64_t alpha = *max_p / 4;

		*max_p += alpha < RED_ADAPT_ALPHA_MAX ? alpha : RED_ADAPT_ALPHA_MAX;
	} else if (a->red.avg < lo && *max_p >= RED_ADAPT_DOWN_MIN_P) {
		/* max_p <= 2^56: the product stays below 2^60 */
		*max_p = *max_p * RED_ADAPT_BETA_NUM / RED_ADAPT_BETA_DEN;
	}
}

uint64_t aqm_red_pb(const struct aqm *a, uint32_t bytes, bool *forced)
{
	const struct aqm_red_cfg *c = &a->cfg.red;
	uint64_t avg = a->red.avg, max_p = a->red.max_p, pb;
	uint64_t min_f = c->min_th << AQM_FRAC_SHIFT;
	uint64_t max_f = c->max_th << AQM_FRAC_SHIFT;

	*forced = false;
	if (avg < min_f)
		return 0;
	if (avg < max_f) {
		pb = (uint64_t)((u128)max_p * (avg - min_f) / (max_f - min_f));
	} else if (c->gentle && avg < 2 * max_f) {
		pb = max_p + (uint64_t)((u128)(AQM_PROB_ONE - max_p) *
					(avg - max_f) / max_f);
	} else {
		*forced = true;
		return AQM_PROB_ONE;
	}
	if (c->bytes) {
		pb = (uint64_t)((u128)pb * bytes / a->cfg.mtu_bytes);
		if (pb > AQM_PROB_ONE)
			pb = AQM_PROB_ONE;
	}
	return pb;
}

uint64_t aqm_red_pa(uint64_t pb, int64_t count)
{
	u128 cpb;

	if (count <= 0)
		return pb;
	cpb = (u128)count * pb;
	if (cpb >= AQM_PROB_ONE)
		return AQM_PROB_ONE;
	return (uint64_t)(((u128)pb << AQM_PROB_SHIFT) /
			  (AQM_PROB_ONE - (uint64_t)cpb));
}

enum aqm_verdict aqm_red_enqueue(struct aqm *a, const struct aqm_arrival *arr)
{
	uint64_t draw = aqm_draw(a, arr->index), pb, pa;
	enum aqm_verdict v = AQM_PASS;
	bool forced;

	red_average(a, arr);
	if (a->cfg.red.adaptive)
		red_adapt(a, arr->now_ns);
	pb = aqm_red_pb(a, arr->bytes, &forced);
	if (forced) {
		a->red.count = 0;
		v = AQM_DROP;
	} else if (a->red.avg < (a->cfg.red.min_th << AQM_FRAC_SHIFT)) {
		a->red.count = -1;
	} else {
		if (a->red.count < INT64_MAX)
			a->red.count++;
		pa = aqm_red_pa(pb, a->red.count);
		/* PRNG scale 2^63 = AQM_PROB_ONE << 7 */
		if (prng_chance(draw, pa << (63 - AQM_PROB_SHIFT))) {
			a->red.count = 0;
			v = a->cfg.ecn && arr->ect ? AQM_MARK : AQM_DROP;
		}
	}
	if (arr->full)
		return AQM_TAIL;
	return v;
}
