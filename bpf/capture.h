/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Capture (`xfrag capture`): records of the fragments whose run moved a
 * counter of loss, and of the sweeper's time-outs, written to the
 * xfrag_capture ring buffer while XFRAG_CFG_CAPTURE is set.
 */
#ifndef XFRAG_CAPTURE_H
#define XFRAG_CAPTURE_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xfrag.h"
#include "maps.h"
#include "parse.h"

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

#endif /* XFRAG_CAPTURE_H */
