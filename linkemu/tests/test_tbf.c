/*
 * test_tbf.c - unit tests of linkemu's token-bucket departure policy
 * (policy_tbf.c) inside the scheduler core, with synthetic arrivals and a
 * fake clock: burst at the peak rate then pacing at the sustained rate,
 * exact peak-rate serialization, long-run rate, refill after idle (also
 * after hours, without overflow), frames larger than the bucket, drop-tail,
 * the reported token level, Cisco's shaping-queue granularity and max-delay
 * drop threshold against hand-computed timelines, the calibrated phantom
 * delay (phantom.h) applied at release and never at departure, its flow
 * term (N equally loaded flows scale it by N^k) against hand-computed
 * shares, and configuration checks.
 */
#include <stdlib.h>
#include <string.h>

#include "../policy_tbf.h"
#include "../prng.h"
#include "../sched.h"
#include "check.h"

#define US 1000ULL
#define MS 1000000ULL
#define SEC 1000000000ULL
#define L2 EMU_L2_HEADER_BYTES

static uint8_t frame[2048];

static int setup_cfg(struct emu_dir *d, struct emu_tbf *t, const struct emu_tbf_cfg *tc,
		     uint64_t limit_pkts)
{
	struct emu_dir_cfg cfg;

	if (emu_tbf_init(t, tc))
		return -1;
	memset(&cfg, 0, sizeof(cfg));
	cfg.max_frame = 1518;
	cfg.seed = 1;
	cfg.limit_pkts = limit_pkts;
	cfg.policy = &emu_tbf_policy_ops;
	cfg.policy_ctx = t;
	return emu_dir_init(d, &cfg);
}

static int setup(struct emu_dir *d, struct emu_tbf *t, uint64_t rate,
		 uint64_t burst, uint64_t peak, uint64_t limit_pkts)
{
	struct emu_tbf_cfg tc = {
		.rate_bps = rate, .burst_bytes = burst, .peak_bps = peak,
		.uncharged_bytes = L2,
	};

	return setup_cfg(d, t, &tc, limit_pkts);
}

static enum emu_verdict enq(struct emu_dir *d, uint64_t now, uint32_t len)
{
	return emu_dir_enqueue(d, now, frame, len, NULL);
}

/*
 * 8 Mb/s sustained (1 byte/us), 80 Mb/s peak (0.1 us/byte), 3000-byte
 * bucket, 1000-byte IP packets all queued at t = 0.  Three packets fit the
 * bucket (with the 100 bytes of tokens earned during each 100 us transfer):
 * they leave back to back at the peak rate, then one per ms.
 */
static void test_burst_then_sustained(void)
{
	struct emu_dir d;
	struct emu_tbf t;
	struct emu_pkt *p;
	uint64_t k, bad = 0;

	CHECK(!setup(&d, &t, 8000000, 3000, 80000000, 0), "init");
	for (k = 0; k < 10; k++)
		enq(&d, 0, 1000 + L2);
	CHECK(emu_tbf_tokens_bytes(&t, 0) == 0, "all tokens committed");
	for (k = 0; k < 10; k++) {
		uint64_t want = k < 3 ? (k + 1) * 100 * US :
				(k - 2) * MS + 100 * US;

		p = emu_dir_pop_due(&d, 1 * SEC);
		if (!p || p->departure_ns != want) {
			bad++;
			printf("  pkt %lu: %lu want %lu\n", (unsigned long)k,
			       p ? (unsigned long)p->departure_ns : 0UL,
			       (unsigned long)want);
		}
	}
	CHECK(bad == 0, "%lu departures wrong", (unsigned long)bad);
	/* 2 ms after the last start (7 ms) the bucket holds 2000 B. */
	CHECK(emu_tbf_tokens_bytes(&t, 9 * MS) == 2000,
	      "refill at 1 B/us: %lu",
	      (unsigned long)emu_tbf_tokens_bytes(&t, 9 * MS));
	CHECK(emu_tbf_tokens_bytes(&t, 20 * MS) == 3000, "full, capped");
	emu_dir_destroy(&d);
}

/*
 * Inside a burst the spacing is exactly the peak-rate serialization, with
 * the division remainder carried (38 Mb/s does not divide 8e9 evenly).
 */
