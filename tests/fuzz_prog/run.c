// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fuzz_prog: running frames through xfrag_xdp and xfrag_tc and checking what comes out; noise. */
#include "fuzz_prog.h"

static const char *const kname[] = { "clean fragment", "mutant", "plain packet",
				     "atomic fragment", "noise", "visit" };

const __u8 *cur_frame;	/* the frame being run, for FAIL lines */
static __u32 cur_len;
static int cur_kind;

void print_frame(void)
{
	if (!cur_frame)
		return;
	printf("frame (%s, %u bytes):", kname[cur_kind], cur_len);
	for (__u32 i = 0; i < cur_len && i < 128; i++)
		printf("%s%02x", i % 32 ? " " : "\n  ", cur_frame[i]);
	printf("%s\n", cur_len > 128 ? " ..." : "");
}

static void ring_put(const __u8 *f, __u32 len)
{
	struct ring_ent *e;

	cur_frame = f;
	cur_len = len;

	if (!pcap_path)
		return;
	e = &ring[ring_n++ % RING];
	free(e->b);
	e->b = malloc(len ? len : 1);
	if (e->b)
		memcpy(e->b, f, len);
	e->len = e->b ? len : 0;
}

void pcap_dump(void)
{
	__u32 gh[6] = { 0xa1b2c3d4, 0x00040002, 0, 0, 262144, 1 };
	__u64 first = ring_n > RING ? ring_n - RING : 0;
	FILE *fp;

	if (!pcap_path || !(fp = fopen(pcap_path, "w")))
		return;
	fwrite(gh, 4, 6, fp);
	for (__u64 i = first; i < ring_n; i++) {
		struct ring_ent *e = &ring[i % RING];
		__u32 ph[4] = { (__u32)i, 0, e->len, e->len };

		fwrite(ph, 4, 4, fp);
		fwrite(e->b, 1, e->len, fp);
	}
	fclose(fp);
	printf("fuzz_prog: last %llu frames written to %s\n",
	       (unsigned long long)(ring_n - first), pcap_path);
}

/* L2 as xfrag parses it: up to two tags.  Returns l3off, sets *type. */
static __u32 parse_l2(const __u8 *p, __u32 len, __u16 *type)
{
	__u32 off = 14;

	*type = 0;
	if (len < 14)
		return 0;
	*type = get16(p + 12);
	for (int i = 0; i < 2; i++) {
		if (*type != ETH_P_8021Q_ && *type != ETH_P_8021AD_)
			break;
		if (off + 4 > len)
			return 0;
		*type = get16(p + off + 2);
		off += 4;
	}
	return off;
}

/*
 * A datagram delivered in `o` (from input frame `in`): one well-formed
 * unfragmented IP packet filling the frame, behind the input's L2 header;
 * a clean one equals the original.
 */
static int check_dgram(struct run *r, const char *who, const __u8 *o,
		       __u32 olen, const __u8 *in, __u32 inlen,
		       const struct dgram *clean)
{
	__u16 type;
	__u32 l3 = parse_l2(o, olen, &type), n, i, wlen;
	const __u8 *want;

	REQUIRE(l3 && l3 <= inlen && !memcmp(o, in, l3),
		"%s: rebuilt frame (%u bytes) lost the input's L2 header", who,
		olen);
	if (type == ETH_P_IP_) {
		const __u8 *ip = o + l3;
		__u32 hl;

		REQUIRE(olen >= l3 + 20 && ip[0] >> 4 == 4,
			"%s: rebuilt frame is no IPv4 packet", who);
		hl = (ip[0] & 0xf) * 4;
		REQUIRE(hl >= 20 && l3 + hl <= olen,
			"%s: rebuilt IPv4 header length %u", who, hl);
		REQUIRE(csum(ip, hl) == 0, "%s: rebuilt IPv4 checksum wrong", who);
		REQUIRE(get16(ip + 2) == olen - l3,
			"%s: rebuilt IPv4 total length %u, frame has %u", who,
			get16(ip + 2), olen - l3);
		REQUIRE((get16(ip + 6) & ~F_DF) == 0,
			"%s: rebuilt IPv4 still fragmented (%#x)", who,
			get16(ip + 6));
	} else if (type == ETH_P_IPV6_) {
		const __u8 *ip = o + l3;

		REQUIRE(olen >= l3 + 40 && ip[0] >> 4 == 6,
			"%s: rebuilt frame is no IPv6 packet", who);
		REQUIRE(40U + get16(ip + 4) == olen - l3,
			"%s: rebuilt IPv6 payload length %u, frame has %u", who,
			get16(ip + 4), olen - l3 - 40);
	} else {
		return fail(r, "%s: rebuilt frame has EtherType %#x", who, type);
	}
	if (!clean)
		return 0;
	/* The L2 header is the completing frame's (checked above). */
	o += l3;
	olen -= l3;
	want = clean->orig + clean->l2len;
	wlen = clean->olen - clean->l2len;
	n = olen < wlen ? olen : wlen;
	for (i = 0; i < n && o[i] == want[i]; i++)
		;
	REQUIRE(olen == wlen && i == n,
		"%s: rebuilt datagram differs from the original (%u bytes of L3, want %u; first difference at L3 byte %u)",
		who, olen, wlen, i);
	return 0;
}

