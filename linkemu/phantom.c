/*
 * phantom.c - the calibrated load-dependent delay element (see phantom.h for
 * what it stands for and why it is empirical).
 *
 * Per departure: advance the sliding window to the departure's slot
 * (clearing the slots that fell out of it), add the frame's bytes, read the
 * load u over the window and return D(u).  One 128-bit division a frame.
 */
#include <string.h>

#include "phantom.h"

typedef unsigned __int128 u128;

#define NS_PER_SEC	1000000000ULL

int emu_phantom_init(struct emu_phantom *p, const struct emu_phantom_cfg *cfg)
{
	if (cfg->max_delay_ns > EMU_PHANTOM_MAX_DELAY_NS ||
	    cfg->knee_ppm < 1 || cfg->knee_ppm > EMU_PHANTOM_PPM ||
	    cfg->window_ns < EMU_PHANTOM_MIN_WINDOW_NS ||
	    cfg->window_ns > EMU_PHANTOM_MAX_WINDOW_NS || !cfg->rate_bps)
		return -1;
	memset(p, 0, sizeof(*p));
	p->cfg = *cfg;
	p->slot_ns = cfg->window_ns / EMU_PHANTOM_SLOTS;
	return 0;
}

uint64_t emu_phantom_curve_ns(const struct emu_phantom_cfg *cfg, uint64_t u_ppm)
{
	if (u_ppm >= cfg->knee_ppm)
		return cfg->max_delay_ns;
	/* max_delay <= 1e10 and u < knee <= 1e6: the product fits 64 bits */
	return cfg->max_delay_ns * u_ppm / cfg->knee_ppm;
}

/* Move the window's newest slot to `slot`, emptying the slots it passes. */
static void advance_to(struct emu_phantom *p, uint64_t slot)
{
	uint64_t n;

	if (slot <= p->cur_slot)
		return;
	n = slot - p->cur_slot;
	if (n >= EMU_PHANTOM_SLOTS) {
		memset(p->slot_bytes, 0, sizeof(p->slot_bytes));
		p->sum_bytes = 0;
	} else {
		while (n--) {
			uint64_t *b = &p->slot_bytes[++p->cur_slot % EMU_PHANTOM_SLOTS];

			p->sum_bytes -= *b;
			*b = 0;
		}
	}
	p->cur_slot = slot;
}

uint64_t emu_phantom_delay(struct emu_phantom *p, uint64_t t_ns,
			   uint64_t wire_bytes, uint32_t segs)
{
	uint64_t free_bytes = (uint64_t)segs * p->cfg.uncharged_bytes;
	uint64_t bytes = wire_bytes > free_bytes ? wire_bytes - free_bytes : wire_bytes;
	uint64_t u, delay;

	if (!p->cfg.max_delay_ns)
		return 0;
	advance_to(p, t_ns / p->slot_ns);
	p->slot_bytes[p->cur_slot % EMU_PHANTOM_SLOTS] += bytes;
	p->sum_bytes += bytes;
	/* u = bits over the window / (rate x window), in ppm */
	u = (uint64_t)(((u128)p->sum_bytes * 8 * NS_PER_SEC * EMU_PHANTOM_PPM) /
		       ((u128)p->cfg.rate_bps * p->cfg.window_ns));
	delay = emu_phantom_curve_ns(&p->cfg, u);
	p->st.pkts += segs;
	p->st.delay_sum_ns += delay * segs;
	if (delay > p->st.delay_max_ns)
		p->st.delay_max_ns = delay;
	p->st.load_ppm = u;
	return delay;
}
