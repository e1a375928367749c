// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fragsend: send crafted IPv4 / IPv6 fragments on an AF_PACKET socket.
 *
 * The datagram is UDP (payload in the udpcheck format, seq = ID) or, with
 * --proto icmp, an ICMP / ICMPv6 echo request with the same payload.  Its
 * fragmentable part (L4 header + data) is cut either by --mtu or by an
 * explicit --frags list and sent as Ethernet frames built here.
 *
 *   fragsend -i IFACE --smac MAC --dmac MAC --src ADDR --dst ADDR --dport P
 *            [--sport P] [--vlan V] --id ID --size S [--count N]
 *            [--frags SPEC | --mtu M [--order inorder|reverse|random|oddeven]
 *            [--seed X]] [--dup | --dup-pct P] [--proto udp|icmp]
 *            [--exthdr hbh,dst,rt]
 *            [--gap-us U] [--cpus A,B,...]
 *
 * --order oddeven: fragments 1, 3, 5, ... then 0, 2, 4, ...  --dup sends
 * every frame twice; --dup-pct P each with probability P % (seeded).
 *
 * SPEC: comma-separated OFF+LEN items (bytes of the fragmentable part),
 * sent in the given order, with optional suffixes
 *   M  force MF=1          L  force MF=0 (default: MF=0 iff OFF+LEN == total)
 *   X  data XOR 0xA5       !  allow OFF that is not a multiple of 8 (the
 *                             header says OFF & ~7, the data starts at OFF)
 * LEN may run past the datagram's end: the payload pattern continues.
 *
 * --count N sends datagrams ID..ID+N-1 (seq = ID), their fragments
 * interleaved round-robin: item 0 of every datagram, then item 1, ...
 *
 * --cpus A,B,...: item r of every datagram is sent from CPU list[r % n]
 * (the process moves there first), so each datagram's fragments arrive on
 * several CPUs, as from senders on different CPUs (on veth the receiving
 * CPU is the sending one).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <net/if.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "frame.h"
#include "payload.h"

/* Largest fragmentable part, including bytes past the datagram's end. */
#define FS_MAX_DATA	(128 * 1024)
#define FS_MAX_FRAME	(70 * 1024)
#define FS_MAX_ITEMS	8192

#define EXT_HBH		(1U << 0)
#define EXT_DST		(1U << 1)
#define EXT_RT		(1U << 2)

struct item {
	uint32_t off;
	uint32_t len;
	int mf;		/* -1: automatic, 0 / 1 forced */
	int flip;
};

struct dgram {
	uint32_t id;
	uint32_t total;		/* L4 header + data */
	uint8_t *data;		/* dlen bytes, pattern continued */
	uint32_t dlen;
	uint32_t *order;	/* indices into the item list */
	uint32_t nitems;
};

static struct {
	const char *ifname;
	uint8_t smac[6], dmac[6];
	int have_smac, have_dmac;
	int family;
	uint8_t src[16], dst[16];
	int have_src, have_dst;
	uint16_t sport, dport;
	int vlan;
	uint32_t id;
	int have_id;
	long size;
	uint32_t count;
	const char *frags;
	uint32_t mtu;
	int cpus[64];
	int ncpus;
	int order;		/* 0 inorder, 1 reverse, 2 random, 3 oddeven */
	uint64_t seed;
	int dup;
	uint32_t dup_pct;
	int icmp;
	unsigned int ext;
	unsigned long gap_us;
} cfg = {
	.sport = 40000,
	.vlan = -1,
	.size = -1,
	.count = 1,
	.seed = 1,
};

static void usage(void)
{
	fprintf(stderr,
		"usage: fragsend -i IFACE --smac MAC --dmac MAC --src ADDR --dst ADDR --dport P\n"
		"                [--sport P] [--vlan V] --id ID --size S [--count N]\n"
		"                [--frags SPEC | --mtu M [--order inorder|reverse|random|oddeven] [--seed X]]\n"
		"                [--dup | --dup-pct P] [--proto udp|icmp] [--exthdr hbh,dst,rt] [--gap-us U]\n"
		"                [--cpus A,B,...]\n");
	exit(2);
}

static void die(const char *msg, const char *arg)
{
	fprintf(stderr, "fragsend: %s%s%s\n", msg, arg ? " " : "",
		arg ? arg : "");
	exit(2);
}

