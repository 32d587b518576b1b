/*
 * sched.h - linkemu's scheduler core: one direction of an emulated link.
 *
 * Role: given frames and the times they arrived, decide which are lost,
 * which overflow the buffer, which an AQM drops or marks, when each one
 * leaves the queue (departure) and when it reaches the far end (release).  It performs no I/O and makes no
 * syscalls: time is always passed in by the caller (CLOCK_MONOTONIC ns in
 * linkemu, a fake clock in the unit tests), so the same code is exercised
 * deterministically by tests and by the real forwarding loop.
 *
 * Packet life cycle, in one FIFO ring (arrival order is preserved end to end):
 *
 *   arrive --loss model--> dropped (loss_drops)
 *          --RED / PIE---> dropped (aqm_drops), or marked CE (aqm_marks)
 *          --drop-tail---> dropped (queue_drops)
 *          --> backlog: queued / being serialized (departure > now, or not
 *              yet decided by the departure policy or by CoDel)
 *          --CoDel, at the head of the queue--> dropped (aqm_drops), or
 *              marked CE (aqm_marks)
 *          --> delay line: serialized, propagating (departure <= now),
 *              including packets already due but not yet transmitted
 *          --> transmitted by the I/O loop (tx_pkts) or discarded on a
 *              transmit error (tx_errors)
 *
 * So at every instant (marks are not removals, so they are not in it):
 *   rx_pkts == tx_pkts + tx_errors + queue_drops + loss_drops + aqm_drops
 *              + backlog_pkts + delay_line_pkts
 *
 * Active queue management (aqm.h), per direction, per MTU segment:
 *  - RED and PIE decide on arrival, after the loss model, from the backlog
 *    the segment finds (queued + being serialized, as drop-tail counts it,
 *    the segments of its own frame kept so far included); RED's idle decay
 *    starts when the last departure ended the backlog, PIE's queue delay is
 *    the time the link stays busy with that backlog (the departure of the
 *    last packet queued, exact under the rate and tbf policies).  A drop or
 *    mark inside a super-frame cuts it as a loss does (a marked run is a
 *    frame of its own, its IP header carrying CE).
 *  - CoDel decides at dequeue, on each packet's sojourn time, so under
 *    CoDel the rate policy's departure is not fixed on arrival: a packet
 *    stays undecided ([assign, tail)) until it reaches the head of the
 *    queue, at the instant its serialization would start, max(arrival,
 *    the previous departure); CoDel then drops it there -- it takes no link
 *    time, and the next packet starts at that same instant, earlier than
 *    it would have -- or serialization starts.  The core makes these
 *    decisions in time order whenever it is advanced (before every
 *    arrival, at every peek), with each decision's own instant, so a late
 *    call changes nothing but when the answer is known; the I/O loop is
 *    woken no later than the head packet's earliest release.  A dequeue()
 *    that dropped a packet goes on with the next one only if that one had
 *    arrived by then, else it found the queue empty (RFC 8289's dodequeue).
 *    Arrivals at an instant come before the dequeue at that instant.
 *    Every super-frame is cut into single segments (max_run_segs = 1), as
 *    under tbf/docsis, so each segment is dropped or sent on its own.
 *    CoDel needs departures decided by the core: with a departure policy
 *    (tbf, docsis) emu_dir_init() refuses it; PIE with a policy that
 *    decides departures later (->advance, docsis) likewise.
 *
 * Departure policy: "when does this packet leave the queue" is delegated to
 * struct emu_departure_ops.  The built-in policy is plain FIFO serialization
 * at rate_bps.  A MAC model (e.g. DOCSIS request-grant) can instead defer the
 * decision (return EMU_TIME_NEVER from ->enqueue) and later hand out
 * departures in FIFO order with emu_dir_assign_departure() from its
 * ->advance() hook, announcing its own wake-ups through ->next_event_ns().
 * The I/O loop only ever calls emu_dir_*() and never sees the policy.
 *
 * Time-varying links (schedule.h): with a schedule the rate policy
 * serializes each part of a packet at the rate then in force, a packet's
 * delay is the one in force at its departure (releases stay FIFO) and its
 * Bernoulli loss probability the one in force at its arrival.  Delay and
 * loss steps work with every departure policy; rate steps need the built-in
 * one (emu_dir_init() refuses them with another).
 */
