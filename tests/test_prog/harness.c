// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* test_prog: the harness: loading, counters, frames, running them through xfrag_xdp and xfrag_tc. */
#include "test_prog.h"

#define F_DF		0x4000
#define F_MF		0x2000

int ncpus;
int cpu_a = -1, cpu_b = -1;	/* first two CPUs we may run on */
int cur_cpu;
/* Does this kernel let XDP call bpf_xdp_adjust_meta (xfrag_use_meta)? */
int use_meta;
static char lib_log[8192];
static size_t lib_log_len;

/* Record why the test failed; a later call adds context in brackets. */
int fail(struct tctx *t, const char *fmt, ...)
{
	size_t len = strlen(t->why), room = sizeof(t->why) - 1;
	int ctx = len > 0;
	va_list ap;

	if (ctx && len + 2 < room)
		t->why[len++] = ' ', t->why[len++] = '[';
	if (len >= room)
		return -1;
	va_start(ap, fmt);
	vsnprintf(t->why + len, room - len, fmt, ap);
	va_end(ap);
	if (ctx)
		strncat(t->why, "]", room - strlen(t->why));
	return -1;
}

/* libbpf's messages are kept, and shown only when a load fails. */
int libbpf_log(enum libbpf_print_level level, const char *fmt,
		      va_list ap)
{
	size_t room = sizeof(lib_log) - lib_log_len;
	int n;

	if (level == LIBBPF_DEBUG || room <= 1)
		return 0;
	n = vsnprintf(lib_log + lib_log_len, room, fmt, ap);
	lib_log_len += n < 0 ? 0 : (size_t)n < room ? (size_t)n : room - 1;
	return 0;
}

int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -1;
	cur_cpu = cpu;
	return 0;
}

void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int load(struct tctx *t, const struct setup *s)
{
	struct xfrag_config cfg = {
		.timeout_ms = s->timeout_ms,
		.max_frags = s->max_frags,
		.flags = (s->xdp_only ? 0 : XFRAG_CFG_TC) |
			 (s->replay ? XFRAG_CFG_REPLAY : 0),
		.evict = s->evict,
		.warm_ms = s->warm_ms,
		.quota = s->quota,
		.max_dist = s->max_dist,
		.too_many = s->too_many,
	};
	__u32 zero = 0;
	int err;

	lib_log_len = 0;
	lib_log[0] = 0;
	t->skel = xfrag_bpf__open();
	REQUIRE(t->skel, "xfrag_bpf__open: %s", strerror(errno));
	t->buckets = s->buckets ?: XFRAG_DEF_BUCKETS;
	t->ways = s->ways ?: XFRAG_DEF_WAYS;
	t->skel->rodata->xfrag_buckets = t->buckets;
	t->skel->rodata->xfrag_ways = t->ways;
	t->skel->rodata->xfrag_use_meta = use_meta;
	err = bpf_map__set_max_entries(t->skel->maps.xfrag_table,
				       t->buckets * t->ways);
	if (!err && s->nchunks) {
		t->skel->rodata->xfrag_nchunks = s->nchunks;
		err = bpf_map__set_max_entries(t->skel->maps.xfrag_chunks,
					       s->nchunks) ?:
		      bpf_map__set_max_entries(t->skel->maps.xfrag_free,
					       s->nchunks);
	}
	REQUIRE(!err, "set_max_entries: %d", err);
	/* The cpumap entry points only where a test steers (load time). */
	bpf_program__set_autoload(t->skel->progs.xfrag_owner, s->owner);
	/* xfrag_owner_nf runs the same code: loaded as a plain XDP program
	 * it can be test-run, which no kernel does for a cpumap program. */
	bpf_program__set_autoload(t->skel->progs.xfrag_owner_nf, s->owner);
	bpf_program__set_expected_attach_type(t->skel->progs.xfrag_owner_nf,
					      BPF_XDP);
	if (s->owner)
		REQUIRE(!bpf_map__set_max_entries(t->skel->maps.xfrag_cpumap,
						  ncpus), "cpumap size");
	{
		/* Fresh, private maps for every test: no pinning. */
		struct bpf_map *m;

		bpf_object__for_each_map(m, t->skel->obj)
			bpf_map__set_pin_path(m, NULL);
	}
	err = xfrag_bpf__load(t->skel);
	if (err) {
		fprintf(stderr, "%s", lib_log);
		return fail(t, "xfrag_bpf__load: %d (libbpf log on stderr)",
			    err);
	}
	t->prog_fd = bpf_program__fd(t->skel->progs.xfrag_xdp);
	err = bpf_map_update_elem(bpf_map__fd(t->skel->maps.xfrag_config),
				  &zero, &cfg, BPF_ANY);
	REQUIRE(!err, "config update: %s", strerror(errno));
	return s->xdp_only == XDP_ONLY_PROVEN ? prove_room(t) : 0;
}

