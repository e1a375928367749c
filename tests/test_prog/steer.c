// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* test_prog: steering to the owner CPU. */
#include "test_prog.h"

/* ---- Steering ---------------------------------------------------------------- */

/* Give fragment f (of d) the source address 10.0.x.1. */
static void set_src(struct frame *f, const struct dgram *d, __u8 x)
{
	__u8 *ip = f->b + d->l3off;

	ip[14] = x;
	fr_ip4_csum(ip);
}

static int on_cpu(struct tctx *t, int cpu, const struct frame *f)
{
	REQUIRE(!pin(cpu), "pin cpu %d: %s", cpu, strerror(errno));
	return xdp(t, f->b, f->len);
}

/*
 * The owner decision (include/xfrag.h, steering): every fragment of a
 * datagram, and every datagram of a source, has the same owner CPU; on
 * its owner a fragment is processed, elsewhere it is redirected
 * (XDP_REDIRECT, steer_out, not in reasm_reqds there); 64 sources use both
 * CPUs; the cpumap entry point processes what it gets and never
 * redirects; a redirect without a cpumap entry is steer_failed and the
 * fragment is processed where it arrived.  Non-fragments pass untouched.
 */
int t_steer(struct tctx *t)
{
	struct dgram *d = udp_dgram(70, 2000), *e = udp_dgram(71, 2000);
	struct bpf_cpumap_val val = { .qsize = 64 };
	struct xfrag_config cfg;
	struct frame f, g;
	struct snap s0, s1;
	__u32 zero = 0, slot, redirects = 0, frames = 0;
	int cfd, ofd, cmfd, own_b = -1, n_a = 0, n_b = 0;

	if (cpu_b < 0)
		return 1;	/* skipped */
	TRY(load(t, &(struct setup){ .owner = 1 }));
	cfd = bpf_map__fd(t->skel->maps.xfrag_config);
	ofd = bpf_map__fd(t->skel->maps.xfrag_owners);
	cmfd = bpf_map__fd(t->skel->maps.xfrag_cpumap);
	REQUIRE(!bpf_map_lookup_elem(cfd, &zero, &cfg), "config read");
	cfg.flags |= XFRAG_CFG_STEER;
	cfg.steer = XFRAG_STEER_CPUMAP;
	cfg.steer_ncpus = 2;
	slot = 0;
	REQUIRE(!bpf_map_update_elem(ofd, &slot, &cpu_a, BPF_ANY) &&
		!bpf_map_update_elem(ofd, &(__u32){ 1 }, &cpu_b, BPF_ANY),
		"owner list: %s", strerror(errno));
	val.bpf_prog.fd = bpf_program__fd(t->skel->progs.xfrag_owner);
	REQUIRE(!bpf_map_update_elem(cmfd, &cpu_a, &val, BPF_ANY) &&
		!bpf_map_update_elem(cmfd, &cpu_b, &val, BPF_ANY),
		"cpumap entries: %s", strerror(errno));
	REQUIRE(!bpf_map_update_elem(cfd, &zero, &cfg, BPF_ANY), "config");
	TRY(snap(t, -1, &s0));

	/* Plain packets are never steered. */
	build(e, &(struct dopt){ .id = 3, .udp_len = 1000 });
	memcpy(g.b, e->b, e->len);
	g.len = e->len;
	for (int c = 0; c < 2; c++) {
		REQUIRE(!pin(c ? cpu_b : cpu_a), "pin");
		TRY(send_pass(t, &g, "plain UDP"));
	}
	for (int x = 1; x <= 64; x++) {
		__u32 ra, rb, rc;

		/* First fragment on A, last on B: exactly one is off its
		 * owner and redirected; the other is held (consumed). */
		mkfrag(&f, d, 0, 1480, 1, 0);
		set_src(&f, d, x);
		TRY(on_cpu(t, cpu_a, &f));
		ra = t->ret;
		mkfrag(&f, d, 1480, 520, 0, 0);
		set_src(&f, d, x);
		TRY(on_cpu(t, cpu_b, &f));
		rb = t->ret;
		REQUIRE((ra == XDP_REDIRECT && rb == XDP_DROP) ||
			(ra == XDP_DROP && rb == XDP_REDIRECT),
			"source %d: XDP_%s on cpu A, XDP_%s on cpu B: want one "
			"redirect and one held", x, vname(ra), vname(rb));
		/* Another datagram (id) of the same source: same owner. */
		mkfrag(&f, e, 1480, 520, 0, 0);
		set_src(&f, e, x);
		TRY(on_cpu(t, cpu_a, &f));
		rc = t->ret;
		REQUIRE(rc == ra, "source %d: id %u on cpu A XDP_%s, id %u "
			"XDP_%s: the id changed the owner", x, 70, vname(ra),
			71, vname(rc));
		frames += 3;
		redirects += 1 + (rc == XDP_REDIRECT);
		if (ra == XDP_REDIRECT) {
			n_b++;
			own_b = x;
		} else {
			n_a++;
		}
	}
	REQUIRE(n_a && n_b, "64 sources all owned by one CPU (A %d, B %d)",
		n_a, n_b);
	TRY(snap(t, -1, &s1));
	REQUIRE(s1.v[C_steer_out] - s0.v[C_steer_out] == redirects &&
		s1.v[C_reasm_reqds] - s0.v[C_reasm_reqds] == frames - redirects &&
		s1.v[C_steer_failed] == s0.v[C_steer_failed],
		"steer_out %+lld (want %u), reasm_reqds %+lld (want %u), "
		"steer_failed %+lld (want 0)",
		(long long)(s1.v[C_steer_out] - s0.v[C_steer_out]), redirects,
		(long long)(s1.v[C_reasm_reqds] - s0.v[C_reasm_reqds]),
		frames - redirects,
		(long long)(s1.v[C_steer_failed] - s0.v[C_steer_failed]));

	/* The cpumap entry point on A takes a fragment owned by B: it is
	 * processed (held), never redirected again. */
	{
		LIBBPF_OPTS(bpf_test_run_opts, o, .repeat = 1);

		mkfrag(&f, d, 0, 1480, 1, 0);
		set_src(&f, d, own_b);
		f.b[d->l3off + 5] ^= 0x55;	/* another id: a fresh datagram */
		fr_ip4_csum(f.b + d->l3off);
		o.data_in = f.b;
		o.data_size_in = f.len;
		s0 = s1;
		REQUIRE(!pin(cpu_a), "pin");
		REQUIRE(!bpf_prog_test_run_opts(
			    bpf_program__fd(t->skel->progs.xfrag_owner_nf), &o),
			"owner program test_run: %s", strerror(errno));
		t->ret = o.retval;
		TRY(check_invariants(t));
		TRY(verdict(t, XDP_DROP, "owner program, fragment owned by B"));
		TRY(snap(t, -1, &s1));
		REQUIRE(s1.v[C_steer_in] - s0.v[C_steer_in] == 1 &&
			s1.v[C_reasm_reqds] - s0.v[C_reasm_reqds] == 1 &&
			s1.v[C_steer_out] == s0.v[C_steer_out],
			"owner program: steer_in %+lld reasm_reqds %+lld "
			"steer_out %+lld, want +1 +1 +0",
			(long long)(s1.v[C_steer_in] - s0.v[C_steer_in]),
			(long long)(s1.v[C_reasm_reqds] - s0.v[C_reasm_reqds]),
			(long long)(s1.v[C_steer_out] - s0.v[C_steer_out]));
	}

	/* No cpumap entry for B: the redirect is refused, counted, and the
	 * fragment processed on A. */
	REQUIRE(!bpf_map_delete_elem(cmfd, &cpu_b), "cpumap delete: %s",
		strerror(errno));
	mkfrag(&f, d, 0, 1480, 1, 0);
	set_src(&f, d, own_b);
	f.b[d->l3off + 5] ^= 0x33;
	fr_ip4_csum(f.b + d->l3off);
	s0 = s1;
	TRY(on_cpu(t, cpu_a, &f));
	TRY(verdict(t, XDP_DROP, "no cpumap entry for the owner"));
	TRY(snap(t, -1, &s1));
	REQUIRE(s1.v[C_steer_failed] - s0.v[C_steer_failed] == 1 &&
		s1.v[C_reasm_reqds] - s0.v[C_reasm_reqds] == 1,
		"steer_failed %+lld reasm_reqds %+lld, want +1 +1",
		(long long)(s1.v[C_steer_failed] - s0.v[C_steer_failed]),
		(long long)(s1.v[C_reasm_reqds] - s0.v[C_reasm_reqds]));
	return 0;
}
