/*
 * acct.h - per-frame delay accounting of one link direction.
 *
 * Role: say where each frame's time in the link went, so that fastlab can
 * split a flow's round trip into propagation, serialization, the queueing
 * the emulated links imposed, the emulator's own lateness and what is left
 * (the hosts and the datapath between the links).  A frame that arrived at
 * a, left the queue at departure D (end of its serialization), was due at
 * release R and was handed to the kernel at S spent, in this link:
 *
 *   S - a = ser + queue + delay + extra + late
 *
 *   ser    one segment's serialization at the link's rate: what every
 *          packet pays at every store-and-forward hop;
 *   queue  D - a - ser (>= 0): waiting behind other frames, or for tokens or
 *          a grant; a run of segments kept in one frame waits for its own
 *          earlier segments here too, as the last packet of a burst does on
 *          a real link (its RTT sample is the last segment's);
 *   delay  the propagation delay in force at D (schedule.h), configured;
 *   extra  R - D - delay: the link model's latency beyond propagation
 *          (jitter, the FIFO clamp that keeps jitter from reordering, a
 *          policy's latency such as the DOCSIS phantom); signed, jitter
 *          can make it negative;
 *   late   S - R: the emulator's own error, what it added beyond the model.
 *
 * Weighted per frame, not per segment: a TCP sender takes one RTT sample
 * per acknowledged skb (a super-frame, or one run of it), so the mean over
 * frames is what a flow's RTT samples see.  Cumulative since start, so the
 * difference of two reports gives the mean over any window.
 *
 * Pure: no I/O, time passed in; tests/test_acct.c drives it.
 */
#ifndef LINKEMU_ACCT_H
#define LINKEMU_ACCT_H

#include <stdint.h>

#include "sched.h"

struct emu_acct {
	uint64_t frames;
	uint64_t ser_sum_ns;
	uint64_t queue_sum_ns;
	int64_t extra_sum_ns;
	uint64_t late_sum_ns;
	uint64_t queue_max_ns;
};

/*
 * One segment's serialization at rate_bps (0 = none: the policy's whole
 * wait counts as queue), the frame's bytes less `uncharged` per segment
 * (the L2 header fastlab does not charge).
 */
uint64_t emu_acct_seg_ser_ns(const struct emu_pkt *p, uint64_t rate_bps,
			     uint32_t uncharged);

/*
 * Account frame p, handed to the kernel at sent_ns, whose propagation
 * delay in force at its departure was delay_ns and whose one segment
 * serializes in ser_ns.  Times before their causes (a clock clamped by
 * the core) count as 0, never as a wrapped huge value.  Returns the
 * frame's queueing, ns (for a histogram of its own).
 */
uint64_t emu_acct_frame(struct emu_acct *a, const struct emu_pkt *p,
		    uint64_t sent_ns, uint64_t delay_ns, uint64_t ser_ns);

#endif /* LINKEMU_ACCT_H */
