/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * xfrag: definitions shared by the BPF data path and user space.
 *
 * Plain #defines and structs of __u8/__u16/__u32/__u64 only: the BPF side
 * gets those types from vmlinux.h, user space from <linux/types.h>.  Every
 * limit, the datagram key, the configuration, the XDP->TC metadata and the
 * counters are defined here once.
 */
#ifndef XFRAG_H
#define XFRAG_H

/* ---- Limits and defaults ------------------------------------------------ */

/*
 * Table geometry (load time; sizes the maps).  Eviction only looks in the
 * bucket being visited, so under a flood it needs victims there: with the
 * memory full, a bucket should hold a few datagrams.  `xfrag attach` picks
 * the largest power of two of buckets that leaves XFRAG_CHUNKS_PER_BUCKET
 * chunks of the budget to each (256 at the default 2 MiB); measured: a
 * spoofed flood at twice the honest frame rate into 1 MiB per CPU, honest
 * datagrams delivered 3 % with 1024 buckets (0.67 chunks a bucket), 80 %
 * with the reserve for datagrams in progress, 94 % with 128 buckets.
 */
#define XFRAG_DEF_BUCKETS	256
#define XFRAG_CHUNKS_PER_BUCKET	4
#define XFRAG_MAX_BUCKETS	(1U << 20)
#define XFRAG_DEF_WAYS		8
#define XFRAG_MAX_WAYS		32

/*
 * Payload storage: chunks of XFRAG_CHUNK bytes, per CPU.  1536 holds a whole
 * fragment of a 1500-byte MTU (IPv4 1480, IPv6 1448 payload bytes) in one
 * chunk; larger fragments span several chunks.
 */
#define XFRAG_CHUNK		1536
#define XFRAG_DEF_MEM		(2U * 1024 * 1024)	/* bytes per CPU */
#define XFRAG_MIN_MEM		(64U * 1024)
#define XFRAG_MAX_MEM		(1024U * 1024 * 1024)

/* Time-out counted from a datagram's first fragment (ipfrag_time). */
#define XFRAG_DEF_TIMEOUT_MS	30000
#define XFRAG_MIN_TIMEOUT_MS	10
#define XFRAG_MAX_TIMEOUT_MS	600000

/* Fragments per datagram; each also needs a descriptor slot. */
#define XFRAG_DEF_MAX_FRAGS	64
#define XFRAG_MAX_DESC		64	/* hard bound: pieces stored per way */

/*
 * A completed datagram handed to TC must be collected within this time;
 * after it the way is reclaimed and the datagram counted as handoff_lost.
 */
#define XFRAG_HANDOFF_NS	(1000ULL * 1000 * 1000)

/*
 * TC ingress can grow an skb to SKB_MAX_ALLOC (16 KiB less skb overhead):
 * bpf_skb_change_tail() refuses anything longer.  skb->len at TC ingress
 * includes the Ethernet header.
 */
#define XFRAG_TC_MAX_LEN	16064

/*
 * Without the TC half, a datagram can only be delivered in the XDP frame:
 * a 1514-byte frame grows to about 3.5 KB on 4 KiB pages.
 */
#define XFRAG_XDP_MAX_LEN	3520

/*
 * ...but only where every frame has that room.  Drivers with one buffer
 * size per receive queue give it to small frames too; veth, virtio-net and
 * generic XDP size a frame to its packet.  Without the TC half, XDP learns
 * which kind it runs on from fragment frames of at most XFRAG_ROOM_SMALL
 * bytes: XFRAG_ROOM_PROOF of them able to grow, and none unable, before it
 * takes any datagram.
 */
#define XFRAG_ROOM_SMALL	1024
#define XFRAG_ROOM_PROOF	8

/*
 * The sweeper: a timer per CPU (pinned to it) visits a slice of the buckets
 * every XFRAG_SWEEP_NS and reclaims what has timed out, so the in-flight
 * gauges fall back to zero without traffic; at most XFRAG_SWEEP_MAX ways
 * per tick (a whole default table about once a second).
 */
#define XFRAG_SWEEP_NS		(100ULL * 1000 * 1000)
/*
 * Kernels before 6.7 have no BPF_F_TIMER_CPU_PIN: a timer may then fire on
 * another CPU (an idle CPU's timers move to a busy one).  A sweep always
 * works on the table of the CPU it runs on, never another's, so it stays
 * safe; a CPU whose table went unswept for XFRAG_SWEEP_STALE_NS starts its
 * timer again from its next fragment, on itself.  What is not covered
 * there: a CPU that gets no fragment and no timer keeps its timed-out
 * datagrams (memory, gauges) until its next fragment.
 */
