/* SPDX-License-Identifier: MIT */
/*
 * Finding and opening the model gateway module (gateway/module.h) for
 * shackle-run and `shackle attach`. It is looked for relative to the
 * running executable (both are installed in BINDIR),
 * never through the environment or the loader's search path: first where
 * `ninja install` puts it (LIBDIR/shackle, also under a --destdir or a moved
 * prefix), then beside the executable (the build tree). A file that is not
 * as trustworthy as the executable itself (owned by someone other than
 * root, the caller or the executable's owner, or writable by group or
 * others) is refused.
 */
#ifndef SHACKLE_SOURCES_GATEWAY_MODULE_H
#define SHACKLE_SOURCES_GATEWAY_MODULE_H

#include <stddef.h>

#include "gateway/module.h"

/* 0 and *ret (valid until exit: the module is never closed), or a negative
 * errno with err naming what was tried and why it failed. */
int shk_gateway_module_open(const struct shk_gateway_api **ret, char *err, size_t errlen);

#endif
