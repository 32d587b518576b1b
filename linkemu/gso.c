/*
 * gso.c - software segmentation of TCP super-frames (see gso.h).
 *
 * Byte-level, endian-explicit code: frames are read and written with the
 * helpers below, never through casts to packed structs, so the module is
 * free of alignment assumptions and of kernel header dependencies.
 */
#include "gso.h"

#include <string.h>

#define ETH_P_IPV4	0x0800
#define ETH_P_IPV6	0x86dd
#define IPPROTO_TCP_	6
#define IPV6_HLEN	40
#define TCP_MIN_HLEN	20
#define TCP_CSUM_OFF	16	/* offsetof(struct tcphdr, check) */
#define TCP_FLAG_FIN	0x01
#define TCP_FLAG_PSH	0x08
#define TCP_FLAG_CWR	0x80

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

void gso_vnet_read(struct gso_vnet_hdr *vh, const uint8_t raw[GSO_VNET_HDR_LEN])
{
	/* Little endian: the virtio legacy layout on every host we run on. */
	vh->flags = raw[0];
	vh->gso_type = raw[1];
	vh->hdr_len = (uint16_t)(raw[2] | raw[3] << 8);
	vh->gso_size = (uint16_t)(raw[4] | raw[5] << 8);
	vh->csum_start = (uint16_t)(raw[6] | raw[7] << 8);
	vh->csum_offset = (uint16_t)(raw[8] | raw[9] << 8);
}

void gso_vnet_write(uint8_t raw[GSO_VNET_HDR_LEN], const struct gso_vnet_hdr *vh)
{
	raw[0] = vh->flags;
	raw[1] = vh->gso_type;
	raw[2] = (uint8_t)vh->hdr_len;
	raw[3] = (uint8_t)(vh->hdr_len >> 8);
	raw[4] = (uint8_t)vh->gso_size;
	raw[5] = (uint8_t)(vh->gso_size >> 8);
	raw[6] = (uint8_t)vh->csum_start;
	raw[7] = (uint8_t)(vh->csum_start >> 8);
	raw[8] = (uint8_t)vh->csum_offset;
	raw[9] = (uint8_t)(vh->csum_offset >> 8);
}

uint32_t gso_csum_add(uint32_t sum, const uint8_t *p, uint32_t len)
{
	uint64_t s = sum;
	uint32_t i;

	for (i = 0; i + 1 < len; i += 2)
		s += get16(p + i);
	if (len & 1)
		s += (uint32_t)p[len - 1] << 8;
	while (s >> 32)
		s = (s & 0xffffffffULL) + (s >> 32);
	return (uint32_t)s;
}

uint16_t gso_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

static void single(struct gso_layout *lay, const struct gso_vnet_hdr *vh,
		   uint32_t len)
{
	memset(lay, 0, sizeof(*lay));
	lay->len = len;
	lay->segs = 1;
	lay->hdr_len = len;
	lay->vh = *vh;
}

void gso_parse(struct gso_layout *lay, const struct gso_vnet_hdr *vh,
	       const uint8_t *frame, uint32_t len)
{
	uint32_t l3 = GSO_ETH_HLEN, l4, hdr, payload, type;
	bool v6;

	single(lay, vh, len);
	type = vh->gso_type & (uint8_t)~GSO_TYPE_ECN;
	if ((type != GSO_TYPE_TCPV4 && type != GSO_TYPE_TCPV6) ||
	    !vh->gso_size || len < GSO_ETH_HLEN + IPV6_HLEN)
		return;
	v6 = type == GSO_TYPE_TCPV6;
	if (get16(frame + 12) != (v6 ? ETH_P_IPV6 : ETH_P_IPV4))
		return;		/* VLAN tags and other encapsulations: whole */
	if (v6) {
		if (frame[l3 + 6] != IPPROTO_TCP_)
			return;	/* extension headers: not cut */
		l4 = l3 + IPV6_HLEN;
	} else {
		if ((frame[l3] >> 4) != 4 || frame[l3 + 9] != IPPROTO_TCP_)
			return;
		l4 = l3 + (uint32_t)(frame[l3] & 0x0f) * 4;
	}
	if (l4 + TCP_MIN_HLEN > len)
		return;
	hdr = l4 + (uint32_t)(frame[l4 + 12] >> 4) * 4;
	if (hdr < l4 + TCP_MIN_HLEN || hdr >= len)
		return;
	payload = len - hdr;
	if (payload <= vh->gso_size)
		return;		/* "too small packets are not really GSO ones" */
	lay->segs = (payload + vh->gso_size - 1) / vh->gso_size;
	lay->hdr_len = hdr;
	lay->mss = vh->gso_size;
	lay->l3_off = (uint16_t)l3;
	lay->l4_off = (uint16_t)l4;
	lay->ipv6 = v6;
}

/* Pseudo-header sum (not inverted) for a TCP segment of tcp_len bytes. */
static uint16_t pseudo_sum(const struct gso_layout *lay, const uint8_t *f,
			   uint32_t tcp_len)
{
	uint32_t sum;

	if (lay->ipv6)
		sum = gso_csum_add(0, f + lay->l3_off + 8, 32);
	else
		sum = gso_csum_add(0, f + lay->l3_off + 12, 8);
	sum += IPPROTO_TCP_;
	sum += tcp_len >> 16;
	sum += tcp_len & 0xffff;
	return gso_csum_fold(sum);
}

uint32_t gso_cut(const struct gso_layout *lay, const uint8_t *frame,
		 uint32_t first, uint32_t n, uint8_t *out,
		 struct gso_vnet_hdr *vh_out)
{
	uint32_t len = gso_run_len(lay, first, n), l3 = lay->l3_off;
	uint32_t l4 = lay->l4_off, off = first * lay->mss;
	uint8_t *tcp = out + l4;
	uint8_t flags;

	if (lay->segs == 1 || (first == 0 && n == lay->segs)) {
		memcpy(out, frame, lay->len);
		*vh_out = lay->vh;
		return lay->len;
	}
	memcpy(out, frame, lay->hdr_len);
	memcpy(out + lay->hdr_len, frame + lay->hdr_len + off,
	       len - lay->hdr_len);

	if (lay->ipv6) {
		put16(out + l3 + 4, (uint16_t)(len - l3 - IPV6_HLEN));
	} else {
		uint8_t *ip = out + l3;
		uint32_t ihl = l4 - l3;

		put16(ip + 2, (uint16_t)(len - l3));
		put16(ip + 4, (uint16_t)(get16(ip + 4) + first));
		put16(ip + 10, 0);
		put16(ip + 10, (uint16_t)~gso_csum_fold(gso_csum_add(0, ip, ihl)));
	}
	put32(tcp + 4, get32(tcp + 4) + off);
	flags = tcp[13];
	if (first + n < lay->segs)
		flags &= (uint8_t)~(TCP_FLAG_FIN | TCP_FLAG_PSH);
	if (first)
		flags &= (uint8_t)~TCP_FLAG_CWR;
	tcp[13] = flags;
	put16(tcp + TCP_CSUM_OFF, pseudo_sum(lay, out, len - l4));

	memset(vh_out, 0, sizeof(*vh_out));
	vh_out->flags = GSO_F_NEEDS_CSUM;
	vh_out->csum_start = (uint16_t)l4;
	vh_out->csum_offset = TCP_CSUM_OFF;
	vh_out->hdr_len = (uint16_t)lay->hdr_len;
	if (n > 1) {
		vh_out->gso_type = lay->vh.gso_type;
		vh_out->gso_size = (uint16_t)lay->mss;
	}
	return len;
}
