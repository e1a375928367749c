/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Storage and delivery: copy a fragment's payload into chunks, and rebuild
 * a completed datagram as one unfragmented packet, in the XDP frame when it
 * can grow, else in TC ingress.
 */
#ifndef XFRAG_DELIVER_H
#define XFRAG_DELIVER_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xfrag.h"
#include "maps.h"
#include "parse.h"
#include "table.h"

/* xfrag_deliver()'s `tc`: 0 no TC half, 1 TC, 2 TC that may replay. */
#define XFRAG_DELIVER_REPLAY	2
#define XFRAG_REPLAY_MAX_LEN	(1U << 20)	/* xfrag_too_long() decides */

/*
 * Copy p's payload into newly taken chunks and record the pieces.  The
 * budget is checked first, so the loop cannot run out half-way; should a
 * copy fail anyway, the pieces taken so far stay recorded in the way and
 * the caller's discard gives them back.
 *
 * One bpf_loop iteration a piece.  Each iteration works out its piece
 * from its index alone (piece k starts k chunks in), so nothing the
 * verifier must follow is carried from one iteration to the next: a
 * `left -= plen` loop is not tracked as shrinking by the 6.1 verifier,
 * which then walks every length and gives up.
 */
struct xfrag_store_ctx {
	struct xdp_md *ctx;
	struct xfrag_way *w;
	__u64 poff, offset, len;
	int err;
};

static long xfrag_store_one(__u32 k, void *data)
{
	struct xfrag_store_ctx *sc = data;
	struct xfrag_way *w = sc->w;
	__u64 done = (__u64)k * XFRAG_CHUNK, plen;
	struct xfrag_chunk *c;
	__u32 d, idx;
	long ci;

	if (k >= XFRAG_MAX_DESC || done >= sc->len)
		return 1;
	/* 1 to XFRAG_CHUNK bytes, written so that the verifier sees the
	 * lower bound too (it learns nothing from done < len). */
	plen = sc->len - done - 1;
	plen = (plen < XFRAG_CHUNK ? plen : XFRAG_CHUNK - 1) + 1;
	d = w->ndesc;
	if (d >= XFRAG_MAX_DESC)
		goto fail;
	ci = xfrag_chunk_alloc();
	if (ci < 0)
		goto fail;
	idx = ci;
	w->desc[d].chunk = idx;
	w->desc[d].off8 = (sc->offset + done) / 8;
	w->desc[d].lenm1 = (plen - 1) | (k ? XFRAG_DESC_CONT : 0);
	w->ndesc = d + 1;
	w->nchunks++;
	c = bpf_map_lookup_elem(&xfrag_chunks, &idx);
	if (!c || bpf_xdp_load_bytes(sc->ctx, sc->poff + done, c->data, plen))
		goto fail;
	return 0;
fail:
	sc->err = 1;
	return 1;
}

/* A global function: the verifier checks it once on its own, not once per
 * path of its caller. */
__noinline int xfrag_store(struct xdp_md *ctx, __u32 way, __u32 poff,
			   __u32 offset, __u32 len)
{
	struct xfrag_store_ctx sc = { .ctx = ctx, .poff = poff,
				      .offset = offset, .len = len };
	__u32 np = (len + XFRAG_CHUNK - 1) / XFRAG_CHUNK, zero = 0;
	struct xfrag_pcpu *pc;

	pc = bpf_map_lookup_elem(&xfrag_pcpu, &zero);
	sc.w = bpf_map_lookup_elem(&xfrag_table, &way);
	if (!pc || !sc.w || len > 65535)
		return -1;
	if (np > pc->free_top + (xfrag_nchunks - pc->next_fresh) ||
	    np > XFRAG_MAX_DESC)
		return -1;
	bpf_loop(np, xfrag_store_one, &sc, 0);
	return sc.err ? -1 : 0;
}

/*
 * Are p's bytes those of the held fragment with its offset and length
 * (pieces from w->desc[di] on)?  RFC 8200 4.5 lets a reassembler drop an
 * *exact* duplicate; one with other bytes is not one (an id reused after
 * a wrap, or an evasion attempt), and the caller treats it as an overlap.
 * Compared only on that path (duplicates are rare): one bpf_loop iteration
 * per 8 bytes, a piece read from the packet into xfrag_scratch at its
 * start.  Like xfrag_store_one(), each iteration finds its piece from its
 * index alone; the verdict is carried in map memory (lv->cmp).
 */
