/*
 * sched.c - linkemu's I/O-free scheduler core (see sched.h for the model).
 *
 * Everything here is integer arithmetic on caller-supplied timestamps, so it
 * can run under a fake clock in the unit tests and cannot block the
 * forwarding loop.  Per segment the work is one loss decision and one
 * drop-tail check; per stored frame, one memcpy into the arena (a cut for a
 * partial run of a super-frame; none for a frame received in place and kept
 * whole), one division for the serialization time, and (with jitter) one
 * PRNG draw.
 */
#include "sched.h"

#include <stdlib.h>
#include <string.h>

#include "ecn.h"

/* ---- built-in departure policy: FIFO serialization at rate_bps ---------- */

/* Units of work per byte: a rate of r bit/s does r units per ns. */
#define RATE_UNITS_PER_BYTE	8000000000ULL

/* The rate in force at t: the schedule's, or the fixed one. */
static uint64_t rate_at(const struct emu_rate_policy *rp, uint64_t t)
{
	return rp->tl ? emu_timeline_at(rp->tl, t)->rate_bps : rp->rate_bps;
}

/* No serialization at all: a fixed infinite rate and no rate steps. */
static bool rate_unlimited(const struct emu_rate_policy *rp)
{
	return !rp->rate_bps && !rp->tl;
}

/* When pkt, arriving at now_ns, would start serialization (pure). */
static uint64_t rate_start(const struct emu_rate_policy *rp,
			   const struct emu_pkt *pkt, uint64_t now_ns)
{
	if (rp->upstream_bps && pkt->segs > 1) {
		uint64_t charged = emu_pkt_charged(pkt, rp->uncharged_bytes);
		uint64_t rate = rate_at(rp, now_ns);
		/*
		 * Pipelining (emu_dir_cfg.upstream_rate_bps): segment j came
		 * (segs-1-j) upstream spacings before the whole frame, so on
		 * an idle link the last one leaves at
		 *   max(arrival + s_here, arrival - (segs-1) s_up + segs s_here)
		 * = start (segs-1) min(s_up, s_here) early, then serialize all.
		 */
		uint64_t seg_bits = charged * 8 / pkt->segs;
		uint64_t faster = rp->upstream_bps > rate ? rp->upstream_bps : rate;
		uint64_t back = (pkt->segs - 1) * (seg_bits * 1000000000ULL / faster);

		now_ns = now_ns > back ? now_ns - back : 0;
	}
	return rp->last_departure_ns < now_ns ? now_ns : rp->last_departure_ns;
}

/* Its serialization time if it starts at start (pure). */
static uint64_t rate_ser_ns(const struct emu_rate_policy *rp,
			    const struct emu_pkt *pkt, uint64_t start)
{
	uint64_t rem = start > rp->last_departure_ns ? 0 : rp->rem;
	uint64_t units = emu_pkt_charged(pkt, rp->uncharged_bytes) *
			 RATE_UNITS_PER_BYTE + rem;

	if (rp->tl)
		return emu_timeline_serialize(rp->tl, start, units, &rem) - start;
	if (!rp->rate_bps)
		return 0;
	return units / rp->rate_bps;
}

static uint64_t rate_enqueue(void *ctx, const struct emu_pkt *pkt,
			     uint64_t now_ns)
{
	struct emu_rate_policy *rp = ctx;
	uint64_t start, num, ser, charged;

	if (rate_unlimited(rp))
		return now_ns;		/* infinite rate: no serialization */

	charged = emu_pkt_charged(pkt, rp->uncharged_bytes);
	start = rate_start(rp, pkt, now_ns);
	if (start > rp->last_departure_ns)
		rp->rem = 0;	/* link was idle: forget the sub-ns remainder */
	/*
	 * len * 8e9 / rate in integer ns.  The remainder is carried to the next
	 * back-to-back packet, so a long busy period has no cumulative rounding
	 * error (rates that do not divide 8e9 evenly stay exact on average).
	 * Overflow: a frame's wire bytes stay below 2^20 (a 64 KB super-frame
	 * of 64-byte segments) and rate <= 1e12, so num stays below 2^64.
	 */
	num = charged * RATE_UNITS_PER_BYTE + rp->rem;
	if (rp->tl) {
		/* each part at the rate in force (schedule.h), the same carry */
		rp->last_departure_ns = emu_timeline_serialize(rp->tl, start,
							       num, &rp->rem);
		return rp->last_departure_ns;
	}
	ser = num / rp->rate_bps;
	rp->rem = num % rp->rate_bps;
	rp->last_departure_ns = start + ser;
	return rp->last_departure_ns;
}

