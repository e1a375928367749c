/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The payload of every UDP datagram the stream tests and the benchmark
 * send (fragsend, udpcheck send, bench/gen) and check (udpcheck recv,
 * bench/sink), written and checked here only:
 *
 *   bytes 0-3    magic "XFPL" (big endian, as every field)
 *   bytes 4-7    seq
 *   bytes 8-11   the payload's length
 *   byte i >= 12 (seq * 131 + 0x5a + 7 i) mod 256
 *
 * A payload shorter than 12 bytes is what fits of that (at least magic
 * and seq: 8 bytes).  The pattern depends on the sequence number and the
 * position, so a byte moved, a piece of another datagram or a datagram
 * cut short is found.  The differential test's payloads (tests/
 * diffcommon.h) are another kind: keyed per datagram, they also tell a
 * datagram rebuilt from two originals.
 */
#ifndef XFRAG_TEST_PAYLOAD_H
#define XFRAG_TEST_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "frame.h"

#define PL_MAGIC	0x5846504cU	/* "XFPL" */
#define PL_HDR		12		/* magic, seq, length */
#define PL_MIN		8		/* magic and seq */

static inline uint8_t pl_byte(uint32_t seq, size_t i)
{
	return (uint8_t)(seq * 131 + 0x5a + 7 * i);
}

/*
 * n bytes of the payload of datagram seq whose length is len into p: n >
 * len continues the pattern past the end (for fragments that overrun
 * it).
 */
static inline void pl_fill(uint8_t *p, size_t n, size_t len, uint32_t seq)
{
	uint8_t h[PL_HDR];

	put32(h, PL_MAGIC);
	put32(h + 4, seq);
	put32(h + 8, (uint32_t)len);
	for (size_t i = 0; i < n; i++)
		p[i] = i < PL_HDR ? h[i] : pl_byte(seq, i);
}

/*
 * NULL when p[0, len) is a whole payload (*seq its sequence number), else
 * what is wrong ("short", "magic", "length", "pattern") with *where the
 * first byte that differs.  Fast: the pattern is 7 (i + o) mod 256 with o
 * = c * 183 (7^-1 mod 256) for c = seq * 131 + 0x5a, compared against one
 * table with memcmp.
 */
static inline const char *pl_check(const uint8_t *p, size_t len,
				   uint32_t *seq, size_t *where)
{
	static uint8_t ref[65536 + 512];	/* ref[j] = 7 j */
	uint8_t h[PL_HDR];
	size_t i, o;

	*seq = 0;
	*where = 0;
	if (len < PL_MIN)
		return "short";
	if (get32(p) != PL_MAGIC)
		return "magic";
	*seq = get32(p + 4);
	put32(h + 8, (uint32_t)len);
	for (i = PL_MIN; i < len && i < PL_HDR; i++) {
		if (p[i] != h[i]) {
			*where = i;
			return "length";
		}
	}
	if (len <= PL_HDR)
		return NULL;
	if (!ref[1])
		for (size_t j = 0; j < sizeof(ref); j++)
			ref[j] = (uint8_t)(7 * j);
	o = (uint8_t)((uint8_t)(*seq * 131 + 0x5a) * 183);
	if (len <= 65536 && !memcmp(p + PL_HDR, ref + PL_HDR + o,
				    len - PL_HDR))
		return NULL;
	for (i = PL_HDR; i < len && p[i] == pl_byte(*seq, i); i++)
		;
	if (i == len)
		return NULL;
	*where = i;
	return "pattern";
}

#endif /* XFRAG_TEST_PAYLOAD_H */
