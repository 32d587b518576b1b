// SPDX-License-Identifier: GPL-2.0
/*
 * fastlab-cc - register, tune and observe the fastlab BPF congestion
 * controls (fast, hstcp).
 *
 *   fastlab-cc register   NAME
 *   fastlab-cc unregister NAME
 *   fastlab-cc set        NAME key=value... [NETNS] | NAME NETNS --clear
 *   fastlab-cc get        NAME [NETNS]
 *   fastlab-cc events     NAME [--netns INO[,INO...]] [--duration-s D]
 *   fastlab-cc table      [hstcp] [key=value...] [--c]
 *
 *   NETNS: --netns-ino N | --netns-pid PID | --netns-name NAME (ip netns)
 *
 * Every command prints JSON on stdout (events: one object per line) and
 * diagnostics on stderr. Exit codes: 0 done (including "already
 * registered" / "not registered" for register / unregister), 1 system or
 * BPF error, 2 usage or out-of-range value (nothing changed), 3 NAME is not
 * registered by fastlab-cc (set/get/events) or not owned by it (unregister).
 *
 * Maps are pinned under /sys/fs/bpf/fastlab/NAME/ (see bpf/fastlab_bpf.h);
 * every command but register works from those pins, so it does not matter
 * which process registered the algorithm.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <linux/magic.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "../core/fast_core.h"
#include "../core/hstcp_core.h"
#include "../bpf/fastlab_bpf.h"
#include "cc_tool.h"
#include "hstcp_table.h"
#include "fast.skel.h"
#include "hstcp.skel.h"

#define AVAILABLE_CC	"/proc/sys/net/ipv4/tcp_available_congestion_control"

enum algo { ALGO_FAST, ALGO_HSTCP };

static const char *const algo_names[] = { "fast", "hstcp" };

static const char *const fast_pins[] = {
	FASTLAB_PIN_OPS, FASTLAB_PIN_PARAMS, FASTLAB_PIN_NETNS,
	FASTLAB_PIN_EVENTS, FASTLAB_PIN_RINGS, FASTLAB_PIN_RODATA, NULL
};

static const char *const hstcp_pins[] = {
	FASTLAB_PIN_OPS, FASTLAB_PIN_PARAMS, FASTLAB_PIN_NETNS,
	FASTLAB_PIN_EVENTS, FASTLAB_PIN_RINGS, FASTLAB_PIN_TABLE, NULL
};

static const char *const *algo_pins(enum algo a)
{
	return a == ALGO_FAST ? fast_pins : hstcp_pins;
}

/* ---- diagnostics ------------------------------------------------------ */

/* libbpf's messages are kept and only shown when something fails. */
static char libbpf_log_buf[64 * 1024];
static size_t libbpf_log_len;
static bool verbose;

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	int n;

	if (verbose)
		return vfprintf(stderr, fmt, ap);
	if (level == LIBBPF_DEBUG)
		return 0;
	if (libbpf_log_len >= sizeof(libbpf_log_buf) - 1)
		return 0;
	n = vsnprintf(libbpf_log_buf + libbpf_log_len,
		      sizeof(libbpf_log_buf) - libbpf_log_len, fmt, ap);
	if (n > 0)
		libbpf_log_len = CC_MIN_U64(libbpf_log_len + n,
					    sizeof(libbpf_log_buf) - 1);
	return 0;
}

static void dump_libbpf_log(void)
{
	size_t start = 0;

	if (!libbpf_log_len)
		return;
	if (libbpf_log_len > 4000)	/* the verifier's verdict is at the end */
		start = libbpf_log_len - 4000;
	fprintf(stderr, "--- libbpf log (tail) ---\n%s\n",
		libbpf_log_buf + start);
}

/* ---- bpffs and pins ---------------------------------------------------- */

static void pin_dir(enum algo a, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%s", FASTLAB_PIN_ROOT, algo_names[a]);
}

static void pin_path(enum algo a, const char *pin, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%s/%s", FASTLAB_PIN_ROOT, algo_names[a], pin);
}

static bool bpffs_mounted(void)
{
	struct statfs st;

	return statfs(FASTLAB_BPFFS, &st) == 0 && st.f_type == BPF_FS_MAGIC;
}

/* Mount bpffs if needed; returns true when this call mounted it. */
static bool ensure_bpffs(void)
{
	if (bpffs_mounted())
		return false;
	if (mount("bpf", FASTLAB_BPFFS, "bpf", 0, NULL))
		die(EXIT_ERR, "cannot mount bpffs on %s: %s", FASTLAB_BPFFS,
		    strerror(errno));
	return true;
}

static void make_pin_dir(enum algo a)
{
	char d[256];

	if (mkdir(FASTLAB_PIN_ROOT, 0700) && errno != EEXIST)
		die(EXIT_ERR, "mkdir %s: %s", FASTLAB_PIN_ROOT, strerror(errno));
	pin_dir(a, d, sizeof(d));
	if (mkdir(d, 0700) && errno != EEXIST)
		die(EXIT_ERR, "mkdir %s: %s", d, strerror(errno));
}

static bool pin_exists(enum algo a, const char *pin)
{
	char p[256];

	pin_path(a, pin, p, sizeof(p));
	return access(p, F_OK) == 0;
}

static int open_pin(enum algo a, const char *pin)
{
	char p[256];

	pin_path(a, pin, p, sizeof(p));
	return bpf_obj_get(p);
}

/* Remove every pin and the directories; returns the number removed. */
static int unpin_all(enum algo a)
{
	const char *const *pin;
	char p[256];
	int n = 0;

	for (pin = algo_pins(a); *pin; pin++) {
		pin_path(a, *pin, p, sizeof(p));
		if (unlink(p) == 0)
			n++;
	}
	pin_dir(a, p, sizeof(p));
	rmdir(p);
	rmdir(FASTLAB_PIN_ROOT);	/* only if empty */
	return n;
}

