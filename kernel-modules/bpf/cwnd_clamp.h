/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cwnd_clamp.h - the layout of cwnd_clamp.bpf.c's per-second RTT map,
 * shared by the BPF program and fastlab-clamp (which dumps it).
 */
#ifndef FASTLAB_CWND_CLAMP_H
#define FASTLAB_CWND_CLAMP_H

#define CWND_CLAMP_RTT_MAP	"rtt_per_second"

struct rtt_key {
	__u16 port;		/* destination port, host byte order */
	__u16 pad;
	__u32 second;		/* CLOCK_MONOTONIC seconds (bpf_ktime_get_ns) */
};

struct rtt_stats {
	__u32 min_us;
	__u32 max_us;
	__u32 n;
	__u32 pad;
	__u64 sum_us;
};

_Static_assert(sizeof(struct rtt_key) == 8, "rtt_key: no padding, stable layout");
_Static_assert(sizeof(struct rtt_stats) == 24, "rtt_stats: no padding, stable layout");

#endif
