/*
 * test_trace.c - mahimahi delivery traces (policy_trace.c) in the scheduler
 * core, with a fake clock: short traces written here in mahimahi's format
 * drive a saturated queue at exactly their rate per period, a line at 0
 * meets the previous period's last line, the trace repeats, bytes carry
 * across opportunities and an unused rest is lost (mm-link's
 * LinkQueue::rationalize), RED and PIE run on a trace link and CoDel is
 * refused, the counter invariant holds, and bad traces are refused naming
 * the file and line.  Each expected value is worked out beside its check.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../loss.h"
#include "../policy_trace.h"
#include "../sched.h"
#include "check.h"

#define US 1000ULL
#define MS 1000000ULL
#define SEC 1000000000ULL
#define L2 EMU_L2_HEADER_BYTES
/* A 1500-byte IP packet: 1500 + 4 (mahimahi's TUN header) = one opportunity. */
#define FULL (1500 + L2)

static uint8_t frame[2048];

/* 12 opportunities in a 10-ms period: 14.4 Mb/s of 1500-byte packets. */
static const char trace_12[] = "1\n2\n2\n3\n4\n5\n5\n6\n7\n8\n9\n10\n";
/* Bursts: six at 0, one at 7, one at 10 (no final newline, as some files). */
static const char trace_burst[] = "0\n0\n0\n0\n0\n0\n7\n10";
/* One opportunity a millisecond. */
static const char trace_1ms[] = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";

static int setup(struct emu_dir *d, struct emu_trace *t, const char *text,
		 struct emu_dir_cfg *cfg_in)
{
	struct emu_dir_cfg cfg;
	char err[256] = "";

	if (cfg_in) {
		cfg = *cfg_in;
	} else {
		memset(&cfg, 0, sizeof(cfg));
		cfg.seed = 1;
	}
	cfg.max_frame = 1518;
	cfg.uncharged_bytes = L2;
	if (emu_trace_parse(t, text, strlen(text), "t", err, sizeof(err))) {
		printf("  %s\n", err);
		return -1;
	}
	emu_trace_start(t, 0, L2);
	cfg.policy = &emu_trace_policy_ops;
	cfg.policy_ctx = t;
	return emu_dir_init(d, &cfg);
}

static void teardown(struct emu_dir *d, struct emu_trace *t)
{
	emu_dir_destroy(d);
	emu_trace_free(t);
}

static enum emu_verdict enq(struct emu_dir *d, uint64_t now, uint32_t len)
{
	memset(frame, (int)(d->next_index & 0xff), len);
	return emu_dir_enqueue(d, now, frame, len, NULL);
}

/*
 * trace_12, 1200 full packets queued at 0: packet j leaves at opportunity
 * j, T(j) = (j / 12) * 10 ms + line[j % 12] ms.  Each period (10c, 10c + 10]
 * ms holds period c's 12 lines (1..10 ms after its start): 12 packets, 100
 * periods in the first second, 1200 packets = 1200 * 1500 * 8 = 14.4 Mb/s,
 * exactly the trace's rate (12 opportunities / 10 ms), in every period.
 * The trace repeats: the capacity it delivered by 1 s is 1200 opportunities
 * (period 100 starts with its line 1 at 1001 ms).
 */
