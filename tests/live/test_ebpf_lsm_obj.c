/* SPDX-License-Identifier: MIT */
/*
 * bpf/lsm.bpf.c as built (no privileges: nothing is loaded). The LSM object
 * cannot be loaded on every kernel (docs/ebpf.md, "BPF LSM"), so what can be
 * checked everywhere is checked here: the one program is an LSM program for
 * bprm_check_security, the licence is GPL-compatible (the kernel refuses LSM
 * programs otherwise), and every map it shares with bpf/shackle.bpf.c has the
 * same definition there, which bpf_map__reuse_fd() needs at load time.
 */
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include <shackle/ebpf.h>

#include "testutil.h"
#include "checkrun.h"

static struct bpf_object *open_obj(const char *name)
{
	struct bpf_object *o = bpf_object__open_file(shk_test_build(name), NULL);

	ck_assert_msg(o != NULL, "%s: %s", name, strerror(errno));
	return o;
}

/* Contents of the ELF section `want` (e.g. "license"), NUL-terminated, or NULL. */
static char *elf_section(const char *path, const char *want)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL, *out = NULL;
	long len;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	ck_assert_int_gt(len, (long)sizeof(Elf64_Ehdr));
	rewind(f);
	buf = malloc((size_t)len);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);

	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)buf;
	ck_assert(memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64);
	ck_assert(eh->e_machine == EM_BPF);
	ck_assert(eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) <= (uint64_t)len);
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(buf + eh->e_shoff);
	ck_assert_uint_lt(eh->e_shstrndx, eh->e_shnum);
	const Elf64_Shdr *names = &sh[eh->e_shstrndx];
	ck_assert(names->sh_offset + names->sh_size <= (uint64_t)len);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_name >= names->sh_size ||
		    strcmp(buf + names->sh_offset + sh[i].sh_name, want) != 0)
			continue;
		ck_assert(sh[i].sh_offset + sh[i].sh_size <= (uint64_t)len);
		out = calloc(1, sh[i].sh_size + 1);
		ck_assert_ptr_nonnull(out);
		memcpy(out, buf + sh[i].sh_offset, sh[i].sh_size);
		break;
	}
	free(buf);
	return out;
}

START_TEST(test_one_lsm_program)
{
	struct bpf_object *o = open_obj("bpf/lsm.bpf.o");
	struct bpf_program *p;
	int n = 0;

	bpf_object__for_each_program(p, o) {
		n++;
		ck_assert_str_eq(bpf_program__name(p), "shk_lsm_exec");
		ck_assert_str_eq(bpf_program__section_name(p), "lsm/bprm_check_security");
		ck_assert_int_eq(bpf_program__type(p), BPF_PROG_TYPE_LSM);
		ck_assert_int_eq(bpf_program__expected_attach_type(p), BPF_LSM_MAC);
	}
	ck_assert_int_eq(n, 1);
	bpf_object__close(o);
}
END_TEST

START_TEST(test_gpl_compatible_licence)
{
	char *lic = elf_section(shk_test_build("bpf/lsm.bpf.o"), "license");

	ck_assert_ptr_nonnull(lic);
	/* The kernel's license_is_gpl_compatible() list includes this string. */
	ck_assert_str_eq(lic, "Dual BSD/GPL");
	free(lic);
}
END_TEST

static void same_def(const struct bpf_map *a, const struct bpf_map *b)
{
	const char *n = bpf_map__name(a);

	ck_assert_msg(bpf_map__type(a) == bpf_map__type(b), "%s: type", n);
	ck_assert_msg(bpf_map__key_size(a) == bpf_map__key_size(b), "%s: key size", n);
	ck_assert_msg(bpf_map__value_size(a) == bpf_map__value_size(b), "%s: value size", n);
	ck_assert_msg(bpf_map__max_entries(a) == bpf_map__max_entries(b), "%s: max entries", n);
	ck_assert_msg(bpf_map__map_flags(a) == bpf_map__map_flags(b), "%s: flags", n);
}

/* Every map of the LSM object but its own .rodata is one of the main object's. */
START_TEST(test_maps_are_the_main_objects)
{
	static const char *const shared[] = { "state", "exec_rules", "exec_once", "target_cg", "events",
					      "drops" };
	struct bpf_object *lsm = open_obj("bpf/lsm.bpf.o"), *main_obj = open_obj("bpf/shackle.bpf.o");
	struct bpf_map *m;
	size_t found = 0;

	bpf_object__for_each_map(m, lsm) {
		const char *n = bpf_map__name(m);
		struct bpf_map *twin;
		bool listed = false;

		if (strstr(n, ".rodata"))
			continue;
		for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++)
			listed |= strcmp(n, shared[i]) == 0;
		ck_assert_msg(listed, "map %s is not shared with the main object", n);
		twin = bpf_object__find_map_by_name(main_obj, n);
		ck_assert_msg(twin != NULL, "main object has no map %s", n);
		same_def(m, twin);
		found++;
	}
	ck_assert_uint_eq(found, sizeof(shared) / sizeof(shared[0]));
	bpf_object__close(lsm);
	bpf_object__close(main_obj);
}
END_TEST

int main(void)
{
	Suite *s;
	TCase *tc;

	if (!shk_ebpf_built())
		shk_test_skip("eBPF support not built: %s", shk_ebpf_off_reason());
	s = suite_create("ebpf-lsm-object");
	tc = tcase_create("object");
	tcase_add_test(tc, test_one_lsm_program);
	tcase_add_test(tc, test_gpl_compatible_licence);
	tcase_add_test(tc, test_maps_are_the_main_objects);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
