/*
 * aqm_pie.c - PIE, Proportional Integral controller Enhanced (R. Pan,
 * P. Natarajan, F. Baker, G. White, "Proportional Integral Controller
 * Enhanced (PIE): A Lightweight Control Scheme to Address the Bufferbloat
 * Problem", RFC 8033, 2017).
 *
 * Every T_UPDATE (§4.2, Appendix A's calculate_drop_prob):
 *
 *   p <- alpha (qdelay - QDELAY_REF) + beta (qdelay - qdelay_old)
 *   p scaled down while drop_prob is small (§4.2's auto-tuning):
 *       drop_prob < 0.000001: p / 2048;   < 0.00001: p / 512;
 *                 < 0.0001:   p / 128;    < 0.001:   p / 32;
 *                 < 0.01:     p / 8;      < 0.1:     p / 2
 *   drop_prob >= 0.1 and p > 0.02: p <- 0.02  (§5.5, cap drop adjustment)
 *   drop_prob <- drop_prob + p
 *   qdelay == 0 and qdelay_old == 0: drop_prob <- 0.98 drop_prob
 *   drop_prob bounded to [0, 1]
 *   burst_allowance <- max(0, burst_allowance - T_UPDATE)          (§4.4)
 *   drop_prob == 0 and qdelay < QDELAY_REF / 2 and qdelay_old < QDELAY_REF / 2:
 *       burst_allowance <- MAX_BURST
 *   qdelay_old <- qdelay
 *
 * On each arrival (§4.1, Appendix A's enque and drop_early):
 *
 *   buffer full: drop (drop-tail), accu_prob <- 0
 *   burst_allowance > 0: enqueue
 *   qdelay_old < QDELAY_REF / 2 and drop_prob < 0.2, or the backlog is at
 *       most 2 MEAN_PKTSIZE: enqueue                      (work conserving)
 *   de-randomization (§5.4): drop_prob == 0: accu_prob <- 0;
 *       accu_prob += drop_prob;  < 0.85: enqueue;  >= 8.5: drop;
 *       else drop with probability drop_prob (accu_prob <- 0 on that drop)
 *   a drop of an ECN-capable packet with ecn=1 while drop_prob <= 0.1 is a
 *       mark instead (§5.1); any drop resets accu_prob
 *
 * alpha and beta are in Hz (0.125 and 1.25: probability per second of
 * delay), QDELAY_REF 15 ms, T_UPDATE 15 ms, MAX_BURST 150 ms.
 *
 * The queue delay (§4.3 leaves the estimate open: Little's law with a
 * measured departure rate, or timestamps): linkemu knows every queued
 * packet's departure exactly (the rate and tbf policies fix it on arrival),
 * so the delay at time t is the time the link stays busy with what was
 * queued before t, qdelay(t) = max(0, busy_until - t): exactly the queueing
 * delay a packet arriving at t has, which Little's law estimates and a
 * timestamp would measure one sojourn later.  Between two arrivals
 * busy_until does not change, so the update at any past instant is exact:
 * the updates of every T_UPDATE instant up to an arrival are run, in order,
 * when that arrival comes (no timer, no wake-up of the I/O loop).  A long
 * idle period settles into the fixed point (drop_prob 0, qdelay_old 0,
 * burst_allowance MAX_BURST) within a bounded number of updates, after
 * which the remaining instants are skipped at once.
 *
 * Implemented: §4.1-4.4 (random drop with the work-conserving safeguards,
 * the update with its auto-tuning and decay, the exact delay above, burst
 * allowance), §5.1 ECN, §5.4 de-randomization (always on, as in Linux), §5.5
 * cap drop adjustment.  Not implemented: §5.2 departure-rate estimation
 * (the delay is exact instead), §5.3 turning PIE on and off with the queue
 * (it is always active, as in Linux), and the optional scaling of the drop
 * probability by packet size.  MEAN_PKTSIZE is the link's MTU segment, as
 * Linux's sch_pie uses the MTU.  The burst allowance is not spent on
 * arrivals: drop_early is not evaluated while it lasts (Linux and ns-2;
 * Appendix A evaluates it first, accumulating accu_prob meanwhile).
 *
 * Fixed point: probabilities in units of 2^-56 (AQM_PROB_ONE), alpha and
 * beta in the same units per second; products in signed 128 bits.
 */
#include "aqm.h"

__extension__ typedef __int128 s128;

#define PIE_PROB(num, den)	(AQM_PROB_ONE / (den) * (num))
#define PIE_CAP_FROM		PIE_PROB(1, 10)		/* §5.5: drop_prob >= 0.1 */
#define PIE_CAP_STEP		PIE_PROB(2, 100)	/* ... p at most 0.02 */
#define PIE_SAFE_PROB		PIE_PROB(2, 10)		/* §4.1: drop_prob < 0.2 */
#define PIE_ECN_MAX_PROB	PIE_PROB(1, 10)		/* §5.1: mark while <= 0.1 */
#define PIE_ACCU_LOW		PIE_PROB(85, 100)	/* §5.4: 0.85 */
#define PIE_ACCU_HIGH		PIE_PROB(85, 10)	/* §5.4: 8.5 */
#define PIE_DECAY_NUM		49			/* 0.98 = 49/50 */
#define PIE_DECAY_DEN		50
#define PIE_MEAN_PKTS_SAFE	2			/* backlog <= 2 MEAN_PKTSIZE */

