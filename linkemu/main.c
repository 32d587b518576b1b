/*
 * main.c - linkemu: a transparent L2 "bump in the wire" link emulator.
 *
 * Role: the I/O half of linkemu.  It runs in a network namespace holding two
 * interfaces A and B (veth ends without addresses), captures every frame on
 * each with an AF_PACKET socket and re-sends it on the other one, after the
 * scheduler core (sched.c) has applied rate, buffer, delay, jitter and loss
 * for that direction ("ab" = A->B, the data direction; "ba" = B->A).  It
 * exists because the lab kernel has no sch_netem.
 *
 * One process may serve several links (--link ID [--netns PATH] ...,
 * parse_links()): each link keeps its own options, sockets, directions and
 * decisions; one loop and one timer serve them all.  The command line
 * itself is cli.c's.
 *
 * The loop is single-threaded: epoll_pwait2() sleeps until a socket is
 * readable or the next packet's release time (nanosecond timeout on
 * CLOCK_MONOTONIC, timer slack 1 ns), then receives in recvmmsg() batches,
 * hands frames to the core and sends due frames with sendmmsg().
 *
 * Fast path (--gso 1, the default): both sockets use PACKET_VNET_HDR, so a
 * TSO/GSO super-frame (up to 64 KB) crosses linkemu in one receive and one
 * send, with its virtio_net_hdr; the kernel segments it later only if a next
 * hop cannot carry it.  The core still decides loss, drop-tail and rate per
 * MTU segment and cuts a super-frame where a decision falls inside it.
 * Each frame's arrival time is the kernel's receive timestamp
 * (SO_TIMESTAMPNS), so time spent waiting in the socket is part of the
 * link's delay instead of being added to it; how late each departure
 * actually left (sent - scheduled) is recorded per direction and reported.
 *
 * All timing decisions live in
 * the core and its departure policies (rate, token bucket, DOCSIS upstream
 * MAC: policy_*.c) and AQMs (RED, CoDel, PIE: aqm*.c), chosen per direction
 * here; this file only moves bytes, keeps the clock, and reports.
 *
 * Output protocol (stdout, one JSON object per line): see README.md.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "acct.h"
#include "aqm.h"
#include "cli.h"
#include "flowacct.h"
#include "gso.h"
#include "loss.h"
#include "policy_docsis.h"
#include "policy_tbf.h"
#include "policy_trace.h"
#include "schedule.h"
#include "sched.h"

#define BATCH			64	/* frames per recvmmsg/sendmmsg call */
#define RX_BUDGET		8	/* batches per socket before polling again */
/*
 * Frames per receive on the fast path: 64 super-frames are 4 MB, whose
 * copying would delay due departures by milliseconds; 8 keep one receive
 * well under 0.1 ms, and due frames are sent between receives.
 */
#define GSO_BATCH		8
#define SOCK_BUF_BYTES		(16 << 20)
#define TX_RETRY_NS		20000ULL	/* back-off after ENOBUFS */
/*
 * Read deferral (--rx-defer-us, auto = this, never more than half the
 * smallest one-way latency).  Frames carry the kernel's receive time, so
 * reading them later changes nothing as long as each is read before it could
 * be due.  While a departure will wake the loop within this long anyway, the
 * loop does not wake for arrivals and reads them then; with no departure that
 * close (an idle or sparse link) it wakes for them as before, so deferring
 * never adds a wake-up.  The bound also caps what waits in a socket (1 Gb/s:
 * 62 KB per 500 us).  Measured at 1 Gb/s x 80 ms: see README (Deferred reads).
 */
#define RX_DEFER_MAX_US		500ULL
#define VLAN_ETH_OVERHEAD	18	/* Ethernet header + one 802.1Q tag */
#define DROPS_LOG_BUF		(1 << 20)
#define CMSG_BUF		64	/* room for one SCM_TIMESTAMPNS */

/* ---- output ------------------------------------------------------------- */

static bool out_dead;
static uint64_t stats_skipped;

/*
 * Write one line to stdout.  If the reader is not draining the pipe, blocking
 * here would freeze packet forwarding, so a stats line is dropped (and
 * counted in stats_skipped) when there is no room right now, and the
 * ready/final/exit lines wait at most OUT_WAIT_MS.  A line shorter than
 * PIPE_BUF written when poll() reports room never blocks and is never split.
 */
#define OUT_WAIT_MS 2000

static void out_line(const char *s, size_t n, bool may_skip)
{
	struct pollfd p = { .fd = STDOUT_FILENO, .events = POLLOUT };

	if (out_dead)
		return;
	while (n) {
		ssize_t w;

		if (poll(&p, 1, may_skip ? 0 : OUT_WAIT_MS) != 1 ||
		    !(p.revents & POLLOUT)) {
			if (may_skip && !(p.revents & (POLLERR | POLLHUP)))
				stats_skipped++;
			else
				out_dead = true;	/* reader gone or stuck */
			return;
		}
		w = write(STDOUT_FILENO, s, n);
		if (w < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			out_dead = true;	/* EPIPE: keep forwarding */
			return;
		}
		s += w;
		n -= (size_t)w;
	}
}

/*
 * A stats line's room: a direction's own figures fit in DIR_JSON_MAX, its
 * flows' (flowacct.h) in FLOWS_JSON_MAX -- FLOWACCT_SLOTS elements of at
 * most FLOW_JSON_MAX (an IPv6 key and its four figures: ~210 characters).
 */
#define FLOW_JSON_MAX	256
#define FLOWS_JSON_MAX	(FLOWACCT_SLOTS * FLOW_JSON_MAX + 64)
#define DIR_JSON_MAX	(3072 + FLOWS_JSON_MAX)
#define STATS_LINE_MAX	(2 * DIR_JSON_MAX + 1024)

static void __attribute__((format(printf, 2, 3)))
out_printf(bool may_skip, const char *fmt, ...)
{
	char line[STATS_LINE_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	out_line(line, (size_t)n, may_skip);
}

/* ---- latency histograms ------------------------------------------------- */

/*
 * Microsecond histogram, log-linear: 1 us buckets below 256 us, then 16
 * buckets per power of two (<= 6.25 % relative error) up to 2^40 us.
 * Fixed size, no allocation, O(1) per sample: cheap enough per frame.
 */
#define HIST_LINEAR	256
#define HIST_SUB	16
#define HIST_BUCKETS	(HIST_LINEAR + (40 - 8) * HIST_SUB)

struct hist {
	uint64_t n;
	uint64_t sum_ns;	/* weighted: the mean is what an averaging receiver sees */
	uint64_t max_us;
	uint64_t bucket[HIST_BUCKETS];
};

static unsigned int hist_index(uint64_t us)
{
	unsigned int e;

	if (us < HIST_LINEAR)
		return (unsigned int)us;
	e = 63u - (unsigned int)__builtin_clzll(us);	/* >= 8 */
	if (e >= 40)
		return HIST_BUCKETS - 1;
	return HIST_LINEAR + (e - 8) * HIST_SUB +
	       (unsigned int)((us >> (e - 4)) & (HIST_SUB - 1));
}

static uint64_t hist_lower(unsigned int idx)
{
	unsigned int e;

	if (idx < HIST_LINEAR)
		return idx;
	e = 8 + (idx - HIST_LINEAR) / HIST_SUB;
	return (uint64_t)(HIST_SUB + (idx - HIST_LINEAR) % HIST_SUB) << (e - 4);
}

static void hist_add(struct hist *h, uint64_t ns, uint64_t weight)
{
	uint64_t us = ns / 1000;

	h->n += weight;
	h->sum_ns += ns * weight;
	h->bucket[hist_index(us)] += weight;
	if (us > h->max_us)
		h->max_us = us;
}

/* Smallest bucket value with at least q (per mille) of the samples at or below it. */
static uint64_t hist_quantile(const struct hist *h, unsigned int permille)
{
	uint64_t want, seen = 0;
	unsigned int i;

	if (!h->n)
		return 0;
	want = (h->n * permille + 999) / 1000;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= want)
			return hist_lower(i) < h->max_us ? hist_lower(i) : h->max_us;
	}
	return h->max_us;
}

