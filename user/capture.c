// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xfrag capture IFACE: the fragments xfrag drops (every fragment whose run
 * moved a counter of loss), and with --deliver the datagrams it rebuilds
 * in the frame, as pcapng with each packet's outcome in a comment.
 *
 * BPF writes struct xfrag_cap_rec records into the pinned ring buffer
 * xfrag_capture while XFRAG_CFG_CAPTURE is set in the config (this command
 * sets it, with the sampling, rate and snap length, and clears it when it
 * ends).  pcapng is written here (the blocks are simple, and Debian 12's
 * libpcap 1.10 writes only pcap, which has no comments): a Section Header,
 * one Interface Description (Ethernet, nanosecond time stamps), an
 * Enhanced Packet Block per record with opt_comment.  `-w -` streams it
 * (tcpdump -r -, wireshark -k -i -).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "common.h"

#define XDP_DROP_ 1
#define XDP_PASS_ 2

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* ---- pcapng ------------------------------------------------------------- */

struct blk {
	__u8 b[XFRAG_CAP_SNAP + 1024];
	size_t n;
};

static void put(struct blk *k, const void *p, size_t n)
{
	if (k->n + n > sizeof(k->b))
		n = sizeof(k->b) - k->n;
	memcpy(k->b + k->n, p, n);
	k->n += n;
}

static void put32(struct blk *k, __u32 v) { put(k, &v, 4); }
static void put16(struct blk *k, __u16 v) { put(k, &v, 2); }

static void pad4(struct blk *k)
{
	static const __u8 z[4];

	put(k, z, (4 - k->n % 4) % 4);
}

static void opt(struct blk *k, __u16 code, const void *v, __u16 len)
{
	put16(k, code);
	put16(k, len);
	put(k, v, len);
	pad4(k);
}

static void opt_end(struct blk *k)
{
	put16(k, 0);
	put16(k, 0);
}

/* A block: type, total length, body, total length again. */
static int emit(FILE *f, __u32 type, const struct blk *body)
{
	__u32 total = 12 + body->n;

	if (fwrite(&type, 4, 1, f) != 1 || fwrite(&total, 4, 1, f) != 1 ||
	    fwrite(body->b, 1, body->n, f) != body->n ||
	    fwrite(&total, 4, 1, f) != 1)
		return -EIO;
	return 0;
}

int xf_pcapng_header(FILE *f, const char *ifname, __u32 snaplen)
{
	static struct blk k;
	__u8 tsresol = 9;	/* 10^-9 s */
	__u64 unknown = ~0ULL;

	k.n = 0;
	put32(&k, 0x1A2B3C4D);	/* byte-order magic */
	put16(&k, 1);
	put16(&k, 0);
	put(&k, &unknown, 8);	/* section length: not given */
	opt(&k, 4, "xfrag capture", 13);	/* shb_userappl */
	opt_end(&k);
	if (emit(f, 0x0A0D0D0A, &k))
		return -EIO;
	k.n = 0;
	put16(&k, 1);		/* LINKTYPE_ETHERNET */
	put16(&k, 0);
	put32(&k, snaplen);
	opt(&k, 2, ifname, strlen(ifname));	/* if_name */
	opt(&k, 9, &tsresol, 1);		/* if_tsresol */
	opt_end(&k);
	return emit(f, 1, &k);
}

int xf_pcapng_packet(FILE *f, __u64 ts_ns, const void *data, __u32 caplen,
		     __u32 len, const char *comment)
{
	static struct blk k;

	k.n = 0;
	put32(&k, 0);			/* interface 0 */
	put32(&k, ts_ns >> 32);
	put32(&k, (__u32)ts_ns);
	put32(&k, caplen);
	put32(&k, len);
	put(&k, data, caplen);
	pad4(&k);
	if (comment && *comment)
		opt(&k, 1, comment, strlen(comment) > 4000 ? 4000 :
			strlen(comment));	/* opt_comment */
	opt_end(&k);
	return emit(f, 6, &k);
}

