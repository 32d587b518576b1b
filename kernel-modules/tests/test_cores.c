// SPDX-License-Identifier: GPL-2.0
/*
 * test_cores.c - user-space unit tests of core/fast_core.h and
 * core/hstcp_core.h (the same headers the BPF programs and the modules
 * compile), plus the user-space HSTCP table generator.
 *
 * Prints one line per test and, last, "N passed, M failed"; exits non-zero
 * when anything failed.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/fast_core.h"
#include "../core/hstcp_core.h"
#include "../core/hstcp_table_default.h"
#include "../tools/hstcp_table.h"
#include "rfc3649_vectors.h"

static int n_pass, n_fail;
static int cur_fail;
static const char *cur_name;

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	if (ok)
		return;
	if (cur_fail < 5) {	/* first few details only */
		printf("    %s: ", cur_name);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
	}
	cur_fail++;
}

static void run(const char *name, void (*fn)(void))
{
	cur_name = name;
	cur_fail = 0;
	fn();
	if (cur_fail) {
		n_fail++;
		printf("FAIL %s (%d checks failed)\n", name, cur_fail);
	} else {
		n_pass++;
		printf("ok   %s\n", name);
	}
	fflush(stdout);
}

/* Deterministic PRNG (xorshift64*), so failures reproduce. */
static u64 rng_state = 0x9e3779b97f4a7c15ULL;

static u64 rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static u32 rnd_range(u32 lo, u32 hi)	/* inclusive */
{
	return lo + (u32)(rnd() % ((u64)hi - lo + 1));
}

static double rnd_unit(void)
{
	return (double)(rnd() >> 11) / (double)(1ULL << 53);
}

/* ===================================================================== */
/* HSTCP                                                                 */
/* ===================================================================== */

static struct hstcp_table tab_default, tab_gen;

/* Reference lookup: the last row whose w is <= cwnd, row 0 below it. */
static u32 ref_index(const struct hstcp_table *t, u32 cwnd)
{
	u32 ai = 0;

	while (ai + 1 < t->nrows && t->rows[ai + 1].cwnd <= cwnd)
		ai++;
	return ai;
}

static void test_default_table_matches_rfc(void)
{
	unsigned int i;

	hstcp_default_table(&tab_default);
	check(tab_default.nrows == RFC3649_ROWS, "rows %u != %zu",
	      tab_default.nrows, RFC3649_ROWS);
	for (i = 0; i < RFC3649_ROWS && i < tab_default.nrows; i++) {
		const struct hstcp_row *r = &tab_default.rows[i];
		double b = (double)r->b_q16 / 65536.0;

		check(r->cwnd == rfc3649_rows[i].w, "row %u w %u != %u", i,
		      r->cwnd, rfc3649_rows[i].w);
		check(r->a == rfc3649_rows[i].a, "row %u a %u != %u", i, r->a,
		      rfc3649_rows[i].a);
		check((r->b_q16 >> 8) == rfc3649_rows[i].linux_md,
		      "row %u md %u != Linux %u", i, r->b_q16 >> 8,
		      rfc3649_rows[i].linux_md);
		check(fabs(b - rfc3649_rows[i].b_pct / 100.0) <= 0.01 + 1e-9,
		      "row %u b %.4f vs RFC %.2f", i, b,
		      rfc3649_rows[i].b_pct / 100.0);
	}
}

static void test_generator_reproduces_rfc_table(void)
{
	struct hstcp_gen g;
	struct hstcp_response r;
	char err[256] = "";
	unsigned int i;
	double worst = 0;

	hstcp_gen_default(&g);
	check(hstcp_gen_table(&g, &tab_gen, err, sizeof(err)) == 0,
	      "generator failed: %s", err);
	check(tab_gen.nrows == RFC3649_ROWS, "generated %u rows, RFC has %zu",
	      tab_gen.nrows, RFC3649_ROWS);
	hstcp_gen_response(&g, &r);
	for (i = 0; i < RFC3649_ROWS; i++) {
		const struct rfc3649_row *v = &rfc3649_rows[i];
		double a = hstcp_gen_a(&g, &r, v->w), b = hstcp_gen_b(&g, v->w);
		double rel;

		/* a(w), b(w) from the default parameters at the RFC's w */
		check(fabs(a - v->a) <= 1, "w=%u: a %.3f vs RFC %u", v->w, a, v->a);
		check(fabs(b - v->b_pct / 100.0) <= 0.01 + 1e-9,
		      "w=%u: b %.4f vs RFC %.2f", v->w, b, v->b_pct / 100.0);
		/* Stricter: row by row, same a, md exact, w within 0.5%. */
		if (i < tab_gen.nrows) {
			const struct hstcp_row *r = &tab_gen.rows[i];

			rel = fabs((double)r->cwnd - v->w) / v->w;
			worst = rel > worst ? rel : worst;
			check(r->a == v->a, "row %u a %u != %u", i, r->a, v->a);
			check(rel <= 0.005, "row %u w %u vs RFC %u (%.2f%%)",
			      i, r->cwnd, v->w, rel * 100);
			check((r->b_q16 >> 8) == v->linux_md,
			      "row %u md %u vs Linux %u", i, r->b_q16 >> 8,
			      v->linux_md);
		}
	}
	printf("    generator vs RFC: worst w deviation %.2f%%\n", worst * 100);
}