/* Is @name listed in tcp_available_congestion_control? */
static bool cc_available(const char *name)
{
	char line[1024], *tok, *save = NULL;
	FILE *f = fopen(AVAILABLE_CC, "r");
	bool found = false;

	if (!f)
		return false;
	if (fgets(line, sizeof(line), f))
		for (tok = strtok_r(line, " \t\n", &save); tok;
		     tok = strtok_r(NULL, " \t\n", &save))
			if (!strcmp(tok, name))
				found = true;
	fclose(f);
	return found;
}

static int pin_fd_or_die(enum algo a, const char *pin)
{
	int fd = open_pin(a, pin);

	if (fd < 0) {
		char p[256];

		pin_path(a, pin, p, sizeof(p));
		if (errno == ENOENT)
			die(EXIT_NOT_REGISTERED,
			    "%s is not registered by fastlab-cc (no %s); run: fastlab-cc register %s",
			    algo_names[a], p, algo_names[a]);
		die(EXIT_ERR, "open %s: %s", p, strerror(errno));
	}
	return fd;
}

/* ---- netns selection --------------------------------------------------- */

static u32 netns_ino_of(const char *path, const char *what)
{
	struct stat st;

	if (stat(path, &st))
		die(EXIT_USAGE, "%s: cannot stat %s: %s", what, path,
		    strerror(errno));
	return (u32)st.st_ino;
}

/*
 * Parse a NETNS option at argv[*i]; returns true if it was one. Sets
 * *have and *ino.
 */
static bool parse_netns_opt(int argc, char **argv, int *i, bool *have, u32 *ino)
{
	const char *o = argv[*i];
	char path[512];
	unsigned long long u;

	if (strcmp(o, "--netns-ino") && strcmp(o, "--netns-pid") &&
	    strcmp(o, "--netns-name"))
		return false;
	if (*i + 1 >= argc)
		die(EXIT_USAGE, "%s needs a value", o);
	(*i)++;
	if (!strcmp(o, "--netns-ino")) {
		if (!parse_u64(argv[*i], &u) || u == 0 || u > 0xffffffffULL)
			die(EXIT_USAGE, "--netns-ino=%s: out of range: inode number 1..4294967295 (stat -L -c %%i /proc/PID/ns/net)",
			    argv[*i]);
		*ino = (u32)u;
	} else if (!strcmp(o, "--netns-pid")) {
		if (!parse_u64(argv[*i], &u) || u == 0)
			die(EXIT_USAGE, "--netns-pid=%s: not a PID", argv[*i]);
		snprintf(path, sizeof(path), "/proc/%llu/ns/net", u);
		*ino = netns_ino_of(path, "--netns-pid");
	} else {
		snprintf(path, sizeof(path), "/run/netns/%s", argv[*i]);
		*ino = netns_ino_of(path, "--netns-name");
	}
	*have = true;
	return true;
}

static enum algo parse_algo(const char *s)
{
	if (!strcmp(s, "fast"))
		return ALGO_FAST;
	if (!strcmp(s, "hstcp"))
		return ALGO_HSTCP;
	die(EXIT_USAGE, "unknown algorithm '%s' (fast | hstcp)", s);
}

/* ---- map access -------------------------------------------------------- */

static void read_fast_global(int fd, struct fast_params *p)
{
	u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, p) || !p->set_mask)
		fast_params_default(p);
}

static void read_hstcp_global(int fd, struct hstcp_params *p)
{
	u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, p) || !p->set_mask)
		hstcp_params_default(p);
}

static void map_update_or_die(int fd, const void *key, const void *val,
			      const char *what)
{
	if (bpf_map_update_elem(fd, key, val, BPF_ANY))
		die(EXIT_ERR, "writing %s: %s", what, strerror(errno));
}

static int table_rows_in_slot(enum algo a, u32 slot)
{
	static struct hstcp_table t;
	int fd = open_pin(a, FASTLAB_PIN_TABLE), rows = -1;

	if (fd < 0)
		return -1;
	if (!bpf_map_lookup_elem(fd, &slot, &t))
		rows = (int)t.nrows;
	close(fd);
	return rows;
}

/* Netns inodes with an override entry, as a JSON array. */
static void netns_list_json(int fd, char *buf, size_t n)
{
	u32 key, next;
	size_t len = 0;
	bool first = true;
	void *prev = NULL;

	len += snprintf(buf + len, n - len, "[");
	while (len < n - 16 && !bpf_map_get_next_key(fd, prev, &next)) {
		len += snprintf(buf + len, n - len, first ? "%u" : ",%u", next);
		first = false;
		key = next;
		prev = &key;
	}
	snprintf(buf + len, n - len, "]");
}

/* ---- register ---------------------------------------------------------- */

static int pin_map_or_fail(struct bpf_map *m, enum algo a, const char *pin)
{
	char p[256];
	int err;

	pin_path(a, pin, p, sizeof(p));
	err = bpf_map__pin(m, p);
	if (err)
		fprintf(stderr, "fastlab-cc: pin %s: %s\n", p, strerror(-err));
	return err;
}

/* Clean pins left by a crash or by an earlier unregister that lingered. */
static void remove_stale_pins(enum algo a)
{
	int fd = open_pin(a, FASTLAB_PIN_OPS);
	u32 zero = 0;

	if (fd >= 0) {
		bpf_map_delete_elem(fd, &zero);	/* ENOENT/EINPROGRESS: fine */
		close(fd);
	}
	unpin_all(a);
}

/* The process that started this one; register checks it is still there. */
static pid_t caller_pid;

