// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* test_prog: the rules: complete datagrams, order, padding, VLAN, duplicates, overlaps, limits, bad headers. */
#include "test_prog.h"

/* ---- Tests ----------------------------------------------------------------- */

int t_nonfrag(struct tctx *t)
{
	struct dgram *d = dg();
	struct frame f;
	struct snap s;

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	build(d, &(struct dopt){ .id = 1, .udp_len = 1000 });
	memcpy(f.b, d->b, d->len);
	f.len = d->len;
	TRY(send_pass(t, &f, "plain UDP"));
	build(d, &(struct dopt){ .id = 2, .udp_len = 1000, .df = 1, .nvlan = 2,
				 .tpid = { ETH_P_8021AD, ETH_P_8021Q },
				 .vid = { 5, 6 } });
	memcpy(f.b, d->b, d->len);
	f.len = d->len;
	TRY(send_pass(t, &f, "DF UDP, two VLAN tags"));
	f.len = 40;		/* truncated IP header */
	TRY(send_pass(t, &f, "truncated"));
	put16(f.b + 12, ETH_P_ARP);
	f.len = 60;
	TRY(send_pass(t, &f, "ARP"));
	EXPECT(t, &s);
	return 0;
}

/* Datagrams rebuilt in place: one row of the test table each. */
static const struct cmp {
	struct dopt o;
	__u32 fsz;		/* payload per fragment */
	int rev;		/* send in reverse order */
} cmps[] = {
	{ { .id = 7, .udp_len = 2000 }, MTU_FRAG, 0 },
	{ { .id = 8, .udp_len = 3000 }, 1200, 1 },
	{ { .id = 9, .udp_len = 2500, .df = 1 }, MTU_FRAG, 1 },
	{ { .id = 10, .udp_len = 3000, .optlen = 12 }, 1200, 0 },
	{ { .id = 11, .udp_len = 3000, .optlen = 40 }, 1200, 1 },
	{ { .id = 15, .udp_len = 3300, .nvlan = 2,
	    .tpid = { ETH_P_8021AD, ETH_P_8021Q }, .vid = { 100, 7 } }, 1200, 1 },
	{ { .id = 16, .udp_len = 3200, .df = 1, .optlen = 8, .nvlan = 1,
	    .tpid = { ETH_P_8021Q }, .vid = { 4095 } }, 296, 1 },
};

int t_complete(struct tctx *t)
{
	const struct cmp *c = &cmps[t->arg];
	struct dgram *d = dg();
	int order[32], n;
	struct fl fl[32];
	struct snap s;

	build(d, &c->o);
	n = split(d, c->fsz, fl);
	for (int i = 0; i < n; i++)
		order[i] = c->rev ? n - 1 - i : i;
	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	TRY(send_seq(t, d, fl, order, n, END_REBUILT));
	EXPECT(t, &s, COMPLETE_XDP(n, c->o.udp_len));
	return 0;
}

int t_perm_3(struct tctx *t)
{
	static const int perm[6][3] = { { 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 },
					{ 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 } };
	struct fl fl[4];
	struct snap s;

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	for (int p = 0; p < 6; p++) {
		struct dgram *d = udp_dgram(100 + p, 3400);

		split(d, 1200, fl);
		if (send_seq(t, d, fl, perm[p], 3, END_REBUILT))
			return fail(t, "order %d%d%d", perm[p][0], perm[p][1],
				    perm[p][2]);
	}
	EXPECT(t, &s, D(reasm_reqds, 18), D(reasm_oks, 6), D(deliver_xdp, 6),
	       D(frag_reasm, 18), D(bytes_reasm, 6 * 3400));
	return 0;
}

int t_perm_11(struct tctx *t)
{
	__u32 seed0 = (__u32)time(NULL) | 1;
	struct fl fl[16];
	struct snap s;
	int order[16], rounds = 16;

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	for (int r = 0; r < rounds; r++) {
		struct dgram *d = udp_dgram(200 + r, 3200);
		__u32 seed = seed0 + r, x = seed;
		int n = split(d, 296, fl);

		if (n != 11)
			return fail(t, "split gave %d", n);
		for (int i = 0; i < n; i++)
			order[i] = i;
		for (int i = n - 1; i > 0; i--) {	/* Fisher-Yates */
			int j = xorshift(&x) % (i + 1), k = order[i];

			order[i] = order[j];
			order[j] = k;
		}
		if (send_seq(t, d, fl, order, n, END_REBUILT))
			return fail(t, "seed %u", seed);
	}
	EXPECT(t, &s, D(reasm_reqds, 11 * rounds), D(reasm_oks, rounds),
	       D(deliver_xdp, rounds), D(frag_reasm, 11 * rounds),
	       D(bytes_reasm, 3200 * rounds));
	return 0;
}

