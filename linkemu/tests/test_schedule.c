/*
 * test_schedule.c - time-varying links (schedule.c) in the scheduler core,
 * with a fake clock: a saturated queue under 10 -> 5 -> 20 Mb/s delivers
 * each step's rate to the packet, packets spanning a change are serialized
 * at each rate for their part, delay steps never reorder, loss steps keep
 * the seeded draws of bernoulli:P, the counter invariant holds under random
 * traffic, and hostile specs are refused naming the step and field.  Each
 * expected value is worked out in the comment beside its check.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../gso.h"
#include "../loss.h"
#include "../policy_tbf.h"
#include "../schedule.h"
#include "../sched.h"
#include "check.h"

#define US 1000ULL
#define MS 1000000ULL
#define SEC 1000000000ULL
#define L2 EMU_L2_HEADER_BYTES

static uint8_t frame[GSO_MAX_FRAME];
static struct emu_schedule spec;

static struct emu_dir_cfg base_cfg(void)
{
	struct emu_dir_cfg cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.max_frame = 1518;
	cfg.uncharged_bytes = L2;
	cfg.seed = 1;
	return cfg;
}

/* Parse spec text into the file's schedule; the test fails on an error. */
static const struct emu_schedule *schedule(const char *text)
{
	char err[256] = "";

	CHECK(!emu_schedule_parse(&spec, text, err, sizeof(err)), "%s: %s", text, err);
	return &spec;
}

static enum emu_verdict enq(struct emu_dir *d, uint64_t now, uint32_t len)
{
	memset(frame, (int)(d->next_index & 0xff), len);
	return emu_dir_enqueue(d, now, frame, len, NULL);
}

/*
 * The acceptance case: 10 Mb/s for 1 s, 5 Mb/s for 1 s, then 20 Mb/s, a
 * queue of 1000-byte IP packets (8000 bits) that never runs dry (5000
 * queued at 0).  Each packet takes 800 us, then 1600 us, then 400 us, and
 * 1 s is a whole number of each, so the k-th departure (1-based) is
 *   k * 800 us                       for k <= 1250 (the 1250th at 1 s),
 *   1 s + (k - 1250) * 1600 us       for k <= 1875 (the 1875th at 2 s),
 *   2 s + (k - 1875) * 400 us        for k <= 4375 (the 4375th at 3 s),
 * and the departures in (0, 1 s], (1, 2], (2, 3] are 1250, 625 and 2500:
 * each second carries exactly its step's rate (1250 * 8000 = 10^7 bit, ...),
 * which is "within 2 %" with no error at all.
 */
static void test_saturated_steps_deliver_each_rate(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;
	struct emu_pkt *p;
	uint64_t per_sec[4] = { 0, 0, 0, 0 }, k, bad = 0, inv = 0;

	cfg.schedule = schedule("0:rate_bps=10000000;1000000:rate_bps=5000000;"
				"2000000:rate_bps=20000000");
	CHECK(!emu_dir_init(&d, &cfg), "init");
	for (k = 0; k < 5000; k++)
		CHECK(enq(&d, 0, 1000 + L2) == EMU_QUEUED, "queued");
	for (k = 1; k <= 5000; k++) {
		uint64_t want = k <= 1250 ? k * 800 * US :
				k <= 1875 ? 1 * SEC + (k - 1250) * 1600 * US :
				2 * SEC + (k - 1875) * 400 * US;

		p = emu_dir_pop_due(&d, 100 * SEC);
		if (!p || p->departure_ns != want)
			bad++;
		else if (p->departure_ns <= 3 * SEC)
			per_sec[(p->departure_ns - 1) / SEC]++;
		if (!emu_dir_conserved(&d))
			inv++;
	}
	CHECK(bad == 0, "%lu departures off the exact times", (unsigned long)bad);
	CHECK(inv == 0, "%lu invariant violations", (unsigned long)inv);
	CHECK(per_sec[0] == 1250 && per_sec[1] == 625 && per_sec[2] == 2500,
	      "per second %lu %lu %lu (want 1250 625 2500)", (unsigned long)per_sec[0],
	      (unsigned long)per_sec[1], (unsigned long)per_sec[2]);
	CHECK(per_sec[0] * 8000 == 10000000 && per_sec[1] * 8000 == 5000000 &&
	      per_sec[2] * 8000 == 20000000, "bits per second = the step's rate");
	emu_dir_destroy(&d);
}

