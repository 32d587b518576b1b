/*
 * aqm.h - active queue management for linkemu, per link direction: RED
 * (with gentle mode and Adaptive RED), CoDel and PIE, optionally marking
 * ECN-capable packets instead of dropping them.
 *
 * Role: let a lab put a named AQM in front of a link's buffer and watch a
 * congestion controller react to it, with the parameters and units of the
 * paper or RFC that defines it.  Each model is a pure state machine in its
 * own file (aqm_red.c, aqm_codel.c, aqm_pie.c): no I/O, time in ns passed in
 * by the caller, randomness from the direction's own seeded PRNG stream
 * (prng.h, PRNG_STREAM_AQM), so the scheduler core (sched.c) runs the very
 * same code as the unit tests' fake clock.
 *
 * Determinism: RED and PIE draw exactly one 64-bit number per arrival
 * index (aqm_draw: skipped indices, e.g. packets the loss model took, are
 * drawn and thrown away), whatever the outcome.  The same seed therefore
 * makes the same decisions for the same packet indices and queue states.
 * CoDel draws nothing: it is deterministic by design.
 *
 * Where each model decides (see sched.h for the core's side):
 *   RED   at enqueue, on the EWMA of the backlog in packets or bytes
 *         (Floyd & Jacobson 1993), aqm_red.c;
 *   PIE   at enqueue, on the queueing delay (RFC 8033), aqm_pie.c;
 *   CoDel at dequeue, on each packet's sojourn time when it reaches the
 *         head of the queue (RFC 8289), aqm_codel.c.
 *
 * Fixed point, no floating point after parsing: probabilities are
 * multiples of 2^-56 (AQM_PROB_ONE), which leaves room for PIE's
 * accumulated probability (up to 8.5) in 64 bits and converts to the PRNG's
 * 2^63 scale with one shift; RED's w_q and average queue are multiples of
 * 2^-32.  Times are ns.
 *
 * Spec strings (the CLI's --XX-aqm MODEL; keys in any order, each at most
 * once, every key optional, defaults from the papers):
 *   none
 *   red[:min_th_pkts=5,max_th_pkts=15,max_p=0.1,wq=0.002,gentle=1,
 *       adaptive=0,ecn=0,mean_pkt_bytes=500]
 *       byte mode: min_th_bytes=N,max_th_bytes=N instead of the _pkts
 *       pair (both required; packets and bytes cannot be mixed)
 *   codel[:target_us=5000,interval_us=100000,ecn=0]
 *   pie[:target_us=15000,tupdate_us=15000,alpha=0.125,beta=1.25,
 *       max_burst_us=150000,ecn=0]
 * Integers are plain unsigned decimals; max_p, wq, alpha and beta are plain
 * decimals (no sign, no nan/inf, no hex).
 */
#ifndef LINKEMU_AQM_H
#define LINKEMU_AQM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prng.h"

enum aqm_type {
	AQM_NONE = 0,
	AQM_RED,
	AQM_CODEL,
	AQM_PIE,
};

/* What happens to one packet (one MTU segment). */
enum aqm_verdict {
	AQM_PASS = 0,	/* queue it (enqueue) or send it (dequeue) as it is */
	AQM_MARK,	/* the same, with CE set in its IP header */
	AQM_DROP,	/* an AQM drop (aqm_drops) */
	AQM_TAIL,	/* the buffer was full: drop-tail (queue_drops) */
};

#define AQM_PROB_SHIFT		56
#define AQM_PROB_ONE		(UINT64_C(1) << AQM_PROB_SHIFT)
#define AQM_FRAC_SHIFT		32	/* RED: w_q and the average, 2^-32 units */
#define AQM_FRAC_ONE		(UINT64_C(1) << AQM_FRAC_SHIFT)
#define AQM_NS_PER_US		UINT64_C(1000)
#define AQM_NS_PER_SEC		UINT64_C(1000000000)
#define AQM_BITS_PER_BYTE	UINT64_C(8)