static void test_response_coefficients(void)
{
	struct hstcp_gen g;
	struct hstcp_response r;

	hstcp_gen_default(&g);
	hstcp_gen_response(&g, &r);
	/* RFC 3649 Sec. 5: p = 0.078 / w^1.2, Low_P ~ 1e-3 */
	check(fabs(r.c - 0.078) < 1e-12, "C %.6f != 0.078", r.c);
	check(fabs(r.e - 1.2) < 1e-12, "E %.6f != 1.2", r.e);
	check(fabs(r.low_p - 1e-3) < 5e-6, "Low_P %.6g", r.low_p);
}

static void test_table_for_defaults_is_rfc_table(void)
{
	struct hstcp_gen g;
	struct hstcp_table t;
	char err[256];

	hstcp_gen_default(&g);
	check(hstcp_gen_is_default(&g), "defaults not recognised");
	check(hstcp_table_for(&g, &t, err, sizeof(err)) == 0, "%s", err);
	check(memcmp(&t, &tab_default, sizeof(t)) == 0,
	      "table for default params differs from the RFC table");
}

static void test_index_matches_linux_walk(void)
{
	struct hstcp_gen g;
	struct hstcp_table t;
	char err[256];
	int i, k;
	const struct hstcp_table *tabs[3];

	hstcp_gen_default(&g);
	g.low_window = 20;
	g.high_window = 30000;
	g.high_p = 1e-6;
	g.high_decrease = 0.2;
	check(hstcp_gen_table(&g, &t, err, sizeof(err)) == 0, "%s", err);
	tabs[0] = &tab_default;
	tabs[1] = &tab_gen;
	tabs[2] = &t;
	for (k = 0; k < 3; k++) {
		const struct hstcp_table *x = tabs[k];

		for (i = 0; i < 200000; i++) {
			u32 c = i < 100000 ? (u32)i : rnd_range(0, 2000000);

			check(hstcp_table_index(x, c) == ref_index(x, c),
			      "table %d cwnd %u: %u != %u", k, c,
			      hstcp_table_index(x, c), ref_index(x, c));
		}
		/* exact boundaries */
		for (i = 0; i < (int)x->nrows; i++) {
			u32 w = x->rows[i].cwnd;

			check(hstcp_table_index(x, w) == ref_index(x, w),
			      "boundary %u", w);
			check(hstcp_table_index(x, w + 1) == ref_index(x, w + 1),
			      "boundary+1 %u", w);
		}
	}
	/* single-row and invalid tables */
	memset(&t, 0, sizeof(t));
	t.nrows = 1;
	t.rows[0].cwnd = 38;
	check(hstcp_table_index(&t, 1000) == 0, "single row");
	t.nrows = 0;
	check(hstcp_table_index(&t, 1000) == 0, "empty");
	check(hstcp_row_a(&t, 5) == 1 && hstcp_row_b_q16(&t, 5) == HSTCP_B_HALF,
	      "invalid table must behave as standard TCP");
	check(hstcp_row_a(NULL, 0) == 1, "NULL table");
}

/* What the module's `table` parameter accepts: every generated table, nothing the lookup cannot use. */
static void test_table_check(void)
{
	static struct hstcp_table t;
	struct hstcp_gen g;
	char err[256];

	check(hstcp_table_check(&tab_default) == 0, "default table refused");
	hstcp_gen_default(&g);
	g.low_window = 10;
	check(hstcp_gen_table(&g, &t, err, sizeof(err)) == 0, "%s", err);
	check(hstcp_table_check(&t) == 0, "generated table (low_window 10) refused");
	t.rows[5].cwnd = t.rows[4].cwnd;
	check(hstcp_table_check(&t) != 0, "repeated w accepted");
	hstcp_default_table(&t);
	t.rows[3].a = 0;
	check(hstcp_table_check(&t) != 0, "a = 0 accepted");
	t.rows[3].a = HSTCP_ROW_A_MAX + 1;
	check(hstcp_table_check(&t) != 0, "a(w) << 8 past u32 accepted");
	hstcp_default_table(&t);
	t.rows[0].b_q16 = HSTCP_B_HALF + 1;
	check(hstcp_table_check(&t) != 0, "b > 0.5 accepted");
	t.rows[0].b_q16 = 0;
	check(hstcp_table_check(&t) != 0, "b = 0 accepted");
	hstcp_default_table(&t);
	t.nrows = 0;
	check(hstcp_table_check(&t) != 0, "no rows accepted");
	t.nrows = HSTCP_MAX_ROWS + 1;
	check(hstcp_table_check(&t) != 0, "too many rows accepted");
}