/* Counters summed over CPUs (cpu < 0) or of one CPU. */
int snap(struct tctx *t, int cpu, struct snap *s)
{
	struct xfrag_stats *v = calloc(ncpus, sizeof(*v));
	__u32 zero = 0;
	int err;

	REQUIRE(v, "calloc");
	err = bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.xfrag_stats),
				  &zero, v);
	if (err) {
		free(v);
		return fail(t, "stats lookup: %s", strerror(errno));
	}
	memset(s, 0, sizeof(*s));
	for (int c = 0; c < ncpus; c++) {
		const __u64 *p = (const __u64 *)&v[c];

		if (cpu >= 0 && c != cpu)
			continue;
		for (int i = 0; i < C_NUM; i++)
			s->v[i] += p[i];
	}
	free(v);
	return 0;
}

int check_invariants(struct tctx *t)
{
	struct snap s;
	const char *err;
	char msg[256];

	TRY(snap(t, -1, &s));
	err = xf_counter_invariants(s.v, msg, sizeof(msg));
	REQUIRE(!err, "%s", err);
	return 0;
}

int check_deltas(struct tctx *t, int cpu, const struct snap *before,
			const struct delta *d, size_t nd)
{
	char msg[768] = "";
	size_t len = 0;
	struct snap now;
	__s64 want[C_NUM] = { 0 };

	TRY(snap(t, cpu, &now));
	for (size_t i = 0; i < nd; i++)
		if (d[i].c >= 0)
			want[d[i].c] += d[i].v;
	for (int i = 0; i < C_NUM; i++) {
		__s64 got = (__s64)(now.v[i] - before->v[i]);

		if (got == want[i] || len >= sizeof(msg) - 1)
			continue;
		len += snprintf(msg + len, sizeof(msg) - len, " %s %+lld (want %+lld)",
				cname[i], (long long)got, (long long)want[i]);
	}
	if (len)
		return fail(t, "counters%s%s:%s", cpu >= 0 ? " on cpu " : "",
			    cpu >= 0 ? (cpu == cpu_a ? "A" : "B") : "", msg);
	return 0;
}