static int fmt_hist(char *b, size_t n, const char *key, const struct hist *h)
{
	uint64_t mean_ns = h->n ? h->sum_ns / h->n : 0;

	return snprintf(b, n, ",\"%s\":{\"n\":%" PRIu64 ",\"mean\":%" PRIu64 ".%03" PRIu64
			",\"p50\":%" PRIu64 ",\"p99\":%" PRIu64 ",\"max\":%" PRIu64 "}",
			key, h->n, mean_ns / 1000, mean_ns % 1000,
			hist_quantile(h, 500), hist_quantile(h, 990), h->max_us);
}

/* A signed mean of n samples summing to sum ns, as "us.fff". */
static int fmt_mean_us(char *b, size_t n, const char *key, int64_t sum,
		       uint64_t count)
{
	int64_t mean = count ? sum / (int64_t)count : 0;
	uint64_t mag = mean < 0 ? (uint64_t)-mean : (uint64_t)mean;

	return snprintf(b, n, ",\"%s\":%s%" PRIu64 ".%03" PRIu64, key,
			mean < 0 ? "-" : "", mag / 1000, mag % 1000);
}

/*
 * The delay accounting (acct.h) as per-frame means, us with ns resolution,
 * cumulative since start: {"frames","ser","queue","extra","late"}.
 */
static int fmt_acct(char *b, size_t n, const struct emu_acct *a)
{
	int k = snprintf(b, n, ",\"acct\":{\"frames\":%" PRIu64, a->frames);

	k += fmt_mean_us(b + k, n - (size_t)k, "ser", (int64_t)a->ser_sum_ns, a->frames);
	k += fmt_mean_us(b + k, n - (size_t)k, "queue", (int64_t)a->queue_sum_ns, a->frames);
	k += fmt_mean_us(b + k, n - (size_t)k, "extra", a->extra_sum_ns, a->frames);
	k += fmt_mean_us(b + k, n - (size_t)k, "late", (int64_t)a->late_sum_ns, a->frames);
	k += snprintf(b + k, n - (size_t)k, "}");
	return k;
}

/*
 * Each TCP flow's accounting (flowacct.h), cumulative since start:
 * ,"flows":[{"key","frames","queue" (mean us: queue + extra),"queue_min",
 * "data_min" (over frames with payload, once one was)}],
 * "flows_other" -- nothing before a direction has seen a TCP frame.
 */
static int fmt_flows(char *b, size_t n, const struct flowacct *a)
{
	int k;
	uint32_t i;

	if (!a->used || n < FLOWS_JSON_MAX)
		return 0;
	k = snprintf(b, n, ",\"flows\":[");
	for (i = 0; i < a->used; i++) {
		const struct flowacct_slot *s = &a->slot[i];
		int64_t lo = s->queue_min_ns;
		uint64_t mag = lo < 0 ? (uint64_t)-lo : (uint64_t)lo;
		char key[FLOW_JSON_MAX / 2];

		flowkey_str(key, sizeof(key), &s->key);
		k += snprintf(b + k, n - (size_t)k, "%s{\"key\":\"%s\",\"frames\":%" PRIu64,
			      i ? "," : "", key, s->frames);
		k += fmt_mean_us(b + k, n - (size_t)k, "queue", s->queue_sum_ns, s->frames);
		k += snprintf(b + k, n - (size_t)k, ",\"queue_min\":%s%" PRIu64 ".%03" PRIu64,
			      lo < 0 ? "-" : "", mag / 1000, mag % 1000);
		if (s->data_min_ns != FLOWACCT_NONE) {
			lo = s->data_min_ns;
			mag = lo < 0 ? (uint64_t)-lo : (uint64_t)lo;
			k += snprintf(b + k, n - (size_t)k, ",\"data_min\":%s%" PRIu64 ".%03" PRIu64,
				      lo < 0 ? "-" : "", mag / 1000, mag % 1000);
		}
		k += snprintf(b + k, n - (size_t)k, "}");
	}
	k += snprintf(b + k, n - (size_t)k, "],\"flows_other\":%" PRIu64, a->other);
	return k;
}

/* ---- I/O state ---------------------------------------------------------- */

struct dir_io {
	const char *name;	/* "ab" or "ba" */
	struct emu_dir q;
	enum dir_policy policy;
	union {			/* the policy's state; q points into it */
		struct emu_tbf tbf;
		struct emu_docsis docsis;
	} pol;
	const struct emu_trace *trace;	/* POL_TRACE: its opportunities (in opts) */
	int rx_fd, tx_fd;
	uint64_t sock_drops;	/* PACKET_STATISTICS tp_drops on rx socket */
	uint64_t oversize;	/* frames longer than the slot size */
	uint64_t tx_retries;	/* sendmmsg ENOBUFS/EAGAIN back-offs */
	uint64_t tx_frames;	/* sends (a super-frame or a cut run is one) */
	uint64_t rx_frames;	/* receives */
	struct hist late;	/* sent - scheduled release, per segment */
	struct hist rx_wait;	/* read by us - kernel receive time, per frame */
	struct emu_acct acct;	/* where each frame's time went (acct.h) */
	struct flowacct flows;	/* ... and each TCP flow's frames' (flowacct.h) */
	struct hist queue;	/* its queueing, per frame */
	uint64_t ser_rate_bps;	/* the rate a segment serializes at, 0 = none */
	FILE *drops;		/* --drops-log, shared by both directions */
	bool blocked;		/* waiting to retry a send */
	bool wait_pollout;	/* ... and POLLOUT will tell us when */
	uint64_t retry_at;
	bool tx_err_reported;
	bool rx_err_reported;
};

/*
 * One emulated link: its two interfaces (A, B), their sockets and its two
 * directions, set up from its own command line exactly as a single-link
 * linkemu's.
 */
struct link {
	struct opts o;
	const char *id;		/* --link ID; NULL on the single-link command line */
	int fd[2];		/* socket on A, socket on B */
	int ifindex[2];
	unsigned int mtu_max;	/* larger MTU of A and B */
	uint32_t max_frame;
	uint32_t vnet_len;	/* GSO_VNET_HDR_LEN on the fast path, else 0 */
	uint64_t spin_ns;
	uint64_t rx_defer_ns;	/* how long its arrivals may wait (rx_defer_ns()), 0 = not at all */
	uint64_t origin;	/* t0: schedules and traces count from here */
	struct dir_io dir[2];
	bool epoch_done;	/* the epoch (SIGUSR1) has been set */
	FILE *drops;
};

/*
 * The process: every link it serves, waited on in one loop.  Socket k is
 * link k / 2's A (k even) or B (k odd) socket; it receives direction k % 2.
 */
struct app {
	struct link *links;
	size_t n;		/* links; 1 on the single-link command line */
	uint64_t stats_ms;	/* process-wide options, from the first link */
	/*
	 * Waiting (see wait_events): ep_rx holds every socket (EPOLLIN),
	 * ep_timer the sockets of links whose arrivals may not wait (no
	 * deferral: no delay, or a policy with a clock of its own), for sleeps
	 * that wait for a time and for those only; with one link it holds
	 * nothing.  -1 = ppoll instead.
	 */
	int ep_rx, ep_timer;
	uint64_t rx_defer_ns;	/* smallest of the links that defer; 0 = none does */
	bool *more;		/* per socket: may hold more to read */
	struct pollfd *pfd;	/* per socket, for ppoll */
	struct epoll_event *ev;	/* per socket, for epoll_pwait2 */
	size_t slot;		/* receive buffer slot: largest over the links */
	uint8_t *rxbuf;
	struct mmsghdr rx_msgs[BATCH];
	struct iovec rx_iov[BATCH];
	uint8_t rx_cmsg[BATCH][CMSG_BUF];
};

static volatile sig_atomic_t stop_flag, epoch_flag;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		epoch_flag = 1;
	else
		stop_flag = 1;
}

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- setup -------------------------------------------------------------- */

/* MTU and up/down state through a throw-away socket (ioctl is per netns). */
static unsigned int if_mtu(const char *name, bool *up)
{
	struct ifreq ifr;
	unsigned int mtu = 1500;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	*up = true;
	if (s < 0)
		return mtu;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (!ioctl(s, SIOCGIFMTU, &ifr) && ifr.ifr_mtu > 0)
		mtu = (unsigned int)ifr.ifr_mtu;
	if (!ioctl(s, SIOCGIFFLAGS, &ifr))
		*up = !!(ifr.ifr_flags & IFF_UP);
	close(s);
	return mtu;
}