struct xfrag_cmp_ctx {
	struct xdp_md *ctx;
	struct xfrag_way *w;
	__u64 poff, len, di;
};

static long xfrag_cmp_one(__u32 k, void *data)
{
	struct xfrag_cmp_ctx *c = data;
	struct xfrag_loopvar *lv = xfrag_lv();
	__u64 b = (__u64)k * 8, off, a, h, mask = ~0ULL;
	struct xfrag_chunk *pkt, *held;
	__u32 piece, d, ci, plen, zero = 0;

	if (!lv)
		return 1;
	if (b >= c->len)
		return 1;
	piece = b / XFRAG_CHUNK;
	off = b - (__u64)piece * XFRAG_CHUNK;
	d = c->di + piece;
	if (d >= XFRAG_MAX_DESC)
		goto err;
	plen = xfrag_desc_len(&c->w->desc[d]);
	ci = c->w->desc[d].chunk;
	if (plen > XFRAG_CHUNK || off >= plen || off > XFRAG_CHUNK - 8)
		goto err;
	pkt = bpf_map_lookup_elem(&xfrag_scratch, &zero);
	held = bpf_map_lookup_elem(&xfrag_chunks, &ci);
	if (!pkt || !held)
		goto err;
	if (off == 0 &&
	    bpf_xdp_load_bytes(c->ctx, c->poff + b, pkt->data, plen))
		goto err;
	a = *(__u64 *)(pkt->data + off);
	h = *(__u64 *)(held->data + off);
	if (plen - off < 8)	/* little-endian: the first bytes are low */
		mask = (1ULL << ((plen - off) * 8)) - 1;
	if ((a ^ h) & mask) {
		lv->cmp.differs = 1;
		return 1;
	}
	return 0;
err:
	lv->cmp.differs = 2;	/* cannot happen: the kernel's verdict holds */
	return 1;
}

/* 1: the same bytes (or not known), 0: other bytes.  Global: verified once. */
__noinline int xfrag_same_bytes(struct xdp_md *ctx, __u32 way, __u32 di,
				__u32 poff, __u32 len)
{
	struct xfrag_cmp_ctx c = { .ctx = ctx, .poff = poff, .len = len,
				   .di = di };
	struct xfrag_loopvar *lv = xfrag_lv();

	c.w = bpf_map_lookup_elem(&xfrag_table, &way);
	if (!lv || !c.w || len > 65535 || di >= XFRAG_MAX_DESC)
		return 1;
	lv->cmp.differs = 0;
	bpf_loop((len + 7) / 8, xfrag_cmp_one, &c, 0);
	return lv->cmp.differs != 1;
}

/* Make w->hdr the header of the unfragmented datagram. */
static __always_inline void xfrag_fix_hdr(struct xfrag_way *w)
{
	if (w->key.family == XFRAG_AF_INET6) {
		/* RFC 8200 4.5: payload length covers the unfragmentable
		 * extension headers and the reassembled fragmentable part. */
		struct ipv6hdr *ip6 = (struct ipv6hdr *)w->hdr;

		ip6->payload_len = bpf_htons(w->hdr_len - 40 + w->end);
		return;
	}
	/* RFC 791 3.2: one datagram, no fragment fields, new checksum. */
	struct iphdr *iph = (struct iphdr *)w->hdr;
	__u32 ihl = iph->ihl;

	iph->tot_len = bpf_htons(w->hdr_len + w->end);
	iph->frag_off = (w->flags & XFRAG_F_DF) ? bpf_htons(IP4_DF) : 0;
	iph->check = 0;
	iph->check = xfrag_ip_csum_buf(w->hdr, ihl);
}

