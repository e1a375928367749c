/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The counters for the C test programs (test_prog, fuzz_prog): their
 * indices, names and kinds from include/xfrag.h's one list, and the
 * invariants every snapshot must keep (include/xfrag.h, "Counters"),
 * written once.  The shell and Python tests (tests/lib.sh, corpus_test.py,
 * soak.py) check snapshots of `xfrag stats` with the same function, by
 * build/xfcheck (tests/xfcheck.c).
 */
#ifndef XFRAG_TEST_COUNTERS_H
#define XFRAG_TEST_COUNTERS_H

#include <stdio.h>
#include <string.h>
#include <linux/types.h>
#include "xfrag.h"

enum {
#define X(name, kind, help) C_##name,
	XFRAG_COUNTERS(X)
#undef X
	C_NUM
};

static const char *const cname[C_NUM] = {
#define X(name, kind, help) #name,
	XFRAG_COUNTERS(X)
#undef X
};

static const char ckind[C_NUM] = {
#define X(name, kind, help) #kind[0],
	XFRAG_COUNTERS(X)
#undef X
};

_Static_assert(sizeof(struct xfrag_stats) == C_NUM * sizeof(__u64),
	       "xfrag_stats is not a flat array of __u64");

/*
 * The invariants of counters v (summed over CPUs, in list order): NULL
 * when they hold, else what is wrong (in msg).
 *   reasm_reqds == sum(frag_*) + frags_in_flight
 *   reasm_oks   == sum(deliver_*) + handoff_lost + handoff_pending
 * and no gauge below zero, bytes held within the memory held, no more
 * datagrams than fragments held, reasm_fails at least its named parts,
 * at least two fragments for every datagram reassembled, and the IPv6
 * and "of which" counters within their totals.
 */
static inline const char *xf_counter_invariants(const __u64 *v, char *msg,
						size_t len)
{
	__u64 frag = v[C_frags_in_flight];
	__u64 oks = v[C_handoff_lost] + v[C_handoff_pending];

	for (int i = 0; i < C_NUM; i++) {
		if (!strncmp(cname[i], "frag_", 5))
			frag += v[i];
		if (!strncmp(cname[i], "deliver_", 8))
			oks += v[i];
		if (ckind[i] == 'G' && v[i] >> 62) {
			snprintf(msg, len, "gauge %s negative (%lld)",
				 cname[i], (long long)v[i]);
			return msg;
		}
	}
	if (v[C_reasm_reqds] != frag)
		snprintf(msg, len, "invariant: reasm_reqds %llu != frag_* + "
			 "frags_in_flight %llu",
			 (unsigned long long)v[C_reasm_reqds],
			 (unsigned long long)frag);
	else if (v[C_reasm_oks] != oks)
		snprintf(msg, len, "invariant: reasm_oks %llu != deliver_* + "
			 "handoff_* %llu", (unsigned long long)v[C_reasm_oks],
			 (unsigned long long)oks);
	else if (v[C_bytes_in_flight] > v[C_mem_in_flight])
		snprintf(msg, len, "bytes_in_flight %llu > mem_in_flight %llu",
			 (unsigned long long)v[C_bytes_in_flight],
			 (unsigned long long)v[C_mem_in_flight]);
	else if (v[C_dgrams_in_flight] > v[C_frags_in_flight])
		snprintf(msg, len, "dgrams_in_flight %llu > frags_in_flight "
			 "%llu", (unsigned long long)v[C_dgrams_in_flight],
			 (unsigned long long)v[C_frags_in_flight]);
	else if (v[C_reasm_fails] < v[C_reasm_timeout] +
				    v[C_reasm_overlaps] + v[C_reasm_evicted])
		snprintf(msg, len, "reasm_fails %llu < timeout %llu + "
			 "overlaps %llu + evicted %llu",
			 (unsigned long long)v[C_reasm_fails],
			 (unsigned long long)v[C_reasm_timeout],
			 (unsigned long long)v[C_reasm_overlaps],
			 (unsigned long long)v[C_reasm_evicted]);
	else if (v[C_frag_reasm] < 2 * v[C_reasm_oks])
		snprintf(msg, len, "frag_reasm %llu < 2 x reasm_oks %llu",
			 (unsigned long long)v[C_frag_reasm],
			 (unsigned long long)v[C_reasm_oks]);
	else if (v[C_ip6_reqds] > v[C_reasm_reqds] ||
		 v[C_ip6_oks] > v[C_reasm_oks] ||
		 v[C_pass_no_tc] > v[C_pass_dgrams])
		snprintf(msg, len, "ip6_reqds %llu ip6_oks %llu pass_no_tc "
			 "%llu beyond their totals",
			 (unsigned long long)v[C_ip6_reqds],
			 (unsigned long long)v[C_ip6_oks],
			 (unsigned long long)v[C_pass_no_tc]);
	else
		return NULL;
	return msg;
}

#endif /* XFRAG_TEST_COUNTERS_H */
