// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* test_prog: the test table and the runner. */
#include "test_prog.h"

/* ---- Runner ---------------------------------------------------------------- */

static const struct {
	const char *name;
	int (*fn)(struct tctx *t);
	int arg;
} tests[] = {
	{ "nonfrag_pass", t_nonfrag, 0 },
	{ "inorder_2frag", t_complete, 0 },
	{ "reverse_3frag", t_complete, 1 },
	{ "df_kept", t_complete, 2 },
	{ "ip_options_12", t_complete, 3 },
	{ "ip_options_40_reverse", t_complete, 4 },
	{ "qinq_reverse", t_complete, 5 },
	{ "vlan_df_options_11frag", t_complete, 6 },
	{ "perm_3frag_all", t_perm_3, 0 },
	{ "perm_11frag_random", t_perm_11, 0 },
	{ "eth_padding", t_padding, 0 },
	{ "trim_to_8", t_trim, 0 },
	{ "vlan_separate", t_vlan, 0 },
	{ "dup_exact", t_dup, 0 },
	{ "dup_exact_earlier", t_dup_earlier, 0 },
	{ "dup_last_sets_end", t_dup_last_end, 0 },
	{ "dup_changed_first_word", t_dup_changed, 0 },
	{ "dup_changed_earlier_last_byte", t_dup_changed, 1 },
	{ "dup_changed_ragged_tail", t_dup_changed, 2 },
	{ "dup_changed_second_chunk_end", t_dup_changed, 3 },
	{ "dup_changed_second_chunk_start", t_dup_changed, 4 },
	{ "dup_same_two_chunks", t_dup_changed, 5 },
	{ "dup_same_ragged_tail", t_dup_changed, 6 },
	{ "overlap_head", t_reject, 0 },
	{ "overlap_tail", t_reject, 1 },
	{ "overlap_contained", t_reject, 2 },
	{ "overlap_containing", t_reject, 3 },
	{ "overlap_same_off_shorter", t_reject, 4 },
	{ "overlap_same_off_longer", t_reject, 5 },
	{ "overlap_last", t_reject, 6 },
	{ "bad_end_second_last", t_reject, 7 },
	{ "bad_end_last_before_held", t_reject, 8 },
	{ "bad_end_beyond_end", t_reject, 9 },
	{ "zero_len", t_reject, 10 },
	{ "zero_len_alone", t_reject, 11 },
	{ "zero_len_after_trim", t_reject, 12 },
	{ "ping_of_death", t_reject, 13 },
	{ "ping_of_death_ihl15", t_reject, 14 },
	{ "ping_of_death_alone", t_reject, 15 },
	{ "oversize_late_tc", t_reject, 16 },
	{ "oversize_late_no_tc", t_reject, 17 },
	{ "too_many", t_too_many, 0 },
	{ "too_many_flush", t_too_many_flush, 0 },
	{ "too_many_drop_policy", t_too_many_flush, 1 },
	{ "bad_header", t_bad_header, 0 },
	{ "timeout", t_timeout, 0 },
	{ "sweeper_reclaims", t_sweep, 0 },
	{ "sweeper_skips_busy", t_sweep, 1 },
	{ "refuse", t_refuse, 0 },
	{ "evict_lru", t_evict, 0 },
	{ "capture", t_capture, 0 },
	{ "capture_swept", t_capture_swept, 0 },
	{ "evict_progress", t_evict, 1 },
	{ "watermark_lru", t_watermark, 0 },
	{ "memory_reserved_for_progress", t_reserve, 0 },
	{ "quota_per_source", t_quota, 0 },
	{ "attack_flood_first_only", t_flood, 0 },
	{ "attack_rose", t_flood, 1 },
	{ "attack_teardrop", t_overlap_attack, 0 },
	{ "attack_fragmentsmack", t_overlap_attack, 1 },
	{ "attack_rfc1858_rewrite", t_overlap_attack, 2 },
	{ "attack_sturges_novak", t_overlap_attack, 3 },
	{ "attack_tiny_fragments", t_tiny, 0 },
	{ "attack_duplicate_storm", t_dup_storm, 0 },
	{ "attack_hash_collision", t_collide, 0 },
	{ "mem_default_256", t_mem_default, 0 },
	{ "mem_small_nomem", t_mem_small, 0 },
	{ "pass_through_tc", t_pass, 0 },
	{ "pass_through_no_tc", t_pass, 1 },
	{ "jumbo_multibuf_handoff", t_jumbo, 0 },
	{ "jumbo_multibuf_reverse", t_jumbo, 1 },
	{ "no_tc_9000_passed", t_pass, 2 },
	{ "no_tc_9000_reverse_passed", t_pass, 3 },
	{ "pass_record_freed", t_pass_frees, 0 },
	{ "pass_record_evicts_cold", t_pass_evicts, 0 },
	{ "pass_record_outlives_duplicate", t_pass_dup, 0 },
	{ "replay_65507_taken", t_replay_takes, 0 },
	{ "replay_size_learned_late", t_replay_takes, 1 },
	{ "no_tc_room_learned", t_no_tc_room, 0 },
	{ "no_tc_middle_first_passed", t_no_tc_unknown, 0 },
	{ "no_tc_tcp_first_passed", t_no_tc_unknown, 1 },
	{ "tc_seen_handoff", t_tc_seen, 0 },
	{ "handoff_tc", t_handoff, 0 },
	{ "multibuf_rebuild", t_multibuf, 0 },
	{ "missing_fragment", t_missing, 0 },
	{ "cross_cpu", t_cross_cpu, 0 },
	{ "steer_owner", t_steer, 0 },
	{ "guard_stale_head", t_guard, 0 },
	{ "guard_off_merges", t_guard, 1 },
	{ "guard_count_wraps", t_guard, 2 },
	{ "guard_at_limit", t_guard, 4 },
	{ "guard_at_limit_wraps", t_guard, 6 },
	{ "guard_per_flow", t_guard_flows, 0 },
	{ "ip6_inorder_2frag", t6_complete, 0 },
	{ "ip6_reverse_3frag", t6_complete, 1 },
	{ "ip6_ext_hdrs_3frag", t6_complete, 2 },
	{ "ip6_ext_hdrs_reverse", t6_complete, 3 },
	{ "ip6_vlan_reverse", t6_complete, 4 },
	{ "ip6_vlan_ext_hdrs_3frag", t6_complete, 5 },
	{ "ip6_dup_exact", t6_dup, 0 },
	{ "ip6_dup_exact_ext_hdrs", t6_dup, 3 },
	{ "ip6_overlap_head", t6_reject, 0 },
	{ "ip6_overlap_last", t6_reject, 1 },
	{ "ip6_bad_len", t6_reject, 2 },
	{ "ip6_bad_len_first", t6_reject, 3 },
	{ "ip6_too_long", t6_reject, 4 },
	{ "ip6_too_long_alone", t6_reject, 5 },
	{ "ip6_bad_chain", t6_bad_chain, 0 },
	{ "ip6_chain_unreadable", t6_chain_unreadable, 0 },
	{ "ip6_atomic", t6_atomic, 0 },
	{ "ip6_atomic_ext_hdrs", t6_atomic, 3 },
	{ "ip6_quota_per_64", t6_quota, 0 },
};

