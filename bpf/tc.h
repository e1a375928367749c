/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The TC-ingress half: rebuild datagrams the XDP frame had no room for,
 * and replay as valid fragments those beyond one skb or handed over.
 */
#ifndef XFRAG_TC_H
#define XFRAG_TC_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xfrag.h"
#include "maps.h"
#include "parse.h"
#include "table.h"
#include "deliver.h"

#define TC_ACT_OK	0
#define TC_ACT_SHOT	2

/* ---- TC ingress: finish datagrams the XDP frame had no room for ------------ */

struct xfrag_find_ctx {
	struct xfrag_key key;
	__u32 base;
	int found;
};

static long xfrag_find_one(__u32 i, void *data)
{
	struct xfrag_find_ctx *fc = data;
	__u32 idx = fc->base + i;
	struct xfrag_way *x = bpf_map_lookup_elem(&xfrag_table, &idx);

	if (!x)
		return 1;
	if ((x->state == XFRAG_WAY_HANDOFF || x->state == XFRAG_WAY_FLUSH) &&
	    xfrag_key_eq(&x->key, &fc->key)) {
		fc->found = i;
		return 1;
	}
	return 0;
}

/*
 * Where is the IP header of this skb?  At TC ingress data normally starts
 * at the MAC header, but after generic (skb-mode) XDP on 6.18 it starts at
 * the network header (mac_len is 0 there).  Candidate 0 is the Ethernet
 * view, candidate 1 offset 0; a candidate must be an IPv4 or IPv6 fragment
 * that fits the skb.  Fills key and *l3off; returns 0 when found.
 */
static __noinline int xfrag_tc_l3(struct __sk_buff *skb, int cand,
				  __u32 *l3off, struct xfrag_key *key)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ipv6hdr *ip6;
	struct frag_hdr *fh;
	struct iphdr *iph;
	__u16 vlan = 0, proto = 0;
	__u32 off = 0;
	__u64 fo, pos;

	if (cand == 0) {
		proto = xfrag_parse_l2(data, data_end, &off, &vlan);
	} else if (data + 1 <= data_end) {
		__u8 v = *(__u8 *)data >> 4;

		proto = v == 4 ? ETH_P_IP : v == 6 ? ETH_P_IPV6 : 0;
	}
	if (off > 64)
		return -1;
	if (!vlan && skb->vlan_present)
		vlan = skb->vlan_tci & 0x0fff;
	__builtin_memset(key, 0, sizeof(*key));
	*l3off = off;
	if (proto == ETH_P_IP) {
		iph = data + off;
		if ((void *)(iph + 1) > data_end || iph->version != 4 ||
		    iph->ihl < 5 ||
		    !(iph->frag_off & bpf_htons(IP4_MF | IP4_OFFMASK)) ||
		    off + bpf_ntohs(iph->tot_len) > skb->len)
			return -1;
		xfrag_ip4_key(iph, vlan, key);
		return 0;
	}
	if (proto != ETH_P_IPV6)
		return -1;
	ip6 = data + off;
	if ((void *)(ip6 + 1) > data_end || ip6->version != 6 ||
	    off + 40 + bpf_ntohs(ip6->payload_len) > skb->len)
		return -1;
	fo = xfrag_ip6_frag_hdr(data, data_end, off, &pos);
	if (!fo || fo > XFRAG_MAX_EXT_OFF + 64)
		return -1;
	fh = data + fo;
	if ((void *)(fh + 1) > data_end)
		return -1;
	xfrag_ip6_key(ip6, fh, vlan, key);
	return 0;
}

/*
 * Without usable metadata (generic XDP does not bring it to TC here), the
 * completing fragment itself names its datagram: look for a hand-off with
 * its key in this CPU's bucket.  Returns the way index or -1.
 */
