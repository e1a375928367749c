/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Outcomes (XFRAG_OUTCOMES, include/xfrag.h): the one place where the end
 * of a fragment in the XDP data path becomes counters and a verdict.
 */
#ifndef XFRAG_OUTCOME_H
#define XFRAG_OUTCOME_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "xfrag.h"
#include "maps.h"
#include "table.h"

/*
 * Add one to each counter whose bit is set (at most three).  `bits` is a
 * constant in every arm of xfrag_outcome(), so this folds to increments
 * at fixed offsets of the stats.
 */
static __always_inline void xfrag_bump(struct xfrag_stats *st, __u64 bits)
{
	__u64 *c = (__u64 *)st;

	if (bits) {
		c[__builtin_ctzll(bits)]++;
		bits &= bits - 1;
	}
	if (bits) {
		c[__builtin_ctzll(bits)]++;
		bits &= bits - 1;
	}
	if (bits)
		c[__builtin_ctzll(bits)]++;
}

/*
 * End fragment p with outcome o: its counters, the datagram in w
 * discarded where the outcome says so, and the verdict.
 */
static __always_inline int xfrag_outcome(int o, struct xfrag_stats *st,
					 struct xfrag_way *w,
					 struct xfrag_pcpu *pc)
{
	switch (o) {
#define XFRAG_OUTCOME_CASE(name, counters, verdict, discard, help)	\
	case XFRAG_O_##name:						\
		xfrag_bump(st, counters);				\
		if (discard && w)					\
			xfrag_way_discard(w, pc, st);			\
		return XDP_##verdict;
		XFRAG_OUTCOMES(XFRAG_OUTCOME_CASE)
#undef XFRAG_OUTCOME_CASE
	}
	return XDP_DROP;	/* cannot happen: every outcome is listed */
}

#endif /* XFRAG_OUTCOME_H */