/*
 * The rate before the first step is --XX-rate-bps: 8 Mb/s (1 us per byte)
 * until 10 ms, then 4 Mb/s.  One packet at 0: 1 ms.  One at 20 ms: 2 ms.
 */
static void test_options_hold_before_the_first_step(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;
	struct emu_pkt *p;

	cfg.rate_bps = 8000000;
	cfg.schedule = schedule("10000:rate_bps=4000000");
	CHECK(!emu_dir_init(&d, &cfg), "init");
	enq(&d, 0, 1000 + L2);
	enq(&d, 20 * MS, 1000 + L2);
	p = emu_dir_pop_due(&d, 1 * SEC);
	CHECK(p && p->departure_ns == 1 * MS, "8 Mb/s before the step: 1 ms");
	p = emu_dir_pop_due(&d, 1 * SEC);
	CHECK(p && p->departure_ns == 22 * MS, "4 Mb/s after it: 2 ms");
	emu_dir_destroy(&d);
}

/*
 * A packet spanning a change is serialized at each rate for its part.
 * 8 Mb/s (1 byte/us) until 1 ms, then 4 Mb/s (0.5 byte/us); 1000 IP bytes
 * from 0.5 ms: 500 bytes by 1 ms, the other 500 take 1000 us: it departs at
 * 2.0 ms.  (The rule "the rate in force when serialization starts" would
 * give 1.5 ms, 0.5 ms early: a third of the packet's true time.)
 *
 * Rates that do not divide 8e9: 3 Mb/s until 1 ms, then 7 Mb/s, two packets
 * of 1001 IP bytes at 0, in units of 1/8e9 byte (r units per ns at r bit/s):
 *   first: 1001 * 8e9 = 8.008e12 units; by 1 ms 1e6 * 3e6 = 3e12 are done,
 *     5.008e12 / 7e6 = 715428 ns rest 4e6 units: departs 1715428 ns;
 *   second, back to back, carries the 4e6: 8.008004e12 / 7e6 = 1144000 ns
 *     rest 4e6: departs 2859428 ns = floor(1 ms + (2 * 8.008e12 - 3e12) /
 *     7e6 ns) = floor(2859428.57), the exact time of both, floored.
 * An unlimited step (rate_bps=0) finishes the rest at once: 8 Mb/s, then
 * unlimited from 2 ms; 1000 bytes from 1.5 ms: 500 by 2 ms, the rest at 2 ms.
 */
static void test_packet_spanning_a_change(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;
	struct emu_pkt *p;

	cfg.schedule = schedule("0:rate_bps=8000000;1000:rate_bps=4000000");
	CHECK(!emu_dir_init(&d, &cfg), "init");
	enq(&d, 500 * US, 1000 + L2);
	p = emu_dir_pop_due(&d, 1 * SEC);
	CHECK(p && p->departure_ns == 2 * MS, "departs %lu, want 2 ms",
	      p ? (unsigned long)p->departure_ns : 0UL);
	emu_dir_destroy(&d);

	cfg.schedule = schedule("0:rate_bps=3000000;1000:rate_bps=7000000");
	CHECK(!emu_dir_init(&d, &cfg), "init");
	enq(&d, 0, 1001 + L2);
	enq(&d, 0, 1001 + L2);
	p = emu_dir_pop_due(&d, 1 * SEC);
	CHECK(p && p->departure_ns == 1715428, "first %lu",
	      p ? (unsigned long)p->departure_ns : 0UL);
	p = emu_dir_pop_due(&d, 1 * SEC);
	CHECK(p && p->departure_ns == 2859428, "second %lu",
	      p ? (unsigned long)p->departure_ns : 0UL);
	CHECK(d.rate.rem == 4000000, "carried %lu", (unsigned long)d.rate.rem);
	emu_dir_destroy(&d);

	cfg.schedule = schedule("0:rate_bps=8000000;2000:rate_bps=0");
	CHECK(!emu_dir_init(&d, &cfg), "init");
	enq(&d, 1500 * US, 1000 + L2);
	enq(&d, 3 * MS, 1000 + L2);
	p = emu_dir_pop_due(&d, 1 * SEC);
	CHECK(p && p->departure_ns == 2 * MS, "unlimited from 2 ms");
	p = emu_dir_pop_due(&d, 1 * SEC);
	CHECK(p && p->departure_ns == 3 * MS, "no serialization after");
	emu_dir_destroy(&d);
}

