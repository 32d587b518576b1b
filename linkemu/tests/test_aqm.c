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
#include "../sched.h"
#include "check.h"

#define US 1000ULL
#define MS 1000000ULL
#define SEC 1000000000ULL

static uint8_t frame[2048];

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
		f[14] = 0x60 | 0x0b;		/* traffic class 0xb_: DSCP bits, to see them kept */
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

static struct emu_dir_cfg core_cfg(const struct aqm_cfg *ac)
{
	struct emu_dir_cfg cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.max_frame = 1518;
	cfg.seed = 1;
	cfg.rate_bps = 8000000;		/* 1 us per byte: 1000 bytes take 1 ms */
	cfg.init_slots = 2048;
	cfg.aqm = ac;
	return cfg;
}

static enum emu_verdict enq(struct emu_dir *d, uint64_t now, uint32_t len,
			    int ecn)
{
	ip_frame(frame, len, false, ecn, d->next_index);
	return emu_dir_enqueue(d, now, frame, len, NULL);
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
 * The core's side of the idle decay: the queue empties when the last
 * departure ends it.  A 1000-byte frame at t = 0 leaves at 1 ms (8 Mb/s);
 * the next arrives at 51 ms to an empty queue: 50 ms idle, m = 100,
 * avg 8 -> 6.548534 as above.
 */
static void test_red_idle_decay_in_core(void)
{
	struct aqm_cfg ac = spec("red");
	struct emu_dir_cfg cfg = core_cfg(&ac);
	struct emu_dir d;

	CHECK(!emu_dir_init(&d, &cfg), "init");
	CHECK(enq(&d, 0, 1000, 0) == EMU_QUEUED, "first");
	d.aqm.red.avg = 8 * AQM_FRAC_ONE;
	CHECK(enq(&d, 51 * MS, 1000, 0) == EMU_QUEUED, "second");
	CHECK(fabs(avg_pkts(&d.aqm) - 6.548534) < 2e-6, "avg %.7f", avg_pkts(&d.aqm));
	emu_dir_destroy(&d);
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

/* ---- CoDel in the core: decided at the head ------------------------------- */

/*
 * 8 Mb/s, 1000-byte frames: 1 ms each, no delay.  200 frames arrive at
 * t = 0, then one every 1 ms (frame 200 + j at j + 1 ms): the link serves
 * one per ms, so a queue of ~200 stands (sojourn far above 5 ms).
 * Frame k starts at k ms until the first drop.  As in the pure timeline:
 *   frame 5 at 5 ms: sojourn 5 ms >= TARGET: first_above_time = 105 ms
 *   105 ms: frame 105 dropped (entry); frame 106 starts at 105 ms, not
 *           106 -- the drop took no link time -- and leaves at 106 ms;
 *           drop_next = 205 ms
 *   frame 106 + i starts at 105 + i ms, so at 205 ms frame 206: dropped,
 *           count 2; frame 207 starts at 205; drop_next = 275.710678 ms
 *   the first start >= 275.710678 is 276 ms: frame 207 + 71 = 278 dropped,
 *           count 3; drop_next = 275.710678 + 57.735026 = 333.445704
 *   334 ms: frame 279 + (334 - 276) = 337 dropped; drop_next + 50 = 383.445704
 *   384 ms: frame 338 + 50 = 388; drop_next + 44.721359 = 428.167063
 *   429 ms: frame 389 + 45 = 434
 */
static void test_codel_core_head_drops(void)
{
	struct aqm_cfg ac = spec("codel");
	struct emu_dir_cfg cfg = core_cfg(&ac);
	static const struct { uint64_t idx, t_ms; } want[] = {
		{ 105, 105 }, { 206, 205 }, { 278, 276 }, { 337, 334 },
		{ 388, 384 }, { 434, 429 },
	};
	struct emu_dir d;
	struct emu_pkt *p;
	uint64_t t, next = 0, dropped[16], prev_dep = 0;
	unsigned int n = 0, k, j;
	int bad = 0;

	cfg.limit_pkts = 1000;
	CHECK(!emu_dir_init(&d, &cfg), "init");
	CHECK(d.max_run_segs == 1, "every super-frame cut into segments");
	for (k = 0; k < 200; k++)
		CHECK(enq(&d, 0, 1000, 0) == EMU_QUEUED, "burst");
	for (t = 0; t <= 440 * MS; t += 100 * US) {
		if (t && t % MS == 0)
			enq(&d, t, 1000, 0);
		while ((p = emu_dir_pop_due(&d, t))) {
			while (next < p->index && n < 16) {
				dropped[n] = next++;
				/* the frame after a drop starts when the dropped one would have */
				CHECK(p->departure_ns == prev_dep + 1 * MS,
				      "frame %llu starts at the dropped one's instant",
				      (unsigned long long)p->index);
				n++;
			}
			if (p->departure_ns != (prev_dep > p->arrival_ns ? prev_dep :
						p->arrival_ns) + 1 * MS)
				bad++;
			prev_dep = p->departure_ns;
			next = p->index + 1;
		}
		if (!emu_dir_conserved(&d))
			bad++;
	}
	CHECK(!bad, "%d departures or invariants off", bad);
	CHECK(n == sizeof(want) / sizeof(want[0]), "%u drops", n);
	for (j = 0; j < n && j < sizeof(want) / sizeof(want[0]); j++)
		CHECK(dropped[j] == want[j].idx, "drop %u: frame %llu, want %llu", j,
		      (unsigned long long)dropped[j], (unsigned long long)want[j].idx);
	CHECK(d.c.aqm_drops == n && d.c.queue_drops == 0 && d.c.aqm_marks == 0,
	      "aqm_drops %llu", (unsigned long long)d.c.aqm_drops);
	emu_dir_destroy(&d);
}

/*
 * Decisions are made lazily but each at its own instant: the same arrivals
 * into a direction peeked at every 1 ms and into one never peeked until
 * the end leave the same frames at the same departures.  The loop is told
 * to wake at the head frame's earliest release (here its departure: no
 * delay).  Then the queue drains and the link idles: a frame into the idle
 * link has sojourn 0, so CoDel leaves its dropping state.
 */
static void test_codel_core_lazy_and_exit(void)
{
	struct aqm_cfg ac = spec("codel");
	struct emu_dir_cfg cfg = core_cfg(&ac);
	static uint64_t idx[1000], dep[1000];
	struct emu_dir a, b;
	struct emu_pkt *p;
	unsigned int k, n = 0, m = 0;
	uint64_t t;
	int bad = 0;

	CHECK(!emu_dir_init(&a, &cfg) && !emu_dir_init(&b, &cfg), "init");
	for (k = 0; k < 150; k++) {
		enq(&a, 0, 1000, 0);
		enq(&b, 0, 1000, 0);
	}
	CHECK(emu_dir_next_release_ns(&a) == 1 * MS, "wake at the first departure");
	for (t = MS; t <= 200 * MS; t += MS) {
		enq(&a, t, 1000, 0);
		enq(&b, t, 1000, 0);
		while ((p = emu_dir_pop_due(&a, t)) && n < 1000) {
			idx[n] = p->index;
			dep[n++] = p->departure_ns;
		}
	}
	CHECK(a.aqm.codel.dropping && a.c.aqm_drops > 0, "dropping under the standing queue");
	while ((p = emu_dir_pop_due(&b, 200 * MS)) && m < 1000) {
		if (m >= n || idx[m] != p->index || dep[m] != p->departure_ns)
			bad++;
		m++;
	}
	CHECK(!bad && m == n && a.c.aqm_drops == b.c.aqm_drops,
	      "%d frames differ (%u, %u sent)", bad, n, m);
	while (emu_dir_pop_due(&a, 10 * SEC))
		;
	CHECK(a.c.backlog_pkts == 0 && emu_dir_conserved(&a), "drained");
	CHECK(enq(&a, 11 * SEC, 1000, 0) == EMU_QUEUED, "into the idle link");
	CHECK(emu_dir_pop_due(&a, 11 * SEC + MS) != NULL, "sent");
	CHECK(!a.aqm.codel.dropping && !a.aqm.codel.first_above_time,
	      "left the dropping state");
	CHECK(emu_dir_conserved(&a), "invariant");
	emu_dir_destroy(&a);
	emu_dir_destroy(&b);
}

/*
 * Arrivals at an instant join the queue before the dequeue at that instant
 * (a qdisc enqueues, then runs): 8 Mb/s, TARGET 500 us.  A and B arrive at
 * 0; B reaches the head at 1 ms (sojourn 1 ms >= TARGET) just as C and D
 * arrive.  With C and D behind it (2000 bytes > MAXPACKET 1514) the clock
 * starts: first_above_time = 1 + 100 = 101 ms; had B been decided before
 * they were queued, nothing would be behind it and the clock would not
 * start.
 */
static void test_codel_core_arrivals_first(void)
{
	struct aqm_cfg ac = spec("codel:target_us=500");
	struct emu_dir_cfg cfg = core_cfg(&ac);
	struct emu_dir d;

	CHECK(!emu_dir_init(&d, &cfg), "init");
	enq(&d, 0, 1000, 0);
	enq(&d, 0, 1000, 0);
	enq(&d, 1 * MS, 1000, 0);
	enq(&d, 1 * MS, 1000, 0);
	CHECK(!d.aqm.codel.first_above_time, "B not decided yet");
	emu_dir_advance(&d, 1 * MS);
	CHECK(d.aqm.codel.first_above_time == 101 * MS, "first_above_time %llu",
	      (unsigned long long)d.aqm.codel.first_above_time);
	emu_dir_destroy(&d);
}

/* A queue that stays under TARGET is never touched. */
static void test_codel_core_short_queue(void)
{
	struct aqm_cfg ac = spec("codel");
	struct emu_dir_cfg cfg = core_cfg(&ac);
	struct emu_dir d;
	uint64_t t;

	CHECK(!emu_dir_init(&d, &cfg), "init");
	enq(&d, 0, 1000, 0);
	enq(&d, 0, 1000, 0);
	enq(&d, 0, 1000, 0);	/* 3 queued: sojourn at most 3 ms */
	for (t = MS; t < 5 * SEC; t += MS) {
		enq(&d, t, 1000, 0);
		while (emu_dir_pop_due(&d, t))
			;
	}
	CHECK(d.c.aqm_drops == 0 && d.c.tx_pkts > 4990, "no drop, %llu sent",
	      (unsigned long long)d.c.tx_pkts);
	emu_dir_destroy(&d);
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
 * PIE in the core reads its delay from the departures: 8 Mb/s, 30 frames of
 * 1000 bytes at t = 0 keep the link busy until 30 ms.  An arrival at 31 ms
 * runs the updates of 15 and 30 ms:
 *   15 ms: qdelay = 30 - 15 = 15 ms: p = 0 + 1.25 * 0.015 = 0.01875, / 2048
 *          = 9.1552734e-6; burst 135 ms; qdelay_old = 15 ms
 *   30 ms: qdelay 0: p = 0.125 (-0.015) + 1.25 (0 - 0.015) = -0.020625,
 *          / 512 (drop_prob in [1e-6, 1e-5)) = -4.03e-5: drop_prob 0; burst
 *          120 ms (no reset: qdelay_old was 15 ms >= 7.5)
 * No drop meanwhile: the burst allowance lasts.  After 10 s idle the state
 * has settled (drop_prob 0, burst 150 ms) and the rest is skipped.
 */
static void test_pie_core_delay(void)
{
	struct aqm_cfg ac = spec("pie");
	struct emu_dir_cfg cfg = core_cfg(&ac);
	struct emu_dir d;
	unsigned int k;

	CHECK(!emu_dir_init(&d, &cfg), "init");
	for (k = 0; k < 30; k++)
		CHECK(enq(&d, 0, 1000, 0) == EMU_QUEUED, "queued");
	CHECK(enq(&d, 14 * MS, 1000, 0) == EMU_QUEUED && !d.aqm.pie.last_update_ns,
	      "no update before 15 ms");
	/* that frame made the link busy until 31 ms: qdelay 16 ms at 15 ms */
	CHECK(enq(&d, 16 * MS, 1000, 0) == EMU_QUEUED, "queued");
	CHECK(d.aqm.pie.last_update_ns == 15 * MS && d.aqm.pie.qdelay_old_ns == 16 * MS,
	      "update at 15 ms with qdelay %llu", (unsigned long long)d.aqm.pie.qdelay_old_ns);
	/* p = 0.125 * 0.001 + 1.25 * 0.016 = 0.020125, / 2048 = 9.8266602e-6 */
	CHECK(fabs(prob(d.aqm.pie.drop_prob) - 9.82666015625e-06) < 1e-15,
	      "drop_prob %.12g", prob(d.aqm.pie.drop_prob));
	emu_dir_destroy(&d);

	CHECK(!emu_dir_init(&d, &cfg), "init");
	for (k = 0; k < 30; k++)
		enq(&d, 0, 1000, 0);
	enq(&d, 31 * MS, 1000, 0);
	CHECK(d.aqm.pie.last_update_ns == 30 * MS && !d.aqm.pie.drop_prob &&
	      d.aqm.pie.burst_ns == 120 * MS && !d.aqm.pie.qdelay_old_ns,
	      "updates at 15 and 30 ms: prob %.12g burst %llu",
	      prob(d.aqm.pie.drop_prob), (unsigned long long)d.aqm.pie.burst_ns);
	CHECK(d.c.aqm_drops == 0, "burst allowance: no drop");
	/* the last instant at or before 10.031 s: 668 * 15 ms = 10.020 s */
	enq(&d, 10 * SEC + 31 * MS, 1000, 0);
	CHECK(d.aqm.pie.last_update_ns == 10 * SEC + 20 * MS &&
	      d.aqm.pie.burst_ns == 150 * MS, "settled, then skipped");
	emu_dir_destroy(&d);
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

/* ---- seeds, ECN, super-frames, invariants ---------------------------------- */

/*
 * The same arrivals (a fixed pseudo-random pattern of bursts at 2x the
 * link's rate), run twice with the same seed, drop the same indices; another
 * seed drops others.  RED and PIE draw one number per arrival index.
 */
static size_t drop_indices(const char *s, uint64_t seed, uint64_t *out, size_t max)
{
	struct aqm_cfg ac = spec(s);
	struct emu_dir_cfg cfg = core_cfg(&ac);
	struct emu_dir d;
	struct prng traffic;
	uint64_t t = 0, idx;
	size_t n = 0, k;

	cfg.seed = seed;
	cfg.limit_pkts = 400;
	prng_seed(&traffic, 99, 0, 7);
	if (emu_dir_init(&d, &cfg))
		return 0;
	for (k = 0; k < 60000; k++) {
		t += (prng_next(&traffic) % 1000) * US;	/* mean 0.5 ms: twice the rate */
		ip_frame(frame, 1000, false, 0, k);
		if (emu_dir_enqueue(&d, t, frame, 1000, &idx) == EMU_DROP_AQM && n < max)
			out[n++] = idx;
		while (emu_dir_pop_due(&d, t))
			;
	}
	emu_dir_destroy(&d);
	return n;
}

static void test_seeded_repeatability(void)
{
	static const char *const specs[] = {
		"red:min_th_pkts=20,max_th_pkts=60,wq=0.01", "pie:target_us=5000",
	};
	enum { MAX = 30000 };
	uint64_t *a = calloc(MAX, 8), *b = calloc(MAX, 8);
	size_t s, na, nb;

	for (s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
		na = drop_indices(specs[s], 7, a, MAX);
		nb = drop_indices(specs[s], 7, b, MAX);
		CHECK(na > 100 && na == nb && !memcmp(a, b, na * 8),
		      "%s: same seed, same drops (%zu, %zu)", specs[s], na, nb);
		nb = drop_indices(specs[s], 8, b, MAX);
		CHECK(nb > 100 && (na != nb || memcmp(a, b, na * 8)),
		      "%s: another seed, other drops", specs[s]);
	}
	free(a);
	free(b);
}

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

/*
 * In the core, RED with min_th 1, max_th 2, max_p 1, w_q 1 (avg = q):
 * q = 0, 1: p_b = 0, passes; q = 2, 3 (gentle, below 2 max_th = 4): p_b =
 * 1 + 0 = 1, marked if ECT, dropped if not; q >= 4: forced, dropped.
 * ECT frames: pass, pass, mark, mark, drop, drop (q stays 4); not-ECT:
 * pass, pass, drop, drop...  A marked frame leaves with CE and a valid
 * IPv4 checksum.  CoDel with ecn=1 marks the ECT head at 105 ms where it
 * dropped it above, and the frame is sent.
 */
static void test_ecn_marks_in_core(void)
{
	struct aqm_cfg ac = spec("red:min_th_pkts=1,max_th_pkts=2,max_p=1,wq=1,gentle=1,ecn=1");
	struct emu_dir_cfg cfg = core_cfg(&ac);
	static const enum emu_verdict ect_want[] = {
		EMU_QUEUED, EMU_QUEUED, EMU_QUEUED, EMU_QUEUED, EMU_DROP_AQM, EMU_DROP_AQM,
	};
	static const enum emu_verdict not_want[] = {
		EMU_QUEUED, EMU_QUEUED, EMU_DROP_AQM, EMU_DROP_AQM,
	};
	struct emu_dir d;
	struct emu_pkt *p;
	unsigned int k, ce = 0;

	CHECK(!emu_dir_init(&d, &cfg), "init");
	for (k = 0; k < 6; k++)
		CHECK(enq(&d, 0, 1000, ECN_ECT0) == ect_want[k], "ECT %u", k);
	CHECK(d.c.aqm_marks == 2 && d.c.aqm_drops == 2, "2 marks, 2 drops");
	while ((p = emu_dir_pop_due(&d, SEC))) {
		int cp = ecn_get(p->data, p->len);

		ce += cp == ECN_CE;
		CHECK(ipv4_csum_ok(p->data), "checksum of frame %llu",
		      (unsigned long long)p->index);
		CHECK(cp == (p->index >= 2 ? ECN_CE : ECN_ECT0), "frame %llu: %d",
		      (unsigned long long)p->index, cp);
	}
	CHECK(ce == 2 && emu_dir_conserved(&d), "two left with CE");
	emu_dir_destroy(&d);

	CHECK(!emu_dir_init(&d, &cfg), "init");
	for (k = 0; k < 4; k++)
		CHECK(enq(&d, 0, 1000, ECN_NOT_ECT) == not_want[k], "not ECT %u", k);
	CHECK(d.c.aqm_marks == 0 && d.c.aqm_drops == 2, "drops only");
	emu_dir_destroy(&d);

	ac = spec("codel:ecn=1");
	cfg = core_cfg(&ac);
	CHECK(!emu_dir_init(&d, &cfg), "init");
	for (k = 0; k < 200; k++)
		enq(&d, 0, 1000, ECN_ECT0);
	for (k = 1; k <= 110; k++) {
		enq(&d, k * MS, 1000, ECN_ECT0);
		while ((p = emu_dir_pop_due(&d, k * MS))) {
			bool marked = ecn_get(p->data, p->len) == ECN_CE;

			CHECK(marked == (p->index == 105), "frame %llu CE %d",
			      (unsigned long long)p->index, marked);
			CHECK(ipv4_csum_ok(p->data), "checksum");
		}
	}
	CHECK(d.c.aqm_marks == 1 && d.c.aqm_drops == 0 && d.aqm.codel.dropping,
	      "a mark instead of the entry drop");
	emu_dir_destroy(&d);
}

/*
 * A TCP/IPv4 super-frame of 44 segments, ECT(0), into RED set to mark from
 * a backlog of 20 segments (min_th 19, max_th 20, max_p 1, w_q 1, gentle:
 * p_b = 1 at q in [20, 40), forced from 40): segments 0..19 pass, 20..39
 * are marked, 40..43 dropped.  The frame is cut at each change: a run of
 * 20 without CE, a run of 20 with CE (one frame, the kernel copies its
 * header into every segment), and the dropped tail.  The same segments
 * offered one by one get the same verdicts.
 */
static uint32_t tcp_super_frame(uint8_t *f, struct gso_vnet_hdr *vh, uint32_t segs)
{
	const uint32_t mss = 1448, hdr = 14 + 20 + 32;
	uint32_t len = hdr + segs * mss, i;
	uint16_t c;

	memset(f, 0, hdr);
	memset(f, 0xaa, 12);
	f[12] = 0x08;
	f[14] = 0x45;
	f[15] = ECN_ECT0;
	f[16] = (uint8_t)((len - 14) >> 8);
	f[17] = (uint8_t)(len - 14);
	f[22] = 64;
	f[23] = 6;
	memcpy(f + 26, "\x0a\x00\x00\x01\x0a\x00\x00\x02", 8);
	c = (uint16_t)~gso_csum_fold(gso_csum_add(0, f + 14, 20));
	f[24] = (uint8_t)(c >> 8);
	f[25] = (uint8_t)c;
	f[34 + 12] = (32 / 4) << 4;
	f[34 + 13] = 0x10;
	for (i = hdr; i < len; i++)
		f[i] = (uint8_t)i;
	memset(vh, 0, sizeof(*vh));
	vh->flags = GSO_F_NEEDS_CSUM;
	vh->gso_type = GSO_TYPE_TCPV4;
	vh->gso_size = (uint16_t)mss;
	vh->hdr_len = (uint16_t)hdr;
	vh->csum_start = 34;
	vh->csum_offset = 16;
	return len;
}

static void test_super_frame_cut_by_aqm(void)
{
	static uint8_t sf[GSO_MAX_FRAME], seg[2048];
	struct aqm_cfg ac = spec("red:min_th_pkts=19,max_th_pkts=20,max_p=1,wq=1,gentle=1,ecn=1");
	struct emu_dir_cfg cfg = core_cfg(&ac);
	struct gso_vnet_hdr vh, sv;
	struct gso_layout lay, one;
	struct emu_dir a, b;
	struct emu_pkt *p;
	uint32_t len, i, runs = 0;

	cfg.max_frame = GSO_MAX_FRAME;
	cfg.rate_bps = 1000000;		/* nothing leaves during the offer */
	CHECK(!emu_dir_init(&a, &cfg) && !emu_dir_init(&b, &cfg), "init");
	len = tcp_super_frame(sf, &vh, 44);
	gso_parse(&lay, &vh, sf, len);
	CHECK(lay.segs == 44, "44 segments");
	CHECK(emu_dir_enqueue_frame(&a, 0, &lay, sf, NULL, NULL) == 40, "40 kept");
	CHECK(a.c.aqm_marks == 20 && a.c.aqm_drops == 4 && a.c.backlog_pkts == 40,
	      "marks %llu drops %llu", (unsigned long long)a.c.aqm_marks,
	      (unsigned long long)a.c.aqm_drops);
	for (i = 0; i < 44; i++) {
		uint32_t sl = gso_cut(&lay, sf, i, 1, seg, &sv);

		gso_parse(&one, &sv, seg, sl);
		emu_dir_enqueue_frame(&b, 0, &one, seg, NULL, NULL);
	}
	CHECK(b.c.aqm_marks == 20 && b.c.aqm_drops == 4, "one by one: the same");
	while ((p = emu_dir_pop_due(&a, 100 * SEC))) {
		CHECK(p->segs == 20 && ecn_get(p->data, p->len) ==
		      (runs ? ECN_CE : ECN_ECT0) && ipv4_csum_ok(p->data),
		      "run %u: %u segments", runs, p->segs);
		runs++;
	}
	CHECK(runs == 2 && emu_dir_conserved(&a), "two runs");
	emu_dir_destroy(&a);
	emu_dir_destroy(&b);

	ac = spec("codel");
	cfg = core_cfg(&ac);
	cfg.max_frame = GSO_MAX_FRAME;
	CHECK(!emu_dir_init(&a, &cfg), "init");
	CHECK(emu_dir_enqueue_frame(&a, 0, &lay, sf, NULL, NULL) == 44 && a.tail == 44,
	      "CoDel: one stored frame per segment");
	emu_dir_destroy(&a);
}

/*
 * Random traffic with half the frames ECT, bursts above the rate, a small
 * buffer and loss, for each model: the invariant holds at every step, and
 * every counter moves.
 */
static void test_invariant_all_models(void)
{
	static const char *const specs[] = {
		"red:min_th_pkts=5,max_th_pkts=15,wq=0.02,ecn=1",
		"red:min_th_bytes=5000,max_th_bytes=20000,wq=0.02,adaptive=1,ecn=1",
		"codel:target_us=2000,interval_us=20000,ecn=1",
		"pie:target_us=3000,tupdate_us=3000,max_burst_us=0,ecn=1",
	};
	size_t s;

	for (s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
		struct aqm_cfg ac = spec(specs[s]);
		struct emu_dir_cfg cfg = core_cfg(&ac);
		struct loss_model lm;
		struct emu_dir d;
		struct prng r;
		uint64_t t = 0, k;
		char err[64];
		int bad = 0;

		CHECK(!loss_parse(&lm, "bernoulli:0.01", err, sizeof(err)), "loss");
		cfg.loss = &lm;
		cfg.limit_pkts = 40;
		cfg.delay_ns = 3 * MS;
		cfg.jitter_ns = 500 * US;
		prng_seed(&r, 5, 0, 9);
		CHECK(!emu_dir_init(&d, &cfg), "%s: init", specs[s]);
		for (k = 0; k < 50000; k++) {
			/* mean 450 us (1.7 times the rate), then 1350 us (0.55) */
			t += prng_next(&r) % 900 * US * (k % 2000 < 1000 ? 1 : 3);
			enq(&d, t, 100 + (uint32_t)(prng_next(&r) % 1300),
			    k % 2 ? ECN_ECT0 : ECN_NOT_ECT);
			if (!emu_dir_conserved(&d))
				bad++;
			if (k % 3 == 0)
				while (emu_dir_pop_due(&d, t))
					;
			if (!emu_dir_conserved(&d))
				bad++;
		}
		while (emu_dir_pop_due(&d, t + 10 * SEC))
			;
		CHECK(!bad && emu_dir_conserved(&d) && !d.c.backlog_pkts &&
		      !d.c.delay_line_pkts, "%s: %d violations", specs[s], bad);
		CHECK(d.c.aqm_drops && d.c.aqm_marks && d.c.loss_drops,
		      "%s: aqm drops %llu marks %llu queue %llu", specs[s],
		      (unsigned long long)d.c.aqm_drops,
		      (unsigned long long)d.c.aqm_marks,
		      (unsigned long long)d.c.queue_drops);
		emu_dir_destroy(&d);
	}
}

/* CoDel only with the core's own departures; PIE not with a later MAC. */
static uint64_t later_enqueue(void *ctx, const struct emu_pkt *p, uint64_t now)
{
	(void)ctx;
	(void)p;
	(void)now;
	return EMU_TIME_NEVER;
}

static void later_advance(void *ctx, struct emu_dir *d, uint64_t now)
{
	(void)ctx;
	(void)d;
	(void)now;
}

static const struct emu_departure_ops later_ops = {
	.name = "later",
	.enqueue = later_enqueue,
	.advance = later_advance,
};

static void test_refused_combinations(void)
{
	struct aqm_cfg codel = spec("codel"), pie = spec("pie"), red = spec("red");
	struct emu_dir_cfg cfg = core_cfg(&codel);
	struct emu_dir d;

	cfg.policy = &later_ops;
	CHECK(emu_dir_init(&d, &cfg), "codel with a departure policy");
	cfg.aqm = &pie;
	CHECK(emu_dir_init(&d, &cfg), "pie with a policy that decides later");
	cfg.aqm = &red;
	CHECK(!emu_dir_init(&d, &cfg), "red with any policy");
	emu_dir_destroy(&d);
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

/* The model's state for the stats line: JSON members, numbers from integers. */
static void test_state_json(void)
{
	struct aqm r = make("red", 0), c = make("codel", 0), p = make("pie", 0);
	struct aqm n = make("none", 0);
	char buf[256];

	r.red.avg = 6 * AQM_FRAC_ONE + AQM_FRAC_ONE / 2;	/* 6.5 */
	aqm_state_json(&r, buf, sizeof(buf));
	/* p_b = 0.1 (6.5 - 5) / (15 - 5) = 0.015, truncated to 2^-56 units */
	CHECK(!strcmp(buf, "\"model\":\"red\",\"avg_pkts\":6.500,\"count\":-1,"
		      "\"max_p\":0.100000000,\"drop_prob\":0.014999999"), "%s", buf);
	c.codel.dropping = true;
	c.codel.count = 3;
	aqm_state_json(&c, buf, sizeof(buf));
	CHECK(!strcmp(buf, "\"model\":\"codel\",\"dropping\":true,\"count\":3"), "%s", buf);
	p.pie.drop_prob = AQM_PROB_ONE / 4;
	p.pie.qdelay_ns = 16 * MS;
	aqm_state_json(&p, buf, sizeof(buf));
	CHECK(!strcmp(buf, "\"model\":\"pie\",\"drop_prob\":0.250000000,"
		      "\"accu_prob\":0.000000000,\"qdelay_us\":16000,\"burst_us\":150000"),
	      "%s", buf);
	CHECK(aqm_state_json(&n, buf, sizeof(buf)) == 0 && !buf[0], "none: nothing");
}

int main(void)
{
	RUN(test_red_average);
	RUN(test_red_drop_probability);
	RUN(test_red_count_uniform_gaps);
	RUN(test_red_gentle_and_forced);
	RUN(test_red_idle_decay);
	RUN(test_red_idle_decay_in_core);
	RUN(test_red_byte_mode);
	RUN(test_red_adaptive);
	RUN(test_codel_drop_times);
	RUN(test_codel_exits_and_bursts);
	RUN(test_codel_core_head_drops);
	RUN(test_codel_core_lazy_and_exit);
	RUN(test_codel_core_arrivals_first);
	RUN(test_codel_core_short_queue);
	RUN(test_pie_updates);
	RUN(test_pie_core_delay);
	RUN(test_pie_drop_early);
	RUN(test_seeded_repeatability);
	RUN(test_ecn_field);
	RUN(test_ecn_marks_in_core);
	RUN(test_super_frame_cut_by_aqm);
	RUN(test_invariant_all_models);
	RUN(test_refused_combinations);
	RUN(test_parse_good);
	RUN(test_parse_bad);
	RUN(test_state_json);
	CHECK_DONE();
}
