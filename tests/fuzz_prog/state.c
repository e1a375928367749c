// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fuzz_prog: random numbers, bytes, the run state, the bucket hash, loading and reading the maps. */
#include "fuzz_prog.h"


/* ---- Random numbers (splitmix64) ----------------------------------------- */

__u64 rs;

__u64 rnd64(void)
{
	__u64 z = (rs += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n); 0 when n is 0. */
__u32 rnd(__u32 n)
{
	return (__u32)(((rnd64() >> 32) * (__u64)n) >> 32);
}

__u32 range(__u32 lo, __u32 hi)	/* [lo, hi] */
{
	return hi <= lo ? lo : lo + rnd(hi - lo + 1);
}

int chance(__u32 pct)
{
	return rnd(100) < pct;
}

void rnd_fill(__u8 *p, __u32 n)
{
	while (n >= 8) {
		__u64 x = rnd64();

		memcpy(p, &x, 8);
		p += 8;
		n -= 8;
	}
	for (; n; n--)
		*p++ = rnd64() >> 56;
}

int ncpus, cur_cpu;
/* Does this kernel let XDP call bpf_xdp_adjust_meta (xfrag_use_meta)? */
int use_meta;
__u32 xdp_in_max, tc_in_max;
__u64 seed;
__u64 nframes = 200000;
int only_round = -1, verbose;
int nrounds;
__u64 round_frames;
const char *pcap_path;
static char lib_log[8192];
static size_t lib_log_len;

__u8 fbuf[FRAME_MAX], out[OUT_MAX], tout[OUT_MAX];
struct stream streams[MAX_STREAMS];
__u64 dg_counter;
int gen_plain;		/* no duplicates, overlaps or lies */

/* Destinations: clean datagrams go to these, nothing else may name them. */
const __u8 clean4_dst[4] = { 198, 51, 100, 77 };
const __u8 clean6_dst[16] = { 0x20, 0x01, 0x0d, 0xb8, 0xc1, 0xea, 0, 0,
				     0, 0, 0, 0, 0, 0, 0, 0x77 };
const __u8 mut4_dst[4] = { 203, 0, 113, 99 };
const __u8 mut6_dst[16] = { 0x20, 0x01, 0x0d, 0xb8, 0x0b, 0xad, 0, 0,
				   0, 0, 0, 0, 0, 0, 0, 0x99 };
const __u8 visit_src[4] = { 192, 0, 2, 1 };
struct ring_ent ring[RING];
__u64 ring_n;

int fail(struct run *r, const char *fmt, ...)
{
	size_t len = strlen(r->why);
	va_list ap;

	if (len >= sizeof(r->why) - 4)
		return -1;
	if (len) {
		strcat(r->why, "; ");
		len += 2;
	}
	va_start(ap, fmt);
	vsnprintf(r->why + len, sizeof(r->why) - len, fmt, ap);
	va_end(ap);
	return -1;
}

int libbpf_log(enum libbpf_print_level level, const char *fmt,
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

void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- The data path's bucket hash (bpf/table.h), to visit every bucket ---- */

static __u64 rotl(__u64 x, int b)
{
	return (x << b) | (x >> (64 - b));
}

#define SIPROUND							\
	do {								\
		v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32); \
		v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;			\
		v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;			\
		v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32); \
	} while (0)

__u32 bucket_base(const struct run *r, const struct xfrag_key *key)
{
	__u64 m[5], k0 = r->secret[0], k1 = r->secret[1];
	__u64 v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
	__u64 v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
	__u64 b = (__u64)sizeof(*key) << 56, h;

	_Static_assert(sizeof(*key) == 40, "xfrag_key is not 40 bytes");
	memcpy(m, key, sizeof(m));
	for (int i = 0; i < 5; i++) {
		v3 ^= m[i];
		SIPROUND;
		v0 ^= m[i];
	}
	v3 ^= b;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	h = v0 ^ v1 ^ v2 ^ v3;
	return (__u32)(((h & 0xffffffff) * r->s.buckets) >> 32) * r->s.ways;
}

/* ---- Skeleton, counters, table ------------------------------------------- */

int load(struct run *r)
{
	struct bpf_map *m;
	__u32 zero = 0;
	int err;

	lib_log_len = 0;
	lib_log[0] = 0;
	r->skel = xfrag_bpf__open();
	REQUIRE(r->skel, "xfrag_bpf__open: %s", strerror(errno));
	r->skel->rodata->xfrag_buckets = r->s.buckets;
	r->skel->rodata->xfrag_ways = r->s.ways;
	r->skel->rodata->xfrag_secret[0] = r->secret[0];
	r->skel->rodata->xfrag_secret[1] = r->secret[1];
	r->skel->rodata->xfrag_use_meta = use_meta;
	err = bpf_map__set_max_entries(r->skel->maps.xfrag_table,
				       r->s.buckets * r->s.ways);
	if (!err && r->s.nchunks) {
		r->skel->rodata->xfrag_nchunks = r->s.nchunks;
		err = bpf_map__set_max_entries(r->skel->maps.xfrag_chunks,
					       r->s.nchunks) ?:
		      bpf_map__set_max_entries(r->skel->maps.xfrag_free,
					       r->s.nchunks);
	}
	REQUIRE(!err, "set_max_entries: %d", err);
	bpf_object__for_each_map(m, r->skel->obj)
		bpf_map__set_pin_path(m, NULL);
	err = xfrag_bpf__load(r->skel);
	if (err) {
		fprintf(stderr, "%s", lib_log);
		return fail(r, "xfrag_bpf__load: %d (libbpf log on stderr)", err);
	}
	r->nways = r->s.buckets * r->s.ways;
	r->xdp_fd = bpf_program__fd(r->skel->progs.xfrag_xdp);
	r->tc_fd = bpf_program__fd(r->skel->progs.xfrag_tc);
	r->stats_fd = bpf_map__fd(r->skel->maps.xfrag_stats);
	r->pcpu_fd = bpf_map__fd(r->skel->maps.xfrag_pcpu);
	r->table_fd = bpf_map__fd(r->skel->maps.xfrag_table);
	r->srcq_fd = bpf_map__fd(r->skel->maps.xfrag_srcq);
	err = bpf_map_update_elem(bpf_map__fd(r->skel->maps.xfrag_config),
				  &zero, &r->s.cfg, BPF_ANY);
	REQUIRE(!err, "config update: %s", strerror(errno));
	if (!r->s.sweeper) {
		/* Marked armed: the timer is never started, expiry is lazy
		 * only, and nothing runs behind the frames' backs. */
		struct xfrag_pcpu *pc = calloc(ncpus, sizeof(*pc));

		REQUIRE(pc, "calloc");
		for (int c = 0; c < ncpus; c++)
			pc[c].sweep_armed = XFRAG_SWEEP_PINNED;
		err = bpf_map_update_elem(r->pcpu_fd, &zero, pc, BPF_ANY);
		free(pc);
		REQUIRE(!err, "pcpu update: %s", strerror(errno));
	}
	return 0;
}

