/*
 * test_aqm.c - unit tests of linkemu's active queue management (aqm*.c,
 * ecn.c) and of the scheduler core running it (sched.c): hand-computed
 * timelines from each paper or RFC (RED's average, drop probability with
 * count, gentle region, idle-time decay, byte mode and Adaptive RED;
 * CoDel's drop times under a standing queue, its re-entry and its exit;
 * PIE's probability updates, burst allowance and de-randomization), the
 * core's placement of each decision (CoDel at the head, the next packet
 * moving earlier), seeded repeatability, ECN marking, super-frames cut by a
 * decision, the counter invariant, and refused parameters naming the field.
 *
 * Every expected number is worked out by hand in the comment next to its
 * check; fixed point is compared with a tolerance far below the precision
 * the hand computation carries.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../aqm.h"
#include "../ecn.h"
#include "../gso.h"
#include "check.h"

#define US 1000ULL
#define MS 1000000ULL
#define SEC 1000000000ULL

/* ---- helpers ------------------------------------------------------------- */

static struct aqm_cfg spec(const char *s)
{
	struct aqm_cfg c;
	char err[256];

	if (aqm_parse(&c, s, err, sizeof(err))) {
		printf("  unexpected parse error: %s\n", err);
		memset(&c, 0, sizeof(c));
	}
	return c;
}

static struct aqm make(const char *s, uint64_t rate_bps)
{
	struct aqm_cfg c = spec(s);
	struct aqm a;

	c.rate_bps = rate_bps;
	if (aqm_init(&a, &c, 1, 0, NULL, 0))
		memset(&a, 0, sizeof(a));
	return a;
}

static double prob(uint64_t p)
{
	return ldexp((double)p, -AQM_PROB_SHIFT);
}

static double avg_pkts(const struct aqm *a)
{
	return ldexp((double)a->red.avg, -AQM_FRAC_SHIFT);
}

/* An arrival finding q packets of 1000 bytes, at now. */
static struct aqm_arrival arrival(uint64_t index, uint64_t now, uint64_t q)
{
	struct aqm_arrival arr;

	memset(&arr, 0, sizeof(arr));
	arr.index = index;
	arr.now_ns = now;
	arr.bytes = 1000;
	arr.q_pkts = q;
	arr.q_bytes = q * 1000;
	return arr;
}

/*
 * An Ethernet + IPv4 (or IPv6) + UDP frame of len bytes with this ECN
 * codepoint; the IPv4 header checksum valid.
 */
static void ip_frame(uint8_t *f, uint32_t len, bool v6, int ecn, uint64_t tag)
{
	uint32_t i;

	memset(f, 0, len);
	memset(f, 0xaa, 12);
	for (i = 42; i < len; i++)
		f[i] = (uint8_t)(tag * 31 + i);
	if (v6) {
		f[12] = 0x86;
		f[13] = 0xdd;
		f[14] = 0x60 | 0x0b;		/* traffic class 0xb? (DSCP bits) */
		f[15] = (uint8_t)(0x80 | (ecn << 4));
		f[18] = (uint8_t)((len - 54) >> 8);
		f[19] = (uint8_t)(len - 54);
		f[20] = 17;
		f[21] = 64;
	} else {
		uint16_t c;

		f[12] = 0x08;
		f[14] = 0x45;
		f[15] = (uint8_t)(0xb8 | ecn);	/* DSCP EF, and the ECN bits */
		f[16] = (uint8_t)((len - 14) >> 8);
		f[17] = (uint8_t)(len - 14);
		f[22] = 64;
		f[23] = 17;
		memcpy(f + 26, "\x0a\x00\x00\x01\x0a\x00\x00\x02", 8);
		c = (uint16_t)~gso_csum_fold(gso_csum_add(0, f + 14, 20));
		f[24] = (uint8_t)(c >> 8);
		f[25] = (uint8_t)c;
	}
}

static bool ipv4_csum_ok(const uint8_t *f)
{
	return gso_csum_fold(gso_csum_add(0, f + 14, 20)) == 0xffff;
}

/* ---- RED ------------------------------------------------------------------ */

/*
 * A queue held at q = 10 packets: avg_n = (1 - w_q) avg_{n-1} + w_q q, from 0,
 * so avg_n = q (1 - (1 - w_q)^n) with w_q = 0.002:
 *   n = 1:   10 (1 - 0.998)      = 0.02
 *   n = 2:   10 (1 - 0.998^2)    = 10 (1 - 0.996004)  = 0.03996
 *   n = 10:  10 (1 - 0.998^10)   = 10 (1 - 0.9801790) = 0.198210
 *   n = 500: 10 (1 - 0.998^500)  = 10 (1 - e^{500 ln 0.998})
 *          = 10 (1 - e^{-1.0010013}) = 10 (1 - 0.3675113) = 6.324887
 */
