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

/* The counters as one JSON object: the sums, with pc every CPU's too. */
static void json_obj(FILE *f, const struct xfrag_stats *sum,
		     const struct xfrag_stats *pc, int ncpu)
{
	fprintf(f, "{");
	for (int i = 0; i < xf_ncounters; i++)
		fprintf(f, "%s\"%s\": %llu", i ? ", " : "", xf_counters[i].name,
			(unsigned long long)field(sum, i));
	if (pc) {
		fprintf(f, ", \"per_cpu\": [");
		for (int c = 0; c < ncpu; c++) {
			fprintf(f, "%s{", c ? ", " : "");
			for (int i = 0; i < xf_ncounters; i++)
				fprintf(f, "%s\"%s\": %llu", i ? ", " : "",
					xf_counters[i].name,
					(unsigned long long)field(&pc[c], i));
			fprintf(f, "}");
		}
		fprintf(f, "]");
	}
	fprintf(f, "}");
}

void xf_print_json(FILE *f, const struct xfrag_stats *sum,
		   const struct xfrag_stats *pc, int ncpu)
{
	json_obj(f, sum, pc, ncpu);
	fprintf(f, "\n");
}

/* A label value or HELP text in the exposition format: \\ \n (and \" in
 * label values) escaped. */
static void prom_escape(FILE *f, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (quote && *s == '"')
			fputs("\\\"", f);
		else
			fputc(*s, f);
	}
}

/*
 * The counters of n interfaces in Prometheus' text exposition format
 * (version 0.0.4): one family per counter, `xfrag_NAME_total` for
 * counters and `xfrag_NAME` for gauges, HELP from the counter list, the
 * label iface; with per-CPU values (src[k].pc) a sample per CPU with the
 * label cpu instead of the sum (sum() by iface gives it back).
 */
void xf_print_prometheus(FILE *f, const struct xf_prom_src *src, int n)
{
	for (int i = 0; i < xf_ncounters; i++) {
		const struct xf_counter *c = &xf_counters[i];
		const char *suffix = c->gauge ? "" : "_total";

		fprintf(f, "# HELP xfrag_%s%s ", c->name, suffix);
		prom_escape(f, c->help, false);
		fprintf(f, "\n# TYPE xfrag_%s%s %s\n", c->name, suffix,
			c->gauge ? "gauge" : "counter");
		for (int k = 0; k < n; k++) {
			const struct xf_prom_src *s = &src[k];

			if (!s->pc) {
				fprintf(f, "xfrag_%s%s{iface=\"", c->name, suffix);
				prom_escape(f, s->ifname, true);
				fprintf(f, "\"} %llu\n",
					(unsigned long long)field(s->sum, i));
				continue;
			}
			for (int cpu = 0; cpu < s->ncpu; cpu++) {
				fprintf(f, "xfrag_%s%s{iface=\"", c->name, suffix);
				prom_escape(f, s->ifname, true);
				fprintf(f, "\",cpu=\"%d\"} %llu\n", cpu,
					(unsigned long long)field(&s->pc[cpu], i));
			}
		}
	}
}

/* One report of `stats --interval --json`: rates, then the totals. */
void xf_print_rates_json(FILE *f, const struct xfrag_stats *sum,
			 const struct xfrag_stats *pc, int ncpu,
			 const struct xfrag_stats *prev, double secs)
{
	fprintf(f, "{\"interval_s\": %.3f, \"rates\": {", secs);
	for (int i = 0, k = 0; i < xf_ncounters; i++) {
		if (xf_counters[i].gauge)
			continue;
		fprintf(f, "%s\"%s\": %.1f", k++ ? ", " : "",
			xf_counters[i].name,
			(field(sum, i) - field(prev, i)) / secs);
	}
	fprintf(f, "}, \"totals\": ");
	json_obj(f, sum, pc, ncpu);
	fprintf(f, "}\n");
}

/* The per-CPU column heads: cpu0, cpu1, ... */
static void cpu_heads(FILE *f, int ncpu)
{
	char h[16];

	for (int c = 0; c < ncpu; c++) {
		snprintf(h, sizeof(h), "cpu%d", c);
		fprintf(f, " %12s", h);
	}
	fprintf(f, "\n");
}

