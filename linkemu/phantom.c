/*
 * phantom.c - the calibrated load- and flow-dependent delay element (see
 * phantom.h for what it stands for and why it is empirical).
 *
 * Per departure: advance the sliding window to the departure's slot
 * (clearing the slots that fell out of it, for the total and per flow), add
 * the frame's bytes to the total and to its flow, read the load u and the
 * number of flows N over the window and return D.  One 128-bit division a
 * frame for u; with a flow term, a pass over the flow table and two integer
 * square roots.
 */
#include <string.h>

#include "flowkey.h"
#include "phantom.h"

typedef unsigned __int128 u128;

#define NS_PER_SEC	1000000000ULL

/* FNV-1a, 64 bits: a flow's key from its header bytes. */
#define FNV_OFFSET	0xcbf29ce484222325ULL
#define FNV_PRIME	0x100000001b3ULL

int emu_phantom_init(struct emu_phantom *p, const struct emu_phantom_cfg *cfg)
{
	if (cfg->max_delay_ns > EMU_PHANTOM_MAX_DELAY_NS ||
	    cfg->knee_ppm < 1 || cfg->knee_ppm > EMU_PHANTOM_PPM ||
	    cfg->window_ns < EMU_PHANTOM_MIN_WINDOW_NS ||
	    cfg->window_ns > EMU_PHANTOM_MAX_WINDOW_NS || !cfg->rate_bps ||
	    cfg->flow_exp_q > EMU_PHANTOM_MAX_FLOW_EXP_Q)
		return -1;
	memset(p, 0, sizeof(*p));
	p->cfg = *cfg;
	p->slot_ns = cfg->window_ns / EMU_PHANTOM_SLOTS;
	p->st.flows_q16 = EMU_PHANTOM_Q16;
	return 0;
}

uint64_t emu_phantom_curve_ns(const struct emu_phantom_cfg *cfg, uint64_t u_ppm)
{
	if (u_ppm >= cfg->knee_ppm)
		return cfg->max_delay_ns;
	/* max_delay <= 1e10 and u < knee <= 1e6: the product fits 64 bits */
	return cfg->max_delay_ns * u_ppm / cfg->knee_ppm;
}

/* floor(sqrt(x)) for x < 2^64 (Newton's method from above, exact). */
static uint64_t isqrt64(uint64_t x)
{
	uint64_t r, y;

	if (x < 2)
		return x;
	r = x;
	y = (r + 1) / 2;
	while (y < r) {
		r = y;
		y = (r + x / r) / 2;
	}
	return r;
}

uint64_t emu_phantom_flow_factor_q16(uint64_t n_q16, uint32_t flow_exp_q)
{
	/* N^(1/2) and N^(1/4) in Q16: sqrt(N x 2^16) x 2^8 = sqrt(N) x 2^16 */
	uint64_t root2 = isqrt64(n_q16 << 16);
	uint64_t root4 = isqrt64(root2 << 16);
	u128 f = EMU_PHANTOM_Q16;
	uint32_t i;

	if (n_q16 < EMU_PHANTOM_Q16)	/* N >= 1 by construction; a guard */
		return EMU_PHANTOM_Q16;
	/* N <= EMU_PHANTOM_FLOWS (2^6) and k <= 4: f <= 2^40, f x N <= 2^62 */
	for (i = 0; i < flow_exp_q / 4; i++)
		f = f * n_q16 / EMU_PHANTOM_Q16;
	if (flow_exp_q & 2)
		f = f * root2 / EMU_PHANTOM_Q16;
	if (flow_exp_q & 1)
		f = f * root4 / EMU_PHANTOM_Q16;
	return (uint64_t)f;
}

static uint64_t fnv(uint64_t h, const uint8_t *b, uint32_t n)
{
	while (n--) {
		h ^= *b++;
		h *= FNV_PRIME;
	}
	return h;
}

uint64_t emu_phantom_flow_key(const uint8_t *f, uint32_t len)
{
	struct flowkey k;

	/* non-IP frames are one flow per Ethernet type, IP ones one per
	 * protocol and addresses, and TCP and UDP ones per ports too: every
	 * part of the key not read stays zero (flowkey_of zeroes it whole) */
	flowkey_of(f, len, &k);
	return fnv(FNV_OFFSET, (const uint8_t *)&k, sizeof(k));
}