/*
 * The fast path: a super-frame of 4 segments (1000 payload bytes, 1040 IP
 * bytes each: 4160 bytes) at 0 under 8 Mb/s until 2 ms, then 4 Mb/s: 2000
 * bytes by 2 ms, 2160 at 0.5 byte/us = 4320 us: it leaves whole at 6.32 ms,
 * exactly when the same 4 segments sent one by one finish (no cut needed).
 */
static uint32_t build_super(uint8_t *f, uint32_t segs, struct gso_vnet_hdr *vh)
{
	uint32_t len = 14 + 20 + 20 + segs * 1000;

	memset(f, 0, len);
	f[12] = 0x08;			/* IPv4 */
	f[14] = 0x45;
	f[14 + 2] = (uint8_t)((len - 14) >> 8);
	f[14 + 3] = (uint8_t)(len - 14);
	f[14 + 9] = 6;			/* TCP */
	f[34 + 12] = 5 << 4;		/* 20-byte TCP header */
	memset(vh, 0, sizeof(*vh));
	vh->gso_type = GSO_TYPE_TCPV4;
	vh->gso_size = 1000;
	vh->hdr_len = 54;
	return len;
}

static void test_super_frame_spanning_a_change(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct gso_vnet_hdr vh;
	struct gso_layout lay;
	struct emu_dir d;
	struct emu_pkt *p;
	uint32_t len, k;

	cfg.max_frame = GSO_MAX_FRAME;
	cfg.schedule = schedule("0:rate_bps=8000000;2000:rate_bps=4000000");
	CHECK(!emu_dir_init(&d, &cfg), "init");
	len = build_super(frame, 4, &vh);
	gso_parse(&lay, &vh, frame, len);
	CHECK(lay.segs == 4, "segs %u", lay.segs);
	CHECK(emu_dir_enqueue_frame(&d, 0, &lay, frame, NULL, NULL) == 4, "kept whole");
	p = emu_dir_pop_due(&d, 1 * SEC);
	CHECK(p && p->segs == 4 && p->departure_ns == 6320 * US, "run departs %lu",
	      p ? (unsigned long)p->departure_ns : 0UL);
	emu_dir_destroy(&d);

	CHECK(!emu_dir_init(&d, &cfg), "init");
	for (k = 0; k < 4; k++)
		enq(&d, 0, 1054);
	for (k = 0; k < 4; k++)
		p = emu_dir_pop_due(&d, 1 * SEC);
	CHECK(p && p->departure_ns == 6320 * US, "one by one: last at %lu",
	      p ? (unsigned long)p->departure_ns : 0UL);
	emu_dir_destroy(&d);
}

/*
 * Delay steps never reorder.  8 Mb/s, 40 packets of 1000 bytes at 0: the
 * k-th (0-based) departs at (k + 1) ms.  Delay 30 ms, then 5 ms from 10 ms
 * (the delay in force at the departure): packets 0..8 are released at
 * k + 31 ms (the 9th at 39 ms); packet 9 departs at 10 ms and would arrive
 * at 15 ms, before packet 8: it and every packet up to 33 (34 + 5 = 39 ms)
 * wait for 39 ms; from packet 34 on, k + 6 ms (40, 41, ...).
 */
static void test_delay_steps_never_reorder(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;
	struct emu_pkt *p;
	uint64_t k, bad = 0, prev = 0;

	cfg.rate_bps = 8000000;
	cfg.schedule = schedule("0:delay_us=30000;10000:delay_us=5000");
	CHECK(!emu_dir_init(&d, &cfg), "init");
	for (k = 0; k < 40; k++)
		enq(&d, 0, 1000 + L2);
	for (k = 0; k < 40; k++) {
		uint64_t want = k <= 8 ? (k + 31) * MS : k <= 33 ? 39 * MS : (k + 6) * MS;

		p = emu_dir_pop_due(&d, 1 * SEC);
		if (!p || p->index != k || p->release_ns != want || p->release_ns < prev)
			bad++;
		prev = p ? p->release_ns : prev;
	}
	CHECK(bad == 0, "%lu releases wrong or out of order", (unsigned long)bad);
	CHECK(emu_dir_conserved(&d), "invariant");
	emu_dir_destroy(&d);
}

