/*
 * flowkey.c - a frame's flow header (flowkey.h).  Byte-level and
 * endian-explicit, like ecn.c and gso.c.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "flowkey.h"

#define ETH_HLEN_	14
#define ETH_P_IPV4_	0x0800
#define ETH_P_IPV6_	0x86dd
#define IPV4_MIN_HLEN	20
#define IPV6_HLEN_	40
#define PORTS_BYTES	4	/* source and destination port */
#define TCP_DOFF_OFF	12	/* the data offset's byte: header length / 4 in its high nibble */

uint32_t flowkey_of(const uint8_t *f, uint32_t len, struct flowkey *k)
{
	const uint8_t *ip = f + ETH_HLEN_;
	uint32_t ports_off = 0;

	memset(k, 0, sizeof(*k));
	if (len < ETH_HLEN_)
		return 0;
	k->ethertype = (uint16_t)(f[12] << 8 | f[13]);
	if (k->ethertype == ETH_P_IPV4_ && len >= ETH_HLEN_ + IPV4_MIN_HLEN &&
	    ip[0] >> 4 == 4) {
		uint32_t ihl = (ip[0] & 0x0fu) * 4u;

		k->family = 4;
		k->proto = ip[9];
		memcpy(k->saddr, ip + 12, 4);
		memcpy(k->daddr, ip + 16, 4);
		if (ihl >= IPV4_MIN_HLEN)
			ports_off = ETH_HLEN_ + ihl;
	} else if (k->ethertype == ETH_P_IPV6_ && len >= ETH_HLEN_ + IPV6_HLEN_ &&
		   ip[0] >> 4 == 6) {
		k->family = 6;
		k->proto = ip[6];
		memcpy(k->saddr, ip + 8, 16);
		memcpy(k->daddr, ip + 24, 16);
		ports_off = ETH_HLEN_ + IPV6_HLEN_;
	} else {
		return 0;
	}
	if (ports_off && (k->proto == FLOWKEY_TCP || k->proto == FLOWKEY_UDP) &&
	    len >= ports_off + PORTS_BYTES) {
		k->sport = (uint16_t)(f[ports_off] << 8 | f[ports_off + 1]);
		k->dport = (uint16_t)(f[ports_off + 2] << 8 | f[ports_off + 3]);
		k->ports = true;
	}
	if (k->ports && k->proto == FLOWKEY_TCP &&
	    len >= ports_off + TCP_DOFF_OFF + 1) {
		uint32_t end = ports_off + (f[ports_off + TCP_DOFF_OFF] >> 4) * 4u;

		return len > end ? len - end : 0;
	}
	return 0;
}

int flowkey_str(char *b, uint32_t n, const struct flowkey *k)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
	int af = k->family == 6 ? AF_INET6 : AF_INET;

	if (!k->family || !inet_ntop(af, k->saddr, s, sizeof(s)) ||
	    !inet_ntop(af, k->daddr, d, sizeof(d)))
		return snprintf(b, n, "?");
	if (k->family == 6)
		return snprintf(b, n, "[%s]:%u>[%s]:%u", s, k->sport, d, k->dport);
	return snprintf(b, n, "%s:%u>%s:%u", s, k->sport, d, k->dport);
}
