// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fuzz_prog: random and mutated frames through xfrag_xdp (and xfrag_tc for
 * hand-offs) with BPF_PROG_TEST_RUN, in large numbers.
 *
 * A run is a number of rounds; each round loads a fresh skeleton with a
 * random geometry and configuration (derived from the seed and the round
 * number alone, so `--seed S --round R` replays one round), then sends
 * frames from several interleaved datagram streams:
 *
 *  - clean streams: random UDP/TCP/other datagrams, IPv4 (options) and IPv6
 *    (extension headers before and after the Fragment header), 0-2 VLAN
 *    tags, cut at random multiples of 8, reordered, with exact duplicates,
 *    overlapping pieces (same bytes), trimmed IPv4 pieces and Ethernet
 *    padding; fragments may differ in what the datagram does not take from
 *    them (L2 header of the same key, later TTLs, later IPv6 unfragmentable
 *    part).  Every key is unique, so a datagram xfrag delivers on a clean
 *    frame must equal the original datagram byte for byte.
 *  - mutant streams (another address space): the same, with frames
 *    truncated, bytes flipped, IHL 0-15, lengths that lie, offsets near
 *    65535, empty first fragments, IPv6 chains that loop, run off the frame
 *    or claim huge lengths, VLAN stacks of 0-4, other EtherTypes and IP
 *    versions, short and jumbo frames.  A mutant frame that contains a
 *    clean destination address anywhere is not sent, so mutants can never
 *    join a clean datagram.
 *  - noise: short random frames, non-IP frames, unfragmented IPv4/IPv6
 *    packets and IPv6 atomic fragments (the last two must pass untouched).
 *
 * Checked on every frame: the XDP verdict is XDP_PASS or XDP_DROP; a frame
 * passed is either untouched, a hand-off (struct xfrag_meta + the frame) or
 * a rebuilt datagram that is a well-formed unfragmented IP packet (IPv4
 * checksum, lengths equal to the frame, no fragment bits) behind the
 * input's L2 header; a clean one equals its original.  A hand-off is checked
 * against the table (magic, cpu, way, cookie), then TC runs: TC_ACT_OK with
 * the datagram rebuilt (same checks) or TC_ACT_SHOT counted as deliver_err,
 * and exactly one hand-off of that key collected.  The counter deltas agree
 * with what was seen, and the invariants of include/xfrag.h hold, with
 * more: gauges never negative, chunk memory held equals the allocator's
 * chunks out, reasm_fails covers its parts, every reassembled datagram took
 * at least two fragments.  Some rounds change the tunables as they go, let
 * the sweeper run, or run TC on every frame passed untouched too.
 *
 * Every fourth round checks completeness (classify()): with the resources
 * sure to suffice, every datagram within the delivery limits is delivered
 * exactly once, on its last fragment, and datagrams beyond them are passed
 * untouched, every fragment; nothing fails and nothing is left in flight.
 *
 * At pauses and at the end of a round the short time-out runs out; one
 * too-long fragment per bucket (keys found with the data path's SipHash,
 * under a secret set here) visits every bucket, and then every gauge is
 * zero, every chunk is on the free stack exactly once, every way is free
 * and (at the end) every quota slot is zero.
 *
 * Limits of BPF_PROG_TEST_RUN on this kernel: no skb metadata, so TC finds a
 * hand-off by the fragment's key (its generic-XDP path); TC takes at most
 * 3712 bytes, so a longer completing frame is replaced by a short fragment
 * of the same datagram; XDP takes 14 bytes at least.  Every fourth round
 * leaves one hand-off uncollected, to expire as handoff_lost.
 *
 * Output: "PASS fuzz_round_R" per round and "PASS fuzz_coverage" (clean
 * datagrams were delivered by XDP and by TC), or "FAIL fuzz_round_R: seed
 * S ..." at the first failure, with the command that replays the round.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>

#include "xfrag.h"
#include "counters.h"
#include "frame.h"
#include "xfrag.skel.h"
#include "probe.h"

#define FRAME_MAX	(80 * 1024)	/* generated frames */
#define OUT_MAX		(160 * 1024)	/* test_run output */
#define MAX_STREAMS	16
#define MAX_PIECES	320
#define RING		512		/* frames kept for --pcap */

#define ETH_P_IP_	0x0800
#define ETH_P_IPV6_	0x86DD
#define ETH_P_8021Q_	0x8100
#define ETH_P_8021AD_	0x88A8
#define F_DF		0x4000
#define F_MF		0x2000
#define TC_OK		0
#define TC_SHOT		2

/* ---- Counters ------------------------------------------------------------ */

/* C_name, cname[], ckind[], xf_counter_invariants(): tests/counters.h */

struct snap {
	__u64 v[C_NUM];
	__u64 chunks_out;	/* next_fresh - free_top, all CPUs */
};

/* ---- Random numbers (splitmix64) ----------------------------------------- */

static __u64 rs;