int t_padding(struct tctx *t)
{
	struct dgram *d = udp_dgram(11, 1488);
	struct frame f;
	struct snap s;

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	/* A last fragment of 8 bytes padded to the 60-byte minimum frame. */
	mkfrag(&f, d, 1480, 8, 0, 60 - 42);
	TRY(send_drop(t, &f, "padded last fragment"));
	mkfrag(&f, d, 0, 1480, 1, 100);
	TRY(send_rebuilt(t, &f, d, "padded first fragment"));
	EXPECT(t, &s, COMPLETE_XDP(2, 1488));
	return 0;
}

int t_trim(struct tctx *t)
{
	struct dgram *d = udp_dgram(12, 2000);
	struct frame f;
	struct snap s;

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	/* 1003 bytes with MF: the last 3 (garbage here) must be cut off. */
	mkfrag(&f, d, 0, 1003, 1, 0);
	memset(f.b + d->l3off + d->hlen + 1000, 0x77, 3);
	TRY(send_drop(t, &f, "first fragment, 1003 bytes"));
	mkfrag(&f, d, 1000, 1000, 0, 0);
	TRY(send_rebuilt(t, &f, d, "last fragment"));
	EXPECT(t, &s, COMPLETE_XDP(2, 2000));

	return 0;
}

/*
 * Same addresses and id on VLAN 10 and 20 (one tag), then on outer VLAN 100
 * and 101 with the same inner tag: four datagrams, kept apart.
 */
int t_vlan(struct tctx *t)
{
	struct dgram *a = dg(), *b = dg();
	struct frame f;
	struct snap s;

	build(a, &(struct dopt){ .id = 14, .udp_len = 2400, .nvlan = 1,
				 .tpid = { ETH_P_8021Q }, .vid = { 10 } });
	build(b, &(struct dopt){ .id = 14, .udp_len = 2400, .nvlan = 1,
				 .tpid = { ETH_P_8021Q }, .vid = { 20 },
				 .seed = 99 });
	TRY(load(t, &(struct setup){ .buckets = 1, .ways = 8 }));
	TRY(snap(t, -1, &s));
	mkfrag(&f, a, 0, 1480, 1, 0);
	TRY(send_drop(t, &f, "vlan 10 first"));
	mkfrag(&f, b, 0, 1480, 1, 0);
	TRY(send_drop(t, &f, "vlan 20 first"));
	mkfrag(&f, b, 1480, 920, 0, 0);
	TRY(send_rebuilt(t, &f, b, "vlan 20 last"));
	mkfrag(&f, a, 1480, 920, 0, 0);
	TRY(send_rebuilt(t, &f, a, "vlan 10 last"));
	EXPECT(t, &s, D(reasm_reqds, 4), D(reasm_oks, 2), D(deliver_xdp, 2),
	       D(frag_reasm, 4), D(bytes_reasm, 4800));

	for (int i = 0; i < 2; i++)
		build(i ? b : a, &(struct dopt){ .id = 15, .udp_len = 3300,
			.nvlan = 2, .tpid = { ETH_P_8021AD, ETH_P_8021Q },
			.vid = { 100 + i, 7 } });
	TRY(snap(t, -1, &s));
	mkfrag(&f, a, 0, 1200, 1, 0);
	TRY(send_drop(t, &f, "outer 100, part 1"));
	mkfrag(&f, b, 1200, 2100, 0, 0);
	TRY(send_drop(t, &f, "outer 101, part 2"));
	EXPECT(t, &s, D(reasm_reqds, 2), D(frags_in_flight, 2),
	       D(dgrams_in_flight, 2), D(bytes_in_flight, 3300),
	       D(mem_in_flight, 3 * XFRAG_CHUNK));
	return 0;
}

