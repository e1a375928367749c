// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * diffgen: the generator, sender and checker of the differential test
 * (tests/diff_test.sh): the same fragment sequences go to a receiver with
 * xfrag and to one without, and both must deliver the same datagrams to L4
 * except where xfrag's documented policy differs on purpose.
 *
 *   diffgen --seed S --batch B --print
 *       the manifest of batch B (what --send sends), nothing sent
 *   diffgen --seed S --batch B --send --ifx IF --dmac-x MAC
 *           --ifk IF --dmac-k MAC [--manifest FILE] [--gap-us U]
 *           [--spread N]   (frame s of the batch from CPU s mod N: every
 *                           datagram's fragments arrive on several CPUs)
 *       send batch B to both receivers: every frame on IF x, then the same
 *       frame on IF k (only the MAC addresses differ), in the same order,
 *       between a begin and an end marker
 *   diffgen --seed S --batch B --check --xrecv F --krecv F
 *           --xstats0 F --xstats1 F
 *       compare what the two receivers (tests/diffrecv.c) delivered for
 *       batch B; xstats0/1 are xfrag's counters ("key value" lines) before
 *       and after the batch.  Prints "cat NAME N" for each named policy
 *       difference and "FAIL ..." lines; exit 1 on any failure.
 *
 * A batch is regenerated from (seed, batch) alone, so --seed replays it
 * exactly and the checker knows everything the sender sent.
 *
 * Every datagram is UDP (valid checksum) to XD_PORT from source port
 * XD_SPORT_BASE + index; its data is xd_fill() of (seed, batch, index).
 * IPv4 and IPv6 (hop-by-hop, destination options and routing headers with
 * segments left 0 before the Fragment header), sizes from 8 to 65535
 * bytes, fragment sizes multiples of 8 (the last one any), in order,
 * reversed, shuffled or last first, datagrams interleaved, and mutations:
 * missing fragments, exact duplicates, partial / contained / containing
 * overlaps (same or other bytes), ragged non-last fragments (1-7 bytes
 * more than a multiple of 8), zero-length fragments, fragments beyond
 * 65535 bytes, last fragments with another end, whole resends, and copies
 * on another VLAN.  "Other bytes" keep the UDP header and checksum valid
 * (16-bit words swapped), so whichever copy wins reaches the socket and
 * the receiver tells which one it was.  IPv4 first fragments may carry
 * options (NOPs); IPv6 may carry destination options after the Fragment
 * header too.  802.1Q tags: this kernel has no VLAN devices
 * (CONFIG_VLAN_8021Q off), so tagged frames carry VID 0 (802.1p priority
 * tags, delivered on the parent interface) and random PCP bits; copies on
 * VID 100 must never reach L4 on either side.  IPv4 ids and IPv6 ids are
 * the same for index i in every batch (ids reused across batches).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <linux/types.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "xfrag.h"
#include "diffcommon.h"
#include "frame.h"

#define MTU		9000	/* of every veth in the test */
#define MAX_DG		64	/* datagrams in a batch */
#define MAX_DG_FR	2048	/* frames of one datagram, extras included */
#define MAX_FRAMES	1000	/* frames in a batch (markers excluded) */
#define MAX_ORIG	300	/* original fragments of one datagram */
#define MAX_EXT		3

/* Addresses (tests/diff_test.sh gives the receivers XD_DST*). */
static const char *const src4[] = { "10.98.0.1", "10.98.0.3" };
static const char *const src6[] = { "fd98::1", "fd98::3" };
#define DST4	"10.98.0.2"
#define DST6	"fd98::2"
#define NOISE_VID	100

enum kind {
	K_ORIG,		/* a fragment of the plan */
	K_DUP,		/* exact copy of one sent before */
	K_PART,		/* partial overlap with one sent before */
	K_IN,		/* lies inside one sent before */
	K_OUT,		/* contains one sent before and more */
	K_RAGGED,	/* a non-last original, 1-7 bytes longer */
	K_FIX,		/* the ragged one again, right length */
	K_ZERO,		/* no payload */
	K_RESEND,	/* the whole datagram again */
	K_NOISE,	/* copy on VLAN NOISE_VID, other bytes */
	K_POD,		/* ends beyond 65535 bytes (ping of death) */
	K_BADEND,	/* a last fragment with another end, or data past it */
	K_NKINDS,
};

static const char *const kind_name[K_NKINDS] = {
	"orig", "dup", "part", "in", "out", "ragged", "fix", "zero",
	"resend", "noise", "pod", "badend",
};

struct fr {
	uint32_t off, len;
	uint8_t mf, kind, corrupt;
	int32_t tci;		/* -1: untagged, else the 802.1Q TCI */
};

struct dg {
	uint32_t idx;
	int fam;		/* 4 or 6 */
	int src;		/* index into src4 / src6 */
	uint32_t id;
	uint32_t dlen;		/* UDP data */
	uint32_t flen;		/* fragmentable part: [post] UDP header, data */
	uint32_t hdr;		/* L3 header of the rebuilt datagram */
	uint8_t ext[512];	/* IPv6 extension headers before Fragment */
	uint32_t extlen;
	uint32_t postlen;	/* IPv6 destination options after Fragment */
	uint32_t optlen;	/* IPv4 options (NOPs) in the first fragment */
	uint8_t nh0;		/* next header in the IPv6 header */
	char extdesc[64];
	const char *order, *tagmode;
	char fsize[32];
	uint8_t *l4;		/* flen bytes: [post], UDP header and data */
	struct fr fr[MAX_DG_FR];	/* in this datagram's send order */
	uint32_t nfr, norig, nmissing;
	uint32_t kinds;		/* 1 << kind of every frame */
	int tagged;		/* some frame has a (VID 0) tag */
};

struct batch {
	uint64_t seed;
	uint32_t b, n, nframes;
	struct dg *d;
	struct { uint16_t d, f; } seq[MAX_FRAMES];
};

/* ---- Random numbers -------------------------------------------------------- */

static uint64_t rng;

static uint64_t rnext(void)
{
	rng += 0x9e3779b97f4a7c15ULL;
	return xd_mix(rng);
}

/* Uniform in [0, n). */
static uint32_t rnd(uint32_t n)
{
	return n ? (uint32_t)(rnext() % n) : 0;
}

/* True with probability permille / 1000. */
static int chance(uint32_t permille)
{
	return rnd(1000) < permille;
}

/* ---- Generator ------------------------------------------------------------- */

static void addr_of(const struct dg *d, uint8_t *s, uint8_t *t)
{
	if (d->fam == 4) {
		inet_pton(AF_INET, src4[d->src], s);
		inet_pton(AF_INET, DST4, t);
	} else {
		inet_pton(AF_INET6, src6[d->src], s);
		inet_pton(AF_INET6, DST6, t);
	}
}

/* UDP header and data, checksum included. */
static void build_l4(struct dg *d, uint64_t seed, uint32_t batch)
{
	uint8_t s[16], t[16], *p;
	uint32_t l4len = 8 + d->dlen, sport = XD_SPORT_BASE + d->idx;

	d->l4 = calloc(1, d->flen);
	if (!d->l4) {
		perror("diffgen: calloc");
		exit(1);
	}
	if (d->postlen) {
		/* Destination options after the Fragment header: one
		 * experimental "skip" option (or PadN) filling it. */
		p = d->l4;
		p[0] = 17;
		p[1] = d->postlen / 8 - 1;
		p[2] = d->postlen == 8 ? 1 : 0x1e;
		p[3] = d->postlen - 4;
	}
	p = d->l4 + d->postlen;
	xd_fill(p + 8, d->dlen, seed, batch, d->idx);
	fr_udp(p, sport, XD_PORT, l4len);
	addr_of(d, s, t);
	put16(p + 6, fr_udp_csum(sum16(p, l4len, fr_pseudo(d->fam == 6, s, t,
							   17, l4len))));
}

/*
 * IPv6 extension headers before the Fragment header, in RFC 8200 order.
 * Options headers of 8 bytes hold one PadN; longer ones one option of the
 * experimental type 0x1e (RFC 4727; "skip if unknown"), since Linux
 * refuses PadN over 7 bytes.  Routing: type 0 or 253, segments left 0.
 */
static void gen_ext(struct dg *d)
{
	static const uint8_t types[MAX_EXT] = { 0, 60, 43 };
	static const char *const names[MAX_EXT] = { "hbh", "dst", "rt" };
	uint8_t *nhp = &d->nh0;
	int want = 0, big = chance(60);
	size_t dl = 0;

	d->extlen = 0;
	d->extdesc[0] = 0;
	if (chance(350))
		want = 1 + rnd(7);	/* bit mask over hbh, dst, rt */
	for (int e = 0; e < MAX_EXT; e++) {
		uint8_t *h = d->ext + d->extlen;
		uint32_t len = 8;

		if (!(want & (1 << e)))
			continue;
		if (e < 2 && (big || chance(150)))
			len = 8 * (1 + rnd(big ? 24 : 4));
		*nhp = types[e];
		memset(h, 0, len);
		h[1] = len / 8 - 1;
		if (e == 2) {
			h[2] = chance(500) ? 0 : 253;
			h[3] = 0;	/* segments left */
		} else if (len == 8) {
			h[2] = 1;	/* PadN */
			h[3] = 4;
		} else {
			h[2] = 0x1e;
			h[3] = len - 4;
		}
		nhp = &h[0];
		d->extlen += len;
		dl += snprintf(d->extdesc + dl, sizeof(d->extdesc) - dl,
			       "%s%s%u", dl ? "," : "", names[e], len);
	}
	*nhp = 44;
	if (chance(100)) {
		d->postlen = 8 * (1 + rnd(4));
		snprintf(d->extdesc + dl, sizeof(d->extdesc) - dl,
			 "%sfrag,dst%u", dl ? "," : "", d->postlen);
	} else if (!d->extlen) {
		snprintf(d->extdesc, sizeof(d->extdesc), "-");
	}
}

/* UDP data length: realistic sizes mostly, the extremes too. */
static uint32_t gen_dlen(const struct dg *d)
{
	uint32_t maxd = 65535 - d->hdr - d->postlen - 8 + (d->fam == 6 ? 40 : 0);
	/* Around xfrag's delivery limit (README: Delivery, 3.) */
	uint32_t edge = XFRAG_TC_MAX_LEN - 14 - d->hdr - d->postlen - 8;
	uint32_t r = rnd(1000);

	if (r < 60)
		return rnd(40);
	if (r < 380)
		return 500 + rnd(2600);
	if (r < 560)
		return 3100 + rnd(6000);
	if (r < 640)
		return edge - 24 + rnd(48);
	if (r < 760)
		return 9100 + rnd(9000);
	if (r < 860)
		return 18100 + rnd(14000);
	if (r < 970)
		return 32100 + rnd(maxd - 32100 + 1);
	if (r < 990)
		return maxd - rnd(2);
	return r & 1;
}

/* The plan: original fragments in datagram order. */
static uint32_t gen_plan(struct dg *d, struct fr *o)
{
	uint32_t l3 = d->fam == 4 ? 20 + d->optlen : 40 + d->extlen + 8;
	uint32_t smax = (MTU - l3) & ~7U, s, n = 0, off = 0, r = rnd(1000);
	uint32_t smin = ((d->flen + MAX_ORIG - 1) / MAX_ORIG + 7) & ~7U;
	int each = 0;

	if (r < 420) {
		static const uint32_t mtus[] = { 1500, 1500, 1500, 1280, 576,
						 4000, 9000 };
		uint32_t m = mtus[rnd(sizeof(mtus) / sizeof(mtus[0]))];

		s = (m - l3) & ~7U;
		snprintf(d->fsize, sizeof(d->fsize), "mtu%u", m);
	} else if (r < 640) {
		s = 8 * (1 + rnd(smax / 8));
		snprintf(d->fsize, sizeof(d->fsize), "fixed%u", s);
	} else if (r < 760) {
		s = 8 * (1 + rnd(8));
		/* Mostly within max-frags (64): more is a named difference. */
		if (chance(600) && s < ((d->flen + 59) / 60 + 7) / 8 * 8)
			s = ((d->flen + 59) / 60 + 7) / 8 * 8;
		snprintf(d->fsize, sizeof(d->fsize), "tiny%u", s);
	} else {
		s = 0;
		each = 1;
		snprintf(d->fsize, sizeof(d->fsize), "random");
	}
	if (s && s < smin) {
		s = smin;
		snprintf(d->fsize, sizeof(d->fsize), "fixed%u", s);
	}
	if (s && s < d->postlen + 8 && !chance(100))
		s = d->postlen + 8;
	/* Two fragments at least (one in 2 %: IPv4 unfragmented, IPv6
	 * atomic fragment). */
	if (s >= d->flen && d->flen > 8 && !chance(20)) {
		s = ((d->flen / 2) + 7) & ~7U;
		snprintf(d->fsize, sizeof(d->fsize), "half%u", s);
	}
	do {
		uint32_t len = s;

		if (each) {
			len = chance(300) ? 8 * (1 + rnd(16)) :
					    8 * (1 + rnd(smax / 8));
			if (len < smin)
				len = smin;
			if (!off && len >= d->flen && d->flen > 8 &&
			    !chance(20))
				len = ((d->flen / 2) + 7) & ~7U;
		}
		if (len > d->flen - off)
			len = d->flen - off;
		o[n].off = off;
		o[n].len = len;
		o[n].mf = off + len < d->flen;
		o[n].kind = K_ORIG;
		o[n].corrupt = 0;
		o[n].tci = -1;
		off += len;
		n++;
	} while (off < d->flen && n < MAX_ORIG);
	if (off < d->flen) {	/* cannot happen: smin bounds the count */
		fprintf(stderr, "diffgen: plan too long\n");
		exit(1);
	}
	return n;
}

/* Insert f into d's list at position pos. */
static void ins(struct dg *d, uint32_t pos, struct fr f)
{
	if (d->nfr >= MAX_DG_FR)
		return;
	if (pos > d->nfr)
		pos = d->nfr;
	memmove(&d->fr[pos + 1], &d->fr[pos], (d->nfr - pos) * sizeof(f));
	d->fr[pos] = f;
	d->nfr++;
}

/* Position after pos, at random. */
static uint32_t after(const struct dg *d, uint32_t pos)
{
	return pos + 1 + rnd(d->nfr - pos);
}

/* Where an extra made from the fragment at pos goes: after it, or (one in
 * five) anywhere, so that it may come first. */
static uint32_t extra_pos(const struct dg *d, uint32_t pos)
{
	return chance(200) ? rnd(d->nfr + 1) : after(d, pos);
}

/* A random original still in the list (its position), or -1. */
static int pick_orig(const struct dg *d)
{
	uint32_t cand[MAX_DG_FR], n = 0;

	for (uint32_t i = 0; i < d->nfr; i++)
		if (d->fr[i].kind == K_ORIG)
			cand[n++] = i;
	return n ? (int)cand[rnd(n)] : -1;
}

static struct fr extra(const struct dg *d, uint32_t off, uint32_t end,
		       uint8_t kind)
{
	struct fr f = { .off = off, .len = end - off, .kind = kind,
			.mf = end < d->flen, .tci = -1 };

	if (kind != K_RESEND && kind != K_FIX)
		f.corrupt = chance(500);
	return f;
}

static void gen_mutations(struct dg *d)
{
	int p;

	/* Ragged: a non-last fragment 1-7 bytes longer (the next one's bytes);
	 * IPv4 trims it, IPv6 refuses it.  Half the time the right one
	 * follows. */
	if (chance(50) && (p = pick_orig(d)) >= 0 && d->fr[p].mf) {
		struct fr *f = &d->fr[p];
		uint32_t room = d->flen - (f->off + f->len), k = 1 + rnd(7);

		if (room > k) {
			struct fr fix = *f;

			f->len += k;
			f->kind = K_RAGGED;
			if (chance(500)) {
				fix.kind = K_FIX;
				ins(d, after(d, p), fix);
			}
		}
	}
	/* Missing fragments. */
	if (d->nfr > 1 && chance(80)) {
		int k = chance(250) ? 2 : 1;

		while (k-- > 0 && d->nfr > 1 && (p = pick_orig(d)) >= 0) {
			memmove(&d->fr[p], &d->fr[p + 1],
				(d->nfr - p - 1) * sizeof(d->fr[0]));
			d->nfr--;
			d->nmissing++;
		}
	}
	/* Exact duplicates. */
	if (chance(100)) {
		int k = 1 + (chance(200) ? rnd(3) : 0);

		while (k-- > 0 && (p = pick_orig(d)) >= 0) {
			struct fr f = d->fr[p];

			f.kind = K_DUP;
			f.corrupt = chance(500);
			ins(d, extra_pos(d, p), f);
		}
	}
	/* Partial overlap: starts inside one fragment, ends past it (or
	 * starts before it and ends inside). */
	if (chance(50) && (p = pick_orig(d)) >= 0) {
		struct fr f = d->fr[p];
		uint32_t e = f.off + f.len, s, t;

		if (e < d->flen && f.len >= 8) {
			s = f.off + 8 * rnd(f.len / 8);
			t = e + 8 * (1 + rnd(4));
			if (t > d->flen)
				t = d->flen;
			if (s > f.off || t < d->flen)
				ins(d, extra_pos(d, p), extra(d, s, t, K_PART));
		} else if (f.off >= 8 && f.len >= 16) {
			s = f.off - 8 * (1 + rnd(f.off / 8 < 4 ? f.off / 8 : 4));
			t = f.off + 8 * (1 + rnd(f.len / 8 - 1));
			ins(d, extra_pos(d, p), extra(d, s, t, K_PART));
		}
	}
	/* Contained: inside one fragment, not all of it. */
	if (chance(60) && (p = pick_orig(d)) >= 0 && d->fr[p].len >= 16) {
		struct fr f = d->fr[p];
		uint32_t s = f.off + 8 * rnd(f.len / 8), e;

		if (s == f.off)
			e = s + 8 * (1 + rnd((f.len - 1) / 8));
		else
			e = chance(300) ? f.off + f.len :
					  s + 8 * (1 + rnd((f.off + f.len - s) / 8));
		if (e > f.off + f.len)
			e = f.off + f.len;
		if (e > s && !(s == f.off && e == f.off + f.len) &&
		    ((e - s) % 8 == 0 || e == d->flen))
			ins(d, extra_pos(d, p), extra(d, s, e, K_IN));
	}
	/* Containing: all of one fragment and more. */
	if (chance(30) && (p = pick_orig(d)) >= 0) {
		struct fr f = d->fr[p];
		uint32_t s = f.off, e = f.off + f.len;
		uint32_t back = rnd(3), fwd = rnd(3);

		s = s >= 8 * back ? s - 8 * back : 0;
		if (e < d->flen)
			e = e + 8 * fwd > d->flen ? d->flen : e + 8 * fwd;
		if (s != f.off || e != f.off + f.len)
			ins(d, extra_pos(d, p), extra(d, s, e, K_OUT));
	}
	/* Zero-length fragment. */
	if (chance(20) && (p = pick_orig(d)) >= 0) {
		struct fr z = extra(d, d->fr[p].off, d->fr[p].off, K_ZERO);

		z.mf = 1;
		ins(d, rnd(d->nfr + 1), z);
	}
	/* Ping of death: a fragment ending beyond 65535 bytes. */
	if (chance(10)) {
		uint32_t off = 65528 - 8 * rnd(4);
		struct fr f = { .off = off, .len = 16 + 8 * rnd(6),
				.mf = chance(500), .kind = K_POD,
				.corrupt = 1, .tci = -1 };

		ins(d, rnd(d->nfr + 1), f);
	}
	/* A last fragment with another end, or data past the end. */
	if (chance(20) && (p = pick_orig(d)) >= 0) {
		struct fr f = d->fr[p];

		f.kind = K_BADEND;
		f.corrupt = 1;
		if (!f.mf) {
			if (f.len > 8 && chance(500))
				f.len -= 8;
			else
				f.len += 8;
		} else if (chance(500)) {
			f.mf = 0;
		} else {
			f.off = d->flen & ~7U;
			f.len = 16;
		}
		ins(d, extra_pos(d, p), f);
	}
	/* The same fragments on another VLAN, other bytes: never delivered. */
	if (chance(40)) {
		int k = 1 + rnd(3);

		while (k-- > 0 && (p = pick_orig(d)) >= 0) {
			struct fr f = d->fr[p];

			f.kind = K_NOISE;
			f.corrupt = 1;
			f.tci = (int32_t)((rnd(8) << 13) | NOISE_VID);
			ins(d, rnd(d->nfr + 1), f);
		}
	}
	/* The whole datagram again, after the first copy. */
	if (chance(30)) {
		uint32_t n = d->nfr;

		for (uint32_t i = 0; i < n; i++) {
			struct fr f = d->fr[i];

			if (f.kind != K_ORIG && f.kind != K_RAGGED)
				continue;
			f.kind = K_RESEND;	/* ragged ones as they were */
			f.corrupt = 0;
			ins(d, d->nfr, f);
		}
	}
}

static void gen_order(struct dg *d)
{
	uint32_t n = d->nfr, r = rnd(1000);
	struct fr t;

	if (r < 350) {
		d->order = "inorder";
		return;
	}
	if (r < 500) {
		d->order = "reverse";
		for (uint32_t i = 0; i < n / 2; i++) {
			t = d->fr[i];
			d->fr[i] = d->fr[n - 1 - i];
			d->fr[n - 1 - i] = t;
		}
		return;
	}
	if (r < 850) {
		d->order = "shuffle";
		for (uint32_t i = n - 1; n && i > 0; i--) {
			uint32_t k = rnd(i + 1);

			t = d->fr[i];
			d->fr[i] = d->fr[k];
			d->fr[k] = t;
		}
		return;
	}
	d->order = "lastfirst";
	if (n > 1) {
		t = d->fr[n - 1];
		memmove(&d->fr[1], &d->fr[0], (n - 1) * sizeof(t));
		d->fr[0] = t;
	}
}

static void gen_tags(struct dg *d)
{
	uint32_t r = rnd(1000);

	d->tagmode = "none";
	if (r < 650)
		return;
	d->tagmode = r < 850 ? "vid0" : "mixed";
	for (uint32_t i = 0; i < d->nfr; i++) {
		if (d->fr[i].kind == K_NOISE || (r >= 850 && chance(500)))
			continue;
		d->fr[i].tci = (int32_t)(rnd(8) << 13);	/* PCP, VID 0 */
		d->tagged = 1;
	}
}

static void gen_dgram(struct batch *bt, struct dg *d, uint32_t idx,
		      uint64_t idbase)
{
	struct fr o[MAX_ORIG];

	memset(d, 0, sizeof(*d));
	d->idx = idx;
	d->fam = chance(550) ? 4 : 6;
	d->src = rnd(2);
	d->id = d->fam == 4 ? (uint32_t)((idbase + idx) & 0xffff) :
			      (uint32_t)((idbase >> 16) + idx);
	if (d->fam == 6) {
		gen_ext(d);
	} else if (chance(150)) {
		d->optlen = 4 * (1 + rnd(10));
		snprintf(d->extdesc, sizeof(d->extdesc), "opt%u", d->optlen);
	} else {
		snprintf(d->extdesc, sizeof(d->extdesc), "-");
	}
	d->hdr = d->fam == 4 ? 20 + d->optlen : 40 + d->extlen;
	d->dlen = gen_dlen(d);
	d->flen = d->postlen + 8 + d->dlen;
	build_l4(d, bt->seed, bt->b);
	d->norig = gen_plan(d, o);
	memcpy(d->fr, o, d->norig * sizeof(o[0]));
	d->nfr = d->norig;
	/* Single fragments stay as they are. */
	if (d->norig > 1) {
		gen_order(d);
		gen_mutations(d);
	} else {
		d->order = "single";
	}
	gen_tags(d);
	for (uint32_t i = 0; i < d->nfr; i++) {
		struct fr *f = &d->fr[i];
		uint32_t l3 = d->fam == 4 ? 20 + (f->off ? 0 : d->optlen) :
					    40 + d->extlen + 8;

		/* No frame beyond the MTU (extras may be longer than the
		 * plan's fragments). */
		if (l3 + f->len > MTU)
			f->len = MTU - l3;
		d->kinds |= 1U << f->kind;
	}
}

static void gen_batch(struct batch *bt, uint64_t seed, uint32_t b)
{
	uint32_t left[MAX_DG] = { 0 }, pos[MAX_DG] = { 0 }, want, total = 0;
	uint64_t idbase;

	memset(bt, 0, sizeof(*bt));
	bt->seed = seed;
	bt->b = b;
	bt->d = calloc(MAX_DG, sizeof(*bt->d));
	if (!bt->d) {
		perror("diffgen: calloc");
		exit(1);
	}
	/* Ids: the same for index i in every batch of this seed. */
	rng = xd_mix(seed ^ 0x1d5eedULL);
	idbase = rnext();
	rng = xd_mix(seed ^ xd_mix(0xba7c400000000ULL + b));
	want = chance(150) ? 1 + rnd(4) : 4 + rnd(40);
	while (bt->n < want && bt->n < MAX_DG) {
		struct dg *d = &bt->d[bt->n];

		gen_dgram(bt, d, bt->n, idbase);
		if (total + d->nfr > MAX_FRAMES) {
			free(d->l4);
			break;
		}
		total += d->nfr;
		bt->n++;
	}
	/* Interleave (datagram order kept) or one datagram after another. */
	for (uint32_t i = 0; i < bt->n; i++)
		left[i] = bt->d[i].nfr;
	if (chance(700)) {
		while (bt->nframes < total) {
			uint32_t k = rnd(bt->n);

			while (!left[k])
				k = (k + 1) % bt->n;
			bt->seq[bt->nframes].d = k;
			bt->seq[bt->nframes].f = pos[k]++;
			left[k]--;
			bt->nframes++;
		}
	} else {
		for (uint32_t k = 0; k < bt->n; k++)
			for (uint32_t f = 0; f < bt->d[k].nfr; f++) {
				bt->seq[bt->nframes].d = k;
				bt->seq[bt->nframes].f = f;
				bt->nframes++;
			}
	}
}

static void free_batch(struct batch *bt)
{
	for (uint32_t i = 0; i < bt->n; i++)
		free(bt->d[i].l4);
	free(bt->d);
}

/* ---- Manifest --------------------------------------------------------------- */

static void kinds_str(uint32_t k, char *buf, size_t sz)
{
	size_t l = 0;

	buf[0] = 0;
	for (int i = 1; i < K_NKINDS; i++)
		if (k & (1U << i))
			l += snprintf(buf + l, sz - l, "%s%s", l ? "," : "",
				      kind_name[i]);
	if (!l)
		snprintf(buf, sz, "-");
}

static void manifest(FILE *f, const struct batch *bt)
{
	char kb[128];

	fprintf(f, "batch %u seed %llu dgrams %u frames %u\n", bt->b,
		(unsigned long long)bt->seed, bt->n, bt->nframes);
	for (uint32_t i = 0; i < bt->n; i++) {
		const struct dg *d = &bt->d[i];

		kinds_str(d->kinds, kb, sizeof(kb));
		fprintf(f, "dg %u %u fam %d src %s id %u dlen %u iplen %u ext %s "
			"frag %s order %s tags %s frames %u orig %u missing %u "
			"extras %s\n", bt->b, i, d->fam,
			d->fam == 4 ? src4[d->src] : src6[d->src], d->id,
			d->dlen, d->hdr + d->flen, d->extdesc, d->fsize,
			d->order, d->tagmode, d->nfr, d->norig, d->nmissing,
			kb);
	}
	for (uint32_t s = 0; s < bt->nframes; s++) {
		const struct dg *d = &bt->d[bt->seq[s].d];
		const struct fr *r = &d->fr[bt->seq[s].f];

		fprintf(f, "f %u %u %u %s %u+%u mf %u %s tci %d\n", bt->b, s,
			d->idx, kind_name[r->kind], r->off, r->len, r->mf,
			r->corrupt ? "other" : "same", r->tci);
	}
}

/* ---- Sender ------------------------------------------------------------------- */

struct port {
	int fd;
	struct sockaddr_ll sll;
	uint8_t smac[6], dmac[6];
};

static void parse_mac(const char *s, uint8_t *mac)
{
	unsigned int b[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4],
		   &b[5]) != 6) {
		fprintf(stderr, "diffgen: bad MAC %s\n", s);
		exit(2);
	}
	for (int i = 0; i < 6; i++)
		mac[i] = b[i];
}