static void test_peak_serialization_exact(void)
{
	struct emu_dir d;
	struct emu_tbf t;
	struct emu_pkt *p;
	uint64_t k, bad = 0;

	/* Bucket big enough for all 500 packets: pure peak-rate burst. */
	CHECK(!setup(&d, &t, 3000000, 1000000, 38000000, 0), "init");
	for (k = 0; k < 500; k++)
		enq(&d, 5 * MS, 1500 + L2);
	for (k = 0; k < 500; k++) {
		p = emu_dir_pop_due(&d, 10 * SEC);
		if (!p || p->departure_ns != 5 * MS +
		    (k + 1) * 1500ULL * 8000000000ULL / 38000000ULL)
			bad++;
	}
	CHECK(bad == 0, "%lu departures off the exact floor",
	      (unsigned long)bad);
	emu_dir_destroy(&d);
}

/*
 * Saturated for 60 s with mixed packet sizes: the long-run departure rate
 * (IP bytes) equals the sustained rate, whatever the peak and burst.
 */
static void run_long_run(uint64_t rate, uint64_t burst, uint64_t peak)
{
	struct emu_dir d;
	struct emu_tbf t;
	struct emu_pkt *p;
	struct prng rng;
	uint64_t now = 0, bytes = 0, first = 0, last = 0, n = 0;
	double got;

	/* A 1000-packet buffer keeps it saturated without unbounded growth. */
	CHECK(!setup(&d, &t, rate, burst, peak, 1000), "init");
	prng_seed(&rng, 42, 0, 9);
	/* Offer ~1.5x the rate, pop continuously, measure from 5 s on. */
	while (now < 60 * SEC) {
		uint32_t len = 60 + (uint32_t)(prng_next(&rng) % 1455);

		enq(&d, now, len);
		now += (uint64_t)(len - L2) * 8 * SEC / (rate + rate / 2);
		while ((p = emu_dir_pop_due(&d, now))) {
			if (p->departure_ns < 5 * SEC)
				continue;
			if (!n++)
				first = p->departure_ns;
			else
				bytes += p->len - L2;
			last = p->departure_ns;
		}
	}
	got = (double)bytes * 8 * SEC / (double)(last - first);
	CHECK(n > 100 && got > rate * 0.99 && got < rate * 1.01,
	      "rate %.0f b/s over %lu pkts, want %lu", got,
	      (unsigned long)n, (unsigned long)rate);
	emu_dir_destroy(&d);
}

static void test_long_run_rate(void)
{
	run_long_run(3000000, 3044, 38000000);	/* DOCSIS downstream */
	run_long_run(3000000, 3044, 0);		/* no peak */
	run_long_run(100000000, 15000, 1000000000);
	run_long_run(512000, 1522, 512000);	/* peak == sustained */
}

/* After a very long idle the bucket is simply full (no overflow). */
static void test_idle_refill(void)
{
	struct emu_dir d;
	struct emu_tbf t;
	struct emu_pkt *p;
	uint64_t later = 7200 * SEC;	/* two hours */

	CHECK(!setup(&d, &t, 1000000000000ULL, 1000000, 0, 0), "init 1T");
	enq(&d, 0, 1000 + L2);
	CHECK(emu_tbf_tokens_bytes(&t, 0) == 999000, "took 1000");
	CHECK(emu_tbf_tokens_bytes(&t, later) == 1000000, "full again");
	emu_dir_destroy(&d);

	CHECK(!setup(&d, &t, 8000000, 3000, 80000000, 0), "init");
	enq(&d, 0, 1000 + L2);
	enq(&d, 0, 1000 + L2);
	enq(&d, 0, 1000 + L2);
	enq(&d, 0, 1000 + L2);		/* waits for tokens: starts at 1 ms */
	enq(&d, later, 1000 + L2);	/* idle for hours: full bucket */
	enq(&d, later, 1000 + L2);
	while ((p = emu_dir_pop_due(&d, later - 1)))
		;
	p = emu_dir_pop_due(&d, later + 1 * SEC);
	CHECK(p && p->departure_ns == later + 100 * US, "burst again");
	p = emu_dir_pop_due(&d, later + 1 * SEC);
	CHECK(p && p->departure_ns == later + 200 * US, "at peak rate");
	emu_dir_destroy(&d);
}