#ifndef LINKEMU_SCHED_H
#define LINKEMU_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aqm.h"
#include "gso.h"
#include "loss.h"
#include "prng.h"
#include "schedule.h"

#define EMU_TIME_NEVER UINT64_MAX

/* Ring sizing defaults (slots); the ring doubles on demand up to max. */
#define EMU_DEFAULT_INIT_SLOTS	1024
#define EMU_DEFAULT_MAX_SLOTS	(1u << 20)
/*
 * Frame bytes live in one FIFO byte arena per direction (frames leave in the
 * order they came), which doubles on demand up to max: a 64 KB super-frame
 * and a 66-byte ACK each take what they need.  1 GiB holds a 10 Gb/s x
 * 200 ms delay line plus a BDP of queue with room to spare.
 */
#define EMU_DEFAULT_INIT_ARENA	(1u << 20)
#define EMU_DEFAULT_MAX_ARENA	(1ULL << 30)

/*
 * One stored frame.  Every count the core keeps is per MTU segment: a
 * super-frame (segs > 1) stands for segs packets on the emulated wire, with
 * wire_len bytes in all (its headers counted once per segment), and got segs
 * consecutive arrival indices starting at index.
 */
struct emu_pkt {
	uint8_t *data;		/* the frame, in the arena (after the vnet header, if any) */
	uint32_t len;		/* frame bytes stored and sent */
	uint32_t segs;		/* MTU segments it carries, >= 1 */
	uint32_t wire_len;	/* bytes of those segments on the wire */
	uint32_t alloc;		/* arena bytes it occupies */
	uint64_t arena_end;	/* arena position just after it */
	uint64_t index;		/* arrival index of its first segment, from 0 */
	uint64_t arrival_ns;
	uint64_t departure_ns;	/* end of serialization; NEVER = undecided */
	uint64_t release_ns;	/* time it may be transmitted; NEVER = undecided */
};

struct emu_dir;

/*
 * Departure policy.  All hooks receive the policy's private ctx.
 *
 * enqueue:       a packet was accepted into the queue at now_ns.  Return its
 *                departure time (>= now_ns), or EMU_TIME_NEVER to decide
 *                later.  Once a packet is deferred, every later packet stays
 *                deferred until assigned: departures are strictly FIFO.
 * advance:       optional; called with the current time before the core
 *                looks at the queue.  A deferring policy assigns departures
 *                here with emu_dir_assign_departure().
 * next_event_ns: optional; the next time the policy needs advance() to be
 *                called (e.g. next grant), or EMU_TIME_NEVER.
 * destroy:       optional; releases ctx when the direction is destroyed.
 * admit:         optional; a segment of seg_bytes (wire) arriving at now_ns
 *                would join the queue behind everything enqueued so far and
 *                pending_bytes/pending_segs of its own frame not yet passed
 *                to enqueue.  Return false to drop it, as drop-tail
 *                (queue_drops): e.g. a shaper whose limit is a delay.
 * latency_ns:    optional; extra one-way delay of a packet that departs at
 *                departure_ns, added to the link's delay (the release stays
 *                FIFO: never before the previous packet's).
 */
struct emu_departure_ops {
	const char *name;
	uint64_t (*enqueue)(void *ctx, const struct emu_pkt *pkt,
			    uint64_t now_ns);
	void (*advance)(void *ctx, struct emu_dir *d, uint64_t now_ns);
	uint64_t (*next_event_ns)(void *ctx, const struct emu_dir *d);
	void (*destroy)(void *ctx);
	bool (*admit)(void *ctx, uint64_t pending_bytes, uint32_t pending_segs,
		      uint32_t seg_bytes, uint64_t now_ns);
	uint64_t (*latency_ns)(void *ctx, const struct emu_pkt *pkt,
			       uint64_t departure_ns);
};

/* State of the built-in rate-serialization policy. */
/*
 * fastlab charges IP bytes: the 14-byte Ethernet header of each frame is not
 * serialized time, so "rate" means the same as in its tc plans (HTB with
 * stab overhead -14) and BDPs counted in 1500-byte packets.  The CLI default
 * is EMU_L2_HEADER_BYTES; the core default (0) charges whole frames.
 */
#define EMU_L2_HEADER_BYTES 14

