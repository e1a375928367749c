// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xfrag stats / status. */
#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "common.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static __u64 field(const struct xfrag_stats *s, int i)
{
	return *(const __u64 *)((const char *)s + xf_counters[i].off);
}

static void print_json(const struct xfrag_stats *sum,
		       const struct xfrag_stats *pc, int ncpu)
{
	printf("{");
	for (int i = 0; i < xf_ncounters; i++)
		printf("%s\"%s\": %llu", i ? ", " : "", xf_counters[i].name,
		       (unsigned long long)field(sum, i));
	if (pc) {
		printf(", \"per_cpu\": [");
		for (int c = 0; c < ncpu; c++) {
			printf("%s{", c ? ", " : "");
			for (int i = 0; i < xf_ncounters; i++)
				printf("%s\"%s\": %llu", i ? ", " : "",
				       xf_counters[i].name,
				       (unsigned long long)field(&pc[c], i));
			printf("}");
		}
		printf("]");
	}
	printf("}\n");
}

static void print_table(const char *ifname, const struct xfrag_stats *sum,
			const struct xfrag_stats *pc, int ncpu,
			const struct xfrag_stats *prev, double secs)
{
	printf("xfrag counters on %s%s\n", ifname,
	       prev ? " (rate per second since the last report)" : "");
	for (int i = 0; i < xf_ncounters; i++) {
		printf("  %-18s %14llu", xf_counters[i].name,
		       (unsigned long long)field(sum, i));
		if (prev && !xf_counters[i].gauge)
			printf(" %12.0f/s",
			       (double)(field(sum, i) - field(prev, i)) / secs);
		else if (prev)
			printf(" %14s", "");
		if (pc)
			for (int c = 0; c < ncpu; c++)
				printf(" %10llu",
				       (unsigned long long)field(&pc[c], i));
		printf("  %s\n", xf_counters[i].help);
	}
}

