// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fuzz_prog: datagrams, fragments and streams. */
#include "fuzz_prog.h"

/* ---- Frames -------------------------------------------------------------- */

/* Random MACs (locally administered), `nvlan` tags (up to 2), EtherType. */
static __u32 mk_l2(__u8 *p, int nvlan, __u16 type)
{
	__u8 dst[6] = { 0x02 }, src[6] = { 0x02 };
	struct fr_vlan tag[2];

	for (int i = 1; i < 6; i++) {
		dst[i] = rnd(256);
		src[i] = rnd(256);
	}
	for (int i = 0; i < nvlan; i++) {
		tag[i].tpid = i == 0 && nvlan > 1 ? ETH_P_8021AD_ : ETH_P_8021Q_;
		tag[i].tci = rnd(0x10000);
	}
	return fr_eth(p, dst, src, tag, nvlan, type);
}

/* IPv4 options of `n` bytes (a multiple of 4): a plausible mix. */
static void mk_opts(__u8 *p, __u32 n)
{
	__u32 i = 0;

	while (i < n) {
		__u32 left = n - i, l;

		switch (rnd(4)) {
		case 0:
			p[i++] = 1;			/* NOP */
			break;
		case 1:
			if (left < 4) {
				p[i++] = 1;
				break;
			}
			memcpy(p + i, (const __u8[]){ 0x94, 4, 0, 0 }, 4);
			i += 4;				/* Router Alert */
			break;
		default:
			if (left < 2) {
				p[i++] = 0;		/* EOL */
				break;
			}
			l = range(2, left > 12 ? 12 : left);
			p[i] = 0x80 | range(20, 30);	/* copied, unknown */
			p[i + 1] = l;
			rnd_fill(p + i + 2, l - 2);
			i += l;
			break;
		}
	}
}

/* An upper-layer header (and payload) of `n` bytes at p, protocol proto. */
static void mk_upper(__u8 *p, __u32 n, __u8 proto, int lie)
{
	rnd_fill(p, n);
	if (proto == 17 && n >= 8) {
		put16(p + 4, lie ? rnd(0x10000) : n > 0xffff ? 0 : n);
		put16(p + 6, 0);
	}
}

/*
 * A random datagram.  Clean ones get a unique key in the clean address
 * space; mutant ones a random key in theirs.
 */