/* The indices dropped out of n packets, one every ms, infinite rate. */
static void drops_of(const struct emu_dir_cfg *cfg, bool *lost, uint64_t n)
{
	struct emu_dir d;
	uint64_t k;

	CHECK(!emu_dir_init(&d, cfg), "init");
	for (k = 0; k < n; k++) {
		lost[k] = enq(&d, k * MS, 100) == EMU_DROP_LOSS;
		while (emu_dir_pop_due(&d, k * MS))
			;
	}
	CHECK(emu_dir_conserved(&d), "invariant");
	emu_dir_destroy(&d);
}

/*
 * Loss steps.  P = 0, then 1 in [1 s, 2 s), then 0: of 3000 packets one
 * every ms, exactly those arriving at 1000..1999 ms are lost.  And a step
 * with P draws what bernoulli:P draws: with the same seed, loss=0.3 from 0
 * drops the very indices --XX-loss bernoulli:0.3 drops, and a step back to
 * 0.3 after a loss-free second drops them again from there on (the draws
 * never shift: exactly two per packet, whatever P).
 */
static void test_loss_steps_keep_the_draws(void)
{
	enum { N = 3000 };
	struct emu_dir_cfg cfg = base_cfg();
	struct loss_model m;
	char err[128];
	bool *a = calloc(N, 1), *b = calloc(N, 1);
	uint64_t k, bad = 0, na = 0;

	cfg.schedule = schedule("0:loss=0;1000000:loss=1;2000000:loss=0");
	drops_of(&cfg, a, N);
	for (k = 0; k < N; k++)
		bad += a[k] != (k >= 1000 && k < 2000);
	CHECK(bad == 0, "%lu packets off the 1-s outage", (unsigned long)bad);

	CHECK(!loss_parse(&m, "bernoulli:0.3", err, sizeof(err)), "%s", err);
	cfg.schedule = NULL;
	cfg.loss = &m;
	drops_of(&cfg, a, N);
	cfg.loss = NULL;
	cfg.schedule = schedule("0:loss=0.3;1000000:loss=0;2000000:loss=0.3");
	drops_of(&cfg, b, N);
	for (k = 0, bad = 0; k < N; k++) {
		bool want = k >= 1000 && k < 2000 ? false : a[k];

		bad += b[k] != want;
		na += a[k];
	}
	CHECK(bad == 0, "%lu indices differ from bernoulli:0.3", (unsigned long)bad);
	CHECK(na > 800 && na < 1000, "bernoulli:0.3 dropped %lu of 3000", (unsigned long)na);
	/* The option's P holds until a step: bernoulli:0.3, then 0 from 1 s. */
	cfg.loss = &m;
	cfg.schedule = schedule("1000000:loss=0");
	drops_of(&cfg, b, N);
	for (k = 0, bad = 0; k < N; k++)
		bad += b[k] != (k < 1000 && a[k]);
	CHECK(bad == 0, "%lu indices differ before/after the step", (unsigned long)bad);
	free(a);
	free(b);
}

/*
 * Random traffic under rate, delay and loss steps with drop-tail: the
 * counter invariant after every step, releases in order, and every packet
 * accounted for at the end.
 */
static void test_invariant_under_random_traffic(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;
	struct emu_pkt *p;
	struct prng rng;
	uint64_t now = 0, k, inv = 0, reo = 0, prev_rel = 0, prev_idx = 0;
	bool first = true;

	prng_seed(&rng, 4242, 0, 99);
	cfg.rate_bps = 20000000;
	cfg.limit_pkts = 30;
	cfg.delay_ns = 10 * MS;
	cfg.jitter_ns = 2 * MS;
	cfg.schedule = schedule("100000:rate_bps=2000000,delay_us=40000;"
				"300000:rate_bps=0,loss=0.2;"
				"500000:rate_bps=50000000,delay_us=1000,loss=0");
	CHECK(!emu_dir_init(&d, &cfg), "init");
	for (k = 0; k < 20000; k++) {
		now += (prng_next(&rng) % 100) * US;
		enq(&d, now, 64 + (uint32_t)(prng_next(&rng) % 1400));
		while ((p = emu_dir_pop_due(&d, now))) {
			if (!first && (p->release_ns < prev_rel || p->index <= prev_idx))
				reo++;
			prev_rel = p->release_ns;
			prev_idx = p->index;
			first = false;
		}
		if (!emu_dir_conserved(&d))
			inv++;
	}
	while ((p = emu_dir_pop_due(&d, now + 10 * SEC)))
		;
	CHECK(inv == 0, "%lu invariant violations", (unsigned long)inv);
	CHECK(reo == 0, "%lu reordered", (unsigned long)reo);
	CHECK(d.c.queue_drops > 0 && d.c.loss_drops > 0, "drops %lu loss %lu",
	      (unsigned long)d.c.queue_drops, (unsigned long)d.c.loss_drops);
	CHECK(d.c.backlog_pkts == 0 && d.c.delay_line_pkts == 0 && emu_dir_conserved(&d),
	      "drained");
	emu_dir_destroy(&d);
}