static __always_inline long xfrag_tc_find(struct __sk_buff *skb, __u32 *l3off)
{
	struct xfrag_find_ctx fc;
	struct xfrag_pcpu *pc;
	__u32 zero = 0;

	pc = bpf_map_lookup_elem(&xfrag_pcpu, &zero);
	if (!pc)
		return -1;
	for (int cand = 0; cand < 2; cand++) {
		fc.found = -1;
		if (xfrag_tc_l3(skb, cand, l3off, &fc.key))
			continue;
		fc.base = xfrag_bucket_base(pc, &fc.key);
		bpf_loop(xfrag_ways, xfrag_find_one, &fc, 0);
		if (fc.found >= 0)
			return fc.base + fc.found;
	}
	return -1;
}

/*
 * TC is done with a hand-off.  The owning CPU frees it at once; on another
 * CPU (RPS) the chunks are not ours to touch, so the owner frees it when it
 * next visits the bucket.
 */
static __always_inline void xfrag_tc_done(struct xfrag_way *w, __u32 owner,
					  struct xfrag_stats *st)
{
	struct xfrag_pcpu *pc;
	__u32 zero = 0;

	if (bpf_get_smp_processor_id() == owner) {
		pc = bpf_map_lookup_elem(&xfrag_pcpu, &zero);
		if (pc) {
			xfrag_way_release(w, pc, st);
			return;
		}
	}
	w->state = XFRAG_WAY_COLLECTED;
}

/* Tell XDP on this CPU that the TC half is there (XFRAG_TC_ALIVE_NS). */
static __always_inline void xfrag_tc_alive(void)
{
	struct xfrag_pcpu *pc;
	__u32 zero = 0;
	__u64 now;

	pc = bpf_map_lookup_elem(&xfrag_pcpu, &zero);
	if (!pc)
		return;
	now = bpf_ktime_get_coarse_ns();
	if (now - pc->tc_seen_ns > XFRAG_TC_ALIVE_NS / 4)
		pc->tc_seen_ns = now;
}

/*
 * Replay: a datagram beyond what one skb can grow to goes to the kernel as
 * the complete set of its fragments, one per stored piece, back to back:
 * each is written into this skb and a clone of it is sent to ingress.
 * Pieces start 8-aligned and all but the last are multiples of 8, so every
 * one is a valid fragment (RFC 791 3.2, RFC 8200 4.5); the kernel's
 * reassembler gets them together and never holds an incomplete datagram.
 */
struct xfrag_replay_ctx {
	struct __sk_buff *skb;
	struct xfrag_way *w;
	__u32 cpu, l3off, hl, n;
	__u32 gs, ge, max, fl;	/* coalesced: the fragment [gs, ge), its
				 * longest payload, its L3 header length */
	__u32 sent;		/* fragments sent to the kernel */
	int err;
};

/*
 * Turn the skb into one fragment of w's datagram: L3 header at l3off (with
 * the IPv6 Fragment header), payload [off, off + len) left to the caller.
 * 0, or -1 on a helper failure.
 */
static __always_inline int xfrag_replay_hdr(struct __sk_buff *skb,
					    struct xfrag_way *w, __u32 l3off,
					    __u32 hl, __u32 off, __u32 len,
					    int more)
{
	__u32 fl, fo = (off >> 3) & 0x1fff;
	__be16 v16, old16;

	/* w->hdr is the unfragmented datagram's header (xfrag_fix_hdr()):
	 * written as it is, then turned back into a fragment's. */
	fl = w->key.family == XFRAG_AF_INET6 ? hl + 8 : hl;
	if (bpf_skb_change_tail(skb, l3off + fl + len, 0) ||
	    bpf_skb_store_bytes(skb, l3off, w->hdr, hl, 0))
		return -1;
	if (w->key.family == XFRAG_AF_INET6) {
		struct frag_hdr fh = {};
		__u8 nh = NEXTHDR_FRAGMENT;
		__u32 at = w->nh_pos;

		if (at < 6 || at >= hl)
			return -1;
		fh.nexthdr = w->hdr[at & (XFRAG_HDR_MAX - 1)];
		fh.frag_off = bpf_htons((fo << 3) | (more ? 1 : 0));
		fh.identification = w->key.id;
		v16 = bpf_htons(hl - 40 + 8 + len);
		if (bpf_skb_store_bytes(skb, l3off + at, &nh, 1, 0) ||
		    bpf_skb_store_bytes(skb, l3off + 4, &v16, 2, 0) ||
		    bpf_skb_store_bytes(skb, l3off + hl, &fh, sizeof(fh), 0))
			return -1;
	} else {
		struct iphdr *iph = (struct iphdr *)w->hdr;

		old16 = iph->tot_len;
		v16 = bpf_htons(hl + len);
		if (bpf_skb_store_bytes(skb, l3off + 2, &v16, 2, 0) ||
		    bpf_l3_csum_replace(skb, l3off + 10, old16, v16, 2))
			return -1;
		old16 = iph->frag_off;
		v16 = bpf_htons(fo | (more ? IP4_MF : 0) |
				((w->flags & XFRAG_F_DF) ? IP4_DF : 0));
		if (bpf_skb_store_bytes(skb, l3off + 6, &v16, 2, 0) ||
		    bpf_l3_csum_replace(skb, l3off + 10, old16, v16, 2))
			return -1;
	}
	return 0;
}

