/*
 * policy_docsis.h - DOCSIS upstream request-grant MAC as a linkemu departure
 * policy (cable modem -> CMTS, one CM, one best-effort service flow).
 *
 * Role: reproduce the latency a cable modem's upstream adds even on an idle
 * link, and its load dependence, for fastlab's DOCSIS access path (docs/design.md
 * section 5).  A CM may only transmit in time the CMTS has granted in a MAP
 * message, and it must first ask for that time.  Defaults follow the
 * CableLabs DOCSIS ns-3 model (github.com/cablelabs/docsis-ns3: CmNetDevice,
 * CmtsUpstreamScheduler, "Model Overview") and DOCSIS practice.
 *
 * Parameters (struct emu_docsis_cfg; defaults in EMU_DOCSIS_DEF_*):
 *   map_interval_ns  2 ms      MAP interval M; MAPs start at t = k*M
 *   lookahead_ns     1.6 ms    a request must reach the CMTS this long
 *                              before a MAP starts to be granted in it
 *                              (ns-3: MinReqGntDelay / MAP generation lead)
 *   req_transit_ns   450 us    CM -> CMTS request transit (ns-3: Rtt/2 +
 *                              CM/CMTS pipeline frames)
 *   phy_rate_bps     2.56 Mb/s upstream PHY rate (assumption, docs/design.md)
 *   rate_bps         (--XX-rate-bps) max sustained rate of the service
 *                              flow's token bucket; 0 = no bucket
 *   max_burst_bytes  3044 B    that bucket's depth (max traffic burst)
 *   concatenation    on        a grant may carry several frames
 *   piggyback        on        a CM with a grant requests in it
 *
 * Model (deterministic, no random draws, so the unit tests are exact):
 *
 *  1. Contention request.  A CM with no request outstanding and no grant
 *     coming (state IDLE) that gets a frame sends a request in the next
 *     contention opportunity: one per MAP, at the MAP start, strictly after
 *     the arrival: c = (floor(t / M) + 1) * M.  Contention always succeeds.
 *  2. A request carries the CM's backlog at the time it is sent (with
 *     concatenation off: only the head frame's remaining bytes).  Frames
 *     arriving at or after that time need a later request.  At most one
 *     request is outstanding; frames arriving meanwhile just queue.
 *  3. The request reaches the CMTS at c + req_transit.  The CMTS grants it
 *     in the first MAP that starts at or after request arrival + lookahead:
 *     g = ceil((c + req_transit + lookahead) / M) * M.  With the defaults
 *     that is c + 2 MAPs (2.05 ms rounds up to 4 ms).
 *  4. Grant size G = min(requested bytes, bucket tokens at g, PHY bytes per
 *     MAP = phy_rate * M / 8).  If the bucket holds less than
 *     min(requested, PHY bytes per MAP, depth - one MAP's refill), the
 *     CMTS does not issue a sliver: it defers the request to the first MAP
 *     at which it does (rate limiting by delaying grants, as CMTSs shape
 *     upstream flows).  The "- one MAP's refill" makes a deferred grant go
 *     out before the bucket could overflow, so no token is lost to the MAP
 *     rounding and a backlogged flow gets exactly the sustained rate.
 *     Tokens are taken at g.  The remainder of a request that one grant
 *     cannot carry is not remembered by the CMTS (no Data Grant Pending,
 *     no multiple outstanding requests): the CM asks again (step 6).
 *  5. The grant starts at the MAP start g.  Queued frames are sent back to
 *     back from the head at the PHY rate; a frame departs when its last
 *     byte is on the wire: g + (bytes sent so far in this grant)*8/phy.
 *     As in ns-3 (DOCSIS 3.1 continuous concatenation and fragmentation), a
 *     frame that does not fit in the rest of a grant is fragmented: what
 *     fits is sent, and the frame departs in a later grant.  Without that a
 *     1500-byte frame could never cross a 2.56 Mb/s, 2 ms MAP (640 bytes).
 *  6. If backlog remains after the grant's bytes are taken: with piggyback
 *     on, the CM sends the next request inside this grant, at g (so it is
 *     served in the MAP of step 3 computed from g, without contention);
 *     with piggyback off it contends at the next MAP's opportunity, g + M.
 *     Otherwise the CM is IDLE again.
 *
 * Simplifications (each a deliberate modelling choice):
 *   - a single CM and service flow: no other CMs, no contention collisions
 *     or backoff, no shared-channel congestion model (ns-3 has one);
 *   - the contention slot is at the MAP start (ns-3 draws a uniform random
 *     time within the MAP); the grant is at the MAP start (one CM);
 *   - OFDMA frames, minislot granularity and MAP/UCD messages are not
 *     modelled: a constant PHY rate and a per-MAP byte cap stand for them;
 *   - sizes are IP bytes (frame length minus uncharged_bytes), like every
 *     linkemu rate; DOCSIS MAC/segment headers add no overhead;
 *   - no peak-rate bucket upstream (the per-MAP PHY cap bounds bursts);
 *   - a piggybacked request is sent at the grant start and only covers
 *     frames that arrived before it;
 *   - no AQM (DOCSIS-PIE): drop-tail from the core's limit options.
 *
 * Everything is integer ns arithmetic; the per-frame work in a grant is one
 * division.  Sizes and times are bounded (EMU_DOCSIS_MAX_*) so no product
 * overflows 64 bits.
 */
