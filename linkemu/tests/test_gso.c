/*
 * test_gso.c - software segmentation (gso.c) and the core's per-segment
 * decisions on super-frames (emu_dir_enqueue_frame).
 *
 * Frames are built here byte by byte (Ethernet, IPv4 or IPv6, TCP with
 * options, a payload pattern); every cut is checked against what the kernel's
 * tcp_gso_segment() would produce: IP lengths, ids and header checksum, TCP
 * sequence numbers and flags, a TCP checksum that completes to the true one,
 * and every payload byte exactly once.  The core tests check that a seed
 * drops the same indices whether a flow's segments arrive one by one or as
 * super-frames, that drop-tail cuts a super-frame at the right segment, and
 * that runs are bounded by max_run_segs.
 */
#include <stdlib.h>
#include <string.h>

#include "../gso.h"
#include "../loss.h"
#include "../sched.h"
#include "check.h"

#define MS 1000000ULL
#define ETH 14
#define MSS 1448
#define TCP_HLEN 32		/* 20 + timestamps option */

static uint8_t buf[GSO_MAX_FRAME];
static uint8_t out[GSO_MAX_FRAME];

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)rd16(p) << 16 | rd16(p + 2);
}

static uint8_t pattern(uint32_t payload_off)
{
	return (uint8_t)(payload_off * 7 + payload_off / 251);
}

/* A TCP super-frame of `payload` bytes; returns its length. */
static uint32_t build(uint8_t *f, bool v6, uint32_t payload, uint8_t flags,
		      struct gso_vnet_hdr *vh)
{
	uint32_t l3 = ETH, l4 = l3 + (v6 ? 40 : 20), hdr = l4 + TCP_HLEN, i;

	memset(f, 0, hdr);
	memset(f, 0xaa, 12);
	f[12] = v6 ? 0x86 : 0x08;
	f[13] = v6 ? 0xdd : 0x00;
	if (v6) {
		f[l3] = 0x60;
		f[l3 + 4] = (uint8_t)((TCP_HLEN + payload) >> 8);
		f[l3 + 5] = (uint8_t)(TCP_HLEN + payload);
		f[l3 + 6] = 6;
		f[l3 + 7] = 64;
		for (i = 0; i < 32; i++)
			f[l3 + 8 + i] = (uint8_t)(0x20 + i);
	} else {
		f[l3] = 0x45;
		f[l3 + 2] = (uint8_t)((20 + TCP_HLEN + payload) >> 8);
		f[l3 + 3] = (uint8_t)(20 + TCP_HLEN + payload);
		f[l3 + 4] = 0x12;	/* id 0x1234 */
		f[l3 + 5] = 0x34;
		f[l3 + 6] = 0x40;	/* DF */
		f[l3 + 8] = 64;
		f[l3 + 9] = 6;
		memcpy(f + l3 + 12, "\x0a\x0b\x00\x01\x0a\x0d\x00\x02", 8);
		i = (uint16_t)~gso_csum_fold(gso_csum_add(0, f + l3, 20));
		f[l3 + 10] = (uint8_t)(i >> 8);
		f[l3 + 11] = (uint8_t)i;
	}
	f[l4] = 0x13;		/* ports 5001 -> 40000 */
	f[l4 + 1] = 0x89;
	f[l4 + 2] = 0x9c;
	f[l4 + 3] = 0x40;
	memcpy(f + l4 + 4, "\xff\xff\xf0\x00", 4);	/* seq wraps inside */
	f[l4 + 12] = (TCP_HLEN / 4) << 4;
	f[l4 + 13] = flags;
	f[l4 + 14] = 0x20;
	memset(f + l4 + 20, 0x01, 12);		/* options: NOPs */
	for (i = 0; i < payload; i++)
		f[hdr + i] = pattern(i);
	memset(vh, 0, sizeof(*vh));
	vh->flags = GSO_F_NEEDS_CSUM;
	vh->gso_type = v6 ? GSO_TYPE_TCPV6 : GSO_TYPE_TCPV4;
	vh->gso_size = MSS;
	vh->hdr_len = (uint16_t)hdr;
	vh->csum_start = (uint16_t)l4;
	vh->csum_offset = 16;
	return hdr + payload;
}

