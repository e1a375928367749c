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

#define XF_STR_(x) #x
#define XF_STR(x) XF_STR_(x)

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

/* Numeric tunables: key, help, range, field. */
static const struct tunable {
	const char *key, *help;
	uint64_t min, max;
	size_t off;
} tunables[] = {
	{ "timeout", "datagram time-out in ms", XFRAG_MIN_TIMEOUT_MS,
	  XFRAG_MAX_TIMEOUT_MS, offsetof(struct xfrag_config, timeout_ms) },
	{ "max-frags", "fragments per datagram", 1, XFRAG_MAX_DESC,
	  offsetof(struct xfrag_config, max_frags) },
	{ "warm", "ms within which progress spares a datagram (progress)", 0,
	  60000, offsetof(struct xfrag_config, warm_ms) },
	{ "mem-high", "bytes per CPU above which eviction starts (k/M/G)",
	  XFRAG_CHUNK, XFRAG_MAX_MEM, offsetof(struct xfrag_config, mem_high) },
	{ "mem-low", "bytes per CPU eviction brings memory down to", XFRAG_CHUNK,
	  XFRAG_MAX_MEM, offsetof(struct xfrag_config, mem_low) },
	{ "quota", "in-flight datagrams per source (IPv6: /64) per CPU, 0 off",
	  0, 65535, offsetof(struct xfrag_config, quota) },
	{ "max-dist", "id-wrap guard: IPv4 fragments of a flow after which an "
	  "incomplete datagram is stale, 0 off (default "
	  XF_STR(XFRAG_DEF_MAX_DIST) ")", 0, XFRAG_MAX_MAX_DIST,
	  offsetof(struct xfrag_config, max_dist) },
};

void xf_config_keys(FILE *f)
{
	fprintf(f, "  %-10s %s\n", "evict", "refuse|lru|progress (default "
		"progress): a new datagram in a full bucket, memory above "
		"mem-high");
	fprintf(f, "  %-10s %s\n", "too-many", "pass|drop (default pass): a "
		"datagram beyond max-frags goes to the kernel (native mode "
		"with TC: held fragments replayed, later ones passed) or is "
		"discarded");
	for (size_t i = 0; i < sizeof(tunables) / sizeof(tunables[0]); i++)
		fprintf(f, "  %-10s %s, %llu..%llu\n", tunables[i].key,
			tunables[i].help, (unsigned long long)tunables[i].min,
			(unsigned long long)tunables[i].max);
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
	for (size_t i = 0; i < sizeof(tunables) / sizeof(tunables[0]); i++) {
		const struct tunable *t = &tunables[i];

		if (strcmp(key, t->key))
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

int xf_cmd_config(int argc, char **argv, struct xf_opt *opts)
{
	struct xfrag_config cfg;
	__u32 zero = 0;
	int fd, ret;
	(void)opts;

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
