/* SPDX-License-Identifier: GPL-2.0 */
/* Parsing: Ethernet, up to two VLAN tags, the IPv4 header of a fragment. */
#ifndef XFRAG_PARSE_H
#define XFRAG_PARSE_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xfrag.h"
#include "maps.h"

#define ETH_P_IP	0x0800
#define ETH_P_IPV6	0x86DD
#define ETH_P_8021Q	0x8100
#define ETH_P_8021AD	0x88A8
#define ETH_HLEN	14
#define XFRAG_MAX_VLAN	2

#define IPPROTO_UDP_	17

/*
 * The IPv4 flags/fragment-offset word (RFC 791 3.1):
 *
 *    0   1   2   3 ...                        15
 *  +---+---+---+-------------------------------+
 *  | R |DF |MF |  fragment offset (8-byte units)|
 *  +---+---+---+-------------------------------+
 */
#define IP4_RF		0x8000
#define IP4_DF		0x4000
#define IP4_MF		0x2000
#define IP4_OFFMASK	0x1fff

/* What the data path knows about one fragment. */
struct xfrag_pkt {
	struct xfrag_key key;
	__u32 l3off;		/* IP header offset in the frame */
	__u32 hlen;		/* IP header length */
	__u32 poff;		/* payload offset in the frame */
	__u32 len;		/* payload length, kernel-trimmed */
	__u32 offset;		/* payload offset in the datagram */
	__u32 hint;		/* datagram IP length announced early, or 0 */
	__u8 more;		/* MF set */
	__u8 df;
	__u8 nh_pos;		/* IPv6: next-header byte to patch, from l3off */
	__u8 nexthdr;		/* IPv6: the Fragment header's next header */
};

enum xfrag_parse {
	XFRAG_P_NOT_FRAG = 0,	/* not ours: XDP_PASS at once */
	XFRAG_P_FRAG,		/* a fragment, header valid */
	XFRAG_P_BAD,		/* a fragment with an invalid header */
	XFRAG_P_ATOMIC,		/* IPv6 atomic fragment (RFC 6946) */
	XFRAG_P_BAD_CHAIN,	/* IPv6 first fragment, header chain cut */
	XFRAG_P_BIG_HDR,	/* IPv6 unfragmentable part beyond XFRAG_HDR_MAX */
};

#define NEXTHDR_FRAGMENT	44
#define NEXTHDR_AUTH		51
#define XFRAG_MAX_EXT		8	/* extension headers walked at most */
#define XFRAG_MAX_EXT_OFF	512	/* and no further into the frame */

/* Extension headers whose length xfrag knows how to read (RFC 8200 4). */
static __always_inline int xfrag_ip6_ext(__u8 nh)
{
	return nh == 0 || nh == 43 || nh == 60 || nh == NEXTHDR_AUTH ||
	       nh == 135 || nh == 139 || nh == 140 || nh == 253 || nh == 254;
}

/*
 * Walk an IPv6 header chain from the next-header value nh at offset off.
 * Stops at the Fragment header (when stop_at_frag), at the first header
 * that is not a known extension, or after XFRAG_MAX_EXT headers.  Returns
 * the offset reached and sets *nh_out (the header found there) and *pos
 * (offset of the next-header byte naming it); 0 when the chain leaves the
 * frame.
 */
static __always_inline __u64 xfrag_ip6_walk(void *data, void *data_end,
					    __u64 off, __u8 nh, __u64 pos,
					    int stop_at_frag, __u8 *nh_out,
					    __u64 *pos_out)
{
	for (int i = 0; i < XFRAG_MAX_EXT; i++) {
		__u8 *h;

		if ((stop_at_frag && nh == NEXTHDR_FRAGMENT) ||
		    !xfrag_ip6_ext(nh))
			break;
		if (off > XFRAG_MAX_EXT_OFF)
			return 0;
		h = data + off;
		if ((void *)(h + 2) > data_end)
			return 0;
		pos = off;
		off += nh == NEXTHDR_AUTH ? ((__u64)h[1] + 2) * 4 :
					    ((__u64)h[1] + 1) * 8;
		nh = h[0];
	}
	*nh_out = nh;
	*pos_out = pos;
	return off;
}

