// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * udpcheck: UDP sender / receiver that checks every payload byte.
 *
 * Payload (any size >= 8): tests/payload.h (magic, seq, length, a pattern
 * of seq and position), every byte checked.
 *
 *   udpcheck send --dst ADDR --port P --size S [--count N] [--seq0 K]
 *                 [--gap-us U]
 *   udpcheck recv --port P [--bind ADDR] [--count N] [--timeout-ms T]
 *                 [--size S]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "payload.h"

#define UC_MAX		65535
#define UC_BUF		(4 * 1024 * 1024)
#define UC_MAX_REPORT	5

static void usage(void)
{
	fprintf(stderr,
		"usage: udpcheck send --dst ADDR --port P --size S [--count N] [--seq0 K] [--gap-us U]\n"
		"       udpcheck recv --port P [--bind ADDR] [--count N] [--timeout-ms T] [--size S]\n");
	exit(2);
}

static unsigned long parse_num(const char *s, const char *what,
			       unsigned long max)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || v > max) {
		fprintf(stderr, "udpcheck: bad %s '%s'\n", what, s);
		exit(2);
	}
	return v;
}


/* Parse an IPv4 or IPv6 address (with port) into ss; returns the length. */
static socklen_t parse_addr(const char *s, uint16_t port,
			    struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		return sizeof(*s4);
	}
	if (inet_pton(AF_INET6, s, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		return sizeof(*s6);
	}
	fprintf(stderr, "udpcheck: bad address '%s'\n", s);
	exit(2);
}

static void set_bufs(int fd, int opt, int force)
{
	int v = UC_BUF;

	/* FORCE needs CAP_NET_ADMIN; fall back to the capped variant. */
	if (setsockopt(fd, SOL_SOCKET, force, &v, sizeof(v)) < 0)
		setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
}

static const struct option send_opts[] = {
	{ "dst", required_argument, NULL, 'd' },
	{ "port", required_argument, NULL, 'p' },
	{ "size", required_argument, NULL, 's' },
	{ "count", required_argument, NULL, 'c' },
	{ "seq0", required_argument, NULL, 'k' },
	{ "gap-us", required_argument, NULL, 'g' },
	{ NULL, 0, NULL, 0 },
};

static int do_send(int argc, char **argv)
{
	unsigned long size = 0, count = 1, seq0 = 0, gap = 0, port = 0, i;
	struct sockaddr_storage ss;
	const char *dst = NULL;
	socklen_t sslen;
	uint8_t *buf;
	int fd, opt, v;

	while ((opt = getopt_long(argc, argv, "", send_opts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			dst = optarg;
			break;
		case 'p':
			port = parse_num(optarg, "port", 65535);
			break;
		case 's':
			size = parse_num(optarg, "size", UC_MAX);
			break;
		case 'c':
			count = parse_num(optarg, "count", 100000000);
			break;
		case 'k':
			seq0 = parse_num(optarg, "seq0", 0xffffffffUL);
			break;
		case 'g':
			gap = parse_num(optarg, "gap-us", 100000000);
			break;
		default:
			usage();
		}
	}
	if (!dst || !port || size < 8 || optind != argc)
		usage();

	sslen = parse_addr(dst, port, &ss);
	fd = socket(ss.ss_family, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("udpcheck: socket");
		return 1;
	}
	set_bufs(fd, SO_SNDBUF, SO_SNDBUFFORCE);
	if (ss.ss_family == AF_INET) {
		v = IP_PMTUDISC_DONT;
		if (setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &v, sizeof(v)))
			perror("udpcheck: IP_MTU_DISCOVER");
	} else {
		v = IPV6_PMTUDISC_DONT;
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &v,
			       sizeof(v)))
			perror("udpcheck: IPV6_MTU_DISCOVER");
	}

	buf = malloc(size);
	if (!buf) {
		perror("udpcheck: malloc");
		return 1;
	}
	for (i = 0; i < count; i++) {
		ssize_t n;

		pl_fill(buf, size, size, (uint32_t)(seq0 + i));
		for (;;) {
			n = sendto(fd, buf, size, 0, (struct sockaddr *)&ss,
				   sslen);
			if (n >= 0 || errno != ENOBUFS)
				break;
			usleep(1000);
		}
		if (n < 0) {
			perror("udpcheck: sendto");
			return 1;
		}
		if ((size_t)n != size) {
			fprintf(stderr, "udpcheck: short send %zd/%lu\n", n,
				size);
			return 1;
		}
		if (gap && i + 1 < count)
			usleep(gap);
	}
	printf("udpcheck: sent=%lu bytes=%lu\n", count, count * size);
	free(buf);
	close(fd);
	return 0;
}

/* Seen-sequence set: a small open-addressing hash of u32. */
struct seqset {
	uint32_t *keys;
	uint8_t *used;
	size_t cap, n;
};

