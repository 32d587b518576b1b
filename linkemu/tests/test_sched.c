/*
 * test_sched.c - unit tests of linkemu's scheduler core (sched.c) with
 * synthetic arrivals and a fake clock: serialization timing, delay, jitter
 * without reordering, drop-tail at packet and byte limits, backlog
 * accounting, ring growth, and the departure-policy interface a MAC model
 * will use.  No sockets, no real time: every expectation is exact.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../gso.h"
#include "../loss.h"
#include "../sched.h"
#include "check.h"

#define US 1000ULL
#define MS 1000000ULL
#define SEC 1000000000ULL

static uint8_t frame[2048];

static struct emu_dir_cfg base_cfg(void)
{
	struct emu_dir_cfg cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.max_frame = 1518;
	cfg.seed = 1;
	return cfg;
}

static void fill(uint8_t *b, uint32_t len, uint64_t idx)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		b[i] = (uint8_t)(idx * 131 + i * 7 + 3);
}

static int frame_ok(const struct emu_pkt *p)
{
	uint8_t ref[2048];

	fill(ref, p->len, p->index);
	return !memcmp(ref, p->data, p->len);
}

static enum emu_verdict enq(struct emu_dir *d, uint64_t now, uint32_t len)
{
	fill(frame, len, d->next_index);
	return emu_dir_enqueue(d, now, frame, len, NULL);
}

/* 8 Mb/s => 1 us per byte: 1000-byte frames take exactly 1 ms. */
static void test_serialization_and_delay(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;
	struct emu_pkt *p;

	cfg.rate_bps = 8000000;
	cfg.delay_ns = 5 * MS;
	CHECK(!emu_dir_init(&d, &cfg), "init");

	CHECK(emu_dir_next_release_ns(&d) == EMU_TIME_NEVER, "idle");
	CHECK(enq(&d, 0, 1000) == EMU_QUEUED, "q0");
	CHECK(enq(&d, 0, 1000) == EMU_QUEUED, "q1");
	CHECK(enq(&d, 0, 1000) == EMU_QUEUED, "q2");
	CHECK(d.c.backlog_pkts == 3 && d.c.backlog_bytes == 3000,
	      "backlog %lu/%lu", (unsigned long)d.c.backlog_pkts,
	      (unsigned long)d.c.backlog_bytes);
	CHECK(emu_dir_next_release_ns(&d) == 6 * MS, "next %lu",
	      (unsigned long)emu_dir_next_release_ns(&d));

	emu_dir_advance(&d, 1 * MS);
	CHECK(d.c.backlog_pkts == 2 && d.c.backlog_bytes == 2000 &&
	      d.c.delay_line_pkts == 1, "after 1 ms");
	emu_dir_advance(&d, 2500 * US);
	CHECK(d.c.backlog_pkts == 1 && d.c.delay_line_pkts == 2,
	      "after 2.5 ms");
	emu_dir_advance(&d, 3 * MS);
	CHECK(d.c.backlog_pkts == 0 && d.c.backlog_bytes == 0 &&
	      d.c.delay_line_pkts == 3, "after 3 ms");

	CHECK(!emu_dir_pop_due(&d, 6 * MS - 1), "nothing before 6 ms");
	p = emu_dir_pop_due(&d, 6 * MS);
	CHECK(p && p->index == 0 && p->departure_ns == 1 * MS &&
	      p->release_ns == 6 * MS && frame_ok(p), "pkt 0");
	CHECK(emu_dir_next_release_ns(&d) == 7 * MS, "next 7 ms");
	p = emu_dir_pop_due(&d, 7500 * US);
	CHECK(p && p->index == 1 && p->release_ns == 7 * MS, "pkt 1");
	CHECK(!emu_dir_pop_due(&d, 7500 * US), "pkt 2 not yet");
	p = emu_dir_pop_due(&d, 8 * MS);
	CHECK(p && p->index == 2 && p->release_ns == 8 * MS, "pkt 2");
	CHECK(d.c.tx_pkts == 3 && d.c.tx_bytes == 3000 &&
	      d.c.delay_line_pkts == 0, "tx counters");

	/* After an idle gap serialization starts at arrival, not earlier. */
	CHECK(enq(&d, 10 * MS, 500) == EMU_QUEUED, "late");
	p = emu_dir_pop_due(&d, 20 * MS);
	CHECK(p && p->arrival_ns == 10 * MS &&
	      p->departure_ns == 10 * MS + 500 * US &&
	      p->release_ns == 15 * MS + 500 * US, "idle restart");
	CHECK(emu_dir_conserved(&d), "invariant");
	emu_dir_destroy(&d);
}