/*
 * Is this IPv6 first fragment (payload at off, next header nh, packet end
 * at end) cut short of its upper-layer header?  RFC 8200 4.5 says it
 * should be dropped; Linux decides it in ipv6frag_thdr_truncated(), and
 * xfrag decides it the same way so that it never drops a fragment the
 * kernel would queue, nor queues one it would drop:
 * - the walk skips only Hop-by-Hop, Routing, Fragment (with offset 0),
 *   AH and Destination Options, as ipv6_skip_exthdr() does; any other
 *   value is the upper layer, which must fit: TCP 20, UDP 8, ICMPv6 8,
 *   anything else 1 byte;
 * - a chain the walk cannot follow (No Next Header, an extension header
 *   whose first two bytes are missing, a Fragment header with a nonzero
 *   offset) is not "cut" for Linux: that fragment is queued like any
 *   other (and a zero-length one then discards its datagram).
 * Where xfrag's own bounds end the walk first (XFRAG_MAX_EXT headers,
 * XFRAG_MAX_EXT_OFF bytes, the first buffer of a multi-buffer frame), the
 * fragment is taken as cut: dropped and counted (frag_bad_chain).
 * Returns 1 when cut; else 0, with *up the upper-layer offset (0 when the
 * walk stopped early) and *nh_out its protocol.
 */
static __always_inline int xfrag_ip6_first_cut(void *data, void *data_end,
					       __u64 off, __u8 nh, __u64 end,
					       __u64 *up, __u8 *nh_out)
{
	for (int i = 0; i < XFRAG_MAX_EXT; i++) {
		__u8 *h;

		if (nh == 59)
			return 0;	/* No Next Header: skip_exthdr fails */
		if (nh != 0 && nh != 43 && nh != NEXTHDR_FRAGMENT &&
		    nh != NEXTHDR_AUTH && nh != 60) {
			*up = off;
			*nh_out = nh;
			return off + (nh == 6 ? 20 : nh == 17 || nh == 58 ? 8
								      : 1) >
			       end;
		}
		if (off + (nh == NEXTHDR_FRAGMENT ? 4 : 2) > end)
			return 0;	/* header unreadable: not "cut" */
		if (off > XFRAG_MAX_EXT_OFF)
			return 1;
		h = data + off;
		if ((void *)(h + 2) > data_end)
			return 1;
		if (nh == NEXTHDR_FRAGMENT) {
			if ((void *)(h + 4) > data_end)
				return 1;
			if ((h[2] << 8 | h[3]) & 0xfff8)
				return 0;	/* a later fragment's header */
			off += 8;
		} else {
			off += nh == NEXTHDR_AUTH ? ((__u64)h[1] + 2) * 4 :
						    ((__u64)h[1] + 1) * 8;
		}
		nh = h[0];
	}
	return 1;
}

/* Offset of the Fragment header of the IPv6 packet at l3off, or 0. */
static __always_inline __u64 xfrag_ip6_frag_hdr(void *data, void *data_end,
						__u64 l3off, __u64 *pos)
{
	struct ipv6hdr *ip6 = data + l3off;
	__u64 off;
	__u8 nh;

	if ((void *)(ip6 + 1) > data_end)
		return 0;
	off = xfrag_ip6_walk(data, data_end, l3off + sizeof(*ip6),
			     ip6->nexthdr, l3off + 6, 1, &nh, pos);
	return off && nh == NEXTHDR_FRAGMENT ? off : 0;
}

static __always_inline void xfrag_ip6_key(const struct ipv6hdr *ip6,
					  const struct frag_hdr *fh, __u16 vlan,
					  struct xfrag_key *key)
{
	__builtin_memcpy(key->saddr, &ip6->saddr, 16);
	__builtin_memcpy(key->daddr, &ip6->daddr, 16);
	key->id = fh->identification;
	key->proto = 0;		/* RFC 8200: next header is not in the key */
	key->family = XFRAG_AF_INET6;
	key->vlan = vlan;
}

