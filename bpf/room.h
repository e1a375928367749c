/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Room probing: how large this device's XDP frames can grow (learnt per
 * CPU from the frames themselves), and whether a datagram, as far as it is
 * known, fits a delivery path at all.
 */
#ifndef XFRAG_ROOM_H
#define XFRAG_ROOM_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xfrag.h"
#include "maps.h"
#include "parse.h"

/* Is the datagram, as far as known, too big for any delivery path? */
static __always_inline int xfrag_too_big(struct xfrag_pkt *p, __u32 hl,
					 __u32 max_end, __u32 limit)
{
	__u32 end = p->offset + p->len;

	if (max_end > end)
		end = max_end;
	if (p->hint > hl + end)
		return p->l3off + p->hint > limit;
	return p->l3off + hl + end > limit;
}

/* Can this frame grow to `size` bytes?  Leaves it as it was. */
static __always_inline int xfrag_room(struct xdp_md *ctx, __u32 size)
{
	int grow = (int)size - (int)bpf_xdp_get_buff_len(ctx);

	if (grow <= 0)
		return 1;
	if (bpf_xdp_adjust_tail(ctx, grow))
		return 0;
	bpf_xdp_adjust_tail(ctx, -grow);
	return 1;
}

/*
 * Without the TC half: learn whether small frames on this CPU have the room
 * of a full page (XFRAG_ROOM_SMALL, XFRAG_ROOM_PROOF).  Cost only until
 * decided.
 */
static __always_inline void xfrag_room_learn(struct xdp_md *ctx,
					     struct xfrag_pcpu *pc)
{
	if (pc->room_bad || pc->room_ok >= XFRAG_ROOM_PROOF ||
	    bpf_xdp_get_buff_len(ctx) > XFRAG_ROOM_SMALL)
		return;
	if (xfrag_room(ctx, XFRAG_XDP_MAX_LEN))
		pc->room_ok++;
	else
		pc->room_bad = 1;
}

/*
 * Without the TC half a datagram can only be rebuilt in the XDP frame, so
 * XDP takes it only when it is sure to deliver it: frames on this CPU are
 * known to have room whatever their size, the datagram's size is known from
 * the fragment in hand (the UDP length of a first fragment, the end of a
 * last one), and this frame can grow to it.  Anything else is never
 * consumed: the kernel gets all of it.
 */
static __always_inline int xfrag_xdp_can_hold(struct xdp_md *ctx,
					      struct xfrag_pcpu *pc,
					      struct xfrag_pkt *p, __u32 hl)
{
	__u32 size;

	if (pc->room_bad || pc->room_ok < XFRAG_ROOM_PROOF)
		return 0;
	if (p->hint)
		size = p->l3off + p->hint;
	else if (!p->more)
		size = p->l3off + hl + p->offset + p->len;
	else
		return 0;
	return size <= XFRAG_XDP_MAX_LEN && xfrag_room(ctx, size);
}

#endif /* XFRAG_ROOM_H */
