/*
 * aqm.c - what the AQM models share (see aqm.h): the spec parser, the
 * configuration checks that name the offending field, the per-index draws
 * and the dispatch to aqm_red.c, aqm_codel.c and aqm_pie.c.
 *
 * Why a key=value spec: each model has several parameters with units, and
 * a lab changes one at a time; naming them (target_us=5000) says the unit
 * where a positional list would not, and lets every key default to the
 * paper's value.  Hostile input is refused, never clamped: an unknown or
 * repeated key, an empty value, a sign, nan/inf, a hex float or a number
 * out of range each give one line that names the key.
 */
#include "aqm.h"
#include "parse.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Floyd's recommendations (1997 "RED: Discussions of Setting Parameters"). */
#define RED_DEF_MIN_TH_PKTS	5
#define RED_DEF_MAX_TH_PKTS	15	/* 3 min_th */
#define RED_DEF_MAX_P		0.1
#define RED_DEF_WQ		0.002
/* ns-2's mean_pktsize_ for the idle-time decay. */
#define RED_DEF_MEAN_PKT_BYTES	500
/* RFC 8289 §4.2, §4.3. */
#define CODEL_DEF_TARGET_US	5000
#define CODEL_DEF_INTERVAL_US	100000
/* RFC 8033 §4 and Appendix A. */
#define PIE_DEF_TARGET_US	15000
#define PIE_DEF_TUPDATE_US	15000
#define PIE_DEF_ALPHA		0.125
#define PIE_DEF_BETA		1.25
#define PIE_DEF_MAX_BURST_US	150000

/* ---- errors -------------------------------------------------------------- */

static int __attribute__((format(printf, 4, 5)))
fail(char *err, size_t errlen, const char *spec, const char *fmt, ...)
{
	char q[SPEC_QUOTE_MAX + 4], prefix[sizeof(q) + 16] = "";
	va_list ap;
	int r;

	if (spec) {
		emu_quote_spec(q, sizeof(q), spec);
		snprintf(prefix, sizeof(prefix), "invalid AQM '%s'", q);
	}
	va_start(ap, fmt);
	r = emu_failv(err, errlen, prefix, fmt, ap);
	va_end(ap);
	return r;
}

/* ---- key=value lists ------------------------------------------------------ */

enum key_kind {
	KEY_COUNT,	/* unsigned decimal integer */
	KEY_US,		/* unsigned decimal integer of microseconds, kept in ns */
	KEY_REAL,	/* plain decimal, kept in fixed point (shift) */
	KEY_BOOL,	/* 0 or 1 */
};

struct key_def {
	const char *name;
	enum key_kind kind;
	uint64_t min, max;	/* COUNT and US: bounds in the key's unit */
	double rmin, rmax;	/* REAL: bounds; rmin excluded if rmin_open */
	bool rmin_open;
	unsigned int shift;	/* REAL: fixed point scale 2^shift */
};

#define MAX_KEYS	12


/* Plain decimal only: no sign, no "nan"/"inf", no hex floats. */
static int parse_real(const char *s, double *out)
{
	char *end;
	double v;

	if (!*s || strspn(s, "0123456789.eE-+") != strlen(s) ||
	    !strchr("0123456789.", s[0]))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || end == s || !isfinite(v) || v < 0.0)
		return -1;
	*out = v;
	return 0;
}

static int key_value(const char *spec, const struct key_def *k,
		     const char *val, uint64_t *out, char *err, size_t errlen)
{
	uint64_t v;
	double r;

	switch (k->kind) {
	case KEY_BOOL:
		if (strcmp(val, "0") && strcmp(val, "1"))
			return fail(err, errlen, spec, "%s must be 0 or 1", k->name);
		*out = val[0] == '1';
		return 0;
	case KEY_COUNT:
	case KEY_US:
		if (emu_parse_count(val, &v) || v < k->min || v > k->max)
			return fail(err, errlen, spec,
				    "%s must be an integer in [%" PRIu64 ", %" PRIu64 "]%s",
				    k->name, k->min, k->max,
				    k->kind == KEY_US ? " (microseconds)" : "");
		*out = k->kind == KEY_US ? v * AQM_NS_PER_US : v;
		return 0;
	case KEY_REAL:
	default:
		if (parse_real(val, &r) || r > k->rmax || r < k->rmin ||
		    (k->rmin_open && r == k->rmin))
			return fail(err, errlen, spec, "%s must be a number in %c%g, %g]",
				    k->name, k->rmin_open ? '(' : '[', k->rmin,
				    k->rmax);
		*out = (uint64_t)(ldexp(r, (int)k->shift) + 0.5);
		return 0;
	}
}

