// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fuzz_prog: mutations. */
#include "fuzz_prog.h"

static void fix_v4(__u8 *f, __u32 len, const struct layout *L)
{
	__u8 *ip = f + L->l3;
	__u32 hl;

	if (L->fam != 4 || len < L->l3 + 20)
		return;
	hl = (ip[0] & 0xf) * 4;
	if (hl >= 20 && L->l3 + hl <= len)
		fr_ip4_csum(ip);
}

/*
 * Put `k` random extension headers in front of the IPv6 chain: more than
 * the walk follows (a loop), one claiming 2 KB, one cut by the frame end.
 */
static __u32 mut_chain(__u8 *f, __u32 len, struct layout *L)
{
	static const __u8 types[] = { 0, 60, 43, 51, 135, 139, 140, 253, 254,
				      44, 60, 60 };
	__u8 chain[2048], *ip = f + L->l3, *nhp, first;
	__u32 n = 0, k, mode = rnd(4);

	if (len < L->l3 + 40)
		return len;
	first = ip[6];
	nhp = &ip[6];
	k = mode == 0 ? range(9, 30) : range(1, 8);
	for (__u32 i = 0; i < k; i++) {
		__u8 t = chance(85) ? types[rnd(sizeof(types))] : rnd(256);
		__u32 units = chance(90) ? rnd(2) : rnd(256), hl;

		hl = t == 51 ? (units + 2) * 4 : (units + 1) * 8;
		if (n + hl > sizeof(chain)) {
			units = 0;
			hl = 8;
		}
		if (n + hl > sizeof(chain))
			break;
		*nhp = t;
		rnd_fill(chain + n, hl);
		chain[n + 1] = units;
		if (mode == 1 && i == k - 1)
			chain[n + 1] = 255;	/* claims more than is there */
		nhp = &chain[n];
		n += hl;
	}
	*nhp = first;
	if (chance(50) && len + n <= xdp_in_max) {
		memmove(ip + 40 + n, ip + 40, len - L->l3 - 40);
		memcpy(ip + 40, chain, n);
		len += n;
		if (L->fh)
			L->fh += n;
		if (chance(60))
			put16(ip + 4, len - L->l3 - 40);
	} else {
		/* over what was there (the chain may run past the frame) */
		__u32 room = len - L->l3 - 40;

		memcpy(ip + 40, chain, n < room ? n : room);
		L->fh = 0;
	}
	if (mode == 3 && len > L->l3 + 48)
		len = range(L->l3 + 40, len);	/* cut inside the chain */
	return len;
}

/* Re-tag with 0-4 VLAN tags. */
static __u32 mut_vlan(__u8 *f, __u32 len, struct layout *L)
{
	__u8 tags[16];
	__u32 depth = rnd(5), old = L->l3 - 14, n = depth * 4;
	__u16 type = get16(f + L->l3 - 2);

	if (len - old + n > xdp_in_max)
		return len;
	for (__u32 i = 0; i < depth; i++) {
		static const __u16 tp[] = { ETH_P_8021Q_, ETH_P_8021AD_, 0x9100 };

		put16(tags + 4 * i, tp[rnd(3)]);
		put16(tags + 4 * i + 2, rnd(0x10000));
	}
	memmove(f + 12 + n + 2, f + L->l3, len - L->l3);
	memcpy(f + 12, tags, n);
	put16(f + 12 + n, type);
	len = len - old + n;
	if (L->fh)
		L->fh = L->fh - L->l3 + 14 + n;
	L->l3 = 14 + n;
	return len;
}