__u32 xorshift(__u32 *s)
{
	__u32 x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

const __u8 mac_dst[ETH_ALEN] = { 0x02, 0, 0, 0, 0, 0x02 };
const __u8 mac_src[ETH_ALEN] = { 0x02, 0, 0, 0, 0, 0x01 };

void build(struct dgram *d, const struct dopt *o)
{
	__u32 hl = 20 + o->optlen, s = o->seed ?: 0x9e3779b9;
	struct fr_vlan tags[2];
	__u8 *ip, *udp;

	memset(d->b, 0, 64 + hl);
	for (int i = 0; i < o->nvlan; i++)
		tags[i] = (struct fr_vlan){ o->tpid[i], o->vid[i] };
	d->l3off = fr_eth(d->b, mac_dst, mac_src, tags, o->nvlan, ETH_P_IP);
	d->hlen = hl;
	d->plen = o->udp_len;
	d->len = d->l3off + hl + o->udp_len;

	ip = d->b + d->l3off;
	for (int i = 0; i < o->optlen; i++)	/* Router Alert, then NOPs */
		ip[20 + i] = i < 4 ? (__u8[]){ 0x94, 4, 0, 0 }[i] : 1;
	fr_ip4(ip, hl, hl + o->udp_len, o->id, o->df ? F_DF : 0, 64,
	       IPPROTO_UDP, (const __u8[]){ 10, 0, 0, 1 },
	       (const __u8[]){ 10, 0, 0, 2 });

	udp = ip + hl;
	fr_udp(udp, 4242, 5353, o->udp_len);
	for (__u32 i = 8; i < o->udp_len; i++)
		udp[i] = xorshift(&s) >> 24;
	put16(udp + 6, fr_udp_csum(sum16(udp, o->udp_len,
					 fr_pseudo(0, ip + 12, ip + 16,
						   IPPROTO_UDP, o->udp_len))));
	if (o->udp_field)
		put16(udp + 4, o->udp_field);
}

/*
 * Fragment [off, off + len) of d's IP payload, then `pad` bytes of Ethernet
 * padding; only offset 0 has d's options.  Bytes beyond the datagram are a
 * pattern.
 */
void mkfrag(struct frame *f, const struct dgram *d, __u32 off, __u32 len,
		   int mf, __u32 pad)
{
	const __u8 *dip = d->b + d->l3off;
	__u32 hl = off == 0 ? d->hlen : 20, fw;
	__u8 *ip = f->b + d->l3off, *pl;

	if (d->l3off + hl + len + pad > FRAME_MAX) {
		fprintf(stderr, "test bug: fragment too big\n");
		exit(2);
	}
	memcpy(f->b, d->b, d->l3off);
	memcpy(ip, dip, hl);
	ip[0] = 0x40 | (hl / 4);
	put16(ip + 2, hl + len);
	fw = (off >> 3) | (mf ? F_MF : 0);
	if (dip[6] & 0x40)
		fw |= F_DF;
	put16(ip + 6, fw);
	fr_ip4_csum(ip);
	pl = ip + hl;
	for (__u32 i = 0, at = off; i < len; i++, at++)
		pl[i] = at < d->plen ? dip[d->hlen + at] : (__u8)(0xa5 ^ at);
	memset(pl + len, 0xee, pad);
	f->len = d->l3off + hl + len + pad;
}

/* Standard fragmentation with at most `max` payload bytes per fragment. */
int split(const struct dgram *d, __u32 max, struct fl *out)
{
	int n = 0;

	for (__u32 off = 0; off < d->plen; off += max, n++) {
		out[n].off = off;
		out[n].len = d->plen - off > max ? max : d->plen - off;
		out[n].mf = off + max < d->plen;
	}
	return n;
}

/* ---- Running frames -------------------------------------------------------- */

const char *vname(__u32 r)
{
	static const char *const n[] = { "ABORTED", "DROP", "PASS", "TX",
					  "REDIRECT" };
	return r < 5 ? n[r] : "?";
}

int xdp(struct tctx *t, const void *in, __u32 len)
{
	LIBBPF_OPTS(bpf_test_run_opts, o,
		.data_in = in,
		.data_size_in = len,
		.data_out = t->out,
		.data_size_out = sizeof(t->out),
		.repeat = 1,
	);

	if (bpf_prog_test_run_opts(t->prog_fd, &o))
		return fail(t, "test_run (%u bytes): %s", len, strerror(errno));
	t->ret = o.retval;
	t->outlen = o.data_size_out;
	return check_invariants(t);
}

int verdict(struct tctx *t, __u32 want, const char *what)
{
	REQUIRE(t->ret == want, "%s: XDP_%s, want XDP_%s", what,
		vname(t->ret), vname(want));
	return 0;
}

int same(struct tctx *t, const __u8 *p, __u32 n, const char *what)
{
	__u32 i;

	if (t->outlen == n && !memcmp(t->out, p, n))
		return 0;
	for (i = 0; i < n && i < t->outlen && t->out[i] == p[i]; i++)
		;
	return fail(t, "%s: output %u bytes, want %u; first difference at %u",
		    what, t->outlen, n, i);
}

int send_drop(struct tctx *t, const struct frame *f, const char *what)
{
	TRY(xdp(t, f->b, f->len));
	return verdict(t, XDP_DROP, what);
}

/* XDP_PASS with the frame untouched. */
int send_pass(struct tctx *t, const struct frame *f, const char *what)
{
	TRY(xdp(t, f->b, f->len));
	TRY(verdict(t, XDP_PASS, what));
	return same(t, f->b, f->len, what);
}

/* XDP_PASS with the whole datagram rebuilt in the frame. */
int send_rebuilt(struct tctx *t, const struct frame *f,
			const struct dgram *d, const char *what)
{
	TRY(xdp(t, f->b, f->len));
	TRY(verdict(t, XDP_PASS, what));
	return same(t, d->b, d->len, what);
}

/*
 * Without metadata: the hand-off with the highest cookie on this CPU, as
 * the struct xfrag_meta XDP would have written.
 */
static int find_handoff(struct tctx *t, struct xfrag_meta *m, const char *what)
{
	size_t wsz = (sizeof(struct xfrag_way) + 7) & ~7UL;
	__u8 *wbuf = calloc(ncpus, wsz);
	int found = 0;

	REQUIRE(wbuf, "calloc");
	memset(m, 0, sizeof(*m));
	for (__u32 i = 0; i < t->buckets * t->ways; i++) {
		const struct xfrag_way *w;

		if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.xfrag_table),
					&i, wbuf))
			break;
		w = (const struct xfrag_way *)(wbuf + cur_cpu * wsz);
		if (w->state != XFRAG_WAY_HANDOFF ||
		    (found && w->cookie <= m->cookie))
			continue;
		found = 1;
		m->magic = XFRAG_META_MAGIC;
		m->cpu = cur_cpu;
		m->way = i;
		m->cookie = w->cookie;
	}
	free(wbuf);
	REQUIRE(found, "%s: no hand-off held on cpu %d", what, cur_cpu);
	return 0;
}

