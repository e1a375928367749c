// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* test_prog: the attack catalogue and memory limits. */
#include "test_prog.h"

/* ---- Attack catalogue -------------------------------------------------------
 *
 * Each: the attack, then an honest datagram that must still be rebuilt,
 * with the counters (checked after every frame) accounting for everything
 * and the memory in use within the budget.
 */

/* An honest 3000-byte datagram, in order, rebuilt in place. */
static int honest(struct tctx *t, __u16 id)
{
	struct dgram *d = udp_dgram(id, 3000);
	struct fl fl[4];
	int n = split(d, MTU_FRAG, fl);

	return send_seq(t, d, fl, NULL, n, END_REBUILT);
}

static int mem_within(struct tctx *t, __u32 nchunks)
{
	struct snap s;

	TRY(snap(t, -1, &s));
	REQUIRE(s.v[C_mem_in_flight] <= (__u64)nchunks * XFRAG_CHUNK,
		"memory in use %llu beyond the budget %llu",
		(unsigned long long)s.v[C_mem_in_flight],
		(unsigned long long)nchunks * XFRAG_CHUNK);
	return 0;
}

/*
 * Floods of incomplete datagrams (first fragment only, random ids) and the
 * Rose attack (first and last fragments, never the middle), into a small
 * table (16 ways, 64 chunks): `progress` evicts them for the honest one.
 */
int t_flood(struct tctx *t)
{
	int rose = t->arg;
	__u32 x = 0x5eed + t->arg;
	struct frame f;

	TRY(load(t, &(struct setup){ .buckets = 4, .ways = 4, .nchunks = 64,
				      .warm_ms = 5 }));
	for (int i = 0; i < 500; i++) {
		struct dgram *d = udp_dgram(xorshift(&x) & 0xffff, 4416);

		mkfrag(&f, d, 0, 1480, 1, 0);
		TRY(xdp(t, f.b, f.len));
		if (rose) {
			mkfrag(&f, d, 2960, 1456, 0, 0);
			TRY(xdp(t, f.b, f.len));
		}
		TRY(mem_within(t, 64));
	}
	sleep_ms(10);
	TRY(honest(t, 0xabc));
	return mem_within(t, 64);
}

/*
 * Overlap attacks: each pattern discards the datagram (RFC 5722); the
 * sender's honest retransmission (a new id) is rebuilt.
 *   teardrop       second fragment inside the first, ending before it
 *   fragmentsmack  many small fragments overlapping one another (each
 *                  overlap discards what is held; the next one starts anew)
 *   rfc1858        fragment offset 1 (byte 8) over a 24-byte first
 *                  fragment, rewriting the TCP header's flags (RFC 1858 3.2)
 *   sturges-novak  a later fragment overlapping both its neighbours
 * (A rewrite with the same offset and length is an exact duplicate and
 * dropped, keeping the first copy: dup_exact.)
 */
static const struct ovl {
	int n, overlaps, discarded;
	struct fl f[6];
} ovls[] = {
	{ 2, 1, 1, { { 0, 1480, 1 }, { 8, 400, 1 } } },
	{ 6, 3, 3, { { 0, 16, 1 }, { 8, 16, 1 }, { 16, 16, 1 }, { 24, 16, 1 },
		     { 32, 16, 1 }, { 40, 16, 1 } } },
	{ 2, 1, 1, { { 0, 24, 1 }, { 8, 400, 1 } } },
	{ 3, 1, 2, { { 0, 800, 1 }, { 1600, 800, 1 }, { 400, 1600, 1 } } },
};

int t_overlap_attack(struct tctx *t)
{
	const struct ovl *o = &ovls[t->arg];
	struct dgram *d = udp_dgram(900 + t->arg, 3000);
	struct frame f;
	struct snap s;

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	for (int i = 0; i < o->n; i++) {
		mkfrag(&f, d, o->f[i].off, o->f[i].len, o->f[i].mf, 0);
		TRY(send_drop(t, &f, "attack fragment"));
	}
	EXPECT(t, &s, D(reasm_reqds, o->n), D(frag_overlap, o->overlaps),
	       D(frag_discarded, o->discarded),
	       D(reasm_overlaps, o->overlaps), D(reasm_fails, o->overlaps));
	return honest(t, 950 + t->arg);
}

/* 8-byte fragments, a thousand of them: the 65th discards the datagram. */
int t_tiny(struct tctx *t)
{
	struct dgram *d = udp_dgram(960, 8000);
	struct frame f;
	struct snap s;

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	for (int i = 0; i < 1000; i++) {
		mkfrag(&f, d, 8 * i, 8, 1, 0);
		TRY(send_drop(t, &f, "8-byte fragment"));
	}
	/* 64 held, the 65th discards them; the rest start anew and stop at
	 * 64 again: 1000 = 15 x 65 + 25. */
	EXPECT(t, &s, D(reasm_reqds, 1000), D(frag_too_many, 15),
	       D(frag_discarded, 15 * 64), D(reasm_fails, 15),
	       D(frags_in_flight, 25), D(dgrams_in_flight, 1),
	       D(bytes_in_flight, 25 * 8), D(mem_in_flight, 25 * XFRAG_CHUNK));
	return honest(t, 961);
}