/*
 * What runs with a schedule and what is refused: CoDel and PIE with rate
 * steps (the core's own policy); rate steps with another policy, loss steps
 * with a loss model that is not Bernoulli's.  CoDel under a rate change:
 * 4 packets of 1000 bytes at 0, 8 Mb/s (1 byte/us) then 4 Mb/s from 1.5 ms:
 * 1 ms; 2.5 ms (500 bytes by 1.5 ms, 500 at 0.5 byte/us); 4.5; 6.5 ms.  The
 * last reaches the head at 4.5 ms, below CoDel's 5-ms target: no drop.
 */
static void test_combinations(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct aqm_cfg ac;
	struct loss_model m;
	struct emu_tbf t;
	struct emu_tbf_cfg tc = { .rate_bps = 8000000, .burst_bytes = 3044 };
	struct emu_dir d;
	struct emu_pkt *p;
	const uint64_t want[] = { 1 * MS, 2500 * US, 4500 * US, 6500 * US };
	char err[128];
	int k;

	CHECK(!aqm_parse(&ac, "codel", err, sizeof(err)), "%s", err);
	cfg.aqm = &ac;
	cfg.schedule = schedule("0:rate_bps=8000000;1500:rate_bps=4000000");
	CHECK(!emu_dir_init(&d, &cfg), "codel with rate steps");
	for (k = 0; k < 4; k++)
		enq(&d, 0, 1000 + L2);
	for (k = 0; k < 4; k++) {
		p = emu_dir_pop_due(&d, 1 * SEC);
		CHECK(p && p->departure_ns == want[k], "codel: packet %d at %lu", k,
		      p ? (unsigned long)p->departure_ns : 0UL);
	}
	emu_dir_destroy(&d);
	CHECK(!aqm_parse(&ac, "pie", err, sizeof(err)), "%s", err);
	CHECK(!emu_dir_init(&d, &cfg), "pie with rate steps");
	emu_dir_destroy(&d);
	cfg.aqm = NULL;

	CHECK(!emu_tbf_init(&t, &tc), "tbf");
	cfg.policy = &emu_tbf_policy_ops;
	cfg.policy_ctx = &t;
	CHECK(emu_dir_init(&d, &cfg), "rate steps with tbf refused");
	cfg.schedule = schedule("0:delay_us=1000;1000:loss=0.5");
	CHECK(!emu_dir_init(&d, &cfg), "delay and loss steps with tbf");
	emu_dir_destroy(&d);
	cfg.policy = NULL;

	CHECK(!loss_parse(&m, "every_nth:3", err, sizeof(err)), "%s", err);
	cfg.loss = &m;
	CHECK(emu_dir_init(&d, &cfg), "loss steps with every_nth refused");
	cfg.schedule = schedule("0:delay_us=1000");
	CHECK(!emu_dir_init(&d, &cfg), "delay steps with every_nth");
	emu_dir_destroy(&d);
}

static int refused(const char *text, const char *word)
{
	char err[256] = "";
	int ok = emu_schedule_parse(&spec, text, err, sizeof(err)) == -1 &&
		 strstr(err, word) && !strchr(err, '\n');

	if (!ok)
		printf("  '%s' -> '%s' (want '%s')\n", text, err, word);
	return ok;
}

