// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* test_prog: IPv6. */
#include "test_prog.h"

/* next: number of 8-byte extension headers (hop-by-hop, dest opts, routing). */
static void build6(struct d6 *d, __u32 id, __u32 udp_len, int next, int nvlan,
		   __u16 vid)
{
	static const __u8 ext_type[3] = { 0, 60, 43 };
	__u32 s = id ^ 0x6b43a9b5;
	__u8 *ip, *udp, *nhp;

	memset(d->b, 0, 128);
	d->l3off = fr_eth(d->b, mac_dst, mac_src,
			  &(struct fr_vlan){ ETH_P_8021Q, vid }, nvlan ? 1 : 0,
			  ETH_P_IPV6);
	d->hlen = 40 + 8 * next;
	d->plen = udp_len;
	d->len = d->l3off + d->hlen + udp_len;
	d->id = id;
	ip = d->b + d->l3off;
	/* A traffic class and flow label of its own; 2001::1 -> 2001::2. */
	fr_ip6(ip, 0x000a0042, d->hlen - 40 + udp_len, IPPROTO_UDP, 64,
	       (const __u8[16]){ 0x20, 0x01, [15] = 1 },
	       (const __u8[16]){ 0x20, 0x01, [15] = 2 });
	nhp = ip + 6;
	for (int i = 0; i < next; i++) {
		__u8 *h = ip + 40 + 8 * i;

		*nhp = ext_type[i];
		h[1] = 0;
		if (ext_type[i] == 43) {
			h[2] = 4;	/* routing type, segments left 0 */
			h[3] = 0;
		} else {
			h[2] = 1;	/* PadN, 4 bytes */
			h[3] = 4;
		}
		nhp = h;
	}
	*nhp = IPPROTO_UDP;
	d->nhpos = nhp - d->b;
	udp = ip + d->hlen;
	fr_udp(udp, 4242, 5353, udp_len);
	for (__u32 i = 8; i < udp_len; i++)
		udp[i] = xorshift(&s) >> 24;
	put16(udp + 6, fr_udp_csum(sum16(udp, udp_len,
					 fr_pseudo(1, ip + 8, ip + 24,
						   IPPROTO_UDP, udp_len))));
}

/*
 * Fragment [off, off + len) of d's fragmentable part with a Fragment header
 * (next header nh, identification id) after the unfragmentable headers.
 */
static void mkfrag6x(struct frame *f, const struct d6 *d, __u32 off,
		     __u32 len, int mf, __u32 id, __u8 nh)
{
	__u32 u = d->l3off + d->hlen;
	__u8 *fh = f->b + u, *pl = fh + 8;
	const __u8 *dp = d->b + u;

	if (u + 8 + len > FRAME_MAX) {
		fprintf(stderr, "test bug: fragment too big\n");
		exit(2);
	}
	memcpy(f->b, d->b, u);
	put16(f->b + d->l3off + 4, d->hlen - 40 + 8 + len);
	f->b[d->nhpos] = FR_PROTO_FRAG6;
	fr_frag6(fh, nh, off, mf, id);
	for (__u32 i = 0, at = off; i < len; i++, at++)
		pl[i] = at < d->plen ? dp[at] : (__u8)(0x5a ^ at);
	f->len = u + 8 + len;
}

static void mkfrag6(struct frame *f, const struct d6 *d, __u32 off, __u32 len,
		    int mf)
{
	mkfrag6x(f, d, off, len, mf, d->id, IPPROTO_UDP);
}

static struct d6 *dg6(void)
{
	static struct d6 d[3];
	static int next;

	return &d[next++ % 3];
}

static int send_seq6(struct tctx *t, const struct d6 *d, const struct fl *fl,
		     const int *order, int n, int end)
{
	static struct frame f;
	char what[64];

	for (int i = 0; i < n; i++) {
		const struct fl *x = &fl[order ? order[i] : i];

		mkfrag6(&f, d, x->off, x->len, x->mf);
		snprintf(what, sizeof(what), "v6 fragment %d (off %u len %u)%s",
			 i + 1, x->off, x->len, x->mf ? " M" : "");
		if (i < n - 1 || end == END_NONE) {
			TRY(send_drop(t, &f, what));
		} else {
			TRY(xdp(t, f.b, f.len));
			TRY(verdict(t, XDP_PASS, what));
			TRY(same(t, d->b, d->len, what));
		}
	}
	return 0;
}

