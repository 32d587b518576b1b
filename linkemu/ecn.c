/*
 * ecn.c - reading and setting the ECN field of a frame's IP header (see
 * ecn.h).  Byte-level and endian-explicit, like gso.c.
 */
#include "ecn.h"

#define ETH_HLEN_	14
#define ETH_P_IPV4_	0x0800
#define ETH_P_IPV6_	0x86dd
#define IPV4_MIN_HLEN	20
#define IPV6_HLEN_	40
#define IPV4_CSUM_OFF	10
#define ECN_MASK	3

/* Where the ECN bits are: byte offset and shift, or -1 for no IP header. */
static int ecn_locate(const uint8_t *f, uint32_t len, unsigned int *shift,
		      bool *v4)
{
	uint16_t type;

	if (len < ETH_HLEN_ + IPV4_MIN_HLEN)
		return -1;
	type = (uint16_t)(f[12] << 8 | f[13]);
	if (type == ETH_P_IPV4_) {
		unsigned int ihl = (f[ETH_HLEN_] & 0x0f) * 4u;

		if (f[ETH_HLEN_] >> 4 != 4 || ihl < IPV4_MIN_HLEN ||
		    len < ETH_HLEN_ + ihl)
			return -1;
		*shift = 0;		/* TOS byte: DSCP(6) ECN(2) */
		*v4 = true;
		return ETH_HLEN_ + 1;
	}
	if (type == ETH_P_IPV6_) {
		if (f[ETH_HLEN_] >> 4 != 6 || len < ETH_HLEN_ + IPV6_HLEN_)
			return -1;
		*shift = 4;		/* traffic class' low bits: byte 1, bits 5-4 */
		*v4 = false;
		return ETH_HLEN_ + 1;
	}
	return -1;
}

int ecn_get(const uint8_t *frame, uint32_t len)
{
	unsigned int shift;
	bool v4;
	int off = ecn_locate(frame, len, &shift, &v4);

	if (off < 0)
		return -1;
	return (frame[off] >> shift) & ECN_MASK;
}

bool ecn_set_ce(uint8_t *frame, uint32_t len)
{
	unsigned int shift;
	bool v4;
	int off = ecn_locate(frame, len, &shift, &v4);
	uint8_t *ip = frame + ETH_HLEN_;
	uint32_t sum;
	uint16_t old_word, new_word, hc;

	if (off < 0 || !((frame[off] >> shift) & ECN_MASK))
		return false;
	if (!v4) {
		frame[off] |= (uint8_t)(ECN_CE << shift);
		return true;
	}
	/* RFC 1624 eqn. 3 over the 16-bit word holding version/IHL and TOS */
	old_word = (uint16_t)(ip[0] << 8 | ip[1]);
	ip[1] |= ECN_CE;
	new_word = (uint16_t)(ip[0] << 8 | ip[1]);
	hc = (uint16_t)(ip[IPV4_CSUM_OFF] << 8 | ip[IPV4_CSUM_OFF + 1]);
	sum = (uint16_t)~hc + (uint32_t)(uint16_t)~old_word + new_word;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	hc = (uint16_t)~sum;
	ip[IPV4_CSUM_OFF] = (uint8_t)(hc >> 8);
	ip[IPV4_CSUM_OFF + 1] = (uint8_t)hc;
	return true;
}