static __u64 rnd64(void)
{
	__u64 z = (rs += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n); 0 when n is 0. */
static __u32 rnd(__u32 n)
{
	return (__u32)(((rnd64() >> 32) * (__u64)n) >> 32);
}

static __u32 range(__u32 lo, __u32 hi)	/* [lo, hi] */
{
	return hi <= lo ? lo : lo + rnd(hi - lo + 1);
}

static int chance(__u32 pct)
{
	return rnd(100) < pct;
}

static void rnd_fill(__u8 *p, __u32 n)
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

/* ---- Bytes --------------------------------------------------------------- */

static void ip_csum(__u8 *ip, __u32 hl)
{
	ip[10] = ip[11] = 0;
	put16(ip + 10, csum(ip, hl));
}

/* ---- State --------------------------------------------------------------- */

struct setup {
	__u32 buckets, ways, nchunks;	/* nchunks 0: default */
	struct xfrag_config cfg;
	int sweeper;		/* let the sweeper timer run */
	int tc_on_pass;		/* also run TC on frames XDP passed untouched */
	int streams;		/* interleaved datagrams */
	int mut_pct;		/* share of mutant streams */
	int noise_pct;		/* share of noise frames */
	int pause_every;	/* frames between pauses past the time-out */
	int reconfig;		/* change the tunables during the round */
	int complete;		/* completeness round (see complete_check()) */
};

struct dgram {
	int fam;		/* 4 or 6 */
	int df;
	__u8 l2[32];
	__u32 l2len;		/* MACs, tags, EtherType */
	__u8 l2x[3][32];	/* other L2 headers that key the same */
	__u32 l2xlen[3], nl2x;
	int ttl_vary;		/* IPv4: non-first fragments, other TTLs */
	__u8 hdr2[512];		/* IPv6: unfragmentable part of non-first */
	__u32 hlen2, nhpos2;	/* fragments, if alt6 */
	int alt6;
	__u8 hdr[512];
	__u32 hlen;		/* IPv4 header / IPv6 + unfragmentable part */
	__u32 hlen_later;	/* IPv4: header length of non-first fragments */
	__u32 nhpos;		/* IPv6: hdr byte naming the Fragment header */
	__u8 fnh;		/* IPv6: next header after the Fragment header */
	__u8 proto;		/* upper layer */
	__u32 first_min;	/* bytes the first fragment must hold */
	__u32 plen;
	__u8 pl[65536];		/* the fragmentable part */
	__u8 orig[FRAME_MAX];	/* the unfragmented frame */
	__u32 olen;
};

struct piece {
	__u32 off, len, pad;
	__u8 mf;
	__u8 l2v;		/* 0: d->l2, else d->l2x[l2v - 1] */
};

struct stream {
	struct dgram d;
	struct piece p[MAX_PIECES];
	int n, next;
	int mutant, mut_pct;
	int live;
	char expect;		/* completeness rounds: 'A', 'B' or 'C' */
};

struct run {
	struct xfrag_bpf *skel;
	int xdp_fd, tc_fd, stats_fd, pcpu_fd, table_fd, srcq_fd;
	struct setup s;
	__u32 nways;
	__u64 secret[2];
	int round;
	__u64 frame_no;		/* frames sent this round */
	char why[1024];
	struct snap last;
	/* figures */
	__u64 f_sent, f_skipped, f_clean, f_mut, f_noise, f_visit;
	__u64 tr_refused;	/* test_run refused the frame (size) */
	__u64 clean_xdp, clean_tc, mut_xdp, mut_tc, tc_skipped, tc_shot;
	__u64 tc_refused;	/* TC test_run refused a short frame */
	__u64 reconfigs;
	__u64 tc_proxy;		/* hand-offs collected on a short proxy */
	int lose;		/* hand-offs still to leave uncollected */
	/* the last frame's outcome */
	__u32 o_verdict;
	int o_untouched, o_delivered;
	__u64 expect_a, expect_b, expect_c;	/* completeness checks made */
	__u64 handoffs, dgrams_clean, dgrams_mut;
};

static int ncpus, cur_cpu;
/* Does this kernel let XDP call bpf_xdp_adjust_meta (xfrag_use_meta)? */
static int use_meta;
static __u32 xdp_in_max, tc_in_max;
static __u64 seed;
static __u64 nframes = 200000;
static int only_round = -1, verbose;
static int nrounds;
static __u64 round_frames;
static const char *pcap_path;
static char lib_log[8192];
static size_t lib_log_len;

static __u8 fbuf[FRAME_MAX], out[OUT_MAX], tout[OUT_MAX];
static struct stream streams[MAX_STREAMS];
static __u64 dg_counter;
static int gen_plain;		/* no duplicates, overlaps or lies */

/* Destinations: clean datagrams go to these, nothing else may name them. */
static const __u8 clean4_dst[4] = { 198, 51, 100, 77 };
static const __u8 clean6_dst[16] = { 0x20, 0x01, 0x0d, 0xb8, 0xc1, 0xea, 0, 0,
				     0, 0, 0, 0, 0, 0, 0, 0x77 };
static const __u8 mut4_dst[4] = { 203, 0, 113, 99 };
static const __u8 mut6_dst[16] = { 0x20, 0x01, 0x0d, 0xb8, 0x0b, 0xad, 0, 0,
				   0, 0, 0, 0, 0, 0, 0, 0x99 };
static const __u8 visit_src[4] = { 192, 0, 2, 1 };

/* The quota map's value (bpf/maps.h). */
struct srcq {
	__u16 n[XFRAG_SRCQ_SLOTS];
};

struct ring_ent {
	__u8 *b;
	__u32 len;
};
static struct ring_ent ring[RING];
static __u64 ring_n;

#define TRY(x)	do { if (x) return -1; } while (0)

static int fail(struct run *r, const char *fmt, ...)
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

#define REQUIRE(cond, ...)						\
	do { if (!(cond)) return fail(r, __VA_ARGS__); } while (0)

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

static void sleep_ms(long ms)
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

static __u32 bucket_base(const struct run *r, const struct xfrag_key *key)
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

static int load(struct run *r)
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

#define V(s, name)	((s)->v[C_##name])

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
static int snap_checked(struct run *r, struct snap *s)
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

static int read_way(struct run *r, __u32 idx, struct xfrag_way *w)
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
static int newest_handoff(struct run *r, struct xfrag_meta *m)
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
static int pending_with_key(struct run *r, const struct xfrag_key *key,
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

/* ---- Frames -------------------------------------------------------------- */

/* MACs, `nvlan` tags, EtherType. */
static __u32 mk_l2(__u8 *p, int nvlan, __u16 type)
{
	__u32 o = 12;

	for (int i = 0; i < 6; i++) {
		p[i] = i == 0 ? 0x02 : rnd(256);
		p[6 + i] = i == 0 ? 0x02 : rnd(256);
	}
	for (int i = 0; i < nvlan; i++, o += 4) {
		put16(p + o, i == 0 && nvlan > 1 ? ETH_P_8021AD_ : ETH_P_8021Q_);
		put16(p + o + 2, rnd(0x10000));
	}
	put16(p + o, type);
	return o + 2;
}

/* IPv4 options of `n` bytes (a multiple of 4): a plausible mix. */
static void mk_opts(__u8 *p, __u32 n)
{
	__u32 i = 0;

	while (i < n) {
		__u32 left = n - i, l;

		switch (rnd(4)) {
		case 0:
			p[i++] = 1;			/* NOP */
			break;
		case 1:
			if (left < 4) {
				p[i++] = 1;
				break;
			}
			memcpy(p + i, (const __u8[]){ 0x94, 4, 0, 0 }, 4);
			i += 4;				/* Router Alert */
			break;
		default:
			if (left < 2) {
				p[i++] = 0;		/* EOL */
				break;
			}
			l = range(2, left > 12 ? 12 : left);
			p[i] = 0x80 | range(20, 30);	/* copied, unknown */
			p[i + 1] = l;
			rnd_fill(p + i + 2, l - 2);
			i += l;
			break;
		}
	}
}

/* An upper-layer header (and payload) of `n` bytes at p, protocol proto. */
static void mk_upper(__u8 *p, __u32 n, __u8 proto, int lie)
{
	rnd_fill(p, n);
	if (proto == 17 && n >= 8) {
		put16(p + 4, lie ? rnd(0x10000) : n > 0xffff ? 0 : n);
		put16(p + 6, 0);
	}
}

/*
 * A random datagram.  Clean ones get a unique key in the clean address
 * space; mutant ones a random key in theirs.
 */
static void mk_dgram(struct dgram *d, int mutant)
{
	__u64 n = dg_counter++;
	int nvlan = rnd(100) < 60 ? 0 : rnd(100) < 70 ? 1 : 2;
	__u32 r, maxp, up_off = 0;
	__u8 proto;
	int lie = !gen_plain && chance(mutant ? 20 : 3);

	d->fam = chance(50) ? 4 : 6;
	d->df = chance(10);
	d->l2len = mk_l2(d->l2, nvlan, d->fam == 4 ? ETH_P_IP_ : ETH_P_IPV6_);
	r = rnd(100);
	proto = r < 70 ? 17 : r < 80 ? 6 : r < 88 ? (d->fam == 4 ? 1 : 58) :
		r < 92 ? 59 : 0;
	while (!proto || proto == 135 || proto == 139 || proto == 140)
		proto = range(100, 250);	/* no extension header type */
	d->proto = proto;

	if (d->fam == 4) {
		__u8 *ip = d->hdr;
		__u32 optlen = chance(75) ? 0 : 4 * range(1, 10);

		d->hlen = 20 + optlen;
		d->hlen_later = chance(50) ? 20 : d->hlen;
		memset(ip, 0, 20);
		ip[0] = 0x40 | (d->hlen / 4);
		ip[1] = rnd(256);
		ip[8] = range(1, 255);
		ip[9] = proto;
		if (!mutant) {
			__u64 hi = n >> 16;

			put16(ip + 4, n & 0xffff);
			ip[12] = 10;
			ip[13] = (rnd(4) << 6) | ((hi >> 16) & 0x3f);
			ip[14] = hi >> 8;
			ip[15] = hi;
			memcpy(ip + 16, clean4_dst, 4);
		} else {
			put16(ip + 4, rnd(0x10000));
			ip[12] = 172;
			ip[13] = 16;
			ip[14] = rnd(4);
			ip[15] = rnd(256);
			memcpy(ip + 16, mut4_dst, 4);
		}
		mk_opts(ip + 20, optlen);
		d->first_min = proto == 6 ? 24 : 8;
		maxp = 65535 - d->hlen;
	} else {
		static const __u8 unfrag[] = { 60, 43, 60 };
		__u8 *ip = d->hdr, *nhp = ip + 6;
		__u32 next = 0, o = 40, fext = 0;

		if (chance(40))
			next = chance(85) ? range(1, 3) : range(4, 7);
		memset(ip, 0, 40);
		ip[0] = 0x60 | rnd(16);
		ip[1] = rnd(256);
		ip[2] = rnd(256);
		ip[3] = rnd(256);
		ip[7] = range(1, 255);
		if (!mutant) {
			ip[8] = 0x20;
			ip[9] = 0x01;
			ip[10] = 0x0d;
			ip[11] = 0xb8;
			ip[13] = rnd(4);
			put32(ip + 16, n >> 32);
			put32(ip + 20, (__u32)n);
			memcpy(ip + 24, clean6_dst, 16);
		} else {
			ip[8] = 0xfd;
			rnd_fill(ip + 9, 15);
			memcpy(ip + 24, mut6_dst, 16);
		}
		for (__u32 i = 0; i < next; i++) {
			__u8 type = i == 0 && chance(50) ? 0 :
				    unfrag[rnd(sizeof(unfrag))];
			__u32 units = chance(80) ? 0 : range(1, 3);
			__u8 *h = ip + o;

			*nhp = type;
			memset(h, 0, 8 * (units + 1));
			h[1] = units;
			if (type == 43) {
				h[2] = rnd(2) ? 4 : 3;	/* routing type */
				h[3] = 0;		/* segments left */
				rnd_fill(h + 4, 4 + 8 * units);
			} else {
				h[2] = 1;		/* PadN */
				h[3] = 8 * (units + 1) - 4;
			}
			nhp = h;
			o += 8 * (units + 1);
		}
		d->hlen = o;
		d->nhpos = nhp - ip;
		/* Fragmentable extension headers before the upper layer. */
		d->fnh = proto;
		if (chance(15)) {
			fext = 8 * range(1, 3);
			d->fnh = chance(70) ? 60 : 51;
		}
		*nhp = d->fnh;
		up_off = fext;
		d->first_min = fext + (proto == 6 ? 20 : proto == 17 ||
				       proto == 58 ? 8 : 1);
		maxp = 65535 - (d->hlen - 40);
		d->hlen_later = d->hlen;
	}

	/*
	 * Clean variations whose result is still known: other L2 headers
	 * with the same key (MACs, PCP/DEI, a priority tag for none, an inner
	 * tag or not), other TTLs after the first fragment, and (IPv6) another
	 * unfragmentable part after the first (RFC 8200 4.5: the first
	 * fragment's is the datagram's).
	 */
	d->nl2x = 0;
	if (chance(15)) {
		__u16 outer = nvlan ? get16(d->l2 + 14) & 0x0fff : 0;

		d->nl2x = range(1, 3);
		for (__u32 v = 0; v < d->nl2x; v++) {
			__u8 *p = d->l2x[v];
			int n = !outer ? (chance(50) ? 0 : 1) : range(1, 2);

			d->l2xlen[v] = mk_l2(p, n, d->fam == 4 ? ETH_P_IP_ :
							       ETH_P_IPV6_);
			if (n)
				put16(p + 14, (rnd(16) << 12) | outer);
			if (n && chance(50))
				put16(p + 12, chance(50) ? ETH_P_8021Q_ :
							   ETH_P_8021AD_);
		}
	}
	d->ttl_vary = d->fam == 4 && chance(10);
	d->alt6 = 0;
	if (d->fam == 6 && chance(10)) {
		__u32 units = rnd(3);
		__u8 *h;

		/* the first's IPv6 header, then one destination options
		 * header of its own in front of the Fragment header */
		memcpy(d->hdr2, d->hdr, 40);
		d->hdr2[6] = 60;
		h = d->hdr2 + 40;
		memset(h, 0, 8 * (units + 1));
		h[1] = units;
		h[2] = 1;
		h[3] = 8 * (units + 1) - 4;
		d->hlen2 = 40 + 8 * (units + 1);
		d->nhpos2 = 40;
		d->alt6 = 1;
	}

	/* Size of the fragmentable part. */
	r = rnd(100);
	if (r < 10)
		d->plen = range(16, 600);
	else if (r < 55)
		d->plen = range(600, 3400);
	else if (r < 85)
		d->plen = range(3400, 15900);
	else
		d->plen = range(16000, 65400);
	if (d->plen > maxp)
		d->plen = maxp;
	if (d->plen < ((d->first_min + 7) & ~7U) + 8)
		d->plen = ((d->first_min + 7) & ~7U) + 8;

	mk_upper(d->pl + up_off, d->plen - up_off, proto, lie);
	if (up_off) {
		__u8 *h = d->pl;

		memset(h, 0, up_off);
		h[0] = proto;
		if (d->fnh == 51) {
			h[1] = up_off / 4 - 2;	/* AH: 4-byte units less 2 */
			rnd_fill(h + 4, up_off - 4);
		} else {
			h[1] = up_off / 8 - 1;
			h[2] = 1;		/* PadN */
			h[3] = up_off - 4;
		}
	}

	/* The unfragmented frame. */
	memcpy(d->orig, d->l2, d->l2len);
	memcpy(d->orig + d->l2len, d->hdr, d->hlen);
	if (d->fam == 4) {
		__u8 *ip = d->orig + d->l2len;

		put16(ip + 2, d->hlen + d->plen);
		put16(ip + 6, d->df ? F_DF : 0);
		ip_csum(ip, d->hlen);
	} else {
		put16(d->orig + d->l2len + 4, d->hlen - 40 + d->plen);
	}
	memcpy(d->orig + d->l2len + d->hlen, d->pl, d->plen);
	d->olen = d->l2len + d->hlen + d->plen;
}

static __u32 l2len_of(const struct dgram *d, int l2v)
{
	return l2v ? d->l2xlen[l2v - 1] : d->l2len;
}

/* Bytes in front of the payload of a fragment at `off`. */
static __u32 hdr_room(const struct dgram *d, int l2v, __u32 off)
{
	if (d->fam == 4)
		return l2len_of(d, l2v) + (off ? d->hlen_later : d->hlen);
	return l2len_of(d, l2v) + (off && d->alt6 ? d->hlen2 : d->hlen) + 8;
}

/*
 * Fragment [off, off + len) of d with L2 header l2v, then `pad` bytes of
 * Ethernet padding.
 */
static __u32 mk_frag(__u8 *f, const struct dgram *d, int l2v, __u32 off,
		     __u32 len, int mf, __u32 pad)
{
	__u32 o = l2len_of(d, l2v);

	memcpy(f, l2v ? d->l2x[l2v - 1] : d->l2, o);
	if (d->fam == 4) {
		__u32 hl = off == 0 ? d->hlen : d->hlen_later;
		__u8 *ip = f + o;

		memcpy(ip, d->hdr, hl);
		ip[0] = 0x40 | (hl / 4);
		put16(ip + 2, hl + len);
		put16(ip + 6, (off >> 3) | (mf ? F_MF : 0) | (d->df ? F_DF : 0));
		if (off && d->ttl_vary)
			ip[8] = range(1, 255);
		ip_csum(ip, hl);
		memcpy(ip + hl, d->pl + off, len);
		o += hl + len;
	} else {
		int alt = off && d->alt6;
		__u32 hl = alt ? d->hlen2 : d->hlen;
		__u8 *ip = f + o, *fh = ip + hl;

		memcpy(ip, alt ? d->hdr2 : d->hdr, hl);
		put16(ip + 4, hl - 40 + 8 + len);
		ip[alt ? d->nhpos2 : d->nhpos] = 44;
		fh[0] = d->fnh;
		fh[1] = 0;
		put16(fh + 2, (off & 0xfff8) | (mf ? 1 : 0));
		memcpy(fh + 4, ip + 16 + 4, 4);	/* id: see below */
		memcpy(fh + 8, d->pl + off, len);
		o += hl + 8 + len;
	}
	rnd_fill(f + o, pad);
	return o + pad;
}

/*
 * The IPv6 identification: the low 32 bits of the source (unique for clean
 * datagrams), so mk_frag() needs no more state.
 */

static void shuffle_pieces(struct piece *p, int n)
{
	for (int i = n - 1; i > 0; i--) {
		int j = rnd(i + 1);
		struct piece t = p[i];

		p[i] = p[j];
		p[j] = t;
	}
}

static void insert_piece(struct stream *s, struct piece x)
{
	int at;

	if (s->n >= MAX_PIECES)
		return;
	at = rnd(s->n + 1);
	memmove(&s->p[at + 1], &s->p[at], (s->n - at) * sizeof(s->p[0]));
	s->p[at] = x;
	s->n++;
}

static __u32 frag_room(void)
{
	/* payload bytes one frame may carry, whatever its headers */
	__u32 room = xdp_in_max - 22 - 128 - 8;

	return room & ~7U;
}

static void new_stream(struct stream *s, int mutant, int mut_pct)
{
	struct dgram *d = &s->d;
	__u32 fm, cuts[MAX_PIECES], nc = 0, room, r;
	int mode = rnd(100);

	memset(s->p, 0, sizeof(s->p));
	s->mutant = mutant;
	s->mut_pct = mut_pct;
	s->n = s->next = 0;
	s->live = 1;
	s->expect = 0;
	mk_dgram(d, mutant);
	fm = (d->first_min + 7) & ~7U;
	room = frag_room();

	/* Cut points, multiples of 8 in (0, plen). */
	if (mode < 40) {
		__u32 fs;

		r = rnd(100);
		fs = r < 50 ? (1500 - d->hlen - (d->fam == 6 ? 8 : 0)) & ~7U :
		     r < 80 ? 8 * range(1, 1200) : 8 * range(1, 50);
		if (fs > room)
			fs = room;
		for (__u32 o = fs; o < d->plen && nc < MAX_PIECES - 40; o += fs)
			cuts[nc++] = o;
	} else if (mode < 85) {
		__u32 k = range(1, 40), slots = (d->plen - 1) / 8;

		for (__u32 i = 0; i < k && slots; i++)
			cuts[nc++] = 8 * range(1, slots);
	} else {
		/* tiny pieces: often more than max_frags */
		__u32 fs = 8 * range(1, 8);

		for (__u32 o = fs; o < d->plen && nc < 100; o += fs)
			cuts[nc++] = o;
	}
	/* sort, unique, first piece holds first_min, no piece beyond room */
	for (__u32 i = 1; i < nc; i++)
		for (__u32 j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
			__u32 t = cuts[j];

			cuts[j] = cuts[j - 1];
			cuts[j - 1] = t;
		}
	{
		__u32 m = 0, prev = 0;

		for (__u32 i = 0; i < nc; i++) {
			if (cuts[i] <= prev || cuts[i] < fm || cuts[i] >= d->plen)
				continue;
			while (cuts[i] - prev > room && m < MAX_PIECES - 40) {
				prev += room;
				cuts[m++] = prev;
			}
			cuts[m++] = prev = cuts[i];
		}
		while (d->plen - prev > room && m < MAX_PIECES - 40) {
			prev += room;
			cuts[m++] = prev;
		}
		nc = m;
		if (nc == 0 && d->plen > fm)
			cuts[nc++] = fm;
	}
	for (__u32 i = 0; i <= nc; i++) {
		__u32 a = i ? cuts[i - 1] : 0, b = i < nc ? cuts[i] : d->plen;

		s->p[s->n].off = a;
		s->p[s->n].len = b - a;
		s->p[s->n].mf = i < nc;
		s->n++;
	}

	/* IPv4: sometimes a non-last piece carries 1-7 bytes more (trimmed). */
	if (d->fam == 4 && chance(8)) {
		int i = rnd(s->n);

		if (s->p[i].mf) {
			__u32 extra = range(1, 7);

			if (s->p[i].off + s->p[i].len + extra <= d->plen)
				s->p[i].len += extra;
		}
	}

	/* Order. */
	r = rnd(100);
	if (r < 15) {
		for (int i = 0; i < s->n / 2; i++) {
			struct piece t = s->p[i];

			s->p[i] = s->p[s->n - 1 - i];
			s->p[s->n - 1 - i] = t;
		}
	} else if (r < 55) {
		shuffle_pieces(s->p, s->n);
	} else if (r < 75) {
		for (int k = 0, m = range(1, 3); k < m && s->n > 1; k++) {
			int i = rnd(s->n - 1);
			struct piece t = s->p[i];

			s->p[i] = s->p[i + 1];
			s->p[i + 1] = t;
		}
	}

	/* Exact duplicates and overlapping pieces, all with the right bytes. */
	if (gen_plain)
		;
	else if (chance(20))
		for (int k = 0, m = range(1, 3); k < m; k++)
			insert_piece(s, s->p[rnd(s->n)]);
	if (!gen_plain && chance(8)) {
		__u32 slots = d->plen / 8, a, b;
		struct piece x = { 0 };

		a = 8 * rnd(slots);
		b = a + 8 * range(1, 64);
		if (b > d->plen || chance(20))
			b = d->plen;
		if (a == 0 && b < fm)
			b = fm;
		if (b - a <= room) {
			x.off = a;
			x.len = b - a;
			x.mf = b < d->plen;
			insert_piece(s, x);
		}
	}
	/* Ethernet padding, L2 headers. */
	for (int i = 0; i < s->n; i++) {
		s->p[i].l2v = d->nl2x && chance(60) ? range(1, d->nl2x) : 0;
		if (chance(10))
			s->p[i].pad = range(1, 64);
		else if (chance(1))
			s->p[i].pad = rnd(4096);
	}
}

/*
 * Completeness rounds (TC, default geometry and memory, at most 8
 * datagrams at a time, nothing else sent, no time-out while sending): the
 * table and the memory cannot run out, so
 *  A: a datagram within the delivery limit (XFRAG_TC_MAX_LEN, 64
 *     fragments, 64 pieces, IPv6 unfragmentable part within
 *     XFRAG_HDR_MAX) is delivered exactly once, on its last fragment; all
 *     fragments before are dropped (consumed);
 *  B: a UDP datagram beyond it whose first fragment comes first is passed
 *     to the kernel untouched, every fragment;
 *  C: an IPv6 datagram whose unfragmentable part exceeds XFRAG_HDR_MAX is
 *     passed untouched, every fragment.
 * Returns the class, 0 for none of them.
 */
static char classify(struct stream *s)
{
	const struct dgram *d = &s->d;
	__u32 l2min = d->l2len, l2max = d->l2len, descs = 0;
	__u32 hmax = d->alt6 && d->hlen2 > d->hlen ? d->hlen2 : d->hlen;

	for (__u32 v = 0; v < d->nl2x; v++) {
		if (d->l2xlen[v] < l2min)
			l2min = d->l2xlen[v];
		if (d->l2xlen[v] > l2max)
			l2max = d->l2xlen[v];
	}
	for (int i = 0; i < s->n; i++)
		descs += (s->p[i].len + XFRAG_CHUNK - 1) / XFRAG_CHUNK;
	if (d->fam == 6 && d->hlen > XFRAG_HDR_MAX)
		return d->alt6 ? 0 : 'C';
	if (l2max + hmax + d->plen <= XFRAG_TC_MAX_LEN && s->n <= 64 &&
	    descs <= XFRAG_MAX_DESC)
		return 'A';
	if (d->proto == 17 && l2min + d->hlen + d->plen > XFRAG_TC_MAX_LEN) {
		/* its first fragment first: the UDP length tells */
		for (int i = 0; i < s->n; i++)
			if (s->p[i].off == 0) {
				struct piece t = s->p[i];

				memmove(&s->p[1], &s->p[0], i * sizeof(s->p[0]));
				s->p[0] = t;
				return 'B';
			}
	}
	return 0;
}

/* ---- Mutations ----------------------------------------------------------- */

struct layout {
	__u32 l3;	/* IP header offset */
	__u32 fh;	/* IPv6: Fragment header offset, 0 if none */
	int fam;
};

static void fix_v4(__u8 *f, __u32 len, const struct layout *L)
{
	__u8 *ip = f + L->l3;
	__u32 hl;

	if (L->fam != 4 || len < L->l3 + 20)
		return;
	hl = (ip[0] & 0xf) * 4;
	if (hl >= 20 && L->l3 + hl <= len)
		ip_csum(ip, hl);
}

/*
 * Put `k` random extension headers in front of the IPv6 chain: more than
 * the walk follows (a loop), one claiming 2 KB, one cut by the frame end.
 */
static __u32 mut_chain(__u8 *f, __u32 len, struct layout *L)
{
	static const __u8 types[] = { 0, 60, 43, 51, 135, 139, 140, 253, 254,
				      44, 60, 60 };
	__u8 chain[2048], *ip = f + L->l3, *nhp, first;
	__u32 n = 0, k, mode = rnd(4);

	if (len < L->l3 + 40)
		return len;
	first = ip[6];
	nhp = &ip[6];
	k = mode == 0 ? range(9, 30) : range(1, 8);
	for (__u32 i = 0; i < k; i++) {
		__u8 t = chance(85) ? types[rnd(sizeof(types))] : rnd(256);
		__u32 units = chance(90) ? rnd(2) : rnd(256), hl;

		hl = t == 51 ? (units + 2) * 4 : (units + 1) * 8;
		if (n + hl > sizeof(chain)) {
			units = 0;
			hl = 8;
		}
		if (n + hl > sizeof(chain))
			break;
		*nhp = t;
		rnd_fill(chain + n, hl);
		chain[n + 1] = units;
		if (mode == 1 && i == k - 1)
			chain[n + 1] = 255;	/* claims more than is there */
		nhp = &chain[n];
		n += hl;
	}
	*nhp = first;
	if (chance(50) && len + n <= xdp_in_max) {
		memmove(ip + 40 + n, ip + 40, len - L->l3 - 40);
		memcpy(ip + 40, chain, n);
		len += n;
		if (L->fh)
			L->fh += n;
		if (chance(60))
			put16(ip + 4, len - L->l3 - 40);
	} else {
		/* over what was there (the chain may run past the frame) */
		__u32 room = len - L->l3 - 40;

		memcpy(ip + 40, chain, n < room ? n : room);
		L->fh = 0;
	}
	if (mode == 3 && len > L->l3 + 48)
		len = range(L->l3 + 40, len);	/* cut inside the chain */
	return len;
}

/* Re-tag with 0-4 VLAN tags. */
static __u32 mut_vlan(__u8 *f, __u32 len, struct layout *L)
{
	__u8 tags[16];
	__u32 depth = rnd(5), old = L->l3 - 14, n = depth * 4;
	__u16 type = get16(f + L->l3 - 2);

	if (len - old + n > xdp_in_max)
		return len;
	for (__u32 i = 0; i < depth; i++) {
		static const __u16 tp[] = { ETH_P_8021Q_, ETH_P_8021AD_, 0x9100 };

		put16(tags + 4 * i, tp[rnd(3)]);
		put16(tags + 4 * i + 2, rnd(0x10000));
	}
	memmove(f + 12 + n + 2, f + L->l3, len - L->l3);
	memcpy(f + 12, tags, n);
	put16(f + 12 + n, type);
	len = len - old + n;
	if (L->fh)
		L->fh = L->fh - L->l3 + 14 + n;
	L->l3 = 14 + n;
	return len;
}

static __u32 mutate(__u8 *f, __u32 len, struct layout *L)
{
	int nm = chance(70) ? 1 : range(2, 4), fixcsum = chance(80);

	for (int m = 0; m < nm; m++) {
		__u8 *ip = f + L->l3;
		int have_ip = len >= L->l3 + 20;
		__u32 v;

		switch (rnd(15)) {
		case 0:		/* truncate */
			len = chance(50) ? rnd(len + 1) : range(L->l3, len);
			break;
		case 1:		/* flip bytes, mostly in the headers */
			for (int k = 0, n = range(1, 8); k < n && len; k++) {
				__u32 at = chance(70) ?
					   rnd(len < L->l3 + 80 ? len : L->l3 + 80) :
					   rnd(len);
				f[at] ^= range(1, 255);
			}
			break;
		case 2:		/* IHL 0-15 */
			if (have_ip && L->fam == 4)
				ip[0] = (ip[0] & 0xf0) | rnd(16);
			break;
		case 3:		/* total / payload length */
			if (!have_ip)
				break;
			v = len - L->l3;
			switch (rnd(7)) {
			case 0: v = 0; break;
			case 1: v = rnd(L->fam == 4 ? 24 : 16); break;
			case 2: v += range(1, 16); break;
			case 3: v -= v > 16 ? range(1, 16) : 0; break;
			case 4: v = 65535; break;
			case 5: v = rnd(65536); break;
			default: v += range(1, 3000); break;
			}
			if (L->fam == 4)
				put16(ip + 2, v);
			else
				put16(ip + 4, v >= 40 ? v - 40 : v);
			break;
		case 4:		/* offsets near the end */
			if (L->fam == 4 && have_ip)
				put16(ip + 6, (get16(ip + 6) & 0xe000) |
					      (0x1fff - rnd(chance(50) ? 4 : 64)));
			else if (L->fh && L->fh + 8 <= len)
				put16(f + L->fh + 2, (0xfff8 - 8 * rnd(64)) |
						     (f[L->fh + 3] & 1));
			break;
		case 5:		/* offset 0, MF, no payload */
			if (L->fam == 4 && have_ip) {
				__u32 hl = (ip[0] & 0xf) * 4;

				if (hl < 20 || L->l3 + hl > len)
					break;
				put16(ip + 2, hl);
				put16(ip + 6, F_MF);
				len = L->l3 + hl + (chance(30) ? rnd(40) : 0);
			} else if (L->fh && L->fh + 8 <= len) {
				put16(f + L->fh + 2, 1);
				put16(ip + 4, L->fh + 8 - L->l3 - 40);
				len = L->fh + 8 + (chance(30) ? rnd(40) : 0);
			}
			break;
		case 6:		/* IPv6 chains: loops, past the end, huge */
			if (L->fam == 6)
				len = mut_chain(f, len, L);
			break;
		case 7:		/* VLAN stacks 0-4 */
			if (len >= L->l3)
				len = mut_vlan(f, len, L);
			break;
		case 8:		/* another EtherType */
			if (len >= L->l3) {
				static const __u16 et[] = { ETH_P_IP_, ETH_P_IPV6_,
							    0x0806, 0x88cc,
							    ETH_P_8021Q_ };
				put16(f + L->l3 - 2, chance(80) ?
				      et[rnd(sizeof(et) / 2)] : rnd(0x10000));
			}
			break;
		case 9:		/* IP version */
			if (have_ip)
				ip[0] = (rnd(16) << 4) | (ip[0] & 0xf);
			break;
		case 10:	/* padding, up to a jumbo frame */
			v = chance(70) ? range(1, 200) : rnd(xdp_in_max);
			if (len + v > xdp_in_max)
				v = xdp_in_max - len;
			rnd_fill(f + len, v);
			len += v;
			break;
		case 11:	/* a short frame */
			len = rnd(65);
			break;
		case 12:	/* a random header field */
			if (have_ip) {
				__u32 at = L->l3 + rnd(L->fam == 4 ? 20 : 48);

				if (at + 2 <= len)
					put16(f + at, rnd(0x10000));
			}
			break;
		case 13:	/* flag bits */
			if (L->fam == 4 && have_ip)
				ip[6] ^= 0x80 >> rnd(3);
			else if (L->fh && L->fh + 8 <= len)
				f[L->fh + 3] ^= 1 << rnd(3);
			break;
		default:	/* IPv6 fragment header: next header, id */
			if (L->fh && L->fh + 8 <= len)
				f[L->fh + rnd(8)] = rnd(256);
			break;
		}
	}
	if (fixcsum)
		fix_v4(f, len, L);
	return len;
}

/* Anything xfrag might key on as a clean datagram? */
static int names_clean(const __u8 *f, __u32 len)
{
	return memmem(f, len, clean4_dst, 4) || memmem(f, len, clean6_dst, 16);
}

/* ---- Running frames ------------------------------------------------------ */

enum kind { K_CLEAN, K_MUT, K_PLAIN, K_ATOMIC, K_NOISE, K_VISIT };
static const char *const kname[] = { "clean fragment", "mutant", "plain packet",
				     "atomic fragment", "noise", "visit" };

static const __u8 *cur_frame;	/* the frame being run, for FAIL lines */
static __u32 cur_len;
static int cur_kind;

static void print_frame(void)
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

static void pcap_dump(void)
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
		ip_csum(px + l3, hl);
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
static int run_frame(struct run *r, const __u8 *f, __u32 len, int kind,
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
static int send_noise(struct run *r)
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

/* ---- Streams ------------------------------------------------------------- */

static int stream_step(struct run *r, struct stream *s)
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
		ip_csum(ip, 20);
		r->f_visit++;
		TRY(run_frame(r, f, 14 + 20 + 16, K_VISIT, NULL));
	}
	REQUIRE(!left, "found no key for %u buckets", left);
	return 0;
}

/* Check that the hash above is the data path's: a held fragment's way. */
static int check_hash(struct run *r)
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
static int drain(struct run *r, int final)
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

/* ---- Rounds -------------------------------------------------------------- */

static __u64 mix(__u64 a, __u64 b)
{
	__u64 save = rs, v;

	rs = a ^ (b * 0xd1b54a32d192ed03ULL);
	v = rnd64();
	rs = save;
	return v;
}

static void pick_setup(struct setup *s, int round)
{
	static const __u32 bk[] = { 1, 2, 7, 64, 256, 1024 };
	static const __u32 wy[] = { 1, 2, 4, 8, 16, 32 };
	static const __u32 ch[] = { 8, 24, 100, 400 };
	int kind = round % 4;

	memset(s, 0, sizeof(*s));
	s->buckets = bk[rnd(6)];
	s->ways = wy[rnd(6)];
	while (s->buckets * s->ways > 8192)
		s->ways /= 2;
	s->nchunks = chance(60) ? 0 : ch[rnd(4)];
	s->cfg.timeout_ms = range(10, 50);
	s->cfg.max_frags = chance(50) ? 0 : range(2, 64);
	s->cfg.evict = rnd(4);
	s->cfg.warm_ms = chance(50) ? 0 : range(1, 100);
	s->cfg.quota = chance(75) ? 0 : range(1, 8);
	if (chance(20)) {
		__u32 budget = (s->nchunks ?: XFRAG_DEF_MEM / XFRAG_CHUNK) *
			       XFRAG_CHUNK;

		s->cfg.mem_high = budget / 8 * range(2, 8);
		s->cfg.mem_low = s->cfg.mem_high / 8 * range(1, 7);
	}
	s->cfg.flags = chance(70) ? XFRAG_CFG_TC : 0;
	s->sweeper = chance(50);
	s->tc_on_pass = chance(25);
	s->streams = range(1, MAX_STREAMS);
	s->mut_pct = range(10, 70);
	s->noise_pct = range(2, 12);
	s->pause_every = range(3000, 20000);
	s->reconfig = chance(30);
	if (kind == 0 || kind == 1) {
		/* Friendly: most clean datagrams get through, by XDP (1) or
		 * XDP and TC (0). */
		s->buckets = 1024;
		s->ways = 8;
		s->nchunks = 0;
		s->cfg.timeout_ms = 50;
		s->cfg.max_frags = 0;
		s->cfg.quota = 0;
		s->cfg.mem_high = s->cfg.mem_low = 0;
		s->cfg.flags = kind == 0 ? XFRAG_CFG_TC : 0;
		s->tc_on_pass = 0;
		s->reconfig = 0;
		s->streams = range(1, 6);
		s->mut_pct = range(10, 40);
	}
	if (kind == 2) {
		/* Completeness: see classify(). */
		s->complete = 1;
		s->buckets = 1024;
		s->ways = 8;
		s->nchunks = 0;
		s->cfg.timeout_ms = XFRAG_MAX_TIMEOUT_MS;
		s->cfg.max_frags = 0;
		s->cfg.quota = 0;
		s->cfg.mem_high = s->cfg.mem_low = 0;
		s->cfg.flags = XFRAG_CFG_TC;
		s->reconfig = 0;
		s->streams = range(1, 8);
		s->mut_pct = 0;
		s->noise_pct = 0;
	}
}

/* Run-time tunables, as `xfrag config` changes them. */
static void pick_cfg(struct xfrag_config *c)
{
	c->timeout_ms = range(10, 50);
	c->max_frags = chance(50) ? 0 : range(2, 64);
	c->evict = rnd(4);
	c->warm_ms = chance(50) ? 0 : range(1, 100);
	c->quota = chance(75) ? 0 : range(1, 8);
	if (chance(30))
		c->flags ^= XFRAG_CFG_TC;
}

static int reconfigure(struct run *r)
{
	__u32 zero = 0;

	pick_cfg(&r->s.cfg);
	r->reconfigs++;
	REQUIRE(!bpf_map_update_elem(bpf_map__fd(r->skel->maps.xfrag_config),
				     &zero, &r->s.cfg, BPF_ANY),
		"config update: %s", strerror(errno));
	return 0;
}

static void print_setup(const struct run *r)
{
	const struct setup *s = &r->s;

	printf("round %d: buckets %u ways %u chunks %u timeout %u max_frags %u evict %u warm %u quota %u mem_high %u mem_low %u %s%s%s%s streams %d mutant %d%% noise %d%%\n",
	       r->round, s->buckets, s->ways,
	       s->nchunks ?: XFRAG_DEF_MEM / XFRAG_CHUNK, s->cfg.timeout_ms,
	       s->cfg.max_frags, s->cfg.evict, s->cfg.warm_ms, s->cfg.quota,
	       s->cfg.mem_high, s->cfg.mem_low,
	       s->cfg.flags & XFRAG_CFG_TC ? "tc" : "xdp-only",
	       s->sweeper ? " sweeper" : "", s->tc_on_pass ? " tc-on-pass" : "",
	       s->complete ? " completeness" : s->reconfig ? " reconfig" : "",
	       s->streams, s->mut_pct, s->noise_pct);
}

/*
 * Completeness rounds, before a pause or the end: every datagram sent to
 * its last fragment; then nothing is in flight and nothing failed but the
 * visits (each a too-long fragment).
 */
static int complete_check(struct run *r)
{
	static const int zero_ctrs[] = {
		C_reasm_timeout, C_reasm_overlaps, C_deliver_err, C_handoff_lost,
		C_reasm_evicted, C_pass_evicted, C_frag_dup, C_frag_overlap,
		C_frag_timeout, C_frag_refused, C_frag_nomem, C_frag_quota,
		C_frag_bad_header, C_frag_oversize, C_frag_zero_len,
		C_frag_bad_end, C_frag_too_many, C_frag_discarded,
		C_frag_evicted, C_frag_bad_len, C_frag_bad_chain,
		C_frags_in_flight, C_dgrams_in_flight, C_handoff_pending,
		C_bytes_in_flight, C_mem_in_flight,
	};
	struct snap *s = &r->last;

	for (;;) {
		int live[MAX_STREAMS], n = 0;

		for (int i = 0; i < r->s.streams; i++)
			if (streams[i].live)
				live[n++] = i;
		if (!n)
			break;
		TRY(stream_step(r, &streams[live[rnd(n)]]));
	}
	for (size_t i = 0; i < sizeof(zero_ctrs) / sizeof(zero_ctrs[0]); i++)
		REQUIRE(s->v[zero_ctrs[i]] == 0,
			"completeness round: %s is %llu with every datagram sent",
			cname[zero_ctrs[i]],
			(unsigned long long)s->v[zero_ctrs[i]]);
	REQUIRE(V(s, frag_too_long) == r->f_visit &&
		V(s, reasm_fails) == r->f_visit,
		"completeness round: frag_too_long %llu reasm_fails %llu, %llu visits",
		(unsigned long long)V(s, frag_too_long),
		(unsigned long long)V(s, reasm_fails),
		(unsigned long long)r->f_visit);
	return 0;
}

static int round_body(struct run *r)
{
	__u64 next_pause;

	gen_plain = r->s.complete;
	TRY(load(r));
	TRY(snap_checked(r, &r->last));
	TRY(check_hash(r));
	for (int i = 0; i < MAX_STREAMS; i++)
		streams[i].live = 0;
	next_pause = r->s.pause_every;
	while (r->frame_no < round_frames) {
		int i;

		if (r->frame_no >= next_pause) {
			if (r->s.complete)
				TRY(complete_check(r));
			TRY(drain(r, 0));
			next_pause = r->frame_no + r->s.pause_every;
			if (r->s.reconfig && chance(50))
				TRY(reconfigure(r));
		}
		if (r->s.reconfig && !rnd(4000))
			TRY(reconfigure(r));
		if (chance(r->s.noise_pct)) {
			TRY(send_noise(r));
			continue;
		}
		i = rnd(r->s.streams);
		if (!streams[i].live) {
			int mut = chance(r->s.mut_pct);

			do
				new_stream(&streams[i], mut,
					   chance(50) ? range(3, 20) :
							range(20, 100));
			while (r->s.complete &&
			       !(streams[i].expect = classify(&streams[i])));
			if (mut)
				r->dgrams_mut++;
			else
				r->dgrams_clean++;
		}
		TRY(stream_step(r, &streams[i]));
	}
	if (r->s.complete)
		TRY(complete_check(r));
	return drain(r, 1);
}

static int run_round(int round, struct run *tot)
{
	static struct run r;
	int err;

	memset(&r, 0, sizeof(r));
	r.round = round;
	rs = mix(seed, round + 1);
	pick_setup(&r.s, round);
	r.secret[0] = rnd64() | 1;
	r.secret[1] = rnd64();
	dg_counter = rnd64() >> 28;	/* keys unique within the round */
	r.lose = round % 4 == 3;
	if (verbose)
		print_setup(&r);
	ring_n = 0;
	cur_frame = NULL;
	err = round_body(&r);
	if (err) {
		printf("FAIL fuzz_round_%d: seed %llu round %d frame %llu: %s\n",
		       round, (unsigned long long)seed, round,
		       (unsigned long long)r.frame_no, r.why);
		print_setup(&r);
		print_frame();
		printf("replay: build/fuzz_prog --seed %llu --frames %llu --round %d -v\n",
		       (unsigned long long)seed, (unsigned long long)nframes,
		       round);
		pcap_dump();
	} else {
		if (verbose)
			printf("  frames %llu (clean %llu mutant %llu noise %llu visits %llu, skipped %llu, refused by test_run %llu); datagrams clean %llu mutant %llu; delivered clean xdp %llu tc %llu, mutant xdp %llu tc %llu; hand-offs %llu (on a proxy %llu, left to expire %llu, shot %llu); TC test_run refused %llu; reconfigured %llu; completeness checks A %llu B %llu C %llu; reqds %llu oks %llu\n",
			       (unsigned long long)r.f_sent,
			       (unsigned long long)r.f_clean,
			       (unsigned long long)r.f_mut,
			       (unsigned long long)r.f_noise,
			       (unsigned long long)r.f_visit,
			       (unsigned long long)r.f_skipped,
			       (unsigned long long)r.tr_refused,
			       (unsigned long long)r.dgrams_clean,
			       (unsigned long long)r.dgrams_mut,
			       (unsigned long long)r.clean_xdp,
			       (unsigned long long)r.clean_tc,
			       (unsigned long long)r.mut_xdp,
			       (unsigned long long)r.mut_tc,
			       (unsigned long long)r.handoffs,
			       (unsigned long long)r.tc_proxy,
			       (unsigned long long)r.tc_skipped,
			       (unsigned long long)r.tc_shot,
			       (unsigned long long)r.tc_refused,
			       (unsigned long long)r.reconfigs,
			       (unsigned long long)r.expect_a,
			       (unsigned long long)r.expect_b,
			       (unsigned long long)r.expect_c,
			       (unsigned long long)V(&r.last, reasm_reqds),
			       (unsigned long long)V(&r.last, reasm_oks));
		printf("PASS fuzz_round_%d\n", round);
	}
	tot->f_sent += r.f_sent;
	tot->clean_xdp += r.clean_xdp;
	tot->clean_tc += r.clean_tc;
	tot->mut_xdp += r.mut_xdp;
	tot->mut_tc += r.mut_tc;
	tot->handoffs += r.handoffs;
	tot->dgrams_clean += r.dgrams_clean;
	tot->dgrams_mut += r.dgrams_mut;
	xfrag_bpf__destroy(r.skel);
	return err;
}

/* ---- Start --------------------------------------------------------------- */

/* Largest frame test_run takes for prog (binary search on non-IP frames). */
static __u32 probe_max(int prog_fd)
{
	__u32 lo = 14, hi = FRAME_MAX;

	memset(fbuf, 0, FRAME_MAX);
	put16(fbuf + 12, 0x88b5);
	while (lo < hi) {
		__u32 mid = (lo + hi + 1) / 2;
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = fbuf,
			    .data_size_in = mid, .data_out = out,
			    .data_size_out = sizeof(out), .repeat = 1);

		if (bpf_prog_test_run_opts(prog_fd, &o))
			hi = mid - 1;
		else
			lo = mid;
	}
	return lo;
}

