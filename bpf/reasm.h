/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The XDP data path of one fragment: find its datagram in the bucket, admit
 * it (quota, eviction, memory), check it against the rules, store it, and
 * deliver the datagram it completes.
 */
#ifndef XFRAG_REASM_H
#define XFRAG_REASM_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xfrag.h"
#include "maps.h"
#include "parse.h"
#include "table.h"
#include "rules.h"
#include "deliver.h"
#include "room.h"
#include "evict.h"
#include "sweep.h"
#include "outcome.h"

/*
 * A pass-through record sends its datagram's fragments to the kernel.  Once
 * every byte went by (first and last fragment seen, as many bytes as the
 * last one's end) it is done: its way is free for a new datagram, yet
 * still found by its own late fragments until reused.  Held for the whole
 * time-out instead, records of big datagrams would fill the table; freed
 * at once, a duplicate that made the count early would have the rest of
 * the datagram taken, time out and be lost (found by tests/diff_test.sh).
 */
static __always_inline void xfrag_pass_track(struct xfrag_way *w,
					     struct xfrag_pkt *p)
{
	w->rcvd += p->len;
	if (p->offset == 0)
		w->flags |= XFRAG_F_FIRST_SEEN;
	if (!p->more) {
		w->flags |= XFRAG_F_LAST_SEEN;
		w->end = p->offset + p->len;
	}
	if ((w->flags & XFRAG_F_FIRST_SEEN) && (w->flags & XFRAG_F_LAST_SEEN) &&
	    w->rcvd >= w->end)
		w->flags |= XFRAG_F_DONE;
}


struct xfrag_scan_ctx {
	struct xfrag_key key;
	__u64 now, timeout;
	struct xfrag_stats *st;
	struct xfrag_pcpu *pc;
	struct xfrag_loopvar *lv;	/* carried: lv->scan */
	__u32 base;
	int match, err;		/* set by the iteration that stops the loop */
};

/*
 * One way of the bucket: reclaim it if its time is up, else see whether it
 * holds the datagram.  The first free way is remembered for a new datagram.
 */
static long xfrag_scan_one(__u32 i, void *data)
{
	struct xfrag_scan_ctx *sc = data;
	struct xfrag_loopvar *lv = sc->lv;
	struct xfrag_way *x;
	__u32 idx = sc->base + i;

	x = bpf_map_lookup_elem(&xfrag_table, &idx);
	if (!x) {
		sc->err = 1;
		return 1;
	}
	if (xfrag_way_expire(x, sc->pc, sc->st, sc->now, sc->timeout)) {
		if (lv->scan.freew < 0)
			lv->scan.freew = i;
		return 0;
	}
	if ((x->state == XFRAG_WAY_ACTIVE || x->state == XFRAG_WAY_PASS ||
	     x->state == XFRAG_WAY_FLUSH) &&
	    xfrag_key_eq(&x->key, &sc->key)) {
		/* Found: the ways after it are left for a later visit. */
		sc->match = i;
		return 1;
	}
	if (x->state == XFRAG_WAY_PASS && (x->flags & XFRAG_F_DONE) &&
	    lv->scan.freew < 0)
		lv->scan.freew = i;		/* a done record: reusable */
	return 0;
}


/*
 * Keep p's L3 header as the datagram's (the first fragment's; a flush
 * without it takes any fragment's, which the kernel accepts alike).
 */
static __always_inline int xfrag_keep_hdr(struct xdp_md *ctx,
					  struct xfrag_way *w,
					  const struct xfrag_pkt *p)
{
	__u32 h = p->hlen;

	if (h < 20 || h > XFRAG_HDR_MAX ||
	    bpf_xdp_load_bytes(ctx, p->l3off, w->hdr, h))
		return -1;
	/* RFC 8200 4.5: the header before the Fragment header now names
	 * what followed the Fragment header. */
	if (p->key.family == XFRAG_AF_INET6 && p->nh_pos < h)
		w->hdr[p->nh_pos & (XFRAG_HDR_MAX - 1)] = p->nexthdr;
	w->nh_pos = p->nh_pos;
	w->hdr_len = h;
	return 0;
}

/*
 * Datagram w outgrew xfrag's bound (max-frags fragments, XFRAG_MAX_DESC
 * pieces) with p, and the kernel would still reassemble it: it has no
 * fragment count, only its memory limit.  `too-many pass` hands it over
 * as the existing replay does for datagrams beyond one skb: p goes on to
 * TC, which sends it on and replays the pieces held so far as fragments
 * (xfrag_tc_run()); the way stays as the datagram's pass-through record,
 * so every later fragment goes to the kernel untouched.  The kernel gets
 * a valid set: pieces are 8-aligned, MF set on all but the one that ends
 * the datagram.  The work per fragment stays bounded: xfrag holds at most
 * XFRAG_MAX_DESC pieces of any datagram.
 */