/* The fragment in the skb goes to the kernel: a clone, sent to ingress. */
static __always_inline int xfrag_replay_send(struct __sk_buff *skb)
{
	bpf_csum_level(skb, BPF_CSUM_LEVEL_RESET);
	return bpf_clone_redirect(skb, skb->ifindex, BPF_F_INGRESS) ? -1 : 0;
}

/* One stored piece as one fragment (a flushed datagram, which may have
 * gaps). */
static long xfrag_replay_one(__u32 i, void *data)
{
	struct xfrag_replay_ctx *rc = data;
	struct __sk_buff *skb = rc->skb;
	struct xfrag_way *w = rc->w;
	__u32 hl = rc->hl, l3off = rc->l3off, len, off, fl;
	struct xfrag_chunk *c;
	struct xfrag_desc d;
	int more;

	if (i >= XFRAG_MAX_DESC || i >= rc->n)
		return 1;
	d = w->desc[i];
	c = bpf_map_lookup_percpu_elem(&xfrag_chunks, &d.chunk, rc->cpu);
	len = xfrag_desc_len(&d);
	if (!c || len > XFRAG_CHUNK || hl < 20 || hl > XFRAG_HDR_MAX ||
	    l3off > 64)
		goto fail;
	off = (__u32)d.off8 * 8;
	/* MF on all but the piece that ends the datagram (a flushed one
	 * may not have its end yet). */
	more = !(w->flags & XFRAG_F_LAST_SEEN) || off + len < w->end;
	fl = w->key.family == XFRAG_AF_INET6 ? hl + 8 : hl;
	if (xfrag_replay_hdr(skb, w, l3off, hl, off, len, more) ||
	    bpf_skb_store_bytes(skb, l3off + fl, c->data, len, 0) ||
	    xfrag_replay_send(skb))
		goto fail;
	rc->sent++;
	return 0;
fail:
	rc->err = 1;
	return 1;
}

/*
 * Coalesced replay of a complete datagram: fragment g covers [rc->gs, ge),
 * ge the furthest end of a stored piece within rc->max bytes of rc->gs.
 * The pieces of a complete datagram tile [0, end) (overlaps discard it,
 * exact duplicates are not stored), so each piece lies within one
 * fragment, every fragment but the last is a multiple of 8 long (pieces
 * start 8-aligned; rc->max is a multiple of 8), and the kernel queues
 * about end / rc->max fragments instead of one per piece.  The scans over
 * the pieces are loops of their own (bpf_loop), their results kept in rc:
 * a maximum carried in a register through an unrolled scan would fork
 * the verifier's states at every piece.
 */
static long xfrag_replay_find(__u32 i, void *data)
{
	struct xfrag_replay_ctx *rc = data;
	struct xfrag_desc d;
	__u32 off, e;

	if (i >= XFRAG_MAX_DESC || i >= rc->n)
		return 1;
	d = rc->w->desc[i];
	off = (__u32)d.off8 * 8;
	e = off + xfrag_desc_len(&d);
	if (off >= rc->gs && e <= rc->gs + rc->max && e > rc->ge)
		rc->ge = e;
	return 0;
}