#ifndef LINKEMU_POLICY_DOCSIS_H
#define LINKEMU_POLICY_DOCSIS_H

#include <stdbool.h>
#include <stdint.h>

#include "policy_tbf.h"
#include "sched.h"

#define EMU_DOCSIS_DEF_MAP_INTERVAL_NS	2000000ULL	/* 2 ms */
#define EMU_DOCSIS_DEF_LOOKAHEAD_NS	1600000ULL	/* 1.6 ms */
#define EMU_DOCSIS_DEF_REQ_TRANSIT_NS	450000ULL	/* 0.45 ms */
#define EMU_DOCSIS_DEF_PHY_RATE_BPS	2560000ULL	/* 2.56 Mb/s */
#define EMU_DOCSIS_DEF_RATE_BPS		512000ULL	/* 512 kb/s */
#define EMU_DOCSIS_DEF_MAX_BURST_BYTES	3044ULL		/* 2 x 1522 B */

/* Bounds that keep every time and byte product below 2^64. */
#define EMU_DOCSIS_MIN_MAP_INTERVAL_NS	1000ULL		/* 1 us */
#define EMU_DOCSIS_MAX_MAP_INTERVAL_NS	1000000000ULL	/* 1 s */
#define EMU_DOCSIS_MAX_DELAY_NS		10000000000ULL	/* 10 s */
#define EMU_DOCSIS_MAX_GRANT_BYTES	(1ULL << 30)

struct emu_docsis_cfg {
	uint64_t map_interval_ns;
	uint64_t lookahead_ns;
	uint64_t req_transit_ns;
	uint64_t phy_rate_bps;	/* > 0, at least one byte per MAP */
	uint64_t rate_bps;	/* max sustained; 0 = no token bucket */
	uint64_t max_burst_bytes; /* bucket depth; >= 1 if rate_bps */
	bool concatenation;
	bool piggyback;
	uint32_t uncharged_bytes; /* per frame, e.g. EMU_L2_HEADER_BYTES */
};

/* Cumulative MAC counters (the stats line's "mac" object). */
struct emu_docsis_stats {
	uint64_t requests;		/* contention + piggybacked */
	uint64_t piggybacked_requests;
	uint64_t grants;		/* MAPs that granted this CM bytes */
	uint64_t granted_bytes;
	uint64_t frames_concatenated;	/* completed in a grant with others */
	uint64_t fragmented_frames;	/* split across grants */
	uint64_t req_grant_delay_sum_ns; /* request sent -> its grant */
	uint64_t req_grant_delay_max_ns;
};

enum emu_docsis_state {
	EMU_DOCSIS_IDLE,		/* nothing queued, nothing pending */
	EMU_DOCSIS_WAIT_CONTENTION,	/* event_ns: contention request */
	EMU_DOCSIS_WAIT_GRANT,		/* event_ns: MAP start of the grant */
};

struct emu_docsis {
	struct emu_docsis_cfg cfg;
	struct emu_tbucket tb;
	uint64_t map_cap_bytes;	/* PHY bytes per MAP interval */
	uint64_t defer_limit;	/* tokens (units) that end a deferral */
	enum emu_docsis_state state;
	uint64_t event_ns;
	uint64_t req_sent_ns;	/* outstanding request ... */
	uint64_t req_bytes;	/* ... and its size */
	uint64_t queued_bytes;	/* charged bytes not yet on the wire */
	uint64_t head_sent;	/* bytes of the head frame already sent */
	uint64_t next_map_ns;	/* MAP after the last grant: next one >= */
	struct emu_docsis_stats st;
};

/* Fill cfg with the defaults above (concatenation and piggyback on). */
void emu_docsis_default_cfg(struct emu_docsis_cfg *cfg);

/* Returns 0, or -1 for a configuration outside the bounds above. */
int emu_docsis_init(struct emu_docsis *m, const struct emu_docsis_cfg *cfg);

/* Install with emu_dir_cfg.policy = &emu_docsis_policy_ops, policy_ctx = m. */
extern const struct emu_departure_ops emu_docsis_policy_ops;

/* Upstream bucket level in whole bytes at now_ns. */
uint64_t emu_docsis_tokens_bytes(const struct emu_docsis *m, uint64_t now_ns);

#endif /* LINKEMU_POLICY_DOCSIS_H */
