// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fuzz_prog: rounds: geometry, configuration, checks. */
#include "fuzz_prog.h"

/* ---- Rounds -------------------------------------------------------------- */

static __u64 mix(__u64 a, __u64 b)
{
	__u64 save = rs, v;

	rs = a ^ (b * 0xd1b54a32d192ed03ULL);
	v = rnd64();
	rs = save;
	return v;
}

static void pick_setup(struct setup *s, int round)
{
	static const __u32 bk[] = { 1, 2, 7, 64, 256, 1024 };
	static const __u32 wy[] = { 1, 2, 4, 8, 16, 32 };
	static const __u32 ch[] = { 8, 24, 100, 400 };
	int kind = round % 4;

	memset(s, 0, sizeof(*s));
	s->buckets = bk[rnd(6)];
	s->ways = wy[rnd(6)];
	while (s->buckets * s->ways > 8192)
		s->ways /= 2;
	s->nchunks = chance(60) ? 0 : ch[rnd(4)];
	s->cfg.timeout_ms = range(10, 50);
	s->cfg.max_frags = chance(50) ? 0 : range(2, 64);
	s->cfg.evict = rnd(4);
	s->cfg.warm_ms = chance(50) ? 0 : range(1, 100);
	s->cfg.quota = chance(75) ? 0 : range(1, 8);
	if (chance(20)) {
		__u32 budget = (s->nchunks ?: XFRAG_DEF_MEM / XFRAG_CHUNK) *
			       XFRAG_CHUNK;

		s->cfg.mem_high = budget / 8 * range(2, 8);
		s->cfg.mem_low = s->cfg.mem_high / 8 * range(1, 7);
	}
	s->cfg.flags = chance(70) ? XFRAG_CFG_TC : 0;
	s->sweeper = chance(50);
	s->tc_on_pass = chance(25);
	s->streams = range(1, MAX_STREAMS);
	s->mut_pct = range(10, 70);
	s->noise_pct = range(2, 12);
	s->pause_every = range(3000, 20000);
	s->reconfig = chance(30);
	if (kind == 0 || kind == 1) {
		/* Friendly: most clean datagrams get through, by XDP (1) or
		 * XDP and TC (0). */
		s->buckets = 1024;
		s->ways = 8;
		s->nchunks = 0;
		s->cfg.timeout_ms = 50;
		s->cfg.max_frags = 0;
		s->cfg.quota = 0;
		s->cfg.mem_high = s->cfg.mem_low = 0;
		s->cfg.flags = kind == 0 ? XFRAG_CFG_TC : 0;
		s->tc_on_pass = 0;
		s->reconfig = 0;
		s->streams = range(1, 6);
		s->mut_pct = range(10, 40);
	}
	if (kind == 2) {
		/* Completeness: see classify(). */
		s->complete = 1;
		s->buckets = 1024;
		s->ways = 8;
		s->nchunks = 0;
		s->cfg.timeout_ms = XFRAG_MAX_TIMEOUT_MS;
		s->cfg.max_frags = 0;
		s->cfg.quota = 0;
		s->cfg.mem_high = s->cfg.mem_low = 0;
		s->cfg.flags = XFRAG_CFG_TC;
		s->reconfig = 0;
		s->streams = range(1, 8);
		s->mut_pct = 0;
		s->noise_pct = 0;
	}
}

/* Run-time tunables, as `xfrag config` changes them. */
static void pick_cfg(struct xfrag_config *c)
{
	c->timeout_ms = range(10, 50);
	c->max_frags = chance(50) ? 0 : range(2, 64);
	c->evict = rnd(4);
	c->warm_ms = chance(50) ? 0 : range(1, 100);
	c->quota = chance(75) ? 0 : range(1, 8);
	if (chance(30))
		c->flags ^= XFRAG_CFG_TC;
}