static void test_generator_rejects_bad_params(void)
{
	struct hstcp_gen g;
	struct hstcp_table t;
	char err[256];

	hstcp_gen_default(&g);
	g.high_p = 2e-3;	/* above Low_P */
	check(hstcp_gen_table(&g, &t, err, sizeof(err)) < 0 &&
	      strstr(err, "high_p"), "high_p above Low_P accepted");
	hstcp_gen_default(&g);
	g.low_window = 90000;
	check(hstcp_gen_table(&g, &t, err, sizeof(err)) < 0 &&
	      strstr(err, "low_window"), "low_window > high_window accepted");
	hstcp_gen_default(&g);
	g.high_window = 5e6;	/* a(high_window) ~ 10^5 rows */
	check(hstcp_gen_table(&g, &t, err, sizeof(err)) < 0 &&
	      strstr(err, "rows"), "oversized table accepted");
	hstcp_gen_default(&g);
	g.high_decrease = 0.7;
	check(hstcp_gen_table(&g, &t, err, sizeof(err)) < 0 &&
	      strstr(err, "high_decrease"), "high_decrease > 0.5 accepted");
}

/* A socket under deterministic loss: one loss every 1/p packets. */
static double hstcp_mean_window(const struct hstcp_table *t, double p,
				int cycles)
{
	struct hstcp_state s;
	struct hstcp_params hp;
	struct hstcp_ack a;
	u64 interval = (u64)(1.0 / p + 0.5), pkts = 0, losses = 0;
	double sum = 0, rounds = 0;
	bool lost;

	hstcp_params_default(&hp);
	hstcp_init(&s, &hp, 0, 0);
	a.cwnd = (u32)(0.12 / pow(p, 0.835));
	a.cwnd_cnt = 0;
	a.ssthresh = 2;			/* congestion avoidance from the start */
	a.cwnd_clamp = CC_U32_MAX;
	while (losses < (u64)cycles + 3) {
		u32 w0 = a.cwnd, j;

		lost = false;
		for (j = 0; j < w0; j++) {
			if (++pkts % interval == 0) {
				a.ssthresh = hstcp_ssthresh(&s, t, a.cwnd);
				a.cwnd = a.ssthresh;
				a.cwnd_cnt = 0;
				losses++;
				lost = true;
				break;	/* one reduction per window */
			}
			a.acked = 1;
			hstcp_cong_avoid(&s, t, 0, &a);
		}
		if (losses >= 3) {	/* skip the first cycles (warm-up) */
			sum += w0;
			rounds += 1;
		}
		(void)lost;
	}
	return sum / rounds;
}

static void test_response_function(void)
{
	static const double ps[] = { 1e-3, 1e-4, 1e-5, 1e-6 };
	unsigned int i;

	for (i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
		double w = hstcp_mean_window(&tab_default, ps[i],
					     ps[i] < 1e-5 ? 12 : 40);
		double want = 0.12 / pow(ps[i], 0.835);
		double err = fabs(w - want) / want;

		printf("    p=%.0e mean w %.1f, 0.12/p^0.835 = %.1f (%.1f%%)\n",
		       ps[i], w, want, err * 100);
		check(err <= 0.15, "p=%g mean w %.1f vs %.1f", ps[i], w, want);
	}
}

/*
 * Linux tcp_highspeed.c for comparison: the first row >= cwnd, a(w) = ai + 1
 * per RTT, md = b in Q8 (index refreshed at loss to isolate the lookup).
 */
static double linux_mean_window(const struct hstcp_table *t, double p, int cycles)
{
	u64 interval = (u64)(1.0 / p + 0.5), pkts = 0, losses = 0;
	u32 cwnd = (u32)(0.12 / pow(p, 0.835)), cnt = 0, ai;
	double sum = 0, rounds = 0;

	while (losses < (u64)cycles + 3) {
		u32 w0 = cwnd, j;

		for (j = 0; j < w0; j++) {
			for (ai = 0; cwnd > t->rows[ai].cwnd && ai < t->nrows - 1; ai++)
				;
			if (++pkts % interval == 0) {
				cwnd -= (cwnd * (t->rows[ai].b_q16 >> 8)) >> 8;
				cnt = 0;
				losses++;
				break;
			}
			cnt += ai + 1;
			if (cnt >= cwnd) {
				cnt -= cwnd;
				cwnd++;
			}
		}
		if (losses >= 3) {
			sum += w0;
			rounds += 1;
		}
	}
	return sum / rounds;
}

static void test_linux_lookup_reference(void)
{
	double w3 = linux_mean_window(&tab_default, 1e-3, 40);
	double w4 = linux_mean_window(&tab_default, 1e-4, 40);
	double r3 = 0.12 / pow(1e-3, 0.835), r4 = 0.12 / pow(1e-4, 0.835);

	printf("    Linux lookup: p=1e-3 mean w %.1f (%+.1f%%), p=1e-4 %.1f (%+.1f%%)\n",
	       w3, (w3 / r3 - 1) * 100, w4, (w4 / r4 - 1) * 100);
	/* documents why hstcp_ab() interpolates (README, hstcp_core.h) */
	check(w3 > 1.3 * r3, "Linux lookup unexpectedly close at 1e-3");
}