#define XFRAG_SWEEP_STALE_NS	(1000ULL * 1000 * 1000)
#define XFRAG_SWEEP_PINNED	1	/* pc->sweep_armed: BPF_F_TIMER_CPU_PIN */
#define XFRAG_SWEEP_UNPINNED	2	/* the kernel refused the flag */
#define XFRAG_SWEEP_MAX		4096
#define XFRAG_MAX_CPUS		1024
/*
 * xfrag_cpumap's size in the object as built (xdp-loader set-ups, where
 * nobody resizes it; `xfrag attach` sizes it to the possible CPUs): owners
 * for `xfrag steer` are CPUs below it.  The kernel refuses a cpumap larger
 * than its NR_CPUS (x86-64 kernels: 64 or more; Debian's: 8192).
 */
#define XFRAG_LOADER_CPUMAP	64

/* Largest L3 header stored from a datagram's first fragment. */
#define XFRAG_HDR_MAX		128

/* ---- Datagram key -------------------------------------------------------- */

#define XFRAG_AF_INET		4
#define XFRAG_AF_INET6		6

/*
 * IPv4: source, destination, id, protocol (RFC 791); IPv6: source,
 * destination, 32-bit id (RFC 8200: the next header is not part of it).
 * The outermost VLAN id keeps datagrams of different VLANs apart.
 * IPv4 addresses live in saddr[0]/daddr[0], the rest is zero.
 */
struct xfrag_key {
	__u32 saddr[4];
	__u32 daddr[4];
	__u32 id;
	__u16 vlan;
	__u8 proto;
	__u8 family;
};

/* ---- Configuration --------------------------------------------------------
 *
 * Run-time tunables live in the single element of the xfrag_config ARRAY map;
 * a field left 0 means "built-in default", so the object also works when
 * loaded by xdp-loader, which leaves the map zeroed.
 */
/*
 * Overload policy: what a new datagram does when its bucket has no free
 * way, and what XDP frees when memory held passes the high watermark.
 * Time-outs always reclaim first, and only the bucket being visited is
 * ever looked at.
 */
#define XFRAG_EVICT_DEFAULT	0	/* built-in: XFRAG_DEF_EVICT */
#define XFRAG_EVICT_REFUSE	1	/* kernel-like: refuse new datagrams */
#define XFRAG_EVICT_LRU		2	/* evict the least recently touched */
#define XFRAG_EVICT_PROGRESS	3	/* evict the least likely to complete */
#define XFRAG_DEF_EVICT		XFRAG_EVICT_PROGRESS

/*
 * Per-source quota: in-flight datagrams are counted per CPU in one of
 * XFRAG_SRCQ_SLOTS slots picked by the keyed hash of the source address
 * (IPv6: its /64).  Sources sharing a slot share its quota: a collision can
 * only make the limit stricter, never looser.
 */
#define XFRAG_SRCQ_SLOTS	4096

/* `progress` spares datagrams that progressed this recently. */
#define XFRAG_DEF_WARM_MS	50

/* Eviction watermarks by default, of a per-CPU budget of `mem` bytes: the
 * one definition the BPF program, `xfrag status` and `--help` share. */
#define XFRAG_DEF_MEM_HIGH(mem)	(7 * (mem) / 8)
#define XFRAG_DEF_MEM_LOW(mem)	(3 * (mem) / 4)
#define XFRAG_DEF_MEM_HIGH_TEXT	"7/8 of mem-per-cpu"
#define XFRAG_DEF_MEM_LOW_TEXT	"3/4 of mem-per-cpu"

struct xfrag_config {
	__u32 timeout_ms;	/* 0: XFRAG_DEF_TIMEOUT_MS */
	__u32 max_frags;	/* 0: XFRAG_DEF_MAX_FRAGS */
	__u32 evict;		/* XFRAG_EVICT_*; 0: XFRAG_DEF_EVICT */
	__u32 flags;		/* XFRAG_CFG_* */
	/* Written by `xfrag attach` for `xfrag status`; unused by BPF. */
	__u32 buckets;
	__u32 ways;
	__u32 mem_per_cpu;	/* bytes */
	__u32 xdp_mode;		/* enum xdp_attach_mode of libxdp */
	/* Run-time tunables, continued (0: default). */
	__u32 warm_ms;		/* 0: XFRAG_DEF_WARM_MS */
	__u32 mem_high;		/* bytes per CPU; 0: XFRAG_DEF_MEM_HIGH() */
	__u32 mem_low;		/* bytes per CPU; 0: XFRAG_DEF_MEM_LOW() */
	__u32 quota;		/* datagrams in flight per source per CPU; 0 off */
	/* Steering, written by `xfrag attach` (XFRAG_STEER_*). */
	__u32 steer;		/* mechanism; shown by `xfrag status` */
	__u32 steer_ncpus;	/* owner CPUs in xfrag_owners[0, n) */
	__u32 max_dist;		/* id-wrap guard; 0: XFRAG_DEF_MAX_DIST */
	__u32 too_many;		/* XFRAG_TOO_MANY_*; 0: XFRAG_DEF_TOO_MANY */
	/* Key of the owner hash (steering), drawn by whoever set steering
	 * up (`xfrag attach`, `xfrag steer`): the same on every CPU. */
	__u64 steer_key[2];
};