/* ---- Records ------------------------------------------------------------ */

/* A --reason word matches a counter: its name, or its name's last part
 * ("overlap" is frag_overlap; "timeout" frag_timeout and reasm_timeout). */
static bool word_matches(const char *w, const char *name)
{
	size_t lw = strlen(w), ln = strlen(name);

	return !strcmp(w, name) ||
	       (ln > lw && name[ln - lw - 1] == '_' &&
		!strcmp(name + ln - lw, w));
}

struct cap {
	FILE *out;
	__u64 reasons;		/* counter bits asked for; 0: all */
	__u64 count;		/* stop after this many written; 0: never */
	__u64 written, skipped;
	__s64 mono_to_real;	/* ns */
	int err;
};

/* The comment of a record: verdict, CPU, then the counters it moved. */
void xf_cap_comment(char *buf, size_t len, __u64 moved, __u32 verdict,
		    __u32 cpu)
{
	size_t n;

	/* The verdict is this frame's; the counters say what was lost (a
	 * held fragment that evicted another datagram is dropped from the
	 * stack's view too, but kept by xfrag). */
	n = verdict == (__u32)-1 ? snprintf(buf, len, "; counters moved:") :
	    snprintf(buf, len, "xfrag on cpu %u, verdict %s; counters moved:",
		     cpu, verdict == XDP_DROP_ ? "drop" :
		     verdict == XDP_PASS_ ? "pass" : "redirect");
	for (int i = 0; i < xf_ncounters && n < len; i++) {
		__u64 bit = xf_counters[i].bit;

		if (!(moved & bit) || (XFRAG_CAP_BENIGN & bit &&
				       bit != XFRAG_CAP_DELIVERED))
			continue;
		n += snprintf(buf + n, len - n, " %s", xf_counters[i].name);
	}
	/* Ended by a newline: scapy 2.5 (Debian 12) reads a comment only up
	 * to one, and drops it without. */
	if (n < len - 1)
		snprintf(buf + n, len - n, "\n");
}

/*
 * A frame for a datagram the sweeper timed out: Ethernet, then its IPv4
 * header (MF set, no payload) or IPv6 header and Fragment header, made from
 * its key; n bytes written to b.
 */
size_t xf_cap_key_frame(__u8 *b, const struct xfrag_key *k)
{
	size_t n = 14;

	memset(b, 0, 14 + 40 + 8);
	if (k->family == XFRAG_AF_INET6) {
		b[12] = 0x86;
		b[13] = 0xdd;
		b[14] = 0x60;
		b[19] = 8;		/* payload: the Fragment header */
		b[20] = 44;
		memcpy(b + 22, k->saddr, 16);
		memcpy(b + 38, k->daddr, 16);
		b[54] = 59;		/* No Next Header */
		b[57] = 1;		/* offset 0, M */
		memcpy(b + 58, &k->id, 4);
		return n + 48;
	}
	{
		__u8 *ip = b + 14;
		__u32 sum = 0;

		b[12] = 0x08;
		ip[0] = 0x45;
		ip[3] = 20;
		memcpy(ip + 4, &k->id, 2);
		ip[6] = 0x20;		/* MF */
		ip[9] = k->proto;
		memcpy(ip + 12, &k->saddr[0], 4);
		memcpy(ip + 16, &k->daddr[0], 4);
		for (int i = 0; i < 20; i += 2)
			sum += ip[i] << 8 | ip[i + 1];
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		ip[10] = ~sum >> 8;
		ip[11] = ~sum;
	}
	return n + 20;
}