/* As linkemu runs it: the Ethernet header is not charged against the rate. */
static void test_uncharged_l2_header(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;
	struct emu_pkt *p;

	cfg.rate_bps = 8000000;
	cfg.uncharged_bytes = EMU_L2_HEADER_BYTES;
	CHECK(!emu_dir_init(&d, &cfg), "init");
	CHECK(enq(&d, 0, 1000 + EMU_L2_HEADER_BYTES) == EMU_QUEUED, "q0");
	CHECK(enq(&d, 0, 1000 + EMU_L2_HEADER_BYTES) == EMU_QUEUED, "q1");
	p = emu_dir_pop_due(&d, 10 * MS);
	CHECK(p && p->departure_ns == 1 * MS, "1000 IP bytes take 1 ms");
	p = emu_dir_pop_due(&d, 10 * MS);
	CHECK(p && p->departure_ns == 2 * MS, "back to back");
	emu_dir_destroy(&d);
}

/* A rate that does not divide 8e9: departures must not drift. */
static void test_rate_remainder(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;
	struct emu_pkt *p;
	uint64_t k, bad = 0;

	cfg.rate_bps = 3000000;
	cfg.init_slots = 2048;
	CHECK(!emu_dir_init(&d, &cfg), "init");
	for (k = 0; k < 1000; k++)
		enq(&d, 0, 1001);
	for (k = 0; k < 1000; k++) {
		p = emu_dir_pop_due(&d, 10 * SEC);
		if (!p || p->departure_ns !=
		    (k + 1) * 1001ULL * 8000000000ULL / 3000000ULL)
			bad++;
	}
	CHECK(bad == 0, "%lu departures off the exact floor", (unsigned long)bad);
	emu_dir_destroy(&d);
}

static void test_infinite_rate(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;
	struct emu_pkt *p;

	cfg.delay_ns = 2 * MS;
	CHECK(!emu_dir_init(&d, &cfg), "init");
	enq(&d, 5 * MS, 1500);
	enq(&d, 5 * MS, 1500);
	CHECK(d.c.backlog_pkts == 0 && d.c.delay_line_pkts == 2,
	      "no backlog at infinite rate");
	p = emu_dir_pop_due(&d, 7 * MS);
	CHECK(p && p->departure_ns == 5 * MS && p->release_ns == 7 * MS,
	      "release = arrival + delay");
	emu_dir_destroy(&d);
}

static void test_droptail_pkts(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;

	cfg.rate_bps = 8000000;
	cfg.limit_pkts = 3;
	CHECK(!emu_dir_init(&d, &cfg), "init");
	CHECK(enq(&d, 0, 1000) == EMU_QUEUED, "1");
	CHECK(enq(&d, 0, 1000) == EMU_QUEUED, "2");
	CHECK(enq(&d, 0, 1000) == EMU_QUEUED, "3");
	CHECK(enq(&d, 0, 1000) == EMU_DROP_QUEUE, "4 dropped");
	CHECK(enq(&d, 0, 64) == EMU_DROP_QUEUE, "5 dropped");
	CHECK(d.c.queue_drops == 2 && d.c.backlog_pkts == 3, "counts");
	/* The frame being serialized counts until it is done. */
	CHECK(enq(&d, 1 * MS - 1, 64) == EMU_DROP_QUEUE, "still full");
	CHECK(enq(&d, 1 * MS, 64) == EMU_QUEUED, "room after 1 ms");
	CHECK(enq(&d, 1 * MS, 64) == EMU_DROP_QUEUE, "full again");
	CHECK(d.c.rx_pkts == 8 && d.c.queue_drops == 4, "rx/drops");
	CHECK(emu_dir_conserved(&d), "invariant");
	emu_dir_destroy(&d);
}

