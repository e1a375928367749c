// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* test_prog: the table: time-out, the sweeper, eviction policies, watermarks, quota. */
#include "test_prog.h"

int t_timeout(struct tctx *t)
{
	struct dgram *a = udp_dgram(25, 3000), *b = udp_dgram(26, 3000);
	struct frame f;
	struct snap s;

	TRY(load(t, &(struct setup){ .buckets = 1, .ways = 8,
				      .timeout_ms = 50 }));
	TRY(snap(t, -1, &s));
	mkfrag(&f, a, 0, 1200, 1, 0);
	TRY(send_drop(t, &f, "A first"));
	mkfrag(&f, a, 2400, 600, 0, 0);
	TRY(send_drop(t, &f, "A last"));
	sleep_ms(150);
	mkfrag(&f, b, 0, 1200, 1, 0);
	TRY(send_drop(t, &f, "B first"));
	EXPECT(t, &s, D(reasm_reqds, 3), D(frag_timeout, 2),
	       D(reasm_timeout, 1), D(reasm_fails, 1), D(frags_in_flight, 1),
	       D(dgrams_in_flight, 1), D(bytes_in_flight, 1200),
	       D(mem_in_flight, XFRAG_CHUNK));
	/* A's middle now starts a datagram of its own. */
	mkfrag(&f, a, 1200, 1200, 1, 0);
	TRY(send_drop(t, &f, "A middle, late"));
	TRY(snap(t, -1, &s));
	sleep_ms(150);
	mkfrag(&f, b, 0, 1200, 1, 0);
	TRY(send_drop(t, &f, "B first again"));
	EXPECT(t, &s, D(reasm_reqds, 1), D(frag_timeout, 2),
	       D(reasm_timeout, 2), D(reasm_fails, 2), D(frags_in_flight, -1),
	       D(dgrams_in_flight, -1), D(bytes_in_flight, -1200),
	       D(mem_in_flight, -XFRAG_CHUNK));
	return 0;
}

/* Sets this CPU's busy mark, as XDP and TC do while they run. */
static int set_busy(struct tctx *t, __u32 v)
{
	int fd = bpf_map__fd(t->skel->maps.xfrag_pcpu), err = -1;
	struct xfrag_pcpu *pc = calloc(ncpus, sizeof(*pc));
	__u32 zero = 0;

	REQUIRE(pc, "calloc");
	if (!bpf_map_lookup_elem(fd, &zero, pc)) {
		pc[cur_cpu].busy = v;
		err = bpf_map_update_elem(fd, &zero, pc, BPF_ANY);
	}
	free(pc);
	REQUIRE(!err, "xfrag_pcpu: %s", strerror(errno));
	return 0;
}

/*
 * No traffic after the time-out: the sweeper (a timer on the CPU) reclaims
 * the datagrams, and every gauge is back at zero.  Argument 1: first the
 * CPU is marked busy, as while XDP or TC runs there (a program run by
 * BPF_PROG_TEST_RUN can be interrupted by the timer's softirq): nothing is
 * reclaimed while the mark is set, everything once it is cleared.
 */
int t_sweep(struct tctx *t)
{
	struct frame f;
	struct snap s;

	TRY(load(t, &(struct setup){ .buckets = 1, .ways = 8,
				      .timeout_ms = 50 }));
	TRY(snap(t, -1, &s));
	for (int i = 0; i < 3; i++) {
		mkfrag(&f, udp_dgram(980 + i, 3000), 0, 1200, 1, 0);
		TRY(send_drop(t, &f, "first fragment"));
	}
	if (t->arg) {
		/* A failure leaves the mark: the next test loads afresh. */
		TRY(set_busy(t, 1));
		sleep_ms(400);
		EXPECT(t, &s, D(reasm_reqds, 3), D(frags_in_flight, 3),
		       D(dgrams_in_flight, 3), D(bytes_in_flight, 3 * 1200),
		       D(mem_in_flight, 3 * XFRAG_CHUNK));
		TRY(set_busy(t, 0));
	}
	sleep_ms(400);
	EXPECT(t, &s, D(reasm_reqds, 3), D(frag_timeout, 3),
	       D(reasm_timeout, 3), D(reasm_fails, 3));
	return 0;
}