const struct emu_departure_ops emu_rate_policy_ops = {
	.name = "rate",
	.enqueue = rate_enqueue,
};

/* ---- ring and arena ------------------------------------------------------ */

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

/* Double the descriptor ring when it is full (frame bytes stay put). */
static int ring_grow(struct emu_dir *d)
{
	size_t ncap = d->cap * 2, nmask = ncap - 1;
	struct emu_pkt *nr;
	uint64_t pos;

	if (ncap > d->max_slots)
		return -1;
	nr = calloc(ncap, sizeof(*nr));
	if (!nr)
		return -1;
	for (pos = d->head; pos != d->tail; pos++)
		nr[pos & nmask] = *slot(d, pos);
	free(d->ring);
	d->ring = nr;
	d->cap = ncap;
	d->mask = nmask;
	return 0;
}

#define ARENA_ALIGN 64	/* cache-line aligned frames */

/*
 * Grow the arena to hold `need` more bytes: a buffer of twice the size (or
 * more) into which the live frames are packed from offset 0, in order.
 * O(live bytes), and rare: sizes only double.
 */
static int arena_grow(struct emu_dir *d, uint64_t need)
{
	struct emu_arena *a = &d->arena;
	uint64_t live = a->tail - a->head, nsize = a->size * 2, p = 0;
	uint64_t pos;
	uint8_t *nb;

	while (nsize < live + need)
		nsize *= 2;
	if (nsize > a->max)
		return -1;
	nb = malloc(nsize);
	if (!nb)
		return -1;
	for (pos = d->head; pos != d->tail; pos++) {
		struct emu_pkt *q = slot(d, pos);
		size_t pre = d->vnet ? GSO_VNET_HDR_LEN : 0;

		memcpy(nb + p, q->data - pre, pre + q->len);
		q->data = nb + p + pre;
		p += q->alloc;
		q->arena_end = p;
	}
	free(a->buf);
	a->buf = nb;
	a->size = nsize;
	a->head = 0;
	a->tail = p;
	a->grows++;
	return 0;
}

/*
 * Make room for `need` (aligned) contiguous bytes at the arena's tail,
 * growing it if needed: the offset where they start and the padding that
 * skips the arena's end before them (a frame never wraps).  -1: no memory.
 */
static int arena_room(struct emu_dir *d, uint64_t need, uint64_t *off,
		      uint64_t *pad)
{
	struct emu_arena *a = &d->arena;

	for (;;) {
		*off = a->tail & (a->size - 1);
		*pad = *off + need > a->size ? a->size - *off : 0;
		if (a->tail + *pad + need - a->head <= a->size)
			return 0;
		if (arena_grow(d, need + *pad))
			return -1;
	}
}

/* Room for `bytes` contiguous bytes at the arena's tail, or NULL. */
static uint8_t *arena_alloc(struct emu_dir *d, uint32_t bytes, uint32_t *alloc,
			    uint64_t *end)
{
	struct emu_arena *a = &d->arena;
	uint64_t need = ((uint64_t)bytes + ARENA_ALIGN - 1) & ~(uint64_t)(ARENA_ALIGN - 1);
	uint64_t off, pad;

	if (arena_room(d, need, &off, &pad))
		return NULL;
	a->tail += pad + need;
	*alloc = (uint32_t)(pad + need);
	*end = a->tail;
	return a->buf + (off + pad) % a->size;
}

