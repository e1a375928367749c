// SPDX-License-Identifier: GPL-2.0
/*
 * xfrag: IP fragment reassembly in XDP, with a TC-ingress half that
 * finishes datagrams too large for the XDP frame.  One object, shared maps.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <xdp/xdp_helpers.h>

#include "xfrag.h"
#include "maps.h"
#include "parse.h"
#include "table.h"
#include "rules.h"
#include "deliver.h"

#define CLOCK_MONOTONIC	1
#define TC_ACT_OK	0
#define TC_ACT_SHOT	2

char LICENSE[] SEC("license") = "GPL";

/*
 * Under the libxdp dispatcher xfrag runs before the operator's programs
 * (lower priority runs first) and hands on every frame it passes, so they
 * see reassembled datagrams instead of fragments.
 */
struct {
	__uint(priority, 5);
	__uint(XDP_PASS, 1);
} XDP_RUN_CONFIG(xfrag_xdp);

static __always_inline struct xfrag_stats *xfrag_st(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&xfrag_stats, &zero);
}

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

/* Is the datagram, as far as known, too big for any delivery path? */
static __always_inline int xfrag_too_big(struct xfrag_pkt *p, __u32 hl,
					 __u32 max_end, __u32 limit)
{
	__u32 end = p->offset + p->len;

	if (max_end > end)
		end = max_end;
	if (p->hint > hl + end)
		return p->l3off + p->hint > limit;
	return p->l3off + hl + end > limit;
}

/* Can this frame grow to `size` bytes?  Leaves it as it was. */
static __always_inline int xfrag_room(struct xdp_md *ctx, __u32 size)
{
	int grow = (int)size - (int)bpf_xdp_get_buff_len(ctx);

	if (grow <= 0)
		return 1;
	if (bpf_xdp_adjust_tail(ctx, grow))
		return 0;
	bpf_xdp_adjust_tail(ctx, -grow);
	return 1;
}

/*
 * Without the TC half: learn whether small frames on this CPU have the room
 * of a full page (XFRAG_ROOM_SMALL, XFRAG_ROOM_PROOF).  Cost only until
 * decided.
 */
static __always_inline void xfrag_room_learn(struct xdp_md *ctx,
					     struct xfrag_pcpu *pc)
{
	if (pc->room_bad || pc->room_ok >= XFRAG_ROOM_PROOF ||
	    bpf_xdp_get_buff_len(ctx) > XFRAG_ROOM_SMALL)
		return;
	if (xfrag_room(ctx, XFRAG_XDP_MAX_LEN))
		pc->room_ok++;
	else
		pc->room_bad = 1;
}

/*
 * Without the TC half a datagram can only be rebuilt in the XDP frame, so
 * XDP takes it only when it is sure to deliver it: frames on this CPU are
 * known to have room whatever their size, the datagram's size is known from
 * the fragment in hand (the UDP length of a first fragment, the end of a
 * last one), and this frame can grow to it.  Anything else is never
 * consumed: the kernel gets all of it.
 */
static __always_inline int xfrag_xdp_can_hold(struct xdp_md *ctx,
					      struct xfrag_pcpu *pc,
					      struct xfrag_pkt *p, __u32 hl)
{
	__u32 size;

	if (pc->room_bad || pc->room_ok < XFRAG_ROOM_PROOF)
		return 0;
	if (p->hint)
		size = p->l3off + p->hint;
	else if (!p->more)
		size = p->l3off + hl + p->offset + p->len;
	else
		return 0;
	return size <= XFRAG_XDP_MAX_LEN && xfrag_room(ctx, size);
}

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

/* ---- The sweeper ------------------------------------------------------------ */

/*
 * The data path marks this CPU's tables busy while it runs.  In the
 * kernel's receive path XDP, TC and the timer's softirq never interrupt
 * one another on a CPU, but a program run from a system call
 * (BPF_PROG_TEST_RUN runs with only preemption off) can be interrupted by
 * the sweeper's softirq halfway through an update of the same allocator
 * and table: the sweeper then skips that tick (fuzz_prog lost 3 chunks
 * so, once, in the 6.1 guest).  The compiler barriers keep the mark
 * around every access to the tables.
 */
