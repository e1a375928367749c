/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Shared by tests/diffgen.c (generator, sender, checker) and
 * tests/diffrecv.c (receiver) of the differential test.
 *
 * Every datagram of the test is UDP to XD_PORT.  Its source port names its
 * index in the batch (XD_SPORT_BASE + index); its UDP data is derived from
 * (seed, batch, index) alone:
 *
 *   data length >= 20: bytes 0-19 are the tag (big endian): XD_MAGIC,
 *                      the seed's low 32 bits, batch, index, data length;
 *                      byte i >= 20 is xd_byte(key, i)
 *   data length <  20: byte i is xd_byte(key, i)  (no room for a tag)
 *
 * with key = xd_dkey(seed, batch, index).  Markers (unfragmented UDP from
 * XD_MARK_SPORT, data "XDMARK B <batch>" / "XDMARK E <batch>") open and
 * close a batch, so the receiver knows which batch a datagram belongs to
 * and the driver knows when a batch has been delivered: frames are
 * delivered in order on one CPU, so everything sent before the closing
 * marker has reached the socket before it.
 */
#ifndef XD_DIFFCOMMON_H
#define XD_DIFFCOMMON_H

#include <stdint.h>
#include <string.h>

#define XD_MAGIC	0x58444731U	/* "XDG1" */
#define XD_PORT		9797
#define XD_SPORT_BASE	20000
#define XD_MARK_SPORT	19999
#define XD_MAX_DGRAMS	8192		/* datagrams in one batch, at most */
#define XD_TAG_LEN	20

static inline uint64_t xd_mix(uint64_t x)
{
	/* splitmix64 finaliser */
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static inline uint64_t xd_dkey(uint64_t seed, uint32_t batch, uint32_t idx)
{
	return xd_mix(seed ^ xd_mix(((uint64_t)batch << 32) | idx));
}

static inline uint8_t xd_byte(uint64_t key, uint32_t pos)
{
	return (uint8_t)(xd_mix(key + (pos >> 3)) >> ((pos & 7) * 8));
}

static inline void xd_put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static inline uint32_t xd_get32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	       ((uint32_t)p[2] << 8) | p[3];
}

/* The UDP data of datagram (batch, idx), len bytes. */
static inline void xd_fill(uint8_t *d, uint32_t len, uint64_t seed,
			   uint32_t batch, uint32_t idx)
{
	uint64_t key = xd_dkey(seed, batch, idx);
	uint32_t i = 0;

	if (len >= XD_TAG_LEN) {
		xd_put32(d, XD_MAGIC);
		xd_put32(d + 4, (uint32_t)seed);
		xd_put32(d + 8, batch);
		xd_put32(d + 12, idx);
		xd_put32(d + 16, len);
		i = XD_TAG_LEN;
	}
	for (; i < len; i++)
		d[i] = xd_byte(key, i);
}

/*
 * What d (len bytes) is for datagram (batch, idx): XD_OK, exactly its
 * bytes; XD_OTHER, made only of bytes that were sent for it: every whole
 * 4-byte group of the data either as it is or with its two 16-bit words
 * swapped (the "other bytes" copies of diffgen, same UDP checksum), the
 * rest as it is; XD_CORRUPT, anything else.
 */
enum { XD_OK = 0, XD_OTHER, XD_CORRUPT };

static inline int xd_classify(const uint8_t *d, uint32_t len, uint64_t seed,
			      uint32_t batch, uint32_t idx, uint8_t *scratch)
{
	int other = 0;

	xd_fill(scratch, len, seed, batch, idx);
	for (uint32_t i = 0; i < len; i += 4) {
		const uint8_t *a = d + i, *b = scratch + i;

		if (i + 4 > len) {
			if (memcmp(a, b, len - i))
				return XD_CORRUPT;
			break;
		}
		if (!memcmp(a, b, 4))
			continue;
		if (a[0] == b[2] && a[1] == b[3] && a[2] == b[0] && a[3] == b[1])
			other = 1;
		else
			return XD_CORRUPT;
	}
	return other ? XD_OTHER : XD_OK;
}

/* FNV-1a, 64 bits: names the bytes of a delivered datagram. */
static inline uint64_t xd_hash(const uint8_t *d, uint32_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (uint32_t i = 0; i < len; i++) {
		h ^= d[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#endif /* XD_DIFFCOMMON_H */