/* Write the datagram (header + pieces) into the XDP frame at l3off. */
__noinline int xfrag_write_xdp(struct xdp_md *ctx, __u32 way, __u32 l3off)
{
	struct xfrag_way *w = bpf_map_lookup_elem(&xfrag_table, &way);
	__u32 hl, n;

	if (!w)
		return -1;
	hl = w->hdr_len;
	n = w->ndesc;
	if (l3off > 64)
		return -1;
	if (hl > XFRAG_HDR_MAX || hl < 20)
		return -1;
	if (bpf_xdp_store_bytes(ctx, l3off, w->hdr, hl))
		return -1;
	for (__u32 i = 0; i < XFRAG_MAX_DESC; i++) {
		struct xfrag_desc d;
		struct xfrag_chunk *c;
		__u32 len;

		if (i >= n)
			break;
		d = w->desc[i];
		c = bpf_map_lookup_elem(&xfrag_chunks, &d.chunk);
		len = xfrag_desc_len(&d);
		if (!c || len > XFRAG_CHUNK)
			return -1;
		if (bpf_xdp_store_bytes(ctx, l3off + hl + (__u32)d.off8 * 8,
					c->data, len))
			return -1;
	}
	return 0;
}

/*
 * Name way w to TC, which this frame reaches next.  With metadata TC goes
 * straight to the way; without it (a kernel that refuses
 * bpf_xdp_adjust_meta, a driver without room for it) TC finds the way by
 * this fragment's key in this CPU's bucket (xfrag_tc_find()).  The cookie
 * makes it collectable once.
 */
static __always_inline void xfrag_handoff_mark(struct xdp_md *ctx,
					       struct xfrag_way *w,
					       __u32 way_idx,
					       struct xfrag_pcpu *pc)
{
	__u32 cookie = ++pc->cookie;

	if (xfrag_use_meta &&
	    bpf_xdp_adjust_meta(ctx, -(int)sizeof(struct xfrag_meta)) == 0) {
		void *data = (void *)(long)ctx->data;
		struct xfrag_meta *m = (void *)(long)ctx->data_meta;

		if ((void *)(m + 1) > data) {
			bpf_xdp_adjust_meta(ctx, (int)sizeof(struct xfrag_meta));
		} else {
			m->magic = XFRAG_META_MAGIC;
			m->cpu = bpf_get_smp_processor_id();
			m->way = way_idx;
			m->cookie = cookie;
		}
	}
	w->cookie = cookie;
}

/*
 * The datagram in w is complete.  Rebuild it in place if the frame can
 * grow; otherwise hand it to TC ingress (through the XDP metadata where
 * the kernel allows it, else by key); if
 * neither is possible, count it: nothing is lost silently.
 */
static __always_inline int xfrag_deliver(struct xdp_md *ctx,
					 struct xfrag_way *w, __u32 way_idx,
					 struct xfrag_pkt *p,
					 struct xfrag_pcpu *pc,
					 struct xfrag_stats *st, int tc,
					 __u64 now)
{
	__u32 newlen = p->l3off + w->hdr_len + w->end;
	__u32 cur = bpf_xdp_get_buff_len(ctx);

	st->reasm_oks++;
	st->frag_reasm += w->nfrags;
	st->bytes_reasm += w->end;
	if (w->key.family == XFRAG_AF_INET6)
		st->ip6_oks++;
	xfrag_fix_hdr(w);

	if (bpf_xdp_adjust_tail(ctx, (int)newlen - (int)cur) == 0) {
		if (xfrag_write_xdp(ctx, way_idx, p->l3off)) {
			st->deliver_err++;
			xfrag_way_release(w, pc, st);
			return XDP_DROP;
		}
		st->deliver_xdp++;
		xfrag_way_release(w, pc, st);
		return XDP_PASS;
	}

	if (tc && (newlen <= XFRAG_TC_MAX_LEN || tc == XFRAG_DELIVER_REPLAY)) {
		xfrag_handoff_mark(ctx, w, way_idx, pc);
		st->dgrams_in_flight--;
		st->frags_in_flight -= w->nfrags;
		st->handoff_pending++;
		xfrag_quota_put(w);	/* complete: not in flight */
		w->state = XFRAG_WAY_HANDOFF;
		w->touched_ns = now;
		return XDP_PASS;
	}
	st->deliver_err++;
	xfrag_way_release(w, pc, st);
	return XDP_DROP;
}

#endif /* XFRAG_DELIVER_H */
