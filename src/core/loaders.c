/* SPDX-License-Identifier: MIT */
/*
 * Userland loaders by file name, and where their command line names the
 * program they run (shackle/loaders.h). Sources of the option syntax:
 *
 *   valgrind  valgrind(1), https://valgrind.org/docs/manual/manual-core.html
 *             ("valgrind [valgrind-options] your-prog [your-prog-options]";
 *             every option is one word, "--name=value" or -h -q -v -d; the
 *             first word not starting with '-', or the one after "--", is
 *             the program, found through PATH when it has no '/').
 *             /usr/bin/valgrind (a launcher; on Debian a script running
 *             valgrind.bin) execs the tool binary, e.g.
 *             /usr/libexec/valgrind/memcheck-amd64-linux, with the same argv.
 *   qemu-user qemu-user(1), https://www.qemu.org/docs/master/user/main.html
 *             and linux-user/main.c arg_table: "-opt" or "--opt", options
 *             with a value take it as the next word, "--" ends them; the
 *             program name is opened as given (no PATH search).
 *   box64     box64(1), https://github.com/ptitSeb/box64/blob/main/docs/box64.pod
 *             ("box64 [--help] [--version] executable"; settings come from
 *             the environment and rc files, not from options); box86 alike.
 *   FEX       https://wiki.fex-emu.com/index.php/Development:Setting_up_FEX
 *             (FEXLoader PROG ARGS; FEXInterpreter is the binfmt_misc
 *             handler, PROG ARGS): options are not parsed here, any one of
 *             them makes the command line unparsed.
 */
#include <string.h>

#include <shackle/loaders.h>

typedef enum syntax { SYN_VALGRIND, SYN_QEMU, SYN_BOX, SYN_FEX } syntax;

struct shk_loader {
	const char *name;
	syntax syn;
	bool path_search; /* a name without '/' is looked up in PATH */
};

static const shk_loader valgrind = { "valgrind", SYN_VALGRIND, true };
static const shk_loader qemu = { "qemu-user", SYN_QEMU, false };
static const shk_loader box64 = { "box64", SYN_BOX, true };
static const shk_loader box86 = { "box86", SYN_BOX, true };
static const shk_loader fex = { "FEX", SYN_FEX, true };

static const char *base(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

static bool has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static bool has_suffix(const char *s, size_t len, const char *suf)
{
	size_t l = strlen(suf);

	return len >= l && memcmp(s + len - l, suf, l) == 0;
}

/* TOOL-ARCH-OS, valgrind's tool binaries (memcheck-amd64-linux) */
static bool valgrind_tool(const char *b)
{
	static const char *const tools[] = {
		"memcheck-", "cachegrind-", "callgrind-", "dhat-", "drd-", "helgrind-",
		"lackey-", "massif-", "none-", "exp-bbv-", "exp-dhat-", "exp-sgcheck-",
	};
	static const char *const oses[] = { "-linux", "-freebsd", "-solaris", "-darwin" };
	size_t len = strlen(b);
	bool os = false;

	for (size_t i = 0; i < sizeof(oses) / sizeof(oses[0]); i++)
		os = os || has_suffix(b, len, oses[i]);
	for (size_t i = 0; os && i < sizeof(tools) / sizeof(tools[0]); i++)
		if (has_prefix(b, tools[i]) && len > strlen(tools[i]) + 6)
			return true;
	return false;
}

/* qemu-ARCH or qemu-ARCH-static: the user-mode emulators, not qemu-img,
 * qemu-system-*, qemu-nbd and the other tools */
static bool qemu_user(const char *b)
{
	static const char *const arch[] = {
		"aarch64", "aarch64_be", "alpha", "arm", "armeb", "cris", "hexagon", "hppa",
		"i386", "loongarch64", "m68k", "microblaze", "microblazeel", "mips", "mips64",
		"mips64el", "mipsel", "mipsn32", "mipsn32el", "nios2", "or1k", "ppc", "ppc64",
		"ppc64le", "riscv32", "riscv64", "s390x", "sh4", "sh4eb", "sparc",
		"sparc32plus", "sparc64", "x86_64", "xtensa", "xtensaeb",
	};
	size_t len;

	if (!has_prefix(b, "qemu-"))
		return false;
	b += 5;
	len = strlen(b);
	if (has_suffix(b, len, "-static"))
		len -= 7;
	for (size_t i = 0; i < sizeof(arch) / sizeof(arch[0]); i++)
		if (strlen(arch[i]) == len && memcmp(b, arch[i], len) == 0)
			return true;
	return false;
}

const shk_loader *shk_loader_by_name(const char *path)
{
	const char *b = base(path);

	if (!strcmp(b, "valgrind") || !strcmp(b, "valgrind.bin") || valgrind_tool(b))
		return &valgrind;
	if (qemu_user(b))
		return &qemu;
	if (!strcmp(b, "box64"))
		return &box64;
	if (!strcmp(b, "box86"))
		return &box86;
	if (!strcmp(b, "FEXLoader") || !strcmp(b, "FEXInterpreter"))
		return &fex;
	return NULL;
}

const char *shk_loader_name(const shk_loader *l)
{
	return l->name;
}

static shk_loader_parse unparsed(shk_loader_cmd *c, size_t i, const char *why)
{
	c->bad = i;
	c->why = why;
	return SHK_LOADER_UNPARSED;
}

static shk_loader_parse valgrind_parse(const char *const *argv, size_t argc, shk_loader_cmd *c)
{
	for (size_t i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			if (i + 1 == argc)
				return SHK_LOADER_NO_TARGET;
			c->target = i + 1;
			return SHK_LOADER_TARGET;
		}
		if (argv[i][0] != '-') {
			c->target = i;
			return SHK_LOADER_TARGET;
		}
	}
	return SHK_LOADER_NO_TARGET;
}