/* Every fragment ten times: duplicates dropped, the datagram rebuilt. */
int t_dup_storm(struct tctx *t)
{
	struct dgram *d = udp_dgram(970, 4416);
	struct fl fl[4];
	struct frame f;
	struct snap s;
	int n = split(d, MTU_FRAG, fl);

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	for (int i = 0; i < n - 1; i++) {
		for (int k = 0; k < 10; k++) {
			mkfrag(&f, d, fl[i].off, fl[i].len, fl[i].mf, 0);
			TRY(send_drop(t, &f, "duplicate"));
		}
	}
	mkfrag(&f, d, fl[n - 1].off, fl[n - 1].len, 0, 0);
	TRY(xdp(t, f.b, f.len));
	EXPECT(t, &s, D(reasm_reqds, 10 * (n - 1) + 1),
	       D(frag_dup, 9 * (n - 1)), D(reasm_oks, 1),
	       D(frag_reasm, n), D(bytes_reasm, 4416), D(handoff_pending, 1),
	       D(bytes_in_flight, 4416), D(mem_in_flight, n * XFRAG_CHUNK));
	return 0;
}

/*
 * Keys chosen to collide under an unkeyed hash ((saddr ^ daddr ^ id) mod
 * buckets, ids 1024 apart): the keyed hash spreads them, and under
 * `refuse` none of 64 is refused by a full bucket.
 */
int t_collide(struct tctx *t)
{
	struct frame f;
	struct snap s;

	TRY(load(t, &(struct setup){ .evict = XFRAG_EVICT_REFUSE }));
	TRY(snap(t, -1, &s));
	for (int i = 0; i < 64; i++) {
		mkfrag(&f, udp_dgram(7 + 1024 * i, 3000), 0, 1480, 1, 0);
		TRY(send_drop(t, &f, "colliding key"));
	}
	EXPECT(t, &s, D(reasm_reqds, 64), D(frags_in_flight, 64),
	       D(dgrams_in_flight, 64), D(bytes_in_flight, 64 * 1480),
	       D(mem_in_flight, 64 * XFRAG_CHUNK));
	return 0;
}

int t_mem_default(struct tctx *t)
{
	static struct dgram d;
	struct frame f;
	struct snap s;
	const int n = 256;

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	for (int i = 0; i < n; i++) {
		build(&d, &(struct dopt){ .id = 1000 + i, .udp_len = 4416,
					  .seed = i + 1 });
		mkfrag(&f, &d, 0, 1480, 1, 0);
		TRY(send_drop(t, &f, "first"));
		mkfrag(&f, &d, 1480, 1480, 1, 0);
		TRY(send_drop(t, &f, "second"));
	}
	EXPECT(t, &s, D(reasm_reqds, 2 * n), D(frags_in_flight, 2 * n),
	       D(dgrams_in_flight, n), D(bytes_in_flight, 2960 * n),
	       D(mem_in_flight, 2 * n * XFRAG_CHUNK));
	/*
	 * 4450-byte frames cannot be rebuilt in a test_run frame (one page):
	 * each completes by hand-off to TC; its held bytes are checked.
	 */
	for (int i = 0; i < n; i++) {
		build(&d, &(struct dopt){ .id = 1000 + i, .udp_len = 4416,
					  .seed = i + 1 });
		mkfrag(&f, &d, 2960, 1456, 0, 0);
		if (send_handoff(t, &f, &d, "third"))
			return fail(t, "datagram %d", i);
	}
	EXPECT(t, &s, D(reasm_reqds, 3 * n), D(reasm_oks, n),
	       D(frag_reasm, 3 * n), D(bytes_reasm, 4416 * n),
	       D(handoff_pending, n), D(bytes_in_flight, 4416 * n),
	       D(mem_in_flight, 3 * n * XFRAG_CHUNK));
	return 0;
}

int t_mem_small(struct tctx *t)
{
	struct dgram *a = udp_dgram(30, 1000), *b = udp_dgram(31, 1000);
	struct frame f;
	struct snap s;

	TRY(load(t, &(struct setup){ .nchunks = 4,
				      .evict = XFRAG_EVICT_REFUSE }));
	TRY(snap(t, -1, &s));
	for (int i = 0; i < 3; i++) {
		mkfrag(&f, a, 200 * i, 200, 1, 0);
		TRY(send_drop(t, &f, "A piece"));
	}
	mkfrag(&f, b, 0, 200, 1, 0);
	TRY(send_drop(t, &f, "B first (4th chunk)"));
	mkfrag(&f, b, 200, 200, 1, 0);
	TRY(send_drop(t, &f, "B second: no chunk"));
	EXPECT(t, &s, D(reasm_reqds, 5), D(frag_nomem, 1), D(frag_discarded, 1),
	       D(reasm_fails, 1), D(frags_in_flight, 3), D(dgrams_in_flight, 1),
	       D(bytes_in_flight, 600), D(mem_in_flight, 3 * XFRAG_CHUNK));
	/* The freed chunk is reused: A completes. */
	mkfrag(&f, a, 600, 200, 1, 0);
	TRY(send_drop(t, &f, "A 4th piece"));
	TRY(snap(t, -1, &s));
	mkfrag(&f, a, 800, 200, 0, 0);
	TRY(send_drop(t, &f, "A last: no chunk"));
	EXPECT(t, &s, D(reasm_reqds, 1), D(frag_nomem, 1), D(frag_discarded, 4),
	       D(reasm_fails, 1), D(frags_in_flight, -4), D(dgrams_in_flight, -1),
	       D(bytes_in_flight, -800), D(mem_in_flight, -4 * XFRAG_CHUNK));
	/* All four chunks are back. */
	TRY(send_seq(t, b, (const struct fl[]){ { 0, 200, 1 }, { 200, 200, 1 },
						{ 400, 200, 1 }, { 600, 400, 0 } },
		     NULL, 4, END_REBUILT));
	return 0;
}