static void port_open(struct port *p, const char *ifname, const char *dmac)
{
	struct ifreq ifr = { 0 };
	int v = 8 << 20;

	parse_mac(dmac, p->dmac);
	p->fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (p->fd < 0) {
		perror("diffgen: socket(AF_PACKET)");
		exit(1);
	}
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(p->fd, SIOCGIFHWADDR, &ifr)) {
		fprintf(stderr, "diffgen: %s: %s\n", ifname, strerror(errno));
		exit(1);
	}
	memcpy(p->smac, ifr.ifr_hwaddr.sa_data, 6);
	if (setsockopt(p->fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)))
		setsockopt(p->fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	memset(&p->sll, 0, sizeof(p->sll));
	p->sll.sll_family = AF_PACKET;
	p->sll.sll_ifindex = if_nametoindex(ifname);
	if (bind(p->fd, (struct sockaddr *)&p->sll, sizeof(p->sll))) {
		perror("diffgen: bind");
		exit(1);
	}
	p->sll.sll_halen = 6;
	memcpy(p->sll.sll_addr, p->dmac, 6);
}

/*
 * Payload byte o of frame r.  Other bytes, same checksum: the two 16-bit
 * words of every 4-byte group swapped (one's complement sums commute), the
 * headers before the UDP data left alone.  A copy that wins reaches the
 * socket, and its bytes tell which one won.
 */
