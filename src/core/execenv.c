/* SPDX-License-Identifier: MIT */
/*
 * The variables and interpreter names of shackle/execenv.h. Sources for the
 * list: ld.so(8) (LD_PRELOAD, LD_AUDIT, LD_LIBRARY_PATH), iconv_open(3)
 * (GCONV_PATH); python(1) (PYTHONPATH, PYTHONHOME, PYTHONSTARTUP,
 * PYTHONUSERBASE: its site-packages' .pth files are executed,
 * PYTHONPLATLIBDIR); node(1) (NODE_OPTIONS --require/--import, NODE_PATH,
 * NODE_REPL_EXTERNAL_MODULE); perlrun(1) (PERL5OPT -M/-d, PERL5LIB, PERLLIB,
 * PERL5DB); ruby(1) (RUBYOPT -r, RUBYLIB); bash(1) (BASH_ENV, ENV,
 * SHELLOPTS/BASHOPTS with xtrace expanding PS4, exported BASH_FUNC_*
 * functions); dash(1)/ksh(1) (ENV); zsh(1) (ZDOTDIR: .zshenv is read by
 * every zsh); the JDK's launcher (JAVA_TOOL_OPTIONS, _JAVA_OPTIONS,
 * JDK_JAVA_OPTIONS: -javaagent); php(1) (PHPRC, PHP_INI_SCAN_DIR:
 * auto_prepend_file); lua(1) (LUA_INIT runs code; LUA_PATH, LUA_CPATH and
 * their _5_x versions).
 */
#include <stdbool.h>
#include <string.h>

#include <shackle/execenv.h>

struct var {
	const char *name;
	unsigned families; /* 0: a loader variable */
	bool prefix;       /* any name that starts with it */
};

static const struct var vars[] = {
	{ "LD_PRELOAD", 0, false },
	{ "LD_AUDIT", 0, false },
	{ "LD_LIBRARY_PATH", 0, false },
	{ "GCONV_PATH", 0, false },
	{ "PYTHONPATH", SHK_INTERP_PYTHON, false },
	{ "PYTHONHOME", SHK_INTERP_PYTHON, false },
	{ "PYTHONSTARTUP", SHK_INTERP_PYTHON, false },
	{ "PYTHONUSERBASE", SHK_INTERP_PYTHON, false },
	{ "PYTHONPLATLIBDIR", SHK_INTERP_PYTHON, false },
	{ "NODE_OPTIONS", SHK_INTERP_NODE, false },
	{ "NODE_PATH", SHK_INTERP_NODE, false },
	{ "NODE_REPL_EXTERNAL_MODULE", SHK_INTERP_NODE, false },
	{ "PERL5OPT", SHK_INTERP_PERL, false },
	{ "PERL5LIB", SHK_INTERP_PERL, false },
	{ "PERLLIB", SHK_INTERP_PERL, false },
	{ "PERL5DB", SHK_INTERP_PERL, false },
	{ "RUBYOPT", SHK_INTERP_RUBY, false },
	{ "RUBYLIB", SHK_INTERP_RUBY, false },
	{ "BASH_ENV", SHK_INTERP_SHELL, false },
	{ "ENV", SHK_INTERP_SHELL, false },
	{ "SHELLOPTS", SHK_INTERP_SHELL, false },
	{ "BASHOPTS", SHK_INTERP_SHELL, false },
	{ "PS4", SHK_INTERP_SHELL, false },
	{ "ZDOTDIR", SHK_INTERP_SHELL, false },
	{ "BASH_FUNC_", SHK_INTERP_SHELL, true },
	{ "JAVA_TOOL_OPTIONS", SHK_INTERP_JAVA, false },
	{ "_JAVA_OPTIONS", SHK_INTERP_JAVA, false },
	{ "JDK_JAVA_OPTIONS", SHK_INTERP_JAVA, false },
	{ "PHPRC", SHK_INTERP_PHP, false },
	{ "PHP_INI_SCAN_DIR", SHK_INTERP_PHP, false },
	{ "LUA_INIT", SHK_INTERP_LUA, true },
	{ "LUA_PATH", SHK_INTERP_LUA, true },
	{ "LUA_CPATH", SHK_INTERP_LUA, true },
};

shk_env_class shk_env_classify(const char *entry, size_t len, unsigned *ret_families)
{
	const char *eq = entry ? memchr(entry, '=', len) : NULL;
	size_t nl = eq ? (size_t)(eq - entry) : 0;

	if (ret_families)
		*ret_families = 0;
	if (!eq)
		return SHK_ENV_OTHER;
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		size_t vl = strlen(vars[i].name);

		if (vars[i].prefix ? nl < vl : nl != vl)
			continue;
		if (memcmp(entry, vars[i].name, vl) != 0)
			continue;
		if (!vars[i].families)
			return SHK_ENV_LOADER;
		if (ret_families)
			*ret_families = vars[i].families;
		return SHK_ENV_INTERP;
	}
	return SHK_ENV_OTHER;
}

static const struct {
	const char *name;
	unsigned family;
} names[] = {
	{ "python", SHK_INTERP_PYTHON }, { "pypy", SHK_INTERP_PYTHON },
	{ "node", SHK_INTERP_NODE },     { "nodejs", SHK_INTERP_NODE },
	{ "perl", SHK_INTERP_PERL },     { "ruby", SHK_INTERP_RUBY },
	{ "sh", SHK_INTERP_SHELL },      { "bash", SHK_INTERP_SHELL },
	{ "rbash", SHK_INTERP_SHELL },   { "dash", SHK_INTERP_SHELL },
	{ "ash", SHK_INTERP_SHELL },     { "ksh", SHK_INTERP_SHELL },
	{ "mksh", SHK_INTERP_SHELL },    { "pdksh", SHK_INTERP_SHELL },
	{ "zsh", SHK_INTERP_SHELL },     { "yash", SHK_INTERP_SHELL },
	{ "posh", SHK_INTERP_SHELL },    { "busybox", SHK_INTERP_SHELL },
	{ "java", SHK_INTERP_JAVA },     { "php", SHK_INTERP_PHP },
	{ "php-cgi", SHK_INTERP_PHP },   { "php-fpm", SHK_INTERP_PHP },
	{ "lua", SHK_INTERP_LUA },       { "luajit", SHK_INTERP_LUA },
};

/* The rest of a name after the family's: version digits and dots, then at
 * most one letter (ABI flags such as python3.13t). */
static bool version_suffix(const char *s)
{
	while ((*s >= '0' && *s <= '9') || *s == '.')
		s++;
	if (*s >= 'a' && *s <= 'z')
		s++;
	return *s == '\0';
}

unsigned shk_interp_families(const char *path)
{
	const char *base;
	unsigned f = 0;

	if (!path)
		return 0;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i].name);

		if (strncmp(base, names[i].name, n) == 0 && version_suffix(base + n))
			f |= names[i].family;
	}
	return f;
}

const char *shk_interp_family_name(unsigned family)
{
	static const char *const fam[] = { "python", "node", "perl", "ruby", "shell", "java", "php", "lua" };

	for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++)
		if (family == 1u << i)
			return fam[i];
	return "?";
}
