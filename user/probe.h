/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Kernel feature probes shared by the CLI and the test programs.
 */
#ifndef XFRAG_PROBE_H
#define XFRAG_PROBE_H

#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>

/*
 * May an XDP program call bpf_xdp_adjust_meta?  Loads a four-instruction
 * program that does.  libbpf_probe_bpf_helper() cannot tell: it counts
 * any refusal other than "unknown func" as supported, and a kernel seen
 * here refuses this helper with "program of this type cannot use helper".
 */
static inline int xf_probe_xdp_meta(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_2,
		  .imm = 0 },
		{ .code = BPF_JMP | BPF_CALL,
		  .imm = BPF_FUNC_xdp_adjust_meta },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
		  .imm = XDP_PASS },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "xfrag_probe", "GPL", insns,
			       sizeof(insns) / sizeof(insns[0]), NULL);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

#endif /* XFRAG_PROBE_H */
