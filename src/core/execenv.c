/* SPDX-License-Identifier: MIT */
/*
 * The variables and interpreter names of shackle/execenv.h. Sources for the
 * list: ld.so(8) (LD_PRELOAD, LD_AUDIT, LD_LIBRARY_PATH; GLIBC_TUNABLES:
 * ld.so parses it in every program), iconv_open(3) (GCONV_PATH), locale(7)
 * (LOCPATH); config(5ssl)/openssl(1) (OPENSSL_CONF: a providers or engines
 * section names a module that is dlopen'ed; OPENSSL_MODULES,
 * OPENSSL_ENGINES, OPENSSL_CONF_INCLUDE); krb5.conf(5) ([plugins] module =
 * name:path.so; KRB5_CONFIG); Cyrus SASL (SASL_PATH); GLib (GIO_MODULE_DIR,
 * GIO_EXTRA_MODULES), GTK (GTK_MODULES, GTK3_MODULES, GTK_PATH),
 * gdk-pixbuf (GDK_PIXBUF_MODULE_FILE, GDK_PIXBUF_MODULEDIR), GStreamer
 * (GST_PLUGIN_*), Qt (QT_PLUGIN_PATH, QT_QPA_PLATFORM_PLUGIN_PATH), Mesa,
 * libglvnd, Vulkan, VA-API, VDPAU, OpenCL (driver and layer paths), ALSA
 * (ALSA_CONFIG_PATH, ALSA_PLUGIN_DIR), SANE (SANE_CONFIG_DIR): each loads a
 * shared object from a path the variable gives, in any program that links
 * the library. The userland loaders of shackle/loaders.h: valgrind(1)
 * (VALGRIND_LIB: where its tools and the libraries it preloads into the
 * program are found), qemu-user(1) (QEMU_LD_PREFIX, QEMU_SET_ENV — an
 * LD_PRELOAD for the program —, QEMU_PLUGIN: every QEMU_ variable),
 * box64(1)/box86 (BOX64_LD_PRELOAD, BOX64_LD_LIBRARY_PATH, ...) and FEX
 * (FEX_ROOTFS, ...). Interpreters: python(1) (PYTHONPATH, PYTHONHOME,
 * PYTHONSTARTUP, PYTHONUSERBASE: its site-packages' .pth files are executed,
 * PYTHONPLATLIBDIR, PYTHONPYCACHEPREFIX: a crafted .pyc of sitecustomize,
 * PYTHONINSPECT: an interactive prompt on stdin after the script,
 * PYTHONWARNINGS: a category names a module that is imported,
 * PYTHONBREAKPOINT); node(1) (NODE_OPTIONS --require/--import, NODE_PATH,
 * NODE_REPL_EXTERNAL_MODULE); perlrun(1) (PERL5OPT -M/-d, PERL5LIB, PERLLIB,
 * PERL5DB); ruby(1) (RUBYOPT -r, RUBYLIB; GEM_HOME, GEM_PATH: where
 * rubygems finds required gems); bash(1) (BASH_ENV, ENV, SHELLOPTS/BASHOPTS
 * with xtrace expanding PS4, exported BASH_FUNC_* functions);
 * dash(1)/ksh(1) (ENV; FPATH: ksh and zsh autoload functions from it);
 * zsh(1) (ZDOTDIR: .zshenv is read by every zsh); the JDK's launcher
 * (JAVA_TOOL_OPTIONS, _JAVA_OPTIONS, JDK_JAVA_OPTIONS: -javaagent;
 * CLASSPATH: where the main class is found); php(1) (PHPRC,
 * PHP_INI_SCAN_DIR: auto_prepend_file); lua(1) (LUA_INIT runs code;
 * LUA_PATH, LUA_CPATH and their _5_x versions). The list cannot be
 * complete (docs/policy.md).
 */
#include <stdbool.h>
#include <string.h>

#include <shackle/execenv.h>

/* the first character and the length inline: every variable of every exec
 * is compared with each entry, and most differ at the first character
 * without a load of the name */
struct var {
	const char *name;
	char first;
	unsigned char len;
	unsigned families; /* 0: a loader variable */
	bool prefix;       /* any name that starts with it */
};

#define V(n, f, p) { n, n[0], sizeof(n) - 1, f, p }

