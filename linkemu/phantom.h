/*
 * phantom.h - an empirical, calibrated delay element: the extra delay
 * Atov, Andrew, Kennedy and Wydrowski measured on a DOCSIS downstream
 * ("Evaluation of FAST TCP in low-speed DOCSIS-based access networks",
 * TENCON 2005).
 *
 * Role: reproduce a measurement whose mechanism is unknown.  With a real
 * Cisco CMTS and cable modem of about 2005, one flow at 3 Mb/s saw a mean
 * RTT of ~145 ms (100 ms of it added on purpose) for windows of 20-38
 * packets, its minimum RTT rising too; the authors call the delay
 * unexplained ("when the link is highly, but not fully, utilised").  No
 * documented DOCSIS 1.x/2.0 mechanism gives it: a discrete-event model of
 * one modem (policy_docsis.h, token-bucket shaping of policy_tbf.h) gives
 * 8-12 ms that do not depend on load.  Two FAST flows needed alpha 22 each
 * where one needed 13 (a total target queue of 44 packets, not the 13 or
 * 26 a delay of the aggregate would ask for).  So this is NOT a model of a
 * mechanism: it is a curve fitted to the study's figures and named as such
 * (the practice of Pantheon's calibrated emulators, Yan et al., USENIX ATC
 * 2018), kept apart from the sourced MAC so it can be switched off.
 *
 * Form, chosen from what the measurements say and no larger:
 *   - it delays every packet (the minimum RTT rises with the load, so not a
 *     few packets but all of them are late);
 *   - it never holds the link back: it acts after the shaper, like extra
 *     propagation, so the downstream still carries its full rate, and once
 *     a queue stands (a window beyond the path) the delay is taken out of
 *     the queue a fixed window would build ("absorbed");
 *   - it grows with the load the downstream carried over the last window,
 *     and with the number of flows that load is split over:
 *
 *       D = max_delay * min(1, u / knee) * N^k,
 *       u = bytes that departed in (t - window, t] * 8 / (rate * window),
 *       N = (sum_i b_i)^2 / sum_i b_i^2, b_i = flow i's bytes in the window
 *
 *     N is the number of equally loaded flows the window's traffic amounts
 *     to (a flow carrying a negligible share, a ping, adds ~0 to it; two
 *     equal flows make it 2).  Why a flow term at all: a FAST flow counts
 *     D x its own packet rate as queue, so with n flows at C/n each, any
 *     delay that depends on the aggregate only (load, aggregate window,
 *     CMTS queue) asks each flow for 1/n of one flow's misread -- the alpha
 *     per flow halves, as on the simple link, and the study's did not.  k
 *     (flow_exp_q / 4) is fitted to the two-flow alpha; k = 0 is the
 *     load-only element this replaced.  max_delay and knee carry the
 *     one-flow fit; window only sets how fast the load is read (1 s: many
 *     RTTs of a 100-ms path).  Their defaults come from bench/docsis.py
 *     --fit (fastlab/define/schema.py, topology docsis), not from here.
 *
 * The load is counted in a ring of EMU_PHANTOM_SLOTS slots of window/SLOTS
 * each (an exact sliding sum at slot resolution), the same ring per flow
 * for up to EMU_PHANTOM_FLOWS flows (a flow is its IP addresses, protocol
 * and ports; more flows than that in one window share the last entry, so N
 * is then under-counted).  Integer arithmetic, no floating point.
 * Departures must be passed in non-decreasing time order (the core's
 * departures are).
 */
#ifndef LINKEMU_PHANTOM_H
#define LINKEMU_PHANTOM_H

#include <stdint.h>

#define EMU_PHANTOM_SLOTS	64
#define EMU_PHANTOM_FLOWS	64	/* flows told apart within one window */
#define EMU_PHANTOM_PPM		1000000ULL	/* u and knee: parts per million */
#define EMU_PHANTOM_Q16		65536ULL	/* N and N^k: fixed point, 16 fraction bits */
/* Bounds that keep every product below 2^64 (u itself goes through 128 bits). */
#define EMU_PHANTOM_MAX_DELAY_NS	10000000000ULL	/* 10 s */
#define EMU_PHANTOM_MIN_WINDOW_NS	(EMU_PHANTOM_SLOTS * 1000ULL)	/* 64 us */
#define EMU_PHANTOM_MAX_WINDOW_NS	60000000000ULL	/* 60 s */
/* The flow exponent k in quarters: 0..4 (N^4 <= 64^4 = 2^24 in Q16 is 2^40). */
#define EMU_PHANTOM_MAX_FLOW_EXP_Q	16

struct emu_phantom_cfg {
	uint64_t max_delay_ns;	/* D at and above the knee, one flow; 0 = element off */
	uint64_t knee_ppm;	/* load share (ppm of rate) where D reaches max; >= 1 */
	uint64_t window_ns;	/* the load is read over this past span */
	uint64_t rate_bps;	/* the link's rate: u = 1 at it; > 0 */
	uint32_t uncharged_bytes; /* per frame, as the rate: IP bytes */
	uint32_t flow_exp_q;	/* k x 4: D grows as N^k; 0 = the load alone */
};

struct emu_phantom_stats {
	uint64_t pkts;		/* segments delayed */
	uint64_t delay_sum_ns;	/* their delay, summed per segment */
	uint64_t delay_max_ns;
	uint64_t load_ppm;	/* u at the last departure */
	uint64_t flows_q16;	/* N at the last departure (Q16); 1.0 when k = 0 */
};

struct emu_phantom_flow {
	uint64_t key;		/* hash of the flow's addresses, protocol, ports */
	uint64_t bytes;		/* over the window; 0 = the entry is free */
};

struct emu_phantom {
	struct emu_phantom_cfg cfg;
	uint64_t slot_ns;
	uint64_t slot_bytes[EMU_PHANTOM_SLOTS];
	uint64_t cur_slot;	/* absolute slot number of the newest departure */
	uint64_t sum_bytes;	/* over the slots of the window */
	struct emu_phantom_flow flows[EMU_PHANTOM_FLOWS];
	/* each slot's bytes per flow entry (only kept when flow_exp_q > 0) */
	uint64_t slot_flow_bytes[EMU_PHANTOM_SLOTS][EMU_PHANTOM_FLOWS];
	struct emu_phantom_stats st;
};

/* Returns 0, or -1 for a configuration outside the bounds above. */
int emu_phantom_init(struct emu_phantom *p, const struct emu_phantom_cfg *cfg);

/* max_delay x min(1, u / knee), the one-flow curve, for a load share u (ppm); pure. */
uint64_t emu_phantom_curve_ns(const struct emu_phantom_cfg *cfg, uint64_t u_ppm);

/* N^k in Q16 for N in Q16 (>= 1.0) and k = flow_exp_q / 4; pure. */
uint64_t emu_phantom_flow_factor_q16(uint64_t n_q16, uint32_t flow_exp_q);

/* The flow key of a frame (Ethernet, then IPv4/IPv6 and TCP/UDP ports); pure. */
uint64_t emu_phantom_flow_key(const uint8_t *frame, uint32_t len);

/*
 * A frame of `segs` segments and `wire_bytes` departs at t_ns: count it in
 * the load (and its flow's share) and return the delay it gets (the same
 * for each of its segments).
 */
uint64_t emu_phantom_delay(struct emu_phantom *p, uint64_t t_ns,
			   const uint8_t *frame, uint32_t len,
			   uint64_t wire_bytes, uint32_t segs);

#endif /* LINKEMU_PHANTOM_H */