static uint8_t byte_of(const struct dg *d, const struct fr *r, uint32_t o)
{
	uint32_t q = o;

	if (r->corrupt && o >= d->postlen + 8 &&
	    (o | 3) < r->off + r->len && (o | 3) < d->flen)
		q = o ^ 2;
	return q < d->flen ? d->l4[q] : 0;
}

/* One frame of d (fragment r) into buf; returns its length. */
static size_t build_frame(uint8_t *buf, const struct port *pt,
			  const struct dg *d, const struct fr *r)
{
	uint8_t s[16], t[16], *p = buf;

	addr_of(d, s, t);
	p += fr_eth(p, pt->dmac, pt->smac,
		    &(struct fr_vlan){ FR_P_8021Q, (uint16_t)r->tci },
		    r->tci >= 0, d->fam == 4 ? FR_P_IP : FR_P_IPV6);
	if (d->fam == 4) {
		uint32_t opt = r->off ? 0 : d->optlen, hl = 20 + opt;
		uint16_t fo = (r->off >> 3) | (r->mf ? FR_IP4_MF : 0);

		memset(p + 20, 1, opt);		/* NOP options */
		fr_ip4(p, hl, hl + r->len, d->id, fo, 64, 17, s, t);
		p += hl;
	} else {
		fr_ip6(p, 0, d->extlen + 8 + r->len, d->nh0, 64, s, t);
		p += 40;
		memcpy(p, d->ext, d->extlen);
		p += d->extlen;
		fr_frag6(p, d->postlen ? 60 : 17, r->off, r->mf, d->id);
		p += 8;
	}
	for (uint32_t i = 0; i < r->len; i++)
		p[i] = byte_of(d, r, r->off + i);
	return (size_t)(p - buf) + r->len;
}

