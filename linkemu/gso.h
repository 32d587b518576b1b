/*
 * gso.h - software segmentation of TCP super-frames (pure, no syscalls).
 *
 * Role: linkemu's fast path receives TSO/GSO super-frames whole (AF_PACKET
 * with PACKET_VNET_HDR) and forwards them whole, but every decision of the
 * emulated link -- seeded loss, drop-tail, rate, the DOCSIS MAC -- is taken
 * per MTU segment.  Where such a decision falls inside a super-frame, the
 * frame must be cut: this module describes a frame as a run of segments
 * (gso_parse) and builds the frame that carries any sub-run of them
 * (gso_cut), as the kernel's tcp_gso_segment() would.
 *
 * A cut frame gets, for segments [first, first + n) of the original:
 *  - the original Ethernet and IP/TCP headers, with IPv4 total length, id
 *    (+first: Linux increments the id per segment) and header checksum, or
 *    the IPv6 payload length, rewritten;
 *  - TCP sequence number + first * mss; FIN and PSH only on the run that
 *    ends the frame, CWR only on the run that starts it (tcp_gso_segment);
 *  - the TCP checksum field set to the pseudo-header sum for the cut's
 *    length, with VIRTIO_NET_HDR_F_NEEDS_CSUM: the kernel (or a receiver
 *    that trusts CHECKSUM_PARTIAL on veth) completes it over the payload, so
 *    no payload byte is read here;
 *  - a virtio_net_hdr that is GSO (same gso_size) when n > 1, plain when 1.
 *
 * Frames that are not TCP super-frames (ARP, ACKs, UDP, anything without
 * GSO, IP options we do not parse) are one segment and are never cut.
 */
#ifndef LINKEMU_GSO_H
#define LINKEMU_GSO_H

#include <stdbool.h>
#include <stdint.h>

/* struct virtio_net_hdr, host byte order (virtio legacy little endian). */
struct gso_vnet_hdr {
	uint8_t flags;
	uint8_t gso_type;
	uint16_t hdr_len;
	uint16_t gso_size;
	uint16_t csum_start;
	uint16_t csum_offset;
};

#define GSO_VNET_HDR_LEN	10
#define GSO_F_NEEDS_CSUM	1	/* VIRTIO_NET_HDR_F_NEEDS_CSUM */
#define GSO_F_DATA_VALID	2	/* VIRTIO_NET_HDR_F_DATA_VALID */
#define GSO_TYPE_NONE		0
#define GSO_TYPE_TCPV4		1
#define GSO_TYPE_TCPV6		4
#define GSO_TYPE_ECN		0x80

#define GSO_ETH_HLEN		14
/* The largest frame a GSO skb can be (64 KB of IP + Ethernet + one VLAN tag). */
#define GSO_MAX_FRAME		(65536 + GSO_ETH_HLEN + 4)

/* A frame seen as a run of MTU segments. */
struct gso_layout {
	uint32_t len;		/* the whole frame, bytes (Ethernet included) */
	uint32_t segs;		/* MTU segments it carries (1 = not a super-frame) */
	uint32_t hdr_len;	/* Ethernet + IP + TCP headers, repeated per segment */
	uint32_t mss;		/* payload bytes of each segment but the last */
	uint16_t l3_off;	/* offset of the IP header */
	uint16_t l4_off;	/* offset of the TCP header */
	bool ipv6;
	struct gso_vnet_hdr vh;	/* as received */
};

/* Raw virtio_net_hdr bytes <-> struct (no alignment assumptions). */
void gso_vnet_read(struct gso_vnet_hdr *vh, const uint8_t raw[GSO_VNET_HDR_LEN]);
void gso_vnet_write(uint8_t raw[GSO_VNET_HDR_LEN], const struct gso_vnet_hdr *vh);

/*
 * Describe frame[0..len) that arrived with vnet header vh.  Always succeeds:
 * anything that is not a TCP/IPv4 or TCP/IPv6 super-frame of more than one
 * segment comes out with segs = 1.
 */
void gso_parse(struct gso_layout *lay, const struct gso_vnet_hdr *vh,
	       const uint8_t *frame, uint32_t len);

/* Frame bytes of segment i (0-based) as it would be on the wire. */
static inline uint32_t gso_seg_len(const struct gso_layout *lay, uint32_t i)
{
	uint32_t payload = lay->len - lay->hdr_len, off = i * lay->mss;
	uint32_t rest = payload - off;

	if (lay->segs == 1)
		return lay->len;
	return lay->hdr_len + (rest < lay->mss ? rest : lay->mss);
}

/* Frame bytes of segments [first, first + n) carried in one frame. */
static inline uint32_t gso_run_len(const struct gso_layout *lay,
				   uint32_t first, uint32_t n)
{
	uint32_t payload = lay->len - lay->hdr_len;
	uint32_t start = first * lay->mss, end = (first + n) * lay->mss;

	if (lay->segs == 1)
		return lay->len;
	if (end > payload)
		end = payload;
	return lay->hdr_len + (end - start);
}

/* Sum of the segments' frame bytes: what the wire would carry. */
static inline uint64_t gso_wire_bytes(const struct gso_layout *lay,
				      uint32_t first, uint32_t n)
{
	return (uint64_t)gso_run_len(lay, first, n) +
	       (uint64_t)(n - 1) * lay->hdr_len;
}

/*
 * Build the frame carrying segments [first, first + n) of `frame` into out
 * (room for gso_run_len() bytes) and its vnet header into *vh_out.  Returns
 * the frame's length.  n == segs (the whole frame) copies it unchanged.
 */
uint32_t gso_cut(const struct gso_layout *lay, const uint8_t *frame,
		 uint32_t first, uint32_t n, uint8_t *out,
		 struct gso_vnet_hdr *vh_out);

/* Internet checksum helpers (exposed for the tests). */
uint32_t gso_csum_add(uint32_t sum, const uint8_t *p, uint32_t len);
uint16_t gso_csum_fold(uint32_t sum);

#endif /* LINKEMU_GSO_H */