uint8_t *emu_dir_rx_slot(struct emu_dir *d)
{
	struct emu_arena *a = &d->arena;
	uint32_t pre = d->vnet ? GSO_VNET_HDR_LEN : 0;
	uint64_t need = ((uint64_t)pre + d->max_frame + ARENA_ALIGN - 1) &
			~(uint64_t)(ARENA_ALIGN - 1);
	uint64_t off, pad;

	d->rx_slot = NULL;
	if (d->vnet && d->max_run_segs &&
	    d->max_run_segs < EMU_RX_IN_PLACE_MIN_RUN)
		return NULL;
	if (arena_room(d, need, &off, &pad))
		return NULL;
	/*
	 * Skip the arena's end now, as arena_alloc() would for the frame: the
	 * padding is freed with the next frame that leaves.
	 */
	if (pad) {
		a->tail += pad;
		off = 0;
	}
	d->rx_slot = a->buf + off;
	return d->rx_slot;
}

int emu_dir_init(struct emu_dir *d, const struct emu_dir_cfg *cfg)
{
	size_t init = cfg->init_slots ? cfg->init_slots : EMU_DEFAULT_INIT_SLOTS;

	memset(d, 0, sizeof(*d));
	if (!cfg->max_frame)
		return -1;
	d->delay_ns = cfg->delay_ns;
	d->jitter_ns = cfg->jitter_ns;
	d->limit_pkts = cfg->limit_pkts;
	d->limit_bytes = cfg->limit_bytes;
	d->max_frame = cfg->max_frame;
	d->max_run_segs = cfg->max_run_segs;
	d->vnet = cfg->vnet;
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

	if (cfg->schedule && cfg->schedule->n) {
		struct emu_step_base base = { cfg->rate_bps, cfg->delay_ns, 0, 0.0 };
		unsigned int set = cfg->schedule->set;

		/* Bernoulli P steps: the model's draws are Bernoulli's anyway */
		if ((set & EMU_STEP_LOSS) && d->loss.type != LOSS_NONE &&
		    d->loss.type != LOSS_BERNOULLI)
			return -1;
		/* rates are serialized by the built-in policy only */
		if ((set & EMU_STEP_RATE) && cfg->policy)
			return -1;
		if (d->loss.type == LOSS_BERNOULLI) {
			base.loss_thr = d->loss.thr_loss;
			base.loss_p = d->loss.p;
		}
		if (emu_timeline_init(&d->tl, cfg->schedule, &base,
				      cfg->schedule_origin_ns))
			return -1;
	}
	if (cfg->policy) {
		if (!cfg->policy->enqueue)
			goto fail_tl;
		d->ops = cfg->policy;
		d->ops_ctx = cfg->policy_ctx;
	} else {
		d->rate.rate_bps = cfg->rate_bps;
		d->rate.upstream_bps = cfg->upstream_rate_bps;
		d->rate.uncharged_bytes = cfg->uncharged_bytes;
		d->rate.tl = (d->tl.set & EMU_STEP_RATE) ? &d->tl : NULL;
		d->ops = &emu_rate_policy_ops;
		d->ops_ctx = &d->rate;
	}
	if (cfg->aqm && cfg->aqm->type != AQM_NONE) {
		struct aqm_cfg ac = *cfg->aqm;

		/* RED's idle decay: under rate steps, the rate at the origin */
		ac.rate_bps = d->rate.tl ?
			      rate_at(&d->rate, cfg->schedule_origin_ns) :
			      cfg->rate_bps;
		if (aqm_init(&d->aqm, &ac, cfg->seed, cfg->dir, NULL, 0))
			goto fail_tl;
		/* CoDel decides departures at the head: the core's own only */
		if (aqm_at_dequeue(&d->aqm) && cfg->policy)
			goto fail_tl;
		/* PIE reads its delay from departures fixed on arrival */
		if (ac.type == AQM_PIE && d->ops->advance)
			goto fail_tl;
		/* each segment is dropped or sent on its own at the head */
		if (aqm_at_dequeue(&d->aqm))
			d->max_run_segs = 1;
	}

	d->arena.max = cfg->max_arena ? cfg->max_arena : EMU_DEFAULT_MAX_ARENA;
	d->arena.size = roundup_pow2(cfg->init_arena ? cfg->init_arena :
						  EMU_DEFAULT_INIT_ARENA);
	while (d->arena.size < 4ULL * (d->max_frame + GSO_VNET_HDR_LEN + ARENA_ALIGN))
		d->arena.size *= 2;
	if (d->arena.max < d->arena.size)
		d->arena.max = d->arena.size;
	d->ring = calloc(d->cap, sizeof(*d->ring));
	d->arena.buf = malloc(d->arena.size);
	d->scratch = malloc(d->max_frame);
	if (!d->ring || !d->arena.buf || !d->scratch) {
		free(d->ring);
		free(d->arena.buf);
		free(d->scratch);
		d->ring = NULL;
		d->arena.buf = NULL;
		d->scratch = NULL;
		goto fail_tl;
	}
	return 0;
fail_tl:
	emu_timeline_free(&d->tl);
	return -1;
}

