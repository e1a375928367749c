// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What `xfrag stats` and `xfrag status` print from values read from maps
 * (any bytes: another program, an older or newer object, a bug may have
 * written them), rendered to a memory stream and read back:
 *   stats --json [--per-cpu]      one strict JSON object, every counter in
 *                                 order with its exact value
 *   stats --interval --json       rates within rounding of (cur - prev) / s
 *   stats [--per-cpu] [--interval] one header and one line per counter,
 *                                 the values and help in their columns
 *   status                        the 17 columns after the name as
 *                                 documented (0 in the map: the default)
 *   the per-CPU tc/room verdict and the per-CPU sum, against models.
 *
 * Input (missing bytes read as 0): u8 ncpu (mod 5), u8 flags (1: per-CPU
 * columns, 2: TC flag in the config), u32 ifindex, u64 now, u32 interval
 * (ms - 1, mod 1e8), struct xfrag_config, struct xfrag_stats sum and prev,
 * ncpu x struct xfrag_stats, ncpu x struct xfrag_pcpu, then the interface
 * name (to the end or a NUL).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xdp/libxdp.h>
#include "common.h"
#include "fuzz.h"
#include "json.h"

#define MAX_CPU 4
#define NCOUNTERS (sizeof(struct xfrag_stats) / sizeof(__u64))

/* Names and kinds straight from the X-macro list in xfrag.h. */
#define ROW(n, kind, h) { #n, #kind[0] == 'G', h },
static const struct { const char *name; int gauge; const char *help; }
	ctr[] = { XFRAG_COUNTERS(ROW) };
#undef ROW

struct reader {
	const uint8_t *p;
	size_t left;
};

static void take(struct reader *r, void *dst, size_t n)
{
	size_t k = n < r->left ? n : r->left;

	memcpy(dst, r->p, k);
	memset((char *)dst + k, 0, n - k);
	r->p += k;
	r->left -= k;
}

static __u64 val(const struct xfrag_stats *s, size_t i)
{
	return ((const __u64 *)s)[i];
}

/*
 * Render into one static buffer (a memory stream per call costs more than
 * the rendering); buf then holds the NUL-terminated text, len its length.
 */
static char out_buf[1 << 18];

#define RENDER(buf, len, call) do {					\
		FILE *f = fmemopen(out_buf, sizeof(out_buf), "w");	\
		if (!f)							\
			abort();					\
		call;							\
		XF_CHECK(!ferror(f), "render: write error");		\
		len = ftell(f);						\
		if (fclose(f) || len >= sizeof(out_buf) - 1)		\
			abort();					\
		out_buf[len] = 0;					\
		buf = out_buf;						\
	} while (0)

static struct jdoc doc;

/* obj holds every counter of s, in order, with its exact value; returns
 * the node after the last counter (or -1). */
static int check_counters(int first, const struct xfrag_stats *s,
			  const char *what)
{
	int k = first;

	for (size_t i = 0; i < NCOUNTERS; i++) {
		unsigned long long v;

		XF_CHECK(k >= 0, "%s: ends before %s", what, ctr[i].name);
		XF_CHECK(j_key_is(&doc.node[k], ctr[i].name),
			 "%s: member %zu is not %s", what, i, ctr[i].name);
		XF_CHECK(!j_u64(&doc.node[k], &v) && v == val(s, i),
			 "%s: %s = '%.*s', expected %llu", what, ctr[i].name,
			 doc.node[k].len, doc.node[k].txt,
			 (unsigned long long)val(s, i));
		k = doc.node[k].next;
	}
	return k;
}

