// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Micro-benchmark of xfrag's BPF programs through BPF_PROG_TEST_RUN.
 *
 * Every fragment of R datagrams runs once (repeat 1) through xfrag and
 * through the floors of bench/floors.bpf.c; the kernel-measured run times
 * are collected per role (median reported):
 *   xdp      a fragment xfrag consumes (held for later)
 *   tc       a datagram rebuilt by TC ingress (the XDP hand-off of its
 *            completing fragment plus the TC run; tconly: the TC run)
 *   inplace  a 2-fragment datagram rebuilt in the XDP frame (both runs)
 *   pass     a fragment of a 45-fragment datagram passed to the kernel
 * and reported with the matching floor and the ratio.  All runs on CPU 0.
 *
 * usage: micro [--rounds R] [--json FILE] [--max-dist N (0: guard off)]
 *              [--steer]   (steering on, CPU 0 the only owner: every
 *                           fragment pays the owner check, none moves)
 *              [--capture] (xfrag capture on: every fragment pays the
 *                           counter snapshot and comparison; none of these
 *                           is lost, so none is written)
 *              [--busy N]  (a table of one bucket of 8 ways, N of them
 *                           held by other datagrams before each row: every
 *                           fragment's scan passes N ways that are not its
 *                           own, the worst case of a loaded table)
 *              [--big]     (a table of 16384 buckets of 8 ways, 65536
 *                           of them held by other datagrams: each
 *                           datagram's first fragment finds its bucket
 *                           in memory, not in the cache)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xfrag.h"
#include "xfrag.skel.h"
#include "floors.skel.h"

#define MAXF	64
#define FRAME	10000

struct frames {
	int n;
	__u32 len[MAXF];
	__u8 b[MAXF][FRAME];
};

static struct frames fr;
static __u8 out[70000];

/* Fragment d (IPv4 or IPv6, UDP payload `size`) at `fpay` bytes a piece. */
static int build(struct frames *f, int v6, __u32 id, __u32 size, __u32 fpay)
{
	static __u8 dg[65536 + 8];
	__u32 plen = size + 8, off = 0;

	memset(dg, 0, 8);
	dg[0] = 0x9c; dg[1] = 0x40;	/* ports 40000 -> 9000 */
	dg[2] = 0x23; dg[3] = 0x28;
	dg[4] = plen >> 8; dg[5] = plen;
	for (__u32 i = 8; i < plen; i++)
		dg[i] = (__u8)(id * 31 + i * 7);
	for (f->n = 0; off < plen && f->n < MAXF; f->n++) {
		__u32 n = plen - off > fpay ? fpay : plen - off, h = v6 ? 62 : 34;
		__u8 *p = f->b[f->n], *ip = p + 14;
		int mf = off + n < plen;

		memset(p, 0, h);
		memcpy(p, "\x02\0\0\0\0\x02\x02\0\0\0\0\x01", 12);
		if (v6) {
			p[12] = 0x86; p[13] = 0xdd;
			ip[0] = 0x60;
			ip[4] = (n + 8) >> 8; ip[5] = n + 8;
			ip[6] = 44; ip[7] = 64;
			ip[8] = 0xfd; ip[23] = 1; ip[24] = 0xfd; ip[39] = 2;
			ip[40] = 17;
			ip[42] = off >> 8; ip[43] = (off & 0xf8) | mf;
			ip[44] = id >> 24; ip[45] = id >> 16;
			ip[46] = id >> 8; ip[47] = id;
		} else {
			__u32 s = 0;

			p[12] = 0x08;
			ip[0] = 0x45;
			ip[2] = (n + 20) >> 8; ip[3] = n + 20;
			ip[4] = id >> 8; ip[5] = id;
			ip[6] = (off / 8) >> 8 | (mf ? 0x20 : 0); ip[7] = off / 8;
			ip[8] = 64; ip[9] = 17;
			ip[12] = 10; ip[15] = 1; ip[16] = 10; ip[19] = 2;
			for (int i = 0; i < 20; i += 2)
				s += ip[i] << 8 | ip[i + 1];
			s = (s & 0xffff) + (s >> 16);
			s = (s & 0xffff) + (s >> 16);
			ip[10] = ~s >> 8; ip[11] = ~s;
		}
		memcpy(p + h, dg + off, n);
		f->len[f->n] = h + n;
		off += n;
	}
	return f->n;
}

