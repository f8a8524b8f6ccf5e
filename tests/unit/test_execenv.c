/* SPDX-License-Identifier: MIT */
/*
 * The judged environment variables of an exec (shackle/execenv.h) and the
 * policy's exec.interp_env: which entries are loader or interpreter
 * variables (and of which interpreter), which program names belong to which
 * interpreter family, and the policy field's default and values.
 */
#include <check.h>
#include "checkrun.h"
#include <string.h>

#include <shackle/execenv.h>
#include <shackle/policy.h>

static shk_env_class cls(const char *e, unsigned *f)
{
	return shk_env_classify(e, strlen(e), f);
}

START_TEST(test_classify)
{
	static const struct {
		const char *entry;
		shk_env_class c;
		unsigned f;
	} t[] = {
		{ "LD_PRELOAD=/x.so", SHK_ENV_LOADER, 0 },
		{ "LD_AUDIT=", SHK_ENV_LOADER, 0 },
		{ "GCONV_PATH=/tmp", SHK_ENV_LOADER, 0 },
		{ "PYTHONPATH=/tmp/evil", SHK_ENV_INTERP, SHK_INTERP_PYTHON },
		{ "PYTHONSTARTUP=/x", SHK_ENV_INTERP, SHK_INTERP_PYTHON },
		{ "PYTHONHOME=/x", SHK_ENV_INTERP, SHK_INTERP_PYTHON },
		{ "PYTHONUSERBASE=/x", SHK_ENV_INTERP, SHK_INTERP_PYTHON },
		{ "NODE_OPTIONS=--require /x.js", SHK_ENV_INTERP, SHK_INTERP_NODE },
		{ "NODE_PATH=/x", SHK_ENV_INTERP, SHK_INTERP_NODE },
		{ "PERL5OPT=-Mevil", SHK_ENV_INTERP, SHK_INTERP_PERL },
		{ "PERL5LIB=/x", SHK_ENV_INTERP, SHK_INTERP_PERL },
		{ "PERLLIB=/x", SHK_ENV_INTERP, SHK_INTERP_PERL },
		{ "RUBYOPT=-r/x", SHK_ENV_INTERP, SHK_INTERP_RUBY },
		{ "RUBYLIB=/x", SHK_ENV_INTERP, SHK_INTERP_RUBY },
		{ "BASH_ENV=/x", SHK_ENV_INTERP, SHK_INTERP_SHELL },
		{ "ENV=/x", SHK_ENV_INTERP, SHK_INTERP_SHELL },
		{ "BASH_FUNC_ls%%=() {  evil\n}", SHK_ENV_INTERP, SHK_INTERP_SHELL },
		{ "JAVA_TOOL_OPTIONS=-javaagent:/x.jar", SHK_ENV_INTERP, SHK_INTERP_JAVA },
		{ "LUA_INIT_5_4=os.execute'x'", SHK_ENV_INTERP, SHK_INTERP_LUA },
		/* review F3/F4: code loaded by a library, and more interpreter hooks */
		{ "OPENSSL_CONF=/tmp/evil.cnf", SHK_ENV_LOADER, 0 },
		{ "OPENSSL_MODULES=/tmp", SHK_ENV_LOADER, 0 },
		{ "OPENSSL_ENGINES=/tmp", SHK_ENV_LOADER, 0 },
		{ "GLIBC_TUNABLES=glibc.malloc.check=3", SHK_ENV_LOADER, 0 },
		{ "LOCPATH=/tmp", SHK_ENV_LOADER, 0 },
		{ "KRB5_CONFIG=/tmp/k", SHK_ENV_LOADER, 0 },
		{ "SASL_PATH=/tmp", SHK_ENV_LOADER, 0 },
		{ "GIO_MODULE_DIR=/tmp", SHK_ENV_LOADER, 0 },
		{ "GST_PLUGIN_PATH_1_0=/tmp", SHK_ENV_LOADER, 0 },
		{ "QT_PLUGIN_PATH=/tmp", SHK_ENV_LOADER, 0 },
		{ "VALGRIND_LIB=/tmp/vg", SHK_ENV_LOADER, 0 },
		{ "QEMU_SET_ENV=LD_PRELOAD=/tmp/x.so", SHK_ENV_LOADER, 0 },
		{ "QEMU_LD_PREFIX=/tmp", SHK_ENV_LOADER, 0 },
		{ "BOX64_LD_PRELOAD=/tmp/x.so", SHK_ENV_LOADER, 0 },
		{ "FEX_ROOTFS=/tmp", SHK_ENV_LOADER, 0 },
		{ "VALGRIND_OPTS=-q", SHK_ENV_OTHER, 0 },
		{ "PYTHONPYCACHEPREFIX=/tmp/pyc", SHK_ENV_INTERP, SHK_INTERP_PYTHON },
		{ "PYTHONINSPECT=1", SHK_ENV_INTERP, SHK_INTERP_PYTHON },
		{ "PYTHONWARNINGS=ignore::evil.W", SHK_ENV_INTERP, SHK_INTERP_PYTHON },
		{ "CLASSPATH=/tmp", SHK_ENV_INTERP, SHK_INTERP_JAVA },
		{ "FPATH=/tmp", SHK_ENV_INTERP, SHK_INTERP_SHELL },
		{ "GEM_PATH=/tmp", SHK_ENV_INTERP, SHK_INTERP_RUBY },
		/* not judged: other variables, other spellings, no '=' */
		{ "PATH=/usr/bin", SHK_ENV_OTHER, 0 },
		{ "PYTHONPATHX=/x", SHK_ENV_OTHER, 0 },
		{ "pythonpath=/x", SHK_ENV_OTHER, 0 },
		{ "XENV=/x", SHK_ENV_OTHER, 0 },
		{ "ENVX=/x", SHK_ENV_OTHER, 0 },
		{ "LD_PRELOAD", SHK_ENV_OTHER, 0 },
		{ "PYTHONDONTWRITEBYTECODE=1", SHK_ENV_OTHER, 0 },
		{ "OPENSSL_CONFX=1", SHK_ENV_OTHER, 0 },
		{ "SSL_CERT_FILE=/x", SHK_ENV_OTHER, 0 },
		{ "=x", SHK_ENV_OTHER, 0 },
		{ "", SHK_ENV_OTHER, 0 },
	};
	unsigned f;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		f = 99;
		ck_assert_msg(cls(t[i].entry, &f) == t[i].c, "%s", t[i].entry);
		ck_assert_msg(f == t[i].f, "%s: families %u", t[i].entry, f);
	}
	/* the entry's length is authoritative: no read past it */
	ck_assert_int_eq(shk_env_classify("ENV=x", 3, NULL), SHK_ENV_OTHER);
	ck_assert_int_eq(shk_env_classify(NULL, 0, NULL), SHK_ENV_OTHER);
}
END_TEST

