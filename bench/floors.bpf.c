// SPDX-License-Identifier: GPL-2.0
/*
 * Floors for the micro-benchmark (bench/micro.c): the least any fragment
 * reassembler must do, with no table, no checks and no accounting.  xfrag's
 * cost is reported as a ratio to these.
 *
 *   floor_drop     XDP_DROP and nothing else
 *   floor_pass     XDP_PASS and nothing else (end-to-end reference)
 *   floor_copyin   copy the fragment's payload into a per-CPU buffer at its
 *                  offset, drop the frame
 *   floor_inplace  copy-in; on the last fragment (MF clear) grow the frame
 *                  to the whole datagram and write the payload back
 *   floor_copyout  (TC) grow the skb to the datagram and write a buffered
 *                  payload of that size into it, in fragment-sized pieces
 *   floor_keyed    copy-in, after what any keyed hash table must do: the
 *                  fragment's key, its SipHash under a secret (xfrag's own
 *                  function), one bucket of 8 ways read and compared
 *
 * Frames are Ethernet + IPv4, or Ethernet + IPv6 + Fragment header, with no
 * VLAN and no options: the harness builds them so.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "siphash.h"

char LICENSE[] SEC("license") = "GPL";

#define ETH_P_IP	0x0800
#define ETH_P_IPV6	0x86DD
#define BUF	65536
#define PIECE	1480

/* Set by the harness: the datagram being rebuilt (payload bytes). */
const volatile __u32 dgram_len = 0;

struct buf {
	__u8 b[2 * BUF];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct buf);
} bufs SEC(".maps");

SEC("xdp")
int floor_drop(struct xdp_md *ctx)
{
	return XDP_DROP;
}

/* Attached by the end-to-end benchmark: what XDP on the device costs. */
SEC("xdp")
int floor_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

/* Payload offset in the frame, offset in the datagram, length, MF. */
static __always_inline int frag_of(struct xdp_md *ctx, __u32 *poff,
				   __u32 *off, __u32 *len, int *mf)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u16 fo;

	if ((void *)(eth + 1) > data_end)
		return -1;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end)
			return -1;
		fo = bpf_ntohs(ip->frag_off);
		*poff = 14 + 20;
		*off = (fo & 0x1fff) * 8;
		*len = bpf_ntohs(ip->tot_len) - 20;
		*mf = !!(fo & 0x2000);
		return 0;
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		struct frag_hdr *fh = (void *)(ip6 + 1);

		if ((void *)(fh + 1) > data_end)
			return -1;
		fo = bpf_ntohs(fh->frag_off);
		*poff = 14 + 40 + 8;
		*off = fo & 0xfff8;
		*len = bpf_ntohs(ip6->payload_len) - 8;
		*mf = fo & 1;
		return 0;
	}
	return -1;
}

static __always_inline struct buf *cpu_buf(void)
{
	__u32 cpu = bpf_get_smp_processor_id() & 63;

	return bpf_map_lookup_elem(&bufs, &cpu);
}

static __always_inline int copy_in(struct xdp_md *ctx, __u32 *poff, int *mf)
{
	__u32 off, len;
	struct buf *b = cpu_buf();

	if (!b || frag_of(ctx, poff, &off, &len, mf))
		return -1;
	len &= 0x3fff;
	if (!len || bpf_xdp_load_bytes(ctx, *poff, b->b + (off & 0xffff), len))
		return -1;
	return 0;
}

SEC("xdp")
int floor_copyin(struct xdp_md *ctx)
{
	__u32 poff;
	int mf;

	copy_in(ctx, &poff, &mf);
	return XDP_DROP;
}

/*
 * The keyed floor: what any reassembler with a keyed hash table does per
 * fragment before its own rules, on top of the copy-in.  The fragment's
 * key (addresses, id, protocol, family, as xfrag's), its SipHash-1-3
 * under a secret (bpf/siphash.h, xfrag's own), a bucket of 8 ways picked
 * by multiply-shift and every way's key compared (the table is only
 * read), then the copy-in.
 */
#define KF_BUCKETS	256
#define KF_WAYS		8

const volatile __u64 kf_secret[2] = { 0x0706050403020100ULL,
				      0x0f0e0d0c0b0a0908ULL };

struct kf_table {
	struct xfrag_key way[KF_BUCKETS * KF_WAYS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct kf_table);
} kf_tables SEC(".maps");

static __always_inline int key_of(struct xdp_md *ctx, struct xfrag_key *k)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return -1;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end)
			return -1;
		k->saddr[0] = ip->saddr;
		k->daddr[0] = ip->daddr;
		k->id = ip->id;
		k->proto = ip->protocol;
		k->family = 4;
		return 0;
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		struct frag_hdr *fh = (void *)(ip6 + 1);

		if ((void *)(fh + 1) > data_end)
			return -1;
		__builtin_memcpy(k->saddr, &ip6->saddr, 16);
		__builtin_memcpy(k->daddr, &ip6->daddr, 16);
		k->id = fh->identification;
		k->proto = fh->nexthdr;
		k->family = 6;
		return 0;
	}
	return -1;
}

SEC("xdp")
int floor_keyed(struct xdp_md *ctx)
{
	__u32 cpu = bpf_get_smp_processor_id() & 63, b;
	struct xfrag_key k = {};
	struct kf_table *t;
	__u32 poff;
	int mf, hit = 0;

	t = bpf_map_lookup_elem(&kf_tables, &cpu);
	if (!t || key_of(ctx, &k))
		return XDP_DROP;
	b = (__u32)(((xfrag_hash(&k, kf_secret[0], kf_secret[1]) &
		      0xffffffff) * KF_BUCKETS) >> 32) * KF_WAYS;
	if (b > (KF_BUCKETS - 1) * KF_WAYS)
		return XDP_DROP;
#pragma unroll
	for (int w = 0; w < KF_WAYS; w++)
		hit |= xfrag_key_eq(&k, &t->way[b + w]);
	copy_in(ctx, &poff, &mf);
	return hit ? XDP_PASS : XDP_DROP;
}

SEC("xdp")
int floor_inplace(struct xdp_md *ctx)
{
	__u32 poff, total = dgram_len & 0xffff, cur;
	struct buf *b;
	int mf;

	if (copy_in(ctx, &poff, &mf) || mf)
		return XDP_DROP;
	b = cpu_buf();
	if (!b)
		return XDP_DROP;
	cur = bpf_xdp_get_buff_len(ctx);
	if (bpf_xdp_adjust_tail(ctx, (int)(poff + total) - (int)cur))
		return XDP_DROP;
	for (__u32 i = 0; i < 8; i++) {
		__u32 o = i * PIECE, n;

		if (o >= total)
			break;
		n = total - o > PIECE ? PIECE : total - o;
		if (bpf_xdp_store_bytes(ctx, poff + o, b->b + o, n))
			return XDP_DROP;
	}
	return XDP_PASS;
}

SEC("tc")
int floor_copyout(struct __sk_buff *skb)
{
	__u32 total = dgram_len & 0xffff, l3 = 14, hl;
	struct buf *b = cpu_buf();

	if (!b)
		return 2;
	hl = skb->protocol == bpf_htons(ETH_P_IPV6) ? 40 : 20;
	if (bpf_skb_change_tail(skb, l3 + hl + total, 0))
		return 2;
	for (__u32 i = 0; i < 64; i++) {
		__u32 o = i * PIECE, n;

		if (o >= total)
			break;
		n = total - o > PIECE ? PIECE : total - o;
		if (bpf_skb_store_bytes(skb, l3 + hl + o, b->b + o, n, 0))
			return 2;
	}
	return 0;
}
