/* SPDX-License-Identifier: MIT */
/*
 * Internal to src/ebpf: the loaded bpf/shackle.bpf.c (loader.c), shared with
 * what pins it (pin.c); and the attach's scan for the listeners there are
 * already (listen_scan.c).
 */
#ifndef SHACKLE_EBPF_LOADER_H
#define SHACKLE_EBPF_LOADER_H

#include <stdbool.h>
#include <stdint.h>

#include <shackle/ebpf.h>

#include "shackle.h" /* bpf/shackle.h */

struct shackle_bpf;
struct ring_buffer;
struct lsm_bpf;

struct shk_ebpf {
	struct shackle_bpf *skel;
	struct ring_buffer *rb;
	shk_ebpf_event_fn fn;
	void *userdata;
	uint64_t delivered;
	uint64_t malformed;
	struct shk_bpf_state st; /* the kernel never writes it: this copy is the truth */
	bool exec;
	bool lsm_off;           /* opts.exec_lsm == SHK_EBPF_LSM_OFF */
	uint8_t exec_default;
	struct lsm_bpf *lsm;    /* bpf/lsm.bpf.c when attached, on this object's maps */
	int exec_path;          /* enum shk_ebpf_exec_path */
	char lsm_why[512];      /* why exec_path is not SHK_EBPF_EXEC_LSM */
	uint64_t netns_unentered; /* processes whose netns the listener scan could not enter */
	int netns_errno;          /* why, for the last of them */
};

/* The cgroup programs shk_ebpf_attach() attaches (and shk_ebpf_pin() pins). */
#define SHK_LINKS(X) X(shk_connect4) X(shk_connect6) X(shk_sendmsg4) \
	X(shk_sendmsg6) X(shk_bind4) X(shk_bind6) X(shk_setsockopt) \
	X(shk_egress) X(shk_sock_create) X(shk_sock_ops) X(shk_listen_gate)

/*
 * Marks the listeners below cgroup_fd that listen already (the program
 * shk_scan_listeners of skel, in every network namespace a process is in).
 * *ret_unentered counts the processes whose namespace could not be opened
 * or entered, *ret_errno says why for the last of them. 0 or -errno.
 */
int shk_ebpf_scan_listeners(struct shackle_bpf *skel, int cgroup_fd, uint64_t *ret_unentered,
			    int *ret_errno);

#endif
