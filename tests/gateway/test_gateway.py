#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The model gateway end to end: gw_harness (the gateway with a judge on the
real shk_session) in front of model_double.py, driven with http.client and
curl. Usage: test_gateway.py GW_HARNESS MODEL_DOUBLE"""
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile

HARNESS, DOUBLE = sys.argv[1], sys.argv[2]
TMP = tempfile.mkdtemp(prefix="shk-gw-test-")
REAL_A, REAL_O = "real-anthropic-key", "real-openai-key"
PRICE = {"model": "m-*", "input": 10, "output": 20, "cache_write": 12.5, "cache_read": 1}
FAILS = []


def check(cond, what):
    print(("ok - " if cond else "not ok - ") + what, flush=True)
    if not cond:
        FAILS.append(what)


class Double:
    def __init__(self):
        self.p = subprocess.Popen([sys.executable, DOUBLE], stdout=subprocess.PIPE, text=True)
        self.port = int(self.p.stdout.readline())
        self.url = f"http://127.0.0.1:{self.port}"

    def stats(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request("GET", "/_stats")
        return json.loads(c.getresponse().read())

    def stop(self):
        self.p.kill()
        self.p.wait()


class Gateway:
    n = 0

    def __init__(self, upstream, guard, redact=(), **models):
        Gateway.n += 1
        d = os.path.join(TMP, f"gw{Gateway.n}")
        os.mkdir(d)
        pol = {"version": 1, "guard": guard, "redact": list(redact),
               "models": dict({"prices": [PRICE], "upstream_timeout_s": 2,
                               "max_request_bytes": 4096}, **models)}
        self.policy, self.log = os.path.join(d, "policy.json"), os.path.join(d, "log")
        with open(self.policy, "w") as f:
            json.dump(pol, f)
        env = dict(os.environ, ANTHROPIC_API_KEY=REAL_A, OPENAI_API_KEY=REAL_O)
        self.p = subprocess.Popen([HARNESS, self.policy, upstream, self.log], env=env, text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        port, self.token = self.p.stdout.readline().split()
        self.port = int(port)

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def stop(self):
        self.p.stdin.close()
        check(self.p.wait(timeout=30) == 0, "gw_harness exits 0")
        with open(self.log) as f:
            return f.read().splitlines()


def post(conn, path, body, token, raw=None, bearer=False):
    h = {"content-type": "application/json"}
    h["authorization" if bearer else "x-api-key"] = ("Bearer " + token) if bearer else token
    conn.request("POST", path, body=raw if raw is not None else json.dumps(body), headers=h)
    r = conn.getresponse()
    return r.status, r.read()


def settled(lines):
    return sum(float(l.split("cost=")[1].split()[0]) for l in lines if l.startswith("settle "))


def refusals(lines):
    return [l.split("what=")[1].split()[0] for l in lines if l.startswith("refuse ")]


def final(lines):
    return [l for l in lines if l.startswith("final ")][0]


def msg_body(model, i, stream=False, api="messages"):
    content = f"turn {i}"
    if api == "responses":
        return {"model": model, "input": content, "stream": stream, "max_output_tokens": 64}
    b = {"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": content}]}
    if stream:
        b["stream"] = True
    return b


PATHS = {"messages": "/v1/messages", "chat": "/v1/chat/completions", "responses": "/v1/responses"}


def budget_case(dbl, api, stream):
    """budget 0.05, 0.02 a response: the 4th request on one kept-alive connection is refused."""
    gw = Gateway(dbl.url, {"budget_usd": 0.05})
    before = dbl.stats()["requests"]
    c = gw.conn()
    answers = [post(c, PATHS[api], msg_body("m-text", i, stream, api), gw.token, bearer=api != "messages")
               for i in range(5)]
    sock_kept = c.sock is not None
    sent = dbl.stats()["requests"] - before
    lines = gw.stop()
    name = f"{api}{' stream' if stream else ''}"
    check([a[0] for a in answers] == [200, 200, 200, 403, 403], f"budget {name}: 3 answered, then 403: {[a[0] for a in answers]}")
    check(sent == 3, f"budget {name}: 3 requests went upstream ({sent})")
    check(sock_kept, f"budget {name}: one connection carried all requests")
    err = json.loads(answers[3][1])
    if api == "messages":
        check(err.get("type") == "error" and err["error"]["type"] == "permission_error" and
              "budget" in err["error"]["message"], f"budget {name}: Anthropic permission_error naming the budget")
    else:
        check("budget" in err["error"]["message"], f"budget {name}: OpenAI error naming the budget")
    check(abs(settled(lines) - 0.06) < 1e-9, f"budget {name}: settled spend is exact 0.06 ({settled(lines)})")
    check("tripped=1" in final(lines), f"budget {name}: the breaker tripped")
    return answers


def has_tool(api, stream, data):
    if stream:  # the refusal text names Bash too, but never as a tool's name
        return b'"name": "Bash"' in data
    j = json.loads(data)
    if api == "messages":
        return any(b["type"] == "tool_use" for b in j["content"])
    if api == "chat":
        return "tool_calls" in j["choices"][0]["message"]
    return any(i["type"] == "function_call" for i in j["output"])


def repeat_case(dbl, api, stream):
    """max_repeat_calls 3: the 4th identical Bash proposal is refused in the text, the breaker trips."""
    gw = Gateway(dbl.url, {"max_repeat_calls": 3})
    before = dbl.stats()["requests"]
    c = gw.conn()
    answers = [post(c, PATHS[api], msg_body("m-tool", i, stream, api), gw.token, bearer=api != "messages")
               for i in range(6)]
    sent = dbl.stats()["requests"] - before
    c2 = gw.conn()
    late = post(c2, PATHS[api], msg_body("m-tool", 99, stream, api), gw.token, bearer=api != "messages")
    sent2 = dbl.stats()["requests"] - before
    gw.stop()
    name = f"{api}{' stream' if stream else ''}"
    st = [a[0] for a in answers]
    check(st == [200, 200, 200, 200, 403, 403], f"repeat {name}: 4 answered, then 403 ({st})")
    check([has_tool(api, stream, a[1]) for a in answers[:4]] == [True, True, True, False],
          f"repeat {name}: 3 tool calls passed, the 4th taken out")
    check(b"[shackle] The tool call was refused: Bash: max_repeat_exceeded" in answers[3][1],
          f"repeat {name}: the text names the reason")
    if api == "messages":
        stop = b'"stop_reason":"end_turn"' in answers[3][1].replace(b" ", b"")
        check(stop, f"repeat {name}: the turn ends (end_turn)")
    check(b"circuit_open" in answers[4][1], f"repeat {name}: after the trip a request is refused circuit_open")
    check(sent == 4 and sent2 == 4, f"repeat {name}: nothing upstream after the trip, on any connection ({sent}, {sent2})")


IGNORE_DESCRIPTION = [{"name": "bash", "tool": "Bash", "action": "allow", "ignore_input": ["description"]}]


def described_case(dbl, api, stream):
    """The same Bash command with a new description each time: 6 new calls for max_repeat_calls 3;
    under a rule with ignore_input the 4th is refused, as an identical one is, and the descriptions
    go to the judge apart from the params, redacted."""
    name = f"described {api}{' stream' if stream else ''}"
    for rules in ([], IGNORE_DESCRIPTION):
        gw = Gateway(dbl.url, {"max_repeat_calls": 3}, redact=["token"], rules=rules)
        c = gw.conn()
        answers = [post(c, PATHS[api], msg_body("m-described", i, stream, api), gw.token,
                        bearer=api != "messages") for i in range(4)]
        judged = [l for l in gw.stop() if l.startswith("judge ") and " tool=Bash " in l]
        st, tools = [a[0] for a in answers], [has_tool(api, stream, a[1]) for a in answers]
        if not rules:
            check(st == [200] * 4 and tools == [True] * 4, f"{name}: without ignore_input all 4 pass ({st} {tools})")
            check(len(judged) == 4 and all("description" in l and " ignored=" not in l for l in judged),
                  f"{name}: ... judged with their descriptions")
            continue
        check(st == [200] * 4 and tools == [True, True, True, False],
              f"{name}: with ignore_input 3 pass, the 4th is taken out ({st} {tools})")
        check(b"Bash: max_repeat_exceeded" in answers[3][1], f"{name}: ... by the repeat guard")
        check(len(judged) == 4 and all('params={"command":"ls"} ignored={"description":"step ' in l for l in judged),
              f"{name}: ... judged on the command alone")
        check(all('--token=[REDACTED:6]"}' in l and "s3cret" not in l for l in judged),
              f"{name}: ... the descriptions apart, redacted")


def history_body(api, n, result, stream):
    """A conversation of n earlier Bash {"command": "ls"} calls, each answered with result."""
    args = {"command": "ls"}
    if api == "messages":
        msgs = [{"role": "user", "content": "go"}]
        for k in range(n):
            msgs += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "Bash",
                                                        "input": args}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}",
                                                   "content": [{"type": "text", "text": result}]}]}]
        return {"model": "m-tool", "max_tokens": 64, "messages": msgs, "stream": stream}
    if api == "chat":
        msgs = [{"role": "user", "content": "go"}]
        for k in range(n):
            msgs += [{"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{k}", "type": "function", "function": {"name": "Bash", "arguments": json.dumps(args)}}]},
                {"role": "tool", "tool_call_id": f"c{k}", "content": result}]
        return {"model": "m-tool", "messages": msgs, "stream": stream}
    items = [{"role": "user", "content": "go"}]
    for k in range(n):
        items += [{"type": "function_call", "call_id": f"c{k}", "name": "Bash", "arguments": json.dumps(args)},
                  {"type": "function_call_output", "call_id": f"c{k}", "output": result}]
    return {"model": "m-tool", "input": items, "stream": stream}


def amplify_case(dbl, api, stream):
    """max_repeat_calls 3 with error_amplification: the loop whose tool results are fine gets 3
    proposals through, the one whose results say 401 one fewer."""
    name = f"{api}{' stream' if stream else ''}"
    passed = {}
    for result in ("401 Unauthorized", "file.txt"):
        gw = Gateway(dbl.url, {"max_repeat_calls": 3, "error_amplification": True,
                               "budget_usd": 10}, max_request_bytes=1 << 20)
        c = gw.conn()
        tools = []
        for n in range(5):
            st, data = post(c, PATHS[api], history_body(api, n, result, stream), gw.token,
                            bearer=api != "messages")
            if st != 200 or not has_tool(api, stream, data):
                break
            tools.append(n)
        lines = gw.stop()
        passed[result] = len(tools)
        sigs = [l.split("sig=")[1][0] for l in lines if l.startswith("judge") and "tool=Bash" in l]
        check(sigs[1:] == (["1"] if result[0] == "4" else ["0"]) * (len(sigs) - 1) and sigs[:1] == ["0"],
              f"amplify {name}: the signal is read from the tool results only ({result!r}: {sigs})")
    check(passed == {"401 Unauthorized": 2, "file.txt": 3},
          f"amplify {name}: a loop whose results say 401 is stopped one proposal earlier ({passed})")


def malformed_cases(dbl):
    gw = Gateway(dbl.url, {"budget_usd": 10})
    before = dbl.stats()["requests"]
    tok = gw.token
    cases = [
        ("bad JSON", "/v1/messages", b'{"model":', 400, "invalid_request_error"),
        ("invalid UTF-8", "/v1/messages",
         b'{"model":"m-text","max_tokens":5,"messages":[{"role":"user","content":"\xff\xfe"}]}', 400,
         "invalid_request_error"),
        ("duplicate key", "/v1/messages", b'{"model":"m-text","model":"m-cache","max_tokens":5}', 400,
         "invalid_request_error"),
        ("no model", "/v1/chat/completions", b'{"messages":[]}', 400, "invalid_request_error"),
        ("not an object", "/v1/responses", b'[1,2]', 400, "invalid_request_error"),
        ("max_tokens not a number", "/v1/messages", b'{"model":"m-text","max_tokens":"9"}', 400,
         "invalid_request_error"),
        ("n > 1 streamed", "/v1/chat/completions", b'{"model":"m-text","n":2,"stream":true}', 400,
         "invalid_request_error"),
        ("unknown endpoint", "/v1/embeddings", b'{"model":"m-text"}', 404, "not_found_error"),
        ("no price", "/v1/messages", b'{"model":"x-unpriced","max_tokens":5}', 403, "permission_error"),
    ]
    c = gw.conn()
    for name, path, raw, want, etype in cases:
        status, data = post(c, path, None, tok, raw=raw)
        j = json.loads(data)
        e = j["error"]
        check(status == want and e["type"] == etype and "shackle" in e["message"],
              f"malformed: {name} -> {want} {etype} ({status} {data[:120]!r})")
        if path.startswith("/v1/messages"):
            check(j.get("type") == "error", f"malformed: {name}: Anthropic error shape")
    c = gw.conn()
    status, data = post(c, "/v1/messages", msg_body("m-text", 0), "sk-wrong")
    check(status == 401 and b"authentication_error" in data, f"wrong token -> 401 ({status})")
    base = f"http://127.0.0.1:{gw.port}"
    big = os.path.join(TMP, "big.json")
    with open(big, "w") as f:
        json.dump({"model": "m-text", "max_tokens": 5, "pad": "x" * 5000}, f)
    curl = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "x-api-key: " + tok,
            "-H", "content-type: application/json"]
    out = subprocess.run(curl + ["--data-binary", "@" + big, base + "/v1/messages"],
                         capture_output=True, text=True).stdout
    check(out == "413", f"body over max_request_bytes -> 413 ({out})")
    out = subprocess.run(curl + ["-H", "Transfer-Encoding: chunked", "--data-binary", "@" + big,
                                 base + "/v1/messages"], capture_output=True, text=True).stdout
    check(out == "413", f"chunked body over max_request_bytes -> 413 ({out})")
    out = subprocess.run(curl[:6] + ["-H", "x-api-key: " + tok, base + "/v1/messages"],
                         capture_output=True, text=True).stdout
    check(out == "405", f"GET /v1/messages -> 405 ({out})")
    check(dbl.stats()["requests"] == before, "malformed: nothing was forwarded")
    upstream_errors(dbl, gw)
    lines = gw.stop()
    check(not [l for l in lines if "m-text" in l and l.startswith("judge")],
          "malformed: no malformed request reached the judge")
    want = ["malformed_request"] * 7 + ["unknown_endpoint", "unpriced_model", "wrong_key",
                                        "too_large", "too_large", "method_not_allowed",
                                        "upstream_garbage", "upstream_failed", "upstream_garbage"]
    check(refusals(lines) == want, f"malformed: one refusal logged per bad input ({refusals(lines)})")
    check(all(l.startswith("refuse origin=gateway ") and '"status":' in l and '"message":"shackle' in l
              for l in lines if l.startswith("refuse ")), "malformed: each refusal names the gateway, status and message")


def upstream_errors(dbl, gw):
    c = gw.conn()
    status, data = post(c, "/v1/messages", msg_body("m-garbage", 0), gw.token)
    check(status == 502 and b"not a JSON object" in data, f"upstream garbage -> 502 ({status})")
    status, data = post(c, "/v1/messages", msg_body("m-500", 0), gw.token)
    check(status == 500 and b"double says no" in data, f"upstream error passed through ({status})")
    c = gw.conn()
    status, data = post(c, "/v1/messages", msg_body("m-slow", 0), gw.token)
    check(status == 504, f"upstream silent past upstream_timeout_s -> 504 ({status} {data[:100]!r})")
    c = gw.conn()
    c.request("POST", "/v1/messages", body=json.dumps(msg_body("m-badsse", 0, True)),
              headers={"x-api-key": gw.token})
    r = c.getresponse()
    try:
        r.read()
        cut = False
    except http.client.IncompleteRead:
        cut = True
    check(cut, "a stream event that is not JSON cuts the stream (no clean end)")


def down_case():
    s = __import__("socket").socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    gw = Gateway(f"http://127.0.0.1:{port}", {"budget_usd": 1})
    status, data = post(gw.conn(), "/v1/messages", msg_body("m-text", 0), gw.token)
    lines = gw.stop()
    check(status == 502 and b"api_error" in data, f"upstream down -> 502 ({status})")
    check(settled(lines) == 0, "upstream down: nothing charged")
    check(refusals(lines) == ["upstream_failed"], f"upstream down: one refusal logged ({refusals(lines)})")


def keys_case(dbl):
    gw = Gateway(dbl.url, {})
    before = len(dbl.stats()["auth"])
    post(gw.conn(), "/v1/messages?beta=true", msg_body("m-text", 0), gw.token)
    post(gw.conn(), "/v1/chat/completions", msg_body("m-text", 0, True, "chat"), gw.token, bearer=True)
    c = gw.conn()
    status, data = post(c, "/v1/messages/count_tokens", msg_body("m-text", 0), gw.token)
    st = dbl.stats()
    lines = gw.stop()
    check(st["auth"][before:] == [REAL_A, "Bearer " + REAL_O, REAL_A], f"the real keys go upstream ({st['auth'][before:]})")
    check(gw.token not in json.dumps(st), "the placeholder never goes upstream")
    check(st["paths"][-3] == "/v1/messages?beta=true", "the query string is forwarded")
    check(st["stream_options"][-2] == {"include_usage": True}, "include_usage is asked for upstream")
    check(status == 200 and json.loads(data) == {"input_tokens": 42}, "count_tokens answered")
    check(any("tool=model:m-text" in l and "count_tokens" in l for l in lines), "count_tokens is judged")


def stream_usage_case(dbl):
    """Spend is exact for streams: cache reads and writes priced apart, chat usage chunk not shown."""
    gw = Gateway(dbl.url, {"budget_usd": 10})
    c = gw.conn()
    _, a = post(c, "/v1/messages", msg_body("m-cache", 0, True), gw.token)
    _, o = post(c, "/v1/chat/completions", msg_body("m-cache", 0, True, "chat"), gw.token, bearer=True)
    _, r = post(c, "/v1/responses", msg_body("m-cache", 0, True, "responses"), gw.token, bearer=True)
    lines = gw.stop()
    costs = [float(l.split("cost=")[1].split()[0]) for l in lines if l.startswith("settle")]
    want_a = (100 * 10 + 400 * 20 + 200 * 12.5 + 300 * 1) / 1e6
    want_o = (100 * 10 + 400 * 20 + 300 * 1) / 1e6
    check(len(costs) == 3 and abs(costs[0] - want_a) < 1e-12, f"Anthropic stream cost {costs[:1]} == {want_a}")
    check(len(costs) == 3 and abs(costs[1] - want_o) < 1e-12 and abs(costs[2] - want_o) < 1e-12,
          f"OpenAI chat and Responses stream costs {costs[1:]} == {want_o}")
    check(b'"choices": []' not in o and b'"choices":[]' not in o, "the usage chunk the agent did not ask for is not forwarded")
    check(o.endswith(b"data: [DONE]\n\n") and b"message_stop" in a and b"response.completed" in r,
          "streams end as the provider ended them")


def unauthenticated_case():
    """Without the token every request is answered 401, whatever it asks; only the first 8 are
    logged, all are counted; with the token bad input is still logged, each request."""
    gw = Gateway("http://127.0.0.1:9", {"budget_usd": 1})
    c = gw.conn()
    flood = [("POST", "/v1/messages", None), ("POST", "/v1/messages", "sk-wrong"),
             ("POST", "/v1/embeddings", None), ("GET", "/v1/messages", "sk-wrong"),
             ("POST", "/v1/chat/completions", gw.token[:-1])]
    statuses = set()
    for i in range(200):
        method, path, key = flood[i % len(flood)]
        c.request(method, path, body=b'{"model":' if method == "POST" else None,
                  headers={"x-api-key": key} if key else {})
        r = c.getresponse()
        r.read()
        statuses.add(r.status)
    check(statuses == {401}, f"unauthenticated: every request answered 401 ({statuses})")
    for _ in range(3):
        status, _ = post(c, "/v1/messages", None, gw.token, raw=b'{"model":')
    status2, _ = post(c, "/v1/embeddings", None, gw.token, raw=b"{}")
    check(status == 400 and status2 == 404, f"with the token: 400 and 404 ({status} {status2})")
    lines = gw.stop()
    check(refusals(lines) == ["wrong_key"] * 8 + ["malformed_request"] * 3 + ["unknown_endpoint"],
          f"unauthenticated: 8 of 200 logged, every keyed refusal logged ({refusals(lines)})")
    check("unauthenticated=200" in final(lines), f"unauthenticated: all 200 counted ({final(lines)})")


def main():
    dbl = Double()
    try:
        for api, stream in [("messages", False), ("messages", True), ("chat", True), ("responses", False)]:
            budget_case(dbl, api, stream)
        for api, stream in [("messages", False), ("messages", True), ("chat", False), ("chat", True),
                            ("responses", False), ("responses", True)]:
            repeat_case(dbl, api, stream)
            described_case(dbl, api, stream)
        for api, stream in [("messages", False), ("messages", True), ("chat", False), ("chat", True),
                            ("responses", False), ("responses", True)]:
            amplify_case(dbl, api, stream)
        malformed_cases(dbl)
        down_case()
        keys_case(dbl)
        stream_usage_case(dbl)
        unauthenticated_case()
    finally:
        dbl.stop()
        shutil.rmtree(TMP, ignore_errors=True)
    print(f"{len(FAILS)} failed" if FAILS else "all passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