void xf_print_table(FILE *f, const char *ifname, const struct xfrag_stats *sum,
		    const struct xfrag_stats *pc, int ncpu,
		    const struct xfrag_stats *prev, double secs)
{
	fprintf(f, "xfrag counters on %s%s\n", ifname,
		prev ? " (rate per second since the last report)" : "");
	if (pc) {
		/* Where the work ran: a fragment is received on the CPU its
		 * queue (or sender, on veth) runs on, then reassembled there
		 * or on its owner after a steer. */
		static const struct {
			const char *name, *help;
		} rows[] = {
			{ "received", "fragments that arrived on this CPU" },
			{ "steered_out", "of them, redirected to their owner CPU" },
			{ "steered_in", "fragments this CPU owns, from the others" },
			{ "processed", "fragments processed here (reasm_reqds)" },
			{ "reassembled", "datagrams completed here (reasm_oks)" },
		};

		fprintf(f, "  %-18s %14s", "spread", "all");
		cpu_heads(f, ncpu);
		for (unsigned int r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
			__u64 v;

			for (int c = -1; c < ncpu; c++) {
				const struct xfrag_stats *x = c < 0 ? sum : &pc[c];

				switch (r) {
				case 0:
					v = x->reasm_reqds - x->steer_in +
					    x->steer_out;
					break;
				case 1: v = x->steer_out; break;
				case 2: v = x->steer_in; break;
				case 3: v = x->reasm_reqds; break;
				default: v = x->reasm_oks; break;
				}
				if (c < 0)
					fprintf(f, "  %-18s %14llu", rows[r].name,
						(unsigned long long)v);
				else
					fprintf(f, " %12llu", (unsigned long long)v);
			}
			fprintf(f, "  %s\n", rows[r].help);
		}
		fprintf(f, "  %-18s %14s", "counter", "sum");
		cpu_heads(f, ncpu);
	}
	for (int i = 0; i < xf_ncounters; i++) {
		fprintf(f, "  %-18s %14llu", xf_counters[i].name,
			(unsigned long long)field(sum, i));
		if (prev && !xf_counters[i].gauge)
			fprintf(f, " %12.0f/s",
				(double)(field(sum, i) - field(prev, i)) / secs);
		else if (prev)
			fprintf(f, " %14s", "");
		if (pc)
			for (int c = 0; c < ncpu; c++)
				fprintf(f, " %12llu",
					(unsigned long long)field(&pc[c], i));
		fprintf(f, "  %s\n", xf_counters[i].help);
	}
	/* Fragments dropped in a full cpumap queue are counted nowhere by
	 * the kernel: what left one CPU and never reached its owner. */
	if (sum->steer_out || sum->steer_in)
		fprintf(f, "  %-18s %14lld  %s\n", "steer_lost",
			(long long)(sum->steer_out - sum->steer_in),
			"fragments redirected but not arrived (steer_out - "
			"steer_in): queued now or dropped in a full cpumap "
			"queue");
}

