/* SPDX-License-Identifier: MIT */
/*
 * shackle/execenv.h — environment variables that make an allowed program run
 * code of the caller's choosing inside its own process, where no further
 * exec (and so no further judgement) happens.
 *
 * Two classes (docs/policy.md, exec.loader_env and exec.interp_env):
 *   - loader variables (LD_PRELOAD, LD_AUDIT, LD_LIBRARY_PATH, GCONV_PATH,
 *     OPENSSL_CONF, plugin paths of GLib, Qt, GStreamer, ...): ld.so or a
 *     library many programs link loads code from them, so they are judged
 *     on every exec;
 *   - interpreter variables (PYTHONPATH, BASH_ENV, NODE_OPTIONS, ...): by
 *     default judged on every exec as well, because a program embeds an
 *     interpreter whatever its name (gdb runs python, vim python and lua);
 *     under the policy's "interp_env_scope": "interpreter" only when a file
 *     of the exec (the program, a "#!" interpreter, the program ld.so runs,
 *     or the rule path it is an alias of) belongs to that interpreter's
 *     family by its file name.
 * Variables that make a program start *another* program (GIT_SSH_COMMAND,
 * EDITOR, BROWSER, ...) are not listed: that program's exec is judged. No
 * such list is complete: configuration found through HOME or XDG_* (a
 * .curlrc, .gdbinit, .npmrc) is not covered.
 *
 * Pure: no syscalls, no allocation.
 */
#ifndef SHACKLE_EXECENV_H
#define SHACKLE_EXECENV_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum shk_env_class {
	SHK_ENV_OTHER = 0,
	SHK_ENV_LOADER,
	SHK_ENV_INTERP,
} shk_env_class;

/* Interpreter families, as bits. */
enum {
	SHK_INTERP_PYTHON = 1u << 0, /* python, python3, python3.12, pypy3, ... */
	SHK_INTERP_NODE = 1u << 1,   /* node, nodejs */
	SHK_INTERP_PERL = 1u << 2,   /* perl, perl5.36.0 */
	SHK_INTERP_RUBY = 1u << 3,   /* ruby, ruby3.1 */
	SHK_INTERP_SHELL = 1u << 4,  /* sh, bash, dash, ash, ksh, mksh, zsh, busybox, ... */
	SHK_INTERP_JAVA = 1u << 5,   /* java */
	SHK_INTERP_PHP = 1u << 6,    /* php, php8.2, php-cgi */
	SHK_INTERP_LUA = 1u << 7,    /* lua, lua5.4, luajit */
	SHK_INTERP_ALL = (1u << 8) - 1,
};

/*
 * The class of one environment entry "NAME=value" (len bytes, no NUL needed)
 * and, for SHK_ENV_INTERP, the families that act on it in *ret_families
 * (may be NULL). An entry without '=' is SHK_ENV_OTHER.
 */
shk_env_class shk_env_classify(const char *entry, size_t len, unsigned *ret_families);

/* The families a program file belongs to, by the last component of path
 * (its name followed by version digits and dots, at most one letter, then
 * nothing or "-" and anything: python3.13t, perl5.36-x86_64-linux-gnu).
 * 0: none. */
unsigned shk_interp_families(const char *path);

/* "python", "node", ...: the name of a single family bit, or "?". */
const char *shk_interp_family_name(unsigned family);

#ifdef __cplusplus
}
#endif
#endif