/*
 * `xfrag capture`'s settings (the pinned map xfrag_capcfg, read only while
 * XFRAG_CFG_CAPTURE is set; apart from the config so that the copy of the
 * config XDP keeps on its stack does not grow): 1 fragment in cap_sample
 * (0, 1: all), at most cap_rate records a second per CPU (0:
 * XFRAG_CAP_DEF_RATE), cap_snap bytes of each (0: XFRAG_CAP_SNAP).
 */
struct xfrag_capcfg {
	__u32 cap_sample;
	__u32 cap_rate;
	__u32 cap_snap;
	__u32 cap_pad;
};

/*
 * A datagram that outgrows what xfrag holds per datagram (max-frags
 * fragments, XFRAG_MAX_DESC pieces).  `pass` (the kernel's behaviour: it
 * has no per-datagram count, only its memory limit): the pieces held so
 * far are replayed to the kernel by TC (native mode with the TC half, as
 * for datagrams beyond one skb) and every later fragment of the datagram
 * is passed on untouched (pass_too_many, frag_flushed).  `drop`: the
 * datagram is discarded (frag_too_many), for operators in front of
 * tiny-fragment floods; also what happens where no replay is possible
 * (skb mode, no TC half).
 */
#define XFRAG_TOO_MANY_PASS	1
#define XFRAG_TOO_MANY_DROP	2
#define XFRAG_DEF_TOO_MANY	XFRAG_TOO_MANY_PASS

/*
 * Id-wrap guard (RFC 4963 section 4; the kernel's ipfrag_max_dist).  IPv4's
 * 16-bit id wraps after 65536 datagrams of one (source, destination,
 * protocol); a datagram that lost a fragment waits for its time-out, and a
 * later datagram with the same id would complete it with its own bytes.
 * Each CPU counts the IPv4 fragments of every (source, destination,
 * protocol, VLAN) in one of XFRAG_GUARD_SLOTS counters (keyed hash;
 * flows sharing a slot only make the guard stricter); a datagram keeps
 * its slot's count at its last fragment, and a fragment that finds its
 * datagram more than max_dist counted fragments old ends it as stale
 * (reasm_stale, frag_stale) and starts a new datagram.  Steering keeps
 * each such flow on one CPU, so its count is whole.  The kernel counts
 * per source over all destinations with a limit of 64; xfrag counts per
 * flow, as ids are allocated (RFC 791, RFC 6864), and its default leaves
 * room for many datagrams of one flow in flight at once, while an id wrap
 * of a flow means at least 65536 datagrams: at least 2 x 65536 fragments
 * when all are fragmented.  IPv6 ids are 32 bits wide: not guarded.
 */
#define XFRAG_GUARD_SLOTS	4096
#define XFRAG_DEF_MAX_DIST	1024
#define XFRAG_MAX_DIST_OFF	0xffffffffU	/* `max-dist 0`: no guard */
#define XFRAG_MAX_MAX_DIST	1000000

struct xfrag_guard {
	__u32 n[XFRAG_GUARD_SLOTS];	/* per CPU: fragments of each flow slot */
};

/*
 * Steering: per-CPU tables need every fragment of a datagram on one CPU.
 * Each datagram has an owner CPU, picked by the keyed hash of its source,
 * destination, protocol and VLAN (not its id: one source's sequence stays
 * on one CPU, as RSS keeps it, and an id-wrap guard sees all of it) over
 * the xfrag_owners list.  `cpumap`: XDP on the device redirects a fragment
 * that is not on its owner through xfrag_cpumap, whose entries run the
 * same reassembly (xfrag_owner*) and never redirect again.  `rps`: the
 * kernel's RPS hashes every fragment of a datagram alike before generic
 * XDP runs (skb mode).  0 in `steer`: not set by `xfrag attach`.
 */