static __always_inline struct xfrag_pcpu *xfrag_busy_enter(void)
{
	struct xfrag_pcpu *pc;
	__u32 zero = 0;

	pc = bpf_map_lookup_elem(&xfrag_pcpu, &zero);
	if (pc)
		*(volatile __u32 *)&pc->busy = 1;
	asm volatile("" ::: "memory");
	return pc;
}

static __always_inline void xfrag_busy_leave(struct xfrag_pcpu *pc)
{
	asm volatile("" ::: "memory");
	if (pc)
		*(volatile __u32 *)&pc->busy = 0;
}

struct xfrag_sweep_ctx {
	__u64 now, timeout;
	struct xfrag_pcpu *pc;
	struct xfrag_stats *st;
	__u32 first;		/* first way index of the slice */
	__u32 nways;		/* ways in the table */
	__u32 cap;		/* a capture runs: timed-out datagrams recorded */
};

/*
 * A capture record may be written now on this CPU (the rate window,
 * cap_rate a second): 1, counted; 0, counted in cap_lost.
 */
static __always_inline int xfrag_cap_admit(struct xfrag_capbuf *cb,
					   const struct xfrag_capcfg *cfg,
					   struct xfrag_stats *st, __u64 now)
{
	if (now - cb->win_start >= 1000000000ULL) {
		cb->win_start = now;
		cb->win_count = 0;
	}
	if (cb->win_count >= (cfg->cap_rate ?: XFRAG_CAP_DEF_RATE)) {
		st->cap_lost++;
		return 0;
	}
	cb->win_count++;
	return 1;
}

/*
 * A datagram the sweeper is about to time out, while a capture runs: no
 * fragment to show, so a record of its key and of how many fragments it
 * held (`xfrag capture` writes it as a frame made from the key).
 */
static __always_inline void xfrag_cap_swept(const struct xfrag_way *x,
				       struct xfrag_stats *st, __u64 now)
{
	struct xfrag_cap_rec *rec;
	struct xfrag_capcfg *cfg;
	struct xfrag_capbuf *cb;
	__u32 zero = 0;

	cb = bpf_map_lookup_elem(&xfrag_capbuf, &zero);
	cfg = bpf_map_lookup_elem(&xfrag_capcfg, &zero);
	if (!cb || !cfg || !xfrag_cap_admit(cb, cfg, st, now))
		return;
	rec = bpf_ringbuf_reserve(&xfrag_capture, sizeof(*rec), 0);
	if (!rec) {
		st->cap_lost++;
		return;
	}
	rec->ts_ns = bpf_ktime_get_ns();
	rec->moved = XFRAG_CNT_BIT(reasm_timeout) | XFRAG_CNT_BIT(frag_timeout) |
		     XFRAG_CNT_BIT(reasm_fails);
	rec->cpu = bpf_get_smp_processor_id();
	rec->ifindex = 0;
	rec->len = 0;
	rec->caplen = 0;
	rec->verdict = 0;
	rec->kind = XFRAG_CAP_SWEPT;
	rec->key = x->key;
	rec->nfrags = x->nfrags;
	rec->pad = 0;
	bpf_ringbuf_submit(rec, 0);
	st->cap_records++;
}

static long xfrag_sweep_one(__u32 i, void *data)
{
	struct xfrag_sweep_ctx *c = data;
	__u32 idx = c->first + i;
	struct xfrag_way *x;

	if (idx >= c->nways)
		return 1;
	x = bpf_map_lookup_elem(&xfrag_table, &idx);
	if (!x)
		return 1;
	if (c->cap && x->state == XFRAG_WAY_ACTIVE &&
	    c->now - x->born_ns >= c->timeout)
		xfrag_cap_swept(x, c->st, c->now);
	xfrag_way_expire(x, c->pc, c->st, c->now, c->timeout);
	return 0;
}

/*
 * Sweeps a slice of the table of the CPU it runs on: with
 * BPF_F_TIMER_CPU_PIN that is the CPU that armed it; without (before 6.7)
 * it may be another, whose table it then sweeps (XFRAG_SWEEP_STALE_NS).
 * Per-CPU maps are only ever written by their own CPU.
 */
