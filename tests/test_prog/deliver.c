// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* test_prog: delivery: pass-through, replay, hand-off to TC, multi-buffer and jumbo frames, two CPUs. */
#include "test_prog.h"

/*
 * Too big to deliver, known from the first fragment seen: the kernel gets
 * every fragment untouched.  Without TC a 9000-byte datagram takes this
 * path too, in any order (it is never consumed, so never lost).
 */
static const struct pas {
	__u32 flags, udp_len;
	int rev;
} pass_rows[] = {
	{ XFRAG_CFG_TC, 20000, 0 },
	{ 0, 4416, 0 },
	{ 0, 9000, 0 },
	{ 0, 9000, 1 },
};

int t_pass(struct tctx *t)
{
	const struct pas *r = &pass_rows[t->arg];
	struct dgram *d = udp_dgram(60 + t->arg, r->udp_len);
	struct fl fl[16];
	struct frame f;
	struct snap s;
	int n = split(d, MTU_FRAG, fl);

	TRY(load(t, &(struct setup){
		.xdp_only = r->flags ? XDP_AND_TC : XDP_ONLY_PROVEN }));
	TRY(snap(t, -1, &s));
	for (int i = 0; i < n; i++) {
		const struct fl *x = &fl[r->rev ? n - 1 - i : i];

		mkfrag(&f, d, x->off, x->len, x->mf, 0);
		TRY(send_pass(t, &f, i ? "later fragment" : "first sent"));
	}
	EXPECT(t, &s, D(reasm_reqds, n), D(pass_dgrams, 1), D(frag_passed, n),
	       D(pass_no_tc, !r->flags));
	return 0;
}

/*
 * A pass-through record frees its way once the whole datagram went by
 * (here the bucket's only way): the next datagram is taken, not refused.
 */
int t_pass_frees(struct tctx *t)
{
	struct dgram *d = udp_dgram(70, 20000), *e = udp_dgram(71, 3000);
	struct fl fl[16];
	struct frame f;
	struct snap s;
	int n = split(d, MTU_FRAG, fl);

	TRY(load(t, &(struct setup){ .buckets = 1, .ways = 1 }));
	TRY(snap(t, -1, &s));
	for (int i = 0; i < n; i++) {
		mkfrag(&f, d, fl[i].off, fl[i].len, fl[i].mf, 0);
		TRY(send_pass(t, &f, "20000-byte datagram"));
	}
	mkfrag(&f, e, 0, 1480, 1, 0);
	TRY(send_drop(t, &f, "next datagram, first fragment"));
	EXPECT(t, &s, D(reasm_reqds, n + 1), D(pass_dgrams, 1),
	       D(frag_passed, n), D(frags_in_flight, 1), D(dgrams_in_flight, 1),
	       D(bytes_in_flight, 1480), D(mem_in_flight, XFRAG_CHUNK));
	return 0;
}

/*
 * A duplicate makes a pass-through record's byte count reach the end one
 * fragment early: the record is done, but its way is only reused by a new
 * datagram, so the late fragment still finds it and goes to the kernel
 * (found by tests/diff_test.sh, seed 400 batch 23).
 */
int t_pass_dup(struct tctx *t)
{
	struct dgram *d = udp_dgram(76, 20000);
	struct fl fl[16];
	struct frame f;
	struct snap s;
	int n = split(d, MTU_FRAG, fl);

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	mkfrag(&f, d, fl[0].off, fl[0].len, fl[0].mf, 0);
	TRY(send_pass(t, &f, "first fragment"));
	TRY(send_pass(t, &f, "its duplicate"));
	for (int i = n - 1; i >= 1; i--) {
		mkfrag(&f, d, fl[i].off, fl[i].len, fl[i].mf, 0);
		TRY(send_pass(t, &f, i == 1 ? "the fragment after the count"
					    : "later fragment"));
	}
	EXPECT(t, &s, D(reasm_reqds, n + 1), D(pass_dgrams, 1),
	       D(frag_passed, n + 1));
	return 0;
}

/*
 * A datagram too big to rebuild arrives at a full bucket: its pass-through
 * record evicts a cold way (it holds no memory, and without a record the
 * later fragments would be taken and found too big), so every fragment
 * reaches the kernel; a warm way is never evicted for it.
 */