int xf_cmd_stats(int argc, char **argv, union xf_args *args)
{
	const struct xf_stats_args *a = &args->stats;
	const char *ifname = argv[0];
	const struct xf_val *fmt = &a->format, *iv = &a->interval;
	const struct xf_val *cnt = &a->count;
	bool json = a->json.set, percpu = a->per_cpu.set, prom = false;
	struct xfrag_stats sum, prev;
	struct xfrag_stats *pc = NULL;
	struct timespec t0, t1;
	int ncpu = 0, err, n = 0;
	(void)argc;

	if (fmt->set) {
		if (!strcmp(fmt->str, "json"))
			json = true;
		else if (!strcmp(fmt->str, "prometheus"))
			prom = true;
		else if (strcmp(fmt->str, "table")) {
			fprintf(stderr, "xfrag stats: --format must be table, "
				"json or prometheus\n");
			return XF_EXIT_USAGE;
		}
	}
	if (prom && iv->set) {
		fprintf(stderr, "xfrag stats: --format prometheus prints the "
			"totals once (a scraper computes rates): no --interval\n");
		return XF_EXIT_USAGE;
	}
	err = xf_read_stats(ifname, &sum, percpu ? &pc : NULL, &ncpu);
	if (err) {
		if (err == -ENOENT)
			fprintf(stderr, "xfrag stats: xfrag is not attached to %s "
				"(no %s/%s/xfrag_stats)\n", ifname,
				XFRAG_PIN_ROOT, ifname);
		else if (err == -ENODEV)
			fprintf(stderr, "xfrag stats: unknown interface '%s'\n",
				ifname);
		else
			fprintf(stderr, "xfrag stats: %s\n", strerror(-err));
		return err == -ENOENT ? XF_EXIT_IFACE : xf_err_exit(err);
	}
	if (!iv->set) {
		if (prom)
			xf_print_prometheus(stdout, &(struct xf_prom_src){
				.ifname = ifname, .sum = &sum, .pc = pc,
				.ncpu = ncpu }, 1);
		else if (json)
			xf_print_json(stdout, &sum, pc, ncpu);
		else
			xf_print_table(stdout, ifname, &sum, pc, ncpu, NULL, 0);
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
		if (json)
			xf_print_rates_json(stdout, &sum, pc, ncpu, &prev, secs);
		else
			xf_print_table(stdout, ifname, &sum, pc, ncpu, &prev,
				       secs);
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
void xf_pcpu_verdict(const struct xfrag_pcpu *pc, int n, __u64 now,
		     bool tc_flag, const char **tc, const char **room)
{
	int ok = 0, bad = 0, seen = 0;

	for (int i = 0; i < n; i++) {
		/* Written from the coarse clock, which lags CLOCK_MONOTONIC:
		 * a time after now is not a recent one. */
		if (pc[i].tc_seen_ns && pc[i].tc_seen_ns <= now &&
		    now - pc[i].tc_seen_ns < XFRAG_TC_ALIVE_NS)
			seen = 1;
		bad |= pc[i].room_bad != 0;
		ok |= pc[i].room_ok >= XFRAG_ROOM_PROOF;
	}
	*room = bad ? "no" : ok ? "yes" : "-";
	*tc = tc_flag ? "yes" : seen ? "seen" : "no";
}

/*
 * How the sweepers were started: "pinned" (BPF_F_TIMER_CPU_PIN), "unpinned"
 * when any CPU's kernel refused the flag (before 6.7), NULL when none ran.
 */
const char *xf_pcpu_sweep(const struct xfrag_pcpu *pc, int n)
{
	const char *r = NULL;

	for (int i = 0; i < n; i++) {
		if (pc[i].sweep_armed == XFRAG_SWEEP_UNPINNED)
			return "unpinned";
		if (pc[i].sweep_armed == XFRAG_SWEEP_PINNED)
			r = "pinned";
	}
	return r;
}

/* The per-CPU state of the instance on ifname; none read: n = 0. */
static void pcpu_state(const char *ifname, bool tc_flag, const char **tc,
		       const char **room, const char **sweep)
{
	int n = libbpf_num_possible_cpus(), fd;
	struct xfrag_pcpu *pc = NULL;
	struct timespec ts;
	__u32 zero = 0;
	__u64 now;

	fd = xf_pin_open(ifname, "xfrag_pcpu");
	if (fd >= 0 && n > 0) {
		pc = calloc(n, sizeof(*pc));
		if (pc && bpf_map_lookup_elem(fd, &zero, pc)) {
			free(pc);
			pc = NULL;
		}
	}
	if (fd >= 0)
		close(fd);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	xf_pcpu_verdict(pc, pc ? n : 0, now, tc_flag, tc, room);
	*sweep = pc ? xf_pcpu_sweep(pc, n) : NULL;
	free(pc);
}

const char *xf_steer_name(__u32 steer)
{
	switch (steer) {
	case XFRAG_STEER_OFF:
		return "off";
	case XFRAG_STEER_CPUMAP:
		return "cpumap";
	case XFRAG_STEER_RPS:
		return "rps";
	case XFRAG_STEER_RPS_OURS:
		return "rps(set)";
	default:
		return "none";	/* not attached by `xfrag attach` */
	}
}

/*
 * The XDP programs that run after xfrag_xdp in the libxdp dispatcher on
 * ifindex, in run order, their names joined into names (", "); their
 * number, 0 with no dispatcher or none after xfrag.  A fragment steered
 * through the cpumap leaves the dispatcher, so these would not see it.
 */
int xf_progs_after(int ifindex, char *names, size_t len)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p = NULL;
	bool after = false;
	size_t used = 0;
	int n = 0;

	if (len)
		names[0] = 0;
	if (libxdp_get_error(mp) || !mp)
		return 0;
	if (!xdp_multiprog__is_legacy(mp)) {
		while ((p = xdp_multiprog__next_prog(p, mp))) {
			const char *name = xdp_program__name(p);

			if (!after) {
				after = !strcmp(name, "xfrag_xdp");
				continue;
			}
			if (used < len)
				used += snprintf(names + used, len - used,
						 "%s%s", n ? ", " : "", name);
			n++;
		}
	}
	xdp_multiprog__close(mp);
	return n;
}

void xf_status_header(FILE *f)
{
	fprintf(f, "%-12s %-7s %-8s %-4s %-4s %8s %5s %10s", "interface",
		"ifindex", "xdp", "tc", "room", "buckets", "ways", "mem/cpu");
	for (int i = 0; i < xf_ntunables; i++)
		fprintf(f, " %*s", xf_tunables[i].width, xf_tunables[i].col);
	fprintf(f, " %-8s %s\n", "steer", "cpus");
}

/* One line of `xfrag status`: cfg as read from the map (0: defaults). */
void xf_status_row(FILE *f, const char *ifname, unsigned int ifindex,
		   const struct xfrag_config *cfg, const char *tc,
		   const char *room)
{
	char v[32];

	fprintf(f, "%-12s %-7u %-8s %-4s %-4s %8u %5u %10u", ifname, ifindex,
		cfg->buckets ? mode_name(cfg->xdp_mode) : "loader", tc, room,
		cfg->buckets ? cfg->buckets : XFRAG_DEF_BUCKETS,
		cfg->ways ? cfg->ways : XFRAG_DEF_WAYS,
		cfg->mem_per_cpu ? cfg->mem_per_cpu : XFRAG_DEF_MEM);
	/* The run-time tunables: their columns come from XF_TUNABLES. */
	for (int i = 0; i < xf_ntunables; i++) {
		xf_tunable_show(&xf_tunables[i], cfg, v, sizeof(v));
		fprintf(f, " %*s", xf_tunables[i].width, v);
	}
	fprintf(f, " %-8s %u\n", xf_steer_name(cfg->steer),
		cfg->steer_ncpus);
}

int xf_cmd_status(int argc, char **argv, union xf_args *args)
{
	struct dirent *de;
	DIR *d;
	int n = 0, unpinned = 0;
	static char late[4096], after[256];
	(void)argc;
	(void)argv;
	(void)args;

	late[0] = 0;
	d = opendir(XFRAG_PIN_ROOT);
	if (!d) {
		printf("xfrag is not attached anywhere (no %s)\n", XFRAG_PIN_ROOT);
		return XF_EXIT_OK;
	}
	xf_status_header(stdout);
	while ((de = readdir(d))) {
		struct xfrag_config cfg = {};
		const char *tc, *room, *sweep;
		__u32 zero = 0;
		int fd, st;

		if (de->d_name[0] == '.')
			continue;
		fd = xf_pin_open(de->d_name, "xfrag_config");
		if (fd < 0)
			continue;
		st = xf_instance_state(de->d_name);
		if (st == XF_INST_GONE || st == XF_INST_STALE) {
			/* Pins without their instance: say so, not its
			 * limits (a recreated interface is not attached). */
			close(fd);
			printf("%-12s %-7s %s\n", de->d_name,
			       st == XF_INST_GONE ? "gone" : "stale",
			       st == XF_INST_GONE ?
			       "the interface is gone; its pins are left in "
			       XFRAG_PIN_ROOT "/: xfrag detach removes them, "
			       "xfrag attach on a new one replaces them" :
			       "xfrag's XDP program is not on this interface "
			       "(recreated?); xfrag attach replaces the pins "
			       "left behind, xfrag detach removes them");
			n++;
			continue;
		}
		if (bpf_map_lookup_elem(fd, &zero, &cfg))
			memset(&cfg, 0, sizeof(cfg));
		close(fd);
		pcpu_state(de->d_name, cfg.flags & XFRAG_CFG_TC, &tc, &room,
			   &sweep);
		xf_status_row(stdout, de->d_name, if_nametoindex(de->d_name),
			      &cfg, tc, room);
		if (cfg.steer == XFRAG_STEER_CPUMAP &&
		    if_nametoindex(de->d_name) &&
		    xf_progs_after(if_nametoindex(de->d_name), after,
				   sizeof(after)) > 0)
			snprintf(late + strlen(late), sizeof(late) - strlen(late),
				 "xfrag: %s: steering through the cpumap, and "
				 "XDP programs run after xfrag in the "
				 "dispatcher (%s): fragments steered to their "
				 "owner CPU and the datagrams rebuilt from them "
				 "skip those programs; attach again with "
				 "--steer off\n", de->d_name, after);
		unpinned |= sweep && !strcmp(sweep, "unpinned");
		n++;
	}
	closedir(d);
	if (!n)
		printf("(none)\n");
	if (unpinned)
		printf("%s\n", XF_SWEEP_UNPINNED_NOTE);
	fputs(late, stdout);
	return XF_EXIT_OK;
}
