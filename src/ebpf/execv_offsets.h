/* SPDX-License-Identifier: MIT */
/*
 * Where the fields bpf/execverify.bpf.c reads sit in the running kernel
 * (struct shk_execv_offsets, bpf/execv.h). Internal to the Linux layer.
 */
#ifndef SHACKLE_EBPF_EXECV_OFFSETS_H
#define SHACKLE_EBPF_EXECV_OFFSETS_H

#include <stdbool.h>
#include <linux/types.h>

#include "execv.h"

/* The directory the offsets are kept in for the rest of the boot (root's
 * sessions: the lazy mode runs only as root). */
#define SHK_EXECV_OFFSETS_DIR "/run/shackle"

/* From the kernel's BTF (tens of ms): 0 or a negative errno. */
int shk_execv_offsets_parse(struct shk_execv_offsets *o);
/* From dir's file when it was written in this boot, by this euid, in a
 * directory only this euid may enter (then *ret_cached, if not NULL);
 * otherwise parsed and, where dir allows, kept there. dir NULL: always
 * parsed. */
int shk_execv_offsets_get(const char *dir, struct shk_execv_offsets *o, bool *ret_cached);

#endif
