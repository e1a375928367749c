// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xfrag attach / detach. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/ethtool.h>
#include <linux/magic.h>
#include <linux/sockios.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "common.h"
#include "xfrag.skel.h"
#include "probe.h"

/* Our TC-ingress filter: fixed handle and priority so detach finds it. */
#define XF_TC_HANDLE	0x7866
#define XF_TC_PRIO	1

static int print_fn(enum libbpf_print_level level, const char *fmt,
		    va_list ap)
{
	/* libxdp's fallback from the dispatcher to a single program logs
	 * load failures that are expected; our own messages say what failed. */
	if (!xf_verbose)
		return 0;
	(void)level;
	return vfprintf(stderr, fmt, ap);
}

static int xdp_print_fn(enum libxdp_print_level level, const char *fmt,
			va_list ap)
{
	return print_fn((enum libbpf_print_level)level, fmt, ap);
}

static void quiet_libs(void)
{
	libbpf_set_print(print_fn);
	libxdp_set_print(xdp_print_fn);
}

/* bpffs at /sys/fs/bpf; mount it when absent (e.g. inside `ip netns exec`). */
static int ensure_bpffs(void)
{
	struct statfs sf;

	if (!statfs("/sys/fs/bpf", &sf) && sf.f_type == BPF_FS_MAGIC)
		return 0;
	mkdir("/sys/fs/bpf", 0700);
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700"))
		return -errno;
	return 0;
}

/* Remove every pin in IFACE's folder (maps only: xfrag pins nothing else),
 * then the folder. */
static void unpin_all(const char *ifname)
{
	char dir[192], path[512];
	struct dirent *de;
	DIR *d;

	if (xf_pin_dir(dir, sizeof(dir), ifname))
		return;
	d = opendir(dir);
	if (d) {
		while ((de = readdir(d))) {
			if (!strncmp(de->d_name, "xfrag_", 6)) {
				snprintf(path, sizeof(path), "%s/%s", dir,
					 de->d_name);
				unlink(path);
			}
		}
		closedir(d);
	}
	rmdir(dir);
}

/*
 * Does the running kernel's BTF name this enum constant?  1 yes, 0 no, -1
 * when it has no BTF to tell.  Features of the UAPI are probed this way
 * (BPF_F_TIMER_CPU_PIN came with 6.7).
 */
static int kernel_has_enum_value(const char *name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	int found = 0;
	__u32 n;

	if (libbpf_get_error(btf))
		return -1;
	n = btf__type_cnt(btf);
	for (__u32 id = 1; id < n && !found; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);

		if (btf_is_enum(t)) {
			const struct btf_enum *e = btf_enum(t);

			for (int i = 0; i < btf_vlen(t) && !found; i++)
				found = !strcmp(btf__name_by_offset(btf,
						e[i].name_off), name);
		} else if (btf_is_enum64(t)) {
			const struct btf_enum64 *e = btf_enum64(t);

			for (int i = 0; i < btf_vlen(t) && !found; i++)
				found = !strcmp(btf__name_by_offset(btf,
						e[i].name_off), name);
		}
	}
	btf__free(btf);
	return found;
}

static int tc_attach(int ifindex, int prog_fd)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
			    .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = XF_TC_HANDLE,
			    .priority = XF_TC_PRIO, .prog_fd = prog_fd,
			    .flags = BPF_TC_F_REPLACE);
	int err = bpf_tc_hook_create(&hook);

	if (err && err != -EEXIST)
		return err;
	return bpf_tc_attach(&hook, &opts);
}

static int tc_detach(int ifindex)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
			    .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = XF_TC_HANDLE,
			    .priority = XF_TC_PRIO);

	return bpf_tc_detach(&hook, &opts);
}

/*
 * Open the object for the pin folder dir with its table geometry and hash
 * secret; only the programs named in `progs` (NULL-terminated) are loaded.
 * secret NULL: the object as built, as xdp-loader loads it (`xfrag steer`).
 * NULL on failure (said).
 */
static struct xfrag_bpf *open_obj(const char *dir, const __u64 *secret,
				  __u32 buckets, __u32 ways, __u32 nchunks,
				  const char *const *progs)
{
	/* libbpf pins every map by name in dir when it loads. */
	DECLARE_LIBBPF_OPTS(bpf_object_open_opts, oopts, .pin_root_path = dir);
	struct xfrag_bpf *skel = xfrag_bpf__open_opts(&oopts);
	struct bpf_program *p;
	int ncpu = libbpf_num_possible_cpus();

	if (!skel) {
		fprintf(stderr, "xfrag attach: cannot open BPF object: %s\n",
			strerror(errno));
		return NULL;
	}
	if (!secret)
		goto progs;
	skel->rodata->xfrag_secret[0] = secret[0];
	skel->rodata->xfrag_secret[1] = secret[1];
	skel->rodata->xfrag_buckets = buckets;
	skel->rodata->xfrag_ways = ways;
	skel->rodata->xfrag_nchunks = nchunks;
	/* XDP -> TC hand-off through metadata where this kernel allows it;
	 * otherwise TC finds each hand-off by key (bpf/maps.h). */
	skel->rodata->xfrag_use_meta = xf_probe_xdp_meta();
	if (bpf_map__set_max_entries(skel->maps.xfrag_table, buckets * ways) ||
	    bpf_map__set_max_entries(skel->maps.xfrag_chunks, nchunks) ||
	    bpf_map__set_max_entries(skel->maps.xfrag_free, nchunks) ||
	    ncpu <= 0 ||
	    bpf_map__set_max_entries(skel->maps.xfrag_cpumap, ncpu)) {
		fprintf(stderr, "xfrag attach: cannot size maps\n");
		xfrag_bpf__destroy(skel);
		return NULL;
	}
progs:
	bpf_object__for_each_program(p, skel->obj) {
		bool on = false;

		for (const char *const *n = progs; *n; n++)
			on |= !strcmp(bpf_program__name(p), *n);
		bpf_program__set_autoload(p, on);
	}
	return skel;
}