static int do_register(enum algo a)
{
	char dir[256];
	struct json j, pj;
	bool mounted, pacing = false;
	struct bpf_link *link = NULL;
	struct bpf_map *ops = NULL;
	struct fast_bpf *fs = NULL;
	struct hstcp_bpf *hs = NULL;
	int err = 0, attempt;

	pin_dir(a, dir, sizeof(dir));
	if (cc_available(algo_names[a])) {
		bool ours = pin_exists(a, FASTLAB_PIN_OPS);

		j_open(&j);
		j_str(&j, "cmd", "register");
		j_str(&j, "name", algo_names[a]);
		j_str(&j, "status", "already_registered");
		j_str(&j, "owner", ours ? "fastlab-cc" : "other");
		if (ours)
			j_str(&j, "pin_dir", dir);
		else
			j_str(&j, "note", "listed in tcp_available_congestion_control but not pinned by fastlab-cc (a kernel module or another loader?)");
		j_print(&j);
		return 0;
	}

	mounted = ensure_bpffs();
	remove_stale_pins(a);
	make_pin_dir(a);

	if (a == ALGO_FAST) {
		/*
		 * First try with sk_pacing_* writes; a kernel that does not
		 * allow them rejects the program, then load without.
		 * FASTLAB_CC_NO_PACING_WRITE=1 forces the fallback (testing).
		 */
		for (attempt = getenv("FASTLAB_CC_NO_PACING_WRITE") ? 1 : 0;
		     attempt < 2; attempt++) {
			libbpf_log_len = 0;
			fs = fast_bpf__open();
			if (!fs)
				die(EXIT_ERR, "opening the fast BPF object: %s",
				    strerror(errno));
			fs->rodata->pacing_write = attempt == 0;
			err = fast_bpf__load(fs);
			if (!err)
				break;
			fast_bpf__destroy(fs);
			fs = NULL;
		}
		if (!fs) {
			dump_libbpf_log();
			die(EXIT_ERR, "loading fast: %s", strerror(-err));
		}
		pacing = fs->rodata->pacing_write;
		{
			struct fast_params p;
			u32 zero = 0;

			fast_params_default(&p);
			map_update_or_die(bpf_map__fd(fs->maps.fast_params),
					  &zero, &p, "fast params");
			fast_params_json(&pj, &p, FAST_P_ALL);
		}
		err = pin_map_or_fail(fs->maps.fast_params, a, FASTLAB_PIN_PARAMS) ?:
		      pin_map_or_fail(fs->maps.fast_netns, a, FASTLAB_PIN_NETNS) ?:
		      pin_map_or_fail(fs->maps.fast_events, a, FASTLAB_PIN_EVENTS) ?:
		      pin_map_or_fail(fs->maps.fast_rings, a, FASTLAB_PIN_RINGS) ?:
		      pin_map_or_fail(fs->maps.rodata, a, FASTLAB_PIN_RODATA);
		ops = fs->maps.fast;
	} else {
		static struct hstcp_table t;
		struct hstcp_params p;
		u32 zero = 0;

		libbpf_log_len = 0;
		hs = hstcp_bpf__open();
		if (!hs)
			die(EXIT_ERR, "opening the hstcp BPF object: %s",
			    strerror(errno));
		err = hstcp_bpf__load(hs);
		if (err) {
			dump_libbpf_log();
			die(EXIT_ERR, "loading hstcp: %s", strerror(-err));
		}
		hstcp_default_table(&t);
		hstcp_params_default(&p);
		map_update_or_die(bpf_map__fd(hs->maps.hstcp_table), &zero, &t,
				  "hstcp table");
		map_update_or_die(bpf_map__fd(hs->maps.hstcp_params), &zero, &p,
				  "hstcp params");
		hstcp_params_json(&pj, &p, HSTCP_P_ALL, (int)t.nrows);
		err = pin_map_or_fail(hs->maps.hstcp_params, a, FASTLAB_PIN_PARAMS) ?:
		      pin_map_or_fail(hs->maps.hstcp_netns, a, FASTLAB_PIN_NETNS) ?:
		      pin_map_or_fail(hs->maps.hstcp_events, a, FASTLAB_PIN_EVENTS) ?:
		      pin_map_or_fail(hs->maps.hstcp_rings, a, FASTLAB_PIN_RINGS) ?:
		      pin_map_or_fail(hs->maps.hstcp_table, a, FASTLAB_PIN_TABLE);
		ops = hs->maps.hstcp;
	}
	if (err)
		goto fail;

	/*
	 * A run records its claim before it calls register, and its cleanup
	 * unregisters what it claimed.  A caller killed meanwhile has its
	 * cleanup look now or soon (the web server's on restart), so
	 * registering after that would leave the algorithm registered with no
	 * run owning it (measured: the web server's kill -9 test at 0.26 s,
	 * landing while this program loaded the object, ~0.1-0.3 s).  A new
	 * parent means the caller is gone: register nothing.
	 */
	if (getppid() != caller_pid) {
		fprintf(stderr, "fastlab-cc: the caller exited before %s was "
			"registered: not registering\n", algo_names[a]);
		err = -ECHILD;
		goto fail;
	}

	/*
	 * Legacy struct_ops registration (libbpf 1.1): updating the map
	 * registers the algorithm and the kernel keeps a reference, so the
	 * registration outlives this process. Disconnect the link so that
	 * destroying it does not unregister.
	 */
	link = bpf_map__attach_struct_ops(ops);
	if (!link) {
		err = -errno;
		dump_libbpf_log();
		fprintf(stderr, "fastlab-cc: registering %s: %s\n",
			algo_names[a], strerror(errno));
		goto fail;
	}
	bpf_link__disconnect(link);
	bpf_link__destroy(link);
	err = pin_map_or_fail(ops, a, FASTLAB_PIN_OPS);
	if (err) {
		u32 zero = 0;

		bpf_map_delete_elem(bpf_map__fd(ops), &zero);
		goto fail;
	}

	j_open(&j);
	j_str(&j, "cmd", "register");
	j_str(&j, "name", algo_names[a]);
	j_str(&j, "status", "registered");
	j_bool(&j, "available", cc_available(algo_names[a]));
	j_str(&j, "pin_dir", dir);
	j_bool(&j, "mounted_bpffs", mounted);
	if (a == ALGO_FAST) {
		j_raw(&j, "pins", "[\"ops\",\"params\",\"netns_params\",\"events\",\"rings\",\"rodata\"]");
		j_bool(&j, "pacing_rate_write", pacing);
		if (!pacing)
			j_str(&j, "pacing_note", getenv("FASTLAB_CC_NO_PACING_WRITE") ?
			      "sk_pacing_rate/sk_pacing_status writes disabled by FASTLAB_CC_NO_PACING_WRITE (pacing_pct still caps SO_MAX_PACING_RATE)" :
			      "the kernel refused BPF writes to sk_pacing_rate/sk_pacing_status; loaded without them (pacing_pct still caps SO_MAX_PACING_RATE)");
	} else {
		j_raw(&j, "pins", "[\"ops\",\"params\",\"netns_params\",\"events\",\"rings\",\"table\"]");
		j_str(&j, "table", "rfc3649-default");
	}
	j_raw(&j, "params", pj.buf);
	j_print(&j);
	fast_bpf__destroy(fs);
	hstcp_bpf__destroy(hs);
	return 0;

fail:
	fast_bpf__destroy(fs);
	hstcp_bpf__destroy(hs);
	unpin_all(a);
	die(EXIT_ERR, "register %s failed", algo_names[a]);
}

