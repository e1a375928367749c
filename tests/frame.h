/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The frame builder of every program that builds frames (test_prog,
 * fuzz_prog, diffgen, fragsend, bench/gen), written once: big-endian
 * stores and loads, the ones' complement sum of RFC 1071 and its fold,
 * and the headers: Ethernet with VLAN tags, IPv4, IPv6 and its Fragment
 * header, UDP and the pseudo-header sum.  What goes in the payload and
 * how a datagram is cut stays with each program (its own purpose).
 */
#ifndef XFRAG_TEST_FRAME_H
#define XFRAG_TEST_FRAME_H

#include <stddef.h>
#include <stdint.h>

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static inline void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

/* s plus the big-endian 16-bit words of p[0, n), an odd tail padded. */
static inline uint64_t sum16(const void *p, size_t n, uint64_t s)
{
	const uint8_t *b = p;

	for (; n > 1; n -= 2, b += 2)
		s += (uint32_t)b[0] << 8 | b[1];
	return n ? s + ((uint32_t)b[0] << 8) : s;
}

/* The same with the sum first (the pseudo-header's order of work). */
static inline uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
	return (uint32_t)sum16(p, len, sum);
}

/* A sum folded to 16 bits, not complemented. */
static inline uint16_t fold16(uint64_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* A sum folded and complemented: the checksum field's value. */
static inline uint16_t csum_fold(uint64_t sum)
{
	return (uint16_t)~fold16(sum);
}

/* The checksum of p[0, n). */
static inline uint16_t csum(const uint8_t *p, size_t n)
{
	return csum_fold(sum16(p, n, 0));
}

/* ---- Headers: the one builder every frame generator uses ---------------- */

#define FR_ETH_HLEN	14
#define FR_P_IP		0x0800
#define FR_P_IPV6	0x86dd
#define FR_P_8021Q	0x8100
#define FR_IP4_DF	0x4000	/* RFC 791: flags and fragment offset word */
#define FR_IP4_MF	0x2000
#define FR_PROTO_FRAG6	44	/* RFC 8200 4.5: the Fragment header */

/* One VLAN tag: its TPID (0x8100, 0x88a8) and TCI. */
struct fr_vlan {
	uint16_t tpid, tci;
};

/*
 * Ethernet: dst, src, n VLAN tags, then the EtherType: the header's
 * length (14 + 4 n).
 */
static inline size_t fr_eth(uint8_t *p, const uint8_t *dst,
			    const uint8_t *src, const struct fr_vlan *vlan,
			    int n, uint16_t type)
{
	size_t off = 12;

	for (int i = 0; i < 6; i++) {
		p[i] = dst[i];
		p[6 + i] = src[i];
	}
	for (int i = 0; i < n; i++, off += 4) {
		put16(p + off, vlan[i].tpid);
		put16(p + off + 2, vlan[i].tci);
	}
	put16(p + off, type);
	return off + 2;
}

/* An IPv4 header's checksum, over its IHL (RFC 791, RFC 1071). */
static inline void fr_ip4_csum(uint8_t *ip)
{
	size_t hl = (size_t)(ip[0] & 0xf) * 4;

	ip[10] = ip[11] = 0;
	put16(ip + 10, csum(ip, hl));
}

/*
 * An IPv4 header of hl bytes (20 to 60; the option bytes past 20 are the
 * caller's, written before: the checksum covers them), TOS 0, `frag` the
 * flags and fragment offset word (FR_IP4_DF | FR_IP4_MF | offset / 8),
 * checksummed.
 */
static inline void fr_ip4(uint8_t *ip, size_t hl, uint16_t tot_len,
			  uint16_t id, uint16_t frag, uint8_t ttl,
			  uint8_t proto, const uint8_t *src, const uint8_t *dst)
{
	ip[0] = 0x40 | (uint8_t)(hl / 4);
	ip[1] = 0;
	put16(ip + 2, tot_len);
	put16(ip + 4, id);
	put16(ip + 6, frag);
	ip[8] = ttl;
	ip[9] = proto;
	for (int i = 0; i < 4; i++) {
		ip[12 + i] = src[i];
		ip[16 + i] = dst[i];
	}
	fr_ip4_csum(ip);
}

/*
 * The fixed IPv6 header (RFC 8200 3): flow is the traffic class and flow
 * label (tc << 20 | label), plen the bytes after this header.
 */
static inline void fr_ip6(uint8_t *ip, uint32_t flow, uint16_t plen,
			  uint8_t next, uint8_t hop_limit, const uint8_t *src,
			  const uint8_t *dst)
{
	put32(ip, 0x60000000 | (flow & 0x0fffffff));
	put16(ip + 4, plen);
	ip[6] = next;
	ip[7] = hop_limit;
	for (int i = 0; i < 16; i++) {
		ip[8 + i] = src[i];
		ip[24 + i] = dst[i];
	}
}

/* The IPv6 Fragment header (RFC 8200 4.5): offset in bytes (a multiple
 * of 8), the M flag, the identification. */
static inline void fr_frag6(uint8_t *p, uint8_t next, uint32_t off, int mf,
			    uint32_t id)
{
	p[0] = next;
	p[1] = 0;
	put16(p + 2, (uint16_t)((off & ~7u) | (mf ? 1 : 0)));
	put32(p + 4, id);
}

/*
 * The pseudo-header's sum for an upper-layer checksum (RFC 768, RFC 8200
 * 8.1): the addresses (4 or 16 bytes each), the protocol, the length.
 */
static inline uint64_t fr_pseudo(int v6, const uint8_t *src,
				 const uint8_t *dst, uint8_t proto,
				 uint32_t len)
{
	size_t a = v6 ? 16 : 4;

	return sum16(dst, a, sum16(src, a, 0)) + proto + (len >> 16) +
	       (len & 0xffff);
}

/* A UDP checksum field from its full sum: 0 is sent as 0xffff (RFC 768). */
static inline uint16_t fr_udp_csum(uint64_t sum)
{
	uint16_t c = csum_fold(sum);

	return c ? c : 0xffff;
}

/* A UDP header, its checksum 0 (fill it with fr_udp_csum()). */
static inline void fr_udp(uint8_t *u, uint16_t sport, uint16_t dport,
			  uint16_t len)
{
	put16(u, sport);
	put16(u + 2, dport);
	put16(u + 4, len);
	put16(u + 6, 0);
}

#endif /* XFRAG_TEST_FRAME_H */
