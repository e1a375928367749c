// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gen - fragmented UDP traffic generator for the xfrag benchmark.
 *
 * Sends Ethernet frames holding the IPv4 or IPv6 fragments of UDP datagrams
 * (fragmented the way Linux does it) through an AF_PACKET socket with
 * sendmmsg.  All frames are built before the timed loop, which only patches
 * the IP identification (and IPv4 header checksum), the UDP source port of
 * first fragments (--flows) and, for attack frames, the source address.
 * Attack frames come in units (--attack-kind): the frames of one unit share
 * a random IP id (and, with --attack-spoof, a random source); no unit ever
 * makes a whole datagram.
 * Payload: tests/payload.h (magic, seq, length, a pattern of seq and
 * position), as fragsend's; bench/sink checks every byte.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "../tests/frame.h"
#include "../tests/payload.h"

#define BATCH	64
#define UDPH	8

enum { ORD_IN, ORD_REV, ORD_RAND };

/* Attack units: first fragment only; first and last (Rose); --attack-frags
 * 8-byte fragments from offset 0 on (tiny); first fragment and one that
 * overlaps its second half; --attack-frags copies of the first fragment. */
enum { AK_FIRST, AK_ROSE, AK_TINY, AK_OVERLAP, AK_DUP };
static const char *const akinds[] = { "first", "rose", "tiny", "overlap",
				      "dup" };
#define NAKINDS	(int)(sizeof(akinds) / sizeof(akinds[0]))

struct afr {			/* one frame of an attack unit */
	uint8_t *buf;
	uint16_t len;
	int l4;			/* offset 0: holds the UDP header */
};

struct tpl {			/* one prebuilt datagram */
	uint8_t *buf;		/* nfr frames, g.stride apart, in send order */
	uint16_t *flen;		/* frame lengths */
	int nfr, first;		/* frame count; index of the offset-0 frame */
	int udpoff;		/* UDP header offset in the offset-0 frame */
	uint64_t sum0;		/* UDP checksum sum without the source port */
	uint64_t bgen;		/* last batch that holds one of its frames */
};

struct slot {			/* one open datagram of --streams */
	int tpl;		/* -1: idle (--count reached) */
	int k, started, lossy;	/* next frame; id patched; a frame dropped */
	uint64_t dnum;		/* datagram number */
};

static struct {
	/* options */
	const char *iface;
	uint8_t smac[6], dmac[6];
	int v6, spoof, json, order, dport, sport, size, mtu, streams, flows;
	int akind, afrags, aonly, csum0, rand_ids, part, parts;
	struct in_addr s4, d4;
	struct in6_addr s6, d6;
	double loss, duration, rate, arate, start_at;
	uint64_t seed, count, id_seed;
	/* state */
	int fd, ihl, fp, ntpl, nslots, active, rr;
	size_t stride;
	struct sockaddr_ll sll;
	struct tpl *tpls;
	struct slot *slots;
	uint64_t next_tpl, assigned, bgen, rng_loss, rng_att, loss_thr;
	uint32_t id;
	uint8_t *att;		/* BATCH attack frames, one per batch slot */
	uint64_t att_sum;	/* attack UDP sum without the source address */
	struct afr *unit;	/* the frames of one attack unit, in order */
	int nunit, ustep;	/* its length; next frame of the open unit */
	uint64_t ur, ulo;	/* the open unit's random id/source bits */
	/* results */
	uint64_t honest, attack, dgrams, lossy, bytes, payload, retries, dropped;
	uint64_t pskip;		/* frames of other parts, since the last batch */
	double elapsed;
} g;

static volatile sig_atomic_t stop;

static void on_sig(int sig) { (void)sig; stop = 1; }

/* Print "gen: msg" (": strerror" when err) and exit 1. */
static void die_(const char *msg, int err)
{
	fprintf(stderr, err ? "gen: %s: %s\n" : "gen: %s\n", msg, strerror(err));
	exit(1);
}
#define die(m)	die_(m, 0)
#define pdie(m)	die_(m, errno)

static void *xmalloc(size_t n)
{
	void *p = calloc(1, n);

	if (!p)
		die("out of memory");
	return p;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t mix(uint64_t x)	/* splitmix64 finaliser, never 0 */
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x ? x : 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	if (s > 0)
		nanosleep(&ts, NULL);
}

