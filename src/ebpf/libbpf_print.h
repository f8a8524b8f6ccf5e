/* SPDX-License-Identifier: MIT */
/* The libbpf print callback of every shackle library that loads programs. */
#ifndef SHACKLE_EBPF_LIBBPF_PRINT_H
#define SHACKLE_EBPF_LIBBPF_PRINT_H

#include <stdarg.h>

#include <bpf/libbpf.h>

/* Library code does not print; verifier logs are for `bpftool prog load`.
 * For libbpf_set_print(), before a skeleton is opened. */
int shk_libbpf_silent(enum libbpf_print_level level, const char *fmt, va_list ap);

#endif
