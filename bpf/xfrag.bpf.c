// SPDX-License-Identifier: GPL-2.0
/*
 * xfrag: IP fragment reassembly in XDP, with a TC-ingress half that
 * finishes datagrams too large for the XDP frame.  One object, shared maps.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <xdp/xdp_helpers.h>

#include "xfrag.h"
#include "maps.h"
#include "parse.h"
#include "table.h"
#include "capture.h"
#include "reasm.h"
#include "steer.h"
#include "tc.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * Under the libxdp dispatcher xfrag runs before the operator's programs
 * (lower priority runs first) and hands on every frame it passes, so they
 * see reassembled datagrams instead of fragments.
 */
struct {
	__uint(priority, 5);
	__uint(XDP_PASS, 1);
} XDP_RUN_CONFIG(xfrag_xdp);


/*
 * The XDP data path.  `entry` is a compile-time constant: XFRAG_ON_DEVICE
 * steers fragments to their owner; XFRAG_ON_OWNER (the cpumap entry
 * points) runs on the owner and never redirects, so no fragment is
 * redirected twice and those programs never reference xfrag_cpumap.
 */
#define XFRAG_ON_DEVICE	0
#define XFRAG_ON_OWNER	1

static __always_inline int xfrag_xdp_run(struct xdp_md *ctx, const int entry)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct xfrag_pkt p;
	struct xfrag_pcpu *pc;
	__u32 l3off = 0;
	__u16 vlan = 0;
	int r;

	if (entry == XFRAG_ON_OWNER) {
		struct xfrag_stats *st = xfrag_st();

		if (st)
			st->steer_in++;
	}
	switch (xfrag_parse_l2(data, data_end, &l3off, &vlan)) {
	case ETH_P_IP:
		r = xfrag_parse_ip4(ctx, data, data_end, l3off, vlan, &p);
		break;
	case ETH_P_IPV6:
		r = xfrag_parse_ip6(ctx, &p);
		break;
	default:
		return XDP_PASS;
	}
	if (r == XFRAG_P_NOT_FRAG)
		return XDP_PASS;
	if (entry == XFRAG_ON_DEVICE && r == XFRAG_P_FRAG) {
		int v = xfrag_steer(&p);

		if (v >= 0)
			return v;
	}
	pc = xfrag_busy_enter();
	/* The flag is read again after the run rather than kept: the XDP
	 * program's stack has no 8 bytes to spare (6.1 counts 512 over its
	 * deepest call chain); a capture that begins during the run finds
	 * xfrag_cap_pre() did not arm it. */
	if (xfrag_cap_on())
		xfrag_cap_pre();
	r = xfrag_fragment(ctx, &p, r);
	if (xfrag_cap_on())
		xfrag_cap_post(ctx, r);
	xfrag_busy_leave(pc);
	return r;
}

SEC("xdp.frags")
int xfrag_xdp(struct xdp_md *ctx)
{
	return xfrag_xdp_run(ctx, XFRAG_ON_DEVICE);
}

/*
 * The cpumap entry points: fragments steered to their owner.  A cpumap
 * takes its program's multi-buffer setting from the program that
 * redirects into it: xfrag_owner where xfrag_xdp runs as its own
 * program (frags), xfrag_owner_nf under a dispatcher that loaded it
 * without (libxdp on 6.1).  `xfrag attach` loads the one that fits.
 */
SEC("xdp.frags/cpumap")
int xfrag_owner(struct xdp_md *ctx)
{
	return xfrag_xdp_run(ctx, XFRAG_ON_OWNER);
}

SEC("xdp/cpumap")
int xfrag_owner_nf(struct xdp_md *ctx)
{
	return xfrag_xdp_run(ctx, XFRAG_ON_OWNER);
}

SEC("tc")
int xfrag_tc(struct __sk_buff *skb)
{
	struct xfrag_pcpu *pc = xfrag_busy_enter();
	int r = xfrag_tc_run(skb);

	xfrag_busy_leave(pc);
	return r;
}