static void test_parser(void)
{
	static char many[EMU_SCHEDULE_MAX_STEPS * 24 + 64];
	const struct emu_schedule *s;
	size_t k, n = 0;

	s = schedule("0:rate_bps=10000000;10000000:rate_bps=5000000,delay_us=30000,loss=0.01");
	CHECK(s->n == 2 && s->set == (EMU_STEP_RATE | EMU_STEP_DELAY | EMU_STEP_LOSS),
	      "two steps, all fields");
	CHECK(s->step[1].at_ns == 10 * SEC && s->step[1].rate_bps == 5000000 &&
	      s->step[1].delay_ns == 30 * MS && s->step[1].loss_p == 0.01 &&
	      s->step[0].set == EMU_STEP_RATE, "values and units");
	/* the most steps there may be, then one more */
	for (k = 0; k < EMU_SCHEDULE_MAX_STEPS; k++)
		n += (size_t)snprintf(many + n, sizeof(many) - n, "%s%zu:delay_us=1",
				      k ? ";" : "", k);
	CHECK(!emu_schedule_parse(&spec, many, NULL, 0) &&
	      spec.n == EMU_SCHEDULE_MAX_STEPS, "%d steps", EMU_SCHEDULE_MAX_STEPS);
	snprintf(many + n, sizeof(many) - n, ";99999:delay_us=1");
	CHECK(refused(many, "more than 1024 steps"), "too many steps");

	CHECK(refused("", "expected T:key=value"), "empty");
	CHECK(refused("0", "step 1: time"), "no colon");
	CHECK(refused("x:rate_bps=1", "step 1: time"), "time not a number");
	CHECK(refused("-1:rate_bps=1", "step 1: time"), "negative time");
	CHECK(refused("604800000001:rate_bps=1", "step 1: time"), "time beyond a week");
	CHECK(refused("0:", "step 1: expected key=value"), "no keys");
	CHECK(refused("0:rate=5", "unknown key 'rate'"), "unknown key");
	CHECK(refused("0:rate_bps", "expected key=value"), "no value");
	CHECK(refused("0:rate_bps=", "rate_bps"), "empty value");
	CHECK(refused("0:rate_bps=-5", "rate_bps"), "negative rate");
	CHECK(refused("0:rate_bps=1e6", "rate_bps"), "exponent");
	CHECK(refused("0:rate_bps=10M", "rate_bps"), "suffix");
	CHECK(refused("0:rate_bps=1000000000001", "rate_bps"), "rate above 1 Tb/s");
	CHECK(refused("0:rate_bps=99999999999999999999999", "rate_bps"), "overflow");
	CHECK(refused("0:rate_bps=5,rate_bps=6", "'rate_bps' given twice"), "twice");
	CHECK(refused("0:delay_us=3600000001", "delay_us"), "delay above an hour");
	CHECK(refused("0:delay_us=1.5", "delay_us"), "fractional delay");
	CHECK(refused("0:loss=1.5", "loss"), "P above 1");
	CHECK(refused("0:loss=nan", "loss"), "nan");
	CHECK(refused("0:loss=-0.1", "loss"), "negative P");
	CHECK(refused("0:loss=", "loss"), "empty P");
	CHECK(refused("0:rate_bps=5;", "step 2: empty step"), "trailing ';'");
	CHECK(refused(";0:rate_bps=5", "step 1: empty step"), "leading ';'");
	CHECK(refused("0:rate_bps=5,,delay_us=1", "empty key=value"), "empty item");
	CHECK(refused("0:rate_bps=5,", "empty key=value"), "trailing ','");
	CHECK(refused("10:rate_bps=1;10:rate_bps=2", "step 2: time 10 us is not after"),
	      "equal times");
	CHECK(refused("10:rate_bps=1;5:rate_bps=2", "step 2: time 5 us"), "decreasing times");
	CHECK(refused("0:rate_bps=5\n", "rate_bps"), "newline");
	CHECK(refused("0:rate_bps =5", "unknown key 'rate_bps '"), "space in key");
	CHECK(refused("0:rate_bps=5;1:delay_us=x", "step 2: delay_us"), "step numbered");
}

/*
 * The epoch (linkemu --epoch-on-signal, then SIGUSR1): until it, the steps
 * are pending (EMU_ORIGIN_PENDING) and the options hold, even a step at 0;
 * at it the steps count from the epoch.  8 Mb/s (1 byte/us) as the option,
 * steps "0: 4 Mb/s; 10 ms: 16 Mb/s", 1000-byte IP packets:
 *   at 1 s (pending): 8 Mb/s, 1 ms: departs 1.001 s; step index 0;
 *   at 1.9995 s: 8 Mb/s, departs 2.0005 s -- the epoch comes at 2 s, but a
 *     departure is fixed on arrival and keeps its value;
 *   epoch at 2 s; at 2 s: starts after the queued one, 2.0005 s, at 4 Mb/s
 *     (2 ms): 2.0025 s;
 *   at 2.020 s: 16 Mb/s (0.5 ms): 2.0205 s.
 * A schedule counted from t0 = 0 moves too: "1 s: 4 Mb/s" re-based to 5 s
 * is not in force at 1.5 s (8 Mb/s, 1.501 s), it is at 6 s (6.002 s).
 */