/* Build one frame carrying l4[off, off + len); returns the frame length. */
static uint16_t build_frame(uint8_t *f, const uint8_t *l4, int off, int len,
			    int mf, int fragmented)
{
	uint8_t *ip = f + ETH_HLEN;
	int hl = g.v6 ? (fragmented ? 48 : 40) : 20;

	fr_eth(f, g.dmac, g.smac, NULL, 0, g.v6 ? FR_P_IPV6 : FR_P_IP);
	if (!g.v6) {		/* TTL 64, DF clear, id patched later */
		fr_ip4(ip, 20, (uint16_t)(20 + len),
		       0, (uint16_t)((mf ? FR_IP4_MF : 0) | (off >> 3)), 64,
		       IPPROTO_UDP, (const uint8_t *)&g.s4,
		       (const uint8_t *)&g.d4);
	} else {		/* hop limit 64, fragment header after 40 B */
		fr_ip6(ip, 0, (uint16_t)(hl - 40 + len),
		       fragmented ? FR_PROTO_FRAG6 : IPPROTO_UDP, 64,
		       (const uint8_t *)&g.s6, (const uint8_t *)&g.d6);
		if (fragmented)	/* id patched later */
			fr_frag6(ip + 40, IPPROTO_UDP, (uint32_t)off, mf, 0);
	}
	memcpy(ip + hl, l4 + off, len);
	return (uint16_t)(ETH_HLEN + hl + len);
}

/* UDP header + payload of datagram seq.  Returns the checksum sum of the
 * pseudo header and datagram, source port (and address unless with_src)
 * left out: both are added when patched. */
static uint64_t build_l4(uint8_t *l4, uint32_t seq, int dport, int with_src)
{
	int n = UDPH + g.size;
	uint8_t *p = l4 + UDPH;
	uint64_t s = 0;

	put32(l4, (uint32_t)dport);
	put32(l4 + 4, (uint32_t)n << 16);
	pl_fill(p, (size_t)g.size, (size_t)g.size, seq);
	if (with_src)
		s = g.v6 ? sum16(&g.s6, 16, s) : sum16(&g.s4, 4, s);
	s = g.v6 ? sum16(&g.d6, 16, s) : sum16(&g.d4, 4, s);
	return sum16(l4, n, s + (uint32_t)n + IPPROTO_UDP);
}

/* The frames of one attack unit other than `first` (whose one frame is
 * batch slot 0's, built by the caller), built once; get_attack() copies
 * them into the batch slots and patches id and source. */
static void build_unit(const uint8_t *l4, int l4len, int nfr, int alen)
{
	int half = alen / 2 & ~7, last = (nfr - 1) * g.fp;

	if (g.akind == AK_FIRST)
		return;
	if (g.akind == AK_ROSE && nfr < 3)
		die("--attack-kind rose: --size must make at least 3 fragments");
	if (g.akind == AK_OVERLAP && half < 8)
		die("--attack-kind overlap: --size too small");
	for (int i = 0; i < g.nunit; i++) {
		struct afr *u = &g.unit[i];
		int off = 0, len = alen, mf = 1;

		if (g.akind == AK_ROSE && i == 1)
			off = last, len = l4len - last, mf = 0;
		else if (g.akind == AK_TINY)
			off = i * 8, len = 8;
		else if (g.akind == AK_OVERLAP && i == 1)
			off = half;
		u->buf = xmalloc(g.stride);
		u->len = build_frame(u->buf, l4, off, len, mf, 1);
		u->l4 = off == 0;
		if (u->l4)
			put16(u->buf + ETH_HLEN + g.ihl + 6, fr_udp_csum(g.v6 ?
				sum16(&g.s6, 16, g.att_sum) :
				sum16(&g.s4, 4, g.att_sum)));
	}
}

