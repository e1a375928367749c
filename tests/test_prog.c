// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_prog: table-driven unit tests of the xfrag XDP program through
 * BPF_PROG_TEST_RUN.  Every test loads a fresh skeleton (counters at 0),
 * builds an unfragmented UDP/IPv4 frame, cuts it into fragments, runs them
 * through xfrag_xdp and checks verdicts, output bytes and counter deltas.
 *
 * Output: one line per test, "PASS name" or "FAIL name: reason", then
 * "test_prog: N passed, M failed".  Exit status 1 if any test failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>

#include "xfrag.h"
#include "counters.h"
#include "frame.h"
#include "xfrag.skel.h"
#include "probe.h"

#define FRAME_MAX	16384		/* fragments and test_run output */
#define DGRAM_MAX	(70 * 1024)	/* unfragmented frames */
#define F_DF		0x4000
#define F_MF		0x2000
#define MTU_FRAG	1480		/* IPv4 payload per fragment, MTU 1500 */

/* ---- Counters ------------------------------------------------------------ */

/* C_name, cname[], ckind[], xf_counter_invariants(): tests/counters.h */

struct snap {
	__u64 v[C_NUM];
};

struct delta {
	int c;
	__s64 v;
};

#define D(name, val)	{ C_##name, (__s64)(val) }
#define DLIST(...)	((const struct delta[]){ { -1, 0 }, ##__VA_ARGS__ })
#define DCOUNT(...)	(sizeof(DLIST(__VA_ARGS__)) / sizeof(struct delta))
/* Every counter not named must not have moved. */
#define EXPECT(t, before, ...)						\
	TRY(check_deltas(t, -1, before, DLIST(__VA_ARGS__), DCOUNT(__VA_ARGS__)))
#define EXPECT_CPU(t, cpu, before, ...)					\
	TRY(check_deltas(t, cpu, before, DLIST(__VA_ARGS__), DCOUNT(__VA_ARGS__)))

/* ---- Test context ---------------------------------------------------------- */

struct tctx {
	struct xfrag_bpf *skel;
	int prog_fd;
	__u32 buckets, ways;
	int arg;		/* the test row's argument */
	char why[1024];
	__u32 ret, outlen;
	__u8 out[FRAME_MAX];
	__u8 payload[65536];
};

static int ncpus;
static int cpu_a = -1, cpu_b = -1;	/* first two CPUs we may run on */
static int cur_cpu;
/* Does this kernel let XDP call bpf_xdp_adjust_meta (xfrag_use_meta)? */
static int use_meta;
static char lib_log[8192];
static size_t lib_log_len;

#define TRY(x)	do { if (x) return -1; } while (0)

/* Record why the test failed; a later call adds context in brackets. */
static int fail(struct tctx *t, const char *fmt, ...)
{
	size_t len = strlen(t->why), room = sizeof(t->why) - 1;
	int ctx = len > 0;
	va_list ap;

	if (ctx && len + 2 < room)
		t->why[len++] = ' ', t->why[len++] = '[';
	if (len >= room)
		return -1;
	va_start(ap, fmt);
	vsnprintf(t->why + len, room - len, fmt, ap);
	va_end(ap);
	if (ctx)
		strncat(t->why, "]", room - strlen(t->why));
	return -1;
}

#define REQUIRE(cond, ...)						\
	do { if (!(cond)) return fail(t, __VA_ARGS__); } while (0)

/* libbpf's messages are kept, and shown only when a load fails. */
static int libbpf_log(enum libbpf_print_level level, const char *fmt,
		      va_list ap)
{
	size_t room = sizeof(lib_log) - lib_log_len;
	int n;

	if (level == LIBBPF_DEBUG || room <= 1)
		return 0;
	n = vsnprintf(lib_log + lib_log_len, room, fmt, ap);
	lib_log_len += n < 0 ? 0 : (size_t)n < room ? (size_t)n : room - 1;
	return 0;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -1;
	cur_cpu = cpu;
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- Skeleton ------------------------------------------------------------ */

/*
 * Without xdp_only the config says the TC half is attached, as after
 * `xfrag attach`; with it XDP is alone, and with XDP_ONLY_PROVEN it has
 * already seen small frames with room (prove_room()).
 */
enum { XDP_AND_TC = 0, XDP_ONLY, XDP_ONLY_PROVEN };

struct setup {
	__u32 buckets, ways, nchunks;		/* 0: defaults */
	__u32 timeout_ms, max_frags;		/* xfrag_config */
	__u32 evict, warm_ms, quota;
	int xdp_only;
	int replay;				/* XFRAG_CFG_REPLAY */
	int owner;			/* also load xfrag_owner, size the cpumap */
	__u32 max_dist;				/* id-wrap guard */
	__u32 too_many;				/* XFRAG_TOO_MANY_* */
};

static int prove_room(struct tctx *t);

static int load(struct tctx *t, const struct setup *s)
{
	struct xfrag_config cfg = {
		.timeout_ms = s->timeout_ms,
		.max_frags = s->max_frags,
		.flags = (s->xdp_only ? 0 : XFRAG_CFG_TC) |
			 (s->replay ? XFRAG_CFG_REPLAY : 0),
		.evict = s->evict,
		.warm_ms = s->warm_ms,
		.quota = s->quota,
		.max_dist = s->max_dist,
		.too_many = s->too_many,
	};
	__u32 zero = 0;
	int err;

	lib_log_len = 0;
	lib_log[0] = 0;
	t->skel = xfrag_bpf__open();
	REQUIRE(t->skel, "xfrag_bpf__open: %s", strerror(errno));
	t->buckets = s->buckets ?: XFRAG_DEF_BUCKETS;
	t->ways = s->ways ?: XFRAG_DEF_WAYS;
	t->skel->rodata->xfrag_buckets = t->buckets;
	t->skel->rodata->xfrag_ways = t->ways;
	t->skel->rodata->xfrag_use_meta = use_meta;
	err = bpf_map__set_max_entries(t->skel->maps.xfrag_table,
				       t->buckets * t->ways);
	if (!err && s->nchunks) {
		t->skel->rodata->xfrag_nchunks = s->nchunks;
		err = bpf_map__set_max_entries(t->skel->maps.xfrag_chunks,
					       s->nchunks) ?:
		      bpf_map__set_max_entries(t->skel->maps.xfrag_free,
					       s->nchunks);
	}
	REQUIRE(!err, "set_max_entries: %d", err);
	/* The cpumap entry points only where a test steers (load time). */
	bpf_program__set_autoload(t->skel->progs.xfrag_owner, s->owner);
	/* xfrag_owner_nf runs the same code: loaded as a plain XDP program
	 * it can be test-run, which no kernel does for a cpumap program. */
	bpf_program__set_autoload(t->skel->progs.xfrag_owner_nf, s->owner);
	bpf_program__set_expected_attach_type(t->skel->progs.xfrag_owner_nf,
					      BPF_XDP);
	if (s->owner)
		REQUIRE(!bpf_map__set_max_entries(t->skel->maps.xfrag_cpumap,
						  ncpus), "cpumap size");
	{
		/* Fresh, private maps for every test: no pinning. */
		struct bpf_map *m;

		bpf_object__for_each_map(m, t->skel->obj)
			bpf_map__set_pin_path(m, NULL);
	}
	err = xfrag_bpf__load(t->skel);
	if (err) {
		fprintf(stderr, "%s", lib_log);
		return fail(t, "xfrag_bpf__load: %d (libbpf log on stderr)",
			    err);
	}
	t->prog_fd = bpf_program__fd(t->skel->progs.xfrag_xdp);
	err = bpf_map_update_elem(bpf_map__fd(t->skel->maps.xfrag_config),
				  &zero, &cfg, BPF_ANY);
	REQUIRE(!err, "config update: %s", strerror(errno));
	return s->xdp_only == XDP_ONLY_PROVEN ? prove_room(t) : 0;
}

/* Counters summed over CPUs (cpu < 0) or of one CPU. */
static int snap(struct tctx *t, int cpu, struct snap *s)
{
	struct xfrag_stats *v = calloc(ncpus, sizeof(*v));
	__u32 zero = 0;
	int err;

	REQUIRE(v, "calloc");
	err = bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.xfrag_stats),
				  &zero, v);
	if (err) {
		free(v);
		return fail(t, "stats lookup: %s", strerror(errno));
	}
	memset(s, 0, sizeof(*s));
	for (int c = 0; c < ncpus; c++) {
		const __u64 *p = (const __u64 *)&v[c];

		if (cpu >= 0 && c != cpu)
			continue;
		for (int i = 0; i < C_NUM; i++)
			s->v[i] += p[i];
	}
	free(v);
	return 0;
}

