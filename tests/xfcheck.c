// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xfcheck [FILE]: the counter invariants of tests/counters.h on a
 * snapshot of `xfrag stats` (the one checker for the shell and Python
 * tests; test_prog and fuzz_prog call xf_counter_invariants() directly).
 *
 * Input (FILE, or standard input): "name value" lines, as tests/lib.sh's
 * xf_stats_file writes them, or the one JSON object of `xfrag stats
 * --json` (flat: "name": value pairs).  Names that are not counters are
 * ignored; every counter must be there.  Exit 0 when the invariants hold;
 * else 1 with the reason on standard output (2: unreadable input).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "counters.h"

static int take(__u64 *v, char *seen, const char *name, const char *num)
{
	char *end;
	unsigned long long x;

	for (int i = 0; i < C_NUM; i++) {
		if (strcmp(name, cname[i]))
			continue;
		x = strtoull(num, &end, 10);
		if (end == num || *num == '-') {
			printf("counter %s: '%s' is not a number\n", name, num);
			return -1;
		}
		v[i] = x;
		seen[i] = 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static char buf[1 << 20];
	__u64 v[C_NUM] = { 0 };
	char seen[C_NUM] = { 0 }, msg[256];
	const char *err;
	FILE *f = stdin;
	size_t n;
	char *p, *save = NULL;

	if (argc > 2 || (argc == 2 && !strcmp(argv[1], "--help"))) {
		fprintf(stderr, "usage: xfcheck [FILE]\n");
		return 2;
	}
	if (argc == 2 && !(f = fopen(argv[1], "r"))) {
		perror(argv[1]);
		return 2;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	if (ferror(f) || n == sizeof(buf) - 1) {
		fprintf(stderr, "xfcheck: input unreadable or too long\n");
		return 2;
	}
	buf[n] = 0;
	if (strchr(buf, '[')) {
		printf("per-CPU JSON: give the sum (xfrag stats --json)\n");
		return 2;
	}
	/* JSON punctuation becomes space: what is left is name value pairs. */
	for (p = buf; *p; p++)
		if (strchr("{}\",:", *p))
			*p = ' ';
	for (char *name = strtok_r(buf, " \t\r\n", &save); name;
	     name = strtok_r(NULL, " \t\r\n", &save)) {
		char *num = strtok_r(NULL, " \t\r\n", &save);

		if (!num) {
			printf("'%s' without a value\n", name);
			return 1;
		}
		if (take(v, seen, name, num))
			return 1;
	}
	for (int i = 0; i < C_NUM; i++) {
		if (!seen[i]) {
			printf("stats key %s missing\n", cname[i]);
			return 1;
		}
	}
	err = xf_counter_invariants(v, msg, sizeof(msg));
	if (err) {
		printf("%s\n", err);
		return 1;
	}
	return 0;
}