static void build_templates(void)
{
	int l4len = UDPH + g.size, frag = l4len > g.fp;
	int nfr = frag ? (l4len + g.fp - 1) / g.fp : 1;
	int *ord = xmalloc(sizeof(int) * nfr), alen;
	uint8_t *l4 = xmalloc(UDPH + 65536);
	uint64_t rng = mix(g.seed ^ 0x5348554646ull);

	g.stride = (ETH_HLEN + g.ihl + (frag ? g.fp : l4len) + 63) & ~63ul;
	g.nunit = g.akind == AK_FIRST ? 1 : g.akind == AK_ROSE ||
		  g.akind == AK_OVERLAP ? 2 : g.afrags;
	g.unit = xmalloc(sizeof(*g.unit) * g.nunit);
	/* An odd count: datagrams 65536 apart (the same IPv4 id after a
	 * wrap) come from different templates, so their bytes differ, as two
	 * real datagrams' do (the id-wrap benchmark needs it). */
	g.ntpl = (g.streams * 2 > 64 ? g.streams * 2 : 64) + 1;
	g.tpls = xmalloc(sizeof(*g.tpls) * g.ntpl);
	for (int t = 0; t < g.ntpl; t++) {
		struct tpl *tp = &g.tpls[t];

		tp->nfr = nfr;
		tp->udpoff = ETH_HLEN + (g.v6 ? (frag ? 48 : 40) : 20);
		tp->buf = xmalloc(g.stride * nfr);
		tp->flen = xmalloc(sizeof(uint16_t) * nfr);
		tp->sum0 = build_l4(l4, (uint32_t)t, g.dport, 1);
		for (int i = 0; i < nfr; i++)
			ord[i] = g.order == ORD_REV ? nfr - 1 - i : i;
		for (int i = nfr - 1; g.order == ORD_RAND && i > 0; i--) {
			int j = (int)(xorshift(&rng) % (uint64_t)(i + 1));
			int x = ord[i];

			ord[i] = ord[j];
			ord[j] = x;
		}
		for (int i = 0; i < nfr; i++) {
			int off = ord[i] * g.fp;
			int len = l4len - off < g.fp ? l4len - off : g.fp;

			if (ord[i] == 0)
				tp->first = i;
			tp->flen[i] = build_frame(tp->buf + g.stride * i, l4, off,
						  frag ? len : l4len,
						  ord[i] < nfr - 1, frag);
		}
	}
	/* Attack frames: first fragment only (MF set, offset 0), dport + 1;
	 * a non-last fragment must hold a multiple of 8 bytes. */
	alen = l4len < g.fp ? l4len & ~7 : g.fp;
	g.att = xmalloc(g.stride * BATCH);
	g.att_sum = build_l4(l4, 0xa77acc00u, g.dport + 1, 0);
	put16(l4, (uint16_t)g.sport);
	g.att_sum += (uint32_t)g.sport;
	for (int i = 0; i < BATCH; i++) {
		uint8_t *f = g.att + g.stride * i;
		uint16_t n = build_frame(f, l4, 0, alen, 1, 1);

		put16(f + ETH_HLEN + g.ihl + 6, fr_udp_csum(g.v6 ?
			sum16(&g.s6, 16, g.att_sum) : sum16(&g.s4, 4, g.att_sum)));
		if (i == 0)	/* --attack-kind first: the unit is this frame */
			g.unit[0] = (struct afr){ f, n, 1 };
	}
	build_unit(l4, l4len, nfr, alen);
	free(l4);
	free(ord);
}

/* A template about to be (re)used gets a new IP id in all its frames and
 * its datagram's source port; no frame of it may sit in the open batch. */
static void start_tpl(struct tpl *tp, uint64_t dnum)
{
	uint16_t port = (uint16_t)(g.sport + dnum % (uint64_t)g.flows);
	uint8_t *udp = tp->buf + g.stride * tp->first + tp->udpoff;
	uint32_t id;

	/* --random-ids: ids drawn at random, as some systems pick them. */
	if (g.rand_ids)
		g.id = (uint32_t)mix(g.id + 0x9e3779b97f4a7c15ull);
	else
		g.id++;
	id = g.v6 ? g.id : (uint16_t)g.id;
	for (int i = 0; i < tp->nfr; i++) {
		uint8_t *ip = tp->buf + g.stride * i + ETH_HLEN;

		if (!g.v6) {
			put16(ip + 4, (uint16_t)id);
			fr_ip4_csum(ip);
		} else if (tp->nfr > 1) {
			put32(ip + 44, id);
		}
	}
	put16(udp, port);
	/* --csum0: IPv4 UDP without checksum (RFC 768), as DNS, syslog and
	 * tunnels often send it: nothing at L4 catches a mixed datagram. */
	put16(udp + 6, g.csum0 && !g.v6 ? 0 : fr_udp_csum(tp->sum0 + port));
}

