/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fastlab_bpf.h - the contract between the BPF struct_ops programs and
 * user space (fastlab-cc): map sizes, pin names and the ring buffer event
 * records. Included by the BPF programs (after vmlinux.h) and by tools/ (after
 * core/cc_compat.h). Every record has a fixed layout checked at compile time
 * because both sides read the same bytes.
 */
#ifndef FASTLAB_BPF_H
#define FASTLAB_BPF_H

#include "../core/cc_compat.h"

/* bpffs layout: /sys/fs/bpf/fastlab/<name>/<pin> */
#define FASTLAB_BPFFS		"/sys/fs/bpf"
#define FASTLAB_PIN_ROOT	FASTLAB_BPFFS "/fastlab"
#define FASTLAB_PIN_OPS		"ops"		/* the struct_ops map */
#define FASTLAB_PIN_PARAMS	"params"	/* array[1]: global params */
#define FASTLAB_PIN_NETNS	"netns_params"	/* hash: netns inode -> params */
#define FASTLAB_PIN_EVENTS	"events"	/* ring buffer, shared */
#define FASTLAB_PIN_RINGS	"rings"		/* hash: netns inode -> ring buffer */
#define FASTLAB_PIN_TABLE	"table"		/* HSTCP: array[2] of tables */
#define FASTLAB_PIN_RODATA	"rodata"	/* load-time flags (pacing) */

#define FASTLAB_MAX_NETNS	1024		/* per-netns override entries */
#define FASTLAB_RINGBUF_BYTES	(256 * 1024)	/* per ring, shared or a reader's */

/*
 * Per-reader rings. A ring buffer is consumed by whoever reads it: with one
 * shared ring, two runs in different processes (two CLI runs, a benchmark's
 * concurrent runs) each took part of the other's events (lab 02, 4 runs at
 * once: 99 and 58 FAST updates kept of 241 and 148, and its checkpoints read
 * "n/a" on faithful runs). So `fastlab-cc events --netns` creates its own
 * ring and puts it under each of its run's namespace inodes in the "rings"
 * hash of maps; the programs emit a socket's event into the ring its netns
 * maps to, else into the shared ring (a reader without --netns, an older
 * fastlab-cc). Ring buffers as inner maps need Linux >= 5.8.
 */
#define FASTLAB_MAX_RINGS	FASTLAB_MAX_NETNS	/* netns keys, all readers */

/* Event kinds (both algorithms). */
enum fastlab_ev_kind {
	FASTLAB_EV_UPDATE = 0,	/* FAST: once-per-period window update */
	FASTLAB_EV_LOSS = 1,	/* ssthresh() called: fast retransmit / ECN */
	FASTLAB_EV_RTO = 2,	/* CA_EVENT_LOSS: retransmission timeout */
	FASTLAB_EV_RTT = 3,	/* HSTCP: one event per RTT */
	FASTLAB_EV_MODE = 4,	/* HSTCP: slow-start mode changed */
	FASTLAB_EV_INIT = 5,	/* congestion control attached to a socket */
};

/* Which socket: IPv4 addresses in network order, ports in host order. */
struct fastlab_sockid {
	u32 saddr;
	u32 daddr;
	u16 sport;
	u16 dport;
	u32 netns_ino;
};

struct fast_event {
	u64 ts_ns;		/* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	u64 pacing_rate;	/* bytes/s written, 0 = not written */
	struct fastlab_sockid id;
	u32 kind;		/* enum fastlab_ev_kind */
	u32 base_rtt_us;
	u32 avg_rtt_us;
	u32 w_old;		/* packets */
	u32 cwnd_before;	/* packets, before this update */
	u32 cwnd;		/* packets, after this update */
	u32 target;		/* baseRTT/avgRTT * w_old + alpha, packets */
	u32 alpha;		/* packets, effective for this socket */
	u32 backlog;		/* cwnd * (avgRTT - baseRTT) / avgRTT, packets */
	u32 ssthresh;
	u32 gamma_num;
	u32 gamma_den;
	u32 mode;		/* enum fast_mode */
	u32 mi;			/* 1 = multiplicative-increase phase */
	u32 pacing;		/* FASTLAB_PACING_* bits: how pacing_rate was applied */
	u32 reserved;
};

CC_STATIC_ASSERT(sizeof(struct fast_event) == 96, "fast_event layout");

/* How FAST applied its pacing rate at an update (bits). */
#define FASTLAB_PACING_OFF	0U		/* pacing_pct = 0 or no RTT yet */
#define FASTLAB_PACING_WRITE	(1U << 0)	/* sk_pacing_rate written */
#define FASTLAB_PACING_CAP	(1U << 1)	/* SO_MAX_PACING_RATE set */

struct hstcp_event {
	u64 ts_ns;		/* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	struct fastlab_sockid id;
	u32 kind;		/* enum fastlab_ev_kind */
	u32 cwnd;		/* packets */
	u32 ssthresh;		/* packets */
	u32 ai;			/* table row at or below cwnd */
	u32 a_q8;		/* a(w), packets per RTT, Q8 (interpolated) */
	u32 b_q16;		/* b(w), Q16 (interpolated) */
	u32 mode;		/* enum hstcp_mode */
	u32 max_ssthresh;	/* packets, 0 = Limited Slow-Start off */
};

CC_STATIC_ASSERT(sizeof(struct hstcp_event) == 56, "hstcp_event layout");

#endif /* FASTLAB_BPF_H */