/* Empty slot s (absolute number) of the ring: its bytes leave the window. */
static void clear_slot(struct emu_phantom *p, uint64_t s)
{
	unsigned int i = (unsigned int)(s % EMU_PHANTOM_SLOTS), f;

	p->sum_bytes -= p->slot_bytes[i];
	p->slot_bytes[i] = 0;
	if (!p->cfg.flow_exp_q)
		return;
	for (f = 0; f < EMU_PHANTOM_FLOWS; f++) {
		p->flows[f].bytes -= p->slot_flow_bytes[i][f];
		p->slot_flow_bytes[i][f] = 0;
	}
}

/* Move the window's newest slot to `slot`, emptying the slots it passes. */
static void advance_to(struct emu_phantom *p, uint64_t slot)
{
	uint64_t n;

	if (slot <= p->cur_slot)
		return;
	n = slot - p->cur_slot;
	if (n > EMU_PHANTOM_SLOTS)
		n = EMU_PHANTOM_SLOTS;	/* every slot empties once */
	while (n--)
		clear_slot(p, slot - n);
	p->cur_slot = slot;
}

/* The flow entry of `key`: its own, a free one, or (table full) the last. */
static unsigned int flow_entry(struct emu_phantom *p, uint64_t key)
{
	unsigned int f, free_f = EMU_PHANTOM_FLOWS;

	for (f = 0; f < EMU_PHANTOM_FLOWS; f++) {
		if (p->flows[f].bytes && p->flows[f].key == key)
			return f;
		if (!p->flows[f].bytes && free_f == EMU_PHANTOM_FLOWS)
			free_f = f;
	}
	if (free_f == EMU_PHANTOM_FLOWS)
		return EMU_PHANTOM_FLOWS - 1;
	p->flows[free_f].key = key;
	return free_f;
}

/* N = (sum b)^2 / sum b^2 over the window, Q16; 1.0 for an empty window. */
static uint64_t flows_q16(const struct emu_phantom *p)
{
	u128 sq = 0;
	unsigned int f;

	for (f = 0; f < EMU_PHANTOM_FLOWS; f++)
		sq += (u128)p->flows[f].bytes * p->flows[f].bytes;
	if (!sq)
		return EMU_PHANTOM_Q16;
	/* sum <= 1e12 b/s x 60 s / 8 < 2^43: sum^2 x 2^16 < 2^102 */
	return (uint64_t)((u128)p->sum_bytes * p->sum_bytes * EMU_PHANTOM_Q16 / sq);
}

uint64_t emu_phantom_delay(struct emu_phantom *p, uint64_t t_ns,
			   const uint8_t *frame, uint32_t len,
			   uint64_t wire_bytes, uint32_t segs)
{
	uint64_t free_bytes = (uint64_t)segs * p->cfg.uncharged_bytes;
	uint64_t bytes = wire_bytes > free_bytes ? wire_bytes - free_bytes : wire_bytes;
	uint64_t u, delay, n_q16 = EMU_PHANTOM_Q16;
	unsigned int slot;

	if (!p->cfg.max_delay_ns)
		return 0;
	advance_to(p, t_ns / p->slot_ns);
	slot = (unsigned int)(p->cur_slot % EMU_PHANTOM_SLOTS);
	p->slot_bytes[slot] += bytes;
	p->sum_bytes += bytes;
	/* u = bits over the window / (rate x window), in ppm */
	u = (uint64_t)(((u128)p->sum_bytes * 8 * NS_PER_SEC * EMU_PHANTOM_PPM) /
		       ((u128)p->cfg.rate_bps * p->cfg.window_ns));
	delay = emu_phantom_curve_ns(&p->cfg, u);
	if (p->cfg.flow_exp_q) {
		u128 d;

		if (bytes) {
			unsigned int f = flow_entry(p, emu_phantom_flow_key(frame, len));

			p->flows[f].bytes += bytes;
			p->slot_flow_bytes[slot][f] += bytes;
		}
		n_q16 = flows_q16(p);
		d = (u128)delay * emu_phantom_flow_factor_q16(n_q16, p->cfg.flow_exp_q) /
		    EMU_PHANTOM_Q16;
		delay = d > EMU_PHANTOM_MAX_DELAY_NS ? EMU_PHANTOM_MAX_DELAY_NS : (uint64_t)d;
	}
	p->st.pkts += segs;
	p->st.delay_sum_ns += delay * segs;
	if (delay > p->st.delay_max_ns)
		p->st.delay_max_ns = delay;
	p->st.load_ppm = u;
	p->st.flows_q16 = n_q16;
	return delay;
}