static void test_droptail_bytes(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;

	cfg.rate_bps = 8000000;
	cfg.limit_bytes = 2500;
	CHECK(!emu_dir_init(&d, &cfg), "init");
	CHECK(enq(&d, 0, 1000) == EMU_QUEUED, "1000");
	CHECK(enq(&d, 0, 1000) == EMU_QUEUED, "2000");
	CHECK(enq(&d, 0, 1000) == EMU_DROP_QUEUE, "3000 > 2500");
	CHECK(enq(&d, 0, 400) == EMU_QUEUED, "2400");
	CHECK(enq(&d, 0, 100) == EMU_QUEUED, "2500 == limit");
	CHECK(enq(&d, 0, 1) == EMU_DROP_QUEUE, "2501");
	CHECK(d.c.backlog_bytes == 2500 && d.c.queue_drops == 2, "bytes");
	/* Both limits together: the tighter one decides. */
	emu_dir_destroy(&d);
	cfg.limit_pkts = 2;
	cfg.limit_bytes = 10000;
	CHECK(!emu_dir_init(&d, &cfg), "init2");
	CHECK(enq(&d, 0, 100) == EMU_QUEUED, "a");
	CHECK(enq(&d, 0, 100) == EMU_QUEUED, "b");
	CHECK(enq(&d, 0, 100) == EMU_DROP_QUEUE, "pkt limit first");
	emu_dir_destroy(&d);
}

/*
 * Random traffic against an independent shadow model: departures, releases,
 * backlog and the counter invariant must match at every step.
 */
struct shadow {
	uint64_t dep, rel;
	uint32_t len;
};

static void test_backlog_accounting(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;
	struct shadow *sh = calloc(20000, sizeof(*sh));
	uint64_t now = 0, last_dep = 0, nsh = 0, shead = 0, k;
	struct prng rng;
	uint64_t mism = 0, inv = 0, popped = 0;

	prng_seed(&rng, 12345, 0, 99);
	cfg.rate_bps = 8000000;		/* 1 us per byte */
	cfg.delay_ns = 3 * MS;
	cfg.limit_pkts = 20;
	cfg.limit_bytes = 16000;
	cfg.init_slots = 8;
	CHECK(!emu_dir_init(&d, &cfg), "init");
	for (k = 0; k < 20000; k++) {
		uint32_t len = 60 + (uint32_t)(prng_next(&rng) % 1400);
		uint64_t bl_pkts = 0, bl_bytes = 0, i;
		enum emu_verdict v;
		struct emu_pkt *p;

		now += (uint64_t)(prng_next(&rng) % 1500) * US / 2;
		/* Shadow: backlog = accepted, departure > now. */
		for (i = shead; i < nsh; i++)
			if (sh[i].dep > now) {
				bl_pkts++;
				bl_bytes += sh[i].len;
			}
		v = enq(&d, now, len);
		if (bl_pkts + 1 > 20 || bl_bytes + len > 16000) {
			if (v != EMU_DROP_QUEUE)
				mism++;
		} else {
			uint64_t start = last_dep > now ? last_dep : now;

			if (v != EMU_QUEUED)
				mism++;
			sh[nsh].len = len;
			sh[nsh].dep = last_dep = start + len * US;
			sh[nsh].rel = sh[nsh].dep + 3 * MS;
			nsh++;
			bl_pkts++;
			bl_bytes += len;
		}
		if (d.c.backlog_pkts != bl_pkts || d.c.backlog_bytes != bl_bytes)
			mism++;
		if (!emu_dir_conserved(&d))
			inv++;
		while ((p = emu_dir_pop_due(&d, now))) {
			if (shead >= nsh || p->departure_ns != sh[shead].dep ||
			    p->release_ns != sh[shead].rel ||
			    p->len != sh[shead].len || !frame_ok(p))
				mism++;
			shead++;
			popped++;
		}
		if (d.c.delay_line_pkts + d.c.backlog_pkts != nsh - shead)
			mism++;
	}
	CHECK(mism == 0, "%lu mismatches vs shadow model", (unsigned long)mism);
	CHECK(inv == 0, "%lu invariant violations", (unsigned long)inv);
	CHECK(d.c.queue_drops > 0 && popped > 1000,
	      "exercise both paths: drops %lu popped %lu",
	      (unsigned long)d.c.queue_drops, (unsigned long)popped);
	free(sh);
	emu_dir_destroy(&d);
}

