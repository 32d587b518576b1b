/*
 * policy_docsis.c - DOCSIS upstream request-grant MAC (see policy_docsis.h
 * for the model, its parameters and its simplifications).
 *
 * The MAC is a three-state machine driven by the core's advance() hook:
 * IDLE -> WAIT_CONTENTION (a frame arrived) -> WAIT_GRANT (request sent)
 * -> grant: frames get their departures -> WAIT_GRANT again (piggyback),
 * WAIT_CONTENTION (no piggyback) or IDLE (queue empty).  Exactly one event
 * is pending at a time, which next_event_ns() reports so linkemu's loop
 * wakes for it; events are handled in time order before any later arrival
 * is queued, so a request sees exactly the frames that arrived before it.
 */
#include "policy_docsis.h"

__extension__ typedef unsigned __int128 u128;

void emu_docsis_default_cfg(struct emu_docsis_cfg *cfg)
{
	cfg->map_interval_ns = EMU_DOCSIS_DEF_MAP_INTERVAL_NS;
	cfg->lookahead_ns = EMU_DOCSIS_DEF_LOOKAHEAD_NS;
	cfg->req_transit_ns = EMU_DOCSIS_DEF_REQ_TRANSIT_NS;
	cfg->phy_rate_bps = EMU_DOCSIS_DEF_PHY_RATE_BPS;
	cfg->rate_bps = EMU_DOCSIS_DEF_RATE_BPS;
	cfg->max_burst_bytes = EMU_DOCSIS_DEF_MAX_BURST_BYTES;
	cfg->concatenation = true;
	cfg->piggyback = true;
	cfg->uncharged_bytes = 0;
}

int emu_docsis_init(struct emu_docsis *m, const struct emu_docsis_cfg *cfg)
{
	u128 cap, refill;

	if (cfg->map_interval_ns < EMU_DOCSIS_MIN_MAP_INTERVAL_NS ||
	    cfg->map_interval_ns > EMU_DOCSIS_MAX_MAP_INTERVAL_NS ||
	    cfg->lookahead_ns > EMU_DOCSIS_MAX_DELAY_NS ||
	    cfg->req_transit_ns > EMU_DOCSIS_MAX_DELAY_NS ||
	    !cfg->phy_rate_bps || cfg->phy_rate_bps > EMU_TB_MAX_RATE_BPS ||
	    cfg->rate_bps > EMU_TB_MAX_RATE_BPS ||
	    cfg->max_burst_bytes > EMU_TB_MAX_DEPTH_BYTES ||
	    (cfg->rate_bps && !cfg->max_burst_bytes))
		return -1;
	/* Bytes the PHY carries in one MAP; 128-bit: 1e12 b/s * 1 s. */
	cap = (u128)cfg->phy_rate_bps * cfg->map_interval_ns /
	      EMU_TB_UNITS_PER_BYTE;
	if (!cap)
		return -1;	/* not even one byte per MAP: nothing could go */

	m->cfg = *cfg;
	emu_tb_init(&m->tb, cfg->rate_bps, cfg->max_burst_bytes);
	/*
	 * A deferred grant goes out once waiting one more MAP could overflow
	 * the bucket (depth - one MAP's refill), else tokens would be lost
	 * to the MAP rounding and a backlogged flow would fall short of its
	 * sustained rate.  128-bit: 1e12 b/s * 1 s overflows 64 bits.
	 */
	refill = (u128)cfg->rate_bps * cfg->map_interval_ns;
	m->defer_limit = refill < m->tb.depth ?
			 m->tb.depth - (uint64_t)refill : m->tb.depth;
	m->map_cap_bytes = cap > EMU_DOCSIS_MAX_GRANT_BYTES ?
			   EMU_DOCSIS_MAX_GRANT_BYTES : (uint64_t)cap;
	m->state = EMU_DOCSIS_IDLE;
	m->event_ns = EMU_TIME_NEVER;
	m->req_sent_ns = 0;
	m->req_bytes = 0;
	m->queued_bytes = 0;
	m->head_sent = 0;
	m->next_map_ns = 0;
	m->st = (struct emu_docsis_stats){ 0 };
	return 0;
}

static uint32_t charged_len(const struct emu_docsis *m,
			    const struct emu_pkt *p)
{
	return (uint32_t)emu_pkt_charged(p, m->cfg.uncharged_bytes);
}

/* First MAP start at or after t. */
static uint64_t map_ceil(const struct emu_docsis *m, uint64_t t)
{
	uint64_t M = m->cfg.map_interval_ns;

	return (t + M - 1) / M * M;
}

/* First MAP start strictly after t (the next contention opportunity). */
static uint64_t map_next(const struct emu_docsis *m, uint64_t t)
{
	uint64_t M = m->cfg.map_interval_ns;

	return (t / M + 1) * M;
}