static u32 lss_one_rtt(u32 max_ss, u32 w0, u32 acked_per_ack, u32 *cnt)
{
	struct hstcp_state s;
	struct hstcp_params hp;
	struct hstcp_ack a;
	u32 sent = 0;

	hstcp_params_default(&hp);
	hstcp_init(&s, &hp, 0, 0);
	a.cwnd = w0;
	a.cwnd_cnt = *cnt;
	a.ssthresh = CC_U32_MAX;
	a.cwnd_clamp = CC_U32_MAX;
	while (sent < w0) {		/* one RTT: w0 packets acknowledged */
		a.acked = CC_MIN_U32(acked_per_ack, w0 - sent);
		sent += a.acked;
		hstcp_cong_avoid(&s, &tab_default, max_ss, &a);
		check(s.mode == HSTCP_MODE_LSS, "not in LSS at cwnd %u", a.cwnd);
	}
	*cnt = a.cwnd_cnt;
	return a.cwnd;
}

static void test_limited_slow_start(void)
{
	static const u32 max_ss[] = { 20, 50, 100, 1000 };
	unsigned int i, k;
	u32 stretch;

	for (i = 0; i < 4; i++) {
		u32 ms = max_ss[i];

		for (stretch = 1; stretch <= 4; stretch++) {
			/* many RTTs from just above max_ssthresh */
			u32 w = ms + 1, cnt = 0;

			for (k = 0; k < 60; k++) {
				u32 nw = lss_one_rtt(ms, w, stretch, &cnt);

				check(nw - w <= ms / 2,
				      "ms=%u stretch=%u: %u -> %u grew %u > %u",
				      ms, stretch, w, nw, nw - w, ms / 2);
				check(nw - w + 2 >= ms / 2 || w < 2 * ms,
				      "ms=%u: grew only %u at %u", ms, nw - w, w);
				w = nw;
			}
		}
		/* arbitrary starting windows */
		for (k = 0; k < 2000; k++) {
			u32 w0 = rnd_range(ms + 1, 50 * ms), cnt = 0;
			u32 nw = lss_one_rtt(ms, w0, rnd_range(1, 3), &cnt);

			check(nw - w0 <= ms / 2, "ms=%u w0=%u grew %u", ms, w0,
			      nw - w0);
		}
	}
}

static void test_standard_slow_start_and_switch(void)
{
	struct hstcp_state s;
	struct hstcp_params hp;
	struct hstcp_ack a = { .cwnd = 10, .cwnd_cnt = 0, .ssthresh = CC_U32_MAX,
			       .cwnd_clamp = CC_U32_MAX };
	u32 j, w0;

	hstcp_params_default(&hp);
	hstcp_init(&s, &hp, 0, 0);
	/* below max_ssthresh: doubling per RTT */
	w0 = a.cwnd;
	for (j = 0; j < w0; j++) {
		a.acked = 1;
		hstcp_cong_avoid(&s, &tab_default, 100, &a);
	}
	check(a.cwnd == 2 * w0 && s.mode == HSTCP_MODE_SS, "SS: %u", a.cwnd);
	/* slow start stops at ssthresh, the rest goes to CA */
	a.cwnd = 30;
	a.ssthresh = 32;
	a.acked = 5;
	hstcp_cong_avoid(&s, &tab_default, 0, &a);
	check(a.cwnd == 32 && s.mode == HSTCP_MODE_CA, "SS->CA: cwnd %u mode %u",
	      a.cwnd, s.mode);
}

static void test_ca_increase_and_stretch_acks(void)
{
	struct hstcp_state s1, s2;
	struct hstcp_params hp;
	struct hstcp_ack a1 = { .cwnd = 5000, .ssthresh = 10, .cwnd_clamp = CC_U32_MAX };
	struct hstcp_ack a2 = a1;
	u32 j, a_q8, b_q16;
	double expect_a;

	hstcp_params_default(&hp);
	hstcp_init(&s1, &hp, 0, 0);
	hstcp_init(&s2, &hp, 0, 0);
	hstcp_ab(&tab_default, hstcp_table_index(&tab_default, 5000), 5000,
		 &a_q8, &b_q16);
	expect_a = a_q8 / 256.0;
	/* interpolated between the rows 4596 (a 19) and 5036 (a 20) */
	check(expect_a > 19.8 && expect_a < 19.99, "a(5000) = %.3f", expect_a);
	check(fabs(b_q16 / 65536.0 - hstcp_gen_b(&(struct hstcp_gen){ 38, 83000, 1e-7, 0.1 }, 5000)) < 0.002,
	      "b(5000) = %.4f", b_q16 / 65536.0);
	/* one RTT of single ACKs vs one RTT of stretch ACKs (3 packets each) */
	for (j = 0; j < 5000; j++) {
		a1.acked = 1;
		hstcp_cong_avoid(&s1, &tab_default, 0, &a1);
	}
	for (j = 0; j < 5000; j += 3) {
		a2.acked = CC_MIN_U32(3, 5000 - j);
		hstcp_cong_avoid(&s2, &tab_default, 0, &a2);
	}
	check(a1.cwnd - 5000 >= floor(expect_a) - 1 &&
	      a1.cwnd - 5000 <= ceil(expect_a),
	      "per-RTT increase %u, a(w) = %.2f", a1.cwnd - 5000, expect_a);
	check(a1.cwnd == a2.cwnd, "stretch ACKs: %u vs %u", a2.cwnd, a1.cwnd);
	/* below Low_Window: exactly Reno's one packet per RTT */
	a1.cwnd = 30;
	a1.cwnd_cnt = 0;
	for (j = 0; j < 30; j++) {
		a1.acked = 1;
		hstcp_cong_avoid(&s1, &tab_default, 0, &a1);
	}
	check(a1.cwnd == 31, "Reno region: %u", a1.cwnd);
}