static void test_red_average(void)
{
	struct aqm a = make("red", 8000000);
	static const struct { unsigned int n; double avg; } want[] = {
		{ 1, 0.02 }, { 2, 0.03996 }, { 10, 0.198210 }, { 500, 6.324887 },
	};
	unsigned int n = 0, k;

	for (k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		while (n < want[k].n) {
			struct aqm_arrival arr = arrival(n, n * US, 10);

			aqm_red_enqueue(&a, &arr);
			n++;
		}
		CHECK(fabs(avg_pkts(&a) - want[k].avg) < 2e-6, "avg after %u: %.7f, want %.7f",
		      n, avg_pkts(&a), want[k].avg);
	}
}

/*
 * min_th 5, max_th 15, max_p 0.1, avg 10:
 *   p_b = max_p (avg - min_th) / (max_th - min_th) = 0.1 * 5 / 10 = 0.05
 *   p_a = p_b / (1 - count p_b):
 *     count 0: 0.05;  1: 0.05 / 0.95 = 0.0526316;  10: 0.05 / 0.5 = 0.1;
 *     18: 0.05 / 0.1 = 0.5;  19: 0.05 / 0.05 = 1;  25: 1 (count p_b >= 1)
 * avg 7.5: p_b = 0.1 * 2.5 / 10 = 0.025; avg 5 (= min_th): 0.
 */
static void test_red_drop_probability(void)
{
	struct aqm a = make("red:min_th_pkts=5,max_th_pkts=15,max_p=0.1", 0);
	static const struct { int64_t count; double pa; } want[] = {
		{ 0, 0.05 }, { 1, 0.0526316 }, { 10, 0.1 }, { 18, 0.5 },
		{ 19, 1.0 }, { 25, 1.0 },
	};
	bool forced;
	uint64_t pb;
	unsigned int k;

	a.red.avg = 10 * AQM_FRAC_ONE;
	pb = aqm_red_pb(&a, 1000, &forced);
	CHECK(!forced && fabs(prob(pb) - 0.05) < 1e-12, "p_b %.12f", prob(pb));
	for (k = 0; k < sizeof(want) / sizeof(want[0]); k++)
		CHECK(fabs(prob(aqm_red_pa(pb, want[k].count)) - want[k].pa) < 1e-7,
		      "count %lld: p_a %.9f, want %.7f", (long long)want[k].count,
		      prob(aqm_red_pa(pb, want[k].count)), want[k].pa);
	a.red.avg = 15 * AQM_FRAC_ONE / 2;
	CHECK(fabs(prob(aqm_red_pb(&a, 1000, &forced)) - 0.025) < 1e-12, "avg 7.5");
	a.red.avg = 5 * AQM_FRAC_ONE;
	CHECK(aqm_red_pb(&a, 1000, &forced) == 0 && !forced, "avg = min_th: 0");
}

/*
 * count in action (Figure 2): count rises by one per unmarked arrival
 * between the thresholds and restarts at 0 after a mark, so with avg held
 * at 10 (w_q = 1: avg = q) and p_b = 0.05, the k-th arrival after a mark
 * is marked with p_a = p_b / (1 - k p_b): P(gap = k) = prod_{j<k} (1 -
 * p_b/(1 - j p_b)) * p_b/(1 - k p_b) = (1 - k p_b)/(1 - p_b) * p_b/(1 - k
 * p_b) = p_b / (1 - p_b) = 1/19 for k = 1..19: gaps uniform on 1..19, mean
 * 10, never 20 or more (the 19th has p_a = 1).  (The paper's section 7
 * counts from 0 and gets 1..1/p_b; ns-2 does as Figure 2, and so do we.)
 * Over 400,000 arrivals (~40,000 gaps, sd of the mean 5.48 / sqrt(40000) =
 * 0.027): the mean within 0.15 of 10.  Below min_th count is -1.
 */
static void test_red_count_uniform_gaps(void)
{
	struct aqm a = make("red:min_th_pkts=5,max_th_pkts=15,max_p=0.1,wq=1", 0);
	uint64_t i, last = 0, gaps = 0, sum = 0, max_gap = 0;
	bool seen = false;

	for (i = 0; i < 400000; i++) {
		struct aqm_arrival arr = arrival(i, i * US, 10);

		if (aqm_red_enqueue(&a, &arr) == AQM_DROP) {
			if (seen) {
				sum += i - last;
				gaps++;
				if (i - last > max_gap)
					max_gap = i - last;
			}
			CHECK(a.red.count == 0, "count 0 after a mark");
			seen = true;
			last = i;
		}
	}
	CHECK(max_gap == 19, "longest gap %llu, want 19", (unsigned long long)max_gap);
	CHECK(fabs((double)sum / (double)gaps - 10.0) < 0.15, "mean gap %.3f, want 10",
	      (double)sum / (double)gaps);
	{
		struct aqm_arrival arr = arrival(i, i * US, 2);	/* avg 2 < min_th */

		CHECK(aqm_red_enqueue(&a, &arr) == AQM_PASS && a.red.count == -1,
		      "below min_th: count -1");
	}
}

