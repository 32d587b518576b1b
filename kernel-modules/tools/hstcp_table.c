// SPDX-License-Identifier: GPL-2.0
/*
 * hstcp_table.c - regenerate the HighSpeed TCP a(w)/b(w) table from the
 * RFC 3649 parameters (user space, floating point).
 *
 * RFC 3649 Sec. 5: above Low_Window the response function is a straight
 * line in log-log space through (Low_Window, Low_P) and (High_Window,
 * High_P), i.e. p(w) = C / w^E. Low_P is standard TCP's loss rate at
 * Low_Window from w = 1.2 / sqrt(p) (RFC 3649 Sec. 2), 1.0e-3 for 38.
 * The RFC publishes the result rounded, p(w) = 0.078 / w^1.2
 * (w = 0.12 / p^0.835), and its Appendix B table follows from that rounded
 * form. We round the same way - the exponent E to two decimals, the
 * coefficient C to two significant digits - which reproduces the RFC/Linux
 * table from the default parameters (md column exactly, w to within 0.3%;
 * tests/test_cores.c checks it). The unrounded line would move the default
 * rows by up to 9% (a off by 2). For other parameters the rounding changes
 * p(w) by a few percent at most (C's last digit).
 *
 *   b(w) = (High_Decrease - 0.5) (ln w - ln Low_Window) /
 *          (ln High_Window - ln Low_Window) + 0.5
 *   a(w) = w^2 p(w) 2 b(w) / (2 - b(w))
 *
 * Row i (a = i) starts at the smallest integer window with a(w) >= i; the
 * table stops two rows past High_Window, which gives the RFC's 72 rows.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hstcp_table.h"
#include "../core/hstcp_table_default.h"

#define STD_TCP_RESPONSE_K	1.2	/* standard TCP: w = 1.2 / sqrt(p) */
#define RESPONSE_E_DECIMALS	2	/* p = 0.078 / w^1.20 as RFC 3649 ... */
#define RESPONSE_C_SIG_DIGITS	2	/* ... publishes it */
#define ROWS_PAST_HIGH_WINDOW	2	/* RFC table: 84035 and 89053 > 83000 */
#define WINDOW_SEARCH_MAX	2147483647.0	/* packets (cwnd is u32) */

void hstcp_gen_default(struct hstcp_gen *g)
{
	g->low_window = HSTCP_DEF_LOW_WINDOW;
	g->high_window = HSTCP_DEF_HIGH_WINDOW;
	g->high_p = (double)HSTCP_DEF_HIGH_P_FEMTO * 1e-15;
	g->high_decrease = (double)HSTCP_DEF_HIGH_DEC_PPM * 1e-6;
}

void hstcp_gen_from_params(struct hstcp_gen *g, const struct hstcp_params *p)
{
	g->low_window = p->low_window;
	g->high_window = p->high_window;
	g->high_p = (double)p->high_p_femto * 1e-15;
	g->high_decrease = (double)p->high_decrease_ppm * 1e-6;
}

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fabs(b);
}

bool hstcp_gen_is_default(const struct hstcp_gen *g)
{
	struct hstcp_gen d;

	hstcp_gen_default(&d);
	return near(g->low_window, d.low_window) &&
	       near(g->high_window, d.high_window) &&
	       near(g->high_p, d.high_p) &&
	       near(g->high_decrease, d.high_decrease);
}

static double round_sig(double x, int digits)
{
	double m;

	if (x == 0.0)
		return 0.0;
	m = pow(10.0, floor(log10(fabs(x))) - (digits - 1));
	return round(x / m) * m;
}

void hstcp_gen_response(const struct hstcp_gen *g, struct hstcp_response *r)
{
	double k = STD_TCP_RESPONSE_K / g->low_window;

	r->low_p = k * k;
	r->e_exact = log(r->low_p / g->high_p) /
		     log(g->high_window / g->low_window);
	r->c_exact = r->low_p * pow(g->low_window, r->e_exact);
	r->e = round(r->e_exact * pow(10, RESPONSE_E_DECIMALS)) /
	       pow(10, RESPONSE_E_DECIMALS);
	r->c = round_sig(r->c_exact, RESPONSE_C_SIG_DIGITS);
}

