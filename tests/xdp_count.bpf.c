// SPDX-License-Identifier: GPL-2.0
/*
 * xdp_count: the second XDP program of the real-driver and dispatcher tests
 * (tests/vnet_test.sh, issue 24).  It counts what reaches it and passes
 * everything: frames, IPv4/IPv6 fragments among them, bytes, and frames
 * beyond 1514 bytes (multi-buffer on a driver with page-sized buffers).
 * Under the libxdp dispatcher it runs after xfrag (priority 20 > 5): what
 * it sees is what xfrag hands on.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <xdp/xdp_helpers.h>

#define ETH_P_IP	0x0800
#define ETH_P_IPV6	0x86DD

char LICENSE[] SEC("license") = "GPL";

struct xdp_count_val {
	__u64 frames;
	__u64 frags;		/* IPv4 with MF or an offset; IPv6 Fragment */
	__u64 bytes;
	__u64 big;		/* frames longer than 1514 bytes */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdp_count_val);
} xdp_count_map SEC(".maps");

struct {
	__uint(priority, 20);
	__uint(XDP_PASS, 1);
} XDP_RUN_CONFIG(xdp_count);

SEC("xdp.frags")
int xdp_count(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct xdp_count_val *v;
	__u32 zero = 0, len;

	v = bpf_map_lookup_elem(&xdp_count_map, &zero);
	if (!v)
		return XDP_PASS;
	len = bpf_xdp_get_buff_len(ctx);
	v->frames++;
	v->bytes += len;
	if (len > 1514)
		v->big++;
	if ((void *)(eth + 1) > end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) <= end &&
		    (ip->frag_off & bpf_htons(0x3fff)))
			v->frags++;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) <= end && ip6->nexthdr == 44)
			v->frags++;
	}
	return XDP_PASS;
}