static int check_invariants(struct tctx *t)
{
	struct snap s;
	const char *err;
	char msg[256];

	TRY(snap(t, -1, &s));
	err = xf_counter_invariants(s.v, msg, sizeof(msg));
	REQUIRE(!err, "%s", err);
	return 0;
}

static int check_deltas(struct tctx *t, int cpu, const struct snap *before,
			const struct delta *d, size_t nd)
{
	char msg[768] = "";
	size_t len = 0;
	struct snap now;
	__s64 want[C_NUM] = { 0 };

	TRY(snap(t, cpu, &now));
	for (size_t i = 0; i < nd; i++)
		if (d[i].c >= 0)
			want[d[i].c] += d[i].v;
	for (int i = 0; i < C_NUM; i++) {
		__s64 got = (__s64)(now.v[i] - before->v[i]);

		if (got == want[i] || len >= sizeof(msg) - 1)
			continue;
		len += snprintf(msg + len, sizeof(msg) - len, " %s %+lld (want %+lld)",
				cname[i], (long long)got, (long long)want[i]);
	}
	if (len)
		return fail(t, "counters%s%s:%s", cpu >= 0 ? " on cpu " : "",
			    cpu >= 0 ? (cpu == cpu_a ? "A" : "B") : "", msg);
	return 0;
}

/* ---- Packet builder ------------------------------------------------------- */

struct dopt {
	__u16 id;
	__u32 udp_len;		/* UDP length incl. header = IP payload */
	int df;
	int optlen;		/* IP option bytes, multiple of 4, <= 40 */
	int nvlan;
	__u16 tpid[2], vid[2];
	__u32 seed;		/* payload pattern */
	__u32 udp_field;	/* UDP length field, if not udp_len (a lie) */
};

struct dgram {
	__u8 b[DGRAM_MAX];	/* the unfragmented frame */
	__u32 len, l3off, hlen, plen;	/* plen: IP payload length */
};

struct frame {
	__u8 b[FRAME_MAX];
	__u32 len;
};

static void ip_csum(__u8 *ip)
{
	__u32 hl = (ip[0] & 0xf) * 4;

	ip[10] = ip[11] = 0;
	put16(ip + 10, csum_fold(sum16(ip, hl, 0)));
}