#define XFRAG_STEER_OFF		1
#define XFRAG_STEER_CPUMAP	2
#define XFRAG_STEER_RPS		3
#define XFRAG_STEER_RPS_OURS	4	/* rps, rps_cpus written by attach */
/* Owner hash: SipHash under the config's steer_key with k0 ^ this salt. */
#define XFRAG_OWNER_SALT	0x6f776e6572637075ULL	/* "ownercpu" */
/* Entries of each cpumap queue (frames waiting for the owner's kthread). */
#define XFRAG_CPUMAP_QSIZE	2048
/* Set with the cpumap filled: XDP redirects fragments to their owner. */
#define XFRAG_CFG_STEER		(1U << 2)

/*
 * Set by `xfrag capture` while it runs: every fragment whose run moved a
 * counter of loss (XFRAG_CAP_BENIGN says which do not) is written to the
 * xfrag_capture ring buffer, sampled and rate-limited per CPU.  Off, it
 * costs XDP one test of this flag.  With XFRAG_CFG_CAP_DELIVER the frames
 * of datagrams rebuilt in XDP are written too.
 */
#define XFRAG_CFG_CAPTURE	(1U << 3)
#define XFRAG_CFG_CAP_DELIVER	(1U << 4)
#define XFRAG_CAP_SNAP		2048	/* bytes of a frame kept at most (a
					 * power of 2: bpf/capture.h masks) */
#define XFRAG_CAP_DEF_RATE	1000	/* records a second per CPU */
#define XFRAG_CAP_RING		(4U << 20)	/* ring buffer bytes */

/* A counter's bit in a capture record's `moved` (its place in the list). */
#define XFRAG_CNT_BIT(name)						\
	(1ULL << (__builtin_offsetof(struct xfrag_stats, name) / 8))
/* Counters that move for fragments nothing was lost with. */
#define XFRAG_CAP_BENIGN						\
	(XFRAG_CNT_BIT(reasm_reqds) | XFRAG_CNT_BIT(reasm_oks) |	\
	 XFRAG_CNT_BIT(deliver_xdp) | XFRAG_CNT_BIT(deliver_tc) |	\
	 XFRAG_CNT_BIT(deliver_replay) | XFRAG_CNT_BIT(pass_dgrams) |	\
	 XFRAG_CNT_BIT(pass_no_tc) | XFRAG_CNT_BIT(pass_too_many) |	\
	 XFRAG_CNT_BIT(replay_frags) | XFRAG_CNT_BIT(bytes_reasm) |	\
	 XFRAG_CNT_BIT(frag_reasm) | XFRAG_CNT_BIT(frag_passed) |	\
	 XFRAG_CNT_BIT(frag_flushed) | XFRAG_CNT_BIT(frag_atomic) |	\
	 XFRAG_CNT_BIT(ip6_reqds) | XFRAG_CNT_BIT(ip6_oks) |		\
	 XFRAG_CNT_BIT(steer_out) | XFRAG_CNT_BIT(steer_in) |		\
	 XFRAG_CNT_BIT(steer_failed) | XFRAG_CNT_BIT(cap_records) |	\
	 XFRAG_CNT_BIT(cap_lost) | XFRAG_CNT_BIT(frags_in_flight) |	\
	 XFRAG_CNT_BIT(dgrams_in_flight) |				\
	 XFRAG_CNT_BIT(handoff_pending) |				\
	 XFRAG_CNT_BIT(bytes_in_flight) | XFRAG_CNT_BIT(mem_in_flight))
#define XFRAG_CAP_DELIVERED	XFRAG_CNT_BIT(deliver_xdp)

/* One record of the xfrag_capture ring buffer. */
struct xfrag_cap_rec {
	__u64 ts_ns;		/* bpf_ktime_get_ns() */
	__u64 moved;		/* XFRAG_CNT_BIT()s of the counters it moved */
	__u32 cpu;
	__u32 ifindex;		/* ingress */
	__u32 len;		/* frame length */
	__u32 caplen;		/* bytes in data[] */
	__u32 verdict;		/* XDP_* (XFRAG_CAP_FRAME) */
	__u32 kind;		/* XFRAG_CAP_FRAME, XFRAG_CAP_SWEPT */
	struct xfrag_key key;	/* XFRAG_CAP_SWEPT: the datagram's */
	__u32 nfrags;		/* XFRAG_CAP_SWEPT: fragments it held */
	__u32 pad;
	__u8 data[XFRAG_CAP_SNAP];
};

/* A record of a fragment's frame; of a datagram the sweeper timed out
 * (no frame: its key, and the fragments it held). */