void emu_dir_set_origin(struct emu_dir *d, uint64_t origin_ns)
{
	if (d->tl.n)
		emu_timeline_rebase(&d->tl, origin_ns);
}

void emu_dir_destroy(struct emu_dir *d)
{
	if (d->ops && d->ops->destroy)
		d->ops->destroy(d->ops_ctx);
	free(d->arena.buf);
	free(d->ring);
	free(d->scratch);
	emu_timeline_free(&d->tl);
	memset(d, 0, sizeof(*d));
}

/* ---- timing ------------------------------------------------------------- */

__extension__ typedef unsigned __int128 u128;

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX - 1 : a + b;
}

/* The one-way delay of a packet departing at dep: the schedule's, or fixed. */
static uint64_t delay_at(const struct emu_dir *d, uint64_t dep)
{
	if (d->tl.set & EMU_STEP_DELAY)
		return emu_timeline_at(&d->tl, dep)->delay_ns;
	return d->delay_ns;
}

uint64_t emu_dir_delay_at(const struct emu_dir *d, uint64_t dep_ns)
{
	return delay_at(d, dep_ns);
}

/*
 * One-way latency for the next packet, departing at dep: delay +
 * U[-jitter, +jitter], >= 0.
 */
static uint64_t next_latency(struct emu_dir *d, uint64_t dep)
{
	uint64_t delay = delay_at(d, dep), span, u;

	if (!d->jitter_ns)
		return delay;
	span = 2 * d->jitter_ns + 1;
	/* Multiply-high maps a 64-bit draw onto [0, span) without modulo bias. */
	u = (uint64_t)(((u128)prng_next(&d->jitter_rng) * span) >> 64);
	if (delay + u < d->jitter_ns)
		return 0;
	return delay + u - d->jitter_ns;
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

	rel = sat_add(dep, next_latency(d, dep));
	if (d->ops->latency_ns)
		rel = sat_add(rel, d->ops->latency_ns(d->ops_ctx, p, dep));
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
		d->c.backlog_pkts -= p->segs;
		d->c.backlog_bytes -= p->wire_len;
		d->c.delay_line_pkts += p->segs;
		d->ser++;
	}
}

/* ---- CoDel: decisions at the head of the queue (sched.h) ---------------- */

/* One-way latency a packet gets at the least: delay less the jitter. */
static uint64_t min_latency(const struct emu_dir *d)
{
	uint64_t delay = (d->tl.set & EMU_STEP_DELAY) ? d->tl.min_delay_ns :
			 d->delay_ns;

	return delay > d->jitter_ns ? delay - d->jitter_ns : 0;
}

/*
 * When the oldest undecided packet p reaches the head of the queue: in the
 * dequeue() that dropped the packet before it, if p had arrived by then;
 * else when the link is done with the packets before it, or when p arrives.
 */