/* A frame larger than the bucket waits for a full bucket, then empties it. */
static void test_frame_larger_than_bucket(void)
{
	struct emu_dir d;
	struct emu_tbf t;
	struct emu_pkt *p;

	/* 500-byte bucket, 8 Mb/s: a full bucket every 500 us. */
	CHECK(!setup(&d, &t, 8000000, 500, 0, 0), "init");
	enq(&d, 0, 1000 + L2);
	enq(&d, 0, 1000 + L2);
	enq(&d, 0, 1000 + L2);
	p = emu_dir_pop_due(&d, 1 * SEC);
	CHECK(p && p->departure_ns == 0, "first: full bucket at t=0");
	p = emu_dir_pop_due(&d, 1 * SEC);
	CHECK(p && p->departure_ns == 500 * US, "second after refill");
	p = emu_dir_pop_due(&d, 1 * SEC);
	CHECK(p && p->departure_ns == 1000 * US, "third");
	emu_dir_destroy(&d);
}

/* No sustained limit: a plain serializer at the peak rate. */
static void test_unlimited_sustained(void)
{
	struct emu_dir d;
	struct emu_tbf t;
	struct emu_pkt *p;

	CHECK(!setup(&d, &t, 0, 0, 8000000, 0), "init");
	enq(&d, 0, 1000 + L2);
	enq(&d, 0, 1000 + L2);
	p = emu_dir_pop_due(&d, 1 * SEC);
	CHECK(p && p->departure_ns == 1 * MS, "1 ms at 8 Mb/s");
	p = emu_dir_pop_due(&d, 1 * SEC);
	CHECK(p && p->departure_ns == 2 * MS, "back to back");
	emu_dir_destroy(&d);
}

/* Frames waiting for tokens are backlog: drop-tail applies to them. */
static void test_droptail(void)
{
	struct emu_dir d;
	struct emu_tbf t;

	CHECK(!setup(&d, &t, 8000000, 1000, 0, 3), "init");
	CHECK(enq(&d, 0, 1000 + L2) == EMU_QUEUED, "1 (departs at 0)");
	CHECK(enq(&d, 0, 1000 + L2) == EMU_QUEUED, "2 (1 ms)");
	CHECK(enq(&d, 0, 1000 + L2) == EMU_QUEUED, "3 (2 ms)");
	CHECK(enq(&d, 0, 1000 + L2) == EMU_QUEUED, "4 (3 ms)");
	CHECK(enq(&d, 0, 1000 + L2) == EMU_DROP_QUEUE, "5 dropped");
	CHECK(d.c.backlog_pkts == 3 && d.c.queue_drops == 1, "counts");
	CHECK(enq(&d, 1 * MS, 1000 + L2) == EMU_QUEUED, "room at 1 ms");
	emu_dir_destroy(&d);
}

static int departures_are(struct emu_dir *d, const uint64_t *want, int n)
{
	int k, bad = 0;

	for (k = 0; k < n; k++) {
		struct emu_pkt *p = emu_dir_pop_due(d, 100 * SEC);

		if (!p || p->departure_ns != want[k]) {
			bad++;
			printf("  pkt %d: %lu want %lu\n", k, p ? (unsigned long)p->departure_ns : 0UL,
			       (unsigned long)want[k]);
		}
	}
	return bad;
}

/*
 * Granularity 4 ms, 8 Mb/s (1 byte/us), no peak, ten 1000-byte frames at 0.
 * A 5000-byte bucket: five leave at 0; the sixth is short of tokens until
 * 1 ms, a shaping delay rounded up to 4 ms; at 4 ms the bucket holds 4000 B
 * (refilled since 0), so the 7th-9th find tokens when the PHY is free and go
 * too (no shaping delay); the 10th needs tokens until 5 ms: 8 ms.  The long
 * run keeps the rate: 4 frames per 4-ms slot.  A 1000-byte bucket, smaller
 * than one slot of tokens, cannot: a frame every 4 ms (what Cisco's rule
 * "burst at least rate x granularity" avoids).
 */
