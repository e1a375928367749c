// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Option files for `xfrag attach --config` (user/conffile.c):
 * xf_conf_parse() against a reference written here from the documented
 * syntax (a line: blank, a # comment, `name`, or `name = value`; '#'
 * starts a comment at the start of a line or after white space; a name is
 * [a-z0-9-]+; white space around names and values is dropped; lines up to
 * XF_CONF_LINE_MAX bytes, no NUL), then xf_conf_apply() with attach's
 * option table into its args: accepted values are within the option's
 * range, and the options already set (the command line) keep theirs.
 *
 * Input: the file's bytes.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "fuzz.h"

#define MAXL 4096

struct got {
	int n;
	int line[MAXL];
	char *key[MAXL], *val[MAXL];
};

static int take(void *c, int line, const char *key, const char *val)
{
	struct got *g = c;

	XF_CHECK(g->n < MAXL, "too many lines");
	XF_CHECK(!g->n || line > g->line[g->n - 1], "line %d after %d", line,
		 g->n ? g->line[g->n - 1] : 0);
	g->line[g->n] = line;
	g->key[g->n] = strdup(key);
	g->val[g->n] = val ? strdup(val) : NULL;
	g->n++;
	return 0;
}

static int sp(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
	       c == '\r';
}

/* The reference: 0 with the lines in g, or the line that is refused. */
static int ref_parse(const uint8_t *d, size_t len, struct got *g, int *bad)
{
	size_t i = 0;
	int n = 0;

	while (i < len) {
		size_t s = i, e, ks, ke, vs = 0, ve = 0, eq = 0;
		int has_eq = 0;

		while (i < len && d[i] != '\n')
			i++;
		e = i;
		if (i < len)
			i++;
		n++;
		if (e - s > XF_CONF_LINE_MAX || memchr(d + s, 0, e - s)) {
			*bad = n;
			return 1;
		}
		for (size_t h = s; h < e; h++)
			if (d[h] == '#' && (h == s || sp(d[h - 1]))) {
				e = h;
				break;
			}
		for (size_t q = s; q < e; q++)
			if (d[q] == '=') {
				has_eq = 1;
				eq = q;
				break;
			}
		ks = s;
		ke = has_eq ? eq : e;
		while (ks < ke && sp(d[ks]))
			ks++;
		while (ke > ks && sp(d[ke - 1]))
			ke--;
		if (has_eq) {
			vs = eq + 1;
			ve = e;
			while (vs < ve && sp(d[vs]))
				vs++;
			while (ve > vs && sp(d[ve - 1]))
				ve--;
		}
		if (ks == ke && !has_eq)
			continue;
		if (ks == ke) {
			*bad = n;
			return 1;
		}
		for (size_t q = ks; q < ke; q++)
			if (!((d[q] >= 'a' && d[q] <= 'z') ||
			      (d[q] >= '0' && d[q] <= '9') || d[q] == '-')) {
				*bad = n;
				return 1;
			}
		XF_CHECK(g->n < MAXL, "too many lines");
		g->line[g->n] = n;
		g->key[g->n] = strndup((const char *)d + ks, ke - ks);
		g->val[g->n] = has_eq ? strndup((const char *)d + vs, ve - vs) :
					NULL;
		g->n++;
	}
	return 0;
}

static void got_free(struct got *g)
{
	for (int i = 0; i < g->n; i++) {
		free(g->key[i]);
		free(g->val[i]);
	}
	g->n = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct got a, b;
	static struct xf_attach_args args;
	struct xf_val *timeout = &args.tune[XF_T_timeout_ms];
	const struct xf_opt *opts = xf_attach_opts;
	int line = 0, bad = 0, r, rr;

	if (size > XF_CONF_FILE_MAX)
		return 0;
	r = xf_conf_parse((const char *)data, size, &line, take, &a);
	rr = ref_parse(data, size, &b, &bad);
	XF_CHECK((r == 0) == (rr == 0), "parse %d, reference %d (line %d/%d)",
		 r, rr, line, bad);
	if (r)
		XF_CHECK(r == XF_CONF_BAD_LINE && line == bad,
			 "refused line %d (%d), reference line %d", line, r, bad);
	else
		XF_CHECK(a.n == b.n, "%d lines, reference %d", a.n, b.n);
	for (int i = 0; !r && i < a.n; i++) {
		XF_CHECK(a.line[i] == b.line[i] && !strcmp(a.key[i], b.key[i]),
			 "line %d: key '%s', reference line %d '%s'",
			 a.line[i], a.key[i], b.line[i], b.key[i]);
		XF_CHECK(!a.val[i] == !b.val[i] &&
			 (!a.val[i] || !strcmp(a.val[i], b.val[i])),
			 "line %d: value differs", a.line[i]);
	}
	got_free(&a);
	got_free(&b);

	/* Applied with attach's own table: "timeout" as if given on the
	 * command line keeps its value; what the file sets is in range. */
	memset(&args, 0, sizeof(args));
	timeout->set = true;
	timeout->str = "1000";
	timeout->num = 1000;
	if (!xf_conf_apply("fuzz.conf", (const char *)data, size, opts, &args,
			   "config")) {
		XF_CHECK(timeout->num == 1000 && !strcmp(timeout->str, "1000"),
			 "the command line's timeout was overwritten");
		XF_CHECK(!args.config.set, "config set from the file");
		for (const struct xf_opt *o = opts; o->name; o++) {
			const struct xf_val *v = xf_val(o, &args);

			XF_CHECK(!v->set || !o->max ||
				 (v->num >= o->min && v->num <= o->max),
				 "--%s %llu out of range", o->name,
				 (unsigned long long)v->num);
			XF_CHECK(!v->set || !o->metavar || v->str,
				 "--%s set without a value", o->name);
		}
	}
	for (const struct xf_opt *o = opts; o->name; o++) {
		struct xf_val *v = xf_val(o, &args);

		if (v != timeout && v->str)
			free((char *)v->str);
	}
	return 0;
}