int xf_cmd_stats(int argc, char **argv, struct xf_opt *opts)
{
	const char *ifname = argv[0];
	bool json = xf_opt(opts, "json")->set;
	bool percpu = xf_opt(opts, "per-cpu")->set;
	struct xf_opt *iv = xf_opt(opts, "interval");
	struct xf_opt *cnt = xf_opt(opts, "count");
	struct xfrag_stats sum, prev;
	struct xfrag_stats *pc = NULL;
	struct timespec t0, t1;
	int ncpu = 0, err, n = 0;
	(void)argc;

	err = xf_read_stats(ifname, &sum, percpu ? &pc : NULL, &ncpu);
	if (err) {
		if (err == -ENOENT)
			fprintf(stderr, "xfrag stats: xfrag is not attached to %s "
				"(no %s/%s/xfrag_stats)\n", ifname,
				XFRAG_PIN_ROOT, ifname);
		else
			fprintf(stderr, "xfrag stats: %s\n", strerror(-err));
		return err == -ENOENT ? XF_EXIT_IFACE : xf_err_exit(err);
	}
	if (!iv->set) {
		if (json)
			print_json(&sum, pc, ncpu);
		else
			print_table(ifname, &sum, pc, ncpu, NULL, 0);
		free(pc);
		return XF_EXIT_OK;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop && (!cnt->set || (__u64)n < cnt->num)) {
		prev = sum;
		free(pc);
		pc = NULL;
		sleep(iv->num);
		if (stop)
			break;
		err = xf_read_stats(ifname, &sum, percpu ? &pc : NULL, &ncpu);
		if (err) {
			fprintf(stderr, "xfrag stats: %s\n", strerror(-err));
			return xf_err_exit(err);
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double secs = (t1.tv_sec - t0.tv_sec) +
			      (t1.tv_nsec - t0.tv_nsec) / 1e9;
		t0 = t1;
		if (json) {
			printf("{\"interval_s\": %.3f, \"rates\": {", secs);
			for (int i = 0, k = 0; i < xf_ncounters; i++) {
				if (xf_counters[i].gauge)
					continue;
				printf("%s\"%s\": %.1f", k++ ? ", " : "",
				       xf_counters[i].name,
				       (field(&sum, i) - field(&prev, i)) / secs);
			}
			printf("}, \"totals\": ");
			print_json(&sum, pc, ncpu);
		} else {
			print_table(ifname, &sum, pc, ncpu, &prev, secs);
		}
		fflush(stdout);
		n++;
	}
	free(pc);
	return XF_EXIT_OK;
}

static const char *mode_name(__u32 m)
{
	switch (m) {
	case XDP_MODE_NATIVE: return "native";
	case XDP_MODE_SKB: return "skb";
	case XDP_MODE_HW: return "hw";
	default: return "unknown";
	}
}

/*
 * What the XDP half knows of its TC half and of frame room, from the
 * per-CPU state: tc "yes" (set by `xfrag attach`), "seen" (ran on some CPU
 * within XFRAG_TC_ALIVE_NS), else "no"; room "yes" when every CPU that
 * decided found room in small frames, "no" when one did not, else "-".
 */
static void pcpu_state(const char *ifname, const char **tc, const char **room)
{
	int n = libbpf_num_possible_cpus(), fd, ok = 0, bad = 0, seen = 0;
	struct xfrag_pcpu *pc;
	struct timespec ts;
	__u32 zero = 0;
	__u64 now;

	*room = "-";
	fd = xf_pin_open(ifname, "xfrag_pcpu");
	if (fd < 0 || n <= 0)
		goto out;
	pc = calloc(n, sizeof(*pc));
	if (!pc || bpf_map_lookup_elem(fd, &zero, pc)) {
		free(pc);
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	for (int i = 0; i < n; i++) {
		if (pc[i].tc_seen_ns && now - pc[i].tc_seen_ns < XFRAG_TC_ALIVE_NS)
			seen = 1;
		bad |= pc[i].room_bad != 0;
		ok |= pc[i].room_ok >= XFRAG_ROOM_PROOF;
	}
	free(pc);
	*room = bad ? "no" : ok ? "yes" : "-";
out:
	if (fd >= 0)
		close(fd);
	if (strcmp(*tc, "yes"))
		*tc = seen ? "seen" : "no";
}

int xf_cmd_status(int argc, char **argv, struct xf_opt *opts)
{
	struct dirent *de;
	DIR *d;
	int n = 0;
	(void)argc;
	(void)argv;
	(void)opts;

	d = opendir(XFRAG_PIN_ROOT);
	if (!d) {
		printf("xfrag is not attached anywhere (no %s)\n", XFRAG_PIN_ROOT);
		return XF_EXIT_OK;
	}
	printf("%-12s %-7s %-8s %-4s %-4s %8s %5s %10s %10s %6s %-8s %5s %10s %10s %5s\n",
	       "interface", "ifindex", "xdp", "tc", "room", "buckets", "ways",
	       "mem/cpu", "timeout_ms", "frags", "evict", "warm", "mem_high",
	       "mem_low", "quota");
	while ((de = readdir(d))) {
		struct xfrag_config cfg = {};
		const char *tc, *room;
		__u32 zero = 0, mem;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		fd = xf_pin_open(de->d_name, "xfrag_config");
		if (fd < 0)
			continue;
		if (bpf_map_lookup_elem(fd, &zero, &cfg))
			memset(&cfg, 0, sizeof(cfg));
		close(fd);
		tc = cfg.flags & XFRAG_CFG_TC ? "yes" : "no";
		pcpu_state(de->d_name, &tc, &room);
		mem = cfg.mem_per_cpu ? cfg.mem_per_cpu : XFRAG_DEF_MEM;
		mem -= mem % XFRAG_CHUNK;
		printf("%-12s %-7u %-8s %-4s %-4s %8u %5u %10u %10u %6u %-8s %5u %10llu %10llu %5u\n",
		       de->d_name, if_nametoindex(de->d_name),
		       cfg.buckets ? mode_name(cfg.xdp_mode) : "loader", tc, room,
		       cfg.buckets ? cfg.buckets : XFRAG_DEF_BUCKETS,
		       cfg.ways ? cfg.ways : XFRAG_DEF_WAYS,
		       cfg.mem_per_cpu ? cfg.mem_per_cpu : XFRAG_DEF_MEM,
		       cfg.timeout_ms ? cfg.timeout_ms : XFRAG_DEF_TIMEOUT_MS,
		       cfg.max_frags ? cfg.max_frags : XFRAG_DEF_MAX_FRAGS,
		       xf_evict_name(cfg.evict),
		       cfg.warm_ms ? cfg.warm_ms : XFRAG_DEF_WARM_MS,
		       cfg.mem_high ? (unsigned long long)cfg.mem_high :
				      (unsigned long long)mem * 7 / 8,
		       cfg.mem_low ? (unsigned long long)cfg.mem_low :
				     (unsigned long long)mem * 3 / 4,
		       cfg.quota);
		n++;
	}
	closedir(d);
	if (!n)
		printf("(none)\n");
	return XF_EXIT_OK;
}