static int xfrag_sweep_cb(void *map, __u32 *key, struct xfrag_sweep *sw)
{
	struct xfrag_sweep_ctx c = {};
	struct xfrag_config *cp;
	__u32 zero = 0, per, nb = xfrag_buckets, next;

	cp = bpf_map_lookup_elem(&xfrag_config, &zero);
	c.pc = bpf_map_lookup_elem(&xfrag_pcpu, &zero);
	c.st = bpf_map_lookup_elem(&xfrag_stats, &zero);
	if (cp && c.pc && c.st && nb && !c.pc->busy) {
		/* A tenth of the table a tick, at most XFRAG_SWEEP_MAX ways. */
		per = nb / 10 + 1;
		if (per * xfrag_ways > XFRAG_SWEEP_MAX)
			per = XFRAG_SWEEP_MAX / xfrag_ways ?: 1;
		next = c.pc->sweep_next;
		if (next >= nb)
			next = 0;
		c.now = bpf_ktime_get_coarse_ns();
		c.timeout = (__u64)(cp->timeout_ms ?: XFRAG_DEF_TIMEOUT_MS) *
			    1000000ULL;
		c.first = next * xfrag_ways;
		c.nways = nb * xfrag_ways;
		c.cap = cp->flags & XFRAG_CFG_CAPTURE;
		bpf_loop(per * xfrag_ways, xfrag_sweep_one, &c, 0);
		c.pc->sweep_next = next + per;
		c.pc->swept_ns = c.now;
	}
	bpf_timer_start(&sw->timer, XFRAG_SWEEP_NS, sw->flags);
	return 0;
}

/*
 * Arm this CPU's sweeper on its first fragment, and again when its table
 * went unswept too long (a timer that moved away, before 6.7).  The timer
 * is pinned to this CPU where the kernel can (BPF_F_TIMER_CPU_PIN, 6.7);
 * elsewhere it is started without, and pc->sweep_armed says which.
 */