#define XFRAG_CAP_FRAME		0
#define XFRAG_CAP_SWEPT		1

/* Set by `xfrag attach` once the TC half is attached. */
#define XFRAG_CFG_TC		(1U << 0)
/*
 * Set by `xfrag attach` with the TC half in native mode: a datagram beyond
 * XFRAG_TC_MAX_LEN is reassembled like any other, then TC hands the kernel
 * the complete set of its fragments back to back (bpf_clone_redirect to
 * ingress), so the kernel's reassembler never holds an incomplete one.  Not
 * in skb mode, where generic XDP would see the replayed fragments again.
 */
#define XFRAG_CFG_REPLAY	(1U << 1)

/*
 * Without that flag (the object loaded by xdp-loader, the TC half by tc),
 * XDP counts on the TC half only while it has seen it run on this CPU
 * within this time; TC runs on every ingress packet, so any traffic keeps
 * it fresh.
 */
#define XFRAG_TC_ALIVE_NS	(10ULL * 1000 * 1000 * 1000)

/* ---- XDP -> TC hand-off ---------------------------------------------------
 *
 * When the completing frame cannot grow to the whole datagram, XDP passes it
 * with this record in the XDP metadata area; TC ingress finds the datagram by
 * (cpu, way) and checks the cookie before it rebuilds the skb.
 */
#define XFRAG_META_MAGIC	0x78667267	/* "xfrg" */

struct xfrag_meta {
	__u32 magic;
	__u32 cpu;
	__u32 way;
	__u32 cookie;
};

/* ---- Per-way state (one datagram) ---------------------------------------- */

enum xfrag_way_state {
	XFRAG_WAY_FREE = 0,
	XFRAG_WAY_ACTIVE,	/* collecting fragments */
	XFRAG_WAY_PASS,		/* too big to deliver: fragments go to kernel */
	XFRAG_WAY_HANDOFF,	/* complete, waiting for TC to collect it */
	XFRAG_WAY_COLLECTED,	/* TC on another CPU took it; owner frees */
	XFRAG_WAY_FLUSH,	/* outgrew xfrag: held pieces wait for TC to
				 * replay them, later fragments pass */
	XFRAG_WAY_FLUSHED,	/* replayed by TC on another CPU: the owner
				 * frees its chunks, then it is a PASS record */
};

/*
 * One stored piece of payload: bytes [off8 * 8, off8 * 8 + length) of the
 * datagram, in chunk `chunk`, length xfrag_desc_len().  A fragment larger
 * than a chunk is stored as a run of pieces; all but the first carry
 * XFRAG_DESC_CONT in lenm1.
 *
 * The length is stored less one (a piece holds 1 to XFRAG_CHUNK bytes):
 * read back as (lenm1 & XFRAG_DESC_LEN) + 1 it is at least 1 for the
 * verifier too, which a helper's size argument needs; a stored length
 * checked against 0 is not bounded from below by verifiers before 6.8.
 */
struct xfrag_desc {
	__u32 chunk;
	__u16 off8;		/* offset / 8 (pieces start 8-aligned) */
	__u16 lenm1;		/* length - 1 (XFRAG_DESC_LEN), XFRAG_DESC_CONT */
};

#define XFRAG_DESC_CONT		0x8000
#define XFRAG_DESC_LEN		0x07ff

static inline __u32 xfrag_desc_len(const struct xfrag_desc *d)
{
	return (__u32)(d->lenm1 & XFRAG_DESC_LEN) + 1;
}

#define XFRAG_F_LAST_SEEN	(1U << 0)	/* fragment with MF=0 arrived */
#define XFRAG_F_FIRST_SEEN	(1U << 1)	/* offset-0 fragment arrived */
#define XFRAG_F_DF		(1U << 2)	/* first fragment had DF */
#define XFRAG_F_QUOTA		(1U << 3)	/* counted in xfrag_srcq[srcq] */
#define XFRAG_F_DONE		(1U << 4)	/* pass-through: all bytes went by */
#define XFRAG_F_GUARD		(1U << 5)	/* gslot, gmark valid */