/* Jitter spreads latency but never reorders; and it is seeded. */
static void run_jitter(uint64_t seed, uint64_t delay, uint64_t jitter,
		       uint64_t *rels, int n, int *reorders, int *bounds,
		       int *distinct)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;
	struct emu_pkt *p;
	uint64_t now = 0, prev_rel = 0, expect_idx = 0, prev_lat = 0;
	int got = 0;

	cfg.rate_bps = 100000000;	/* 100 bytes = 8 us */
	cfg.delay_ns = delay;
	cfg.jitter_ns = jitter;
	cfg.seed = seed;
	*reorders = *bounds = *distinct = 0;
	CHECK(!emu_dir_init(&d, &cfg), "init");
	while (got < n) {
		if ((int)d.next_index < n)
			enq(&d, now, 100);
		while ((p = emu_dir_pop_due(&d, now))) {
			uint64_t lo = p->departure_ns +
				      (delay > jitter ? delay - jitter : 0);
			uint64_t hi = p->departure_ns + delay + jitter;
			uint64_t lat = p->release_ns - p->departure_ns;

			if (p->index != expect_idx || p->release_ns < prev_rel)
				(*reorders)++;
			/* Raised only by the no-reorder clamp, never above it. */
			if (p->release_ns < lo ||
			    p->release_ns > (hi > prev_rel ? hi : prev_rel) ||
			    p->release_ns > now)
				(*bounds)++;
			if (lat != prev_lat)
				(*distinct)++;
			prev_lat = lat;
			prev_rel = p->release_ns;
			rels[got++] = p->release_ns;
			expect_idx++;
		}
		now += 10 * US;
	}
	CHECK(emu_dir_conserved(&d), "invariant");
	emu_dir_destroy(&d);
}

static void test_jitter_no_reorder(void)
{
	enum { N = 10000 };
	uint64_t *r1 = calloc(N, 8), *r2 = calloc(N, 8), *r3 = calloc(N, 8);
	int reo, bnd, dis;

	run_jitter(7, 1 * MS, 800 * US, r1, N, &reo, &bnd, &dis);
	CHECK(reo == 0, "%d reorders", reo);
	CHECK(bnd == 0, "%d out of bounds", bnd);
	CHECK(dis > N / 4, "latency barely varies (%d changes)", dis);

	run_jitter(7, 1 * MS, 800 * US, r2, N, &reo, &bnd, &dis);
	CHECK(!memcmp(r1, r2, N * 8), "same seed, same releases");
	run_jitter(8, 1 * MS, 800 * US, r3, N, &reo, &bnd, &dis);
	CHECK(memcmp(r1, r3, N * 8), "other seed, other releases");

	/* Jitter larger than the delay: clamped at zero latency. */
	run_jitter(7, 100 * US, 1 * MS, r1, N, &reo, &bnd, &dis);
	CHECK(reo == 0 && bnd == 0, "clamp: %d reorders %d bounds", reo, bnd);
	free(r1);
	free(r2);
	free(r3);
}