static void test_epoch_rebases_the_steps(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;
	struct emu_pkt *p;

	cfg.rate_bps = 8000000;
	cfg.schedule = schedule("0:rate_bps=4000000;10000:rate_bps=16000000");
	cfg.schedule_origin_ns = EMU_ORIGIN_PENDING;
	CHECK(!emu_dir_init(&d, &cfg), "init");
	CHECK(emu_timeline_index(&d.tl, 1 * SEC) == 0, "pending: the options' values");
	enq(&d, 1 * SEC, 1000 + L2);
	p = emu_dir_pop_due(&d, 1 * SEC + 1 * MS);	/* the fake clock only goes forward */
	CHECK(p && p->departure_ns == 1 * SEC + 1 * MS, "8 Mb/s before the epoch: 1.001 s");
	enq(&d, 1 * SEC + 999500 * US, 1000 + L2);
	emu_dir_set_origin(&d, 2 * SEC);
	CHECK(d.tl.step[1].at_ns == 2 * SEC && d.tl.step[2].at_ns == 2 * SEC + 10 * MS,
	      "steps at the epoch + their offsets");
	CHECK(emu_timeline_index(&d.tl, 2 * SEC + 5 * MS) == 1 &&
	      emu_timeline_index(&d.tl, 2 * SEC + 10 * MS) == 2, "in force from the epoch");
	enq(&d, 2 * SEC, 1000 + L2);
	enq(&d, 2 * SEC + 20 * MS, 1000 + L2);
	p = emu_dir_pop_due(&d, 100 * SEC);
	CHECK(p && p->departure_ns == 2 * SEC + 500 * US, "queued before: keeps 2.0005 s");
	p = emu_dir_pop_due(&d, 100 * SEC);
	CHECK(p && p->departure_ns == 2 * SEC + 2500 * US,
	      "after it, 4 Mb/s: 2.0025 s, got %llu", p ? (unsigned long long)p->departure_ns : 0ULL);
	p = emu_dir_pop_due(&d, 100 * SEC);
	CHECK(p && p->departure_ns == 2 * SEC + 20500 * US, "16 Mb/s from 10 ms: 2.0205 s");
	CHECK(emu_dir_conserved(&d), "invariant");
	emu_dir_destroy(&d);

	cfg.schedule = schedule("1000000:rate_bps=4000000");
	cfg.schedule_origin_ns = 0;
	CHECK(!emu_dir_init(&d, &cfg), "init");
	emu_dir_set_origin(&d, 5 * SEC);
	enq(&d, 1 * SEC + 500 * MS, 1000 + L2);
	enq(&d, 6 * SEC, 1000 + L2);
	p = emu_dir_pop_due(&d, 100 * SEC);
	CHECK(p && p->departure_ns == 1 * SEC + 501 * MS, "the step moved away from 1 s");
	p = emu_dir_pop_due(&d, 100 * SEC);
	CHECK(p && p->departure_ns == 6 * SEC + 2 * MS, "to 6 s: 4 Mb/s");
	emu_dir_destroy(&d);

	/* without a schedule there is nothing to move */
	cfg.schedule = NULL;
	CHECK(!emu_dir_init(&d, &cfg), "init");
	emu_dir_set_origin(&d, 5 * SEC);
	CHECK(d.tl.n == 0, "no timeline");
	emu_dir_destroy(&d);
}

int main(void)
{
	RUN(test_saturated_steps_deliver_each_rate);
	RUN(test_options_hold_before_the_first_step);
	RUN(test_epoch_rebases_the_steps);
	RUN(test_packet_spanning_a_change);
	RUN(test_super_frame_spanning_a_change);
	RUN(test_delay_steps_never_reorder);
	RUN(test_loss_steps_keep_the_draws);
	RUN(test_invariant_under_random_traffic);
	RUN(test_combinations);
	RUN(test_parser);
	CHECK_DONE();
}