/* node is the object xf_print_json() writes for sum (and pc). */
static void check_json_obj(int node, const struct xfrag_stats *sum,
			   const struct xfrag_stats *pc, int ncpu)
{
	int k;

	XF_CHECK(doc.node[node].type == J_OBJ, "totals: not an object");
	k = check_counters(doc.node[node].child, sum, "totals");
	if (!pc) {
		XF_CHECK(k < 0, "totals: extra member");
		return;
	}
	XF_CHECK(k >= 0 && j_key_is(&doc.node[k], "per_cpu") &&
		 doc.node[k].type == J_ARR && doc.node[k].n == ncpu &&
		 doc.node[k].next < 0, "per_cpu: missing or not %d objects",
		 ncpu);
	k = doc.node[k].child;
	for (int c = 0; c < ncpu; c++, k = doc.node[k].next) {
		XF_CHECK(doc.node[k].type == J_OBJ, "per_cpu[%d]: not an object",
			 c);
		XF_CHECK(check_counters(doc.node[k].child, &pc[c], "per_cpu") < 0,
			 "per_cpu[%d]: extra member", c);
	}
}

/* One line of output: ends in exactly one '\n', which is the last byte. */
static void check_one_line(const char *buf, size_t len, const char *what)
{
	XF_CHECK(len && buf[len - 1] == '\n' && memchr(buf, '\n', len) ==
		 buf + len - 1, "%s: not one line", what);
}

static void check_json(const struct xfrag_stats *sum,
		       const struct xfrag_stats *pc, int ncpu)
{
	char *buf = NULL;
	size_t len = 0;

	RENDER(buf, len, xf_print_json(f, sum, pc, ncpu));
	check_one_line(buf, len, "json");
	XF_CHECK(!j_parse(&doc, buf, len), "json: not JSON: %s", buf);
	check_json_obj(0, sum, pc, ncpu);
}

static void check_rates_json(const struct xfrag_stats *sum,
			     const struct xfrag_stats *prev,
			     const struct xfrag_stats *pc, int ncpu,
			     double secs)
{
	char *buf = NULL;
	size_t len = 0;
	int k, r;

	RENDER(buf, len, xf_print_rates_json(f, sum, pc, ncpu, prev, secs));
	check_one_line(buf, len, "rates json");
	XF_CHECK(!j_parse(&doc, buf, len), "rates json: not JSON: %s", buf);
	k = doc.node[0].child;
	XF_CHECK(k >= 0 && j_key_is(&doc.node[k], "interval_s") &&
		 fabs(j_double(&doc.node[k]) - secs) <= 0.0005 + secs * 1e-12,
		 "interval_s: '%.*s' for %f", doc.node[k].len, doc.node[k].txt,
		 secs);
	r = doc.node[k].next;
	XF_CHECK(r >= 0 && j_key_is(&doc.node[r], "rates") &&
		 doc.node[r].type == J_OBJ, "no rates object");
	k = doc.node[r].child;
	for (size_t i = 0; i < NCOUNTERS; i++) {
		double want = (double)(val(sum, i) - val(prev, i)) / secs, got;

		if (ctr[i].gauge)
			continue;
		XF_CHECK(k >= 0 && j_key_is(&doc.node[k], ctr[i].name),
			 "rates: %s missing", ctr[i].name);
		got = j_double(&doc.node[k]);
		XF_CHECK(fabs(got - want) <= 0.05 + fabs(want) * 1e-12,
			 "rate %s: %.*s, expected %f", ctr[i].name,
			 doc.node[k].len, doc.node[k].txt, want);
		k = doc.node[k].next;
	}
	XF_CHECK(k < 0, "rates: extra member");
	k = doc.node[r].next;
	XF_CHECK(k >= 0 && j_key_is(&doc.node[k], "totals") &&
		 doc.node[k].next < 0, "no totals, or more after them");
	check_json_obj(k, sum, pc, ncpu);
}

