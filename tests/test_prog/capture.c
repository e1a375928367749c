// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* test_prog: xfrag capture records. */
#include "test_prog.h"

static int cap_take(void *ctx, void *data, size_t size)
{
	struct caprecs *c = ctx;

	if (c->n < 8 && size >= sizeof(struct xfrag_cap_rec))
		memcpy(&c->r[c->n++], data, sizeof(struct xfrag_cap_rec));
	return 0;
}

static int cap_set(struct tctx *t, __u32 flags, __u32 rate)
{
	int fd = bpf_map__fd(t->skel->maps.xfrag_config);
	struct xfrag_config cfg;
	__u32 zero = 0;

	REQUIRE(!bpf_map_lookup_elem(fd, &zero, &cfg), "config read");
	cfg.flags = (cfg.flags & ~(XFRAG_CFG_CAPTURE | XFRAG_CFG_CAP_DELIVER)) |
		    flags;
	REQUIRE(!bpf_map_update_elem(bpf_map__fd(t->skel->maps.xfrag_capcfg),
				     &zero, &(struct xfrag_capcfg){
					     .cap_rate = rate }, BPF_ANY),
		"capcfg write");
	REQUIRE(!bpf_map_update_elem(fd, &zero, &cfg, BPF_ANY), "config write");
	return 0;
}

/* The record r is of frame f, dropped, and names the counters in `want`. */
static int cap_is(struct tctx *t, const struct xfrag_cap_rec *r,
		  const struct frame *f, __u64 want, const char *what)
{
	REQUIRE((r->moved & want) == want && r->verdict == XDP_DROP &&
		r->len == f->len && r->caplen == f->len &&
		!memcmp(r->data, f->b, f->len) && r->cpu == (__u32)cur_cpu,
		"%s: record moved %#llx (want %#llx) verdict %u len %u/%u cpu %u",
		what, (unsigned long long)r->moved, (unsigned long long)want,
		r->verdict, r->caplen, r->len, r->cpu);
	return 0;
}

/*
 * xfrag capture's BPF half: with the flag off nothing is written; on, a
 * record for each fragment that moved a counter of loss (its frame, the
 * counters it moved), none for a fragment held; past the rate, cap_lost.
 */
int t_capture(struct tctx *t)
{
	struct dgram *d = udp_dgram(90, 2000);
	struct ring_buffer *rb;
	struct caprecs c = {};
	struct frame f, g;
	struct snap s;
	int err = 0;

	TRY(load(t, &(struct setup){ .buckets = 1, .ways = 1,
				      .evict = XFRAG_EVICT_LRU }));
	rb = ring_buffer__new(bpf_map__fd(t->skel->maps.xfrag_capture),
			      cap_take, &c, NULL);
	REQUIRE(rb, "ring_buffer__new: %s", strerror(errno));
	mkfrag(&f, d, 0, 1000, 1, 0);
	mkfrag(&g, d, 8, 1000, 1, 0);
	/* Off: an overlap leaves no record. */
	err = send_drop(t, &f, "held") ?: send_drop(t, &g, "overlap, off");
	ring_buffer__consume(rb);
	if (!err && c.n)
		err = fail(t, "%d records with capture off", c.n);
	/* On: the overlap, then an eviction (one way, lru). */
	err = err ?: cap_set(t, XFRAG_CFG_CAPTURE, 0) ?: snap(t, -1, &s) ?:
	      send_drop(t, &f, "held, on") ?: send_drop(t, &g, "overlap, on");
	ring_buffer__consume(rb);
	if (!err && c.n != 1)
		err = fail(t, "%d records after an overlap, want 1", c.n);
	err = err ?: cap_is(t, &c.r[0], &g,
			    XFRAG_CNT_BIT(frag_overlap) |
			    XFRAG_CNT_BIT(frag_discarded) |
			    XFRAG_CNT_BIT(reasm_overlaps) |
			    XFRAG_CNT_BIT(reasm_fails), "overlap");
	if (!err) {
		struct dgram *a = udp_dgram(91, 2000), *b = udp_dgram(92, 2000);

		mkfrag(&f, a, 0, 1000, 1, 0);
		mkfrag(&g, b, 0, 1000, 1, 0);
		err = send_drop(t, &f, "91 held") ?:
		      send_drop(t, &g, "92 held, 91 evicted");
		ring_buffer__consume(rb);
		if (!err && c.n != 2)
			err = fail(t, "%d records after an eviction, want 2",
				   c.n);
		err = err ?: cap_is(t, &c.r[1], &g,
				    XFRAG_CNT_BIT(frag_evicted) |
				    XFRAG_CNT_BIT(reasm_evicted), "eviction");
	}
#define CAP_DELTAS D(reasm_reqds, 4), D(frag_overlap, 1),			\
		   D(frag_discarded, 1), D(reasm_overlaps, 1),		\
		   D(reasm_fails, 2), D(frag_evicted, 1),			\
		   D(reasm_evicted, 1), D(frags_in_flight, 1),		\
		   D(dgrams_in_flight, 1), D(bytes_in_flight, 1000),		\
		   D(mem_in_flight, XFRAG_CHUNK), D(cap_records, 2)
	err = err ?: check_deltas(t, -1, &s, DLIST(CAP_DELTAS),
				  DCOUNT(CAP_DELTAS));
#undef CAP_DELTAS
	/* Rate 1 a second, 2 already written this second (or 0 in a new
	 * one): of three more evictions at least two are lost. */
	if (!err) {
		struct snap s2;

		err = cap_set(t, XFRAG_CFG_CAPTURE, 1) ?: snap(t, -1, &s2);
		for (int i = 0; !err && i < 3; i++) {
			mkfrag(&f, udp_dgram(93 + i, 2000), 0, 1000, 1, 0);
			err = send_drop(t, &f, "evicting");
		}
		ring_buffer__consume(rb);
		if (!err) {
			struct snap s3;
			long long lost, recs;

			err = snap(t, -1, &s3);
			lost = (long long)(s3.v[C_cap_lost] - s2.v[C_cap_lost]);
			recs = (long long)(s3.v[C_cap_records] -
					   s2.v[C_cap_records]);
			if (!err && (lost < 2 || lost + recs != 3 ||
				     c.n != 2 + recs))
				err = fail(t, "rate 1/s: %lld lost, %lld "
					   "written, %d read", lost, recs,
					   c.n);
		}
	}
	ring_buffer__free(rb);
	return err;
}

