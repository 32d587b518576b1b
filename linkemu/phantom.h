/*
 * phantom.h - an empirical, calibrated delay element: the load-dependent
 * extra delay Atov, Andrew, Kennedy and Wydrowski measured on a DOCSIS
 * downstream ("Evaluation of FAST TCP in low-speed DOCSIS-based access
 * networks", TENCON 2005).
 *
 * Role: reproduce a measurement whose mechanism is unknown.  With a real
 * Cisco CMTS and cable modem of about 2005, one flow at 3 Mb/s saw a mean
 * RTT of ~145 ms (100 ms of it added on purpose) for windows of 20-38
 * packets, its minimum RTT rising too; the authors call the delay
 * unexplained ("when the link is highly, but not fully, utilised").  No
 * documented DOCSIS 1.x/2.0 mechanism gives it: a discrete-event model of
 * one modem (policy_docsis.h, token-bucket shaping of policy_tbf.h) gives
 * 8-12 ms that do not depend on load.  So this is NOT a model of a
 * mechanism: it is a curve fitted to the study's figures and named as such
 * (the practice of Pantheon's calibrated emulators, Yan et al., USENIX ATC
 * 2018), kept apart from the sourced MAC so it can be switched off.
 *
 * Form, chosen from what the measurement says and no larger:
 *   - it delays every packet (the minimum RTT rises with the load, so not a
 *     few packets but all of them are late);
 *   - it never holds the link back: it acts after the shaper, like extra
 *     propagation, so the downstream still carries its full rate, and once
 *     a queue stands (a window beyond the path) the delay is taken out of
 *     the queue a fixed window would build ("absorbed");
 *   - it grows with the load the downstream carried over the last window:
 *
 *       D(u) = max_delay * min(1, u / knee),
 *       u    = bytes that departed in (t - window, t] * 8 / (rate * window)
 *
 *     Two parameters (max_delay, knee) carry the fit; window only sets how
 *     fast the load is read (1 s: many RTTs of a 100-ms path).  Their
 *     defaults come from bench/docsis.py --fit (fastlab/define/schema.py, topology
 *     docsis), not from here.
 *
 * The load is counted in a ring of EMU_PHANTOM_SLOTS slots of window/SLOTS
 * each (an exact sliding sum at slot resolution, integer arithmetic, no
 * floating point).  Departures must be passed in non-decreasing time order
 * (the core's departures are).
 */
#ifndef LINKEMU_PHANTOM_H
#define LINKEMU_PHANTOM_H

#include <stdint.h>

#define EMU_PHANTOM_SLOTS	64
#define EMU_PHANTOM_PPM		1000000ULL	/* u and knee: parts per million */
/* Bounds that keep every product below 2^64 (u itself goes through 128 bits). */
#define EMU_PHANTOM_MAX_DELAY_NS	10000000000ULL	/* 10 s */
#define EMU_PHANTOM_MIN_WINDOW_NS	(EMU_PHANTOM_SLOTS * 1000ULL)	/* 64 us */
#define EMU_PHANTOM_MAX_WINDOW_NS	60000000000ULL	/* 60 s */

struct emu_phantom_cfg {
	uint64_t max_delay_ns;	/* D at and above the knee; 0 = element off */
	uint64_t knee_ppm;	/* load share (ppm of rate) where D reaches max; >= 1 */
	uint64_t window_ns;	/* the load is read over this past span */
	uint64_t rate_bps;	/* the link's rate: u = 1 at it; > 0 */
	uint32_t uncharged_bytes; /* per frame, as the rate: IP bytes */
};

struct emu_phantom_stats {
	uint64_t pkts;		/* segments delayed */
	uint64_t delay_sum_ns;	/* their delay, summed per segment */
	uint64_t delay_max_ns;
	uint64_t load_ppm;	/* u at the last departure */
};

struct emu_phantom {
	struct emu_phantom_cfg cfg;
	uint64_t slot_ns;
	uint64_t slot_bytes[EMU_PHANTOM_SLOTS];
	uint64_t cur_slot;	/* absolute slot number of the newest departure */
	uint64_t sum_bytes;	/* over the slots of the window */
	struct emu_phantom_stats st;
};

/* Returns 0, or -1 for a configuration outside the bounds above. */
int emu_phantom_init(struct emu_phantom *p, const struct emu_phantom_cfg *cfg);

/* D(u) for a load share u (ppm); pure. */
uint64_t emu_phantom_curve_ns(const struct emu_phantom_cfg *cfg, uint64_t u_ppm);

/*
 * A frame of `segs` segments and `wire_bytes` departs at t_ns: count it in
 * the load and return the delay it gets (the same for each of its
 * segments).
 */
uint64_t emu_phantom_delay(struct emu_phantom *p, uint64_t t_ns,
			   uint64_t wire_bytes, uint32_t segs);

#endif /* LINKEMU_PHANTOM_H */