static void test_saturated_queue_follows_the_trace(void)
{
	static const uint32_t line[12] = { 1, 2, 2, 3, 4, 5, 5, 6, 7, 8, 9, 10 };
	struct emu_dir d;
	struct emu_trace t;
	struct emu_pkt *p;
	uint64_t per_period[100], j, bad = 0, inv = 0, off = 0;

	memset(per_period, 0, sizeof(per_period));
	CHECK(!setup(&d, &t, trace_12, NULL), "init");
	CHECK(t.n == 12 && t.period_ns == 10 * MS, "12 lines, 10 ms");
	CHECK(emu_trace_mean_rate_bps(&t) == 14438400,
	      "12 * 1504 * 8 bits / 10 ms = 14438400 b/s, got %lu",
	      (unsigned long)emu_trace_mean_rate_bps(&t));
	for (j = 0; j < 1200; j++)
		CHECK(enq(&d, 0, FULL) == EMU_QUEUED, "queued");
	for (j = 0; j < 1200; j++) {
		uint64_t want = (j / 12) * 10 * MS + line[j % 12] * MS;

		p = emu_dir_pop_due(&d, 10 * SEC);
		if (!p || p->departure_ns != want)
			bad++;
		else
			per_period[(p->departure_ns - 1) / (10 * MS)]++;
		if (!emu_dir_conserved(&d))
			inv++;
	}
	CHECK(bad == 0, "%lu departures off the trace", (unsigned long)bad);
	CHECK(inv == 0, "%lu invariant violations", (unsigned long)inv);
	for (j = 0; j < 100; j++)
		off += per_period[j] != 12;
	CHECK(off == 0, "%lu periods without exactly 12 packets", (unsigned long)off);
	CHECK(emu_trace_first_after(&t, 1 * SEC) == 1200, "1200 opportunities by 1 s, got %lu",
	      (unsigned long)emu_trace_first_after(&t, 1 * SEC));
	CHECK(emu_trace_first_after(&t, 1 * SEC + 1 * MS) == 1201, "then line 1 at 1001 ms");
	teardown(&d, &t);
}

/*
 * trace_burst, saturated from 0: the six opportunities at 0 come at the
 * arrival, not after it, so they are lost (mahimahi too: it spends the
 * opportunities due before it queues an arrival); then 7 and 10 ms; period
 * 1's six lines at 0 are at 10 ms too, then 17, 20 (x 7), ... So packet 0
 * leaves at 7 ms, 1..7 at 10, 8 at 17, 9..15 at 20: 8 packets per period
 * (10c, 10c + 10], the trace's 8 opportunities per 10 ms.
 */
static void test_bursts_and_the_period_boundary(void)
{
	struct emu_dir d;
	struct emu_trace t;
	struct emu_pkt *p;
	uint64_t j, bad = 0;

	CHECK(!setup(&d, &t, trace_burst, NULL), "init");
	CHECK(t.n == 8 && t.period_ns == 10 * MS, "8 lines, 10 ms");
	for (j = 0; j < 800; j++)
		enq(&d, 0, FULL);
	for (j = 0; j < 800; j++) {
		uint64_t c = j / 8, r = j % 8;
		uint64_t want = c * 10 * MS + (r == 0 ? 7 * MS : 10 * MS);

		p = emu_dir_pop_due(&d, 10 * SEC);
		if (!p || p->departure_ns != want)
			bad++;
	}
	CHECK(bad == 0, "%lu departures off the bursts", (unsigned long)bad);
	teardown(&d, &t);
}

/*
 * Bytes, not packets (mm-link's packet in transit): 1000-byte IP packets
 * cost 1004 of an opportunity's 1504.  Six at 0 under one opportunity per
 * ms: p0 1004 of ms 1 (500 left); p1 500 + 504 of ms 2 (1000 left); p2
 * 1000 + 4 of ms 3 (1500 left); p3 1004 of ms 3 (496 left); p4 496 + 508
 * of ms 4 (996 left); p5 996 + 8 of ms 5: departures 1, 2, 3, 3, 4, 5 ms.
 */
static void test_bytes_span_opportunities(void)
{
	const uint64_t want[] = { 1 * MS, 2 * MS, 3 * MS, 3 * MS, 4 * MS, 5 * MS };
	struct emu_dir d;
	struct emu_trace t;
	struct emu_pkt *p;
	int j;

	CHECK(!setup(&d, &t, trace_1ms, NULL), "init");
	for (j = 0; j < 6; j++)
		enq(&d, 0, 1000 + L2);
	for (j = 0; j < 6; j++) {
		p = emu_dir_pop_due(&d, 1 * SEC);
		CHECK(p && p->departure_ns == want[j], "packet %d at %lu", j,
		      p ? (unsigned long)p->departure_ns : 0UL);
	}
	CHECK(t.left == 1496, "1496 bytes of ms 5 left, got %u", t.left);
	teardown(&d, &t);
}

/*
 * Arrivals and the rest of an opportunity.  One opportunity per ms, 1000-byte
 * packets: p0 at 0 leaves at 1 ms (500 left).  p1 arrives at 1 ms, with the
 * opportunity, not before it: ms 2 (500 left).  p2 arrives at 1.5 ms, before
 * ms 2: it takes those 500 and 504 of ms 3.  p3 arrives at 10.5 ms: ms 3's
 * rest is long lost; the next opportunity is period 1's line 1, at 11 ms.
 * After an hour of silence the trace is where its period puts it: an arrival
 * at 3600 s + 0.5 ms leaves at 3600 s + 1 ms (3600 s is a whole number of
 * periods).
 */
