/*
 * policy_tbf.c - token bucket and token-bucket departure policy (see
 * policy_tbf.h for the model).
 *
 * Per packet: one bucket read, at most one division for the wait for
 * tokens and one for the peak-rate serialization.  No syscalls, no floating
 * point, so it runs under the unit tests' fake clock exactly as in linkemu.
 */
#include <string.h>

#include "policy_tbf.h"

static uint64_t div_ceil(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - 1 - b ? UINT64_MAX - 1 : a + b;
}

/* ---- token bucket -------------------------------------------------------- */

void emu_tb_init(struct emu_tbucket *tb, uint64_t rate_bps,
		 uint64_t depth_bytes)
{
	if (depth_bytes > EMU_TB_MAX_DEPTH_BYTES)
		depth_bytes = EMU_TB_MAX_DEPTH_BYTES;
	tb->rate_bps = rate_bps;
	tb->depth = depth_bytes * EMU_TB_UNITS_PER_BYTE;
	tb->level = tb->depth;	/* a flow starts with its full burst */
	tb->stamp_ns = 0;
}

uint64_t emu_tb_level(const struct emu_tbucket *tb, uint64_t t)
{
	uint64_t dt, missing;

	if (!tb->rate_bps)
		return tb->depth;
	if (t <= tb->stamp_ns)
		return tb->level;
	dt = t - tb->stamp_ns;
	missing = tb->depth - tb->level;
	/*
	 * Compare dt against the time to fill rather than computing dt*rate:
	 * after a long idle period dt*rate would overflow.  Below that time,
	 * dt*rate < missing + rate, far from overflow.
	 */
	if (dt >= div_ceil(missing, tb->rate_bps))
		return tb->depth;
	return tb->level + dt * tb->rate_bps;
}

uint64_t emu_tb_ready_at(const struct emu_tbucket *tb, uint64_t units,
			 uint64_t t)
{
	uint64_t lvl = emu_tb_level(tb, t);

	if (!tb->rate_bps || lvl >= units)
		return t;
	if (t < tb->stamp_ns)	/* level is only known from the stamp on */
		t = tb->stamp_ns;
	/* Ceiling: the leftover fraction stays in the bucket (no drift). */
	return sat_add(t, div_ceil(units - lvl, tb->rate_bps));
}

void emu_tb_take(struct emu_tbucket *tb, uint64_t t, uint64_t units)
{
	if (!tb->rate_bps)
		return;
	if (t > tb->stamp_ns) {
		tb->level = emu_tb_level(tb, t);
		tb->stamp_ns = t;
	}
	tb->level = tb->level > units ? tb->level - units : 0;
}

/* ---- departure policy ---------------------------------------------------- */

int emu_tbf_init(struct emu_tbf *t, const struct emu_tbf_cfg *cfg)
{
	if (cfg->rate_bps > EMU_TB_MAX_RATE_BPS ||
	    cfg->peak_bps > EMU_TB_MAX_RATE_BPS ||
	    cfg->burst_bytes > EMU_TB_MAX_DEPTH_BYTES ||
	    (cfg->rate_bps && !cfg->burst_bytes) ||
	    (cfg->peak_bps && cfg->peak_bps < cfg->rate_bps) ||
	    cfg->max_delay_ns > EMU_TB_MAX_DELAY_NS ||
	    cfg->granularity_ns > EMU_TB_MAX_DELAY_NS)
		return -1;
	memset(t, 0, sizeof(*t));
	if (cfg->phantom.max_delay_ns) {
		struct emu_phantom_cfg pc = cfg->phantom;

		/* the load is read against the shaper's sustained rate */
		pc.rate_bps = cfg->rate_bps;
		pc.uncharged_bytes = cfg->uncharged_bytes;
		if (emu_phantom_init(&t->phantom, &pc))
			return -1;
	}
	emu_tb_init(&t->tb, cfg->rate_bps, cfg->burst_bytes);
	t->peak_bps = cfg->peak_bps;
	t->uncharged_bytes = cfg->uncharged_bytes;
	t->max_delay_ns = cfg->max_delay_ns;
	t->granularity_ns = cfg->granularity_ns;
	return 0;
}

