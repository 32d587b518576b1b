/*
 * sched.c - linkemu's I/O-free scheduler core (see sched.h for the model).
 *
 * Everything here is integer arithmetic on caller-supplied timestamps, so it
 * can run under a fake clock in the unit tests and cannot block the
 * forwarding loop.  Per packet the work is: one loss decision, one memcpy
 * into a preallocated slot, one division for the serialization time, and
 * (with jitter) one PRNG draw.
 */
#include "sched.h"

#include <stdlib.h>
#include <string.h>

/* ---- built-in departure policy: FIFO serialization at rate_bps ---------- */

static uint64_t rate_enqueue(void *ctx, const struct emu_pkt *pkt,
			     uint64_t now_ns)
{
	struct emu_rate_policy *rp = ctx;
	uint64_t start, num, ser, charged;

	if (!rp->rate_bps)
		return now_ns;		/* infinite rate: no serialization */

	if (rp->last_departure_ns < now_ns) {
		/* Link was idle: start now and forget the sub-ns remainder. */
		start = now_ns;
		rp->rem = 0;
	} else {
		start = rp->last_departure_ns;
	}
	/*
	 * len * 8e9 / rate in integer ns.  The remainder is carried to the next
	 * back-to-back packet, so a long busy period has no cumulative rounding
	 * error (rates that do not divide 8e9 evenly stay exact on average).
	 * Overflow: len <= 2^18 and rate <= 1e12 keep num well below 2^64.
	 */
	charged = pkt->len > rp->uncharged_bytes ?
		  pkt->len - rp->uncharged_bytes : pkt->len;
	num = (uint64_t)charged * 8000000000ULL + rp->rem;
	ser = num / rp->rate_bps;
	rp->rem = num % rp->rate_bps;
	rp->last_departure_ns = start + ser;
	return rp->last_departure_ns;
}

const struct emu_departure_ops emu_rate_policy_ops = {
	.name = "rate",
	.enqueue = rate_enqueue,
};

/* ---- ring --------------------------------------------------------------- */

static size_t roundup_pow2(size_t v)
{
	size_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static inline struct emu_pkt *slot(const struct emu_dir *d, uint64_t pos)
{
	return &d->ring[pos & d->mask];
}

/*
 * Double the ring when it is full.  Packet descriptors are moved (so their
 * addresses change), but frame buffers are not: the existing buffers travel
 * with their packets and one new chunk provides buffers for the new free
 * slots.  Growth is therefore O(slots) pointer copies, no frame copies.
 */
static int ring_grow(struct emu_dir *d)
{
	size_t ncap = d->cap * 2, nmask = ncap - 1, k = 0;
	struct emu_pkt *nr;
	uint8_t *chunk;
	uint64_t pos;

	if (ncap > d->max_slots || d->nchunks == EMU_MAX_CHUNKS)
		return -1;
	nr = calloc(ncap, sizeof(*nr));
	chunk = malloc(d->cap * d->stride);
	if (!nr || !chunk) {
		free(nr);
		free(chunk);
		return -1;
	}
	for (pos = d->head; pos != d->tail; pos++)
		nr[pos & nmask] = *slot(d, pos);
	for (pos = d->tail; pos != d->head + ncap; pos++)
		nr[pos & nmask].data = chunk + (k++) * d->stride;
	free(d->ring);
	d->ring = nr;
	d->cap = ncap;
	d->mask = nmask;
	d->chunks[d->nchunks++] = chunk;
	return 0;
}

int emu_dir_init(struct emu_dir *d, const struct emu_dir_cfg *cfg)
{
	size_t init = cfg->init_slots ? cfg->init_slots : EMU_DEFAULT_INIT_SLOTS;
	size_t i;

	memset(d, 0, sizeof(*d));
	if (!cfg->max_frame)
		return -1;
	d->delay_ns = cfg->delay_ns;
	d->jitter_ns = cfg->jitter_ns;
	d->limit_pkts = cfg->limit_pkts;
	d->limit_bytes = cfg->limit_bytes;
	d->max_frame = cfg->max_frame;
	/* Cache-line aligned slots: frames are copied in and DMA'd out whole. */
	d->stride = ((size_t)cfg->max_frame + 63) & ~(size_t)63;
	d->cap = roundup_pow2(init);
	d->max_slots = roundup_pow2(cfg->max_slots ? cfg->max_slots :
						     EMU_DEFAULT_MAX_SLOTS);
	if (d->max_slots < d->cap)
		d->max_slots = d->cap;
	d->mask = d->cap - 1;

	if (cfg->loss)
		d->loss = *cfg->loss;
	else
		d->loss.type = LOSS_NONE;
	loss_seed(&d->loss, cfg->seed, cfg->dir);
	prng_seed(&d->jitter_rng, cfg->seed, cfg->dir, PRNG_STREAM_JITTER);

	if (cfg->policy) {
		if (!cfg->policy->enqueue)
			return -1;
		d->ops = cfg->policy;
		d->ops_ctx = cfg->policy_ctx;
	} else {
		d->rate.rate_bps = cfg->rate_bps;
		d->rate.uncharged_bytes = cfg->uncharged_bytes;
		d->ops = &emu_rate_policy_ops;
		d->ops_ctx = &d->rate;
	}

	d->ring = calloc(d->cap, sizeof(*d->ring));
	d->chunks[0] = malloc(d->cap * d->stride);
	if (!d->ring || !d->chunks[0]) {
		free(d->ring);
		free(d->chunks[0]);
		d->ring = NULL;
		d->chunks[0] = NULL;
		return -1;
	}
	d->nchunks = 1;
	for (i = 0; i < d->cap; i++)
		d->ring[i].data = d->chunks[0] + i * d->stride;
	return 0;
}

void emu_dir_destroy(struct emu_dir *d)
{
	size_t i;

	if (d->ops && d->ops->destroy)
		d->ops->destroy(d->ops_ctx);
	for (i = 0; i < d->nchunks; i++)
		free(d->chunks[i]);
	free(d->ring);
	memset(d, 0, sizeof(*d));
}

/* ---- timing ------------------------------------------------------------- */

__extension__ typedef unsigned __int128 u128;

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX - 1 : a + b;
}

