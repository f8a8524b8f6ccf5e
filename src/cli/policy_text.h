/* SPDX-License-Identifier: MIT */
/* `shackle policy check`, text output of the gateway's "models" section and
 * of "shared" (policy_text.c), beside the exec and net rules of cmd_policy.c. */
#ifndef SHACKLE_CLI_POLICY_TEXT_H
#define SHACKLE_CLI_POLICY_TEXT_H

#include <shackle/policy.h>

/* "allowed (allow)", "denied (deny; ...)", "held for human approval (hitl)" */
const char *policy_action_text(shk_action a);
void policy_print_models(const shk_policy *p);
void policy_print_shared(const shk_policy *p);

#endif