/*
 * gentle (min_th 5, max_th 15, max_p 0.1):
 *   avg 20: p_b = max_p + (1 - max_p)(avg - max_th)/max_th = 0.1 + 0.9 * 5/15 = 0.4
 *   avg 29: 0.1 + 0.9 * 14/15 = 0.94;  avg 30 = 2 max_th: forced (every packet)
 * not gentle: avg 15 = max_th is already forced.  A forced mark is a drop
 * even for an ECT packet with ecn=1; an unforced one of it is a mark.
 */
static void test_red_gentle_and_forced(void)
{
	struct aqm g = make("red:min_th_pkts=5,max_th_pkts=15,max_p=0.1,gentle=1,ecn=1,wq=1", 0);
	struct aqm h = make("red:min_th_pkts=5,max_th_pkts=15,max_p=0.1,gentle=0,wq=1", 0);
	struct aqm_arrival arr;
	bool forced;
	uint64_t pb;

	g.red.avg = 20 * AQM_FRAC_ONE;
	pb = aqm_red_pb(&g, 1000, &forced);
	CHECK(!forced && fabs(prob(pb) - 0.4) < 1e-12, "avg 20: p_b %.12f", prob(pb));
	g.red.avg = 29 * AQM_FRAC_ONE;
	pb = aqm_red_pb(&g, 1000, &forced);
	CHECK(!forced && fabs(prob(pb) - 0.94) < 1e-12, "avg 29: p_b %.12f", prob(pb));
	g.red.avg = 30 * AQM_FRAC_ONE;
	CHECK(aqm_red_pb(&g, 1000, &forced) == AQM_PROB_ONE && forced, "2 max_th: forced");
	h.red.avg = 15 * AQM_FRAC_ONE;
	CHECK(aqm_red_pb(&h, 1000, &forced) == AQM_PROB_ONE && forced,
	      "not gentle: max_th forced");
	h.red.avg = 15 * AQM_FRAC_ONE - 1;
	pb = aqm_red_pb(&h, 1000, &forced);
	CHECK(!forced && fabs(prob(pb) - 0.1) < 1e-9, "just below max_th: max_p");

	/* w_q = 1: avg = q.  q = 30: forced, dropped though ECT */
	arr = arrival(0, 0, 30);
	arr.ect = true;
	CHECK(aqm_red_enqueue(&g, &arr) == AQM_DROP && g.red.count == 0,
	      "forced: a drop even with ECN");
	/* q = 29 with count raised: p_a = 0.94 / (1 - k 0.94) = 1 from k = 2 */
	arr = arrival(1, 0, 29);
	arr.ect = true;
	g.red.count = 1;
	CHECK(aqm_red_enqueue(&g, &arr) == AQM_MARK, "unforced, ECT: a mark");
	arr.ect = false;
	arr.index = 2;
	g.red.count = 1;
	CHECK(aqm_red_enqueue(&g, &arr) == AQM_DROP, "unforced, not ECT: a drop");
	arr.index = 3;
	arr.full = true;
	CHECK(aqm_red_enqueue(&g, &arr) == AQM_TAIL, "full buffer: drop-tail");
}

/*
 * Idle time: with an empty queue, avg <- (1 - w_q)^m avg, m = idle / s and s
 * the time a mean_pkt_bytes packet takes: 500 bytes at 8 Mb/s = 0.5 ms.
 * 50 ms idle: m = 100, avg 8 -> 8 * 0.998^100 = 8 * 0.8185668 = 6.548534.
 * 49.9 ms: m = 99 (floor) -> 8 * 0.998^99 = 6.561658.
 * No rate (infinite): any idle time takes the average to 0.
 */
static void test_red_idle_decay(void)
{
	struct aqm a = make("red", 8000000);
	struct aqm b = make("red", 0);
	struct aqm_arrival arr = arrival(0, 60 * MS, 0);

	a.red.avg = 8 * AQM_FRAC_ONE;
	arr.idle_since_ns = 10 * MS;
	aqm_red_enqueue(&a, &arr);
	CHECK(fabs(avg_pkts(&a) - 6.548534) < 2e-6, "50 ms idle: %.7f", avg_pkts(&a));
	a.red.avg = 8 * AQM_FRAC_ONE;
	arr.index = 1;
	arr.now_ns = 10 * MS + 49900 * US;
	aqm_red_enqueue(&a, &arr);
	CHECK(fabs(avg_pkts(&a) - 6.561658) < 2e-6, "49.9 ms idle: %.7f", avg_pkts(&a));
	b.red.avg = 8 * AQM_FRAC_ONE;
	aqm_red_enqueue(&b, &arr);
	CHECK(b.red.avg == 0, "infinite rate: the average empties");
}

/*
 * Byte mode: thresholds 15000 and 45000 bytes, max_p 0.1, w_q = 1 so avg is
 * the backlog in bytes.  q = 30000: p_b = 0.1 (30000 - 15000) / 30000 = 0.05
 * for a full 1514-byte packet (MaximumPacketSize, the default MTU segment),
 * p_b 1514/1514 = 0.05; a 757-byte one: 0.05 * 757/1514 = 0.025.
 */