/* The true TCP checksum of a segment, from scratch. */
static uint16_t tcp_csum_true(const uint8_t *f, uint32_t len, bool v6)
{
	uint32_t l4 = ETH + (v6 ? 40 : 20), tcp_len = len - l4, sum;
	uint8_t tmp[GSO_MAX_FRAME];

	memcpy(tmp, f + l4, tcp_len);
	tmp[16] = tmp[17] = 0;
	sum = v6 ? gso_csum_add(0, f + ETH + 8, 32) : gso_csum_add(0, f + ETH + 12, 8);
	sum += 6 + (tcp_len >> 16) + (tcp_len & 0xffff);
	sum = gso_csum_add(sum, tmp, tcp_len);
	return (uint16_t)~gso_csum_fold(sum);
}

/* What the kernel does with NEEDS_CSUM: sum from csum_start, field included. */
static uint16_t tcp_csum_completed(const uint8_t *f, uint32_t len,
				   const struct gso_vnet_hdr *vh)
{
	return (uint16_t)~gso_csum_fold(gso_csum_add(0, f + vh->csum_start,
						     len - vh->csum_start));
}

static void check_cut(bool v6, uint32_t payload, uint32_t run)
{
	struct gso_vnet_hdr vh, cvh;
	struct gso_layout lay;
	uint32_t len = build(buf, v6, payload, 0x18 | 0x01 | 0x80, &vh);
	uint32_t l4 = ETH + (v6 ? 40 : 20), hdr = l4 + TCP_HLEN;
	uint32_t first, got = 0, segs_expected = (payload + MSS - 1) / MSS;

	gso_parse(&lay, &vh, buf, len);
	CHECK(lay.segs == segs_expected, "segs %u for %u", lay.segs, segs_expected);
	CHECK(lay.hdr_len == hdr && lay.mss == MSS, "hdr %u mss %u", lay.hdr_len, lay.mss);
	for (first = 0; first < lay.segs; first += run) {
		uint32_t n = lay.segs - first < run ? lay.segs - first : run;
		uint32_t clen = gso_cut(&lay, buf, first, n, out, &cvh), i;
		uint32_t pl = clen - hdr;
		uint8_t fl = out[l4 + 13];

		CHECK(clen == gso_run_len(&lay, first, n), "cut length %u", clen);
		CHECK(rd32(out + l4 + 4) == 0xfffff000u + first * MSS, "seq");
		for (i = 0; i < pl; i++)
			if (out[hdr + i] != pattern(first * MSS + i))
				break;
		CHECK(i == pl, "payload byte %u of run at %u", i, first);
		got += pl;
		if (!v6) {
			CHECK(rd16(out + ETH + 2) == clen - ETH, "ip tot_len");
			CHECK(rd16(out + ETH + 4) == 0x1234 + first, "ip id");
			CHECK(gso_csum_fold(gso_csum_add(0, out + ETH, 20)) == 0xffff,
			      "ip header checksum");
		} else {
			CHECK(rd16(out + ETH + 4) == clen - ETH - 40, "ipv6 payload len");
		}
		if (n == lay.segs)
			continue;	/* the whole frame: copied as it came */
		CHECK(((fl & 0x01) != 0) == (first + n == lay.segs), "FIN only last");
		CHECK(((fl & 0x08) != 0) == (first + n == lay.segs), "PSH only last");
		CHECK(((fl & 0x80) != 0) == (first == 0), "CWR only first");
		CHECK(cvh.flags == GSO_F_NEEDS_CSUM && cvh.csum_start == l4 &&
		      cvh.csum_offset == 16, "vnet csum");
		CHECK(n > 1 ? (cvh.gso_type == vh.gso_type && cvh.gso_size == MSS) :
			      cvh.gso_type == GSO_TYPE_NONE, "vnet gso of a run of %u", n);
		CHECK(tcp_csum_completed(out, clen, &cvh) == tcp_csum_true(out, clen, v6),
		      "tcp checksum completes to the true one (run %u+%u)", first, n);
	}
	CHECK(got == payload, "payload bytes %u of %u", got, payload);
}

static void test_cut_ipv4_single_segments(void)
{
	check_cut(false, 44 * MSS, 1);
	check_cut(false, 10 * MSS + 17, 1);	/* short last segment */
}

static void test_cut_ipv4_runs(void)
{
	check_cut(false, 44 * MSS, 8);
	check_cut(false, 7 * MSS + 1, 3);
	check_cut(false, 5 * MSS, 5);		/* the whole frame */
}