static void assign(struct slot *s)
{
	if (g.count && g.assigned >= g.count) {
		g.active -= s->tpl >= 0;
		s->tpl = -1;
		return;
	}
	s->tpl = (int)(g.next_tpl++ % (uint64_t)g.ntpl);
	s->dnum = g.assigned++;
	s->k = s->started = s->lossy = 0;
}

/* Next honest frame, round-robin over the open datagrams.
 * 1: frame returned, 0: no more honest datagrams, -1: flush batch first. */
static int get_honest(uint8_t **fp, uint16_t *len)
{
	while (g.active) {
		struct slot *s = &g.slots[g.rr];
		struct tpl *tp;
		int idx, drop;

		if (s->tpl < 0) {
			g.rr = (g.rr + 1) % g.nslots;
			continue;
		}
		tp = &g.tpls[s->tpl];
		if (!s->started) {
			if (tp->bgen == g.bgen)
				return -1;
			start_tpl(tp, s->dnum);
			s->started = 1;
		}
		g.rr = (g.rr + 1) % g.nslots;
		idx = s->k++;
		drop = g.loss_thr && xorshift(&g.rng_loss) < g.loss_thr;
		if (drop) {
			s->lossy = 1;
			g.dropped++;
		} else if (g.parts > 1 && idx % g.parts != g.part) {
			/* Another process sends this frame (--part): paced as
			 * if sent, so that the parts stay in step. */
			g.pskip++;
			drop = 1;
		} else {
			tp->bgen = g.bgen;
			*fp = tp->buf + g.stride * idx;
			*len = tp->flen[idx];
		}
		if (s->k == tp->nfr) {
			if (s->lossy) {
				g.lossy++;
			} else {
				g.dgrams++;
				g.payload += (uint64_t)g.size;
			}
			assign(s);
		}
		if (!drop)
			return 1;
	}
	return 0;
}

/* Attack frame for batch slot i, the open unit's next: random id, random
 * source with --spoof, drawn once per unit. */
static uint8_t *get_attack(int i, uint16_t *len)
{
	uint8_t *f = g.att + g.stride * i, *ip = f + ETH_HLEN;
	const struct afr *u = &g.unit[g.ustep];
	uint64_t r, lo;

	if (g.ustep == 0) {
		g.ur = xorshift(&g.rng_att);
		if (g.v6 && g.spoof)
			g.ulo = xorshift(&g.rng_att);
	}
	g.ustep = (g.ustep + 1) % g.nunit;
	r = g.ur;
	lo = g.ulo;
	if (g.akind != AK_FIRST)
		memcpy(f, u->buf, u->len);
	*len = u->len;
	if (!g.v6) {
		put16(ip + 4, (uint16_t)r);
		if (g.spoof) {	/* 198.18.0.0/15 */
			put32(ip + 12, 0xc6120000u | (uint32_t)((r >> 16) & 0x1ffff));
			if (u->l4)
				put16(ip + 26, fr_udp_csum(sum16(ip + 12, 4,
							      g.att_sum)));
		}
		fr_ip4_csum(ip);
	} else {
		put32(ip + 44, (uint32_t)r);
		if (g.spoof) {	/* fd66::/64 */
			put32(ip + 8, 0xfd660000u);
			put32(ip + 12, 0);
			put32(ip + 16, (uint32_t)(lo >> 32));
			put32(ip + 20, (uint32_t)lo);
			if (u->l4)
				put16(ip + 54, fr_udp_csum(sum16(ip + 8, 16,
							      g.att_sum)));
		}
	}
	return f;
}

static void send_batch(struct mmsghdr *m, int n)
{
	for (int off = 0, r; off < n;) {
		r = sendmmsg(g.fd, m + off, (unsigned int)(n - off), 0);
		if (r > 0) {
			off += r;
		} else if (errno == ENOBUFS || errno == EAGAIN) {
			g.retries++;
			sleep_s(50e-6);
		} else if (errno != EINTR) {
			pdie("sendmmsg");
		}
	}
	g.bgen++;
}