double hstcp_gen_b(const struct hstcp_gen *g, double w)
{
	return (g->high_decrease - 0.5) *
	       (log(w) - log(g->low_window)) /
	       (log(g->high_window) - log(g->low_window)) + 0.5;
}

double hstcp_gen_a(const struct hstcp_gen *g, const struct hstcp_response *r,
		   double w)
{
	double b = hstcp_gen_b(g, w);
	double p = r->c / pow(w, r->e);

	return w * w * p * 2.0 * b / (2.0 - b);
}

static u32 b_to_q16(double b)
{
	double q = floor(b * (double)(1U << HSTCP_B_SHIFT));

	if (q < 0)
		q = 0;
	if (q > HSTCP_B_HALF)
		q = HSTCP_B_HALF;
	return (u32)q;
}

/* Smallest integer w > prev with a(w) >= target, or 0 if none below 2^31. */
static double first_window_reaching(const struct hstcp_gen *g,
				    const struct hstcp_response *r,
				    double prev, double target)
{
	double lo = prev, hi = prev + 1;

	while (hstcp_gen_a(g, r, hi) < target) {
		lo = hi;
		hi = hi * 2;
		if (hi > WINDOW_SEARCH_MAX)
			return 0;
	}
	/* invariant: a(lo) < target (or lo == prev), a(hi) >= target */
	while (hi - lo > 1) {
		double mid = floor((lo + hi) / 2);

		if (hstcp_gen_a(g, r, mid) >= target)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

int hstcp_gen_table(const struct hstcp_gen *g, struct hstcp_table *t,
		    char *err, size_t errlen)
{
	struct hstcp_response r;
	double w = g->low_window;
	u32 n = 0, past = 0;

	memset(t, 0, sizeof(*t));
	if (!(g->low_window >= HSTCP_LOW_WINDOW_MIN &&
	      g->low_window < g->high_window)) {
		snprintf(err, errlen,
			 "low_window: must be >= %u and below high_window (%.0f)",
			 HSTCP_LOW_WINDOW_MIN, g->high_window);
		return -1;
	}
	if (!(g->high_decrease > 0 && g->high_decrease <= 0.5)) {
		snprintf(err, errlen, "high_decrease: must be in (0, 0.5]");
		return -1;
	}
	hstcp_gen_response(g, &r);
	if (!(g->high_p > 0 && g->high_p < r.low_p)) {
		snprintf(err, errlen,
			 "high_p: must be in (0, %.3g) (standard TCP's loss rate at low_window)",
			 r.low_p);
		return -1;
	}
	if (!(r.e < 2.0)) {
		snprintf(err, errlen,
			 "high_p: response exponent %.3g >= 2, a(w) would shrink with w; raise high_p or high_window",
			 r.e);
		return -1;
	}

	/* Row 0: standard TCP up to Low_Window. */
	t->rows[0].cwnd = (u32)g->low_window;
	t->rows[0].a = 1;
	t->rows[0].b_q16 = HSTCP_B_HALF;
	n = 1;
	while (past < ROWS_PAST_HIGH_WINDOW) {
		if (n >= HSTCP_MAX_ROWS) {
			snprintf(err, errlen,
				 "high_window: table would need more than %d rows (a(high_window) too large); lower high_window or high_p",
				 HSTCP_MAX_ROWS);
			return -1;
		}
		w = first_window_reaching(g, &r, w, (double)(n + 1));
		if (w == 0) {
			snprintf(err, errlen,
				 "high_window: a(w) never reaches %u below 2^31 packets",
				 n + 1);
			return -1;
		}
		t->rows[n].cwnd = (u32)w;
		t->rows[n].a = n + 1;
		t->rows[n].b_q16 = b_to_q16(hstcp_gen_b(g, w));
		if (w > g->high_window)
			past++;
		n++;
	}
	t->nrows = n;
	return 0;
}

void hstcp_default_table(struct hstcp_table *t)
{
	memset(t, 0, sizeof(*t));
	memcpy(t->rows, hstcp_default_rows, sizeof(hstcp_default_rows));
	t->nrows = HSTCP_DEFAULT_ROWS;
}

int hstcp_table_for(const struct hstcp_gen *g, struct hstcp_table *t,
		    char *err, size_t errlen)
{
	if (hstcp_gen_is_default(g)) {
		hstcp_default_table(t);
		return 0;
	}
	return hstcp_gen_table(g, t, err, errlen);
}
