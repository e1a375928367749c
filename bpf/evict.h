/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Eviction: which way of a full bucket gives way to a new datagram (the
 * policies `progress`, `lru`, `refuse`), and freeing memory above the
 * high watermark, a bounded number of ways per visit.
 */
#ifndef XFRAG_EVICT_H
#define XFRAG_EVICT_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xfrag.h"
#include "maps.h"
#include "parse.h"
#include "table.h"

#define XFRAG_ROOM_EVICT	2	/* evictions per visit for memory */
#define XFRAG_SCORE_ANY		(1LL << 40)	/* no limit on the victim */
#define XFRAG_SCORE_COLD	(-(1LL << 40))	/* only a way that is not warm */

/*
 * How likely a datagram is to complete, for `progress`: the fraction
 * received in 1/1024 (the end estimated one average fragment past the
 * highest byte until the last fragment is seen), less 1/8 for every
 * fragment that arrived out of sequence.
 */
static __always_inline __s64 xfrag_score(__u32 rcvd, __u32 nfrags,
					 __u32 max_end, __u32 end, __u32 ooo)
{
	__u32 total = end ? end : max_end + (nfrags ? rcvd / nfrags : 0);
	__s64 score = 0;

	if (total)
		score = (__s64)(((__u64)rcvd * 1024) / total);
	return score - (__s64)ooo * 128;
}

struct xfrag_victim_ctx {
	__u64 now, warm_ns;
	struct xfrag_loopvar *lv;	/* carried: lv->victim */
	__u32 base, skip, policy;
};

/*
 * One way as a candidate victim.  `lru`: the least recently touched.
 * `progress`: ways that progressed within the warm window come last; then
 * the lowest xfrag_score(); ties go to the least recently touched.  A
 * pass-through record holds no memory: when not warm it goes first.
 * Complete datagrams waiting for TC are never victims.
 */
static long xfrag_victim_one(__u32 i, void *data)
{
	struct xfrag_victim_ctx *vc = data;
	struct xfrag_loopvar *lv = vc->lv;
	__u32 idx = vc->base + i;
	struct xfrag_way *x;
	__s64 score = 0;
	int warm = 0;

	if (idx == vc->skip)
		return 0;
	x = bpf_map_lookup_elem(&xfrag_table, &idx);
	if (!x)
		return 1;
	if (x->state != XFRAG_WAY_ACTIVE && x->state != XFRAG_WAY_PASS)
		return 0;
	if (vc->policy == XFRAG_EVICT_PROGRESS) {
		warm = vc->now - x->touched_ns < vc->warm_ns;
		if (x->state == XFRAG_WAY_PASS)
			score = -4096;
		else
			score = xfrag_score(x->rcvd, x->nfrags, x->max_end,
					    (x->flags & XFRAG_F_LAST_SEEN) ?
					    x->end : 0, warm ? 0 : x->ooo);
		/* Out-of-sequence arrivals count against a way only once
		 * it stalls: a warm datagram arriving in random order is
		 * progressing (the soak's Rose phase with 16000-byte random
		 * datagrams: 51 % delivered with the penalty, 83 % without). */
	}
	if (lv->victim.idx < 0 || warm < lv->victim.warm ||
	    (warm == lv->victim.warm &&
	     (score < lv->victim.score ||
	      (score == lv->victim.score && x->touched_ns < lv->victim.touch)))) {
		lv->victim.idx = i;
		lv->victim.warm = warm;
		lv->victim.score = score;
		lv->victim.touch = x->touched_ns;
	}
	return 0;
}

/*
 * Evict one way of the bucket at `base` (never `skip`) by `policy`;
 * returns its offset in the bucket, or -1 when the policy refuses or no
 * way may go.  Under `progress` a warm victim must score at most `limit`
 * (the datagram that wants the room).  Global: verified once, called from
 * loops.
 */