/* The timed loop.  Token buckets (capped at about two batches) pace honest
 * (--rate) and attack (--attack-rate) frames; a batch interleaves both
 * evenly.  With --rate 0 honest frames fill what the attack leaves, unless
 * --attack-only: then no honest frame is sent. */
static void run(void)
{
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];
	double R = g.rate, A = g.arate, th = 0, ta = 0, caph = 2, capa;
	double t0, last, target = 1;
	int done = 0;

	memset(m, 0, sizeof(m));
	for (int i = 0; i < BATCH; i++) {
		m[i].msg_hdr.msg_name = &g.sll;
		m[i].msg_hdr.msg_namelen = sizeof(g.sll);
		m[i].msg_hdr.msg_iov = &iov[i];
		m[i].msg_hdr.msg_iovlen = 1;
	}
	capa = 2.0 * BATCH;
	if (R > 0 || g.aonly) {
		caph = 2.0 * BATCH * R / (R + A);
		capa = 2.0 * BATCH * A / (R + A);
		/* sleep until ~200 us worth of frames are due */
		target = (R + A) * 200e-6;
		target = target < 1 ? 1 : target > BATCH ? BATCH : target;
	}
	caph = caph < 2 ? 2 : caph;
	/* --parts: a process that fell behind catches up (by up to a
	 * second's worth), so that the parts of a datagram stay close. */
	if (g.parts > 1 && R > 0)
		caph = R;
	capa = capa < 2 ? 2 : capa;
	t0 = last = now_s();
	while (!done && !stop) {
		double now = now_s(), dt = now - last;
		int nh, na, n = 0, ah = 0, aa = 0;

		if (g.duration > 0 && now - t0 >= g.duration)
			break;
		last = now;
		th = th + R * dt > caph ? caph : th + R * dt;
		ta = ta + A * dt > capa ? capa : ta + A * dt;
		na = (int)ta;
		if (R > 0 || g.aonly) {
			nh = (int)th;
			if (nh + na < (int)target) {
				double w = (target - th - ta) / (R + A);

				sleep_s(w < 2e-6 ? 2e-6 : w);
				continue;
			}
			if (nh + na > BATCH) {
				nh = (int)((double)BATCH * nh / (nh + na) + 0.5);
				na = BATCH - nh;
			}
		} else {
			na = na > BATCH ? BATCH : na;
			nh = BATCH - na;
		}
		for (int j = 0, tot = nh + na; j < tot; j++) {
			uint8_t *f;
			uint16_t len;

			if ((j + 1) * na / tot > j * na / tot) {
				f = get_attack(n, &len);
				aa++;
			} else {
				int r = get_honest(&f, &len);

				done = r == 0;
				if (r <= 0)
					break;
				ah++;
			}
			iov[n].iov_base = f;
			iov[n++].iov_len = len;
			g.bytes += len;
		}
		if (n)
			send_batch(m, n);
		g.honest += (uint64_t)ah;
		g.attack += (uint64_t)aa;
		th -= ah + (double)g.pskip;
		g.pskip = 0;
		ta -= aa;
	}
	g.elapsed = now_s() - t0;
}

