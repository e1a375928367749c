// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `xfrag config IFACE key=value...` without the map: xf_config_args() and
 * xf_config_set() against a model of the documented settings (README,
 * `xfrag config --help`), and xf_evict_name() on any value.
 *
 * Input: lines (split at '\n' and NUL).  A first line "cfg N N ..." gives
 * the struct as read from the map (up to 12 numbers, in field order,
 * taken modulo 2^32; absent: all 0); the other lines are the key=value
 * arguments.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "fuzz.h"

#define MAX_ARGS 32
#define NFIELDS (sizeof(struct xfrag_config) / sizeof(__u32))

/* The documented settings, independent of config.c's table. */
static const struct setting {
	const char *key;
	uint64_t min, max;
	size_t off;
} settings[] = {
	{ "timeout", 10, 600000, offsetof(struct xfrag_config, timeout_ms) },
	{ "max-frags", 1, 64, offsetof(struct xfrag_config, max_frags) },
	{ "warm", 0, 60000, offsetof(struct xfrag_config, warm_ms) },
	{ "mem-high", 1536, 1U << 30, offsetof(struct xfrag_config, mem_high) },
	{ "mem-low", 1536, 1U << 30, offsetof(struct xfrag_config, mem_low) },
	{ "quota", 0, 65535, offsetof(struct xfrag_config, quota) },
	/* 0 (off) is stored as XFRAG_MAX_DIST_OFF: model_set() */
	{ "max-dist", 0, 1000000, offsetof(struct xfrag_config, max_dist) },
};
#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

static const char *const policies[] = { NULL, "refuse", "lru", "progress" };

static __u32 *fld(struct xfrag_config *c, size_t off)
{
	return (__u32 *)((char *)c + off);
}

/* The name `xfrag status` must show for an evict value read from a map. */
static const char *want_evict_name(__u32 e)
{
	if (e == 0)
		return "progress";	/* 0: the built-in default */
	return e < 4 ? policies[e] : "?";
}

/* Model of one key=value: 0 and *m updated, or -1 (m untouched). */
static int model_set(struct xfrag_config *m, const char *key, const char *val)
{
	uint64_t v;

	if (!strcmp(key, "evict")) {
		for (__u32 e = 1; e < 4; e++)
			if (!strcmp(val, policies[e])) {
				m->evict = e;
				return 0;
			}
		return -1;
	}
	if (!strcmp(key, "too-many")) {
		if (!strcmp(val, "pass"))
			m->too_many = XFRAG_TOO_MANY_PASS;
		else if (!strcmp(val, "drop"))
			m->too_many = XFRAG_TOO_MANY_DROP;
		else
			return -1;
		return 0;
	}
	for (size_t i = 0; i < NSETTINGS; i++) {
		if (strcmp(key, settings[i].key))
			continue;
		if (ref_parse_num(val, &v) || v < settings[i].min ||
		    v > settings[i].max)
			return -1;
		if (settings[i].off == offsetof(struct xfrag_config, max_dist) &&
		    !v)
			v = XFRAG_MAX_DIST_OFF;
		*fld(m, settings[i].off) = (__u32)v;
		return 0;
	}
	return -1;
}

