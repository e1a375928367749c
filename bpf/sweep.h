/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The sweeper: a per-CPU timer that ends timed-out datagrams in slices of
 * the table, and the busy mark the data path holds around its updates.
 */
#ifndef XFRAG_SWEEP_H
#define XFRAG_SWEEP_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xfrag.h"
#include "maps.h"
#include "table.h"
#include "capture.h"

#define CLOCK_MONOTONIC	1

/* ---- The sweeper ------------------------------------------------------------ */

/*
 * The data path marks this CPU's tables busy while it runs.  In the
 * kernel's receive path XDP, TC and the timer's softirq never interrupt
 * one another on a CPU, but a program run from a system call
 * (BPF_PROG_TEST_RUN runs with only preemption off) can be interrupted by
 * the sweeper's softirq halfway through an update of the same allocator
 * and table: the sweeper then skips that tick (fuzz_prog lost 3 chunks
 * so, once, in the 6.1 guest).  The compiler barriers keep the mark
 * around every access to the tables.
 */
static __always_inline struct xfrag_pcpu *xfrag_busy_enter(void)
{
	struct xfrag_pcpu *pc;
	__u32 zero = 0;

	pc = bpf_map_lookup_elem(&xfrag_pcpu, &zero);
	if (pc)
		*(volatile __u32 *)&pc->busy = 1;
	asm volatile("" ::: "memory");
	return pc;
}

static __always_inline void xfrag_busy_leave(struct xfrag_pcpu *pc)
{
	asm volatile("" ::: "memory");
	if (pc)
		*(volatile __u32 *)&pc->busy = 0;
}

struct xfrag_sweep_ctx {
	__u64 now, timeout;
	struct xfrag_pcpu *pc;
	struct xfrag_stats *st;
	__u32 first;		/* first way index of the slice */
	__u32 nways;		/* ways in the table */
	__u32 cap;		/* a capture runs: timed-out datagrams recorded */
};


static long xfrag_sweep_one(__u32 i, void *data)
{
	struct xfrag_sweep_ctx *c = data;
	__u32 idx = c->first + i;
	struct xfrag_way *x;

	if (idx >= c->nways)
		return 1;
	x = bpf_map_lookup_elem(&xfrag_table, &idx);
	if (!x)
		return 1;
	if (c->cap && x->state == XFRAG_WAY_ACTIVE &&
	    c->now - x->born_ns >= c->timeout)
		xfrag_cap_swept(x, c->st, c->now);
	xfrag_way_expire(x, c->pc, c->st, c->now, c->timeout);
	return 0;
}

/*
 * Sweeps a slice of the table of the CPU it runs on: with
 * BPF_F_TIMER_CPU_PIN that is the CPU that armed it; without (before 6.7)
 * it may be another, whose table it then sweeps (XFRAG_SWEEP_STALE_NS).
 * Per-CPU maps are only ever written by their own CPU.
 */
static int xfrag_sweep_cb(void *map, __u32 *key, struct xfrag_sweep *sw)
{
	struct xfrag_sweep_ctx c = {};
	struct xfrag_config *cp;
	__u32 zero = 0, per, nb = xfrag_buckets, next;

	cp = bpf_map_lookup_elem(&xfrag_config, &zero);
	c.pc = bpf_map_lookup_elem(&xfrag_pcpu, &zero);
	c.st = bpf_map_lookup_elem(&xfrag_stats, &zero);
	if (cp && c.pc && c.st && nb && !c.pc->busy) {
		/* A tenth of the table a tick, at most XFRAG_SWEEP_MAX ways. */
		per = nb / 10 + 1;
		if (per * xfrag_ways > XFRAG_SWEEP_MAX)
			per = XFRAG_SWEEP_MAX / xfrag_ways ?: 1;
		next = c.pc->sweep_next;
		if (next >= nb)
			next = 0;
		c.now = bpf_ktime_get_coarse_ns();
		c.timeout = (__u64)(cp->timeout_ms ?: XFRAG_DEF_TIMEOUT_MS) *
			    1000000ULL;
		c.first = next * xfrag_ways;
		c.nways = nb * xfrag_ways;
		c.cap = cp->flags & XFRAG_CFG_CAPTURE;
		bpf_loop(per * xfrag_ways, xfrag_sweep_one, &c, 0);
		c.pc->sweep_next = next + per;
		c.pc->swept_ns = c.now;
	}
	bpf_timer_start(&sw->timer, XFRAG_SWEEP_NS, sw->flags);
	return 0;
}

/*
 * Arm this CPU's sweeper on its first fragment, and again when its table
 * went unswept too long (a timer that moved away, before 6.7).  The timer
 * is pinned to this CPU where the kernel can (BPF_F_TIMER_CPU_PIN, 6.7);
 * elsewhere it is started without, and pc->sweep_armed says which.
 */
static __noinline void xfrag_sweep_arm(struct xfrag_pcpu *pc)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct xfrag_sweep *sw;

	if (!pc)
		return;
	pc->swept_ns = bpf_ktime_get_coarse_ns();
	if (cpu >= XFRAG_MAX_CPUS) {
		pc->sweep_armed = XFRAG_SWEEP_UNPINNED;
		return;		/* lazy expiry still reclaims */
	}
	sw = bpf_map_lookup_elem(&xfrag_sweep, &cpu);
	if (!sw)
		return;
	/* -EBUSY when armed before: the timer is kept, started again here. */
	bpf_timer_init(&sw->timer, &xfrag_sweep, CLOCK_MONOTONIC);
	if (bpf_timer_set_callback(&sw->timer, xfrag_sweep_cb))
		return;
	sw->flags = BPF_F_TIMER_CPU_PIN;
	if (!bpf_timer_start(&sw->timer, XFRAG_SWEEP_NS, BPF_F_TIMER_CPU_PIN)) {
		pc->sweep_armed = XFRAG_SWEEP_PINNED;
		return;
	}
	sw->flags = 0;
	bpf_timer_start(&sw->timer, XFRAG_SWEEP_NS, 0);
	/* Started unpinned, or not at all: tried again after
	 * XFRAG_SWEEP_STALE_NS, never on every fragment. */
	pc->sweep_armed = XFRAG_SWEEP_UNPINNED;
}

#endif /* XFRAG_SWEEP_H */
