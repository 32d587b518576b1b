/*
 * test_loss.c - unit tests of linkemu's loss models (loss.c): exact
 * every_nth pattern, Bernoulli rate within statistical bounds, Gilbert-
 * Elliott long-run rate against theory, seed/direction determinism by packet
 * index, the fixed PRNG budget per packet, and spec parsing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../loss.h"
#include "check.h"

static struct loss_model model(const char *spec, uint64_t seed,
			       unsigned int dir)
{
	struct loss_model m;
	char err[256];

	if (loss_parse(&m, spec, err, sizeof(err))) {
		printf("  unexpected parse error: %s\n", err);
		memset(&m, 0, sizeof(m));
	}
	loss_seed(&m, seed, dir);
	return m;
}

static uint64_t count_drops(const char *spec, uint64_t seed, uint64_t n)
{
	struct loss_model m = model(spec, seed, 0);
	uint64_t i, drops = 0;

	for (i = 0; i < n; i++)
		drops += loss_drop(&m, i);
	return drops;
}

static void test_every_nth_exact(void)
{
	struct loss_model m = model("every_nth:5", 1, 0);
	uint64_t i;
	int bad = 0;

	for (i = 0; i < 1000; i++)
		if (loss_drop(&m, i) != ((i + 1) % 5 == 0))
			bad++;
	CHECK(bad == 0, "%d wrong decisions", bad);
	CHECK(count_drops("every_nth:1", 1, 100) == 100, "every_nth:1 = all");
	CHECK(count_drops("every_nth:1000", 9, 999) == 0, "none before 1000");
}

/* at: drops exactly the listed packets, whatever the seed, skips included. */
static void test_at_exact(void)
{
	struct loss_model m = model("at:3,20000,20001", 5, 0);
	char desc[64];
	uint64_t i, drops = 0;

	for (i = 0; i < 30000; i += (i < 10 ? 1 : 7))
		if (loss_drop(&m, i))
			drops++;
	/* a stride of 7 from index 10 steps over indices 19999 and 20000 */
	CHECK(drops == 1, "%lu drops with a stride of 7", (unsigned long)drops);
	CHECK(count_drops("at:3,20000,20001", 1, 30000) == 3, "three planned");
	CHECK(count_drops("at:20000", 9, 19999) == 0, "none before 20000");
	m = model("at:3,20000,20001", 1, 0);
	CHECK(!loss_drop(&m, 19998) && loss_drop(&m, 19999) && loss_drop(&m, 20000) &&
	      !loss_drop(&m, 20001), "the 20000th and 20001st");
	loss_describe(&m, desc, sizeof(desc));
	CHECK(!strcmp(desc, "at:3,20000,20001"), "describe: %s", desc);
}

static void test_bernoulli_rate(void)
{
	const uint64_t n = 1000000;
	uint64_t d = count_drops("bernoulli:0.01", 42, n);
	double sigma = sqrt((double)n * 0.01 * 0.99);

	/* 5 sigma: fails by chance with probability ~6e-7. */
	CHECK(fabs((double)d - 10000.0) < 5 * sigma, "%lu drops of 1e6",
	      (unsigned long)d);
	d = count_drops("bernoulli:0.3", 43, n);
	sigma = sqrt((double)n * 0.3 * 0.7);
	CHECK(fabs((double)d - 300000.0) < 5 * sigma, "%lu drops of 1e6 (0.3)",
	      (unsigned long)d);
	CHECK(count_drops("bernoulli:0", 1, 100000) == 0, "P=0 never");
	CHECK(count_drops("bernoulli:1", 1, 100000) == 100000, "P=1 always");
	CHECK(count_drops("none", 1, 100000) == 0, "none");
}

static size_t drop_list(const char *spec, uint64_t seed, unsigned int dir,
			uint64_t *out, size_t max, uint64_t n)
{
	struct loss_model m = model(spec, seed, dir);
	size_t k = 0;
	uint64_t i;

	for (i = 0; i < n && k < max; i++)
		if (loss_drop(&m, i))
			out[k++] = i;
	return k;
}

static void test_seed_determinism(void)
{
	static const char *const specs[] = {
		"bernoulli:0.01", "ge:0.01:0.3", "ge:0.02:0.2:0.5:0.999",
	};
	enum { MAX = 20000 };
	uint64_t *a = calloc(MAX, 8), *b = calloc(MAX, 8);
	size_t s, na, nb;

	for (s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
		na = drop_list(specs[s], 1234, 0, a, MAX, 200000);
		nb = drop_list(specs[s], 1234, 0, b, MAX, 200000);
		CHECK(na > 100 && na == nb && !memcmp(a, b, na * 8),
		      "%s: same seed must give the same drop indices", specs[s]);
		nb = drop_list(specs[s], 1235, 0, b, MAX, 200000);
		CHECK(na != nb || memcmp(a, b, na * 8),
		      "%s: another seed must differ", specs[s]);
		nb = drop_list(specs[s], 1234, 1, b, MAX, 200000);
		CHECK(na != nb || memcmp(a, b, na * 8),
		      "%s: the other direction must differ", specs[s]);
	}
	free(a);
	free(b);
}