void mk_dgram(struct dgram *d, int mutant)
{
	__u64 n = dg_counter++;
	int nvlan = rnd(100) < 60 ? 0 : rnd(100) < 70 ? 1 : 2;
	__u32 r, maxp, up_off = 0;
	__u8 proto;
	int lie = !gen_plain && chance(mutant ? 20 : 3);

	d->fam = chance(50) ? 4 : 6;
	d->df = chance(10);
	d->l2len = mk_l2(d->l2, nvlan, d->fam == 4 ? ETH_P_IP_ : ETH_P_IPV6_);
	r = rnd(100);
	proto = r < 70 ? 17 : r < 80 ? 6 : r < 88 ? (d->fam == 4 ? 1 : 58) :
		r < 92 ? 59 : 0;
	while (!proto || proto == 135 || proto == 139 || proto == 140)
		proto = range(100, 250);	/* no extension header type */
	d->proto = proto;

	if (d->fam == 4) {
		__u8 *ip = d->hdr;
		__u32 optlen = chance(75) ? 0 : 4 * range(1, 10);

		d->hlen = 20 + optlen;
		d->hlen_later = chance(50) ? 20 : d->hlen;
		memset(ip, 0, 20);
		ip[0] = 0x40 | (d->hlen / 4);
		ip[1] = rnd(256);
		ip[8] = range(1, 255);
		ip[9] = proto;
		if (!mutant) {
			__u64 hi = n >> 16;

			put16(ip + 4, n & 0xffff);
			ip[12] = 10;
			ip[13] = (rnd(4) << 6) | ((hi >> 16) & 0x3f);
			ip[14] = hi >> 8;
			ip[15] = hi;
			memcpy(ip + 16, clean4_dst, 4);
		} else {
			put16(ip + 4, rnd(0x10000));
			ip[12] = 172;
			ip[13] = 16;
			ip[14] = rnd(4);
			ip[15] = rnd(256);
			memcpy(ip + 16, mut4_dst, 4);
		}
		mk_opts(ip + 20, optlen);
		d->first_min = proto == 6 ? 24 : 8;
		maxp = 65535 - d->hlen;
	} else {
		static const __u8 unfrag[] = { 60, 43, 60 };
		__u8 *ip = d->hdr, *nhp = ip + 6;
		__u32 next = 0, o = 40, fext = 0;

		if (chance(40))
			next = chance(85) ? range(1, 3) : range(4, 7);
		memset(ip, 0, 40);
		ip[0] = 0x60 | rnd(16);
		ip[1] = rnd(256);
		ip[2] = rnd(256);
		ip[3] = rnd(256);
		ip[7] = range(1, 255);
		if (!mutant) {
			ip[8] = 0x20;
			ip[9] = 0x01;
			ip[10] = 0x0d;
			ip[11] = 0xb8;
			ip[13] = rnd(4);
			put32(ip + 16, n >> 32);
			put32(ip + 20, (__u32)n);
			memcpy(ip + 24, clean6_dst, 16);
		} else {
			ip[8] = 0xfd;
			rnd_fill(ip + 9, 15);
			memcpy(ip + 24, mut6_dst, 16);
		}
		for (__u32 i = 0; i < next; i++) {
			__u8 type = i == 0 && chance(50) ? 0 :
				    unfrag[rnd(sizeof(unfrag))];
			__u32 units = chance(80) ? 0 : range(1, 3);
			__u8 *h = ip + o;

			*nhp = type;
			memset(h, 0, 8 * (units + 1));
			h[1] = units;
			if (type == 43) {
				h[2] = rnd(2) ? 4 : 3;	/* routing type */
				h[3] = 0;		/* segments left */
				rnd_fill(h + 4, 4 + 8 * units);
			} else {
				h[2] = 1;		/* PadN */
				h[3] = 8 * (units + 1) - 4;
			}
			nhp = h;
			o += 8 * (units + 1);
		}
		d->hlen = o;
		d->nhpos = nhp - ip;
		/* Fragmentable extension headers before the upper layer. */
		d->fnh = proto;
		if (chance(15)) {
			fext = 8 * range(1, 3);
			d->fnh = chance(70) ? 60 : 51;
		}
		*nhp = d->fnh;
		up_off = fext;
		d->first_min = fext + (proto == 6 ? 20 : proto == 17 ||
				       proto == 58 ? 8 : 1);
		maxp = 65535 - (d->hlen - 40);
		d->hlen_later = d->hlen;
	}

	/*
	 * Clean variations whose result is still known: other L2 headers
	 * with the same key (MACs, PCP/DEI, a priority tag for none, an inner
	 * tag or not), other TTLs after the first fragment, and (IPv6) another
	 * unfragmentable part after the first (RFC 8200 4.5: the first
	 * fragment's is the datagram's).
	 */
	d->nl2x = 0;
	if (chance(15)) {
		__u16 outer = nvlan ? get16(d->l2 + 14) & 0x0fff : 0;

		d->nl2x = range(1, 3);
		for (__u32 v = 0; v < d->nl2x; v++) {
			__u8 *p = d->l2x[v];
			int n = !outer ? (chance(50) ? 0 : 1) : range(1, 2);

			d->l2xlen[v] = mk_l2(p, n, d->fam == 4 ? ETH_P_IP_ :
							       ETH_P_IPV6_);
			if (n)
				put16(p + 14, (rnd(16) << 12) | outer);
			if (n && chance(50))
				put16(p + 12, chance(50) ? ETH_P_8021Q_ :
							   ETH_P_8021AD_);
		}
	}
	d->ttl_vary = d->fam == 4 && chance(10);
	d->alt6 = 0;
	if (d->fam == 6 && chance(10)) {
		__u32 units = rnd(3);
		__u8 *h;

		/* the first's IPv6 header, then one destination options
		 * header of its own in front of the Fragment header */
		memcpy(d->hdr2, d->hdr, 40);
		d->hdr2[6] = 60;
		h = d->hdr2 + 40;
		memset(h, 0, 8 * (units + 1));
		h[1] = units;
		h[2] = 1;
		h[3] = 8 * (units + 1) - 4;
		d->hlen2 = 40 + 8 * (units + 1);
		d->nhpos2 = 40;
		d->alt6 = 1;
	}

	/* Size of the fragmentable part. */
	r = rnd(100);
	if (r < 10)
		d->plen = range(16, 600);
	else if (r < 55)
		d->plen = range(600, 3400);
	else if (r < 85)
		d->plen = range(3400, 15900);
	else
		d->plen = range(16000, 65400);
	if (d->plen > maxp)
		d->plen = maxp;
	if (d->plen < ((d->first_min + 7) & ~7U) + 8)
		d->plen = ((d->first_min + 7) & ~7U) + 8;

	mk_upper(d->pl + up_off, d->plen - up_off, proto, lie);
	if (up_off) {
		__u8 *h = d->pl;

		memset(h, 0, up_off);
		h[0] = proto;
		if (d->fnh == 51) {
			h[1] = up_off / 4 - 2;	/* AH: 4-byte units less 2 */
			rnd_fill(h + 4, up_off - 4);
		} else {
			h[1] = up_off / 8 - 1;
			h[2] = 1;		/* PadN */
			h[3] = up_off - 4;
		}
	}

	/* The unfragmented frame. */
	memcpy(d->orig, d->l2, d->l2len);
	memcpy(d->orig + d->l2len, d->hdr, d->hlen);
	if (d->fam == 4) {
		__u8 *ip = d->orig + d->l2len;

		put16(ip + 2, d->hlen + d->plen);
		put16(ip + 6, d->df ? F_DF : 0);
		fr_ip4_csum(ip);
	} else {
		put16(d->orig + d->l2len + 4, d->hlen - 40 + d->plen);
	}
	memcpy(d->orig + d->l2len + d->hlen, d->pl, d->plen);
	d->olen = d->l2len + d->hlen + d->plen;
}