int t_refuse(struct tctx *t)
{
	struct dgram *d;
	struct frame f;
	struct snap s;

	TRY(load(t, &(struct setup){ .buckets = 1, .ways = 4,
				      .evict = XFRAG_EVICT_REFUSE }));
	TRY(snap(t, -1, &s));
	for (int i = 0; i < 5; i++) {
		d = udp_dgram(500 + i, 2000);
		mkfrag(&f, d, 0, 1480, 1, 0);
		TRY(send_drop(t, &f, i < 4 ? "first of 4" : "5th datagram"));
	}
	EXPECT(t, &s, D(reasm_reqds, 5), D(frag_refused, 1),
	       D(frags_in_flight, 4), D(dgrams_in_flight, 4),
	       D(bytes_in_flight, 4 * 1480), D(mem_in_flight, 4 * XFRAG_CHUNK));
	/* Completing one frees a way for the refused datagram. */
	d = udp_dgram(500, 2000);
	mkfrag(&f, d, 1480, 520, 0, 0);
	TRY(send_rebuilt(t, &f, d, "complete 1st"));
	d = udp_dgram(504, 2000);
	TRY(send_seq(t, d, (const struct fl[]){ { 0, 1480, 1 }, { 1480, 520, 0 } },
		     NULL, 2, END_REBUILT));
	return 0;
}

/* Fragments held for datagram `id` on this CPU, or -1 if none is held. */
int held(struct tctx *t, __u32 id)
{
	size_t wsz = (sizeof(struct xfrag_way) + 7) & ~7UL;
	__u8 *buf = calloc(ncpus, wsz);
	int n = -1;

	if (!buf)
		return -1;
	for (__u32 i = 0; i < t->buckets * t->ways && n < 0; i++) {
		struct xfrag_way *w = (struct xfrag_way *)(buf + cur_cpu * wsz);

		if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.xfrag_table),
					&i, buf))
			break;
		if (w->state == XFRAG_WAY_ACTIVE && w->key.id == htons(id))
			n = w->nfrags;
	}
	free(buf);
	return n;
}

/* Send fragments (index into a 4-piece split of a 4800-byte datagram). */
int pieces(struct tctx *t, __u16 id, const int *ix, int n)
{
	struct dgram *d = udp_dgram(id, 4792);
	struct fl fl[8];
	struct frame f;

	REQUIRE(split(d, 1200, fl) == 4, "4800 bytes, not 4 pieces");
	for (int i = 0; i < n; i++) {
		mkfrag(&f, d, fl[ix[i]].off, fl[ix[i]].len, fl[ix[i]].mf, 0);
		TRY(send_drop(t, &f, "piece"));
	}
	return 0;
}

/*
 * A full bucket (4 ways), a new datagram: `lru` evicts the least recently
 * touched way, `progress` the one least likely to complete among those not
 * warm, here the one whose only fragment came out of sequence.
 */
int t_evict(struct tctx *t)
{
	int lru = t->arg == 0;
	struct snap s;

	TRY(load(t, &(struct setup){ .buckets = 1, .ways = 4, .warm_ms = 10,
				      .evict = lru ? XFRAG_EVICT_LRU :
						     XFRAG_EVICT_PROGRESS }));
	TRY(snap(t, -1, &s));
	TRY(pieces(t, 600, (const int[]){ 0, 1, 2 }, 3));	/* 3/4 */
	TRY(pieces(t, 601, (const int[]){ 0, 1 }, 2));		/* 2/4 */
	TRY(pieces(t, 602, (const int[]){ 1 }, 1));		/* out of seq */
	TRY(pieces(t, 603, (const int[]){ 0 }, 1));		/* 1/4 */
	sleep_ms(30);		/* none warm any more */
	TRY(pieces(t, 601, (const int[]){ 2 }, lru));	/* lru: 601 touched */
	TRY(pieces(t, 604, (const int[]){ 0 }, 1));	/* the new datagram */
	if (lru) {
		/* Least recently touched: 600 (first), before 602, 603. */
		REQUIRE(held(t, 600) < 0 && held(t, 602) == 1 &&
			held(t, 603) == 1 && held(t, 601) == 3,
			"lru evicted the wrong way: 600:%d 601:%d 602:%d 603:%d",
			held(t, 600), held(t, 601), held(t, 602), held(t, 603));
		EXPECT(t, &s, D(reasm_reqds, 9), D(frag_evicted, 3),
		       D(reasm_evicted, 1), D(reasm_fails, 1),
		       D(frags_in_flight, 6), D(dgrams_in_flight, 4),
		       D(bytes_in_flight, 6 * 1200),
		       D(mem_in_flight, 6 * XFRAG_CHUNK));
		return 0;
	}
	REQUIRE(held(t, 602) < 0 && held(t, 600) == 3 && held(t, 601) == 2 &&
		held(t, 603) == 1 && held(t, 604) == 1,
		"progress evicted the wrong way: 600:%d 601:%d 602:%d 603:%d",
		held(t, 600), held(t, 601), held(t, 602), held(t, 603));
	/* All warm but one: the new one (604, warm) stays, 603 goes. */
	TRY(pieces(t, 605, (const int[]){ 0 }, 1));
	REQUIRE(held(t, 603) < 0 && held(t, 604) == 1 && held(t, 605) == 1,
		"second eviction: 603:%d 604:%d 605:%d", held(t, 603),
		held(t, 604), held(t, 605));
	EXPECT(t, &s, D(reasm_reqds, 9), D(frag_evicted, 2),
	       D(reasm_evicted, 2), D(reasm_fails, 2), D(frags_in_flight, 7),
	       D(dgrams_in_flight, 4), D(bytes_in_flight, 7 * 1200),
	       D(mem_in_flight, 7 * XFRAG_CHUNK));
	return 0;
}