/*
 * XDP_PASS with the completing frame unchanged, a struct xfrag_meta in front
 * of it (test_run returns data from data_meta), and the datagram held in
 * the table for TC: check the stored header and pieces byte by byte.
 */
int send_handoff(struct tctx *t, const struct frame *f,
			const struct dgram *d, const char *what)
{
	size_t wsz = (sizeof(struct xfrag_way) + 7) & ~7UL;
	size_t csz = (sizeof(__u8[XFRAG_CHUNK]) + 7) & ~7UL;
	struct xfrag_meta m;
	struct xfrag_way *w;
	__u8 *wbuf, *cbuf;
	__u32 got = 0;
	int err = 0;

	TRY(xdp(t, f->b, f->len));
	TRY(verdict(t, XDP_PASS, what));
	if (use_meta) {
		REQUIRE(t->outlen == f->len + sizeof(m),
			"%s: output %u bytes, want meta + frame = %zu", what,
			t->outlen, f->len + sizeof(m));
		memcpy(&m, t->out, sizeof(m));
		REQUIRE(!memcmp(t->out + sizeof(m), f->b, f->len),
			"%s: hand-off frame was modified", what);
	} else {
		/* No metadata on this kernel: the frame goes on as it is and
		 * TC finds the datagram by key; the newest hand-off of this
		 * CPU is the one just made. */
		TRY(same(t, f->b, f->len, what));
		TRY(find_handoff(t, &m, what));
	}
	REQUIRE(m.magic == XFRAG_META_MAGIC && m.cpu == (__u32)cur_cpu &&
		m.way < t->buckets * t->ways,
		"%s: bad meta magic %#x cpu %u way %u", what, m.magic, m.cpu,
		m.way);

	wbuf = calloc(ncpus, wsz);
	cbuf = calloc(ncpus, csz);
	if (!wbuf || !cbuf) {
		err = fail(t, "calloc");
		goto out;
	}
	if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.xfrag_table),
				&m.way, wbuf)) {
		err = fail(t, "%s: table lookup: %s", what, strerror(errno));
		goto out;
	}
	w = (struct xfrag_way *)(wbuf + m.cpu * wsz);
	if (w->state != XFRAG_WAY_HANDOFF || w->cookie != m.cookie ||
	    w->hdr_len != d->hlen || w->end != d->plen ||
	    memcmp(w->hdr, d->b + d->l3off, d->hlen)) {
		err = fail(t, "%s: held way state %u cookie %u/%u hdr_len %u end %u or header differs",
			   what, w->state, w->cookie, m.cookie, w->hdr_len,
			   w->end);
		goto out;
	}
	memset(t->payload, 0, sizeof(t->payload));
	for (__u32 i = 0; i < w->ndesc && i < XFRAG_MAX_DESC; i++) {
		__u32 off = w->desc[i].off8 * 8U;
		__u32 len = xfrag_desc_len(&w->desc[i]);

		if (off + len > sizeof(t->payload) ||
		    bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.xfrag_chunks),
					&w->desc[i].chunk, cbuf)) {
			err = fail(t, "%s: piece %u unreadable", what, i);
			goto out;
		}
		memcpy(t->payload + off, cbuf + m.cpu * csz, len);
		got += len;
	}
	if (got != d->plen || memcmp(t->payload, d->b + d->l3off + d->hlen,
				     d->plen))
		err = fail(t, "%s: held payload (%u bytes) differs from the datagram",
			   what, got);