static int split6(const struct d6 *d, __u32 max, struct fl *out)
{
	int n = 0;

	for (__u32 off = 0; off < d->plen; off += max, n++) {
		out[n].off = off;
		out[n].len = d->plen - off > max ? max : d->plen - off;
		out[n].mf = off + max < d->plen;
	}
	return n;
}

#define COMPLETE6(n, bytes)	COMPLETE_XDP(n, bytes), D(ip6_reqds, n), D(ip6_oks, 1)

static const struct cmp6 {
	__u32 id, udp_len, fsz;
	int next, rev, nvlan;
	__u16 vid;
} cmp6s[] = {
	{ 0x1001, 2000, 1232, 0, 0, 0, 0 },
	{ 0x1002, 3000, 1200, 0, 1, 0, 0 },
	{ 0x1003, 3000, 1200, 3, 0, 0, 0 },
	{ 0x1004, 2600, 1200, 3, 1, 0, 0 },
	{ 0x1005, 2500, 1232, 0, 1, 1, 42 },
	{ 0x80000006, 2900, 1000, 2, 0, 1, 4095 },
};

int t6_complete(struct tctx *t)
{
	const struct cmp6 *c = &cmp6s[t->arg];
	struct d6 *d = dg6();
	int order[32], n;
	struct fl fl[32];
	struct snap s;

	build6(d, c->id, c->udp_len, c->next, c->nvlan, c->vid);
	n = split6(d, c->fsz, fl);
	for (int i = 0; i < n; i++)
		order[i] = c->rev ? n - 1 - i : i;
	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	TRY(send_seq6(t, d, fl, order, n, END_REBUILT));
	EXPECT(t, &s, COMPLETE6(n, c->udp_len));
	return 0;
}

int t6_dup(struct tctx *t)
{
	struct d6 *d = dg6();
	struct frame f;
	struct snap s;

	build6(d, 0x2001, 3000, t->arg, 0, 0);
	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	mkfrag6(&f, d, 2000, 1000, 0);
	TRY(send_drop(t, &f, "last"));
	TRY(send_drop(t, &f, "last again"));
	mkfrag6(&f, d, 0, 1000, 1);
	TRY(send_drop(t, &f, "first"));
	TRY(send_drop(t, &f, "first again"));
	EXPECT(t, &s, D(reasm_reqds, 4), D(ip6_reqds, 4), D(frag_dup, 2),
	       D(frags_in_flight, 2), D(dgrams_in_flight, 1),
	       D(bytes_in_flight, 2000), D(mem_in_flight, 2 * XFRAG_CHUNK));
	mkfrag6(&f, d, 1000, 1000, 1);
	TRY(xdp(t, f.b, f.len));
	TRY(verdict(t, XDP_PASS, "middle"));
	TRY(same(t, d->b, d->len, "middle"));
	EXPECT(t, &s, D(reasm_reqds, 5), D(ip6_reqds, 5), D(frag_dup, 2),
	       D(reasm_oks, 1), D(ip6_oks, 1), D(deliver_xdp, 1),
	       D(frag_reasm, 3), D(bytes_reasm, 3000));
	return 0;
}

static const struct rej6 {
	__u32 udp_len;
	int nheld, counter;
	struct fl held[2], bad;
} rej6s[] = {
	{ 2400, 2, C_frag_overlap, { { 0, 400, 1 }, { 800, 800, 1 } }, { 400, 800, 1 } },
	{ 2400, 2, C_frag_overlap, { { 0, 400, 1 }, { 800, 800, 1 } }, { 1200, 1200, 0 } },
	/* non-last fragment, 404 bytes: not a multiple of 8 */
	{ 2400, 1, C_frag_bad_len, { { 0, 800, 1 } }, { 800, 404, 1 } },
	{ 2400, 1, C_frag_bad_len, { { 1600, 800, 0 } }, { 0, 1001, 1 } },
	/* 8 + 65544 > 65535 */
	{ 3000, 1, C_frag_too_long, { { 0, 1200, 1 } }, { 65528, 16, 0 } },
	{ 3000, 0, C_frag_too_long, {}, { 65528, 16, 0 } },
};