struct emu_rate_policy {
	uint64_t rate_bps;	/* 0 = infinite */
	const struct emu_timeline *tl; /* rate steps (schedule.h); NULL = fixed */
	uint64_t upstream_bps;	/* see emu_dir_cfg.upstream_rate_bps; 0 = none */
	uint32_t uncharged_bytes; /* per frame, not counted against the rate */
	uint64_t last_departure_ns;
	uint64_t rem;		/* remainder of len*8e9 / rate, carried while busy */
};

extern const struct emu_departure_ops emu_rate_policy_ops;

/* Bytes a policy charges for pkt: its segments' bytes less `uncharged` each. */
static inline uint64_t emu_pkt_charged(const struct emu_pkt *pkt,
				       uint32_t uncharged)
{
	uint64_t free_bytes = (uint64_t)pkt->segs * uncharged;

	return pkt->wire_len > free_bytes ? pkt->wire_len - free_bytes :
					    pkt->wire_len;
}

/* Counters are in MTU segments and their wire bytes. */
struct emu_counters {
	uint64_t rx_pkts;	/* every segment handed to enqueue (valid length) */
	uint64_t rx_bytes;
	uint64_t tx_pkts;
	uint64_t tx_bytes;
	uint64_t queue_drops;	/* drop-tail (buffer or ring memory exhausted) */
	uint64_t loss_drops;	/* loss model */
	uint64_t aqm_drops;	/* AQM (RED, PIE at arrival; CoDel at the head) */
	uint64_t aqm_marks;	/* AQM: CE set instead of a drop (still sent) */
	uint64_t tx_errors;	/* discarded by the I/O loop after a send error */
	uint64_t backlog_pkts;	/* instantaneous: queued + being serialized */
	uint64_t backlog_bytes;
	uint64_t delay_line_pkts; /* instantaneous: serialized, not yet sent */
};

struct emu_dir_cfg {
	uint64_t rate_bps;	/* 0 = infinite */
	uint32_t uncharged_bytes; /* per frame, e.g. the L2 header */
	uint64_t delay_ns;
	uint64_t jitter_ns;	/* uniform in [-jitter, +jitter] */
	uint64_t limit_pkts;	/* 0 = unlimited */
	uint64_t limit_bytes;	/* 0 = unlimited */
	uint32_t max_frame;	/* slot size; longer frames are refused */
	size_t init_slots;	/* 0 = EMU_DEFAULT_INIT_SLOTS */
	size_t max_slots;	/* 0 = EMU_DEFAULT_MAX_SLOTS */
	uint64_t init_arena;	/* bytes, 0 = EMU_DEFAULT_INIT_ARENA */
	uint64_t max_arena;	/* bytes, 0 = EMU_DEFAULT_MAX_ARENA */
	bool vnet;		/* frames carry a virtio_net_hdr (stored before data) */
	/*
	 * Longest run of segments kept in one stored frame (0 = no limit).
	 * A stored frame leaves the link whole, at the departure of its last
	 * segment, so its first segment is held back by the run's
	 * serialization time: linkemu sets this from the rate to bound that.
	 * 1 = segment every super-frame in software.
	 */
	uint32_t max_run_segs;
	/*
	 * Rate of the slowest hop every frame of this direction crossed before
	 * it (0 = unknown or none: frames may come straight from a host, in
	 * bursts).  A super-frame arrives whole, but on the emulated path its
	 * segments were spaced by that bottleneck: with the rate policy a run
	 * that finds the link idle starts (segs - 1) segment times before its
	 * arrival, at the slower of the two spacings, never before the previous
	 * departure -- cut-through, as a chain of real links pipelines packets,
	 * instead of each hop adding the whole run's serialization again.
	 */
	uint64_t upstream_rate_bps;
	uint64_t seed;
	unsigned int dir;	/* 0 = ab, 1 = ba: selects the PRNG streams */
	const struct loss_model *loss;	/* copied; NULL = none */
	/* copied; NULL = none; its rate_bps is set from rate_bps above */
	const struct aqm_cfg *aqm;
	const struct emu_departure_ops *policy; /* NULL = rate serialization */
	void *policy_ctx;
	/*
	 * copied; NULL = a fixed link.  Its times count from schedule_origin_ns;
	 * rate_bps, delay_ns and the loss model's Bernoulli P (none = 0) hold
	 * until a step changes them.  Loss steps need loss none or bernoulli,
	 * rate steps the built-in rate policy.
	 */
	const struct emu_schedule *schedule;
	uint64_t schedule_origin_ns;
};