static __noinline void xfrag_sweep_arm(struct xfrag_pcpu *pc)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct xfrag_sweep *sw;

	if (!pc)
		return;
	pc->swept_ns = bpf_ktime_get_coarse_ns();
	if (cpu >= XFRAG_MAX_CPUS) {
		pc->sweep_armed = XFRAG_SWEEP_UNPINNED;
		return;		/* lazy expiry still reclaims */
	}
	sw = bpf_map_lookup_elem(&xfrag_sweep, &cpu);
	if (!sw)
		return;
	/* -EBUSY when armed before: the timer is kept, started again here. */
	bpf_timer_init(&sw->timer, &xfrag_sweep, CLOCK_MONOTONIC);
	if (bpf_timer_set_callback(&sw->timer, xfrag_sweep_cb))
		return;
	sw->flags = BPF_F_TIMER_CPU_PIN;
	if (!bpf_timer_start(&sw->timer, XFRAG_SWEEP_NS, BPF_F_TIMER_CPU_PIN)) {
		pc->sweep_armed = XFRAG_SWEEP_PINNED;
		return;
	}
	sw->flags = 0;
	bpf_timer_start(&sw->timer, XFRAG_SWEEP_NS, 0);
	/* Started unpinned, or not at all: tried again after
	 * XFRAG_SWEEP_STALE_NS, never on every fragment. */
	pc->sweep_armed = XFRAG_SWEEP_UNPINNED;
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
		st->frag_bad_header++;
		return XDP_DROP;
	case XFRAG_P_ATOMIC:
		/* RFC 6946: handed on at once, Fragment header and all; the
		 * kernel processes atomic fragments without queueing. */
		st->frag_atomic++;
		return XDP_PASS;
	case XFRAG_P_BAD_CHAIN:
		/* RFC 8200 4.5, RFC 7112: dropped, like the kernel does. */
		st->frag_bad_chain++;
		return XDP_DROP;
	case XFRAG_P_BIG_HDR:
		/* More unfragmentable headers than xfrag stores: the kernel
		 * gets this datagram's fragments untouched. */
		st->frag_passed++;
		return XDP_PASS;
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
			st->frag_passed++;
			xfrag_pass_track(w, p);
			return XDP_PASS;
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
			st->frag_too_long++;
			st->reasm_fails++;
			return XDP_DROP;
		}
		if (xfrag_too_big(p, hl, 0, limit) ||
		    (!tc && !xfrag_xdp_can_hold(ctx, pc, p, hl))) {
			/* Known before anything was consumed: the kernel gets
			 * the datagram untouched. */
			st->pass_dgrams++;
			if (!tc)
				st->pass_no_tc++;
			st->frag_passed++;
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
			return XDP_PASS;
		}
		/* A source over its quota is refused before it can evict
		 * anybody else's datagram. */
		if (cfg.quota) {
			slot = xfrag_srcq_slot(pc, &p->key);
			q = bpf_map_lookup_elem(&xfrag_srcq, &zero);
			if (q && q->n[XFRAG_IDX(slot, XFRAG_SRCQ_SLOTS)] >=
				 cfg.quota) {
				st->frag_quota++;
				return XDP_DROP;
			}
		}
		if (freew < 0)
			freew = xfrag_evict(base, base + xfrag_ways, policy,
					    warm_ms, XFRAG_SCORE_ANY);
		if (freew < 0) {
			st->frag_refused++;
			return XDP_DROP;
		}
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
	if (rule == XFRAG_R_DUP) {
		struct xfrag_loopvar *lv = xfrag_lv();

		/* RFC 8200 4.5: only an *exact* duplicate is dropped and the
		 * datagram kept; the same range with other bytes is an
		 * overlap (Linux compares offsets only and keeps the first
		 * copy's bytes).  This ends the stale-head path of an id
		 * wrap even with the guard off (README, Rules). */
		if (lv && !xfrag_same_bytes(ctx, idx, lv->fit.exact_i,
					    p->poff, p->len))
			rule = XFRAG_R_DUP_CHANGED;
	}
	if (rule == XFRAG_R_DUP && !p->more) {
		/* A last fragment with a held range: Linux sets the end
		 * before it finds the duplicate (ip_frag_queue,
		 * ip6_frag_queue), so data beyond it discards the datagram
		 * later.  Not a reason to deliver: nothing was added. */
		w->flags |= XFRAG_F_LAST_SEEN;
		w->end = p->offset + p->len;
	}
	if (rule == XFRAG_R_TOO_MANY && tc == XFRAG_DELIVER_REPLAY &&
	    cfg.too_many != XFRAG_TOO_MANY_DROP)
		return xfrag_flush(ctx, w, idx, p, pc, st, now);
	if (rule != XFRAG_R_OK)
		return xfrag_reject(w, rule, pc, st);
	if (xfrag_too_big(p, hl, w->max_end, limit)) {
		/* Learned too late: fragments were already consumed. */
		st->frag_oversize++;
		xfrag_way_discard(w, pc, st);
		return XDP_DROP;
	}
	if (xfrag_make_room(&cfg, st, base, idx, policy, warm_ms, w, p) &&
	    !w->nfrags) {
		/* Still above the high watermark: a new datagram is refused,
		 * and what is left of the budget stays for the datagrams in
		 * progress (a flood of fresh datagrams must not take it). */
		st->frag_nomem++;
		xfrag_way_discard(w, pc, st);
		return XDP_DROP;
	}
	if (xfrag_store(ctx, idx, p->poff, p->offset, p->len)) {
		/* Memory budget spent: the kernel's answer too (it refuses
		 * every fragment above ipfrag_high_thresh). */
		st->frag_nomem++;
		xfrag_way_discard(w, pc, st);
		return XDP_DROP;
	}
	if (p->offset == 0) {
		if (xfrag_keep_hdr(ctx, w, p)) {
			/* cannot happen: the header was parsed already */
			st->frag_bad_header++;
			xfrag_way_discard(w, pc, st);
			return XDP_DROP;
		}
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
	return XDP_DROP;	/* consumed: held until the datagram completes */
}

/*
 * Steering: is this fragment's owner another CPU?  Then redirect it there
 * through xfrag_cpumap and return XDP_REDIRECT; else -1, process it here.
 * The owner hashes the key without its id (include/xfrag.h), under the
 * steering key of the config: the same on every CPU.  A refused redirect (no cpumap
 * entry) is counted and the fragment processed where it is.
 */
