/*
 * test_docsis.c - unit tests of linkemu's DOCSIS upstream request-grant MAC
 * (policy_docsis.c) inside the scheduler core, with synthetic arrivals and
 * a fake clock.  The model is deterministic, so timings are checked
 * exactly against the rules in policy_docsis.h: grant timing of a single
 * frame, the upstream token bucket (long-run rate, burst, grant deferral),
 * piggybacking versus contention, concatenation, fragmentation, the idle
 * latency distribution, drop-tail, and that linkemu's event-driven loop
 * (waking only at next_release_ns) sees exactly what a fine-grained
 * replay sees.
 */
#include <stdlib.h>
#include <string.h>

#include "../policy_docsis.h"
#include "../prng.h"
#include "../sched.h"
#include "check.h"

#define US 1000ULL
#define MS 1000000ULL
#define SEC 1000000000ULL
#define L2 EMU_L2_HEADER_BYTES

/* Defaults: M = 2 ms, transit 0.45 ms + lookahead 1.6 ms, PHY 2.56 Mb/s. */
#define MAP (2 * MS)
#define REQ_TO_GRANT (2050 * US)
/* Serialization of n IP bytes at the default 2.56 Mb/s PHY. */
#define PHY_NS(n) ((uint64_t)(n) * 8ULL * SEC / 2560000ULL)

static uint8_t frame[2048];

static struct emu_docsis_cfg def_cfg(void)
{
	struct emu_docsis_cfg c;

	emu_docsis_default_cfg(&c);
	c.uncharged_bytes = L2;
	return c;
}

static int setup(struct emu_dir *d, struct emu_docsis *m,
		 const struct emu_docsis_cfg *mc, uint64_t delay,
		 uint64_t limit_pkts)
{
	struct emu_dir_cfg cfg;

	if (emu_docsis_init(m, mc))
		return -1;
	memset(&cfg, 0, sizeof(cfg));
	cfg.max_frame = 1518;
	cfg.seed = 1;
	cfg.delay_ns = delay;
	cfg.limit_pkts = limit_pkts;
	cfg.init_slots = 64;
	cfg.policy = &emu_docsis_policy_ops;
	cfg.policy_ctx = m;
	return emu_dir_init(d, &cfg);
}

static enum emu_verdict enq(struct emu_dir *d, uint64_t now, uint32_t len)
{
	return emu_dir_enqueue(d, now, frame, len, NULL);
}

static uint64_t map_ceil(uint64_t t)
{
	return (t + MAP - 1) / MAP * MAP;
}

static uint64_t map_next(uint64_t t)
{
	return (t / MAP + 1) * MAP;
}

/* Pop everything due by `until`, storing departure times by index. */
static size_t drain(struct emu_dir *d, uint64_t until, uint64_t *dep,
		    size_t max)
{
	struct emu_pkt *p;
	size_t n = 0;

	while ((p = emu_dir_pop_due(d, until))) {
		if (p->index < max)
			dep[p->index] = p->departure_ns;
		n++;
	}
	return n;
}

/*
 * One 100-byte (IP) frame at an idle CM at 3.3 ms: contention request at
 * the 4 ms MAP, at the CMTS at 4.45 ms, + 1.6 ms lookahead = 6.05 ms, so
 * the grant is the 8 ms MAP; 312.5 us on the PHY; plus 10 ms delay.
 */
