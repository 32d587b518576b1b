/*
 * flowacct.h - the delay accounting of one link direction, per TCP flow.
 *
 * Role: acct.h says what a link's frames waited on average; a flow's RTT
 * samples met what *its own* frames waited.  On a fast link the two agree:
 * every window holds thousands of frames of every flow.  On a slow one they
 * do not: each flow meets its own place in the queue, and a flow that starts
 * behind another's first window takes that queue for path while the link's
 * sampled backlog shows it empty between the bursts (two FAST flows started
 * together on the 3 Mb/s simple link, 2026-11-29: the second's data waited
 * 35 ms and the queue never drained again; fastlab read its baseRTT as 31 ms
 * of host delay).  So each TCP flow's frames are accounted apart: their
 * count, their queueing (queue + extra, acct.h's parts a flow's RTT sample
 * pays beyond propagation and one segment's serialization), summed, and the
 * least of it, over all of its frames and over those that carry data: a SYN
 * sent into an empty queue is no RTT sample of a delay-based algorithm, and
 * its data may never meet that queue again.
 *
 * A flow is its IPv4 or IPv6 TCP 4-tuple as the frame carries it (flowkey.h;
 * an IPv6 extension header counts as not TCP): the data and the ACKs of one
 * connection cross different link directions, so each direction sees one
 * tuple per connection.  At most FLOWACCT_SLOTS flows per direction; frames
 * of further flows, and frames that are not TCP (pings, ARP), are counted in
 * `other` only.  Cumulative since start, like acct.h.
 *
 * Pure: no I/O; tests/test_flowacct.c drives it.
 */
#ifndef LINKEMU_FLOWACCT_H
#define LINKEMU_FLOWACCT_H

#include <stdbool.h>
#include <stdint.h>

#include "flowkey.h"

/* lab 03's largest row has 64 flows; a run with more loses per-flow figures
 * for the rest, never the link's own (acct.h) */
#define FLOWACCT_SLOTS		64
#define FLOWACCT_NONE		INT64_MAX	/* data_min_ns before any data */

struct flowacct_slot {
	struct flowkey key;	/* flowkey.h: a TCP flow's, ports and all */
	uint64_t frames;
	int64_t queue_sum_ns;	/* queue + extra, summed (extra is signed) */
	int64_t queue_min_ns;	/* the least of it */
	int64_t data_min_ns;	/* the least of it over frames with payload
				 * (FLOWACCT_NONE: none yet): what an RTT
				 * sample times, not the handshake's */
};

struct flowacct {
	struct flowacct_slot slot[FLOWACCT_SLOTS];
	uint32_t used;
	uint64_t other;		/* frames of no slot: not TCP, or no room */
};

/* Account one frame that queued queue_ns (+ extra_ns, signed) in the link. */
void flowacct_frame(struct flowacct *a, const uint8_t *frame, uint32_t len,
		    uint64_t queue_ns, int64_t extra_ns);

#endif /* LINKEMU_FLOWACCT_H */
