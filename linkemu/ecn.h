/*
 * ecn.h - the ECN field of a frame's IP header (RFC 3168 §5), for the AQM
 * models that mark instead of drop (aqm.h, ecn=1).
 *
 * Role: tell whether a frame's flow negotiated ECN (ECT(0), ECT(1), or
 * already CE) and set Congestion Experienced on it.  IPv4 keeps the field
 * in the two low bits of the TOS byte, under the header checksum, which is
 * updated incrementally (RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m')), as a
 * router does, so a checksum that was right stays right; IPv6 keeps it in
 * the two low bits of the traffic class, with no checksum.
 *
 * Only plain Ethernet frames carrying IPv4 or IPv6 are looked at (as gso.c
 * parses them): a VLAN-tagged or non-IP frame counts as not ECN-capable, so
 * an AQM drops it.  On a super-frame the field is the one every segment
 * will carry (the kernel copies the header into each).
 */
#ifndef LINKEMU_ECN_H
#define LINKEMU_ECN_H

#include <stdbool.h>
#include <stdint.h>

enum ecn_codepoint {
	ECN_NOT_ECT = 0,
	ECN_ECT1 = 1,
	ECN_ECT0 = 2,
	ECN_CE = 3,
};

/* The codepoint of frame[0..len), or -1 for a frame that is not IP. */
int ecn_get(const uint8_t *frame, uint32_t len);

/* ECT(0), ECT(1) or CE: the flow negotiated ECN. */
static inline bool ecn_capable(const uint8_t *frame, uint32_t len)
{
	return ecn_get(frame, len) > ECN_NOT_ECT;
}

/*
 * Set CE on an ECN-capable frame (IPv4 header checksum updated); false,
 * and the frame unchanged, for one that is not.
 */
bool ecn_set_ce(uint8_t *frame, uint32_t len);

#endif /* LINKEMU_ECN_H */
