/*
 * flowacct.c - the delay accounting per TCP flow (flowacct.h); the frame's
 * flow is flowkey.h's.
 */
#include <string.h>

#include "flowacct.h"

_Static_assert(sizeof(struct flowacct) < 8192,
	       "two per link direction, many links per process: keep it small");

/* flowkey_of zeroes a key whole, padding too: two keys compare as bytes */
static bool same(const struct flowkey *a, const struct flowkey *b)
{
	return !memcmp(a, b, sizeof(*a));
}

void flowacct_frame(struct flowacct *a, const uint8_t *frame, uint32_t len,
		    uint64_t queue_ns, int64_t extra_ns)
{
	struct flowkey k;
	struct flowacct_slot *s = NULL;
	int64_t wait = (int64_t)queue_ns + extra_ns;
	uint32_t i;

	uint32_t payload = flowkey_of(frame, len, &k);
	if (k.proto != FLOWKEY_TCP || !k.ports) {
		a->other++;
		return;
	}
	/* a linear search: a link carries a few flows, at most FLOWACCT_SLOTS,
	 * and the most recent ones are the likeliest */
	for (i = a->used; i-- > 0;) {
		if (same(&a->slot[i].key, &k)) {
			s = &a->slot[i];
			break;
		}
	}
	if (!s) {
		if (a->used == FLOWACCT_SLOTS) {
			a->other++;
			return;
		}
		s = &a->slot[a->used++];
		memcpy(&s->key, &k, sizeof(k));	/* padding too: same() compares bytes */
		s->queue_min_ns = wait;
		s->data_min_ns = FLOWACCT_NONE;
	}
	s->frames++;
	s->queue_sum_ns += wait;
	if (wait < s->queue_min_ns)
		s->queue_min_ns = wait;
	if (payload && wait < s->data_min_ns)
		s->data_min_ns = wait;
}