static uint64_t head_time(const struct emu_dir *d, const struct emu_pkt *p)
{
	if (d->aqm_call_open && p->arrival_ns <= d->aqm_call_ns)
		return d->aqm_call_ns;
	if (rate_unlimited(&d->rate))
		return p->arrival_ns;
	return rate_start(&d->rate, p, p->arrival_ns);
}

/*
 * Wire bytes queued behind the oldest undecided packet at time t (arrived
 * by then), counted until they exceed cap: CoDel only asks whether they
 * exceed one MTU.
 */
static uint64_t bytes_behind(const struct emu_dir *d, uint64_t t, uint64_t cap)
{
	uint64_t pos, bytes = 0;

	for (pos = d->assign + 1; pos != d->tail && bytes <= cap; pos++) {
		const struct emu_pkt *q = slot(d, pos);

		if (q->arrival_ns > t)
			break;
		bytes += q->wire_len;
	}
	return bytes;
}

/*
 * Take the oldest undecided packet out of the ring: the ones behind it move
 * up one slot (O(queue), once per drop, and CoDel drops at most one packet
 * per INTERVAL / sqrt(count)).  Its arena bytes stay where they are until a
 * later frame leaves the arena, which is FIFO.
 */
static void drop_first_unassigned(struct emu_dir *d)
{
	const struct emu_pkt *p = slot(d, d->assign);
	uint64_t pos;

	d->c.aqm_drops += p->segs;
	d->c.backlog_pkts -= p->segs;
	d->c.backlog_bytes -= p->wire_len;
	for (pos = d->assign; pos + 1 != d->tail; pos++)
		*slot(d, pos) = *slot(d, pos + 1);
	d->tail--;
}

/*
 * Decide, in time order, every packet that reached the head of the queue
 * before `until` (exclusive: an arrival at that instant still joins the
 * queue first) or at it (inclusive), each at its own instant.
 */
static void codel_advance(struct emu_dir *d, uint64_t until, bool inclusive)
{
	while (d->assign != d->tail) {
		struct emu_pkt *p = slot(d, d->assign);
		bool cont = d->aqm_call_open && p->arrival_ns <= d->aqm_call_ns;
		uint64_t t = head_time(d, p);
		struct aqm_head h;
		enum aqm_verdict v;

		if (t > until || (t == until && !inclusive))
			break;
		if (d->aqm_call_open && !cont) {
			/* that dequeue() found the queue empty after its drop */
			aqm_codel_dequeue(&d->aqm, d->aqm_call_ns, NULL, true);
			d->aqm_call_open = false;
		}
		h.sojourn_ns = t - p->arrival_ns;
		h.bytes_after = bytes_behind(d, t, d->aqm.cfg.mtu_bytes);
		h.ect = d->aqm.cfg.ecn && ecn_capable(p->data, p->len);
		v = aqm_codel_dequeue(&d->aqm, t, &h, cont);
		if (v == AQM_DROP) {
			drop_first_unassigned(d);
			d->aqm_call_open = true;
			d->aqm_call_ns = t;
			continue;
		}
		d->aqm_call_open = false;
		if (v == AQM_MARK && ecn_set_ce(p->data, p->len))
			d->c.aqm_marks += p->segs;
		set_departure(d, d->ops->enqueue(d->ops_ctx, p, p->arrival_ns));
	}
}

/*
 * Bring the direction up to now_ns.  arrival: a frame that arrived at now_ns
 * (which may lie before the core's clock, a late read) is about to be
 * queued, so CoDel decides only the heads before it.
 */
static void advance_to(struct emu_dir *d, uint64_t now_ns, bool arrival)
{
	/* Time never goes backwards inside the core, whatever the caller does. */
	if (now_ns > d->now_ns)
		d->now_ns = now_ns;
	if (d->ops->advance)
		d->ops->advance(d->ops_ctx, d, d->now_ns);
	if (aqm_at_dequeue(&d->aqm))
		codel_advance(d, arrival ? now_ns : d->now_ns, !arrival);
	advance_ser(d);
}

void emu_dir_advance(struct emu_dir *d, uint64_t now_ns)
{
	advance_to(d, now_ns, false);
}

