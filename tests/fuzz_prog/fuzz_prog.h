/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
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
/*
 * Its parts (tests/fuzz_prog/): state.c (random numbers, the run state,
 * the bucket hash, the maps), frames.c (datagrams, fragments, streams),
 * mutate.c, run.c (frames through the programs, what comes out checked;
 * noise), streams.c (streams, visits, the end of a round), rounds.c,
 * main.c (options, kernel limits).  This header: what they share.
 */
#ifndef XFRAG_FUZZ_PROG_H
#define XFRAG_FUZZ_PROG_H

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

/* The quota map's value (bpf/maps.h). */
struct srcq {
	__u16 n[XFRAG_SRCQ_SLOTS];
};

struct ring_ent {
	__u8 *b;
	__u32 len;
};

#define TRY(x)	do { if (x) return -1; } while (0)

#define REQUIRE(cond, ...)						\
	do { if (!(cond)) return fail(r, __VA_ARGS__); } while (0)

#define V(s, name)	((s)->v[C_##name])

/* ---- Mutations ----------------------------------------------------------- */

struct layout {
	__u32 l3;	/* IP header offset */
	__u32 fh;	/* IPv6: Fragment header offset, 0 if none */
	int fam;
};

/* ---- Running frames ------------------------------------------------------ */

enum kind { K_CLEAN, K_MUT, K_PLAIN, K_ATOMIC, K_NOISE, K_VISIT };

extern __u64 rs;
extern int ncpus, cur_cpu;
extern int use_meta;
extern __u32 xdp_in_max, tc_in_max;
extern __u64 seed;
extern __u64 nframes;
extern int only_round, verbose;
extern int nrounds;
extern __u64 round_frames;
extern const char *pcap_path;
extern __u8 fbuf[FRAME_MAX], out[OUT_MAX], tout[OUT_MAX];
extern struct stream streams[MAX_STREAMS];
extern __u64 dg_counter;
extern int gen_plain;
extern const __u8 clean4_dst[4];
extern const __u8 clean6_dst[16];
extern const __u8 mut4_dst[4];
extern const __u8 mut6_dst[16];
extern const __u8 visit_src[4];
extern struct ring_ent ring[RING];
extern __u64 ring_n;
extern const __u8 *cur_frame;

__u64 rnd64(void);
__u32 rnd(__u32 n);
__u32 range(__u32 lo, __u32 hi)	/* [lo, hi] */;
int chance(__u32 pct);
void rnd_fill(__u8 *p, __u32 n);
int fail(struct run *r, const char *fmt, ...);
int libbpf_log(enum libbpf_print_level level, const char *fmt,
		      va_list ap);
void sleep_ms(long ms);
__u32 bucket_base(const struct run *r, const struct xfrag_key *key);
int load(struct run *r);
int snap_checked(struct run *r, struct snap *s);
int read_way(struct run *r, __u32 idx, struct xfrag_way *w);
int newest_handoff(struct run *r, struct xfrag_meta *m);
int pending_with_key(struct run *r, const struct xfrag_key *key,
			    __u32 *n);
void mk_dgram(struct dgram *d, int mutant);
__u32 l2len_of(const struct dgram *d, int l2v);
__u32 hdr_room(const struct dgram *d, int l2v, __u32 off);
__u32 mk_frag(__u8 *f, const struct dgram *d, int l2v, __u32 off,
		     __u32 len, int mf, __u32 pad);
void new_stream(struct stream *s, int mutant, int mut_pct);
char classify(struct stream *s);
__u32 mutate(__u8 *f, __u32 len, struct layout *L);
int names_clean(const __u8 *f, __u32 len);
void print_frame(void);
void pcap_dump(void);
int run_frame(struct run *r, const __u8 *f, __u32 len, int kind,
		     const struct dgram *clean);
int send_noise(struct run *r);
int stream_step(struct run *r, struct stream *s);
int check_hash(struct run *r);
int drain(struct run *r, int final);
int run_round(int round, struct run *tot);

#endif