/* The object for attach: XDP and TC, and the libxdp program around it. */
static struct xfrag_bpf *open_skel(const char *dir, const __u64 *secret,
				   __u32 buckets, __u32 ways, __u32 nchunks,
				   struct xdp_program **progp)
{
	static const char *const progs[] = { "xfrag_xdp", "xfrag_tc", NULL };
	struct xfrag_bpf *skel = open_obj(dir, secret, buckets, ways, nchunks,
					  progs);
	struct xdp_program *prog;
	int err;

	*progp = NULL;
	if (!skel)
		return NULL;
	{
		DECLARE_LIBXDP_OPTS(xdp_program_opts, xopts, .obj = skel->obj,
				    .prog_name = "xfrag_xdp");
		prog = xdp_program__create(&xopts);
	}
	err = libxdp_get_error(prog);
	if (err) {
		fprintf(stderr, "xfrag attach: %s\n", strerror(-err));
		goto fail;
	}
	/* libbpf 1.1 adds BPF_F_XDP_HAS_FRAGS (SEC("xdp.frags")) only when
	 * it loads the program; libxdp decides before that whether the
	 * dispatcher takes multi-buffer frames.  Said here, a dispatcher
	 * built for xfrag takes jumbo frames (veth refuses an MTU above a
	 * page otherwise). */
	xdp_program__set_xdp_frags_support(prog, true);
	*progp = prog;
	return skel;
fail:
	xfrag_bpf__destroy(skel);
	return NULL;
}

/*
 * Steering through the cpumap: the owner list, then one cpumap entry per
 * owner CPU running the owner program from a second copy of the object
 * (its maps are the pinned ones).  A cpumap takes the multi-buffer setting
 * of the program redirecting into it: xfrag_owner (frags) fits xfrag_xdp
 * alone; under libxdp's dispatcher on 6.1 only xfrag_owner_nf is taken.
 * 0, or -errno with the reason said.
 */
static int steer_cpumap(const char *dir, const __u64 *secret, __u32 buckets,
			__u32 ways, __u32 nchunks, int cmfd, int ofd,
			const __u32 *cpus, int n, const char **variant)
{
	static const char *const names[2] = { "xfrag_owner", "xfrag_owner_nf" };
	int err = 0;

	for (int i = 0; i < n; i++) {
		__u32 slot = i;

		if (bpf_map_update_elem(ofd, &slot, &cpus[i], BPF_ANY)) {
			err = -errno;
			fprintf(stderr, "xfrag attach: owner list: %s\n",
				strerror(errno));
			return err;
		}
	}
	for (int v = 0; v < 2; v++) {
		const char *const progs[] = { names[v], NULL };
		struct bpf_cpumap_val val = { .qsize = XFRAG_CPUMAP_QSIZE };
		struct xfrag_bpf *o;
		struct bpf_program *p;
		int i;

		o = open_obj(dir, secret, buckets, ways, nchunks, progs);
		if (!o)
			return -EINVAL;
		p = bpf_object__find_program_by_name(o->obj, names[v]);
		err = p ? xfrag_bpf__load(o) : -ENOENT;
		if (err) {
			fprintf(stderr, "xfrag attach: cannot load %s: %s\n",
				names[v], strerror(-err));
			xfrag_bpf__destroy(o);
			return err;
		}
		val.bpf_prog.fd = bpf_program__fd(p);
		/* The first entry tells whether this variant fits. */
		if (bpf_map_update_elem(cmfd, &cpus[0], &val, BPF_ANY)) {
			err = -errno;
			xfrag_bpf__destroy(o);
			continue;
		}
		for (i = 1; i < n; i++) {
			if (bpf_map_update_elem(cmfd, &cpus[i], &val, BPF_ANY)) {
				err = -errno;
				break;
			}
		}
		xfrag_bpf__destroy(o);	/* the entries hold the program */
		if (i < n) {
			fprintf(stderr, "xfrag attach: cpumap entry for CPU %u: %s\n",
				cpus[i], strerror(-err));
			for (int j = 0; j < i; j++)
				bpf_map_delete_elem(cmfd, &cpus[j]);
			return err;
		}
		*variant = names[v];
		return 0;
	}
	fprintf(stderr, "xfrag attach: the cpumap takes neither owner program "
		"(%s)\n", strerror(-err));
	return err;
}