static void test_red_byte_mode(void)
{
	struct aqm a = make("red:min_th_bytes=15000,max_th_bytes=45000,max_p=0.1,wq=1", 0);
	struct aqm_arrival arr = arrival(0, 0, 1);
	bool forced;

	arr.q_bytes = 30000;
	aqm_red_enqueue(&a, &arr);
	CHECK(a.red.avg == 30000 * AQM_FRAC_ONE, "avg in bytes");
	CHECK(fabs(prob(aqm_red_pb(&a, 1514, &forced)) - 0.05) < 1e-12, "full size");
	CHECK(fabs(prob(aqm_red_pb(&a, 757, &forced)) - 0.025) < 1e-12, "half size");
}

/*
 * Adaptive RED (min_th 5, max_th 15: target band [5 + 0.4*10, 5 + 0.6*10] =
 * [9, 11]), w_q = 1 so avg = q, checked on arrivals 0.5 s apart:
 *   avg 14 > 11: max_p += min(0.01, max_p/4): 0.1 -> 0.11 -> 0.12 -> 0.13
 *     (t = 0.5, 1.0, 1.5 s; at t = 0 less than 0.5 s since 0: nothing)
 *   avg 6 < 9:   max_p *= 0.9: 0.13 -> 0.117 -> 0.1053 (t = 2.0, 2.5 s)
 *   avg 10, in the band: unchanged (t = 3.0 s)
 *   an arrival 0.1 s after an adaptation: unchanged
 */
static void test_red_adaptive(void)
{
	struct aqm a = make("red:min_th_pkts=5,max_th_pkts=15,max_p=0.1,wq=1,adaptive=1", 0);
	static const struct { uint64_t t; uint64_t q; double max_p; } steps[] = {
		{ 0, 14, 0.1 }, { 500 * MS, 14, 0.11 }, { 600 * MS, 14, 0.11 },
		{ 1000 * MS, 14, 0.12 }, { 1500 * MS, 14, 0.13 },
		{ 2000 * MS, 6, 0.117 }, { 2500 * MS, 6, 0.1053 },
		{ 3000 * MS, 10, 0.1053 },
	};
	unsigned int k;

	for (k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		struct aqm_arrival arr = arrival(k, steps[k].t, steps[k].q);

		aqm_red_enqueue(&a, &arr);
		CHECK(fabs(prob(a.red.max_p) - steps[k].max_p) < 1e-9,
		      "t = %llu ms: max_p %.9f, want %.4f",
		      (unsigned long long)(steps[k].t / MS), prob(a.red.max_p),
		      steps[k].max_p);
	}
}

/* ---- CoDel: the state machine --------------------------------------------- */

/* One dequeue() of the RFC at now on a queue whose packets all have this sojourn. */
static int codel_call(struct aqm *a, uint64_t now, uint64_t sojourn)
{
	struct aqm_head h = { sojourn, 10 * 1514, false };
	int drops = 0;

	if (aqm_codel_dequeue(a, now, &h, false) != AQM_DROP)
		return 0;
	do
		drops++;
	while (aqm_codel_dequeue(a, now, &h, true) == AQM_DROP);
	return drops;
}

/*
 * A standing queue: the link asks for a packet every 1 ms from t = 0, every
 * head has sojourn 50 ms >= TARGET 5 ms, with far more than an MTU behind it.
 *   t = 0:    first_above_time = 0 + INTERVAL = 100 ms
 *   t = 100:  ok to drop, not dropping: drop (the entry), the next packet
 *             goes; count = 1 (delta = 0), drop_next = 100 + 100 = 200 ms
 *   t = 200:  drop, count 2; the next: drop_next = 200 + 100/sqrt(2)
 *             = 200 + 70.710678 = 270.710678 ms > now: it goes
 *   t = 271:  drop, count 3; drop_next = 270.710678 + 100/sqrt(3) (57.735026)
 *             = 328.445704
 *   t = 329:  count 4; drop_next + 50 = 378.445704
 *   t = 379:  count 5; + 44.721359 = 423.167063
 *   t = 424:  count 6; + 40.824829 = 463.991892
 *   t = 464:  count 7; + 37.796447 = 501.788339
 *   t = 480:  sojourn 1 ms < TARGET: leave the dropping state (no drop at 502)
 *   t = 490:  sojourn 50 ms again: first_above_time = 590
 *   t = 590:  enter again: delta = count - lastcount = 7 - 1 = 6 > 1 and
 *             now - drop_next = 88.2 ms < 16 INTERVAL: count = 6, drop_next =
 *             590 + 100/sqrt(6) = 590 + 40.824829 = 630.824829
 *   t = 631:  count 7; drop_next = 630.824829 + 37.796447 = 668.621276
 *   t = 669:  count 8
 * One drop per call: INTERVAL/sqrt(count) stays above the 1-ms call spacing.
 */
