/*
 * loss.h - seeded, per-packet-index deterministic loss models for linkemu.
 *
 * Role: decide, for each packet arriving in one direction, whether the link
 * loses it.  The decision sequence is a pure function of (model, seed,
 * direction, packet index): every model consumes exactly LOSS_DRAWS_PER_PKT
 * draws of its own PRNG per packet, whatever the outcome and whatever the
 * model, so the k-th packet always sees the same random numbers.  A student
 * re-running an experiment with the same seed therefore loses the very same
 * packet indices, which is what makes loss experiments comparable.
 *
 * Models (spec strings, as given on the command line):
 *   none
 *   bernoulli:P          independent loss with probability P, 0 <= P <= 1
 *   every_nth:N          drop packets whose 1-based index is a multiple of N
 *   at:I1[,I2...]        drop exactly the packets with these 1-based indices
 *                        (strictly increasing, at most LOSS_AT_MAX): one
 *                        planned loss, e.g. to watch a single recovery
 *   ge:p:r[:h[:k]]       Gilbert-Elliott, netem's conventions:
 *                        p = P(good->bad), r = P(bad->good),
 *                        1-h = loss probability in the bad state,
 *                        1-k = loss probability in the good state,
 *                        defaults h = 0, k = 1 (simple Gilbert model).
 *
 * No syscalls and no floating point after parsing: thresholds are integers
 * (see prng.h).
 */
#ifndef LINKEMU_LOSS_H
#define LINKEMU_LOSS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prng.h"

/* Fixed PRNG budget per packet, for every model (GE needs two). */
#define LOSS_DRAWS_PER_PKT 2

enum loss_type {
	LOSS_NONE = 0,
	LOSS_BERNOULLI,
	LOSS_EVERY_NTH,
	LOSS_GE,
	LOSS_AT,
};

/* Planned losses per direction: a handful is what an experiment can read. */
#define LOSS_AT_MAX 16

struct loss_model {
	enum loss_type type;
	/* Parameters as parsed, kept for describing the model. */
	double p, r, h, k;
	uint64_t nth;
	uint64_t at[LOSS_AT_MAX];	/* at: 1-based indices, increasing */
	unsigned int n_at;
	/* Integer thresholds (probability * 2^63) used per packet. */
	uint64_t thr_loss;	/* bernoulli: P */
	uint64_t thr_p;		/* ge: good -> bad */
	uint64_t thr_r;		/* ge: bad -> good */
	uint64_t thr_bad_loss;	/* ge: 1 - h */
	uint64_t thr_good_loss;	/* ge: 1 - k */
	/* Run-time state. */
	bool bad;		/* ge: currently in the bad state */
	uint64_t next_index;	/* index the PRNG is positioned for */
	struct prng rng;
};

/*
 * Parse a model spec into *m (state reset, PRNG unseeded: call loss_seed()).
 * Returns 0, or -1 with a one-line reason in err.
 */
int loss_parse(struct loss_model *m, const char *spec, char *err,
	       size_t errlen);

/* Seed from (seed, direction) and rewind to packet index 0. */
void loss_seed(struct loss_model *m, uint64_t seed, unsigned int dir);

/*
 * Should the packet with this 0-based arrival index be dropped?  Indices must
 * be presented in increasing order; skipped indices are simulated (their
 * draws consumed, GE state advanced) so that the answer for a given index
 * never depends on how often the caller asked.  An index already passed
 * returns false.
 */
bool loss_drop(struct loss_model *m, uint64_t index);

/* Human-readable canonical form, e.g. "ge:0.01:0.1:0:1". */
int loss_describe(const struct loss_model *m, char *buf, size_t len);

#endif /* LINKEMU_LOSS_H */