/*
 * The device's driver (ethtool) and MTU, asked in this network namespace
 * (sysfs may show another one).  0, or -1 when unknown.
 */
static int dev_driver_mtu(const char *ifname, char *drv, size_t len, int *mtu)
{
	struct ethtool_drvinfo info = { .cmd = ETHTOOL_GDRVINFO };
	struct ifreq ifr = {};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ok;

	if (fd < 0)
		return -1;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ok = !ioctl(fd, SIOCGIFMTU, &ifr);
	*mtu = ifr.ifr_mtu;
	ifr.ifr_data = (void *)&info;
	ok = ok && !ioctl(fd, SIOCETHTOOL, &ifr);
	close(fd);
	if (!ok)
		return -1;
	snprintf(drv, len, "%s", info.driver);
	return 0;
}

/*
 * The owner CPUs of `--cpus`, else the online ones, into cpus: their
 * number, or -XF_EXIT_* with the reason said (cmd names the command).
 */
static int owner_cpus(const struct xf_val *o, const char *cmd, __u32 *cpus)
{
	int n;

	if (o->set) {
		n = xf_parse_cpus(o->str, cpus, XFRAG_MAX_CPUS);
		if (n < 0 || (int)cpus[n - 1] >= libbpf_num_possible_cpus()) {
			fprintf(stderr, "xfrag %s: --cpus: not a list of this "
				"machine's CPUs: %s\n", cmd, o->str);
			return -XF_EXIT_USAGE;
		}
		return n;
	}
	n = xf_online_cpus(cpus, XFRAG_MAX_CPUS);
	if (n < 0) {
		fprintf(stderr, "xfrag %s: cannot read the online CPUs; give "
			"--cpus\n", cmd);
		return -XF_EXIT_FAIL;
	}
	return n;
}

static int find_xfrag_xdp(int ifindex, struct xdp_multiprog **mpp,
			  enum xdp_attach_mode *mode);
static int prog_map_by_name(int prog_fd, const char *name, __u32 *max_entries);

static __u32 map_id(int fd)
{
	struct bpf_map_info mi = {};
	__u32 len = sizeof(mi);

	return fd >= 0 && !bpf_obj_get_info_by_fd(fd, &mi, &len) ? mi.id : 0;
}

/*
 * Is the instance pinned under IFACE's folder still the one on IFACE?
 * XF_INST_LIVE: an xfrag_xdp program on the interface uses the pinned
 * xfrag_config.  XF_INST_GONE: no such interface (a container's veth, a
 * deleted namespace).  XF_INST_STALE: the interface is there (recreated,
 * or xfrag was taken off it by other means) without that program.
 * XF_INST_NONE: no pins.
 */
int xf_instance_state(const char *ifname)
{
	struct xdp_multiprog *mp = NULL;
	enum xdp_attach_mode mode;
	int ifindex, cfd, pfd, mfd, st = XF_INST_STALE;
	__u32 max;

	cfd = xf_pin_open(ifname, "xfrag_config");
	if (cfd < 0)
		return XF_INST_NONE;
	ifindex = if_nametoindex(ifname);
	if (!ifindex) {
		close(cfd);
		return XF_INST_GONE;
	}
	pfd = find_xfrag_xdp(ifindex, &mp, &mode);
	if (pfd >= 0) {
		mfd = prog_map_by_name(pfd, "xfrag_config", &max);
		if (mfd >= 0 && map_id(mfd) == map_id(cfd))
			st = XF_INST_LIVE;
		if (mfd >= 0)
			close(mfd);
	}
	if (mp)
		xdp_multiprog__close(mp);
	close(cfd);
	return st;
}