/*
 * Parse "k=v,k=v" (list may be NULL: all defaults) against defs: vals[i]
 * and seen[i] for defs[i].
 */
static int parse_keys(const char *spec, const char *list,
		      const struct key_def *defs, size_t ndefs, uint64_t *vals,
		      bool *seen, char *err, size_t errlen)
{
	char names[256] = "";
	size_t i;

	for (i = 0; i < ndefs; i++)
		seen[i] = false;
	if (!list)
		return 0;
	for (;;) {
		const char *comma = strchr(list, ',');
		size_t len = comma ? (size_t)(comma - list) : strlen(list);
		char item[128], *eq;

		if (!len)
			return fail(err, errlen, spec, "empty key=value item");
		if (len >= sizeof(item))
			return fail(err, errlen, spec, "key=value item too long");
		memcpy(item, list, len);
		item[len] = '\0';
		eq = strchr(item, '=');
		if (!eq || eq == item)
			return fail(err, errlen, spec,
				    "expected key=value, got '%.40s'", item);
		*eq = '\0';
		for (i = 0; i < ndefs; i++)
			if (!strcmp(item, defs[i].name))
				break;
		if (i == ndefs) {
			size_t j, n = 0;

			for (j = 0; j < ndefs && n < sizeof(names); j++)
				n += (size_t)snprintf(names + n, sizeof(names) - n,
						      "%s%s", j ? ", " : "",
						      defs[j].name);
			return fail(err, errlen, spec, "unknown key '%.40s' (expected %s)",
				    item, names);
		}
		if (seen[i])
			return fail(err, errlen, spec, "key '%s' given twice",
				    defs[i].name);
		if (!eq[1])
			return fail(err, errlen, spec, "%s: empty value",
				    defs[i].name);
		if (key_value(spec, &defs[i], eq + 1, &vals[i], err, errlen))
			return -1;
		seen[i] = true;
		if (!comma)
			return 0;
		list = comma + 1;
	}
}

/* ---- the models' keys ----------------------------------------------------- */

enum {
	RK_MIN_PKTS, RK_MAX_PKTS, RK_MIN_BYTES, RK_MAX_BYTES, RK_MAX_P, RK_WQ,
	RK_GENTLE, RK_ADAPTIVE, RK_ECN, RK_MEAN_PKT, RK_N
};

static const struct key_def red_keys[RK_N] = {
	[RK_MIN_PKTS] = { "min_th_pkts", KEY_COUNT, 0, AQM_RED_MAX_TH - 1 },
	[RK_MAX_PKTS] = { "max_th_pkts", KEY_COUNT, 1, AQM_RED_MAX_TH },
	[RK_MIN_BYTES] = { "min_th_bytes", KEY_COUNT, 0, AQM_RED_MAX_TH - 1 },
	[RK_MAX_BYTES] = { "max_th_bytes", KEY_COUNT, 1, AQM_RED_MAX_TH },
	[RK_MAX_P] = { "max_p", KEY_REAL, .rmin = 0.0, .rmax = 1.0,
		       .rmin_open = true, .shift = AQM_PROB_SHIFT },
	[RK_WQ] = { "wq", KEY_REAL, .rmin = 0.0, .rmax = 1.0,
		    .rmin_open = true, .shift = AQM_FRAC_SHIFT },
	[RK_GENTLE] = { "gentle", KEY_BOOL },
	[RK_ADAPTIVE] = { "adaptive", KEY_BOOL },
	[RK_ECN] = { "ecn", KEY_BOOL },
	[RK_MEAN_PKT] = { "mean_pkt_bytes", KEY_COUNT, 1, AQM_MAX_PKT_BYTES },
};

enum { CK_TARGET, CK_INTERVAL, CK_ECN, CK_N };

static const struct key_def codel_keys[CK_N] = {
	[CK_TARGET] = { "target_us", KEY_US, 1, AQM_MAX_TIME_US },
	[CK_INTERVAL] = { "interval_us", KEY_US, 1, AQM_MAX_TIME_US },
	[CK_ECN] = { "ecn", KEY_BOOL },
};