static unsigned long long parse_num(const char *s, const char *what,
				    unsigned long long max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v > max)
		die(what, s);
	return v;
}

static void parse_mac(const char *s, uint8_t *mac)
{
	unsigned int b[6];
	char c;
	int i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3],
		   &b[4], &b[5], &c) != 6)
		die("bad MAC", s);
	for (i = 0; i < 6; i++) {
		if (b[i] > 0xff)
			die("bad MAC", s);
		mac[i] = b[i];
	}
}

static void parse_ip(const char *s, uint8_t *addr)
{
	int fam;

	if (inet_pton(AF_INET, s, addr) == 1)
		fam = AF_INET;
	else if (inet_pton(AF_INET6, s, addr) == 1)
		fam = AF_INET6;
	else
		die("bad address", s);
	if (cfg.family && cfg.family != fam)
		die("--src and --dst of different families", NULL);
	cfg.family = fam;
}

static void parse_ext(const char *s)
{
	char *copy = strdup(s), *tok, *save = NULL;

	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "hbh"))
			cfg.ext |= EXT_HBH;
		else if (!strcmp(tok, "dst"))
			cfg.ext |= EXT_DST;
		else if (!strcmp(tok, "rt"))
			cfg.ext |= EXT_RT;
		else
			die("bad --exthdr item", tok);
	}
	free(copy);
}

/* Parse --frags into items[]; returns the count. */
static uint32_t parse_frags(const char *spec, struct item *items)
{
	char *copy = strdup(spec), *tok, *save = NULL;
	uint32_t n = 0;

	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		struct item *it = &items[n];
		unsigned long off, len;
		int allow = 0;
		char *p = tok, *end;

		if (n >= FS_MAX_ITEMS)
			die("too many --frags items", NULL);
		errno = 0;
		off = strtoul(p, &end, 10);
		if (errno || end == p || *end != '+')
			die("bad --frags item", tok);
		p = end + 1;
		len = strtoul(p, &end, 10);
		if (errno || end == p)
			die("bad --frags item", tok);
		it->mf = -1;
		it->flip = 0;
		for (p = end; *p; p++) {
			switch (*p) {
			case 'M':
				it->mf = 1;
				break;
			case 'L':
				it->mf = 0;
				break;
			case 'X':
				it->flip = 1;
				break;
			case '!':
				allow = 1;
				break;
			default:
				die("bad --frags suffix in", tok);
			}
		}
		if ((off & 7) && !allow)
			die("offset not a multiple of 8 (use '!'):", tok);
		if (off > 65535 || len > 65535 || off + len > FS_MAX_DATA)
			die("--frags item out of range", tok);
		it->off = off;
		it->len = len;
		n++;
	}
	free(copy);
	if (!n)
		die("empty --frags", NULL);
	return n;
}

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static size_t ext_len(void)
{
	return 8 * __builtin_popcount(cfg.ext);
}

/* L3 header length of one frame (IPv6: incl. ext headers, frag header). */
static size_t l3_len(void)
{
	if (cfg.family == AF_INET)
		return 20;
	return 40 + ext_len() + 8;
}

/* Build the fragmentable part of datagram `id` (and the overrun). */
static void build_dgram(struct dgram *d)
{
	uint32_t seq = d->id, plen = (uint32_t)cfg.size, l4len = plen + 8;
	uint8_t *p = d->data;
	uint64_t sum;

	memset(p, 0, d->dlen);
	/* Payload (tests/payload.h), continued past the end for overrun
	 * items. */
	pl_fill(p + 8, d->dlen - 8, plen, seq);
	d->total = l4len;

	if (!cfg.icmp) {
		fr_udp(p, cfg.sport, cfg.dport, l4len);
	} else {
		/* Echo request. */
		p[0] = cfg.family == AF_INET ? 8 : 128;
		p[1] = 0;
		put32(p + 4, seq);	/* identifier: ID >> 16, sequence: ID & 0xffff */
	}

	/* Checksum (pseudo-header for UDP and ICMPv6, RFC 768, RFC 8200 8.1). */
	sum = cfg.family == AF_INET && cfg.icmp ? 0 :
	      fr_pseudo(cfg.family == AF_INET6, cfg.src, cfg.dst,
			cfg.icmp ? 58 : 17, l4len);
	sum = sum16(p, l4len, sum);
	if (cfg.icmp)
		put16(p + 2, csum_fold(sum));
	else
		put16(p + 6, fr_udp_csum(sum));
}