static int on_rec(void *ctx, void *data, size_t size)
{
	const struct xfrag_cap_rec *r = data;
	struct cap *c = ctx;
	char comment[1024];
	__u32 caplen;

	if (size < sizeof(*r) || stop)
		return 0;
	if (c->reasons && !(r->moved & c->reasons)) {
		c->skipped++;
		return 0;
	}
	if (r->kind == XFRAG_CAP_SWEPT) {
		__u8 frame[64];
		size_t n = xf_cap_key_frame(frame, &r->key), m;

		m = snprintf(comment, sizeof(comment), "xfrag on cpu %u, "
			     "sweeper: datagram timed out holding %u "
			     "fragments (this frame is made from its key; "
			     "vlan %u)", r->cpu, r->nfrags, r->key.vlan);
		xf_cap_comment(comment + m, sizeof(comment) - m, r->moved,
			       (__u32)-1, r->cpu);
		if (xf_pcapng_packet(c->out, r->ts_ns + c->mono_to_real, frame,
				     n, n, comment)) {
			c->err = -EIO;
			return -EIO;
		}
		goto written;
	}
	caplen = r->caplen > XFRAG_CAP_SNAP ? XFRAG_CAP_SNAP : r->caplen;
	xf_cap_comment(comment, sizeof(comment), r->moved, r->verdict, r->cpu);
	if (xf_pcapng_packet(c->out, r->ts_ns + c->mono_to_real, r->data,
			     caplen, r->len < caplen ? caplen : r->len,
			     comment)) {
		c->err = -EIO;
		return -EIO;
	}
written:
	fflush(c->out);
	c->written++;
	if (c->count && c->written >= c->count)
		stop = 1;
	return 0;
}

static int set_capture(const char *ifname, bool on, __u32 flags,
		       __u32 sample, __u32 rate, __u32 snap, bool *was_on)
{
	struct xfrag_config cfg;
	__u32 zero = 0;
	int fd = xf_pin_open(ifname, "xfrag_config"), err = 0;

	if (fd < 0)
		return fd;
	if (bpf_map_lookup_elem(fd, &zero, &cfg)) {
		err = -errno;
		goto out;
	}
	if (was_on)
		*was_on = cfg.flags & XFRAG_CFG_CAPTURE;
	if (on) {
		struct xfrag_capcfg cc = { .cap_sample = sample,
					   .cap_rate = rate, .cap_snap = snap };
		int cfd = xf_pin_open(ifname, "xfrag_capcfg");

		err = cfd < 0 ? cfd :
		      bpf_map_update_elem(cfd, &zero, &cc, BPF_ANY) ? -errno : 0;
		if (cfd >= 0)
			close(cfd);
		if (err)
			goto out;
	}
	cfg.flags &= ~(XFRAG_CFG_CAPTURE | XFRAG_CFG_CAP_DELIVER);
	if (on)
		cfg.flags |= flags;
	if (bpf_map_update_elem(fd, &zero, &cfg, BPF_ANY))
		err = -errno;
out:
	close(fd);
	return err;
}

