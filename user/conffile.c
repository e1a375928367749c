// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * /etc/xfrag/IFACE.conf: `xfrag attach IFACE --config FILE` reads the
 * options of attach from a file, one per line, as the systemd unit
 * xfrag@IFACE.service does at boot:
 *
 *   # comment (also after a value, when preceded by white space)
 *   evict = lru          an option with a value: the same names, values
 *   mem-per-cpu=8M       and ranges as on the command line
 *   no-tc                a flag alone (or "no-tc = yes|no")
 *
 * Options given on the command line win over the file.  A line that is
 * not one of these, an unknown name, a value out of range, a repeated
 * name: the whole file is refused with FILE:LINE and why.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"

static char *trim(char *s, char *e)
{
	while (s < e && isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	*e = 0;
	return s;
}

/*
 * Split text (len bytes, not NUL-terminated, not changed) into key and
 * value per line and hand each to cb (value NULL for a bare key).  Stops at
 * the first error, *line its line: cb's negative return, or
 * XF_CONF_BAD_LINE for a NUL byte, a line over XF_CONF_LINE_MAX bytes, an
 * empty key or one that is not [a-z0-9-].  Returns 0 when every line was
 * taken.
 */
int xf_conf_parse(const char *text, size_t len, int *line,
		  int (*cb)(void *ctx, int line, const char *key,
			    const char *val),
		  void *ctx)
{
	char buf[XF_CONF_LINE_MAX + 1];
	size_t i = 0;
	int n = 0, err;

	*line = 0;
	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t l = nl ? (size_t)(nl - (text + i)) : len - i;
		char *k, *v = NULL, *eq, *hash, *end;

		*line = ++n;
		if (l > XF_CONF_LINE_MAX || memchr(text + i, 0, l))
			return XF_CONF_BAD_LINE;
		memcpy(buf, text + i, l);
		buf[l] = 0;
		i += l + (nl ? 1 : 0);
		end = buf + l;
		/* A comment: '#' first on the line or after white space. */
		for (hash = buf; (hash = strchr(hash, '#')); hash++) {
			if (hash == buf || isspace((unsigned char)hash[-1])) {
				end = hash;
				break;
			}
		}
		k = trim(buf, end);
		if (!*k)
			continue;
		eq = strchr(k, '=');
		if (eq) {
			v = trim(eq + 1, k + strlen(k));
			k = trim(k, eq);
		}
		if (!*k)
			return XF_CONF_BAD_LINE;
		for (const char *p = k; *p; p++)
			if (!islower((unsigned char)*p) &&
			    !isdigit((unsigned char)*p) && *p != '-')
				return XF_CONF_BAD_LINE;
		err = cb(ctx, n, k, v);
		if (err)
			return err;
	}
	return 0;
}

struct conf_ctx {
	const char *path;
	const struct xf_opt *opts;
	void *args;		/* the command's args struct */
	const char *skip;	/* the option that names the file */
	unsigned long long seen;	/* bit i: opts[i] came from the file */
	unsigned long long cli;		/* bit i: set on the command line */
};

static int conf_opt(void *c, int line, const char *key, const char *val)
{
	struct conf_ctx *cc = c;
	const struct xf_opt *o = NULL;
	struct xf_val *v;
	int i = 0;
	uint64_t num;

	for (const struct xf_opt *p = cc->opts; p->name; p++, i++) {
		if (!strcmp(p->name, key) && strcmp(key, cc->skip)) {
			o = p;
			break;
		}
	}
	if (!o || i >= 64) {
		fprintf(stderr, "xfrag: %s:%d: unknown option '%s'\n",
			cc->path, line, key);
		return -EINVAL;
	}
	if (cc->seen & (1ULL << i)) {
		fprintf(stderr, "xfrag: %s:%d: '%s' given twice\n", cc->path,
			line, key);
		return -EINVAL;
	}
	cc->seen |= 1ULL << i;
	v = xf_val(o, cc->args);
	if (!o->metavar) {
		/* A flag: bare, or yes/no. */
		bool on = !val || !strcmp(val, "yes") || !strcmp(val, "true") ||
			  !strcmp(val, "1");

		if (val && !on && strcmp(val, "no") && strcmp(val, "false") &&
		    strcmp(val, "0")) {
			fprintf(stderr, "xfrag: %s:%d: %s takes yes or no, "
				"not '%s'\n", cc->path, line, key, val);
			return -EINVAL;
		}
		if (!(cc->cli & (1ULL << i)))
			v->set = on;
		return 0;
	}
	if (!val || !*val) {
		fprintf(stderr, "xfrag: %s:%d: %s needs a value (%s)\n",
			cc->path, line, key, o->metavar);
		return -EINVAL;
	}
	if (o->max && (xf_parse_num(val, &num) || num < o->min ||
		       num > o->max)) {
		fprintf(stderr, "xfrag: %s:%d: %s %s: expected a number in "
			"[%llu..%llu]\n", cc->path, line, key, val,
			(unsigned long long)o->min, (unsigned long long)o->max);
		return -ERANGE;
	}
	if (cc->cli & (1ULL << i))
		return 0;	/* the command line wins */
	v->str = strdup(val);
	if (!v->str)
		return -ENOMEM;
	v->num = o->max ? num : 0;
	v->set = true;
	return 0;
}

/*
 * Apply the options in text (from path, for messages) to args (parsed
 * with opts), those set already (the command line) left alone; `skip`
 * names the option that named the file.  0, or a negative errno with
 * FILE:LINE on stderr.
 */
int xf_conf_apply(const char *path, const char *text, size_t len,
		  const struct xf_opt *opts, void *args, const char *skip)
{
	struct conf_ctx cc = { .path = path, .opts = opts, .args = args,
			       .skip = skip };
	int i = 0, line, err;

	for (const struct xf_opt *p = opts; p->name && i < 64; p++, i++)
		if (xf_val(p, args)->set)
			cc.cli |= 1ULL << i;
	err = xf_conf_parse(text, len, &line, conf_opt, &cc);
	if (err == XF_CONF_BAD_LINE) {
		fprintf(stderr, "xfrag: %s:%d: not an option line (name, "
			"name = value, or a # comment)\n", path, line);
		return -EINVAL;
	}
	return err;
}

/* Read FILE (at most XF_CONF_FILE_MAX bytes) and apply it as above. */
int xf_conf_load(const char *path, const struct xf_opt *opts, void *args,
		 const char *skip)
{
	static char text[XF_CONF_FILE_MAX + 1];
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "xfrag: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	n = fread(text, 1, sizeof(text), f);
	if (ferror(f) || n > XF_CONF_FILE_MAX) {
		fprintf(stderr, "xfrag: %s: %s\n", path, ferror(f) ?
			"cannot read" : "longer than " XF_STR(XF_CONF_FILE_MAX)
			" bytes");
		fclose(f);
		return -EINVAL;
	}
	fclose(f);
	return xf_conf_apply(path, text, n, opts, args, skip);
}