static void test_arrivals_and_lost_rests(void)
{
	struct emu_dir d;
	struct emu_trace t;
	struct emu_pkt *p;

	CHECK(!setup(&d, &t, trace_1ms, NULL), "init");
	enq(&d, 0, 1000 + L2);
	enq(&d, 1 * MS, 1000 + L2);
	enq(&d, 1500 * US, 1000 + L2);
	enq(&d, 10500 * US, 1000 + L2);
	enq(&d, 3600 * SEC + 500 * US, 1000 + L2);
	p = emu_dir_pop_due(&d, 7200 * SEC);
	CHECK(p && p->departure_ns == 1 * MS, "p0 at 1 ms");
	p = emu_dir_pop_due(&d, 7200 * SEC);
	CHECK(p && p->departure_ns == 2 * MS, "p1 at 2 ms");
	p = emu_dir_pop_due(&d, 7200 * SEC);
	CHECK(p && p->departure_ns == 3 * MS, "p2 at 3 ms");
	p = emu_dir_pop_due(&d, 7200 * SEC);
	CHECK(p && p->departure_ns == 11 * MS, "p3 at 11 ms");
	p = emu_dir_pop_due(&d, 7200 * SEC);
	CHECK(p && p->departure_ns == 3600 * SEC + 1 * MS, "after an hour: %lu",
	      p ? (unsigned long)p->departure_ns : 0UL);
	teardown(&d, &t);
}

/*
 * The epoch (linkemu: SIGUSR1) starts the trace again at its first line.
 * trace_1ms from 0: three full packets at 0.5 ms leave at 1, 2 and 3 ms.
 * Epoch at 2.5 ms: the opportunities are now at 3.5, 4.5, ... ms (period
 * 10 ms: ..., 12.5, 13.5, ...).  The next packet, at 2.5 ms, must not leave
 * before the last queued one (3 ms): the first opportunity after it, 3.5
 * ms; the one after, 4.5 ms.  A packet at 20 ms on the idle link: 20.5 ms
 * (21 ms without the epoch).  The capacity since the epoch: 10
 * opportunities by 12.5 ms.
 */
static void test_epoch_restarts_the_trace(void)
{
	struct emu_dir d;
	struct emu_trace t;
	struct emu_pkt *p;
	static const uint64_t want[] = { 1 * MS, 2 * MS, 3 * MS, 3500 * US, 4500 * US,
					 20500 * US };
	size_t k;

	CHECK(!setup(&d, &t, trace_1ms, NULL), "init");
	for (k = 0; k < 3; k++)
		enq(&d, 500 * US, FULL);
	emu_trace_rebase(&t, 2500 * US);
	enq(&d, 2500 * US, FULL);
	enq(&d, 2500 * US, FULL);
	for (k = 0; k < 5; k++) {
		p = emu_dir_pop_due(&d, 15 * MS);
		CHECK(p && p->departure_ns == want[k], "packet %zu at %llu ns, got %llu", k,
		      (unsigned long long)want[k], p ? (unsigned long long)p->departure_ns : 0ULL);
	}
	enq(&d, 20 * MS, FULL);
	p = emu_dir_pop_due(&d, 1 * SEC);
	CHECK(p && p->departure_ns == want[5], "idle, then 20 ms: 20.5 ms");
	CHECK(emu_trace_first_after(&t, 12500 * US) == 10, "10 opportunities since the epoch");
	CHECK(emu_trace_first_after(&t, 2 * MS) == 0, "none before it");
	CHECK(emu_dir_conserved(&d), "invariant");
	teardown(&d, &t);
}

/*
 * The trace's link keeps the core's delay, buffer and loss; RED and PIE
 * run (PIE's delay is the last departure, fixed on arrival); CoDel is
 * refused.  Delay 20 ms with a step to 5 ms at 5 ms (schedule.h): under
 * trace_1ms, full packets at 0 leave at 1, 2, ... ms and arrive at 21, 22,
 * 23, 24, then 25 for the packets departing from 5 ms (5 + 5 = 10 < 24:
 * held to 24 ms, FIFO) up to the one departing at 19 ms (24 ms), and 25 ms
 * for the one departing at 20.  A buffer of 5 packets: of 10 at 0, 5 are
 * queued and 5 dropped.
 */