enum { PK_TARGET, PK_TUPDATE, PK_ALPHA, PK_BETA, PK_MAX_BURST, PK_ECN, PK_N };

static const struct key_def pie_keys[PK_N] = {
	[PK_TARGET] = { "target_us", KEY_US, 1, AQM_MAX_TIME_US },
	[PK_TUPDATE] = { "tupdate_us", KEY_US, AQM_PIE_MIN_TUPDATE_US, AQM_MAX_TIME_US },
	[PK_ALPHA] = { "alpha", KEY_REAL, .rmin = 0.0, .rmax = AQM_PIE_MAX_GAIN_HZ,
		       .shift = AQM_PROB_SHIFT },
	[PK_BETA] = { "beta", KEY_REAL, .rmin = 0.0, .rmax = AQM_PIE_MAX_GAIN_HZ,
		      .shift = AQM_PROB_SHIFT },
	[PK_MAX_BURST] = { "max_burst_us", KEY_US, 0, AQM_MAX_TIME_US },
	[PK_ECN] = { "ecn", KEY_BOOL },
};

_Static_assert(RK_N <= MAX_KEYS && CK_N <= MAX_KEYS && PK_N <= MAX_KEYS,
	       "parse_keys works on MAX_KEYS slots");

static uint64_t fixed(double v, unsigned int shift)
{
	return (uint64_t)(ldexp(v, (int)shift) + 0.5);
}

static int parse_red(struct aqm_cfg *cfg, const char *spec, const char *list,
		     char *err, size_t errlen)
{
	uint64_t v[MAX_KEYS];
	bool seen[MAX_KEYS];
	struct aqm_red_cfg *r = &cfg->red;
	bool pkts, bytes;

	if (parse_keys(spec, list, red_keys, RK_N, v, seen, err, errlen))
		return -1;
	pkts = seen[RK_MIN_PKTS] || seen[RK_MAX_PKTS];
	bytes = seen[RK_MIN_BYTES] || seen[RK_MAX_BYTES];
	if (pkts && bytes)
		return fail(err, errlen, spec,
			    "thresholds in packets and in bytes mixed (give min_th_pkts/max_th_pkts or min_th_bytes/max_th_bytes)");
	if (bytes && !(seen[RK_MIN_BYTES] && seen[RK_MAX_BYTES]))
		return fail(err, errlen, spec, "byte mode needs both %s and %s",
			    red_keys[RK_MIN_BYTES].name, red_keys[RK_MAX_BYTES].name);
	cfg->type = AQM_RED;
	r->bytes = bytes;
	if (bytes) {
		r->min_th = v[RK_MIN_BYTES];
		r->max_th = v[RK_MAX_BYTES];
	} else {
		r->min_th = seen[RK_MIN_PKTS] ? v[RK_MIN_PKTS] : RED_DEF_MIN_TH_PKTS;
		r->max_th = seen[RK_MAX_PKTS] ? v[RK_MAX_PKTS] : RED_DEF_MAX_TH_PKTS;
	}
	r->max_p = seen[RK_MAX_P] ? v[RK_MAX_P] : fixed(RED_DEF_MAX_P, AQM_PROB_SHIFT);
	r->wq = seen[RK_WQ] ? v[RK_WQ] : fixed(RED_DEF_WQ, AQM_FRAC_SHIFT);
	r->gentle = seen[RK_GENTLE] ? v[RK_GENTLE] : true;	/* Floyd 2000 */
	r->adaptive = seen[RK_ADAPTIVE] && v[RK_ADAPTIVE];
	r->mean_pkt_bytes = seen[RK_MEAN_PKT] ? (uint32_t)v[RK_MEAN_PKT] :
						RED_DEF_MEAN_PKT_BYTES;
	cfg->ecn = seen[RK_ECN] && v[RK_ECN];
	return 0;
}

static int parse_codel(struct aqm_cfg *cfg, const char *spec, const char *list,
		       char *err, size_t errlen)
{
	uint64_t v[MAX_KEYS];
	bool seen[MAX_KEYS];

	if (parse_keys(spec, list, codel_keys, CK_N, v, seen, err, errlen))
		return -1;
	cfg->type = AQM_CODEL;
	cfg->codel.target_ns = seen[CK_TARGET] ? v[CK_TARGET] :
			       CODEL_DEF_TARGET_US * AQM_NS_PER_US;
	cfg->codel.interval_ns = seen[CK_INTERVAL] ? v[CK_INTERVAL] :
				 CODEL_DEF_INTERVAL_US * AQM_NS_PER_US;
	cfg->ecn = seen[CK_ECN] && v[CK_ECN];
	return 0;
}