static void test_codel_drop_times(void)
{
	struct aqm a = make("codel", 0);
	static const uint64_t want_ms[] = { 100, 200, 271, 329, 379, 424, 464,
					    590, 631, 669 };
	uint64_t got[16], t;
	unsigned int n = 0, k;

	for (t = 0; t <= 700; t++) {
		uint64_t sojourn = t >= 480 && t < 490 ? 1 * MS : 50 * MS;
		int drops = codel_call(&a, t * MS, sojourn);

		CHECK(drops <= 1, "t = %llu: %d drops", (unsigned long long)t, drops);
		if (drops && n < 16)
			got[n++] = t;
		if (t == 100)
			CHECK(a.codel.count == 1 && a.codel.drop_next == 200 * MS,
			      "entry: count %u drop_next %llu", a.codel.count,
			      (unsigned long long)a.codel.drop_next);
		if (t == 200)
			CHECK(a.codel.count == 2 && a.codel.drop_next == 270710678ULL,
			      "drop_next %llu", (unsigned long long)a.codel.drop_next);
		if (t == 480)
			CHECK(!a.codel.dropping && !a.codel.first_above_time,
			      "left the dropping state");
		if (t == 590)
			CHECK(a.codel.count == 6 && a.codel.lastcount == 6 &&
			      a.codel.drop_next == 630824829ULL,
			      "re-entry: count %u drop_next %llu", a.codel.count,
			      (unsigned long long)a.codel.drop_next);
	}
	CHECK(n == sizeof(want_ms) / sizeof(want_ms[0]), "%u drops", n);
	for (k = 0; k < n && k < sizeof(want_ms) / sizeof(want_ms[0]); k++)
		CHECK(got[k] == want_ms[k], "drop %u at %llu ms, want %llu", k,
		      (unsigned long long)got[k], (unsigned long long)want_ms[k]);
	CHECK(aqm_codel_interval_ns(100 * MS, 2) == 70710678ULL &&
	      aqm_codel_interval_ns(100 * MS, 3) == 57735026ULL &&
	      aqm_codel_interval_ns(100 * MS, 4) == 50000000ULL &&
	      aqm_codel_interval_ns(100 * MS, 1000000) == 100000ULL,
	      "control law: floor(INTERVAL / sqrt(count))");
}

/*
 * The other ways out and past: bytes behind <= MAXPACKET (one MTU) never
 * start the clock; an empty queue resets first_above_time and leaves the
 * dropping state; a backlog so high that drop_next falls behind now drops
 * several packets in one dequeue() (the RFC's while loop): with count 1000
 * and drop_next 10 ms behind, each drop adds 100/sqrt(count) ~ 3.16 ms, so
 * four drops (count 1001..1004: +3.1607, +3.1591, +3.1575, +3.1560 ms,
 * the fourth passing now) before one goes.
 */
static void test_codel_exits_and_bursts(void)
{
	struct aqm a = make("codel", 0);
	struct aqm_head small = { 50 * MS, 1514, false };
	int k;

	for (k = 0; k < 300; k++)
		CHECK(aqm_codel_dequeue(&a, (uint64_t)k * MS, &small, false) == AQM_PASS,
		      "one MTU behind: never");
	CHECK(!a.codel.first_above_time, "no clock");
	codel_call(&a, 1000 * MS, 50 * MS);
	CHECK(a.codel.first_above_time == 1100 * MS, "clock started");
	CHECK(aqm_codel_dequeue(&a, 1001 * MS, NULL, false) == AQM_PASS &&
	      !a.codel.first_above_time, "empty queue: reset");

	a.codel.dropping = true;
	a.codel.count = 1000;
	a.codel.lastcount = 1000;
	a.codel.first_above_time = 1 * MS;
	a.codel.drop_next = 2000 * MS - 10 * MS;
	CHECK(codel_call(&a, 2000 * MS, 50 * MS) == 4 && a.codel.count == 1004,
	      "four drops at once, count %u", a.codel.count);
	CHECK(a.codel.drop_next > 2000 * MS, "the next one ahead");
}

/* ---- PIE ------------------------------------------------------------------ */

