// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fuzz_prog: streams, visits and the end of a round. */
#include "fuzz_prog.h"

/* ---- Streams ------------------------------------------------------------- */

int stream_step(struct run *r, struct stream *s)
{
	struct piece *p = &s->p[s->next++];
	struct dgram *d = &s->d;
	struct layout L = { .l3 = l2len_of(d, p->l2v), .fam = d->fam };
	__u32 base = hdr_room(d, p->l2v, p->off) + p->len;
	__u32 len = mk_frag(fbuf, d, p->l2v, p->off, p->len, p->mf,
			    base + p->pad > xdp_in_max ? 0 : p->pad);

	if (s->next >= s->n)
		s->live = 0;
	if (!s->mutant) {
		r->f_clean++;
		/* A piece that is the whole datagram (an overlap piece can
		 * be) is no fragment, or an IPv6 atomic one. */
		if (p->off == 0 && !p->mf)
			return run_frame(r, fbuf, len,
					 d->fam == 4 ? K_PLAIN : K_ATOMIC, NULL);
		TRY(run_frame(r, fbuf, len, K_CLEAN, d));
		if (!s->expect)
			return 0;
		if (s->expect != 'A') {
			REQUIRE(r->o_verdict == XDP_PASS && r->o_untouched,
				"class %c datagram (%u bytes, %s): fragment %d of %d not passed untouched (XDP %u)",
				s->expect, d->plen, d->fam == 4 ? "IPv4" : "IPv6",
				s->next, s->n, r->o_verdict);
			if (s->next == s->n)
				s->expect == 'B' ? r->expect_b++ : r->expect_c++;
			return 0;
		}
		if (s->next < s->n) {
			REQUIRE(r->o_verdict == XDP_DROP,
				"class A datagram (%u bytes, %s, %d fragments): fragment %d not consumed (XDP %u)",
				d->plen, d->fam == 4 ? "IPv4" : "IPv6", s->n,
				s->next, r->o_verdict);
			return 0;
		}
		REQUIRE(r->o_delivered,
			"class A datagram (%u bytes, %s, %d fragments): not delivered on its last fragment (XDP %u%s)",
			d->plen, d->fam == 4 ? "IPv4" : "IPv6", s->n,
			r->o_verdict, r->o_untouched ? ", untouched" : "");
		r->expect_a++;
		return 0;
	}
	if (d->fam == 6)
		L.fh = hdr_room(d, p->l2v, p->off) - 8;
	if (chance(s->mut_pct))
		len = mutate(fbuf, len, &L);
	if (names_clean(fbuf, len)) {
		r->f_skipped++;
		return 0;
	}
	r->f_mut++;
	return run_frame(r, fbuf, len, K_MUT, NULL);
}

/* ---- Visits and the end of a round --------------------------------------- */

/*
 * One fragment per bucket that every bucket would drop as too long: the
 * visit reclaims whatever has timed out there and leaves nothing behind.
 */
static int visit_all(struct run *r)
{
	static __u8 *seen;
	__u32 left = r->s.buckets;
	static __u8 f[64];	/* outlives the call: FAIL lines show it */

	seen = realloc(seen, r->s.buckets);
	REQUIRE(seen, "realloc");
	memset(seen, 0, r->s.buckets);
	for (__u32 id = 0; left && id < 64U * r->s.buckets + 100000; id++) {
		struct xfrag_key key = { 0 };
		__u8 *ip = f + 14;
		__u32 b;

		memcpy(&key.saddr[0], visit_src, 4);
		memcpy(&key.daddr[0], mut4_dst, 4);
		put16((__u8 *)&key.id, id & 0xffff);
		key.id &= 0xffff;
		key.daddr[0] ^= (id >> 16) << 24;	/* more ids past 65535 */
		key.proto = 17;
		key.family = XFRAG_AF_INET;
		b = bucket_base(r, &key) / r->s.ways;
		if (seen[b])
			continue;
		seen[b] = 1;
		left--;
		memset(f, 0, sizeof(f));
		memset(f, 0x02, 12);
		put16(f + 12, ETH_P_IP_);
		ip[0] = 0x45;
		put16(ip + 2, 20 + 16);
		memcpy(ip + 4, &key.id, 2);
		put16(ip + 6, 0x1fff);		/* 65528 + 16 > 65535 */
		ip[8] = 64;
		ip[9] = 17;
		memcpy(ip + 12, &key.saddr[0], 4);
		memcpy(ip + 16, &key.daddr[0], 4);
		fr_ip4_csum(ip);
		r->f_visit++;
		TRY(run_frame(r, f, 14 + 20 + 16, K_VISIT, NULL));
	}
	REQUIRE(!left, "found no key for %u buckets", left);
	return 0;
}

/* Check that the hash above is the data path's: a held fragment's way. */
int check_hash(struct run *r)
{
	struct stream *s = &streams[0];
	struct xfrag_key key = { 0 };
	struct xfrag_way w;
	__u32 base, len, hit = 0;

	do
		new_stream(s, 0, 0);
	while (s->d.fam != 4 || s->d.l2len != 14 || s->d.plen > 3000);
	len = mk_frag(fbuf, &s->d, 0, 0, 8, 1, 0);
	r->f_clean++;
	TRY(run_frame(r, fbuf, len, K_CLEAN, &s->d));
	memcpy(&key.saddr[0], s->d.hdr + 12, 4);
	memcpy(&key.daddr[0], s->d.hdr + 16, 4);
	memcpy(&key.id, s->d.hdr + 4, 2);
	key.proto = s->d.hdr[9];
	key.family = XFRAG_AF_INET;
	base = bucket_base(r, &key);
	for (__u32 i = 0; i < r->s.ways; i++) {
		TRY(read_way(r, base + i, &w));
		if ((w.state == XFRAG_WAY_ACTIVE || w.state == XFRAG_WAY_PASS) &&
		    !memcmp(&w.key, &key, sizeof(key)))
			hit = 1;
	}
	s->live = 0;
	REQUIRE(hit, "bucket hash of this test disagrees with the data path");
	/* The rest of it: nothing is left in flight. */
	len = mk_frag(fbuf, &s->d, 0, 8, s->d.plen - 8, 0, 0);
	r->f_clean++;
	TRY(run_frame(r, fbuf, len, K_CLEAN, &s->d));
	REQUIRE(!r->s.complete || r->o_delivered,
		"datagram of the hash check (%u bytes) not delivered",
		s->d.plen);
	return 0;
}