/* 0: ran; 1: test_run would not take the frame; -1: failed. */
static int tc_run(struct run *r, const __u8 *f, __u32 len, __u32 *ret,
		  __u32 *olen)
{
	LIBBPF_OPTS(bpf_test_run_opts, o,
		.data_in = f,
		.data_size_in = len,
		.data_out = tout,
		.data_size_out = sizeof(tout),
		.repeat = 1,
	);

	if (bpf_prog_test_run_opts(r->tc_fd, &o)) {
		/* test_run refuses IP frames shorter than their header */
		REQUIRE(errno == EINVAL && len < 14 + 40 + 8,
			"tc test_run (%u bytes): %s", len, strerror(errno));
		return 1;
	}
	*ret = o.retval;
	*olen = o.data_size_out;
	return 0;
}

/*
 * A short fragment with the key of the long one in f (its L2 and L3
 * headers, 8 payload bytes), for TC to find the hand-off by.  Returns its
 * length, 0 when f cannot be cut so.
 */
static __u32 proxy_frame(__u8 *px, const __u8 *f, __u32 len)
{
	static const __u8 ext[] = { 0, 43, 60, 51, 135, 139, 140, 253, 254 };
	__u16 type;
	__u32 l3 = parse_l2(f, len, &type), end;

	if (!l3)
		return 0;
	if (type == ETH_P_IP_) {
		__u32 hl;

		if (len < l3 + 20)
			return 0;
		hl = (f[l3] & 0xf) * 4;
		end = l3 + hl + 8;
		if (hl < 20 || end > len || end > tc_in_max)
			return 0;
		memcpy(px, f, end);
		put16(px + l3 + 2, hl + 8);
		fr_ip4_csum(px + l3);
		return end;
	}
	if (type == ETH_P_IPV6_ && len >= l3 + 40) {
		/* the walk of xfrag_ip6_walk(): up to 8 known headers */
		__u32 off = l3 + 40, pos = l3 + 6;

		for (int i = 0; i <= 8; i++) {
			__u8 nh = f[pos];

			if (nh == 44) {
				end = off + 8 + 8;
				if (end > len || end > tc_in_max)
					return 0;
				memcpy(px, f, end);
				put16(px + l3 + 4, end - l3 - 40);
				return end;
			}
			if (i == 8 || !memchr(ext, nh, sizeof(ext)) ||
			    off + 2 > len)
				return 0;
			pos = off;
			off += nh == 51 ? (f[off + 1] + 2U) * 4 :
					  (f[off + 1] + 1U) * 8;
		}
	}
	return 0;
}

/*
 * TC on frame f.  `handoff`: XDP just handed a datagram over (meta m).
 * Returns 1 when TC rebuilt a datagram.
 */
static int run_tc(struct run *r, const __u8 *f, __u32 len, int handoff,
		  const struct xfrag_meta *m, const struct dgram *clean,
		  int mutant)
{
	struct snap before = r->last, now;
	__u32 ret = 0, olen = 0, pend = 0, pend_after = 0;
	struct xfrag_way w;
	int rebuilt;

	if (handoff) {
		/* TC finds a hand-off by key: with an older one of the same
		 * key still pending (one left to expire), it may take that
		 * one instead. */
		TRY(read_way(r, m->way, &w));
		TRY(pending_with_key(r, &w.key, &pend));
	}
	switch (tc_run(r, f, len, &ret, &olen)) {
	case 0:
		break;
	case 1:
		r->tc_refused++;
		return 0;
	default:
		return -1;
	}
	REQUIRE(ret == TC_OK || ret == TC_SHOT, "TC returned %u", ret);
	TRY(snap_checked(r, &now));
	r->last = now;
	rebuilt = ret == TC_OK && (olen != len || memcmp(tout, f, len));
	REQUIRE(V(&now, deliver_tc) - V(&before, deliver_tc) == (__u64)rebuilt,
		"TC %s the frame but deliver_tc moved by %lld",
		rebuilt ? "rebuilt" : "did not rebuild",
		(long long)(V(&now, deliver_tc) - V(&before, deliver_tc)));
	REQUIRE(V(&now, deliver_err) - V(&before, deliver_err) ==
		(__u64)(ret == TC_SHOT),
		"TC returned %s but deliver_err moved by %lld",
		ret == TC_SHOT ? "SHOT" : "OK",
		(long long)(V(&now, deliver_err) - V(&before, deliver_err)));
	if (ret == TC_SHOT)
		r->tc_shot++;
	if (rebuilt) {
		TRY(check_dgram(r, "TC", tout, olen, f, len,
				mutant ? NULL : clean));
		if (handoff)
			r->o_delivered = 1;
		if (mutant)
			r->mut_tc++;
		else if (clean)
			r->clean_tc++;
	}
	if (handoff) {
		struct xfrag_key key = w.key;

		TRY(pending_with_key(r, &key, &pend_after));
		TRY(read_way(r, m->way, &w));
		REQUIRE(pend_after + 1 == pend &&
			(pend > 1 || !(w.state == XFRAG_WAY_HANDOFF &&
				       w.cookie == m->cookie)),
			"TC (returned %s) on a hand-off (way %u): %u hand-offs of that key pending before, %u after",
			ret == TC_OK ? "OK" : "SHOT", m->way, pend, pend_after);
		REQUIRE(rebuilt || ret == TC_SHOT,
			"TC returned OK on a hand-off without rebuilding it");
	}
	return rebuilt;
}