__u32 l2len_of(const struct dgram *d, int l2v)
{
	return l2v ? d->l2xlen[l2v - 1] : d->l2len;
}

/* Bytes in front of the payload of a fragment at `off`. */
__u32 hdr_room(const struct dgram *d, int l2v, __u32 off)
{
	if (d->fam == 4)
		return l2len_of(d, l2v) + (off ? d->hlen_later : d->hlen);
	return l2len_of(d, l2v) + (off && d->alt6 ? d->hlen2 : d->hlen) + 8;
}

/*
 * Fragment [off, off + len) of d with L2 header l2v, then `pad` bytes of
 * Ethernet padding.
 */
__u32 mk_frag(__u8 *f, const struct dgram *d, int l2v, __u32 off,
		     __u32 len, int mf, __u32 pad)
{
	__u32 o = l2len_of(d, l2v);

	memcpy(f, l2v ? d->l2x[l2v - 1] : d->l2, o);
	if (d->fam == 4) {
		__u32 hl = off == 0 ? d->hlen : d->hlen_later;
		__u8 *ip = f + o;

		memcpy(ip, d->hdr, hl);
		ip[0] = 0x40 | (hl / 4);
		put16(ip + 2, hl + len);
		put16(ip + 6, (off >> 3) | (mf ? F_MF : 0) | (d->df ? F_DF : 0));
		if (off && d->ttl_vary)
			ip[8] = range(1, 255);
		fr_ip4_csum(ip);
		memcpy(ip + hl, d->pl + off, len);
		o += hl + len;
	} else {
		int alt = off && d->alt6;
		__u32 hl = alt ? d->hlen2 : d->hlen;
		__u8 *ip = f + o, *fh = ip + hl;

		memcpy(ip, alt ? d->hdr2 : d->hdr, hl);
		put16(ip + 4, hl - 40 + 8 + len);
		ip[alt ? d->nhpos2 : d->nhpos] = FR_PROTO_FRAG6;
		/* The identification: see below. */
		fr_frag6(fh, d->fnh, off, mf, get32(ip + 20));
		memcpy(fh + 8, d->pl + off, len);
		o += hl + 8 + len;
	}
	rnd_fill(f + o, pad);
	return o + pad;
}