/*
 * alpha 0.125 Hz, beta 1.25 Hz, QDELAY_REF 15 ms (RFC 8033 defaults):
 *  1. drop_prob 0, qdelay_old 0, qdelay 30 ms:
 *     p = 0.125 (0.030 - 0.015) + 1.25 (0.030 - 0) = 0.001875 + 0.0375 = 0.039375
 *     drop_prob < 0.000001: p / 2048 = 1.9226074e-5; drop_prob = 1.9226074e-5
 *     burst allowance 150 - 15 = 135 ms (no reset: drop_prob > 0)
 *  2. qdelay 30 ms again: p = 0.001875 + 0 = 0.001875; drop_prob in
 *     [0.00001, 0.0001): p / 128 = 1.4648438e-5; drop_prob = 3.3874512e-5;
 *     burst 120 ms
 *  3. qdelay 45 ms: p = 0.125 * 0.030 + 1.25 * 0.015 = 0.0225; / 128 =
 *     1.7578125e-4; drop_prob = 2.0965576e-4; burst 105 ms
 *  4. drop_prob 0.15, qdelay_old 0, qdelay 100 ms: p = 0.125 * 0.085 +
 *     1.25 * 0.1 = 0.135625 > 0.02 with drop_prob >= 0.1: capped at 0.02
 *     (§5.5): drop_prob = 0.17
 *  5. drop_prob 0.5, qdelay_old 0, qdelay 0: p = 0.125 * (-0.015) =
 *     -0.001875 (no scaling at >= 0.1): 0.498125, then * 0.98 (both delays
 *     0) = 0.4881625
 *  6. drop_prob 0.00001, both delays 0: p / 512 still takes it below 0: 0,
 *     and with both delays under 7.5 ms the burst allowance is reset to 150 ms
 */
static void test_pie_updates(void)
{
	struct aqm a = make("pie", 0);

	CHECK(a.pie.burst_ns == 150 * MS && !a.pie.drop_prob, "initial state");
	aqm_pie_update(&a, 30 * MS);
	CHECK(fabs(prob(a.pie.drop_prob) - 1.922607421875e-05) < 1e-15,
	      "1: %.12g", prob(a.pie.drop_prob));
	CHECK(a.pie.burst_ns == 135 * MS && a.pie.qdelay_old_ns == 30 * MS, "1: burst");
	aqm_pie_update(&a, 30 * MS);
	CHECK(fabs(prob(a.pie.drop_prob) - 3.387451171875e-05) < 1e-15,
	      "2: %.12g", prob(a.pie.drop_prob));
	CHECK(a.pie.burst_ns == 120 * MS, "2: burst");
	aqm_pie_update(&a, 45 * MS);
	CHECK(fabs(prob(a.pie.drop_prob) - 2.0965576171875e-04) < 1e-15,
	      "3: %.12g", prob(a.pie.drop_prob));
	CHECK(a.pie.burst_ns == 105 * MS, "3: burst");

	a.pie.drop_prob = AQM_PROB_ONE / 100 * 15;
	a.pie.qdelay_old_ns = 0;
	aqm_pie_update(&a, 100 * MS);
	CHECK(fabs(prob(a.pie.drop_prob) - 0.17) < 1e-12, "4: cap: %.12g",
	      prob(a.pie.drop_prob));
	a.pie.drop_prob = AQM_PROB_ONE / 2;
	a.pie.qdelay_old_ns = 0;
	aqm_pie_update(&a, 0);
	CHECK(fabs(prob(a.pie.drop_prob) - 0.4881625) < 1e-12, "5: decay: %.12g",
	      prob(a.pie.drop_prob));
	a.pie.drop_prob = AQM_PROB_ONE / 100000;
	a.pie.qdelay_old_ns = 0;
	a.pie.burst_ns = 0;
	aqm_pie_update(&a, 0);
	CHECK(!a.pie.drop_prob && a.pie.burst_ns == 150 * MS, "6: reset");
}

/*
 * drop_early (no burst allowance left, qdelay_old 20 ms >= 7.5 ms, backlog
 * far above 2 MTU):
 *   drop_prob 0.25: accu_prob 0.25, 0.5, 0.75 < 0.85: the three arrivals
 *     after a drop always pass (de-randomization, §5.4)
 *   drop_prob 0.1 with accu_prob 8.4: 8.5 >= 8.5: dropped whatever the draw,
 *     accu_prob back to 0; with ecn=1 an ECT arrival is marked instead
 *     (drop_prob <= 0.1, §5.1) and accu_prob stays 8.5
 *   qdelay_old 5 ms < 7.5 and drop_prob < 0.2: passes; backlog 3000 bytes
 *     <= 2 * 1514: passes (the work-conserving safeguards)
 *   full buffer: drop-tail, accu_prob 0
 */