/* The begin / end marker: unfragmented UDP over IPv4. */
static size_t build_marker(uint8_t *buf, const struct port *pt, char kind,
			   uint32_t b)
{
	uint8_t *p = buf, *ip, *u, s4[4], t4[4];
	char text[40];
	uint32_t n = snprintf(text, sizeof(text), "XDMARK %c %u", kind, b);
	uint32_t tot = 20 + 8 + n;

	inet_pton(AF_INET, src4[0], s4);
	inet_pton(AF_INET, DST4, t4);
	ip = p + fr_eth(p, pt->dmac, pt->smac, NULL, 0, FR_P_IP);
	fr_ip4(ip, 20, tot, 0, 0, 64, 17, s4, t4);
	u = ip + 20;
	fr_udp(u, XD_MARK_SPORT, XD_PORT, 8 + n);
	memcpy(u + 8, text, n);
	put16(u + 6, fr_udp_csum(sum16(u, 8 + n, fr_pseudo(0, s4, t4, 17,
							   8 + n))));
	return 14 + tot;
}

static void xmit(struct port *pt, const uint8_t *buf, size_t len)
{
	/* The frame's own EtherType: AF_PACKET allows a tagged frame 4 bytes
	 * over the MTU only when it is told it is 802.1Q. */
	pt->sll.sll_protocol = htons((uint16_t)(buf[12] << 8 | buf[13]));
	for (int tries = 0;; tries++) {
		ssize_t n = sendto(pt->fd, buf, len, 0,
				   (struct sockaddr *)&pt->sll, sizeof(pt->sll));

		if (n == (ssize_t)len)
			return;
		if (n < 0 && errno == ENOBUFS && tries < 10000) {
			usleep(100);
			continue;
		}
		fprintf(stderr, "diffgen: sendto (%zu bytes): %s\n", len,
			n < 0 ? strerror(errno) : "short");
		exit(1);
	}
}