struct xfrag_way {
	struct xfrag_key key;
	__u64 born_ns;		/* first fragment; never extended */
	__u64 touched_ns;	/* last fragment (LRU within the bucket) */
	__u32 cookie;		/* generation, checked by TC */
	__u8 state;		/* enum xfrag_way_state */
	__u8 flags;		/* XFRAG_F_* */
	__u16 nfrags;		/* fragments accepted */
	__u16 ndesc;		/* pieces stored */
	__u16 hdr_len;		/* bytes in hdr[] (first fragment's L3 header) */
	__u32 end;		/* payload length once the last fragment is seen */
	__u32 rcvd;		/* payload bytes stored */
	__u32 max_end;		/* highest end seen so far */
	__u32 nchunks;		/* chunks held */
	__u16 ooo;		/* fragments that arrived out of sequence */
	__u16 srcq;		/* slot of its source in xfrag_srcq */
	__u8 nh_pos;		/* IPv6: hdr[] byte naming the Fragment header */
	__u8 pad;
	__u16 gslot;		/* IPv4: its flow's slot in xfrag_guard */
	__u32 gmark;		/* that slot's count at its last fragment */
	__u8 hdr[XFRAG_HDR_MAX];
	struct xfrag_desc desc[XFRAG_MAX_DESC];
};

/* Bump allocator plus free stack for this CPU's chunks. */
struct xfrag_pcpu {
	__u64 secret[2];	/* SipHash key for bucket selection */
	__u32 next_fresh;	/* chunks never used start here */
	__u32 free_top;		/* entries on the free stack */
	__u32 cookie;		/* last cookie handed out */
	__u32 sweep_armed;	/* XFRAG_SWEEP_PINNED or _UNPINNED once started */
	__u64 tc_seen_ns;	/* TC half last ran on this CPU */
	__u32 room_ok;		/* small frames seen that could grow */
	__u32 room_bad;		/* small frames seen that could not */
	__u32 sweep_next;	/* first bucket of this CPU's next sweep */
	__u32 busy;		/* XDP or TC is running on this CPU's tables */
	__u64 swept_ns;		/* this CPU's table last swept */
};

/* ---- Counters ---------------------------------------------------------------
 *
 * One list drives the BPF struct, the CLI's table and the JSON keys.
 * Kind: C = monotonic counter, G = gauge (current value).
 *
 * Invariants (summed over CPUs):
 *   reasm_reqds == sum of all frag_* outcome counters + frags_in_flight
 *   reasm_oks   == sum of all deliver_* counters + handoff_lost
 *                  + handoff_pending
 * Checkers sum by name prefix, so a new outcome counter joins its sum.
 */
#define XFRAG_COUNTERS(X)						\
	X(reasm_reqds, C, "fragments received (IpReasmReqds)")		\
	X(reasm_oks, C, "datagrams reassembled (IpReasmOKs)")		\
	X(reasm_fails, C, "datagrams discarded, all reasons (IpReasmFails)") \
	X(reasm_timeout, C, "datagrams timed out (IpReasmTimeout)")	\
	X(reasm_overlaps, C, "datagrams discarded on overlap (ReasmOverlaps)") \
	X(deliver_xdp, C, "datagrams rebuilt in the XDP frame")	\
	X(deliver_tc, C, "datagrams rebuilt by TC ingress")		\
	X(deliver_replay, C, "datagrams beyond one skb, replayed to the kernel as a complete set") \
	X(deliver_err, C, "datagrams complete but not deliverable (no room, no TC, TC failed)") \
	X(handoff_lost, C, "datagrams never collected by TC")		\
	X(pass_dgrams, C, "datagrams passed to the kernel untouched (too big to rebuild)") \
	X(pass_no_tc, C, "of which: no TC half, size unknown or beyond the frame") \
	X(reasm_evicted, C, "datagrams evicted to make room (in reasm_fails)") \
	X(pass_evicted, C, "pass-through records evicted to make room") \
	X(pass_too_many, C, "datagrams beyond max-frags handed to the kernel: held fragments replayed, later ones passed") \
	X(flush_lost, C, "of which: held fragments not replayed (TC never came, or failed)") \
	X(replay_frags, C, "fragments TC sent to the kernel in replays (a complete datagram's coalesced, up to 16064 bytes each)") \
	X(bytes_reasm, C, "payload bytes in reassembled datagrams")	\
	X(frag_reasm, C, "fragments: part of a reassembled datagram")	\
	X(frag_passed, C, "fragments: passed to the kernel untouched")	\
	X(frag_flushed, C, "fragments: held, then replayed to the kernel (pass_too_many)") \
	X(frag_dup, C, "fragments: exact duplicate dropped")		\
	X(frag_overlap, C, "fragments: overlapping data (RFC 5722)")	\
	X(frag_dup_changed, C, "fragments: offset and length of one held, other bytes: an overlap (RFC 8200 4.5)") \
	X(frag_timeout, C, "fragments: datagram timed out")		\
	X(frag_refused, C, "fragments: refused, no free way in bucket") \
	X(frag_nomem, C, "fragments: refused, memory budget spent")	\
	X(frag_quota, C, "fragments: refused, source over its quota")	\
	X(frag_bad_header, C, "fragments: invalid IP header")		\
	X(frag_too_long, C, "fragments: datagram beyond 65535 bytes")	\
	X(frag_oversize, C, "fragments: datagram beyond the delivery limit") \
	X(frag_zero_len, C, "fragments: no payload")			\
	X(frag_bad_end, C, "fragments: inconsistent end of datagram")	\
	X(frag_too_many, C, "fragments: too many in one datagram")	\
	X(frag_discarded, C, "fragments: held by a datagram discarded later") \
	X(frag_evicted, C, "fragments: held by a datagram evicted") \
	X(frag_atomic, C, "fragments: IPv6 atomic, passed on (RFC 6946)") \
	X(frag_bad_len, C, "fragments: IPv6 non-last, length not 8k (RFC 8200)") \
	X(frag_bad_chain, C, "fragments: IPv6 first without whole header chain (RFC 7112)") \
	X(ip6_reqds, C, "IPv6 fragments received (in reasm_reqds)")	\
	X(ip6_oks, C, "IPv6 datagrams reassembled (in reasm_oks)")	\
	X(reasm_stale, C, "datagrams ended by the id-wrap guard (in reasm_fails; ipfrag_max_dist)") \
	X(frag_stale, C, "fragments: held by a datagram the id-wrap guard ended") \
	X(steer_out, C, "fragments redirected to their owner CPU (not in reasm_reqds here)") \
	X(steer_in, C, "fragments arrived from another CPU through the cpumap") \
	X(steer_failed, C, "fragments not redirected (refused): processed where they arrived") \
	X(cap_records, C, "capture: records written for xfrag capture") \
	X(cap_lost, C, "capture: records lost (rate limit, ring buffer full)") \
	X(frags_in_flight, G, "fragments held now")			\
	X(dgrams_in_flight, G, "incomplete datagrams held now")	\
	X(handoff_pending, G, "complete datagrams waiting for TC now")	\
	X(bytes_in_flight, G, "payload bytes held now")		\
	X(mem_in_flight, G, "chunk memory held now (bytes)")