int xf_cmd_capture(int argc, char **argv, union xf_args *args)
{
	const struct xf_capture_args *a = &args->capture;
	const char *ifname = argv[0];
	const struct xf_val *w = &a->write, *re = &a->reason, *cnt = &a->count;
	const struct xf_val *sn = &a->snaplen, *ra = &a->rate, *sa = &a->sample;
	__u32 snap = sn->set ? sn->num : XFRAG_CAP_SNAP;
	__u32 flags = XFRAG_CFG_CAPTURE;
	struct xfrag_stats s0, s1;
	struct ring_buffer *rb = NULL;
	struct timespec mono, real;
	struct cap c = {};
	bool was_on = false;
	int fd, err, ret = XF_EXIT_FAIL;
	(void)argc;

	if (a->deliver.set)
		flags |= XFRAG_CFG_CAP_DELIVER;
	if (re->set) {
		char *list = strdup(re->str), *save = NULL;

		if (!list)
			return XF_EXIT_FAIL;
		for (char *t = strtok_r(list, ",", &save); t;
		     t = strtok_r(NULL, ",", &save)) {
			__u64 got = 0;

			for (int i = 0; i < xf_ncounters; i++)
				if (word_matches(t, xf_counters[i].name))
					got |= xf_counters[i].bit;
			if (!(got & (~XFRAG_CAP_BENIGN |
				     XFRAG_CAP_DELIVERED))) {
				fprintf(stderr, "xfrag capture: --reason %s: "
					"not an outcome counter (see xfrag "
					"stats: frag_*, reasm_*, pass_*, ...)\n",
					t);
				free(list);
				return XF_EXIT_USAGE;
			}
			c.reasons |= got;
		}
		free(list);
	}
	c.count = cnt->set ? cnt->num : 0;
	if (xf_read_stats(ifname, &s0, NULL, NULL)) {
		fprintf(stderr, "xfrag capture: xfrag is not attached to %s\n",
			ifname);
		return XF_EXIT_IFACE;
	}
	fd = xf_pin_open(ifname, "xfrag_capture");
	if (fd < 0) {
		fprintf(stderr, "xfrag capture: %s has no %s/%s/xfrag_capture "
			"(attached by an xfrag without capture: attach it "
			"again)\n", ifname, XFRAG_PIN_ROOT, ifname);
		return XF_EXIT_IFACE;
	}
	if (!w->set || !strcmp(w->str, "-")) {
		c.out = stdout;
	} else {
		c.out = fopen(w->str, "wb");
		if (!c.out) {
			fprintf(stderr, "xfrag capture: %s: %s\n", w->str,
				strerror(errno));
			close(fd);
			return XF_EXIT_FAIL;
		}
	}
	if (c.out == stdout && isatty(fileno(stdout))) {
		fprintf(stderr, "xfrag capture: pcapng is binary: -w FILE, or "
			"-w - into tcpdump -r - or wireshark -k -i -\n");
		close(fd);
		return XF_EXIT_USAGE;
	}
	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	c.mono_to_real = (real.tv_sec - mono.tv_sec) * 1000000000LL +
			 (real.tv_nsec - mono.tv_nsec);
	if (xf_pcapng_header(c.out, ifname, snap)) {
		fprintf(stderr, "xfrag capture: cannot write\n");
		goto out;
	}
	fflush(c.out);
	rb = ring_buffer__new(fd, on_rec, &c, NULL);
	if (!rb) {
		fprintf(stderr, "xfrag capture: ring buffer: %s\n",
			strerror(errno));
		goto out;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, on_signal);
	err = set_capture(ifname, true, flags, sa->set ? sa->num : 0,
			  ra->set ? ra->num : 0, snap, &was_on);
	if (err) {
		fprintf(stderr, "xfrag capture: cannot turn capture on: %s\n",
			strerror(-err));
		goto out;
	}
	if (was_on)
		fprintf(stderr, "xfrag capture: capture was already on for %s "
			"(another xfrag capture?): both get what is left\n",
			ifname);
	fprintf(stderr, "xfrag capture: capturing on %s%s\n", ifname,
		c.count ? "" : " (Ctrl-C to stop)");
	while (!stop && !c.err) {
		err = ring_buffer__poll(rb, 100);
		if (err < 0 && err != -EINTR)
			break;
	}
	set_capture(ifname, false, 0, 0, 0, 0, NULL);
	ret = c.err ? XF_EXIT_FAIL : XF_EXIT_OK;
	if (!xf_read_stats(ifname, &s1, NULL, NULL))
		fprintf(stderr, "xfrag capture: %llu packets written, %llu "
			"not matching --reason, %llu records lost in BPF "
			"(cap_lost: rate limit or ring buffer full)\n",
			(unsigned long long)c.written,
			(unsigned long long)c.skipped,
			(unsigned long long)(s1.cap_lost - s0.cap_lost));
out:
	ring_buffer__free(rb);
	close(fd);
	if (c.out != stdout)
		fclose(c.out);
	return ret;
}