/* ---- unregister -------------------------------------------------------- */

static int do_unregister(enum algo a)
{
	struct json j;
	const char *status;
	int fd, n, code = 0;
	u32 zero = 0;

	fd = open_pin(a, FASTLAB_PIN_OPS);
	if (fd < 0) {
		bool listed = cc_available(algo_names[a]);

		n = unpin_all(a);
		j_open(&j);
		j_str(&j, "cmd", "unregister");
		j_str(&j, "name", algo_names[a]);
		j_str(&j, "status", listed ? "not_owned" : "not_registered");
		j_bool(&j, "available", listed);
		j_u64(&j, "unpinned", n);
		if (listed)
			j_str(&j, "note", "registered, but not by fastlab-cc (no ops pin): a kernel module or another loader");
		j_print(&j);
		return listed ? EXIT_NOT_REGISTERED : 0;
	}

	/*
	 * Deleting the element unregisters. EINPROGRESS: an earlier delete
	 * already unregistered it and sockets still hold the map; ENOENT:
	 * never registered. Both mean "not registered any more".
	 */
	if (!bpf_map_delete_elem(fd, &zero))
		status = "unregistered";
	else if (errno == EINPROGRESS || errno == EBUSY)
		status = "unregistered_in_progress";
	else if (errno == ENOENT)
		status = "not_registered";
	else
		die(EXIT_ERR, "unregister %s: %s", algo_names[a], strerror(errno));
	close(fd);
	n = unpin_all(a);

	j_open(&j);
	j_str(&j, "cmd", "unregister");
	j_str(&j, "name", algo_names[a]);
	j_str(&j, "status", status);
	j_bool(&j, "available", cc_available(algo_names[a]));
	j_u64(&j, "unpinned", n);
	j_print(&j);
	if (cc_available(algo_names[a]))
		code = EXIT_ERR;	/* should not happen */
	return code;
}

/* ---- set / get --------------------------------------------------------- */

static int do_set(enum algo a, int argc, char **argv)
{
	bool have_ns = false, clear = false;
	u32 ino = 0;
	int i, fd, nsfd;
	char err[512];
	struct json j, cj, ej;
	/* working copies */
	struct fast_params fg, fn, fchg;
	struct hstcp_params hg, hn, hchg;
	static struct hstcp_table t;
	int rows = -1;
	u32 given = 0;

	memset(&fchg, 0, sizeof(fchg));
	memset(&hchg, 0, sizeof(hchg));
	/* parse & validate everything before touching a map */
	for (i = 0; i < argc; i++) {
		char key[64], *eq;

		if (parse_netns_opt(argc, argv, &i, &have_ns, &ino))
			continue;
		if (!strcmp(argv[i], "--clear")) {
			clear = true;
			continue;
		}
		eq = strchr(argv[i], '=');
		if (!eq || eq == argv[i] || (size_t)(eq - argv[i]) >= sizeof(key))
			die(EXIT_USAGE, "set %s: expected key=value, got '%s' (keys: %s)",
			    algo_names[a], argv[i],
			    a == ALGO_FAST ? fast_keys : hstcp_keys);
		memcpy(key, argv[i], eq - argv[i]);
		key[eq - argv[i]] = 0;
		if ((a == ALGO_FAST ? fast_set_key(&fchg, key, eq + 1, err, sizeof(err)) :
				      hstcp_set_key(&hchg, &given, key, eq + 1, err, sizeof(err))))
			die(EXIT_USAGE, "set %s: %s", algo_names[a], err);
	}
	if (clear && !have_ns)
		die(EXIT_USAGE, "set %s: --clear needs --netns-ino/--netns-pid/--netns-name",
		    algo_names[a]);
	if (!clear && !(a == ALGO_FAST ? fchg.set_mask : given))
		die(EXIT_USAGE, "set %s: nothing to set (keys: %s)", algo_names[a],
		    a == ALGO_FAST ? fast_keys : hstcp_keys);
	if (a == ALGO_HSTCP && have_ns && (given & HK_TABLE))
		die(EXIT_USAGE, "set hstcp: low_window/high_window/high_p/high_decrease are global (one table); per-netns: max_ssthresh only");

	fd = pin_fd_or_die(a, FASTLAB_PIN_PARAMS);
	nsfd = pin_fd_or_die(a, FASTLAB_PIN_NETNS);

	if (clear) {
		int r = bpf_map_delete_elem(nsfd, &ino);

		if (r && errno != ENOENT)
			die(EXIT_ERR, "clearing netns %u: %s", ino, strerror(errno));
	}

	if (a == ALGO_FAST) {
		read_fast_global(fd, &fg);
		if (have_ns) {
			if (clear || bpf_map_lookup_elem(nsfd, &ino, &fn))
				memset(&fn, 0, sizeof(fn));
			if (fchg.set_mask) {
				u32 m = fn.set_mask | fchg.set_mask;

				fast_params_merge(&fn, &fchg);
				fn.set_mask = m;
				map_update_or_die(nsfd, &ino, &fn, "netns params");
			}
			fast_params_json(&cj, &fchg, fchg.set_mask);
			fast_params_merge(&fg, &fn);	/* effective */
		} else {
			fast_params_merge(&fg, &fchg);
			fg.set_mask = FAST_P_ALL;
			{
				u32 zero = 0;

				map_update_or_die(fd, &zero, &fg, "global params");
			}
			fast_params_json(&cj, &fchg, fchg.set_mask);
		}
		fast_params_json(&ej, &fg, FAST_P_ALL);
	} else {
		read_hstcp_global(fd, &hg);
		if (have_ns) {
			if (clear || bpf_map_lookup_elem(nsfd, &ino, &hn))
				memset(&hn, 0, sizeof(hn));
			if (given) {
				hn.max_ssthresh = hchg.max_ssthresh;
				hn.set_mask |= HSTCP_P_MAX_SSTHRESH;
				map_update_or_die(nsfd, &ino, &hn, "netns params");
			}
			hstcp_given_json(&cj, &hchg, given);
			hstcp_params_merge(&hg, &hn);
		} else {
			struct hstcp_params np = hg;
			u32 zero = 0;

			hstcp_apply_given(&np, &hchg, given);
			if (given & HK_TABLE) {
				struct hstcp_gen g;
				int tfd;
				u32 slot;

				hstcp_check_windows(&np, given, "set hstcp");
				hstcp_gen_from_params(&g, &np);
				if (hstcp_table_for(&g, &t, err, sizeof(err)))
					die(EXIT_USAGE, "set hstcp: %s", err);
				/* write the idle slot, then flip the live one */
				slot = (np.table_slot + 1) % HSTCP_TABLE_SLOTS;
				tfd = pin_fd_or_die(a, FASTLAB_PIN_TABLE);
				map_update_or_die(tfd, &slot, &t, "hstcp table");
				close(tfd);
				np.table_slot = slot;
			}
			np.set_mask = HSTCP_P_ALL;
			map_update_or_die(fd, &zero, &np, "global params");
			hg = np;
			hstcp_given_json(&cj, &hchg, given);
		}
		rows = table_rows_in_slot(a, hg.table_slot);
		hstcp_params_json(&ej, &hg, HSTCP_P_ALL, rows);
	}

	j_open(&j);
	j_str(&j, "cmd", "set");
	j_str(&j, "name", algo_names[a]);
	j_str(&j, "scope", have_ns ? "netns" : "global");
	if (have_ns)
		j_u64(&j, "netns_ino", ino);
	if (clear)
		j_bool(&j, "cleared", true);
	j_raw(&j, "changed", cj.buf);
	j_raw(&j, "params", ej.buf);
	j_print(&j);
	close(fd);
	close(nsfd);
	return 0;
}