#define XFRAG_COUNTER_FIELD(name, kind, help) __u64 name;
struct xfrag_stats {
	XFRAG_COUNTERS(XFRAG_COUNTER_FIELD)
};
#undef XFRAG_COUNTER_FIELD

/* ---- Outcomes ---------------------------------------------------------------
 *
 * Every way the XDP data path ends a fragment (xfrag_fragment(), the rules
 * of bpf/rules.h): the counters it moves (XFRAG_CNT_BIT()s, at most
 * three), the verdict, and whether the datagram held for it is discarded
 * with it (its held fragments then count in frag_discarded, the datagram
 * in reasm_fails).  bpf/outcome.h turns an outcome into counters and a
 * verdict in one place; xfrag(8) lists them.  A new rule is a line here,
 * its check in bpf/rules.h and its test.  Not here: delivery (deliver_*),
 * the id-wrap guard ending a stale datagram (the fragment goes on), and
 * `too-many pass` (xfrag_flush(), a hand-over rather than an end).
 *
 *   X(name, counters, verdict, discard, help)
 */
#define XFRAG_B(name)	XFRAG_CNT_BIT(name)
#define XFRAG_OUTCOMES(X)						\
	X(held, 0, DROP, 0,						\
	  "consumed: held until its datagram completes")		\
	X(bad_header, XFRAG_B(frag_bad_header), DROP, 0,		\
	  "invalid IP header (RFC 791, RFC 8200)")			\
	X(atomic, XFRAG_B(frag_atomic), PASS, 0,			\
	  "IPv6 atomic fragment, handed on with its header (RFC 6946)")	\
	X(bad_chain, XFRAG_B(frag_bad_chain), DROP, 0,			\
	  "IPv6 first fragment without the whole header chain (RFC 8200 4.5, RFC 7112)") \
	X(big_hdr, XFRAG_B(frag_passed), PASS, 0,			\
	  "IPv6 unfragmentable part larger than xfrag stores: the kernel reassembles") \
	X(passed, XFRAG_B(frag_passed), PASS, 0,			\
	  "fragment of a datagram left to the kernel (a pass-through record)") \
	X(pass_new, XFRAG_B(pass_dgrams) | XFRAG_B(frag_passed), PASS, 0, \
	  "first fragment seen of a datagram too big to rebuild: left to the kernel") \
	X(pass_new_no_tc, XFRAG_B(pass_dgrams) | XFRAG_B(pass_no_tc) |	\
	  XFRAG_B(frag_passed), PASS, 0,				\
	  "the same without a TC half: size unknown or beyond the frame") \
	X(too_long_new, XFRAG_B(frag_too_long) | XFRAG_B(reasm_fails),	\
	  DROP, 0,							\
	  "first fragment seen of a datagram beyond 65535 bytes (RFC 791)") \
	X(quota, XFRAG_B(frag_quota), DROP, 0,				\
	  "new datagram of a source over its quota")			\
	X(refused, XFRAG_B(frag_refused), DROP, 0,			\
	  "new datagram, no way of its bucket free or evictable")	\
	X(dup, XFRAG_B(frag_dup), DROP, 0,				\
	  "exact duplicate: dropped, the datagram kept (RFC 8200 4.5)")	\
	X(too_long, XFRAG_B(frag_too_long), DROP, 1,			\
	  "datagram beyond 65535 bytes (RFC 791, RFC 8200)")		\
	X(bad_end, XFRAG_B(frag_bad_end), DROP, 1,			\
	  "end of datagram inconsistent with data held")		\
	X(zero_len, XFRAG_B(frag_zero_len), DROP, 1,			\
	  "fragment without payload")					\
	X(bad_len, XFRAG_B(frag_bad_len), DROP, 1,			\
	  "IPv6 non-last fragment not a multiple of 8 long (RFC 8200 4.5)") \
	X(overlap, XFRAG_B(frag_overlap) | XFRAG_B(reasm_overlaps),	\
	  DROP, 1, "overlaps data held (RFC 5722)")			\
	X(dup_changed, XFRAG_B(frag_dup_changed) | XFRAG_B(reasm_overlaps), \
	  DROP, 1,							\
	  "offset and length of a fragment held, other bytes: an overlap (RFC 8200 4.5)") \
	X(too_many, XFRAG_B(frag_too_many), DROP, 1,			\
	  "more fragments or pieces than xfrag holds (max-frags, too-many drop)") \
	X(oversize, XFRAG_B(frag_oversize), DROP, 1,			\
	  "datagram found too big to rebuild after fragments were held") \
	X(nomem, XFRAG_B(frag_nomem), DROP, 1,				\
	  "memory budget spent, or above the high watermark for a new datagram") \
	X(hdr_lost, XFRAG_B(frag_bad_header), DROP, 1,			\
	  "the first fragment's header could not be kept (cannot happen)")