static int parse_pie(struct aqm_cfg *cfg, const char *spec, const char *list,
		     char *err, size_t errlen)
{
	uint64_t v[MAX_KEYS];
	bool seen[MAX_KEYS];
	struct aqm_pie_cfg *p = &cfg->pie;

	if (parse_keys(spec, list, pie_keys, PK_N, v, seen, err, errlen))
		return -1;
	cfg->type = AQM_PIE;
	p->target_ns = seen[PK_TARGET] ? v[PK_TARGET] : PIE_DEF_TARGET_US * AQM_NS_PER_US;
	p->tupdate_ns = seen[PK_TUPDATE] ? v[PK_TUPDATE] :
			PIE_DEF_TUPDATE_US * AQM_NS_PER_US;
	p->alpha = seen[PK_ALPHA] ? v[PK_ALPHA] : fixed(PIE_DEF_ALPHA, AQM_PROB_SHIFT);
	p->beta = seen[PK_BETA] ? v[PK_BETA] : fixed(PIE_DEF_BETA, AQM_PROB_SHIFT);
	p->max_burst_ns = seen[PK_MAX_BURST] ? v[PK_MAX_BURST] :
			  PIE_DEF_MAX_BURST_US * AQM_NS_PER_US;
	cfg->ecn = seen[PK_ECN] && v[PK_ECN];
	return 0;
}

int aqm_parse(struct aqm_cfg *cfg, const char *spec, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		int (*parse)(struct aqm_cfg *, const char *, const char *,
			     char *, size_t);
	} models[] = {
		{ "red", parse_red }, { "codel", parse_codel }, { "pie", parse_pie },
	};
	const char *colon;
	size_t i, n;

	memset(cfg, 0, sizeof(*cfg));
	cfg->type = AQM_NONE;
	if (!spec)
		return 0;
	if (!strcmp(spec, "none"))
		return 0;
	colon = strchr(spec, ':');
	n = colon ? (size_t)(colon - spec) : strlen(spec);
	for (i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
		if (strlen(models[i].name) != n || strncmp(spec, models[i].name, n))
			continue;
		if (colon && !colon[1])
			return fail(err, errlen, spec, "expected key=value after '%s:'",
				    models[i].name);
		if (models[i].parse(cfg, spec, colon ? colon + 1 : NULL, err, errlen))
			return -1;
		return aqm_check(cfg, err, errlen);
	}
	return fail(err, errlen, spec, "unknown model (expected none, red[:...], codel[:...] or pie[:...])");
}

/* ---- checks ----------------------------------------------------------------- */

#define AQM_MAX_TIME_NS		(AQM_MAX_TIME_US * AQM_NS_PER_US)
#define AQM_MAX_MTU_BYTES	(1U << 17)	/* lo's 64 KB MTU and its header */

static int check_time(const char *model, const char *key, uint64_t ns,
		      uint64_t min_us, char *err, size_t errlen)
{
	if (ns < min_us * AQM_NS_PER_US || ns > AQM_MAX_TIME_NS)
		return fail(err, errlen, NULL, "%s: %s must be %" PRIu64 " to %" PRIu64
			    " microseconds", model, key, min_us, AQM_MAX_TIME_US);
	return 0;
}

