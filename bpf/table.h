/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The bucket-indexed table and the chunk allocator.
 *
 * A keyed hash (SipHash-1-3, secret per CPU) picks one bucket of W ways; a
 * fragment only ever reads and writes the ways of its own bucket and the
 * chunks of the datagram it belongs to, so its cost is bounded whatever the
 * rest of the table holds.  Expired ways are reclaimed when their bucket is
 * visited; there is no timer per entry.
 */
#ifndef XFRAG_TABLE_H
#define XFRAG_TABLE_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xfrag.h"
#include "maps.h"
#include "parse.h"
#include "siphash.h"

/*
 * Bound an index for the verifier: n must be a power of two and the caller
 * must already have checked x < n (the mask then changes nothing, but clang
 * cannot drop it and the verifier sees the range).
 */
#define XFRAG_IDX(x, n)							\
	({								\
		__u32 __v = (x);					\
		asm volatile("%0 &= %1" : "+r"(__v) : "i"(-1 + (n)));	\
		__v;							\
	})

/* The hash secret: the loader's, else this CPU's own. */
static __always_inline void xfrag_secret_of(struct xfrag_pcpu *pc, __u64 *k0p,
					    __u64 *k1p)
{
	__u64 k0 = xfrag_secret[0], k1 = xfrag_secret[1];

	if (!(k0 | k1)) {
		/* No secret from the loader (xdp-loader): one per CPU, drawn
		 * at this CPU's first fragment. */
		if (!(pc->secret[0] | pc->secret[1])) {
			pc->secret[0] = ((__u64)bpf_get_prandom_u32() << 32) |
					bpf_get_prandom_u32();
			pc->secret[1] = ((__u64)bpf_get_prandom_u32() << 32) |
					bpf_get_prandom_u32() | 1;
		}
		k0 = pc->secret[0];
		k1 = pc->secret[1];
	}
	*k0p = k0;
	*k1p = k1;
}

/* First way of the key's bucket. */
static __always_inline __u32 xfrag_bucket_base(struct xfrag_pcpu *pc,
					       const struct xfrag_key *key)
{
	__u64 k0, k1, h;

	xfrag_secret_of(pc, &k0, &k1);
	h = xfrag_hash(key, k0, k1);
	/* Multiply-shift maps 32 hash bits onto [0, buckets) without a divide. */
	return (__u32)(((h & 0xffffffff) * xfrag_buckets) >> 32) * xfrag_ways;
}

/*
 * SipHash of a datagram's flow: its key without the id (source,
 * destination, protocol, VLAN), under k0 ^ XFRAG_OWNER_SALT: steering's
 * owner and the id-wrap guard's slot.
 */
static __always_inline __u64 xfrag_flow_hash(const struct xfrag_key *key,
					     __u64 k0, __u64 k1)
{
	struct xfrag_key k = *key;

	k.id = 0;
	return xfrag_hash(&k, k0 ^ XFRAG_OWNER_SALT, k1);
}

/* Id-wrap guard slot of the key's flow (this CPU's secret will do). */
static __always_inline __u32 xfrag_guard_slot(struct xfrag_pcpu *pc,
					      const struct xfrag_key *key)
{
	__u64 k0, k1;

	xfrag_secret_of(pc, &k0, &k1);
	return xfrag_flow_hash(key, k0, k1) & (XFRAG_GUARD_SLOTS - 1);
}

/* Quota slot of the key's source (IPv4 address, IPv6 /64). */
static __always_inline __u32 xfrag_srcq_slot(struct xfrag_pcpu *pc,
					     const struct xfrag_key *key)
{
	struct xfrag_key s = {};
	__u64 k0, k1;

	s.family = key->family;
	s.saddr[0] = key->saddr[0];
	if (key->family == XFRAG_AF_INET6)
		s.saddr[1] = key->saddr[1];
	xfrag_secret_of(pc, &k0, &k1);
	return xfrag_hash(&s, k0, k1) & (XFRAG_SRCQ_SLOTS - 1);
}

/* ---- Chunks --------------------------------------------------------------- */

/*
 * Take one chunk of this CPU's budget; returns its index or -1.  Global, so
 * that its two paths do not double the states of every loop calling it.
 */
__noinline long xfrag_chunk_alloc(void)
{
	struct xfrag_pcpu *pc;
	__u32 zero = 0, top, *slot;

	pc = bpf_map_lookup_elem(&xfrag_pcpu, &zero);
	if (!pc)
		return -1;
	top = pc->free_top;
	if (top > 0) {
		top--;
		slot = bpf_map_lookup_elem(&xfrag_free, &top);
		if (!slot)
			return -1;
		pc->free_top = top;
		return *slot;
	}
	if (pc->next_fresh < xfrag_nchunks)
		return pc->next_fresh++;
	return -1;
}

static __always_inline void xfrag_chunk_free(struct xfrag_pcpu *pc, __u32 idx)
{
	__u32 top = pc->free_top, *slot;

	slot = bpf_map_lookup_elem(&xfrag_free, &top);
	if (!slot)
		return;		/* cannot happen: at most nchunks are out */
	*slot = idx;
	pc->free_top = top + 1;
}

struct xfrag_free_ctx {
	struct xfrag_way *w;
	struct xfrag_pcpu *pc;
};