static void set_buf(int fd, int force_opt, int opt, const char *what,
		    const char *ifname)
{
	int v = SOCK_BUF_BYTES;

	/* FORCE ignores net.core.[rw]mem_max (needs CAP_NET_ADMIN). */
	if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof(v)) &&
	    setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v)))
		fprintf(stderr, "%s: warning: %s on '%s': %s\n", prog, what,
			ifname, strerror(errno));
}

static int open_side(const char *ifname, int ifindex, bool *vnet)
{
	struct sockaddr_ll sll;
	struct packet_mreq mr;
	int one = 1;
	int fd;

	/*
	 * Protocol 0 at creation: the socket receives nothing until bind()
	 * names both the protocol and the interface, so no frame from another
	 * interface can slip in before the bind.
	 */
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		fatal("socket(AF_PACKET) for '%s': %s", ifname, strerror(errno));
	/* Without this we would capture our own transmissions and loop them. */
	if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one,
		       sizeof(one)))
		fatal("PACKET_IGNORE_OUTGOING on '%s': %s", ifname,
		      strerror(errno));
	/* Kernel receive times: the wait in this socket is part of the link. */
	if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)))
		fprintf(stderr, "%s: warning: SO_TIMESTAMPNS on '%s': %s "
			"(arrival times taken when read)\n", prog, ifname,
			strerror(errno));
	/* Super-frames whole, with their virtio_net_hdr (before bind). */
	if (*vnet && setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one,
				sizeof(one))) {
		fprintf(stderr, "%s: warning: PACKET_VNET_HDR on '%s': %s "
			"(one frame per MTU packet)\n", prog, ifname,
			strerror(errno));
		*vnet = false;
	}
	set_buf(fd, SO_RCVBUFFORCE, SO_RCVBUF, "SO_RCVBUF", ifname);
	set_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF, "SO_SNDBUF", ifname);

	/* A bump in the wire must see frames for any MAC address. */
	memset(&mr, 0, sizeof(mr));
	mr.mr_ifindex = ifindex;
	mr.mr_type = PACKET_MR_PROMISC;
	if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)))
		fprintf(stderr, "%s: warning: promiscuous mode on '%s': %s\n",
			prog, ifname, strerror(errno));

	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = ifindex;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)))
		fatal("bind to '%s': %s", ifname, strerror(errno));
	return fd;
}

/* ---- data path ---------------------------------------------------------- */

/* Every loss-model drop goes to --drops-log as "<direction> <index>". */
static void log_drop(void *ctx, uint64_t idx)
{
	const struct dir_io *d = ctx;

	if (d->drops)
		fprintf(d->drops, "%s %" PRIu64 "\n", d->name, idx);
}

/* The kernel's receive time of a message (CLOCK_REALTIME), or 0. */
static uint64_t rx_stamp_ns(struct msghdr *mh)
{
	struct cmsghdr *c;

	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		struct timespec ts;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS)
			continue;
		memcpy(&ts, CMSG_DATA(c), sizeof(ts));
		return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	}
	return 0;
}

static inline uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* One receive batch; returns true if the socket may hold more. */
static bool rx_dir(struct app *a, const struct link *l, struct dir_io *d)
{
	unsigned int batch = l->vnet_len ? GSO_BATCH : BATCH;
	size_t slot = (size_t)l->max_frame + l->vnet_len;

	for (;;) {
		uint64_t now, real;
		int64_t mono_minus_real;
		int i, n;

		uint8_t *in_place = emu_dir_rx_slot(&d->q);

		for (i = 0; i < BATCH; i++) {
			a->rx_msgs[i].msg_hdr.msg_control = a->rx_cmsg[i];
			a->rx_msgs[i].msg_hdr.msg_controllen = CMSG_BUF;
			a->rx_iov[i].iov_len = slot;	/* this link's (the in-place slot's) */
		}
		/*
		 * The first frame lands right where the queue stores it, so a
		 * frame kept whole (the usual case) is never copied in user
		 * space; the others go through the receive buffer.
		 */
		a->rx_iov[0].iov_base = in_place ? in_place : a->rxbuf;
		n = recvmmsg(d->rx_fd, a->rx_msgs, batch,
			     MSG_DONTWAIT | MSG_TRUNC, NULL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK &&
			    !d->rx_err_reported) {
				/* e.g. ENETDOWN: reported once, not fatal. */
				fprintf(stderr, "%s: %s: receive: %s\n", prog,
					d->name, strerror(errno));
				d->rx_err_reported = true;
			}
			return false;
		}
		/*
		 * Kernel timestamps are CLOCK_REALTIME; the loop runs on
		 * CLOCK_MONOTONIC.  The offset is read once per batch, right
		 * after the receive, so a clock step moves at most one batch.
		 */
		real = real_ns();
		now = mono_ns();
		mono_minus_real = (int64_t)(now - real);
		for (i = 0; i < n; i++) {
			struct msghdr *mh = &a->rx_msgs[i].msg_hdr;
			uint32_t len = a->rx_msgs[i].msg_len;
			const uint8_t *buf = a->rx_iov[i].iov_base;
			struct gso_vnet_hdr vh = { 0 };
			struct gso_layout lay;
			uint64_t stamp = rx_stamp_ns(mh), arrival = now;

			if (len > l->max_frame + l->vnet_len ||
			    (mh->msg_flags & MSG_TRUNC) || len <= l->vnet_len) {
				d->oversize++;
				continue;
			}
			if (stamp) {
				arrival = (uint64_t)((int64_t)stamp + mono_minus_real);
				if (arrival > now)
					arrival = now;	/* clock noise */
			}
			hist_add(&d->rx_wait, now - arrival, 1);
			if (l->vnet_len)
				gso_vnet_read(&vh, buf);
			gso_parse(&lay, &vh, buf + l->vnet_len, len - l->vnet_len);
			d->rx_frames++;
			emu_dir_enqueue_frame(&d->q, arrival, &lay,
					      buf + l->vnet_len, log_drop, d);
		}
		return (unsigned int)n == batch;
	}
}

/*
 * The rate a segment of a frame departing at dep serializes at: a rate
 * schedule's in force then (the built-in policy only takes rate steps), or
 * the direction's fixed one.
 */
static uint64_t ser_rate_at(const struct dir_io *d, uint64_t dep)
{
	if (d->policy == POL_RATE && (d->q.tl.set & EMU_STEP_RATE))
		return emu_timeline_at(&d->q.tl, dep)->rate_bps;
	return d->ser_rate_bps;
}

/* Where a sent frame's time in the link went (acct.h). */
static void account(struct dir_io *d, const struct emu_pkt *p, uint64_t sent)
{
	uint64_t ser = emu_acct_seg_ser_ns(p, ser_rate_at(d, p->departure_ns),
					   EMU_L2_HEADER_BYTES);
	uint64_t delay = emu_dir_delay_at(&d->q, p->departure_ns);
	uint64_t queue = emu_acct_frame(&d->acct, p, sent, delay, ser);
	uint64_t latency = p->release_ns > p->departure_ns ?
			   p->release_ns - p->departure_ns : 0;

	hist_add(&d->queue, queue, 1);
	flowacct_frame(&d->flows, p->data, p->len, queue,
		       (int64_t)latency - (int64_t)delay);
}

static void tx_dir(const struct link *l, struct dir_io *d, uint64_t now)
{
	struct emu_pkt *pkts[BATCH];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];

	if (d->blocked && now < d->retry_at)
		return;
	d->blocked = false;
	d->wait_pollout = false;

	for (;;) {
		size_t i, n = emu_dir_peek_due(&d->q, now, pkts, BATCH);
		uint64_t sent;
		int r;

		if (!n)
			return;
		memset(msgs, 0, n * sizeof(msgs[0]));
		for (i = 0; i < n; i++) {
			/* The vnet header, if any, is stored right before. */
			iov[i].iov_base = pkts[i]->data - l->vnet_len;
			iov[i].iov_len = pkts[i]->len + l->vnet_len;
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		/*
		 * Lateness is taken when the frames are handed to the kernel:
		 * the call itself also runs the next hops' (and the receiving
		 * TCP's) processing in this context, which is not the link's.
		 */
		sent = mono_ns();
		/* No address: the socket's bound interface is used. */
		r = sendmmsg(d->tx_fd, msgs, (unsigned int)n, MSG_DONTWAIT);
		if (r > 0) {
			for (i = 0; i < (size_t)r; i++) {
				hist_add(&d->late, sent - pkts[i]->release_ns,
					 pkts[i]->segs);
				account(d, pkts[i], sent);
			}
			d->tx_frames += (uint64_t)r;
			emu_dir_consume(&d->q, (size_t)r);
			continue;	/* a short count retries the rest */
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
			      errno == ENOBUFS)) {
			/*
			 * Transient: keep the packets and retry.  EAGAIN means
			 * the send buffer is full, so POLLOUT will signal room;
			 * ENOBUFS (device queue full) gives no event, so retry
			 * on a short timer.
			 */
			d->blocked = true;
			d->wait_pollout = errno != ENOBUFS;
			d->retry_at = now + TX_RETRY_NS;
			d->tx_retries++;
			return;
		}
		/*
		 * Permanent for this frame (EMSGSIZE, ENETDOWN...): discard it
		 * so one bad frame cannot wedge the link, counted as tx_errors.
		 */
		if (!d->tx_err_reported) {
			fprintf(stderr, "%s: %s: send: %s (frame discarded)\n",
				prog, d->name, r < 0 ? strerror(errno) : "no progress");
			d->tx_err_reported = true;
		}
		emu_dir_discard(&d->q, 1);
	}
}