static bool fast_pacing_loaded(void)
{
	struct bpf_map_info info;
	u32 len = sizeof(info), zero = 0;
	unsigned char val[256];
	int fd = open_pin(ALGO_FAST, FASTLAB_PIN_RODATA);
	bool on = false;

	if (fd < 0)
		return false;
	memset(&info, 0, sizeof(info));
	if (!bpf_obj_get_info_by_fd(fd, &info, &len) &&
	    info.value_size >= 1 && info.value_size <= sizeof(val) &&
	    !bpf_map_lookup_elem(fd, &zero, val))
		on = val[0];	/* .rodata holds only pacing_write */
	close(fd);
	return on;
}

static int do_get(enum algo a, int argc, char **argv)
{
	bool have_ns = false;
	u32 ino = 0;
	int i, fd, nsfd;
	struct json j, pj, oj;
	char list[8192];

	for (i = 0; i < argc; i++)
		if (!parse_netns_opt(argc, argv, &i, &have_ns, &ino))
			die(EXIT_USAGE, "get %s: unexpected '%s'", algo_names[a],
			    argv[i]);
	fd = pin_fd_or_die(a, FASTLAB_PIN_PARAMS);
	nsfd = pin_fd_or_die(a, FASTLAB_PIN_NETNS);

	j_open(&j);
	j_str(&j, "cmd", "get");
	j_str(&j, "name", algo_names[a]);
	j_str(&j, "scope", have_ns ? "netns" : "global");
	j_bool(&j, "available", cc_available(algo_names[a]));
	if (a == ALGO_FAST) {
		struct fast_params g, n;
		bool has = false;

		read_fast_global(fd, &g);
		if (have_ns) {
			has = !bpf_map_lookup_elem(nsfd, &ino, &n);
			j_u64(&j, "netns_ino", ino);
			fast_params_json(&oj, &n, has ? n.set_mask : 0);
			j_raw(&j, "overrides", oj.buf);
			if (has)
				fast_params_merge(&g, &n);
		}
		j_raw(&j, "params", fast_params_json(&pj, &g, FAST_P_ALL));
		j_bool(&j, "pacing_rate_write", fast_pacing_loaded());
	} else {
		struct hstcp_params g, n;
		bool has = false;

		read_hstcp_global(fd, &g);
		if (have_ns) {
			has = !bpf_map_lookup_elem(nsfd, &ino, &n);
			j_u64(&j, "netns_ino", ino);
			hstcp_params_json(&oj, &n, has ? n.set_mask : 0, -1);
			j_raw(&j, "overrides", oj.buf);
			if (has)
				hstcp_params_merge(&g, &n);
		}
		j_raw(&j, "params", hstcp_params_json(&pj, &g, HSTCP_P_ALL,
						      table_rows_in_slot(a, g.table_slot)));
	}
	if (!have_ns) {
		netns_list_json(nsfd, list, sizeof(list));
		j_raw(&j, "netns_overrides", list);
	}
	j_print(&j);
	close(fd);
	close(nsfd);
	return 0;
}

/* ---- events ------------------------------------------------------------ */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static const char *kind_str(u32 k)
{
	switch (k) {
	case FASTLAB_EV_UPDATE: return "update";
	case FASTLAB_EV_LOSS: return "loss";
	case FASTLAB_EV_RTO: return "rto";
	case FASTLAB_EV_RTT: return "rtt";
	case FASTLAB_EV_MODE: return "mode";
	case FASTLAB_EV_INIT: return "init";
	default: return "unknown";
	}
}