static void test_ssthresh_fresh_index(void)
{
	struct hstcp_state s;
	struct hstcp_params hp;
	u32 ss, expect, a_q8, b_q16;

	hstcp_params_default(&hp);
	hstcp_init(&s, &hp, 0, 0);
	/* a loss that ends slow start: state still at index 0 */
	s.ai = 0;
	ss = hstcp_ssthresh(&s, &tab_default, 10000);
	hstcp_ab(&tab_default, ref_index(&tab_default, 10000), 10000, &a_q8,
		 &b_q16);
	expect = 10000 - (u32)(((u64)10000 * b_q16) >> 16);
	check(ss == expect, "ssthresh %u != %u", ss, expect);
	check(s.ai == ref_index(&tab_default, 10000), "index not refreshed");
	check(ss > 7500, "stale index would give 5000, got %u", ss);
	check(hstcp_ssthresh(&s, &tab_default, 30) == 15, "Reno region halves");
	check(hstcp_ssthresh(&s, &tab_default, 3) == 2, "never below 2");
}

/* ===================================================================== */
/* FAST                                                                  */
/* ===================================================================== */

static void test_fast_carry_matches_float(void)
{
	struct fast_params p;
	int i;

	fast_params_default(&p);
	p.mode = FAST_MODE_CARRY;
	for (i = 0; i < 200000; i++) {
		u32 w = rnd_range(2, 1U << 20), w_old = rnd_range(1, 1U << 20);
		u32 base = rnd_range(1, 2000000);
		u64 avg_q16 = ((u64)base << 16) +
			      (u64)(rnd_unit() * 3.0 * base * 65536.0);
		u32 carry = rnd_range(0, 65535), c2 = carry, target, wn;
		long double g, x, got, tol;

		p.alpha = rnd_range(1, 10000);
		p.gamma_den = rnd_range(1, 1000);
		p.gamma_num = rnd_range(1, p.gamma_den);
		g = (long double)p.gamma_num / p.gamma_den;
		x = (1 - g) * w + g * ((long double)base * 65536.0L / avg_q16 *
				       w_old + p.alpha) + carry / 65536.0L;
		if (x >= 2.0L * w)
			x = 2.0L * w;
		if (x < 2)
			x = 2;
		wn = fast_window_update(&p, w, w_old, base, avg_q16, &c2, &target);
		got = wn + c2 / 65536.0L;
		tol = 4 / 65536.0L + w_old / 4294967296.0L;
		check(got <= x + 1e-9L && got >= x - tol,
		      "w=%u w_old=%u base=%u avg=%llu a=%u g=%u/%u: %.6Lf vs %.6Lf",
		      w, w_old, base, (unsigned long long)avg_q16, p.alpha,
		      p.gamma_num, p.gamma_den, got, x);
		if (x - floorl(x) > tol)	/* not at an integer boundary */
			check(wn == (u32)floorl(x), "floor %u vs %.6Lf", wn, x);
	}
}

static void test_fast_floor_matches_float(void)
{
	struct fast_params p;
	int i;

	fast_params_default(&p);
	for (i = 0; i < 100000; i++) {
		u32 w = rnd_range(2, 1U << 20), w_old = rnd_range(1, 1U << 20);
		u32 base = rnd_range(1, 2000000), carry = 12345, target, wn;
		u64 avg_q16 = ((u64)base << 16) +
			      (u64)(rnd_unit() * 2.0 * base * 65536.0);
		long double x;

		p.alpha = rnd_range(1, 10000);
		x = 0.5L * w + 0.5L * ((long double)base * 65536.0L / avg_q16 *
				       w_old + p.alpha);
		if (x >= 2.0L * w)
			x = 2.0L * w;
		wn = fast_window_update(&p, w, w_old, base, avg_q16, &carry,
					&target);
		check(carry == 0, "floor mode kept a carry");
		check(wn <= floorl(x) && wn + 1 >= floorl(x) - 0 &&
		      (wn == (u32)floorl(x) || x - floorl(x) < 1e-3L),
		      "floor: %u vs %.6Lf", wn, x);
		check(target == (u32)floorl((long double)base * 65536.0L /
					   avg_q16 * w_old + p.alpha) ||
		      target + 1 == (u32)floorl((long double)base * 65536.0L /
					       avg_q16 * w_old + p.alpha),
		      "target %u", target);
	}
}

