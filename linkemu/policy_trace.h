/*
 * policy_trace.h - mahimahi packet-delivery traces as a departure policy
 * for linkemu (mm-link's LinkQueue, Netravali et al., "Mahimahi: Accurate
 * Record-and-Replay for HTTP", USENIX ATC 2015).
 *
 * Role: run the cellular (or any) traces users already have for mm-link,
 * unchanged.  A trace file has one line per delivery opportunity: a
 * millisecond offset, plain unsigned decimal, non-decreasing (several equal
 * lines = several opportunities in that ms).  The trace repeats with a
 * period equal to its last timestamp: opportunity k is at
 *
 *   T(k) = origin + (k / n) * last + line[k % n]    (ms; n = lines)
 *
 * so a line at 0 and the last line of the previous period coincide, as in
 * mm-link (its base timestamp advances by the last value at each wrap).
 * The origin is linkemu's (schedule.h: t0 of the ready line, then the
 * epoch, emu_trace_rebase()), as mm-link's is its own start.
 *
 * What an opportunity carries, as mahimahi's LinkQueue::rationalize() does:
 *   - EMU_TRACE_OPP_BYTES (1504: mahimahi's PACKET_SIZE, a 1500-byte MTU
 *     plus the 4-byte packet-information header its TUN device prepends);
 *   - a packet costs its IP bytes + EMU_TRACE_PI_BYTES (what it is on
 *     mahimahi's TUN), so a full-size packet takes exactly one opportunity;
 *   - bytes, not packets: a packet takes what is left of the current
 *     opportunity and goes on in the next ones (mahimahi's packet in
 *     transit), and departs at the opportunity that carries its last byte;
 *     the next packet uses the rest of that opportunity if it had arrived
 *     before it;
 *   - an opportunity at T serves packets that arrived strictly before T
 *     (mahimahi rationalizes the link before it enqueues an arrival); bytes
 *     it could not use (the queue was empty) are lost, not saved.
 * Deviations: times are exact ns (mahimahi's clock is whole ms, and takes
 * an arrival in ms t as arriving at t, so it too never serves it at t);
 * a packet larger than an opportunity (a jumbo MTU) spans several instead
 * of being refused; each segment of a super-frame is its own packet
 * (linkemu cuts super-frames into single segments on a trace link).
 *
 * The departure is fixed on arrival (the trace is known in advance and a
 * later arrival never changes an earlier packet's), so the core's buffer
 * limits, loss, RED and PIE (whose delay is the last departure) work as
 * with the rate policy; CoDel is refused (it needs the core's own rate
 * policy).  The rate (--XX-rate-bps) plays no part in departures.
 *
 * Pure: emu_trace_parse() reads a buffer (main.c reads the file), time is
 * passed in, integer arithmetic only.
 */
#ifndef LINKEMU_POLICY_TRACE_H
#define LINKEMU_POLICY_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched.h"

#define EMU_TRACE_OPP_BYTES	1504U	/* mahimahi's PACKET_SIZE */
#define EMU_TRACE_PI_BYTES	4U	/* struct tun_pi on mahimahi's TUN */
#define EMU_TRACE_NS_PER_MS	1000000ULL

/*
 * Limits, far above public traces (mahimahi's cellular traces have
 * 10^4-10^6 lines): 2^23 lines is 1000 s at 100 Mb/s and 32 MB of memory.
 */
#define EMU_TRACE_MAX_LINES	(1U << 23)
#define EMU_TRACE_MAX_FILE_BYTES (64U << 20)
#define EMU_TRACE_MAX_MS	604800000U	/* one week */

struct emu_trace {
	uint32_t *ms;		/* the opportunities' offsets, non-decreasing */
	uint64_t n;		/* opportunities per period (lines) */
	uint64_t period_ns;	/* last offset */
	uint64_t origin_ns;
	uint32_t uncharged_bytes; /* per segment, e.g. EMU_L2_HEADER_BYTES */
	/*
	 * After a re-basing (the epoch), no packet leaves before this, the
	 * departure of the last one queued before it; 0 = no floor.
	 */
	uint64_t resume_ns;
	/* state: where the last packet queued finished */
	bool started;
	uint64_t opp;		/* its opportunity (absolute index) */
	uint32_t left;		/* bytes of that opportunity still unused */
};

/*
 * Parse a trace held in text[0, len) into *t (name: for errors, e.g. the
 * file name).  Returns 0, or -1 with one line in err naming the file and
 * line.  Memory: emu_trace_free().
 */
int emu_trace_parse(struct emu_trace *t, const char *text, size_t len,
		    const char *name, char *err, size_t errlen);

/* Set the origin and the per-segment bytes not charged; reset the state. */
void emu_trace_start(struct emu_trace *t, uint64_t origin_ns,
		     uint32_t uncharged_bytes);

/*
 * The epoch: the opportunities count from origin_ns from now on, the trace
 * starting again at its first line.  Packets already queued keep their
 * departures; the next one takes the first opportunity after both its
 * arrival and the last of them (so the link stays FIFO); the rest of the
 * last opportunity used before the epoch is not carried over.
 */
void emu_trace_rebase(struct emu_trace *t, uint64_t origin_ns);

void emu_trace_free(struct emu_trace *t);

/* Time of opportunity k (absolute index, from 0). */
uint64_t emu_trace_opp_ns(const struct emu_trace *t, uint64_t k);

/*
 * Index of the first opportunity after t (strictly): also the number of
 * opportunities at or before t, the link's capacity so far.
 */
uint64_t emu_trace_first_after(const struct emu_trace *t, uint64_t t_ns);

/* Mean capacity, bit/s of opportunity bytes (for RED's idle decay). */
uint64_t emu_trace_mean_rate_bps(const struct emu_trace *t);

/*
 * Install with emu_dir_cfg.policy = &emu_trace_policy_ops, policy_ctx = t
 * (emu_dir_destroy() does not free t: the caller does).
 */
extern const struct emu_departure_ops emu_trace_policy_ops;

#endif /* LINKEMU_POLICY_TRACE_H */