/* --spread N: each frame from the next of CPUs 0..N-1, as a sender the
 * scheduler moves, or RSS that spreads fragments, would deliver them. */
static int spread;

static void on_cpu(uint32_t s)
{
	cpu_set_t set;

	if (spread < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(s % (uint32_t)spread, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "diffgen: sched_setaffinity: %s\n",
			strerror(errno));
		exit(1);
	}
}

static void send_batch(const struct batch *bt, struct port *px,
		       struct port *pk, unsigned long gap_us)
{
	static uint8_t buf[MTU + 64];
	struct port *ports[2] = { px, pk };

	for (int k = 0; k < 2; k++)
		xmit(ports[k], buf, build_marker(buf, ports[k], 'B', bt->b));
	for (uint32_t s = 0; s < bt->nframes; s++) {
		const struct dg *d = &bt->d[bt->seq[s].d];
		const struct fr *r = &d->fr[bt->seq[s].f];

		on_cpu(s);
		for (int k = 0; k < 2; k++)
			xmit(ports[k], buf, build_frame(buf, ports[k], d, r));
		if (gap_us)
			usleep(gap_us);
	}
	for (int k = 0; k < 2; k++)
		xmit(ports[k], buf, build_marker(buf, ports[k], 'E', bt->b));
}

/* ---- Checker -------------------------------------------------------------------- */

struct got {
	int idx;
	uint32_t len;
	int ok;
	unsigned long long hash;
	int fam;
	char dst[64];
};

