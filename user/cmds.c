// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xfrag CLI: the commands and their option tables (parsing, --help, and
 * the fuzz targets in tests/fuzz/ all use these).
 */
#include <stddef.h>
#include "common.h"

#define STR_(x) #x
#define STR(x) STR_(x)

#define NUM(n, mv, h, d, lo, hi) \
	{ .name = n, .metavar = mv, .help = h, .def = d, .min = lo, .max = hi }
#define STROPT(n, mv, h, d) { .name = n, .metavar = mv, .help = h, .def = d }
#define FLAG(n, h) { .name = n, .help = h }
#define END { .name = NULL }

static struct xf_opt attach_opts[] = {
	STROPT("mode", "native|skb", "XDP attach mode", "native"),
	NUM("buckets", "N", "table buckets per CPU",
	    "a power of 2 leaving 4 chunks of the budget each: " STR(XFRAG_DEF_BUCKETS) " at 2M",
	    1, XFRAG_MAX_BUCKETS),
	NUM("ways", "W", "ways (datagrams) per bucket", STR(XFRAG_DEF_WAYS),
	    1, XFRAG_MAX_WAYS),
	NUM("mem-per-cpu", "BYTES", "payload memory budget per CPU (k/M/G)",
	    "2M", XFRAG_MIN_MEM, XFRAG_MAX_MEM),
	NUM("timeout", "MS", "datagram time-out from its first fragment",
	    STR(XFRAG_DEF_TIMEOUT_MS), XFRAG_MIN_TIMEOUT_MS,
	    XFRAG_MAX_TIMEOUT_MS),
	NUM("max-frags", "N", "fragments per datagram",
	    STR(XFRAG_DEF_MAX_FRAGS), 1, XFRAG_MAX_DESC),
	STROPT("too-many", "pass|drop",
	       "a datagram beyond max-frags: to the kernel (held fragments "
	       "replayed; native mode with TC) or discarded", "pass"),
	FLAG("no-tc", "attach XDP only: it takes only datagrams it can rebuild in the frame"),
	STROPT("evict", "refuse|lru|progress",
	       "overload policy (see xfrag config --help)", "progress"),
	NUM("warm", "MS", "progress: spare datagrams that progressed this recently",
	    STR(XFRAG_DEF_WARM_MS), 0, 60000),
	NUM("mem-high", "BYTES", "evict above this per CPU (k/M/G)",
	    XFRAG_DEF_MEM_HIGH_TEXT, XFRAG_CHUNK, XFRAG_MAX_MEM),
	NUM("mem-low", "BYTES", "evict down to this per CPU",
	    XFRAG_DEF_MEM_LOW_TEXT, XFRAG_CHUNK, XFRAG_MAX_MEM),
	NUM("quota", "N", "in-flight datagrams per source per CPU (0: off)",
	    "0", 0, 65535),
	NUM("max-dist", "N", "id-wrap guard: IPv4 fragments of one flow after "
	    "which an incomplete datagram is stale (0: off)",
	    STR(XFRAG_DEF_MAX_DIST), 0, XFRAG_MAX_MAX_DIST),
	STROPT("steer", "auto|cpumap|rps|off",
	       "bring every fragment of a datagram to one CPU: cpumap (native "
	       "mode), rps (skb mode), off", "auto: cpumap in native mode, rps in skb mode"),
	STROPT("cpus", "LIST", "CPUs that own datagrams, e.g. 0-3,6",
	       "all online CPUs"),
	END
};

static struct xf_opt none_opts[] = { END };

static struct xf_opt steer_opts[] = {
	STROPT("cpus", "LIST", "CPUs that own datagrams, e.g. 0-3,6",
	       "all online CPUs"),
	FLAG("off", "stop steering (and clear RPS that steer set)"),
	FLAG("force", "steer although XDP programs run after xfrag in the "
	     "dispatcher (they would not see steered fragments)"),
	END
};

static struct xf_opt stats_opts[] = {
	FLAG("json", "print one JSON object"),
	FLAG("per-cpu", "show every CPU's values as well as the sum, and where fragments were received, steered and reassembled"),
	NUM("interval", "SECONDS", "print per-second rates every SECONDS",
	    NULL, 1, 3600),
	NUM("count", "N", "with --interval: stop after N reports", "forever",
	    1, 1000000),
	END
};

const struct xf_cmd xf_cmds[] = {
	{ .name = "attach", .args = "IFACE",
	  .summary = "load xfrag, size its maps, attach XDP and TC ingress, "
		     "pin maps under " XFRAG_PIN_ROOT "/IFACE/",
	  .opts = attach_opts, .run = xf_cmd_attach, .min_args = 1,
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
};
const size_t xf_ncmds = sizeof(xf_cmds) / sizeof(xf_cmds[0]);