/* ---- data path ---------------------------------------------------------- */

/*
 * Store segments [first, first + n) of a frame as one frame of the queue,
 * with CE set if `mark`, and ask the departure policy about it (under CoDel
 * the head of the queue decides later).  Returns -1 when memory is out.
 */
static int queue_run(struct emu_dir *d, uint64_t arrival_ns,
		     const struct gso_layout *lay, const uint8_t *frame,
		     uint32_t first, uint32_t n, uint64_t first_index,
		     bool in_place, bool mark)
{
	uint32_t pre = d->vnet ? GSO_VNET_HDR_LEN : 0;
	uint32_t len = gso_run_len(lay, first, n), alloc;
	struct gso_vnet_hdr vh;
	struct emu_pkt *p;
	uint64_t dep, end;
	uint8_t *mem;

	if (d->tail - d->head == d->cap && ring_grow(d))
		return -1;
	mem = arena_alloc(d, pre + len, &alloc, &end);
	if (!mem)
		return -1;
	p = slot(d, d->tail);
	p->data = mem + pre;
	if (in_place && p->data == frame) {
		/* Received right here and kept whole: nothing to copy. */
		p->len = lay->len;
		vh = lay->vh;
	} else {
		/* (in place elsewhere cannot happen: the slot is the tail) */
		p->len = gso_cut(lay, frame, first, n, p->data, &vh);
	}
	if (pre)
		gso_vnet_write(mem, &vh);
	p->segs = n;
	p->wire_len = (uint32_t)gso_wire_bytes(lay, first, n);
	p->alloc = alloc;
	p->arena_end = end;
	p->index = first_index;
	p->arrival_ns = arrival_ns;
	p->departure_ns = EMU_TIME_NEVER;
	p->release_ns = EMU_TIME_NEVER;
	d->tail++;
	d->c.backlog_pkts += n;
	d->c.backlog_bytes += p->wire_len;
	/* (only an ECN-capable frame is ever marked; the check is the header's) */
	if (mark && ecn_set_ce(p->data, p->len))
		d->c.aqm_marks += n;

	if (aqm_at_dequeue(&d->aqm))
		return 0;	/* codel_advance(), when it reaches the head */
	dep = d->ops->enqueue(d->ops_ctx, p, arrival_ns);
	/* A known departure is only taken if nothing before it is deferred. */
	if (dep != EMU_TIME_NEVER && d->assign == d->tail - 1)
		set_departure(d, dep);
	return 0;
}

/*
 * What had not finished serialization at time t < now, beyond what the
 * counters (taken at now) hold: packets in the delay line whose departure
 * fell after t.  Departures are non-decreasing in queue order, so the scan
 * stops at the first one at or before t; it only ever walks what the link
 * serialized since t.  Packets already released are gone, but each left at
 * departure + latency, after t whenever the caller reads within the
 * latency (the I/O loop's read deferral is bounded by it).
 */
static void backlog_since(const struct emu_dir *d, uint64_t t,
			  uint64_t *pkts, uint64_t *bytes)
{
	uint64_t pos = d->ser;

	*pkts = 0;
	*bytes = 0;
	while (pos != d->head) {
		const struct emu_pkt *p = slot(d, --pos);

		if (p->departure_ns <= t)
			break;
		*pkts += p->segs;
		*bytes += p->wire_len;
	}
}

/* A run of kept segments of the frame being offered, not yet queued. */
struct run {
	uint32_t first;		/* its first segment */
	uint32_t n;		/* segments */
	uint64_t bytes;		/* their wire bytes */
	uint64_t index;		/* arrival index of the first */
	bool mark;		/* all marked CE, or none */
};

/*
 * Queue the run (cut out of the frame unless it is the whole frame) and
 * empty it; the number of segments kept.
 */
