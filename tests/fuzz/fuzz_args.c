// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xf_parse() with the real option table of every command (user/cmds.c).
 * Input: lines (split at '\n' and NUL); the first names the command (or,
 * naming none, picks one by its first byte), the others are its
 * arguments.  Checked: the result is one of the documented ones; argv
 * is only permuted; on success the positional count is within the
 * command's bounds, no positional looks like an option, every numeric
 * option is set to a documented-syntax number within its [min..max] and
 * equal to its text, every option with a value points into argv, flags
 * carry none, options not given stay zero, and nothing outside the
 * options' fields of the args struct is written.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "fuzz.h"

#define MAX_ARGS 48

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)(*(char *const *)a);
	uintptr_t y = (uintptr_t)(*(char *const *)b);

	return x < y ? -1 : x > y;
}

static size_t nopts(const struct xf_opt *o)
{
	size_t n = 0;

	while (o[n].name)
		n++;
	return n;
}

static int optlike(const char *a)
{
	return a[0] == '-' && a[1];
}

/* Does p point into (or at the end of) one of the argument strings? */
static int in_args(const char *p, char **args, int n)
{
	for (int i = 0; i < n; i++)
		if (p >= args[i] && p <= args[i] + strlen(args[i]))
			return 1;
	return 0;
}

/*
 * Regression: a parse that stops inside a cluster ("-qv": q unknown) must
 * not leak into the next one (glibc kept reading "v" of the old argv when
 * xf_parse() reset optind to 1, and then skipped the new argv[1]).
 */
static void check_fresh_state(void)
{
	const struct xf_cmd *stats = NULL;
	char c0[] = "stats", c1[] = "-qv", d0[] = "stats", d1[] = "eth0";
	char *a[] = { c0, c1, NULL }, *b[] = { d0, d1, NULL };
	union xf_args args;
	int first = -1, r;

	for (size_t c = 0; c < xf_ncmds; c++)
		if (!strcmp(xf_cmds[c].name, "stats"))
			stats = &xf_cmds[c];
	XF_CHECK(stats, "no stats command");
	r = xf_parse(stats, 2, a, &first, &args);
	XF_CHECK(r == -EINVAL, "stats -qv: %d", r);
	r = xf_parse(stats, 2, b, &first, &args);
	XF_CHECK(r == 0 && first == 1, "stats eth0 after stats -qv: %d, "
		 "first %d", r, first);
}

