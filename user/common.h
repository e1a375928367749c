/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* xfrag CLI: shared helpers. */
#ifndef XFRAG_COMMON_H
#define XFRAG_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/types.h>
#include "xfrag.h"

/* Exit codes (documented in README and --help). */
enum {
	XF_EXIT_OK = 0,
	XF_EXIT_FAIL = 1,	/* anything else */
	XF_EXIT_USAGE = 2,	/* bad command, option or value */
	XF_EXIT_IFACE = 3,	/* unknown interface, already/not attached */
	XF_EXIT_BPF = 4,	/* load/attach failed, kernel lacks a feature */
	XF_EXIT_PERM = 5,	/* missing privileges */
};

#define XF_STR_(x) #x
#define XF_STR(x) XF_STR_(x)

/*
 * The run-time tunables, each once: `xfrag attach` options, `xfrag config`
 * keys (the same names), their ranges, defaults and help, the man page,
 * and their columns in `xfrag status`.
 *   N(key, metavar, help, default text, min, max, struct xfrag_config
 *     field, status column, its width)
 *   E(key, metavar, help, default text, field, column, width): a named
 *     value (xf_config_set)
 */
#define XF_TUNABLES(N, E)						\
	N("timeout", "MS", "datagram time-out from its first fragment",	\
	  XF_STR(XFRAG_DEF_TIMEOUT_MS), XFRAG_MIN_TIMEOUT_MS,		\
	  XFRAG_MAX_TIMEOUT_MS, timeout_ms, "timeout_ms", 10)		\
	N("max-frags", "N", "fragments per datagram",			\
	  XF_STR(XFRAG_DEF_MAX_FRAGS), 1, XFRAG_MAX_DESC, max_frags,	\
	  "frags", 6)							\
	E("too-many", "pass|drop",					\
	  "a datagram beyond max-frags: to the kernel (held fragments "	\
	  "replayed; native mode with TC) or discarded", "pass",	\
	  too_many, "too_many", -8)					\
	E("evict", "refuse|lru|progress",				\
	  "overload policy: a new datagram in a full bucket, memory "	\
	  "above mem-high", "progress", evict, "evict", -8)		\
	N("warm", "MS", "progress: spare datagrams that progressed this "	\
	  "recently", XF_STR(XFRAG_DEF_WARM_MS), 0, 60000, warm_ms,	\
	  "warm", 5)							\
	N("mem-high", "BYTES", "evict above this per CPU (k/M/G)",	\
	  XFRAG_DEF_MEM_HIGH_TEXT, XFRAG_CHUNK, XFRAG_MAX_MEM, mem_high,	\
	  "mem_high", 10)						\
	N("mem-low", "BYTES", "evict down to this per CPU (k/M/G)",	\
	  XFRAG_DEF_MEM_LOW_TEXT, XFRAG_CHUNK, XFRAG_MAX_MEM, mem_low,	\
	  "mem_low", 10)						\
	N("quota", "N", "in-flight datagrams per source (IPv6: /64) per "	\
	  "CPU (0: off)", "0", 0, 65535, quota, "quota", 5)		\
	N("max-dist", "N", "id-wrap guard: IPv4 fragments of one flow "	\
	  "after which an incomplete datagram is stale (0: off)",	\
	  XF_STR(XFRAG_DEF_MAX_DIST), 0, XFRAG_MAX_MAX_DIST, max_dist,	\
	  "max_dist", 8)

/* One run-time tunable, from XF_TUNABLES (user/config.c). */
struct xf_tunable {
	const char *key, *metavar, *help, *def;
	uint64_t min, max;	/* max 0: a named value */
	size_t off;		/* its __u32 field in struct xfrag_config */
	const char *col;	/* its column in `xfrag status` */
	int width;		/* the column's width; < 0: left-aligned */
};
extern const struct xf_tunable xf_tunables[];
extern const int xf_ntunables;
/* A tunable's value in effect (its default where cfg holds 0). */
void xf_tunable_show(const struct xf_tunable *t,
		     const struct xfrag_config *cfg, char *buf, size_t len);

/* A parsed option: given or not, its text, and its number (a numeric one). */
struct xf_val {
	bool set;
	const char *str;	/* NULL for a flag */
	uint64_t num;
};

/* The tunables by index into xf_tunables[] (XF_T_<config field>). */
#define XF_T_IDX_N(k, mv, h, d, lo, hi, field, col, w) XF_T_##field,
#define XF_T_IDX_E(k, mv, h, d, field, col, w) XF_T_##field,
enum { XF_TUNABLES(XF_T_IDX_N, XF_T_IDX_E) XF_NTUNABLES };
#undef XF_T_IDX_N
#undef XF_T_IDX_E