/* linux-user/main.c arg_table: the options that take the next word */
static bool qemu_with_value(const char *o, shk_loader_cmd *c)
{
	static const char *const v[] = {
		"g", "L", "s", "cpu", "E", "U", "0", "r", "B", "R", "t", "d", "dfilter", "D",
		"p", "tb-size", "seed", "trace", "plugin",
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (!strcmp(o, v[i])) {
			/* a prefix for the guest's ld.so, a host plugin, the
			 * guest's environment (LD_PRELOAD): code of the caller's */
			c->code_opts = c->code_opts || !strcmp(o, "L") || !strcmp(o, "plugin") ||
			               !strcmp(o, "E");
			return true;
		}
	return false;
}

static bool qemu_flag(const char *o)
{
	static const char *const f[] = {
		"h", "help", "one-insn-per-tb", "singlestep", "strace", "version",
		"xtensa-abi-call0", "perfmap", "jitdump",
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (!strcmp(o, f[i]))
			return true;
	return false;
}

static shk_loader_parse qemu_parse(const char *const *argv, size_t argc, shk_loader_cmd *c)
{
	for (size_t i = 1; i < argc; i++) {
		const char *o = argv[i];

		if (o[0] != '-') {
			c->target = i;
			return SHK_LOADER_TARGET;
		}
		o++;
		if (!strcmp(o, "-")) {
			if (i + 1 == argc)
				return SHK_LOADER_NO_TARGET;
			c->target = i + 1;
			return SHK_LOADER_TARGET;
		}
		if (o[0] == '-')
			o++; /* --opt is -opt */
		if (qemu_with_value(o, c)) {
			if (++i == argc)
				return SHK_LOADER_NO_TARGET; /* qemu: missing argument */
			if (!strcmp(o, "0"))
				c->argv0 = argv[i];
		} else if (!qemu_flag(o)) {
			return unparsed(c, i, "an option qemu-user may read a value after");
		}
	}
	return SHK_LOADER_NO_TARGET;
}

static shk_loader_parse box_parse(const char *const *argv, size_t argc, shk_loader_cmd *c)
{
	if (argc < 2)
		return SHK_LOADER_NO_TARGET;
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--version") ||
	    !strcmp(argv[1], "-v"))
		return SHK_LOADER_NO_TARGET;
	if (argv[1][0] == '-')
		return unparsed(c, 1, "an option the table does not know");
	c->target = 1;
	return SHK_LOADER_TARGET;
}

static shk_loader_parse fex_parse(const char *const *argv, size_t argc, shk_loader_cmd *c)
{
	if (argc < 2)
		return SHK_LOADER_NO_TARGET;
	if (argv[1][0] == '-')
		return unparsed(c, 1, "FEX options are not parsed");
	c->target = 1;
	return SHK_LOADER_TARGET;
}

shk_loader_parse shk_loader_parse_argv(const shk_loader *l, const char *const *argv, size_t argc,
                                       shk_loader_cmd *ret)
{
	shk_loader_parse r;

	memset(ret, 0, sizeof(*ret));
	switch (l->syn) {
	case SYN_VALGRIND: r = valgrind_parse(argv, argc, ret); break;
	case SYN_QEMU: r = qemu_parse(argv, argc, ret); break;
	case SYN_BOX: r = box_parse(argv, argc, ret); break;
	default: r = fex_parse(argv, argc, ret); break;
	}
	if (r == SHK_LOADER_TARGET && l->path_search && !strchr(argv[ret->target], '/'))
		return unparsed(ret, ret->target, "a program name the loader looks up in PATH");
	return r;
}

const char *const *shk_loader_typical_paths(void)
{
	static const char *const p[] = {
		"/usr/bin/valgrind", "/usr/bin/valgrind.bin", "/usr/local/bin/valgrind",
		"/usr/libexec/valgrind/memcheck-amd64-linux", "/usr/libexec/valgrind/none-amd64-linux",
		"/usr/lib/x86_64-linux-gnu/valgrind/memcheck-amd64-linux",
		"/usr/lib/valgrind/memcheck-amd64-linux",
		"/usr/bin/qemu-x86_64", "/usr/bin/qemu-x86_64-static", "/usr/bin/qemu-aarch64",
		"/usr/bin/qemu-aarch64-static", "/usr/bin/qemu-i386", "/usr/bin/qemu-i386-static",
		"/usr/bin/qemu-arm", "/usr/bin/qemu-arm-static", "/usr/bin/qemu-riscv64",
		"/usr/bin/qemu-riscv64-static",
		"/usr/bin/box64", "/usr/local/bin/box64", "/usr/bin/box86", "/usr/local/bin/box86",
		"/usr/bin/FEXLoader", "/usr/bin/FEXInterpreter", NULL,
	};
	return p;
}

const char *const *shk_loader_search_globs(void)
{
	static const char *const g[] = {
		"/usr/bin/valgrind*", "/usr/local/bin/valgrind*", "/usr/libexec/valgrind/*",
		"/usr/lib/valgrind/*", "/usr/lib/x86_64-linux-gnu/valgrind/*", "/usr/bin/qemu-*",
		"/usr/local/bin/qemu-*", "/usr/local/bin/box*", "/usr/bin/FEX*", NULL,
	};
	return g;
}