out:
	free(wbuf);
	free(cbuf);
	return err;
}

/* Send fragments in `order`; all but the last are consumed. */
int send_seq(struct tctx *t, const struct dgram *d, const struct fl *fl,
		    const int *order, int n, int end)
{
	static struct frame f;
	char what[64];

	for (int i = 0; i < n; i++) {
		const struct fl *x = &fl[order ? order[i] : i];

		mkfrag(&f, d, x->off, x->len, x->mf, 0);
		snprintf(what, sizeof(what), "fragment %d (off %u len %u)%s",
			 i + 1, x->off, x->len, x->mf ? " MF" : "");
		if (i < n - 1 || end == END_NONE)
			TRY(send_drop(t, &f, what));
		else if (end == END_REBUILT)
			TRY(send_rebuilt(t, &f, d, what));
		else
			TRY(send_handoff(t, &f, d, what));
	}
	return 0;
}

struct dgram *dg(void)
{
	static struct dgram d[3];
	static int next;

	return &d[next++ % 3];
}

/* A plain datagram of udp_len bytes, id, no VLAN, no options. */
struct dgram *udp_dgram(__u16 id, __u32 udp_len)
{
	struct dgram *d = dg();

	build(d, &(struct dopt){ .id = id, .udp_len = udp_len, .seed = id });
	return d;
}

/*
 * XDP alone learns that small frames can grow to a page (XFRAG_ROOM_PROOF
 * of them; test_run frames can): small last fragments of 9000-byte
 * datagrams, each passed to the kernel on its own.
 */
int prove_room(struct tctx *t)
{
	static struct dgram d;	/* not from dg(): callers hold those */
	struct frame f;

	for (int i = 0; i < XFRAG_ROOM_PROOF; i++) {
		build(&d, &(struct dopt){ .id = 0xf000 + i, .udp_len = 9000 });
		mkfrag(&f, &d, 8880, 120, 0, 0);
		TRY(send_pass(t, &f, "small frame, room proof"));
	}
	return 0;
}
