/* SPDX-License-Identifier: MIT */
#ifndef SHACKLE_CLI_DOCTOR_SHARED_H
#define SHACKLE_CLI_DOCTOR_SHARED_H

#include <jansson.h>

#include <shackle/scope.h>

json_t *shk_doctor_shared_json(const shk_scope_status *st);
void shk_doctor_shared_print(const shk_scope_status *st);

#endif