static int seqset_add(struct seqset *s, uint32_t k)
{
	size_t i;

	if ((s->n + 1) * 2 > s->cap) {
		struct seqset ns = { .cap = s->cap ? s->cap * 2 : 1024 };

		ns.keys = calloc(ns.cap, sizeof(*ns.keys));
		ns.used = calloc(ns.cap, 1);
		if (!ns.keys || !ns.used) {
			perror("udpcheck: calloc");
			exit(1);
		}
		for (i = 0; i < s->cap; i++)
			if (s->used[i])
				seqset_add(&ns, s->keys[i]);
		free(s->keys);
		free(s->used);
		*s = ns;
	}
	i = (k * 2654435761U) & (s->cap - 1);
	while (s->used[i]) {
		if (s->keys[i] == k)
			return 0;
		i = (i + 1) & (s->cap - 1);
	}
	s->used[i] = 1;
	s->keys[i] = k;
	s->n++;
	return 1;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Returns NULL if the datagram is good, otherwise a reason. */
static const char *check(const uint8_t *p, size_t len, long want_size,
			 uint32_t *seq, size_t *where)
{
	const char *why = pl_check(p, len, seq, where);

	if (!why && want_size >= 0 && len != (size_t)want_size)
		return "size";
	return why;
}

static const struct option recv_opts[] = {
	{ "port", required_argument, NULL, 'p' },
	{ "bind", required_argument, NULL, 'b' },
	{ "count", required_argument, NULL, 'c' },
	{ "timeout-ms", required_argument, NULL, 't' },
	{ "size", required_argument, NULL, 's' },
	{ NULL, 0, NULL, 0 },
};

static int do_recv(int argc, char **argv)
{
	unsigned long port = 0, count = 0, timeout = 3000;
	unsigned long ok = 0, bad = 0, dup = 0;
	unsigned long long bytes = 0;
	struct sockaddr_storage ss;
	const char *bind_addr = NULL;
	struct seqset seen = { 0 };
	long want_size = -1;
	long long last;
	socklen_t sslen;
	uint8_t *buf;
	int fd, opt, v;

	while ((opt = getopt_long(argc, argv, "", recv_opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			port = parse_num(optarg, "port", 65535);
			break;
		case 'b':
			bind_addr = optarg;
			break;
		case 'c':
			count = parse_num(optarg, "count", 100000000);
			break;
		case 't':
			timeout = parse_num(optarg, "timeout-ms", 86400000);
			break;
		case 's':
			want_size = parse_num(optarg, "size", UC_MAX);
			break;
		default:
			usage();
		}
	}
	if (!port || optind != argc)
		usage();

	if (bind_addr) {
		sslen = parse_addr(bind_addr, port, &ss);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		memset(&ss, 0, sizeof(ss));
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_any;
		s6->sin6_port = htons(port);
		sslen = sizeof(*s6);
	}
	fd = socket(ss.ss_family, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("udpcheck: socket");
		return 1;
	}
	v = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &v, sizeof(v));
	if (ss.ss_family == AF_INET6) {
		v = 0;
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v, sizeof(v)))
			perror("udpcheck: IPV6_V6ONLY");
	}
	set_bufs(fd, SO_RCVBUF, SO_RCVBUFFORCE);
	if (bind(fd, (struct sockaddr *)&ss, sslen) < 0) {
		perror("udpcheck: bind");
		return 1;
	}

	buf = malloc(UC_MAX + 1);
	if (!buf) {
		perror("udpcheck: malloc");
		return 1;
	}
	/* Tell a waiting script that the socket is bound. */
	fprintf(stderr, "udpcheck: listening on port %lu\n", port);

	last = now_ms();
	while (!count || ok < count) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long long left = last + (long long)timeout - now_ms();
		const char *why;
		size_t where;
		uint32_t seq;
		ssize_t n;
		int r;

		if (left <= 0)
			break;
		r = poll(&pfd, 1, (int)left);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			perror("udpcheck: poll");
			return 1;
		}
		if (r == 0)
			break;
		n = recv(fd, buf, UC_MAX + 1, MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			perror("udpcheck: recv");
			return 1;
		}
		last = now_ms();
		why = check(buf, n > UC_MAX ? UC_MAX : (size_t)n, want_size,
			    &seq, &where);
		if (why) {
			if (bad < UC_MAX_REPORT)
				fprintf(stderr,
					"udpcheck: bad datagram: %s len=%zd seq=%u at=%zu byte=0x%02x\n",
					why, n, seq, where,
					where < (size_t)n ? buf[where] : 0);
			bad++;
			continue;
		}
		if (!seqset_add(&seen, seq)) {
			if (dup < UC_MAX_REPORT)
				fprintf(stderr,
					"udpcheck: duplicate seq=%u len=%zd\n",
					seq, n);
			dup++;
			continue;
		}
		ok++;
		bytes += n;
	}
	printf("udpcheck: ok=%lu bad=%lu dup=%lu bytes=%llu\n", ok, bad, dup,
	       bytes);
	fflush(stdout);
	free(buf);
	free(seen.keys);
	free(seen.used);
	close(fd);
	return (ok == count && !bad && !dup) ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "send"))
		return do_send(argc - 1, argv + 1);
	if (!strcmp(argv[1], "recv"))
		return do_recv(argc - 1, argv + 1);
	usage();
	return 2;
}
