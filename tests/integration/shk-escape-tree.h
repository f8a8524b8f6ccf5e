/* SPDX-License-Identifier: MIT */
/* Process-tree attacks of shk-escape (see shk-escape.c for the modes). */
#ifndef SHK_ESCAPE_TREE_H
#define SHK_ESCAPE_TREE_H

int do_kill_supervisor(char **argv);
int do_doublefork(char **argv);
int do_persist(char **argv);

#endif