/* One-way latency for the next packet: delay + U[-jitter, +jitter], >= 0. */
static uint64_t next_latency(struct emu_dir *d)
{
	uint64_t span, u;

	if (!d->jitter_ns)
		return d->delay_ns;
	span = 2 * d->jitter_ns + 1;
	/* Multiply-high maps a 64-bit draw onto [0, span) without modulo bias. */
	u = (uint64_t)(((u128)prng_next(&d->jitter_rng) * span) >> 64);
	if (d->delay_ns + u < d->jitter_ns)
		return 0;
	return d->delay_ns + u - d->jitter_ns;
}

/*
 * Fix departure and release of the oldest unassigned packet.  Both are
 * clamped to be non-decreasing: the link is FIFO, and jitter must delay
 * packets, never reorder them.
 */
static void set_departure(struct emu_dir *d, uint64_t dep)
{
	struct emu_pkt *p = slot(d, d->assign);
	uint64_t rel;

	if (dep < p->arrival_ns)
		dep = p->arrival_ns;
	if (dep < d->last_departure_ns)
		dep = d->last_departure_ns;
	if (dep == EMU_TIME_NEVER)
		dep = EMU_TIME_NEVER - 1;
	p->departure_ns = dep;
	d->last_departure_ns = dep;

	rel = sat_add(dep, next_latency(d));
	if (rel < d->last_release_ns)
		rel = d->last_release_ns;
	p->release_ns = rel;
	d->last_release_ns = rel;
	d->assign++;
}

int emu_dir_assign_departure(struct emu_dir *d, uint64_t departure_ns)
{
	if (d->assign == d->tail)
		return -1;
	set_departure(d, departure_ns);
	return 0;
}

const struct emu_pkt *emu_dir_first_unassigned(const struct emu_dir *d)
{
	return d->assign == d->tail ? NULL : slot(d, d->assign);
}

/* Move packets whose serialization finished from backlog to delay line. */
static void advance_ser(struct emu_dir *d)
{
	while (d->ser < d->assign) {
		const struct emu_pkt *p = slot(d, d->ser);

		if (p->departure_ns > d->now_ns)
			break;
		d->c.backlog_pkts--;
		d->c.backlog_bytes -= p->len;
		d->c.delay_line_pkts++;
		d->ser++;
	}
}