static void test_pie_drop_early(void)
{
	struct aqm a = make("pie:tupdate_us=1000000,ecn=1", 0);
	struct aqm_arrival arr = arrival(0, 0, 100);
	unsigned int i, after_drop = 100, early = 0, drops = 0;

	a.pie.burst_ns = 0;
	a.pie.qdelay_old_ns = 20 * MS;
	a.pie.drop_prob = AQM_PROB_ONE / 4;
	for (i = 0; i < 20000; i++) {
		arr.index = i;
		if (aqm_pie_enqueue(&a, &arr) == AQM_DROP) {
			if (after_drop < 3)
				early++;
			after_drop = 0;
			drops++;
		} else {
			after_drop++;
		}
	}
	/* 3 sure passes, then 1/0.25 on average: one drop in 7, ~2860 */
	CHECK(!early && drops > 2500, "no drop within 3 of another (%u drops)", drops);

	a.pie.drop_prob = AQM_PROB_ONE / 10;
	a.pie.accu_prob = AQM_PROB_ONE / 10 * 84;
	arr.index = i++;
	CHECK(aqm_pie_enqueue(&a, &arr) == AQM_DROP && !a.pie.accu_prob, "8.5: drop");
	a.pie.accu_prob = AQM_PROB_ONE / 10 * 84;
	arr.index = i++;
	arr.ect = true;
	CHECK(aqm_pie_enqueue(&a, &arr) == AQM_MARK &&
	      a.pie.accu_prob == AQM_PROB_ONE / 10 * 85, "8.5, ECT: a mark");
	arr.ect = false;
	a.pie.qdelay_old_ns = 5 * MS;
	arr.index = i++;
	CHECK(aqm_pie_enqueue(&a, &arr) == AQM_PASS, "under half the target");
	a.pie.qdelay_old_ns = 20 * MS;
	a.pie.drop_prob = AQM_PROB_ONE;
	arr.q_bytes = 3000;
	arr.index = i++;
	CHECK(aqm_pie_enqueue(&a, &arr) == AQM_PASS, "two packets queued");
	arr.q_bytes = 100000;
	arr.full = true;
	arr.index = i++;
	CHECK(aqm_pie_enqueue(&a, &arr) == AQM_TAIL && !a.pie.accu_prob, "full");
}

/* ---- ECN ------------------------------------------------------------------ */

/* The frame helpers: read, set CE, IPv4 checksum still valid; IPv6 too. */
static void test_ecn_field(void)
{
	uint8_t f[200];

	ip_frame(f, 200, false, ECN_ECT0, 1);
	CHECK(ecn_get(f, 200) == ECN_ECT0 && ecn_capable(f, 200) && ipv4_csum_ok(f),
	      "ECT(0)");
	CHECK(ecn_set_ce(f, 200) && ecn_get(f, 200) == ECN_CE && ipv4_csum_ok(f) &&
	      f[15] == (0xb8 | ECN_CE), "CE set, DSCP kept, checksum valid");
	ip_frame(f, 200, false, ECN_ECT1, 2);
	CHECK(ecn_set_ce(f, 200) && ecn_get(f, 200) == ECN_CE && ipv4_csum_ok(f),
	      "ECT(1) -> CE");
	ip_frame(f, 200, false, ECN_NOT_ECT, 3);
	CHECK(!ecn_capable(f, 200) && !ecn_set_ce(f, 200) && ecn_get(f, 200) == 0 &&
	      ipv4_csum_ok(f), "not ECT: left alone");
	ip_frame(f, 200, true, ECN_ECT0, 4);
	CHECK(ecn_get(f, 200) == ECN_ECT0 && ecn_set_ce(f, 200) &&
	      ecn_get(f, 200) == ECN_CE && f[14] == 0x6b && (f[15] & 0xcf) == 0x80,
	      "IPv6: traffic class' ECN bits only");
	f[12] = 0x81;		/* a VLAN tag: not looked into */
	CHECK(ecn_get(f, 200) == -1 && !ecn_capable(f, 200), "VLAN: not IP");
	CHECK(ecn_get(f, 20) == -1, "short");
}

/* ---- parameters ----------------------------------------------------------- */

static void test_parse_good(void)
{
	static const char *const good[] = {
		"none", "red", "codel", "pie",
		"red:min_th_pkts=5,max_th_pkts=15,max_p=0.1,wq=0.002,gentle=1",
		"red:max_th_pkts=30", "red:min_th_pkts=0,max_th_pkts=1",
		"red:min_th_bytes=3000,max_th_bytes=9000,adaptive=1,ecn=1,mean_pkt_bytes=1500",
		"red:max_p=1,wq=1", "red:max_p=1e-3", "codel:target_us=5000,interval_us=100000",
		"codel:ecn=1,interval_us=60000000", "pie:target_us=15000,tupdate_us=15000,"
		"alpha=0.125,beta=1.25,max_burst_us=150000,ecn=1",
		"pie:alpha=0,beta=0,max_burst_us=0", "pie:tupdate_us=100",
	};
	struct aqm_cfg c, c2;
	char err[256], desc[256];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		CHECK(!aqm_parse(&c, good[i], err, sizeof(err)), "'%s' refused: %s",
		      good[i], err);
		aqm_describe(&c, desc, sizeof(desc));
		CHECK(!aqm_parse(&c2, desc, err, sizeof(err)) && !memcmp(&c, &c2, sizeof(c)),
		      "'%s' -> '%s' does not parse back the same", good[i], desc);
	}
	aqm_parse(&c, "red", err, sizeof(err));
	aqm_describe(&c, desc, sizeof(desc));
	CHECK(!strcmp(desc, "red:min_th_pkts=5,max_th_pkts=15,max_p=0.1,wq=0.002,"
		      "gentle=1,adaptive=0,ecn=0,mean_pkt_bytes=500"), "defaults: %s", desc);
	aqm_parse(&c, "codel", err, sizeof(err));
	aqm_describe(&c, desc, sizeof(desc));
	CHECK(!strcmp(desc, "codel:target_us=5000,interval_us=100000,ecn=0"), "%s", desc);
	aqm_parse(&c, "pie", err, sizeof(err));
	aqm_describe(&c, desc, sizeof(desc));
	CHECK(!strcmp(desc, "pie:target_us=15000,tupdate_us=15000,alpha=0.125,beta=1.25,"
		      "max_burst_us=150000,ecn=0"), "%s", desc);
}