enum xfrag_outcome {
	XFRAG_O_OK = -1,	/* xfrag_check(): no rule broken */
#define XFRAG_OUTCOME_ENUM(name, counters, verdict, discard, help)	\
	XFRAG_O_##name,
	XFRAG_OUTCOMES(XFRAG_OUTCOME_ENUM)
#undef XFRAG_OUTCOME_ENUM
	XFRAG_O_COUNT
};

/* ---- Pinned map names (under /sys/fs/bpf/xfrag/IFACE/) ------------------ */
#define XFRAG_PIN_ROOT		"/sys/fs/bpf/xfrag"

/* ---- Layouts the hash, the maps and the replay rely on ------------------- */
_Static_assert(sizeof(struct xfrag_key) == 40,
	       "the bucket hash reads the key as five 64-bit words");
_Static_assert(sizeof(struct xfrag_way) <= 32768,
	       "a per-CPU map value is at most 32 KiB");
_Static_assert(XFRAG_CHUNK % 8 == 0,
	       "pieces must start 8-aligned: replayed fragments are 8k long");
_Static_assert(XFRAG_HDR_MAX % 8 == 0 && (XFRAG_HDR_MAX & (XFRAG_HDR_MAX - 1)) == 0,
	       "hdr[] is indexed with a mask");
_Static_assert(sizeof(struct xfrag_stats) % 8 == 0,
	       "the counters are 64-bit words, summed by offset");
_Static_assert(sizeof(struct xfrag_stats) <= 64 * 8,
	       "a capture record names the counters it moved in 64 bits");
_Static_assert((XFRAG_CAP_SNAP & (XFRAG_CAP_SNAP - 1)) == 0,
	       "the snap length is bounded for the verifier with a mask");
_Static_assert(sizeof(struct xfrag_cap_rec) % 8 == 0,
	       "ring buffer records are 8-aligned");
_Static_assert(XFRAG_LOADER_CPUMAP <= XFRAG_MAX_CPUS,
	       "owners are CPUs below the object's cpumap size");

#endif /* XFRAG_H */