static __u32 xorshift(__u32 *s)
{
	__u32 x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

static const __u8 mac_dst[ETH_ALEN] = { 0x02, 0, 0, 0, 0, 0x02 };
static const __u8 mac_src[ETH_ALEN] = { 0x02, 0, 0, 0, 0, 0x01 };

static void build(struct dgram *d, const struct dopt *o)
{
	__u32 off = 2 * ETH_ALEN, hl = 20 + o->optlen, s = o->seed ?: 0x9e3779b9;
	__u8 *ip, *udp;
	__u64 sum;

	memset(d->b, 0, 64 + hl);
	memcpy(d->b, mac_dst, ETH_ALEN);
	memcpy(d->b + ETH_ALEN, mac_src, ETH_ALEN);
	for (int i = 0; i < o->nvlan; i++, off += 4) {
		put16(d->b + off, o->tpid[i]);
		put16(d->b + off + 2, o->vid[i]);
	}
	put16(d->b + off, ETH_P_IP);
	d->l3off = off + 2;
	d->hlen = hl;
	d->plen = o->udp_len;
	d->len = d->l3off + hl + o->udp_len;

	ip = d->b + d->l3off;
	ip[0] = 0x40 | (hl / 4);
	put16(ip + 2, hl + o->udp_len);
	put16(ip + 4, o->id);
	put16(ip + 6, o->df ? F_DF : 0);
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	memcpy(ip + 12, (const __u8[]){ 10, 0, 0, 1, 10, 0, 0, 2 }, 8);
	for (int i = 0; i < o->optlen; i++)	/* Router Alert, then NOPs */
		ip[20 + i] = i < 4 ? (__u8[]){ 0x94, 4, 0, 0 }[i] : 1;
	ip_csum(ip);

	udp = ip + hl;
	put16(udp, 4242);
	put16(udp + 2, 5353);
	put16(udp + 4, o->udp_len);
	put16(udp + 6, 0);
	for (__u32 i = 8; i < o->udp_len; i++)
		udp[i] = xorshift(&s) >> 24;
	sum = sum16(ip + 12, 8, IPPROTO_UDP + o->udp_len);
	sum = csum_fold(sum16(udp, o->udp_len, sum));
	put16(udp + 6, sum ? (__u16)sum : 0xffff);
	if (o->udp_field)
		put16(udp + 4, o->udp_field);
}

/*
 * Fragment [off, off + len) of d's IP payload, then `pad` bytes of Ethernet
 * padding; only offset 0 has d's options.  Bytes beyond the datagram are a
 * pattern.
 */
static void mkfrag(struct frame *f, const struct dgram *d, __u32 off, __u32 len,
		   int mf, __u32 pad)
{
	const __u8 *dip = d->b + d->l3off;
	__u32 hl = off == 0 ? d->hlen : 20, fw;
	__u8 *ip = f->b + d->l3off, *pl;

	if (d->l3off + hl + len + pad > FRAME_MAX) {
		fprintf(stderr, "test bug: fragment too big\n");
		exit(2);
	}
	memcpy(f->b, d->b, d->l3off);
	memcpy(ip, dip, hl);
	ip[0] = 0x40 | (hl / 4);
	put16(ip + 2, hl + len);
	fw = (off >> 3) | (mf ? F_MF : 0);
	if (dip[6] & 0x40)
		fw |= F_DF;
	put16(ip + 6, fw);
	ip_csum(ip);
	pl = ip + hl;
	for (__u32 i = 0, at = off; i < len; i++, at++)
		pl[i] = at < d->plen ? dip[d->hlen + at] : (__u8)(0xa5 ^ at);
	memset(pl + len, 0xee, pad);
	f->len = d->l3off + hl + len + pad;
}

struct fl {
	__u32 off, len;
	int mf;
};

/* Standard fragmentation with at most `max` payload bytes per fragment. */
static int split(const struct dgram *d, __u32 max, struct fl *out)
{
	int n = 0;

	for (__u32 off = 0; off < d->plen; off += max, n++) {
		out[n].off = off;
		out[n].len = d->plen - off > max ? max : d->plen - off;
		out[n].mf = off + max < d->plen;
	}
	return n;
}

/* ---- Running frames -------------------------------------------------------- */

static const char *vname(__u32 r)
{
	static const char *const n[] = { "ABORTED", "DROP", "PASS", "TX",
					  "REDIRECT" };
	return r < 5 ? n[r] : "?";
}

static int xdp(struct tctx *t, const void *in, __u32 len)
{
	LIBBPF_OPTS(bpf_test_run_opts, o,
		.data_in = in,
		.data_size_in = len,
		.data_out = t->out,
		.data_size_out = sizeof(t->out),
		.repeat = 1,
	);

	if (bpf_prog_test_run_opts(t->prog_fd, &o))
		return fail(t, "test_run (%u bytes): %s", len, strerror(errno));
	t->ret = o.retval;
	t->outlen = o.data_size_out;
	return check_invariants(t);
}

static int verdict(struct tctx *t, __u32 want, const char *what)
{
	REQUIRE(t->ret == want, "%s: XDP_%s, want XDP_%s", what,
		vname(t->ret), vname(want));
	return 0;
}

static int same(struct tctx *t, const __u8 *p, __u32 n, const char *what)
{
	__u32 i;

	if (t->outlen == n && !memcmp(t->out, p, n))
		return 0;
	for (i = 0; i < n && i < t->outlen && t->out[i] == p[i]; i++)
		;
	return fail(t, "%s: output %u bytes, want %u; first difference at %u",
		    what, t->outlen, n, i);
}

static int send_drop(struct tctx *t, const struct frame *f, const char *what)
{
	TRY(xdp(t, f->b, f->len));
	return verdict(t, XDP_DROP, what);
}

/* XDP_PASS with the frame untouched. */
static int send_pass(struct tctx *t, const struct frame *f, const char *what)
{
	TRY(xdp(t, f->b, f->len));
	TRY(verdict(t, XDP_PASS, what));
	return same(t, f->b, f->len, what);
}

/* XDP_PASS with the whole datagram rebuilt in the frame. */
static int send_rebuilt(struct tctx *t, const struct frame *f,
			const struct dgram *d, const char *what)
{
	TRY(xdp(t, f->b, f->len));
	TRY(verdict(t, XDP_PASS, what));
	return same(t, d->b, d->len, what);
}

/*
 * Without metadata: the hand-off with the highest cookie on this CPU, as
 * the struct xfrag_meta XDP would have written.
 */
static int find_handoff(struct tctx *t, struct xfrag_meta *m, const char *what)
{
	size_t wsz = (sizeof(struct xfrag_way) + 7) & ~7UL;
	__u8 *wbuf = calloc(ncpus, wsz);
	int found = 0;

	REQUIRE(wbuf, "calloc");
	memset(m, 0, sizeof(*m));
	for (__u32 i = 0; i < t->buckets * t->ways; i++) {
		const struct xfrag_way *w;

		if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.xfrag_table),
					&i, wbuf))
			break;
		w = (const struct xfrag_way *)(wbuf + cur_cpu * wsz);
		if (w->state != XFRAG_WAY_HANDOFF ||
		    (found && w->cookie <= m->cookie))
			continue;
		found = 1;
		m->magic = XFRAG_META_MAGIC;
		m->cpu = cur_cpu;
		m->way = i;
		m->cookie = w->cookie;
	}
	free(wbuf);
	REQUIRE(found, "%s: no hand-off held on cpu %d", what, cur_cpu);
	return 0;
}

