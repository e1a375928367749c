/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xfrag maps: all state is per CPU except the configuration.  Every map is
 * pinned by name under the loader's pin root: `xfrag attach` and
 * `xdp-loader load -p /sys/fs/bpf/xfrag/IFACE` give the same layout.
 */
#ifndef XFRAG_MAPS_H
#define XFRAG_MAPS_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xfrag.h"

/* Table geometry, fixed at load (the loader rewrites these and the sizes). */
const volatile __u32 xfrag_buckets = XFRAG_DEF_BUCKETS;
const volatile __u32 xfrag_ways = XFRAG_DEF_WAYS;
const volatile __u32 xfrag_nchunks = XFRAG_DEF_MEM / XFRAG_CHUNK;
/* Hash secret chosen by the loader (getrandom); 0 = seed per CPU at run. */
const volatile __u64 xfrag_secret[2];
/*
 * 1: hand datagrams to TC with XDP metadata (bpf_xdp_adjust_meta).  The
 * loader sets it where the kernel lets XDP call that helper; some kernels
 * refuse it (seen: a 6.18 build that rejects the helper for every XDP
 * program).  At 0 the verifier drops the call as dead code and TC finds
 * each hand-off by its key, so the object loads everywhere (xdp-loader).
 */
const volatile __u32 xfrag_use_meta;

struct xfrag_chunk {
	__u8 data[XFRAG_CHUNK];
};

/* Datagram table: bucket b holds ways [b * xfrag_ways, (b + 1) * xfrag_ways). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, (XFRAG_DEF_BUCKETS * XFRAG_DEF_WAYS));
	__type(key, __u32);
	__type(value, struct xfrag_way);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xfrag_table SEC(".maps");

/* Payload storage: the per-CPU memory budget, in chunks. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XFRAG_DEF_MEM / XFRAG_CHUNK);
	__type(key, __u32);
	__type(value, struct xfrag_chunk);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xfrag_chunks SEC(".maps");

/* Free stack of chunk indices (entries [0, free_top) are valid). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XFRAG_DEF_MEM / XFRAG_CHUNK);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xfrag_free SEC(".maps");

/* Allocator state and hash secret of each CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xfrag_pcpu);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xfrag_pcpu SEC(".maps");

/* Named counters (bpftool map dump prints them by name). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xfrag_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xfrag_stats SEC(".maps");

/* Run-time tunables; 0 in a field means its built-in default. */
/* Each CPU's sweeper (an ARRAY: timers live in no per-CPU map). */
struct xfrag_sweep {
	struct bpf_timer timer;
	__u64 flags;		/* bpf_timer_start() flags this kernel takes */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XFRAG_MAX_CPUS);
	__type(key, __u32);
	__type(value, struct xfrag_sweep);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xfrag_sweep SEC(".maps");

/* In-flight datagrams per source slot (the quota), per CPU. */
struct xfrag_srcq {
	__u16 n[XFRAG_SRCQ_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xfrag_srcq);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xfrag_srcq SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xfrag_config);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xfrag_config SEC(".maps");

/* One fragment's piece, read from the packet to be compared with a held
 * copy (xfrag_same_bytes()). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xfrag_chunk);
} xfrag_scratch SEC(".maps");

/* Id-wrap guard (include/xfrag.h): IPv4 fragments counted per flow slot. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xfrag_guard);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xfrag_guard SEC(".maps");

/* Steering (include/xfrag.h): owner slot -> CPU id, [0, steer_ncpus). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XFRAG_MAX_CPUS);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xfrag_owners SEC(".maps");

/*
 * CPU id -> that CPU's queue and kthread, running xfrag_owner (or
 * xfrag_owner_nf).  Not pinned: only xfrag_xdp holds it, so detaching
 * xfrag_xdp frees it and stops its kthreads.  Those programs must never
 * use it: cpumap -> entry -> program -> cpumap would keep it alive.
 */
struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	/* The kernel refuses more entries than its NR_CPUS: `xfrag attach`
	 * sizes it to the possible CPUs; as built, XFRAG_LOADER_CPUMAP
	 * (owners for `xfrag steer` in an xdp-loader set-up). */
	__uint(max_entries, XFRAG_LOADER_CPUMAP);
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
} xfrag_cpumap SEC(".maps");

/*
 * `xfrag capture`: records of the fragments that moved a counter of loss
 * (struct xfrag_cap_rec), written only while XFRAG_CFG_CAPTURE is set.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, XFRAG_CAP_RING);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xfrag_capture SEC(".maps");

/* Its settings (struct xfrag_capcfg), written by `xfrag capture`. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xfrag_capcfg);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xfrag_capcfg SEC(".maps");

/* Each CPU's capture state: the counters before the fragment (valid while
 * armed), the rate window, the sampling count. */
struct xfrag_capbuf {
	struct xfrag_stats before;
	__u64 win_start;
	__u32 win_count;
	__u32 seen;
	__u32 armed;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xfrag_capbuf);
} xfrag_capbuf SEC(".maps");

/*
 * What a bpf_loop callback carries from one iteration to the next lives
 * here, in map memory, never in the context struct on the caller's stack.
 * Verifiers before 6.7 check a callback once, with the state of its first
 * call: a carried value on the stack is then taken to keep its starting
 * value, and code that depends on a later one is removed as dead (found
 * on 6.1: an exact duplicate of an earlier fragment became an overlap,
 * test dup_exact_earlier).  The verifier assumes nothing of map memory.
 * Each user sets its part before its loop and reads it after; XDP alone
 * uses it, and one XDP program runs at a time on a CPU.
 */
struct xfrag_loopvar {
	struct {
		__u64 touch;
		__s64 score;
		__s32 idx, warm;
	} victim;		/* xfrag_victim_one(): the best victim so far */
	struct {
		__s32 freew;	/* first reusable way */
	} scan;			/* xfrag_scan_one() */
	struct {
		__u32 cur_s, cur_e;	/* stored fragment being walked */
		__u32 overlap, exact;
		__u32 cur_i, exact_i;	/* its first piece; the exact one's */
	} fit;			/* xfrag_fit_one() */
	struct {
		__u32 differs;
	} cmp;			/* xfrag_cmp_one() */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xfrag_loopvar);
} xfrag_loopvar SEC(".maps");

static __always_inline struct xfrag_loopvar *xfrag_lv(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&xfrag_loopvar, &zero);
}

static __always_inline struct xfrag_stats *xfrag_st(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&xfrag_stats, &zero);
}

#endif /* XFRAG_MAPS_H */
