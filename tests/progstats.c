// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * progstats: load xfrag's BPF object as `xfrag attach` would (private maps,
 * nothing attached) and print, per program, what the verifier reports:
 * instructions after rewriting (xlated), instructions it processed, its
 * peak of states, the stack depth of each subprogram and the JIT size.
 * scripts/verifier-stats.sh runs it here and in the guest kernels.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xfrag.h"
#include "probe.h"
#include "xfrag.skel.h"

#define LOG_SZ (1 << 20)

static const char *field(const char *log, const char *what, char *buf,
			 size_t n)
{
	const char *p = strstr(log, what), *e;

	if (!p)
		return "-";
	p += strlen(what);
	e = strchr(p, '\n');
	snprintf(buf, n, "%.*s", (int)(e ? e - p : (long)strlen(p)), p);
	return buf;
}

int main(int argc, char **argv)
{
	struct xfrag_bpf *skel;
	struct bpf_program *p;
	struct bpf_map *m;
	int err, json = argc > 1 && !strcmp(argv[1], "--json"), first = 1;
	int n = 0;
	char *logs[16] = {};

	libbpf_set_print(NULL);
	skel = xfrag_bpf__open();
	if (!skel) {
		fprintf(stderr, "progstats: open: %s\n", strerror(errno));
		return 1;
	}
	skel->rodata->xfrag_buckets = XFRAG_DEF_BUCKETS;
	skel->rodata->xfrag_ways = XFRAG_DEF_WAYS;
	skel->rodata->xfrag_secret[0] = 0x0123456789abcdefULL;
	skel->rodata->xfrag_secret[1] = 0xfedcba9876543211ULL;
	skel->rodata->xfrag_use_meta = xf_probe_xdp_meta();
	bpf_map__set_max_entries(skel->maps.xfrag_table,
				 XFRAG_DEF_BUCKETS * XFRAG_DEF_WAYS);
	bpf_program__set_expected_attach_type(skel->progs.xfrag_owner_nf,
					      BPF_XDP);
	bpf_object__for_each_map(m, skel->obj)
		bpf_map__set_pin_path(m, NULL);
	bpf_object__for_each_program(p, skel->obj) {
		if (n >= 16)
			break;
		logs[n] = calloc(1, LOG_SZ);
		if (!logs[n])
			return 1;
		bpf_program__set_log_buf(p, logs[n], LOG_SZ);
		bpf_program__set_log_level(p, 4);	/* statistics only */
		n++;
	}
	err = xfrag_bpf__load(skel);
	if (err) {
		fprintf(stderr, "progstats: load: %d\n", err);
		for (int i = 0; i < n; i++)
			fprintf(stderr, "%s", logs[i]);
		return 1;
	}
	if (json)
		printf("[");
	else
		printf("%-16s %8s %10s %8s %8s  %s\n", "program", "xlated",
		       "processed", "peak", "jited", "stack depth");
	n = 0;
	bpf_object__for_each_program(p, skel->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		char st[256], pk[64];
		const char *log = logs[n++];
		unsigned long processed = 0, peak = 0;
		const char *s;

		if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
			continue;
		s = strstr(log, "processed ");
		if (s)
			processed = strtoul(s + 10, NULL, 10);
		s = strstr(log, "peak_states ");
		if (s)
			peak = strtoul(s + 12, NULL, 10);
		field(log, "stack depth ", st, sizeof(st));
		(void)pk;
		if (json)
			printf("%s{\"program\":\"%s\",\"xlated\":%u,"
			       "\"processed\":%lu,\"peak_states\":%lu,"
			       "\"jited\":%u,\"stack\":\"%s\"}",
			       first ? "" : ",", bpf_program__name(p),
			       info.xlated_prog_len / 8, processed, peak,
			       info.jited_prog_len, st);
		else
			printf("%-16s %8u %10lu %8lu %8u  %s\n",
			       bpf_program__name(p), info.xlated_prog_len / 8,
			       processed, peak, info.jited_prog_len, st);
		first = 0;
	}
	if (json)
		printf("]\n");
	xfrag_bpf__destroy(skel);
	return 0;
}