static void test_cut_ipv6(void)
{
	check_cut(true, 20 * MSS + 100, 1);
	check_cut(true, 20 * MSS + 100, 6);
}

static void test_not_super_frames(void)
{
	struct gso_vnet_hdr vh, cvh;
	struct gso_layout lay;
	uint32_t len = build(buf, false, MSS, 0x10, &vh);

	gso_parse(&lay, &vh, buf, len);		/* exactly one MSS */
	CHECK(lay.segs == 1 && lay.len == len, "one segment");
	vh.gso_type = GSO_TYPE_NONE;
	len = build(buf, false, 5 * MSS, 0x10, &vh);
	vh.gso_type = GSO_TYPE_NONE;
	gso_parse(&lay, &vh, buf, len);
	CHECK(lay.segs == 1, "no GSO type: whole");
	CHECK(gso_cut(&lay, buf, 0, 1, out, &cvh) == len && !memcmp(out, buf, len),
	      "copied unchanged");
	buf[12] = 0x81;				/* a VLAN tag: not parsed, whole */
	vh.gso_type = GSO_TYPE_TCPV4;
	gso_parse(&lay, &vh, buf, len);
	CHECK(lay.segs == 1, "vlan: whole");
	gso_parse(&lay, &vh, buf, 30);		/* truncated */
	CHECK(lay.segs == 1, "short: whole");
}

/* ---- the core on super-frames ------------------------------------------- */

static struct emu_dir_cfg cfg_for(uint32_t max_run)
{
	struct emu_dir_cfg cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.max_frame = GSO_MAX_FRAME;
	cfg.seed = 7;
	cfg.rate_bps = 1000000000ULL;
	cfg.uncharged_bytes = EMU_L2_HEADER_BYTES;
	cfg.delay_ns = 10 * MS;
	cfg.max_run_segs = max_run;
	cfg.vnet = true;
	return cfg;
}

struct drops {
	uint64_t idx[4096];
	size_t n;
};

static void on_loss(void *ctx, uint64_t index)
{
	struct drops *d = ctx;

	if (d->n < 4096)
		d->idx[d->n++] = index;
}

/* Payload bytes released by the direction, drained at the end. */
static uint64_t drain_payload(struct emu_dir *d, uint32_t hdr)
{
	struct emu_pkt *p;
	uint64_t bytes = 0;

	while ((p = emu_dir_pop_due(d, UINT64_MAX / 2)))
		bytes += p->len - hdr;
	return bytes;
}

static void test_seeded_drops_same_with_and_without_gso(void)
{
	struct emu_dir_cfg cfg = cfg_for(0);
	struct loss_model lm;
	struct emu_dir a, b;
	struct drops da = { .n = 0 }, db = { .n = 0 };
	struct gso_vnet_hdr vh;
	struct gso_layout lay, one;
	uint64_t t = 0, kept_b = 0;
	uint32_t len, k, i, hdr = ETH + 20 + TCP_HLEN;
	char err[64];

	CHECK(!loss_parse(&lm, "bernoulli:0.01", err, sizeof(err)), "%s", err);
	cfg.loss = &lm;
	CHECK(!emu_dir_init(&a, &cfg) && !emu_dir_init(&b, &cfg), "init");
	for (k = 0; k < 200; k++, t += MS) {
		len = build(buf, false, 44 * MSS, 0x10, &vh);
		gso_parse(&lay, &vh, buf, len);
		/* a: the super-frame; b: the same segments one by one */
		emu_dir_enqueue_frame(&a, t, &lay, buf, on_loss, &da);
		for (i = 0; i < lay.segs; i++) {
			struct gso_vnet_hdr sv;
			uint32_t sl = gso_cut(&lay, buf, i, 1, out, &sv);

			gso_parse(&one, &sv, out, sl);
			kept_b += emu_dir_enqueue_frame(&b, t, &one, out, on_loss, &db);
		}
	}
	CHECK(da.n == db.n && da.n > 40 && !memcmp(da.idx, db.idx, da.n * 8),
	      "drop indices: %zu vs %zu", da.n, db.n);
	CHECK(a.c.loss_drops == da.n && a.c.rx_pkts == 200 * 44, "counted per segment");
	CHECK(drain_payload(&a, hdr) == (200 * 44 - da.n) * (uint64_t)MSS,
	      "every kept payload byte released once");
	CHECK(drain_payload(&b, hdr) == (200 * 44 - db.n) * (uint64_t)MSS, "b released");
	CHECK(a.c.tx_pkts == kept_b && b.c.tx_pkts == kept_b, "same segments kept");
	CHECK(a.c.tx_bytes == b.c.tx_bytes, "wire bytes %llu vs %llu",
	      (unsigned long long)a.c.tx_bytes, (unsigned long long)b.c.tx_bytes);
	emu_dir_destroy(&a);
	emu_dir_destroy(&b);
}