/* Iterate the update with fixed d, D and w_old = w (steady state). */
static double fast_equilibrium(u32 alpha, u32 d, u64 D_q16, u32 mode, u32 w0)
{
	struct fast_params p;
	u32 w = w0, carry = 0, target, prev = 0;
	int i;

	fast_params_default(&p);
	p.alpha = alpha;
	p.mode = mode;
	for (i = 0; i < 5000; i++) {
		prev = w;
		w = fast_window_update(&p, w, w, d, D_q16, &carry, &target);
		if (mode == FAST_MODE_FLOOR && w == prev && i > 10)
			break;
	}
	return w + carry / 65536.0;
}

static void test_fast_floor_equilibrium(void)
{
	static const u32 alphas[] = { 2, 3, 5, 10, 20, 50, 100, 200, 1000 };
	static const u32 ds[] = { 100, 1000, 20000, 180000 };
	static const double ks[] = { 0.01, 0.05, 0.2, 0.5, 1, 3 };
	unsigned int i, j, k;

	for (i = 0; i < 9; i++)
		for (j = 0; j < 4; j++)
			for (k = 0; k < 6; k++) {
				u32 a = alphas[i], d = ds[j];
				u64 D = (u64)((double)d * (1 + ks[k]) * 65536.0);
				double Df = D / 65536.0;
				double hi = a * Df / (Df - d);
				double lo = (a - 2.0) * Df / (Df - d);
				double up = fast_equilibrium(a, d, D, FAST_MODE_FLOOR, 2);
				double dn = fast_equilibrium(a, d, D, FAST_MODE_FLOOR,
							     (u32)(10 * hi) + 10);
				double c = fast_equilibrium(a, d, D, FAST_MODE_CARRY, 2);

				/* the update never goes below 2 */
				lo = lo < 2 ? 2 : lo;
				check(up >= lo - 1e-6 && up <= hi + 1e-6,
				      "floor a=%u d=%u D=%.1f from below: %.0f not in [%.2f, %.2f]",
				      a, d, Df, up, lo, hi);
				check(dn >= lo - 1e-6 && dn <= hi + 1e-6,
				      "floor a=%u d=%u D=%.1f from above: %.0f not in [%.2f, %.2f]",
				      a, d, Df, dn, lo, hi);
				check(fabs(c - hi) <= 1.0 || hi < 2,
				      "carry a=%u d=%u D=%.1f: %.3f vs %.3f", a, d,
				      Df, c, hi);
			}
}

static void test_fast_caps(void)
{
	struct fast_params p;
	u32 carry = 0, target, w;

	fast_params_default(&p);
	p.alpha = 10000;
	/* huge alpha: at most doubling */
	w = fast_window_update(&p, 10, 10, 1000, (u64)1000 << 16, &carry, &target);
	check(w == 20, "2w cap: %u", w);
	check(target == 10010, "target %u", target);
	/* big queue, tiny alpha: never below 2 */
	p.alpha = 1;
	w = fast_window_update(&p, 2, 2, 1000, (u64)100000 << 16, &carry, &target);
	check(w == 2, "floor of 2: %u", w);
	check(fast_ssthresh(100) == 50 && fast_ssthresh(3) == 2 &&
	      fast_ssthresh(0) == 2, "ssthresh halves, >= 2");
	/* gamma = 1: the window jumps to the target (capped at 2w) */
	p.alpha = 10;
	p.gamma_num = 1;
	p.gamma_den = 1;
	w = fast_window_update(&p, 100, 100, 1000, (u64)2000 << 16, &carry,
			       &target);
	check(w == 60, "gamma=1: %u", w);
}

static void test_fast_ewma(void)
{
	struct fast_state s;
	struct fast_params p;
	double ref;
	int i;

	fast_params_default(&p);
	fast_init(&s, &p, 10, 0, 0, 0);
	fast_rtt_sample(&s, 1000, 10);
	check(fast_avg_rtt_us(&s) == 1000 && s.base_rtt_us == 1000, "first sample");
	/* cwnd 10: weight min(3/10, 1/8) = 1/8 */
	ref = 1000;
	for (i = 0; i < 20; i++) {
		fast_rtt_sample(&s, 2000, 10);
		ref += (2000 - ref) / 8;
	}
	check(fabs(s.avg_rtt_q16 / 65536.0 - ref) < 0.01, "cap 1/8: %.3f vs %.3f",
	      s.avg_rtt_q16 / 65536.0, ref);
	/* cwnd 300: weight 3/300 = 0.01, going down */
	for (i = 0; i < 50; i++) {
		fast_rtt_sample(&s, 1500, 300);
		ref += (1500 - ref) * 0.01;
	}
	/* 3/300 in Q16 truncates to 655/65536: 0.05% slower */
	check(fabs(s.avg_rtt_q16 / 65536.0 - ref) < 0.2, "3/cwnd: %.3f vs %.3f",
	      s.avg_rtt_q16 / 65536.0, ref);
	check(s.base_rtt_us == 1000, "base %u", s.base_rtt_us);
	fast_rtt_sample(&s, 800, 300);
	check(s.base_rtt_us == 800, "base tracks the minimum");
	/* configurable cap: 1/2 with a small window */
	s.ewma_cap_q16 = 32768;
	ref = s.avg_rtt_q16 / 65536.0;
	fast_rtt_sample(&s, 3000, 2);
	ref += (3000 - ref) / 2;
	check(fabs(s.avg_rtt_q16 / 65536.0 - ref) < 0.01, "cap 1/2: %.3f vs %.3f",
	      s.avg_rtt_q16 / 65536.0, ref);
}