int main(void)
{
	static struct tctx t;
	int passed = 0, failed = 0;
	cpu_set_t set;

	setvbuf(stdout, NULL, _IOLBF, 0);
	libbpf_set_print(libbpf_log);
	ncpus = libbpf_num_possible_cpus();
	use_meta = xf_probe_xdp_meta();
	if (!use_meta)
		printf("test_prog: this kernel refuses bpf_xdp_adjust_meta in "
		       "XDP: hand-offs are found by key\n");
	if (ncpus <= 0 || sched_getaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "test_prog: cannot find CPUs\n");
		return 1;
	}
	for (int c = 0; c < CPU_SETSIZE && c < ncpus; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		if (cpu_a < 0)
			cpu_a = c;
		else if (cpu_b < 0)
			cpu_b = c;
	}
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		int r;

		memset(t.why, 0, sizeof(t.why));
		t.skel = NULL;
		t.arg = tests[i].arg;
		if (pin(cpu_a)) {
			fprintf(stderr, "test_prog: pin: %s\n", strerror(errno));
			return 1;
		}
		r = tests[i].fn(&t);
		if (!r && t.skel)
			r = check_invariants(&t);
		xfrag_bpf__destroy(t.skel);
		if (r > 0) {
			printf("SKIP %s: needs two CPUs\n", tests[i].name);
		} else if (r == 0) {
			printf("PASS %s\n", tests[i].name);
			passed++;
		} else {
			printf("FAIL %s: %s\n", tests[i].name,
			       t.why[0] ? t.why : "failed");
			failed++;
		}
	}
	printf("test_prog: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