static void test_ring_growth(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;
	struct emu_pkt *p;
	uint64_t k, bad = 0;

	cfg.init_slots = 4;
	cfg.delay_ns = 1 * SEC;
	CHECK(!emu_dir_init(&d, &cfg), "init");
	CHECK(d.cap == 4, "initial cap %zu", d.cap);
	for (k = 0; k < 5000; k++)
		if (enq(&d, k * US, 64 + (uint32_t)(k % 1400)) != EMU_QUEUED)
			bad++;
	CHECK(bad == 0, "%lu refused", (unsigned long)bad);
	CHECK(d.cap >= 5000, "cap %zu", d.cap);
	CHECK(!emu_dir_pop_due(&d, 1 * SEC - 1), "delay still holds");
	for (k = 0; k < 5000; k++) {
		p = emu_dir_pop_due(&d, 2 * SEC);
		if (!p || p->index != k || p->len != 64 + k % 1400 ||
		    !frame_ok(p))
			bad++;
	}
	CHECK(bad == 0, "%lu corrupted or out of order", (unsigned long)bad);
	CHECK(!emu_dir_pop_due(&d, 3 * SEC), "empty");
	emu_dir_destroy(&d);
}

/* Grow while the ring has wrapped (head in the middle of the array). */
static void test_ring_growth_wrapped(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;
	struct emu_pkt *p;
	uint64_t k, expect = 0, bad = 0, now = 0;

	cfg.init_slots = 8;
	cfg.delay_ns = 100 * US;
	CHECK(!emu_dir_init(&d, &cfg), "init");
	for (k = 0; k < 6; k++)
		enq(&d, now, 100 + (uint32_t)k);
	now = 200 * US;
	for (k = 0; k < 5; k++) {
		p = emu_dir_pop_due(&d, now);
		if (!p || p->index != expect++ || !frame_ok(p))
			bad++;
	}
	for (k = 0; k < 50; k++)	/* wraps, then doubles twice */
		enq(&d, now, 200 + (uint32_t)k);
	CHECK(d.cap >= 51, "cap %zu", d.cap);
	while ((p = emu_dir_pop_due(&d, 1 * SEC))) {
		if (p->index != expect++ || !frame_ok(p))
			bad++;
	}
	CHECK(expect == 56 && bad == 0, "expect %lu bad %lu",
	      (unsigned long)expect, (unsigned long)bad);
	emu_dir_destroy(&d);
}

static void test_ring_memory_cap(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;
	int k, queued = 0;

	cfg.init_slots = 4;
	cfg.max_slots = 8;
	cfg.delay_ns = 1 * SEC;
	CHECK(!emu_dir_init(&d, &cfg), "init");
	for (k = 0; k < 10; k++)
		queued += enq(&d, 0, 100) == EMU_QUEUED;
	CHECK(queued == 8 && d.c.queue_drops == 2, "queued %d drops %lu",
	      queued, (unsigned long)d.c.queue_drops);
	CHECK(emu_dir_conserved(&d), "invariant");
	emu_dir_destroy(&d);
}

static void test_invalid_frames(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;
	uint64_t idx = 99;

	CHECK(!emu_dir_init(&d, &cfg), "init");
	CHECK(emu_dir_enqueue(&d, 0, frame, 0, &idx) == EMU_DROP_INVALID,
	      "empty");
	CHECK(emu_dir_enqueue(&d, 0, frame, 1519, &idx) == EMU_DROP_INVALID,
	      "oversize");
	CHECK(idx == 99 && d.c.rx_pkts == 0 && d.next_index == 0,
	      "not indexed, not counted");
	CHECK(emu_dir_enqueue(&d, 0, frame, 1518, &idx) == EMU_QUEUED &&
	      idx == 0, "max_frame fits");
	emu_dir_destroy(&d);
}