/* ---- stats -------------------------------------------------------------- */

static void read_sock_stats(struct link *l)
{
	int i;

	for (i = 0; i < 2; i++) {
		struct tpacket_stats st;
		socklen_t len = sizeof(st);

		/* The kernel resets these on every read: accumulate. */
		if (!getsockopt(l->dir[i].rx_fd, SOL_PACKET, PACKET_STATISTICS,
				&st, &len))
			l->dir[i].sock_drops += st.tp_drops;
	}
}

/* Policy-specific keys appended to a direction's stats object. */
static int fmt_policy(char *b, size_t n, const struct dir_io *d,
		      uint64_t now)
{
	const struct emu_docsis_stats *st = &d->pol.docsis.st;
	uint64_t mean;

	switch (d->policy) {
	case POL_TBF: {
		const struct emu_tbf *t = &d->pol.tbf;
		const struct emu_phantom_stats *ph = &t->phantom.st;

		mean = ph->pkts ? ph->delay_sum_ns / ph->pkts : 0;
		return snprintf(b, n, ",\"tokens_bytes\":%" PRIu64 ",\"delay_drops\":%" PRIu64
				",\"phantom\":{\"pkts\":%" PRIu64 ",\"delay_mean_us\":%" PRIu64
				",\"delay_max_us\":%" PRIu64 ",\"load_ppm\":%" PRIu64 "}",
				emu_tbf_tokens_bytes(t, now), t->delay_drops, ph->pkts, mean / 1000,
				ph->delay_max_ns / 1000, ph->load_ppm);
	}
	case POL_DOCSIS:
		/* Delays in us with ns resolution, from integer ns. */
		mean = st->grants ? st->req_grant_delay_sum_ns / st->grants : 0;
		return snprintf(b, n,
			",\"mac\":{\"requests\":%" PRIu64
			",\"piggybacked_requests\":%" PRIu64
			",\"grants\":%" PRIu64 ",\"granted_bytes\":%" PRIu64
			",\"frames_concatenated\":%" PRIu64
			",\"fragmented_frames\":%" PRIu64
			",\"req_grant_delay_mean_us\":%" PRIu64 ".%03" PRIu64
			",\"req_grant_delay_max_us\":%" PRIu64 ".%03" PRIu64
			",\"tokens_bytes\":%" PRIu64 "}",
			st->requests, st->piggybacked_requests, st->grants,
			st->granted_bytes, st->frames_concatenated,
			st->fragmented_frames, mean / 1000, mean % 1000,
			st->req_grant_delay_max_ns / 1000,
			st->req_grant_delay_max_ns % 1000,
			emu_docsis_tokens_bytes(&d->pol.docsis, now));
	case POL_TRACE: {
		const struct emu_trace *t = d->trace;

		/* opportunities so far: the capacity the trace delivered */
		return snprintf(b, n, ",\"trace\":{\"opportunities\":%" PRIu64
				",\"opp_bytes\":%u,\"lines\":%" PRIu64 ",\"period_ms\":%u}",
				emu_trace_first_after(t, now), EMU_TRACE_OPP_BYTES, t->n,
				t->ms[t->n - 1]);
	}
	default:
		return 0;
	}
}

/* The schedule's step and values in force now (a step -1: the options'). */
static int fmt_schedule(char *b, size_t n, const struct emu_dir *q, uint64_t now)
{
	size_t i;

	if (!q->tl.n)
		return 0;
	i = emu_timeline_index(&q->tl, now);
	return snprintf(b, n, ",\"schedule\":{\"step\":%lld,\"rate_bps\":%" PRIu64
			",\"delay_us\":%" PRIu64 ",\"loss\":%.10g}",
			(long long)i - 1, q->tl.step[i].rate_bps,
			q->tl.step[i].delay_ns / 1000, q->tl.step[i].loss_p);
}

static int fmt_dir(char *b, size_t n, const struct dir_io *d, uint64_t now)
{
	const struct emu_counters *c = &d->q.c;
	char extra[DIR_JSON_MAX - 512] = "", aqm[256];
	int k;

	k = fmt_policy(extra, sizeof(extra), d, now);
	k += fmt_schedule(extra + k, sizeof(extra) - (size_t)k, &d->q, now);
	if (aqm_on(&d->q.aqm) && aqm_state_json(&d->q.aqm, aqm, sizeof(aqm)) > 0)
		k += snprintf(extra + k, sizeof(extra) - (size_t)k, ",\"aqm\":{%s}", aqm);
	k += fmt_hist(extra + k, sizeof(extra) - (size_t)k, "late_us", &d->late);
	k += fmt_hist(extra + k, sizeof(extra) - (size_t)k, "rx_wait_us", &d->rx_wait);
	k += fmt_hist(extra + k, sizeof(extra) - (size_t)k, "queue_us", &d->queue);
	k += fmt_acct(extra + k, sizeof(extra) - (size_t)k, &d->acct);
	k += fmt_flows(extra + k, sizeof(extra) - (size_t)k, &d->flows);
	snprintf(extra + k, sizeof(extra) - (size_t)k,
		 ",\"rx_frames\":%" PRIu64 ",\"tx_frames\":%" PRIu64
		 ",\"arena_grows\":%" PRIu64,
		 d->rx_frames, d->tx_frames, d->q.arena.grows);
	return snprintf(b, n,
		"{\"rx_pkts\":%" PRIu64 ",\"rx_bytes\":%" PRIu64
		",\"tx_pkts\":%" PRIu64 ",\"tx_bytes\":%" PRIu64
		",\"queue_drops\":%" PRIu64 ",\"loss_drops\":%" PRIu64
		",\"aqm_drops\":%" PRIu64 ",\"aqm_marks\":%" PRIu64
		",\"backlog_pkts\":%" PRIu64 ",\"backlog_bytes\":%" PRIu64
		",\"delay_line_pkts\":%" PRIu64 ",\"sock_drops\":%" PRIu64
		",\"oversize\":%" PRIu64 ",\"tx_errors\":%" PRIu64
		",\"tx_retries\":%" PRIu64 "%s}",
		c->rx_pkts, c->rx_bytes, c->tx_pkts, c->tx_bytes,
		c->queue_drops, c->loss_drops, c->aqm_drops, c->aqm_marks,
		c->backlog_pkts, c->backlog_bytes, c->delay_line_pkts,
		d->sock_drops, d->oversize, c->tx_errors, d->tx_retries, extra);
}

/*
 * The "link" key of a multi-link process's lines (empty on the single-link
 * command line, whose lines stay as they were).  IDs are checked to need
 * no JSON escaping (parse_links).
 */
static void link_key(char *b, size_t n, const struct link *l)
{
	if (l->id)
		snprintf(b, n, ",\"link\":\"%s\"", l->id);
	else
		b[0] = '\0';
}