static void check_table(const char *ifname, const struct xfrag_stats *sum,
			const struct xfrag_stats *pc, int ncpu,
			const struct xfrag_stats *prev, double secs)
{
	char *buf = NULL, *line, *next, *p, *end;
	size_t len = 0, nl = 0;

	RENDER(buf, len, xf_print_table(f, ifname, sum, pc, ncpu, prev, secs));
	XF_CHECK(len && buf[len - 1] == '\n', "table: no final newline");
	for (size_t i = 0; i < len; i++)
		nl += buf[i] == '\n';
	for (const char *q = ifname; *q; q++)
		nl -= *q == '\n';	/* the name is printed as it is */
	/* One more line, steer_lost, once steering has moved anything;
	 * per CPU, the spread (a head, 5 rows) and the counters' head. */
	XF_CHECK(nl == NCOUNTERS + 1 + !!(sum->steer_out | sum->steer_in) +
		       (pc ? 7 : 0), "table: %zu lines", nl);
	XF_CHECK(!strncmp(buf, "xfrag counters on ", 18) &&
		 !strncmp(buf + 18, ifname, strlen(ifname)),
		 "table: header does not name the interface");
	line = buf + 18 + strlen(ifname);
	line = strchr(line, '\n') + 1;
	if (pc) {
		static const char *const rows[] = { "received", "steered_out",
			"steered_in", "processed", "reassembled" };

		XF_CHECK(!strncmp(line, "  spread ", 9), "table: no spread head");
		line = strchr(line, '\n') + 1;
		for (int r = 0; r < 5; r++, line = next) {
			next = strchr(line, '\n') + 1;
			next[-1] = 0;
			XF_CHECK(!strncmp(line, "  ", 2) &&
				 !strncmp(line + 2, rows[r], strlen(rows[r])),
				 "spread line %d: '%s'", r, line);
			p = line + 2 + strlen(rows[r]);
			for (int c = -1; c < ncpu; c++) {
				const struct xfrag_stats *x = c < 0 ? sum : &pc[c];
				__u64 want = r == 0 ? x->reasm_reqds - x->steer_in +
						      x->steer_out :
					     r == 1 ? x->steer_out :
					     r == 2 ? x->steer_in :
					     r == 3 ? x->reasm_reqds : x->reasm_oks;
				unsigned long long v = strtoull(p, &end, 10);

				XF_CHECK(end > p && v == want,
					 "spread %s cpu %d: '%s'", rows[r], c, line);
				p = end;
			}
			XF_CHECK(!strncmp(p, "  ", 2) && p[2] && p[2] != ' ',
				 "spread %s: help column '%s'", rows[r], p);
		}
		XF_CHECK(!strncmp(line, "  counter ", 10), "table: no counter head");
		line = strchr(line, '\n') + 1;
	}
	for (size_t i = 0; i < NCOUNTERS; i++, line = next) {
		unsigned long long v;

		next = strchr(line, '\n') + 1;
		next[-1] = 0;
		XF_CHECK(!strncmp(line, "  ", 2) &&
			 !strncmp(line + 2, ctr[i].name, strlen(ctr[i].name)),
			 "table line %zu: '%s'", i, line);
		p = line + 2 + strlen(ctr[i].name);
		v = strtoull(p, &end, 10);
		XF_CHECK(end > p && v == val(sum, i), "table %s: '%s'",
			 ctr[i].name, line);
		p = end;
		if (prev && !ctr[i].gauge) {
			double want = (double)(val(sum, i) - val(prev, i)) / secs;
			double got = strtod(p, &end);

			XF_CHECK(end > p && !strncmp(end, "/s", 2) &&
				 fabs(got - want) <= 0.5 + fabs(want) * 1e-12,
				 "table %s rate: '%s', expected %f",
				 ctr[i].name, line, want);
			p = end + 2;
		} else if (prev) {
			/* A gauge has no rate: its column is blank. */
			XF_CHECK(strspn(p, " ") >= 15, "table %s: rate column "
				 "not blank: '%s'", ctr[i].name, line);
			p += 15;
		}
		for (int c = 0; pc && c < ncpu; c++) {
			v = strtoull(p, &end, 10);
			XF_CHECK(end > p && v == val(&pc[c], i),
				 "table %s cpu %d: '%s'", ctr[i].name, c, line);
			p = end;
		}
		XF_CHECK(!strncmp(p, "  ", 2) && !strcmp(p + 2, ctr[i].help),
			 "table %s: help column '%s'", ctr[i].name, p);
	}
	if (sum->steer_out | sum->steer_in) {
		long long v;

		next = strchr(line, '\n') + 1;
		next[-1] = 0;
		XF_CHECK(!strncmp(line, "  steer_lost ", 13),
			 "table: no steer_lost row: '%.40s'", line);
		v = strtoll(line + 13, &end, 10);
		XF_CHECK(end > line + 13 &&
			 v == (long long)(sum->steer_out - sum->steer_in),
			 "table steer_lost: '%.60s'", line);
		line = next;
	}
	XF_CHECK(line == buf + len, "table: more after the counters");
}