static void test_loss_in_core(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct loss_model lm;
	struct emu_dir d;
	char err[128];
	uint64_t idx, k;
	enum emu_verdict v;
	int bad = 0;

	CHECK(!loss_parse(&lm, "every_nth:3", err, sizeof(err)), "parse");
	cfg.loss = &lm;
	cfg.rate_bps = 8000000;
	cfg.limit_pkts = 2;
	CHECK(!emu_dir_init(&d, &cfg), "init");
	/* Loss is decided for every index, before (and beside) drop-tail. */
	for (k = 0; k < 9; k++) {
		fill(frame, 1000, k);
		v = emu_dir_enqueue(&d, 0, frame, 1000, &idx);
		if (idx != k)
			bad++;
		if ((k + 1) % 3 == 0 ? v != EMU_DROP_LOSS :
		    (k < 2 ? v != EMU_QUEUED : v != EMU_DROP_QUEUE))
			bad++;
	}
	CHECK(!bad, "%d wrong verdicts", bad);
	CHECK(d.c.rx_pkts == 9 && d.c.loss_drops == 3 &&
	      d.c.queue_drops == 4 && d.c.backlog_pkts == 2, "counters");
	CHECK(emu_dir_conserved(&d), "invariant");
	emu_dir_destroy(&d);
}

static void test_clock_clamp_and_batches(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_pkt *out[4];
	struct emu_dir d;
	size_t n;
	int k;

	CHECK(!emu_dir_init(&d, &cfg), "init");
	enq(&d, 5 * MS, 100);
	enq(&d, 3 * MS, 100);	/* clock went "back": clamped to 5 ms */
	CHECK(d.ring[1].arrival_ns == 5 * MS, "clamped arrival");
	for (k = 0; k < 8; k++)
		enq(&d, 6 * MS, 100);
	n = emu_dir_peek_due(&d, 6 * MS, out, 4);
	CHECK(n == 4 && out[0]->index == 0 && out[3]->index == 3, "peek 4");
	emu_dir_consume(&d, 2);
	emu_dir_discard(&d, 1);
	n = emu_dir_peek_due(&d, 6 * MS, out, 4);
	CHECK(n == 4 && out[0]->index == 3, "resume at 3");
	CHECK(d.c.tx_pkts == 2 && d.c.tx_errors == 1 &&
	      d.c.delay_line_pkts == 7, "tx/err counters");
	CHECK(emu_dir_conserved(&d), "invariant");
	emu_dir_destroy(&d);
}

/*
 * A toy request-grant MAC: departures are deferred and handed out at grant
 * times (every 1 ms, at most 2 frames per grant).  Shows that a policy can
 * own the departure decision entirely through the ops interface.
 */
struct toy_mac {
	uint64_t next_grant;
	int destroyed;
};

static uint64_t toy_enqueue(void *ctx, const struct emu_pkt *p, uint64_t now)
{
	(void)ctx;
	(void)p;
	(void)now;
	return EMU_TIME_NEVER;
}

static void toy_advance(void *ctx, struct emu_dir *d, uint64_t now)
{
	struct toy_mac *m = ctx;

	while (m->next_grant <= now) {
		int i;

		for (i = 0; i < 2 && emu_dir_first_unassigned(d); i++)
			emu_dir_assign_departure(d, m->next_grant);
		m->next_grant += 1 * MS;
	}
}

static uint64_t toy_next(void *ctx, const struct emu_dir *d)
{
	const struct toy_mac *m = ctx;

	return emu_dir_unassigned(d) ? m->next_grant : EMU_TIME_NEVER;
}

static void toy_destroy(void *ctx)
{
	((struct toy_mac *)ctx)->destroyed = 1;
}

static const struct emu_departure_ops toy_ops = {
	.name = "toy-mac",
	.enqueue = toy_enqueue,
	.advance = toy_advance,
	.next_event_ns = toy_next,
	.destroy = toy_destroy,
};

