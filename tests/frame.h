/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Bytes and checksums for every program that builds frames (test_prog,
 * fuzz_prog, diffgen, fragsend, bench/gen), written once: big-endian
 * stores and loads, the ones' complement sum of RFC 1071 and its fold.
 */
#ifndef XFRAG_TEST_FRAME_H
#define XFRAG_TEST_FRAME_H

#include <stddef.h>
#include <stdint.h>

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static inline void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* s plus the big-endian 16-bit words of p[0, n), an odd tail padded. */
static inline uint64_t sum16(const void *p, size_t n, uint64_t s)
{
	const uint8_t *b = p;

	for (; n > 1; n -= 2, b += 2)
		s += (uint32_t)b[0] << 8 | b[1];
	return n ? s + ((uint32_t)b[0] << 8) : s;
}

/* The same with the sum first (the pseudo-header's order of work). */
static inline uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
	return (uint32_t)sum16(p, len, sum);
}

/* A sum folded to 16 bits, not complemented. */
static inline uint16_t fold16(uint64_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* A sum folded and complemented: the checksum field's value. */
static inline uint16_t csum_fold(uint64_t sum)
{
	return (uint16_t)~fold16(sum);
}

/* The checksum of p[0, n). */
static inline uint16_t csum(const uint8_t *p, size_t n)
{
	return csum_fold(sum16(p, n, 0));
}

#endif /* XFRAG_TEST_FRAME_H */
