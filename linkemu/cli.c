/*
 * cli.c - linkemu's command line (see cli.h): option table, parsing, the
 * checks that involve several options, and the one-line usage errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *prog = "linkemu";
const char *err_link;

const char *const policy_names[] = {
	[POL_RATE] = "rate", [POL_TBF] = "tbf", [POL_DOCSIS] = "docsis",
	[POL_TRACE] = "trace",
};

static const struct option long_opts[] = {
	{ "if-a",		required_argument, NULL, OPT_IF_A },
	{ "if-b",		required_argument, NULL, OPT_IF_B },
	{ "seed",		required_argument, NULL, OPT_SEED },
	{ "stats-interval-ms",	required_argument, NULL, OPT_STATS },
	{ "drops-log",		required_argument, NULL, OPT_DROPS_LOG },
	{ "cpu",		required_argument, NULL, OPT_CPU },
	{ "max-frame",		required_argument, NULL, OPT_MAX_FRAME },
	{ "spin-us",		required_argument, NULL, OPT_SPIN },
	{ "rx-defer-us",	required_argument, NULL, OPT_RX_DEFER },
	{ "help",		no_argument,	   NULL, OPT_HELP },
	{ "gso",		required_argument, NULL, OPT_GSO },
	{ "max-burst-us",	required_argument, NULL, OPT_MAX_BURST },
	{ "rt-priority",	required_argument, NULL, OPT_RT_PRIO },
	{ "epoch-on-signal",	no_argument,	   NULL, OPT_EPOCH },
	{ "netns",		required_argument, NULL, OPT_NETNS },
	{ "docsis-map-interval-us", required_argument, NULL, OPT_DOCSIS_MAP },
	{ "docsis-lookahead-us", required_argument, NULL, OPT_DOCSIS_LOOKAHEAD },
	{ "docsis-request-transit-us", required_argument, NULL,
	  OPT_DOCSIS_TRANSIT },
	{ "docsis-phy-rate-bps", required_argument, NULL, OPT_DOCSIS_PHY },
	{ "docsis-max-burst-bytes", required_argument, NULL, OPT_DOCSIS_BURST },
	{ "docsis-concatenation", required_argument, NULL, OPT_DOCSIS_CONCAT },
	{ "docsis-piggyback",	required_argument, NULL, OPT_DOCSIS_PIGGYBACK },
	{ "ab-rate-bps",	required_argument, NULL, DIR_OPT(0, F_RATE) },
	{ "ab-delay-us",	required_argument, NULL, DIR_OPT(0, F_DELAY) },
	{ "ab-jitter-us",	required_argument, NULL, DIR_OPT(0, F_JITTER) },
	{ "ab-limit-pkts",	required_argument, NULL, DIR_OPT(0, F_LIMIT_PKTS) },
	{ "ab-limit-bytes",	required_argument, NULL, DIR_OPT(0, F_LIMIT_BYTES) },
	{ "ab-loss",		required_argument, NULL, DIR_OPT(0, F_LOSS) },
	{ "ab-policy",		required_argument, NULL, DIR_OPT(0, F_POLICY) },
	{ "ab-tbf-burst-bytes",	required_argument, NULL, DIR_OPT(0, F_TBF_BURST) },
	{ "ab-tbf-peak-bps",	required_argument, NULL, DIR_OPT(0, F_TBF_PEAK) },
	{ "ab-upstream-bps",	required_argument, NULL, DIR_OPT(0, F_UPSTREAM) },
	{ "ab-tbf-max-delay-us", required_argument, NULL, DIR_OPT(0, F_TBF_MAX_DELAY) },
	{ "ab-tbf-granularity-us", required_argument, NULL, DIR_OPT(0, F_TBF_GRANULARITY) },
	{ "ab-phantom-max-delay-us", required_argument, NULL, DIR_OPT(0, F_PHANTOM_MAX_DELAY) },
	{ "ab-phantom-knee-ppm", required_argument, NULL, DIR_OPT(0, F_PHANTOM_KNEE) },
	{ "ab-phantom-window-us", required_argument, NULL, DIR_OPT(0, F_PHANTOM_WINDOW) },
	{ "ab-phantom-flow-exp-q", required_argument, NULL, DIR_OPT(0, F_PHANTOM_FLOW_EXP) },
	{ "ab-aqm",		required_argument, NULL, DIR_OPT(0, F_AQM) },
	{ "ab-schedule",	required_argument, NULL, DIR_OPT(0, F_SCHEDULE) },
	{ "ab-trace",		required_argument, NULL, DIR_OPT(0, F_TRACE) },
	{ "ba-rate-bps",	required_argument, NULL, DIR_OPT(1, F_RATE) },
	{ "ba-delay-us",	required_argument, NULL, DIR_OPT(1, F_DELAY) },
	{ "ba-jitter-us",	required_argument, NULL, DIR_OPT(1, F_JITTER) },
	{ "ba-limit-pkts",	required_argument, NULL, DIR_OPT(1, F_LIMIT_PKTS) },
	{ "ba-limit-bytes",	required_argument, NULL, DIR_OPT(1, F_LIMIT_BYTES) },
	{ "ba-loss",		required_argument, NULL, DIR_OPT(1, F_LOSS) },
	{ "ba-policy",		required_argument, NULL, DIR_OPT(1, F_POLICY) },
	{ "ba-tbf-burst-bytes",	required_argument, NULL, DIR_OPT(1, F_TBF_BURST) },
	{ "ba-tbf-peak-bps",	required_argument, NULL, DIR_OPT(1, F_TBF_PEAK) },
	{ "ba-upstream-bps",	required_argument, NULL, DIR_OPT(1, F_UPSTREAM) },
	{ "ba-tbf-max-delay-us", required_argument, NULL, DIR_OPT(1, F_TBF_MAX_DELAY) },
	{ "ba-tbf-granularity-us", required_argument, NULL, DIR_OPT(1, F_TBF_GRANULARITY) },
	{ "ba-phantom-max-delay-us", required_argument, NULL, DIR_OPT(1, F_PHANTOM_MAX_DELAY) },
	{ "ba-phantom-knee-ppm", required_argument, NULL, DIR_OPT(1, F_PHANTOM_KNEE) },
	{ "ba-phantom-window-us", required_argument, NULL, DIR_OPT(1, F_PHANTOM_WINDOW) },
	{ "ba-phantom-flow-exp-q", required_argument, NULL, DIR_OPT(1, F_PHANTOM_FLOW_EXP) },
	{ "ba-aqm",		required_argument, NULL, DIR_OPT(1, F_AQM) },
	{ "ba-schedule",	required_argument, NULL, DIR_OPT(1, F_SCHEDULE) },
	{ "ba-trace",		required_argument, NULL, DIR_OPT(1, F_TRACE) },
	{ NULL, 0, NULL, 0 },
};

/* Upper bounds keep every later ns computation far from uint64 overflow. */
static const uint64_t field_max[F_NFIELDS] = {
	[F_RATE] = 1000000000000ULL,		/* 1 Tb/s */
	[F_DELAY] = 3600000000ULL,		/* 1 hour in us */
	[F_JITTER] = 3600000000ULL,
	[F_LIMIT_PKTS] = 1000000000ULL,
	[F_LIMIT_BYTES] = 1ULL << 40,
	[F_TBF_BURST] = EMU_TB_MAX_DEPTH_BYTES,
	[F_TBF_PEAK] = EMU_TB_MAX_RATE_BPS,
	[F_UPSTREAM] = 1000000000000ULL,
	[F_TBF_MAX_DELAY] = EMU_TB_MAX_DELAY_NS / 1000,
	[F_TBF_GRANULARITY] = EMU_TB_MAX_DELAY_NS / 1000,
	[F_PHANTOM_MAX_DELAY] = EMU_PHANTOM_MAX_DELAY_NS / 1000,
	[F_PHANTOM_KNEE] = EMU_PHANTOM_PPM,
	[F_PHANTOM_WINDOW] = EMU_PHANTOM_MAX_WINDOW_NS / 1000,
	[F_PHANTOM_FLOW_EXP] = EMU_PHANTOM_MAX_FLOW_EXP_Q,
};