static void test_buffer_delay_and_aqm(void)
{
	struct emu_dir_cfg cfg;
	struct emu_schedule s;
	struct aqm_cfg ac;
	struct emu_dir d;
	struct emu_trace t;
	struct emu_pkt *p;
	char err[256];
	uint64_t j, bad = 0;

	memset(&cfg, 0, sizeof(cfg));
	cfg.seed = 1;
	cfg.delay_ns = 20 * MS;
	CHECK(!emu_schedule_parse(&s, "5000:delay_us=5000", err, sizeof(err)), "%s", err);
	cfg.schedule = &s;
	CHECK(!setup(&d, &t, trace_1ms, &cfg), "init");
	for (j = 0; j < 20; j++)
		enq(&d, 0, FULL);
	for (j = 0; j < 20; j++) {
		uint64_t dep = (j + 1) * MS;
		uint64_t want = dep < 5 * MS ? dep + 20 * MS : dep < 20 * MS ? 24 * MS :
				dep + 5 * MS;

		p = emu_dir_pop_due(&d, 10 * SEC);
		if (!p || p->departure_ns != dep || p->release_ns != want)
			bad++;
	}
	CHECK(bad == 0, "%lu releases off", (unsigned long)bad);
	teardown(&d, &t);

	cfg.schedule = NULL;
	cfg.limit_pkts = 5;
	CHECK(!setup(&d, &t, trace_1ms, &cfg), "init");
	for (j = 0; j < 10; j++)
		enq(&d, 0, FULL);
	CHECK(d.c.backlog_pkts == 5 && d.c.queue_drops == 5, "5 queued, 5 dropped");
	teardown(&d, &t);

	CHECK(!aqm_parse(&ac, "red:min_th_pkts=2,max_th_pkts=6", err, sizeof(err)), "%s", err);
	cfg.aqm = &ac;
	cfg.limit_pkts = 0;
	CHECK(!setup(&d, &t, trace_1ms, &cfg), "red on a trace link");
	for (j = 0; j < 2000; j++)
		enq(&d, j * 500 * US, FULL);	/* twice what the trace carries */
	CHECK(d.c.aqm_drops > 0 && emu_dir_conserved(&d), "red drops %lu",
	      (unsigned long)d.c.aqm_drops);
	teardown(&d, &t);
	CHECK(!aqm_parse(&ac, "pie", err, sizeof(err)), "%s", err);
	CHECK(!setup(&d, &t, trace_1ms, &cfg), "pie on a trace link");
	for (j = 0; j < 4000; j++)
		enq(&d, j * 500 * US, FULL);
	CHECK(d.c.aqm_drops > 0 && emu_dir_conserved(&d), "pie drops %lu",
	      (unsigned long)d.c.aqm_drops);
	teardown(&d, &t);
	CHECK(!aqm_parse(&ac, "codel", err, sizeof(err)), "%s", err);
	CHECK(setup(&d, &t, trace_1ms, &cfg), "codel refused");
	emu_trace_free(&t);
}

/* Random traffic, sizes, loss and a buffer: the invariant at every step. */
static void test_invariant_under_random_traffic(void)
{
	struct emu_dir_cfg cfg;
	struct loss_model m;
	struct emu_dir d;
	struct emu_trace t;
	struct emu_pkt *p;
	struct prng rng;
	char err[128];
	uint64_t now = 0, k, inv = 0, reo = 0, prev = 0;

	memset(&cfg, 0, sizeof(cfg));
	cfg.seed = 3;
	cfg.limit_bytes = 30000;
	cfg.delay_ns = 5 * MS;
	CHECK(!loss_parse(&m, "bernoulli:0.05", err, sizeof(err)), "%s", err);
	cfg.loss = &m;
	prng_seed(&rng, 777, 0, 99);
	CHECK(!setup(&d, &t, trace_burst, &cfg), "init");
	for (k = 0; k < 20000; k++) {
		now += (prng_next(&rng) % 400) * US;
		enq(&d, now, 60 + (uint32_t)(prng_next(&rng) % 1455));
		while ((p = emu_dir_pop_due(&d, now))) {
			if (p->release_ns < prev)
				reo++;
			prev = p->release_ns;
		}
		if (!emu_dir_conserved(&d))
			inv++;
	}
	CHECK(inv == 0 && reo == 0, "%lu invariant violations, %lu reordered",
	      (unsigned long)inv, (unsigned long)reo);
	CHECK(d.c.queue_drops > 0 && d.c.loss_drops > 0 && d.c.tx_pkts > 1000,
	      "exercised: drops %lu loss %lu tx %lu", (unsigned long)d.c.queue_drops,
	      (unsigned long)d.c.loss_drops, (unsigned long)d.c.tx_pkts);
	teardown(&d, &t);
}