struct side {
	struct got *g;
	uint32_t n;
	int begun, ended;
};

static int nfail;
static uint64_t cur_seed;
static uint32_t cur_batch;

static void failf(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL diff-seed-%llu-batch-%u: ", (unsigned long long)cur_seed,
	       cur_batch);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (replay: tests/diff_test.sh --seed %llu --from %u --batches 1)\n",
	       (unsigned long long)cur_seed, cur_batch);
	nfail++;
}

/* The lines of batch b in a diffrecv log. */
static void read_side(const char *path, uint32_t b, struct side *s)
{
	FILE *f = fopen(path, "r");
	char line[256];
	long in = -1;

	memset(s, 0, sizeof(*s));
	if (!f) {
		failf("cannot read %s", path);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		long lb, idx;
		unsigned long len;
		char okw[16], dst[64];
		unsigned long long h;
		int fam;

		if (sscanf(line, "begin %ld", &lb) == 1) {
			in = lb;
			if (lb == (long)b)
				s->begun = 1;
			continue;
		}
		if (sscanf(line, "end %ld", &lb) == 1) {
			if (lb == (long)b)
				s->ended = 1;
			in = -1;
			continue;
		}
		/* A datagram line names its batch: it counts wherever it
		 * falls.  With steering a datagram reassembled on another
		 * CPU can reach the socket after the end marker, which is
		 * not a fragment and is never redirected. */
		(void)in;
		if (sscanf(line, "d %ld %ld %lu %15s %llx %d %63s", &lb, &idx,
			   &len, okw, &h, &fam, dst) != 7 || lb != (long)b)
			continue;
		s->g = realloc(s->g, (s->n + 1) * sizeof(*s->g));
		if (!s->g) {
			perror("diffgen: realloc");
			exit(1);
		}
		s->g[s->n].idx = (int)idx;
		s->g[s->n].len = (uint32_t)len;
		s->g[s->n].ok = !strcmp(okw, "ok") ? XD_OK :
				!strcmp(okw, "other") ? XD_OTHER : XD_CORRUPT;
		s->g[s->n].hash = h;
		s->g[s->n].fam = fam;
		snprintf(s->g[s->n].dst, sizeof(s->g[s->n].dst), "%s", dst);
		s->n++;
	}
	fclose(f);
}

/* xfrag counters: "key value" lines. */
static long long stat_of(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	char k[64];
	long long v, r = -1;

	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", k, &v) == 2)
		if (!strcmp(k, key)) {
			r = v;
			break;
		}
	fclose(f);
	return r;
}

/*
 * The named policy differences (README), each explaining a datagram one
 * side delivered and the other did not (C_XMORE and after: xfrag
 * delivered it).  A datagram is put in the first whose condition on what
 * was sent holds while the counter xfrag keeps for that outcome moved in
 * this batch at least once per datagram so explained.
 */
enum cat {
	C_OVERSIZE,	/* beyond the delivery limit, learned too late */
	C_CONTAINED,	/* a fragment inside data held: RFC 5722 overlap */
	C_V6_BAD_LEN,	/* IPv6 non-last fragment not 8k: datagram dropped */
	C_TOO_MANY,	/* more than max-frags fragments */
	C_V6_TOO_LONG,	/* IPv6 fragment beyond 65535: datagram dropped */
	C_DUP_CHANGED,	/* a held range again, other bytes: an overlap */
	C_FLUSH_CONTAINED,	/* handed to the kernel out of order, then a
				 * fragment inside data held: its overlap */
	C_XMORE,
	C_V4_TOO_LONG = C_XMORE,	/* IPv4 one: never queued by xfrag */
	C_RESTART,	/* after a contained overlap, later copies make one */
	C_DUP_RESTART,	/* after a changed duplicate, the same */
	C_NCATS,
};

static const char *const cat_name[C_NCATS] = {
	"oversize_late", "contained_overlap",
	"v6_bad_len", "too_many_frags", "v6_too_long_discards",
	"dup_other_bytes", "contained_after_flush", "v4_too_long_not_queued",
	"contained_overlap_restart", "dup_other_bytes_restart",
};
static const char *const cat_counter[C_NCATS] = {
	"frag_oversize", "frag_overlap", "frag_bad_len",
	"frag_too_many", "frag_too_long", "frag_dup_changed",
	"pass_too_many", "frag_too_long", "frag_overlap", "frag_dup_changed",
};

/* Biggest L2 header any of d's frames has (what xfrag's limit counts). */
static uint32_t l3off_of(const struct dg *d)
{
	return d->tagged ? 18 : 14;
}

/*
 * Is some extra fragment of d (in send order) neither an exact copy of an
 * earlier one nor outside what earlier ones cover, i.e. does it lie inside
 * data already sent?  (Kernel: a duplicate when inside one run; xfrag and
 * RFC 5722: an overlap.)  Trimmed as both trim IPv4 non-last fragments.
 */
static int has_contained(const struct dg *d)
{
	for (uint32_t i = 1; i < d->nfr; i++) {
		const struct fr *f = &d->fr[i];
		uint32_t s = f->off, e = f->off + f->len, cov;
		int exact = 0;

		if (f->tci >= 0 && (f->tci & 0xfff))
			continue;
		if (f->mf && d->fam == 4)
			e = s + ((e - s) & ~7U);
		if (e <= s)
			continue;
		/* covered by the union of earlier frames? */
		cov = s;
		for (int again = 1; again;) {
			again = 0;
			for (uint32_t j = 0; j < i; j++) {
				const struct fr *g = &d->fr[j];
				uint32_t gs = g->off, ge = g->off + g->len;

				if (g->tci >= 0 && (g->tci & 0xfff))
					continue;
				if (g->mf && d->fam == 4)
					ge = gs + ((ge - gs) & ~7U);
				if (gs == s && ge == e)
					exact = 1;
				if (gs <= cov && ge > cov) {
					cov = ge;
					again = 1;
				}
			}
		}
		if (!exact && cov >= e)
			return 1;
	}
	return 0;
}

/*
 * Is some frame of d (untagged, in send order) the range of an earlier
 * one with other bytes?  (Kernel: a duplicate, the first copy kept;
 * xfrag, RFC 8200 4.5: not an exact duplicate, an overlap.)
 */
static int has_changed_dup(const struct dg *d)
{
	for (uint32_t i = 1; i < d->nfr; i++) {
		const struct fr *f = &d->fr[i];
		uint32_t s = f->off, e = f->off + f->len;

		if (f->tci >= 0 && (f->tci & 0xfff))
			continue;
		if (f->mf && d->fam == 4)
			e = s + ((e - s) & ~7U);
		for (uint32_t j = 0; j < i; j++) {
			const struct fr *g = &d->fr[j];
			uint32_t ge = g->off + g->len;

			if (g->tci >= 0 && (g->tci & 0xfff))
				continue;
			if (g->mf && d->fam == 4)
				ge = g->off + ((ge - g->off) & ~7U);
			if (g->off != s || ge != e || e <= s)
				continue;
			for (uint32_t o = s; o < e; o++)
				if (byte_of(d, f, o) != byte_of(d, g, o))
					return 1;
		}
	}
	return 0;
}