/*
 * XDP_PASS with the completing frame unchanged, a struct xfrag_meta in front
 * of it (test_run returns data from data_meta), and the datagram held in
 * the table for TC: check the stored header and pieces byte by byte.
 */
static int send_handoff(struct tctx *t, const struct frame *f,
			const struct dgram *d, const char *what)
{
	size_t wsz = (sizeof(struct xfrag_way) + 7) & ~7UL;
	size_t csz = (sizeof(__u8[XFRAG_CHUNK]) + 7) & ~7UL;
	struct xfrag_meta m;
	struct xfrag_way *w;
	__u8 *wbuf, *cbuf;
	__u32 got = 0;
	int err = 0;

	TRY(xdp(t, f->b, f->len));
	TRY(verdict(t, XDP_PASS, what));
	if (use_meta) {
		REQUIRE(t->outlen == f->len + sizeof(m),
			"%s: output %u bytes, want meta + frame = %zu", what,
			t->outlen, f->len + sizeof(m));
		memcpy(&m, t->out, sizeof(m));
		REQUIRE(!memcmp(t->out + sizeof(m), f->b, f->len),
			"%s: hand-off frame was modified", what);
	} else {
		/* No metadata on this kernel: the frame goes on as it is and
		 * TC finds the datagram by key; the newest hand-off of this
		 * CPU is the one just made. */
		TRY(same(t, f->b, f->len, what));
		TRY(find_handoff(t, &m, what));
	}
	REQUIRE(m.magic == XFRAG_META_MAGIC && m.cpu == (__u32)cur_cpu &&
		m.way < t->buckets * t->ways,
		"%s: bad meta magic %#x cpu %u way %u", what, m.magic, m.cpu,
		m.way);

	wbuf = calloc(ncpus, wsz);
	cbuf = calloc(ncpus, csz);
	if (!wbuf || !cbuf) {
		err = fail(t, "calloc");
		goto out;
	}
	if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.xfrag_table),
				&m.way, wbuf)) {
		err = fail(t, "%s: table lookup: %s", what, strerror(errno));
		goto out;
	}
	w = (struct xfrag_way *)(wbuf + m.cpu * wsz);
	if (w->state != XFRAG_WAY_HANDOFF || w->cookie != m.cookie ||
	    w->hdr_len != d->hlen || w->end != d->plen ||
	    memcmp(w->hdr, d->b + d->l3off, d->hlen)) {
		err = fail(t, "%s: held way state %u cookie %u/%u hdr_len %u end %u or header differs",
			   what, w->state, w->cookie, m.cookie, w->hdr_len,
			   w->end);
		goto out;
	}
	memset(t->payload, 0, sizeof(t->payload));
	for (__u32 i = 0; i < w->ndesc && i < XFRAG_MAX_DESC; i++) {
		__u32 off = w->desc[i].off8 * 8U;
		__u32 len = xfrag_desc_len(&w->desc[i]);

		if (off + len > sizeof(t->payload) ||
		    bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.xfrag_chunks),
					&w->desc[i].chunk, cbuf)) {
			err = fail(t, "%s: piece %u unreadable", what, i);
			goto out;
		}
		memcpy(t->payload + off, cbuf + m.cpu * csz, len);
		got += len;
	}
	if (got != d->plen || memcmp(t->payload, d->b + d->l3off + d->hlen,
				     d->plen))
		err = fail(t, "%s: held payload (%u bytes) differs from the datagram",
			   what, got);
out:
	free(wbuf);
	free(cbuf);
	return err;
}

enum { END_REBUILT, END_HANDOFF, END_NONE };

/* Send fragments in `order`; all but the last are consumed. */
static int send_seq(struct tctx *t, const struct dgram *d, const struct fl *fl,
		    const int *order, int n, int end)
{
	static struct frame f;
	char what[64];

	for (int i = 0; i < n; i++) {
		const struct fl *x = &fl[order ? order[i] : i];

		mkfrag(&f, d, x->off, x->len, x->mf, 0);
		snprintf(what, sizeof(what), "fragment %d (off %u len %u)%s",
			 i + 1, x->off, x->len, x->mf ? " MF" : "");
		if (i < n - 1 || end == END_NONE)
			TRY(send_drop(t, &f, what));
		else if (end == END_REBUILT)
			TRY(send_rebuilt(t, &f, d, what));
		else
			TRY(send_handoff(t, &f, d, what));
	}
	return 0;
}

static struct dgram *dg(void)
{
	static struct dgram d[3];
	static int next;

	return &d[next++ % 3];
}

/* A plain datagram of udp_len bytes, id, no VLAN, no options. */
static struct dgram *udp_dgram(__u16 id, __u32 udp_len)
{
	struct dgram *d = dg();

	build(d, &(struct dopt){ .id = id, .udp_len = udp_len, .seed = id });
	return d;
}

/*
 * XDP alone learns that small frames can grow to a page (XFRAG_ROOM_PROOF
 * of them; test_run frames can): small last fragments of 9000-byte
 * datagrams, each passed to the kernel on its own.
 */
static int prove_room(struct tctx *t)
{
	static struct dgram d;	/* not from dg(): callers hold those */
	struct frame f;

	for (int i = 0; i < XFRAG_ROOM_PROOF; i++) {
		build(&d, &(struct dopt){ .id = 0xf000 + i, .udp_len = 9000 });
		mkfrag(&f, &d, 8880, 120, 0, 0);
		TRY(send_pass(t, &f, "small frame, room proof"));
	}
	return 0;
}

#define COMPLETE_XDP(n, bytes)						\
	D(reasm_reqds, n), D(reasm_oks, 1), D(deliver_xdp, 1),		\
	D(frag_reasm, n), D(bytes_reasm, bytes)

/* ---- Tests ----------------------------------------------------------------- */

static int t_nonfrag(struct tctx *t)
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

static int t_complete(struct tctx *t)
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

static int t_perm_3(struct tctx *t)
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

static int t_perm_11(struct tctx *t)
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

static int t_padding(struct tctx *t)
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