static void test_granularity_rounds_the_shaping_delay(void)
{
	struct emu_dir d;
	struct emu_tbf t;
	struct emu_tbf_cfg tc = { .rate_bps = 8000000, .burst_bytes = 5000, .uncharged_bytes = L2,
				  .granularity_ns = 4 * MS };
	const uint64_t big[] = { 0, 0, 0, 0, 0, 4 * MS, 4 * MS, 4 * MS, 4 * MS, 8 * MS };
	const uint64_t small[] = { 0, 4 * MS, 8 * MS, 12 * MS };
	int k;

	CHECK(!setup_cfg(&d, &t, &tc, 0), "init");
	for (k = 0; k < 10; k++)
		enq(&d, 0, 1000 + L2);
	CHECK(departures_are(&d, big, 10) == 0, "5000-byte bucket");
	emu_dir_destroy(&d);
	tc.burst_bytes = 1000;
	CHECK(!setup_cfg(&d, &t, &tc, 0), "init");
	for (k = 0; k < 4; k++)
		enq(&d, 0, 1000 + L2);
	CHECK(departures_are(&d, small, 4) == 0, "1000-byte bucket");
	emu_dir_destroy(&d);
	/* a burst at the peak rate only waits for the PHY: not shaped, not rounded */
	tc.burst_bytes = 3000;
	tc.peak_bps = 80000000;
	CHECK(!setup_cfg(&d, &t, &tc, 0), "init");
	for (k = 0; k < 2; k++)
		enq(&d, 0, 1000 + L2);
	{
		const uint64_t peak[] = { 100 * US, 200 * US };

		CHECK(departures_are(&d, peak, 2) == 0, "burst at the peak rate");
	}
	emu_dir_destroy(&d);
}

/*
 * max-delay 3 ms, 8 Mb/s, 1000-byte bucket, no granularity: frames of 1000 B
 * at 0 would start at 0, 1, 2, 3, 4 ms: the fifth (4 ms > 3) and the sixth
 * are dropped on arrival, and the shaper's state is as if they never came: a
 * frame at 3.5 ms waits 0.5 ms (tokens at 4 ms) and is taken.  With slots of
 * 4 ms the second frame's 1 ms rounds to 4 ms > 3: dropped already.
 */
static void test_max_delay_is_a_drop_threshold(void)
{
	struct emu_dir d;
	struct emu_tbf t;
	struct emu_tbf_cfg tc = { .rate_bps = 8000000, .burst_bytes = 1000, .uncharged_bytes = L2,
				  .max_delay_ns = 3 * MS };
	const uint64_t want[] = { 0, 1 * MS, 2 * MS, 3 * MS, 4 * MS };
	int k;

	CHECK(!setup_cfg(&d, &t, &tc, 0), "init");
	for (k = 0; k < 4; k++)
		CHECK(enq(&d, 0, 1000 + L2) == EMU_QUEUED, "frame %d taken", k + 1);
	CHECK(enq(&d, 0, 1000 + L2) == EMU_DROP_QUEUE, "5th: 4 ms > 3 ms");
	CHECK(enq(&d, 0, 1000 + L2) == EMU_DROP_QUEUE, "6th");
	CHECK(d.c.queue_drops == 2 && t.delay_drops == 2, "counted as queue drops");
	CHECK(enq(&d, 3 * MS + 500 * US, 1000 + L2) == EMU_QUEUED, "0.5 ms at 3.5 ms");
	CHECK(departures_are(&d, want, 5) == 0, "departures");
	emu_dir_destroy(&d);
	tc.granularity_ns = 4 * MS;
	CHECK(!setup_cfg(&d, &t, &tc, 0), "init");
	CHECK(enq(&d, 0, 1000 + L2) == EMU_QUEUED, "first: tokens there");
	CHECK(enq(&d, 0, 1000 + L2) == EMU_DROP_QUEUE, "second: 1 ms rounds to 4 > 3");
	emu_dir_destroy(&d);
}