static int probe_limits(void)
{
	static struct run r;

	r.s.buckets = 1;
	r.s.ways = 1;
	r.s.sweeper = 1;
	if (load(&r)) {
		printf("FAIL fuzz_setup: %s\n", r.why);
		return -1;
	}
	xdp_in_max = probe_max(r.xdp_fd);
	tc_in_max = probe_max(r.tc_fd);
	xfrag_bpf__destroy(r.skel);
	if (xdp_in_max < 1600 || tc_in_max < 1600) {
		printf("FAIL fuzz_setup: test_run takes %u bytes for XDP, %u for TC\n",
		       xdp_in_max, tc_in_max);
		return -1;
	}
	if (xdp_in_max > FRAME_MAX - 4096)
		xdp_in_max = FRAME_MAX - 4096;
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fuzz_prog [--seed S] [--frames N] [--rounds K] [--round R] [--pcap FILE] [-v]\n"
		"  --seed S    random seed (default: from getrandom, printed)\n"
		"  --frames N  frames in all (default 200000)\n"
		"  --rounds K  rounds, a fresh skeleton and configuration each\n"
		"              (default: N / 25000, at least 4, at most N / 1000)\n"
		"  --round R   run only round R of that seed and frame count\n"
		"  --pcap FILE on failure, write the round's last %d frames there\n",
		RING);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "frames", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'k' },
		{ "round", required_argument, NULL, 'r' },
		{ "pcap", required_argument, NULL, 'p' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct run tot = { 0 };
	int c, have_seed = 0, failed = 0, passed = 0;
	cpu_set_t set;
	time_t t0 = time(NULL);

	while ((c = getopt_long(argc, argv, "s:n:k:r:p:vh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			seed = strtoull(optarg, NULL, 0);
			have_seed = 1;
			break;
		case 'n':
			nframes = strtoull(optarg, NULL, 0);
			break;
		case 'k':
			nrounds = atoi(optarg);
			break;
		case 'r':
			only_round = atoi(optarg);
			break;
		case 'p':
			pcap_path = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			usage();
			return c == 'h' ? 0 : 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	libbpf_set_print(libbpf_log);
	if (!have_seed && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (__u64)time(NULL) * 2654435761ULL;
	if (!have_seed)
		seed &= 0xffffffffffffULL;	/* short enough to type */
	if (nrounds <= 0) {
		nrounds = nframes / 25000;
		if (nrounds < 4)
			nrounds = 4;
		if ((__u64)nrounds > nframes / 1000)
			nrounds = nframes / 1000 ?: 1;
	}
	round_frames = (nframes + nrounds - 1) / nrounds;

	ncpus = libbpf_num_possible_cpus();
	use_meta = xf_probe_xdp_meta();
	if (ncpus <= 0 || sched_getaffinity(0, sizeof(set), &set)) {
		printf("FAIL fuzz_setup: cannot find CPUs\n");
		return 1;
	}
	for (cur_cpu = 0; cur_cpu < CPU_SETSIZE && !CPU_ISSET(cur_cpu, &set);
	     cur_cpu++)
		;
	CPU_ZERO(&set);
	CPU_SET(cur_cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		printf("FAIL fuzz_setup: pin to cpu %d: %s\n", cur_cpu,
		       strerror(errno));
		return 1;
	}
	if (probe_limits())
		return 1;
	printf("fuzz_prog: seed %llu, %llu frames in %d rounds of %llu, cpu %d, test_run takes up to %u bytes (XDP) / %u (TC)\n",
	       (unsigned long long)seed, (unsigned long long)nframes, nrounds,
	       (unsigned long long)round_frames, cur_cpu, xdp_in_max,
	       tc_in_max);
	for (int i = 0; i < nrounds; i++) {
		if (only_round >= 0 && i != only_round)
			continue;
		if (run_round(i, &tot)) {
			failed++;
			break;
		}
		passed++;
	}
	printf("fuzz_prog: seed %llu: %llu frames, %llu clean and %llu mutant datagrams; delivered clean %llu (xdp) + %llu (tc), mutant %llu + %llu; %llu hand-offs; %ld s\n",
	       (unsigned long long)seed, (unsigned long long)tot.f_sent,
	       (unsigned long long)tot.dgrams_clean,
	       (unsigned long long)tot.dgrams_mut,
	       (unsigned long long)tot.clean_xdp,
	       (unsigned long long)tot.clean_tc,
	       (unsigned long long)tot.mut_xdp, (unsigned long long)tot.mut_tc,
	       (unsigned long long)tot.handoffs, (long)(time(NULL) - t0));
	if (!failed && only_round < 0 && nframes >= 50000) {
		/* A fuzzer that never saw a datagram delivered checked
		 * nothing of the rebuild paths. */
		if (tot.clean_xdp && tot.clean_tc) {
			printf("PASS fuzz_coverage\n");
			passed++;
		} else {
			printf("FAIL fuzz_coverage: seed %llu: clean datagrams delivered by XDP %llu, by TC %llu\n",
			       (unsigned long long)seed,
			       (unsigned long long)tot.clean_xdp,
			       (unsigned long long)tot.clean_tc);
			failed++;
		}
	}
	printf("fuzz_prog: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
