// SPDX-License-Identifier: GPL-2.0
/*
 * cc_params.c - fastlab-cc's parsing of values (integers, numbers, ratios)
 * and of the FAST and HSTCP parameters a command line sets, with their JSON
 * form.  Every range is the core's (core/fast_core.h, core/hstcp_core.h);
 * a value out of range is refused with one line naming the key and the
 * range, before anything changes.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc_tool.h"
#include "hstcp_table.h"

/* ---- value parsing ----------------------------------------------------- */

bool parse_u64(const char *s, unsigned long long *out)
{
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return !errno && *end == 0;
}

bool parse_double(const char *s, double *out)
{
	char *end;

	if (!*s)
		return false;
	errno = 0;
	*out = strtod(s, &end);
	return !errno && *end == 0 && isfinite(*out);
}

static unsigned long long gcd(unsigned long long a, unsigned long long b)
{
	while (b) {
		unsigned long long t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* "N/M" or a decimal with at most 3 decimals -> num/den, den <= 1000. */
bool parse_ratio(const char *s, u32 *num, u32 *den)
{
	unsigned long long n, d, g;
	const char *slash = strchr(s, '/');
	double x;

	if (slash) {
		char a[64];
		size_t l = slash - s;

		if (l == 0 || l >= sizeof(a))
			return false;
		memcpy(a, s, l);
		a[l] = 0;
		if (!parse_u64(a, &n) || !parse_u64(slash + 1, &d) || !d)
			return false;
	} else {
		if (!parse_double(s, &x) || x < 0)
			return false;
		n = (unsigned long long)llround(x * 1000);
		d = 1000;
		if (fabs(x * 1000 - (double)n) > 1e-6)
			return false;	/* more than 3 decimals */
	}
	g = gcd(n, d);
	if (!g)
		return false;
	n /= g;
	d /= g;
	if (d > FAST_GAMMA_DEN_MAX || n > d)
		return false;
	*num = (u32)n;
	*den = (u32)d;
	return true;
}

/* ---- FAST parameters --------------------------------------------------- */

const char fast_keys[] =
	"alpha gamma period ewma_cap mode mi_threshold_us pacing_pct";

int fast_set_key(struct fast_params *p, const char *k, const char *v,
			char *err, size_t n)
{
	unsigned long long u;
	double x;

	if (!strcmp(k, "alpha")) {
		if (!parse_u64(v, &u) || u < FAST_ALPHA_MIN || u > FAST_ALPHA_MAX)
			goto range;
		p->alpha = (u32)u;
		p->set_mask |= FAST_P_ALPHA;
	} else if (!strcmp(k, "gamma")) {
		u32 num, den;

		if (!parse_ratio(v, &num, &den) || num == 0)
			goto range;
		p->gamma_num = num;
		p->gamma_den = den;
		p->set_mask |= FAST_P_GAMMA;
	} else if (!strcmp(k, "period")) {
		size_t l = strlen(v);

		if (!strcmp(v, "rtt")) {
			p->period_kind = FAST_PERIOD_RTT;
		} else if (!strcmp(v, "2rtt")) {
			p->period_kind = FAST_PERIOD_2RTT;
		} else if (l > 2 && (!strcmp(v + l - 2, "us") ||
				     !strcmp(v + l - 2, "ms"))) {
			char num[32];

			if (l - 2 >= sizeof(num))
				goto range;
			memcpy(num, v, l - 2);
			num[l - 2] = 0;
			if (!parse_u64(num, &u))
				goto range;
			if (v[l - 2] == 'm')
				u = u > ULLONG_MAX / 1000 ? ULLONG_MAX : u * 1000;
			if (u < FAST_PERIOD_US_MIN || u > FAST_PERIOD_US_MAX)
				goto range;
			p->period_kind = FAST_PERIOD_US;
			p->period_us = (u32)u;
		} else {
			goto range;
		}
		p->set_mask |= FAST_P_PERIOD;
	} else if (!strcmp(k, "ewma_cap")) {
		const char *slash = strchr(v, '/');

		if (slash) {
			u32 num, den;

			if (!parse_ratio(v, &num, &den))
				goto range;
			x = (double)num / den;
		} else if (!parse_double(v, &x)) {
			goto range;
		}
		if (!(x > 0 && x <= 1) || llround(x * FAST_FP_ONE) < 1)
			goto range;
		p->ewma_cap_q16 = (u32)llround(x * FAST_FP_ONE);
		p->set_mask |= FAST_P_EWMA_CAP;
	} else if (!strcmp(k, "mode")) {
		if (!strcmp(v, "floor"))
			p->mode = FAST_MODE_FLOOR;
		else if (!strcmp(v, "carry"))
			p->mode = FAST_MODE_CARRY;
		else
			goto range;
		p->set_mask |= FAST_P_MODE;
	} else if (!strcmp(k, "mi_threshold_us")) {
		if (!parse_u64(v, &u) || u > FAST_MI_THRESH_US_MAX)
			goto range;
		p->mi_threshold_us = (u32)u;
		p->set_mask |= FAST_P_MI_THRESH;
	} else if (!strcmp(k, "pacing_pct")) {
		if (!parse_u64(v, &u) || u > FAST_PACING_PCT_MAX)
			goto range;
		p->pacing_pct = (u32)u;
		p->set_mask |= FAST_P_PACING;
	} else {
		snprintf(err, n, "unknown key '%s' for fast (keys: %s)", k,
			 fast_keys);
		return -1;
	}
	return 0;
range:
	if (!strcmp(k, "alpha"))
		snprintf(err, n, "alpha=%s: out of range: integer %u..%u (packets)",
			 v, FAST_ALPHA_MIN, FAST_ALPHA_MAX);
	else if (!strcmp(k, "gamma"))
		snprintf(err, n, "gamma=%s: out of range: 0 < gamma <= 1, at most 3 decimals or N/M with M <= %u (e.g. 0.5, 1/3)",
			 v, FAST_GAMMA_DEN_MAX);
	else if (!strcmp(k, "period"))
		snprintf(err, n, "period=%s: out of range: rtt | 2rtt | <N>us | <N>ms with %u..%u us",
			 v, FAST_PERIOD_US_MIN, FAST_PERIOD_US_MAX);
	else if (!strcmp(k, "ewma_cap"))
		snprintf(err, n, "ewma_cap=%s: out of range: 0 < cap <= 1 (weight cap per RTT sample, e.g. 0.125 or 1/8)",
			 v);
	else if (!strcmp(k, "mode"))
		snprintf(err, n, "mode=%s: out of range: floor | carry", v);
	else if (!strcmp(k, "mi_threshold_us"))
		snprintf(err, n, "mi_threshold_us=%s: out of range: integer 0..%u (us)",
			 v, FAST_MI_THRESH_US_MAX);
	else
		snprintf(err, n, "pacing_pct=%s: out of range: integer 0..%u (%% of cwnd*mss/avgRTT; 0 = off)",
			 v, FAST_PACING_PCT_MAX);
	return -1;
}

void fast_period_str(const struct fast_params *p, char *buf, size_t n)
{
	if (p->period_kind == FAST_PERIOD_RTT)
		snprintf(buf, n, "rtt");
	else if (p->period_kind == FAST_PERIOD_2RTT)
		snprintf(buf, n, "2rtt");
	else
		snprintf(buf, n, "%uus", p->period_us);
}

/* JSON object of @p; only the fields in @mask. */
const char *fast_params_json(struct json *j, const struct fast_params *p,
				    u32 mask)
{
	char per[32];

	j_open(j);
	if (mask & FAST_P_ALPHA)
		j_u64(j, "alpha", p->alpha);
	if (mask & FAST_P_GAMMA) {
		j_num(j, "gamma", (double)p->gamma_num / p->gamma_den);
		j_u64(j, "gamma_num", p->gamma_num);
		j_u64(j, "gamma_den", p->gamma_den);
	}
	if (mask & FAST_P_PERIOD) {
		fast_period_str(p, per, sizeof(per));
		j_str(j, "period", per);
	}
	if (mask & FAST_P_EWMA_CAP)
		j_num(j, "ewma_cap", (double)p->ewma_cap_q16 / FAST_FP_ONE);
	if (mask & FAST_P_MODE)
		j_str(j, "mode", p->mode == FAST_MODE_CARRY ? "carry" : "floor");
	if (mask & FAST_P_MI_THRESH)
		j_u64(j, "mi_threshold_us", p->mi_threshold_us);
	if (mask & FAST_P_PACING)
		j_u64(j, "pacing_pct", p->pacing_pct);
	return j_close(j);
}

/* ---- HSTCP parameters -------------------------------------------------- */

const char hstcp_keys[] =
	"low_window high_window high_p high_decrease max_ssthresh";


int hstcp_set_key(struct hstcp_params *p, u32 *given, const char *k,
			 const char *v, char *err, size_t n)
{
	unsigned long long u;
	double x;

	if (!strcmp(k, "low_window")) {
		if (!parse_u64(v, &u) || u < HSTCP_LOW_WINDOW_MIN ||
		    u > HSTCP_LOW_WINDOW_MAX)
			goto range;
		p->low_window = (u32)u;
		*given |= HK_LOW_WINDOW;
	} else if (!strcmp(k, "high_window")) {
		if (!parse_u64(v, &u) || u <= HSTCP_LOW_WINDOW_MIN ||
		    u > HSTCP_HIGH_WINDOW_MAX)
			goto range;
		p->high_window = (u32)u;
		*given |= HK_HIGH_WINDOW;
	} else if (!strcmp(k, "high_p")) {
		if (!parse_double(v, &x) ||
		    !(x >= HSTCP_HIGH_P_MIN_FEMTO * 1e-15 &&
		      x <= HSTCP_HIGH_P_MAX_FEMTO * 1e-15))
			goto range;
		p->high_p_femto = (u64)llround(x * 1e15);
		*given |= HK_HIGH_P;
	} else if (!strcmp(k, "high_decrease")) {
		if (!parse_double(v, &x) ||
		    !(x >= HSTCP_HIGH_DEC_MIN_PPM * 1e-6 &&
		      x <= HSTCP_HIGH_DEC_MAX_PPM * 1e-6))
			goto range;
		p->high_decrease_ppm = (u32)llround(x * 1e6);
		*given |= HK_HIGH_DEC;
	} else if (!strcmp(k, "max_ssthresh")) {
		if (!parse_u64(v, &u) || u > HSTCP_MAX_SSTHRESH_MAX)
			goto range;
		p->max_ssthresh = (u32)u;
		*given |= HK_MAX_SSTHRESH;
	} else {
		snprintf(err, n, "unknown key '%s' for hstcp (keys: %s)", k,
			 hstcp_keys);
		return -1;
	}
	return 0;
range:
	if (!strcmp(k, "low_window"))
		snprintf(err, n, "low_window=%s: out of range: integer %u..%u (packets), below high_window",
			 v, HSTCP_LOW_WINDOW_MIN, HSTCP_LOW_WINDOW_MAX);
	else if (!strcmp(k, "high_window"))
		snprintf(err, n, "high_window=%s: out of range: integer above low_window, at most %u (packets)",
			 v, HSTCP_HIGH_WINDOW_MAX);
	else if (!strcmp(k, "high_p"))
		snprintf(err, n, "high_p=%s: out of range: %g..%g, below Low_P = (1.2/low_window)^2 (loss rate at high_window)",
			 v, HSTCP_HIGH_P_MIN_FEMTO * 1e-15,
			 HSTCP_HIGH_P_MAX_FEMTO * 1e-15);
	else if (!strcmp(k, "high_decrease"))
		snprintf(err, n, "high_decrease=%s: out of range: %g..%g (b(w) at high_window)",
			 v, HSTCP_HIGH_DEC_MIN_PPM * 1e-6,
			 HSTCP_HIGH_DEC_MAX_PPM * 1e-6);
	else
		snprintf(err, n, "max_ssthresh=%s: out of range: integer 0..%u (packets; 0 = Limited Slow-Start off)",
			 v, HSTCP_MAX_SSTHRESH_MAX);
	return -1;
}

const char *hstcp_params_json(struct json *j, const struct hstcp_params *p,
				     u32 mask, int table_rows)
{
	j_open(j);
	if (mask & HSTCP_P_TABLE) {
		j_u64(j, "low_window", p->low_window);
		j_u64(j, "high_window", p->high_window);
		j_num(j, "high_p", (double)p->high_p_femto * 1e-15);
		j_num(j, "high_decrease", (double)p->high_decrease_ppm * 1e-6);
	}
	if (mask & HSTCP_P_MAX_SSTHRESH)
		j_u64(j, "max_ssthresh", p->max_ssthresh);
	if (table_rows >= 0) {
		j_u64(j, "table_slot", p->table_slot);
		j_u64(j, "table_rows", table_rows);
	}
	return j_close(j);
}

const char *hstcp_given_json(struct json *j, const struct hstcp_params *p,
				    u32 given)
{
	j_open(j);
	if (given & HK_LOW_WINDOW)
		j_u64(j, "low_window", p->low_window);
	if (given & HK_HIGH_WINDOW)
		j_u64(j, "high_window", p->high_window);
	if (given & HK_HIGH_P)
		j_num(j, "high_p", (double)p->high_p_femto * 1e-15);
	if (given & HK_HIGH_DEC)
		j_num(j, "high_decrease", (double)p->high_decrease_ppm * 1e-6);
	if (given & HK_MAX_SSTHRESH)
		j_u64(j, "max_ssthresh", p->max_ssthresh);
	return j_close(j);
}

/* low_window < high_window, naming the key the command line gave. */
void hstcp_check_windows(const struct hstcp_params *p, u32 given,
				const char *ctx)
{
	if (p->low_window < p->high_window)
		return;
	if (given & HK_HIGH_WINDOW)
		die(EXIT_USAGE, "%s: high_window=%u: out of range: must be above low_window (%u), at most %u (packets)",
		    ctx, p->high_window, p->low_window, HSTCP_HIGH_WINDOW_MAX);
	die(EXIT_USAGE, "%s: low_window=%u: out of range: integer %u..%u (packets), below high_window (%u)",
	    ctx, p->low_window, HSTCP_LOW_WINDOW_MIN, HSTCP_LOW_WINDOW_MAX,
	    p->high_window);
}

/* Copy the given keys of @src into @dst. */
void hstcp_apply_given(struct hstcp_params *dst,
			      const struct hstcp_params *src, u32 given)
{
	if (given & HK_LOW_WINDOW)
		dst->low_window = src->low_window;
	if (given & HK_HIGH_WINDOW)
		dst->high_window = src->high_window;
	if (given & HK_HIGH_P)
		dst->high_p_femto = src->high_p_femto;
	if (given & HK_HIGH_DEC)
		dst->high_decrease_ppm = src->high_decrease_ppm;
	if (given & HK_MAX_SSTHRESH)
		dst->max_ssthresh = src->max_ssthresh;
}
