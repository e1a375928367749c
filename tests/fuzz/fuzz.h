/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Helpers shared by the libFuzzer targets: a reference for the documented
 * number syntax, splitting an input into strings, and a failure report
 * that libFuzzer records as a crash (with the input that caused it).
 */
#ifndef XF_FUZZ_H
#define XF_FUZZ_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * stderr as it was before libFuzzer's -close_fd_mask=2 closed it (the code
 * under test writes its messages there; ours must still be seen).
 */
static int xf_report_fd = 2;

__attribute__((constructor))
static void xf_save_stderr(void)
{
	int fd = dup(2);

	if (fd >= 0)
		xf_report_fd = fd;
}

/* An oracle said no: print why and abort, so libFuzzer saves the input. */
__attribute__((format(printf, 1, 2), noreturn))
static void xf_fail(const char *fmt, ...)
{
	va_list ap;

	dprintf(xf_report_fd, "\nfuzz check failed: ");
	va_start(ap, fmt);
	vdprintf(xf_report_fd, fmt, ap);
	va_end(ap);
	dprintf(xf_report_fd, "\n");
	abort();
}

#define XF_CHECK(cond, ...) do { if (!(cond)) xf_fail(__VA_ARGS__); } while (0)

/*
 * The number syntax the CLI documents (README, --help): decimal digits,
 * then at most one of k/K, m/M, g/G (x 2^10, 2^20, 2^30); nothing else,
 * and the value must fit in 64 bits.  Written independently of
 * xf_parse_num(): 128-bit arithmetic, saturating.
 */
static inline int ref_parse_num(const char *s, uint64_t *out)
{
	unsigned __int128 v = 0, lim = (unsigned __int128)UINT64_MAX;
	const char *p = s;
	int shift = 0;

	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (unsigned)(*p - '0');
		if (v > lim)
			v = lim + 1;	/* saturate: stays too large */
	}
	switch (*p) {
	case 'k': case 'K': shift = 10; p++; break;
	case 'm': case 'M': shift = 20; p++; break;
	case 'g': case 'G': shift = 30; p++; break;
	}
	if (*p)
		return -1;
	v <<= shift;	/* at most (2^64) << 30: fits in 128 bits */
	if (v > lim)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

/*
 * Split data into at most max strings at '\n' and NUL; each string in its
 * own heap block of exactly its size (so ASan sees any overrun).  Returns
 * the count; free with xf_free_strs().
 */
static inline int xf_split(const uint8_t *data, size_t size, char **out, int max)
{
	int n = 0;
	size_t i = 0;

	while (i <= size && n < max) {
		size_t j = i;

		while (j < size && data[j] != '\n' && data[j] != 0)
			j++;
		if (j == size && i == size && n)
			break;	/* no empty string after a final separator */
		out[n] = malloc(j - i + 1);
		if (!out[n])
			abort();
		memcpy(out[n], data + i, j - i);
		out[n][j - i] = 0;
		n++;
		i = j + 1;
	}
	return n;
}

static inline void xf_free_strs(char **s, int n)
{
	for (int i = 0; i < n; i++)
		free(s[i]);
}

#endif