static void test_droptail_cuts_inside_super_frame(void)
{
	struct emu_dir_cfg cfg = cfg_for(0);
	struct gso_vnet_hdr vh;
	struct gso_layout lay;
	struct emu_dir d;
	uint32_t len = build(buf, false, 44 * MSS, 0x10, &vh);
	uint32_t hdr = ETH + 20 + TCP_HLEN;

	cfg.limit_pkts = 10;
	cfg.rate_bps = 1000000;	/* slow: nothing leaves during the test */
	CHECK(!emu_dir_init(&d, &cfg), "init");
	gso_parse(&lay, &vh, buf, len);
	CHECK(emu_dir_enqueue_frame(&d, 0, &lay, buf, NULL, NULL) == 10, "10 kept");
	CHECK(d.c.queue_drops == 34 && d.c.backlog_pkts == 10, "34 tail-dropped");
	CHECK(d.c.backlog_bytes == 10ULL * (hdr + MSS), "backlog bytes per segment");
	CHECK(emu_dir_enqueue_frame(&d, 1, &lay, buf, NULL, NULL) == 0, "full");
	CHECK(drain_payload(&d, hdr) == 10ULL * MSS, "the first 10 segments");
	emu_dir_destroy(&d);
}

static void test_runs_bounded_and_timed(void)
{
	struct emu_dir_cfg cfg = cfg_for(8);
	struct gso_vnet_hdr vh;
	struct gso_layout lay;
	struct emu_dir d;
	struct emu_pkt *p;
	uint32_t len = build(buf, false, 44 * MSS, 0x10, &vh), n = 0, segs = 0;
	uint64_t last_dep = 0, wire = 0;

	CHECK(!emu_dir_init(&d, &cfg), "init");
	gso_parse(&lay, &vh, buf, len);
	emu_dir_enqueue_frame(&d, 0, &lay, buf, NULL, NULL);
	while ((p = emu_dir_pop_due(&d, UINT64_MAX / 2))) {
		CHECK(p->segs <= 8, "run of %u", p->segs);
		wire += p->wire_len;
		/* each run leaves when its last segment is serialized */
		CHECK(p->departure_ns == wire * 8 - 14ULL * (segs + p->segs) * 8,
		      "departure %llu", (unsigned long long)p->departure_ns);
		CHECK(p->release_ns == p->departure_ns + 10 * MS, "release");
		last_dep = p->departure_ns;
		segs += p->segs;
		n++;
	}
	CHECK(n == 6 && segs == 44, "%u runs, %u segments", n, segs);
	CHECK(last_dep == 44ULL * (20 + TCP_HLEN + MSS) * 8, "rate charged IP bytes per segment");
	emu_dir_destroy(&d);
}

/*
 * A 44-segment run from a 1 Gb/s bottleneck reaches a 2.5 Gb/s link: its
 * segments were 12 us apart upstream, so on an idle link the last leaves
 * one 2.5 Gb/s segment time after the run arrived (cut-through); towards a
 * 1 Gb/s link after a 10 Gb/s one (whose spacing it inherited) the run
 * takes 43 upstream spacings less than its own serialization; with no
 * upstream rate (straight from a host) the whole burst queues.
 */