_Static_assert(PIE_ACCU_HIGH + AQM_PROB_ONE < UINT64_MAX / 2,
	       "accu_prob and one more drop_prob fit in 64 bits");

/* §4.2's auto-tuning: the divisor of p for the current drop_prob. */
static unsigned int tune_shift(uint64_t prob)
{
	static const struct {
		uint64_t below;
		unsigned int shift;
	} tiers[] = {
		{ AQM_PROB_ONE / 1000000, 11 },	/* / 2048 */
		{ AQM_PROB_ONE / 100000, 9 },	/* / 512 */
		{ AQM_PROB_ONE / 10000, 7 },	/* / 128 */
		{ AQM_PROB_ONE / 1000, 5 },	/* / 32 */
		{ AQM_PROB_ONE / 100, 3 },	/* / 8 */
		{ AQM_PROB_ONE / 10, 1 },	/* / 2 */
	};
	unsigned int i;

	for (i = 0; i < sizeof(tiers) / sizeof(tiers[0]); i++)
		if (prob < tiers[i].below)
			return tiers[i].shift;
	return 0;
}

void aqm_pie_update(struct aqm *a, uint64_t qdelay_ns)
{
	const struct aqm_pie_cfg *c = &a->cfg.pie;
	struct aqm_pie *s = &a->pie;
	s128 p, prob;

	/* alpha (qdelay - ref) + beta (qdelay - qdelay_old), per ns -> per s */
	p = ((s128)c->alpha * ((s128)qdelay_ns - (s128)c->target_ns) +
	     (s128)c->beta * ((s128)qdelay_ns - (s128)s->qdelay_old_ns)) /
	    (s128)AQM_NS_PER_SEC;
	/* a right shift of a negative value is implementation-defined: divide */
	p /= (s128)1 << tune_shift(s->drop_prob);
	if (s->drop_prob >= PIE_CAP_FROM && p > (s128)PIE_CAP_STEP)
		p = PIE_CAP_STEP;
	prob = (s128)s->drop_prob + p;
	if (prob < 0)
		prob = 0;
	if (!qdelay_ns && !s->qdelay_old_ns)
		prob = prob * PIE_DECAY_NUM / PIE_DECAY_DEN;
	if (prob > (s128)AQM_PROB_ONE)
		prob = AQM_PROB_ONE;
	s->drop_prob = (uint64_t)prob;

	s->burst_ns = s->burst_ns > c->tupdate_ns ? s->burst_ns - c->tupdate_ns : 0;
	if (!s->drop_prob && qdelay_ns < c->target_ns / 2 &&
	    s->qdelay_old_ns < c->target_ns / 2)
		s->burst_ns = c->max_burst_ns;
	s->qdelay_old_ns = qdelay_ns;
	s->qdelay_ns = qdelay_ns;
}

/* Run the updates of every T_UPDATE instant up to now, in order. */
static void catch_up(struct aqm *a, uint64_t now, uint64_t busy_until)
{
	const struct aqm_pie_cfg *c = &a->cfg.pie;
	struct aqm_pie *s = &a->pie;

	while (now - s->last_update_ns >= c->tupdate_ns) {
		uint64_t t = s->last_update_ns + c->tupdate_ns;

		/* settled and nothing queued from here on: skip to the last one */
		if (!s->drop_prob && !s->qdelay_old_ns && busy_until <= t &&
		    s->burst_ns == c->max_burst_ns) {
			s->last_update_ns += (now - s->last_update_ns) /
					     c->tupdate_ns * c->tupdate_ns;
			s->qdelay_ns = 0;
			return;
		}
		aqm_pie_update(a, busy_until > t ? busy_until - t : 0);
		s->last_update_ns = t;
	}
}

enum aqm_verdict aqm_pie_enqueue(struct aqm *a, const struct aqm_arrival *arr)
{
	const struct aqm_pie_cfg *c = &a->cfg.pie;
	struct aqm_pie *s = &a->pie;
	uint64_t draw = aqm_draw(a, arr->index);
	bool drop;

	catch_up(a, arr->now_ns, arr->busy_until_ns);
	if (arr->full) {
		s->accu_prob = 0;
		return AQM_TAIL;
	}
	if (s->burst_ns)
		return AQM_PASS;
	if ((s->qdelay_old_ns < c->target_ns / 2 && s->drop_prob < PIE_SAFE_PROB) ||
	    arr->q_bytes <= PIE_MEAN_PKTS_SAFE * (uint64_t)a->cfg.mtu_bytes)
		return AQM_PASS;
	if (!s->drop_prob)
		s->accu_prob = 0;
	s->accu_prob += s->drop_prob;
	if (s->accu_prob < PIE_ACCU_LOW)
		return AQM_PASS;
	drop = s->accu_prob >= PIE_ACCU_HIGH ||
	       prng_chance(draw, s->drop_prob << (63 - AQM_PROB_SHIFT));
	if (!drop)
		return AQM_PASS;
	if (a->cfg.ecn && arr->ect && s->drop_prob <= PIE_ECN_MAX_PROB) {
		/*
		 * drop_early's random branch resets accu_prob itself; a mark
		 * is no drop, so one from the >= 8.5 branch does not.
		 */
		if (s->accu_prob < PIE_ACCU_HIGH)
			s->accu_prob = 0;
		return AQM_MARK;
	}
	s->accu_prob = 0;
	return AQM_DROP;
}