static const char usage_text[] =
"usage: gen -i IF --dmac MAC --dst ADDR [options]\n"
"  -i, --iface IF        interface to send on (required)\n"
"      --smac MAC        source MAC (default: the interface's)\n"
"      --dmac MAC        destination MAC (required)\n"
"      --src ADDR        source address (default: an address of IF)\n"
"      --dst ADDR        destination IPv4 or IPv6 address (required)\n"
"      --sport P         UDP source port (default 40000)\n"
"      --dport P         UDP destination port (default 9000)\n"
"      --size BYTES      UDP payload per datagram (default 4416; max 65507\n"
"                        for IPv4, 65527 for IPv6)\n"
"      --mtu M           L3 MTU used to fragment (default 1500)\n"
"      --streams N       datagrams interleaved round-robin (default 16)\n"
"      --order O         inorder|reverse|random (default inorder)\n"
"      --loss PCT        drop each fragment with this probability (default 0)\n"
"      --duration S      seconds to run, 0 = until --count/signal (default 5)\n"
"      --rate FPS        honest frames/s, 0 = as fast as possible (default 0)\n"
"      --attack-rate FPS attack frames/s (default 0)\n"
"      --attack-spoof    attack from random sources (198.18.0.0/15, fd66::/64)\n"
"      --attack-kind K   what each attack unit (one random id) is: first (the\n"
"                        first fragment), rose (first and last fragment),\n"
"                        tiny (--attack-frags 8-byte fragments from offset 0),\n"
"                        overlap (first fragment, then one over its second\n"
"                        half), dup (--attack-frags copies of the first\n"
"                        fragment) (default first)\n"
"      --attack-frags N  frames of a tiny or dup unit (default 8)\n"
"      --attack-only     send attack frames only (needs --attack-rate)\n"
"      --flows F         cycle over source ports sport..sport+F-1 (default 1)\n"
"      --seed S          PRNG seed (default 1)\n"
"      --id-seed S       first IP id from S (default: from the clock)\n"
"      --start-at T      start sending at T (seconds since the epoch), so\n"
"                        that the --part processes start together\n"
"      --count N         stop after N honest datagrams (default: no limit)\n"
"      --csum0           honest IPv4 datagrams carry UDP checksum 0\n"
"      --random-ids      honest datagrams get random ids (default: sequential)\n"
"      --parts N         with --part K: send only the frames of each datagram\n"
"      --part K          whose index is K modulo N (0 <= K < N); N processes\n"
"                        with the same options (--id-seed included) and\n"
"                        K = 0..N-1 send every\n"
"                        frame once, each datagram spread over them (and so,\n"
"                        pinned apart on veth, over CPUs); give --rate\n"
"      --json            print the summary as one JSON object\n";

static const char *o_src, *o_dst, *o_order = "inorder", *o_akind = "first";

/* Types: i int, u uint64, d double, s string, m MAC, f flag (int = 1). */
static const struct optdef {
	const char *name;
	char type;
	void *p;
	double lo, hi;
} defs[] = {
	{ "iface", 's', &g.iface, 0, 0 },	/* first: -i maps to it */
	{ "smac", 'm', g.smac, 0, 0 },		{ "dmac", 'm', g.dmac, 0, 0 },
	{ "src", 's', &o_src, 0, 0 },		{ "dst", 's', &o_dst, 0, 0 },
	{ "sport", 'i', &g.sport, 1, 65535 },	{ "dport", 'i', &g.dport, 1, 65534 },
	{ "size", 'i', &g.size, 12, 65527 },	{ "mtu", 'i', &g.mtu, 68, 65535 },
	{ "streams", 'i', &g.streams, 1, 1 << 20 },
	{ "order", 's', &o_order, 0, 0 },	{ "loss", 'd', &g.loss, 0, 99.9 },
	{ "duration", 'd', &g.duration, 0, 1e9 },
	{ "rate", 'd', &g.rate, 0, 1e10 },
	{ "attack-rate", 'd', &g.arate, 0, 1e10 },
	{ "attack-spoof", 'f', &g.spoof, 0, 0 },
	{ "attack-kind", 's', &o_akind, 0, 0 },
	{ "attack-frags", 'i', &g.afrags, 1, 1024 },
	{ "attack-only", 'f', &g.aonly, 0, 0 },
	{ "flows", 'i', &g.flows, 1, 65535 },	{ "seed", 'u', &g.seed, 0, 1e18 },
	{ "count", 'u', &g.count, 1, 1e18 },	{ "json", 'f', &g.json, 0, 0 },
	{ "csum0", 'f', &g.csum0, 0, 0 },
	{ "random-ids", 'f', &g.rand_ids, 0, 0 },
	{ "start-at", 'd', &g.start_at, 0, 1e11 },
	{ "part", 'i', &g.part, 0, 64 },	{ "id-seed", 'u', &g.id_seed, 1, 1e18 },	{ "parts", 'i', &g.parts, 1, 64 },
};
#define NDEFS	(int)(sizeof(defs) / sizeof(defs[0]))

