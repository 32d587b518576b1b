/*
 * test_acct.c - the per-frame delay accounting (acct.c): each frame's time in
 * the link split into serialization, queueing, propagation, the model's extra
 * latency and the emulator's lateness, with a fake clock.  The parts must add
 * up to the frame's whole time in the link, exactly, and a lateness injected
 * with a known value must come out as lateness, not as queue.
 */
#include <stdbool.h>
#include <string.h>

#include "../acct.h"
#include "../sched.h"
#include "check.h"

#define US 1000ULL
#define MS 1000000ULL

static uint8_t frame[2048];

/* 8 Mb/s: 1 us per byte, so a 1000-byte frame serializes in exactly 1 ms. */
#define RATE_1US_PER_BYTE	8000000ULL

static struct emu_dir_cfg cfg_rate_delay(uint64_t delay_ns, uint64_t jitter_ns)
{
	struct emu_dir_cfg cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.max_frame = 1518;
	cfg.seed = 7;
	cfg.rate_bps = RATE_1US_PER_BYTE;
	cfg.delay_ns = delay_ns;
	cfg.jitter_ns = jitter_ns;
	return cfg;
}

/* Send every due frame at its release + late_ns; account each; how many. */
static int drain(struct emu_dir *d, struct emu_acct *a, uint64_t until,
		 uint64_t late_ns, int64_t *identity_err)
{
	struct emu_pkt *p;
	int n = 0;

	while ((p = emu_dir_pop_due(d, until))) {
		uint64_t sent = p->release_ns + late_ns;
		uint64_t ser = emu_acct_seg_ser_ns(p, RATE_1US_PER_BYTE, 0);
		uint64_t before_q = a->queue_sum_ns, before_s = a->ser_sum_ns,
			 before_l = a->late_sum_ns;
		int64_t before_x = a->extra_sum_ns;
		uint64_t delay = emu_dir_delay_at(d, p->departure_ns);

		emu_acct_frame(a, p, sent, delay, ser);
		/* ser + queue + delay + extra + late == sent - arrival */
		*identity_err += (int64_t)(a->ser_sum_ns - before_s) +
				 (int64_t)(a->queue_sum_ns - before_q) +
				 (int64_t)delay + (a->extra_sum_ns - before_x) +
				 (int64_t)(a->late_sum_ns - before_l) -
				 (int64_t)(sent - p->arrival_ns);
		n++;
	}
	return n;
}

/*
 * Three 1000-byte frames arriving together on an idle 8 Mb/s link with 5 ms
 * of delay: they leave the queue at 1, 2 and 3 ms, so they wait 0, 1 and 2 ms
 * behind each other (mean 1 ms) and each serializes in 1 ms; sent 100 us
 * after release, the lateness is 100 us each and nothing else.
 */
static void test_queue_and_lateness_split(void)
{
	struct emu_dir_cfg cfg = cfg_rate_delay(5 * MS, 0);
	struct emu_acct a;
	struct emu_dir d;
	int64_t err = 0;
	int i;

	memset(&a, 0, sizeof(a));
	CHECK(!emu_dir_init(&d, &cfg), "init");
	for (i = 0; i < 3; i++)
		CHECK(emu_dir_enqueue(&d, 0, frame, 1000, NULL) == EMU_QUEUED, "q%d", i);
	CHECK(drain(&d, &a, 20 * MS, 100 * US, &err) == 3, "three sent");
	CHECK(a.frames == 3, "frames %lu", (unsigned long)a.frames);
	CHECK(a.ser_sum_ns == 3 * MS, "ser %lu", (unsigned long)a.ser_sum_ns);
	CHECK(a.queue_sum_ns == 3 * MS, "queue sum %lu (0 + 1 + 2 ms)",
	      (unsigned long)a.queue_sum_ns);
	CHECK(a.queue_max_ns == 2 * MS, "queue max %lu", (unsigned long)a.queue_max_ns);
	CHECK(a.extra_sum_ns == 0, "extra %ld", (long)a.extra_sum_ns);
	CHECK(a.late_sum_ns == 300 * US, "late %lu", (unsigned long)a.late_sum_ns);
	CHECK(err == 0, "parts add up to the time in the link (err %ld ns)", (long)err);
	emu_dir_destroy(&d);
}

/*
 * Jitter is the model's, not the emulator's: it lands in `extra` (signed, mean
 * near 0 but held >= the previous release so nothing reorders), never in the
 * lateness, and the parts still add up frame by frame.
 */