static void check_cfg_eq(const struct xfrag_config *a,
			 const struct xfrag_config *b, const char *what)
{
	for (size_t i = 0; i < NFIELDS; i++)
		XF_CHECK(((const __u32 *)a)[i] == ((const __u32 *)b)[i],
			 "%s: field %zu is %u, expected %u", what, i,
			 ((const __u32 *)a)[i], ((const __u32 *)b)[i]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char *buf = NULL, line[128];
	size_t len = 0;
	FILE *f;

	(void)argc;
	(void)argv;
	/* `config --help` documents exactly the ranges modelled here. */
	f = open_memstream(&buf, &len);
	if (!f)
		abort();
	xf_config_keys(f);
	fclose(f);
	XF_CHECK(strstr(buf, "refuse|lru|progress"), "help lacks the policies");
	XF_CHECK(strstr(buf, "  too-many   pass|drop"), "help lacks too-many");
	for (size_t i = 0; i < NSETTINGS; i++) {
		char pfx[32], *k, *nl;

		snprintf(pfx, sizeof(pfx), "  %-10s ", settings[i].key);
		snprintf(line, sizeof(line), "; %llu..%llu)\n",
			 (unsigned long long)settings[i].min,
			 (unsigned long long)settings[i].max);
		k = strstr(buf, pfx);
		XF_CHECK(k, "help lacks %s", settings[i].key);
		nl = strchr(k, '\n');
		XF_CHECK(nl && !strncmp(nl + 1 - strlen(line), line, strlen(line)),
			 "help on %s does not end in '%s'", settings[i].key, line);
	}
	free(buf);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xfrag_config cfg = {}, model, cfg2;
	char *lines[MAX_ARGS + 1], **args;
	int n, nargs, r, want = XF_EXIT_OK;

	n = xf_split(data, size, lines, MAX_ARGS + 1);
	args = lines;
	nargs = n;
	if (n && !strncmp(lines[0], "cfg", 3)) {
		char *p = lines[0] + 3, *end;

		for (size_t i = 0; i < NFIELDS; i++) {
			unsigned long long v = strtoull(p, &end, 10);

			if (end == p)
				break;
			((__u32 *)&cfg)[i] = (__u32)v;
			p = end;
		}
		args++;
		nargs--;
	}
	/* Whatever a map holds has a name (or "?"), never a crash. */
	for (size_t i = 0; i < NFIELDS; i++) {
		__u32 v = ((__u32 *)&cfg)[i];
		const char *name = xf_evict_name(v);

		XF_CHECK(name && !strcmp(name, want_evict_name(v)),
			 "evict %u named '%s', expected '%s'", v,
			 name ? name : "(null)", want_evict_name(v));
	}

	/* The model first: the arguments are split in place below. */
	model = cfg;
	for (int i = 0; i < nargs && want == XF_EXIT_OK; i++) {
		char *eq = strchr(args[i], '='), *key;

		if (!eq) {
			want = XF_EXIT_USAGE;
			break;
		}
		key = strndup(args[i], eq - args[i]);
		if (!key)
			abort();
		if (model_set(&model, key, eq + 1))
			want = XF_EXIT_USAGE;
		free(key);
	}
	if (want == XF_EXIT_OK && model.mem_low && model.mem_high &&
	    model.mem_low > model.mem_high)
		want = XF_EXIT_USAGE;

	/* xf_config_set() alone, pair by pair, on a copy. */
	cfg2 = cfg;
	for (int i = 0; i < nargs; i++) {
		char *eq = strchr(args[i], '='), *key;
		struct xfrag_config before = cfg2, one = cfg2;
		int ok1, rs;

		if (!eq)
			break;
		key = strndup(args[i], eq - args[i]);
		if (!key)
			abort();
		rs = xf_config_set(&cfg2, key, eq + 1);
		ok1 = !model_set(&one, key, eq + 1);
		XF_CHECK(rs == 0 || rs == -EINVAL, "xf_config_set -> %d", rs);
		XF_CHECK((rs == 0) == ok1, "'%s=%s': %s, documented: %s", key, eq + 1,
			 rs ? "refused" : "accepted", ok1 ? "accept" : "refuse");
		check_cfg_eq(&cfg2, rs ? &before : &one, key);
		free(key);
		if (rs)
			break;
	}

	r = xf_config_args(&cfg, nargs, args);
	XF_CHECK(r == want, "xf_config_args -> %d, expected %d", r, want);
	if (r == XF_EXIT_OK) {
		check_cfg_eq(&cfg, &model, "after xf_config_args");
		/* What was written is within the documented ranges. */
		for (int i = 0; i < nargs; i++) {
			for (size_t k = 0; k < NSETTINGS; k++) {
				__u32 v = *fld(&cfg, settings[k].off);

				if (strcmp(args[i], settings[k].key))
					continue;	/* key, split at '=' */
				if (settings[k].off ==
				    offsetof(struct xfrag_config, max_dist) &&
				    v == XFRAG_MAX_DIST_OFF)
					continue;	/* "off" */
				XF_CHECK(v >= settings[k].min &&
					 v <= settings[k].max,
					 "%s = %u outside %llu..%llu",
					 settings[k].key, v,
					 (unsigned long long)settings[k].min,
					 (unsigned long long)settings[k].max);
			}
			if (!strcmp(args[i], "evict"))
				XF_CHECK(cfg.evict >= 1 && cfg.evict <= 3,
					 "evict = %u", cfg.evict);
		}
		XF_CHECK(!cfg.mem_low || !cfg.mem_high ||
			 cfg.mem_low <= cfg.mem_high, "mem-low above mem-high");
	}
	xf_free_strs(lines, n);
	return 0;
}