/* Build one frame into buf; returns its length. */
static size_t build_frame(uint8_t *buf, const struct dgram *d,
			  const struct item *it)
{
	uint8_t *p = buf;
	int mf = it->mf;
	uint32_t i;

	if (mf < 0)
		mf = it->off + it->len != d->total;

	p += fr_eth(p, cfg.dmac, cfg.smac,
		    &(struct fr_vlan){ FR_P_8021Q, (uint16_t)(cfg.vlan & 0x0fff) },
		    cfg.vlan >= 0, cfg.family == AF_INET ? FR_P_IP : FR_P_IPV6);
	if (cfg.family == AF_INET) {
		uint16_t fo = (it->off >> 3) | (mf ? FR_IP4_MF : 0);

		fr_ip4(p, 20, 20 + it->len, d->id, fo, 64, cfg.icmp ? 1 : 17,
		       cfg.src, cfg.dst);
		p += 20;
	} else {
		uint32_t plen = ext_len() + 8 + it->len;
		uint8_t l4 = cfg.icmp ? 58 : 17;
		uint8_t *nh = &p[6];

		fr_ip6(p, 0, plen, 0, 64, cfg.src, cfg.dst);
		p += 40;
		/* 8-byte extension headers in RFC 8200 order: hop-by-hop and
		 * destination options (one PadN option), routing
		 * (experimental type 253, no segments left). */
		static const struct { unsigned int bit; uint8_t nh, b2, b3; }
		exts[] = { { EXT_HBH, 0, 1, 4 }, { EXT_DST, 60, 1, 4 },
			   { EXT_RT, 43, 253, 0 } };

		for (size_t e = 0; e < sizeof(exts) / sizeof(exts[0]); e++) {
			if (!(cfg.ext & exts[e].bit))
				continue;
			*nh = exts[e].nh;
			nh = &p[0];
			p[1] = 0;
			p[2] = exts[e].b2;
			p[3] = exts[e].b3;
			memset(p + 4, 0, 4);
			p += 8;
		}
		*nh = FR_PROTO_FRAG6;
		fr_frag6(p, l4, it->off, mf, d->id);
		p += 8;
	}
	for (i = 0; i < it->len; i++)
		p[i] = d->data[it->off + i] ^ (it->flip ? 0xa5 : 0);
	p += it->len;
	return p - buf;
}

