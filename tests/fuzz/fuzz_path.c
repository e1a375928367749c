// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Interface names and the pin paths built from them (common.c): only a
 * name the kernel could give a device becomes a path, the path is exactly
 * XFRAG_PIN_ROOT/IFACE[/MAP] or nothing (never truncated), and nothing is
 * written outside the buffer (an exact-size heap block, so ASan sees it).
 *
 * Input: u16 buffer size (mod 320), u8 map choice (mod 10: 0 the
 * directory, 1-8 a pinned map, 9 a 200-byte name), then the interface
 * name (to the end or a NUL).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "fuzz.h"

static const char *const maps[] = {
	NULL, "xfrag_table", "xfrag_chunks", "xfrag_free", "xfrag_pcpu",
	"xfrag_stats", "xfrag_config", "xfrag_srcq", "xfrag_sweep",
};
static char long_map[201];

/* The kernel's dev_valid_name(), restated. */
static int ref_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 15 || !strcmp(s, ".") || !strcmp(s, ".."))
		return 0;
	return !strpbrk(s, "/: \t\n\v\f\r");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	memset(long_map, 'm', 200);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t len, want_len;
	const char *map;
	char *name, *buf, want[400];
	int valid, r;

	if (size < 3)
		return 0;
	len = (data[0] | data[1] << 8) % 320;
	map = data[2] % 10 == 9 ? long_map : maps[data[2] % 10];
	name = strndup((const char *)data + 3, size - 3);
	if (!name)
		abort();
	valid = ref_valid(name);
	XF_CHECK(xf_ifname_valid(name) == valid, "'%s': valid %d, expected %d",
		 name, !valid, valid);

	buf = malloc(len);	/* exactly len bytes, even 0 */
	if (!buf)
		abort();
	if (map)
		r = xf_pin_path(buf, len, name, map);
	else
		r = xf_pin_dir(buf, len, name);
	if (map)
		want_len = snprintf(want, sizeof(want), "%s/%s/%s",
				    XFRAG_PIN_ROOT, name, map);
	else
		want_len = snprintf(want, sizeof(want), "%s/%s",
				    XFRAG_PIN_ROOT, name);

	if (!valid) {
		XF_CHECK(r == -ENODEV, "'%s' is no interface name: %d", name, r);
		/* Rejected before any lookup, so never a path. */
		XF_CHECK(xf_pin_open(name, "xfrag_stats") == -ENODEV,
			 "pin_open('%s') did not refuse the name", name);
	} else if (want_len >= len) {
		XF_CHECK(r == -ENAMETOOLONG, "'%s' in %zu bytes: %d, expected "
			 "-ENAMETOOLONG", name, len, r);
	} else {
		XF_CHECK(r == 0, "'%s' in %zu bytes: %d", name, len, r);
		XF_CHECK(!strcmp(buf, want), "'%s': '%s', expected '%s'", name,
			 buf, want);
		/* One directory per interface, right under the root. */
		XF_CHECK(!strncmp(buf, XFRAG_PIN_ROOT "/", sizeof(XFRAG_PIN_ROOT)) &&
			 strcspn(buf + sizeof(XFRAG_PIN_ROOT), "/") == strlen(name),
			 "'%s' leaves its directory: '%s'", name, buf);
	}
	if (r && len)
		XF_CHECK(!buf[0], "'%s': failed but left '%.*s'", name,
			 (int)len, buf);
	free(buf);
	free(name);
	return 0;
}