static void set_opt(const struct optdef *d, const char *a)
{
	unsigned int b[6];
	char *e, c;
	double v;

	if (d->type == 's' || d->type == 'f') {
		if (d->type == 's')
			*(const char **)d->p = a;
		else
			*(int *)d->p = 1;
		return;
	}
	if (d->type == 'm') {
		if (sscanf(a, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3],
			   &b[4], &b[5], &c) == 6 &&
		    (b[0] | b[1] | b[2] | b[3] | b[4] | b[5]) < 256) {
			for (int i = 0; i < 6; i++)
				((uint8_t *)d->p)[i] = (uint8_t)b[i];
			return;
		}
		fprintf(stderr, "gen: bad --%s '%s'\n", d->name, a);
		exit(1);
	}
	v = strtod(a, &e);
	if (*e || e == a || !(v >= d->lo && v <= d->hi) ||
	    (d->type != 'd' && v != (double)(long long)v)) {
		fprintf(stderr, "gen: bad --%s '%s' (%g..%g)\n", d->name, a,
			d->lo, d->hi);
		exit(1);
	}
	if (d->type == 'i')
		*(int *)d->p = (int)v;
	else if (d->type == 'u')
		*(uint64_t *)d->p = (uint64_t)v;
	else
		*(double *)d->p = v;
}

static void get_src(void)	/* first address of IF (IPv6: not link-local) */
{
	struct ifaddrs *ifa, *i;
	int fam = g.v6 ? AF_INET6 : AF_INET, found = 0;

	if (getifaddrs(&ifa))
		pdie("getifaddrs");
	for (i = ifa; i && found < 2; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != fam ||
		    strcmp(i->ifa_name, g.iface))
			continue;
		if (fam == AF_INET) {
			g.s4 = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
			found = 2;
		} else {
			g.s6 = ((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
			found = IN6_IS_ADDR_LINKLOCAL(&g.s6) ? 1 : 2;
		}
	}
	freeifaddrs(ifa);
	if (!found)
		die("no --src and no address of --dst's family on the interface");
}

static void parse(int argc, char **argv)
{
	static const uint8_t zero[6];
	struct option lo[NDEFS + 2];
	int c;

	for (int i = 0; i < NDEFS; i++)
		lo[i] = (struct option){ defs[i].name, defs[i].type == 'f' ?
					 no_argument : required_argument,
					 NULL, 256 + i };
	lo[NDEFS] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[NDEFS + 1] = (struct option){ 0, 0, 0, 0 };
	g.dport = 9000, g.sport = 40000, g.size = 4416, g.mtu = 1500;
	g.streams = 16, g.flows = 1, g.seed = 1, g.duration = 5, g.afrags = 8;
	g.parts = 1;
	while ((c = getopt_long(argc, argv, "i:h", lo, NULL)) != -1) {
		c = c == 'i' ? 256 : c;
		if (c < 256 || c >= 256 + NDEFS) {
			fputs(usage_text, c == 'h' ? stdout : stderr);
			exit(c != 'h');
		}
		set_opt(&defs[c - 256], optarg);
	}
	if (optind < argc || !g.iface || !o_dst || !memcmp(g.dmac, zero, 6)) {
		fputs(usage_text, stderr);
		die("-i/--iface, --dmac and --dst are required");
	}
	g.order = !strcmp(o_order, "inorder") ? ORD_IN :
		  !strcmp(o_order, "reverse") ? ORD_REV :
		  !strcmp(o_order, "random") ? ORD_RAND : -1;
	if (g.order < 0)
		die("bad --order (inorder|reverse|random)");
	for (g.akind = 0; g.akind < NAKINDS; g.akind++)
		if (!strcmp(o_akind, akinds[g.akind]))
			break;
	if (g.akind == NAKINDS)
		die("bad --attack-kind (first|rose|tiny|overlap|dup)");
	if (g.aonly && !(g.arate > 0))
		die("--attack-only needs --attack-rate");
	if (inet_pton(AF_INET6, o_dst, &g.d6) == 1)
		g.v6 = 1;
	else if (inet_pton(AF_INET, o_dst, &g.d4) != 1)
		die("bad --dst");
	if (o_src && inet_pton(g.v6 ? AF_INET6 : AF_INET, o_src,
			       g.v6 ? (void *)&g.s6 : (void *)&g.s4) != 1)
		die("bad --src (must be of --dst's family)");
	if (!g.v6 && g.size > 65507)
		die("--size: at most 65507 for IPv4");
	if (g.v6 && g.mtu < 56)
		die("--mtu: at least 56 for IPv6");
	if (g.sport + g.flows - 1 > 65535)
		die("--sport + --flows - 1 must be <= 65535");
	if (g.part >= g.parts)
		die("--part must be below --parts");
	g.ihl = g.v6 ? 48 : 20;
	g.fp = (g.mtu - g.ihl) / 8 * 8;	/* fragment payload, Linux style */
	if (!o_src)
		get_src();
}

static void setup_socket(void)
{
	static const uint8_t zero[6];
	int one = 1, buf = 64 << 20;
	struct ifreq ifr;

	g.fd = socket(AF_PACKET, SOCK_RAW, 0);	/* protocol 0: send only */
	if (g.fd < 0)
		pdie("socket(AF_PACKET)");
	g.sll.sll_family = AF_PACKET;
	g.sll.sll_ifindex = (int)if_nametoindex(g.iface);
	if (!g.sll.sll_ifindex)
		pdie(g.iface);
	g.sll.sll_halen = 6;
	memcpy(g.sll.sll_addr, g.dmac, 6);
	if (bind(g.fd, (struct sockaddr *)&g.sll, sizeof(g.sll)))
		pdie("bind");
	g.sll.sll_protocol = htons(g.v6 ? ETH_P_IPV6 : ETH_P_IP);
	if (setsockopt(g.fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)))
		fprintf(stderr, "gen: PACKET_QDISC_BYPASS: %s\n", strerror(errno));
	if (setsockopt(g.fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)) &&
	    setsockopt(g.fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf)))
		fprintf(stderr, "gen: SO_SNDBUF: %s\n", strerror(errno));
	if (!memcmp(g.smac, zero, 6)) {
		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", g.iface);
		if (ioctl(g.fd, SIOCGIFHWADDR, &ifr))
			pdie("SIOCGIFHWADDR");
		memcpy(g.smac, ifr.ifr_hwaddr.sa_data, 6);
	}
}