struct emu_arena {
	uint8_t *buf;
	uint64_t size;		/* power of two */
	uint64_t max;
	uint64_t head, tail;	/* absolute positions, offset = pos & (size - 1) */
	uint64_t grows;		/* times it doubled (each copies the live bytes) */
};

struct emu_dir {
	/* configuration */
	uint64_t delay_ns;
	uint64_t jitter_ns;
	uint64_t limit_pkts;
	uint64_t limit_bytes;
	uint32_t max_frame;
	uint32_t max_run_segs;
	/*
	 * Rate of the slowest hop every frame of this direction crossed before
	 * it (0 = unknown or none: frames may come straight from a host, in
	 * bursts).  A super-frame arrives whole, but on the emulated path its
	 * segments were spaced by that bottleneck: with the rate policy a run
	 * that finds the link idle starts (segs - 1) segment times before its
	 * arrival, at the slower of the two spacings, never before the previous
	 * departure -- cut-through, as a chain of real links pipelines packets,
	 * instead of each hop adding the whole run's serialization again.
	 */
	uint64_t upstream_rate_bps;
	bool vnet;
	size_t max_slots;
	const struct emu_departure_ops *ops;
	void *ops_ctx;
	struct emu_rate_policy rate;
	struct emu_timeline tl;	/* schedule.h; tl.n == 0: nothing varies */
	struct loss_model loss;
	struct prng jitter_rng;
	struct aqm aqm;
	/*
	 * CoDel: a dequeue() that dropped a packet at aqm_call_ns and goes on
	 * with the next one, if it had arrived by then.
	 */
	bool aqm_call_open;
	uint64_t aqm_call_ns;

	/*
	 * Ring of slots.  Positions are absolute, ever-increasing counters;
	 * slot = pos & mask.  head <= ser <= assign <= tail:
	 *   [head, ser)    delay line (departure <= now)
	 *   [ser, assign)  backlog with a known departure > now
	 *   [assign, tail) backlog still waiting for the policy's (or
	 *                  CoDel's) decision
	 */
	struct emu_pkt *ring;
	size_t cap;
	size_t mask;
	uint64_t head, ser, assign, tail;
	struct emu_arena arena;
	/*
	 * Receive in place (emu_dir_rx_slot): where the I/O loop may receive
	 * the next frame, right at the arena's tail, and where such a frame is
	 * moved before it is cut (a cut writes over the tail).
	 */
	uint8_t *rx_slot;
	uint8_t *scratch;

	uint64_t now_ns;		/* latest time seen (clock is clamped) */
	uint64_t last_arrival_ns;
	uint64_t last_departure_ns;
	uint64_t last_release_ns;
	uint64_t next_index;
	struct emu_counters c;
};

enum emu_verdict {
	EMU_QUEUED = 0,
	EMU_DROP_LOSS,		/* loss model; index is meaningful */
	EMU_DROP_QUEUE,		/* drop-tail */
	EMU_DROP_AQM,		/* RED or PIE (CoDel decides later) */
	EMU_DROP_INVALID,	/* length 0 or > max_frame; not counted */
};

/*
 * The core's conservation invariant (see the top of this file): every segment
 * received is transmitted, failed, dropped (full queue, loss model or AQM),
 * queued or on the delay line.  The tests check it after every step.
 */
static inline bool emu_dir_conserved(const struct emu_dir *d)
{
	const struct emu_counters *c = &d->c;

	return c->rx_pkts == c->tx_pkts + c->tx_errors + c->queue_drops +
			     c->loss_drops + c->aqm_drops + c->backlog_pkts +
			     c->delay_line_pkts;
}

int emu_dir_init(struct emu_dir *d, const struct emu_dir_cfg *cfg);
void emu_dir_destroy(struct emu_dir *d);

/*
 * The epoch: the schedule's times count from origin_ns from now on (its
 * steps were pending, EMU_ORIGIN_PENDING, or counted from linkemu's t0).
 * Packets already queued keep the departures they got; the next one starts
 * after the last of them (the rate policy is FIFO), at the rates now in
 * force.  No schedule: nothing to do.
 */
void emu_dir_set_origin(struct emu_dir *d, uint64_t origin_ns);

/* Offer a plain frame (one segment) that arrived at now_ns; it is copied. */
enum emu_verdict emu_dir_enqueue(struct emu_dir *d, uint64_t now_ns,
				 const void *frame, uint32_t len,
				 uint64_t *index_out);