static int read_snap(struct run *r, struct snap *s)
{
	static struct xfrag_stats *v;
	static struct xfrag_pcpu *pc;
	__u32 zero = 0;

	if (!v)
		v = calloc(ncpus, sizeof(*v));
	if (!pc)
		pc = calloc(ncpus, sizeof(*pc));
	REQUIRE(v && pc, "calloc");
	REQUIRE(!bpf_map_lookup_elem(r->stats_fd, &zero, v),
		"stats lookup: %s", strerror(errno));
	REQUIRE(!bpf_map_lookup_elem(r->pcpu_fd, &zero, pc),
		"pcpu lookup: %s", strerror(errno));
	memset(s, 0, sizeof(*s));
	for (int c = 0; c < ncpus; c++) {
		const __u64 *p = (const __u64 *)&v[c];

		for (int i = 0; i < C_NUM; i++)
			s->v[i] += p[i];
		s->chunks_out += (__u64)pc[c].next_fresh - pc[c].free_top;
	}
	return 0;
}

/* Returns NULL when the invariants hold, else what is wrong. */
static const char *invariant_error(const struct run *r, const struct snap *s)
{
	static char msg[512];

	if (xf_counter_invariants(s->v, msg, sizeof(msg)))
		return msg;
#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			snprintf(msg, sizeof(msg), __VA_ARGS__);	\
			return msg;					\
		}							\
	} while (0)
#define U(x)	((unsigned long long)(x))
	/* What only this program can see: the allocator, the table. */
	CHECK(V(s, mem_in_flight) == s->chunks_out * XFRAG_CHUNK,
	      "mem_in_flight %llu != %llu chunks out of the allocator",
	      U(V(s, mem_in_flight)), U(s->chunks_out));
	CHECK(V(s, dgrams_in_flight) + V(s, handoff_pending) <= r->nways,
	      "%llu datagrams held in %u ways",
	      U(V(s, dgrams_in_flight) + V(s, handoff_pending)), r->nways);
#undef CHECK
	return NULL;
}

/*
 * Read the counters and check the invariants.  The sweeper (when it runs)
 * may fire between the two map reads: a failure is read again before it
 * counts.
 */
int snap_checked(struct run *r, struct snap *s)
{
	const char *e = NULL;

	for (int t = 0; t < 4; t++) {
		TRY(read_snap(r, s));
		e = invariant_error(r, s);
		if (!e)
			return 0;
		if (!r->s.sweeper)
			break;
		sleep_ms(2);
	}
	return fail(r, "%s", e);
}

int read_way(struct run *r, __u32 idx, struct xfrag_way *w)
{
	static __u8 *buf;
	size_t wsz = (sizeof(struct xfrag_way) + 7) & ~7UL;

	if (!buf)
		buf = calloc(ncpus, wsz);
	REQUIRE(buf, "calloc");
	REQUIRE(!bpf_map_lookup_elem(r->table_fd, &idx, buf),
		"table lookup %u: %s", idx, strerror(errno));
	memcpy(w, buf + (size_t)cur_cpu * wsz, sizeof(*w));
	return 0;
}

/* Without metadata: the newest hand-off of this CPU, as its meta. */
int newest_handoff(struct run *r, struct xfrag_meta *m)
{
	struct xfrag_way w;
	int found = 0;

	memset(m, 0, sizeof(*m));
	for (__u32 i = 0; i < r->nways; i++) {
		TRY(read_way(r, i, &w));
		if (w.state != XFRAG_WAY_HANDOFF ||
		    (found && w.cookie <= m->cookie))
			continue;
		found = 1;
		m->magic = XFRAG_META_MAGIC;
		m->cpu = cur_cpu;
		m->way = i;
		m->cookie = w.cookie;
	}
	REQUIRE(found, "reasm_oks moved on an untouched frame, but no hand-off is held");
	return 0;
}

/* Hand-offs pending in key's bucket with that key. */
int pending_with_key(struct run *r, const struct xfrag_key *key,
			    __u32 *n)
{
	__u32 base = bucket_base(r, key);
	struct xfrag_way w;

	*n = 0;
	for (__u32 i = 0; i < r->s.ways; i++) {
		TRY(read_way(r, base + i, &w));
		if (w.state == XFRAG_WAY_HANDOFF &&
		    !memcmp(&w.key, key, sizeof(*key)))
			(*n)++;
	}
	return 0;
}