int t6_reject(struct tctx *t)
{
	const struct rej6 *r = &rej6s[t->arg];
	struct d6 *d = dg6();
	struct frame f;
	struct snap s;

	build6(d, 0x3000 + t->arg, r->udp_len, t->arg & 1 ? 3 : 0, 0, 0);
	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	TRY(send_seq6(t, d, r->held, NULL, r->nheld, END_NONE));
	mkfrag6(&f, d, r->bad.off, r->bad.len, r->bad.mf);
	TRY(xdp(t, f.b, f.len));
	EXPECT(t, &s, D(reasm_reqds, r->nheld + 1), D(ip6_reqds, r->nheld + 1),
	       { r->counter, 1 }, D(frag_discarded, r->nheld),
	       D(reasm_fails, 1),
	       D(reasm_overlaps, r->counter == C_frag_overlap));
	return verdict(t, XDP_DROP, "rejected fragment");
}

/* First fragment whose destination options header runs past its end. */
int t6_bad_chain(struct tctx *t)
{
	struct d6 *d = dg6();
	struct frame f;
	struct snap s;
	__u8 *pl;

	build6(d, 0x4001, 2000, 0, 0, 0);
	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	mkfrag6x(&f, d, 0, 8, 1, d->id, 60);
	pl = f.b + d->l3off + d->hlen + 8;
	memcpy(pl, (const __u8[]){ IPPROTO_UDP, 1, 1, 4, 0, 0, 0, 0 }, 8);
	TRY(send_drop(t, &f, "dest opts beyond the fragment"));
	/* UDP header cut: 8 bytes of dest opts, then 8 of... nothing more */
	mkfrag6x(&f, d, 0, 16, 1, d->id, 60);
	memcpy(pl, (const __u8[]){ IPPROTO_UDP, 1, 1, 12, 0, 0, 0, 0,
				   0, 0, 0, 0, 0, 0, 0, 0 }, 16);
	TRY(send_drop(t, &f, "no room for the UDP header"));
	EXPECT(t, &s, D(reasm_reqds, 2), D(ip6_reqds, 2), D(frag_bad_chain, 2));
	return 0;
}

/*
 * First fragments whose chain Linux cannot follow are not "cut" for it
 * (ipv6_skip_exthdr() fails, ipv6frag_thdr_truncated() says no): they are
 * queued like any other.  A zero-length one naming a Destination Options
 * header it does not carry therefore discards its datagram (ip6_frag_queue:
 * end == offset), and one whose Destination Options header says No Next
 * Header (59) is held, and completes its datagram.
 */
int t6_chain_unreadable(struct tctx *t)
{
	struct d6 *d = dg6();
	struct frame f;
	struct snap s;
	__u8 *pl;

	build6(d, 0x4002, 2000, 0, 0, 0);
	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	mkfrag6(&f, d, 1000, 1008, 0);
	TRY(send_drop(t, &f, "last fragment, held"));
	mkfrag6x(&f, d, 0, 0, 1, d->id, 60);
	TRY(send_drop(t, &f, "zero-length first, dest opts not carried"));
	EXPECT(t, &s, D(reasm_reqds, 2), D(ip6_reqds, 2), D(frag_zero_len, 1),
	       D(frag_discarded, 1), D(reasm_fails, 1));
	/* Dest opts (8 bytes) then No Next Header: held, then completed. */
	TRY(snap(t, -1, &s));
	mkfrag6x(&f, d, 0, 8, 1, d->id + 1, 60);
	pl = f.b + d->l3off + d->hlen + 8;
	memcpy(pl, (const __u8[]){ 59, 0, 1, 4, 0, 0, 0, 0 }, 8);
	TRY(send_drop(t, &f, "first fragment, dest opts then no next header"));
	mkfrag6x(&f, d, 8, 8, 0, d->id + 1, 60);
	TRY(xdp(t, f.b, f.len));
	TRY(verdict(t, XDP_PASS, "last fragment completes it"));
	EXPECT(t, &s, D(reasm_reqds, 2), D(ip6_reqds, 2), D(reasm_oks, 1),
	       D(ip6_oks, 1), D(deliver_xdp, 1), D(frag_reasm, 2),
	       D(bytes_reasm, 16));
	return 0;
}

