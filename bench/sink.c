// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sink - UDP receiver for the xfrag benchmark.  Receives the datagrams sent
 * by bench/gen with recvmmsg and verifies every byte (tests/payload.h:
 * magic, seq, the length field, the pattern).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "../tests/payload.h"

#define BATCH	64
#define BUFSZ	65536

static volatile sig_atomic_t stop;
static uint64_t flow[65536];

static void on_sig(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* 0 if the datagram is good, else -1 with the reason in why. */
static int verify(const uint8_t *p, size_t n, int trunc, char *why, size_t wl)
{
	const char *bad;
	uint32_t seq;
	size_t at;

	if (trunc) {
		snprintf(why, wl, "truncated (%zu bytes received)", n);
		return -1;
	}
	bad = pl_check(p, n, &seq, &at);
	if (!bad)
		return 0;
	if (at < n)
		snprintf(why, wl, "seq %u len %zu: %s at byte %zu (0x%02x)",
			 seq, n, bad, at, p[at]);
	else
		snprintf(why, wl, "seq %u len %zu: %s", seq, n, bad);
	return -1;
}

static long num(const char *s, long lo, long hi, const char *what)
{
	char *e;
	long v;

	errno = 0;
	v = strtol(s, &e, 0);
	if (errno || *e || e == s || v < lo || v > hi) {
		fprintf(stderr, "sink: bad %s '%s'\n", what, s);
		exit(1);
	}
	return v;
}

static void usage(FILE *o)
{
	fprintf(o,
"usage: sink [options]\n"
"  --port P          UDP port (default 9000)\n"
"  --family F        4 | 6 | any (default any: IPv6 socket, V6ONLY off)\n"
"  --duration S      stop after S seconds of wall time (default: no limit)\n"
"  --idle-ms MS      stop MS ms after the last datagram (default 0: off)\n"
"  --count N         stop after N good datagrams\n"
"  --ready-file PATH create PATH once the socket is bound\n"
"  --json            print the summary as one JSON object\n"
"  --progress-ms MS  every MS ms also print one JSON line {\"progress\":1,\n"
"                    \"t\":seconds since start,\"ok\":N,\"bad\":N,\"bytes\":N}\n");
}

int main(int argc, char **argv)
{
	enum { O_PORT = 256, O_FAM, O_DUR, O_IDLE, O_COUNT, O_JSON, O_READY,
	       O_PROG };
	static const struct option lo[] = {
		{ "port", 1, 0, O_PORT }, { "family", 1, 0, O_FAM },
		{ "duration", 1, 0, O_DUR }, { "idle-ms", 1, 0, O_IDLE },
		{ "count", 1, 0, O_COUNT }, { "json", 0, 0, O_JSON },
		{ "ready-file", 1, 0, O_READY }, { "progress-ms", 1, 0, O_PROG },
		{ "help", 0, 0, 'h' },
		{ 0, 0, 0, 0 }
	};
	int port = 9000, fam = 0, json = 0, fd, c, one = 1, zero = 0;
	int rcvbuf = 32 << 20, nbad_print = 0;
	double duration = 0, idle = 0, t_start, t_first = 0, t_last = 0, el;
	double progress = 0, t_prog = 0;
	uint64_t count = 0, ok = 0, bad = 0, bytes = 0, fmin = 0, fmax = 0;
	unsigned int flows = 0;
	const char *ready = NULL;
	struct timeval tv = { .tv_sec = 0, .tv_usec = 100000 };
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_storage names[BATCH];
	struct sigaction sa;
	uint8_t *bufs;
	char *e;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case O_PORT: port = (int)num(optarg, 1, 65535, "--port"); break;
		case O_FAM:
			if (!strcmp(optarg, "4"))
				fam = 4;
			else if (!strcmp(optarg, "6"))
				fam = 6;
			else if (!strcmp(optarg, "any"))
				fam = 0;
			else {
				fprintf(stderr, "sink: bad --family (4|6|any)\n");
				return 1;
			}
			break;
		case O_DUR:
		case O_IDLE:
		case O_PROG: {
			double v = strtod(optarg, &e);

			if (*e || e == optarg || !(v >= 0 && v < 1e12)) {
				fprintf(stderr, "sink: bad number '%s'\n", optarg);
				return 1;
			}
			if (c == O_DUR)
				duration = v;
			else if (c == O_IDLE)
				idle = v / 1000.0;
			else
				progress = v / 1000.0;
			break;
		}
		case O_COUNT:
			count = (uint64_t)num(optarg, 1, 0x7fffffffffffffffL,
					      "--count");
			break;
		case O_JSON: json = 1; break;
		case O_READY: ready = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 1;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 1;
	}

	bufs = malloc((size_t)BATCH * BUFSZ);
	if (!bufs) {
		fprintf(stderr, "sink: out of memory\n");
		return 1;
	}

	fd = socket(fam == 4 ? AF_INET : AF_INET6, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("sink: socket");
		return 1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fam == 4) {
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_port = htons(port) };

		if (bind(fd, (struct sockaddr *)&a, sizeof(a))) {
			perror("sink: bind");
			return 1;
		}
	} else {
		struct sockaddr_in6 a = { .sin6_family = AF_INET6,
					  .sin6_port = htons(port),
					  .sin6_addr = IN6ADDR_ANY_INIT };

		if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY,
			       fam == 6 ? &one : &zero, sizeof(int))) {
			perror("sink: IPV6_V6ONLY");
			return 1;
		}
		if (bind(fd, (struct sockaddr *)&a, sizeof(a))) {
			perror("sink: bind");
			return 1;
		}
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)))
		perror("sink: SO_RCVBUF");
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		perror("sink: SO_RCVTIMEO");
		return 1;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig;	/* no SA_RESTART: recvmmsg returns EINTR */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	memset(m, 0, sizeof(m));
	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = bufs + (size_t)i * BUFSZ;
		iov[i].iov_len = BUFSZ;
		m[i].msg_hdr.msg_iov = &iov[i];
		m[i].msg_hdr.msg_iovlen = 1;
		m[i].msg_hdr.msg_name = &names[i];
	}
	if (ready) {
		int rf = open(ready, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (rf < 0) {
			perror("sink: ready file");
			return 1;
		}
		dprintf(rf, "%d\n", (int)getpid());
		close(rf);
	}

	t_start = now_s();
	while (!stop) {
		double now;
		int n;

		for (int i = 0; i < BATCH; i++)
			m[i].msg_hdr.msg_namelen = sizeof(names[i]);
		n = recvmmsg(fd, m, BATCH, MSG_WAITFORONE, NULL);
		now = now_s();
		if (n > 0) {
			if (!t_first)
				t_first = now;
			t_last = now;
		}
		for (int i = 0; i < n; i++) {
			const uint8_t *p = iov[i].iov_base;
			size_t len = m[i].msg_len;
			char why[160];
			uint16_t sport = 0;

			if (verify(p, len, m[i].msg_hdr.msg_flags & MSG_TRUNC,
				   why, sizeof(why))) {
				bad++;
				if (nbad_print++ < 3)
					fprintf(stderr, "sink: bad datagram: %s\n",
						why);
				continue;
			}
			ok++;
			bytes += len;
			if (names[i].ss_family == AF_INET)
				sport = ntohs(((struct sockaddr_in *)&names[i])->sin_port);
			else if (names[i].ss_family == AF_INET6)
				sport = ntohs(((struct sockaddr_in6 *)&names[i])->sin6_port);
			if (!flow[sport]++)
				flows++;
		}
		if (progress > 0 && now - t_start >= t_prog) {
			printf("{\"progress\":1,\"t\":%.3f,\"ok\":%llu,"
			       "\"bad\":%llu,\"bytes\":%llu}\n",
			       now - t_start, (unsigned long long)ok,
			       (unsigned long long)bad,
			       (unsigned long long)bytes);
			fflush(stdout);
			t_prog = now - t_start + progress;
		}
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
		    errno != EINTR) {
			perror("sink: recvmmsg");
			break;
		}
		if (count && ok >= count)
			break;
		if (duration > 0 && now - t_start >= duration)
			break;
		if (idle > 0 && t_last && now - t_last >= idle)
			break;
	}

	for (int p = 0; p < 65536; p++) {
		if (!flow[p])
			continue;
		if (!fmin || flow[p] < fmin)
			fmin = flow[p];
		if (flow[p] > fmax)
			fmax = flow[p];
	}
	el = t_last - t_first;
	printf(json ? "{\"ok\":%llu,\"bad\":%llu,\"bytes\":%llu,"
		      "\"elapsed_s\":%.6f,\"wall_s\":%.6f,"
		      "\"dgrams_per_s\":%.1f,\"flows_seen\":%u,"
		      "\"flow_min\":%llu,\"flow_max\":%llu}\n" :
		      "ok            %llu\nbad           %llu\n"
		      "bytes         %llu\nelapsed_s     %.6f\n"
		      "wall_s        %.6f\ndgrams_per_s  %.1f\n"
		      "flows_seen    %u\nflow_min      %llu\n"
		      "flow_max      %llu\n",
	       (unsigned long long)ok, (unsigned long long)bad,
	       (unsigned long long)bytes, el, now_s() - t_start,
	       ok >= 2 && el > 0 ? ok / el : 0.0, flows,
	       (unsigned long long)fmin, (unsigned long long)fmax);
	fflush(stdout);
	free(bufs);
	close(fd);
	return 0;
}
