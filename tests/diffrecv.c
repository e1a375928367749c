// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * diffrecv: the receiving end of the differential test (tests/diff_test.sh).
 *
 * One UDP socket bound on both families ([::]:PORT, IPV6_V6ONLY off)
 * records every datagram that reaches L4, one line each:
 *
 *   begin B                      marker: batch B starts
 *   d B IDX LEN ok|other|corrupt HASH FAM DST
 *   end B                        marker: everything of batch B was delivered
 *
 * IDX comes from the source port (diffcommon.h), LEN is the UDP data
 * length, ok means the bytes are exactly those of datagram (B, IDX) of that
 * length, re-derived from the seed, other that they were all sent for it
 * but some in the "other bytes" copies, corrupt that some never were
 * (xd_classify); HASH (FNV-1a 64) names the bytes so
 * that two receivers can be compared even when they are not ok; FAM is 4
 * or 6, DST the destination address it was sent to.  A datagram whose
 * source port names no index gets IDX -1.
 *
 *   diffrecv --seed S [--port P] -o FILE
 *
 * Prints "listening" on stderr once bound; stops on SIGTERM / SIGINT.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "diffcommon.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: diffrecv --seed S [--port P] -o FILE\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' },
		{ "out", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	static uint8_t buf[65536], scratch[65536];
	unsigned long long seed = 0;
	int have_seed = 0, port = XD_PORT, fd, c, off = 0, on = 1, rcvbuf;
	long batch = -1;
	const char *out = NULL;
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6 };
	struct sigaction sig = { .sa_handler = on_signal };
	FILE *f;

	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			seed = strtoull(optarg, NULL, 0);
			have_seed = 1;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'o':
			out = optarg;
			break;
		default:
			usage();
		}
	}
	if (!have_seed || !out || port <= 0 || port > 65535)
		usage();
	f = fopen(out, "w");
	if (!f) {
		perror(out);
		return 1;
	}
	setvbuf(f, NULL, _IOLBF, 0);
	sigaction(SIGTERM, &sig, NULL);
	sigaction(SIGINT, &sig, NULL);

	fd = socket(AF_INET6, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("socket");
		return 1;
	}
	setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
	if (setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on, sizeof(on)) ||
	    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof(on))) {
		perror("setsockopt(PKTINFO)");
		return 1;
	}
	/* Room for a whole batch even if we are slow: a lost datagram
	 * would look like a difference. */
	rcvbuf = 64 << 20;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	sa.sin6_port = htons(port);
	sa.sin6_addr = in6addr_any;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("bind");
		return 1;
	}
	fprintf(stderr, "listening\n");

	while (!stop) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct sockaddr_in6 from;
		char cbuf[256], dst[INET6_ADDRSTRLEN] = "?";
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
		struct msghdr mh = {
			.msg_name = &from, .msg_namelen = sizeof(from),
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
		};
		struct cmsghdr *cm;
		unsigned int sport;
		long idx;
		ssize_t n;
		int fam, ok;

		if (poll(&pfd, 1, 200) <= 0)
			continue;
		n = recvmsg(fd, &mh, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			perror("recvmsg");
			return 1;
		}
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level == IPPROTO_IP &&
			    cm->cmsg_type == IP_PKTINFO) {
				struct in_pktinfo pi;

				memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
				inet_ntop(AF_INET, &pi.ipi_addr, dst, sizeof(dst));
			} else if (cm->cmsg_level == IPPROTO_IPV6 &&
				   cm->cmsg_type == IPV6_PKTINFO) {
				struct in6_pktinfo pi;

				memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
				if (IN6_IS_ADDR_V4MAPPED(&pi.ipi6_addr))
					inet_ntop(AF_INET, &pi.ipi6_addr.s6_addr[12],
						  dst, sizeof(dst));
				else
					inet_ntop(AF_INET6, &pi.ipi6_addr, dst,
						  sizeof(dst));
			}
		}
		sport = ntohs(from.sin6_port);
		fam = IN6_IS_ADDR_V4MAPPED(&from.sin6_addr) ? 4 : 6;
		if (sport == XD_MARK_SPORT && n > 9 &&
		    !memcmp(buf, "XDMARK ", 7)) {
			char kind = buf[7];
			long b;

			buf[n < 64 ? n : 63] = 0;
			b = strtol((char *)buf + 9, NULL, 10);
			if (kind == 'B') {
				batch = b;
				fprintf(f, "begin %ld\n", b);
			} else {
				fprintf(f, "end %ld\n", b);
			}
			continue;
		}
		idx = (sport >= XD_SPORT_BASE &&
		       sport < XD_SPORT_BASE + XD_MAX_DGRAMS) ?
			      (long)(sport - XD_SPORT_BASE) : -1;
		ok = idx >= 0 && batch >= 0 ?
			     xd_classify(buf, (uint32_t)n, seed,
					 (uint32_t)batch, (uint32_t)idx,
					 scratch) : XD_CORRUPT;
		fprintf(f, "d %ld %ld %zd %s %016llx %d %s\n", batch, idx, n,
			ok == XD_OK ? "ok" : ok == XD_OTHER ? "other" :
							      "corrupt",
			(unsigned long long)xd_hash(buf, (uint32_t)n), fam, dst);
	}
	fclose(f);
	return 0;
}