static int has_v6_ragged(const struct dg *d)
{
	if (d->fam != 6)
		return 0;
	for (uint32_t i = 0; i < d->nfr; i++)
		if (d->fr[i].mf && (d->fr[i].len & 7))
			return 1;
	return 0;
}

/*
 * Does xfrag hand d to the kernel at the first frame of d it sees (README,
 * Delivery 3: the UDP length of a first fragment, or an end beyond the
 * limit, counted with that frame's own L2 header)?  Frames on another VLAN
 * and zero-length ones are not it, nor an IPv6 first fragment without the
 * header chain (dropped).  Only meaningful for a datagram with no extras
 * (an extra may discard what xfrag holds and start it over).
 */
static int first_passes(const struct dg *d)
{
	for (uint32_t i = 0; i < d->nfr; i++) {
		const struct fr *f = &d->fr[i];
		uint32_t l3 = f->tci >= 0 ? 18 : 14, len = f->len;

		if ((f->tci >= 0 && (f->tci & 0xfff)) || !f->len)
			continue;
		if (d->fam == 6 && f->off == 0 && f->len < d->postlen + 8)
			continue;
		if (f->mf && d->fam == 4)
			len &= ~7U;
		if (f->off == 0 && len >= 8)
			return l3 + d->hdr + d->flen > XFRAG_TC_MAX_LEN;
		return l3 + (d->fam == 4 ? 20 : d->hdr) + f->off + len >
		       XFRAG_TC_MAX_LEN;
	}
	return 0;
}

static int cat_applies(int c, const struct dg *d)
{
	uint32_t big = l3off_of(d) + d->hdr + d->flen > XFRAG_TC_MAX_LEN;
	uint32_t extras = d->kinds & ~(1U << K_ORIG | 1U << K_NOISE);
	uint32_t pieces = 0;

	switch (c) {
	case C_OVERSIZE:
		return big && (extras || !first_passes(d));
	case C_CONTAINED:
		return has_contained(d);
	case C_V6_BAD_LEN:
		return has_v6_ragged(d);
	case C_TOO_MANY:
	case C_FLUSH_CONTAINED:
		if (c == C_FLUSH_CONTAINED && !has_contained(d))
			return 0;
		for (uint32_t i = 0; i < d->nfr; i++)
			pieces += (d->fr[i].len + XFRAG_CHUNK - 1) / XFRAG_CHUNK;
		return d->nfr > XFRAG_DEF_MAX_FRAGS || pieces > XFRAG_MAX_DESC;
	case C_V6_TOO_LONG:
		return d->fam == 6 && (d->kinds & (1U << K_POD));
	case C_V4_TOO_LONG:
		return d->fam == 4 && (d->kinds & (1U << K_POD));
	case C_RESTART:
		return has_contained(d);
	case C_DUP_CHANGED:
	case C_DUP_RESTART:
		return has_changed_dup(d);
	}
	return 0;
}

/* A delivery one side made more often than the other. */
struct inst {
	uint32_t d;
	int xmore, cx, ck;
	uint32_t cats;		/* the categories whose condition holds */
	int cat;		/* the one it is put in */
};

#define MAX_INST	1024
static struct inst inst[MAX_INST];
static uint32_t ninst;

/* Kuhn's augmenting path: put instance i in a category with budget left,
 * moving others to their other categories if need be. */
static int assign(uint32_t i, int *seen, const long long *budget,
		  long long *used)
{
	for (int c = 0; c < C_NCATS; c++) {
		if (!(inst[i].cats & (1U << c)) || seen[c])
			continue;
		seen[c] = 1;
		if (used[c] < budget[c]) {
			inst[i].cat = c;
			used[c]++;
			return 1;
		}
		for (uint32_t j = 0; j < ninst; j++)
			if (j != i && inst[j].cat == c &&
			    assign(j, seen, budget, used)) {
				/* j moved to another category (counted
				 * there), i takes its place in c */
				inst[i].cat = c;
				return 1;
			}
	}
	return 0;
}