/*
 * A datagram the sweeper times out while a capture runs: a record with no
 * frame, its key and the number of fragments it held.
 */
int t_capture_swept(struct tctx *t)
{
	struct dgram *d = udp_dgram(97, 3000);
	struct ring_buffer *rb;
	struct caprecs c = {};
	struct frame f;
	struct snap s;
	int err = 0;

	TRY(load(t, &(struct setup){ .buckets = 1, .ways = 2,
				      .timeout_ms = 50 }));
	rb = ring_buffer__new(bpf_map__fd(t->skel->maps.xfrag_capture),
			      cap_take, &c, NULL);
	REQUIRE(rb, "ring_buffer__new: %s", strerror(errno));
	err = cap_set(t, XFRAG_CFG_CAPTURE, 0) ?: snap(t, -1, &s);
	mkfrag(&f, d, 0, 1200, 1, 0);
	err = err ?: send_drop(t, &f, "first");
	mkfrag(&f, d, 2400, 600, 0, 0);
	err = err ?: send_drop(t, &f, "last");
	/* The sweeper runs every 100 ms, the whole one-bucket table. */
	for (int i = 0; !err && i < 20 && !c.n; i++) {
		sleep_ms(50);
		ring_buffer__consume(rb);
	}
	if (!err && (c.n != 1 || c.r[0].kind != XFRAG_CAP_SWEPT ||
		     c.r[0].nfrags != 2 || c.r[0].caplen != 0 ||
		     c.r[0].key.id != htons(97) ||
		     c.r[0].key.family != XFRAG_AF_INET ||
		     !(c.r[0].moved & XFRAG_CNT_BIT(reasm_timeout))))
		err = fail(t, "%d records; kind %u nfrags %u id %#x moved %#llx",
			   c.n, c.n ? c.r[0].kind : 0, c.n ? c.r[0].nfrags : 0,
			   c.n ? c.r[0].key.id : 0,
			   c.n ? (unsigned long long)c.r[0].moved : 0ULL);
#define SWEPT_DELTAS D(reasm_reqds, 2), D(frag_timeout, 2),		\
		     D(reasm_timeout, 1), D(reasm_fails, 1), D(cap_records, 1)
	err = err ?: check_deltas(t, -1, &s, DLIST(SWEPT_DELTAS),
				  DCOUNT(SWEPT_DELTAS));
#undef SWEPT_DELTAS
	ring_buffer__free(rb);
	return err;
}