static int t_trim(struct tctx *t)
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
static int t_vlan(struct tctx *t)
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

static int t_dup(struct tctx *t)
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
static int t_dup_earlier(struct tctx *t)
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
static int t_dup_last_end(struct tctx *t)
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

static int t_dup_changed(struct tctx *t)
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

static int t_reject(struct tctx *t)
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

static int t_too_many(struct tctx *t)
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
static int t_too_many_flush(struct tctx *t)
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

static int t_bad_header(struct tctx *t)
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
	ip_csum(ip);	/* sums 16 bytes: checksum made for ihl 4 */
	TRY(send_drop(t, &f, "ihl 4"));
	mkfrag(&f, d, 1480, 520, 0, 0);
	put16(ip + 2, 20 + 521);
	ip_csum(ip);
	TRY(send_drop(t, &f, "tot_len beyond frame"));
	mkfrag(&f, d, 1480, 520, 0, 0);
	put16(ip + 2, 19);
	ip_csum(ip);
	TRY(send_drop(t, &f, "tot_len below header"));
	mkfrag(&f, d, 1480, 520, 0, 0);
	ip[0] = 0x65;
	ip_csum(ip);
	TRY(send_drop(t, &f, "version 6"));
	EXPECT(t, &s, D(reasm_reqds, 5), D(frag_bad_header, 5));
	return 0;
}

static int t_timeout(struct tctx *t)
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
static int t_sweep(struct tctx *t)
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

static int t_refuse(struct tctx *t)
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
static int held(struct tctx *t, __u32 id)
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
static int pieces(struct tctx *t, __u16 id, const int *ix, int n)
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
static int t_evict(struct tctx *t)
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

/* ---- xfrag capture ---------------------------------------------------- */

struct caprecs {
	int n;
	struct xfrag_cap_rec r[8];
};

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
static int t_capture(struct tctx *t)
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
static int t_capture_swept(struct tctx *t)
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

/*
 * Above the high watermark (7/8 of 8 chunks) an evicting policy frees ways
 * of the bucket until under the low one (3/4): the 8th chunk evicts two.
 */
static int t_watermark(struct tctx *t)
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
static int t_reserve(struct tctx *t)
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
static int t_quota(struct tctx *t)
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
static int t_flood(struct tctx *t)
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

static int t_overlap_attack(struct tctx *t)
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
static int t_tiny(struct tctx *t)
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
static int t_dup_storm(struct tctx *t)
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
static int t_collide(struct tctx *t)
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

static int t_mem_default(struct tctx *t)
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

static int t_mem_small(struct tctx *t)
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

static int t_pass(struct tctx *t)
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
static int t_pass_frees(struct tctx *t)
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
static int t_pass_dup(struct tctx *t)
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
static int t_pass_evicts(struct tctx *t)
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
static int t_replay_takes(struct tctx *t)
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
static int t_no_tc_unknown(struct tctx *t)
{
	struct dgram *d = udp_dgram(64 + t->arg, 3000);
	static const int mid_first[] = { 1, 0, 2 };
	struct fl fl[4];
	struct frame f;
	struct snap s;
	int n = split(d, 1200, fl);

	if (t->arg) {		/* TCP: no length in the first fragment */
		d->b[d->l3off + 9] = IPPROTO_TCP;
		ip_csum(d->b + d->l3off);
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
static int t_no_tc_room(struct tctx *t)
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
static int t_tc_seen(struct tctx *t)
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

static int t_handoff(struct tctx *t)
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
static int t_multibuf(struct tctx *t)
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
static int t_jumbo(struct tctx *t)
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

static int t_missing(struct tctx *t)
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

static int t_cross_cpu(struct tctx *t)
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

/* ---- Id-wrap guard ----------------------------------------------------------- */

static __s64 delta(const struct snap *a, const struct snap *b, int c)
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
static int t_guard(struct tctx *t)
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
static int t_guard_flows(struct tctx *t)
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
		ip_csum(f.b + e->l3off);
		TRY(send_drop(t, &f, "other flow"));
	}
	mkfrag(&f, d, 1480, 520, 0, 0);
	return send_rebuilt(t, &f, d, "last fragment of id 700");
}

/* ---- Steering ---------------------------------------------------------------- */

/* Give fragment f (of d) the source address 10.0.x.1. */
static void set_src(struct frame *f, const struct dgram *d, __u8 x)
{
	__u8 *ip = f->b + d->l3off;

	ip[14] = x;
	ip_csum(ip);
}

static int on_cpu(struct tctx *t, int cpu, const struct frame *f)
{
	REQUIRE(!pin(cpu), "pin cpu %d: %s", cpu, strerror(errno));
	return xdp(t, f->b, f->len);
}

/*
 * The owner decision (include/xfrag.h, steering): every fragment of a
 * datagram, and every datagram of a source, has the same owner CPU; on
 * its owner a fragment is processed, elsewhere it is redirected
 * (XDP_REDIRECT, steer_out, not in reasm_reqds there); 64 sources use both
 * CPUs; the cpumap entry point processes what it gets and never
 * redirects; a redirect without a cpumap entry is steer_failed and the
 * fragment is processed where it arrived.  Non-fragments pass untouched.
 */