static void test_pipelining_with_upstream_rate(void)
{
	struct gso_vnet_hdr vh;
	struct gso_layout lay;
	uint32_t len = build(buf, false, 44 * MSS, 0x10, &vh);
	const uint64_t T = 50 * MS, seg_ip = 20 + TCP_HLEN + MSS;	/* 1500 */
	struct { uint64_t rate, up, want; } c[] = {
		{ 2500000000ULL, 1000000000ULL, T + seg_ip * 8 * 1000 / 2500 },
		{ 1000000000ULL, 10000000000ULL, T - 43 * seg_ip * 8 / 10 + 44 * seg_ip * 8 },
		{ 1000000000ULL, 0, T + 44 * seg_ip * 8 },
		{ 1000000000ULL, 1000000000ULL, T + seg_ip * 8 },
	};
	unsigned int k;

	gso_parse(&lay, &vh, buf, len);
	for (k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		struct emu_dir_cfg cfg = cfg_for(0);
		struct emu_dir d;
		struct emu_pkt *p;

		cfg.rate_bps = c[k].rate;
		cfg.upstream_rate_bps = c[k].up;
		CHECK(!emu_dir_init(&d, &cfg), "init");
		emu_dir_enqueue_frame(&d, T, &lay, buf, NULL, NULL);
		p = emu_dir_pop_due(&d, UINT64_MAX / 2);
		CHECK(p && p->departure_ns == c[k].want, "case %u: departure %llu, want %llu",
		      k, p ? (unsigned long long)p->departure_ns : 0ULL,
		      (unsigned long long)c[k].want);
		/* a second run right behind it queues behind the first in full */
		emu_dir_enqueue_frame(&d, T, &lay, buf, NULL, NULL);
		p = emu_dir_pop_due(&d, UINT64_MAX / 2);
		CHECK(p && p->departure_ns == c[k].want + 44 * seg_ip * 8000000000ULL / c[k].rate,
		      "case %u: busy link: no back-dating", k);
		emu_dir_destroy(&d);
	}
}

static void test_backdated_arrival(void)
{
	struct emu_dir_cfg cfg = cfg_for(0);
	struct gso_vnet_hdr vh;
	struct gso_layout lay;
	struct emu_dir d;
	struct emu_pkt *p;
	uint32_t len = build(buf, false, 100, 0x10, &vh);

	CHECK(!emu_dir_init(&d, &cfg), "init");
	gso_parse(&lay, &vh, buf, len);
	emu_dir_advance(&d, 5 * MS);	/* the loop was busy until 5 ms */
	emu_dir_enqueue_frame(&d, 4 * MS, &lay, buf, NULL, NULL);	/* arrived at 4 */
	p = emu_dir_pop_due(&d, UINT64_MAX / 2);
	CHECK(p && p->arrival_ns == 4 * MS, "kernel arrival time kept");
	CHECK(p && p->release_ns < 14 * MS + 10000, "released one delay after arrival");
	emu_dir_enqueue_frame(&d, 3 * MS, &lay, buf, NULL, NULL);	/* out of order */
	p = emu_dir_pop_due(&d, UINT64_MAX / 2);
	CHECK(p && p->arrival_ns == 4 * MS, "arrivals never go backwards");
	emu_dir_destroy(&d);
}

static void test_arena_growth_with_mixed_sizes(void)
{
	struct emu_dir_cfg cfg = cfg_for(0);
	struct gso_vnet_hdr vh;
	struct gso_layout lay;
	struct emu_dir d;
	uint32_t k, hdr = ETH + 20 + TCP_HLEN;
	uint64_t payload = 0, t = 0;

	cfg.rate_bps = 0;
	CHECK(!emu_dir_init(&d, &cfg), "init");
	for (k = 0; k < 3000; k++, t += 1000) {
		uint32_t pl = k % 3 ? 1 + k % 40 : 30 * MSS + k;
		uint32_t len = build(buf, false, pl, 0x10, &vh);

		gso_parse(&lay, &vh, buf, len);
		emu_dir_enqueue_frame(&d, t, &lay, buf, NULL, NULL);
		payload += pl;
		if (k % 500 == 499)	/* drain some: the arena wraps */
			payload -= drain_payload(&d, hdr);
	}
	CHECK(d.arena.size >= 8u << 20, "arena grew to %llu", (unsigned long long)d.arena.size);
	payload -= drain_payload(&d, hdr);
	CHECK(payload == 0, "every payload byte came out once (%llu left)",
	      (unsigned long long)payload);
	CHECK(d.arena.head == d.arena.tail, "arena empty");
	emu_dir_destroy(&d);
}

/*
 * Receive in place (emu_dir_rx_slot): frames received at the arena's tail are
 * queued without a copy when kept whole, moved aside when cut, and leave
 * byte for byte as the same frames offered from a separate buffer do -- with
 * seeded loss and drop-tail cutting some of them, the arena wrapping (its end
 * skipped) and growing.
 */
