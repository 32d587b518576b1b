/*
 * schedule.h - time-varying links for linkemu: a per-direction schedule of
 * piecewise-constant rate, one-way delay and Bernoulli loss (not to be
 * confused with sched.h, the scheduler core that runs it).
 *
 * Role: let a lab change a link's capacity (and optionally its delay and
 * loss) during a run -- "10 Mb/s, then 5 from t = 10 s, then 20" -- with
 * the same exactness as a fixed link.  A schedule is a list of steps, each
 * at a time relative to an origin (linkemu: the epoch, its first SIGUSR1,
 * sent as the flows start; until then t0, the instant it set up its links,
 * or with --epoch-on-signal pending: EMU_ORIGIN_PENDING), each setting
 * one or more of:
 *
 *   rate_bps   serialization rate in bit/s, IP bytes as --XX-rate-bps
 *              (0 = unlimited, as there); needs the built-in rate policy
 *   delay_us   one-way propagation delay
 *   loss       Bernoulli loss probability (the direction's loss model must
 *              be none or bernoulli: the draws stay those of loss.h)
 *
 * A value holds from its step until a later step sets the same field;
 * before the first step that sets a field, the direction's own option
 * (--XX-rate-bps, --XX-delay-us, --XX-loss) holds.  The last step holds
 * forever: a schedule does not repeat (a mahimahi trace does:
 * policy_trace.h).
 *
 * Semantics at a change (each chosen so that nothing is approximated):
 *   rate   a packet whose serialization spans a change is serialized at
 *          each rate for its part: the bits sent before the change at the
 *          old rate, the rest at the new one, in integer arithmetic with
 *          the remainder carried as the fixed rate policy carries it, so a
 *          saturated queue delivers each step's rate exactly (to the ns
 *          floor of the exact time).  A GSO run of segments is charged its
 *          bytes the same way: a run that spans a change needs no cut.
 *   delay  a packet gets the delay in force when it departs (enters the
 *          propagation path); releases stay FIFO (sched.c clamps each to
 *          the previous one, as for jitter), so a lower delay after a
 *          higher one bunches packets and never reorders them.
 *   loss   a packet's loss draw is compared with the probability in force
 *          at its arrival; every packet still takes exactly
 *          LOSS_DRAWS_PER_PKT draws, so a seed drops the same indices as
 *          bernoulli:P would wherever the probability is P.
 *
 * Spec string (the CLI's --XX-schedule):
 *   STEP[;STEP...]     at most EMU_SCHEDULE_MAX_STEPS steps
 *   STEP = T:key=value[,key=value...]
 * T in microseconds after the origin, strictly increasing from step to
 * step; keys rate_bps, delay_us (plain unsigned decimals) and loss (a plain
 * decimal in [0, 1]), each at most once per step.  Example:
 *   0:rate_bps=10000000;10000000:rate_bps=5000000,delay_us=30000
 * Anything else is refused, never clamped, with one line naming the step
 * and the field.
 *
 * Pure: no I/O, time passed in, integer arithmetic per packet (the loss
 * probability becomes loss.h's integer threshold when parsed).
 */
#ifndef LINKEMU_SCHEDULE_H
#define LINKEMU_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Enough for a change every second of a 17-minute run; 40 KB per direction. */
#define EMU_SCHEDULE_MAX_STEPS		1024
/* One week: keeps origin + time far from 64-bit ns overflow. */
#define EMU_SCHEDULE_MAX_TIME_US	604800000000ULL
/* As --XX-rate-bps and --XX-delay-us. */
#define EMU_SCHEDULE_MAX_RATE_BPS	1000000000000ULL
#define EMU_SCHEDULE_MAX_DELAY_US	3600000000ULL

#define EMU_SCHEDULE_NS_PER_US		UINT64_C(1000)

/*
 * An origin not yet known (linkemu --epoch-on-signal: the flows have not
 * started): the steps lie ~292 years ahead, so the base values hold, and
 * origin + the latest step time (one week) stays far from 2^64.
 */
#define EMU_ORIGIN_PENDING		(UINT64_MAX / 2)

/* Which fields a step sets (a bit mask). */
#define EMU_STEP_RATE	(1u << 0)
#define EMU_STEP_DELAY	(1u << 1)
#define EMU_STEP_LOSS	(1u << 2)

struct emu_step {
	uint64_t at_ns;		/* parsed: after the origin; resolved: absolute */
	uint64_t rate_bps;	/* 0 = unlimited */
	uint64_t delay_ns;
	uint64_t loss_thr;	/* P * 2^63, as loss.h's thr_loss */
	double loss_p;		/* P as given, for the stats line only */
	unsigned int set;	/* EMU_STEP_* given in this step */
};

/* A parsed spec. */
struct emu_schedule {
	struct emu_step step[EMU_SCHEDULE_MAX_STEPS];
	size_t n;		/* 0 = no schedule */
	unsigned int set;	/* union of the steps' fields */
};

/*
 * Parse a spec into *s.  Returns 0, or -1 with one line in err that names
 * the step and the field.
 */
int emu_schedule_parse(struct emu_schedule *s, const char *spec, char *err,
		       size_t errlen);

/*
 * A schedule as the core runs it: every field resolved in every step, times
 * absolute, and step[0] = the direction's own values from time 0, so the
 * step in force at any time t is the last one with at_ns <= t.
 */
struct emu_timeline {
	struct emu_step *step;
	size_t n;		/* 0 = none (nothing varies) */
	unsigned int set;
	uint64_t min_delay_ns, max_delay_ns;
	uint64_t min_rate_bps;	/* smallest non-zero rate, 0 if none */
	uint64_t max_rate_bps;	/* largest rate (0 = unlimited counts as none) */
	uint64_t origin_ns;	/* what the steps' times count from */
};

/* The direction's own values, in force until a step changes them. */
struct emu_step_base {
	uint64_t rate_bps;
	uint64_t delay_ns;
	uint64_t loss_thr;
	double loss_p;
};

/*
 * Resolve s (may be NULL or empty: an empty timeline) against base with
 * its times after origin_ns.  Returns 0, or -1 when out of memory.
 */
int emu_timeline_init(struct emu_timeline *tl, const struct emu_schedule *s,
		      const struct emu_step_base *base, uint64_t origin_ns);
void emu_timeline_free(struct emu_timeline *tl);

/*
 * Move the origin (the epoch: the flows start now): every step's time is
 * re-counted from origin_ns; step[0], the base values, stays at 0.  Pure
 * bookkeeping: what a caller computed before (a departure) is its own.
 */
void emu_timeline_rebase(struct emu_timeline *tl, uint64_t origin_ns);

/* Index of the step in force at t (0 = the base values); tl->n >= 1. */
size_t emu_timeline_index(const struct emu_timeline *tl, uint64_t t);

static inline const struct emu_step *
emu_timeline_at(const struct emu_timeline *tl, uint64_t t)
{
	return &tl->step[emu_timeline_index(tl, t)];
}

/*
 * End of serializing `units` (1/8e9 byte each: a rate of r bit/s does r
 * units per ns) that start at `start`, each part at the rate in force: the
 * floor of the exact end; *rem = the units still owed at that ns (less than
 * one ns of work at the rate then in force), to be added to a next packet
 * that starts right there.  An unlimited step finishes everything at once.
 */
uint64_t emu_timeline_serialize(const struct emu_timeline *tl, uint64_t start,
				uint64_t units, uint64_t *rem);

#endif /* LINKEMU_SCHEDULE_H */