static __always_inline int xfrag_flush(struct xdp_md *ctx,
				       struct xfrag_way *w, __u32 way_idx,
				       struct xfrag_pkt *p,
				       struct xfrag_pcpu *pc,
				       struct xfrag_stats *st, __u64 now)
{
	if (!(w->flags & XFRAG_F_FIRST_SEEN) && xfrag_keep_hdr(ctx, w, p)) {
		/* cannot happen: the header was parsed already */
		st->frag_too_many++;
		xfrag_way_discard(w, pc, st);
		return XDP_DROP;
	}
	st->pass_too_many++;
	st->frag_flushed += w->nfrags;
	st->frag_passed++;		/* p itself */
	st->dgrams_in_flight--;
	st->frags_in_flight -= w->nfrags;
	st->bytes_in_flight -= w->rcvd;
	xfrag_quota_put(w);
	if (p->offset == 0 && p->df)
		w->flags |= XFRAG_F_DF;
	xfrag_pass_track(w, p);
	xfrag_handoff_mark(ctx, w, way_idx, pc);
	w->state = XFRAG_WAY_FLUSH;
	w->touched_ns = now;
	return XDP_PASS;
}

static __always_inline int xfrag_fragment(struct xdp_md *ctx,
					  struct xfrag_pkt *p, int parsed)
{
	struct xfrag_config cfg = {};
	struct xfrag_stats *st;
	struct xfrag_pcpu *pc;
	struct xfrag_config *cp;
	struct xfrag_way *w = NULL;
	__u32 zero = 0, base, idx, hl, max_frags, limit, policy, warm_ms;
	struct xfrag_srcq *q = NULL;
	__u32 slot = 0;
	__u64 now, timeout;
	struct xfrag_scan_ctx sc = {};
	struct xfrag_guard *g = NULL;
	__u32 gslot = 0, gcnt = 0, max_dist;
	int match, freew, rule, tc, v6;

	st = xfrag_st();
	pc = bpf_map_lookup_elem(&xfrag_pcpu, &zero);
	cp = bpf_map_lookup_elem(&xfrag_config, &zero);
	if (!st || !pc || !cp)
		return XDP_PASS;	/* cannot happen: arrays of one */
	cfg = *cp;
	now = bpf_ktime_get_coarse_ns();
	if (!pc->sweep_armed || (pc->sweep_armed == XFRAG_SWEEP_UNPINNED &&
				 now - pc->swept_ns > XFRAG_SWEEP_STALE_NS))
		xfrag_sweep_arm(pc);
	st->reasm_reqds++;
	v6 = p->key.family == XFRAG_AF_INET6;
	if (v6)
		st->ip6_reqds++;
	switch (parsed) {
	case XFRAG_P_BAD:
		return xfrag_outcome(XFRAG_O_bad_header, st, NULL, pc);
	case XFRAG_P_ATOMIC:
		/* RFC 6946: handed on at once, Fragment header and all; the
		 * kernel processes atomic fragments without queueing. */
		return xfrag_outcome(XFRAG_O_atomic, st, NULL, pc);
	case XFRAG_P_BAD_CHAIN:
		/* RFC 8200 4.5, RFC 7112: dropped, like the kernel does. */
		return xfrag_outcome(XFRAG_O_bad_chain, st, NULL, pc);
	case XFRAG_P_BIG_HDR:
		/* More unfragmentable headers than xfrag stores: the kernel
		 * gets this datagram's fragments untouched. */
		return xfrag_outcome(XFRAG_O_big_hdr, st, NULL, pc);
	default:
		break;
	}

	timeout = (__u64)(cfg.timeout_ms ?: XFRAG_DEF_TIMEOUT_MS) * 1000000ULL;
	max_frags = cfg.max_frags ?: XFRAG_DEF_MAX_FRAGS;
	policy = cfg.evict ?: XFRAG_DEF_EVICT;
	warm_ms = cfg.warm_ms ?: XFRAG_DEF_WARM_MS;
	tc = (cfg.flags & XFRAG_CFG_TC) ||
	     (pc->tc_seen_ns && now - pc->tc_seen_ns < XFRAG_TC_ALIVE_NS);
	/* With replay, the only size limit is RFC 791's (xfrag_too_long). */
	if (tc && (cfg.flags & XFRAG_CFG_REPLAY))
		tc = XFRAG_DELIVER_REPLAY;
	limit = tc == XFRAG_DELIVER_REPLAY ? XFRAG_REPLAY_MAX_LEN :
		tc ? XFRAG_TC_MAX_LEN : XFRAG_XDP_MAX_LEN;
	if (!tc)
		xfrag_room_learn(ctx, pc);
	/* The id-wrap guard counts this IPv4 flow's fragments. */
	max_dist = cfg.max_dist ?: XFRAG_DEF_MAX_DIST;
	if (!v6 && max_dist != XFRAG_MAX_DIST_OFF) {
		g = bpf_map_lookup_elem(&xfrag_guard, &zero);
		if (g) {
			gslot = xfrag_guard_slot(pc, &p->key);
			gcnt = ++g->n[XFRAG_IDX(gslot, XFRAG_GUARD_SLOTS)];
		}
	}