/*
 * What each command's options parse into (user/cmds.c ties every option
 * to its field): the commands read fields, never the tables.
 */
struct xf_attach_args {
	struct xf_val config, mode, buckets, ways, mem_per_cpu, no_tc;
	struct xf_val tune[XF_NTUNABLES];	/* as xf_tunables[] */
	struct xf_val steer, cpus;
};
struct xf_steer_args {
	struct xf_val cpus, off, force;
};
struct xf_stats_args {
	struct xf_val format, json, per_cpu, interval, count;
};
struct xf_exporter_args {
	struct xf_val listen, per_cpu;
};
struct xf_capture_args {
	struct xf_val write, reason, count, snaplen, rate, sample, deliver;
};
union xf_args {
	struct xf_attach_args attach;
	struct xf_steer_args steer;
	struct xf_stats_args stats;
	struct xf_exporter_args exporter;
	struct xf_capture_args capture;
};

/* One option of a command; the table drives parsing and --help. */
struct xf_opt {
	const char *name;	/* long name, without "--" */
	const char *metavar;	/* NULL: a flag without value */
	const char *help;
	const char *def;	/* default, shown in --help */
	uint64_t min, max;	/* range for numeric values (max 0: not numeric) */
	char shortopt;		/* a one-letter form too (-w), or 0 */
	size_t off;		/* its struct xf_val in the command's args */
};

/* Where option o of a command puts its value in that command's args. */
static inline struct xf_val *xf_val(const struct xf_opt *o, void *args)
{
	return (struct xf_val *)((char *)args + o->off);
}

struct xf_cmd {
	const char *name;
	const char *args;	/* positional arguments, for usage */
	const char *summary;
	const struct xf_opt *opts;	/* terminated by name == NULL */
	int (*run)(int argc, char **argv, union xf_args *a);
	int min_args, max_args;
	void (*more_help)(FILE *f);	/* after the options, or NULL */
};

extern int xf_verbose;

/* The commands, in user/cmds.c. */
extern const struct xf_cmd xf_cmds[];
extern const size_t xf_ncmds;

extern const struct xf_opt xf_attach_opts[];

/*
 * Parse argv (argv[0]: the command) against cmd->opts into *args (zeroed
 * first): 0 with *first_arg the index of the first positional argument
 * (argv is permuted), -EINVAL or -ERANGE with a message on stderr, or
 * XF_PARSE_HELP for -h/--help.
 */
#define XF_PARSE_HELP	1
int xf_parse(const struct xf_cmd *cmd, int argc, char **argv, int *first_arg,
	     union xf_args *args);
void xf_usage(FILE *f, const struct xf_cmd *cmd);
const struct xf_opt *xf_opt(const struct xf_opt *opts, const char *name);
bool xf_ifname_valid(const char *ifname);
int xf_ifindex(const char *ifname);
int xf_pin_path(char *buf, size_t len, const char *ifname, const char *map);
int xf_pin_dir(char *buf, size_t len, const char *ifname);
int xf_pin_open(const char *ifname, const char *map);
int xf_err_exit(int err);
int xf_parse_num(const char *s, uint64_t *out);
int xf_config_set(struct xfrag_config *cfg, const char *key, const char *val);
int xf_config_args(struct xfrag_config *cfg, int argc, char **argv);
const char *xf_evict_name(__u32 evict);
const char *xf_too_many_name(__u32 v);
void xf_config_keys(FILE *f);
void xf_stats_sum(struct xfrag_stats *sum, const struct xfrag_stats *v, int n);
int xf_read_stats(const char *ifname, struct xfrag_stats *sum,
		  struct xfrag_stats **percpu, int *ncpu);

/* Rendering (stats.c): pure functions of what was read from the maps. */
struct xf_prom_src {
	const char *ifname;
	const struct xfrag_stats *sum;
	const struct xfrag_stats *pc;	/* per CPU, or NULL: the sum only */
	int ncpu;
};
void xf_print_prometheus(FILE *f, const struct xf_prom_src *src, int n);
void xf_print_json(FILE *f, const struct xfrag_stats *sum,
		   const struct xfrag_stats *pc, int ncpu);
void xf_print_rates_json(FILE *f, const struct xfrag_stats *sum,
			 const struct xfrag_stats *pc, int ncpu,
			 const struct xfrag_stats *prev, double secs);
void xf_print_table(FILE *f, const char *ifname, const struct xfrag_stats *sum,
		    const struct xfrag_stats *pc, int ncpu,
		    const struct xfrag_stats *prev, double secs);