/*
 * One frame through XDP, then TC where due, with every check.  `clean` is
 * the frame's datagram for K_CLEAN.
 */
int run_frame(struct run *r, const __u8 *f, __u32 len, int kind,
		     const struct dgram *clean)
{
	LIBBPF_OPTS(bpf_test_run_opts, o,
		.data_in = f,
		.data_size_in = len,
		.data_out = out,
		.data_size_out = sizeof(out),
		.repeat = 1,
	);
	struct snap before = r->last, now;
	const char *k = kname[kind];
	__u64 d_reqds, d_xdp, d_err, d_oks;
	int handoff = 0, rebuilt = 0, untouched = 0;
	int mutant = kind != K_CLEAN;
	struct xfrag_meta m;

	ring_put(f, len);
	cur_kind = kind;
	r->o_verdict = ~0U;
	r->o_untouched = r->o_delivered = 0;
	if (kind != K_VISIT)
		r->frame_no++;		/* the round's budget */
	r->f_sent++;
	if (bpf_prog_test_run_opts(r->xdp_fd, &o)) {
		REQUIRE(errno == EINVAL && (len < 14 || len > xdp_in_max),
			"xdp test_run (%s, %u bytes): %s", k, len,
			strerror(errno));
		r->tr_refused++;
		return 0;
	}
	REQUIRE(o.retval == XDP_PASS || o.retval == XDP_DROP,
		"XDP returned %u on a %s of %u bytes (%s)", o.retval, k, len,
		o.retval == XDP_ABORTED ? "XDP_ABORTED" : "not PASS or DROP");
	TRY(snap_checked(r, &now));
	r->last = now;
	d_reqds = V(&now, reasm_reqds) - V(&before, reasm_reqds);
	d_xdp = V(&now, deliver_xdp) - V(&before, deliver_xdp);
	d_err = V(&now, deliver_err) - V(&before, deliver_err);
	d_oks = V(&now, reasm_oks) - V(&before, reasm_oks);

	r->o_verdict = o.retval;
	if (o.retval == XDP_PASS) {
		untouched = o.data_size_out == len && !memcmp(out, f, len);
		r->o_untouched = untouched;
		if (use_meta && !untouched &&
		    o.data_size_out == len + sizeof(m) &&
		    !memcmp(out + sizeof(m), f, len)) {
			memcpy(&m, out, sizeof(m));
			handoff = m.magic == XFRAG_META_MAGIC;
		} else if (!use_meta && untouched &&
			   d_oks == d_xdp + d_err + 1) {
			/* No metadata on this kernel: a hand-off passes
			 * the frame as it is; the newest one is it. */
			TRY(newest_handoff(r, &m));
			handoff = 1;
			untouched = 0;
			r->o_untouched = 0;
		}
		rebuilt = !untouched && !handoff;
	}
	REQUIRE(d_reqds <= 1, "%s: reasm_reqds moved by %llu", k,
		(unsigned long long)d_reqds);
	REQUIRE(o.retval == XDP_PASS || d_reqds == 1,
		"%s (%u bytes) dropped but not counted as a fragment", k, len);
	REQUIRE(d_xdp == (__u64)rebuilt,
		"%s: XDP output %s but deliver_xdp moved by %llu", k,
		rebuilt ? "rebuilt" : "not rebuilt", (unsigned long long)d_xdp);
	REQUIRE(d_oks == d_xdp + d_err + (__u64)handoff,
		"%s: reasm_oks moved by %llu, deliver_xdp %llu deliver_err %llu hand-off %d",
		k, (unsigned long long)d_oks, (unsigned long long)d_xdp,
		(unsigned long long)d_err, handoff);
	REQUIRE(!(handoff || rebuilt) || d_reqds == 1,
		"%s: a datagram delivered on a frame not counted as a fragment", k);
	switch (kind) {
	case K_CLEAN:
	case K_VISIT:
		REQUIRE(d_reqds == 1, "%s not counted as a fragment", k);
		break;
	case K_PLAIN:
	case K_ATOMIC:
		REQUIRE(o.retval == XDP_PASS && untouched,
			"%s (%u bytes) not passed untouched (XDP %u, %u bytes out)",
			k, len, o.retval, o.data_size_out);
		REQUIRE(d_reqds == (kind == K_ATOMIC),
			"%s: reasm_reqds moved by %llu", k,
			(unsigned long long)d_reqds);
		break;
	default:
		break;
	}
	if (kind == K_VISIT)
		REQUIRE(o.retval == XDP_DROP, "visit not dropped");

	if (rebuilt) {
		TRY(check_dgram(r, "XDP", out, o.data_size_out, f, len,
				kind == K_CLEAN ? clean : NULL));
		r->o_delivered = 1;
		if (kind == K_CLEAN)
			r->clean_xdp++;
		else
			r->mut_xdp++;
	}
	if (handoff) {
		struct xfrag_way w;

		r->handoffs++;
		REQUIRE(m.cpu == (__u32)cur_cpu && m.way < r->nways,
			"hand-off meta names cpu %u way %u", m.cpu, m.way);
		TRY(read_way(r, m.way, &w));
		REQUIRE(w.state == XFRAG_WAY_HANDOFF && w.cookie == m.cookie,
			"hand-off meta (way %u cookie %u) but the way is in state %u cookie %u",
			m.way, m.cookie, w.state, w.cookie);
		if (r->lose && chance(20)) {
			/* Never collected: expires as handoff_lost. */
			r->lose--;
			r->tc_skipped++;
			return 0;
		}
		if (len > tc_in_max) {
			/* Too long for TC's test_run: TC finds the hand-off
			 * by key on a short fragment of the same datagram. */
			static __u8 px[4096];
			__u32 plen = proxy_frame(px, f, len);

			if (!plen) {
				r->tc_skipped++;	/* left to expire */
				return 0;
			}
			r->tc_proxy++;
			return run_tc(r, px, plen, 1, &m,
				      kind == K_CLEAN ? clean : NULL,
				      mutant) < 0 ? -1 : 0;
		}
		return run_tc(r, f, len, 1, &m, kind == K_CLEAN ? clean : NULL,
			      mutant) < 0 ? -1 : 0;
	}
	if (o.retval == XDP_PASS && untouched && r->s.tc_on_pass &&
	    len <= tc_in_max && len >= 14)
		return run_tc(r, f, len, 0, NULL,
			      kind == K_CLEAN ? clean : NULL, mutant) < 0 ? -1 : 0;
	return 0;
}