static void sockid_json(struct json *j, const struct fastlab_sockid *id)
{
	char s[INET_ADDRSTRLEN], d[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &id->saddr, s, sizeof(s));
	inet_ntop(AF_INET, &id->daddr, d, sizeof(d));
	j_u64(j, "netns_ino", id->netns_ino);
	j_str(j, "saddr", s);
	j_u64(j, "sport", id->sport);
	j_str(j, "daddr", d);
	j_u64(j, "dport", id->dport);
}

/* Fields every event line starts with: time, algorithm, event kind, socket. */
static void event_header(struct json *j, u64 ts_ns, const char *algo, u32 kind,
			 const struct fastlab_sockid *id)
{
	j_open(j);
	j_key(j, "ts");
	jcat(j, "%llu.%09llu", (unsigned long long)(ts_ns / 1000000000ULL),
	     (unsigned long long)(ts_ns % 1000000000ULL));
	j_str(j, "algo", algo);
	j_str(j, "event", kind_str(kind));
	sockid_json(j, id);
}

static int on_fast_event(void *ctx, void *data, size_t size)
{
	const struct fast_event *e = data;
	struct json j;

	(void)ctx;
	if (size < sizeof(*e))
		return 0;
	event_header(&j, e->ts_ns, "fast", e->kind, &e->id);
	j_u64(&j, "base_rtt_us", e->base_rtt_us);
	j_u64(&j, "avg_rtt_us", e->avg_rtt_us);
	j_u64(&j, "w_old", e->w_old);
	j_u64(&j, "cwnd_before", e->cwnd_before);
	j_u64(&j, "cwnd", e->cwnd);
	j_u64(&j, "target", e->target);
	j_u64(&j, "alpha", e->alpha);
	j_u64(&j, "backlog", e->backlog);
	j_u64(&j, "ssthresh", e->ssthresh);
	j_num(&j, "gamma", e->gamma_den ? (double)e->gamma_num / e->gamma_den : 0);
	j_str(&j, "mode", e->mode == FAST_MODE_CARRY ? "carry" : "floor");
	j_bool(&j, "mi", e->mi);
	j_u64(&j, "pacing_rate", e->pacing_rate);
	j_str(&j, "pacing", (e->pacing & FASTLAB_PACING_WRITE) ?
		(e->pacing & FASTLAB_PACING_CAP ? "write+cap" : "write") :
		(e->pacing & FASTLAB_PACING_CAP ? "cap" : "off"));
	j_print(&j);
	return 0;
}

static int on_hstcp_event(void *ctx, void *data, size_t size)
{
	static const char *const modes[] = { "ss", "lss", "ca" };
	const struct hstcp_event *e = data;
	struct json j;

	(void)ctx;
	if (size < sizeof(*e))
		return 0;
	event_header(&j, e->ts_ns, "hstcp", e->kind, &e->id);
	j_u64(&j, "cwnd", e->cwnd);
	j_u64(&j, "ssthresh", e->ssthresh);
	j_u64(&j, "ai", e->ai);
	j_num(&j, "a", (double)e->a_q8 / (1 << HSTCP_A_SHIFT));
	j_num(&j, "b", (double)e->b_q16 / (1 << HSTCP_B_SHIFT));
	j_str(&j, "mode", e->mode < 3 ? modes[e->mode] : "unknown");
	j_u64(&j, "max_ssthresh", e->max_ssthresh);
	j_print(&j);
	return 0;
}

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * A reader's own ring (fastlab_bpf.h, "Per-reader rings"): created here,
 * put under each namespace inode of its run in the algorithm's "rings" map,
 * and taken out again at exit -- only the keys that still point to it (a
 * later reader may have replaced a key whose namespace inode was reused).
 * A reader killed with SIGKILL leaves its keys: a later run with that inode
 * overwrites them (BPF_ANY), the unregistration frees the rest.
 */
#define EVENTS_NETNS_ARG_MAX	(FASTLAB_MAX_RINGS * 11)	/* "4294967295," each */

struct own_ring {
	int outer_fd;		/* the pinned "rings" map */
	int ring_fd;		/* this reader's ring buffer */
	u32 ring_id;		/* its map id: what a lookup in outer_fd returns */
	u32 n;			/* keys inserted so far */
	u32 ino[FASTLAB_MAX_RINGS];
};

static struct own_ring own = { .outer_fd = -1, .ring_fd = -1 };

/* Parse "INO[,INO...]": distinct inode numbers 1..2^32-1, at most FASTLAB_MAX_RINGS. */
static u32 parse_netns_list(const char *arg, u32 *ino)
{
	char buf[EVENTS_NETNS_ARG_MAX + 1], *tok, *save = NULL;
	unsigned long long u;
	u32 n = 0, k;

	if (strlen(arg) > EVENTS_NETNS_ARG_MAX)
		die(EXIT_USAGE, "--netns: longer than %d characters (at most %d inode numbers)",
		    EVENTS_NETNS_ARG_MAX, FASTLAB_MAX_RINGS);
	if (!*arg || arg[0] == ',' || arg[strlen(arg) - 1] == ',' || strstr(arg, ",,"))
		die(EXIT_USAGE, "--netns=%s: expected INO[,INO...] (stat -L -c %%i /proc/PID/ns/net)",
		    arg);
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!parse_u64(tok, &u) || u == 0 || u > 0xffffffffULL)
			die(EXIT_USAGE, "--netns: '%s': out of range: inode number 1..4294967295",
			    tok);
		if (n == FASTLAB_MAX_RINGS)
			die(EXIT_USAGE, "--netns: more than %d inode numbers",
			    FASTLAB_MAX_RINGS);
		for (k = 0; k < n; k++)
			if (ino[k] == (u32)u)
				die(EXIT_USAGE, "--netns: %s given twice", tok);
		ino[n++] = (u32)u;
	}
	return n;
}