/* Each bad spec is refused with one line that names the field. */
static void test_parse_bad(void)
{
	static const struct { const char *spec, *names; } bad[] = {
		{ "", "unknown model" }, { "RED", "unknown model" },
		{ "fq_codel", "unknown model" }, { "red:", "key=value" },
		{ "red:max_p=nan", "max_p" }, { "red:max_p=inf", "max_p" },
		{ "red:max_p=-0.1", "max_p" }, { "red:max_p=+0.1", "max_p" },
		{ "red:max_p=1.5", "max_p" }, { "red:max_p=0", "max_p" },
		{ "red:max_p=0x1p-3", "max_p" }, { "red:max_p=", "max_p" },
		{ "red:max_p=1e999", "max_p" }, { "red:wq=0", "wq" },
		{ "red:wq=2", "wq" }, { "red:min_th_pkts=20", "max_th_pkts" },
		{ "red:min_th_pkts=5,max_th_pkts=5", "min_th_pkts" },
		{ "red:min_th_pkts=5,min_th_pkts=6", "min_th_pkts" },
		{ "red:max_th_pkts=99999999999999999999", "max_th_pkts" },
		{ "red:max_th_pkts=1073741825", "max_th_pkts" },
		{ "red:max_th_pkts=-3", "max_th_pkts" }, { "red:max_th_pkts=0x10", "max_th_pkts" },
		{ "red:max_th_pkts=1.5", "max_th_pkts" },
		{ "red:min_th_bytes=3000", "max_th_bytes" },
		{ "red:min_th_pkts=5,max_th_bytes=9000", "min_th_pkts" },
		{ "red:gentle=2", "gentle" }, { "red:gentle=yes", "gentle" },
		{ "red:mean_pkt_bytes=0", "mean_pkt_bytes" }, { "red:foo=1", "foo" },
		{ "red:ecn=1,ecn=1", "ecn" }, { "red:=1", "key=value" },
		{ "red:max_p", "key=value" }, { "red:max_p=0.1,", "empty" },
		{ "red:,max_p=0.1", "empty" },
		{ "codel:target_us=0", "target_us" }, { "codel:target_us=-5", "target_us" },
		{ "codel:target_us=5ms", "target_us" }, { "codel:target_us=5.5", "target_us" },
		{ "codel:interval_us=60000001", "interval_us" },
		{ "codel:interval_us=18446744073709551616", "interval_us" },
		{ "codel:target_us= 5", "target_us" }, { "codel:max_p=0.1", "max_p" },
		{ "pie:alpha=101", "alpha" }, { "pie:alpha=-1", "alpha" },
		{ "pie:beta=nan", "beta" }, { "pie:tupdate_us=10", "tupdate_us" },
		{ "pie:max_burst_us=1e9", "max_burst_us" }, { "pie:target_us=", "target_us" },
		{ "pie:alpha=0.1,alpha=0.2", "alpha" },
	};
	struct aqm_cfg c;
	char err[512];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK(aqm_parse(&c, bad[i].spec, err, sizeof(err)) &&
		      strstr(err, bad[i].names) && !strchr(err, '\n'),
		      "'%s': [%s], want '%s' named", bad[i].spec, err, bad[i].names);
	}
	/* a control character in a spec is not echoed into the one line */
	CHECK(aqm_parse(&c, "red:max_p=0.1\n", err, sizeof(err)) && !strchr(err, '\n'),
	      "newline echoed: [%s]", err);
	/* configurations built by hand are checked as strictly */
	c = spec("codel");
	c.codel.interval_ns = 0;
	CHECK(aqm_check(&c, err, sizeof(err)) && strstr(err, "interval_us"), "%s", err);
	c = spec("red");
	c.red.max_p = AQM_PROB_ONE + 1;
	CHECK(aqm_check(&c, err, sizeof(err)) && strstr(err, "max_p"), "%s", err);
}

int main(void)
{
	RUN(test_red_average);
	RUN(test_red_drop_probability);
	RUN(test_red_count_uniform_gaps);
	RUN(test_red_gentle_and_forced);
	RUN(test_red_idle_decay);
	RUN(test_red_byte_mode);
	RUN(test_red_adaptive);
	RUN(test_codel_drop_times);
	RUN(test_codel_exits_and_bursts);
	RUN(test_pie_updates);
	RUN(test_pie_drop_early);
	RUN(test_ecn_field);
	RUN(test_parse_good);
	RUN(test_parse_bad);
	CHECK_DONE();
}