/*
 * The phantom element: D(u) = max x min(1, u/knee), u the load of the last
 * window.  40 ms at a knee of half the rate; 8 Mb/s, a 64-ms window of 1-ms
 * slots; one 1000-byte frame every 2 ms is half the rate: once the window
 * is full (from 62 ms on) every frame is released 40 ms after it departs,
 * and its departure is the shaper's (the element never holds the link
 * back).  Frames that share a departure keep FIFO order.
 */
static void test_phantom_delays_release_not_departure(void)
{
	struct emu_phantom_cfg pc = { .max_delay_ns = 40 * MS, .knee_ppm = 500000,
				      .window_ns = 64 * MS, .rate_bps = 8000000 };
	struct emu_tbf_cfg tc = { .rate_bps = 8000000, .burst_bytes = 3044, .uncharged_bytes = L2,
				  .phantom = pc };
	struct emu_dir d;
	struct emu_tbf t;
	struct emu_pkt *p;
	uint64_t k, bad = 0, early_max = 0;

	CHECK(emu_phantom_curve_ns(&pc, 0) == 0, "no load, no delay");
	CHECK(emu_phantom_curve_ns(&pc, 250000) == 20 * MS, "a quarter of the rate: half of it");
	CHECK(emu_phantom_curve_ns(&pc, 500000) == 40 * MS && emu_phantom_curve_ns(&pc, 900000) == 40 * MS,
	      "at and above the knee: all of it");
	CHECK(!setup_cfg(&d, &t, &tc, 0), "init");
	for (k = 0; k < 100; k++)
		CHECK(enq(&d, k * 2 * MS, 1000 + L2) == EMU_QUEUED, "frame");
	for (k = 0; k < 100; k++) {
		uint64_t now = k * 2 * MS;

		p = emu_dir_pop_due(&d, 10 * SEC);
		if (!p || p->departure_ns != now) {
			bad++;
			continue;
		}
		if (now >= 62 * MS && p->release_ns != now + 40 * MS)
			bad++;
		if (now < 62 * MS && p->release_ns - now > early_max)
			early_max = p->release_ns - now;
	}
	CHECK(bad == 0, "%lu frames wrong", (unsigned long)bad);
	CHECK(early_max > 0 && early_max < 40 * MS, "the load builds up over the first window");
	CHECK(t.phantom.st.load_ppm == 500000, "load %lu ppm", (unsigned long)t.phantom.st.load_ppm);
	emu_dir_destroy(&d);
	/* off: the same frames leave and arrive at once */
	tc.phantom.max_delay_ns = 0;
	CHECK(!setup_cfg(&d, &t, &tc, 0), "init");
	enq(&d, 0, 1000 + L2);
	p = emu_dir_pop_due(&d, 1 * SEC);
	CHECK(p && p->release_ns == 0, "no element");
	emu_dir_destroy(&d);
	pc.knee_ppm = 0;
	CHECK(emu_phantom_init(&t.phantom, &pc), "knee 0 refused");
	pc.knee_ppm = 500000;
	pc.window_ns = 10 * US;
	CHECK(emu_phantom_init(&t.phantom, &pc), "window shorter than its slots refused");
}

/* An Ethernet + IPv4 + TCP frame of `len` bytes from source port `sport`. */
static void tcp_frame(uint8_t *f, uint32_t len, uint16_t sport)
{
	memset(f, 0, len);
	f[12] = 0x08;			/* IPv4 */
	f[14] = 0x45;			/* version 4, 20-byte header */
	f[14 + 9] = 6;			/* TCP */
	f[14 + 12] = 10; f[14 + 15] = 1;	/* 10.0.0.1 -> 10.0.0.2 */
	f[14 + 16] = 10; f[14 + 19] = 2;
	f[34] = (uint8_t)(sport >> 8);
	f[35] = (uint8_t)sport;
	f[37] = 80;
}

static uint8_t flow_frames[70][1014 + L2];

/*
 * The flow term: N = (sum b)^2 / sum b^2 over the window, D = curve x N^k.
 * The factor itself (k in quarters), the key of a frame (its ports, not its
 * length or payload), then the element on a link: 8 Mb/s, 64-ms window,
 * 10 ms at a knee of half the rate, k = 2 (q = 8), one 1000-byte frame
 * every 2 ms (half the rate, at the knee).  One flow: 10 ms; two flows
 * taking turns: N = 2, 40 ms; three frames of one flow to one of another:
 * N = 16/10 = 1.6, 25.6 ms; once the second flow has been gone a window,
 * N is 1 again.  A ping-sized flow beside one full flow leaves N ~1.
 */