/* Bounds: keep every product of the fixed-point arithmetic below 2^127. */
#define AQM_RED_MAX_TH		(UINT64_C(1) << 30)	/* packets or bytes */
#define AQM_MAX_TIME_US		UINT64_C(60000000)	/* 60 s: targets, intervals, bursts */
#define AQM_PIE_MIN_TUPDATE_US	UINT64_C(100)		/* see aqm_pie.c: updates are caught up per arrival */
#define AQM_PIE_MAX_GAIN_HZ	100		/* alpha and beta */
#define AQM_MAX_PKT_BYTES	65535U

struct aqm_red_cfg {
	bool bytes;		/* byte mode: backlog and thresholds in bytes */
	uint64_t min_th;	/* packets, or bytes in byte mode */
	uint64_t max_th;
	uint64_t max_p;		/* AQM_PROB_ONE scale, (0, 1] */
	uint64_t wq;		/* AQM_FRAC_ONE scale, (0, 1] */
	bool gentle;		/* Floyd 2000: p rises to 1 between max_th and 2 max_th */
	bool adaptive;		/* Floyd, Gummadi, Shenker 2001: max_p follows the load */
	uint32_t mean_pkt_bytes; /* idle decay: the "typical small packet" (IP bytes) */
};

struct aqm_codel_cfg {
	uint64_t target_ns;	/* TARGET */
	uint64_t interval_ns;	/* INTERVAL */
};

struct aqm_pie_cfg {
	uint64_t target_ns;	/* QDELAY_REF */
	uint64_t tupdate_ns;	/* T_UPDATE */
	uint64_t alpha;		/* Hz, as AQM_PROB_ONE per second of delay */
	uint64_t beta;
	uint64_t max_burst_ns;	/* MAX_BURST */
};

struct aqm_cfg {
	enum aqm_type type;
	bool ecn;		/* mark ECT packets instead of dropping them */
	union {
		struct aqm_red_cfg red;
		struct aqm_codel_cfg codel;
		struct aqm_pie_cfg pie;
	};
	/*
	 * The link, filled in by the caller (not part of the spec string):
	 * rate_bps times RED's idle decay (0 = infinite: any idle time empties
	 * the average); mtu_bytes is the largest segment on the wire,
	 * Ethernet header included: RED's MaximumPacketSize in byte mode,
	 * CoDel's MAXPACKET, PIE's MEAN_PKTSIZE.
	 */
	uint64_t rate_bps;
	uint32_t mtu_bytes;
};

/* Default MTU segment if the caller knows none: 1500 bytes of IP + Ethernet. */
#define AQM_DEFAULT_MTU_BYTES	1514U

struct aqm_red {
	uint64_t avg;		/* average queue, AQM_FRAC_ONE per packet (or byte) */
	int64_t count;		/* packets since the last mark; -1 below min_th */
	uint64_t max_p;		/* the current one: Adaptive RED moves it */
	uint64_t last_adapt_ns;
};

/* After an AQM_DROP, how CoDel's dequeue() goes on with the next packet. */
enum aqm_codel_phase {
	AQM_CODEL_LOOP = 0,	/* dropped in the dropping state's loop */
	AQM_CODEL_ENTRY,	/* dropped on entering the dropping state */
};

struct aqm_codel {
	uint64_t first_above_time;	/* 0 = none */
	uint64_t drop_next;
	uint32_t count;
	uint32_t lastcount;
	bool dropping;
	enum aqm_codel_phase phase;
};

struct aqm_pie {
	uint64_t drop_prob;	/* AQM_PROB_ONE scale */
	uint64_t accu_prob;	/* de-randomization, same scale, < 8.5 */
	uint64_t qdelay_ns;	/* current_qdelay_, at the last update */
	uint64_t qdelay_old_ns;
	uint64_t burst_ns;	/* burst_allowance_ */
	uint64_t last_update_ns;
};

struct aqm {
	struct aqm_cfg cfg;
	union {
		struct aqm_red red;
		struct aqm_codel codel;
		struct aqm_pie pie;
	};
	struct prng rng;
	uint64_t next_index;	/* arrival index the PRNG is positioned for */
};

/*
 * Parse a spec into *cfg (link fields zero: fill them in before aqm_init).
 * Returns 0, or -1 with one line in err that names the offending field.
 */