int t_pass_evicts(struct tctx *t)
{
	struct dgram *d = udp_dgram(72, 20000);
	struct fl fl[16];
	struct frame f;
	struct snap s;
	int n = split(d, MTU_FRAG, fl);

	TRY(load(t, &(struct setup){ .buckets = 1, .ways = 1, .warm_ms = 10 }));
	TRY(pieces(t, 73, (const int[]){ 0 }, 1));	/* warm */
	TRY(snap(t, -1, &s));
	mkfrag(&f, d, fl[0].off, fl[0].len, fl[0].mf, 0);
	TRY(send_pass(t, &f, "first fragment, bucket warm"));
	REQUIRE(held(t, 73) == 1, "a warm way was evicted for a record");
	EXPECT(t, &s, D(reasm_reqds, 1), D(pass_dgrams, 1), D(frag_passed, 1));
	sleep_ms(30);					/* 73 goes cold */
	d = udp_dgram(74, 20000);
	TRY(snap(t, -1, &s));
	for (int i = 0; i < n; i++) {
		mkfrag(&f, d, fl[i].off, fl[i].len, fl[i].mf, 0);
		TRY(send_pass(t, &f, "20000-byte datagram"));
	}
	REQUIRE(held(t, 73) < 0, "the cold way was kept");
	EXPECT(t, &s, D(reasm_reqds, n), D(pass_dgrams, 1), D(frag_passed, n),
	       D(reasm_evicted, 1), D(reasm_fails, 1), D(frag_evicted, 1),
	       D(frags_in_flight, -1), D(dgrams_in_flight, -1),
	       D(bytes_in_flight, -1200), D(mem_in_flight, -XFRAG_CHUNK));
	return 0;
}

/*
 * With replay (native mode), a datagram beyond one skb is reassembled like
 * any other, in any order, and handed to TC whole (TC then sends the kernel
 * its fragments back to back: namespace tests udp-65507, replay-*); the
 * largest UDP datagram there is, and one whose size shows only at its end.
 */
int t_replay_takes(struct tctx *t)
{
	struct dgram *d = udp_dgram(75, t->arg ? 30000 : 65507);
	struct fl fl[64];
	int order[64], n = split(d, MTU_FRAG, fl);
	struct snap s;

	for (int i = 0; i < n; i++)		/* middle ones, then first, last */
		order[i] = t->arg ? (i < n - 2 ? i + 1 : i == n - 2 ? 0 : n - 1) : i;
	TRY(load(t, &(struct setup){ .replay = 1 }));
	TRY(snap(t, -1, &s));
	TRY(send_seq(t, d, fl, order, n, END_HANDOFF));
	EXPECT(t, &s, D(reasm_reqds, n), D(reasm_oks, 1), D(frag_reasm, n),
	       D(bytes_reasm, d->plen), D(handoff_pending, 1),
	       D(bytes_in_flight, d->plen),
	       D(mem_in_flight, (__u64)n * XFRAG_CHUNK));
	return 0;
}

/*
 * No TC half: a datagram whose size the first fragment seen does not tell
 * (a middle fragment, or a first fragment without a UDP length) is never
 * consumed, whatever arrives after it.
 */
int t_no_tc_unknown(struct tctx *t)
{
	struct dgram *d = udp_dgram(64 + t->arg, 3000);
	static const int mid_first[] = { 1, 0, 2 };
	struct fl fl[4];
	struct frame f;
	struct snap s;
	int n = split(d, 1200, fl);

	if (t->arg) {		/* TCP: no length in the first fragment */
		d->b[d->l3off + 9] = IPPROTO_TCP;
		fr_ip4_csum(d->b + d->l3off);
	}
	TRY(load(t, &(struct setup){ .xdp_only = XDP_ONLY_PROVEN }));
	TRY(snap(t, -1, &s));
	REQUIRE(n == 3, "split gave %d", n);
	for (int i = 0; i < n; i++) {
		const struct fl *x = &fl[t->arg ? i : mid_first[i]];

		mkfrag(&f, d, x->off, x->len, x->mf, 0);
		TRY(send_pass(t, &f, i ? "later fragment" : "first sent"));
	}
	EXPECT(t, &s, D(reasm_reqds, n), D(pass_dgrams, 1), D(pass_no_tc, 1),
	       D(frag_passed, n));
	return 0;
}

