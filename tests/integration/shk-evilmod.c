/* SPDX-License-Identifier: MIT */
/*
 * A shared object that plays the agent's injected library: loaded into a
 * program (by ld.so, or dlopen'ed by a library such as OpenSSL through its
 * configuration) it leaves the file "<its own path>.ran" behind, so a test
 * can tell that code of the caller's choosing ran inside an allowed
 * program. It also exports the entry points OpenSSL looks up, so that the
 * program carries on.
 */
#include <dlfcn.h> /* dladdr: _GNU_SOURCE comes from meson.build */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int OSSL_provider_init(void);
int bind_engine(void);

__attribute__((constructor)) static void mark(void)
{
	Dl_info info;
	char path[4096];
	int fd;

	if (!dladdr((void *)mark, &info) || !info.dli_fname)
		return;
	snprintf(path, sizeof(path), "%s.ran", info.dli_fname);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		(void)!write(fd, "x", 1);
		close(fd);
	}
}

int OSSL_provider_init(void)
{
	return 0;
}

int bind_engine(void)
{
	return 0;
}