static const char *want_mode(__u32 m)
{
	return m == XDP_MODE_NATIVE ? "native" : m == XDP_MODE_SKB ? "skb" :
	       m == XDP_MODE_HW ? "hw" : "unknown";
}

static const char *want_evict(__u32 e)
{
	static const char *const n[] = { "progress", "refuse", "lru",
					 "progress" };

	return e < 4 ? n[e] : "?";
}

static void check_status(const char *ifname, unsigned int ifindex,
			 const struct xfrag_config *c, const char *tc,
			 const char *room)
{
	unsigned long long mem = c->mem_per_cpu ? c->mem_per_cpu : 2U << 20;
	char want[18][32], *buf = NULL, *tok[64], *save = NULL, *t;
	size_t len = 0;
	int n = 0;

	mem -= mem % 1536;
	snprintf(want[0], 32, "%u", ifindex);
	snprintf(want[1], 32, "%s", c->buckets ? want_mode(c->xdp_mode) :
						  "loader");
	snprintf(want[2], 32, "%s", tc);
	snprintf(want[3], 32, "%s", room);
	snprintf(want[4], 32, "%u", c->buckets ? c->buckets : XFRAG_DEF_BUCKETS);
	snprintf(want[5], 32, "%u", c->ways ? c->ways : 8);
	snprintf(want[6], 32, "%u", c->mem_per_cpu ? c->mem_per_cpu : 2U << 20);
	snprintf(want[7], 32, "%u", c->timeout_ms ? c->timeout_ms : 30000);
	snprintf(want[8], 32, "%u", c->max_frags ? c->max_frags : 64);
	snprintf(want[9], 32, "%s",
		 c->too_many == XFRAG_TOO_MANY_DROP ? "drop" :
		 !c->too_many || c->too_many == XFRAG_TOO_MANY_PASS ? "pass" :
		 "?");
	snprintf(want[10], 32, "%s", want_evict(c->evict));
	snprintf(want[11], 32, "%u", c->warm_ms ? c->warm_ms : 50);
	snprintf(want[12], 32, "%llu", c->mem_high ? c->mem_high : mem * 7 / 8);
	snprintf(want[13], 32, "%llu", c->mem_low ? c->mem_low : mem * 3 / 4);
	snprintf(want[14], 32, "%u", c->quota);
	if (c->max_dist == XFRAG_MAX_DIST_OFF)
		snprintf(want[15], 32, "off");
	else
		snprintf(want[15], 32, "%u", c->max_dist ? c->max_dist : 1024);
	snprintf(want[16], 32, "%s",
		 c->steer == XFRAG_STEER_OFF ? "off" :
		 c->steer == XFRAG_STEER_CPUMAP ? "cpumap" :
		 c->steer == XFRAG_STEER_RPS ? "rps" :
		 c->steer == XFRAG_STEER_RPS_OURS ? "rps(set)" : "none");
	snprintf(want[17], 32, "%u", c->steer_ncpus);

	RENDER(buf, len, xf_status_row(f, ifname, ifindex, c, tc, room));
	XF_CHECK(len && buf[len - 1] == '\n', "status: no final newline");
	for (t = strtok_r(buf, " \t\n\v\f\r", &save); t && n < 64;
	     t = strtok_r(NULL, " \t\n\v\f\r", &save))
		tok[n++] = t;
	XF_CHECK(n >= 18, "status: %d columns", n);
	for (int i = 0; i < 18; i++)
		XF_CHECK(!strcmp(tok[n - 18 + i], want[i]),
			 "status column %d: '%s', expected '%s'", i + 2,
			 tok[n - 18 + i], want[i]);
	RENDER(buf, len, xf_status_header(f));
	check_one_line(buf, len, "status header");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	XF_CHECK((size_t)xf_ncounters == NCOUNTERS, "%d counters, struct has %zu",
		 xf_ncounters, NCOUNTERS);
	for (size_t i = 0; i < NCOUNTERS; i++)
		XF_CHECK(!strcmp(xf_counters[i].name, ctr[i].name) &&
			 xf_counters[i].off == i * sizeof(__u64) &&
			 xf_counters[i].gauge == ctr[i].gauge,
			 "counter %zu: %s", i, xf_counters[i].name);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xfrag_stats sum, prev, pc[MAX_CPU], s2, want;
	struct xfrag_pcpu pcpu[MAX_CPU];
	struct xfrag_config cfg;
	struct reader r = { data, size };
	const char *tc, *room;
	int ncpu, seen = 0, ok = 0, bad = 0;
	__u8 b[2];
	__u32 ifindex, ms;
	__u64 now;
	double secs;
	char *ifname;

	take(&r, b, 2);
	ncpu = b[0] % (MAX_CPU + 1);
	take(&r, &ifindex, 4);
	take(&r, &now, 8);
	take(&r, &ms, 4);
	secs = (1 + ms % 100000000) / 1000.0;
	take(&r, &cfg, sizeof(cfg));
	take(&r, &sum, sizeof(sum));
	take(&r, &prev, sizeof(prev));
	take(&r, pc, ncpu * sizeof(pc[0]));
	take(&r, pcpu, ncpu * sizeof(pcpu[0]));
	ifname = strndup((const char *)r.p, r.left);
	if (!ifname)
		abort();

	/* The per-CPU sum, modulo 2^64. */
	memset(&want, 0, sizeof(want));
	for (int c = 0; c < ncpu; c++)
		for (size_t i = 0; i < NCOUNTERS; i++)
			((__u64 *)&want)[i] += val(&pc[c], i);
	xf_stats_sum(&s2, pc, ncpu);
	XF_CHECK(!memcmp(&s2, &want, sizeof(want)), "per-CPU sum differs");

	/* tc: "yes" with the flag, else "seen" when a CPU saw TC within
	 * XFRAG_TC_ALIVE_NS of now; room: "no" if any CPU found a frame
	 * without room, else "yes" once one found XFRAG_ROOM_PROOF with. */
	for (int c = 0; c < ncpu; c++) {
		seen |= pcpu[c].tc_seen_ns && pcpu[c].tc_seen_ns <= now &&
			now - pcpu[c].tc_seen_ns < XFRAG_TC_ALIVE_NS;
		bad |= pcpu[c].room_bad > 0;
		ok |= pcpu[c].room_ok >= XFRAG_ROOM_PROOF;
	}
	xf_pcpu_verdict(pcpu, ncpu, now, b[1] & 2, &tc, &room);
	XF_CHECK(!strcmp(tc, b[1] & 2 ? "yes" : seen ? "seen" : "no"),
		 "tc '%s'", tc);
	XF_CHECK(!strcmp(room, bad ? "no" : ok ? "yes" : "-"), "room '%s'",
		 room);

	check_status(ifname, ifindex, &cfg, tc, room);
	check_json(&sum, b[1] & 1 ? pc : NULL, ncpu);
	check_rates_json(&sum, &prev, b[1] & 1 ? pc : NULL, ncpu, secs);
	check_table(ifname, &sum, b[1] & 1 ? pc : NULL, ncpu, NULL, 0);
	check_table(ifname, &sum, b[1] & 1 ? pc : NULL, ncpu, &prev, secs);
	free(ifname);
	return 0;
}