int main(int argc, char **argv)
{
	static const char *const key[] = { "frames_sent", "honest_frames",
		"attack_frames", "datagrams_sent", "datagrams_lossy",
		"bytes_sent", "payload_bytes" };
	struct sigaction sa = { .sa_handler = on_sig };

	parse(argc, argv);
	setup_socket();
	build_templates();
	g.nslots = g.active = g.streams;
	g.slots = xmalloc(sizeof(*g.slots) * g.nslots);
	for (int i = 0; i < g.nslots; i++)
		assign(&g.slots[i]);	/* tpl 0 counts as active */
	g.bgen = 1;
	g.rng_loss = mix(g.seed);
	g.rng_att = mix(g.seed * 0x9e3779b97f4a7c15ull + 7);
	if (g.loss > 0)
		g.loss_thr = (uint64_t)(g.loss / 100.0 * 18446744073709551615.0);
	/* Start identifications away from those of a previous run, whose
	 * incomplete datagrams may still sit in the receiver. */
	/* The parts of one spread stream must agree on the ids (--id-seed). */
	g.id = (uint32_t)mix(g.seed ^ (g.id_seed ? g.id_seed :
					(uint64_t)(now_s() * 1e9)));
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	if (g.start_at > 0) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		sleep_s(g.start_at - (ts.tv_sec + ts.tv_nsec * 1e-9));
	}
	run();
	uint64_t val[] = { g.honest + g.attack, g.honest, g.attack, g.dgrams,
			   g.lossy, g.bytes, g.payload };
	for (int i = 0; i < 7; i++)
		printf(g.json ? "%s\"%s\":%llu" : "%s%-16s %llu\n",
		       g.json ? (i ? "," : "{") : "", key[i],
		       (unsigned long long)val[i]);
	printf(g.json ? ",\"elapsed_s\":%.6f,\"frames_per_s\":%.1f,"
			"\"enobufs_retries\":%llu}\n" :
	       "elapsed_s        %.6f\nframes_per_s     %.1f\n"
	       "enobufs_retries  %llu\nfrags_dropped    %llu\n", g.elapsed,
	       g.elapsed > 0 ? (double)val[0] / g.elapsed : 0.0,
	       (unsigned long long)g.retries, (unsigned long long)g.dropped);
	return 0;
}