static const struct option opts[] = {
	{ "iface", required_argument, NULL, 'i' },
	{ "smac", required_argument, NULL, 'S' },
	{ "dmac", required_argument, NULL, 'D' },
	{ "src", required_argument, NULL, 's' },
	{ "dst", required_argument, NULL, 'd' },
	{ "sport", required_argument, NULL, 'P' },
	{ "dport", required_argument, NULL, 'p' },
	{ "vlan", required_argument, NULL, 'v' },
	{ "id", required_argument, NULL, 'I' },
	{ "size", required_argument, NULL, 'z' },
	{ "count", required_argument, NULL, 'c' },
	{ "frags", required_argument, NULL, 'f' },
	{ "mtu", required_argument, NULL, 'm' },
	{ "order", required_argument, NULL, 'o' },
	{ "seed", required_argument, NULL, 'r' },
	{ "dup", no_argument, NULL, 'u' },
	{ "dup-pct", required_argument, NULL, 'Q' },
	{ "proto", required_argument, NULL, 't' },
	{ "exthdr", required_argument, NULL, 'e' },
	{ "gap-us", required_argument, NULL, 'g' },
	{ "cpus", required_argument, NULL, 'C' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void parse_args(int argc, char **argv)
{
	int opt;

	while ((opt = getopt_long(argc, argv, "i:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			cfg.ifname = optarg;
			break;
		case 'S':
			parse_mac(optarg, cfg.smac);
			cfg.have_smac = 1;
			break;
		case 'D':
			parse_mac(optarg, cfg.dmac);
			cfg.have_dmac = 1;
			break;
		case 's':
			parse_ip(optarg, cfg.src);
			cfg.have_src = 1;
			break;
		case 'd':
			parse_ip(optarg, cfg.dst);
			cfg.have_dst = 1;
			break;
		case 'P':
			cfg.sport = parse_num(optarg, "bad --sport", 65535);
			break;
		case 'p':
			cfg.dport = parse_num(optarg, "bad --dport", 65535);
			break;
		case 'v':
			cfg.vlan = parse_num(optarg, "bad --vlan", 4095);
			break;
		case 'I':
			cfg.id = parse_num(optarg, "bad --id", 0xffffffffULL);
			cfg.have_id = 1;
			break;
		case 'z':
			cfg.size = parse_num(optarg, "bad --size", 65527);
			break;
		case 'c':
			cfg.count = parse_num(optarg, "bad --count", 100000);
			break;
		case 'f':
			cfg.frags = optarg;
			break;
		case 'm':
			cfg.mtu = parse_num(optarg, "bad --mtu", 65535);
			break;
		case 'o':
			if (!strcmp(optarg, "inorder"))
				cfg.order = 0;
			else if (!strcmp(optarg, "reverse"))
				cfg.order = 1;
			else if (!strcmp(optarg, "random"))
				cfg.order = 2;
			else if (!strcmp(optarg, "oddeven"))
				cfg.order = 3;
			else
				die("bad --order", optarg);
			break;
		case 'r':
			cfg.seed = parse_num(optarg, "bad --seed", ~0ULL);
			break;
		case 'u':
			cfg.dup = 1;
			break;
		case 'Q':
			cfg.dup_pct = parse_num(optarg, "bad --dup-pct", 100);
			break;
		case 't':
			if (!strcmp(optarg, "udp"))
				cfg.icmp = 0;
			else if (!strcmp(optarg, "icmp"))
				cfg.icmp = 1;
			else
				die("bad --proto", optarg);
			break;
		case 'e':
			parse_ext(optarg);
			break;
		case 'C': {
			char *tok, *save = NULL, *list = strdup(optarg);

			for (tok = strtok_r(list, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				if (cfg.ncpus >= 64)
					die("too many --cpus", optarg);
				cfg.cpus[cfg.ncpus++] =
					parse_num(tok, "bad --cpus", 4095);
			}
			free(list);
			break;
		}
		case 'g':
			cfg.gap_us = parse_num(optarg, "bad --gap-us",
					       100000000);
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (!cfg.ifname || !cfg.have_smac || !cfg.have_dmac ||
	    !cfg.have_src || !cfg.have_dst || !cfg.have_id || cfg.size < 8)
		usage();
	if (!cfg.icmp && !cfg.dport)
		die("--dport is required for UDP", NULL);
	if (!!cfg.frags == !!cfg.mtu)
		die("give exactly one of --frags and --mtu", NULL);
	if (cfg.ext && cfg.family != AF_INET6)
		die("--exthdr needs IPv6 addresses", NULL);
	if (cfg.family == AF_INET && cfg.size > 65507)
		die("--size too large for IPv4 (max 65507)", NULL);
	if (cfg.family == AF_INET && cfg.count > 1 &&
	    (uint64_t)cfg.id + cfg.count - 1 > 0xffff)
		fprintf(stderr, "fragsend: warning: IPv4 ids wrap at 65536\n");
}

/* Item list for --mtu: consecutive pieces of the fragmentable part. */
static uint32_t mtu_items(struct item *items)
{
	uint32_t total = (uint32_t)cfg.size + 8, hdr = l3_len(), step, off, n;

	if (cfg.mtu <= hdr + 8)
		die("--mtu too small", NULL);
	step = (cfg.mtu - hdr) / 8 * 8;
	for (n = 0, off = 0; off < total; off += step, n++) {
		if (n >= FS_MAX_ITEMS)
			die("too many fragments", NULL);
		items[n].off = off;
		items[n].len = total - off < step ? total - off : step;
		items[n].mf = -1;
		items[n].flip = 0;
	}
	return n;
}

int main(int argc, char **argv)
{
	unsigned long frames = 0;
	struct sockaddr_ll sll;
	struct dgram *dg;
	struct item *items;
	uint32_t nitems, i, r, dlen;
	uint8_t *frame;
	int fd, ifindex, v;

	parse_args(argc, argv);
	rng_state = cfg.seed;

	items = calloc(FS_MAX_ITEMS, sizeof(*items));
	frame = malloc(FS_MAX_FRAME);
	dg = calloc(cfg.count, sizeof(*dg));
	if (!items || !frame || !dg) {
		perror("fragsend: alloc");
		return 1;
	}
	nitems = cfg.frags ? parse_frags(cfg.frags, items) : mtu_items(items);
	dlen = (uint32_t)cfg.size + 8;
	for (i = 0; i < nitems; i++)
		if (items[i].off + items[i].len > dlen)
			dlen = items[i].off + items[i].len;

	ifindex = if_nametoindex(cfg.ifname);
	if (!ifindex) {
		fprintf(stderr, "fragsend: no interface %s\n", cfg.ifname);
		return 1;
	}
	fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0) {
		perror("fragsend: socket(AF_PACKET)");
		return 1;
	}
	v = 8 * 1024 * 1024;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = 0;	/* send only */
	sll.sll_ifindex = ifindex;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		perror("fragsend: bind");
		return 1;
	}
	sll.sll_halen = 6;
	memcpy(sll.sll_addr, cfg.dmac, 6);

	for (i = 0; i < cfg.count; i++) {
		struct dgram *d = &dg[i];
		uint32_t j;

		d->id = cfg.id + i;
		if (cfg.family == AF_INET)
			d->id &= 0xffff;
		d->dlen = dlen;
		d->data = malloc(dlen);
		d->order = malloc(nitems * sizeof(*d->order));
		if (!d->data || !d->order) {
			perror("fragsend: alloc");
			return 1;
		}
		build_dgram(d);
		d->nitems = nitems;
		for (j = 0; j < nitems; j++)
			d->order[j] = j;
		if (cfg.frags)
			continue;	/* --frags: the given order */
		if (cfg.order == 1) {
			for (j = 0; j < nitems / 2; j++) {
				uint32_t t = d->order[j];

				d->order[j] = d->order[nitems - 1 - j];
				d->order[nitems - 1 - j] = t;
			}
		} else if (cfg.order == 2) {
			for (j = nitems - 1; j > 0; j--) {
				uint32_t k = rng_next() % (j + 1), t;

				t = d->order[j];
				d->order[j] = d->order[k];
				d->order[k] = t;
			}
		} else if (cfg.order == 3) {
			uint32_t k = 0;

			for (j = 1; j < nitems; j += 2)
				d->order[k++] = j;
			for (j = 0; j < nitems; j += 2)
				d->order[k++] = j;
		}
	}

	/* Round-robin over the datagrams: fragment r of each, r = 0.. */
	for (r = 0; r < nitems; r++) {
		if (cfg.ncpus) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET(cfg.cpus[r % cfg.ncpus], &set);
			if (sched_setaffinity(0, sizeof(set), &set)) {
				perror("fragsend: sched_setaffinity");
				return 1;
			}
		}
		for (i = 0; i < cfg.count; i++) {
			const struct item *it = &items[dg[i].order[r]];
			size_t len = build_frame(frame, &dg[i], it);
			int k;

			if (len > FS_MAX_FRAME) {
				fprintf(stderr, "fragsend: frame too long\n");
				return 1;
			}
			int copies = cfg.dup ? 2 : 1;

			if (cfg.dup_pct && rng_next() % 100 < cfg.dup_pct)
				copies = 2;
			for (k = 0; k < copies; k++) {
				ssize_t n;
				int tries = 0;

				for (;;) {
					n = sendto(fd, frame, len, 0,
						   (struct sockaddr *)&sll,
						   sizeof(sll));
					if (n >= 0 || errno != ENOBUFS ||
					    ++tries > 1000)
						break;
					usleep(100);
				}
				if (n < 0) {
					fprintf(stderr, "fragsend: sendto (%zu bytes): %s\n",
						len, strerror(errno));
					return 1;
				}
				frames++;
				if (cfg.gap_us)
					usleep(cfg.gap_us);
			}
		}
	}
	printf("fragsend: frames=%lu datagrams=%u\n", frames, cfg.count);
	for (i = 0; i < cfg.count; i++) {
		free(dg[i].data);
		free(dg[i].order);
	}
	free(dg);
	free(items);
	free(frame);
	close(fd);
	return 0;
}