/* Take out the keys that still point to this reader's ring (atexit). */
static void release_own_ring(void)
{
	u32 k, id;

	for (k = 0; k < own.n; k++)
		if (!bpf_map_lookup_elem(own.outer_fd, &own.ino[k], &id) &&
		    id == own.ring_id)
			bpf_map_delete_elem(own.outer_fd, &own.ino[k]);
	own.n = 0;
}

static u32 map_id(int fd)
{
	struct bpf_map_info info;
	u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		die(EXIT_ERR, "map info: %s", strerror(errno));
	return info.id;
}

/*
 * Create the ring and insert it under each of @n inodes; returns its fd,
 * or -1 when the algorithm was registered by an older fastlab-cc: the
 * caller reads the shared ring (@events_fd) then. An older fastlab-cc
 * neither pins "rings" nor removes the pin at unregister, so a "rings" pin
 * may be a leftover of an earlier registration that no program uses: the
 * maps of one load are created in order (params, netns, events, rings;
 * ids only grow), so a rings map older than the events map is one.
 */
static int make_own_ring(enum algo a, int events_fd, const u32 *ino, u32 n)
{
	const char *old = NULL;
	u32 k;

	own.outer_fd = open_pin(a, FASTLAB_PIN_RINGS);
	if (own.outer_fd < 0 && errno != ENOENT)
		die(EXIT_ERR, "open the %s rings pin: %s", algo_names[a],
		    strerror(errno));
	if (own.outer_fd < 0)
		old = "no rings pin";
	else if (map_id(own.outer_fd) < map_id(events_fd))
		old = "its rings pin is an earlier registration's";
	if (old) {
		fprintf(stderr, "fastlab-cc: %s was registered by an older fastlab-cc (%s): reading the shared ring, which other readers also consume\n",
			algo_names[a], old);
		if (own.outer_fd >= 0)
			close(own.outer_fd);
		own.outer_fd = -1;
		return -1;
	}
	own.ring_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "fastlab_ring", 0, 0,
				     FASTLAB_RINGBUF_BYTES, NULL);
	if (own.ring_fd < 0)
		die(EXIT_ERR, "creating a ring buffer: %s", strerror(errno));
	own.ring_id = map_id(own.ring_fd);
	atexit(release_own_ring);	/* die() below too */
	for (k = 0; k < n; k++) {
		/* BPF_ANY: a live namespace's inode is unique, so an existing
		 * key is a dead reader's leftover */
		if (bpf_map_update_elem(own.outer_fd, &ino[k], &own.ring_fd, BPF_ANY))
			die(EXIT_ERR, "adding netns %u to the %s rings: %s", ino[k],
			    algo_names[a], strerror(errno));
		own.ino[own.n++] = ino[k];
	}
	return own.ring_fd;
}

static int do_events(enum algo a, int argc, char **argv)
{
	struct sigaction sa;
	struct ring_buffer *rb;
	double duration = 0, t0;
	int i, fd, err;
	u32 n_ns = 0, k;
	bool own_ring = false;
	static u32 ino[FASTLAB_MAX_RINGS];

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--duration-s") && i + 1 < argc) {
			if (!parse_double(argv[++i], &duration) || duration <= 0)
				die(EXIT_USAGE, "--duration-s=%s: out of range: seconds > 0",
				    argv[i]);
		} else if (!strcmp(argv[i], "--netns") && i + 1 < argc) {
			if (n_ns)
				die(EXIT_USAGE, "--netns given twice: give one INO[,INO...] list");
			n_ns = parse_netns_list(argv[++i], ino);
		} else {
			die(EXIT_USAGE, "events %s: unexpected '%s' (usage: events NAME [--netns INO[,INO...]] [--duration-s D])",
			    algo_names[a], argv[i]);
		}
	}
	fd = pin_fd_or_die(a, FASTLAB_PIN_EVENTS);

	/* before the ring is inserted: a SIGTERM from now on still takes it out */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: poll returns EINTR */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	if (n_ns) {
		int rfd = make_own_ring(a, fd, ino, n_ns);
		struct json j;
		char list[EVENTS_NETNS_ARG_MAX + 3];
		size_t len = 0;

		if (rfd >= 0) {
			close(fd);
			fd = rfd;
			own_ring = true;
		}
		/* one line first: which ring, so the caller can record it */
		len += snprintf(list, sizeof(list), "[");
		for (k = 0; k < n_ns; k++)
			len += snprintf(list + len, sizeof(list) - len,
					k ? ",%u" : "%u", ino[k]);
		snprintf(list + len, sizeof(list) - len, "]");
		j_open(&j);
		j_str(&j, "cmd", "events");
		j_str(&j, "name", algo_names[a]);
		j_str(&j, "ring", own_ring ? "own" : "shared");
		j_raw(&j, "netns", list);
		j_print(&j);
	}
	rb = ring_buffer__new(fd, a == ALGO_FAST ? on_fast_event : on_hstcp_event,
			      NULL, NULL);
	if (!rb)
		die(EXIT_ERR, "ring buffer: %s", strerror(errno));

	t0 = mono_now();
	while (!stop) {
		int timeout = 100;

		if (duration > 0) {
			double left = duration - (mono_now() - t0);

			if (left <= 0)
				break;
			timeout = left < 0.1 ? (int)(left * 1000) + 1 : 100;
		}
		err = ring_buffer__poll(rb, timeout);
		if (err < 0 && err != -EINTR) {
			ring_buffer__free(rb);
			die(EXIT_ERR, "polling events: %s", strerror(-err));
		}
	}
	release_own_ring();	/* no new events into it from here */
	ring_buffer__consume(rb);	/* what is left */
	ring_buffer__free(rb);
	close(fd);
	return 0;
}

/* ---- table ------------------------------------------------------------- */