__noinline int xfrag_evict(__u32 base, __u32 skip, __u32 policy,
			   __u32 warm_ms, __s64 limit)
{
	struct xfrag_victim_ctx vc = {};
	struct xfrag_stats *st;
	struct xfrag_pcpu *pc;
	struct xfrag_way *x;
	__u32 zero = 0, idx;
	int best;

	if (policy != XFRAG_EVICT_LRU && policy != XFRAG_EVICT_PROGRESS)
		return -1;
	vc.lv = xfrag_lv();
	if (!vc.lv)
		return -1;
	vc.now = bpf_ktime_get_coarse_ns();
	vc.warm_ns = (__u64)warm_ms * 1000000ULL;
	vc.base = base;
	vc.skip = skip;
	vc.policy = policy;
	vc.lv->victim.idx = -1;
	vc.lv->victim.warm = 0;
	vc.lv->victim.score = 0;
	vc.lv->victim.touch = 0;
	bpf_loop(xfrag_ways, xfrag_victim_one, &vc, 0);
	best = vc.lv->victim.idx;
	if (best < 0 || best >= XFRAG_MAX_WAYS ||
	    (vc.lv->victim.warm && vc.lv->victim.score > limit))
		return -1;
	idx = base + best;
	x = bpf_map_lookup_elem(&xfrag_table, &idx);
	st = bpf_map_lookup_elem(&xfrag_stats, &zero);
	pc = bpf_map_lookup_elem(&xfrag_pcpu, &zero);
	if (!x || !st || !pc)
		return -1;
	if (x->state == XFRAG_WAY_PASS) {
		st->pass_evicted++;
		x->state = XFRAG_WAY_FREE;
	} else {
		st->frag_evicted += x->nfrags;
		st->reasm_evicted++;
		st->reasm_fails++;
		xfrag_way_release(x, pc, st);
	}
	return best;
}

/*
 * Memory held on this CPU above the high watermark: an evicting policy
 * frees ways of this bucket (never the datagram being added to), at most
 * XFRAG_ROOM_EVICT a visit, until it is under the low one.  Memory comes
 * down over the visits, each bounded.  The bucket is not where the memory
 * is, so under `progress` a warm way goes only for a datagram at least as
 * likely to complete (the way `cur`, w, with fragment p added): a flood of
 * fresh first fragments must not push out datagrams in progress; it runs
 * out of memory itself (frag_nomem) instead.  Under `refuse` the budget
 * alone decides (frag_nomem), as in the kernel.  Below the high
 * watermark, the common case, nothing but the comparison is done.
 */
static __always_inline int xfrag_make_room(struct xfrag_config *cfg,
					    struct xfrag_stats *st, __u32 base,
					    __u32 cur, __u32 policy,
					    __u32 warm_ms,
					    const struct xfrag_way *w,
					    const struct xfrag_pkt *p)
{
	__u64 budget = (__u64)xfrag_nchunks * XFRAG_CHUNK;
	__u64 need = (__u64)((p->len + XFRAG_CHUNK - 1) / XFRAG_CHUNK) *
		     XFRAG_CHUNK;
	__u64 high = cfg->mem_high ?: XFRAG_DEF_MEM_HIGH(budget);
	__u64 low = cfg->mem_low ?: XFRAG_DEF_MEM_LOW(budget);
	__u32 end = p->offset + p->len;
	__s64 score;

	if (policy == XFRAG_EVICT_REFUSE || st->mem_in_flight + need <= high)
		return 0;
	score = xfrag_score(w->rcvd + p->len, w->nfrags + 1,
			    end > w->max_end ? end : w->max_end,
			    !p->more ? end :
			    (w->flags & XFRAG_F_LAST_SEEN) ? w->end : 0, 0);
	for (__u32 k = 0; k < XFRAG_ROOM_EVICT; k++) {
		if (st->mem_in_flight + need <= low ||
		    xfrag_evict(base, cur, policy, warm_ms, score) < 0)
			break;
	}
	/* The top half of the room above high is kept for datagrams in
	 * progress: returns 1 when a new datagram may not have it. */
	return st->mem_in_flight + need > budget - (budget - high) / 2;
}

#endif /* XFRAG_EVICT_H */
