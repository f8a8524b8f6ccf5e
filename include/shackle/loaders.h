/* SPDX-License-Identifier: MIT */
/*
 * shackle/loaders.h — userland loaders: programs that run another file as
 * data, named on their command line (valgrind, qemu-user, box64, box86,
 * FEX). The kernel execs the loader; the program it then runs is never
 * exec'd, so the supervisor judges it from the loader's argv, as it judges
 * the program ld.so is asked to run (docs/exec.md, "Hard links, fds and
 * copies").
 *
 * Recognition is by file name only (a renamed copy is a program of its
 * own). Each loader's option syntax is taken from its documentation (the
 * sources are named in loaders.c); an argument the table cannot place (an
 * option it does not know, which might take a value) makes the command
 * line unparsed, and the exec is refused.
 *
 * Pure: no syscalls, no allocation.
 */
#ifndef SHACKLE_LOADERS_H
#define SHACKLE_LOADERS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct shk_loader shk_loader;

/* The loader a file is by its name (the part after the last '/'), or NULL. */
const shk_loader *shk_loader_by_name(const char *path);
/* Its short name for the log ("valgrind", "qemu-user", "box64", ...). */
const char *shk_loader_name(const shk_loader *l);

typedef enum shk_loader_parse {
	SHK_LOADER_TARGET = 0,   /* argv[target] is the program it runs */
	SHK_LOADER_NO_TARGET,    /* nothing is run (--help, --version, no program) */
	SHK_LOADER_UNPARSED,     /* argv[bad] cannot be placed: refuse */
} shk_loader_parse;

typedef struct shk_loader_cmd {
	size_t target;      /* SHK_LOADER_TARGET: index of the program's name */
	size_t bad;         /* SHK_LOADER_UNPARSED: index of the argument */
	const char *why;    /* SHK_LOADER_UNPARSED: what is wrong with it */
	const char *argv0;  /* the program's argv[0] when an option sets it, else NULL */
	/* options that load code of the caller's choosing into the program
	 * (qemu's -E, -L, -plugin): judged as exec.loader_env */
	bool code_opts;
} shk_loader_cmd;

/*
 * Where the program is in the loader's argv (argv[0] is the loader's own
 * name). A program name without a '/' is unparsed for loaders that look it
 * up in PATH (valgrind, box64): the name the loader will find is not the
 * one the supervisor can judge.
 */
shk_loader_parse shk_loader_parse_argv(const shk_loader *l, const char *const *argv, size_t argc,
                                       shk_loader_cmd *ret);

/* Where each loader is usually installed: NULL-terminated. shk_loader_by_name
 * knows every one of them. */
const char *const *shk_loader_typical_paths(void);
/* Directories whose files may be loaders (valgrind's tool binaries, qemu's
 * per-architecture programs): NULL-terminated glob patterns. */
const char *const *shk_loader_search_globs(void);

#endif