static void emit_stats(struct link *l, uint64_t now, bool final)
{
	char ab[DIR_JSON_MAX], ba[DIR_JSON_MAX], key[LINK_ID_MAX + 16];

	read_sock_stats(l);
	emu_dir_advance(&l->dir[0].q, now);
	emu_dir_advance(&l->dir[1].q, now);
	fmt_dir(ab, sizeof(ab), &l->dir[0], now);
	fmt_dir(ba, sizeof(ba), &l->dir[1], now);
	link_key(key, sizeof(key), l);
	out_printf(!final,
		   "{\"event\":\"stats\"%s,\"t\":%" PRIu64 ".%06" PRIu64
		   ",\"ab\":%s,\"ba\":%s,\"sock_drops\":%" PRIu64
		   ",\"oversize\":%" PRIu64 ",\"stats_skipped\":%" PRIu64 "}\n",
		   key, now / UINT64_C(1000000000), (now % UINT64_C(1000000000)) / 1000, ab, ba,
		   l->dir[0].sock_drops + l->dir[1].sock_drops,
		   l->dir[0].oversize + l->dir[1].oversize, stats_skipped);
	if (l->drops)
		fflush(l->drops);
}

/* ---- main loop ---------------------------------------------------------- */

static struct timespec ns_to_timespec(uint64_t dt)
{
	struct timespec ts;

	if (dt > 1000000000ULL)
		dt = 1000000000ULL;
	ts.tv_sec = (time_t)(dt / 1000000000ULL);
	ts.tv_nsec = (long)(dt % 1000000000ULL);
	return ts;
}

/* Sockets the process waits on: two per link. */
static size_t nsock(const struct app *a)
{
	return 2 * a->n;
}

/* The socket a direction's frames leave by: the other side of its link. */
static size_t tx_sock(size_t k)
{
	return k ^ 1;
}

/*
 * Which sockets hold something, without sleeping: after a sleep that only
 * waited for a time (a deferring one), a multi-link process asks epoll
 * instead of trying a receive on every socket of every link.  A single
 * link tries both, as it always did (one call either way).
 */
static void probe_ready(struct app *a)
{
	size_t k;
	int r, i;

	if (a->n == 1 || a->ep_rx < 0) {
		for (k = 0; k < nsock(a); k++)
			a->more[k] = true;
		return;
	}
	r = epoll_wait(a->ep_rx, a->ev, (int)nsock(a), 0);
	for (i = 0; i < r; i++)
		a->more[a->ev[i].data.u32] = true;
}

/*
 * Sleep for at most `dt` ns, or until a socket is readable unless
 * `deferring` (then only the time counts); more[k] = socket k has something
 * to read.  Termination signals are only deliverable in here (`waitmask`).
 * Returns the number of ready sockets, or -1 on EINTR.
 *
 * epoll registers the sockets once; ppoll would set up and tear down a wait
 * queue entry on each socket at every call (sock_poll, poll_freewait: 8 % of
 * linkemu's CPU samples at 1 Gb/s x 80 ms, ~2,100 sleeps a second).  A
 * deferring sleep waits on an epoll set holding only the sockets of links that
 * cannot wait (none with one link).  ppoll stays for a send blocked until
 * POLLOUT (rare) and where epoll_pwait2 (Linux 5.11) is missing.
 */
static int wait_events(struct app *a, uint64_t dt, bool deferring,
		       const sigset_t *waitmask)
{
	struct timespec ts = ns_to_timespec(dt);
	bool pollout = false;
	size_t k, ns = nsock(a);
	int i, r;

	memset(a->more, 0, ns * sizeof(a->more[0]));
	for (k = 0; k < ns; k++) {
		const struct dir_io *d = &a->links[k / 2].dir[k % 2];

		pollout |= d->blocked && d->wait_pollout;
	}
	if (a->ep_rx >= 0 && !pollout) {
		r = epoll_pwait2(deferring ? a->ep_timer : a->ep_rx, a->ev,
				 (int)ns, &ts, waitmask);
		if (r < 0 && errno == ENOSYS) {	/* kernel < 5.11: ppoll from now on */
			close(a->ep_rx);
			close(a->ep_timer);
			a->ep_rx = a->ep_timer = -1;
			return -1;
		}
		if (r < 0) {
			if (errno == EINTR)
				return -1;
			fatal("epoll_pwait2: %s", strerror(errno));
		}
		for (i = 0; i < r; i++)
			a->more[a->ev[i].data.u32] = true;	/* EPOLLIN or EPOLLERR */
		return r;
	}
	for (k = 0; k < ns; k++) {
		a->pfd[k].fd = a->links[k / 2].fd[k % 2];
		a->pfd[k].events = deferring && a->links[k / 2].rx_defer_ns ? 0 : POLLIN;
		a->pfd[k].revents = 0;
	}
	/* Socket A is rx for ab and tx for ba; B the reverse. */
	for (k = 0; k < ns; k++) {
		const struct dir_io *d = &a->links[k / 2].dir[k % 2];

		if (d->blocked && d->wait_pollout)
			a->pfd[tx_sock(k)].events |= POLLOUT;
	}
	r = ppoll(a->pfd, ns, &ts, waitmask);
	if (r < 0) {
		if (errno == EINTR)
			return -1;
		fatal("ppoll: %s", strerror(errno));
	}
	for (k = 0; k < ns; k++) {
		if (a->pfd[k].revents & POLLOUT)
			a->links[k / 2].dir[tx_sock(k) % 2].blocked = false;
		a->more[k] = a->pfd[k].revents & (POLLIN | POLLERR);
	}
	return r;
}

/*
 * The epoll sets of wait_events(); on failure both stay -1 and the loop
 * uses ppoll.
 */
static void setup_epoll(struct app *a)
{
	size_t k;

	a->ep_rx = epoll_create1(EPOLL_CLOEXEC);
	a->ep_timer = epoll_create1(EPOLL_CLOEXEC);
	for (k = 0; k < nsock(a) && a->ep_rx >= 0 && a->ep_timer >= 0; k++) {
		struct epoll_event ev = { .events = EPOLLIN,
					  .data.u32 = (uint32_t)k };
		int fd = a->links[k / 2].fd[k % 2];

		if (epoll_ctl(a->ep_rx, EPOLL_CTL_ADD, fd, &ev))
			break;
		/* a link whose arrivals cannot wait wakes even a deferring sleep */
		if (!a->links[k / 2].rx_defer_ns &&
		    epoll_ctl(a->ep_timer, EPOLL_CTL_ADD, fd, &ev))
			break;
	}
	if (k == nsock(a))
		return;
	fprintf(stderr, "%s: warning: epoll: %s (waiting with ppoll)\n", prog,
		strerror(errno));
	if (a->ep_rx >= 0)
		close(a->ep_rx);
	if (a->ep_timer >= 0)
		close(a->ep_timer);
	a->ep_rx = a->ep_timer = -1;
}

/*
 * The first SIGUSR1: the flows start now.  Every schedule and trace counts
 * from here (a schedule's steps held back by --epoch-on-signal come into
 * force; one counted from t0 starts again, as does a trace), and the line
 * says when, in the stats lines' clock.  Later signals change nothing: a
 * run has one time origin.  In a multi-link process every link takes it.
 */
static void set_epoch(struct link *l, uint64_t now)
{
	char key[LINK_ID_MAX + 16];
	int i;

	l->epoch_done = true;
	for (i = 0; i < 2; i++) {
		emu_dir_set_origin(&l->dir[i].q, now);
		if (l->dir[i].trace)
			emu_trace_rebase(&l->o.dir[i].trace, now);
	}
	link_key(key, sizeof(key), l);
	out_printf(false, "{\"event\":\"epoch\"%s,\"t\":%" PRIu64 ".%06" PRIu64 "}\n",
		   key, now / UINT64_C(1000000000), (now % UINT64_C(1000000000)) / 1000);
}

/* Every due frame of every link out; the earliest next wake-up any direction needs. */
static uint64_t tx_all(struct app *a, uint64_t now)
{
	uint64_t release = EMU_TIME_NEVER;
	size_t k;

	for (k = 0; k < nsock(a); k++) {
		struct link *l = &a->links[k / 2];
		struct dir_io *d = &l->dir[k % 2];
		uint64_t t;

		tx_dir(l, d, now);
		t = d->blocked ? d->retry_at : emu_dir_next_release_ns(&d->q);
		/*
		 * --spin-us: wake up that much before a release and poll with
		 * a zero timeout until it is due.  On hosts where waking an
		 * idle CPU takes ~100 us (VMs halting the vCPU) this trades
		 * CPU for timing precision; 0 (the default) always sleeps.
		 */
		if (t != EMU_TIME_NEVER)
			t = t > now + l->spin_ns ? t - l->spin_ns : now;
		if (t < release)
			release = t;
	}
	return release;
}