static __always_inline __u16 xfrag_csum_fold(__u64 sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/* IPv4 header checksum over ihl words of packet data (0 when valid). */
static __always_inline __u16 xfrag_ip_csum_pkt(const __u32 *p, __u32 ihl,
					       const void *end)
{
	__u64 sum = 0;

	for (int i = 0; i < 15; i++) {
		const __u32 *q = p + i;
		const void *qe = q + 1;

		if (i >= ihl)
			break;
		/* keep clang from folding the bound into pkt_end - 4 */
		asm volatile("" : "+r"(qe));
		if (qe > end)
			return 0xffff;
		sum += *q;
	}
	return xfrag_csum_fold(sum);
}

/* The same over a header held in map memory (at least 60 bytes). */
static __always_inline __u16 xfrag_ip_csum_buf(const __u8 *buf, __u32 ihl)
{
	const __u32 *p = (const __u32 *)buf;
	__u64 sum = 0;

	for (__u32 i = 0; i < 15; i++) {
		if (i >= ihl)
			break;
		sum += p[i];
	}
	return xfrag_csum_fold(sum);
}

/*
 * Walk Ethernet and up to two 802.1Q/802.1ad tags.  Returns the EtherType
 * after the tags and sets *l3off and *vlan (outermost VLAN id, 0 if none),
 * or 0 when the frame is too short.
 */
static __always_inline __u16 xfrag_parse_l2(void *data, void *data_end,
					    __u32 *l3off, __u16 *vlan)
{
	struct ethhdr *eth = data;
	__u32 off = ETH_HLEN;
	__u16 proto;

	if ((void *)(eth + 1) > data_end)
		return 0;
	proto = bpf_ntohs(eth->h_proto);
	*vlan = 0;
#pragma unroll
	for (int i = 0; i < XFRAG_MAX_VLAN; i++) {
		struct vlan_hdr *vh = data + off;

		if (proto != ETH_P_8021Q && proto != ETH_P_8021AD)
			break;
		if ((void *)(vh + 1) > data_end)
			return 0;
		if (i == 0)
			*vlan = bpf_ntohs(vh->h_vlan_TCI) & 0x0fff;
		proto = bpf_ntohs(vh->h_vlan_encapsulated_proto);
		off += sizeof(*vh);
	}
	*l3off = off;
	return proto;
}

static __always_inline void xfrag_ip4_key(const struct iphdr *iph, __u16 vlan,
					  struct xfrag_key *key)
{
	key->saddr[0] = iph->saddr;
	key->daddr[0] = iph->daddr;
	key->id = iph->id;
	key->proto = iph->protocol;
	key->family = XFRAG_AF_INET;
	key->vlan = vlan;
}

/*
 * IPv4: anything that is not a fragment is left alone at the cost of one
 * header read.  A fragment gets the checks ip_rcv_core() would make
 * (RFC 791, RFC 1122 3.2.1): version, ihl >= 5, header checksum, total
 * length within the frame.  Ethernet padding is ignored: the fragment is
 * sized by its IP total length, never by the frame.
 */
static __always_inline int xfrag_parse_ip4(struct xdp_md *ctx, void *data,
					   void *data_end, __u32 l3off,
					   __u16 vlan, struct xfrag_pkt *p)
{
	struct iphdr *iph = data + l3off;
	__u32 ihl, tot, frame_len;
	__u16 fo;

	if ((void *)(iph + 1) > data_end)
		return XFRAG_P_NOT_FRAG;
	fo = bpf_ntohs(iph->frag_off);
	if (!(fo & (IP4_MF | IP4_OFFMASK)))
		return XFRAG_P_NOT_FRAG;

	/* A fragment: from here on it is counted and gets an outcome. */
	__builtin_memset(p, 0, sizeof(*p));
	xfrag_ip4_key(iph, vlan, &p->key);
	p->l3off = l3off;

	ihl = iph->ihl;
	if (iph->version != 4 || ihl < 5)
		return XFRAG_P_BAD;
	p->hlen = ihl * 4;
	if (data + l3off + p->hlen > data_end)
		return XFRAG_P_BAD;
	if (xfrag_ip_csum_pkt((const __u32 *)iph, ihl, data_end) != 0)
		return XFRAG_P_BAD;
	tot = bpf_ntohs(iph->tot_len);
	frame_len = bpf_xdp_get_buff_len(ctx);
	if (tot < p->hlen || l3off + tot > frame_len)
		return XFRAG_P_BAD;

	p->poff = l3off + p->hlen;
	p->len = tot - p->hlen;
	p->offset = (__u32)(fo & IP4_OFFMASK) << 3;
	p->more = !!(fo & IP4_MF);
	p->df = !!(fo & IP4_DF);
	p->hint = 0;
	/*
	 * The UDP length in a first fragment announces the datagram's size
	 * before anything is stored; it lets a datagram too big to deliver go
	 * to the kernel untouched.
	 */
	if (p->offset == 0 && iph->protocol == IPPROTO_UDP_ && p->len >= 8) {
		/* At most 22 + 60: the mask changes nothing, but keeps the
		 * offset bounded for the verifier whatever clang makes of
		 * it (seen unbounded in the cpumap entry point's copy). */
		__u32 uoff = p->poff;
		struct udphdr *uh;

		asm volatile("%0 &= 255" : "+r"(uoff));
		uh = data + uoff;
		if ((void *)(uh + 1) <= data_end)
			p->hint = p->hlen + bpf_ntohs(uh->len);
	}
	return XFRAG_P_FRAG;
}

/*
 * IPv6: find the Fragment header past any extension headers (RFC 8200 4.5).
 * The unfragmentable part (IPv6 header and the extension headers before
 * the Fragment header) is p->hlen bytes; every fragment carries it.
 *
 * Global: the chain walks are verified once, not per caller path.  It
 * parses L2 again itself instead of taking the IPv6 offset as an argument:
 * an argument is unbounded in a global function, and clang spills it
 * before the bound check, a check the 6.1 verifier does not carry over to
 * the spilled copy (newer kernels link the two).
 */
__noinline int xfrag_parse_ip6(struct xdp_md *ctx, struct xfrag_pkt *p)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ipv6hdr *ip6;
	struct frag_hdr *fh;
	__u64 fo, pos = 0, plen, end, up = 0;
	__u32 l3off = 0;
	int cut;
	__u16 fbits, vlan = 0;
	__u8 nh;

	if (!p || xfrag_parse_l2(data, data_end, &l3off, &vlan) != ETH_P_IPV6)
		return XFRAG_P_NOT_FRAG;
	ip6 = data + l3off;
	fo = xfrag_ip6_frag_hdr(data, data_end, l3off, &pos);
	if (!fo || fo > XFRAG_MAX_EXT_OFF + 64)
		return XFRAG_P_NOT_FRAG;
	fh = data + fo;
	if ((void *)(fh + 1) > data_end)
		return XFRAG_P_NOT_FRAG;

	__builtin_memset(p, 0, sizeof(*p));
	xfrag_ip6_key(ip6, fh, vlan, &p->key);
	p->l3off = l3off;
	if (ip6->version != 6)
		return XFRAG_P_BAD;
	plen = bpf_ntohs(ip6->payload_len);
	end = l3off + sizeof(*ip6) + plen;
	if (fo + sizeof(*fh) > end || end > bpf_xdp_get_buff_len(ctx))
		return XFRAG_P_BAD;	/* includes jumbograms (plen 0) */
	fbits = bpf_ntohs(fh->frag_off);
	p->hlen = fo - l3off;
	p->poff = fo + sizeof(*fh);
	p->len = end - p->poff;
	p->offset = fbits & 0xfff8;
	p->more = fbits & 1;
	p->nh_pos = pos - l3off;
	p->nexthdr = fh->nexthdr;
	/* RFC 6946: an atomic fragment is a whole packet; never queued. */
	if (!p->offset && !p->more)
		return XFRAG_P_ATOMIC;
	if (p->hlen > XFRAG_HDR_MAX)
		return XFRAG_P_BIG_HDR;
	if (p->offset)
		return XFRAG_P_FRAG;
	/*
	 * RFC 8200 4.5 / RFC 7112: the first fragment must hold the whole
	 * header chain through the upper-layer header.  Decided as Linux's
	 * ipv6frag_thdr_truncated() decides it (see xfrag_ip6_first_cut()).
	 */
	cut = xfrag_ip6_first_cut(data, data_end, p->poff, fh->nexthdr, end,
				  &up, &nh);
	if (cut)
		return XFRAG_P_BAD_CHAIN;
	if (up && nh == IPPROTO_UDP_ && up <= XFRAG_MAX_EXT_OFF + 64) {
		struct udphdr *uh = data + up;

		if ((void *)(uh + 1) <= data_end)
			p->hint = p->hlen + (up - p->poff) + bpf_ntohs(uh->len);
	}
	return XFRAG_P_FRAG;
}

#endif /* XFRAG_PARSE_H */
