// SPDX-License-Identifier: GPL-2.0
/*
 * fastlab-clamp - hold chosen flows' congestion windows under a ceiling
 * (bpf/cwnd_clamp.bpf.c says why and how).
 *
 *   fastlab-clamp attach CGROUP_DIR PORT=PKTS...
 *   fastlab-clamp dump   PROG_ID
 *
 * Loads the sock_ops program, fills its port -> packets map and attaches
 * it to the cgroup v2 directory CGROUP_DIR (which the caller created for
 * one run and whose senders it moves there).  The attachment outlives this
 * process and ends when the caller removes the directory, so there is
 * nothing to detach and nothing pinned.
 *
 * dump prints the program's per-second RTT statistics, one JSON object per
 * flow and second (port, CLOCK_MONOTONIC second, min/max/sum in us, n), in
 * no particular order; run it before the cgroup is removed.
 *
 * attach prints one JSON object on stdout; diagnostics on stderr.  Exit
 * codes: 0 done, 1 system or BPF error, 2 usage or out-of-range value
 * (nothing attached).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "../bpf/cwnd_clamp.h"
#include "cwnd_clamp.skel.h"

#define EXIT_ERR	1
#define EXIT_USAGE	2

/* Same bounds as the spec's max_cwnd_pkts (fastlab/define/schema.py). */
#define CLAMP_MIN_PKTS	1
#define CLAMP_MAX_PKTS	1000000
#define CLAMP_MAX_FLOWS	4096	/* the map's size in cwnd_clamp.bpf.c */

struct entry {
	unsigned short port;
	unsigned int pkts;
};

static int usage(void)
{
	fprintf(stderr, "usage: fastlab-clamp attach CGROUP_DIR PORT=PKTS...\n"
			"       fastlab-clamp dump PROG_ID\n");
	return EXIT_USAGE;
}

/* Parse "PORT=PKTS"; 0 on success. */
static int parse_entry(const char *arg, struct entry *e)
{
	unsigned long port, pkts;
	char *end;

	errno = 0;
	port = strtoul(arg, &end, 10);
	if (errno || end == arg || *end != '=' || port < 1 || port > 65535)
		return -1;
	arg = end + 1;
	pkts = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || pkts < CLAMP_MIN_PKTS ||
	    pkts > CLAMP_MAX_PKTS)
		return -1;
	e->port = (unsigned short)port;
	e->pkts = (unsigned int)pkts;
	return 0;
}

/* The fd of the program's map named `name`, or -1. */
static int prog_map_fd(int prog_fd, const char *name)
{
	struct bpf_prog_info info = { 0 };
	__u32 ids[8], len = sizeof(info), i;

	info.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -1;
	for (i = 0; i < info.nr_map_ids && i < sizeof(ids) / sizeof(ids[0]); i++) {
		struct bpf_map_info minfo = { 0 };
		__u32 mlen = sizeof(minfo);
		int fd = bpf_map_get_fd_by_id(ids[i]);

		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &minfo, &mlen) &&
		    !strcmp(minfo.name, name))
			return fd;
		close(fd);
	}
	return -1;
}

static int dump(const char *id_arg)
{
	struct rtt_key key, next, *prev = NULL;
	struct rtt_stats st;
	unsigned long id;
	int prog_fd, map_fd;
	char *end;

	errno = 0;
	id = strtoul(id_arg, &end, 10);
	if (errno || end == id_arg || *end || !id || id > UINT_MAX)
		return usage();
	prog_fd = bpf_prog_get_fd_by_id((__u32)id);
	if (prog_fd < 0) {
		fprintf(stderr, "fastlab-clamp: program %lu: %s\n", id, strerror(errno));
		return EXIT_ERR;
	}
	map_fd = prog_map_fd(prog_fd, CWND_CLAMP_RTT_MAP);
	close(prog_fd);
	if (map_fd < 0) {
		fprintf(stderr, "fastlab-clamp: program %lu has no map %s\n", id,
			CWND_CLAMP_RTT_MAP);
		return EXIT_ERR;
	}
	while (!bpf_map_get_next_key(map_fd, prev, &next)) {
		if (!bpf_map_lookup_elem(map_fd, &next, &st))
			printf("{\"port\":%u,\"second\":%u,\"min_us\":%u,"
			       "\"max_us\":%u,\"sum_us\":%llu,\"n\":%u}\n",
			       next.port, next.second, st.min_us, st.max_us,
			       (unsigned long long)st.sum_us, st.n);
		key = next;
		prev = &key;
	}
	close(map_fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct entry *entries;
	struct cwnd_clamp_bpf *skel;
	int i, n, cg, map_fd, prog_fd, err;
	struct bpf_prog_info info = { 0 };
	__u32 info_len = sizeof(info);

	if (argc == 3 && !strcmp(argv[1], "dump"))
		return dump(argv[2]);
	if (argc < 4 || strcmp(argv[1], "attach"))
		return usage();
	n = argc - 3;
	if (n > CLAMP_MAX_FLOWS) {
		fprintf(stderr, "fastlab-clamp: at most %d flows\n",
			CLAMP_MAX_FLOWS);
		return EXIT_USAGE;
	}
	entries = calloc((size_t)n, sizeof(*entries));
	if (!entries)
		return EXIT_ERR;
	for (i = 0; i < n; i++) {
		if (parse_entry(argv[3 + i], &entries[i])) {
			fprintf(stderr, "fastlab-clamp: '%s': expected PORT=PKTS, "
				"port 1..65535, packets %d..%d\n", argv[3 + i],
				CLAMP_MIN_PKTS, CLAMP_MAX_PKTS);
			free(entries);
			return EXIT_USAGE;
		}
	}

	cg = open(argv[2], O_RDONLY | O_DIRECTORY);
	if (cg < 0) {
		fprintf(stderr, "fastlab-clamp: cgroup '%s': %s\n", argv[2],
			strerror(errno));
		free(entries);
		return EXIT_ERR;
	}
	libbpf_set_strict_mode(LIBBPF_STRICT_ALL);
	skel = cwnd_clamp_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "fastlab-clamp: loading the sock_ops program: %s\n",
			strerror(errno));
		close(cg);
		free(entries);
		return EXIT_ERR;
	}
	map_fd = bpf_map__fd(skel->maps.cwnd_clamp_ports);
	for (i = 0; i < n; i++) {
		if (bpf_map_update_elem(map_fd, &entries[i].port,
					&entries[i].pkts, BPF_ANY)) {
			err = errno;
			fprintf(stderr, "fastlab-clamp: map update: %s\n",
				strerror(err));
			goto fail;
		}
	}
	prog_fd = bpf_program__fd(skel->progs.cwnd_clamp);
	if (bpf_prog_attach(prog_fd, cg, BPF_CGROUP_SOCK_OPS, 0)) {
		err = errno;
		fprintf(stderr, "fastlab-clamp: attach to '%s': %s\n", argv[2],
			strerror(err));
		goto fail;
	}
	bpf_obj_get_info_by_fd(prog_fd, &info, &info_len);
	printf("{\"attached\":true,\"cgroup\":\"%s\",\"prog_id\":%u,"
	       "\"flows\":%d}\n", argv[2], info.id, n);
	cwnd_clamp_bpf__destroy(skel);	/* the attachment holds the program */
	close(cg);
	free(entries);
	return 0;
fail:
	cwnd_clamp_bpf__destroy(skel);
	close(cg);
	free(entries);
	return EXIT_ERR;
}