static void test_jitter_is_extra_not_late(void)
{
	struct emu_dir_cfg cfg = cfg_rate_delay(5 * MS, 2 * MS);
	struct emu_acct a;
	struct emu_dir d;
	int64_t err = 0;
	uint64_t t;
	int sent = 0;

	memset(&a, 0, sizeof(a));
	CHECK(!emu_dir_init(&d, &cfg), "init");
	for (t = 0; t < 400 * MS; t += 2 * MS) {	/* one frame every 2 ms: no queue */
		CHECK(emu_dir_enqueue(&d, t, frame, 1000, NULL) == EMU_QUEUED, "q at %lu",
		      (unsigned long)t);
		sent += drain(&d, &a, t, 0, &err);
	}
	sent += drain(&d, &a, 500 * MS, 0, &err);
	CHECK(sent == 200, "sent %d", sent);
	CHECK(a.queue_sum_ns == 0, "no queue: %lu", (unsigned long)a.queue_sum_ns);
	CHECK(a.late_sum_ns == 0, "no lateness: %lu", (unsigned long)a.late_sum_ns);
	CHECK(a.extra_sum_ns != 0, "jitter shows as the model's extra latency");
	/* |mean| below the jitter amplitude: U[-2, +2] ms, clamped up for FIFO */
	CHECK(a.extra_sum_ns / (int64_t)a.frames > -2 * (int64_t)MS &&
	      a.extra_sum_ns / (int64_t)a.frames < 2 * (int64_t)MS, "extra mean %ld",
	      (long)(a.extra_sum_ns / (int64_t)a.frames));
	CHECK(err == 0, "parts add up (err %ld ns)", (long)err);
	emu_dir_destroy(&d);
}

/*
 * A run of 10 segments kept in one frame (a TSO burst from a host) leaves when
 * its last segment is serialized: one segment's serialization, and nine
 * segments' worth of queue -- what the burst's last packet waits on a real
 * link, and the one its ACK times.
 */
static void test_run_waits_for_its_own_segments(void)
{
	struct emu_acct a;
	struct emu_pkt p;
	uint64_t ser;

	memset(&a, 0, sizeof(a));
	memset(&p, 0, sizeof(p));
	p.segs = 10;
	p.wire_len = 10 * 1000;
	p.arrival_ns = 50 * MS;
	p.departure_ns = p.arrival_ns + 10 * MS;	/* 10 x 1 ms at 8 Mb/s */
	p.release_ns = p.departure_ns + 5 * MS;
	ser = emu_acct_seg_ser_ns(&p, RATE_1US_PER_BYTE, 0);
	CHECK(ser == 1 * MS, "one segment's serialization %lu", (unsigned long)ser);
	CHECK(emu_acct_frame(&a, &p, p.release_ns, 5 * MS, ser) == 9 * MS, "queue 9 ms");
	CHECK(a.ser_sum_ns == 1 * MS && a.late_sum_ns == 0 && a.extra_sum_ns == 0,
	      "ser %lu late %lu extra %ld", (unsigned long)a.ser_sum_ns,
	      (unsigned long)a.late_sum_ns, (long)a.extra_sum_ns);
}

/*
 * Pipelining may let a run leave sooner after its arrival than one segment's
 * serialization (its segments were spaced upstream): the time it spent is
 * then all serialization, no queue, and nothing wraps below zero.  A send
 * before the release (a clock clamped by the core) counts no lateness.
 */
static void test_short_sojourn_and_clamps(void)
{
	struct emu_acct a;
	struct emu_pkt p;

	memset(&a, 0, sizeof(a));
	memset(&p, 0, sizeof(p));
	p.segs = 4;
	p.wire_len = 4 * 1000;
	p.arrival_ns = 10 * MS;
	p.departure_ns = p.arrival_ns + 400 * US;
	p.release_ns = p.departure_ns + 2 * MS;
	CHECK(emu_acct_frame(&a, &p, p.release_ns - 5 * US, 2 * MS, 1 * MS) == 0, "no queue");
	CHECK(a.ser_sum_ns == 400 * US, "ser capped at the sojourn: %lu",
	      (unsigned long)a.ser_sum_ns);
	CHECK(a.late_sum_ns == 0, "no negative lateness: %lu", (unsigned long)a.late_sum_ns);
	CHECK(emu_acct_seg_ser_ns(&p, 0, 0) == 0, "no rate: no serialization");
}

/* The L2 header fastlab does not charge is left out of each segment. */
static void test_uncharged_header(void)
{
	struct emu_pkt p;

	memset(&p, 0, sizeof(p));
	p.segs = 2;
	p.wire_len = 2 * (1000 + EMU_L2_HEADER_BYTES);
	CHECK(emu_acct_seg_ser_ns(&p, RATE_1US_PER_BYTE, EMU_L2_HEADER_BYTES) == 1 * MS,
	      "1000 charged bytes: %lu",
	      (unsigned long)emu_acct_seg_ser_ns(&p, RATE_1US_PER_BYTE, EMU_L2_HEADER_BYTES));
}

int main(void)
{
	RUN(test_queue_and_lateness_split);
	RUN(test_jitter_is_extra_not_late);
	RUN(test_run_waits_for_its_own_segments);
	RUN(test_short_sojourn_and_clamps);
	RUN(test_uncharged_header);
	CHECK_DONE();
}