/*
 * No TC half: until small frames have shown they can grow, nothing is
 * taken; once they have, a datagram the frame can hold is rebuilt in it.
 */
int t_no_tc_room(struct tctx *t)
{
	struct dgram *d = udp_dgram(68, 2000);
	struct fl fl[4];
	struct frame f;
	struct snap s;
	int n = split(d, MTU_FRAG, fl);

	TRY(load(t, &(struct setup){ .xdp_only = XDP_ONLY }));
	TRY(snap(t, -1, &s));
	for (int i = 0; i < n; i++) {
		mkfrag(&f, d, fl[i].off, fl[i].len, fl[i].mf, 0);
		TRY(send_pass(t, &f, "unproven"));
	}
	EXPECT(t, &s, D(reasm_reqds, n), D(pass_dgrams, 1), D(pass_no_tc, 1),
	       D(frag_passed, n));
	TRY(prove_room(t));
	d = udp_dgram(69, 2000);
	TRY(snap(t, -1, &s));
	TRY(send_seq(t, d, fl, NULL, n, END_REBUILT));
	EXPECT(t, &s, COMPLETE_XDP(n, 2000));
	return 0;
}

/*
 * The 7 fragments of a 9000-byte datagram d, in `order`: handed to TC; k
 * such hand-offs since snapshot s.
 */
static int handoff_9000(struct tctx *t, const struct snap *s,
			const struct dgram *d, const int *order, int k)
{
	struct fl fl[8];

	REQUIRE(split(d, MTU_FRAG, fl) == 7, "9000 bytes, not 7 fragments");
	TRY(send_seq(t, d, fl, order, 7, END_HANDOFF));
	EXPECT(t, s, D(reasm_reqds, 7 * k), D(reasm_oks, k),
	       D(frag_reasm, 7 * k), D(bytes_reasm, 9000 * k),
	       D(handoff_pending, k), D(bytes_in_flight, 9000 * k),
	       D(mem_in_flight, 7 * k * XFRAG_CHUNK));
	return 0;
}

/*
 * No TC flag, but the TC half has run on this CPU (attached by tc, not by
 * `xfrag attach`): XDP counts on it and hands a 9000-byte datagram over.
 */
int t_tc_seen(struct tctx *t)
{
	struct dgram *d = udp_dgram(66, 9000), *p = udp_dgram(67, 100);
	struct snap s;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = p->b,
		    .data_size_in = p->len, .repeat = 1);

	TRY(load(t, &(struct setup){ .xdp_only = XDP_ONLY }));
	REQUIRE(!bpf_prog_test_run_opts(
			bpf_program__fd(t->skel->progs.xfrag_tc), &o),
		"tc test_run: %s", strerror(errno));
	REQUIRE(o.retval == 0, "tc on a plain packet: %u, want TC_ACT_OK",
		o.retval);
	TRY(snap(t, -1, &s));
	return handoff_9000(t, &s, d, NULL, 1);
}

int t_handoff(struct tctx *t)
{
	struct dgram *d = udp_dgram(36, 9000), *e = udp_dgram(37, 9000);
	static const int rev[] = { 6, 5, 4, 3, 2, 1, 0 };
	struct snap s;

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	TRY(handoff_9000(t, &s, d, NULL, 1));
	TRY(handoff_9000(t, &s, e, rev, 2));
	return 0;
}

/*
 * A completing frame longer than a page (multi-buffer, as from a jumbo NIC;
 * here a padded one) has room for the whole datagram: rebuilt in place,
 * across the frame's fragments.
 */
int t_multibuf(struct tctx *t)
{
	struct dgram *d = udp_dgram(43, 4416);
	struct frame f;
	struct snap s;

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	mkfrag(&f, d, 0, 1480, 1, 0);
	TRY(send_drop(t, &f, "first"));
	mkfrag(&f, d, 1480, 1480, 1, 0);
	TRY(send_drop(t, &f, "second"));
	mkfrag(&f, d, 2960, 1456, 0, 3000);
	TRY(send_rebuilt(t, &f, d, "last, 4490-byte frame"));
	EXPECT(t, &s, COMPLETE_XDP(3, 4416));
	return 0;
}