/* One run; returns the kernel-measured ns, the verdict in *ret. */
static __u64 run(int fd, const void *in, __u32 len, __u32 *ret)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = len,
		    .data_out = out, .data_size_out = sizeof(out),
		    .repeat = 1);

	if (bpf_prog_test_run_opts(fd, &o)) {
		fprintf(stderr, "micro: test_run: %s\n", strerror(errno));
		exit(1);
	}
	*ret = o.retval;
	return o.duration;
}

/*
 * Run times of one role.  Single runs on a shared VM see interrupts and
 * steal time: the median is reported, not the mean.
 */
struct acc {
	__u64 ns, n;
	__u32 *v;
	size_t cap;
};

static void add(struct acc *a, __u64 ns)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 4096;
		a->v = realloc(a->v, a->cap * sizeof(*a->v));
		if (!a->v) {
			perror("micro: realloc");
			exit(1);
		}
	}
	a->v[a->n++] = ns > 0xffffffffULL ? 0xffffffffU : (__u32)ns;
	a->ns += ns;
}

static int cmp_u32(const void *x, const void *y)
{
	__u32 a = *(const __u32 *)x, b = *(const __u32 *)y;

	return a < b ? -1 : a > b;
}

static double avg(const struct acc *a)
{
	if (!a->n)
		return 0;
	qsort(a->v, a->n, sizeof(*a->v), cmp_u32);
	return a->n % 2 ? a->v[a->n / 2] :
	       (a->v[a->n / 2 - 1] + (double)a->v[a->n / 2]) / 2;
}

/* --max-dist: the id-wrap guard's limit (0 off; default: xfrag's). */
static __u32 max_dist;
/* --steer: the owner check on every fragment, this CPU (0) the owner. */
static int steer;
/* --capture: XFRAG_CFG_CAPTURE set. */
static int capture;
/* --busy N: one bucket of 8 ways, N held by other datagrams. */
static int busy;
/* --big: 16384 buckets of 8 ways, BIG_FILL held by other datagrams. */
static int big;
#define BIG_BUCKETS	16384
#define BIG_FILL	65536
#define BIG_CHUNKS	98304

static struct xfrag_bpf *xf_load(void)
{
	struct xfrag_bpf *s = xfrag_bpf__open();
	struct xfrag_config cfg = { .flags = XFRAG_CFG_TC,
				    .max_dist = max_dist };
	struct bpf_map *m;
	__u32 zero = 0;

	if (!s)
		return NULL;
	bpf_object__for_each_map(m, s->obj)
		bpf_map__set_pin_path(m, NULL);
	s->rodata->xfrag_secret[0] = 0x0123456789abcdefULL;
	s->rodata->xfrag_secret[1] = 0xfedcba9876543210ULL;
	if (big) {
		struct bpf_map *t = bpf_object__find_map_by_name(s->obj,
								 "xfrag_tags");

		s->rodata->xfrag_buckets = BIG_BUCKETS;
		s->rodata->xfrag_ways = 8;
		s->rodata->xfrag_nchunks = BIG_CHUNKS;
		if (bpf_map__set_max_entries(s->maps.xfrag_table,
					     BIG_BUCKETS * 8) ||
		    bpf_map__set_max_entries(s->maps.xfrag_chunks, BIG_CHUNKS) ||
		    bpf_map__set_max_entries(s->maps.xfrag_free, BIG_CHUNKS) ||
		    (t && bpf_map__set_max_entries(t, BIG_BUCKETS))) {
			xfrag_bpf__destroy(s);
			return NULL;
		}
	} else if (busy) {
		struct bpf_map *t = bpf_object__find_map_by_name(s->obj,
								 "xfrag_tags");

		s->rodata->xfrag_buckets = 1;
		s->rodata->xfrag_ways = 8;
		if (bpf_map__set_max_entries(s->maps.xfrag_table, 8) ||
		    (t && bpf_map__set_max_entries(t, 1))) {
			xfrag_bpf__destroy(s);
			return NULL;
		}
	}
	if (capture)
		cfg.flags |= XFRAG_CFG_CAPTURE;
	if (steer) {
		cfg.flags |= XFRAG_CFG_STEER;
		cfg.steer = XFRAG_STEER_CPUMAP;
		cfg.steer_ncpus = 1;
		cfg.steer_key[0] = 0x1122334455667788ULL;
		cfg.steer_key[1] = 0x8877665544332211ULL;
	}
	if (xfrag_bpf__load(s) ||
	    bpf_map_update_elem(bpf_map__fd(s->maps.xfrag_owners), &zero,
				&zero, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(s->maps.xfrag_config), &zero, &cfg,
				BPF_ANY)) {
		xfrag_bpf__destroy(s);
		return NULL;
	}
	return s;
}

