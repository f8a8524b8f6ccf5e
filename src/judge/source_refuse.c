/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "judge/source.h"

int shk_source_refuse(const struct shk_source_judge *j, const char *origin, const char *what,
                      int status, const char *msg)
{
	char clean[SHK_SOURCE_REFUSAL_MAX];
	shk_doc *doc = NULL;
	shk_val *d;
	size_t i;
	int r = -ENOMEM;

	if (!j->refuse)
		return 0;
	for (i = 0; msg[i] && i + 1 < sizeof(clean); i++)
		clean[i] = (unsigned char)msg[i] >= 0x20 && (unsigned char)msg[i] < 0x7f ? msg[i] : '?';
	clean[i] = 0;
	if (shk_doc_new(&doc) == 0 && (d = shk_object(doc)) &&
	    (status < 0 || shk_object_set_str(d, "status", shk_int(doc, status)) == 0) &&
	    shk_object_set_str(d, "message", shk_cstring(doc, clean)) == 0)
		r = j->refuse(j->ctx, origin, what, d);
	shk_doc_free(doc);
	return r;
}