START_TEST(test_families)
{
	ck_assert_uint_eq(shk_interp_families("/usr/bin/python3.11"), SHK_INTERP_PYTHON);
	ck_assert_uint_eq(shk_interp_families("/usr/bin/python3.13t"), SHK_INTERP_PYTHON);
	ck_assert_uint_eq(shk_interp_families("python"), SHK_INTERP_PYTHON);
	ck_assert_uint_eq(shk_interp_families("/opt/pypy3.10"), SHK_INTERP_PYTHON);
	ck_assert_uint_eq(shk_interp_families("/usr/bin/node"), SHK_INTERP_NODE);
	ck_assert_uint_eq(shk_interp_families("/usr/bin/nodejs"), SHK_INTERP_NODE);
	ck_assert_uint_eq(shk_interp_families("/usr/bin/perl5.36.0"), SHK_INTERP_PERL);
	ck_assert_uint_eq(shk_interp_families("/usr/bin/dash"), SHK_INTERP_SHELL);
	ck_assert_uint_eq(shk_interp_families("/bin/sh"), SHK_INTERP_SHELL);
	ck_assert_uint_eq(shk_interp_families("/bin/busybox"), SHK_INTERP_SHELL);
	ck_assert_uint_eq(shk_interp_families("/usr/bin/php8.2"), SHK_INTERP_PHP);
	ck_assert_uint_eq(shk_interp_families("/usr/bin/lua5.4"), SHK_INTERP_LUA);
	/* Debian's architecture-qualified names (review F4) and -dbg builds */
	ck_assert_uint_eq(shk_interp_families("/usr/bin/perl5.36-x86_64-linux-gnu"), SHK_INTERP_PERL);
	ck_assert_uint_eq(shk_interp_families("/usr/bin/python3.11-dbg"), SHK_INTERP_PYTHON);
	ck_assert_uint_eq(shk_interp_families("/usr/bin/python3-config"), SHK_INTERP_PYTHON);
	ck_assert_uint_eq(shk_interp_families("/usr/bin/perl-x"), SHK_INTERP_PERL);
	/* not interpreters: other names, names that only start like one */
	ck_assert_uint_eq(shk_interp_families("/usr/bin/pythonista"), 0);
	ck_assert_uint_eq(shk_interp_families("/usr/bin/sha256sum"), 0);
	ck_assert_uint_eq(shk_interp_families("/usr/bin/perldoc"), 0);
	ck_assert_uint_eq(shk_interp_families("/usr/bin/git"), 0);
	ck_assert_uint_eq(shk_interp_families("/usr/bin/"), 0);
	ck_assert_uint_eq(shk_interp_families("/python3/git"), 0);
	ck_assert_uint_eq(shk_interp_families(NULL), 0);
	ck_assert_str_eq(shk_interp_family_name(SHK_INTERP_SHELL), "shell");
	ck_assert_str_eq(shk_interp_family_name(3), "?");
}
END_TEST