/* --busy: hold `busy` other datagrams (their first fragments) in the table. */
static int fill(int xfd, int v6)
{
	if (big) {
		/* IPv6 ids (32 bits) far from the measured ones. */
		for (__u32 b = 0; b < BIG_FILL; b++) {
			LIBBPF_OPTS(bpf_test_run_opts, o, .repeat = 1,
				    .data_out = out,
				    .data_size_out = sizeof(out));

			build(&fr, 1, 1000000 + b, 2850, 1448);
			o.data_in = fr.b[0];
			o.data_size_in = fr.len[0];
			if (bpf_prog_test_run_opts(xfd, &o)) {
				fprintf(stderr, "micro: --big: test_run failed\n");
				return -1;
			}
		}
		return 0;
	}
	for (int b = 0; b < busy; b++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .repeat = 1,
			    .data_out = out, .data_size_out = sizeof(out));

		build(&fr, v6, 30000 + b, 2900, v6 ? 1448 : 1480);
		o.data_in = fr.b[0];
		o.data_size_in = fr.len[0];
		if (bpf_prog_test_run_opts(xfd, &o) || o.retval != XDP_DROP) {
			fprintf(stderr, "micro: --busy: fragment not held\n");
			return -1;
		}
	}
	return 0;
}

static struct floors_bpf *fl_load(__u32 dgram_len)
{
	struct floors_bpf *s = floors_bpf__open();

	if (!s)
		return NULL;
	s->rodata->dgram_len = dgram_len;
	if (floors_bpf__load(s)) {
		floors_bpf__destroy(s);
		return NULL;
	}
	return s;
}

struct row {
	int v6, nfrag;
	__u32 size;
	struct acc xdp, copyin, keyed, drop, tc, tconly, copyout, inplace;
	struct acc floor_inplace;
};


/*
 * n-fragment datagrams in order: the first n-1 are consumed (xdp), the
 * last completes and is handed to TC (tc = its XDP run + the TC run).
 */
static int bench_seq(struct row *r, int rounds)
{
	__u32 fpay = r->v6 ? 1448 : 1480, ret;
	struct xfrag_bpf *x = xf_load();
	struct floors_bpf *f = fl_load(r->size + 8);
	int xfd, tfd, cfd, dfd, ofd, kfd;

	if (!x || !f) {
		fprintf(stderr, "micro: load failed\n");
		return -1;
	}
	xfd = bpf_program__fd(x->progs.xfrag_xdp);
	tfd = bpf_program__fd(x->progs.xfrag_tc);
	cfd = bpf_program__fd(f->progs.floor_copyin);
	dfd = bpf_program__fd(f->progs.floor_drop);
	ofd = bpf_program__fd(f->progs.floor_copyout);
	kfd = bpf_program__fd(f->progs.floor_keyed);
	if (fill(xfd, r->v6))
		return -1;
	for (int k = 0; k < rounds; k++) {
		__u64 t, u;

		build(&fr, r->v6, 1000 + k, r->size, fpay);
		r->nfrag = fr.n;
		for (int i = 0; i < fr.n; i++) {
			add(&r->copyin, run(cfd, fr.b[i], fr.len[i], &ret));
			add(&r->keyed, run(kfd, fr.b[i], fr.len[i], &ret));
			add(&r->drop, run(dfd, fr.b[i], fr.len[i], &ret));
			t = run(xfd, fr.b[i], fr.len[i], &ret);
			if (i < fr.n - 1) {
				if (ret != XDP_DROP)
					goto bad;
				add(&r->xdp, t);
				continue;
			}
			if (ret != XDP_PASS)
				goto bad;
			u = run(tfd, fr.b[i], fr.len[i], &ret);
			if (ret != 0)
				goto bad;
			add(&r->tc, t + u);
			add(&r->tconly, u);
			add(&r->copyout, run(ofd, fr.b[i], fr.len[i], &ret));
		}
	}
	xfrag_bpf__destroy(x);
	floors_bpf__destroy(f);
	return 0;
bad:
	fprintf(stderr, "micro: unexpected verdict %u (v%d, %u bytes)\n", ret,
		r->v6 ? 6 : 4, r->size);
	return -1;
}