static void test_grant_timing_single_frame(void)
{
	struct emu_docsis_cfg mc = def_cfg();
	struct emu_docsis m;
	struct emu_dir d;
	struct emu_pkt *p;
	uint64_t t, bad = 0;

	CHECK(!setup(&d, &m, &mc, 10 * MS, 0), "init");
	CHECK(enq(&d, 3300 * US, 100 + L2) == EMU_QUEUED, "queued");
	CHECK(d.c.backlog_pkts == 1, "undecided frame is backlog");
	CHECK(emu_dir_next_release_ns(&d) == 4 * MS, "wake for contention");
	emu_dir_advance(&d, 4 * MS);
	CHECK(m.st.requests == 1 && m.req_bytes == 100, "request of 100 B");
	CHECK(emu_dir_next_release_ns(&d) == 8 * MS, "wake for the grant");
	CHECK(!emu_dir_pop_due(&d, 8 * MS - 1), "nothing before the grant");
	emu_dir_advance(&d, 8 * MS);
	CHECK(emu_dir_next_release_ns(&d) == 18 * MS + 312500,
	      "release %lu", (unsigned long)emu_dir_next_release_ns(&d));
	p = emu_dir_pop_due(&d, 18 * MS + 312500);
	CHECK(p && p->departure_ns == 8 * MS + 312500 &&
	      p->release_ns == 18 * MS + 312500, "departure");
	CHECK(m.st.grants == 1 && m.st.granted_bytes == 100 &&
	      m.st.piggybacked_requests == 0 &&
	      m.st.req_grant_delay_sum_ns == 4 * MS &&
	      m.st.req_grant_delay_max_ns == 4 * MS, "mac stats");
	CHECK(emu_dir_next_release_ns(&d) == EMU_TIME_NEVER, "idle again");
	emu_dir_destroy(&d);

	/*
	 * The formula over a sweep of arrival phases, including exact MAP
	 * boundaries (the contention slot must be strictly after arrival).
	 */
	for (t = 0; t < 10 * MS; t += 37 * US) {
		uint64_t base = 20 * MS * (t / (37 * US)), want;

		CHECK(!setup(&d, &m, &mc, 0, 0), "init");
		enq(&d, base + t, 100 + L2);
		want = map_ceil(map_next(base + t) + REQ_TO_GRANT) +
		       PHY_NS(100);
		p = emu_dir_pop_due(&d, base + t + 1 * SEC);
		if (!p || p->departure_ns != want)
			bad++;
		emu_dir_destroy(&d);
	}
	CHECK(!setup(&d, &m, &mc, 0, 0), "init");
	enq(&d, 4 * MS, 100 + L2);	/* on a boundary: the next MAP */
	p = emu_dir_pop_due(&d, 1 * SEC);
	CHECK(p && p->departure_ns == 10 * MS + 312500, "boundary arrival");
	emu_dir_destroy(&d);
	CHECK(bad == 0, "%lu phases off the formula", (unsigned long)bad);
}

/*
 * Saturated upstream for 30 s: the long-run rate is the token bucket's
 * sustained rate (512 kb/s) within 1 %, unless the MAC itself is slower
 * (want_bps says which).
 */