static int t_steer(struct tctx *t)
{
	struct dgram *d = udp_dgram(70, 2000), *e = udp_dgram(71, 2000);
	struct bpf_cpumap_val val = { .qsize = 64 };
	struct xfrag_config cfg;
	struct frame f, g;
	struct snap s0, s1;
	__u32 zero = 0, slot, redirects = 0, frames = 0;
	int cfd, ofd, cmfd, own_b = -1, n_a = 0, n_b = 0;

	if (cpu_b < 0)
		return 1;	/* skipped */
	TRY(load(t, &(struct setup){ .owner = 1 }));
	cfd = bpf_map__fd(t->skel->maps.xfrag_config);
	ofd = bpf_map__fd(t->skel->maps.xfrag_owners);
	cmfd = bpf_map__fd(t->skel->maps.xfrag_cpumap);
	REQUIRE(!bpf_map_lookup_elem(cfd, &zero, &cfg), "config read");
	cfg.flags |= XFRAG_CFG_STEER;
	cfg.steer = XFRAG_STEER_CPUMAP;
	cfg.steer_ncpus = 2;
	slot = 0;
	REQUIRE(!bpf_map_update_elem(ofd, &slot, &cpu_a, BPF_ANY) &&
		!bpf_map_update_elem(ofd, &(__u32){ 1 }, &cpu_b, BPF_ANY),
		"owner list: %s", strerror(errno));
	val.bpf_prog.fd = bpf_program__fd(t->skel->progs.xfrag_owner);
	REQUIRE(!bpf_map_update_elem(cmfd, &cpu_a, &val, BPF_ANY) &&
		!bpf_map_update_elem(cmfd, &cpu_b, &val, BPF_ANY),
		"cpumap entries: %s", strerror(errno));
	REQUIRE(!bpf_map_update_elem(cfd, &zero, &cfg, BPF_ANY), "config");
	TRY(snap(t, -1, &s0));

	/* Plain packets are never steered. */
	build(e, &(struct dopt){ .id = 3, .udp_len = 1000 });
	memcpy(g.b, e->b, e->len);
	g.len = e->len;
	for (int c = 0; c < 2; c++) {
		REQUIRE(!pin(c ? cpu_b : cpu_a), "pin");
		TRY(send_pass(t, &g, "plain UDP"));
	}
	for (int x = 1; x <= 64; x++) {
		__u32 ra, rb, rc;

		/* First fragment on A, last on B: exactly one is off its
		 * owner and redirected; the other is held (consumed). */
		mkfrag(&f, d, 0, 1480, 1, 0);
		set_src(&f, d, x);
		TRY(on_cpu(t, cpu_a, &f));
		ra = t->ret;
		mkfrag(&f, d, 1480, 520, 0, 0);
		set_src(&f, d, x);
		TRY(on_cpu(t, cpu_b, &f));
		rb = t->ret;
		REQUIRE((ra == XDP_REDIRECT && rb == XDP_DROP) ||
			(ra == XDP_DROP && rb == XDP_REDIRECT),
			"source %d: XDP_%s on cpu A, XDP_%s on cpu B: want one "
			"redirect and one held", x, vname(ra), vname(rb));
		/* Another datagram (id) of the same source: same owner. */
		mkfrag(&f, e, 1480, 520, 0, 0);
		set_src(&f, e, x);
		TRY(on_cpu(t, cpu_a, &f));
		rc = t->ret;
		REQUIRE(rc == ra, "source %d: id %u on cpu A XDP_%s, id %u "
			"XDP_%s: the id changed the owner", x, 70, vname(ra),
			71, vname(rc));
		frames += 3;
		redirects += 1 + (rc == XDP_REDIRECT);
		if (ra == XDP_REDIRECT) {
			n_b++;
			own_b = x;
		} else {
			n_a++;
		}
	}
	REQUIRE(n_a && n_b, "64 sources all owned by one CPU (A %d, B %d)",
		n_a, n_b);
	TRY(snap(t, -1, &s1));
	REQUIRE(s1.v[C_steer_out] - s0.v[C_steer_out] == redirects &&
		s1.v[C_reasm_reqds] - s0.v[C_reasm_reqds] == frames - redirects &&
		s1.v[C_steer_failed] == s0.v[C_steer_failed],
		"steer_out %+lld (want %u), reasm_reqds %+lld (want %u), "
		"steer_failed %+lld (want 0)",
		(long long)(s1.v[C_steer_out] - s0.v[C_steer_out]), redirects,
		(long long)(s1.v[C_reasm_reqds] - s0.v[C_reasm_reqds]),
		frames - redirects,
		(long long)(s1.v[C_steer_failed] - s0.v[C_steer_failed]));

	/* The cpumap entry point on A takes a fragment owned by B: it is
	 * processed (held), never redirected again. */
	{
		LIBBPF_OPTS(bpf_test_run_opts, o, .repeat = 1);

		mkfrag(&f, d, 0, 1480, 1, 0);
		set_src(&f, d, own_b);
		f.b[d->l3off + 5] ^= 0x55;	/* another id: a fresh datagram */
		ip_csum(f.b + d->l3off);
		o.data_in = f.b;
		o.data_size_in = f.len;
		s0 = s1;
		REQUIRE(!pin(cpu_a), "pin");
		REQUIRE(!bpf_prog_test_run_opts(
			    bpf_program__fd(t->skel->progs.xfrag_owner_nf), &o),
			"owner program test_run: %s", strerror(errno));
		t->ret = o.retval;
		TRY(check_invariants(t));
		TRY(verdict(t, XDP_DROP, "owner program, fragment owned by B"));
		TRY(snap(t, -1, &s1));
		REQUIRE(s1.v[C_steer_in] - s0.v[C_steer_in] == 1 &&
			s1.v[C_reasm_reqds] - s0.v[C_reasm_reqds] == 1 &&
			s1.v[C_steer_out] == s0.v[C_steer_out],
			"owner program: steer_in %+lld reasm_reqds %+lld "
			"steer_out %+lld, want +1 +1 +0",
			(long long)(s1.v[C_steer_in] - s0.v[C_steer_in]),
			(long long)(s1.v[C_reasm_reqds] - s0.v[C_reasm_reqds]),
			(long long)(s1.v[C_steer_out] - s0.v[C_steer_out]));
	}

	/* No cpumap entry for B: the redirect is refused, counted, and the
	 * fragment processed on A. */
	REQUIRE(!bpf_map_delete_elem(cmfd, &cpu_b), "cpumap delete: %s",
		strerror(errno));
	mkfrag(&f, d, 0, 1480, 1, 0);
	set_src(&f, d, own_b);
	f.b[d->l3off + 5] ^= 0x33;
	ip_csum(f.b + d->l3off);
	s0 = s1;
	TRY(on_cpu(t, cpu_a, &f));
	TRY(verdict(t, XDP_DROP, "no cpumap entry for the owner"));
	TRY(snap(t, -1, &s1));
	REQUIRE(s1.v[C_steer_failed] - s0.v[C_steer_failed] == 1 &&
		s1.v[C_reasm_reqds] - s0.v[C_reasm_reqds] == 1,
		"steer_failed %+lld reasm_reqds %+lld, want +1 +1",
		(long long)(s1.v[C_steer_failed] - s0.v[C_steer_failed]),
		(long long)(s1.v[C_reasm_reqds] - s0.v[C_reasm_reqds]));
	return 0;
}