static long xfrag_replay_copy(__u32 i, void *data)
{
	struct xfrag_replay_ctx *rc = data;
	struct xfrag_chunk *c;
	struct xfrag_desc d;
	__u32 off, len;

	if (i >= XFRAG_MAX_DESC || i >= rc->n)
		return 1;
	d = rc->w->desc[i];
	off = (__u32)d.off8 * 8;
	if (off < rc->gs || off >= rc->ge)
		return 0;
	c = bpf_map_lookup_percpu_elem(&xfrag_chunks, &d.chunk, rc->cpu);
	len = xfrag_desc_len(&d);
	if (!c || len > XFRAG_CHUNK ||
	    bpf_skb_store_bytes(rc->skb, rc->l3off + rc->fl + (off - rc->gs),
				c->data, len, 0)) {
		rc->err = 1;
		return 1;
	}
	return 0;
}

static long xfrag_replay_group(__u32 g, void *data)
{
	struct xfrag_replay_ctx *rc = data;
	struct xfrag_way *w = rc->w;
	__u32 hl = rc->hl, gs = rc->gs, end = w->end;

	if (gs >= end)
		return 1;
	if (hl < 20 || hl > XFRAG_HDR_MAX || rc->l3off > 64)
		goto fail;
	rc->ge = gs;
	bpf_loop(XFRAG_MAX_DESC, xfrag_replay_find, rc, 0);
	if (rc->ge <= gs || rc->ge > end)
		goto fail;
	rc->fl = w->key.family == XFRAG_AF_INET6 ? hl + 8 : hl;
	if (xfrag_replay_hdr(rc->skb, w, rc->l3off, hl, gs, rc->ge - gs,
			     rc->ge < end))
		goto fail;
	bpf_loop(XFRAG_MAX_DESC, xfrag_replay_copy, rc, 0);
	if (rc->err || xfrag_replay_send(rc->skb))
		goto fail;
	rc->sent++;
	rc->gs = rc->ge;
	return 0;
fail:
	rc->err = 1;
	return 1;
}

/*
 * TC is done with a flushed datagram (xfrag_flush()): on its owner CPU the
 * chunks come back now and the way is the datagram's pass-through record;
 * on another CPU (RPS) the owner does that when it next visits the bucket.
 */
static __always_inline void xfrag_tc_flushed(struct xfrag_way *w, __u32 owner,
					     struct xfrag_stats *st)
{
	struct xfrag_pcpu *pc;
	__u32 zero = 0;

	if (bpf_get_smp_processor_id() == owner) {
		pc = bpf_map_lookup_elem(&xfrag_pcpu, &zero);
		if (pc) {
			xfrag_way_flushed(w, pc, st);
			return;
		}
	}
	w->state = XFRAG_WAY_FLUSHED;
}

/*
 * A flushed datagram's fragment reached TC (the one that outgrew xfrag, or
 * a later one).  It goes on first, as a clone sent to ingress (unchanged:
 * it comes back here, finds a pass-through record, and passes); then this
 * skb carries the held pieces to the kernel one by one, as the replay of a
 * datagram beyond one skb does.  A clone that cannot be sent leaves the
 * skb itself to go on, and the held pieces are lost (flush_lost).
 */
static __noinline int xfrag_tc_flush(struct __sk_buff *skb,
				     struct xfrag_way *w, __u32 cpu,
				     __u32 l3off, struct xfrag_stats *st)
{
	struct xfrag_replay_ctx rc = {
		.skb = skb, .w = w, .cpu = cpu, .l3off = l3off,
	};

	if (!skb || !w || !st)
		return TC_ACT_OK;
	rc.hl = w->hdr_len;
	rc.n = w->ndesc;
	if (bpf_clone_redirect(skb, skb->ifindex, BPF_F_INGRESS)) {
		st->flush_lost++;
		xfrag_tc_flushed(w, cpu, st);
		return TC_ACT_OK;
	}
	bpf_loop(XFRAG_MAX_DESC, xfrag_replay_one, &rc, 0);
	st->replay_frags += rc.sent;
	if (rc.err)
		st->flush_lost++;
	xfrag_tc_flushed(w, cpu, st);
	return TC_ACT_SHOT;	/* its clone and the replayed pieces went on */
}

