// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xfrag CLI: option parsing, interface and pin helpers, counter access. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "common.h"

int xf_verbose;

#define XF_COUNTER_ROW(n, kind, h) \
	{ #n, h, #kind[0] == 'G', offsetof(struct xfrag_stats, n), \
	  XFRAG_CNT_BIT(n) },
const struct xf_counter xf_counters[] = { XFRAG_COUNTERS(XF_COUNTER_ROW) };
#undef XF_COUNTER_ROW
const int xf_ncounters = sizeof(xf_counters) / sizeof(xf_counters[0]);

#define XF_OUTCOME_ROW(n, counters, verdict, discard, h) \
	{ #n, h, #verdict, counters, discard },
const struct xf_outcome xf_outcomes[] = { XFRAG_OUTCOMES(XF_OUTCOME_ROW) };
#undef XF_OUTCOME_ROW
const int xf_noutcomes = sizeof(xf_outcomes) / sizeof(xf_outcomes[0]);

const struct xf_exit xf_exits[] = {
	{ XF_EXIT_OK, "success" },
	{ XF_EXIT_FAIL, "failure" },
	{ XF_EXIT_USAGE, "bad usage or value" },
	{ XF_EXIT_IFACE, "interface: unknown, already attached, not attached" },
	{ XF_EXIT_BPF, "BPF load or attach failed, or a kernel feature is missing" },
	{ XF_EXIT_PERM, "missing privileges" },
};
const int xf_nexits = sizeof(xf_exits) / sizeof(xf_exits[0]);

const struct xf_opt *xf_opt(const struct xf_opt *opts, const char *name)
{
	for (; opts->name; opts++)
		if (!strcmp(opts->name, name))
			return opts;
	return NULL;
}

void xf_usage(FILE *f, const struct xf_cmd *cmd)
{
	const struct xf_opt *o;

	fprintf(f, "Usage: xfrag %s %s\n  %s\n\nOptions:\n", cmd->name,
		cmd->args ? cmd->args : "", cmd->summary);
	for (o = cmd->opts; o && o->name; o++) {
		char left[64], sh[8] = "";

		if (o->shortopt)
			snprintf(sh, sizeof(sh), "-%c, ", o->shortopt);
		snprintf(left, sizeof(left), "%s--%s%s%s", sh, o->name,
			 o->metavar ? " " : "", o->metavar ? o->metavar : "");
		fprintf(f, "  %-26s %s", left, o->help);
		if (o->def)
			fprintf(f, " (default: %s)", o->def);
		if (o->max)
			fprintf(f, " [%llu..%llu]", (unsigned long long)o->min,
				(unsigned long long)o->max);
		fprintf(f, "\n");
	}
	fprintf(f, "  %-26s %s\n", "-v, --verbose", "show libbpf/libxdp messages");
	fprintf(f, "  %-26s %s\n", "-h, --help", "show this help");
	if (cmd->more_help) {
		fprintf(f, "\nSettings (key=value):\n");
		cmd->more_help(f);
	}
}

/*
 * Parse "123", "4k", "2M", "1G": decimal digits, then at most one suffix
 * k/K, m/M or g/G (powers of 1024).  -EINVAL for anything else (signs,
 * spaces, hex) and for a value beyond 64 bits; *out is set only on success.
 */
int xf_parse_num(const char *s, uint64_t *out)
{
	const char *p = s;
	uint64_t v = 0;
	int shift = 0;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned int d = *p - '0';

		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	switch (*p) {
	case 'k': case 'K': shift = 10; p++; break;
	case 'm': case 'M': shift = 20; p++; break;
	case 'g': case 'G': shift = 30; p++; break;
	default: break;
	}
	if (*p || v > UINT64_MAX >> shift)
		return -EINVAL;
	*out = v << shift;
	return 0;
}

int xf_parse(const struct xf_cmd *cmd, int argc, char **argv, int *first_arg,
	     union xf_args *args)
{
	struct option lo[32];
	char shorts[64] = "hv";
	size_t so = 2;
	const struct xf_opt *o;
	struct xf_val *v;
	int n = 0, c, nargs;

	memset(args, 0, sizeof(*args));
	for (o = cmd->opts; o && o->name && n < 29; o++, n++)
		lo[n] = (struct option){ o->name, o->metavar ? 1 : 0, NULL,
					 256 + n };
	lo[n++] = (struct option){ "help", 0, NULL, 'h' };
	lo[n++] = (struct option){ "verbose", 0, NULL, 'v' };
	lo[n] = (struct option){ 0 };
	/* Short forms: "hv" and each option's letter (with ':' for a value). */
	for (o = cmd->opts; o && o->name && so < sizeof(shorts) - 3; o++) {
		if (!o->shortopt)
			continue;
		shorts[so++] = o->shortopt;
		if (o->metavar)
			shorts[so++] = ':';
	}
	shorts[so] = 0;

	/* 0, not 1: glibc then also forgets where it stopped in the last
	 * argv it scanned (a cluster like -xv left half read). */
	optind = 0;
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		if (c == 'h')
			return XF_PARSE_HELP;
		if (c == 'v') {
			xf_verbose = 1;
			continue;
		}
		if (c < 256) {
			o = NULL;
			for (const struct xf_opt *p = cmd->opts; p && p->name;
			     p++)
				if (c != '?' && c != ':' && p->shortopt == c)
					o = p;
			if (!o) {
				fprintf(stderr, "Try 'xfrag %s --help'.\n",
					cmd->name);
				return -EINVAL;
			}
		} else {
			o = &cmd->opts[c - 256];
		}
		v = xf_val(o, args);
		v->set = true;
		v->str = optarg;
		if (o->max) {
			if (xf_parse_num(optarg, &v->num) || v->num < o->min ||
			    v->num > o->max) {
				fprintf(stderr,
					"xfrag %s: --%s %s: expected a number in [%llu..%llu]\n",
					cmd->name, o->name, optarg,
					(unsigned long long)o->min,
					(unsigned long long)o->max);
				return -ERANGE;
			}
		}
	}
	nargs = argc - optind;
	if (nargs < cmd->min_args || nargs > cmd->max_args) {
		fprintf(stderr, "xfrag %s: expected %s\nTry 'xfrag %s --help'.\n",
			cmd->name, cmd->args ? cmd->args : "no arguments",
			cmd->name);
		return -EINVAL;
	}
	*first_arg = optind;
	return 0;
}

