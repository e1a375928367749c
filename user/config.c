// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xfrag config: the run-time tunables of an attached instance, changed in
 * its pinned xfrag_config map; the XDP program reads them on every
 * fragment, so a change takes effect at once, without reload.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "common.h"

static const char *const evict_names[] = {
	[XFRAG_EVICT_REFUSE] = "refuse",
	[XFRAG_EVICT_LRU] = "lru",
	[XFRAG_EVICT_PROGRESS] = "progress",
};

const char *xf_too_many_name(__u32 v)
{
	if (!v)
		v = XFRAG_DEF_TOO_MANY;
	return v == XFRAG_TOO_MANY_PASS ? "pass" :
	       v == XFRAG_TOO_MANY_DROP ? "drop" : "?";
}

const char *xf_evict_name(__u32 evict)
{
	if (!evict)
		evict = XFRAG_DEF_EVICT;
	return evict < 4 && evict_names[evict] ? evict_names[evict] : "?";
}

#define TUNE_NUM(k, mv, h, d, lo, hi, field, c, w)			\
	{ .key = k, .metavar = mv, .help = h, .def = d, .min = lo,	\
	  .max = hi, .off = offsetof(struct xfrag_config, field),	\
	  .col = c, .width = w },
#define TUNE_ENUM(k, mv, h, d, field, c, w)				\
	{ .key = k, .metavar = mv, .help = h, .def = d,		\
	  .off = offsetof(struct xfrag_config, field), .col = c,	\
	  .width = w },
const struct xf_tunable xf_tunables[] = {
	XF_TUNABLES(TUNE_NUM, TUNE_ENUM)
};
#undef TUNE_NUM
#undef TUNE_ENUM
const int xf_ntunables = sizeof(xf_tunables) / sizeof(xf_tunables[0]);

void xf_tunable_show(const struct xf_tunable *t,
		     const struct xfrag_config *cfg, char *buf, size_t len)
{
	__u32 v = *(const __u32 *)((const char *)cfg + t->off);
	unsigned long long mem = cfg->mem_per_cpu ? cfg->mem_per_cpu :
						    XFRAG_DEF_MEM;

	mem -= mem % XFRAG_CHUNK;
	if (t->off == offsetof(struct xfrag_config, evict))
		snprintf(buf, len, "%s", xf_evict_name(v));
	else if (t->off == offsetof(struct xfrag_config, too_many))
		snprintf(buf, len, "%s", xf_too_many_name(v));
	else if (t->off == offsetof(struct xfrag_config, max_dist) &&
		 v == XFRAG_MAX_DIST_OFF)
		snprintf(buf, len, "off");
	else if (v)
		snprintf(buf, len, "%u", v);
	else if (t->off == offsetof(struct xfrag_config, mem_high))
		snprintf(buf, len, "%llu", XFRAG_DEF_MEM_HIGH(mem));
	else if (t->off == offsetof(struct xfrag_config, mem_low))
		snprintf(buf, len, "%llu", XFRAG_DEF_MEM_LOW(mem));
	else
		snprintf(buf, len, "%s", t->def);	/* a plain number */
}

void xf_config_keys(FILE *f)
{
	for (int i = 0; i < xf_ntunables; i++) {
		const struct xf_tunable *t = &xf_tunables[i];

		fprintf(f, "  %-10s %s: %s (default %s", t->key, t->metavar,
			t->help, t->def);
		if (t->max)
			fprintf(f, "; %llu..%llu", (unsigned long long)t->min,
				(unsigned long long)t->max);
		fprintf(f, ")\n");
	}
}

/* Set one tunable; 0, or -EINVAL with a message on stderr. */
int xf_config_set(struct xfrag_config *cfg, const char *key, const char *val)
{
	uint64_t v;

	if (!strcmp(key, "evict")) {
		for (__u32 e = 1; e < 4; e++) {
			if (!strcmp(val, evict_names[e])) {
				cfg->evict = e;
				return 0;
			}
		}
		fprintf(stderr, "xfrag: evict must be refuse, lru or progress\n");
		return -EINVAL;
	}
	if (!strcmp(key, "too-many")) {
		if (!strcmp(val, "pass") || !strcmp(val, "drop")) {
			cfg->too_many = !strcmp(val, "pass") ?
					XFRAG_TOO_MANY_PASS :
					XFRAG_TOO_MANY_DROP;
			return 0;
		}
		fprintf(stderr, "xfrag: too-many must be pass or drop\n");
		return -EINVAL;
	}
	for (int i = 0; i < xf_ntunables; i++) {
		const struct xf_tunable *t = &xf_tunables[i];

		if (strcmp(key, t->key) || !t->max)
			continue;
		if (xf_parse_num(val, &v) || v < t->min || v > t->max) {
			fprintf(stderr, "xfrag: %s must be %llu..%llu, not '%s'\n",
				key, (unsigned long long)t->min,
				(unsigned long long)t->max, val);
			return -EINVAL;
		}
		/* In the map 0 means the default: "off" has a value of
		 * its own there. */
		if (t->off == offsetof(struct xfrag_config, max_dist) && !v)
			v = XFRAG_MAX_DIST_OFF;
		*(__u32 *)((char *)cfg + t->off) = v;
		return 0;
	}
	fprintf(stderr, "xfrag: unknown setting '%s'\n", key);
	return -EINVAL;
}

/*
 * Apply "key=value" arguments in order to cfg (argument strings are split
 * in place), then check what spans settings: XF_EXIT_OK, or
 * XF_EXIT_USAGE with a message on stderr (cfg then partly changed).
 */
int xf_config_args(struct xfrag_config *cfg, int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (!eq) {
			fprintf(stderr, "xfrag config: '%s' is not key=value\n",
				argv[i]);
			return XF_EXIT_USAGE;
		}
		*eq = 0;
		if (xf_config_set(cfg, argv[i], eq + 1))
			return XF_EXIT_USAGE;
	}
	if (cfg->mem_low && cfg->mem_high && cfg->mem_low > cfg->mem_high) {
		fprintf(stderr, "xfrag config: mem-low above mem-high\n");
		return XF_EXIT_USAGE;
	}
	return XF_EXIT_OK;
}

int xf_cmd_config(int argc, char **argv, union xf_args *args)
{
	struct xfrag_config cfg;
	__u32 zero = 0;
	int fd, ret;
	(void)args;

	fd = xf_pin_open(argv[0], "xfrag_config");
	if (fd < 0) {
		fprintf(stderr, "xfrag config: xfrag is not attached to %s\n",
			argv[0]);
		return XF_EXIT_IFACE;
	}
	if (bpf_map_lookup_elem(fd, &zero, &cfg)) {
		fprintf(stderr, "xfrag config: cannot read config: %s\n",
			strerror(errno));
		close(fd);
		return XF_EXIT_FAIL;
	}
	ret = xf_config_args(&cfg, argc - 1, argv + 1);
	if (ret == XF_EXIT_OK && bpf_map_update_elem(fd, &zero, &cfg, BPF_ANY)) {
		fprintf(stderr, "xfrag config: cannot write config: %s\n",
			strerror(errno));
		ret = XF_EXIT_FAIL;
	}
	close(fd);
	return ret;
}