static void test_phantom_flow_term(void)
{
	struct emu_phantom_cfg pc = { .max_delay_ns = 10 * MS, .knee_ppm = 500000,
				      .window_ns = 64 * MS, .rate_bps = 8000000, .flow_exp_q = 8 };
	struct emu_tbf_cfg tc = { .rate_bps = 8000000, .burst_bytes = 3044, .uncharged_bytes = L2,
				  .phantom = pc };
	struct emu_dir d;
	struct emu_tbf t;
	struct emu_pkt *p;
	uint64_t k, now, bad = 0;
	uint8_t a[60], b[60];

	CHECK(emu_phantom_flow_factor_q16(EMU_PHANTOM_Q16, 8) == EMU_PHANTOM_Q16, "one flow: 1");
	CHECK(emu_phantom_flow_factor_q16(2 * EMU_PHANTOM_Q16, 8) == 4 * EMU_PHANTOM_Q16, "2^2");
	CHECK(emu_phantom_flow_factor_q16(2 * EMU_PHANTOM_Q16, 4) == 2 * EMU_PHANTOM_Q16, "2^1");
	CHECK(emu_phantom_flow_factor_q16(2 * EMU_PHANTOM_Q16, 0) == EMU_PHANTOM_Q16, "k = 0");
	/* 2^1.5 = 2.828427 (185363.8 in Q16), 2^0.25 = 1.189207 (77935.1): the roots floor */
	k = emu_phantom_flow_factor_q16(2 * EMU_PHANTOM_Q16, 6);
	CHECK(k >= 185350 && k <= 185364, "2^1.5: %lu", (unsigned long)k);
	k = emu_phantom_flow_factor_q16(2 * EMU_PHANTOM_Q16, 1);
	CHECK(k >= 77930 && k <= 77936, "2^0.25: %lu", (unsigned long)k);
	k = emu_phantom_flow_factor_q16(64 * EMU_PHANTOM_Q16, EMU_PHANTOM_MAX_FLOW_EXP_Q);
	CHECK(k == (1ULL << 24) * EMU_PHANTOM_Q16, "64^4 without overflow: %lu", (unsigned long)k);

	tcp_frame(a, sizeof(a), 5001);
	tcp_frame(b, sizeof(b), 5002);
	CHECK(emu_phantom_flow_key(a, sizeof(a)) != emu_phantom_flow_key(b, sizeof(b)), "ports tell flows apart");
	CHECK(emu_phantom_flow_key(a, sizeof(a)) == emu_phantom_flow_key(a, 40), "the key reads headers only");
	CHECK(emu_phantom_flow_key(frame, 100) == emu_phantom_flow_key(frame, 60), "non-IP: one flow");

	for (k = 0; k < 70; k++)
		tcp_frame(flow_frames[k], sizeof(flow_frames[k]), (uint16_t)(5000 + k));
	CHECK(!setup_cfg(&d, &t, &tc, 0), "init");
	/* 0-98 ms one flow, 100-198 ms alternating, 200-298 ms 3:1, 300-498 ms one flow */
	for (k = 0; k < 250; k++) {
		const uint8_t *f = flow_frames[0];

		now = k * 2 * MS;
		if (k >= 50 && k < 100 && k % 2)
			f = flow_frames[1];
		if (k >= 100 && k < 150 && k % 4 == 3)
			f = flow_frames[1];
		CHECK(emu_dir_enqueue(&d, now, f, sizeof(flow_frames[0]), NULL) == EMU_QUEUED, "frame");
	}
	for (k = 0; k < 250; k++) {
		uint64_t want = 0, got;

		now = k * 2 * MS;
		p = emu_dir_pop_due(&d, 10 * SEC);
		if (!p) {
			bad++;
			continue;
		}
		got = p->release_ns - p->departure_ns;
		if (k >= 32 && k < 50)		/* window full of one flow */
			want = 10 * MS;
		else if (k >= 82 && k < 100)	/* of two, alternating */
			want = 40 * MS;
		else if (k >= 132 && k < 150)	/* of 3:1 (16 frames: 12 + 4) */
			want = 25600 * US;
		else if (k >= 182)		/* the second flow a window gone */
			want = 10 * MS;
		/* the release is FIFO: a shorter delay after a longer one waits for it */
		if (want && k >= 182 && got < want)
			bad++;
		if (want && k < 182 && (got + 10 * US < want || got > want + 10 * US))
			bad++;
	}
	CHECK(bad == 0, "%lu frames with the wrong delay", (unsigned long)bad);
	CHECK(t.phantom.st.flows_q16 == EMU_PHANTOM_Q16, "one flow again: N %lu",
	      (unsigned long)t.phantom.st.flows_q16);
	emu_dir_destroy(&d);

	/* one full flow and a 64-byte ping every 16 ms: N = 1.0x, the delay ~10 ms */
	CHECK(!setup_cfg(&d, &t, &tc, 0), "init");
	for (k = 0; k < 64; k++) {
		emu_dir_enqueue(&d, k * 2 * MS, flow_frames[0], sizeof(flow_frames[0]), NULL);
		if (k % 8 == 0)
			emu_dir_enqueue(&d, k * 2 * MS, flow_frames[2], 64 + L2, NULL);
	}
	while ((p = emu_dir_pop_due(&d, 10 * SEC)))
		;
	CHECK(t.phantom.st.flows_q16 < EMU_PHANTOM_Q16 * 103 / 100, "a ping adds ~0: N %lu",
	      (unsigned long)t.phantom.st.flows_q16);
	emu_dir_destroy(&d);

	/* 70 flows at once: more than the table tells apart; the extra share the last entry */
	CHECK(!setup_cfg(&d, &t, &tc, 0), "init");
	for (k = 0; k < 140; k++)
		emu_dir_enqueue(&d, k * 100 * US, flow_frames[k % 70], sizeof(flow_frames[0]), NULL);
	while ((p = emu_dir_pop_due(&d, 10 * SEC)))
		;
	CHECK(t.phantom.st.flows_q16 <= EMU_PHANTOM_FLOWS * EMU_PHANTOM_Q16 &&
	      t.phantom.st.flows_q16 > 32 * EMU_PHANTOM_Q16, "N %lu (Q16) of at most 64",
	      (unsigned long)t.phantom.st.flows_q16);
	CHECK(t.phantom.st.delay_max_ns <= EMU_PHANTOM_MAX_DELAY_NS, "capped");
	emu_dir_destroy(&d);

	pc.flow_exp_q = EMU_PHANTOM_MAX_FLOW_EXP_Q + 1;
	CHECK(emu_phantom_init(&t.phantom, &pc), "exponent above 4 refused");
}