/* Every model uses exactly LOSS_DRAWS_PER_PKT draws, whatever happens. */
static void test_fixed_draws(void)
{
	static const char *const specs[] = {
		"none", "bernoulli:0.5", "every_nth:3", "ge:0.3:0.3:0.2:0.9",
		"at:1,5,9",
	};
	size_t s;

	for (s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
		struct loss_model m = model(specs[s], 77, 1);
		struct prng ref;
		uint64_t i;

		prng_seed(&ref, 77, 1, PRNG_STREAM_LOSS);
		for (i = 0; i < 10000; i++) {
			(void)loss_drop(&m, i);
			(void)prng_next(&ref);
			(void)prng_next(&ref);
		}
		CHECK(!memcmp(&m.rng, &ref, sizeof(ref)),
		      "%s: PRNG not at 2 draws per packet", specs[s]);
	}
}

/* Asking only for some indices gives the same answers as asking for all. */
static void test_skip_ahead(void)
{
	struct loss_model all = model("ge:0.05:0.2:0.1:0.95", 5, 0);
	struct loss_model some = model("ge:0.05:0.2:0.1:0.95", 5, 0);
	uint64_t i;
	int bad = 0;

	for (i = 0; i < 50000; i++) {
		bool d = loss_drop(&all, i);

		if (i % 7 == 3 && loss_drop(&some, i) != d)
			bad++;
	}
	CHECK(bad == 0, "%d differences", bad);
	CHECK(!loss_drop(&some, 10), "past index returns false");
}

static void test_ge_long_run(void)
{
	const uint64_t n = 2000000;
	struct loss_model m = model("ge:0.01:0.1", 99, 0);
	double p = 0.01, r = 0.1, pi_bad = p / (p + r), rate;
	uint64_t i, drops = 0, bursts = 0;
	bool prev = false;

	for (i = 0; i < n; i++) {
		bool d = loss_drop(&m, i);

		drops += d;
		bursts += d && !prev;
		prev = d;
	}
	rate = (double)drops / (double)n;
	/* sd ~ 0.00084 here (correlated chain); allow ~6 sd. */
	CHECK(fabs(rate - pi_bad) < 0.005, "loss %.5f vs pi_bad %.5f", rate,
	      pi_bad);
	/* h = 0: a loss burst is a bad-state sojourn, mean 1/r. */
	CHECK(fabs((double)drops / (double)bursts - 1.0 / r) < 1.0,
	      "mean burst %.2f vs %.2f", (double)drops / (double)bursts, 1 / r);

	/* Full 4-parameter form: loss = pi_b (1-h) + pi_g (1-k). */
	{
		double pp = 0.05, rr = 0.2, h = 0.3, k = 0.99;
		double pb = pp / (pp + rr), expect = pb * (1 - h) +
						     (1 - pb) * (1 - k);

		rate = (double)count_drops("ge:0.05:0.2:0.3:0.99", 7, n) /
		       (double)n;
		CHECK(fabs(rate - expect) < 0.004, "loss %.5f vs %.5f", rate,
		      expect);
	}
	CHECK(count_drops("ge:0:0.5", 3, 100000) == 0, "p=0 never leaves good");
	CHECK(count_drops("ge:1:0", 3, 1000) == 1000, "p=1,r=0: always bad");
}

static void test_parse(void)
{
	static const char *const good[] = {
		"none", "bernoulli:0", "bernoulli:1", "bernoulli:0.01",
		"bernoulli:1e-3", "every_nth:1", "every_nth:100", "ge:0.1:0.2",
		"ge:0.1:0.2:0.3", "ge:0.1:0.2:0.3:0.4", "ge:0:1:0:1",
		"at:1", "at:1,2,3", "at:18446744073709551615",
		"at:1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16",
	};
	static const char *const bad[] = {
		"", "bogus", "bernoulli", "bernoulli:", "bernoulli:1.5",
		"bernoulli:-0.1", "bernoulli:abc", "bernoulli:nan",
		"bernoulli:inf", "bernoulli:0.1x", "bernoulli:+0.1",
		"bernoulli:0x1p-3", "every_nth:0", "every_nth:-3",
		"every_nth:2.5", "every_nth:", "ge:0.1", "ge:0.1:2",
		"ge:0.1:0.2:0.3:0.4:0.5", "ge:", "ge:0.1::0.2", "gilbert:0.1:0.2",
		"Bernoulli:0.1", "at:", "at:0", "at:2,2", "at:3,2", "at:1,,2",
		"at:1,", "at:,1", "at:-1", "at:1.5", "at:18446744073709551616",
		"at:1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", "at:nan",
	};
	struct loss_model m;
	char err[256], desc[128];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK(!loss_parse(&m, good[i], err, sizeof(err)),
		      "'%s' rejected: %s", good[i], err);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK(loss_parse(&m, bad[i], err, sizeof(err)) && err[0],
		      "'%s' accepted", bad[i]);
	}
	CHECK(!loss_parse(&m, "ge:0.1:0.2", err, sizeof(err)) &&
	      m.h == 0.0 && m.k == 1.0, "GE defaults h=0 k=1");
	loss_describe(&m, desc, sizeof(desc));
	CHECK(!strcmp(desc, "ge:0.1:0.2:0:1"),
	      "describe: %s", desc);
}

int main(void)
{
	RUN(test_every_nth_exact);
	RUN(test_at_exact);
	RUN(test_bernoulli_rate);
	RUN(test_seed_determinism);
	RUN(test_fixed_draws);
	RUN(test_skip_ahead);
	RUN(test_ge_long_run);
	RUN(test_parse);
	CHECK_DONE();
}
