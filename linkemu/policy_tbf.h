/*
 * policy_tbf.h - token-bucket departure policy for linkemu, and the integer
 * token bucket it shares with the DOCSIS upstream model (policy_docsis.h).
 *
 * Role: shape one direction like a DOCSIS downstream service flow (or any
 * tbf-shaped link): a bucket of `burst_bytes` tokens refilled at the maximum
 * sustained rate, and a PHY that serializes at the peak rate.  Frames leave
 * in FIFO order; a frame starts serialization once (a) the PHY has finished
 * the previous frame and (b) the bucket holds its size in tokens, which are
 * then taken.  After idle the bucket is full, so up to burst_bytes go out
 * back to back at the peak rate; a longer backlog is paced at the sustained
 * rate.  Drop-tail comes from the core's limit machinery (sched.h).
 *
 * Like the built-in rate policy, sizes are IP bytes: a frame is charged its
 * length minus uncharged_bytes (linkemu passes the 14-byte Ethernet header),
 * both for tokens and for serialization at the peak rate.
 *
 * Conventions and edge cases:
 *   rate_bps == 0   no sustained limit (bucket always full): the link is a
 *                   plain peak-rate serializer.
 *   peak_bps == 0   infinite peak rate: a conforming frame departs the
 *                   instant it has its tokens (a classic tbf without peak).
 *   frame > bucket  a frame larger than the bucket waits for a full bucket
 *                   and empties it, instead of wedging the queue forever
 *                   (configure burst_bytes >= the largest IP packet to keep
 *                   the sustained rate exact).
 *
 * Cisco's downstream shaping (CISCO-DOCS-EXT-MIB cdxQosIfRateLimitAlgm,
 * "token-bucket shaping"; Cisco Broadband Cable Command Reference), both
 * optional:
 *   granularity_ns  a frame short of tokens is given the delay until they
 *                   refill, rounded up to a whole number of shaping-queue
 *                   slots of this width (1/2/4/8/16 ms; IOS default 4 ms);
 *   max_delay_ns    a drop threshold on that computed delay (128/256/512/
 *                   1024 ms; IOS 12.2BC default 128 ms): a frame that would
 *                   wait longer is dropped on arrival (queue_drops, and
 *                   delay_drops here), which makes the shaping queue's limit
 *                   a time, not a number of bytes.
 *
 * And, after the shaper, an optional calibrated element (phantom.h): every
 * frame's release is delayed by D(load), never its departure, so it never
 * holds the link back.
 *
 * Everything is integer arithmetic on ns timestamps with no cumulative
 * rounding: tokens are kept in units of 1/8e9 byte, so a rate of r bit/s
 * adds exactly r units per ns.
 */
#ifndef LINKEMU_POLICY_TBF_H
#define LINKEMU_POLICY_TBF_H

#include <stdint.h>

#include "phantom.h"
#include "sched.h"

#define EMU_NS_PER_SEC		1000000000ULL
#define EMU_BITS_PER_BYTE	8ULL

/* Token units per byte: r bit/s then refills r units per ns, exactly. */
#define EMU_TB_UNITS_PER_BYTE	(EMU_BITS_PER_BYTE * EMU_NS_PER_SEC)

/* Largest bucket, bytes: keeps depth * units/byte (8.6e18) below 2^64. */
#define EMU_TB_MAX_DEPTH_BYTES	(1ULL << 30)

/* Largest rate, bit/s (as the core's --XX-rate-bps bound). */
#define EMU_TB_MAX_RATE_BPS	1000000000000ULL

/* Largest shaping delay threshold and slot width (bounds, not defaults). */
#define EMU_TB_MAX_DELAY_NS	100000000000ULL	/* 100 s */

/*
 * A token bucket in time: `level` tokens (units) at time `stamp_ns`.  Reads
 * never change it; refill/take move stamp forward only.
 */
struct emu_tbucket {
	uint64_t rate_bps;	/* refill rate; 0 = infinite (always full) */
	uint64_t depth;		/* capacity, units */
	uint64_t level;		/* units at stamp_ns */
	uint64_t stamp_ns;
};

/* Full bucket at time 0. */
void emu_tb_init(struct emu_tbucket *tb, uint64_t rate_bps,
		 uint64_t depth_bytes);

/* Level (units) at time t; for t before the stamp, the level at the stamp. */
uint64_t emu_tb_level(const struct emu_tbucket *tb, uint64_t t);

/* Earliest time >= t at which the level reaches units (<= depth). */
uint64_t emu_tb_ready_at(const struct emu_tbucket *tb, uint64_t units,
			 uint64_t t);

/* Refill up to t, then remove units (the caller checked they are there). */
void emu_tb_take(struct emu_tbucket *tb, uint64_t t, uint64_t units);

struct emu_tbf_cfg {
	uint64_t rate_bps;	/* max sustained rate; 0 = unlimited */
	uint64_t burst_bytes;	/* bucket depth (max burst); >= 1 if rate */
	uint64_t peak_bps;	/* PHY rate; 0 = infinite, else >= rate_bps */
	uint32_t uncharged_bytes; /* per frame, e.g. EMU_L2_HEADER_BYTES */
	uint64_t max_delay_ns;	/* drop threshold on the shaping delay; 0 = none */
	uint64_t granularity_ns; /* shaping-queue slot width; 0 = exact delays */
	struct emu_phantom_cfg phantom; /* max_delay_ns 0 = no phantom element */
};

struct emu_tbf {
	struct emu_tbucket tb;
	uint64_t peak_bps;
	uint32_t uncharged_bytes;
	uint64_t max_delay_ns;
	uint64_t granularity_ns;
	uint64_t last_departure_ns; /* PHY busy until then */
	uint64_t rem;		/* remainder of len*8e9 / peak, while busy */
	uint64_t delay_drops;	/* segments refused by max_delay_ns */
	struct emu_phantom phantom;
};

/* Returns 0, or -1 for an invalid configuration (see emu_tbf_cfg). */
int emu_tbf_init(struct emu_tbf *t, const struct emu_tbf_cfg *cfg);

/* Install with emu_dir_cfg.policy = &emu_tbf_policy_ops, policy_ctx = t. */
extern const struct emu_departure_ops emu_tbf_policy_ops;

/*
 * Instantaneous bucket level in whole bytes at now_ns, after every queued
 * frame has been charged (so 0 while a backlog is being paced).
 */
uint64_t emu_tbf_tokens_bytes(const struct emu_tbf *t, uint64_t now_ns);

#endif /* LINKEMU_POLICY_TBF_H */
