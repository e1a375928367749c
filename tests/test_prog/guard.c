// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* test_prog: the id-wrap guard. */
#include "test_prog.h"

/* ---- Id-wrap guard ----------------------------------------------------------- */

__s64 delta(const struct snap *a, const struct snap *b, int c)
{
	return (__s64)(b->v[c] - a->v[c]);
}

/* Every guard slot of every CPU at `v` (wrap-around arithmetic). */
static int guard_fill(struct tctx *t, __u32 v)
{
	size_t sz = sizeof(struct xfrag_guard);
	struct xfrag_guard *g = calloc(ncpus, sz);
	__u32 zero = 0;
	int err;

	REQUIRE(g, "calloc");
	for (int c = 0; c < ncpus; c++)
		for (int i = 0; i < XFRAG_GUARD_SLOTS; i++)
			g[c].n[i] = v;
	err = bpf_map_update_elem(bpf_map__fd(t->skel->maps.xfrag_guard),
				  &zero, g, BPF_ANY);
	free(g);
	REQUIRE(!err, "guard map: %s", strerror(errno));
	return 0;
}

/*
 * RFC 4963: datagram `old` (id 500) lost its last fragment; `gap` more
 * fragments of the same flow go by (complete 2-fragment datagrams, ids
 * 501..); then a later datagram with the same id 500 sends its last
 * fragment.  arg: bit 0 guard off, bit 1 counters start near 2^32 (the
 * count wraps in between), bit 2 one fragment fewer than the limit.  With
 * the guard (limit 8) the stale head is ended (reasm_stale, frag_stale)
 * and the tail starts a new datagram; at the limit, or with the guard
 * off, the tail completes the head: a datagram of two originals (the
 * failure the guard exists for, shown so the test can tell).
 */
int t_guard(struct tctx *t)
{
	int off = t->arg & 1, wrap = t->arg & 2, within = t->arg & 4;
	struct dgram *old = udp_dgram(500, 2000), *o2;
	__u32 limit = 8, gap = within ? limit - 1 : limit;
	struct snap s0, s1;
	struct frame f;
	struct fl fl[2];
	int mixed;

	TRY(load(t, &(struct setup){ .max_dist = off ? XFRAG_MAX_DIST_OFF :
							 limit }));
	if (wrap)
		TRY(guard_fill(t, 0xfffffffaU));
	TRY(snap(t, -1, &s0));
	mkfrag(&f, old, 0, 1480, 1, 0);
	TRY(send_drop(t, &f, "first fragment of id 500"));
	/* gap fragments: whole datagrams 501.., then one first fragment. */
	for (__u32 i = 0; i + 2 <= gap; i += 2) {
		struct dgram *d = udp_dgram(501 + i / 2, 2000);

		split(d, 1480, fl);
		TRY(send_seq(t, d, fl, NULL, 2, END_REBUILT));
	}
	if (gap & 1) {
		mkfrag(&f, udp_dgram(600, 2000), 0, 1480, 1, 0);
		TRY(send_drop(t, &f, "first fragment of id 600"));
	}
	/* A new datagram with id 500 (other bytes): its last fragment. */
	o2 = dg();
	build(o2, &(struct dopt){ .id = 500, .udp_len = 2000, .seed = 77 });
	mkfrag(&f, o2, 1480, 520, 0, 0);
	TRY(xdp(t, f.b, f.len));
	TRY(snap(t, -1, &s1));
	mixed = t->ret == XDP_PASS;
	if (off || within) {
		REQUIRE(mixed && delta(&s0, &s1, C_reasm_stale) == 0,
			"%s: the tail did not complete the held head (XDP_%s, "
			"reasm_stale %+lld)", off ? "guard off" : "at the limit",
			vname(t->ret), (long long)delta(&s0, &s1, C_reasm_stale));
		return 0;
	}
	TRY(verdict(t, XDP_DROP, "tail of the new id 500: held, not merged"));
	REQUIRE(delta(&s0, &s1, C_reasm_stale) == 1 &&
		delta(&s0, &s1, C_frag_stale) == 1 &&
		delta(&s0, &s1, C_reasm_oks) == gap / 2 &&
		delta(&s0, &s1, C_reasm_fails) == 1 &&
		delta(&s0, &s1, C_frags_in_flight) == 1 + (gap & 1),
		"reasm_stale %+lld frag_stale %+lld reasm_oks %+lld "
		"reasm_fails %+lld frags_in_flight %+lld",
		(long long)delta(&s0, &s1, C_reasm_stale),
		(long long)delta(&s0, &s1, C_frag_stale),
		(long long)delta(&s0, &s1, C_reasm_oks),
		(long long)delta(&s0, &s1, C_reasm_fails),
		(long long)delta(&s0, &s1, C_frags_in_flight));
	/* The new datagram completes with its own first fragment. */
	mkfrag(&f, o2, 0, 1480, 1, 0);
	return send_rebuilt(t, &f, o2, "first fragment of the new id 500");
}

/* Other flows' fragments never age a datagram: the count is per flow. */
int t_guard_flows(struct tctx *t)
{
	struct dgram *d = udp_dgram(700, 2000), *e = dg();
	struct frame f;

	TRY(load(t, &(struct setup){ .max_dist = 4 }));
	mkfrag(&f, d, 0, 1480, 1, 0);
	TRY(send_drop(t, &f, "first fragment of id 700"));
	/* 20 first fragments from 20 other sources (other flows). */
	for (int x = 1; x <= 20; x++) {
		build(e, &(struct dopt){ .id = 700, .udp_len = 2000 });
		mkfrag(&f, e, 0, 1480, 1, 0);
		f.b[e->l3off + 14] = x;
		fr_ip4_csum(f.b + e->l3off);
		TRY(send_drop(t, &f, "other flow"));
	}
	mkfrag(&f, d, 1480, 520, 0, 0);
	return send_rebuilt(t, &f, d, "last fragment of id 700");
}
