/*
 * schedule.c - time-varying links: the spec parser, the resolved timeline
 * and serialization across rate changes (see schedule.h for the model).
 *
 * Why resolve first: the core asks "what is in force at t" once per packet
 * (rate at its serialization, delay at its departure, loss at its arrival);
 * with every field filled in at every step that is one binary search over
 * at most EMU_SCHEDULE_MAX_STEPS + 1 times, and no per-packet inheritance.
 *
 * Why units of 1/8e9 byte: a rate of r bit/s then does exactly r units per
 * ns (policy_tbf.h's token units), so the work a step can do in dt ns is
 * the integer dt * r and nothing is rounded until the final ns floor.
 */
#include "schedule.h"
#include "loss.h"
#include "parse.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest step item. */
#define ITEM_MAX		64

/* ---- errors -------------------------------------------------------------- */

static int __attribute__((format(printf, 5, 6)))
fail(char *err, size_t errlen, const char *spec, size_t step,
     const char *fmt, ...)
{
	char q[SPEC_QUOTE_MAX + 4], prefix[sizeof(q) + 48];
	va_list ap;
	int r;

	emu_quote_spec(q, sizeof(q), spec);
	if (step)
		snprintf(prefix, sizeof(prefix), "invalid schedule '%s': step %zu",
			 q, step);
	else
		snprintf(prefix, sizeof(prefix), "invalid schedule '%s'", q);
	va_start(ap, fmt);
	r = emu_failv(err, errlen, prefix, fmt, ap);
	va_end(ap);
	return r;
}

/* ---- parsing ------------------------------------------------------------- */