static int set_timeout(struct run *r, __u32 ms)
{
	__u32 zero = 0;

	r->s.cfg.timeout_ms = ms;
	REQUIRE(!bpf_map_update_elem(bpf_map__fd(r->skel->maps.xfrag_config),
				     &zero, &r->s.cfg, BPF_ANY),
		"config update: %s", strerror(errno));
	return 0;
}

static int drain_body(struct run *r, int final);

/* Past the time-out: everything is reclaimed, nothing leaks. */
int drain(struct run *r, int final)
{
	__u32 keep = r->s.cfg.timeout_ms;
	int err;

	if (!r->s.complete)
		return drain_body(r, final);
	/* Completeness rounds send under the longest time-out: shorten it
	 * for the drain, as `xfrag config timeout=` would. */
	TRY(set_timeout(r, 10));
	err = drain_body(r, final);
	return err ?: set_timeout(r, keep);
}

static int drain_body(struct run *r, int final)
{
	__u32 tmo = r->s.cfg.timeout_ms ?: XFRAG_DEF_TIMEOUT_MS;
	struct snap s;
	int waited = 0;

	sleep_ms(tmo + 20);
	for (;;) {
		int busy;

		TRY(visit_all(r));
		TRY(snap_checked(r, &s));
		r->last = s;
		busy = V(&s, frags_in_flight) || V(&s, dgrams_in_flight) ||
		       V(&s, bytes_in_flight) || V(&s, mem_in_flight) ||
		       V(&s, handoff_pending) || s.chunks_out;
		if (!busy)
			break;
		/* Hand-offs TC could not take wait for XFRAG_HANDOFF_NS. */
		REQUIRE(waited < 5000,
			"gauges not back to zero after the time-out: frags %llu dgrams %llu handoff %llu bytes %llu mem %llu chunks out %llu",
			(unsigned long long)V(&s, frags_in_flight),
			(unsigned long long)V(&s, dgrams_in_flight),
			(unsigned long long)V(&s, handoff_pending),
			(unsigned long long)V(&s, bytes_in_flight),
			(unsigned long long)V(&s, mem_in_flight),
			(unsigned long long)s.chunks_out);
		sleep_ms(250);
		waited += 250;
	}
	/* Every chunk is back on the free stack, each exactly once. */
	{
		static __u8 *seen;
		static __u64 *fv;	/* per-CPU values come in 8-byte slots */
		struct xfrag_pcpu *pc = calloc(ncpus, sizeof(*pc));
		__u32 zero = 0, nch = r->s.nchunks ?: XFRAG_DEF_MEM / XFRAG_CHUNK;
		int fd = bpf_map__fd(r->skel->maps.xfrag_free), err;
		__u32 top, fresh;

		seen = realloc(seen, nch);
		fv = realloc(fv, ncpus * sizeof(*fv));
		REQUIRE(pc && seen && fv, "alloc");
		err = bpf_map_lookup_elem(r->pcpu_fd, &zero, pc);
		top = pc[cur_cpu].free_top;
		fresh = pc[cur_cpu].next_fresh;
		free(pc);
		REQUIRE(!err, "pcpu lookup: %s", strerror(errno));
		REQUIRE(top == fresh && fresh <= nch,
			"allocator: free_top %u, next_fresh %u, %u chunks", top,
			fresh, nch);
		memset(seen, 0, nch);
		for (__u32 i = 0; i < top; i++) {
			__u32 c;

			REQUIRE(!bpf_map_lookup_elem(fd, &i, fv),
				"free lookup: %s", strerror(errno));
			c = (__u32)fv[cur_cpu];	/* little-endian */
			REQUIRE(c < fresh && !seen[c],
				"free stack entry %u: chunk %u %s", i, c,
				c < fresh ? "twice on the free stack" :
					    "never handed out");
			seen[c] = 1;
		}
	}
	for (__u32 i = 0; i < r->nways; i++) {
		struct xfrag_way w;

		TRY(read_way(r, i, &w));
		REQUIRE(w.state == XFRAG_WAY_FREE,
			"way %u in state %u after the time-out", i, w.state);
	}
	if (!final)
		return 0;
	{
		struct srcq *q = calloc(ncpus, sizeof(*q));
		__u32 zero = 0;
		int err;

		REQUIRE(q, "calloc");
		err = bpf_map_lookup_elem(r->srcq_fd, &zero, q);
		for (int c = 0; !err && c < ncpus; c++)
			for (int i = 0; i < XFRAG_SRCQ_SLOTS; i++)
				if (q[c].n[i]) {
					unsigned int v = q[c].n[i];

					free(q);
					return fail(r, "quota slot %d still counts %u",
						    i, v);
				}
		free(q);
		REQUIRE(!err, "srcq lookup: %s", strerror(errno));
	}
	return 0;
}