/* 2-fragment datagrams, first fragment last: rebuilt in its frame. */
static int bench_inplace(struct row *r, int rounds)
{
	__u32 fpay = r->v6 ? 1448 : 1480, ret;
	struct xfrag_bpf *x = xf_load();
	struct floors_bpf *f = fl_load(r->size + 8);
	int xfd, pfd;

	if (!x || !f)
		return -1;
	xfd = bpf_program__fd(x->progs.xfrag_xdp);
	pfd = bpf_program__fd(f->progs.floor_inplace);
	if (fill(xfd, r->v6))
		return -1;
	for (int k = 0; k < rounds; k++) {
		__u64 a = 0, b = 0;

		build(&fr, r->v6, 50000 + k, r->size, fpay);
		for (int i = fr.n - 1; i >= 0; i--) {
			a += run(xfd, fr.b[i], fr.len[i], &ret);
			/* the floor completes on MF clear: feed it in order */
			b += run(pfd, fr.b[fr.n - 1 - i], fr.len[fr.n - 1 - i],
				 &ret);
		}
		if (ret != XDP_PASS)
			return -1;
		add(&r->inplace, a);
		add(&r->floor_inplace, b);
	}
	xfrag_bpf__destroy(x);
	floors_bpf__destroy(f);
	return 0;
}

