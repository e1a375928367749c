// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xfrag: attach, inspect and detach the XDP/TC fragment reassembler. */
#include <stdio.h>
#include <string.h>
#include "common.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: xfrag COMMAND [options]\n\nCommands:\n");
	for (size_t i = 0; i < xf_ncmds; i++)
		fprintf(f, "  %-8s %s\n", xf_cmds[i].name, xf_cmds[i].summary);
	fprintf(f, "\n'xfrag COMMAND --help' shows a command's options; "
		"'xfrag --man' writes xfrag(8).\nExit codes:\n");
	for (int i = 0; i < xf_nexits; i++)
		fprintf(f, "  %d  %s\n", xf_exits[i].code, xf_exits[i].meaning);
}

int main(int argc, char **argv)
{
	static union xf_args args;
	int first, err;

	if (argc < 2) {
		usage(stderr);
		return XF_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--man")) {
		xf_man(stdout);
		return XF_EXIT_OK;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return XF_EXIT_OK;
	}
	for (size_t i = 0; i < xf_ncmds; i++) {
		if (strcmp(argv[1], xf_cmds[i].name))
			continue;
		err = xf_parse(&xf_cmds[i], argc - 1, argv + 1, &first, &args);
		if (err == XF_PARSE_HELP) {
			xf_usage(stdout, &xf_cmds[i]);
			return XF_EXIT_OK;
		}
		if (err)
			return XF_EXIT_USAGE;
		return xf_cmds[i].run(argc - 1 - first, argv + 1 + first,
				      &args);
	}
	fprintf(stderr, "xfrag: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return XF_EXIT_USAGE;
}