/* Bytes of union xf_args that some option of cmd owns. */
static void owned(const struct xf_cmd *cmd, unsigned char *mask)
{
	memset(mask, 0, sizeof(union xf_args));
	for (const struct xf_opt *o = cmd->opts; o->name; o++)
		memset(mask + o->off, 1, sizeof(struct xf_val));
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	check_fresh_state();
	/* The tables themselves must describe sane options. */
	for (size_t c = 0; c < xf_ncmds; c++) {
		const struct xf_cmd *cmd = &xf_cmds[c];
		char *buf = NULL;
		size_t len = 0;
		FILE *f;

		XF_CHECK(cmd->min_args >= 0 && cmd->min_args <= cmd->max_args,
			 "%s: positional bounds %d..%d", cmd->name,
			 cmd->min_args, cmd->max_args);
		XF_CHECK(nopts(cmd->opts) <= 29, "%s: more options than "
			 "xf_parse() takes", cmd->name);
		for (const struct xf_opt *o = cmd->opts; o->name; o++) {
			/* Its own field of the args struct, no other's. */
			XF_CHECK(o->off % _Alignof(struct xf_val) == 0 &&
				 o->off + sizeof(struct xf_val) <=
				 sizeof(union xf_args),
				 "%s --%s: field at %zu", cmd->name, o->name,
				 o->off);
			for (const struct xf_opt *p = cmd->opts; p < o; p++)
				XF_CHECK(p->off != o->off, "%s --%s and --%s: "
					 "one field", cmd->name, p->name,
					 o->name);
			XF_CHECK(!o->max || (o->metavar && o->min <= o->max),
				 "%s --%s: bad range", cmd->name, o->name);
			XF_CHECK(xf_opt(cmd->opts, o->name) == o,
				 "%s --%s: name not unique", cmd->name, o->name);
		}
		f = open_memstream(&buf, &len);
		if (!f)
			abort();
		xf_usage(f, cmd);
		fclose(f);
		for (const struct xf_opt *o = cmd->opts; o->name; o++)
			XF_CHECK(strstr(buf, o->name), "%s --help lacks --%s",
				 cmd->name, o->name);
		free(buf);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *args[MAX_ARGS + 2], *orig[MAX_ARGS + 1], *sorted[MAX_ARGS + 1];
	static unsigned char mask[sizeof(union xf_args)];
	const struct xf_cmd *real;
	const struct xf_opt *opts;
	union xf_args parsed;
	int n, argc, first = -1, r, dashdash = 0;
	size_t no;

	n = xf_split(data, size, args, MAX_ARGS + 1);
	if (!n)
		return 0;
	real = &xf_cmds[(unsigned char)args[0][0] % xf_ncmds];
	for (size_t c = 0; c < xf_ncmds; c++)
		if (!strcmp(args[0], xf_cmds[c].name))
			real = &xf_cmds[c];
	opts = real->opts;
	no = nopts(opts);
	/* Garbage first: the parser must clear what it does not set. */
	memset(&parsed, 0xa5, sizeof(parsed));

	free(args[0]);
	args[0] = strdup(real->name);	/* what main() passes */
	if (!args[0])
		abort();
	argc = n;
	args[argc] = NULL;
	for (int i = 1; i < argc; i++)
		if (!strcmp(args[i], "--"))
			dashdash = 1;
	memcpy(orig, args, argc * sizeof(*args));

	r = xf_parse(real, argc, args, &first, &parsed);

	XF_CHECK(r == 0 || r == XF_PARSE_HELP || r == -EINVAL || r == -ERANGE,
		 "%s: xf_parse returned %d", real->name, r);
	XF_CHECK(args[argc] == NULL, "argv terminator overwritten");
	/* argv is permuted, never changed. */
	memcpy(sorted, args, argc * sizeof(*args));
	qsort(sorted, argc, sizeof(*sorted), cmp_ptr);
	qsort(orig, argc, sizeof(*orig), cmp_ptr);
	XF_CHECK(!memcmp(sorted, orig, argc * sizeof(*args)),
		 "argv is not a permutation of the input");

	if (r == 0) {
		int npos = argc - first;

		XF_CHECK(first >= 1 && first <= argc, "first_arg %d of %d",
			 first, argc);
		XF_CHECK(npos >= real->min_args && npos <= real->max_args,
			 "%s: accepted %d positional arguments, takes %d..%d",
			 real->name, npos, real->min_args, real->max_args);
		for (int i = first; i < argc && !dashdash; i++)
			XF_CHECK(args[i][0] != '-' || !args[i][1],
				 "%s: option-like positional '%s'", real->name,
				 args[i]);
		/*
		 * Before them: options, each followed by its value if it takes
		 * one (an option may repeat: its last value counts).
		 */
		for (int i = 1; i < first; i++)
			XF_CHECK(optlike(args[i]) || (i > 1 && optlike(args[i - 1])),
				 "%s: '%s' neither option, value nor positional",
				 real->name, args[i]);
	}
	/* Outside the options' fields: the parser's zeroing only. */
	owned(real, mask);
	for (size_t i = 0; i < sizeof(parsed); i++)
		XF_CHECK(mask[i] || !((unsigned char *)&parsed)[i],
			 "%s: byte %zu of the args written, no option's",
			 real->name, i);
	for (size_t i = 0; i < no; i++) {
		const struct xf_opt *o = &opts[i];
		const struct xf_val *pv = xf_val(o, &parsed);
		uint64_t v;

		if (!pv->set) {
			XF_CHECK(!pv->str && !pv->num, "--%s: value without "
				 "being given", o->name);
			continue;
		}
		if (!o->metavar) {
			XF_CHECK(!pv->str, "flag --%s has a value", o->name);
			continue;
		}
		if (r == -ERANGE && o->max)
			continue;	/* possibly the one refused */
		XF_CHECK(pv->str && in_args(pv->str, args, argc),
			 "--%s: value not from argv", o->name);
		if (!o->max)
			continue;
		XF_CHECK(!ref_parse_num(pv->str, &v), "--%s '%s' accepted, "
			 "not a documented number", o->name, pv->str);
		XF_CHECK(v == pv->num, "--%s '%s' = %llu, parsed %llu",
			 o->name, pv->str, (unsigned long long)v,
			 (unsigned long long)pv->num);
		XF_CHECK(pv->num >= o->min && pv->num <= o->max,
			 "--%s %llu accepted outside [%llu..%llu]", o->name,
			 (unsigned long long)pv->num,
			 (unsigned long long)o->min,
			 (unsigned long long)o->max);
	}
	xf_free_strs(args, argc);
	return 0;
}
