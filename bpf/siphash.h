/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SipHash-1-3 of a datagram's key (struct xfrag_key, five 64-bit words)
 * under a 128-bit secret, and the key compare: what picks a bucket.  Also
 * used by the micro-benchmark's keyed floor (bench/floors.bpf.c).
 */
#ifndef XFRAG_SIPHASH_H
#define XFRAG_SIPHASH_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "xfrag.h"

#define ROTL64(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND(v0, v1, v2, v3)					\
	do {								\
		v0 += v1; v1 = ROTL64(v1, 13); v1 ^= v0;		\
		v0 = ROTL64(v0, 32);					\
		v2 += v3; v3 = ROTL64(v3, 16); v3 ^= v2;		\
		v0 += v3; v3 = ROTL64(v3, 21); v3 ^= v0;		\
		v2 += v1; v1 = ROTL64(v1, 17); v1 ^= v2;		\
		v2 = ROTL64(v2, 32);					\
	} while (0)

/* SipHash-1-3 of the key's 40 bytes (five words) under k0/k1. */
static __always_inline __u64 xfrag_hash(const struct xfrag_key *key,
					__u64 k0, __u64 k1)
{
	const __u64 *m = (const __u64 *)key;
	__u64 v0 = k0 ^ 0x736f6d6570736575ULL;
	__u64 v1 = k1 ^ 0x646f72616e646f6dULL;
	__u64 v2 = k0 ^ 0x6c7967656e657261ULL;
	__u64 v3 = k1 ^ 0x7465646279746573ULL;
	__u64 b = (__u64)sizeof(*key) << 56;

#pragma unroll
	for (int i = 0; i < (int)(sizeof(*key) / 8); i++) {
		v3 ^= m[i];
		SIPROUND(v0, v1, v2, v3);
		v0 ^= m[i];
	}
	v3 ^= b;
	SIPROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

static __always_inline int xfrag_key_eq(const struct xfrag_key *a,
					const struct xfrag_key *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	return ((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) |
		(x[3] ^ y[3]) | (x[4] ^ y[4])) == 0;
}

#endif /* XFRAG_SIPHASH_H */