static const struct var vars[] = {
	V("LD_PRELOAD", 0, false),
	V("LD_AUDIT", 0, false),
	V("LD_LIBRARY_PATH", 0, false),
	V("GLIBC_TUNABLES", 0, false),
	V("GCONV_PATH", 0, false),
	V("LOCPATH", 0, false),
	V("OPENSSL_CONF", 0, false),
	V("OPENSSL_CONF_INCLUDE", 0, false),
	V("OPENSSL_MODULES", 0, false),
	V("OPENSSL_ENGINES", 0, false),
	V("KRB5_CONFIG", 0, false),
	V("SASL_PATH", 0, false),
	V("GIO_MODULE_DIR", 0, false),
	V("GIO_EXTRA_MODULES", 0, false),
	V("GTK_MODULES", 0, false),
	V("GTK3_MODULES", 0, false),
	V("GTK_PATH", 0, false),
	V("GDK_PIXBUF_MODULE_FILE", 0, false),
	V("GDK_PIXBUF_MODULEDIR", 0, false),
	V("GST_PLUGIN_", 0, true),
	V("QT_PLUGIN_PATH", 0, false),
	V("QT_QPA_PLATFORM_PLUGIN_PATH", 0, false),
	V("LIBGL_DRIVERS_PATH", 0, false),
	V("__EGL_VENDOR_LIBRARY_", 0, true),
	V("VK_ICD_FILENAMES", 0, false),
	V("VK_DRIVER_FILES", 0, false),
	V("VK_ADD_DRIVER_FILES", 0, false),
	V("VK_LAYER_PATH", 0, false),
	V("VK_ADD_LAYER_PATH", 0, false),
	V("LIBVA_DRIVERS_PATH", 0, false),
	V("VDPAU_DRIVER_PATH", 0, false),
	V("OCL_ICD_VENDORS", 0, false),
	V("ALSA_CONFIG_PATH", 0, false),
	V("ALSA_PLUGIN_DIR", 0, false),
	V("SANE_CONFIG_DIR", 0, false),
	V("VALGRIND_LIB", 0, false),
	V("QEMU_", 0, true),
	V("BOX64_", 0, true),
	V("BOX86_", 0, true),
	V("FEX_", 0, true),
	V("PYTHONPATH", SHK_INTERP_PYTHON, false),
	V("PYTHONHOME", SHK_INTERP_PYTHON, false),
	V("PYTHONSTARTUP", SHK_INTERP_PYTHON, false),
	V("PYTHONUSERBASE", SHK_INTERP_PYTHON, false),
	V("PYTHONPLATLIBDIR", SHK_INTERP_PYTHON, false),
	V("PYTHONPYCACHEPREFIX", SHK_INTERP_PYTHON, false),
	V("PYTHONINSPECT", SHK_INTERP_PYTHON, false),
	V("PYTHONWARNINGS", SHK_INTERP_PYTHON, false),
	V("PYTHONBREAKPOINT", SHK_INTERP_PYTHON, false),
	V("NODE_OPTIONS", SHK_INTERP_NODE, false),
	V("NODE_PATH", SHK_INTERP_NODE, false),
	V("NODE_REPL_EXTERNAL_MODULE", SHK_INTERP_NODE, false),
	V("PERL5OPT", SHK_INTERP_PERL, false),
	V("PERL5LIB", SHK_INTERP_PERL, false),
	V("PERLLIB", SHK_INTERP_PERL, false),
	V("PERL5DB", SHK_INTERP_PERL, false),
	V("RUBYOPT", SHK_INTERP_RUBY, false),
	V("RUBYLIB", SHK_INTERP_RUBY, false),
	V("GEM_HOME", SHK_INTERP_RUBY, false),
	V("GEM_PATH", SHK_INTERP_RUBY, false),
	V("BASH_ENV", SHK_INTERP_SHELL, false),
	V("ENV", SHK_INTERP_SHELL, false),
	V("SHELLOPTS", SHK_INTERP_SHELL, false),
	V("BASHOPTS", SHK_INTERP_SHELL, false),
	V("PS4", SHK_INTERP_SHELL, false),
	V("FPATH", SHK_INTERP_SHELL, false),
	V("ZDOTDIR", SHK_INTERP_SHELL, false),
	V("BASH_FUNC_", SHK_INTERP_SHELL, true),
	V("JAVA_TOOL_OPTIONS", SHK_INTERP_JAVA, false),
	V("_JAVA_OPTIONS", SHK_INTERP_JAVA, false),
	V("JDK_JAVA_OPTIONS", SHK_INTERP_JAVA, false),
	V("CLASSPATH", SHK_INTERP_JAVA, false),
	V("PHPRC", SHK_INTERP_PHP, false),
	V("PHP_INI_SCAN_DIR", SHK_INTERP_PHP, false),
	V("LUA_INIT", SHK_INTERP_LUA, true),
	V("LUA_PATH", SHK_INTERP_LUA, true),
	V("LUA_CPATH", SHK_INTERP_LUA, true),
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
		size_t vl = vars[i].len;

		if (entry[0] != vars[i].first)
			continue;
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

/* The rest of a name after the family's: version digits and dots, at most
 * one letter (ABI flags such as python3.13t), then nothing or a `-` and
 * anything (perl5.36-x86_64-linux-gnu, python3.11-dbg). */
static bool version_suffix(const char *s)
{
	while ((*s >= '0' && *s <= '9') || *s == '.')
		s++;
	if (*s >= 'a' && *s <= 'z')
		s++;
	return *s == '\0' || *s == '-';
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