int aqm_check(const struct aqm_cfg *cfg, char *err, size_t errlen)
{
	if (cfg->mtu_bytes > AQM_MAX_MTU_BYTES)
		return fail(err, errlen, NULL, "mtu_bytes must be at most %u",
			    AQM_MAX_MTU_BYTES);
	switch (cfg->type) {
	case AQM_NONE:
		return 0;
	case AQM_RED: {
		const struct aqm_red_cfg *r = &cfg->red;
		const char *min = r->bytes ? "min_th_bytes" : "min_th_pkts";
		const char *max = r->bytes ? "max_th_bytes" : "max_th_pkts";

		if (r->max_th > AQM_RED_MAX_TH)
			return fail(err, errlen, NULL, "red: %s must be at most %llu",
				    max, (unsigned long long)AQM_RED_MAX_TH);
		if (r->min_th >= r->max_th)
			return fail(err, errlen, NULL,
				    "red: %s (%" PRIu64 ") must be greater than %s (%" PRIu64 ")",
				    max, r->max_th, min, r->min_th);
		if (!r->max_p || r->max_p > AQM_PROB_ONE)
			return fail(err, errlen, NULL, "red: max_p must be in (0, 1]");
		if (!r->wq || r->wq > AQM_FRAC_ONE)
			return fail(err, errlen, NULL, "red: wq must be in (0, 1]");
		if (!r->mean_pkt_bytes || r->mean_pkt_bytes > AQM_MAX_PKT_BYTES)
			return fail(err, errlen, NULL, "red: mean_pkt_bytes must be 1 to %u",
				    AQM_MAX_PKT_BYTES);
		return 0;
	}
	case AQM_CODEL:
		if (check_time("codel", "target_us", cfg->codel.target_ns, 1, err, errlen) ||
		    check_time("codel", "interval_us", cfg->codel.interval_ns, 1, err, errlen))
			return -1;
		return 0;
	case AQM_PIE:
		if (check_time("pie", "target_us", cfg->pie.target_ns, 1, err, errlen) ||
		    check_time("pie", "tupdate_us", cfg->pie.tupdate_ns,
			       AQM_PIE_MIN_TUPDATE_US, err, errlen))
			return -1;
		if (cfg->pie.max_burst_ns > AQM_MAX_TIME_NS)
			return fail(err, errlen, NULL, "pie: max_burst_us must be 0 to %llu microseconds",
				    (unsigned long long)AQM_MAX_TIME_US);
		if (cfg->pie.alpha > AQM_PIE_MAX_GAIN_HZ * AQM_PROB_ONE)
			return fail(err, errlen, NULL, "pie: alpha must be 0 to %d (Hz)",
				    AQM_PIE_MAX_GAIN_HZ);
		if (cfg->pie.beta > AQM_PIE_MAX_GAIN_HZ * AQM_PROB_ONE)
			return fail(err, errlen, NULL, "pie: beta must be 0 to %d (Hz)",
				    AQM_PIE_MAX_GAIN_HZ);
		return 0;
	default:
		return fail(err, errlen, NULL, "unknown AQM type %d", (int)cfg->type);
	}
}

int aqm_init(struct aqm *a, const struct aqm_cfg *cfg, uint64_t seed,
	     unsigned int dir, char *err, size_t errlen)
{
	if (aqm_check(cfg, err, errlen))
		return -1;
	memset(a, 0, sizeof(*a));
	a->cfg = *cfg;
	if (!a->cfg.mtu_bytes)
		a->cfg.mtu_bytes = AQM_DEFAULT_MTU_BYTES;
	prng_seed(&a->rng, seed, dir, PRNG_STREAM_AQM);
	switch (cfg->type) {
	case AQM_RED:
		a->red.count = -1;	/* Floyd & Jacobson: "count <- -1" */
		a->red.max_p = cfg->red.max_p;
		break;
	case AQM_PIE:
		a->pie.burst_ns = cfg->pie.max_burst_ns;
		break;
	default:
		break;
	}
	return 0;
}

/* ---- describing ------------------------------------------------------------ */

/* A fixed-point value as a short decimal (parsing is the inverse). */
static double unfixed(uint64_t v, unsigned int shift)
{
	return ldexp((double)v, -(int)shift);
}

