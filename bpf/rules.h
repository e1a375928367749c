/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fragment rules: where each fragment's fate is decided.  Verdicts follow
 * Linux 6.x's ip_frag_queue()/inet_frag_queue_insert() unless a comment
 * says otherwise.
 */
#ifndef XFRAG_RULES_H
#define XFRAG_RULES_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xfrag.h"
#include "maps.h"
#include "parse.h"
#include "table.h"

enum xfrag_fit {
	XFRAG_FIT_NEW = 0,	/* disjoint from everything stored */
	XFRAG_FIT_DUP,		/* same offset and length as a stored fragment */
	XFRAG_FIT_OVERLAP,	/* any other intersection */
};

struct xfrag_fit_ctx {
	struct xfrag_way *w;
	struct xfrag_loopvar *lv;	/* carried: lv->fit */
	__u32 s, e;		/* the new fragment */
};

static long xfrag_fit_one(__u32 i, void *data)
{
	struct xfrag_fit_ctx *c = data;
	struct xfrag_loopvar *lv = c->lv;
	struct xfrag_desc d;
	__u32 ps, pe;

	if (i >= XFRAG_MAX_DESC)
		return 1;
	d = c->w->desc[i];
	ps = (__u32)d.off8 * 8;
	pe = ps + xfrag_desc_len(&d);
	if (!(d.lenm1 & XFRAG_DESC_CONT)) {
		/* A new stored fragment starts: close the previous one. */
		if (lv->fit.cur_e && lv->fit.cur_s == c->s &&
		    lv->fit.cur_e == c->e) {
			lv->fit.exact = 1;
			lv->fit.exact_i = lv->fit.cur_i;
		}
		lv->fit.cur_s = ps;
		lv->fit.cur_i = i;
	}
	lv->fit.cur_e = pe;
	if (ps < c->e && c->s < pe)
		lv->fit.overlap = 1;
	return 0;
}

/*
 * RFC 5722 section 4 (with erratum 3089): when any fragment overlaps
 * another, the whole datagram is discarded; an exact duplicate is dropped
 * and the datagram kept.  Deliberate difference from Linux: Linux treats a
 * fragment lying wholly inside data already held as a duplicate; xfrag
 * treats it as an overlap, as RFC 5722 asks, since its bytes may differ.
 */
static __always_inline int xfrag_fit(struct xfrag_way *w, __u32 s, __u32 e)
{
	struct xfrag_fit_ctx c = { .w = w, .s = s, .e = e };
	__u32 n = w->ndesc;

	/* In order: a fragment that starts at or beyond the highest end
	 * held meets nothing stored (every stored piece ends at or before
	 * w->max_end), so the scan below would find it new; skipping it
	 * makes an in-order datagram of n fragments n checks, not n*n/2. */
	if (s >= w->max_end)
		return XFRAG_FIT_NEW;
	c.lv = xfrag_lv();
	if (!c.lv)
		return XFRAG_FIT_OVERLAP;	/* cannot happen */
	c.lv->fit.cur_s = 0;
	c.lv->fit.cur_e = 0;
	c.lv->fit.overlap = 0;
	c.lv->fit.exact = 0;
	c.lv->fit.cur_i = 0;
	c.lv->fit.exact_i = 0;
	if (n > XFRAG_MAX_DESC)
		n = XFRAG_MAX_DESC;
	bpf_loop(n, xfrag_fit_one, &c, 0);
	if (c.lv->fit.cur_e && c.lv->fit.cur_s == s && c.lv->fit.cur_e == e) {
		c.lv->fit.exact = 1;
		c.lv->fit.exact_i = c.lv->fit.cur_i;
	}
	if (!c.lv->fit.overlap)
		return XFRAG_FIT_NEW;
	return c.lv->fit.exact ? XFRAG_FIT_DUP : XFRAG_FIT_OVERLAP;
}

/*
 * L3 header length the rebuilt datagram will have, before its first
 * fragment is seen: IPv6 fragments all carry the unfragmentable part; an
 * IPv4 non-first fragment may lack options, so assume the minimum.
 */
static __always_inline __u32 xfrag_hl_guess(const struct xfrag_pkt *p)
{
	return (p->offset == 0 || p->key.family == XFRAG_AF_INET6) ? p->hlen
								    : 20;
}

/* Ping of death: the datagram may not exceed 65535 bytes (RFC 791; RFC
 * 8200: the payload length, without the 40-byte IPv6 header). */
static __always_inline int xfrag_too_long(const struct xfrag_pkt *p, __u32 hl,
					  __u32 end)
{
	return hl - (p->key.family == XFRAG_AF_INET6 ? 40 : 0) + end > 65535;
}

/*
 * Check fragment p against the datagram held in w (nothing is changed):
 * XFRAG_O_OK, or the outcome of the first rule it breaks (XFRAG_OUTCOMES,
 * include/xfrag.h).  `hl` is the L3 header length the rebuilt datagram
 * will have.
 */
static __always_inline int xfrag_check(struct xfrag_way *w,
				       struct xfrag_pkt *p, __u32 hl,
				       __u32 max_frags)
{
	__u32 end = p->offset + p->len;
	int fit;

	if (xfrag_too_long(p, hl, end))
		return XFRAG_O_too_long;
	/* RFC 8200 4.5: a non-last fragment must be a multiple of 8 long. */
	if (p->key.family == XFRAG_AF_INET6 && p->more && (p->len & 7))
		return XFRAG_O_bad_len;
	if (!p->more) {
		/* A last fragment ending before data already held, or a second
		 * last fragment with another end: corrupt (ip_frag_queue). */
		if (end < w->max_end ||
		    ((w->flags & XFRAG_F_LAST_SEEN) && end != w->end))
			return XFRAG_O_bad_end;
	} else if ((w->flags & XFRAG_F_LAST_SEEN) && end > w->end) {
		/* Data beyond the known end. */
		return XFRAG_O_bad_end;
	}
	/* Zero-length fragments discard the datagram, as in ip_frag_queue. */
	if (p->len == 0)
		return XFRAG_O_zero_len;
	fit = xfrag_fit(w, p->offset, end);
	if (fit == XFRAG_FIT_DUP)
		return XFRAG_O_dup;
	if (fit == XFRAG_FIT_OVERLAP)
		return XFRAG_O_overlap;
	if (w->nfrags >= max_frags ||
	    w->ndesc + (p->len + XFRAG_CHUNK - 1) / XFRAG_CHUNK > XFRAG_MAX_DESC)
		return XFRAG_O_too_many;
	return XFRAG_O_OK;
}

#endif /* XFRAG_RULES_H */