void emu_dir_advance(struct emu_dir *d, uint64_t now_ns)
{
	/* Time never goes backwards inside the core, whatever the caller does. */
	if (now_ns > d->now_ns)
		d->now_ns = now_ns;
	if (d->ops->advance)
		d->ops->advance(d->ops_ctx, d, d->now_ns);
	advance_ser(d);
}

/* ---- data path ---------------------------------------------------------- */

enum emu_verdict emu_dir_enqueue(struct emu_dir *d, uint64_t now_ns,
				 const void *frame, uint32_t len,
				 uint64_t *index_out)
{
	struct emu_pkt *p;
	uint64_t idx, dep;

	if (!len || len > d->max_frame)
		return EMU_DROP_INVALID;

	emu_dir_advance(d, now_ns);
	idx = d->next_index++;
	if (index_out)
		*index_out = idx;
	d->c.rx_pkts++;
	d->c.rx_bytes += len;

	/* Loss first: it is asked for every index, so its stream stays aligned. */
	if (loss_drop(&d->loss, idx)) {
		d->c.loss_drops++;
		return EMU_DROP_LOSS;
	}

	/* Drop-tail against what has not finished serialization yet. */
	if ((d->limit_pkts && d->c.backlog_pkts + 1 > d->limit_pkts) ||
	    (d->limit_bytes && d->c.backlog_bytes + len > d->limit_bytes)) {
		d->c.queue_drops++;
		return EMU_DROP_QUEUE;
	}
	if (d->tail - d->head == d->cap && ring_grow(d)) {
		d->c.queue_drops++;	/* out of ring memory: also a full buffer */
		return EMU_DROP_QUEUE;
	}

	p = slot(d, d->tail);
	memcpy(p->data, frame, len);
	p->len = len;
	p->index = idx;
	p->arrival_ns = d->now_ns;
	p->departure_ns = EMU_TIME_NEVER;
	p->release_ns = EMU_TIME_NEVER;
	d->tail++;
	d->c.backlog_pkts++;
	d->c.backlog_bytes += len;

	dep = d->ops->enqueue(d->ops_ctx, p, d->now_ns);
	/* A known departure is only taken if nothing before it is deferred. */
	if (dep != EMU_TIME_NEVER && d->assign == d->tail - 1)
		set_departure(d, dep);
	advance_ser(d);
	return EMU_QUEUED;
}

uint64_t emu_dir_next_release_ns(const struct emu_dir *d)
{
	uint64_t t = EMU_TIME_NEVER;

	if (d->head != d->assign)
		t = slot(d, d->head)->release_ns;
	if (d->ops->next_event_ns) {
		uint64_t e = d->ops->next_event_ns(d->ops_ctx, d);

		if (e < t)
			t = e;
	}
	return t;
}

size_t emu_dir_peek_due(struct emu_dir *d, uint64_t now_ns,
			struct emu_pkt **out, size_t max)
{
	uint64_t pos;
	size_t n = 0;

	emu_dir_advance(d, now_ns);
	/* Due packets have release >= departure, so they all lie before ser. */
	for (pos = d->head; n < max && pos < d->ser; pos++) {
		struct emu_pkt *p = slot(d, pos);

		if (p->release_ns > d->now_ns)
			break;
		out[n++] = p;
	}
	return n;
}

static void remove_head(struct emu_dir *d, size_t n, bool sent)
{
	while (n-- && d->head < d->ser) {
		const struct emu_pkt *p = slot(d, d->head);

		if (sent) {
			d->c.tx_pkts++;
			d->c.tx_bytes += p->len;
		} else {
			d->c.tx_errors++;
		}
		d->c.delay_line_pkts--;
		d->head++;
	}
}

void emu_dir_consume(struct emu_dir *d, size_t n)
{
	remove_head(d, n, true);
}

void emu_dir_discard(struct emu_dir *d, size_t n)
{
	remove_head(d, n, false);
}

struct emu_pkt *emu_dir_pop_due(struct emu_dir *d, uint64_t now_ns)
{
	struct emu_pkt *p;

	if (!emu_dir_peek_due(d, now_ns, &p, 1))
		return NULL;
	remove_head(d, 1, true);
	return p;
}