int xf_cmd_attach(int argc, char **argv, union xf_args *args)
{
	struct xf_attach_args *a = &args->attach;
	const char *ifname = argv[0];
	const struct xf_val *mode_o = &a->mode;
	enum xdp_attach_mode mode = XDP_MODE_NATIVE;
	__u32 buckets = XFRAG_DEF_BUCKETS, ways = XFRAG_DEF_WAYS;
	__u64 mem = XFRAG_DEF_MEM;
	struct xfrag_config cfg = {};
	struct xdp_program *prog = NULL;
	struct xfrag_bpf *skel = NULL;
	char dir[192], path[256];
	int ifindex, err, ret = XF_EXIT_BPF, cfd;
	bool tc = !a->no_tc.set;
	__u32 zero = 0, nchunks, steer = XFRAG_STEER_CPUMAP;
	const struct xf_val *steer_o = &a->steer;
	static __u32 cpus[XFRAG_MAX_CPUS];
	const char *variant = NULL, *why = NULL;
	char cpulist[256];
	int ncpus;
	__u64 secret[2];
	(void)argc;

	if (a->config.set &&
	    xf_conf_load(a->config.str, xf_attach_opts, a, "config"))
		return XF_EXIT_USAGE;
	if (mode_o->set) {
		if (!strcmp(mode_o->str, "native"))
			mode = XDP_MODE_NATIVE;
		else if (!strcmp(mode_o->str, "skb"))
			mode = XDP_MODE_SKB;
		else {
			fprintf(stderr, "xfrag attach: --mode must be native or skb\n");
			return XF_EXIT_USAGE;
		}
	}
	if (mode == XDP_MODE_SKB)
		steer = XFRAG_STEER_RPS;
	if (steer_o->set) {
		if (!strcmp(steer_o->str, "cpumap"))
			steer = XFRAG_STEER_CPUMAP;
		else if (!strcmp(steer_o->str, "rps"))
			steer = XFRAG_STEER_RPS;
		else if (!strcmp(steer_o->str, "off"))
			steer = XFRAG_STEER_OFF;
		else if (strcmp(steer_o->str, "auto")) {
			fprintf(stderr, "xfrag attach: --steer must be auto, "
				"cpumap, rps or off\n");
			return XF_EXIT_USAGE;
		}
	}
	if (steer == XFRAG_STEER_CPUMAP && mode == XDP_MODE_SKB) {
		/* Obstacle seen on 6.12 and 6.18: every skb a cpumap passes on
		 * after generic XDP is dropped by the IP layer (mac_len 0). */
		fprintf(stderr, "xfrag attach: --steer cpumap needs native mode: "
			"in skb mode the kernel drops what a cpumap passes on "
			"(6.12, 6.18); use --steer rps\n");
		return XF_EXIT_USAGE;
	}
	ncpus = owner_cpus(&a->cpus, "attach", cpus);
	if (ncpus < 0)
		return -ncpus;
	xf_cpus_str(cpus, ncpus, cpulist, sizeof(cpulist));
	if (a->buckets.set)
		buckets = a->buckets.num;
	if (a->ways.set)
		ways = a->ways.num;
	if (a->mem_per_cpu.set)
		mem = a->mem_per_cpu.num;
	nchunks = mem / XFRAG_CHUNK;
	if (!a->buckets.set) {
		/* Eviction looks only in the visited bucket: with the memory
		 * full, each should hold a few datagrams (include/xfrag.h). */
		buckets = 16;
		while (buckets * 2 <= nchunks / XFRAG_CHUNKS_PER_BUCKET &&
		       buckets * 2 <= XFRAG_MAX_BUCKETS)
			buckets *= 2;
	} else if (buckets > nchunks / 2) {
		fprintf(stderr, "xfrag attach: warning: %u buckets for %u chunks "
			"per CPU: under a flood, eviction within a bucket finds "
			"few victims (at least %u chunks a bucket advised)\n",
			buckets, nchunks, XFRAG_CHUNKS_PER_BUCKET);
	}
	if ((__u64)buckets * ways > (1U << 24)) {
		fprintf(stderr, "xfrag attach: buckets x ways must be at most %u\n",
			1U << 24);
		return XF_EXIT_USAGE;
	}
	cfg.timeout_ms = XFRAG_DEF_TIMEOUT_MS;
	cfg.max_frags = XFRAG_DEF_MAX_FRAGS;
	cfg.evict = XFRAG_DEF_EVICT;
	/* The run-time tunables given as options, as xfrag config sets them. */
	for (int i = 0; i < XF_NTUNABLES; i++) {
		const struct xf_val *v = &a->tune[i];

		if (v->set && xf_config_set(&cfg, xf_tunables[i].key, v->str))
			return XF_EXIT_USAGE;
	}
	if (cfg.mem_low && cfg.mem_high && cfg.mem_low > cfg.mem_high) {
		fprintf(stderr, "xfrag attach: --mem-low above --mem-high\n");
		return XF_EXIT_USAGE;
	}
	cfg.buckets = buckets;
	cfg.ways = ways;
	cfg.mem_per_cpu = mem;
	cfg.xdp_mode = mode;

	ifindex = xf_ifindex(ifname);
	if (!ifindex)
		return XF_EXIT_IFACE;
	if (geteuid() != 0) {
		fprintf(stderr, "xfrag attach: needs root (CAP_BPF, CAP_NET_ADMIN)\n");
		return XF_EXIT_PERM;
	}
	err = ensure_bpffs();
	if (err) {
		fprintf(stderr, "xfrag attach: cannot mount bpffs: %s\n",
			strerror(-err));
		return xf_err_exit(err);
	}
	if (xf_pin_path(path, sizeof(path), ifname, "xfrag_stats") ||
	    xf_pin_dir(dir, sizeof(dir), ifname)) {
		fprintf(stderr, "xfrag attach: no pin path for '%s'\n", ifname);
		return XF_EXIT_IFACE;
	}
	if (!access(path, F_OK)) {
		int st = xf_instance_state(ifname);

		if (st == XF_INST_LIVE || st == XF_INST_NONE) {
			fprintf(stderr, "xfrag attach: already attached to %s (%s exists)\n",
				ifname, dir);
			return XF_EXIT_IFACE;
		}
		/* Pins left by an instance whose interface vanished (and
		 * came back, as this one), or whose XDP program someone
		 * removed: nothing uses them any more. */
		quiet_libs();
		tc_detach(ifindex);	/* a TC half left alone, if any */
		unpin_all(ifname);
		printf("xfrag: removed the stale instance of %s (%s), left by "
		       "an earlier attach: %s\n", ifname, dir,
		       st == XF_INST_GONE ? "the interface was gone" :
		       "its XDP program is no longer on the interface");
	}
	quiet_libs();

	mkdir(XFRAG_PIN_ROOT, 0700);
	if (mkdir(dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "xfrag attach: mkdir %s: %s\n", dir, strerror(errno));
		return XF_EXIT_FAIL;
	}
	if (getrandom(secret, sizeof(secret), 0) != sizeof(secret)) {
		fprintf(stderr, "xfrag attach: getrandom: %s\n", strerror(errno));
		goto out;
	}
	secret[1] |= 1;
	if (getrandom(cfg.steer_key, sizeof(cfg.steer_key), 0) !=
	    sizeof(cfg.steer_key)) {
		fprintf(stderr, "xfrag attach: getrandom: %s\n", strerror(errno));
		goto out;
	}
	skel = open_skel(dir, secret, buckets, ways, nchunks, &prog);
	if (!skel)
		goto out;
	err = xdp_program__attach(prog, ifindex, mode, 0);
	if (err && err != -EEXIST && err != -EBUSY && err != -EPERM &&
	    !getenv("LIBXDP_SKIP_DISPATCHER")) {
		/* The dispatcher may refuse xfrag where a single program loads
		 * (6.12: "Extension program changes packet data, while
		 * original does not"); libxdp does not fall back by itself.
		 * An object that failed to load cannot be loaded again: a
		 * fresh one, as a single program. */
		char buf[256];

		libxdp_strerror(err, buf, sizeof(buf));
		xdp_program__close(prog);
		prog = NULL;
		xfrag_bpf__destroy(skel);
		setenv("LIBXDP_SKIP_DISPATCHER", "1", 1);
		skel = open_skel(dir, secret, buckets, ways, nchunks, &prog);
		if (!skel)
			goto out;
		err = xdp_program__attach(prog, ifindex, mode, 0);
		if (!err)
			printf("xfrag: the libxdp dispatcher refused xfrag (%s): "
			       "attached as a single XDP program; other XDP "
			       "programs cannot share %s\n", buf, ifname);
	}
	if (err) {
		char buf[256];

		libxdp_strerror(err, buf, sizeof(buf));
		fprintf(stderr, "xfrag attach: XDP attach to %s (%s mode) failed: %s\n",
			ifname, mode == XDP_MODE_SKB ? "skb" : "native", buf);
		if (err == -EEXIST || err == -EBUSY)
			ret = XF_EXIT_IFACE;
		else if (err == -EPERM)
			ret = XF_EXIT_PERM;
		goto out;
	}

	/* The object is loaded now: configure, then add the TC half. */
	cfd = bpf_map__fd(skel->maps.xfrag_config);
	if (bpf_map_update_elem(cfd, &zero, &cfg, BPF_ANY)) {
		fprintf(stderr, "xfrag attach: cannot write config: %s\n",
			strerror(errno));
		goto detach;
	}
	if (tc) {
		err = tc_attach(ifindex, bpf_program__fd(skel->progs.xfrag_tc));
		if (err) {
			fprintf(stderr, "xfrag attach: TC ingress attach failed: %s\n",
				strerror(-err));
			goto detach;
		}
		cfg.flags |= XFRAG_CFG_TC;
		/* Generic XDP would see replayed fragments again. */
		if (mode != XDP_MODE_SKB)
			cfg.flags |= XFRAG_CFG_REPLAY;
		bpf_map_update_elem(cfd, &zero, &cfg, BPF_ANY);
	}

	/* Steering last: fragments reach their owner only once everything
	 * else is in place.  A mechanism that cannot be set up fails the
	 * attach: steering never turns itself off silently. */
	if (steer == XFRAG_STEER_CPUMAP) {
		/* A fragment steered through the cpumap leaves the libxdp
		 * dispatcher, so the programs after xfrag would see neither
		 * it nor its datagram: a filter there would be bypassed.
		 * Unless asked for by name, steering is off then. */
		char after[256];
		bool asked = steer_o->set && !strcmp(steer_o->str, "cpumap");

		if (xf_progs_after(ifindex, after, sizeof(after)) > 0) {
			if (asked) {
				printf("xfrag: warning: XDP programs run after "
				       "xfrag in the dispatcher (%s): fragments "
				       "steered to their owner CPU and the "
				       "datagrams rebuilt from them skip them "
				       "(--steer cpumap)\n", after);
			} else {
				printf("xfrag: XDP programs run after xfrag in "
				       "the dispatcher (%s): steering through "
				       "the cpumap would take fragments past "
				       "them, so it is off (--steer cpumap "
				       "steers anyway)\n", after);
				steer = XFRAG_STEER_OFF;
			}
		}
	}
	cfg.steer = steer;
	if (steer == XFRAG_STEER_CPUMAP) {
		err = steer_cpumap(dir, secret, buckets, ways, nchunks,
				   bpf_map__fd(skel->maps.xfrag_cpumap),
				   bpf_map__fd(skel->maps.xfrag_owners),
				   cpus, ncpus, &variant);
		if (err) {
			fprintf(stderr, "xfrag attach: steering through a cpumap "
				"failed; --steer off attaches without it\n");
			goto detach;
		}
		cfg.steer_ncpus = ncpus;
		cfg.flags |= XFRAG_CFG_STEER;
	} else if (steer == XFRAG_STEER_RPS) {
		int r = xf_rps_set(ifname, cpus, ncpus, &why);

		if (r < 0) {
			fprintf(stderr, "xfrag attach: RPS for steering: %s; "
				"--steer off attaches without it\n", why);
			goto detach;
		}
		cfg.steer = r;
		cfg.steer_ncpus = ncpus;
	}
	if (bpf_map_update_elem(cfd, &zero, &cfg, BPF_ANY)) {
		fprintf(stderr, "xfrag attach: cannot write config: %s\n",
			strerror(errno));
		if (cfg.steer == XFRAG_STEER_RPS_OURS)
			xf_rps_clear(ifname);
		goto detach;
	}
	switch (cfg.steer) {
	case XFRAG_STEER_CPUMAP:
		printf("xfrag: steering: each datagram's fragments go to its "
		       "owner CPU among %s through a cpumap (%s)\n", cpulist,
		       variant);
		break;
	case XFRAG_STEER_RPS_OURS:
		printf("xfrag: steering: RPS set on %s's receive queues to CPUs "
		       "%s (detach clears it)\n", ifname, cpulist);
		break;
	case XFRAG_STEER_RPS:
		printf("xfrag: steering: RPS was already set on %s: left as it "
		       "is, it keeps each datagram on one CPU\n", ifname);
		break;
	default:
		printf("xfrag: steering off: a datagram whose fragments arrive "
		       "on two CPUs is held as two halves until its time-out\n");
		break;
	}
	if (kernel_has_enum_value("BPF_F_TIMER_CPU_PIN") == 0)
		printf("xfrag: %s\n", XF_SWEEP_UNPINNED_NOTE);
	{
		char drv[32];
		int mtu = 0;

		/* Measured in the test VM (README "Real driver"): virtio-net
		 * on 6.12 drops frames beyond one receive buffer in native
		 * XDP, a do-nothing program's too, before any program can
		 * count them (rx_dropped). */
		if (mode != XDP_MODE_SKB &&
		    !dev_driver_mtu(ifname, drv, sizeof(drv), &mtu) &&
		    !strcmp(drv, "virtio_net") && mtu > 3500)
			printf("xfrag: warning: %s is virtio_net with MTU %d: in "
			       "native mode the driver drops some frames beyond "
			       "one receive buffer before XDP sees them "
			       "(counted in its rx_dropped); --mode skb does "
			       "not\n", ifname, mtu);
	}
	printf("xfrag: attached to %s (XDP %s mode%s), maps pinned in %s\n",
	       ifname, mode == XDP_MODE_SKB ? "skb" : "native",
	       !tc ? ", no TC" : (cfg.flags & XFRAG_CFG_REPLAY) ?
	       ", TC ingress, replay beyond one skb" : ", TC ingress", dir);
	ret = XF_EXIT_OK;
	goto out;

detach:
	xdp_program__detach(prog, ifindex, mode, 0);
out:
	if (ret != XF_EXIT_OK)
		unpin_all(ifname);
	xdp_program__close(prog);
	xfrag_bpf__destroy(skel);
	return ret;
}