/* What status and attach say when the kernel cannot pin timers. */
#define XF_SWEEP_UNPINNED_NOTE						\
	"sweeper: unpinned, this kernel has no BPF_F_TIMER_CPU_PIN (6.7): a "	\
	"sweep runs on the CPU its timer fires on, on that CPU's table; a CPU "	\
	"left unswept for 1 s restarts its timer from its next fragment, and a "	\
	"CPU with neither keeps its timed-out datagrams until its next fragment"
const char *xf_pcpu_sweep(const struct xfrag_pcpu *pc, int n);
void xf_pcpu_verdict(const struct xfrag_pcpu *pc, int n, __u64 now,
		     bool tc_flag, const char **tc, const char **room);
void xf_status_header(FILE *f);
void xf_status_row(FILE *f, const char *ifname, unsigned int ifindex,
		   const struct xfrag_config *cfg, const char *tc,
		   const char *room);

/* Steering (steer.c). */
int xf_parse_cpus(const char *s, __u32 *cpus, int max);
int xf_online_cpus(__u32 *cpus, int max);
void xf_cpus_str(const __u32 *cpus, int n, char *buf, size_t len);
int xf_rps_set(const char *ifname, const __u32 *cpus, int n, const char **why);
int xf_rps_clear(const char *ifname);
const char *xf_steer_name(__u32 steer);
int xf_progs_after(int ifindex, char *names, size_t len);

/* Option files (conffile.c): /etc/xfrag/IFACE.conf for attach. */
#define XF_CONF_LINE_MAX	1024
#define XF_CONF_FILE_MAX	65536
#define XF_CONF_BAD_LINE	1
#define XF_CONF_DIR		"/etc/xfrag"
int xf_conf_parse(const char *text, size_t len, int *line,
		  int (*cb)(void *ctx, int line, const char *key,
			    const char *val),
		  void *ctx);
int xf_conf_apply(const char *path, const char *text, size_t len,
		  const struct xf_opt *opts, void *args, const char *skip);
int xf_conf_load(const char *path, const struct xf_opt *opts, void *args,
		 const char *skip);

/* What became of the instance pinned for IFACE (attach.c). */
enum { XF_INST_NONE, XF_INST_LIVE, XF_INST_GONE, XF_INST_STALE };
int xf_instance_state(const char *ifname);

int xf_cmd_attach(int argc, char **argv, union xf_args *a);
int xf_cmd_detach(int argc, char **argv, union xf_args *a);
int xf_cmd_status(int argc, char **argv, union xf_args *a);
int xf_cmd_stats(int argc, char **argv, union xf_args *a);
int xf_cmd_config(int argc, char **argv, union xf_args *a);
int xf_cmd_steer(int argc, char **argv, union xf_args *a);
int xf_cmd_exporter(int argc, char **argv, union xf_args *a);
int xf_cmd_capture(int argc, char **argv, union xf_args *a);
int xf_pcapng_header(FILE *f, const char *ifname, __u32 snaplen);
int xf_pcapng_packet(FILE *f, __u64 ts_ns, const void *data, __u32 caplen,
		     __u32 len, const char *comment);
void xf_cap_comment(char *buf, size_t len, __u64 moved, __u32 verdict,
		    __u32 cpu);
size_t xf_cap_key_frame(__u8 *b, const struct xfrag_key *k);
/* Where `xfrag exporter` listens unless told (this host only). */
#define XF_EXPORTER_LISTEN	"127.0.0.1:9477"

/* Counter metadata from the X-macro list. */
struct xf_counter {
	const char *name;
	const char *help;
	bool gauge;
	size_t off;
	__u64 bit;		/* XFRAG_CNT_BIT(): its bit in outcome masks */
};
extern const struct xf_counter xf_counters[];
extern const int xf_ncounters;

/* The data path's outcomes (XFRAG_OUTCOMES): for xfrag(8). */
struct xf_outcome {
	const char *name;
	const char *help;
	const char *verdict;	/* "DROP", "PASS" */
	__u64 counters;		/* XFRAG_CNT_BIT()s */
	bool discard;		/* the datagram held is discarded too */
};
extern const struct xf_outcome xf_outcomes[];
extern const int xf_noutcomes;

/* The exit codes with their meaning (usage, man page). */
struct xf_exit {
	int code;
	const char *meaning;
};
extern const struct xf_exit xf_exits[];
extern const int xf_nexits;

/* xfrag(8) in roff, from the tables above (user/man.c). */
void xf_man(FILE *f);

#endif