static int do_table(int argc, char **argv)
{
	struct hstcp_params p, chg;
	static struct hstcp_table t;
	struct hstcp_gen g;
	struct hstcp_response r;
	char err[512];
	bool c_out = false, module_out = false;
	u32 i, given = 0;
	int k;

	hstcp_params_default(&p);
	memset(&chg, 0, sizeof(chg));
	for (k = 0; k < argc; k++) {
		char key[64], *eq = strchr(argv[k], '=');

		if (!strcmp(argv[k], "--c")) {
			c_out = true;
			continue;
		}
		if (!strcmp(argv[k], "--module")) {
			module_out = true;
			continue;
		}
		if (!strcmp(argv[k], "hstcp"))
			continue;
		if (!eq || (size_t)(eq - argv[k]) >= sizeof(key))
			die(EXIT_USAGE, "table: expected key=value, got '%s'", argv[k]);
		memcpy(key, argv[k], eq - argv[k]);
		key[eq - argv[k]] = 0;
		if (!strcmp(key, "max_ssthresh"))
			die(EXIT_USAGE, "table: max_ssthresh is not a table parameter");
		if (hstcp_set_key(&chg, &given, key, eq + 1, err, sizeof(err)))
			die(EXIT_USAGE, "table: %s", err);
	}
	hstcp_apply_given(&p, &chg, given);
	hstcp_check_windows(&p, given, "table");
	hstcp_gen_from_params(&g, &p);
	if (hstcp_table_for(&g, &t, err, sizeof(err)))
		die(EXIT_USAGE, "table: %s", err);
	hstcp_gen_response(&g, &r);
	if (module_out) {
		/* tcp_hstcp.ko's `table` parameter (modules/tcp_hstcp.c parses it) */
		printf("%u %u %llu %u %u", p.low_window, p.high_window,
		       (unsigned long long)p.high_p_femto, p.high_decrease_ppm,
		       t.nrows);
		for (i = 0; i < t.nrows; i++)
			printf(" %u,%u,%u", t.rows[i].cwnd, t.rows[i].a,
			       t.rows[i].b_q16);
		printf("\n");
		return 0;
	}
	if (c_out) {
		printf("/* fastlab-cc table: low_window=%u high_window=%u high_p=%g high_decrease=%g */\n",
		       p.low_window, p.high_window, g.high_p, g.high_decrease);
		printf("#define HSTCP_DEFAULT_ROWS\t%u\n\n", t.nrows);
		printf("static const struct hstcp_row hstcp_default_rows[HSTCP_DEFAULT_ROWS] = {\n");
		for (i = 0; i < t.nrows; i++)
			printf("\t{ %6u, %3u, %5u },\n", t.rows[i].cwnd,
			       t.rows[i].a, t.rows[i].b_q16);
		printf("};\n");
		return 0;
	}
	printf("{\"cmd\":\"table\",\"name\":\"hstcp\",\"source\":\"%s\","
	       "\"response\":{\"p\":\"%g / w^%g\",\"low_p\":%.6g,\"exponent_exact\":%.6g,\"coefficient_exact\":%.6g},"
	       "\"params\":{\"low_window\":%u,\"high_window\":%u,\"high_p\":%g,\"high_decrease\":%g},"
	       "\"rows\":[",
	       hstcp_gen_is_default(&g) ? "rfc3649-default" : "generated",
	       r.c, r.e, r.low_p, r.e_exact, r.c_exact, p.low_window,
	       p.high_window, g.high_p, g.high_decrease);
	for (i = 0; i < t.nrows; i++)
		printf("%s{\"w\":%u,\"a\":%u,\"b\":%.4f}", i ? "," : "",
		       t.rows[i].cwnd, t.rows[i].a,
		       (double)t.rows[i].b_q16 / (1 << HSTCP_B_SHIFT));
	printf("]}\n");
	return 0;
}

/* ---- main -------------------------------------------------------------- */

static void __attribute__((noreturn)) usage(int code)
{
	fprintf(code ? stderr : stdout,
		"usage: fastlab-cc register   fast|hstcp\n"
		"       fastlab-cc unregister fast|hstcp\n"
		"       fastlab-cc set        fast|hstcp key=value... [NETNS]\n"
		"       fastlab-cc set        fast|hstcp NETNS --clear\n"
		"       fastlab-cc get        fast|hstcp [NETNS]\n"
		"       fastlab-cc events     fast|hstcp [--netns INO[,INO...]] [--duration-s D]\n"
		"       fastlab-cc table      [hstcp] [low_window=..] [high_window=..] [high_p=..] [high_decrease=..] [--c|--module]\n"
		"NETNS: --netns-ino N | --netns-pid PID | --netns-name NAME (no NETNS = global)\n"
		"fast keys:  %s\n"
		"hstcp keys: %s\n"
		"exit: 0 ok, 1 error, 2 usage/out of range, 3 not registered/not owned\n",
		fast_keys, hstcp_keys);
	exit(code);
}

int main(int argc, char **argv)
{
	const char *cmd;
	enum algo a;

	caller_pid = getppid();

	verbose = getenv("FASTLAB_CC_DEBUG") != NULL;
	libbpf_set_print(libbpf_log);
	if (argc < 2)
		usage(EXIT_USAGE);
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help"))
		usage(0);
	if (!strcmp(cmd, "table"))
		return do_table(argc - 2, argv + 2);
	if (argc < 3)
		usage(EXIT_USAGE);
	a = parse_algo(argv[2]);
	if (!strcmp(cmd, "register")) {
		if (argc != 3)
			usage(EXIT_USAGE);
		return do_register(a);
	}
	if (!strcmp(cmd, "unregister")) {
		if (argc != 3)
			usage(EXIT_USAGE);
		return do_unregister(a);
	}
	if (!strcmp(cmd, "set"))
		return do_set(a, argc - 3, argv + 3);
	if (!strcmp(cmd, "get"))
		return do_get(a, argc - 3, argv + 3);
	if (!strcmp(cmd, "events"))
		return do_events(a, argc - 3, argv + 3);
	fprintf(stderr, "fastlab-cc: unknown command '%s'\n", cmd);
	usage(EXIT_USAGE);
}
