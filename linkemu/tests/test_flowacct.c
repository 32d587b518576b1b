/*
 * test_flowacct.c - the delay accounting per TCP flow (flowacct.c): frames
 * keyed by their TCP 4-tuple (flowkey.c), IPv4 and IPv6; what is not TCP counted apart;
 * each flow's queueing summed and its least kept, extra latency signed; no
 * slot past FLOWACCT_SLOTS, and truncated headers never read past the frame.
 */
#include <string.h>

#include "../flowacct.h"
#include "check.h"

#define MS 1000000LL

/* An Ethernet + IPv4 + TCP header (20 bytes, no options) of a frame from
 * 10.0.0.<s>:sport to 10.0.1.1:dport with 10 bytes of payload, in b (at
 * least 64 bytes); its length.  A pure ACK is its first 54. */
static uint32_t tcp4(uint8_t *b, uint8_t s, uint16_t sport, uint16_t dport)
{
	memset(b, 0, 64);
	b[46] = 0x50;			/* data offset: 5 words */
	b[12] = 0x08;			/* IPv4 */
	b[14] = 0x45;			/* version 4, IHL 5 */
	b[14 + 9] = 6;			/* TCP */
	b[14 + 12] = 10; b[14 + 15] = s;
	b[14 + 16] = 10; b[14 + 18] = 1; b[14 + 19] = 1;
	b[34] = (uint8_t)(sport >> 8); b[35] = (uint8_t)sport;
	b[36] = (uint8_t)(dport >> 8); b[37] = (uint8_t)dport;
	return 64;
}

static void two_flows_apart(void)
{
	static struct flowacct a;
	uint8_t f1[64], f2[64];
	uint32_t n1 = tcp4(f1, 1, 40000, 5002), n2 = tcp4(f2, 2, 40001, 5003);

	memset(&a, 0, sizeof(a));
	/* f1 meets 2, 4 and 6 ms; f2 arrives behind it: 20 and 24 ms */
	flowacct_frame(&a, f1, n1, 2 * MS, 0);
	flowacct_frame(&a, f2, n2, 20 * MS, 0);
	flowacct_frame(&a, f1, n1, 4 * MS, 0);
	flowacct_frame(&a, f2, n2, 24 * MS, 0);
	flowacct_frame(&a, f1, n1, 6 * MS, 0);
	CHECK(a.used == 2, "%u", a.used);
	CHECK(a.slot[0].frames == 3 && a.slot[0].queue_sum_ns == 12 * MS &&
	      a.slot[0].queue_min_ns == 2 * MS, "f1 %llu %lld %lld",
	      (unsigned long long)a.slot[0].frames,
	      (long long)a.slot[0].queue_sum_ns, (long long)a.slot[0].queue_min_ns);
	CHECK(a.slot[1].frames == 2 && a.slot[1].queue_sum_ns == 44 * MS &&
	      a.slot[1].queue_min_ns == 20 * MS && a.slot[1].data_min_ns == 20 * MS, "f2");
	CHECK(a.other == 0, "%llu", (unsigned long long)a.other);
}

static void the_least_over_data_leaves_the_handshake_out(void)
{
	static struct flowacct a;
	uint8_t f[64];
	uint32_t n = tcp4(f, 1, 40000, 5002);
	struct flowkey k;

	memset(&a, 0, sizeof(a));
	/* the SYN into an empty queue, then data behind another flow's window */
	flowacct_frame(&a, f, 54, MS / 10, 0);
	CHECK(a.slot[0].data_min_ns == FLOWACCT_NONE, "no data yet");
	flowacct_frame(&a, f, n, 20 * MS, 0);
	flowacct_frame(&a, f, n, 24 * MS, 0);
	flowacct_frame(&a, f, 54, 22 * MS, 0);	/* a pure ACK of its own */
	CHECK(a.slot[0].queue_min_ns == MS / 10 && a.slot[0].data_min_ns == 20 * MS,
	      "%lld %lld", (long long)a.slot[0].queue_min_ns, (long long)a.slot[0].data_min_ns);
	CHECK(flowkey_of(f, n, &k) == 10 && flowkey_of(f, 54, &k) == 0, "payload");
	f[46] = 0xf0;				/* a data offset past the frame */
	CHECK(flowkey_of(f, n, &k) == 0, "cut options");
}