static void test_departure_policy(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct toy_mac mac = { .next_grant = 1 * MS };
	struct emu_dir d;
	struct emu_pkt *p;

	cfg.policy = &toy_ops;
	cfg.policy_ctx = &mac;
	cfg.delay_ns = 500 * US;
	cfg.limit_pkts = 4;
	CHECK(!emu_dir_init(&d, &cfg), "init");
	enq(&d, 100 * US, 100);
	enq(&d, 100 * US, 100);
	enq(&d, 100 * US, 100);
	CHECK(d.c.backlog_pkts == 3, "undecided frames are backlog");
	CHECK(emu_dir_next_release_ns(&d) == 1 * MS, "wake for the grant");
	CHECK(!emu_dir_pop_due(&d, 999 * US), "nothing before the grant");
	emu_dir_advance(&d, 1 * MS);
	CHECK(d.c.backlog_pkts == 1 && d.c.delay_line_pkts == 2, "2 granted");
	CHECK(emu_dir_next_release_ns(&d) == 1500 * US, "head release");
	p = emu_dir_pop_due(&d, 1500 * US);
	CHECK(p && p->index == 0 && p->departure_ns == 1 * MS, "first");
	p = emu_dir_pop_due(&d, 1500 * US);
	CHECK(p && p->index == 1, "second");
	CHECK(emu_dir_next_release_ns(&d) == 2 * MS, "next grant");
	p = emu_dir_pop_due(&d, 2500 * US);
	CHECK(p && p->index == 2 && p->departure_ns == 2 * MS &&
	      p->release_ns == 2500 * US, "third via second grant");
	CHECK(emu_dir_next_release_ns(&d) == EMU_TIME_NEVER, "idle");
	CHECK(emu_dir_conserved(&d), "invariant");
	emu_dir_destroy(&d);
	CHECK(mac.destroyed, "policy destroyed with the direction");
}

/*
 * A frame read late (its kernel stamp predates the core's clock) meets the
 * buffer as it stood when it arrived: the I/O loop defers reads, and packets
 * whose serialization ended in between must still count against the limit.
 */
static bool enq_stamped(struct emu_dir *d, uint64_t stamp, uint32_t len)
{
	struct gso_vnet_hdr vh = { 0 };
	struct gso_layout lay;

	fill(frame, len, d->next_index);
	gso_parse(&lay, &vh, frame, len);
	return emu_dir_enqueue_frame(d, stamp, &lay, frame, NULL, NULL) == 1;
}

static void test_late_read_droptail(void)
{
	struct emu_dir_cfg cfg = base_cfg();
	struct emu_dir d;

	cfg.rate_bps = 8000000;		/* 1000 bytes = 1 ms */
	cfg.delay_ns = 10 * MS;
	cfg.limit_pkts = 3;
	CHECK(!emu_dir_init(&d, &cfg), "init");
	CHECK(enq(&d, 0, 1000) == EMU_QUEUED, "q0");
	CHECK(enq(&d, 0, 1000) == EMU_QUEUED, "q1");
	CHECK(enq(&d, 0, 1000) == EMU_QUEUED, "q2");
	emu_dir_advance(&d, 2500 * US);	/* two have left the buffer by now */
	CHECK(d.c.backlog_pkts == 1, "backlog now %lu",
	      (unsigned long)d.c.backlog_pkts);
	/* Stamped at 0.5 ms, when all three still waited: the buffer was full. */
	CHECK(!enq_stamped(&d, 500 * US, 1000), "late frame dropped");
	/* Stamped at 2.2 ms: one waited, so there was room. */
	CHECK(enq_stamped(&d, 2200 * US, 1000), "late frame queued");
	CHECK(d.c.queue_drops == 1, "one drop-tail");
	CHECK(emu_dir_conserved(&d), "invariant");
	emu_dir_destroy(&d);
}

int main(void)
{
	RUN(test_serialization_and_delay);
	RUN(test_rate_remainder);
	RUN(test_uncharged_l2_header);
	RUN(test_infinite_rate);
	RUN(test_droptail_pkts);
	RUN(test_droptail_bytes);
	RUN(test_backlog_accounting);
	RUN(test_jitter_no_reorder);
	RUN(test_ring_growth);
	RUN(test_ring_growth_wrapped);
	RUN(test_ring_memory_cap);
	RUN(test_invalid_frames);
	RUN(test_loss_in_core);
	RUN(test_clock_clamp_and_batches);
	RUN(test_departure_policy);
	RUN(test_late_read_droptail);
	CHECK_DONE();
}