static uint32_t flush_run(struct emu_dir *d, uint64_t arrival_ns,
			  const struct gso_layout *lay, const uint8_t **frame,
			  bool *in_place, struct run *r)
{
	uint32_t kept = 0;

	if (!r->n)
		return 0;
	if (*in_place && r->n != lay->segs) {
		/*
		 * A cut: its runs are written at the tail, where this frame
		 * lies.  Nothing is stored yet (this is the first run), so
		 * move the frame aside first.
		 */
		memcpy(d->scratch, *frame, lay->len);
		*frame = d->scratch;
		*in_place = false;
	}
	if (queue_run(d, arrival_ns, lay, *frame, r->first, r->n, r->index,
		      *in_place, r->mark))
		d->c.queue_drops += r->n;	/* out of ring or arena memory: a full buffer too */
	else
		kept = r->n;
	r->n = 0;
	r->bytes = 0;
	return kept;
}

/*
 * The buffer's and the AQM's verdict on segment idx of seg bytes arriving
 * at arrival_ns behind the backlog, what a late read counts back
 * (late_pkts/bytes) and its own frame's kept segments not yet queued (r).
 */
static enum aqm_verdict judge_segment(struct emu_dir *d, uint64_t idx,
				      uint64_t arrival_ns, uint32_t seg,
				      const struct run *r, uint64_t late_pkts,
				      uint64_t late_bytes, bool ect)
{
	uint64_t q_pkts = d->c.backlog_pkts + late_pkts + r->n;
	uint64_t q_bytes = d->c.backlog_bytes + late_bytes + r->bytes;
	/* Drop-tail against what has not finished serialization. */
	bool full = (d->limit_pkts && q_pkts + 1 > d->limit_pkts) ||
		    (d->limit_bytes && q_bytes + seg > d->limit_bytes) ||
		    (d->ops->admit &&
		     !d->ops->admit(d->ops_ctx, r->bytes, r->n, seg, arrival_ns));
	struct aqm_arrival arr;

	if (!aqm_on(&d->aqm) || aqm_at_dequeue(&d->aqm))
		return full ? AQM_TAIL : AQM_PASS;
	arr.index = idx;
	arr.now_ns = arrival_ns;
	arr.bytes = seg;
	arr.q_pkts = q_pkts;
	arr.q_bytes = q_bytes;
	/* an empty backlog emptied when the last departure ended it */
	arr.idle_since_ns = d->last_departure_ns;
	arr.busy_until_ns = d->last_departure_ns;
	arr.full = full;
	arr.ect = ect;
	return aqm_enqueue(&d->aqm, &arr);
}

