// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fuzz_prog: options, kernel limits, the run. */
#include "fuzz_prog.h"

/* ---- Start --------------------------------------------------------------- */

/* Largest frame test_run takes for prog (binary search on non-IP frames). */
static __u32 probe_max(int prog_fd)
{
	__u32 lo = 14, hi = FRAME_MAX;

	memset(fbuf, 0, FRAME_MAX);
	put16(fbuf + 12, 0x88b5);
	while (lo < hi) {
		__u32 mid = (lo + hi + 1) / 2;
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = fbuf,
			    .data_size_in = mid, .data_out = out,
			    .data_size_out = sizeof(out), .repeat = 1);

		if (bpf_prog_test_run_opts(prog_fd, &o))
			hi = mid - 1;
		else
			lo = mid;
	}
	return lo;
}

static int probe_limits(void)
{
	static struct run r;

	r.s.buckets = 1;
	r.s.ways = 1;
	r.s.sweeper = 1;
	if (load(&r)) {
		printf("FAIL fuzz_setup: %s\n", r.why);
		return -1;
	}
	xdp_in_max = probe_max(r.xdp_fd);
	tc_in_max = probe_max(r.tc_fd);
	xfrag_bpf__destroy(r.skel);
	if (xdp_in_max < 1600 || tc_in_max < 1600) {
		printf("FAIL fuzz_setup: test_run takes %u bytes for XDP, %u for TC\n",
		       xdp_in_max, tc_in_max);
		return -1;
	}
	if (xdp_in_max > FRAME_MAX - 4096)
		xdp_in_max = FRAME_MAX - 4096;
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fuzz_prog [--seed S] [--frames N] [--rounds K] [--round R] [--pcap FILE] [-v]\n"
		"  --seed S    random seed (default: from getrandom, printed)\n"
		"  --frames N  frames in all (default 200000)\n"
		"  --rounds K  rounds, a fresh skeleton and configuration each\n"
		"              (default: N / 25000, at least 4, at most N / 1000)\n"
		"  --round R   run only round R of that seed and frame count\n"
		"  --pcap FILE on failure, write the round's last %d frames there\n",
		RING);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "frames", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'k' },
		{ "round", required_argument, NULL, 'r' },
		{ "pcap", required_argument, NULL, 'p' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct run tot = { 0 };
	int c, have_seed = 0, failed = 0, passed = 0;
	cpu_set_t set;
	time_t t0 = time(NULL);

	while ((c = getopt_long(argc, argv, "s:n:k:r:p:vh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			seed = strtoull(optarg, NULL, 0);
			have_seed = 1;
			break;
		case 'n':
			nframes = strtoull(optarg, NULL, 0);
			break;
		case 'k':
			nrounds = atoi(optarg);
			break;
		case 'r':
			only_round = atoi(optarg);
			break;
		case 'p':
			pcap_path = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			usage();
			return c == 'h' ? 0 : 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	libbpf_set_print(libbpf_log);
	if (!have_seed && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (__u64)time(NULL) * 2654435761ULL;
	if (!have_seed)
		seed &= 0xffffffffffffULL;	/* short enough to type */
	if (nrounds <= 0) {
		nrounds = nframes / 25000;
		if (nrounds < 4)
			nrounds = 4;
		if ((__u64)nrounds > nframes / 1000)
			nrounds = nframes / 1000 ?: 1;
	}
	round_frames = (nframes + nrounds - 1) / nrounds;

	ncpus = libbpf_num_possible_cpus();
	use_meta = xf_probe_xdp_meta();
	if (ncpus <= 0 || sched_getaffinity(0, sizeof(set), &set)) {
		printf("FAIL fuzz_setup: cannot find CPUs\n");
		return 1;
	}
	for (cur_cpu = 0; cur_cpu < CPU_SETSIZE && !CPU_ISSET(cur_cpu, &set);
	     cur_cpu++)
		;
	CPU_ZERO(&set);
	CPU_SET(cur_cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		printf("FAIL fuzz_setup: pin to cpu %d: %s\n", cur_cpu,
		       strerror(errno));
		return 1;
	}
	if (probe_limits())
		return 1;
	printf("fuzz_prog: seed %llu, %llu frames in %d rounds of %llu, cpu %d, test_run takes up to %u bytes (XDP) / %u (TC)\n",
	       (unsigned long long)seed, (unsigned long long)nframes, nrounds,
	       (unsigned long long)round_frames, cur_cpu, xdp_in_max,
	       tc_in_max);
	for (int i = 0; i < nrounds; i++) {
		if (only_round >= 0 && i != only_round)
			continue;
		if (run_round(i, &tot)) {
			failed++;
			break;
		}
		passed++;
	}
	printf("fuzz_prog: seed %llu: %llu frames, %llu clean and %llu mutant datagrams; delivered clean %llu (xdp) + %llu (tc), mutant %llu + %llu; %llu hand-offs; %ld s\n",
	       (unsigned long long)seed, (unsigned long long)tot.f_sent,
	       (unsigned long long)tot.dgrams_clean,
	       (unsigned long long)tot.dgrams_mut,
	       (unsigned long long)tot.clean_xdp,
	       (unsigned long long)tot.clean_tc,
	       (unsigned long long)tot.mut_xdp, (unsigned long long)tot.mut_tc,
	       (unsigned long long)tot.handoffs, (long)(time(NULL) - t0));
	if (!failed && only_round < 0 && nframes >= 50000) {
		/* A fuzzer that never saw a datagram delivered checked
		 * nothing of the rebuild paths. */
		if (tot.clean_xdp && tot.clean_tc) {
			printf("PASS fuzz_coverage\n");
			passed++;
		} else {
			printf("FAIL fuzz_coverage: seed %llu: clean datagrams delivered by XDP %llu, by TC %llu\n",
			       (unsigned long long)seed,
			       (unsigned long long)tot.clean_xdp,
			       (unsigned long long)tot.clean_tc);
			failed++;
		}
	}
	printf("fuzz_prog: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