_Static_assert(F_NFIELDS <= DIR_STRIDE, "DIR_OPT gives each direction DIR_STRIDE option slots");

const char *opt_name(int val)
{
	const struct option *o;

	for (o = long_opts; o->name; o++)
		if (o->val == val)
			return o->name;
	return "?";
}

/* One line on stderr, prefixed with the program name, then exit with `status`. */
static void __attribute__((noreturn))
vdie(int status, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", prog);
	if (err_link)
		fprintf(stderr, "link %s: ", err_link);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	exit(status);
}

void __attribute__((noreturn, format(printf, 1, 2)))
usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vdie(EXIT_USAGE, fmt, ap);
}

/* Strict unsigned decimal: no sign, no spaces, no suffix, no overflow. */
static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || strspn(s, "0123456789") != strlen(s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

static uint64_t opt_u64(int val, const char *arg, uint64_t max)
{
	uint64_t v;

	if (parse_u64(arg, max, &v))
		usage_error("--%s: invalid value '%s' (expected an integer 0..%" PRIu64 ")",
			    opt_name(val), arg, max);
	return v;
}

static void print_usage(FILE *f)
{
	fprintf(f,
"usage: %s --if-a IF --if-b IF [--seed N] [--stats-interval-ms 50]\n"
"       [--drops-log FILE] [--cpu N] [--max-frame BYTES] [--spin-us N]\n"
"       [--rx-defer-us N] [--gso 1|0] [--max-burst-us 1000] [--rt-priority 0..99]\n"
"       [--ab-upstream-bps N] [--ba-upstream-bps N]\n"
"       [--ab-rate-bps N] [--ab-delay-us N] [--ab-jitter-us N]\n"
"       [--ab-limit-pkts N] [--ab-limit-bytes N] [--ab-loss MODEL]\n"
"       [--ba-rate-bps N] [--ba-delay-us N] [--ba-jitter-us N]\n"
"       [--ba-limit-pkts N] [--ba-limit-bytes N] [--ba-loss MODEL]\n"
"       [--ab-policy P] [--ab-tbf-burst-bytes 3044] [--ab-tbf-peak-bps 0]\n"
"       [--ba-policy P] [--ba-tbf-burst-bytes 3044] [--ba-tbf-peak-bps 0]\n"
"       [--XX-tbf-max-delay-us 0] [--XX-tbf-granularity-us 0]   (tbf: Cisco's\n"
"        drop threshold on the shaping delay, and its slot width; 0 = none)\n"
"       [--XX-phantom-max-delay-us 0 --XX-phantom-knee-ppm N\n"
"        --XX-phantom-window-us 1000000 --XX-phantom-flow-exp-q 0]   (tbf: the\n"
"        calibrated delay of phantom.h, D = max x min(1, load/knee) x N^(q/4),\n"
"        N the window's flows, equally loaded; max 0 = off)\n"
"       [--docsis-map-interval-us 2000] [--docsis-lookahead-us 1600]\n"
"       [--docsis-request-transit-us 450] [--docsis-phy-rate-bps 2560000]\n"
"       [--docsis-max-burst-bytes 3044] [--docsis-concatenation 1|0]\n"
"       [--docsis-piggyback 1|0]\n"
"       [--ab-aqm AQM] [--ba-aqm AQM]   (active queue management, per direction)\n"
"       [--ab-schedule STEPS] [--ba-schedule STEPS]   (time-varying rate, delay, loss)\n"
"       [--ab-trace FILE] [--ba-trace FILE]   (mahimahi delivery trace: the departures)\n"
"       [--epoch-on-signal]   (schedules hold the options' values until SIGUSR1)\n"
"MODEL: none | bernoulli:P | every_nth:N | ge:p:r[:h[:k]]\n"
"AQM: none\n"
"   | red[:min_th_pkts=5,max_th_pkts=15,max_p=0.1,wq=0.002,gentle=1,adaptive=0,\n"
"         ecn=0,mean_pkt_bytes=500]   (byte mode: min_th_bytes=N,max_th_bytes=N)\n"
"   | codel[:target_us=5000,interval_us=100000,ecn=0]   (--XX-policy rate only)\n"
"   | pie[:target_us=15000,tupdate_us=15000,alpha=0.125,beta=1.25,\n"
"         max_burst_us=150000,ecn=0]   (not with --XX-policy docsis)\n"
"P: rate (default) | tbf | docsis; --XX-rate-bps is the (sustained) rate.\n"
"STEPS: T:key=value[,key=value...][;T:...], T in us after the epoch (SIGUSR1;\n"
"   until then t0, the ready line's),\n"
"   keys rate_bps (rate policy only), delay_us, loss (Bernoulli P); at most %d steps\n"
"FILE: one ms timestamp per line per 1504-byte opportunity, repeating (mm-link)\n"
"rate 0 = unlimited, limit 0 = unlimited.  ab = frames received on A, sent on B.\n",
		prog, EMU_SCHEDULE_MAX_STEPS);
}

static enum dir_policy parse_policy(int val, const char *arg)
{
	unsigned int i;

	/* (trace is chosen by --XX-trace, not named here) */
	for (i = 0; i <= POL_DOCSIS; i++)
		if (!strcmp(arg, policy_names[i]))
			return (enum dir_policy)i;
	usage_error("--%s: unknown policy '%s' (expected rate, tbf or docsis)",
		    opt_name(val), arg);
}

/* What a schedule or a trace cannot run with (policy_trace.h, schedule.h). */
static void check_time_varying(const struct opts *o, int d)
{
	const struct dir_opts *dopt = &o->dir[d];
	unsigned int set = dopt->sched.set;

	if (dopt->trace_path && dopt->policy != POL_RATE)
		usage_error("--%s: a trace is the departure policy itself: not with --%s %s",
			    opt_name(DIR_OPT(d, F_TRACE)), opt_name(DIR_OPT(d, F_POLICY)),
			    policy_names[dopt->policy]);
	if (dopt->trace_path && dopt->aqm.type == AQM_CODEL)
		usage_error("--%s: codel cannot run with --%s (it decides departures at the head of the queue; the trace fixes them)",
			    opt_name(DIR_OPT(d, F_AQM)), opt_name(DIR_OPT(d, F_TRACE)));
	if ((set & EMU_STEP_RATE) && dopt->trace_path)
		usage_error("--%s: rate_bps steps cannot run with --%s (the trace sets the departures; delay_us and loss steps can)",
			    opt_name(DIR_OPT(d, F_SCHEDULE)), opt_name(DIR_OPT(d, F_TRACE)));
	if ((set & EMU_STEP_RATE) && dopt->policy != POL_RATE)
		usage_error("--%s: rate_bps steps need --%s rate (%s has rates of its own; delay_us and loss steps work with it)",
			    opt_name(DIR_OPT(d, F_SCHEDULE)), opt_name(DIR_OPT(d, F_POLICY)),
			    policy_names[dopt->policy]);
	if ((set & EMU_STEP_LOSS) && dopt->loss.type != LOSS_NONE &&
	    dopt->loss.type != LOSS_BERNOULLI)
		usage_error("--%s: loss steps need --%s none or bernoulli:P (they change a Bernoulli probability)",
			    opt_name(DIR_OPT(d, F_SCHEDULE)), opt_name(DIR_OPT(d, F_LOSS)));
}

/* Checks that involve more than one option, before any interface lookup. */
static void check_policies(const struct opts *o)
{
	int d;

	for (d = 0; d < 2; d++) {
		const struct dir_opts *dopt = &o->dir[d];
		uint64_t rate = dopt->v[F_RATE], peak = dopt->v[F_TBF_PEAK];

		if (dopt->policy != POL_TBF)
			continue;
		if (peak && peak < rate)
			usage_error("--%s: peak rate %" PRIu64 " is below --%s %"
				    PRIu64 " (0 = no peak limit)",
				    opt_name(DIR_OPT(d, F_TBF_PEAK)), peak,
				    opt_name(DIR_OPT(d, F_RATE)), rate);
		if (rate && !dopt->v[F_TBF_BURST])
			usage_error("--%s: must be at least 1 with a sustained rate",
				    opt_name(DIR_OPT(d, F_TBF_BURST)));
		if (!dopt->v[F_PHANTOM_MAX_DELAY]) {
			if (dopt->v[F_PHANTOM_FLOW_EXP])
				usage_error("--%s: needs --%s (the element it scales)",
					    opt_name(DIR_OPT(d, F_PHANTOM_FLOW_EXP)),
					    opt_name(DIR_OPT(d, F_PHANTOM_MAX_DELAY)));
			continue;
		}
		if (!rate)
			usage_error("--%s: needs a sustained rate (--%s): the load is read against it",
				    opt_name(DIR_OPT(d, F_PHANTOM_MAX_DELAY)), opt_name(DIR_OPT(d, F_RATE)));
		if (!dopt->v[F_PHANTOM_KNEE])
			usage_error("--%s: must be at least 1 ppm with --%s",
				    opt_name(DIR_OPT(d, F_PHANTOM_KNEE)), opt_name(DIR_OPT(d, F_PHANTOM_MAX_DELAY)));
		if (dopt->v[F_PHANTOM_WINDOW] * 1000 < EMU_PHANTOM_MIN_WINDOW_NS)
			usage_error("--%s: at least %llu us", opt_name(DIR_OPT(d, F_PHANTOM_WINDOW)),
				    (unsigned long long)(EMU_PHANTOM_MIN_WINDOW_NS / 1000));
	}
	for (d = 0; d < 2; d++) {
		const struct dir_opts *dopt = &o->dir[d];
		static const int tbf_only[] = { F_TBF_MAX_DELAY, F_TBF_GRANULARITY, F_PHANTOM_MAX_DELAY,
						F_PHANTOM_FLOW_EXP };
		unsigned int k;

		/* CoDel decides departures at the head of the queue: sched.h */
		if (dopt->aqm.type == AQM_CODEL && dopt->policy != POL_RATE)
			usage_error("--%s: codel needs --%s rate (it decides when a packet reaches the head of the queue; %s fixes departures itself)",
				    opt_name(DIR_OPT(d, F_AQM)), opt_name(DIR_OPT(d, F_POLICY)),
				    policy_names[dopt->policy]);
		if (dopt->aqm.type == AQM_PIE && dopt->policy == POL_DOCSIS)
			usage_error("--%s: pie cannot run with --%s docsis (its queue delay needs departures fixed on arrival; the MAC grants them later)",
				    opt_name(DIR_OPT(d, F_AQM)), opt_name(DIR_OPT(d, F_POLICY)));

		for (k = 0; k < sizeof(tbf_only) / sizeof(tbf_only[0]); k++)
			if (dopt->policy != POL_TBF && dopt->v[tbf_only[k]])
				usage_error("--%s: needs --%s tbf", opt_name(DIR_OPT(d, tbf_only[k])),
					    opt_name(DIR_OPT(d, F_POLICY)));
		check_time_varying(o, d);
	}
	/* One byte per MAP at least, or no frame could ever be granted. */
	if ((o->dir[0].policy == POL_DOCSIS || o->dir[1].policy == POL_DOCSIS) &&
	    o->docsis.phy_rate_bps * (o->docsis.map_interval_ns / 1000) <
	    EMU_TB_UNITS_PER_BYTE / 1000)
		usage_error("--docsis-phy-rate-bps: %" PRIu64 " b/s carries less than "
			    "one byte per %" PRIu64 " us MAP interval",
			    o->docsis.phy_rate_bps,
			    o->docsis.map_interval_ns / 1000);
}

/*
 * --XX-trace FILE: read and check the whole file now, so that a bad trace is
 * a usage error naming the file and line, before anything starts.
 */
static void load_trace(int val, const char *path, struct dir_opts *dopt)
{
	char err[320];
	size_t len;
	char *buf;
	FILE *f;

	if (!*path)
		usage_error("--%s: empty file name", opt_name(val));
	f = fopen(path, "re");
	if (!f)
		usage_error("--%s: cannot open '%s': %s", opt_name(val), path,
			    strerror(errno));
	/* one byte more than allowed tells a file that is too large */
	buf = malloc((size_t)EMU_TRACE_MAX_FILE_BYTES + 1);
	if (!buf)
		fatal("out of memory");
	len = fread(buf, 1, (size_t)EMU_TRACE_MAX_FILE_BYTES + 1, f);
	if (ferror(f))
		usage_error("--%s: cannot read '%s': %s", opt_name(val), path,
			    strerror(errno));
	fclose(f);
	emu_trace_free(&dopt->trace);	/* given twice: the last one counts */
	if (emu_trace_parse(&dopt->trace, buf, len, path, err, sizeof(err)))
		usage_error("--%s: %s", opt_name(val), err);
	free(buf);
	dopt->trace_path = path;
}

void parse_args(int argc, char **argv, struct opts *o)
{
	char err[256];
	int c, d;

	memset(o, 0, sizeof(*o));
	optind = 0;	/* (re)start getopt: parse_links() calls this once per link */
	o->seed = 1;
	o->rx_defer_us = RX_DEFER_AUTO;
	o->stats_ms = 50;
	o->cpu = -1;
	o->gso = 1;
	o->max_burst_us = DEF_MAX_BURST_US;
	for (d = 0; d < 2; d++) {
		o->dir[d].v[F_TBF_BURST] = TBF_DEF_BURST_BYTES;
		o->dir[d].v[F_PHANTOM_WINDOW] = PHANTOM_DEF_WINDOW_US;
	}
	emu_docsis_default_cfg(&o->docsis);
	o->docsis.uncharged_bytes = EMU_L2_HEADER_BYTES;
	opterr = 0;	/* our own one-line messages */

	while ((c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_IF_A:
		case OPT_IF_B:
			o->if_name[c - OPT_IF_A] = optarg;
			break;
		case OPT_SEED:
			o->seed = opt_u64(c, optarg, UINT64_MAX);
			break;
		case OPT_STATS:
			o->stats_ms = opt_u64(c, optarg, 3600000);
			break;
		case OPT_DROPS_LOG:
			if (!*optarg)
				usage_error("--drops-log: empty file name");
			o->drops_log = optarg;
			break;
		case OPT_CPU:
			o->cpu = (long)opt_u64(c, optarg, CPU_SETSIZE - 1);
			break;
		case OPT_MAX_FRAME:
			o->max_frame = opt_u64(c, optarg, 262144);
			if (o->max_frame < 64)
				usage_error("--max-frame: %" PRIu64 " is too small (minimum 64)",
					    o->max_frame);
			break;
		case OPT_SPIN:
			o->spin_us = opt_u64(c, optarg, 10000);
			break;
		case OPT_RX_DEFER:
			o->rx_defer_us = opt_u64(c, optarg, 1000000);
			break;
		case OPT_GSO:
			o->gso = opt_u64(c, optarg, 1);
			break;
		case OPT_MAX_BURST:
			o->max_burst_us = opt_u64(c, optarg, 1000000);
			break;
		case OPT_RT_PRIO:
			o->rt_priority = opt_u64(c, optarg, 99);
			break;
		case OPT_EPOCH:
			o->epoch_on_signal = true;
			break;
		case OPT_NETNS:
			if (!*optarg)
				usage_error("--netns: empty path");
			o->netns = optarg;
			break;
		case OPT_DOCSIS_MAP:
			o->docsis.map_interval_ns =
				opt_u64(c, optarg, US_MAX_DOCSIS_MAP) * 1000ULL;
			if (!o->docsis.map_interval_ns)
				usage_error("--%s: must be at least 1", opt_name(c));
			break;
		case OPT_DOCSIS_LOOKAHEAD:
			o->docsis.lookahead_ns =
				opt_u64(c, optarg, US_MAX_DOCSIS_DELAY) * 1000ULL;
			break;
		case OPT_DOCSIS_TRANSIT:
			o->docsis.req_transit_ns =
				opt_u64(c, optarg, US_MAX_DOCSIS_DELAY) * 1000ULL;
			break;
		case OPT_DOCSIS_PHY:
			o->docsis.phy_rate_bps =
				opt_u64(c, optarg, EMU_TB_MAX_RATE_BPS);
			if (!o->docsis.phy_rate_bps)
				usage_error("--%s: must be at least 1", opt_name(c));
			break;
		case OPT_DOCSIS_BURST:
			o->docsis.max_burst_bytes =
				opt_u64(c, optarg, EMU_TB_MAX_DEPTH_BYTES);
			if (!o->docsis.max_burst_bytes)
				usage_error("--%s: must be at least 1", opt_name(c));
			break;
		case OPT_DOCSIS_CONCAT:
			o->docsis.concatenation = opt_u64(c, optarg, 1);
			break;
		case OPT_DOCSIS_PIGGYBACK:
			o->docsis.piggyback = opt_u64(c, optarg, 1);
			break;
		case 'h':
		case OPT_HELP:
			print_usage(stdout);
			exit(0);
		case ':':
			usage_error("option '%s' requires an argument",
				    argv[optind - 1]);
		case '?':
			if (optopt && optopt < 256)
				usage_error("unknown option '-%c'", optopt);
			usage_error("unknown option '%s'", argv[optind - 1]);
		default:
			if (c < OPT_DIR0 || c >= OPT_DIR0 + 2 * DIR_STRIDE)
				usage_error("unhandled option");
			d = (c - OPT_DIR0) / DIR_STRIDE;
			if ((c - OPT_DIR0) % DIR_STRIDE == F_SCHEDULE) {
				if (emu_schedule_parse(&o->dir[d].sched, optarg, err,
						       sizeof(err)))
					usage_error("--%s: %s", opt_name(c), err);
			} else if ((c - OPT_DIR0) % DIR_STRIDE == F_TRACE) {
				load_trace(c, optarg, &o->dir[d]);
			} else if ((c - OPT_DIR0) % DIR_STRIDE == F_LOSS) {
				if (loss_parse(&o->dir[d].loss, optarg, err,
					       sizeof(err)))
					usage_error("--%s: %s", opt_name(c), err);
			} else if ((c - OPT_DIR0) % DIR_STRIDE == F_AQM) {
				if (aqm_parse(&o->dir[d].aqm, optarg, err,
					      sizeof(err)))
					usage_error("--%s: %s", opt_name(c), err);
			} else if ((c - OPT_DIR0) % DIR_STRIDE == F_POLICY) {
				o->dir[d].policy = parse_policy(c, optarg);
			} else {
				int f = (c - OPT_DIR0) % DIR_STRIDE;

				o->dir[d].v[f] = opt_u64(c, optarg, field_max[f]);
			}
			break;
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	check_policies(o);
	for (d = 0; d < 2; d++)
		if (o->dir[d].trace_path)
			o->dir[d].policy = POL_TRACE;
	for (d = 0; d < 2; d++) {
		const char *name = o->if_name[d];
		const char *opt = d ? "--if-b" : "--if-a";

		if (!name)
			usage_error("%s is required", opt);
		if (!*name || strlen(name) >= IFNAMSIZ)
			usage_error("%s: invalid interface name '%s'", opt, name);
	}
}

/*
 * The interfaces exist (in the namespace the caller is in: the link's) and
 * differ.  Separate from parse_args(): a link of a multi-link command line
 * is checked after entering its --netns.
 */
void check_ifaces(const struct opts *o)
{
	int d;

	for (d = 0; d < 2; d++)
		if (!if_nametoindex(o->if_name[d]))
			usage_error("%s: no such interface '%s'",
				    d ? "--if-b" : "--if-a", o->if_name[d]);
	if (!strcmp(o->if_name[0], o->if_name[1]))
		usage_error("--if-b: must differ from --if-a ('%s')",
			    o->if_name[0]);
}


void fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vdie(1, fmt, ap);
}