int t_dup(struct tctx *t)
{
	struct dgram *d = udp_dgram(16, 3000);
	struct frame f;
	struct snap s;

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	mkfrag(&f, d, 2000, 1000, 0, 0);
	TRY(send_drop(t, &f, "last"));
	TRY(send_drop(t, &f, "last again"));
	mkfrag(&f, d, 0, 1000, 1, 0);
	TRY(send_drop(t, &f, "first"));
	TRY(send_drop(t, &f, "first again"));
	EXPECT(t, &s, D(reasm_reqds, 4), D(frag_dup, 2), D(frags_in_flight, 2),
	       D(dgrams_in_flight, 1), D(bytes_in_flight, 2000),
	       D(mem_in_flight, 2 * XFRAG_CHUNK));
	/* The datagram was kept: it completes normally. */
	mkfrag(&f, d, 1000, 1000, 1, 0);
	TRY(send_rebuilt(t, &f, d, "middle"));
	EXPECT(t, &s, D(reasm_reqds, 5), D(frag_dup, 2), D(reasm_oks, 1),
	       D(deliver_xdp, 1), D(frag_reasm, 3), D(bytes_reasm, 3000));
	return 0;
}

/*
 * An exact duplicate of a fragment stored before the last one: the fit
 * walk closes that fragment inside its bpf_loop callback, not after the
 * loop.  The 6.1 verifier checks a callback once, with the state of its
 * first call, and removed that branch as dead code (the walk's state
 * starts at zero): the duplicate became an overlap and the datagram was
 * lost.  Run in the 6.1 guest by make test-vm.
 */
int t_dup_earlier(struct tctx *t)
{
	struct dgram *d = udp_dgram(17, 3000);
	struct frame f;
	struct snap s;

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	mkfrag(&f, d, 0, 1000, 1, 0);
	TRY(send_drop(t, &f, "first"));
	mkfrag(&f, d, 1000, 1000, 1, 0);
	TRY(send_drop(t, &f, "middle"));
	mkfrag(&f, d, 0, 1000, 1, 0);
	TRY(send_drop(t, &f, "first again"));
	EXPECT(t, &s, D(reasm_reqds, 3), D(frag_dup, 1), D(frag_overlap, 0),
	       D(frags_in_flight, 2), D(dgrams_in_flight, 1),
	       D(bytes_in_flight, 2000), D(mem_in_flight, 2 * XFRAG_CHUNK));
	mkfrag(&f, d, 2000, 1000, 0, 0);
	TRY(send_rebuilt(t, &f, d, "last"));
	EXPECT(t, &s, D(reasm_reqds, 4), D(frag_dup, 1), D(reasm_oks, 1),
	       D(deliver_xdp, 1), D(frag_reasm, 3), D(bytes_reasm, 3000));
	return 0;
}

/*
 * A last fragment with the range of a held non-last one is a duplicate,
 * but its end counts first, as in Linux (ip_frag_queue, ip6_frag_queue
 * set the end before they find the duplicate): data beyond that end then
 * discards the datagram.  (Found by the differential test, seed
 * 20261203092626 batch 6: xfrag delivered what the kernel discarded.)
 */
int t_dup_last_end(struct tctx *t)
{
	struct dgram *d = udp_dgram(18, 3000);
	struct frame f;
	struct snap s;

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	TRY(send_seq(t, d, (const struct fl[]){ { 0, 1000, 1 },
		     { 1000, 1000, 1 }, { 1000, 1000, 0 } }, NULL, 3, END_NONE));
	EXPECT(t, &s, D(reasm_reqds, 3), D(frag_dup, 1),
	       D(frags_in_flight, 2), D(dgrams_in_flight, 1),
	       D(bytes_in_flight, 2000), D(mem_in_flight, 2 * XFRAG_CHUNK));
	mkfrag(&f, d, 2000, 1000, 0, 0);
	TRY(send_drop(t, &f, "the real last"));
	EXPECT(t, &s, D(reasm_reqds, 4), D(frag_dup, 1), D(frag_bad_end, 1),
	       D(frag_discarded, 2), D(reasm_fails, 1));
	return 0;
}

/*
 * RFC 8200 4.5: only an *exact* duplicate is dropped with the datagram
 * kept.  The range of a held fragment with one byte other (at the start,
 * the end, a ragged tail, the second chunk of a 3000-byte fragment) is an
 * overlap: frag_dup_changed, datagram discarded.  flip < 0: the same
 * bytes, a duplicate (the comparison across two chunks finds no
 * difference).  Linux keeps the first copy (it compares offsets only).
 */