/* Find and detach our XDP program, alone or under the dispatcher. */
static int xdp_detach(int ifindex)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p = NULL;
	int err = -ENOENT;

	if (libxdp_get_error(mp))
		return -ENOENT;
	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		if (p && !strcmp(xdp_program__name(p), "xfrag_xdp"))
			err = xdp_multiprog__detach(mp);
	} else {
		while ((p = xdp_multiprog__next_prog(p, mp))) {
			if (strcmp(xdp_program__name(p), "xfrag_xdp"))
				continue;
			err = xdp_program__detach(p, ifindex,
						  xdp_multiprog__attach_mode(mp), 0);
			break;
		}
	}
	xdp_multiprog__close(mp);
	return err;
}

int xf_cmd_detach(int argc, char **argv, union xf_args *args)
{
	const char *ifname = argv[0];
	char dir[192];
	int ifindex, e1, e2;
	(void)argc;
	(void)args;

	if (geteuid() != 0) {
		fprintf(stderr, "xfrag detach: needs root\n");
		return XF_EXIT_PERM;
	}
	/* Only an interface name may lead to a directory to remove. */
	if (xf_pin_dir(dir, sizeof(dir), ifname)) {
		fprintf(stderr, "xfrag: unknown interface '%s'\n", ifname);
		return XF_EXIT_IFACE;
	}
	quiet_libs();
	ifindex = if_nametoindex(ifname);
	if (!ifindex) {
		/* The interface is gone: only the pins can be left over. */
		if (!access(dir, F_OK)) {
			unpin_all(ifname);
			printf("xfrag: %s is gone; removed %s\n", ifname, dir);
			return XF_EXIT_OK;
		}
		fprintf(stderr, "xfrag: unknown interface '%s'\n", ifname);
		return XF_EXIT_IFACE;
	}
	{
		struct xfrag_config cfg = {};
		__u32 zero = 0;
		int fd = xf_pin_open(ifname, "xfrag_config");

		if (fd >= 0 && !bpf_map_lookup_elem(fd, &zero, &cfg) &&
		    cfg.steer == XFRAG_STEER_RPS_OURS) {
			if (xf_rps_clear(ifname))
				fprintf(stderr, "xfrag detach: could not clear "
					"the RPS attach set on %s\n", ifname);
			else
				printf("xfrag: RPS cleared on %s\n", ifname);
		}
		if (fd >= 0)
			close(fd);
	}
	e1 = xdp_detach(ifindex);
	e2 = tc_detach(ifindex);
	if (e1 && e2 && access(dir, F_OK)) {
		fprintf(stderr, "xfrag detach: xfrag is not attached to %s\n",
			ifname);
		return XF_EXIT_IFACE;
	}
	unpin_all(ifname);
	printf("xfrag: detached from %s\n", ifname);
	return XF_EXIT_OK;
}

