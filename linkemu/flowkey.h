/*
 * flowkey.h - which flow a frame belongs to: its Ethernet type, IP version,
 * protocol, addresses and (TCP, UDP) ports, as the frame carries them.
 *
 * Role: the one reader of a frame's flow header.  The phantom element
 * (phantom.h) counts the flows sharing a window by it; the per-flow delay
 * accounting (flowacct.h) keys each TCP flow's figures by it.  Ethernet II
 * without a VLAN tag (the frames fastlab's veths carry); IPv6 extension
 * headers are not walked (the protocol is then the first next-header).
 *
 * Pure: no I/O; tests/test_flowacct.c and tests/test_tbf.c drive it.
 */
#ifndef LINKEMU_FLOWKEY_H
#define LINKEMU_FLOWKEY_H

#include <stdbool.h>
#include <stdint.h>

#define FLOWKEY_ADDR_BYTES	16	/* IPv6; IPv4 in the first 4 */
#define FLOWKEY_TCP		6
#define FLOWKEY_UDP		17

struct flowkey {
	uint8_t saddr[FLOWKEY_ADDR_BYTES];
	uint8_t daddr[FLOWKEY_ADDR_BYTES];
	uint16_t sport, dport;	/* 0 unless `ports` */
	uint16_t ethertype;	/* 0 for a frame shorter than an Ethernet header */
	uint8_t proto;		/* IP protocol; 0 unless family */
	uint8_t family;		/* 4 or 6; 0: not IP (or a header cut short) */
	bool ports;		/* TCP or UDP with both ports in the frame */
};

/* The frame's flow header into k (all of k zeroed first, padding too, so
 * that k's bytes can be hashed or compared whole).  Returns the bytes of
 * TCP payload the frame carries after its headers (0 for a pure ACK, a SYN,
 * or a frame that is not TCP): a data segment's, which an RTT sample times. */
uint32_t flowkey_of(const uint8_t *frame, uint32_t len, struct flowkey *k);

/* An IP flow as "saddr:sport>daddr:dport" (IPv6 in brackets) into b; its
 * length as snprintf returns it. */
int flowkey_str(char *b, uint32_t n, const struct flowkey *k);

#endif /* LINKEMU_FLOWKEY_H */