static const struct dupc {
	__u32 udp_len;
	int nheld;
	struct fl held[2], dup;
	int flip;		/* payload byte of dup changed, -1 none */
} dupcs[] = {
	{ 3000, 2, { { 0, 1000, 1 }, { 1000, 1000, 1 } }, { 1000, 1000, 1 }, 0 },
	{ 3000, 2, { { 0, 1000, 1 }, { 1000, 1000, 1 } }, { 0, 1000, 1 }, 999 },
	{ 3003, 2, { { 0, 1000, 1 }, { 2000, 1003, 0 } }, { 2000, 1003, 0 }, 1002 },
	{ 3000, 1, { { 0, 3000, 1 } }, { 0, 3000, 1 }, 2999 },
	{ 3000, 1, { { 0, 3000, 1 } }, { 0, 3000, 1 }, 1536 },
	{ 3000, 1, { { 0, 3000, 1 } }, { 0, 3000, 1 }, -1 },
	{ 3003, 2, { { 0, 1000, 1 }, { 2000, 1003, 0 } }, { 2000, 1003, 0 }, -1 },
};

int t_dup_changed(struct tctx *t)
{
	const struct dupc *r = &dupcs[t->arg];
	struct dgram *d = udp_dgram(70 + t->arg, r->udp_len);
	struct frame f;
	struct snap s;

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	TRY(send_seq(t, d, r->held, NULL, r->nheld, END_NONE));
	mkfrag(&f, d, r->dup.off, r->dup.len, r->dup.mf, 0);
	if (r->flip >= 0)
		f.b[f.len - r->dup.len + r->flip] ^= 0x5a;
	TRY(send_drop(t, &f, r->flip >= 0 ? "other bytes" : "same bytes"));
	if (r->flip < 0) {
		__u32 bytes = 0, mem = 0;

		for (int i = 0; i < r->nheld; i++) {
			bytes += r->held[i].len;
			mem += (r->held[i].len + XFRAG_CHUNK - 1) /
			       XFRAG_CHUNK * XFRAG_CHUNK;
		}
		EXPECT(t, &s, D(reasm_reqds, r->nheld + 1), D(frag_dup, 1),
		       D(frag_dup_changed, 0), D(frags_in_flight, r->nheld),
		       D(dgrams_in_flight, 1), D(bytes_in_flight, bytes),
		       D(mem_in_flight, mem));
		return 0;
	}
	EXPECT(t, &s, D(reasm_reqds, r->nheld + 1), D(frag_dup, 0),
	       D(frag_dup_changed, 1), D(frag_overlap, 0),
	       D(frag_discarded, r->nheld), D(reasm_fails, 1),
	       D(reasm_overlaps, 1), D(frags_in_flight, 0),
	       D(dgrams_in_flight, 0));
	return 0;
}

/*
 * A fragment that discards its datagram: `held` are consumed first, then
 * `bad` is dropped, counted in `counter`, and the held ones in
 * frag_discarded.
 */