/*
 * Above the high watermark (7/8 of 8 chunks) an evicting policy frees ways
 * of the bucket until under the low one (3/4): the 8th chunk evicts two.
 */
int t_watermark(struct tctx *t)
{
	struct snap s;

	TRY(load(t, &(struct setup){ .buckets = 1, .ways = 8, .nchunks = 8,
				      .evict = XFRAG_EVICT_LRU }));
	TRY(snap(t, -1, &s));
	for (int i = 0; i < 8; i++)
		TRY(pieces(t, 700 + i, (const int[]){ 0 }, 1));
	REQUIRE(held(t, 700) < 0 && held(t, 701) < 0 && held(t, 702) == 1 &&
		held(t, 707) == 1, "watermark evicted 700:%d 701:%d 702:%d",
		held(t, 700), held(t, 701), held(t, 702));
	EXPECT(t, &s, D(reasm_reqds, 8), D(frag_evicted, 2),
	       D(reasm_evicted, 2), D(reasm_fails, 2), D(frags_in_flight, 6),
	       D(dgrams_in_flight, 6), D(bytes_in_flight, 6 * 1200),
	       D(mem_in_flight, 6 * XFRAG_CHUNK));
	return 0;
}

/*
 * The top half of the room above the high watermark is kept for datagrams
 * in progress: 16 chunks, high 14, so new datagrams stop at 15 while one
 * in progress still gets the 16th.  Here nothing may be evicted: every
 * held datagram is warm and further along than a new one.
 */
int t_reserve(struct tctx *t)
{
	struct snap s;

	TRY(load(t, &(struct setup){ .buckets = 1, .ways = 32, .nchunks = 16,
				      .warm_ms = 60000 }));
	TRY(snap(t, -1, &s));
	for (int i = 0; i < 4; i++)				/* 12 chunks */
		TRY(pieces(t, 900 + i, (const int[]){ 0, 1, 2 }, 3));
	TRY(pieces(t, 907, (const int[]){ 0, 1 }, 2));		/* 14: high */
	TRY(pieces(t, 906, (const int[]){ 0 }, 1));		/* 15 */
	REQUIRE(held(t, 906) == 1, "new datagram refused below the reserve");
	/* Out of sequence, so no held datagram scores as low (ties may go). */
	TRY(pieces(t, 908, (const int[]){ 2 }, 1));		/* reserve */
	REQUIRE(held(t, 908) < 0, "new datagram took the reserve");
	TRY(pieces(t, 906, (const int[]){ 3 }, 1));		/* 16th */
	REQUIRE(held(t, 906) == 2, "datagram in progress refused the reserve");
	EXPECT(t, &s, D(reasm_reqds, 17), D(frag_nomem, 1), D(reasm_fails, 1),
	       D(frags_in_flight, 16), D(dgrams_in_flight, 6),
	       D(bytes_in_flight, 15 * 1200 + 1192),
	       D(mem_in_flight, 16 * XFRAG_CHUNK));
	return 0;
}

/*
 * Quota 2 per source: a third datagram from the same source is refused
 * (before it could evict anything); once one completes, it is taken.
 */
int t_quota(struct tctx *t)
{
	struct snap s;

	TRY(load(t, &(struct setup){ .quota = 2 }));
	TRY(snap(t, -1, &s));
	TRY(pieces(t, 800, (const int[]){ 0 }, 1));
	TRY(pieces(t, 801, (const int[]){ 0 }, 1));
	TRY(pieces(t, 802, (const int[]){ 0 }, 1));
	REQUIRE(held(t, 802) < 0, "third datagram taken over quota");
	EXPECT(t, &s, D(reasm_reqds, 3), D(frag_quota, 1),
	       D(frags_in_flight, 2), D(dgrams_in_flight, 2),
	       D(bytes_in_flight, 2 * 1200), D(mem_in_flight, 2 * XFRAG_CHUNK));
	TRY(pieces(t, 800, (const int[]){ 1, 2 }, 2));
	{
		struct dgram *d = udp_dgram(800, 4792);
		struct frame f;

		mkfrag(&f, d, 3600, 1192, 0, 0);
		TRY(send_handoff(t, &f, d, "800 completes"));
	}
	TRY(pieces(t, 802, (const int[]){ 0 }, 1));
	REQUIRE(held(t, 802) == 1, "quota not given back on completion");
	return 0;
}
