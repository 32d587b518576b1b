/*
 * acct.c - per-frame delay accounting of one link direction (acct.h).
 */
#include "acct.h"

/* A rate of r bit/s moves one byte in 8e9 / r ns. */
#define ACCT_NS_BITS_PER_BYTE	8000000000ULL

uint64_t emu_acct_seg_ser_ns(const struct emu_pkt *p, uint64_t rate_bps,
			     uint32_t uncharged)
{
	uint64_t seg_bytes;

	if (!rate_bps || !p->segs)
		return 0;
	seg_bytes = emu_pkt_charged(p, uncharged) / p->segs;
	return seg_bytes * ACCT_NS_BITS_PER_BYTE / rate_bps;
}

/* b - a, or 0 when b comes first. */
static uint64_t since(uint64_t a, uint64_t b)
{
	return b > a ? b - a : 0;
}

uint64_t emu_acct_frame(struct emu_acct *a, const struct emu_pkt *p,
		    uint64_t sent_ns, uint64_t delay_ns, uint64_t ser_ns)
{
	uint64_t sojourn = since(p->arrival_ns, p->departure_ns);
	uint64_t queue = since(ser_ns, sojourn);
	uint64_t latency = since(p->departure_ns, p->release_ns);

	a->frames++;
	a->ser_sum_ns += sojourn < ser_ns ? sojourn : ser_ns;
	a->queue_sum_ns += queue;
	a->extra_sum_ns += (int64_t)latency - (int64_t)delay_ns;
	a->late_sum_ns += since(p->release_ns, sent_ns);
	if (queue > a->queue_max_ns)
		a->queue_max_ns = queue;
	return queue;
}