static void extra_latency_is_signed(void)
{
	static struct flowacct a;
	uint8_t f[64];
	uint32_t n = tcp4(f, 1, 40000, 5002);

	memset(&a, 0, sizeof(a));
	/* jitter: 1 ms queued, 3 ms earlier than the configured delay */
	flowacct_frame(&a, f, n, 1 * MS, -3 * MS);
	flowacct_frame(&a, f, n, 5 * MS, 2 * MS);
	CHECK(a.slot[0].queue_min_ns == -2 * MS, "%lld", (long long)a.slot[0].queue_min_ns);
	CHECK(a.slot[0].queue_sum_ns == 5 * MS, "%lld", (long long)a.slot[0].queue_sum_ns);
}

static void not_tcp_and_cut_headers_go_to_other(void)
{
	static struct flowacct a;
	uint8_t f[64];
	uint32_t n = tcp4(f, 1, 40000, 5002);

	memset(&a, 0, sizeof(a));
	f[14 + 9] = 1;				/* ICMP: a ping */
	flowacct_frame(&a, f, n, MS, 0);
	f[14 + 9] = 6;
	flowacct_frame(&a, f, 37, MS, 0);	/* ports cut off */
	f[14] = 0x44;				/* IHL 4: not a header */
	flowacct_frame(&a, f, n, MS, 0);
	f[14] = 0x45;
	f[12] = 0x08; f[13] = 0x06;		/* ARP */
	flowacct_frame(&a, f, n, MS, 0);
	CHECK(a.used == 0 && a.other == 4, "used %u other %llu", a.used,
	      (unsigned long long)a.other);
}

static void ipv6_keys(void)
{
	static struct flowacct a;
	uint8_t f[80];
	struct flowkey k;
	char s[128];

	memset(&a, 0, sizeof(a));
	memset(f, 0, sizeof(f));
	f[12] = 0x86; f[13] = 0xdd;
	f[14] = 0x60; f[14 + 6] = 6;
	f[14 + 8 + 15] = 1;			/* ::1 */
	f[14 + 24 + 15] = 2;			/* ::2 */
	f[54] = 0x13; f[55] = 0x8a;		/* 5002 */
	f[56] = 0x9c; f[57] = 0x40;		/* 40000 */
	flowkey_of(f, 58, &k);
	CHECK(k.family == 6 && k.proto == FLOWKEY_TCP && k.ports, "an IPv6 TCP frame");
	flowkey_str(s, sizeof(s), &k);
	CHECK(!strcmp(s, "[::1]:5002>[::2]:40000"), "%s", s);
	flowacct_frame(&a, f, 58, MS, 0);
	CHECK(a.used == 1, "%u", a.used);
	flowkey_of(f, 57, &k);
	CHECK(k.family == 6 && !k.ports, "its ports cut off");
}

static void the_key_in_words(void)
{
	uint8_t f[64];
	struct flowkey k;
	char s[64];

	flowkey_of(f, tcp4(f, 7, 41954, 5002), &k);
	CHECK(k.family == 4 && k.ports, "IPv4 TCP");
	flowkey_str(s, sizeof(s), &k);
	CHECK(!strcmp(s, "10.0.0.7:41954>10.0.1.1:5002"), "%s", s);
}

static void no_slot_past_the_table(void)
{
	static struct flowacct a;
	uint8_t f[64];
	uint16_t i;

	memset(&a, 0, sizeof(a));
	for (i = 0; i < FLOWACCT_SLOTS + 5; i++)
		flowacct_frame(&a, f, tcp4(f, 1, (uint16_t)(40000 + i), 5002), MS, 0);
	CHECK(a.used == FLOWACCT_SLOTS && a.other == 5, "used %u other %llu",
	      a.used, (unsigned long long)a.other);
	/* a known flow is still found once the table is full */
	flowacct_frame(&a, f, tcp4(f, 1, 40000, 5002), MS, 0);
	CHECK(a.slot[0].frames == 2 && a.other == 5, "%llu",
	      (unsigned long long)a.slot[0].frames);
}

int main(void)
{
	RUN(two_flows_apart);
	RUN(the_least_over_data_leaves_the_handshake_out);
	RUN(extra_latency_is_signed);
	RUN(not_tcp_and_cut_headers_go_to_other);
	RUN(ipv6_keys);
	RUN(the_key_in_words);
	RUN(no_slot_past_the_table);
	CHECK_DONE();
}