/*
 * The IPv6 identification: the low 32 bits of the source (unique for clean
 * datagrams), so mk_frag() needs no more state.
 */

static void shuffle_pieces(struct piece *p, int n)
{
	for (int i = n - 1; i > 0; i--) {
		int j = rnd(i + 1);
		struct piece t = p[i];

		p[i] = p[j];
		p[j] = t;
	}
}

static void insert_piece(struct stream *s, struct piece x)
{
	int at;

	if (s->n >= MAX_PIECES)
		return;
	at = rnd(s->n + 1);
	memmove(&s->p[at + 1], &s->p[at], (s->n - at) * sizeof(s->p[0]));
	s->p[at] = x;
	s->n++;
}

static __u32 frag_room(void)
{
	/* payload bytes one frame may carry, whatever its headers */
	__u32 room = xdp_in_max - 22 - 128 - 8;

	return room & ~7U;
}

void new_stream(struct stream *s, int mutant, int mut_pct)
{
	struct dgram *d = &s->d;
	__u32 fm, cuts[MAX_PIECES], nc = 0, room, r;
	int mode = rnd(100);

	memset(s->p, 0, sizeof(s->p));
	s->mutant = mutant;
	s->mut_pct = mut_pct;
	s->n = s->next = 0;
	s->live = 1;
	s->expect = 0;
	mk_dgram(d, mutant);
	fm = (d->first_min + 7) & ~7U;
	room = frag_room();

	/* Cut points, multiples of 8 in (0, plen). */
	if (mode < 40) {
		__u32 fs;

		r = rnd(100);
		fs = r < 50 ? (1500 - d->hlen - (d->fam == 6 ? 8 : 0)) & ~7U :
		     r < 80 ? 8 * range(1, 1200) : 8 * range(1, 50);
		if (fs > room)
			fs = room;
		for (__u32 o = fs; o < d->plen && nc < MAX_PIECES - 40; o += fs)
			cuts[nc++] = o;
	} else if (mode < 85) {
		__u32 k = range(1, 40), slots = (d->plen - 1) / 8;

		for (__u32 i = 0; i < k && slots; i++)
			cuts[nc++] = 8 * range(1, slots);
	} else {
		/* tiny pieces: often more than max_frags */
		__u32 fs = 8 * range(1, 8);

		for (__u32 o = fs; o < d->plen && nc < 100; o += fs)
			cuts[nc++] = o;
	}
	/* sort, unique, first piece holds first_min, no piece beyond room */
	for (__u32 i = 1; i < nc; i++)
		for (__u32 j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
			__u32 t = cuts[j];

			cuts[j] = cuts[j - 1];
			cuts[j - 1] = t;
		}
	{
		__u32 m = 0, prev = 0;

		for (__u32 i = 0; i < nc; i++) {
			if (cuts[i] <= prev || cuts[i] < fm || cuts[i] >= d->plen)
				continue;
			while (cuts[i] - prev > room && m < MAX_PIECES - 40) {
				prev += room;
				cuts[m++] = prev;
			}
			cuts[m++] = prev = cuts[i];
		}
		while (d->plen - prev > room && m < MAX_PIECES - 40) {
			prev += room;
			cuts[m++] = prev;
		}
		nc = m;
		if (nc == 0 && d->plen > fm)
			cuts[nc++] = fm;
	}
	for (__u32 i = 0; i <= nc; i++) {
		__u32 a = i ? cuts[i - 1] : 0, b = i < nc ? cuts[i] : d->plen;

		s->p[s->n].off = a;
		s->p[s->n].len = b - a;
		s->p[s->n].mf = i < nc;
		s->n++;
	}

	/* IPv4: sometimes a non-last piece carries 1-7 bytes more (trimmed). */
	if (d->fam == 4 && chance(8)) {
		int i = rnd(s->n);

		if (s->p[i].mf) {
			__u32 extra = range(1, 7);

			if (s->p[i].off + s->p[i].len + extra <= d->plen)
				s->p[i].len += extra;
		}
	}

	/* Order. */
	r = rnd(100);
	if (r < 15) {
		for (int i = 0; i < s->n / 2; i++) {
			struct piece t = s->p[i];

			s->p[i] = s->p[s->n - 1 - i];
			s->p[s->n - 1 - i] = t;
		}
	} else if (r < 55) {
		shuffle_pieces(s->p, s->n);
	} else if (r < 75) {
		for (int k = 0, m = range(1, 3); k < m && s->n > 1; k++) {
			int i = rnd(s->n - 1);
			struct piece t = s->p[i];

			s->p[i] = s->p[i + 1];
			s->p[i + 1] = t;
		}
	}

	/* Exact duplicates and overlapping pieces, all with the right bytes. */
	if (gen_plain)
		;
	else if (chance(20))
		for (int k = 0, m = range(1, 3); k < m; k++)
			insert_piece(s, s->p[rnd(s->n)]);
	if (!gen_plain && chance(8)) {
		__u32 slots = d->plen / 8, a, b;
		struct piece x = { 0 };

		a = 8 * rnd(slots);
		b = a + 8 * range(1, 64);
		if (b > d->plen || chance(20))
			b = d->plen;
		if (a == 0 && b < fm)
			b = fm;
		if (b - a <= room) {
			x.off = a;
			x.len = b - a;
			x.mf = b < d->plen;
			insert_piece(s, x);
		}
	}
	/* Ethernet padding, L2 headers. */
	for (int i = 0; i < s->n; i++) {
		s->p[i].l2v = d->nl2x && chance(60) ? range(1, d->nl2x) : 0;
		if (chance(10))
			s->p[i].pad = range(1, 64);
		else if (chance(1))
			s->p[i].pad = rnd(4096);
	}
}