/* 45-fragment datagrams: known too big, every fragment passed on. */
static int bench_pass(int v6, int rounds, struct acc *xp, struct acc *dp)
{
	__u32 ret;
	struct xfrag_bpf *x = xf_load();
	struct floors_bpf *f = fl_load(0);
	int xfd, dfd;

	if (!x || !f)
		return -1;
	xfd = bpf_program__fd(x->progs.xfrag_xdp);
	dfd = bpf_program__fd(f->progs.floor_drop);
	if (fill(xfd, v6))
		return -1;
	for (int k = 0; k < rounds; k++) {
		build(&fr, v6, 60000 + k, v6 ? 65000 : 65507, v6 ? 1448 : 1480);
		for (int i = 0; i < fr.n; i++) {
			add(xp, run(xfd, fr.b[i], fr.len[i], &ret));
			if (ret != XDP_PASS)
				return -1;
			add(dp, run(dfd, fr.b[i], fr.len[i], &ret));
		}
	}
	xfrag_bpf__destroy(x);
	floors_bpf__destroy(f);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct { int v6; __u32 size; } seqs[] = {
		{ 0, 2900 }, { 0, 4416 }, { 0, 15900 },
		{ 1, 2850 }, { 1, 4300 }, { 1, 15800 },
	};
	struct row rows[6] = {}, ip[2] = {};
	struct acc pass[2] = {}, pdrop[2] = {};
	const char *json = NULL;
	int rounds = 2000, c;
	cpu_set_t cpus;
	FILE *j;

	while ((c = getopt_long(argc, argv, "r:j:d:sb:BC", (const struct option[]){
			{ "rounds", required_argument, NULL, 'r' },
			{ "json", required_argument, NULL, 'j' },
			{ "max-dist", required_argument, NULL, 'd' },
			{ "steer", no_argument, NULL, 's' },
			{ "busy", required_argument, NULL, 'b' },
			{ "big", no_argument, NULL, 'B' },
			{ "capture", no_argument, NULL, 'C' },
			{ 0 } }, NULL)) != -1) {
		if (c == 'r')
			rounds = atoi(optarg);
		else if (c == 'j')
			json = optarg;
		else if (c == 's')
			steer = 1;
		else if (c == 'B')
			big = 1;
		else if (c == 'C')
			capture = 1;
		else if (c == 'b')
			busy = atoi(optarg) < 0 ? 0 : atoi(optarg) > 7 ? 7 :
			       atoi(optarg);
		else if (c == 'd')
			max_dist = atoi(optarg) ? (__u32)atoi(optarg) :
				   XFRAG_MAX_DIST_OFF;
		else
			return 2;
	}
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	sched_setaffinity(0, sizeof(cpus), &cpus);
	libbpf_set_print(NULL);

	/* Warm-up: first touch of the maps' pages is not xfrag's cost. */
	rows[0].size = seqs[0].size;
	if (bench_seq(&rows[0], rounds))
		return 1;
	memset(&rows[0], 0, sizeof(rows[0]));	/* (its samples leak: once) */
	for (int i = 0; i < 6; i++) {
		rows[i].v6 = seqs[i].v6;
		rows[i].size = seqs[i].size;
		if (bench_seq(&rows[i], rounds))
			return 1;
	}
	for (int v = 0; v < 2; v++) {
		ip[v].v6 = v;
		ip[v].size = v ? 2850 : 2900;
		if (bench_inplace(&ip[v], rounds) ||
		    bench_pass(v, rounds / 10 + 1, &pass[v], &pdrop[v])) {
			fprintf(stderr, "micro: in-place / pass run failed\n");
			return 1;
		}
	}

	printf("BPF_PROG_TEST_RUN, %d datagrams per row, median ns per run (ratio to floor)%s%s%s\n\n",
	       rounds, capture ? ", capture on" : "",
	       busy ? ", one bucket of 8 ways, 7 held by others" : "",
	       big ? ", 16384 buckets of 8 ways, 65536 held by others" : "");
	printf("| family | frags | size | XDP per consumed fragment | copy-in floor | ratio | keyed floor | ratio | drop floor | TC per rebuilt datagram | copy-out floor | ratio | TC program alone | ratio |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < 6; i++) {
		struct row *r = &rows[i];

		printf("| IPv%d | %d | %u | %.0f | %.0f | %.2f | %.0f | %.2f | %.0f | %.0f | %.0f | %.2f | %.0f | %.2f |\n",
		       r->v6 ? 6 : 4, r->nfrag, r->size, avg(&r->xdp),
		       avg(&r->copyin), avg(&r->xdp) / avg(&r->copyin),
		       avg(&r->keyed), avg(&r->xdp) / avg(&r->keyed),
		       avg(&r->drop), avg(&r->tc), avg(&r->copyout),
		       avg(&r->tc) / avg(&r->copyout), avg(&r->tconly),
		       avg(&r->tconly) / avg(&r->copyout));
	}
	printf("\n| family | in place, 2-fragment datagram | in-place floor | ratio | pass-through per fragment (45) | drop floor | ratio |\n");
	printf("|---|---|---|---|---|---|---|\n");
	for (int v = 0; v < 2; v++)
		printf("| IPv%d | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f |\n",
		       v ? 6 : 4, avg(&ip[v].inplace), avg(&ip[v].floor_inplace),
		       avg(&ip[v].inplace) / avg(&ip[v].floor_inplace),
		       avg(&pass[v]), avg(&pdrop[v]),
		       avg(&pass[v]) / avg(&pdrop[v]));
	if (json && (j = fopen(json, "w"))) {
		fprintf(j, "{\"rounds\": %d, \"seq\": [", rounds);
		for (int i = 0; i < 6; i++) {
			struct row *r = &rows[i];

			fprintf(j, "%s{\"family\": %d, \"frags\": %d, \"size\": %u, \"xdp_ns\": %.1f, \"copyin_ns\": %.1f, \"keyed_ns\": %.1f, \"drop_ns\": %.1f, \"tc_ns\": %.1f, \"tconly_ns\": %.1f, \"copyout_ns\": %.1f}",
				i ? ", " : "", r->v6 ? 6 : 4, r->nfrag, r->size,
				avg(&r->xdp), avg(&r->copyin), avg(&r->keyed),
				avg(&r->drop), avg(&r->tc), avg(&r->tconly),
				avg(&r->copyout));
		}
		fprintf(j, "], \"inplace\": [");
		for (int v = 0; v < 2; v++)
			fprintf(j, "%s{\"family\": %d, \"xfrag_ns\": %.1f, \"floor_ns\": %.1f, \"pass_ns\": %.1f, \"drop_ns\": %.1f}",
				v ? ", " : "", v ? 6 : 4, avg(&ip[v].inplace),
				avg(&ip[v].floor_inplace), avg(&pass[v]),
				avg(&pdrop[v]));
		fprintf(j, "]}\n");
		fclose(j);
	}
	return 0;
}