/* A plain unsigned decimal of [s, s + n) into *out, at most max. */
static int count_in(const char *s, size_t n, uint64_t max, uint64_t *out)
{
	char buf[24];

	if (!n || n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (emu_parse_count(buf, out) || *out > max)
		return -1;
	return 0;
}

/* One key=value of step k (1-based) into st. */
static int parse_item(struct emu_step *st, const char *spec, size_t k,
		      const char *item, size_t len, char *err, size_t errlen)
{
	const char *eq = memchr(item, '=', len);
	size_t klen = eq ? (size_t)(eq - item) : len;
	const char *val = eq ? eq + 1 : NULL;
	size_t vlen = eq ? len - klen - 1 : 0;
	uint64_t v;

	if (!eq || !klen)
		return fail(err, errlen, spec, k, "expected key=value, got '%.*s'",
			    (int)(len > 40 ? 40 : len), item);
	if (klen == 8 && !memcmp(item, "rate_bps", 8)) {
		if (st->set & EMU_STEP_RATE)
			return fail(err, errlen, spec, k, "key 'rate_bps' given twice");
		if (count_in(val, vlen, EMU_SCHEDULE_MAX_RATE_BPS, &v))
			return fail(err, errlen, spec, k,
				    "rate_bps must be an integer in [0, %llu] (bit/s, 0 = unlimited)",
				    EMU_SCHEDULE_MAX_RATE_BPS);
		st->rate_bps = v;
		st->set |= EMU_STEP_RATE;
		return 0;
	}
	if (klen == 8 && !memcmp(item, "delay_us", 8)) {
		if (st->set & EMU_STEP_DELAY)
			return fail(err, errlen, spec, k, "key 'delay_us' given twice");
		if (count_in(val, vlen, EMU_SCHEDULE_MAX_DELAY_US, &v))
			return fail(err, errlen, spec, k,
				    "delay_us must be an integer in [0, %llu] (microseconds)",
				    EMU_SCHEDULE_MAX_DELAY_US);
		st->delay_ns = v * EMU_SCHEDULE_NS_PER_US;
		st->set |= EMU_STEP_DELAY;
		return 0;
	}
	if (klen == 4 && !memcmp(item, "loss", 4)) {
		struct loss_model m;
		char buf[ITEM_MAX + 16], lerr[160];

		if (st->set & EMU_STEP_LOSS)
			return fail(err, errlen, spec, k, "key 'loss' given twice");
		/* loss.h's own reader of P, so both accept the same numbers */
		snprintf(buf, sizeof(buf), "bernoulli:%.*s", (int)vlen, val);
		if (!vlen || loss_parse(&m, buf, lerr, sizeof(lerr)))
			return fail(err, errlen, spec, k,
				    "loss must be a plain decimal in [0, 1]");
		st->loss_thr = m.thr_loss;
		st->loss_p = m.p;
		st->set |= EMU_STEP_LOSS;
		return 0;
	}
	return fail(err, errlen, spec, k,
		    "unknown key '%.*s' (expected rate_bps, delay_us or loss)",
		    (int)(klen > 40 ? 40 : klen), item);
}

/* Step k (1-based) from [s, s + len): "T:key=value[,key=value...]". */
static int parse_step(struct emu_step *st, const char *spec, size_t k,
		      const char *s, size_t len, char *err, size_t errlen)
{
	const char *colon = memchr(s, ':', len);
	const char *p, *end = s + len;
	uint64_t us;

	memset(st, 0, sizeof(*st));
	if (!len)
		return fail(err, errlen, spec, k, "empty step");
	if (!colon || count_in(s, (size_t)(colon - s), EMU_SCHEDULE_MAX_TIME_US, &us))
		return fail(err, errlen, spec, k,
			    "time must be an integer in [0, %llu] (microseconds) before ':'",
			    EMU_SCHEDULE_MAX_TIME_US);
	st->at_ns = us * EMU_SCHEDULE_NS_PER_US;
	if (colon + 1 == end)
		return fail(err, errlen, spec, k, "expected key=value after ':'");
	for (p = colon + 1; p <= end;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		size_t n = comma ? (size_t)(comma - p) : (size_t)(end - p);

		if (!n)
			return fail(err, errlen, spec, k, "empty key=value item");
		if (n > ITEM_MAX)
			return fail(err, errlen, spec, k, "key=value item too long");
		if (parse_item(st, spec, k, p, n, err, errlen))
			return -1;
		if (!comma)
			break;
		p = comma + 1;
	}
	return 0;
}

int emu_schedule_parse(struct emu_schedule *s, const char *spec, char *err,
		       size_t errlen)
{
	const char *p = spec;

	s->n = 0;
	s->set = 0;
	if (!spec || !*spec)
		return fail(err, errlen, spec ? spec : "", 0,
			    "expected T:key=value[,...][;T:...]");
	for (;;) {
		const char *semi = strchr(p, ';');
		size_t len = semi ? (size_t)(semi - p) : strlen(p);
		struct emu_step *st;

		if (s->n == EMU_SCHEDULE_MAX_STEPS)
			return fail(err, errlen, spec, 0, "more than %d steps",
				    EMU_SCHEDULE_MAX_STEPS);
		st = &s->step[s->n];
		if (parse_step(st, spec, s->n + 1, p, len, err, errlen))
			return -1;
		if (s->n && st->at_ns <= s->step[s->n - 1].at_ns)
			return fail(err, errlen, spec, s->n + 1,
				    "time %" PRIu64 " us is not after step %zu's %" PRIu64
				    " us (times must increase)",
				    st->at_ns / EMU_SCHEDULE_NS_PER_US, s->n,
				    s->step[s->n - 1].at_ns / EMU_SCHEDULE_NS_PER_US);
		s->set |= st->set;
		s->n++;
		if (!semi)
			return 0;
		p = semi + 1;
	}
}

/* ---- the timeline -------------------------------------------------------- */

int emu_timeline_init(struct emu_timeline *tl, const struct emu_schedule *s,
		      const struct emu_step_base *base, uint64_t origin_ns)
{
	size_t i;

	memset(tl, 0, sizeof(*tl));
	if (!s || !s->n)
		return 0;
	tl->step = calloc(s->n + 1, sizeof(*tl->step));
	if (!tl->step)
		return -1;
	tl->n = s->n + 1;
	tl->set = s->set;
	tl->origin_ns = origin_ns;
	tl->step[0].at_ns = 0;
	tl->step[0].rate_bps = base->rate_bps;
	tl->step[0].delay_ns = base->delay_ns;
	tl->step[0].loss_thr = base->loss_thr;
	tl->step[0].loss_p = base->loss_p;
	for (i = 0; i < s->n; i++) {
		const struct emu_step *in = &s->step[i];
		struct emu_step *out = &tl->step[i + 1];

		*out = tl->step[i];	/* what is not set is inherited */
		out->set = in->set;
		out->at_ns = origin_ns + in->at_ns;
		if (in->set & EMU_STEP_RATE)
			out->rate_bps = in->rate_bps;
		if (in->set & EMU_STEP_DELAY)
			out->delay_ns = in->delay_ns;
		if (in->set & EMU_STEP_LOSS) {
			out->loss_thr = in->loss_thr;
			out->loss_p = in->loss_p;
		}
	}
	tl->min_delay_ns = UINT64_MAX;
	for (i = 0; i < tl->n; i++) {
		const struct emu_step *st = &tl->step[i];

		if (st->delay_ns < tl->min_delay_ns)
			tl->min_delay_ns = st->delay_ns;
		if (st->delay_ns > tl->max_delay_ns)
			tl->max_delay_ns = st->delay_ns;
		if (st->rate_bps && (!tl->min_rate_bps || st->rate_bps < tl->min_rate_bps))
			tl->min_rate_bps = st->rate_bps;
		if (st->rate_bps > tl->max_rate_bps)
			tl->max_rate_bps = st->rate_bps;
	}
	return 0;
}

void emu_timeline_free(struct emu_timeline *tl)
{
	free(tl->step);
	memset(tl, 0, sizeof(*tl));
}

void emu_timeline_rebase(struct emu_timeline *tl, uint64_t origin_ns)
{
	size_t i;

	/* at_ns - old origin is the parsed offset, <= one week: no wrap */
	for (i = 1; i < tl->n; i++)
		tl->step[i].at_ns = tl->step[i].at_ns - tl->origin_ns + origin_ns;
	tl->origin_ns = origin_ns;
}

size_t emu_timeline_index(const struct emu_timeline *tl, uint64_t t)
{
	size_t lo = 0, hi = tl->n;	/* step[lo].at_ns <= t < step[hi].at_ns */

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (tl->step[mid].at_ns <= t)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

uint64_t emu_timeline_serialize(const struct emu_timeline *tl, uint64_t start,
				uint64_t units, uint64_t *rem)
{
	size_t i = emu_timeline_index(tl, start);
	uint64_t s = start;

	for (;;) {
		uint64_t r = tl->step[i].rate_bps;
		uint64_t end = i + 1 < tl->n ? tl->step[i + 1].at_ns : UINT64_MAX;
		uint64_t dt;

		if (!r) {		/* unlimited: the rest takes no time */
			*rem = 0;
			return s;
		}
		/*
		 * Finish within this step if the work fits in [s, end): dt is
		 * the floor, the remainder (< r) is owed at s + dt, still in
		 * this step.  Else do (end - s) * r units (< units, so no
		 * overflow) and go on at the next step's rate.
		 */
		dt = units / r;
		if (end == UINT64_MAX || dt < end - s ||
		    (dt == end - s && units % r == 0)) {
			*rem = units % r;
			return s + dt;
		}
		units -= (end - s) * r;
		s = end;
		i++;
	}
}