static shk_policy *load(const char *text)
{
	shk_policy *p = NULL;
	shk_parse_error err;

	ck_assert_msg(shk_policy_load_buffer(text, strlen(text), "t", &p, &err) == 0, "%s", err.text);
	return p;
}

/* exec.interp_env: explicit, or the exec default; independent of loader_env. */
START_TEST(test_policy_interp_env)
{
	shk_policy *p = load("{\"version\": 1}");

	ck_assert_int_eq(shk_policy_exec_interp_env(p), SHK_ACTION_ALLOW);
	shk_policy_free(p);
	p = load("{\"version\": 1, \"exec\": {\"default\": \"deny\"}}");
	ck_assert_int_eq(shk_policy_exec_interp_env(p), SHK_ACTION_DENY);
	shk_policy_free(p);
	p = load("{\"version\": 1, \"exec\": {\"default\": \"deny\", \"interp_env\": \"allow\"}}");
	ck_assert_int_eq(shk_policy_exec_interp_env(p), SHK_ACTION_ALLOW);
	ck_assert_int_eq(shk_policy_exec_loader_env(p), SHK_ACTION_DENY);
	shk_policy_free(p);
	p = load("{\"version\": 1, \"exec\": {\"interp_env\": \"hitl\", \"loader_env\": \"deny\"}}");
	ck_assert_int_eq(shk_policy_exec_interp_env(p), SHK_ACTION_HITL);
	ck_assert_int_eq(shk_policy_exec_loader_env(p), SHK_ACTION_DENY);
	shk_policy_free(p);
}
END_TEST

/* exec.interp_env_scope: every exec by default, "interpreter" on request;
 * anything else is refused with its place. */
START_TEST(test_policy_interp_scope)
{
	static const char *const bad[] = {
		"{\"version\": 1, \"exec\": {\n  \"interp_env_scope\": \"python\"}}",
		"{\"version\": 1, \"exec\": {\n  \"interp_env_scope\": true}}",
	};
	shk_policy *p = load("{\"version\": 1}");
	shk_parse_error err;

	ck_assert(!shk_policy_exec_interp_scoped(p));
	shk_policy_free(p);
	p = load("{\"version\": 1, \"exec\": {\"interp_env_scope\": \"exec\"}}");
	ck_assert(!shk_policy_exec_interp_scoped(p));
	shk_policy_free(p);
	p = load("{\"version\": 1, \"exec\": {\"interp_env_scope\": \"interpreter\"}}");
	ck_assert(shk_policy_exec_interp_scoped(p));
	shk_policy_free(p);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = NULL;
		ck_assert_int_lt(shk_policy_load_buffer(bad[i], strlen(bad[i]), "t", &p, &err), 0);
		ck_assert_ptr_null(p);
		ck_assert_msg(strstr(err.text, "interp_env_scope"), "%s", err.text);
		ck_assert_int_eq(err.line, 2);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("execenv");
	TCase *tc = tcase_create("execenv");

	tcase_add_test(tc, test_classify);
	tcase_add_test(tc, test_families);
	tcase_add_test(tc, test_policy_interp_env);
	tcase_add_test(tc, test_policy_interp_scope);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
