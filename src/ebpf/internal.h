/* SPDX-License-Identifier: MIT */
/* Internal to src/ebpf: conversions between the public and the map layouts. */
#ifndef SHACKLE_EBPF_INTERNAL_H
#define SHACKLE_EBPF_INTERNAL_H

#include <shackle/ebpf.h>

#include "shackle.h" /* bpf/shackle.h */

void shk_ebpf_dest_to_bpf(const struct shk_ebpf_dest *d, struct shk_bpf_dest *ret_k);
void shk_ebpf_event_decode(const void *k, struct shk_ebpf_event *ret_ev);
/* kinode.c: the device (kernel dev_t encoding: major << 20 | minor) and inode
 * number of a regular file as the exec hooks see them; -EINVAL when it is not
 * a regular file, -EOPNOTSUPP before Linux 5.8, else -errno or -ENOENT. */
int shk_ebpf_kernel_inode(const char *path, uint64_t *ret_dev, uint64_t *ret_ino);

#endif