uint32_t emu_dir_enqueue_frame(struct emu_dir *d, uint64_t arrival_ns,
			       const struct gso_layout *lay,
			       const uint8_t *frame, emu_loss_cb on_loss,
			       void *cb_ctx)
{
	uint32_t i, kept = 0;
	uint32_t max_run = d->max_run_segs ? d->max_run_segs : UINT32_MAX;
	uint64_t late_pkts = 0, late_bytes = 0;
	bool in_place = d->rx_slot &&
			frame == d->rx_slot + (d->vnet ? GSO_VNET_HDR_LEN : 0);
	struct run run = { 0, 0, 0, 0, false };
	bool ect;

	d->rx_slot = NULL;
	if (!lay->len || lay->len > d->max_frame)
		return 0;
	/*
	 * A kernel timestamp may predate the core's clock (the frame waited in
	 * the socket while the loop was sending): the rate policy schedules
	 * from the true arrival; policies with a clock of their own cannot
	 * look back and get the present.
	 */
	if (d->ops != &emu_rate_policy_ops && arrival_ns < d->now_ns)
		arrival_ns = d->now_ns;
	if (arrival_ns < d->last_arrival_ns)
		arrival_ns = d->last_arrival_ns;
	if (arrival_ns > d->last_arrival_ns)
		d->last_arrival_ns = arrival_ns;
	advance_to(d, arrival_ns, true);
	/* Read late (the kernel stamp predates the clock): judge the buffer
	 * as it stood at the arrival, not as it stands now. */
	if (arrival_ns < d->now_ns)
		backlog_since(d, arrival_ns, &late_pkts, &late_bytes);
	/* One IP header for every segment: ECN-capable or not, all alike. */
	ect = d->aqm.cfg.ecn && ecn_capable(frame, lay->len);
	/* Loss steps: the Bernoulli P in force at the arrival (same draws). */
	if (d->tl.set & EMU_STEP_LOSS) {
		d->loss.type = LOSS_BERNOULLI;
		d->loss.thr_loss = emu_timeline_at(&d->tl, arrival_ns)->loss_thr;
	}

	for (i = 0; i < lay->segs; i++) {
		uint64_t idx = d->next_index++;
		uint32_t seg = gso_seg_len(lay, i);
		enum aqm_verdict v;

		d->c.rx_pkts++;
		d->c.rx_bytes += seg;
		/* Loss first: asked for every index, so its stream stays aligned. */
		if (loss_drop(&d->loss, idx)) {
			d->c.loss_drops++;
			if (on_loss)
				on_loss(cb_ctx, idx);
			v = AQM_DROP;
		} else {
			v = judge_segment(d, idx, arrival_ns, seg, &run,
					  late_pkts, late_bytes, ect);
			if (v == AQM_DROP)
				d->c.aqm_drops++;
			else if (v == AQM_TAIL)
				d->c.queue_drops++;
		}
		if (v == AQM_PASS || v == AQM_MARK) {
			/* a run is all marked or all not: a change cuts it */
			if (run.n && run.mark != (v == AQM_MARK))
				kept += flush_run(d, arrival_ns, lay, &frame,
						  &in_place, &run);
			if (!run.n) {
				run.first = i;
				run.index = idx;
				run.mark = v == AQM_MARK;
			}
			run.n++;
			run.bytes += seg;
			if (run.n == max_run || i + 1 == lay->segs)
				kept += flush_run(d, arrival_ns, lay, &frame,
						  &in_place, &run);
		} else {
			kept += flush_run(d, arrival_ns, lay, &frame, &in_place,
					  &run);
		}
	}
	advance_ser(d);
	return kept;
}

struct loss_note {
	uint64_t index;
	bool lost;
};

static void note_loss(void *ctx, uint64_t index)
{
	struct loss_note *n = ctx;

	n->index = index;
	n->lost = true;
}

enum emu_verdict emu_dir_enqueue(struct emu_dir *d, uint64_t now_ns,
				 const void *frame, uint32_t len,
				 uint64_t *index_out)
{
	struct gso_vnet_hdr vh = { 0 };
	struct gso_layout lay;
	struct loss_note note = { 0, false };
	uint64_t idx = d->next_index, aqm_drops = d->c.aqm_drops;

	if (!len || len > d->max_frame)
		return EMU_DROP_INVALID;
	gso_parse(&lay, &vh, frame, len);	/* no GSO type: one segment */
	advance_to(d, now_ns, true);
	if (index_out)
		*index_out = idx;
	if (emu_dir_enqueue_frame(d, d->now_ns, &lay, frame, note_loss, &note))
		return EMU_QUEUED;
	if (note.lost)
		return EMU_DROP_LOSS;
	return d->c.aqm_drops != aqm_drops ? EMU_DROP_AQM : EMU_DROP_QUEUE;
}

uint64_t emu_dir_next_release_ns(const struct emu_dir *d)
{
	uint64_t t = EMU_TIME_NEVER;

	if (d->head != d->assign)
		t = slot(d, d->head)->release_ns;
	if (aqm_at_dequeue(&d->aqm) && d->assign != d->tail) {
		/* CoDel: decided at the latest when it could be released */
		const struct emu_pkt *p = slot(d, d->assign);
		uint64_t start = head_time(d, p);
		uint64_t e = sat_add(sat_add(start, rate_ser_ns(&d->rate, p, start)),
				     min_latency(d));

		if (e < t)
			t = e;
	}
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
			d->c.tx_pkts += p->segs;
			d->c.tx_bytes += p->wire_len;
		} else {
			d->c.tx_errors += p->segs;
		}
		d->c.delay_line_pkts -= p->segs;
		d->arena.head = p->arena_end;
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