/* Called for each segment the loss model drops, with its arrival index. */
typedef void (*emu_loss_cb)(void *ctx, uint64_t index);

/*
 * Offer a frame described by lay (gso_parse) that arrived at arrival_ns.
 * Each of its lay->segs segments gets the next arrival index, then the loss
 * model, the AQM and drop-tail decide per segment, exactly as if the
 * segments had arrived one by one (so a seed drops the same indices whether
 * or not the sender used TSO).  Runs of kept segments (at most max_run_segs each, all
 * marked CE or none) are cut out of the frame (gso_cut) and queued as
 * frames of their own.
 *
 * arrival_ns may lie before the last time seen by the core -- a kernel
 * receive timestamp of a frame that waited in the socket -- so that the
 * wait becomes part of the link's own delay rather than added to it.  With
 * the built-in rate policy it is honoured (kept >= the previous arrival);
 * other policies run a clock of their own and get max(arrival, now).
 *
 * Returns the number of segments queued.
 */
uint32_t emu_dir_enqueue_frame(struct emu_dir *d, uint64_t arrival_ns,
			       const struct gso_layout *lay,
			       const uint8_t *frame, emu_loss_cb on_loss,
			       void *cb_ctx);

/*
 * Receive in place: room at the arena's tail for one frame of up to
 * max_frame bytes (after the vnet header, if any, which goes first), or NULL
 * when the caller should receive elsewhere (out of memory, or super-frames
 * here are cut into runs shorter than EMU_RX_IN_PLACE_MIN_RUN anyway).  A
 * frame received there and then offered to emu_dir_enqueue_frame() at that
 * address is kept without a copy when it is queued whole -- the usual case
 * -- and moved aside first when it is cut.  The slot is valid until the
 * next enqueue.
 */
#define EMU_RX_IN_PLACE_MIN_RUN	45	/* segments of a 64 KB TSO frame, MSS 1448 */
uint8_t *emu_dir_rx_slot(struct emu_dir *d);

/* Bring the direction up to now_ns (policy hook, backlog accounting). */
void emu_dir_advance(struct emu_dir *d, uint64_t now_ns);

/*
 * Earliest time the I/O loop must call back: release time of the head
 * packet, or the policy's next event, whichever is first.  May be in the
 * past (something is due now).  EMU_TIME_NEVER when idle.
 */
uint64_t emu_dir_next_release_ns(const struct emu_dir *d);

/*
 * Point out[0..n) at up to max packets due at now_ns, in order, without
 * removing them.  Pointers stay valid until the next enqueue.  After sending,
 * call emu_dir_consume() for the ones that went out.
 */
size_t emu_dir_peek_due(struct emu_dir *d, uint64_t now_ns,
			struct emu_pkt **out, size_t max);

/* Remove n packets from the head: transmitted (counted in tx_*). */
void emu_dir_consume(struct emu_dir *d, size_t n);

/* Remove n packets from the head: could not be transmitted (tx_errors). */
void emu_dir_discard(struct emu_dir *d, size_t n);

/*
 * Single-packet convenience: the head packet if due (and removes it, counted
 * as transmitted), else NULL.  The pointer is valid until the next enqueue.
 */
struct emu_pkt *emu_dir_pop_due(struct emu_dir *d, uint64_t now_ns);

/*
 * The one-way propagation delay of a packet departing at dep_ns: the
 * schedule's in force then, or the fixed one (jitter and a policy's own
 * latency not included).  For the delay accounting (acct.h).
 */
uint64_t emu_dir_delay_at(const struct emu_dir *d, uint64_t dep_ns);

/* For departure policies: oldest packet still waiting for a departure. */
const struct emu_pkt *emu_dir_first_unassigned(const struct emu_dir *d);

/* Number of packets still waiting for a departure decision. */
static inline size_t emu_dir_unassigned(const struct emu_dir *d)
{
	return (size_t)(d->tail - d->assign);
}

/*
 * For departure policies: decide the departure of the oldest unassigned
 * packet.  The time is raised if needed to keep departures FIFO and not
 * before arrival.  Returns 0, or -1 if nothing is waiting.
 */
int emu_dir_assign_departure(struct emu_dir *d, uint64_t departure_ns);

#endif /* LINKEMU_SCHED_H */