static int check_batch(const struct batch *bt, const char *xrecv,
		       const char *krecv, const char *st0, const char *st1)
{
	struct side sx, sk;
	long long budget[C_NCATS], used[C_NCATS] = { 0 };
	uint32_t kern_bad = 0, same_bad = 0;
	static const char *const must_zero[] = { "deliver_err",
						 "handoff_lost" };

	read_side(xrecv, bt->b, &sx);
	read_side(krecv, bt->b, &sk);
	if (!sx.begun || !sx.ended)
		failf("xfrag side: markers of batch %u missing", bt->b);
	if (!sk.begun || !sk.ended)
		failf("kernel side: markers of batch %u missing", bt->b);
	for (int c = 0; c < C_NCATS; c++) {
		long long a = stat_of(st0, cat_counter[c]);
		long long z = stat_of(st1, cat_counter[c]);

		if (a < 0 || z < 0) {
			failf("counter %s missing in the stats", cat_counter[c]);
			budget[c] = 0;
		} else {
			budget[c] = z - a;
		}
	}
	for (size_t i = 0; i < sizeof(must_zero) / sizeof(must_zero[0]); i++) {
		long long a = stat_of(st0, must_zero[i]);
		long long z = stat_of(st1, must_zero[i]);

		if (z != a)
			failf("xfrag %s moved by %lld", must_zero[i], z - a);
	}

	/* Everything delivered was sent: index, length, family, address. */
	for (int k = 0; k < 2; k++) {
		struct side *s = k ? &sk : &sx;
		const char *who = k ? "kernel" : "xfrag";

		for (uint32_t i = 0; i < s->n; i++) {
			struct got *g = &s->g[i];
			const struct dg *d;

			if (g->idx < 0 || (uint32_t)g->idx >= bt->n) {
				failf("%s side delivered a datagram never sent (index %d, %u bytes)",
				      who, g->idx, g->len);
				g->idx = -1;
				continue;
			}
			d = &bt->d[g->idx];
			if (g->len != d->dlen || g->fam != d->fam ||
			    strcmp(g->dst, d->fam == 4 ? DST4 : DST6)) {
				failf("%s side delivered datagram %d as %u bytes IPv%d to %s, sent %u bytes IPv%d",
				      who, g->idx, g->len, g->fam, g->dst,
				      d->dlen, d->fam);
				g->idx = -1;
			}
		}
	}

	/* Per datagram: the multisets of delivered bytes (by hash). */
	for (uint32_t di = 0; di < bt->n; di++) {
		const struct dg *d = &bt->d[di];
		struct { unsigned long long h; int ok, cx, ck; } v[64];
		uint32_t nv = 0;

		for (int k = 0; k < 2; k++) {
			struct side *s = k ? &sk : &sx;

			for (uint32_t i = 0; i < s->n; i++) {
				struct got *g = &s->g[i];
				uint32_t j;

				if (g->idx != (int)di)
					continue;
				for (j = 0; j < nv && v[j].h != g->hash; j++)
					;
				if (j == nv) {
					if (nv == 64)
						continue;
					memset(&v[nv], 0, sizeof(v[0]));
					v[nv].h = g->hash;
					v[nv].ok = g->ok;
					nv++;
				}
				if (k)
					v[j].ck++;
				else
					v[j].cx++;
			}
		}
		for (uint32_t j = 0; j < nv; j++) {
			/* "other": bytes of the "other bytes" copies, as sent;
			 * "corrupt": bytes never sent. */
			if (v[j].ok != XD_OK) {
				printf("note datagram %u: %s delivered %s bytes (%016llx) %d + %d times\n",
				       di, v[j].cx && v[j].ck ? "both" :
				       v[j].cx ? "xfrag" : "the kernel",
				       v[j].ok == XD_OTHER ? "other" : "never sent",
				       v[j].h, v[j].cx, v[j].ck);
				if (v[j].cx && v[j].ck)
					same_bad++;
				else if (v[j].cx && v[j].ok == XD_CORRUPT)
					failf("xfrag side delivered datagram %u (%u bytes) with bytes never sent (hash %016llx), the kernel did not",
					      di, d->dlen, v[j].h);
				else if (!v[j].cx)
					kern_bad++;
			}
			/* One instance per delivery one side has more. */
			for (int m = abs(v[j].cx - v[j].ck); m > 0; m--) {
				struct inst *in = &inst[ninst];
				int lo = v[j].cx > v[j].ck ? C_XMORE : 0;
				int hi = v[j].cx > v[j].ck ? C_NCATS : C_XMORE;

				if (ninst == MAX_INST) {
					failf("too many differences to explain");
					break;
				}
				in->d = di;
				in->xmore = v[j].cx > v[j].ck;
				in->cx = v[j].cx;
				in->ck = v[j].ck;
				in->cats = 0;
				in->cat = -1;
				for (int c = lo; c < hi; c++)
					if (cat_applies(c, d))
						in->cats |= 1U << c;
				ninst++;
			}
		}
	}
	/* Explain each instance by a category whose counter moved enough:
	 * a bipartite matching (augmenting paths), so that the order of the
	 * datagrams does not decide. */
	for (uint32_t i = 0; i < ninst; i++) {
		int seen[C_NCATS] = { 0 };

		if (assign(i, seen, budget, used))
			continue;
		const struct dg *d = &bt->d[inst[i].d];
		char kb[128];

		kinds_str(d->kinds, kb, sizeof(kb));
		if (inst[i].xmore)
			failf("datagram %u delivered %d times by xfrag, %d by the kernel: IPv%d dlen %u iplen %u ext %s frag %s order %s tags %s frames %u missing %u extras %s",
			      inst[i].d, inst[i].cx, inst[i].ck, d->fam,
			      d->dlen, d->hdr + d->flen, d->extdesc, d->fsize,
			      d->order, d->tagmode, d->nfr, d->nmissing, kb);
		else
			failf("datagram %u delivered by the kernel, not by xfrag: IPv%d dlen %u iplen %u ext %s frag %s order %s tags %s frames %u missing %u extras %s",
			      inst[i].d, d->fam, d->dlen, d->hdr + d->flen,
			      d->extdesc, d->fsize, d->order, d->tagmode,
			      d->nfr, d->nmissing, kb);
	}
	printf("sent %u frames %u xfrag %u kernel %u\n", bt->n, bt->nframes,
	       sx.n, sk.n);
	for (int c = 0; c < C_NCATS; c++)
		if (used[c])
			printf("cat %s %lld\n", cat_name[c], used[c]);
	if (same_bad)
		printf("cat both_delivered_same_other_bytes %u\n", same_bad);
	if (kern_bad)
		printf("cat kernel_only_other_bytes %u\n", kern_bad);
	free(sx.g);
	free(sk.g);
	return nfail ? 1 : 0;
}

/* ---- Main ------------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr,
		"usage: diffgen --seed S --batch B --print\n"
		"       diffgen --seed S --batch B --send --ifx IF --dmac-x MAC --ifk IF --dmac-k MAC\n"
		"               [--manifest FILE] [--gap-us U] [--spread N]\n"
		"       diffgen --seed S --batch B --check --xrecv F --krecv F --xstats0 F --xstats1 F\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "batch", required_argument, NULL, 'b' },
		{ "print", no_argument, NULL, 'P' },
		{ "send", no_argument, NULL, 'S' },
		{ "check", no_argument, NULL, 'C' },
		{ "ifx", required_argument, NULL, 1 },
		{ "ifk", required_argument, NULL, 2 },
		{ "dmac-x", required_argument, NULL, 3 },
		{ "dmac-k", required_argument, NULL, 4 },
		{ "manifest", required_argument, NULL, 'm' },
		{ "gap-us", required_argument, NULL, 'g' },
		{ "spread", required_argument, NULL, 9 },
		{ "xrecv", required_argument, NULL, 5 },
		{ "krecv", required_argument, NULL, 6 },
		{ "xstats0", required_argument, NULL, 7 },
		{ "xstats1", required_argument, NULL, 8 },
		{ NULL, 0, NULL, 0 },
	};
	const char *ifx = NULL, *ifk = NULL, *dmx = NULL, *dmk = NULL;
	const char *man = NULL, *xr = NULL, *kr = NULL, *s0 = NULL, *s1 = NULL;
	unsigned long long seed = 0;
	unsigned long gap = 0;
	long b = -1;
	int mode = 0, have_seed = 0, c, rc = 0;
	static struct batch bt;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			seed = strtoull(optarg, NULL, 0);
			have_seed = 1;
			break;
		case 'b':
			b = strtol(optarg, NULL, 0);
			break;
		case 'P':
		case 'S':
		case 'C':
			mode = c;
			break;
		case 1: ifx = optarg; break;
		case 2: ifk = optarg; break;
		case 3: dmx = optarg; break;
		case 4: dmk = optarg; break;
		case 'm': man = optarg; break;
		case 'g': gap = strtoul(optarg, NULL, 0); break;
		case 5: xr = optarg; break;
		case 6: kr = optarg; break;
		case 7: s0 = optarg; break;
		case 8: s1 = optarg; break;
		case 9: spread = atoi(optarg); break;
		default:
			usage();
		}
	}
	if (!have_seed || b < 0 || !mode || optind != argc)
		usage();
	gen_batch(&bt, seed, (uint32_t)b);
	cur_seed = seed;
	cur_batch = (uint32_t)b;
	if (mode == 'P') {
		manifest(stdout, &bt);
	} else if (mode == 'S') {
		struct port px, pk;

		if (!ifx || !ifk || !dmx || !dmk)
			usage();
		if (man) {
			FILE *f = fopen(man, "a");

			if (!f) {
				perror(man);
				return 1;
			}
			manifest(f, &bt);
			fclose(f);
		}
		port_open(&px, ifx, dmx);
		port_open(&pk, ifk, dmk);
		send_batch(&bt, &px, &pk, gap);
		printf("batch %ld: %u datagrams, %u frames to each side\n", b,
		       bt.n, bt.nframes);
	} else {
		if (!xr || !kr || !s0 || !s1)
			usage();
		rc = check_batch(&bt, xr, kr, s0, s1);
	}
	free_batch(&bt);
	return rc;
}
