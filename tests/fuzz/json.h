/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A small strict JSON reader (RFC 8259) for the fuzz targets: it checks a
 * text is exactly one JSON value (plus white space) and gives its tree, so
 * a target can compare keys and numbers with what it rendered.
 */
#ifndef XF_JSON_H
#define XF_JSON_H

#include <stdlib.h>
#include <string.h>

enum { J_OBJ, J_ARR, J_NUM, J_STR, J_LIT };

struct jnode {
	int type;
	const char *txt;	/* J_NUM, J_LIT: the text; J_STR: inside quotes */
	int len;
	const char *key;	/* member of an object: its key, inside quotes */
	int klen;
	int child, next;	/* node indices, -1: none */
	int n;			/* J_OBJ, J_ARR: members */
};

#define J_MAX_NODES 4096
#define J_MAX_DEPTH 32

struct jdoc {
	struct jnode node[J_MAX_NODES];
	int nn;
	const char *p, *end;
};

static void j_ws(struct jdoc *d)
{
	while (d->p < d->end && (*d->p == ' ' || *d->p == '\t' ||
				 *d->p == '\n' || *d->p == '\r'))
		d->p++;
}

static int j_digits(struct jdoc *d)
{
	const char *s = d->p;

	while (d->p < d->end && *d->p >= '0' && *d->p <= '9')
		d->p++;
	return d->p > s;
}

/* A string at d->p (on the quote): 0, with its inside in *s, *len. */
static int j_string(struct jdoc *d, const char **s, int *len)
{
	if (d->p >= d->end || *d->p != '"')
		return -1;
	*s = ++d->p;
	while (d->p < d->end && *d->p != '"') {
		unsigned char c = *d->p++;

		if (c < 0x20)
			return -1;
		if (c != '\\')
			continue;
		if (d->p >= d->end)
			return -1;
		c = *d->p++;
		if (c == 'u') {
			for (int i = 0; i < 4; i++, d->p++)
				if (d->p >= d->end ||
				    !strchr("0123456789abcdefABCDEF", *d->p) ||
				    !*d->p)
					return -1;
		} else if (!strchr("\"\\/bfnrt", c) || !c) {
			return -1;
		}
	}
	if (d->p >= d->end)
		return -1;
	*len = d->p - *s;
	d->p++;
	return 0;
}

static int j_value(struct jdoc *d, int depth);

static int j_new(struct jdoc *d, int type)
{
	struct jnode *n;

	if (d->nn >= J_MAX_NODES)
		return -1;
	n = &d->node[d->nn];
	memset(n, 0, sizeof(*n));
	n->type = type;
	n->child = n->next = -1;
	n->txt = d->p;
	return d->nn++;
}

static int j_members(struct jdoc *d, int me, int depth, int obj)
{
	int last = -1;

	d->p++;
	j_ws(d);
	if (d->p < d->end && *d->p == (obj ? '}' : ']')) {
		d->p++;
		return me;
	}
	for (;;) {
		const char *k = NULL;
		int kl = 0, v;

		j_ws(d);
		if (obj) {
			if (j_string(d, &k, &kl))
				return -1;
			j_ws(d);
			if (d->p >= d->end || *d->p != ':')
				return -1;
			d->p++;
		}
		v = j_value(d, depth + 1);
		if (v < 0)
			return -1;
		d->node[v].key = k;
		d->node[v].klen = kl;
		if (last < 0)
			d->node[me].child = v;
		else
			d->node[last].next = v;
		last = v;
		d->node[me].n++;
		j_ws(d);
		if (d->p < d->end && *d->p == ',') {
			d->p++;
			continue;
		}
		if (d->p < d->end && *d->p == (obj ? '}' : ']')) {
			d->p++;
			return me;
		}
		return -1;
	}
}

static int j_value(struct jdoc *d, int depth)
{
	int me;

	if (depth > J_MAX_DEPTH)
		return -1;
	j_ws(d);
	if (d->p >= d->end)
		return -1;
	switch (*d->p) {
	case '{':
		me = j_new(d, J_OBJ);
		return me < 0 ? -1 : j_members(d, me, depth, 1);
	case '[':
		me = j_new(d, J_ARR);
		return me < 0 ? -1 : j_members(d, me, depth, 0);
	case '"': {
		const char *s;
		int len;

		me = j_new(d, J_STR);
		if (me < 0 || j_string(d, &s, &len))
			return -1;
		d->node[me].txt = s;
		d->node[me].len = len;
		return me;
	}
	}
	for (const char *lit = "true\0false\0null\0"; *lit; lit += strlen(lit) + 1) {
		size_t l = strlen(lit);

		if ((size_t)(d->end - d->p) >= l && !memcmp(d->p, lit, l)) {
			me = j_new(d, J_LIT);
			if (me < 0)
				return -1;
			d->p += l;
			d->node[me].len = l;
			return me;
		}
	}
	me = j_new(d, J_NUM);
	if (me < 0)
		return -1;
	if (d->p < d->end && *d->p == '-')
		d->p++;
	if (d->p < d->end && *d->p == '0')
		d->p++;
	else if (!j_digits(d))
		return -1;
	if (d->p < d->end && *d->p == '.') {
		d->p++;
		if (!j_digits(d))
			return -1;
	}
	if (d->p < d->end && (*d->p == 'e' || *d->p == 'E')) {
		d->p++;
		if (d->p < d->end && (*d->p == '+' || *d->p == '-'))
			d->p++;
		if (!j_digits(d))
			return -1;
	}
	d->node[me].len = d->p - d->node[me].txt;
	return me;
}

/* Parse text[0..len): the root node (0), or -1 if it is not one JSON value. */
static inline int j_parse(struct jdoc *d, const char *text, size_t len)
{
	d->nn = 0;
	d->p = text;
	d->end = text + len;
	if (j_value(d, 0) != 0)
		return -1;
	j_ws(d);
	return d->p == d->end ? 0 : -1;
}

static inline int j_key_is(const struct jnode *n, const char *key)
{
	return n->key && (size_t)n->klen == strlen(key) &&
	       !memcmp(n->key, key, n->klen);
}

/* A J_NUM that is a plain unsigned integer: 0 with its value. */
static inline int j_u64(const struct jnode *n, unsigned long long *v)
{
	char buf[32];

	if (n->type != J_NUM || n->len < 1 || n->len >= (int)sizeof(buf))
		return -1;
	for (int i = 0; i < n->len; i++)
		if (n->txt[i] < '0' || n->txt[i] > '9')
			return -1;
	memcpy(buf, n->txt, n->len);
	buf[n->len] = 0;
	*v = strtoull(buf, NULL, 10);
	return 0;
}

static inline double j_double(const struct jnode *n)
{
	char buf[512];

	if (n->type != J_NUM || n->len >= (int)sizeof(buf))
		return -1;
	memcpy(buf, n->txt, n->len);
	buf[n->len] = 0;
	return strtod(buf, NULL);
}

#endif