static void test_config_checks(void)
{
	struct emu_tbf t;
	struct emu_tbf_cfg c = { .rate_bps = 3000000, .burst_bytes = 3044,
				 .peak_bps = 38000000 };

	CHECK(!emu_tbf_init(&t, &c), "valid");
	c.peak_bps = 1000000;
	CHECK(emu_tbf_init(&t, &c), "peak below sustained");
	c.peak_bps = 0;
	CHECK(!emu_tbf_init(&t, &c), "no peak");
	c.burst_bytes = 0;
	CHECK(emu_tbf_init(&t, &c), "rate without bucket");
	c.burst_bytes = EMU_TB_MAX_DEPTH_BYTES + 1;
	CHECK(emu_tbf_init(&t, &c), "bucket too deep");
}

int main(void)
{
	RUN(test_burst_then_sustained);
	RUN(test_peak_serialization_exact);
	RUN(test_long_run_rate);
	RUN(test_idle_refill);
	RUN(test_frame_larger_than_bucket);
	RUN(test_unlimited_sustained);
	RUN(test_droptail);
	RUN(test_granularity_rounds_the_shaping_delay);
	RUN(test_max_delay_is_a_drop_threshold);
	RUN(test_phantom_delays_release_not_departure);
	RUN(test_phantom_flow_term);
	RUN(test_config_checks);
	CHECK_DONE();
}