	/* IPv4 non-last fragments are cut to a multiple of 8, as
	 * ip_frag_queue() does (RFC 791: offsets count 8-byte units); IPv6
	 * ones are discarded instead (RFC 8200 4.5, xfrag_check()). */
	if (p->more && !v6)
		p->len &= ~7U;

	base = xfrag_bucket_base(pc, &p->key);
	sc.key = p->key;
	sc.base = base;
	sc.now = now;
	sc.timeout = timeout;
	sc.st = st;
	sc.pc = pc;
	sc.match = -1;
	sc.lv = xfrag_lv();
	if (!sc.lv)
		return XDP_PASS;	/* cannot happen: an array of one */
	sc.lv->scan.freew = -1;
	bpf_loop(xfrag_ways, xfrag_scan_one, &sc, 0);
	match = sc.match;
	freew = sc.lv->scan.freew;
	if (sc.err || match >= (int)XFRAG_MAX_WAYS ||
	    freew >= (int)XFRAG_MAX_WAYS)
		return XDP_PASS;	/* cannot happen: ways are in range */

	if (match >= 0) {
		idx = base + match;
		w = bpf_map_lookup_elem(&xfrag_table, &idx);
		if (!w)
			return XDP_PASS;
		if (w->state == XFRAG_WAY_PASS || w->state == XFRAG_WAY_FLUSH) {
			xfrag_pass_track(w, p);
			return xfrag_outcome(XFRAG_O_passed, st, NULL, pc);
		}
		if (g && (w->flags & XFRAG_F_GUARD) && w->gslot == gslot &&
		    gcnt - w->gmark > max_dist) {
			/* RFC 4963 4.1: more than max_dist of this flow's
			 * fragments since this datagram's last one: an id
			 * reused after a wrap, not its missing part.  Ended,
			 * as the kernel's ip_frag_too_far() does, and the
			 * fragment starts a new datagram in its way. */
			st->reasm_stale++;
			st->frag_stale += w->nfrags;
			st->reasm_fails++;
			xfrag_way_release(w, pc, st);
			freew = match;
			match = -1;
		}
	}
	if (match < 0) {
		hl = xfrag_hl_guess(p);
		if (xfrag_too_long(p, hl, p->offset + p->len)) {
			/* Ping of death (RFC 791: 65535 at most), even as the
			 * first fragment seen: never handed on. */
			return xfrag_outcome(XFRAG_O_too_long_new, st, NULL,
					     pc);
		}
		if (xfrag_too_big(p, hl, 0, limit) ||
		    (!tc && !xfrag_xdp_can_hold(ctx, pc, p, hl))) {
			/* Known before anything was consumed: the kernel gets
			 * the datagram untouched. */
			/* Its record needs a way: without one, the datagram's
			 * later fragments would be taken and found too big
			 * (frag_oversize).  A record holds no memory, so it
			 * may evict a cold way, never a warm one. */
			if (freew < 0 && policy != XFRAG_EVICT_REFUSE)
				freew = xfrag_evict(base, base + xfrag_ways,
						    policy, warm_ms,
						    XFRAG_SCORE_COLD);
			if (freew >= 0) {
				idx = base + freew;
				w = bpf_map_lookup_elem(&xfrag_table, &idx);
				if (w) {
					w->key = p->key;
					w->born_ns = now;
					w->touched_ns = now;
					w->state = XFRAG_WAY_PASS;
					w->flags = 0;
					w->rcvd = 0;
					w->end = 0;
					xfrag_pass_track(w, p);
				}
			}
			return xfrag_outcome(tc ? XFRAG_O_pass_new :
						  XFRAG_O_pass_new_no_tc,
					     st, NULL, pc);
		}
		/* A source over its quota is refused before it can evict
		 * anybody else's datagram. */
		if (cfg.quota) {
			slot = xfrag_srcq_slot(pc, &p->key);
			q = bpf_map_lookup_elem(&xfrag_srcq, &zero);
			if (q && q->n[XFRAG_IDX(slot, XFRAG_SRCQ_SLOTS)] >=
				 cfg.quota)
				return xfrag_outcome(XFRAG_O_quota, st, NULL,
						     pc);
		}
		if (freew < 0)
			freew = xfrag_evict(base, base + xfrag_ways, policy,
					    warm_ms, XFRAG_SCORE_ANY);
		if (freew < 0)
			return xfrag_outcome(XFRAG_O_refused, st, NULL, pc);
		idx = base + freew;
		w = bpf_map_lookup_elem(&xfrag_table, &idx);
		if (!w)
			return XDP_PASS;
		w->key = p->key;
		w->born_ns = now;
		w->touched_ns = now;
		w->state = XFRAG_WAY_ACTIVE;
		w->flags = 0;
		w->nfrags = 0;
		w->ndesc = 0;
		w->hdr_len = 0;
		w->end = 0;
		w->rcvd = 0;
		w->max_end = 0;
		w->nchunks = 0;
		w->ooo = 0;
		if (q) {
			q->n[XFRAG_IDX(slot, XFRAG_SRCQ_SLOTS)]++;
			w->srcq = slot;
			w->flags |= XFRAG_F_QUOTA;
		}
		st->dgrams_in_flight++;
	}