static __always_inline int xfrag_steer(struct xfrag_pkt *p)
{
	struct xfrag_config *cp;
	struct xfrag_stats *st;
	__u32 zero = 0, n, slot, *cpu;
	__u64 h;

	cp = bpf_map_lookup_elem(&xfrag_config, &zero);
	if (!cp || !(cp->flags & XFRAG_CFG_STEER))
		return -1;
	n = cp->steer_ncpus;
	if (!n || n > XFRAG_MAX_CPUS)
		return -1;
	h = xfrag_flow_hash(&p->key, cp->steer_key[0], cp->steer_key[1]);
	slot = (__u32)(((h >> 32) * n) >> 32);
	cpu = bpf_map_lookup_elem(&xfrag_owners, &slot);
	if (!cpu || *cpu == bpf_get_smp_processor_id())
		return -1;
	st = xfrag_st();
	if (!st)
		return -1;
	if (bpf_redirect_map(&xfrag_cpumap, *cpu, 0) == XDP_REDIRECT) {
		st->steer_out++;
		return XDP_REDIRECT;
	}
	st->steer_failed++;
	return -1;
}

/*
 * The XDP data path.  `entry` is a compile-time constant: XFRAG_ON_DEVICE
 * steers fragments to their owner; XFRAG_ON_OWNER (the cpumap entry
 * points) runs on the owner and never redirects, so no fragment is
 * redirected twice and those programs never reference xfrag_cpumap.
 */
#define XFRAG_ON_DEVICE	0
#define XFRAG_ON_OWNER	1

/* ---- Capture (xfrag capture) ---------------------------------------------- */

static __always_inline int xfrag_cap_on(void)
{
	struct xfrag_config *c;
	__u32 zero = 0;

	c = bpf_map_lookup_elem(&xfrag_config, &zero);
	return c && (c->flags & XFRAG_CFG_CAPTURE);
}

/* The counters as they were before this fragment. */
__noinline int xfrag_cap_pre(void)
{
	struct xfrag_capbuf *cb;
	struct xfrag_stats *st;
	__u32 zero = 0;

	cb = bpf_map_lookup_elem(&xfrag_capbuf, &zero);
	st = bpf_map_lookup_elem(&xfrag_stats, &zero);
	if (cb && st) {
		cb->before = *st;
		cb->armed = 1;
	}
	return 0;
}

/*
 * After the fragment: the counters it moved, as a bit mask (no branch per
 * counter: one path for the verifier).  A record when
 * one of them is a counter of loss (or, with XFRAG_CFG_CAP_DELIVER, a
 * datagram rebuilt in this frame), 1 fragment in cap_sample, at most
 * cap_rate records a second on this CPU; what the rate or a full ring
 * buffer refuses is counted in cap_lost.
 */
__noinline int xfrag_cap_post(struct xdp_md *ctx, int verdict)
{
	const __u64 *a, *b;
	struct xfrag_cap_rec *rec;
	struct xfrag_config *conf;
	struct xfrag_capcfg *cfg;
	struct xfrag_capbuf *cb;
	struct xfrag_stats *st;
	__u32 zero = 0, len, n;
	__u64 moved = 0, now;

	cb = bpf_map_lookup_elem(&xfrag_capbuf, &zero);
	st = bpf_map_lookup_elem(&xfrag_stats, &zero);
	cfg = bpf_map_lookup_elem(&xfrag_capcfg, &zero);
	conf = bpf_map_lookup_elem(&xfrag_config, &zero);
	if (!cb || !st || !cfg || !conf || !ctx || !cb->armed)
		return 0;	/* not armed: capture began during the run */
	cb->armed = 0;
	a = (const __u64 *)&cb->before;
	b = (const __u64 *)st;
	/* A loop, not unrolled: unrolled, clang loads every pair first and
	 * spills them, past the stack the XDP program leaves. */
#pragma clang loop unroll(disable)
	for (int i = 0; i < (int)(sizeof(struct xfrag_stats) / 8); i++) {
		__u64 d = a[i] ^ b[i], nd = 0 - d;

		/* d != 0 without a branch: (d | -d) has bit 63 set. */
		asm volatile("" : "+r"(nd));
		moved |= ((d | nd) >> 63) << i;
	}
	if (!(moved & ~XFRAG_CAP_BENIGN) &&
	    !((conf->flags & XFRAG_CFG_CAP_DELIVER) &&
	      (moved & XFRAG_CAP_DELIVERED)))
		return 0;
	if (cfg->cap_sample > 1 && cb->seen++ % cfg->cap_sample)
		return 0;
	now = bpf_ktime_get_ns();
	if (!xfrag_cap_admit(cb, cfg, st, now))
		return 0;
	rec = bpf_ringbuf_reserve(&xfrag_capture, sizeof(*rec), 0);
	if (!rec) {
		st->cap_lost++;
		return 0;
	}
	len = bpf_xdp_get_buff_len(ctx);
	n = cfg->cap_snap && cfg->cap_snap < XFRAG_CAP_SNAP ? cfg->cap_snap :
							      XFRAG_CAP_SNAP;
	if (n > len)
		n = len;
	rec->caplen = 0;
	if (n >= 1) {
		/* n is 1..XFRAG_CAP_SNAP already; the mask says so to the
		 * verifier (6.1 does not follow clang's range checks). */
		n = ((n - 1) & (XFRAG_CAP_SNAP - 1)) + 1;
		if (!bpf_xdp_load_bytes(ctx, 0, rec->data, n))
			rec->caplen = n;
	}
	rec->ts_ns = now;
	rec->moved = moved;
	rec->cpu = bpf_get_smp_processor_id();
	rec->ifindex = ctx->ingress_ifindex;
	rec->len = len;
	rec->verdict = verdict;
	rec->kind = XFRAG_CAP_FRAME;
	__builtin_memset(&rec->key, 0, sizeof(rec->key));
	rec->nfrags = 0;
	rec->pad = 0;
	bpf_ringbuf_submit(rec, 0);
	st->cap_records++;
	return 0;
}