/* Send the request for the current backlog at time t (steps 2 and 3). */
static void send_request(struct emu_docsis *m, const struct emu_dir *d,
			 uint64_t t, bool piggybacked)
{
	const struct emu_pkt *head = emu_dir_first_unassigned(d);

	if (m->cfg.concatenation || !head)
		m->req_bytes = m->queued_bytes;
	else	/* without concatenation a grant carries one frame */
		m->req_bytes = charged_len(m, head) - m->head_sent;
	m->req_sent_ns = t;
	m->st.requests++;
	if (piggybacked)
		m->st.piggybacked_requests++;
	m->state = EMU_DOCSIS_WAIT_GRANT;
	m->event_ns = map_ceil(m, t + m->cfg.req_transit_ns +
			       m->cfg.lookahead_ns);
	/*
	 * One grant per MAP: with zero transit and lookahead a piggyback
	 * would otherwise be granted in the very MAP that carried it.
	 */
	if (m->event_ns < m->next_map_ns)
		m->event_ns = m->next_map_ns;
}

/*
 * MAP starting at g: size the grant (step 4), put frames on the wire (step
 * 5) and ask for the rest (step 6).
 */
static void grant(struct emu_docsis *m, struct emu_dir *d, uint64_t g)
{
	const uint64_t upb = EMU_TB_UNITS_PER_BYTE;
	uint64_t want, need, ready, lvl, gbytes, left, off = 0, delay;
	unsigned int completed = 0;
	const struct emu_pkt *p;

	want = m->req_bytes < m->map_cap_bytes ? m->req_bytes :
						 m->map_cap_bytes;
	if (want > m->queued_bytes)	/* cannot happen; never over-grant */
		want = m->queued_bytes;
	gbytes = want;
	if (m->tb.rate_bps) {
		need = want * upb < m->defer_limit ? want * upb :
						     m->defer_limit;
		ready = emu_tb_ready_at(&m->tb, need, g);
		if (ready > g) {
			/* Too few tokens: grant in a later MAP, no sliver. */
			m->event_ns = map_ceil(m, ready);
			return;
		}
		lvl = emu_tb_level(&m->tb, g) / upb;
		if (lvl < gbytes)	/* only when want > defer_limit */
			gbytes = lvl;
		emu_tb_take(&m->tb, g, gbytes * upb);
	}

	m->next_map_ns = g + m->cfg.map_interval_ns;
	m->st.grants++;
	m->st.granted_bytes += gbytes;
	delay = g - m->req_sent_ns;
	m->st.req_grant_delay_sum_ns += delay;
	if (delay > m->st.req_grant_delay_max_ns)
		m->st.req_grant_delay_max_ns = delay;

	/* Back to back at the PHY rate from the MAP start, oldest first. */
	left = gbytes;
	while (left && (p = emu_dir_first_unassigned(d))) {
		uint64_t rest = charged_len(m, p) - m->head_sent;

		if (rest > left) {
			/* Fragment: what fits goes now, the tail later. */
			if (!m->head_sent)
				m->st.fragmented_frames++;
			m->head_sent += left;
			break;
		}
		off += rest;
		left -= rest;
		m->head_sent = 0;
		/* off <= 2^30 bytes: off * 8e9 < 2^63. */
		emu_dir_assign_departure(d, g + off * upb /
					 m->cfg.phy_rate_bps);
		completed++;
	}
	if (completed > 1)
		m->st.frames_concatenated += completed;
	m->queued_bytes -= gbytes;

	if (!m->queued_bytes) {
		m->state = EMU_DOCSIS_IDLE;
		m->event_ns = EMU_TIME_NEVER;
	} else if (m->cfg.piggyback) {
		send_request(m, d, g, true);
	} else {
		m->state = EMU_DOCSIS_WAIT_CONTENTION;
		m->event_ns = map_next(m, g);
	}
}

static uint64_t docsis_enqueue(void *ctx, const struct emu_pkt *pkt,
			       uint64_t now_ns)
{
	struct emu_docsis *m = ctx;

	m->queued_bytes += charged_len(m, pkt);
	if (m->state == EMU_DOCSIS_IDLE) {
		m->state = EMU_DOCSIS_WAIT_CONTENTION;
		m->event_ns = map_next(m, now_ns);
	}
	return EMU_TIME_NEVER;	/* decided by a grant, in advance() */
}

static void docsis_advance(void *ctx, struct emu_dir *d, uint64_t now_ns)
{
	struct emu_docsis *m = ctx;

	/* Every event time is strictly later than the one before: no loop. */
	while (m->state != EMU_DOCSIS_IDLE && m->event_ns <= now_ns) {
		if (m->state == EMU_DOCSIS_WAIT_CONTENTION)
			send_request(m, d, m->event_ns, false);
		else
			grant(m, d, m->event_ns);
	}
}

static uint64_t docsis_next_event(void *ctx, const struct emu_dir *d)
{
	const struct emu_docsis *m = ctx;

	(void)d;
	return m->state == EMU_DOCSIS_IDLE ? EMU_TIME_NEVER : m->event_ns;
}

const struct emu_departure_ops emu_docsis_policy_ops = {
	.name = "docsis",
	.enqueue = docsis_enqueue,
	.advance = docsis_advance,
	.next_event_ns = docsis_next_event,
};

uint64_t emu_docsis_tokens_bytes(const struct emu_docsis *m, uint64_t now_ns)
{
	return emu_tb_level(&m->tb, now_ns) / EMU_TB_UNITS_PER_BYTE;
}