int aqm_parse(struct aqm_cfg *cfg, const char *spec, char *err,
	      size_t errlen);

/* Check a configuration; 0, or -1 with the field named in err (may be NULL). */
int aqm_check(const struct aqm_cfg *cfg, char *err, size_t errlen);

/* Check, copy and reset to the initial state, seeded from (seed, dir). */
int aqm_init(struct aqm *a, const struct aqm_cfg *cfg, uint64_t seed,
	     unsigned int dir, char *err, size_t errlen);

/* Canonical spec string, e.g. "codel:target_us=5000,interval_us=100000,ecn=0". */
int aqm_describe(const struct aqm_cfg *cfg, char *buf, size_t len);

/* Model state for the stats line: a JSON object's members, or "". */
int aqm_state_json(const struct aqm *a, char *buf, size_t len);

static inline bool aqm_on(const struct aqm *a)
{
	return a->cfg.type != AQM_NONE;
}

/* CoDel decides when a packet reaches the head; the others on arrival. */
static inline bool aqm_at_dequeue(const struct aqm *a)
{
	return a->cfg.type == AQM_CODEL;
}

/* The draw of arrival `index` (indices increase; skipped ones are drawn). */
uint64_t aqm_draw(struct aqm *a, uint64_t index);

/* ---- enqueue: RED, PIE --------------------------------------------------- */

/* One arriving segment and the queue it finds. */
struct aqm_arrival {
	uint64_t index;		/* arrival index */
	uint64_t now_ns;
	uint32_t bytes;		/* its wire bytes */
	uint64_t q_pkts;	/* backlog in front of it (queued + being serialized) */
	uint64_t q_bytes;
	uint64_t idle_since_ns;	/* with an empty backlog: when it emptied */
	uint64_t busy_until_ns;	/* departure of the last packet in front of it */
	bool full;		/* drop-tail refuses it */
	bool ect;		/* its IP header says ECT(0), ECT(1) or CE */
};

/* Verdict on an arrival: AQM_PASS, AQM_MARK, AQM_DROP or AQM_TAIL. */
enum aqm_verdict aqm_enqueue(struct aqm *a, const struct aqm_arrival *arr);

/* RED (aqm_red.c); exposed for the unit tests. */
enum aqm_verdict aqm_red_enqueue(struct aqm *a, const struct aqm_arrival *arr);
/* p_b for the current average and a packet of `bytes`; *forced above the curve. */
uint64_t aqm_red_pb(const struct aqm *a, uint32_t bytes, bool *forced);
/* p_a = p_b / (1 - count p_b), 1 once count p_b >= 1. */
uint64_t aqm_red_pa(uint64_t pb, int64_t count);

/* PIE (aqm_pie.c). */
enum aqm_verdict aqm_pie_enqueue(struct aqm *a, const struct aqm_arrival *arr);
/* One drop-probability update (T_UPDATE elapsed) with this queue delay. */
void aqm_pie_update(struct aqm *a, uint64_t qdelay_ns);

/* ---- dequeue: CoDel ------------------------------------------------------ */

/* The packet at the head of the queue when the link asks for one. */
struct aqm_head {
	uint64_t sojourn_ns;	/* now - its arrival */
	uint64_t bytes_after;	/* backlog bytes behind it, at least up to one MTU */
	bool ect;
};

/*
 * One dodequeue() of RFC 8289's dequeue() at now: h is the head packet, or
 * NULL when the queue is empty.  cont is false for the first packet the
 * link asks for and true for the next one the same dequeue() takes after an
 * AQM_DROP (at the same now).  Returns AQM_PASS (send it), AQM_MARK (send it
 * with CE), or AQM_DROP (drop it and call again with the next packet, cont
 * true).  With h NULL the answer is AQM_PASS and means nothing to send.
 */
enum aqm_verdict aqm_codel_dequeue(struct aqm *a, uint64_t now,
				   const struct aqm_head *h, bool cont);

/* INTERVAL / sqrt(count), floor, in ns (count >= 1). */
uint64_t aqm_codel_interval_ns(uint64_t interval_ns, uint32_t count);

#endif /* LINKEMU_AQM_H */