static __always_inline int xfrag_xdp_run(struct xdp_md *ctx, const int entry)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct xfrag_pkt p;
	struct xfrag_pcpu *pc;
	__u32 l3off = 0;
	__u16 vlan = 0;
	int r;

	if (entry == XFRAG_ON_OWNER) {
		struct xfrag_stats *st = xfrag_st();

		if (st)
			st->steer_in++;
	}
	switch (xfrag_parse_l2(data, data_end, &l3off, &vlan)) {
	case ETH_P_IP:
		r = xfrag_parse_ip4(ctx, data, data_end, l3off, vlan, &p);
		break;
	case ETH_P_IPV6:
		r = xfrag_parse_ip6(ctx, &p);
		break;
	default:
		return XDP_PASS;
	}
	if (r == XFRAG_P_NOT_FRAG)
		return XDP_PASS;
	if (entry == XFRAG_ON_DEVICE && r == XFRAG_P_FRAG) {
		int v = xfrag_steer(&p);

		if (v >= 0)
			return v;
	}
	pc = xfrag_busy_enter();
	/* The flag is read again after the run rather than kept: the XDP
	 * program's stack has no 8 bytes to spare (6.1 counts 512 over its
	 * deepest call chain); a capture that begins during the run finds
	 * xfrag_cap_pre() did not arm it. */
	if (xfrag_cap_on())
		xfrag_cap_pre();
	r = xfrag_fragment(ctx, &p, r);
	if (xfrag_cap_on())
		xfrag_cap_post(ctx, r);
	xfrag_busy_leave(pc);
	return r;
}

SEC("xdp.frags")
int xfrag_xdp(struct xdp_md *ctx)
{
	return xfrag_xdp_run(ctx, XFRAG_ON_DEVICE);
}

/*
 * The cpumap entry points: fragments steered to their owner.  A cpumap
 * takes its program's multi-buffer setting from the program that
 * redirects into it: xfrag_owner where xfrag_xdp runs as its own
 * program (frags), xfrag_owner_nf under a dispatcher that loaded it
 * without (libxdp on 6.1).  `xfrag attach` loads the one that fits.
 */
SEC("xdp.frags/cpumap")
int xfrag_owner(struct xdp_md *ctx)
{
	return xfrag_xdp_run(ctx, XFRAG_ON_OWNER);
}

SEC("xdp/cpumap")
int xfrag_owner_nf(struct xdp_md *ctx)
{
	return xfrag_xdp_run(ctx, XFRAG_ON_OWNER);
}

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

SEC("tc")
int xfrag_tc(struct __sk_buff *skb)
{
	struct xfrag_pcpu *pc = xfrag_busy_enter();
	int r = xfrag_tc_run(skb);

	xfrag_busy_leave(pc);
	return r;
}
