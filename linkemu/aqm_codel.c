/*
 * aqm_codel.c - CoDel (K. Nichols, V. Jacobson, A. McGregor, J. Iyengar,
 * "Controlled Delay Active Queue Management", RFC 8289, 2018).
 *
 * The RFC's §5 pseudocode, cut at each packet so that the scheduler core
 * can run it while it walks its queue (sched.c decides each packet when it
 * reaches the head of the queue, at the start of its serialization):
 *
 *   dodequeue(now):  head packet p, or none
 *       none, or sojourn(p) < TARGET, or bytes() <= MAXPACKET:
 *           first_above_time <- 0
 *       else if first_above_time == 0: first_above_time <- now + INTERVAL
 *       else if now >= first_above_time: ok_to_drop
 *   dequeue(now):
 *       r <- dodequeue(now)
 *       if dropping:
 *           if not ok_to_drop: dropping <- false
 *           while now >= drop_next and dropping:
 *               drop(r); count++; r <- dodequeue(now)
 *               if not ok_to_drop: dropping <- false
 *               else drop_next <- control_law(drop_next, count)
 *       else if ok_to_drop:
 *           drop(r); r <- dodequeue(now); dropping <- true
 *           delta <- count - lastcount; count <- 1
 *           if delta > 1 and now - drop_next < 16 INTERVAL: count <- delta
 *           drop_next <- control_law(now, count); lastcount <- count
 *       return r
 *   control_law(t, count) = t + INTERVAL / sqrt(count)
 *
 * aqm_codel_dequeue() is one dodequeue() and what dequeue() does with its
 * result up to the next dodequeue(): a drop returns AQM_DROP and the
 * caller comes back with the next packet (cont = true), at the same now;
 * `phase` remembers which of the two drops the call is in.  bytes() is the
 * backlog behind the dequeued packet (the core counts it up to one MTU).
 *
 * Choices, each deliberate:
 *  - The entry drop does not count (count <- 1 or delta after it), as in
 *    Linux's codel_impl.h, which the RFC's text says it follows.
 *  - ECN (ecn=1, an ECT packet): the packet is marked instead of dropped
 *    and sent; in the dropping state count still rises and drop_next
 *    advances, once per mark (Linux's codel_dequeue).  The RFC only says
 *    to mark rather than drop.
 *  - control_law is exact: floor(INTERVAL / sqrt(count)) = floor(sqrt(
 *    floor(INTERVAL^2 / count))), the integer square root by Newton's
 *    iteration to convergence (128-bit).  Linux keeps a one-step Newton
 *    approximation of 1/sqrt(count) instead, a few percent off at small
 *    counts; the RFC's law is the exact one, and drops are rare enough
 *    (at most one per INTERVAL / sqrt(count)) to afford it.
 *  - Times are ns; MAXPACKET is the link's MTU segment (aqm_cfg.mtu_bytes).
 */
#include "aqm.h"

__extension__ typedef unsigned __int128 u128;

/* "now - drop_next < 16 INTERVAL": the RFC's memory of the last episode. */
#define CODEL_REENTRY_INTERVALS	16

/* floor(sqrt(n)), given any guess >= it. */
static uint64_t isqrt(u128 n, uint64_t guess)
{
	u128 x = guess, y;

	if (!x)
		return 0;
	for (;;) {
		y = (x + n / x) / 2;
		if (y >= x)
			return (uint64_t)x;
		x = y;
	}
}

uint64_t aqm_codel_interval_ns(uint64_t interval_ns, uint32_t count)
{
	if (count <= 1)
		return interval_ns;
	/* result <= interval: a guess from above, as Newton's iteration needs */
	return isqrt((u128)interval_ns * interval_ns / count, interval_ns);
}

static uint64_t control_law(const struct aqm *a, uint64_t t, uint32_t count)
{
	return t + aqm_codel_interval_ns(a->cfg.codel.interval_ns, count);
}

/* dodequeue()'s verdict on the head packet; updates first_above_time. */
static bool ok_to_drop(struct aqm *a, uint64_t now, const struct aqm_head *h)
{
	struct aqm_codel *c = &a->codel;

	if (!h || h->sojourn_ns < a->cfg.codel.target_ns ||
	    h->bytes_after <= a->cfg.mtu_bytes) {
		c->first_above_time = 0;
		return false;
	}
	if (!c->first_above_time) {
		c->first_above_time = now + a->cfg.codel.interval_ns;
		return false;
	}
	return now >= c->first_above_time;
}

/* The entry into the dropping state, after its drop (or mark). */
static void enter_dropping(struct aqm *a, uint64_t now)
{
	struct aqm_codel *c = &a->codel;
	uint32_t delta = c->count > c->lastcount ? c->count - c->lastcount : 0;
	int64_t since = (int64_t)(now - c->drop_next);

	c->dropping = true;
	c->count = 1;
	if (delta > 1 &&
	    since < (int64_t)(CODEL_REENTRY_INTERVALS * a->cfg.codel.interval_ns))
		c->count = delta;
	c->drop_next = control_law(a, now, c->count);
	c->lastcount = c->count;
}

/* A drop (or mark) of the dropping state's loop: now >= drop_next. */
static enum aqm_verdict loop_drop(struct aqm *a, const struct aqm_head *h)
{
	struct aqm_codel *c = &a->codel;

	if (c->count < UINT32_MAX)
		c->count++;
	if (a->cfg.ecn && h->ect) {
		c->drop_next = control_law(a, c->drop_next, c->count);
		return AQM_MARK;
	}
	c->phase = AQM_CODEL_LOOP;
	return AQM_DROP;
}

enum aqm_verdict aqm_codel_dequeue(struct aqm *a, uint64_t now,
				   const struct aqm_head *h, bool cont)
{
	struct aqm_codel *c = &a->codel;
	bool ok = ok_to_drop(a, now, h);

	if (cont && c->phase == AQM_CODEL_ENTRY) {
		/* after the entry drop the next packet goes, whatever ok says */
		enter_dropping(a, now);
		return AQM_PASS;
	}
	if (cont) {
		/* inside "while now >= drop_next and dropping" */
		if (!ok) {
			c->dropping = false;
			return AQM_PASS;
		}
		c->drop_next = control_law(a, c->drop_next, c->count);
		return now >= c->drop_next ? loop_drop(a, h) : AQM_PASS;
	}
	if (c->dropping) {
		if (!ok) {
			c->dropping = false;
			return AQM_PASS;
		}
		return now >= c->drop_next ? loop_drop(a, h) : AQM_PASS;
	}
	if (!ok)
		return AQM_PASS;
	if (a->cfg.ecn && h->ect) {
		enter_dropping(a, now);
		return AQM_MARK;
	}
	c->phase = AQM_CODEL_ENTRY;
	return AQM_DROP;
}
