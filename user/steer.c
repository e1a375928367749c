// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Steering helpers for `xfrag attach` / `detach`: the owner CPU list, and
 * RPS on the device's receive queues (skb mode).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <glob.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include "common.h"

/* Parse "0-3,6" into cpus[] (sorted, unique); the count, or -1. */
int xf_parse_cpus(const char *s, __u32 *cpus, int max)
{
	static unsigned char seen[XFRAG_MAX_CPUS];
	const char *p = s;
	int n = 0;

	memset(seen, 0, sizeof(seen));
	if (!s || !*s)
		return -1;
	while (*p) {
		char *end;
		unsigned long a, b;

		if (*p < '0' || *p > '9')
			return -1;
		a = strtoul(p, &end, 10);
		b = a;
		if (*end == '-') {
			p = end + 1;
			if (*p < '0' || *p > '9')
				return -1;
			b = strtoul(p, &end, 10);
		}
		if (a > b || b >= XFRAG_MAX_CPUS)
			return -1;
		for (unsigned long c = a; c <= b; c++)
			seen[c] = 1;
		p = end;
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			return -1;
		else if (*p == '\n')
			break;
	}
	for (int c = 0; c < XFRAG_MAX_CPUS; c++) {
		if (!seen[c])
			continue;
		if (n >= max)
			return -1;
		cpus[n++] = c;
	}
	return n ? n : -1;
}

/* The online CPUs; the count, or -1. */
int xf_online_cpus(__u32 *cpus, int max)
{
	char buf[4096];
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	int n = -1;

	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		n = xf_parse_cpus(buf, cpus, max);
	fclose(f);
	return n;
}

/* "0-1,3" of a list, for messages. */
void xf_cpus_str(const __u32 *cpus, int n, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = 0;
	for (int i = 0; i < n && at < len; i++) {
		int j = i;

		while (j + 1 < n && cpus[j + 1] == cpus[j] + 1)
			j++;
		if (j > i)
			at += snprintf(buf + at, len - at, "%s%u-%u",
				       at ? "," : "", cpus[i], cpus[j]);
		else
			at += snprintf(buf + at, len - at, "%s%u",
				       at ? "," : "", cpus[i]);
		i = j;
	}
}

/* ---- RPS ------------------------------------------------------------------- */

/*
 * rps_cpus lives in sysfs, and /sys shows the network namespace of whoever
 * mounted it (the CLI runs under `nsenter --net`, which keeps the host's
 * /sys).  A child in a private mount namespace mounts a sysfs of this
 * network namespace over /sys and does the work there; nothing outside it
 * sees the mount.
 */
enum { RPS_OURS = 0, RPS_THEIRS = 10, RPS_NONE = 11, RPS_FAIL = 12 };

static int rps_child(const char *ifname, const char *mask, int restore)
{
	char pat[128];
	glob_t g;
	int theirs = 0;

	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return RPS_FAIL;
	/* EBUSY: /sys already is this network namespace's sysfs (the root
	 * namespace's, say), whose superblock cannot be mounted on it again
	 * (found in the test VM: attach --mode skb on its virtio-net). */
	if (mount("sysfs", "/sys", "sysfs", 0, NULL) && errno != EBUSY)
		return RPS_FAIL;
	snprintf(pat, sizeof(pat), "/sys/class/net/%s/queues/rx-*/rps_cpus",
		 ifname);
	if (glob(pat, 0, NULL, &g) || !g.gl_pathc)
		return RPS_NONE;
	/* A mask set by somebody else is theirs: any RPS hashes every
	 * fragment of a datagram alike, so it serves xfrag as it is. */
	for (size_t i = 0; i < g.gl_pathc && !restore; i++) {
		char cur[512] = "";
		FILE *f = fopen(g.gl_pathv[i], "r");

		if (!f)
			return RPS_FAIL;
		if (!fgets(cur, sizeof(cur), f))
			cur[0] = 0;
		fclose(f);
		if (strspn(cur, "0,\n") != strlen(cur))
			theirs = 1;
	}
	if (theirs)
		return RPS_THEIRS;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		FILE *f = fopen(g.gl_pathv[i], "w");

		if (!f)
			return RPS_FAIL;
		if (fputs(restore ? "0" : mask, f) < 0) {
			fclose(f);
			return RPS_FAIL;
		}
		if (fclose(f))
			return RPS_FAIL;
	}
	return RPS_OURS;
}

static int rps_run(const char *ifname, const char *mask, int restore)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return RPS_FAIL;
	if (pid == 0)
		_exit(rps_child(ifname, mask, restore));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return RPS_FAIL;
	return WEXITSTATUS(status);
}

/*
 * Turn RPS on for ifname's receive queues with the CPUs given, unless
 * somebody else already set it.  XFRAG_STEER_RPS_OURS, XFRAG_STEER_RPS
 * (theirs, left alone), or -1 with the reason in why.
 */
int xf_rps_set(const char *ifname, const __u32 *cpus, int n, const char **why)
{
	__u32 words[XFRAG_MAX_CPUS / 32] = { 0 };
	char mask[XFRAG_MAX_CPUS / 32 * 9 + 1];
	int top = 0, at = 0;

	for (int i = 0; i < n; i++) {
		words[cpus[i] / 32] |= 1U << (cpus[i] % 32);
		if ((int)(cpus[i] / 32) > top)
			top = cpus[i] / 32;
	}
	for (int w = top; w >= 0; w--)
		at += snprintf(mask + at, sizeof(mask) - at, "%s%08x",
			       w == top ? "" : ",", words[w]);
	switch (rps_run(ifname, mask, 0)) {
	case RPS_OURS:
		return XFRAG_STEER_RPS_OURS;
	case RPS_THEIRS:
		return XFRAG_STEER_RPS;
	case RPS_NONE:
		*why = "the device has no rps_cpus (a kernel without RPS)";
		return -1;
	default:
		*why = "cannot write rps_cpus in this network namespace's sysfs";
		return -1;
	}
}

/* Undo xf_rps_set() (only what it wrote: XFRAG_STEER_RPS_OURS). */
int xf_rps_clear(const char *ifname)
{
	return rps_run(ifname, "0", 1) == RPS_OURS ? 0 : -1;
}
