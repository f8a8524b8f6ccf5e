#!/bin/bash
# SPDX-License-Identifier: MIT
# Whatever reaches the model gateway's port without its placeholder key (a
# local process, another host that reaches `shackle attach --gateway ADDR`)
# is answered 401 and logged only up to a cap: a flood of requests does not
# grow the audit log, each entry a disk sync, until a full disk denies
# everything. The session_end entry counts them all. Bad input that comes
# with the key (the agent's) is still logged, each request.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
require_root # the agent runs as nobody
setup
DP=9 # the upstream, never reached: nothing here is forwarded
POL=$(gateway_policy unauth 1.0 0)
cat >"$T/flood.py" <<'PYEOF'
import os, sys, urllib.error, urllib.request
base, key = os.environ["ANTHROPIC_BASE_URL"], os.environ["ANTHROPIC_API_KEY"]
def call(path, method, k):
    req = urllib.request.Request(base + path, data=b'{"model":' if method == "POST" else None,
                                 method=method, headers={"x-api-key": k} if k else {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
kinds = [("/v1/messages", "POST", None), ("/v1/messages", "POST", "sk-wrong"),
         ("/v1/embeddings", "POST", None), ("/v1/messages", "GET", key + "x")]
print("flood", " ".join(sorted({str(call(*kinds[i % 4])) for i in range(int(sys.argv[1]))})))
print("keyed", call("/v1/messages", "POST", key), call("/v1/embeddings", "POST", key))
PYEOF
chmod 0644 "$T/flood.py"
shk "$POL" -- "$AGENT_PY" "$T/flood.py" 300
expect_eq "exit status" "$RC" 0
expect_eq "every request without the key is answered 401" "$(grep '^flood ' "$OUT")" "flood 401"
expect_eq "with the key: bad input answered as such" "$(grep '^keyed ' "$OUT")" "keyed 400 404"
expect_eq "only the first 8 without the key are logged" \
	"$(aq kind=refusal origin=gateway what=wrong_key)" 8
expect_eq "... each the keyed refusals too" \
	"$(aq kind=refusal origin=gateway what!=wrong_key --field what | tr '\n' ' ')" \
	"malformed_request unknown_endpoint "
expect_eq "session_end counts all 300" \
	"$(aq kind=session_end --field counters.gateway_unauthenticated)" 300
expect_audit_ok
# without a gateway the counter is not there
shk "$(plain_policy)" -- /bin/true
expect_eq "no gateway: no counter" "$(aq kind=session_end counters.gateway_unauthenticated~)" 0
finish