/* Atomic fragments pass; one with the id of a datagram in progress too. */
int t6_atomic(struct tctx *t)
{
	struct d6 *d = dg6(), *a = dg6();
	struct frame f;
	struct fl fl[4];
	struct snap s;
	int n;

	build6(d, 0x5001, 3000, t->arg, 0, 0);
	build6(a, 0x5001, 300, t->arg, 0, 0);
	n = split6(d, 1200, fl);
	TRY(load(t, &(struct setup){ 0 }));
	TRY(snap(t, -1, &s));
	mkfrag6(&f, a, 0, a->plen, 0);
	TRY(send_pass(t, &f, "atomic alone"));
	EXPECT(t, &s, D(reasm_reqds, 1), D(ip6_reqds, 1), D(frag_atomic, 1));
	TRY(send_seq6(t, d, fl, NULL, n - 1, END_NONE));
	TRY(send_pass(t, &f, "atomic, same id in progress"));
	TRY(send_seq6(t, d, fl + n - 1, NULL, 1, END_REBUILT));
	EXPECT(t, &s, COMPLETE6(n, 3000), D(reasm_reqds, 2), D(ip6_reqds, 2),
	       D(frag_atomic, 2));
	return 0;
}

/*
 * IPv6 quota counts a /64 as one source (RFC 7421: a host picks its own
 * interface identifier, so one host can use every address in it): quota 2,
 * two addresses of one /64 fill it, a third address there is refused,
 * sources in other /64s are taken.  A source shares its quota slot with
 * another /64 with odds 1/4096 (XFRAG_SRCQ_SLOTS), so three other /64s are
 * tried and two must be taken.
 */
int t6_quota(struct tctx *t)
{
	struct d6 *d = dg6();
	struct frame f;
	struct snap s, e;
	int taken;

	TRY(load(t, &(struct setup){ .quota = 2 }));
	TRY(snap(t, -1, &s));
	for (int i = 0; i < 6; i++) {
		__u8 *src;

		build6(d, 0x6001 + i, 3000, 0, 0, 0);
		mkfrag6(&f, d, 0, 1200, 1);
		src = f.b + d->l3off + 8;
		src[7] = i < 3 ? 0 : i;		/* the /64 */
		src[11] = (__u8)(0x10 + i);	/* the interface identifier */
		src[15] = (__u8)(0x30 + i);
		TRY(send_drop(t, &f, i == 2 ? "third address of the /64" :
			      "other source"));
		if (i != 2)
			continue;
		EXPECT(t, &s, D(reasm_reqds, 3), D(ip6_reqds, 3),
		       D(frag_quota, 1), D(frags_in_flight, 2),
		       D(dgrams_in_flight, 2), D(bytes_in_flight, 2 * 1200),
		       D(mem_in_flight, 2 * XFRAG_CHUNK));
	}
	TRY(snap(t, -1, &e));
	taken = (int)(e.v[C_dgrams_in_flight] - s.v[C_dgrams_in_flight]) - 2;
	REQUIRE(taken >= 2, "only %d of 3 other /64s taken", taken);
	EXPECT(t, &s, D(reasm_reqds, 6), D(ip6_reqds, 6),
	       D(frag_quota, 1 + 3 - taken), D(frags_in_flight, 2 + taken),
	       D(dgrams_in_flight, 2 + taken),
	       D(bytes_in_flight, (2 + taken) * 1200),
	       D(mem_in_flight, (2 + taken) * XFRAG_CHUNK));
	return 0;
}