static int reconfigure(struct run *r)
{
	__u32 zero = 0;

	pick_cfg(&r->s.cfg);
	r->reconfigs++;
	REQUIRE(!bpf_map_update_elem(bpf_map__fd(r->skel->maps.xfrag_config),
				     &zero, &r->s.cfg, BPF_ANY),
		"config update: %s", strerror(errno));
	return 0;
}

static void print_setup(const struct run *r)
{
	const struct setup *s = &r->s;

	printf("round %d: buckets %u ways %u chunks %u timeout %u max_frags %u evict %u warm %u quota %u mem_high %u mem_low %u %s%s%s%s streams %d mutant %d%% noise %d%%\n",
	       r->round, s->buckets, s->ways,
	       s->nchunks ?: XFRAG_DEF_MEM / XFRAG_CHUNK, s->cfg.timeout_ms,
	       s->cfg.max_frags, s->cfg.evict, s->cfg.warm_ms, s->cfg.quota,
	       s->cfg.mem_high, s->cfg.mem_low,
	       s->cfg.flags & XFRAG_CFG_TC ? "tc" : "xdp-only",
	       s->sweeper ? " sweeper" : "", s->tc_on_pass ? " tc-on-pass" : "",
	       s->complete ? " completeness" : s->reconfig ? " reconfig" : "",
	       s->streams, s->mut_pct, s->noise_pct);
}

/*
 * Completeness rounds, before a pause or the end: every datagram sent to
 * its last fragment; then nothing is in flight and nothing failed but the
 * visits (each a too-long fragment).
 */
static int complete_check(struct run *r)
{
	static const int zero_ctrs[] = {
		C_reasm_timeout, C_reasm_overlaps, C_deliver_err, C_handoff_lost,
		C_reasm_evicted, C_pass_evicted, C_frag_dup, C_frag_overlap,
		C_frag_timeout, C_frag_refused, C_frag_nomem, C_frag_quota,
		C_frag_bad_header, C_frag_oversize, C_frag_zero_len,
		C_frag_bad_end, C_frag_too_many, C_frag_discarded,
		C_frag_evicted, C_frag_bad_len, C_frag_bad_chain,
		C_frags_in_flight, C_dgrams_in_flight, C_handoff_pending,
		C_bytes_in_flight, C_mem_in_flight,
	};
	struct snap *s = &r->last;

	for (;;) {
		int live[MAX_STREAMS], n = 0;

		for (int i = 0; i < r->s.streams; i++)
			if (streams[i].live)
				live[n++] = i;
		if (!n)
			break;
		TRY(stream_step(r, &streams[live[rnd(n)]]));
	}
	for (size_t i = 0; i < sizeof(zero_ctrs) / sizeof(zero_ctrs[0]); i++)
		REQUIRE(s->v[zero_ctrs[i]] == 0,
			"completeness round: %s is %llu with every datagram sent",
			cname[zero_ctrs[i]],
			(unsigned long long)s->v[zero_ctrs[i]]);
	REQUIRE(V(s, frag_too_long) == r->f_visit &&
		V(s, reasm_fails) == r->f_visit,
		"completeness round: frag_too_long %llu reasm_fails %llu, %llu visits",
		(unsigned long long)V(s, frag_too_long),
		(unsigned long long)V(s, reasm_fails),
		(unsigned long long)r->f_visit);
	return 0;
}

