/* SPDX-License-Identifier: MIT */
/* Which judged variables of an exec's environment count for it, as params. */
#include <errno.h>
#include <string.h>

#include <shackle/execenv.h>

#include "judge/exec_env.h"

unsigned shk_exec_families(const shk_policy *policy, const struct shk_obs_exec *x,
                           const shk_val *matched_as)
{
	unsigned f;

	if (!shk_policy_exec_interp_scoped(policy))
		return SHK_INTERP_ALL;
	f = shk_interp_families(x->file.path);

	for (size_t i = 0; i < x->ninterp; i++)
		f |= shk_interp_families(x->interp[i].path);
	if (x->has_loader_target)
		f |= shk_interp_families(x->loader_target.path);
	for (size_t i = 0; i < shk_val_len(matched_as); i++)
		f |= shk_interp_families(shk_val_str(shk_array_at(matched_as, i), NULL));
	return f;
}

int shk_exec_env_params(const struct shk_obs_exec *x, unsigned families, shk_doc *doc,
                        shk_val *params, bool *ret_loader, bool *ret_interp)
{
	shk_val *lv = shk_array(doc), *iv = shk_array(doc);
	int r = lv && iv ? 0 : -ENOMEM;

	/* x->loader_env: "NAME=value\0" of every variable of either class */
	for (size_t off = 0; r == 0 && off < x->loader_env_len; off += strlen(x->loader_env + off) + 1) {
		const char *e = x->loader_env + off;
		unsigned f;
		shk_env_class c = shk_env_classify(e, strlen(e), &f);

		if (c == SHK_ENV_LOADER)
			r = shk_array_append(lv, shk_cstring(doc, e));
		else if (c == SHK_ENV_INTERP && (f & families))
			r = shk_array_append(iv, shk_cstring(doc, e));
	}
	*ret_loader = r == 0 && shk_val_len(lv) > 0;
	*ret_interp = r == 0 && shk_val_len(iv) > 0;
	if (r == 0 && *ret_loader)
		r = shk_object_set_str(params, "loader_env", lv);
	if (r == 0 && *ret_interp)
		r = shk_object_set_str(params, "interp_env", iv);
	return r;
}