/* Receive in batches from every socket that may hold more, sending whatever fell due in between. */
static void rx_all(struct app *a)
{
	bool any = true;
	size_t k;
	int round;

	for (round = 0; round < RX_BUDGET && any; round++) {
		any = false;
		for (k = 0; k < nsock(a); k++) {
			struct link *l = &a->links[k / 2];

			if (a->more[k])
				any |= a->more[k] = rx_dir(a, l, &l->dir[k % 2]);
		}
		tx_all(a, mono_ns());
	}
}

/*
 * One event loop for every link: one timer, set for the earliest departure
 * (or stats line) of any link, and one wait on every socket.  A wake-up
 * sends whatever is due on any link, so links sharing a process share their
 * wake-ups.
 */
static void run(struct app *a, const sigset_t *waitmask)
{
	uint64_t interval = a->stats_ms * 1000000ULL;
	uint64_t now = mono_ns();
	uint64_t next_stats = interval ? now + interval : EMU_TIME_NEVER;
	size_t i;

	while (!stop_flag) {
		uint64_t wake = next_stats, release;
		bool deferring;
		int r;

		now = mono_ns();
		if (epoch_flag)
			for (i = 0; i < a->n; i++)
				if (!a->links[i].epoch_done)
					set_epoch(&a->links[i], now);
		release = tx_all(a, now);

		if (now >= next_stats) {
			for (i = 0; i < a->n; i++)
				emit_stats(&a->links[i], now, false);
			next_stats += interval;
			if (next_stats <= now)	/* fell behind: don't burst */
				next_stats = now + interval;
			wake = next_stats;
		}
		/*
		 * Arrivals wait in their sockets (stamped by the kernel) when
		 * a departure wakes the loop within the deferral anyway: they
		 * are read then.  Otherwise (an idle or sparse link) the loop
		 * wakes for them as before, so deferring never adds a wake-up.
		 */
		deferring = a->rx_defer_ns && release != EMU_TIME_NEVER &&
			    release <= now + a->rx_defer_ns;
		if (release < wake)
			wake = release;
		r = wait_events(a, wake > now ? wake - now : 0, deferring,
				waitmask);
		if (r < 0 || (r == 0 && !deferring))
			continue;
		/* After a deferring sleep every socket with something is read. */
		if (deferring)
			probe_ready(a);
		rx_all(a);
	}
}

/*
 * A direction's smallest and largest delay (us) and smallest non-zero and
 * largest rate (bit/s, 0 = none) over its options and its schedule's steps:
 * what the read deferral, the run length and the arena are sized by.  The
 * options count even where a step at 0 replaces them: bounds on the safe
 * side.
 */
struct dir_range {
	uint64_t min_delay_us, max_delay_us;
	uint64_t min_rate_bps, max_rate_bps;
};

static struct dir_range dir_range(const struct dir_opts *dopt)
{
	struct dir_range r = { dopt->v[F_DELAY], dopt->v[F_DELAY],
			       dopt->v[F_RATE], dopt->v[F_RATE] };
	size_t i;

	for (i = 0; i < dopt->sched.n; i++) {
		const struct emu_step *st = &dopt->sched.step[i];
		uint64_t us = st->delay_ns / EMU_SCHEDULE_NS_PER_US;

		if (st->set & EMU_STEP_DELAY) {
			if (us < r.min_delay_us)
				r.min_delay_us = us;
			if (us > r.max_delay_us)
				r.max_delay_us = us;
		}
		if ((st->set & EMU_STEP_RATE) && st->rate_bps) {
			if (!r.min_rate_bps || st->rate_bps < r.min_rate_bps)
				r.min_rate_bps = st->rate_bps;
			if (st->rate_bps > r.max_rate_bps)
				r.max_rate_bps = st->rate_bps;
		}
	}
	return r;
}

/*
 * How long an arrival may wait in its socket before the loop reads it.  Only
 * the rate policy schedules from the kernel's receive time; the token bucket
 * and the DOCSIS MAC keep a clock of their own and take a late frame as
 * arriving now, so they get every arrival at once.  A frame read d after it
 * arrived still leaves on time while d stays below the smallest one-way
 * latency (delay - jitter); half of it leaves room for the loop's own work.
 */
static uint64_t rx_defer_ns(const struct opts *o)
{
	uint64_t us = RX_DEFER_MAX_US;
	int i;

	for (i = 0; i < 2; i++) {
		const struct dir_opts *d = &o->dir[i];
		/* the smallest delay a schedule ever sets */
		uint64_t delay = dir_range(d).min_delay_us;
		uint64_t lat = delay > d->v[F_JITTER] ? delay - d->v[F_JITTER] : 0;

		/* (a trace, too, takes a late frame as arriving now) */
		if (d->policy != POL_RATE)
			return 0;
		if (lat / 2 < us)
			us = lat / 2;
	}
	if (o->rx_defer_us != RX_DEFER_AUTO) {
		/* An explicit value may be smaller, never unsafe. */
		if (o->rx_defer_us < us)
			us = o->rx_defer_us;
	}
	return us * 1000ULL;
}

/*
 * Segments one stored frame may carry in a direction: as many as the link
 * serializes in --max-burst-us (at least 1; under rate steps, at the
 * slowest rate); every super-frame is cut into single segments under a
 * token bucket, the DOCSIS MAC or a trace, whose decisions are per frame;
 * no limit without a rate (nothing is serialized).
 */
static uint32_t max_run_segs(const struct opts *o, const struct dir_opts *dopt,
			     unsigned int mtu)
{
	/* under rate steps: at the slowest rate, so no run is ever longer */
	uint64_t rate = dir_range(dopt).min_rate_bps, segs;

	/* (CoDel drops or sends each segment on its own at the head: sched.h) */
	if (dopt->policy != POL_RATE || !o->max_burst_us || dopt->aqm.type == AQM_CODEL)
		return 1;
	if (!rate)
		return 0;
	segs = o->max_burst_us * rate / (8000000ULL * mtu);
	return segs < 1 ? 1 : segs > 65535 ? 65535 : (uint32_t)segs;
}

/*
 * Initial arena size: twice what the delay line holds at full rate, plus
 * ARENA_HINT_QUEUE_BYTES of queue.  Growing copies the live bytes (20 MB
 * take milliseconds, during which departures are late), so the usual case
 * should never grow; a deep queue still may, and the stats count it.
 */
#define ARENA_HINT_QUEUE_BYTES	(8ULL << 20)
#define ARENA_HINT_MAX		(256ULL << 20)

static uint64_t arena_hint(const struct dir_opts *dopt, unsigned int mtu)
{
	struct dir_range r = dir_range(dopt);
	uint64_t ns = (r.max_delay_us + dopt->v[F_JITTER]) * 1000ULL;
	uint64_t rate = dopt->policy == POL_TRACE ?
			emu_trace_mean_rate_bps(&dopt->trace) : r.max_rate_bps;
	uint64_t line = rate / 8 * ns / 1000000000ULL;
	uint64_t queue = dopt->v[F_LIMIT_BYTES] ? dopt->v[F_LIMIT_BYTES] :
			 dopt->v[F_LIMIT_PKTS] * (mtu + EMU_L2_HEADER_BYTES);
	uint64_t want;

	if (!queue || queue > ARENA_HINT_QUEUE_BYTES)
		queue = ARENA_HINT_QUEUE_BYTES;
	want = 2 * (line + queue);
	return want > ARENA_HINT_MAX ? ARENA_HINT_MAX : want;
}

/* ---- links ------------------------------------------------------------- */

/*
 * Several links in one process (issue 34): the command line
 *
 *   linkemu --link ID [--netns PATH] LINK-OPTIONS [--link ID ...]...
 *
 * gives each link, after its --link, exactly the single-link command line
 * (its --if-a/--if-b, seed, drops log, per-direction options), and --netns,
 * the network namespace its interfaces are in (e.g. /proc/PID/ns/net of the
 * link node's shell).  Each link's decisions are its own, as in a process
 * of its own (same seed, same drop indices).  The process-wide options
 * (--cpu, --rt-priority, --stats-interval-ms) are the first link's; a later
 * link giving another value is refused.  Every line on stdout for a link
 * carries "link":ID.
 */
#define MAX_LINKS	256

static bool link_id_ok(const char *id)
{
	size_t n = strlen(id);

	return n && n <= LINK_ID_MAX &&
	       strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			  "0123456789_.-") == n;
}