/* ---- Noise --------------------------------------------------------------- */

/* An unfragmented packet, an atomic fragment, or random bytes. */
int send_noise(struct run *r)
{
	__u32 len, c = rnd(100);
	int kind = K_NOISE;

	if (c < 25) {
		len = rnd(65);
		rnd_fill(fbuf, len);
	} else if (c < 40) {
		static const __u16 et[] = { 0x0806, 0x88cc, 0x8847, 0x8864 };

		len = range(14, 1600);
		rnd_fill(fbuf, len);
		put16(fbuf + 12, chance(70) ? et[rnd(4)] : rnd(0x10000));
		if (get16(fbuf + 12) == ETH_P_IP_ ||
		    get16(fbuf + 12) == ETH_P_IPV6_ ||
		    get16(fbuf + 12) == ETH_P_8021Q_ ||
		    get16(fbuf + 12) == ETH_P_8021AD_)
			put16(fbuf + 12, 0x0806);
	} else {
		/* a plain packet or atomic fragment from a fresh datagram */
		static struct dgram d;
		int atomic;

		mk_dgram(&d, 1);
		atomic = d.fam == 6 && chance(40);
		if (d.olen > 9000)
			return 0;
		if (atomic) {
			len = mk_frag(fbuf, &d, 0, 0, d.plen, 0, 0);
			kind = K_ATOMIC;
		} else {
			memcpy(fbuf, d.orig, d.olen);
			len = d.olen;
			kind = K_PLAIN;
		}
		if (chance(10)) {
			__u32 pad = range(1, 40);

			rnd_fill(fbuf + len, pad);
			len += pad;
		}
	}
	if (names_clean(fbuf, len)) {
		r->f_skipped++;
		return 0;
	}
	r->f_noise++;
	return run_frame(r, fbuf, len, kind, NULL);
}