static int refused(const char *text, size_t len, const char *word)
{
	struct emu_trace t;
	char err[256] = "";
	int ok = emu_trace_parse(&t, text, len, "bad.trace", err, sizeof(err)) == -1 &&
		 strstr(err, word) && !strchr(err, '\n') && !t.ms;

	if (!ok)
		printf("  -> '%s' (want '%s')\n", err, word);
	return ok;
}

#define REFUSED(lit, word) refused(lit, sizeof(lit) - 1, word)

static void test_bad_traces(void)
{
	struct emu_trace t;
	char err[256] = "";
	size_t k, big = ((size_t)EMU_TRACE_MAX_LINES + 1) * 2;
	char *many;

	CHECK(!emu_trace_parse(&t, "1\n2", 3, "t", err, sizeof(err)) && t.n == 2,
	      "no final newline: %s", err);
	emu_trace_free(&t);
	CHECK(!emu_trace_parse(&t, "0\n0\n5\n", 6, "t", err, sizeof(err)) &&
	      t.period_ns == 5 * MS, "leading zeros lines: %s", err);
	emu_trace_free(&t);

	CHECK(REFUSED("", "bad.trace: no timestamps"), "empty file");
	CHECK(REFUSED("1\n\n2\n", "bad.trace:2: empty line"), "empty line");
	CHECK(REFUSED("\n", "bad.trace:1: empty line"), "only a newline");
	CHECK(REFUSED("1\n2x\n", "bad.trace:2: '2x' is not a millisecond"), "letters");
	CHECK(REFUSED("1\n1.5\n", "bad.trace:2: '1.5'"), "fraction");
	CHECK(REFUSED("-1\n", "bad.trace:1: '-1'"), "sign");
	CHECK(REFUSED(" 1\n", "bad.trace:1:"), "space");
	CHECK(REFUSED("1\r\n2\n", "bad.trace:1: '1?'"), "CR");
	CHECK(REFUSED("1\0\n", "bad.trace:1: '1?'"), "NUL");
	CHECK(REFUSED("5\n3\n", "bad.trace:2: 3 is below the line before's 5"), "decreasing");
	CHECK(REFUSED("0\n0\n", "bad.trace:2: the last timestamp"), "period 0");
	CHECK(REFUSED("604800001\n", "bad.trace:1: '604800001' is above"), "beyond a week");
	CHECK(REFUSED("99999999999999999999999\n", "bad.trace:1:"), "overflow");
	many = malloc(big);
	CHECK(many != NULL, "memory");
	if (!many)
		return;
	for (k = 0; k < big; k += 2) {
		many[k] = '1';
		many[k + 1] = '\n';
	}
	CHECK(refused(many, big, "bad.trace: more than 8388608 lines"), "too many lines");
	CHECK(!emu_trace_parse(&t, many, big - 2, "t", err, sizeof(err)) &&
	      t.n == EMU_TRACE_MAX_LINES, "the most lines there may be: %s", err);
	emu_trace_free(&t);
	free(many);
}

int main(void)
{
	RUN(test_saturated_queue_follows_the_trace);
	RUN(test_bursts_and_the_period_boundary);
	RUN(test_bytes_span_opportunities);
	RUN(test_arrivals_and_lost_rests);
	RUN(test_epoch_restarts_the_trace);
	RUN(test_buffer_delay_and_aqm);
	RUN(test_invariant_under_random_traffic);
	RUN(test_bad_traces);
	CHECK_DONE();
}