/*
 * The fd of xfrag_xdp on ifindex (alone or under the dispatcher), with
 * the attach mode; -1 when it is not there.  The caller closes mp.
 */
static int find_xfrag_xdp(int ifindex, struct xdp_multiprog **mpp,
			  enum xdp_attach_mode *mode)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p = NULL;

	*mpp = NULL;
	if (libxdp_get_error(mp) || !mp)
		return -1;
	*mpp = mp;
	*mode = xdp_multiprog__attach_mode(mp);
	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		return p && !strcmp(xdp_program__name(p), "xfrag_xdp") ?
			xdp_program__fd(p) : -1;
	}
	while ((p = xdp_multiprog__next_prog(p, mp)))
		if (!strcmp(xdp_program__name(p), "xfrag_xdp"))
			return xdp_program__fd(p);
	return -1;
}

/* The fd of the map named `name` that program prog_fd uses; -1: none. */
static int prog_map_by_name(int prog_fd, const char *name, __u32 *max_entries)
{
	__u32 ids[64], len;
	struct bpf_prog_info info = {};
	int fd = -1;

	len = sizeof(info);
	info.nr_map_ids = 64;
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -1;
	for (__u32 i = 0; i < info.nr_map_ids && i < 64 && fd < 0; i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi);
		int m = bpf_map_get_fd_by_id(ids[i]);

		if (m < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(m, &mi, &mlen) &&
		    !strcmp(mi.name, name)) {
			fd = m;
			*max_entries = mi.max_entries;
		} else {
			close(m);
		}
	}
	return fd;
}