/* The shaping delay d rounded up to whole slots of the shaping queue. */
static uint64_t granulate(const struct emu_tbf *t, uint64_t d)
{
	if (!t->granularity_ns || !d)
		return d;
	return div_ceil(d, t->granularity_ns) * t->granularity_ns;
}

/* Bytes charged for `segs` segments of `wire` bytes (IP bytes: less the L2 header each). */
static uint64_t charged_bytes(const struct emu_tbf *t, uint64_t wire, uint64_t segs)
{
	uint64_t free_bytes = segs * t->uncharged_bytes;

	return wire > free_bytes ? wire - free_bytes : wire;
}

/*
 * Start of serialization of a frame of `cost` units arriving at now_ns behind
 * every frame already enqueued: when the PHY is free, or, if tokens are
 * short then, when they have refilled -- that shaping delay (from the
 * arrival) rounded up to whole slots.  A frame that only waits for the PHY
 * (a burst at the peak rate) is not shaped.  Pure.
 */
static uint64_t shaped_start(const struct emu_tbf *t, uint64_t cost, uint64_t now_ns)
{
	uint64_t phy = now_ns > t->last_departure_ns ? now_ns : t->last_departure_ns;
	uint64_t ready = emu_tb_ready_at(&t->tb, cost, phy);

	if (ready == phy)
		return phy;
	return sat_add(now_ns, granulate(t, ready - now_ns));
}

static bool tbf_admit(void *ctx, uint64_t pending_bytes, uint32_t pending_segs,
		      uint32_t seg_bytes, uint64_t now_ns)
{
	struct emu_tbf *t = ctx;
	uint64_t cost;

	if (!t->max_delay_ns)
		return true;
	/* the frame's earlier segments, not yet enqueued, take their tokens first */
	cost = charged_bytes(t, pending_bytes + seg_bytes, (uint64_t)pending_segs + 1) *
	       EMU_TB_UNITS_PER_BYTE;
	if (shaped_start(t, cost, now_ns) - now_ns <= t->max_delay_ns)
		return true;
	t->delay_drops++;
	return false;
}

static uint64_t tbf_latency(void *ctx, const struct emu_pkt *pkt, uint64_t departure_ns)
{
	struct emu_tbf *t = ctx;

	return emu_phantom_delay(&t->phantom, departure_ns, pkt->data, pkt->len,
				 pkt->wire_len, pkt->segs);
}

static uint64_t tbf_enqueue(void *ctx, const struct emu_pkt *pkt,
			    uint64_t now_ns)
{
	struct emu_tbf *t = ctx;
	uint64_t charged, cost, start, num, ser;

	charged = emu_pkt_charged(pkt, t->uncharged_bytes);
	/* A frame bigger than the bucket needs (and empties) a full bucket. */
	cost = charged * EMU_TB_UNITS_PER_BYTE;
	if (cost > t->tb.depth)
		cost = t->tb.depth;

	/* FIFO on one PHY: not before the previous frame is on the wire; a
	 * frame short of tokens waits whole shaping-queue slots. */
	start = shaped_start(t, cost, now_ns);
	emu_tb_take(&t->tb, start, cost);

	if (!t->peak_bps) {
		t->last_departure_ns = start;
		return start;
	}
	/*
	 * Serialization at the peak rate.  The sub-ns remainder is carried
	 * only between back-to-back frames (a burst), like the rate policy:
	 * once the PHY has idled, the next start is already an exact time.
	 * Overflow: charged <= 2^18 keeps num below 2^62.
	 */
	if (start > t->last_departure_ns)
		t->rem = 0;
	num = charged * EMU_TB_UNITS_PER_BYTE + t->rem;
	ser = num / t->peak_bps;
	t->rem = num % t->peak_bps;
	t->last_departure_ns = start + ser;
	return t->last_departure_ns;
}

const struct emu_departure_ops emu_tbf_policy_ops = {
	.name = "tbf",
	.enqueue = tbf_enqueue,
	.admit = tbf_admit,
	.latency_ns = tbf_latency,
};

uint64_t emu_tbf_tokens_bytes(const struct emu_tbf *t, uint64_t now_ns)
{
	return emu_tb_level(&t->tb, now_ns) / EMU_TB_UNITS_PER_BYTE;
}