__u32 mutate(__u8 *f, __u32 len, struct layout *L)
{
	int nm = chance(70) ? 1 : range(2, 4), fixcsum = chance(80);

	for (int m = 0; m < nm; m++) {
		__u8 *ip = f + L->l3;
		int have_ip = len >= L->l3 + 20;
		__u32 v;

		switch (rnd(15)) {
		case 0:		/* truncate */
			len = chance(50) ? rnd(len + 1) : range(L->l3, len);
			break;
		case 1:		/* flip bytes, mostly in the headers */
			for (int k = 0, n = range(1, 8); k < n && len; k++) {
				__u32 at = chance(70) ?
					   rnd(len < L->l3 + 80 ? len : L->l3 + 80) :
					   rnd(len);
				f[at] ^= range(1, 255);
			}
			break;
		case 2:		/* IHL 0-15 */
			if (have_ip && L->fam == 4)
				ip[0] = (ip[0] & 0xf0) | rnd(16);
			break;
		case 3:		/* total / payload length */
			if (!have_ip)
				break;
			v = len - L->l3;
			switch (rnd(7)) {
			case 0: v = 0; break;
			case 1: v = rnd(L->fam == 4 ? 24 : 16); break;
			case 2: v += range(1, 16); break;
			case 3: v -= v > 16 ? range(1, 16) : 0; break;
			case 4: v = 65535; break;
			case 5: v = rnd(65536); break;
			default: v += range(1, 3000); break;
			}
			if (L->fam == 4)
				put16(ip + 2, v);
			else
				put16(ip + 4, v >= 40 ? v - 40 : v);
			break;
		case 4:		/* offsets near the end */
			if (L->fam == 4 && have_ip)
				put16(ip + 6, (get16(ip + 6) & 0xe000) |
					      (0x1fff - rnd(chance(50) ? 4 : 64)));
			else if (L->fh && L->fh + 8 <= len)
				put16(f + L->fh + 2, (0xfff8 - 8 * rnd(64)) |
						     (f[L->fh + 3] & 1));
			break;
		case 5:		/* offset 0, MF, no payload */
			if (L->fam == 4 && have_ip) {
				__u32 hl = (ip[0] & 0xf) * 4;

				if (hl < 20 || L->l3 + hl > len)
					break;
				put16(ip + 2, hl);
				put16(ip + 6, F_MF);
				len = L->l3 + hl + (chance(30) ? rnd(40) : 0);
			} else if (L->fh && L->fh + 8 <= len) {
				put16(f + L->fh + 2, 1);
				put16(ip + 4, L->fh + 8 - L->l3 - 40);
				len = L->fh + 8 + (chance(30) ? rnd(40) : 0);
			}
			break;
		case 6:		/* IPv6 chains: loops, past the end, huge */
			if (L->fam == 6)
				len = mut_chain(f, len, L);
			break;
		case 7:		/* VLAN stacks 0-4 */
			if (len >= L->l3)
				len = mut_vlan(f, len, L);
			break;
		case 8:		/* another EtherType */
			if (len >= L->l3) {
				static const __u16 et[] = { ETH_P_IP_, ETH_P_IPV6_,
							    0x0806, 0x88cc,
							    ETH_P_8021Q_ };
				put16(f + L->l3 - 2, chance(80) ?
				      et[rnd(sizeof(et) / 2)] : rnd(0x10000));
			}
			break;
		case 9:		/* IP version */
			if (have_ip)
				ip[0] = (rnd(16) << 4) | (ip[0] & 0xf);
			break;
		case 10:	/* padding, up to a jumbo frame */
			v = chance(70) ? range(1, 200) : rnd(xdp_in_max);
			if (len + v > xdp_in_max)
				v = xdp_in_max - len;
			rnd_fill(f + len, v);
			len += v;
			break;
		case 11:	/* a short frame */
			len = rnd(65);
			break;
		case 12:	/* a random header field */
			if (have_ip) {
				__u32 at = L->l3 + rnd(L->fam == 4 ? 20 : 48);

				if (at + 2 <= len)
					put16(f + at, rnd(0x10000));
			}
			break;
		case 13:	/* flag bits */
			if (L->fam == 4 && have_ip)
				ip[6] ^= 0x80 >> rnd(3);
			else if (L->fh && L->fh + 8 <= len)
				f[L->fh + 3] ^= 1 << rnd(3);
			break;
		default:	/* IPv6 fragment header: next header, id */
			if (L->fh && L->fh + 8 <= len)
				f[L->fh + rnd(8)] = rnd(256);
			break;
		}
	}
	if (fixcsum)
		fix_v4(f, len, L);
	return len;
}

/* Anything xfrag might key on as a clean datagram? */
int names_clean(const __u8 *f, __u32 len)
{
	return memmem(f, len, clean4_dst, 4) || memmem(f, len, clean6_dst, 16);
}