/*
 * A name the kernel accepts for a device (its dev_valid_name()): 1 to
 * IFNAMSIZ - 1 bytes, not "." or "..", no '/', ':' or white space.  Only
 * such a name may become a directory under XFRAG_PIN_ROOT.
 */
bool xf_ifname_valid(const char *ifname)
{
	size_t n = strnlen(ifname, IFNAMSIZ);

	if (n == 0 || n == IFNAMSIZ || !strcmp(ifname, ".") ||
	    !strcmp(ifname, ".."))
		return false;
	for (const char *p = ifname; *p; p++)
		if (*p == '/' || *p == ':' || isspace((unsigned char)*p))
			return false;
	return true;
}

int xf_ifindex(const char *ifname)
{
	int idx = xf_ifname_valid(ifname) ? (int)if_nametoindex(ifname) : 0;

	if (!idx)
		fprintf(stderr, "xfrag: unknown interface '%s'\n", ifname);
	return idx;
}

/*
 * XFRAG_PIN_ROOT/IFACE, or XFRAG_PIN_ROOT/IFACE/MAP with map, into buf:
 * 0; -ENODEV when ifname is no interface name (so it cannot lead out of
 * XFRAG_PIN_ROOT), -ENAMETOOLONG when buf is too small.  On error buf
 * holds "" (len > 0): a path is never truncated.
 */
int xf_pin_path(char *buf, size_t len, const char *ifname, const char *map)
{
	int n;

	if (len)
		buf[0] = 0;
	if (!xf_ifname_valid(ifname))
		return -ENODEV;
	if (map)
		n = snprintf(buf, len, "%s/%s/%s", XFRAG_PIN_ROOT, ifname, map);
	else
		n = snprintf(buf, len, "%s/%s", XFRAG_PIN_ROOT, ifname);
	if (n < 0 || (size_t)n >= len) {
		if (len)
			buf[0] = 0;
		return -ENAMETOOLONG;
	}
	return 0;
}

int xf_pin_dir(char *buf, size_t len, const char *ifname)
{
	return xf_pin_path(buf, len, ifname, NULL);
}

int xf_pin_open(const char *ifname, const char *map)
{
	char path[256];
	int fd, err;

	err = xf_pin_path(path, sizeof(path), ifname, map);
	if (err)
		return err;
	fd = bpf_obj_get(path);
	return fd < 0 ? -errno : fd;
}

/* Map an errno to the documented exit codes. */
int xf_err_exit(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return XF_EXIT_OK;
	case EPERM:
	case EACCES:
		return XF_EXIT_PERM;
	case ENODEV:
	case EEXIST:
	case ENOENT:
		return XF_EXIT_IFACE;
	case EINVAL:
	case ERANGE:
		return XF_EXIT_USAGE;
	case EOPNOTSUPP:
		return XF_EXIT_BPF;
	default:
		return XF_EXIT_FAIL;
	}
}

/* Sum n per-CPU values (counters wrap modulo 2^64, as in the kernel). */
void xf_stats_sum(struct xfrag_stats *sum, const struct xfrag_stats *v, int n)
{
	memset(sum, 0, sizeof(*sum));
	for (int c = 0; c < n; c++)
		for (int i = 0; i < xf_ncounters; i++)
			*(__u64 *)((char *)sum + xf_counters[i].off) +=
				*(const __u64 *)((const char *)&v[c] +
						 xf_counters[i].off);
}

int xf_read_stats(const char *ifname, struct xfrag_stats *sum,
		  struct xfrag_stats **percpu, int *ncpu)
{
	struct xfrag_stats *v;
	__u32 zero = 0;
	int fd, n, err;

	fd = xf_pin_open(ifname, "xfrag_stats");
	if (fd < 0)
		return fd;
	n = libbpf_num_possible_cpus();
	if (n <= 0) {
		close(fd);
		return n ? n : -EINVAL;
	}
	v = calloc(n, sizeof(*v));
	if (!v) {
		close(fd);
		return -ENOMEM;
	}
	err = bpf_map_lookup_elem(fd, &zero, v);
	close(fd);
	if (err) {
		err = -errno;
		free(v);
		return err;
	}
	xf_stats_sum(sum, v, n);
	if (percpu) {
		*percpu = v;
		*ncpu = n;
	} else {
		free(v);
	}
	return 0;
}
