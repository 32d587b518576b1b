/*
 * loss.c - loss models (see loss.h for the contract).
 *
 * Why a fixed number of draws per packet: if a model drew a variable number
 * of random numbers (e.g. only drawing the loss decision when in the bad
 * state), a single changed parameter would shift every later decision.  With
 * exactly LOSS_DRAWS_PER_PKT draws per packet the k-th packet always uses
 * draws 2k and 2k+1 of the stream.
 */
#include "loss.h"
#include "parse.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Probability -> integer threshold (P * 2^63); P already validated. */
static uint64_t prob_thr(double p)
{
	if (p <= 0.0)
		return 0;
	if (p >= 1.0)
		return PRNG_PROB_ONE;
	return (uint64_t)ldexp(p, 63);
}

static int parse_prob(const char *s, size_t n, double *out)
{
	char buf[64];
	char *end;
	double v;

	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	/* Plain decimal only: no sign, no "nan"/"inf", no hex floats. */
	if (strspn(buf, "0123456789.eE-+") != n || buf[0] == '-' ||
	    buf[0] == '+' || strchr(buf, 'x') || strchr(buf, 'X'))
		return -1;
	errno = 0;
	v = strtod(buf, &end);
	if (errno || *end || end == buf || !isfinite(v) || v < 0.0 || v > 1.0)
		return -1;
	*out = v;
	return 0;
}

int loss_parse(struct loss_model *m, const char *spec, char *err,
	       size_t errlen)
{
	static const char usage[] =
		"expected none, bernoulli:P, every_nth:N, at:I1[,I2...] or ge:p:r[:h[:k]]";

	memset(m, 0, sizeof(*m));
	m->type = LOSS_NONE;
	if (!spec || !strcmp(spec, "none"))
		return 0;

	if (!strncmp(spec, "bernoulli:", 10)) {
		const char *v = spec + 10;

		if (parse_prob(v, strlen(v), &m->p)) {
			snprintf(err, errlen,
				 "invalid loss model '%s': P must be a number in [0,1]",
				 spec);
			return -1;
		}
		m->type = LOSS_BERNOULLI;
		m->thr_loss = prob_thr(m->p);
		return 0;
	}

	if (!strncmp(spec, "every_nth:", 10)) {
		if (emu_parse_count(spec + 10, &m->nth) || m->nth == 0) {
			snprintf(err, errlen,
				 "invalid loss model '%s': N must be an integer >= 1",
				 spec);
			return -1;
		}
		m->type = LOSS_EVERY_NTH;
		return 0;
	}

	if (!strncmp(spec, "at:", 3)) {
		const char *s = spec + 3;

		for (;;) {
			const char *comma = strchr(s, ',');
			size_t len = comma ? (size_t)(comma - s) : strlen(s);
			char num[24];
			uint64_t v;

			if (m->n_at == LOSS_AT_MAX || len == 0 ||
			    len >= sizeof(num)) {
				m->n_at = 0;
				break;
			}
			memcpy(num, s, len);
			num[len] = '\0';
			if (emu_parse_count(num, &v) || v == 0 ||
			    (m->n_at && v <= m->at[m->n_at - 1])) {
				m->n_at = 0;
				break;
			}
			m->at[m->n_at++] = v;
			if (!comma)
				break;
			s = comma + 1;
		}
		if (!m->n_at) {
			snprintf(err, errlen,
				 "invalid loss model '%s': expected at:I1[,I2...] with 1 to %d strictly increasing integers >= 1",
				 spec, LOSS_AT_MAX);
			return -1;
		}
		m->type = LOSS_AT;
		return 0;
	}

	if (!strncmp(spec, "ge:", 3)) {
		double v[4] = { 0.0, 0.0, 0.0, 1.0 };	/* p, r, h=0, k=1 */
		const char *s = spec + 3;
		int n = 0;

		for (;;) {
			const char *colon = strchr(s, ':');
			size_t len = colon ? (size_t)(colon - s) : strlen(s);

			if (n == 4 || parse_prob(s, len, &v[n])) {
				n = -1;
				break;
			}
			n++;
			if (!colon)
				break;
			s = colon + 1;
		}
		if (n < 2) {
			snprintf(err, errlen,
				 "invalid loss model '%s': expected ge:p:r[:h[:k]] with each value in [0,1]",
				 spec);
			return -1;
		}
		m->type = LOSS_GE;
		m->p = v[0];
		m->r = v[1];
		m->h = v[2];
		m->k = v[3];
		m->thr_p = prob_thr(m->p);
		m->thr_r = prob_thr(m->r);
		m->thr_bad_loss = prob_thr(1.0 - m->h);
		m->thr_good_loss = prob_thr(1.0 - m->k);
		return 0;
	}

	snprintf(err, errlen, "unknown loss model '%s' (%s)", spec, usage);
	return -1;
}

void loss_seed(struct loss_model *m, uint64_t seed, unsigned int dir)
{
	prng_seed(&m->rng, seed, dir, PRNG_STREAM_LOSS);
	m->bad = false;		/* GE starts in the good state, like netem */
	m->next_index = 0;
}

/* One packet's decision; consumes exactly LOSS_DRAWS_PER_PKT draws. */
static bool loss_step(struct loss_model *m, uint64_t index)
{
	uint64_t d1 = prng_next(&m->rng);
	uint64_t d2 = prng_next(&m->rng);

	switch (m->type) {
	case LOSS_BERNOULLI:
		return prng_chance(d1, m->thr_loss);
	case LOSS_EVERY_NTH:
		return (index + 1) % m->nth == 0;
	case LOSS_AT: {
		unsigned int i;

		for (i = 0; i < m->n_at; i++)
			if (m->at[i] == index + 1)
				return true;
		return false;
	}
	case LOSS_GE:
		/* Transition first, then lose according to the new state. */
		if (!m->bad) {
			if (prng_chance(d1, m->thr_p))
				m->bad = true;
		} else {
			if (prng_chance(d1, m->thr_r))
				m->bad = false;
		}
		return prng_chance(d2, m->bad ? m->thr_bad_loss :
						m->thr_good_loss);
	case LOSS_NONE:
	default:
		return false;
	}
}

bool loss_drop(struct loss_model *m, uint64_t index)
{
	bool drop;

	if (index < m->next_index)
		return false;
	while (m->next_index < index)
		(void)loss_step(m, m->next_index++);
	drop = loss_step(m, index);
	m->next_index = index + 1;
	return drop;
}

int loss_describe(const struct loss_model *m, char *buf, size_t len)
{
	switch (m->type) {
	case LOSS_BERNOULLI:
		return snprintf(buf, len, "bernoulli:%.10g", m->p);
	case LOSS_EVERY_NTH:
		return snprintf(buf, len, "every_nth:%llu",
				(unsigned long long)m->nth);
	case LOSS_AT: {
		unsigned int i;
		int k = snprintf(buf, len, "at:");

		for (i = 0; i < m->n_at && k >= 0 && (size_t)k < len; i++)
			k += snprintf(buf + k, len - (size_t)k, "%s%llu",
				      i ? "," : "", (unsigned long long)m->at[i]);
		return k;
	}
	case LOSS_GE:
		return snprintf(buf, len, "ge:%.10g:%.10g:%.10g:%.10g", m->p,
				m->r, m->h, m->k);
	case LOSS_NONE:
	default:
		return snprintf(buf, len, "none");
	}
}
