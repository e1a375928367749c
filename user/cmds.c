// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xfrag CLI: the commands and their option tables (parsing, --help, and
 * the fuzz targets in tests/fuzz/ all use these).
 */
#include <stddef.h>
#include "common.h"

#define STR(x) XF_STR(x)

/* Each option names its field in the command's args struct (ARGS). */
#define AT(f) offsetof(ARGS, f)
#define NUM(f, n, mv, h, d, lo, hi) \
	{ .name = n, .metavar = mv, .help = h, .def = d, .min = lo, \
	  .max = hi, .off = AT(f) }
#define STROPT(f, n, mv, h, d) \
	{ .name = n, .metavar = mv, .help = h, .def = d, .off = AT(f) }
#define FLAG(f, n, h) { .name = n, .help = h, .off = AT(f) }
#define END { .name = NULL }

#define ARGS struct xf_attach_args
const struct xf_opt xf_attach_opts[] = {
	STROPT(config, "config", "FILE", "read these options from FILE, one per line "
	       "(name = value, or a flag's name); the command line wins "
	       "(xfrag@IFACE.service: " XF_CONF_DIR "/IFACE.conf)", NULL),
	STROPT(mode, "mode", "native|skb", "XDP attach mode", "native"),
	NUM(buckets, "buckets", "N", "table buckets per CPU",
	    "a power of 2 leaving 4 chunks of the budget each: " STR(XFRAG_DEF_BUCKETS) " at 2M",
	    1, XFRAG_MAX_BUCKETS),
	NUM(ways, "ways", "W", "ways (datagrams) per bucket", STR(XFRAG_DEF_WAYS),
	    1, XFRAG_MAX_WAYS),
	NUM(mem_per_cpu, "mem-per-cpu", "BYTES", "payload memory budget per CPU (k/M/G)",
	    "2M", XFRAG_MIN_MEM, XFRAG_MAX_MEM),
	FLAG(no_tc, "no-tc", "attach XDP only: it takes only datagrams it can rebuild in the frame"),
	/* The run-time tunables, as options (xfrag config changes them). */
#define TUNE_NUM(k, mv, h, d, lo, hi, field, col, w) \
	NUM(tune[XF_T_##field], k, mv, h, d, lo, hi),
#define TUNE_ENUM(k, mv, h, d, field, col, w) \
	STROPT(tune[XF_T_##field], k, mv, h, d),
	XF_TUNABLES(TUNE_NUM, TUNE_ENUM)
#undef TUNE_NUM
#undef TUNE_ENUM
	STROPT(steer, "steer", "auto|cpumap|rps|off",
	       "bring every fragment of a datagram to one CPU: cpumap (native "
	       "mode), rps (skb mode), off", "auto: cpumap in native mode, rps in skb mode"),
	STROPT(cpus, "cpus", "LIST", "CPUs that own datagrams, e.g. 0-3,6",
	       "all online CPUs"),
	END
};
#undef ARGS

static const struct xf_opt none_opts[] = { END };

#define ARGS struct xf_steer_args
static const struct xf_opt steer_opts[] = {
	STROPT(cpus, "cpus", "LIST", "CPUs that own datagrams, e.g. 0-3,6",
	       "all online CPUs"),
	FLAG(off, "off", "stop steering (and clear RPS that steer set)"),
	FLAG(force, "force", "steer although XDP programs run after xfrag in the "
	     "dispatcher (they would not see steered fragments)"),
	END
};
#undef ARGS

#define ARGS struct xf_stats_args
static const struct xf_opt stats_opts[] = {
	STROPT(format, "format", "table|json|prometheus",
	       "output: the table, one JSON object, or Prometheus' text "
	       "exposition format (node_exporter's textfile collector)",
	       "table"),
	FLAG(json, "json", "print one JSON object (--format json)"),
	FLAG(per_cpu, "per-cpu", "show every CPU's values as well as the sum, and where fragments were received, steered and reassembled"),
	NUM(interval, "interval", "SECONDS", "print per-second rates every SECONDS",
	    NULL, 1, 3600),
	NUM(count, "count", "N", "with --interval: stop after N reports", "forever",
	    1, 1000000),
	END
};
#undef ARGS

#define ARGS struct xf_exporter_args
static const struct xf_opt exporter_opts[] = {
	STROPT(listen, "listen", "ADDR:PORT", "address to serve /metrics on "
	       "([ADDR6]:PORT, or :PORT for every address)",
	       XF_EXPORTER_LISTEN),
	FLAG(per_cpu, "per-cpu", "one sample per CPU (label cpu) instead of the sum"),
	END
};
#undef ARGS

#define ARGS struct xf_capture_args
static const struct xf_opt capture_opts[] = {
	{ .name = "write", .metavar = "FILE", .shortopt = 'w',
	  .help = "write pcapng to FILE, - for standard output (tcpdump -r -)",
	  .def = "-", .off = AT(write) },
	STROPT(reason, "reason", "LIST", "only these outcomes: counter names, or their "
	       "last word (overlap, timeout, evicted, refused, nomem, quota, "
	       "bad_header, too_long, too_many, ...), comma-separated", "all"),
	NUM(count, "count", "N", "stop after N packets written", "until Ctrl-C",
	    1, 1000000000),
	NUM(snaplen, "snaplen", "BYTES", "bytes of each frame kept", STR(XFRAG_CAP_SNAP),
	    64, XFRAG_CAP_SNAP),
	NUM(rate, "rate", "N", "records a second per CPU at most (the rest counted "
	    "in cap_lost)", STR(XFRAG_CAP_DEF_RATE), 1, 1000000),
	NUM(sample, "sample", "N", "one fragment in N", "1", 1, 1000000),
	FLAG(deliver, "deliver", "the datagrams rebuilt in the XDP frame too"),
	END
};
#undef ARGS

const struct xf_cmd xf_cmds[] = {
	{ .name = "attach", .args = "IFACE",
	  .summary = "load xfrag, size its maps, attach XDP and TC ingress, "
		     "pin maps under " XFRAG_PIN_ROOT "/IFACE/",
	  .opts = xf_attach_opts, .run = xf_cmd_attach, .min_args = 1,
	  .max_args = 1 },
	{ .name = "detach", .args = "IFACE",
	  .summary = "detach xfrag from IFACE and remove its pins",
	  .opts = none_opts, .run = xf_cmd_detach, .min_args = 1,
	  .max_args = 1 },
	{ .name = "status", .args = "",
	  .summary = "list interfaces with xfrag and their limits",
	  .opts = none_opts, .run = xf_cmd_status },
	{ .name = "config", .args = "IFACE key=value...",
	  .summary = "change the policy and limits of an attached instance "
		     "at run time",
	  .opts = none_opts, .run = xf_cmd_config, .min_args = 2,
	  .max_args = 16, .more_help = xf_config_keys },
	{ .name = "steer", .args = "IFACE",
	  .summary = "steer each datagram's fragments to one CPU for xfrag "
		     "loaded by xdp-loader (xfrag attach does it itself)",
	  .opts = steer_opts, .run = xf_cmd_steer, .min_args = 1,
	  .max_args = 1 },
	{ .name = "stats", .args = "IFACE",
	  .summary = "print xfrag's counters for IFACE (summed over CPUs)",
	  .opts = stats_opts, .run = xf_cmd_stats, .min_args = 1,
	  .max_args = 1 },
	{ .name = "capture", .args = "IFACE",
	  .summary = "write the fragments xfrag drops (and with --deliver "
		     "the datagrams it rebuilds) as pcapng, each with its "
		     "outcome in a comment",
	  .opts = capture_opts, .run = xf_cmd_capture, .min_args = 1,
	  .max_args = 1 },
	{ .name = "exporter", .args = "[IFACE...]",
	  .summary = "serve the counters of every attached interface (or of "
		     "those named) at /metrics for Prometheus",
	  .opts = exporter_opts, .run = xf_cmd_exporter, .max_args = 256 },
};
const size_t xf_ncmds = sizeof(xf_cmds) / sizeof(xf_cmds[0]);