static const struct rej {
	__u32 udp_len;
	int optlen, nheld, counter;
	struct fl held[2], bad;
	__u32 flags;		/* xfrag_config flags */
	__u32 udp_field;	/* UDP length field, if a lie */
} rejs[] = {
	/* overlaps with [800, 1600) */
	{ 2400, 0, 2, C_frag_overlap, { { 0, 400, 1 }, { 800, 800, 1 } }, { 400, 800, 1 }, 0, 0 },
	{ 2400, 0, 2, C_frag_overlap, { { 0, 400, 1 }, { 800, 800, 1 } }, { 1200, 800, 1 }, 0, 0 },
	{ 2400, 0, 2, C_frag_overlap, { { 0, 400, 1 }, { 800, 800, 1 } }, { 1000, 400, 1 }, 0, 0 },
	{ 2400, 0, 2, C_frag_overlap, { { 0, 400, 1 }, { 800, 800, 1 } }, { 400, 1600, 1 }, 0, 0 },
	{ 2400, 0, 2, C_frag_overlap, { { 0, 400, 1 }, { 800, 800, 1 } }, { 800, 400, 1 }, 0, 0 },
	{ 2400, 0, 2, C_frag_overlap, { { 0, 400, 1 }, { 800, 800, 1 } }, { 800, 1200, 1 }, 0, 0 },
	{ 2400, 0, 2, C_frag_overlap, { { 0, 400, 1 }, { 800, 800, 1 } }, { 1200, 1200, 0 }, 0, 0 },
	/* a second last fragment with another end */
	{ 3200, 0, 1, C_frag_bad_end, { { 1480, 520, 0 } }, { 2000, 400, 0 }, 0, 0 },
	/* a last fragment ending before data held */
	{ 3200, 0, 1, C_frag_bad_end, { { 1480, 1480, 1 } }, { 800, 400, 0 },
	  XFRAG_CFG_TC, 0 },
	/* an MF fragment beyond the known end */
	{ 3200, 0, 1, C_frag_bad_end, { { 800, 800, 0 } }, { 1600, 800, 1 }, 0, 0 },
	{ 2000, 0, 1, C_frag_zero_len, { { 0, 800, 1 } }, { 800, 0, 1 }, 0, 0 },
	{ 2000, 0, 0, C_frag_zero_len, {}, { 1600, 0, 0 }, 0, 0 },
	/* 5 payload bytes with MF trim to nothing */
	{ 2000, 0, 1, C_frag_zero_len, { { 0, 800, 1 } }, { 800, 5, 1 }, 0, 0 },
	/* 20 + 65544 > 65535 */
	{ 3000, 0, 1, C_frag_too_long, { { 0, 1480, 1 } }, { 65528, 16, 0 }, 0, 0 },
	/* 60-byte first header: 60 + 65488 > 65535, 20 + 65488 is not */
	{ 1000, 40, 1, C_frag_too_long, { { 0, 504, 1 } }, { 65472, 16, 0 }, 0, 0 },
	/* a ping of death that is the first fragment seen */
	{ 3000, 0, 0, C_frag_too_long, {}, { 65528, 16, 0 }, 0, 0 },
	/* too big, learned once a piece is held: first announces 20000 */
	{ 20000, 0, 1, C_frag_oversize, { { 1480, 1480, 1 } }, { 0, 1480, 1 },
	  XFRAG_CFG_TC, 0 },
	/* no TC: the first fragment's UDP length (2000) lied; the last one
	 * makes it 14 + 20 + 3600 > 3520 */
	{ 3600, 0, 1, C_frag_oversize, { { 0, 1480, 1 } }, { 2960, 640, 0 }, 0,
	  2000 },
};

int t_reject(struct tctx *t)
{
	const struct rej *r = &rejs[t->arg];
	struct dgram *d = dg();
	struct delta want[6] = {
		D(reasm_reqds, r->nheld + 1), { r->counter, 1 },
		D(frag_discarded, r->nheld), D(reasm_fails, 1),
		D(reasm_overlaps, r->counter == C_frag_overlap),
	};
	struct frame f;
	struct snap s;

	build(d, &(struct dopt){ .id = 50 + t->arg, .udp_len = r->udp_len,
				 .optlen = r->optlen,
				 .udp_field = r->udp_field });
	TRY(load(t, &(struct setup){
		.xdp_only = r->flags ? XDP_AND_TC : XDP_ONLY_PROVEN }));
	TRY(snap(t, -1, &s));
	TRY(send_seq(t, d, r->held, NULL, r->nheld, END_NONE));
	mkfrag(&f, d, r->bad.off, r->bad.len, r->bad.mf, 0);
	TRY(xdp(t, f.b, f.len));
	TRY(check_deltas(t, -1, &s, want, 5));
	return verdict(t, XDP_DROP, "rejected fragment");
}

int t_too_many(struct tctx *t)
{
	struct dgram *d = udp_dgram(22, 800);
	struct fl fl[8];
	struct frame f;
	struct snap s;
	int n = split(d, 200, fl);

	TRY(load(t, &(struct setup){ .max_frags = 4 }));
	TRY(snap(t, -1, &s));
	REQUIRE(n == 4, "split gave %d", n);
	TRY(send_seq(t, d, fl, NULL, n, END_REBUILT));	/* exactly 4: fine */
	EXPECT(t, &s, COMPLETE_XDP(4, 800));

	d = udp_dgram(23, 1000);
	n = split(d, 200, fl);
	TRY(snap(t, -1, &s));
	TRY(send_seq(t, d, fl, NULL, 4, END_NONE));
	mkfrag(&f, d, fl[4].off, fl[4].len, fl[4].mf, 0);
	TRY(send_drop(t, &f, "5th fragment"));
	EXPECT(t, &s, D(reasm_reqds, 5), D(frag_too_many, 1),
	       D(frag_discarded, 4), D(reasm_fails, 1));
	return 0;
}

