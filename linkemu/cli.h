/*
 * cli.h - linkemu's command line: the options of one link (struct opts),
 * their parsing and checks, and the one-line usage errors.
 *
 * Role: everything linkemu knows before it opens a socket.  parse_args()
 * reads one link's command line (the single-link one, or what follows a
 * --link ID in main.c's parse_links()); check_ifaces() checks its
 * interfaces in the namespace the caller has entered.  A bad value is one
 * line on stderr naming the option (and the link: err_link), exit status 2.
 */
#ifndef LINKEMU_CLI_H
#define LINKEMU_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "aqm.h"
#include "loss.h"
#include "policy_docsis.h"
#include "policy_tbf.h"
#include "policy_trace.h"
#include "schedule.h"

#define RX_DEFER_AUTO		UINT64_MAX	/* --rx-defer-us not given */
/*
 * Default --max-burst-us.  A run of segments kept in one frame leaves the
 * link whole when its last segment is serialized: its other segments are
 * held back by up to the run's serialization time.  1 ms is what TCP itself
 * puts in one TSO burst (tcp_tso_autosize: ~1 ms of its pacing rate, at most
 * 64 KB), so at 1 Gb/s and above a sender's super-frames pass uncut, and a
 * TCP sender's RTT samples, taken from the newest segment an ACK covers,
 * stay exact.  Measured here (1 Gb/s x 80 ms, CUBIC): 0.2 emulator cores
 * per Gb/s uncut, 0.6 with 100 us runs, 0.9 one frame per segment.  Later
 * hops do not add the run's time again: see --XX-upstream-bps.
 */
#define DEF_MAX_BURST_US	1000

#define EXIT_USAGE 2
#define LINK_ID_MAX	64	/* characters of a --link ID */

enum dir_field {
	F_RATE, F_DELAY, F_JITTER, F_LIMIT_PKTS, F_LIMIT_BYTES, F_LOSS,
	F_POLICY, F_TBF_BURST, F_TBF_PEAK, F_UPSTREAM,
	F_TBF_MAX_DELAY, F_TBF_GRANULARITY,
	F_PHANTOM_MAX_DELAY, F_PHANTOM_KNEE, F_PHANTOM_WINDOW, F_PHANTOM_FLOW_EXP,
	F_AQM,
	F_SCHEDULE, F_TRACE,
	F_NFIELDS	/* at most DIR_STRIDE */
};

/*
 * Departure policy of a direction (--XX-policy; trace: set by --XX-trace,
 * not a --XX-policy value, since it needs its file).
 */
enum dir_policy { POL_RATE, POL_TBF, POL_DOCSIS, POL_TRACE };


/*
 * Token-bucket default depth: two full-size DOCSIS frames (2 x 1522 B), the
 * upper end of the usual DOCSIS max traffic burst.
 */
#define TBF_DEF_BURST_BYTES	3044

enum {
	OPT_IF_A = 256, OPT_IF_B, OPT_SEED, OPT_STATS, OPT_DROPS_LOG, OPT_CPU,
	OPT_MAX_FRAME, OPT_SPIN, OPT_RX_DEFER, OPT_HELP, OPT_GSO, OPT_MAX_BURST, OPT_RT_PRIO,
	OPT_EPOCH, OPT_NETNS,
	OPT_DOCSIS_MAP, OPT_DOCSIS_LOOKAHEAD, OPT_DOCSIS_TRANSIT,
	OPT_DOCSIS_PHY, OPT_DOCSIS_BURST, OPT_DOCSIS_CONCAT,
	OPT_DOCSIS_PIGGYBACK,
	OPT_DIR0 = 512,		/* OPT_DIR0 + dir * DIR_STRIDE + field */
};

#define DIR_STRIDE	32	/* option slots per direction */
#define DIR_OPT(dir, field) (OPT_DIR0 + (dir) * DIR_STRIDE + (field))


/* The phantom element's load window unless given: 1 s, many RTTs of a 100-ms path. */
#define PHANTOM_DEF_WINDOW_US	1000000ULL

#define US_MAX_DOCSIS_MAP	(EMU_DOCSIS_MAX_MAP_INTERVAL_NS / 1000)
#define US_MAX_DOCSIS_DELAY	(EMU_DOCSIS_MAX_DELAY_NS / 1000)

struct dir_opts {
	uint64_t v[F_NFIELDS];
	struct loss_model loss;
	struct aqm_cfg aqm;	/* --XX-aqm; link fields filled in at setup */
	enum dir_policy policy;
	struct emu_schedule sched;	/* --XX-schedule; n == 0: none */
	const char *trace_path;		/* --XX-trace; NULL: none */
	struct emu_trace trace;		/* its opportunities, loaded at parse time */
};

struct opts {
	const char *if_name[2];
	const char *netns;	/* --netns: namespace of the interfaces, NULL = ours */
	uint64_t seed;
	uint64_t stats_ms;
	const char *drops_log;
	long cpu;		/* -1 = no pinning */
	uint64_t max_frame;	/* 0 = from MTU */
	uint64_t spin_us;
	uint64_t rx_defer_us;	/* RX_DEFER_AUTO = from the latencies */
	uint64_t gso;		/* 1 = PACKET_VNET_HDR fast path */
	uint64_t max_burst_us;
	uint64_t rt_priority;	/* SCHED_FIFO priority, 0 = normal scheduling */
	bool epoch_on_signal;	/* schedules wait for SIGUSR1 (the epoch) */
	struct dir_opts dir[2];
	struct emu_docsis_cfg docsis;	/* for every direction with docsis */
};

extern const char *const policy_names[];
extern const char *prog;
/* The link whose command line is being read or set up (--link ID), for messages. */
extern const char *err_link;

/* The long option's name of an option value (for messages). */
const char *opt_name(int val);

/* One line on stderr naming the option, then exit 2 (usage) or 1 (fatal). */
void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...);
void __attribute__((noreturn, format(printf, 1, 2))) fatal(const char *fmt, ...);

/* One link's command line (argv[0] and its options) into *o; refuses with usage_error(). */
void parse_args(int argc, char **argv, struct opts *o);
void check_ifaces(const struct opts *o);

#endif
