/* SPDX-License-Identifier: MIT */
/*
 * Userland loaders (shackle/loaders.h): which file names are loaders, and
 * where each one's command line names the program it runs; an argument the
 * table cannot place is unparsed (the supervisor refuses the exec).
 */
#include <check.h>
#include "checkrun.h"
#include <stdio.h>
#include <string.h>

#include <shackle/loaders.h>

START_TEST(test_names)
{
	static const char *const yes[] = {
		"/usr/bin/valgrind", "valgrind.bin", "/usr/libexec/valgrind/memcheck-amd64-linux",
		"/usr/libexec/valgrind/none-amd64-linux", "/usr/lib/valgrind/exp-bbv-x86-linux",
		"/usr/bin/qemu-x86_64", "/usr/bin/qemu-aarch64-static", "qemu-riscv64",
		"/usr/bin/box64", "/usr/local/bin/box86", "/usr/bin/FEXLoader", "FEXInterpreter",
	};
	static const char *const no[] = {
		"/usr/bin/valgrind-listener", "/usr/libexec/valgrind/vgpreload_core-amd64-linux.so",
		"/usr/libexec/valgrind/getoff-amd64-linux", "/usr/bin/qemu-img",
		"/usr/bin/qemu-system-x86_64", "/usr/bin/qemu-nbd", "/usr/bin/qemu-x86_64-dynamic",
		"/usr/bin/box", "/usr/bin/ls", "/usr/bin/valgrind/", "none-amd64",
	};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		ck_assert_msg(shk_loader_by_name(yes[i]), "%s", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		ck_assert_msg(!shk_loader_by_name(no[i]), "%s", no[i]);
	ck_assert_str_eq(shk_loader_name(shk_loader_by_name("/usr/bin/qemu-arm")), "qemu-user");
	for (const char *const *p = shk_loader_typical_paths(); *p; p++)
		ck_assert_msg(shk_loader_by_name(*p), "%s", *p);
}
END_TEST

/* argv as one string split at spaces; '_' stands for an empty argument */
static shk_loader_parse parse(const char *loader, const char *cmd, shk_loader_cmd *c)
{
	static char buf[512];
	static const char *v[32];
	size_t n = 0;

	snprintf(buf, sizeof(buf), "%s", cmd);
	for (char *t = strtok(buf, " "); t && n < 32; t = strtok(NULL, " "))
		v[n++] = strcmp(t, "_") ? t : "";
	return shk_loader_parse_argv(shk_loader_by_name(loader), v, n, c);
}

static void target(const char *loader, const char *cmd, const char *want, const char *argv0,
                   bool code)
{
	shk_loader_cmd c;
	char copy[512];
	const char *v[32];
	size_t n = 0;

	ck_assert_msg(parse(loader, cmd, &c) == SHK_LOADER_TARGET, "%s", cmd);
	snprintf(copy, sizeof(copy), "%s", cmd);
	for (char *t = strtok(copy, " "); t && n < 32; t = strtok(NULL, " "))
		v[n++] = t;
	ck_assert_msg(c.target < n && !strcmp(v[c.target], want), "%s: target %zu", cmd, c.target);
	ck_assert_msg(argv0 ? c.argv0 && !strcmp(c.argv0, argv0) : !c.argv0, "%s: argv0", cmd);
	ck_assert_msg(c.code_opts == code, "%s: code_opts", cmd);
}

static void unparsed(const char *loader, const char *cmd, size_t bad)
{
	shk_loader_cmd c;

	ck_assert_msg(parse(loader, cmd, &c) == SHK_LOADER_UNPARSED, "%s", cmd);
	ck_assert_msg(c.bad == bad && c.why && c.why[0], "%s: bad %zu", cmd, c.bad);
}

static void none(const char *loader, const char *cmd)
{
	shk_loader_cmd c;

	ck_assert_msg(parse(loader, cmd, &c) == SHK_LOADER_NO_TARGET, "%s", cmd);
}

START_TEST(test_valgrind)
{
	target("valgrind", "valgrind --tool=none /bin/x a b", "/bin/x", NULL, false);
	target("valgrind", "valgrind -q -v --log-file=/tmp/l ./x", "./x", NULL, false);
	target("valgrind", "valgrind -- -odd/x", "-odd/x", NULL, false);
	target("memcheck-amd64-linux", "valgrind --trace-children=yes /bin/x --tool=y", "/bin/x",
	       NULL, false);
	/* --help does not stop the scan: a program after it is still judged */
	target("valgrind", "valgrind --help /bin/x", "/bin/x", NULL, false);
	none("valgrind", "valgrind --version");
	none("valgrind", "valgrind");
	none("valgrind", "valgrind --tool=none --");
	/* valgrind looks a name without '/' up in PATH */
	unparsed("valgrind", "valgrind --tool=none ls", 2);
	unparsed("valgrind", "valgrind _", 1);
}
END_TEST

START_TEST(test_qemu)
{
	target("qemu-x86_64", "qemu-x86_64 /bin/x a", "/bin/x", NULL, false);
	target("qemu-x86_64", "qemu-x86_64 ls", "ls", NULL, false); /* opened as given */
	target("qemu-aarch64-static", "q -cpu max -s 1M -B 0x1000 -R 1G -d in_asm -D /l -g 1234 "
	       "-r 6.0 -p 4096 -seed 1 -trace x -t 34 -dfilter 0x1 -tb-size 8 -U A /bin/x",
	       "/bin/x", NULL, false);
	target("qemu-x86_64", "q --strace --one-insn-per-tb -singlestep -0 fake /bin/x", "/bin/x",
	       "fake", false);
	target("qemu-x86_64", "q -L /tmp/root /bin/x", "/bin/x", NULL, true);
	target("qemu-x86_64", "q --E LD_PRELOAD=/tmp/e.so /bin/x", "/bin/x", NULL, true);
	target("qemu-x86_64", "q -plugin /tmp/p.so /bin/x", "/bin/x", NULL, true);
	target("qemu-x86_64", "q -- -x", "-x", NULL, false);
	/* the value of an option is never the program */
	target("qemu-x86_64", "q -L /bin/decoy /bin/x", "/bin/x", NULL, true);
	none("qemu-x86_64", "q -cpu");
	none("qemu-x86_64", "q -version");
	unparsed("qemu-x86_64", "q -newopt /bin/decoy /bin/x", 1);
	unparsed("qemu-x86_64", "q -s 1 --weird /bin/x", 3);
}
END_TEST

START_TEST(test_box_fex)
{
	target("box64", "box64 /bin/x a", "/bin/x", NULL, false);
	target("box86", "box86 ./x", "./x", NULL, false);
	none("box64", "box64 --help");
	none("box64", "box64 -v");
	none("box64", "box64");
	unparsed("box64", "box64 --tool /bin/x", 1);
	unparsed("box64", "box64 x", 1); /* found through PATH */
	target("FEXLoader", "FEXLoader /bin/x", "/bin/x", NULL, false);
	target("FEXInterpreter", "FEXInterpreter /bin/x", "/bin/x", NULL, false);
	unparsed("FEXLoader", "FEXLoader -c irjit /bin/x", 1);
	none("FEXLoader", "FEXLoader");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("loaders");
	TCase *tc = tcase_create("loaders");

	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_valgrind);
	tcase_add_test(tc, test_qemu);
	tcase_add_test(tc, test_box_fex);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