static void test_fast_backlog_and_pacing(void)
{
	struct fast_state s;
	struct fast_params p;

	fast_params_default(&p);
	fast_init(&s, &p, 10, 0, 0, 0);
	check(fast_backlog(&s, 100) == 0, "no sample: backlog 0");
	s.base_rtt_us = 1000;
	s.avg_rtt_q16 = (u64)1250 << 16;
	check(fast_backlog(&s, 1000) == 200, "backlog %u != 200",
	      fast_backlog(&s, 1000));
	check(fast_queue_delay_us(&s) == 250, "qdelay");
	/* 1000 pkts * 1448 B / 1.25 ms = 1158.4 MB/s, at 100% */
	check(fast_pacing_rate(&s, 1000, 1448, 100) == 1158400000ULL,
	      "pacing %llu", (unsigned long long)fast_pacing_rate(&s, 1000, 1448, 100));
	check(fast_pacing_rate(&s, 1000, 1448, 150) == 1737600000ULL, "pacing 150%%");
}

static void test_fast_params(void)
{
	struct fast_params g, n, z;

	fast_params_default(&g);
	memset(&n, 0, sizeof(n));
	n.alpha = 60;
	n.set_mask = FAST_P_ALPHA;
	fast_params_merge(&g, &n);
	check(g.alpha == 60 && g.gamma_den == 2 && g.mode == FAST_MODE_FLOOR,
	      "merge overrides only alpha");
	memset(&z, 0, sizeof(z));
	fast_params_sanitize(&z);
	check(z.alpha == 1 && z.gamma_den == 2 && z.gamma_num == 1 &&
	      z.ewma_cap_q16 == 8192 && z.period_us >= FAST_PERIOD_US_MIN,
	      "sanitize zeroed params");
	z.alpha = 99999;
	z.gamma_num = 5;
	z.gamma_den = 4;
	fast_params_sanitize(&z);
	check(z.alpha == FAST_ALPHA_MAX && z.gamma_num == 1 && z.gamma_den == 2,
	      "sanitize out-of-range");
}

/*
 * Closed loop on a fluid bottleneck: rate mu packets/µs, propagation RTT d.
 * Drives fast_ack_begin/fast_update/fast_ack_end and fast_rtt_sample the way
 * the BPF glue does, one ACK per packet. The backlog must settle at alpha
 * (floor mode: within [alpha - 2, alpha]).
 */
static void fast_fluid(u32 mode, u32 period_kind, u32 alpha, u32 *w_out,
		       double *backlog_out, int *updates_out)
{
	const double mu = 0.1;		/* packets per µs: BDP 1000 at 10 ms */
	const u32 d = 10000;		/* µs */
	struct fast_state s;
	struct fast_params p;
	struct fast_ack a = { 0 };
	u32 una = 0, nxt;
	u64 now = 0;
	int round, updates = 0;
	double q = 0;

	fast_params_default(&p);
	p.alpha = alpha;
	p.mode = mode;
	p.period_kind = period_kind;
	p.period_us = 25000;
	a.cwnd = 10;
	a.cwnd_clamp = CC_U32_MAX;
	a.ssthresh = CC_U32_MAX;
	a.cwnd_limited = true;
	nxt = una + a.cwnd;
	fast_init(&s, &p, a.cwnd, nxt, now, 0);
	for (round = 0; round < 400; round++) {
		u32 w0 = a.cwnd, j;
		double D;

		q = w0 > mu * d ? w0 - mu * d : 0;
		D = d + q / mu;
		for (j = 0; j < w0; j++) {
			now += (u64)(D / w0);
			una++;
			fast_rtt_sample(&s, (u32)D, a.cwnd);
			a.ack = una;
			a.acked = 1;
			a.now_us = now;
			a.snd_nxt = una + a.cwnd;
			if (fast_ack_begin(&s, &a)) {
				fast_update(&s, &p, &a);
				updates++;
			}
			fast_ack_end(&s, &a);
		}
	}
	*w_out = a.cwnd;
	*backlog_out = q;
	*updates_out = updates;
}