	hl = (w->flags & XFRAG_F_FIRST_SEEN) ? w->hdr_len : xfrag_hl_guess(p);
	rule = xfrag_check(w, p, hl, max_frags);
	if (rule == XFRAG_O_dup) {
		struct xfrag_loopvar *lv = xfrag_lv();

		/* RFC 8200 4.5: only an *exact* duplicate is dropped and the
		 * datagram kept; the same range with other bytes is an
		 * overlap (Linux compares offsets only and keeps the first
		 * copy's bytes).  This ends the stale-head path of an id
		 * wrap even with the guard off (README, Rules). */
		if (lv && !xfrag_same_bytes(ctx, idx, lv->fit.exact_i,
					    p->poff, p->len))
			rule = XFRAG_O_dup_changed;
	}
	if (rule == XFRAG_O_dup && !p->more) {
		/* A last fragment with a held range: Linux sets the end
		 * before it finds the duplicate (ip_frag_queue,
		 * ip6_frag_queue), so data beyond it discards the datagram
		 * later.  Not a reason to deliver: nothing was added. */
		w->flags |= XFRAG_F_LAST_SEEN;
		w->end = p->offset + p->len;
	}
	if (rule == XFRAG_O_too_many && tc == XFRAG_DELIVER_REPLAY &&
	    cfg.too_many != XFRAG_TOO_MANY_DROP)
		return xfrag_flush(ctx, w, idx, p, pc, st, now);
	if (rule != XFRAG_O_OK)
		return xfrag_outcome(rule, st, w, pc);
	if (xfrag_too_big(p, hl, w->max_end, limit)) {
		/* Learned too late: fragments were already consumed. */
		return xfrag_outcome(XFRAG_O_oversize, st, w, pc);
	}
	if (xfrag_make_room(&cfg, st, base, idx, policy, warm_ms, w, p) &&
	    !w->nfrags) {
		/* Still above the high watermark: a new datagram is refused,
		 * and what is left of the budget stays for the datagrams in
		 * progress (a flood of fresh datagrams must not take it). */
		return xfrag_outcome(XFRAG_O_nomem, st, w, pc);
	}
	if (xfrag_store(ctx, idx, p->poff, p->offset, p->len)) {
		/* Memory budget spent: the kernel's answer too (it refuses
		 * every fragment above ipfrag_high_thresh). */
		return xfrag_outcome(XFRAG_O_nomem, st, w, pc);
	}
	if (p->offset == 0) {
		if (xfrag_keep_hdr(ctx, w, p))
			/* cannot happen: the header was parsed already */
			return xfrag_outcome(XFRAG_O_hdr_lost, st, w, pc);
		w->flags |= XFRAG_F_FIRST_SEEN | (p->df ? XFRAG_F_DF : 0);
	}
	if (!p->more) {
		w->flags |= XFRAG_F_LAST_SEEN;
		w->end = p->offset + p->len;
	}
	if (p->offset != w->max_end)
		w->ooo++;
	if (p->offset + p->len > w->max_end)
		w->max_end = p->offset + p->len;
	w->nfrags++;
	w->rcvd += p->len;
	w->touched_ns = now;
	if (g) {
		w->flags |= XFRAG_F_GUARD;
		w->gslot = gslot;
		w->gmark = gcnt;
	}
	st->frags_in_flight++;
	st->bytes_in_flight += p->len;
	st->mem_in_flight += (__u64)((p->len + XFRAG_CHUNK - 1) / XFRAG_CHUNK) *
			     XFRAG_CHUNK;

	if ((w->flags & XFRAG_F_LAST_SEEN) && w->rcvd == w->end)
		return xfrag_deliver(ctx, w, idx, p, pc, st, tc, now);
	return xfrag_outcome(XFRAG_O_held, st, NULL, pc);
}

#endif /* XFRAG_REASM_H */