static void test_receive_in_place(void)
{
	struct emu_dir_cfg cfg = cfg_for(0);
	struct loss_model lm;
	struct emu_dir a, b;
	struct gso_vnet_hdr vh;
	struct gso_layout lay;
	struct emu_pkt *pa, *pb;
	uint64_t t = 0, whole_in_place = 0, cut = 0, released = 0;
	uint32_t k;
	char err[64];

	CHECK(!loss_parse(&lm, "bernoulli:0.002", err, sizeof(err)), "%s", err);
	cfg.loss = &lm;
	cfg.limit_pkts = 400;
	cfg.init_arena = 1u << 20;
	CHECK(!emu_dir_init(&a, &cfg) && !emu_dir_init(&b, &cfg), "init");
	for (k = 0; k < 3000; k++, t += k >= 1000 && k < 1200 ? 50000 : 600000) {
		uint32_t pl = k % 4 ? 44 * MSS : 1 + k % 90;
		uint32_t len = build(buf, false, pl, 0x18, &vh);
		uint8_t *slot = emu_dir_rx_slot(&a);
		uint64_t tail = a.tail;
		uint32_t kept;

		CHECK(slot != NULL, "a slot");
		gso_vnet_write(slot, &vh);	/* as recvmmsg leaves it */
		memcpy(slot + GSO_VNET_HDR_LEN, buf, len);
		gso_parse(&lay, &vh, slot + GSO_VNET_HDR_LEN, len);
		kept = emu_dir_enqueue_frame(&a, t, &lay, slot + GSO_VNET_HDR_LEN,
					     NULL, NULL);
		if (kept == lay.segs && a.tail == tail + 1)
			whole_in_place += a.ring[tail & a.mask].data ==
					  slot + GSO_VNET_HDR_LEN;
		else if (kept)
			cut++;
		gso_parse(&lay, &vh, buf, len);
		CHECK(emu_dir_enqueue_frame(&b, t, &lay, buf, NULL, NULL) == kept,
		      "frame %u: same segments kept", k);
		/* ~0.65 Gb/s of 1, but 7 Gb/s from frame 1000 to 1200: cuts. */
		while ((pa = emu_dir_pop_due(&a, t)) != NULL) {
			pb = emu_dir_pop_due(&b, t);
			CHECK(pb && pa->len == pb->len &&
			      !memcmp(pa->data - GSO_VNET_HDR_LEN,
				      pb->data - GSO_VNET_HDR_LEN,
				      pa->len + GSO_VNET_HDR_LEN),
			      "frame %llu leaves the same", (unsigned long long)released);
			released++;
		}
		CHECK(emu_dir_pop_due(&b, t) == NULL, "b has nothing more due");
	}
	CHECK(whole_in_place > 2000 && cut > 100 && released > 2000,
	      "in place %llu, cut %llu, released %llu",
	      (unsigned long long)whole_in_place, (unsigned long long)cut,
	      (unsigned long long)released);
	CHECK(a.c.loss_drops == b.c.loss_drops && a.c.loss_drops > 50 &&
	      a.c.queue_drops == b.c.queue_drops && a.c.queue_drops > 0,
	      "same drops: loss %llu, queue %llu",
	      (unsigned long long)a.c.loss_drops, (unsigned long long)a.c.queue_drops);
	CHECK(a.arena.grows > 0, "the arena grew");
	emu_dir_destroy(&a);
	emu_dir_destroy(&b);

	cfg = cfg_for(8);	/* every super-frame is cut: receive elsewhere */
	CHECK(!emu_dir_init(&a, &cfg), "init");
	CHECK(emu_dir_rx_slot(&a) == NULL, "no slot where every frame is cut");
	emu_dir_destroy(&a);
}

int main(void)
{
	RUN(test_cut_ipv4_single_segments);
	RUN(test_cut_ipv4_runs);
	RUN(test_cut_ipv6);
	RUN(test_not_super_frames);
	RUN(test_seeded_drops_same_with_and_without_gso);
	RUN(test_droptail_cuts_inside_super_frame);
	RUN(test_runs_bounded_and_timed);
	RUN(test_pipelining_with_upstream_rate);
	RUN(test_backdated_arrival);
	RUN(test_arena_growth_with_mixed_sizes);
	RUN(test_receive_in_place);
	CHECK_DONE();
}