/* Links of a multi-link command line (0: the single-link one); *out gets them. */
static size_t parse_links(int argc, char **argv, struct link **out)
{
	struct link *links;
	size_t n = 0, k;
	int i, start;

	for (i = 1; i < argc; i++)
		n += !strcmp(argv[i], "--link");
	if (!n)
		return 0;
	if (strcmp(argv[1], "--link"))
		usage_error("--link: '%s' comes before the first --link (each link's options follow its --link)",
			    argv[1]);
	if (n > MAX_LINKS)
		usage_error("--link: %zu links, at most %d in one process", n, MAX_LINKS);
	links = calloc(n, sizeof(*links));
	if (!links)
		fatal("out of memory");
	for (k = 0, start = 1; k < n; k++) {
		struct link *l = &links[k];
		int end = start + 2;

		if (start + 1 >= argc || !link_id_ok(argv[start + 1]))
			usage_error("--link: invalid link id '%s' (1-%d of A-Z a-z 0-9 _ . -)",
				    start + 1 < argc ? argv[start + 1] : "", LINK_ID_MAX);
		l->id = argv[start + 1];
		for (i = 0; i < (int)k; i++)
			if (!strcmp(links[i].id, l->id))
				usage_error("--link: link id '%s' given twice", l->id);
		while (end < argc && strcmp(argv[end], "--link"))
			end++;
		err_link = l->id;
		/* its own command line: argv[0], then what follows --link ID */
		argv[start + 1] = argv[0];
		parse_args(end - start - 1, argv + start + 1, &l->o);
		argv[start + 1] = (char *)l->id;
		if (l->o.cpu != links[0].o.cpu)
			usage_error("--cpu: every link of one process must give the first link's value");
		if (l->o.rt_priority != links[0].o.rt_priority)
			usage_error("--rt-priority: every link of one process must give the first link's value");
		if (l->o.stats_ms != links[0].o.stats_ms)
			usage_error("--stats-interval-ms: every link of one process must give the first link's value");
		start = end;
	}
	err_link = NULL;
	*out = links;
	return n;
}

/*
 * Enter the network namespace a link's interfaces are in (NULL: stay);
 * leave_netns() returns to the process's own.  Sockets keep the namespace
 * they were opened in, so a link's are opened in between.
 */
static int self_netns = -1;

static void enter_netns(const struct link *l)
{
	int fd;

	if (!l->o.netns)
		return;
	fd = open(l->o.netns, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		usage_error("--netns: cannot open '%s': %s", l->o.netns, strerror(errno));
	if (setns(fd, CLONE_NEWNET))
		fatal("--netns: cannot enter '%s': %s", l->o.netns, strerror(errno));
	close(fd);
}

static void leave_netns(const struct link *l)
{
	if (l->o.netns && setns(self_netns, CLONE_NEWNET))
		fatal("cannot return to linkemu's own network namespace: %s", strerror(errno));
}

/*
 * Before any socket is opened: the link's interfaces exist (in its
 * namespace) and its drops log can be written, or a usage error.
 */
static void check_link(struct link *l)
{
	err_link = l->id;
	enter_netns(l);
	check_ifaces(&l->o);
	leave_netns(l);
	if (l->o.drops_log) {
		l->drops = fopen(l->o.drops_log, "ae");
		if (!l->drops)
			usage_error("--drops-log: cannot open '%s': %s",
				    l->o.drops_log, strerror(errno));
		setvbuf(l->drops, NULL, _IOFBF, DROPS_LOG_BUF);
	}
	err_link = NULL;
}

/* A link's interfaces: looked up and opened (in its namespace), its directions set up. */
static void setup_link(struct link *l)
{
	bool up[2], vnet;
	unsigned int mtu[2];
	int i;

	err_link = l->id;
	enter_netns(l);
	for (i = 0; i < 2; i++) {
		l->ifindex[i] = (int)if_nametoindex(l->o.if_name[i]);
		mtu[i] = if_mtu(l->o.if_name[i], &up[i]);
		if (!up[i])
			fprintf(stderr, "%s: warning: interface '%s' is down\n",
				prog, l->o.if_name[i]);
	}
	l->spin_ns = l->o.spin_us * 1000ULL;
	l->mtu_max = mtu[0] > mtu[1] ? mtu[0] : mtu[1];

	/* Sockets first: whether the fast path is on decides the slot size. */
	vnet = l->o.gso;
	for (i = 0; i < 2; i++)
		l->fd[i] = open_side(l->o.if_name[i], l->ifindex[i], &vnet);
	if (l->o.gso && !vnet) {	/* B refused it after A took it */
		close(l->fd[0]);
		l->fd[0] = open_side(l->o.if_name[0], l->ifindex[0], &vnet);
	}
	leave_netns(l);
	l->vnet_len = vnet ? GSO_VNET_HDR_LEN : 0;
	l->max_frame = l->o.max_frame ? (uint32_t)l->o.max_frame :
		vnet ? GSO_MAX_FRAME : l->mtu_max + VLAN_ETH_OVERHEAD;

	/*
	 * t0: schedules and traces count from here, the links' setup, just
	 * before the ready line, which prints it in the stats lines' clock,
	 * until the epoch (SIGUSR1, set_epoch()) re-counts them from the
	 * flows' start.  With --epoch-on-signal a schedule's steps wait for
	 * it (the options' values hold); a trace plays from t0 either way (it
	 * has no values of its own to hold).
	 */
	l->origin = mono_ns();

	for (i = 0; i < 2; i++) {
		struct emu_dir_cfg cfg;
		const struct dir_opts *dopt = &l->o.dir[i];
		struct dir_io *dio = &l->dir[i];

		dio->name = i ? "ba" : "ab";
		memset(&cfg, 0, sizeof(cfg));
		cfg.rate_bps = dopt->v[F_RATE];
		cfg.upstream_rate_bps = dopt->v[F_UPSTREAM];
		cfg.uncharged_bytes = EMU_L2_HEADER_BYTES;
		cfg.delay_ns = dopt->v[F_DELAY] * 1000ULL;
		cfg.jitter_ns = dopt->v[F_JITTER] * 1000ULL;
		cfg.limit_pkts = dopt->v[F_LIMIT_PKTS];
		cfg.limit_bytes = dopt->v[F_LIMIT_BYTES];
		cfg.max_frame = l->max_frame;
		cfg.vnet = vnet;
		cfg.max_run_segs = max_run_segs(&l->o, dopt, l->mtu_max);
		cfg.init_arena = arena_hint(dopt, l->mtu_max);
		cfg.seed = l->o.seed;
		cfg.dir = (unsigned int)i;
		cfg.loss = &dopt->loss;
		/* MAXPACKET / MEAN_PKTSIZE / MaximumPacketSize: an MTU segment on the wire */
		l->o.dir[i].aqm.mtu_bytes = l->mtu_max + EMU_L2_HEADER_BYTES;
		cfg.aqm = &l->o.dir[i].aqm;
		cfg.schedule = &dopt->sched;
		cfg.schedule_origin_ns = l->o.epoch_on_signal ?
					 EMU_ORIGIN_PENDING : l->origin;
		dio->policy = dopt->policy;
		dio->ser_rate_bps = dopt->v[F_RATE];
		if (dopt->policy == POL_TBF) {
			struct emu_tbf_cfg tc = {
				.rate_bps = dopt->v[F_RATE],
				.burst_bytes = dopt->v[F_TBF_BURST],
				.peak_bps = dopt->v[F_TBF_PEAK],
				.uncharged_bytes = EMU_L2_HEADER_BYTES,
				.max_delay_ns = dopt->v[F_TBF_MAX_DELAY] * 1000,
				.granularity_ns = dopt->v[F_TBF_GRANULARITY] * 1000,
				.phantom = {
					.max_delay_ns = dopt->v[F_PHANTOM_MAX_DELAY] * 1000,
					.knee_ppm = dopt->v[F_PHANTOM_KNEE],
					.window_ns = dopt->v[F_PHANTOM_WINDOW] * 1000,
					.flow_exp_q = (uint32_t)dopt->v[F_PHANTOM_FLOW_EXP],
				},
			};

			/* check_policies() already rejected what init would. */
			if (emu_tbf_init(&dio->pol.tbf, &tc))
				fatal("%s: invalid tbf configuration", dio->name);
			cfg.policy = &emu_tbf_policy_ops;
			cfg.policy_ctx = &dio->pol.tbf;
			dio->ser_rate_bps = dopt->v[F_TBF_PEAK];
			/* Not an error: it works, but below the sustained rate. */
			if (dopt->v[F_RATE] && dopt->v[F_TBF_BURST] < l->mtu_max)
				fprintf(stderr, "%s: warning: --%s %" PRIu64
					" is below the MTU (%u): bigger packets "
					"wait for a full bucket\n",
					prog, opt_name(DIR_OPT(i, F_TBF_BURST)),
					dopt->v[F_TBF_BURST], l->mtu_max);
		} else if (dopt->policy == POL_DOCSIS) {
			struct emu_docsis_cfg dc = l->o.docsis;

			dc.rate_bps = dopt->v[F_RATE];
			if (emu_docsis_init(&dio->pol.docsis, &dc))
				fatal("%s: invalid docsis configuration",
				      dio->name);
			cfg.policy = &emu_docsis_policy_ops;
			cfg.policy_ctx = &dio->pol.docsis;
			dio->ser_rate_bps = dc.phy_rate_bps;
		} else if (dopt->policy == POL_TRACE) {
			struct emu_trace *t = &l->o.dir[i].trace;

			emu_trace_start(t, l->origin, EMU_L2_HEADER_BYTES);
			cfg.policy = &emu_trace_policy_ops;
			cfg.policy_ctx = t;
			dio->trace = t;
			dio->ser_rate_bps = 0;	/* the opportunities are the wait */
			/* the rate plays no part; RED's idle decay uses the mean */
			cfg.rate_bps = emu_trace_mean_rate_bps(t);
		}
		if (emu_dir_init(&dio->q, &cfg))
			fatal("out of memory");
	}

	l->dir[0].drops = l->dir[1].drops = l->drops;
	l->dir[0].rx_fd = l->fd[0];
	l->dir[0].tx_fd = l->fd[1];
	l->dir[1].rx_fd = l->fd[1];
	l->dir[1].tx_fd = l->fd[0];
	err_link = NULL;
}

static void print_ready(const struct link *l)
{
	char aqm_desc[2][256], key[LINK_ID_MAX + 16];

	aqm_describe(&l->o.dir[0].aqm, aqm_desc[0], sizeof(aqm_desc[0]));
	aqm_describe(&l->o.dir[1].aqm, aqm_desc[1], sizeof(aqm_desc[1]));
	link_key(key, sizeof(key), l);
	out_printf(false,
		   "{\"event\":\"ready\"%s,\"pid\":%d,\"max_frame\":%u,\"seed\":%" PRIu64
		   ",\"gso\":%s,\"rt_priority\":%" PRIu64 ",\"max_run_segs\":[%u,%u]"
		   ",\"aqm\":[\"%s\",\"%s\"],\"t0\":%" PRIu64 ".%06" PRIu64 "}\n",
		   key, (int)getpid(), l->max_frame, l->o.seed,
		   l->vnet_len ? "true" : "false", l->o.rt_priority,
		   l->dir[0].q.max_run_segs, l->dir[1].q.max_run_segs,
		   aqm_desc[0], aqm_desc[1], l->origin / UINT64_C(1000000000),
		   (l->origin % UINT64_C(1000000000)) / 1000);
}

/* --cpu and --rt-priority (the first link's: process-wide). */
static void place_process(struct opts *o)
{
	if (o->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET((int)o->cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			usage_error("--cpu: cannot pin to CPU %ld: %s", o->cpu,
				    strerror(errno));
	}
	/*
	 * Real-time priority: a release that falls due while a host process
	 * (a sender, a sampler) holds the CPU waits for it under normal
	 * scheduling.  Measured at 1 Gb/s x 80 ms: lateness p99 192 us -> 93 us
	 * with SCHED_FIFO.  The kernel's RT throttling (95 % of each second by
	 * default) keeps a share for everything else.  Not fatal: containers
	 * may refuse it, and the lateness statistics then say what it cost.
	 */
	if (o->rt_priority) {
		struct sched_param sp = { .sched_priority = (int)o->rt_priority };

		if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
			fprintf(stderr, "%s: warning: --rt-priority %" PRIu64 ": %s "
				"(normal scheduling)\n", prog, o->rt_priority,
				strerror(errno));
			o->rt_priority = 0;
		}
	}
}

/*
 * Block termination signals and SIGUSR1 (the epoch); the waits unblock
 * them atomically, so the loop sees them only between its steps.
 */
static void setup_signals(sigset_t *waitmask)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGUSR1 };
	struct sigaction sa;
	sigset_t block;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&block);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&block, sigs[i]);
	sigprocmask(SIG_BLOCK, &block, waitmask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		sigdelset(waitmask, sigs[i]);
		sigaction(sigs[i], &sa, NULL);
	}
	signal(SIGPIPE, SIG_IGN);
}

