// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xf_parse_num() against the documented syntax (ref_parse_num() in
 * fuzz.h): the same strings accepted, the same values, -EINVAL otherwise,
 * and *out untouched on failure.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "fuzz.h"

#define SENTINEL 0x5a5a5a5a5a5a5a5aULL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t got = SENTINEL, want = 0;
	char *s = malloc(size + 1);
	int r, rr;

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = 0;	/* an embedded NUL ends the string, as in argv */
	r = xf_parse_num(s, &got);
	rr = ref_parse_num(s, &want);
	XF_CHECK(r == 0 || r == -EINVAL, "'%s': returned %d", s, r);
	XF_CHECK((r == 0) == (rr == 0), "'%s': %s, documented syntax says %s",
		 s, r ? "rejected" : "accepted", rr ? "reject" : "accept");
	if (!r)
		XF_CHECK(got == want, "'%s': %llu, expected %llu", s,
			 (unsigned long long)got, (unsigned long long)want);
	else
		XF_CHECK(got == SENTINEL, "'%s': rejected but *out written", s);
	free(s);
	return 0;
}