int aqm_describe(const struct aqm_cfg *cfg, char *buf, size_t len)
{
	const struct aqm_red_cfg *r = &cfg->red;
	const struct aqm_pie_cfg *p = &cfg->pie;

	switch (cfg->type) {
	case AQM_RED:
		return snprintf(buf, len,
				"red:%s=%" PRIu64 ",%s=%" PRIu64 ",max_p=%.6g,wq=%.6g,gentle=%d,adaptive=%d,ecn=%d,mean_pkt_bytes=%u",
				r->bytes ? "min_th_bytes" : "min_th_pkts", r->min_th,
				r->bytes ? "max_th_bytes" : "max_th_pkts", r->max_th,
				unfixed(r->max_p, AQM_PROB_SHIFT),
				unfixed(r->wq, AQM_FRAC_SHIFT), r->gentle, r->adaptive,
				cfg->ecn, r->mean_pkt_bytes);
	case AQM_CODEL:
		return snprintf(buf, len, "codel:target_us=%" PRIu64 ",interval_us=%" PRIu64 ",ecn=%d",
				cfg->codel.target_ns / AQM_NS_PER_US,
				cfg->codel.interval_ns / AQM_NS_PER_US, cfg->ecn);
	case AQM_PIE:
		return snprintf(buf, len,
				"pie:target_us=%" PRIu64 ",tupdate_us=%" PRIu64 ",alpha=%.6g,beta=%.6g,max_burst_us=%" PRIu64 ",ecn=%d",
				p->target_ns / AQM_NS_PER_US, p->tupdate_ns / AQM_NS_PER_US,
				unfixed(p->alpha, AQM_PROB_SHIFT),
				unfixed(p->beta, AQM_PROB_SHIFT),
				p->max_burst_ns / AQM_NS_PER_US, cfg->ecn);
	case AQM_NONE:
	default:
		return snprintf(buf, len, "none");
	}
}

/* A probability as a decimal with 9 places, from integers only. */
static int fmt_prob(char *buf, size_t len, uint64_t p)
{
	uint64_t whole = p >> AQM_PROB_SHIFT;
	uint64_t frac = (uint64_t)(((unsigned __int128)(p & (AQM_PROB_ONE - 1)) *
				    1000000000ULL) >> AQM_PROB_SHIFT);

	return snprintf(buf, len, "%" PRIu64 ".%09" PRIu64, whole, frac);
}

int aqm_state_json(const struct aqm *a, char *buf, size_t len)
{
	char p1[32], p2[32];

	switch (a->cfg.type) {
	case AQM_RED: {
		uint64_t avg = a->red.avg;
		bool forced;

		fmt_prob(p1, sizeof(p1), a->red.max_p);
		/*
		 * p_b as the average stands now, for a full-sized packet (the
		 * charts' "drop probability"; each arrival's p_a also counts the
		 * packets since the last drop).
		 */
		fmt_prob(p2, sizeof(p2), aqm_red_pb(a, a->cfg.mtu_bytes, &forced));
		return snprintf(buf, len,
				"\"model\":\"red\",\"avg_%s\":%" PRIu64 ".%03" PRIu64
				",\"count\":%" PRId64 ",\"max_p\":%s,\"drop_prob\":%s",
				a->cfg.red.bytes ? "bytes" : "pkts",
				avg >> AQM_FRAC_SHIFT,
				((avg & (AQM_FRAC_ONE - 1)) * 1000) >> AQM_FRAC_SHIFT,
				a->red.count, p1, p2);
	}
	case AQM_CODEL:
		return snprintf(buf, len,
				"\"model\":\"codel\",\"dropping\":%s,\"count\":%u",
				a->codel.dropping ? "true" : "false", a->codel.count);
	case AQM_PIE:
		fmt_prob(p1, sizeof(p1), a->pie.drop_prob);
		fmt_prob(p2, sizeof(p2), a->pie.accu_prob);
		return snprintf(buf, len,
				"\"model\":\"pie\",\"drop_prob\":%s,\"accu_prob\":%s"
				",\"qdelay_us\":%" PRIu64 ",\"burst_us\":%" PRIu64,
				p1, p2, a->pie.qdelay_ns / AQM_NS_PER_US,
				a->pie.burst_ns / AQM_NS_PER_US);
	case AQM_NONE:
	default:
		if (len)
			buf[0] = '\0';
		return 0;
	}
}

/* ---- draws and dispatch ---------------------------------------------------- */

uint64_t aqm_draw(struct aqm *a, uint64_t index)
{
	while (a->next_index < index) {
		(void)prng_next(&a->rng);
		a->next_index++;
	}
	if (index < a->next_index)	/* asked twice: a fresh draw, never a repeat */
		return prng_next(&a->rng);
	a->next_index = index + 1;
	return prng_next(&a->rng);
}

enum aqm_verdict aqm_enqueue(struct aqm *a, const struct aqm_arrival *arr)
{
	switch (a->cfg.type) {
	case AQM_RED:
		return aqm_red_enqueue(a, arr);
	case AQM_PIE:
		return aqm_pie_enqueue(a, arr);
	default:
		return arr->full ? AQM_TAIL : AQM_PASS;
	}
}