static int round_body(struct run *r)
{
	__u64 next_pause;

	gen_plain = r->s.complete;
	TRY(load(r));
	TRY(snap_checked(r, &r->last));
	TRY(check_hash(r));
	for (int i = 0; i < MAX_STREAMS; i++)
		streams[i].live = 0;
	next_pause = r->s.pause_every;
	while (r->frame_no < round_frames) {
		int i;

		if (r->frame_no >= next_pause) {
			if (r->s.complete)
				TRY(complete_check(r));
			TRY(drain(r, 0));
			next_pause = r->frame_no + r->s.pause_every;
			if (r->s.reconfig && chance(50))
				TRY(reconfigure(r));
		}
		if (r->s.reconfig && !rnd(4000))
			TRY(reconfigure(r));
		if (chance(r->s.noise_pct)) {
			TRY(send_noise(r));
			continue;
		}
		i = rnd(r->s.streams);
		if (!streams[i].live) {
			int mut = chance(r->s.mut_pct);

			do
				new_stream(&streams[i], mut,
					   chance(50) ? range(3, 20) :
							range(20, 100));
			while (r->s.complete &&
			       !(streams[i].expect = classify(&streams[i])));
			if (mut)
				r->dgrams_mut++;
			else
				r->dgrams_clean++;
		}
		TRY(stream_step(r, &streams[i]));
	}
	if (r->s.complete)
		TRY(complete_check(r));
	return drain(r, 1);
}

int run_round(int round, struct run *tot)
{
	static struct run r;
	int err;

	memset(&r, 0, sizeof(r));
	r.round = round;
	rs = mix(seed, round + 1);
	pick_setup(&r.s, round);
	r.secret[0] = rnd64() | 1;
	r.secret[1] = rnd64();
	dg_counter = rnd64() >> 28;	/* keys unique within the round */
	r.lose = round % 4 == 3;
	if (verbose)
		print_setup(&r);
	ring_n = 0;
	cur_frame = NULL;
	err = round_body(&r);
	if (err) {
		printf("FAIL fuzz_round_%d: seed %llu round %d frame %llu: %s\n",
		       round, (unsigned long long)seed, round,
		       (unsigned long long)r.frame_no, r.why);
		print_setup(&r);
		print_frame();
		printf("replay: build/fuzz_prog --seed %llu --frames %llu --round %d -v\n",
		       (unsigned long long)seed, (unsigned long long)nframes,
		       round);
		pcap_dump();
	} else {
		if (verbose)
			printf("  frames %llu (clean %llu mutant %llu noise %llu visits %llu, skipped %llu, refused by test_run %llu); datagrams clean %llu mutant %llu; delivered clean xdp %llu tc %llu, mutant xdp %llu tc %llu; hand-offs %llu (on a proxy %llu, left to expire %llu, shot %llu); TC test_run refused %llu; reconfigured %llu; completeness checks A %llu B %llu C %llu; reqds %llu oks %llu\n",
			       (unsigned long long)r.f_sent,
			       (unsigned long long)r.f_clean,
			       (unsigned long long)r.f_mut,
			       (unsigned long long)r.f_noise,
			       (unsigned long long)r.f_visit,
			       (unsigned long long)r.f_skipped,
			       (unsigned long long)r.tr_refused,
			       (unsigned long long)r.dgrams_clean,
			       (unsigned long long)r.dgrams_mut,
			       (unsigned long long)r.clean_xdp,
			       (unsigned long long)r.clean_tc,
			       (unsigned long long)r.mut_xdp,
			       (unsigned long long)r.mut_tc,
			       (unsigned long long)r.handoffs,
			       (unsigned long long)r.tc_proxy,
			       (unsigned long long)r.tc_skipped,
			       (unsigned long long)r.tc_shot,
			       (unsigned long long)r.tc_refused,
			       (unsigned long long)r.reconfigs,
			       (unsigned long long)r.expect_a,
			       (unsigned long long)r.expect_b,
			       (unsigned long long)r.expect_c,
			       (unsigned long long)V(&r.last, reasm_reqds),
			       (unsigned long long)V(&r.last, reasm_oks));
		printf("PASS fuzz_round_%d\n", round);
	}
	tot->f_sent += r.f_sent;
	tot->clean_xdp += r.clean_xdp;
	tot->clean_tc += r.clean_tc;
	tot->mut_xdp += r.mut_xdp;
	tot->mut_tc += r.mut_tc;
	tot->handoffs += r.handoffs;
	tot->dgrams_clean += r.dgrams_clean;
	tot->dgrams_mut += r.dgrams_mut;
	xfrag_bpf__destroy(r.skel);
	return err;
}