static __always_inline int xfrag_tc_run(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	struct xfrag_meta *mp = (void *)(long)skb->data_meta;
	struct xfrag_meta m;
	struct xfrag_stats *st;
	struct xfrag_way *w;
	__u32 l3off = 0, hl, n, newlen;

	xfrag_tc_alive();
	if ((void *)(mp + 1) <= data && mp->magic == XFRAG_META_MAGIC) {
		struct xfrag_key key;

		/* Read only: a direct write would make the verifier unclone
		 * every skb this program sees.  The cookie makes a hand-off
		 * collectable once. */
		m = *mp;
		w = bpf_map_lookup_percpu_elem(&xfrag_table, &m.way, m.cpu);
		if (!w || (w->state != XFRAG_WAY_HANDOFF &&
			   w->state != XFRAG_WAY_FLUSH) ||
		    w->cookie != m.cookie) {
			/* Expired before TC ran (counted as handoff_lost), or
			 * a replayed fragment, which shares the metadata of
			 * the skb it was cloned from: the kernel's. */
			return TC_ACT_OK;
		}
		if (xfrag_tc_l3(skb, 0, &l3off, &key) &&
		    xfrag_tc_l3(skb, 1, &l3off, &key))
			return TC_ACT_OK;	/* cannot happen */
	} else {
		long idx = xfrag_tc_find(skb, &l3off);

		if (idx < 0)
			return TC_ACT_OK;
		m.way = idx;
		m.cpu = bpf_get_smp_processor_id();
		w = bpf_map_lookup_elem(&xfrag_table, &m.way);
		if (!w)
			return TC_ACT_OK;
	}
	st = xfrag_st();
	if (!st)
		return TC_ACT_OK;
	hl = w->hdr_len;
	n = w->ndesc;
	if (w->state == XFRAG_WAY_FLUSH)
		return xfrag_tc_flush(skb, w, m.cpu, l3off, st);
	newlen = l3off + hl + w->end;
	if (hl < 20 || hl > XFRAG_HDR_MAX)
		goto fail;
	if (newlen > XFRAG_TC_MAX_LEN) {
		__u32 fl = w->key.family == XFRAG_AF_INET6 ? hl + 8 : hl;
		struct xfrag_replay_ctx rc = {
			.skb = skb, .w = w, .cpu = m.cpu, .l3off = l3off,
			.hl = hl, .n = n,
			.max = (XFRAG_TC_MAX_LEN - l3off - fl) & ~7U,
		};

		bpf_loop(XFRAG_MAX_DESC, xfrag_replay_group, &rc, 0);
		st->replay_frags += rc.sent;
		if (rc.err || rc.gs != w->end)
			goto fail;
		st->deliver_replay++;
		xfrag_tc_done(w, m.cpu, st);
		return TC_ACT_SHOT;	/* its clones carried it */
	}
	if (bpf_skb_change_tail(skb, newlen, 0))
		goto fail;
	if (bpf_skb_store_bytes(skb, l3off, w->hdr, hl, 0))
		goto fail;
	for (__u32 i = 0; i < XFRAG_MAX_DESC; i++) {
		struct xfrag_desc d;
		struct xfrag_chunk *c;
		__u32 len;

		if (i >= n)
			break;
		d = w->desc[i];
		c = bpf_map_lookup_percpu_elem(&xfrag_chunks, &d.chunk, m.cpu);
		len = xfrag_desc_len(&d);
		if (!c || len > XFRAG_CHUNK)
			goto fail;
		if (bpf_skb_store_bytes(skb, l3off + hl + (__u32)d.off8 * 8,
					c->data, len, 0))
			goto fail;
	}
	/* The device's checksum state described the fragment: have the stack
	 * verify the rebuilt datagram's L4 checksum itself. */
	bpf_csum_level(skb, BPF_CSUM_LEVEL_RESET);
	st->deliver_tc++;
	xfrag_tc_done(w, m.cpu, st);
	return TC_ACT_OK;
fail:
	st->deliver_err++;
	xfrag_tc_done(w, m.cpu, st);
	return TC_ACT_SHOT;
}

#endif /* XFRAG_TC_H */
