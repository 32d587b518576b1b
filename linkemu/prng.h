/*
 * prng.h - seeded 64-bit pseudo-random generators shared by linkemu's
 * loss models and its jitter generator.
 *
 * Role: every random decision the emulator makes (drop this packet? how much
 * jitter? does RED or PIE drop it?) comes from one of these generators, seeded from (seed, direction,
 * stream).  Keeping streams separate means that, for example, turning jitter
 * on does not change which packets the loss model drops: a lab that varies
 * one parameter must see the other ones repeat exactly.
 *
 * splitmix64 is used only to expand the seed into state (it is the seeding
 * procedure recommended by the xoshiro authors); xoshiro256** produces the
 * actual draws.  Both are a handful of integer operations, cheap enough to run
 * for every packet.
 */
#ifndef LINKEMU_PRNG_H
#define LINKEMU_PRNG_H

#include <stdint.h>

/* Stream identifiers: distinct sequences for distinct purposes. */
#define PRNG_STREAM_LOSS	1u
#define PRNG_STREAM_JITTER	2u
#define PRNG_STREAM_AQM		3u	/* RED's and PIE's drop draws */

struct prng {
	uint64_t s[4];
};

static inline uint64_t splitmix64_next(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t prng_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256**: one 64-bit draw. */
static inline uint64_t prng_next(struct prng *p)
{
	uint64_t *s = p->s;
	const uint64_t result = prng_rotl(s[1] * 5, 7) * 9;
	const uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = prng_rotl(s[3], 45);
	return result;
}

/*
 * Derive an independent state from (seed, dir, stream).  The seed is mixed
 * once before the direction/stream constants are folded in, so that nearby
 * seeds (1, 2, 3...) do not give correlated directions.
 */
static inline void prng_seed(struct prng *p, uint64_t seed, uint64_t dir,
			     uint64_t stream)
{
	uint64_t x = seed;
	uint64_t mixed = splitmix64_next(&x);
	int i;

	x = mixed ^ ((dir + 1) * 0xd1b54a32d192ed03ULL) ^
	    (stream * 0xa0761d6478bd642fULL);
	for (i = 0; i < 4; i++)
		p->s[i] = splitmix64_next(&x);
	/* xoshiro must not be all-zero; splitmix output practically never is. */
	if (!(p->s[0] | p->s[1] | p->s[2] | p->s[3]))
		p->s[0] = 1;
}

/*
 * Integer probabilities: a probability P is stored as round(P * 2^63) and an
 * event "happens" when the top 63 bits of a draw are below it.  2^63 still
 * fits in a uint64_t, so P = 1 is exact (always) and P = 0 is exact (never),
 * with no floating point in the per-packet path.
 */
#define PRNG_PROB_ONE	(1ULL << 63)

static inline int prng_chance(uint64_t draw, uint64_t thr)
{
	return (draw >> 1) < thr;
}

#endif /* LINKEMU_PRNG_H */