/* ---- IPv6 ------------------------------------------------------------------ */

struct d6 {
	__u8 b[DGRAM_MAX];	/* the unfragmented frame */
	__u32 len, l3off, hlen, plen;	/* hlen: IPv6 + unfragmentable ext */
	__u32 nhpos;		/* frame offset of the next-header byte naming UDP */
	__u32 id;
};

/* next: number of 8-byte extension headers (hop-by-hop, dest opts, routing). */
static void build6(struct d6 *d, __u32 id, __u32 udp_len, int next, int nvlan,
		   __u16 vid)
{
	static const __u8 ext_type[3] = { 0, 60, 43 };
	__u32 off = 2 * ETH_ALEN, s = id ^ 0x6b43a9b5;
	__u8 *ip, *udp, *nhp;
	__u64 sum;

	memset(d->b, 0, 128);
	memcpy(d->b, mac_dst, ETH_ALEN);
	memcpy(d->b + ETH_ALEN, mac_src, ETH_ALEN);
	if (nvlan) {
		put16(d->b + off, ETH_P_8021Q);
		put16(d->b + off + 2, vid);
		off += 4;
	}
	put16(d->b + off, ETH_P_IPV6);
	d->l3off = off + 2;
	d->hlen = 40 + 8 * next;
	d->plen = udp_len;
	d->len = d->l3off + d->hlen + udp_len;
	d->id = id;
	ip = d->b + d->l3off;
	ip[0] = 0x60;
	ip[1] = 0x0a;		/* traffic class / flow label bits */
	ip[3] = 0x42;
	put16(ip + 4, d->hlen - 40 + udp_len);
	ip[7] = 64;
	for (int i = 0; i < 16; i++) {
		ip[8 + i] = i == 0 ? 0x20 : i == 1 ? 0x01 : i == 15 ? 1 : 0;
		ip[24 + i] = i == 0 ? 0x20 : i == 1 ? 0x01 : i == 15 ? 2 : 0;
	}
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
	put16(udp, 4242);
	put16(udp + 2, 5353);
	put16(udp + 4, udp_len);
	put16(udp + 6, 0);
	for (__u32 i = 8; i < udp_len; i++)
		udp[i] = xorshift(&s) >> 24;
	sum = sum16(ip + 8, 32, IPPROTO_UDP + udp_len);
	sum = csum_fold(sum16(udp, udp_len, sum));
	put16(udp + 6, sum ? (__u16)sum : 0xffff);
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
	f->b[d->nhpos] = 44;
	fh[0] = nh;
	fh[1] = 0;
	put16(fh + 2, (off & 0xfff8) | (mf ? 1 : 0));
	fh[4] = id >> 24;
	fh[5] = id >> 16;
	fh[6] = id >> 8;
	fh[7] = id;
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

static int t6_complete(struct tctx *t)
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

static int t6_dup(struct tctx *t)
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

static int t6_reject(struct tctx *t)
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
static int t6_bad_chain(struct tctx *t)
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
static int t6_chain_unreadable(struct tctx *t)
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
static int t6_atomic(struct tctx *t)
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
static int t6_quota(struct tctx *t)
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

/* ---- Runner ---------------------------------------------------------------- */

static const struct {
	const char *name;
	int (*fn)(struct tctx *t);
	int arg;
} tests[] = {
	{ "nonfrag_pass", t_nonfrag, 0 },
	{ "inorder_2frag", t_complete, 0 },
	{ "reverse_3frag", t_complete, 1 },
	{ "df_kept", t_complete, 2 },
	{ "ip_options_12", t_complete, 3 },
	{ "ip_options_40_reverse", t_complete, 4 },
	{ "qinq_reverse", t_complete, 5 },
	{ "vlan_df_options_11frag", t_complete, 6 },
	{ "perm_3frag_all", t_perm_3, 0 },
	{ "perm_11frag_random", t_perm_11, 0 },
	{ "eth_padding", t_padding, 0 },
	{ "trim_to_8", t_trim, 0 },
	{ "vlan_separate", t_vlan, 0 },
	{ "dup_exact", t_dup, 0 },
	{ "dup_exact_earlier", t_dup_earlier, 0 },
	{ "dup_last_sets_end", t_dup_last_end, 0 },
	{ "dup_changed_first_word", t_dup_changed, 0 },
	{ "dup_changed_earlier_last_byte", t_dup_changed, 1 },
	{ "dup_changed_ragged_tail", t_dup_changed, 2 },
	{ "dup_changed_second_chunk_end", t_dup_changed, 3 },
	{ "dup_changed_second_chunk_start", t_dup_changed, 4 },
	{ "dup_same_two_chunks", t_dup_changed, 5 },
	{ "dup_same_ragged_tail", t_dup_changed, 6 },
	{ "overlap_head", t_reject, 0 },
	{ "overlap_tail", t_reject, 1 },
	{ "overlap_contained", t_reject, 2 },
	{ "overlap_containing", t_reject, 3 },
	{ "overlap_same_off_shorter", t_reject, 4 },
	{ "overlap_same_off_longer", t_reject, 5 },
	{ "overlap_last", t_reject, 6 },
	{ "bad_end_second_last", t_reject, 7 },
	{ "bad_end_last_before_held", t_reject, 8 },
	{ "bad_end_beyond_end", t_reject, 9 },
	{ "zero_len", t_reject, 10 },
	{ "zero_len_alone", t_reject, 11 },
	{ "zero_len_after_trim", t_reject, 12 },
	{ "ping_of_death", t_reject, 13 },
	{ "ping_of_death_ihl15", t_reject, 14 },
	{ "ping_of_death_alone", t_reject, 15 },
	{ "oversize_late_tc", t_reject, 16 },
	{ "oversize_late_no_tc", t_reject, 17 },
	{ "too_many", t_too_many, 0 },
	{ "too_many_flush", t_too_many_flush, 0 },
	{ "too_many_drop_policy", t_too_many_flush, 1 },
	{ "bad_header", t_bad_header, 0 },
	{ "timeout", t_timeout, 0 },
	{ "sweeper_reclaims", t_sweep, 0 },
	{ "sweeper_skips_busy", t_sweep, 1 },
	{ "refuse", t_refuse, 0 },
	{ "evict_lru", t_evict, 0 },
	{ "capture", t_capture, 0 },
	{ "capture_swept", t_capture_swept, 0 },
	{ "evict_progress", t_evict, 1 },
	{ "watermark_lru", t_watermark, 0 },
	{ "memory_reserved_for_progress", t_reserve, 0 },
	{ "quota_per_source", t_quota, 0 },
	{ "attack_flood_first_only", t_flood, 0 },
	{ "attack_rose", t_flood, 1 },
	{ "attack_teardrop", t_overlap_attack, 0 },
	{ "attack_fragmentsmack", t_overlap_attack, 1 },
	{ "attack_rfc1858_rewrite", t_overlap_attack, 2 },
	{ "attack_sturges_novak", t_overlap_attack, 3 },
	{ "attack_tiny_fragments", t_tiny, 0 },
	{ "attack_duplicate_storm", t_dup_storm, 0 },
	{ "attack_hash_collision", t_collide, 0 },
	{ "mem_default_256", t_mem_default, 0 },
	{ "mem_small_nomem", t_mem_small, 0 },
	{ "pass_through_tc", t_pass, 0 },
	{ "pass_through_no_tc", t_pass, 1 },
	{ "jumbo_multibuf_handoff", t_jumbo, 0 },
	{ "jumbo_multibuf_reverse", t_jumbo, 1 },
	{ "no_tc_9000_passed", t_pass, 2 },
	{ "no_tc_9000_reverse_passed", t_pass, 3 },
	{ "pass_record_freed", t_pass_frees, 0 },
	{ "pass_record_evicts_cold", t_pass_evicts, 0 },
	{ "pass_record_outlives_duplicate", t_pass_dup, 0 },
	{ "replay_65507_taken", t_replay_takes, 0 },
	{ "replay_size_learned_late", t_replay_takes, 1 },
	{ "no_tc_room_learned", t_no_tc_room, 0 },
	{ "no_tc_middle_first_passed", t_no_tc_unknown, 0 },
	{ "no_tc_tcp_first_passed", t_no_tc_unknown, 1 },
	{ "tc_seen_handoff", t_tc_seen, 0 },
	{ "handoff_tc", t_handoff, 0 },
	{ "multibuf_rebuild", t_multibuf, 0 },
	{ "missing_fragment", t_missing, 0 },
	{ "cross_cpu", t_cross_cpu, 0 },
	{ "steer_owner", t_steer, 0 },
	{ "guard_stale_head", t_guard, 0 },
	{ "guard_off_merges", t_guard, 1 },
	{ "guard_count_wraps", t_guard, 2 },
	{ "guard_at_limit", t_guard, 4 },
	{ "guard_at_limit_wraps", t_guard, 6 },
	{ "guard_per_flow", t_guard_flows, 0 },
	{ "ip6_inorder_2frag", t6_complete, 0 },
	{ "ip6_reverse_3frag", t6_complete, 1 },
	{ "ip6_ext_hdrs_3frag", t6_complete, 2 },
	{ "ip6_ext_hdrs_reverse", t6_complete, 3 },
	{ "ip6_vlan_reverse", t6_complete, 4 },
	{ "ip6_vlan_ext_hdrs_3frag", t6_complete, 5 },
	{ "ip6_dup_exact", t6_dup, 0 },
	{ "ip6_dup_exact_ext_hdrs", t6_dup, 3 },
	{ "ip6_overlap_head", t6_reject, 0 },
	{ "ip6_overlap_last", t6_reject, 1 },
	{ "ip6_bad_len", t6_reject, 2 },
	{ "ip6_bad_len_first", t6_reject, 3 },
	{ "ip6_too_long", t6_reject, 4 },
	{ "ip6_too_long_alone", t6_reject, 5 },
	{ "ip6_bad_chain", t6_bad_chain, 0 },
	{ "ip6_chain_unreadable", t6_chain_unreadable, 0 },
	{ "ip6_atomic", t6_atomic, 0 },
	{ "ip6_atomic_ext_hdrs", t6_atomic, 3 },
	{ "ip6_quota_per_64", t6_quota, 0 },
};

int main(void)
{
	static struct tctx t;
	int passed = 0, failed = 0;
	cpu_set_t set;

	setvbuf(stdout, NULL, _IOLBF, 0);
	libbpf_set_print(libbpf_log);
	ncpus = libbpf_num_possible_cpus();
	use_meta = xf_probe_xdp_meta();
	if (!use_meta)
		printf("test_prog: this kernel refuses bpf_xdp_adjust_meta in "
		       "XDP: hand-offs are found by key\n");
	if (ncpus <= 0 || sched_getaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "test_prog: cannot find CPUs\n");
		return 1;
	}
	for (int c = 0; c < CPU_SETSIZE && c < ncpus; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		if (cpu_a < 0)
			cpu_a = c;
		else if (cpu_b < 0)
			cpu_b = c;
	}
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		int r;

		memset(t.why, 0, sizeof(t.why));
		t.skel = NULL;
		t.arg = tests[i].arg;
		if (pin(cpu_a)) {
			fprintf(stderr, "test_prog: pin: %s\n", strerror(errno));
			return 1;
		}
		r = tests[i].fn(&t);
		if (!r && t.skel)
			r = check_invariants(&t);
		xfrag_bpf__destroy(t.skel);
		if (r > 0) {
			printf("SKIP %s: needs two CPUs\n", tests[i].name);
		} else if (r == 0) {
			printf("PASS %s\n", tests[i].name);
			passed++;
		} else {
			printf("FAIL %s: %s\n", tests[i].name,
			       t.why[0] ? t.why : "failed");
			failed++;
		}
	}
	printf("test_prog: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