static void run_long_run(bool concat, bool piggy, uint64_t phy,
			 uint32_t len, uint64_t want_bps)
{
	struct emu_docsis_cfg mc = def_cfg();
	struct emu_docsis m;
	struct emu_dir d;
	struct emu_pkt *p;
	uint64_t now = 0, bytes = 0, first = 0, last = 0, n = 0;
	double got;

	mc.concatenation = concat;
	mc.piggyback = piggy;
	mc.phy_rate_bps = phy;
	CHECK(!setup(&d, &m, &mc, 0, 100), "init");
	/* Offer 1 Mb/s (about twice the sustained rate). */
	while (now < 30 * SEC) {
		enq(&d, now, len);
		now += (uint64_t)(len - L2) * 8 * SEC / 1000000;
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
	CHECK(n > 100 && got > want_bps * 0.99 && got < want_bps * 1.01,
	      "concat %d piggy %d phy %lu len %u: %.0f b/s (%lu pkts)",
	      concat, piggy, (unsigned long)phy, len, got, (unsigned long)n);
	CHECK(emu_dir_conserved(&d), "invariant");
	emu_dir_destroy(&d);
}

static void test_token_bucket_long_run(void)
{
	run_long_run(true, true, 2560000, 1500 + L2, 512000);
	run_long_run(true, false, 2560000, 1500 + L2, 512000);
	run_long_run(false, true, 2560000, 1500 + L2, 512000);
	run_long_run(false, false, 2560000, 1500 + L2, 512000);
	run_long_run(true, true, 2560000, 52 + L2, 512000);	/* TCP ACKs */
	run_long_run(true, true, 30720000, 1500 + L2, 512000);
	run_long_run(false, false, 30720000, 1000 + L2, 512000);
	/*
	 * Neither concatenation nor piggybacking: one 300-byte frame per
	 * request cycle (contention 2 ms after the grant, then 4 ms to the
	 * next grant) = 300 B / 6 ms = 400 kb/s: the MAC, not the bucket,
	 * is the bottleneck.
	 */
	run_long_run(false, false, 30720000, 300 + L2, 400000);
}

/*
 * Burst allowance with a PHY fast enough to carry it in one MAP (100 Mb/s:
 * 25000 bytes per MAP): 3000 B queued at an idle CM leave in one grant at
 * PHY speed (the full 3044 B bucket covers them).  The next 3000 B must
 * wait for tokens (512 kb/s = 64 B/ms): the CMTS defers the grant until
 * the bucket holds depth - one MAP's refill = 3044 - 128 = 2916 B, then
 * grants what it has, and the rest follows in a piggybacked grant.
 */
static void test_burst_and_grant_deferral(void)
{
	struct emu_docsis_cfg mc = def_cfg();
	struct emu_docsis m;
	struct emu_dir d;
	uint64_t dep[20], k, bad = 0, ready, g2;

	mc.phy_rate_bps = 100000000;
	CHECK(!setup(&d, &m, &mc, 0, 0), "init");
	for (k = 0; k < 10; k++)
		enq(&d, 500 * US, 300 + L2);
	/* c = 2 ms, grant at 6 ms; 300 B = 24 us at 100 Mb/s. */
	for (k = 10; k < 20; k++)
		enq(&d, 6500 * US, 300 + L2);
	CHECK(drain(&d, 1 * SEC, dep, 20) == 20, "all departed");
	for (k = 0; k < 10; k++)
		if (dep[k] != 6 * MS + (k + 1) * 24 * US)
			bad++;
	CHECK(bad == 0, "first 3000 B in one grant at PHY speed");
	/*
	 * Second request: c = 8 ms, nominal grant at 12 ms.  The bucket held
	 * 44 B after the first grant (6 ms) and reaches 2916 B 2872 B later.
	 */
	ready = 6 * MS + 2872ULL * 8 * SEC / 512000;
	g2 = map_ceil(ready);
	CHECK(ready == 50875000 && g2 == 52 * MS, "ready %lu",
	      (unsigned long)ready);
	/*
	 * At 52 ms: 44 + 46 ms * 64 B/ms = 2988 B = 9 frames + 288 B, which
	 * empties the bucket: 4 ms later it holds 256 B, minus the last 12.
	 */
	CHECK(emu_docsis_tokens_bytes(&m, 56 * MS) == 244, "tokens %lu",
	      (unsigned long)emu_docsis_tokens_bytes(&m, 56 * MS));
	for (k = 10, bad = 0; k < 19; k++)
		if (dep[k] != g2 + (k - 9) * 24 * US)
			bad++;
	CHECK(bad == 0, "deferred grant at %lu: got %lu",
	      (unsigned long)g2, (unsigned long)dep[10]);
	/* The last 12 B: piggybacked at 52 ms, granted at 56 ms. */
	CHECK(dep[19] == 56 * MS + 12 * 8 * SEC / 100000000, "tail %lu",
	      (unsigned long)dep[19]);
	CHECK(m.st.grants == 3 && m.st.requests == 3 &&
	      m.st.granted_bytes == 6000 && m.st.fragmented_frames == 1 &&
	      m.st.frames_concatenated == 19, "stats");
	CHECK(m.st.req_grant_delay_max_ns == g2 - 8 * MS,
	      "deferral counts in the request-to-grant delay");
	emu_dir_destroy(&d);
}

/*
 * Five 640-byte frames (exactly one MAP's worth at 2.56 Mb/s, 2 ms on the
 * wire) queued at once, no token bucket: each grant carries one frame.
 * With piggybacking the next request rides in each grant (grants every
 * 4 ms); without it the CM contends in the next MAP (every 6 ms).
 */
static void run_backlog(bool piggy, uint64_t *dep, struct emu_docsis *m)
{
	struct emu_docsis_cfg mc = def_cfg();
	struct emu_dir d;
	int k;

	mc.rate_bps = 0;
	mc.piggyback = piggy;
	CHECK(!setup(&d, m, &mc, 0, 0), "init");
	for (k = 0; k < 5; k++)
		enq(&d, 500 * US, 640 + L2);
	CHECK(drain(&d, 1 * SEC, dep, 5) == 5, "all departed");
	emu_dir_destroy(&d);
}

static void test_piggyback(void)
{
	struct emu_docsis on, off;
	uint64_t dep_on[5], dep_off[5], sum_on = 0, sum_off = 0;
	int k, bad = 0;

	run_backlog(true, dep_on, &on);
	run_backlog(false, dep_off, &off);
	for (k = 0; k < 5; k++) {
		/* first grant at 6 ms (c = 2 ms), then every 4 or 6 ms */
		if (dep_on[k] != 6 * MS + 4 * MS * k + 2 * MS ||
		    dep_off[k] != 6 * MS + 6 * MS * k + 2 * MS)
			bad++;
		sum_on += dep_on[k] - 500 * US;
		sum_off += dep_off[k] - 500 * US;
	}
	CHECK(!bad, "grant spacing");
	CHECK(sum_on / 5 == 15500 * US && sum_off / 5 == 19500 * US,
	      "mean delay on %lu off %lu", (unsigned long)(sum_on / 5),
	      (unsigned long)(sum_off / 5));
	CHECK(on.st.requests == 5 && on.st.piggybacked_requests == 4,
	      "on: 1 contention + 4 piggybacked requests");
	CHECK(off.st.requests == 5 && off.st.piggybacked_requests == 0,
	      "off: 5 contention requests");
	CHECK(on.st.req_grant_delay_max_ns == 4 * MS &&
	      off.st.req_grant_delay_max_ns == 4 * MS, "request-to-grant");
}

/*
 * With default parameters a 1500-byte frame is bigger than one MAP's PHY
 * capacity (640 B): it is fragmented over three grants (640 + 640 + 220).
 */
static void test_fragmentation(void)
{
	struct emu_docsis_cfg mc = def_cfg();
	struct emu_docsis m;
	struct emu_dir d;
	struct emu_pkt *p;

	CHECK(!setup(&d, &m, &mc, 0, 0), "init");
	enq(&d, 500 * US, 1500 + L2);
	p = emu_dir_pop_due(&d, 1 * SEC);
	/* grants at 6, 10, 14 ms (piggybacked); the tail is 220 B */
	CHECK(p && p->departure_ns == 14 * MS + PHY_NS(220), "departure %lu",
	      p ? (unsigned long)p->departure_ns : 0UL);
	CHECK(m.st.grants == 3 && m.st.granted_bytes == 1500 &&
	      m.st.fragmented_frames == 1 && m.st.requests == 3 &&
	      m.st.piggybacked_requests == 2, "stats");
	emu_dir_destroy(&d);
}

/*
 * Four 100-byte frames queued before the request: with concatenation they
 * leave back to back in one grant; without it, one per grant, each asked
 * for separately (piggybacked).
 */
static void test_concatenation(void)
{
	struct emu_docsis_cfg mc = def_cfg();
	struct emu_docsis m;
	struct emu_dir d;
	uint64_t dep[4];
	int k, bad = 0;

	CHECK(!setup(&d, &m, &mc, 0, 0), "init on");
	for (k = 0; k < 4; k++)
		enq(&d, 500 * US, 100 + L2);
	CHECK(drain(&d, 1 * SEC, dep, 4) == 4, "all departed");
	for (k = 0; k < 4; k++)
		if (dep[k] != 6 * MS + PHY_NS(100 * (k + 1)))
			bad++;
	CHECK(!bad, "one grant, back to back");
	CHECK(m.st.grants == 1 && m.st.requests == 1 &&
	      m.st.granted_bytes == 400 && m.st.frames_concatenated == 4,
	      "on: stats");
	emu_dir_destroy(&d);

	mc.concatenation = false;
	CHECK(!setup(&d, &m, &mc, 0, 0), "init off");
	for (k = 0; k < 4; k++)
		enq(&d, 500 * US, 100 + L2);
	CHECK(drain(&d, 1 * SEC, dep, 4) == 4, "all departed");
	for (k = 0, bad = 0; k < 4; k++)
		if (dep[k] != 6 * MS + 4 * MS * k + PHY_NS(100))
			bad++;
	CHECK(!bad, "one frame per grant");
	CHECK(m.st.grants == 4 && m.st.requests == 4 &&
	      m.st.piggybacked_requests == 3 && m.st.frames_concatenated == 0,
	      "off: stats");
	emu_dir_destroy(&d);
}

/*
 * Frames arriving while a request is outstanding are not in it: they go
 * in the piggybacked request of the grant (or wait for one if idle).
 */
static void test_request_covers_backlog_at_send_time(void)
{
	struct emu_docsis_cfg mc = def_cfg();
	struct emu_docsis m;
	struct emu_dir d;
	uint64_t dep[3];

	CHECK(!setup(&d, &m, &mc, 0, 0), "init");
	enq(&d, 500 * US, 100 + L2);	/* request at 2 ms, grant at 6 */
	enq(&d, 1 * MS, 100 + L2);	/* before the request: in it */
	enq(&d, 3 * MS, 100 + L2);	/* after: piggybacked at 6 -> 10 */
	CHECK(drain(&d, 1 * SEC, dep, 3) == 3, "all departed");
	CHECK(dep[0] == 6 * MS + PHY_NS(100) &&
	      dep[1] == 6 * MS + PHY_NS(200) &&
	      dep[2] == 10 * MS + PHY_NS(100), "deps %lu %lu %lu",
	      (unsigned long)dep[0], (unsigned long)dep[1],
	      (unsigned long)dep[2]);
	CHECK(m.st.requests == 2 && m.st.piggybacked_requests == 1,
	      "stats");
	emu_dir_destroy(&d);
}

/*
 * Idle latency of many isolated ping-sized frames (84 IP bytes) at random
 * phases: wait for the contention slot in (0, 2 ms], + 4 ms to the grant,
 * + 262.5 us on the PHY, so latency lies in (4.2625, 6.2625] ms with mean
 * 5.2625 ms (the uniform wait averages 1 ms).
 */
static void test_idle_latency_distribution(void)
{
	struct emu_docsis_cfg mc = def_cfg();
	struct emu_docsis m;
	struct emu_dir d;
	struct emu_pkt *p;
	struct prng rng;
	uint64_t k, n = 4000, t = 0, min = UINT64_MAX, max = 0, sum = 0;
	uint64_t ser = PHY_NS(84), mean;

	CHECK(ser == 262500, "ser");
	CHECK(!setup(&d, &m, &mc, 0, 0), "init");
	prng_seed(&rng, 7, 1, 9);
	for (k = 0; k < n; k++) {
		uint64_t lat;

		/* 50 ms apart (like ping -i 0.05) plus a random phase */
		t += 50 * MS + prng_next(&rng) % MAP;
		enq(&d, t, 84 + L2);
		p = emu_dir_pop_due(&d, t + 40 * MS);
		if (!p)
			break;
		lat = p->departure_ns - p->arrival_ns;
		sum += lat;
		min = lat < min ? lat : min;
		max = lat > max ? lat : max;
	}
	CHECK(k == n, "every frame departed within 40 ms");
	mean = sum / n;
	printf("  idle latency min/mean/max %.3f/%.3f/%.3f ms\n",
	       min / 1e6, mean / 1e6, max / 1e6);
	CHECK(min > 4 * MS + ser && min < 4 * MS + ser + 50 * US,
	      "min %lu", (unsigned long)min);
	CHECK(max <= 6 * MS + ser && max > 6 * MS + ser - 50 * US,
	      "max %lu", (unsigned long)max);
	CHECK(mean > 5 * MS + ser - 50 * US && mean < 5 * MS + ser + 50 * US,
	      "mean %lu", (unsigned long)mean);
	CHECK(m.st.requests == n && m.st.piggybacked_requests == 0 &&
	      m.st.grants == n, "one contention request and grant each");
	CHECK(m.st.req_grant_delay_sum_ns == n * 4 * MS &&
	      m.st.req_grant_delay_max_ns == 4 * MS, "request-to-grant 4 ms");
	emu_dir_destroy(&d);
}

/* Frames waiting for a grant are backlog: drop-tail applies to them. */
static void test_droptail(void)
{
	struct emu_docsis_cfg mc = def_cfg();
	struct emu_docsis m;
	struct emu_dir d;

	CHECK(!setup(&d, &m, &mc, 0, 3), "init");
	CHECK(enq(&d, 0, 100 + L2) == EMU_QUEUED, "1");
	CHECK(enq(&d, 0, 100 + L2) == EMU_QUEUED, "2");
	CHECK(enq(&d, 0, 100 + L2) == EMU_QUEUED, "3");
	CHECK(enq(&d, 0, 100 + L2) == EMU_DROP_QUEUE, "4 dropped");
	CHECK(d.c.backlog_pkts == 3 && d.c.queue_drops == 1, "counts");
	/* The dropped frame was never counted by the MAC. */
	emu_dir_advance(&d, 2 * MS);
	CHECK(m.req_bytes == 300, "request %lu", (unsigned long)m.req_bytes);
	CHECK(enq(&d, 6 * MS + PHY_NS(100), 100 + L2) == EMU_QUEUED,
	      "room once the first frame is on the wire");
	CHECK(emu_dir_conserved(&d), "invariant");
	emu_dir_destroy(&d);
}

/*
 * Random traffic, run twice: once replayed with every arrival enqueued at
 * its time and drained at the end, once as linkemu's loop runs it, waking
 * only at min(next arrival, emu_dir_next_release_ns()).  Departures must
 * be identical (the MAC never depends on when it is polled), the loop must
 * find every frame due exactly at its wake-up (no missed MAC event), and
 * FIFO, byte conservation and the counter invariant must hold.
 */
struct arrival {
	uint64_t t;
	uint32_t len;
};

static void run_random(const struct emu_docsis_cfg *mc, uint64_t seed)
{
	enum { N = 3000 };
	struct arrival *a = calloc(N, sizeof(*a));
	uint64_t *dep1 = calloc(N, sizeof(*dep1));
	uint64_t *dep2 = calloc(N, sizeof(*dep2));
	uint64_t t = 0, granted = 0, charged = 0, late = 0, bad = 0, prev = 0;
	struct emu_docsis m1, m2;
	struct emu_dir d1, d2;
	struct emu_pkt *p;
	struct prng rng;
	size_t i = 0, k;

	prng_seed(&rng, seed, 0, 9);
	for (k = 0; k < N; k++) {
		/* bursts of back-to-back arrivals, then gaps up to 30 ms */
		if (prng_next(&rng) % 4 == 0)
			t += prng_next(&rng) % (30 * MS);
		a[k].t = t;
		a[k].len = 60 + (uint32_t)(prng_next(&rng) % 1455);
	}

	CHECK(!setup(&d1, &m1, mc, 3 * MS, 40), "init 1");
	for (k = 0; k < N; k++)
		enq(&d1, a[k].t, a[k].len);
	drain(&d1, t + 100 * SEC, dep1, N);

	CHECK(!setup(&d2, &m2, mc, 3 * MS, 40), "init 2");
	for (;;) {
		uint64_t next = emu_dir_next_release_ns(&d2);

		if (i < N && a[i].t <= next) {
			enq(&d2, a[i].t, a[i].len);
			i++;
			continue;
		}
		if (next == EMU_TIME_NEVER)
			break;
		emu_dir_advance(&d2, next);
		while ((p = emu_dir_pop_due(&d2, next))) {
			if (p->release_ns != next)
				late++;
			dep2[p->index] = p->departure_ns;
			if (p->departure_ns < prev ||
			    p->departure_ns < p->arrival_ns)
				bad++;
			prev = p->departure_ns;
			charged += p->len - L2;
		}
	}
	granted = m2.st.granted_bytes;
	CHECK(!memcmp(dep1, dep2, N * sizeof(*dep1)),
	      "polled and event-driven runs differ");
	CHECK(!late, "%lu frames found late by the event loop",
	      (unsigned long)late);
	CHECK(!bad, "%lu FIFO/causality violations", (unsigned long)bad);
	CHECK(granted == charged && m2.queued_bytes == 0 && !m2.head_sent,
	      "granted %lu sent %lu", (unsigned long)granted,
	      (unsigned long)charged);
	CHECK(d2.c.tx_pkts + d2.c.queue_drops == N &&
	      d2.c.backlog_pkts == 0 && emu_dir_conserved(&d2), "accounting");
	/* Offered ~1.7 Mb/s: a 512 kb/s bucket must overflow the buffer. */
	CHECK(d1.c.queue_drops == d2.c.queue_drops &&
	      (d2.c.queue_drops > 0 || !mc->rate_bps),
	      "drops %lu", (unsigned long)d2.c.queue_drops);
	emu_dir_destroy(&d1);
	emu_dir_destroy(&d2);
	free(a);
	free(dep1);
	free(dep2);
}

static void test_random_event_driven(void)
{
	struct emu_docsis_cfg mc = def_cfg();

	run_random(&mc, 1);
	mc.piggyback = false;
	run_random(&mc, 2);
	mc.concatenation = false;
	run_random(&mc, 3);
	mc = def_cfg();
	mc.lookahead_ns = 0;		/* a grant every MAP when piggybacked */
	mc.req_transit_ns = 0;
	mc.map_interval_ns = 1 * MS;
	mc.phy_rate_bps = 10000000;
	run_random(&mc, 4);
	mc.rate_bps = 0;
	mc.map_interval_ns = 1500 * US;	/* a MAP that does not divide 1 ms */
	run_random(&mc, 5);
}

static void test_config_checks(void)
{
	struct emu_docsis_cfg mc = def_cfg();
	struct emu_docsis m;

	CHECK(!emu_docsis_init(&m, &mc), "defaults valid");
	CHECK(m.map_cap_bytes == 640, "640 B per MAP at 2.56 Mb/s");
	mc.map_interval_ns = 0;
	CHECK(emu_docsis_init(&m, &mc), "MAP interval 0");
	mc = def_cfg();
	mc.phy_rate_bps = 0;
	CHECK(emu_docsis_init(&m, &mc), "PHY rate 0");
	mc.phy_rate_bps = 1000;		/* 0.25 B per 2 ms MAP */
	CHECK(emu_docsis_init(&m, &mc), "less than a byte per MAP");
	mc = def_cfg();
	mc.max_burst_bytes = 0;
	CHECK(emu_docsis_init(&m, &mc), "rate without bucket");
	mc.rate_bps = 0;
	CHECK(!emu_docsis_init(&m, &mc), "no bucket at all");
}

int main(void)
{
	RUN(test_grant_timing_single_frame);
	RUN(test_token_bucket_long_run);
	RUN(test_burst_and_grant_deferral);
	RUN(test_piggyback);
	RUN(test_fragmentation);
	RUN(test_concatenation);
	RUN(test_request_covers_backlog_at_send_time);
	RUN(test_idle_latency_distribution);
	RUN(test_droptail);
	RUN(test_random_event_driven);
	RUN(test_config_checks);
	CHECK_DONE();
}