/*
 * Jumbo frames (issue 24: MTU 9000 on a real driver): both fragments of a
 * 16000-byte datagram are multi-buffer frames (9010 and 7058 bytes, more
 * than a page), read across the frame's fragments into 6 + 5 chunks, and
 * handed to TC; arg 1: the last one first.  (On virtio-net under 6.12
 * the driver itself drops some such frames before XDP: README, "Real
 * driver".)
 */
int t_jumbo(struct tctx *t)
{
	struct dgram *d = udp_dgram(45 + t->arg, 16000);
	static const struct fl fl[] = { { 0, 8976, 1 }, { 8976, 7024, 0 } };
	static const int rev[] = { 1, 0 };
	struct snap s;

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	TRY(send_seq(t, d, fl, t->arg ? rev : NULL, 2, END_HANDOFF));
	EXPECT(t, &s, D(reasm_reqds, 2), D(reasm_oks, 1), D(frag_reasm, 2),
	       D(bytes_reasm, 16000), D(handoff_pending, 1),
	       D(bytes_in_flight, 16000), D(mem_in_flight, 11 * XFRAG_CHUNK));
	return 0;
}

int t_missing(struct tctx *t)
{
	struct dgram *d = udp_dgram(40, 3000);
	struct snap s;

	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	TRY(send_seq(t, d, (const struct fl[]){ { 0, 1200, 1 }, { 2400, 600, 0 } },
		     NULL, 2, END_NONE));
	EXPECT(t, &s, D(reasm_reqds, 2), D(frags_in_flight, 2),
	       D(dgrams_in_flight, 1), D(bytes_in_flight, 1800),
	       D(mem_in_flight, 2 * XFRAG_CHUNK));
	return 0;
}

int t_cross_cpu(struct tctx *t)
{
	struct dgram *d = udp_dgram(41, 2000), *v = udp_dgram(42, 2000);
	struct snap sa, sb;
	struct frame f;

	if (cpu_b < 0)
		return 1;	/* skipped */
	TRY(load(t, &(struct setup){ .buckets = 1, .ways = 8,
				      .timeout_ms = 50 }));
	TRY(snap(t, cpu_a, &sa));
	TRY(snap(t, cpu_b, &sb));
	mkfrag(&f, d, 0, 1480, 1, 0);
	TRY(send_drop(t, &f, "first on cpu A"));
	REQUIRE(!pin(cpu_b), "pin cpu %d: %s", cpu_b, strerror(errno));
	mkfrag(&f, d, 1480, 520, 0, 0);
	TRY(send_drop(t, &f, "last on cpu B"));
	EXPECT_CPU(t, cpu_a, &sa, D(reasm_reqds, 1), D(frags_in_flight, 1),
		   D(dgrams_in_flight, 1), D(bytes_in_flight, 1480),
		   D(mem_in_flight, XFRAG_CHUNK));
	EXPECT_CPU(t, cpu_b, &sb, D(reasm_reqds, 1), D(frags_in_flight, 1),
		   D(dgrams_in_flight, 1), D(bytes_in_flight, 520),
		   D(mem_in_flight, XFRAG_CHUNK));
	sleep_ms(150);
	mkfrag(&f, v, 800, 0, 1, 0);	/* visits the bucket, then discarded */
	TRY(send_drop(t, &f, "visit on cpu B"));
	REQUIRE(!pin(cpu_a), "pin cpu %d: %s", cpu_a, strerror(errno));
	TRY(send_drop(t, &f, "visit on cpu A"));
	EXPECT_CPU(t, cpu_a, &sa, D(reasm_reqds, 2), D(frag_timeout, 1),
		   D(reasm_timeout, 1), D(frag_zero_len, 1), D(reasm_fails, 2));
	EXPECT_CPU(t, cpu_b, &sb, D(reasm_reqds, 2), D(frag_timeout, 1),
		   D(reasm_timeout, 1), D(frag_zero_len, 1), D(reasm_fails, 2));
	return 0;
}