/*
 * xfrag steer IFACE: steering for an instance loaded by xdp-loader (and
 * tc), which nobody else sets up: the owner list, the cpumap found through
 * xfrag_xdp's own maps (it is not pinned) with the owner program of the
 * object as built, a fresh owner-hash key, then the STEER flag.  In skb
 * mode RPS instead, as `xfrag attach` does.  --off undoes it.
 */
int xf_cmd_steer(int argc, char **argv, union xf_args *args)
{
	const struct xf_steer_args *a = &args->steer;
	const char *ifname = argv[0], *variant = NULL, *why = NULL;
	bool off = a->off.set;
	static __u32 cpus[XFRAG_MAX_CPUS];
	struct xdp_multiprog *mp = NULL;
	enum xdp_attach_mode mode = XDP_MODE_NATIVE;
	struct xfrag_config cfg = {};
	int ifindex, cfd = -1, pfd, cmfd = -1, ofd = -1, ncpus, ret = XF_EXIT_FAIL;
	__u32 zero = 0, cmsize = 0;
	char dir[192], cpulist[256], after[256];
	(void)argc;

	if (geteuid() != 0) {
		fprintf(stderr, "xfrag steer: needs root\n");
		return XF_EXIT_PERM;
	}
	if (xf_pin_dir(dir, sizeof(dir), ifname) ||
	    !(ifindex = if_nametoindex(ifname))) {
		fprintf(stderr, "xfrag: unknown interface '%s'\n", ifname);
		return XF_EXIT_IFACE;
	}
	quiet_libs();
	cfd = xf_pin_open(ifname, "xfrag_config");
	if (cfd < 0 || bpf_map_lookup_elem(cfd, &zero, &cfg)) {
		fprintf(stderr, "xfrag steer: xfrag's maps are not pinned under "
			"%s (load it with xdp-loader load -p %s)\n", dir, dir);
		ret = XF_EXIT_IFACE;
		goto out;
	}
	if (cfg.buckets) {
		fprintf(stderr, "xfrag steer: %s was attached by xfrag attach, "
			"which set its steering up (%s); attach again with "
			"--steer to change it\n", ifname,
			xf_steer_name(cfg.steer));
		ret = XF_EXIT_USAGE;
		goto out;
	}
	pfd = find_xfrag_xdp(ifindex, &mp, &mode);
	if (pfd < 0) {
		fprintf(stderr, "xfrag steer: xfrag_xdp is not attached to %s\n",
			ifname);
		ret = XF_EXIT_IFACE;
		goto out;
	}
	if (off) {
		cfg.flags &= ~XFRAG_CFG_STEER;
		if (cfg.steer == XFRAG_STEER_RPS_OURS && xf_rps_clear(ifname))
			fprintf(stderr, "xfrag steer: could not clear RPS on %s\n",
				ifname);
		cfg.steer = XFRAG_STEER_OFF;
		cfg.steer_ncpus = 0;
		if (bpf_map_update_elem(cfd, &zero, &cfg, BPF_ANY)) {
			fprintf(stderr, "xfrag steer: cannot write config: %s\n",
				strerror(errno));
			goto out;
		}
		cmfd = prog_map_by_name(pfd, "xfrag_cpumap", &cmsize);
		for (__u32 c = 0; cmfd >= 0 && c < cmsize; c++)
			bpf_map_delete_elem(cmfd, &c);
		printf("xfrag: steering off on %s\n", ifname);
		ret = XF_EXIT_OK;
		goto out;
	}
	ncpus = owner_cpus(&a->cpus, "steer", cpus);
	if (ncpus < 0) {
		ret = -ncpus;
		goto out;
	}
	if (getrandom(cfg.steer_key, sizeof(cfg.steer_key), 0) !=
	    sizeof(cfg.steer_key)) {
		fprintf(stderr, "xfrag steer: getrandom: %s\n", strerror(errno));
		goto out;
	}
	if (mode == XDP_MODE_SKB) {
		int r = xf_rps_set(ifname, cpus, ncpus, &why);

		if (r < 0) {
			fprintf(stderr, "xfrag steer: RPS: %s\n", why);
			goto out;
		}
		xf_cpus_str(cpus, ncpus, cpulist, sizeof(cpulist));
		cfg.flags &= ~XFRAG_CFG_STEER;
		cfg.steer = r;
		cfg.steer_ncpus = ncpus;
		variant = "RPS";
	} else {
		int n = 0;

		if (xf_progs_after(ifindex, after, sizeof(after)) > 0 &&
		    !a->force.set) {
			fprintf(stderr, "xfrag steer: XDP programs run after "
				"xfrag in the dispatcher on %s (%s): fragments "
				"steered through the cpumap would skip them; "
				"--force steers anyway\n", ifname, after);
			ret = XF_EXIT_USAGE;
			goto out;
		}
		cmfd = prog_map_by_name(pfd, "xfrag_cpumap", &cmsize);
		ofd = xf_pin_open(ifname, "xfrag_owners");
		if (cmfd < 0 || ofd < 0) {
			fprintf(stderr, "xfrag steer: cannot find xfrag_xdp's "
				"cpumap and owner list on %s\n", ifname);
			goto out;
		}
		/* Owners: the CPUs the cpumap as built can address. */
		for (int i = 0; i < ncpus; i++)
			if (cpus[i] < cmsize)
				cpus[n++] = cpus[i];
		if (n < ncpus)
			printf("xfrag: steer: the object's cpumap addresses "
			       "CPUs below %u: %d of the CPUs own datagrams\n",
			       cmsize, n);
		if (!n) {
			fprintf(stderr, "xfrag steer: no CPU of the list is "
				"below %u\n", cmsize);
			ret = XF_EXIT_USAGE;
			goto out;
		}
		ncpus = n;
		xf_cpus_str(cpus, ncpus, cpulist, sizeof(cpulist));
		/* The object as built: xdp-loader's geometry and hand-off. */
		if (steer_cpumap(dir, NULL, 0, 0, 0, cmfd, ofd, cpus, ncpus,
				 &variant))
			goto out;
		cfg.steer = XFRAG_STEER_CPUMAP;
		cfg.steer_ncpus = ncpus;
		cfg.flags |= XFRAG_CFG_STEER;
	}
	if (bpf_map_update_elem(cfd, &zero, &cfg, BPF_ANY)) {
		fprintf(stderr, "xfrag steer: cannot write config: %s\n",
			strerror(errno));
		goto out;
	}
	printf("xfrag: steering on %s: each datagram's fragments go to its "
	       "owner CPU among %s (%s)\n", ifname, cpulist, variant);
	ret = XF_EXIT_OK;
out:
	if (mp)
		xdp_multiprog__close(mp);
	if (cmfd >= 0)
		close(cmfd);
	if (ofd >= 0)
		close(ofd);
	if (cfd >= 0)
		close(cfd);
	return ret;
}