/*
 * Completeness rounds (TC, default geometry and memory, at most 8
 * datagrams at a time, nothing else sent, no time-out while sending): the
 * table and the memory cannot run out, so
 *  A: a datagram within the delivery limit (XFRAG_TC_MAX_LEN, 64
 *     fragments, 64 pieces, IPv6 unfragmentable part within
 *     XFRAG_HDR_MAX) is delivered exactly once, on its last fragment; all
 *     fragments before are dropped (consumed);
 *  B: a UDP datagram beyond it whose first fragment comes first is passed
 *     to the kernel untouched, every fragment;
 *  C: an IPv6 datagram whose unfragmentable part exceeds XFRAG_HDR_MAX is
 *     passed untouched, every fragment.
 * Returns the class, 0 for none of them.
 */
char classify(struct stream *s)
{
	const struct dgram *d = &s->d;
	__u32 l2min = d->l2len, l2max = d->l2len, descs = 0;
	__u32 hmax = d->alt6 && d->hlen2 > d->hlen ? d->hlen2 : d->hlen;

	for (__u32 v = 0; v < d->nl2x; v++) {
		if (d->l2xlen[v] < l2min)
			l2min = d->l2xlen[v];
		if (d->l2xlen[v] > l2max)
			l2max = d->l2xlen[v];
	}
	for (int i = 0; i < s->n; i++)
		descs += (s->p[i].len + XFRAG_CHUNK - 1) / XFRAG_CHUNK;
	if (d->fam == 6 && d->hlen > XFRAG_HDR_MAX)
		return d->alt6 ? 0 : 'C';
	if (l2max + hmax + d->plen <= XFRAG_TC_MAX_LEN && s->n <= 64 &&
	    descs <= XFRAG_MAX_DESC)
		return 'A';
	if (d->proto == 17 && l2min + d->hlen + d->plen > XFRAG_TC_MAX_LEN) {
		/* its first fragment first: the UDP length tells */
		for (int i = 0; i < s->n; i++)
			if (s->p[i].off == 0) {
				struct piece t = s->p[i];

				memmove(&s->p[1], &s->p[0], i * sizeof(s->p[0]));
				s->p[0] = t;
				return 'B';
			}
	}
	return 0;
}
