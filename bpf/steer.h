/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Steering: a fragment not on its owner CPU is redirected there through
 * xfrag_cpumap (include/xfrag.h explains the owner).
 */
#ifndef XFRAG_STEER_H
#define XFRAG_STEER_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xfrag.h"
#include "maps.h"
#include "parse.h"
#include "table.h"

/*
 * Steering: is this fragment's owner another CPU?  Then redirect it there
 * through xfrag_cpumap and return XDP_REDIRECT; else -1, process it here.
 * The owner hashes the key without its id (include/xfrag.h), under the
 * steering key of the config: the same on every CPU.  A refused redirect (no cpumap
 * entry) is counted and the fragment processed where it is.
 */
static __always_inline int xfrag_steer(struct xfrag_pkt *p)
{
	struct xfrag_config *cp;
	struct xfrag_stats *st;
	__u32 zero = 0, n, slot, *cpu;
	__u64 h;

	cp = bpf_map_lookup_elem(&xfrag_config, &zero);
	if (!cp || !(cp->flags & XFRAG_CFG_STEER))
		return -1;
	n = cp->steer_ncpus;
	if (!n || n > XFRAG_MAX_CPUS)
		return -1;
	h = xfrag_flow_hash(&p->key, cp->steer_key[0], cp->steer_key[1]);
	slot = (__u32)(((h >> 32) * n) >> 32);
	cpu = bpf_map_lookup_elem(&xfrag_owners, &slot);
	if (!cpu || *cpu == bpf_get_smp_processor_id())
		return -1;
	st = xfrag_st();
	if (!st)
		return -1;
	if (bpf_redirect_map(&xfrag_cpumap, *cpu, 0) == XDP_REDIRECT) {
		st->steer_out++;
		return XDP_REDIRECT;
	}
	st->steer_failed++;
	return -1;
}

#endif /* XFRAG_STEER_H */