static long xfrag_free_one(__u32 i, void *data)
{
	struct xfrag_free_ctx *fc = data;

	if (i >= XFRAG_MAX_DESC)
		return 1;
	xfrag_chunk_free(fc->pc, fc->w->desc[XFRAG_IDX(i, XFRAG_MAX_DESC)].chunk);
	return 0;
}

/* The datagram no longer counts against its source's quota. */
static __always_inline void xfrag_quota_put(struct xfrag_way *w)
{
	struct xfrag_srcq *q;
	__u32 zero = 0, i;

	if (!(w->flags & XFRAG_F_QUOTA))
		return;
	w->flags &= ~XFRAG_F_QUOTA;
	q = bpf_map_lookup_elem(&xfrag_srcq, &zero);
	if (!q)
		return;
	i = XFRAG_IDX(w->srcq & (XFRAG_SRCQ_SLOTS - 1), XFRAG_SRCQ_SLOTS);
	if (q->n[i])
		q->n[i]--;
}

/*
 * Return a way's chunks and take it out of the gauges.  The caller has
 * already counted the outcome of the fragments it held.
 */
static __noinline void xfrag_way_release(struct xfrag_way *w,
					 struct xfrag_pcpu *pc,
					 struct xfrag_stats *st)
{
	struct xfrag_free_ctx fc = { .w = w, .pc = pc };
	__u32 n = w->ndesc;

	if (n > XFRAG_MAX_DESC)
		n = XFRAG_MAX_DESC;
	bpf_loop(n, xfrag_free_one, &fc, 0);

	if (w->state == XFRAG_WAY_ACTIVE) {
		st->dgrams_in_flight--;
		st->frags_in_flight -= w->nfrags;
	} else if (w->state == XFRAG_WAY_HANDOFF ||
		   w->state == XFRAG_WAY_COLLECTED) {
		st->handoff_pending--;
	}
	/* A pass-through record's rcvd counts bytes the kernel got: never
	 * in the gauge (found by tests/fuzz_prog); a flushed datagram left
	 * the gauges when it was flushed (xfrag_flush()). */
	if (w->state != XFRAG_WAY_PASS && w->state != XFRAG_WAY_FLUSH &&
	    w->state != XFRAG_WAY_FLUSHED)
		st->bytes_in_flight -= w->rcvd;
	st->mem_in_flight -= (__u64)w->nchunks * XFRAG_CHUNK;
	xfrag_quota_put(w);
	w->state = XFRAG_WAY_FREE;
	w->ndesc = 0;
	w->nchunks = 0;
	w->nfrags = 0;
	w->rcvd = 0;
}

/*
 * A flushed datagram's pieces went to the kernel: its chunks come back and
 * the way stays as the datagram's pass-through record (its later
 * fragments go to the kernel too, until it is done or times out).
 */
static __noinline void xfrag_way_flushed(struct xfrag_way *w,
					 struct xfrag_pcpu *pc,
					 struct xfrag_stats *st)
{
	struct xfrag_free_ctx fc = { .w = w, .pc = pc };
	__u32 n = w->ndesc;

	if (n > XFRAG_MAX_DESC)
		n = XFRAG_MAX_DESC;
	bpf_loop(n, xfrag_free_one, &fc, 0);
	st->mem_in_flight -= (__u64)w->nchunks * XFRAG_CHUNK;
	w->ndesc = 0;
	w->nchunks = 0;
	w->nfrags = 0;
	w->state = XFRAG_WAY_PASS;
}

/* Discard an incomplete datagram: its held fragments become `discarded`. */
static __always_inline void xfrag_way_discard(struct xfrag_way *w,
					      struct xfrag_pcpu *pc,
					      struct xfrag_stats *st)
{
	st->frag_discarded += w->nfrags;
	st->reasm_fails++;
	xfrag_way_release(w, pc, st);
}

/*
 * Reclaim a way whose time is up, counting what it held.  Returns 1 if the
 * way is free afterwards.  Time-outs run from the first fragment and are
 * never extended (RFC 791's advice to extend them lets a trickle pin
 * memory forever).
 */
static __always_inline int xfrag_way_expire(struct xfrag_way *w,
					    struct xfrag_pcpu *pc,
					    struct xfrag_stats *st,
					    __u64 now, __u64 timeout)
{
	switch (w->state) {
	case XFRAG_WAY_FREE:
		return 1;
	case XFRAG_WAY_ACTIVE:
		if (now - w->born_ns < timeout)
			return 0;
		st->frag_timeout += w->nfrags;
		st->reasm_timeout++;
		st->reasm_fails++;
		break;
	case XFRAG_WAY_PASS:
		if (now - w->born_ns < timeout)
			return 0;
		break;
	case XFRAG_WAY_HANDOFF:
		if (now - w->touched_ns < XFRAG_HANDOFF_NS)
			return 0;
		st->handoff_lost++;
		break;
	case XFRAG_WAY_COLLECTED:
		break;
	case XFRAG_WAY_FLUSH:
		if (now - w->touched_ns < XFRAG_HANDOFF_NS)
			return 0;
		st->flush_lost++;	/* TC never replayed its pieces */
		break;
	case XFRAG_WAY_FLUSHED:
		/* Replayed by TC on another CPU: free here, then a record. */
		xfrag_way_flushed(w, pc, st);
		if (now - w->born_ns < timeout)
			return 0;
		break;
	default:
		break;
	}
	xfrag_way_release(w, pc, st);
	return 1;
}

#endif /* XFRAG_TABLE_H */
