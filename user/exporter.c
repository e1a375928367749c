// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xfrag exporter: serves the counters of every attached instance (or of
 * the interfaces named) at /metrics, in Prometheus' text exposition
 * format, read from the pinned maps at each scrape.  HTTP is libmicrohttpd's
 * (Debian libmicrohttpd-dev), with its own polling thread; this thread
 * waits for SIGINT or SIGTERM.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include "common.h"

#define XF_EXPORTER_MAX_IFACES	256

static volatile sig_atomic_t stop;
static char **ifaces;		/* named on the command line, or NULL: all */
static int nifaces;
static bool percpu;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* The instances to report: those named, else every live pinned one. */
static int instances(char names[][IF_NAMESIZE + 1], int max)
{
	struct dirent *de;
	int n = 0;
	DIR *d;

	if (ifaces) {
		for (int i = 0; i < nifaces && n < max; i++)
			snprintf(names[n++], IF_NAMESIZE + 1, "%s", ifaces[i]);
		return n;
	}
	d = opendir(XFRAG_PIN_ROOT);
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		if (de->d_name[0] == '.' || strlen(de->d_name) > IF_NAMESIZE)
			continue;
		if (xf_instance_state(de->d_name) != XF_INST_LIVE)
			continue;
		snprintf(names[n++], IF_NAMESIZE + 1, "%s", de->d_name);
	}
	closedir(d);
	return n;
}

/* The page for one scrape, malloc'd; NULL when out of memory. */
static char *scrape(size_t *len)
{
	static char names[XF_EXPORTER_MAX_IFACES][IF_NAMESIZE + 1];
	struct xf_prom_src src[XF_EXPORTER_MAX_IFACES];
	struct xfrag_stats sums[XF_EXPORTER_MAX_IFACES];
	int n = instances(names, XF_EXPORTER_MAX_IFACES), k = 0, missing = 0;
	char *buf = NULL;
	FILE *f;

	for (int i = 0; i < n; i++) {
		struct xfrag_stats *pc = NULL;
		int ncpu = 0;

		if (xf_read_stats(names[i], &sums[k], percpu ? &pc : NULL,
				  &ncpu)) {
			missing++;
			continue;
		}
		src[k] = (struct xf_prom_src){ .ifname = names[i],
					       .sum = &sums[k], .pc = pc,
					       .ncpu = ncpu };
		k++;
	}
	f = open_memstream(&buf, len);
	if (f) {
		fprintf(f, "# HELP xfrag_exporter_instances interfaces with "
			"xfrag reported in this scrape\n"
			"# TYPE xfrag_exporter_instances gauge\n"
			"xfrag_exporter_instances %d\n"
			"# HELP xfrag_exporter_missing interfaces named or found "
			"whose counters could not be read\n"
			"# TYPE xfrag_exporter_missing gauge\n"
			"xfrag_exporter_missing %d\n", k, missing);
		if (k)
			xf_print_prometheus(f, src, k);
		if (fclose(f)) {
			free(buf);
			buf = NULL;
		}
	}
	for (int i = 0; i < k; i++)
		free((void *)src[i].pc);
	return buf;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_len, void **state)
{
	static const char index[] =
		"xfrag exporter: the counters are at /metrics\n";
	static const char notfound[] = "not found: try /metrics\n";
	struct MHD_Response *r;
	enum MHD_Result ret;
	unsigned int code = MHD_HTTP_OK;
	const char *type = "text/plain; charset=utf-8";
	char *page = NULL;
	size_t len = 0;
	(void)cls;
	(void)version;
	(void)upload;
	(void)state;

	if (strcmp(method, MHD_HTTP_METHOD_GET) &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD))
		return MHD_NO;		/* closes the connection */
	if (*upload_len)
		return MHD_NO;
	if (!strcmp(url, "/metrics")) {
		page = scrape(&len);
		if (!page)
			return MHD_NO;
		type = "text/plain; version=0.0.4; charset=utf-8";
		r = MHD_create_response_from_buffer(len, page,
						    MHD_RESPMEM_MUST_FREE);
	} else if (!strcmp(url, "/")) {
		r = MHD_create_response_from_buffer(sizeof(index) - 1,
						    (void *)index,
						    MHD_RESPMEM_PERSISTENT);
	} else {
		code = MHD_HTTP_NOT_FOUND;
		r = MHD_create_response_from_buffer(sizeof(notfound) - 1,
						    (void *)notfound,
						    MHD_RESPMEM_PERSISTENT);
	}
	if (!r) {
		free(page);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

/* "ADDR:PORT", "[ADDR6]:PORT" or ":PORT" (all addresses, IPv6 and IPv4). */
static int parse_listen(const char *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	const char *colon = strrchr(s, ':');
	char host[64];
	uint64_t port;
	size_t hl;

	if (!colon || xf_parse_num(colon + 1, &port) || !port || port > 65535)
		return -EINVAL;
	hl = colon - s;
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = 0;
	memset(ss, 0, sizeof(*ss));
	if (!hl) {
		a6->sin6_family = AF_INET6;
		a6->sin6_addr = in6addr_any;
		a6->sin6_port = htons(port);
		return 0;
	}
	if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
		host[hl - 1] = 0;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(port);
		return inet_pton(AF_INET6, host + 1, &a6->sin6_addr) == 1 ?
		       0 : -EINVAL;
	}
	a4->sin_family = AF_INET;
	a4->sin_port = htons(port);
	return inet_pton(AF_INET, host, &a4->sin_addr) == 1 ? 0 : -EINVAL;
}

int xf_cmd_exporter(int argc, char **argv, union xf_args *args)
{
	const struct xf_exporter_args *a = &args->exporter;
	const char *listen = a->listen.set ? a->listen.str : XF_EXPORTER_LISTEN;
	struct sockaddr_storage ss;
	struct MHD_Daemon *d;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD |
			     MHD_USE_ERROR_LOG;

	for (int i = 0; i < argc; i++) {
		if (!xf_ifname_valid(argv[i])) {
			fprintf(stderr, "xfrag exporter: bad interface name "
				"'%s'\n", argv[i]);
			return XF_EXIT_USAGE;
		}
	}
	if (argc > XF_EXPORTER_MAX_IFACES) {
		fprintf(stderr, "xfrag exporter: at most %d interfaces\n",
			XF_EXPORTER_MAX_IFACES);
		return XF_EXIT_USAGE;
	}
	if (parse_listen(listen, &ss)) {
		fprintf(stderr, "xfrag exporter: --listen wants ADDR:PORT, "
			"[ADDR6]:PORT or :PORT, not '%s'\n", listen);
		return XF_EXIT_USAGE;
	}
	ifaces = argc ? argv : NULL;
	nifaces = argc;
	percpu = a->per_cpu.set;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_DUAL_STACK;
	d = MHD_start_daemon(flags, 0, NULL, NULL, answer, NULL,
			     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
			     MHD_OPTION_CONNECTION_LIMIT, 32U,
			     MHD_OPTION_PER_IP_CONNECTION_LIMIT, 8U,
			     MHD_OPTION_CONNECTION_TIMEOUT, 10U,
			     MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "xfrag exporter: cannot listen on %s: %s\n",
			listen, strerror(errno));
		return XF_EXIT_FAIL;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("xfrag exporter: serving /metrics on %s\n", listen);
	fflush(stdout);
	while (!stop)
		pause();
	MHD_stop_daemon(d);
	return XF_EXIT_OK;
}