/*
 * With replay (native mode, TC half), `too-many pass`: the 5th fragment of
 * a max-frags 4 datagram goes on to TC (XDP_PASS) with the way marked for
 * TC to replay the 4 held (pass_too_many, frag_flushed); later fragments,
 * and copies of held ones, pass as through a pass-through record.  TC
 * never comes here (BPF_PROG_TEST_RUN): after XFRAG_HANDOFF_NS the way is
 * reclaimed as flush_lost.  arg 1: `too-many drop` discards it instead.
 */
int t_too_many_flush(struct tctx *t)
{
	struct dgram *d = udp_dgram(25 + t->arg, 1200);
	struct fl fl[8];
	struct frame f;
	struct snap s;
	int n = split(d, 200, fl);

	TRY(load(t, &(struct setup){ .max_frags = 4, .replay = 1,
		.too_many = t->arg ? XFRAG_TOO_MANY_DROP : 0 }));
	REQUIRE(n == 6, "split gave %d", n);
	TRY(snap(t, -1, &s));
	TRY(send_seq(t, d, fl, NULL, 4, END_NONE));
	mkfrag(&f, d, fl[4].off, fl[4].len, fl[4].mf, 0);
	TRY(xdp(t, f.b, f.len));
	if (t->arg) {
		EXPECT(t, &s, D(reasm_reqds, 5), D(frag_too_many, 1),
		       D(frag_discarded, 4), D(reasm_fails, 1));
		return verdict(t, XDP_DROP, "5th fragment, too-many drop");
	}
	TRY(verdict(t, XDP_PASS, "5th fragment"));
	EXPECT(t, &s, D(reasm_reqds, 5), D(pass_too_many, 1),
	       D(frag_flushed, 4), D(frag_passed, 1),
	       D(mem_in_flight, 4 * XFRAG_CHUNK));
	for (int i = 5; i < 6; i++) {
		mkfrag(&f, d, fl[i].off, fl[i].len, fl[i].mf, 0);
		TRY(xdp(t, f.b, f.len));
		TRY(verdict(t, XDP_PASS, "later fragment"));
	}
	mkfrag(&f, d, fl[0].off, fl[0].len, fl[0].mf, 0);
	TRY(xdp(t, f.b, f.len));
	TRY(verdict(t, XDP_PASS, "a held one again"));
	EXPECT(t, &s, D(reasm_reqds, 7), D(pass_too_many, 1),
	       D(frag_flushed, 4), D(frag_passed, 3),
	       D(mem_in_flight, 4 * XFRAG_CHUNK));
	/* No TC: the pieces are never replayed. */
	usleep(XFRAG_HANDOFF_NS / 1000 + 200000);
	mkfrag(&f, d, fl[1].off, fl[1].len, fl[1].mf, 0);
	TRY(send_drop(t, &f, "after the hand-off time"));
	EXPECT(t, &s, D(reasm_reqds, 8), D(pass_too_many, 1),
	       D(frag_flushed, 4), D(frag_passed, 3), D(flush_lost, 1),
	       D(frags_in_flight, 1), D(dgrams_in_flight, 1),
	       D(bytes_in_flight, fl[1].len), D(mem_in_flight, XFRAG_CHUNK));
	return 0;
}

int t_bad_header(struct tctx *t)
{
	struct dgram *d = udp_dgram(24, 2000);
	struct frame f;
	struct snap s;
	__u8 *ip;

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	ip = f.b + d->l3off;
	mkfrag(&f, d, 0, 1480, 1, 0);
	ip[10] ^= 0x55;
	TRY(send_drop(t, &f, "bad checksum"));
	mkfrag(&f, d, 0, 1480, 1, 0);
	ip[0] = 0x44;
	fr_ip4_csum(ip);	/* sums 16 bytes: checksum made for ihl 4 */
	TRY(send_drop(t, &f, "ihl 4"));
	mkfrag(&f, d, 1480, 520, 0, 0);
	put16(ip + 2, 20 + 521);
	fr_ip4_csum(ip);
	TRY(send_drop(t, &f, "tot_len beyond frame"));
	mkfrag(&f, d, 1480, 520, 0, 0);
	put16(ip + 2, 19);
	fr_ip4_csum(ip);
	TRY(send_drop(t, &f, "tot_len below header"));
	mkfrag(&f, d, 1480, 520, 0, 0);
	ip[0] = 0x65;
	fr_ip4_csum(ip);
	TRY(send_drop(t, &f, "version 6"));
	EXPECT(t, &s, D(reasm_reqds, 5), D(frag_bad_header, 5));
	return 0;
}