/* The loop's buffers: receive slots as large as the largest link's, per-socket wait state. */
static void setup_buffers(struct app *a)
{
	size_t i;

	a->slot = 0;
	a->rx_defer_ns = 0;
	for (i = 0; i < a->n; i++) {
		struct link *l = &a->links[i];
		size_t slot = (size_t)l->max_frame + l->vnet_len;

		if (slot > a->slot)
			a->slot = slot;
		/*
		 * Each link defers by its own bound: a deferring sleep still
		 * wakes for the links that cannot wait (ep_timer), and lasts
		 * no longer than the smallest bound of those that can.
		 */
		l->rx_defer_ns = rx_defer_ns(&l->o);
		if (l->rx_defer_ns && (!a->rx_defer_ns || l->rx_defer_ns < a->rx_defer_ns))
			a->rx_defer_ns = l->rx_defer_ns;
	}
	a->rxbuf = malloc((size_t)BATCH * a->slot);
	a->more = calloc(nsock(a), sizeof(*a->more));
	a->pfd = calloc(nsock(a), sizeof(*a->pfd));
	a->ev = calloc(nsock(a), sizeof(*a->ev));
	if (!a->rxbuf || !a->more || !a->pfd || !a->ev)
		fatal("out of memory");
	for (i = 0; i < BATCH; i++) {
		a->rx_iov[i].iov_base = a->rxbuf + i * a->slot;
		a->rx_iov[i].iov_len = a->slot;
		a->rx_msgs[i].msg_hdr.msg_iov = &a->rx_iov[i];
		a->rx_msgs[i].msg_hdr.msg_iovlen = 1;
	}
}

int main(int argc, char **argv)
{
	static struct app app;
	static struct link single;
	struct app *a = &app;
	sigset_t waitmask;
	size_t k;
	int i;

	a->n = parse_links(argc, argv, &a->links);
	if (!a->n) {	/* the single-link command line, checked as it always was */
		parse_args(argc, argv, &single.o);
		a->links = &single;
		a->n = 1;
	}
	self_netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	/* Every link's interfaces checked (in its namespace) before any socket is opened. */
	for (k = 0; k < a->n; k++)
		check_link(&a->links[k]);
	a->stats_ms = a->links[0].o.stats_ms;
	place_process(&a->links[0].o);
	for (k = 0; k < a->n; k++)
		a->links[k].o.rt_priority = a->links[0].o.rt_priority;

	for (k = 0; k < a->n; k++)
		setup_link(&a->links[k]);
	setup_buffers(a);

	/* Precise wake-ups: the default 50 us slack would dwarf serialization. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	setup_signals(&waitmask);
	setup_epoll(a);
	for (k = 0; k < a->n; k++)
		print_ready(&a->links[k]);

	run(a, &waitmask);

	for (k = 0; k < a->n; k++)
		emit_stats(&a->links[k], mono_ns(), true);
	for (k = 0; k < a->n; k++)
		if (a->links[k].drops)
			fclose(a->links[k].drops);
	out_printf(false, "{\"event\":\"exit\"}\n");
	if (a->ep_rx >= 0) {
		close(a->ep_rx);
		close(a->ep_timer);
	}
	for (k = 0; k < a->n; k++) {
		struct link *l = &a->links[k];

		for (i = 0; i < 2; i++) {
			close(l->fd[i]);
			emu_dir_destroy(&l->dir[i].q);
			emu_trace_free(&l->o.dir[i].trace);
		}
	}
	free(a->rxbuf);
	free(a->more);
	free(a->pfd);
	free(a->ev);
	if (a->links != &single)
		free(a->links);
	return 0;
}
