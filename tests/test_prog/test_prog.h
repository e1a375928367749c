/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * test_prog: table-driven unit tests of the xfrag XDP program through
 * BPF_PROG_TEST_RUN.  Every test loads a fresh skeleton (counters at 0),
 * builds an unfragmented UDP/IPv4 frame, cuts it into fragments, runs them
 * through xfrag_xdp and checks verdicts, output bytes and counter deltas.
 *
 * Output: one line per test, "PASS name" or "FAIL name: reason", then
 * "test_prog: N passed, M failed".  Exit status 1 if any test failed.
 *
 * Its parts (tests/test_prog/): harness.c (loading, counters, the frame
 * builder, running frames), rules.c, table.c, capture.c, attack.c,
 * deliver.c, guard.c, steer.c, ipv6.c (the tests by concern), main.c (the
 * test table, the runner).  This header: what they share.
 */
#ifndef XFRAG_TEST_PROG_H
#define XFRAG_TEST_PROG_H

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

#define TRY(x)	do { if (x) return -1; } while (0)

#define REQUIRE(cond, ...)						\
	do { if (!(cond)) return fail(t, __VA_ARGS__); } while (0)

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

struct fl {
	__u32 off, len;
	int mf;
};

enum { END_REBUILT, END_HANDOFF, END_NONE };

#define COMPLETE_XDP(n, bytes)						\
	D(reasm_reqds, n), D(reasm_oks, 1), D(deliver_xdp, 1),		\
	D(frag_reasm, n), D(bytes_reasm, bytes)

/* ---- xfrag capture ---------------------------------------------------- */

struct caprecs {
	int n;
	struct xfrag_cap_rec r[8];
};

/* ---- IPv6 ------------------------------------------------------------------ */

struct d6 {
	__u8 b[DGRAM_MAX];	/* the unfragmented frame */
	__u32 len, l3off, hlen, plen;	/* hlen: IPv6 + unfragmentable ext */
	__u32 nhpos;		/* frame offset of the next-header byte naming UDP */
	__u32 id;
};

extern int ncpus;
extern int cpu_a, cpu_b;
extern int cur_cpu;
extern int use_meta;
extern const __u8 mac_dst[ETH_ALEN];
extern const __u8 mac_src[ETH_ALEN];

int fail(struct tctx *t, const char *fmt, ...);
int libbpf_log(enum libbpf_print_level level, const char *fmt,
		      va_list ap);
int pin(int cpu);
void sleep_ms(long ms);
int load(struct tctx *t, const struct setup *s);
int snap(struct tctx *t, int cpu, struct snap *s);
int check_invariants(struct tctx *t);
int check_deltas(struct tctx *t, int cpu, const struct snap *before,
			const struct delta *d, size_t nd);
__u32 xorshift(__u32 *s);
void build(struct dgram *d, const struct dopt *o);
void mkfrag(struct frame *f, const struct dgram *d, __u32 off, __u32 len,
		   int mf, __u32 pad);
int split(const struct dgram *d, __u32 max, struct fl *out);
const char *vname(__u32 r);
int xdp(struct tctx *t, const void *in, __u32 len);
int verdict(struct tctx *t, __u32 want, const char *what);
int same(struct tctx *t, const __u8 *p, __u32 n, const char *what);
int send_drop(struct tctx *t, const struct frame *f, const char *what);
int send_pass(struct tctx *t, const struct frame *f, const char *what);
int send_rebuilt(struct tctx *t, const struct frame *f,
			const struct dgram *d, const char *what);
int send_handoff(struct tctx *t, const struct frame *f,
			const struct dgram *d, const char *what);
int send_seq(struct tctx *t, const struct dgram *d, const struct fl *fl,
		    const int *order, int n, int end);
struct dgram *dg(void);
struct dgram *udp_dgram(__u16 id, __u32 udp_len);
int prove_room(struct tctx *t);
int t_nonfrag(struct tctx *t);
int t_complete(struct tctx *t);
int t_perm_3(struct tctx *t);
int t_perm_11(struct tctx *t);
int t_padding(struct tctx *t);
int t_trim(struct tctx *t);
int t_vlan(struct tctx *t);
int t_dup(struct tctx *t);
int t_dup_earlier(struct tctx *t);
int t_dup_last_end(struct tctx *t);
int t_dup_changed(struct tctx *t);
int t_reject(struct tctx *t);
int t_too_many(struct tctx *t);
int t_too_many_flush(struct tctx *t);
int t_bad_header(struct tctx *t);
int t_timeout(struct tctx *t);
int t_sweep(struct tctx *t);
int t_refuse(struct tctx *t);
int held(struct tctx *t, __u32 id);
int pieces(struct tctx *t, __u16 id, const int *ix, int n);
int t_evict(struct tctx *t);
int t_capture(struct tctx *t);
int t_capture_swept(struct tctx *t);
int t_watermark(struct tctx *t);
int t_reserve(struct tctx *t);
int t_quota(struct tctx *t);
int t_flood(struct tctx *t);
int t_overlap_attack(struct tctx *t);
int t_tiny(struct tctx *t);
int t_dup_storm(struct tctx *t);
int t_collide(struct tctx *t);
int t_mem_default(struct tctx *t);
int t_mem_small(struct tctx *t);
int t_pass(struct tctx *t);
int t_pass_frees(struct tctx *t);
int t_pass_dup(struct tctx *t);
int t_pass_evicts(struct tctx *t);
int t_replay_takes(struct tctx *t);
int t_no_tc_unknown(struct tctx *t);
int t_no_tc_room(struct tctx *t);
int t_tc_seen(struct tctx *t);
int t_handoff(struct tctx *t);
int t_multibuf(struct tctx *t);
int t_jumbo(struct tctx *t);
int t_missing(struct tctx *t);
int t_cross_cpu(struct tctx *t);
__s64 delta(const struct snap *a, const struct snap *b, int c);
int t_guard(struct tctx *t);
int t_guard_flows(struct tctx *t);
int t_steer(struct tctx *t);
int t6_complete(struct tctx *t);
int t6_dup(struct tctx *t);
int t6_reject(struct tctx *t);
int t6_bad_chain(struct tctx *t);
int t6_chain_unreadable(struct tctx *t);
int t6_atomic(struct tctx *t);
int t6_quota(struct tctx *t);

#endif