static void test_fast_closed_loop(void)
{
	static const u32 alphas[] = { 10, 50, 200 };
	unsigned int i, k;
	u32 w;
	double q;
	int up;

	for (i = 0; i < 3; i++)
		for (k = 0; k < 3; k++) {
			u32 kind = k;	/* rtt, 2rtt, 25 ms */

			fast_fluid(FAST_MODE_FLOOR, kind, alphas[i], &w, &q, &up);
			check(q >= alphas[i] - 2 - 1e-9 && q <= alphas[i] + 1e-9,
			      "floor alpha=%u period=%u: backlog %.2f (w %u)",
			      alphas[i], kind, q, w);
			fast_fluid(FAST_MODE_CARRY, kind, alphas[i], &w, &q, &up);
			check(fabs(q - alphas[i]) <= 1.0,
			      "carry alpha=%u period=%u: backlog %.2f (w %u)",
			      alphas[i], kind, q, w);
		}
	/* update counts: 2rtt updates about half as often as rtt */
	{
		int u1, u2;

		fast_fluid(FAST_MODE_FLOOR, FAST_PERIOD_RTT, 50, &w, &q, &u1);
		fast_fluid(FAST_MODE_FLOOR, FAST_PERIOD_2RTT, 50, &w, &q, &u2);
		check(u2 * 2 >= u1 - 2 && u2 * 2 <= u1 + 2,
		      "updates rtt %d vs 2rtt %d", u1, u2);
	}
}

static void test_fast_mi_phase(void)
{
	struct fast_state s;
	struct fast_params p;
	struct fast_ack a = { .cwnd = 10, .cwnd_clamp = CC_U32_MAX,
			      .ssthresh = CC_U32_MAX, .cwnd_limited = true };
	u32 j;

	fast_params_default(&p);
	fast_init(&s, &p, 10, 10, 0, 0);
	fast_rtt_sample(&s, 1000, 10);
	/* within the first RTT: per-ACK growth, capped at doubling */
	for (j = 1; j <= 30; j++) {
		a.ack = j > 10 ? 10 : j;	/* no RTT boundary yet */
		a.acked = 1;
		a.snd_nxt = 10;
		check(!fast_ack_begin(&s, &a), "no update before an RTT");
		fast_ack_end(&s, &a);
	}
	check(a.cwnd == 20, "MI doubles per RTT at most: %u", a.cwnd);
	/* not cwnd-limited: no growth */
	a.cwnd_limited = false;
	a.ack = 10;
	s.mi_cap = 1000;
	fast_ack_begin(&s, &a);
	check(a.cwnd == 20, "app-limited growth");
	/* RTO: MI back to ssthresh */
	fast_on_loss(&s, 40, 100, true);
	check((s.flags & FAST_F_MI) && s.mi_cap == 40, "RTO re-enters MI");
	fast_on_loss(&s, 40, 100, false);
	check(!(s.flags & FAST_F_MI) && s.w_boundary == 40 && s.carry_q16 == 0,
	      "loss leaves MI, restarts the period");
}

int main(void)
{
	run("hstcp: default table == RFC 3649 / Linux table", test_default_table_matches_rfc);
	run("hstcp: generator from default params reproduces the RFC table", test_generator_reproduces_rfc_table);
	run("hstcp: response coefficients 0.078/w^1.2", test_response_coefficients);
	run("hstcp: table for default params is the RFC table", test_table_for_defaults_is_rfc_table);
	run("hstcp: index lookup == reference walk (last row <= cwnd)", test_index_matches_linux_walk);
	run("hstcp: generator rejects bad parameters", test_generator_rejects_bad_params);
	run("hstcp: table check (module's table parameter)", test_table_check);
	run("hstcp: response function w = 0.12/p^0.835 (deterministic loss)", test_response_function);
	run("hstcp: Linux's lookup, for reference, overshoots at p=1e-3", test_linux_lookup_reference);
	run("hstcp: Limited Slow-Start <= max_ssthresh/2 per RTT", test_limited_slow_start);
	run("hstcp: standard slow start, switch to CA at ssthresh", test_standard_slow_start_and_switch);
	run("hstcp: CA increase a(w) per RTT, stretch ACKs", test_ca_increase_and_stretch_acks);
	run("hstcp: ssthresh uses a fresh index", test_ssthresh_fresh_index);
	run("fast: carry mode == float reference (randomized)", test_fast_carry_matches_float);
	run("fast: floor mode == floored float reference (randomized)", test_fast_floor_matches_float);
	run("fast: floor equilibrium in [(a-2)D/(D-d), aD/(D-d)], carry at aD/(D-d)", test_fast_floor_equilibrium);
	run("fast: 2w cap, floor of 2, ssthresh, gamma", test_fast_caps);
	run("fast: avgRTT EWMA weight min(3/cwnd, cap)", test_fast_ewma);
	run("fast: backlog and pacing rate", test_fast_backlog_and_pacing);
	run("fast: params merge and sanitize", test_fast_params);
	run("fast: closed loop settles at alpha packets queued", test_fast_closed_loop);
	run("fast: MI phase, app-limited, loss/RTO", test_fast_mi_phase);
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
