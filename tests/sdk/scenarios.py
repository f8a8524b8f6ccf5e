# SPDX-License-Identifier: MIT
# The SDK socket's cases, driven through the Python client; test_sdk_clients.c
# starts the server with the guard each case needs and checks the session
# afterwards. usage: scenarios.py CASE   (SHACKLE_SOCKET names the socket)
import json
import os
import socket
import sys
import threading
import time

import shackle_sdk
from shackle_sdk import Client, Denied, ShackleError

PATH = os.environ["SHACKLE_SOCKET"]


def expect_error(code, fn, *args):
    try:
        fn(*args)
    except ShackleError as e:
        assert e.code == code, "wanted %s, got %s" % (code, e)
        return e
    raise AssertionError("wanted error %s, got an answer" % code)


def raw(lines):
    """Send raw bytes on a fresh connection, return the answers read until EOF."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(20)
    s.connect(PATH)
    try:
        s.sendall(lines)
    except (BrokenPipeError, ConnectionResetError):
        pass
    out = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
            if out.count(b"\n") >= lines.count(b"\n"):
                break
    except ConnectionResetError:
        pass
    s.close()
    return [json.loads(l) for l in out.splitlines()]


def case_budget():
    c = Client(agent_id="budget-agent")
    # context manager: estimated 0.4, actually cost 0.7
    with c.call("llm", {"q": 1}, estimated_cost_usd=0.4) as call:
        call.actual_cost_usd = 0.7
    ran = []

    @c.tool("llm", cost=0.4)
    def llm(q):
        ran.append(q)
        return "answer"

    # 1.0 - 0.7 = 0.3 left: 0.4 more is refused; on the estimate alone
    # (0.6 left) it would have passed.
    try:
        llm(2)
        raise AssertionError("allowed past the budget")
    except Denied as d:
        assert d.response["deny_reason"].startswith("budget_"), d.response
    assert ran == [], "the tool ran although denied"
    st = c.state()
    assert abs(st["budget_spent_usd"] - 0.7) < 1e-9, st
    assert st["circuit_tripped"] is True, st
    print("ok budget", json.dumps(st))


def case_repeat():
    c = Client(agent_id="repeat-agent")
    answers = [c.pre_exec("web_search", {"q": "same"}, 0.001) for _ in range(2)]
    assert [a["verdict"] for a in answers] == ["ALLOW", "ALLOW"], answers
    third = c.pre_exec("web_search", {"q": "same"}, 0.001)
    assert third["verdict"] == "DENY" and third["deny_reason"] == "max_repeat_exceeded", third
    other = c.pre_exec("other_tool", {}, 0.0)
    assert other["deny_reason"] == "circuit_open", other
    # the human reason: verdict, decide()'s reason, the rule when one matched
    assert answers[0]["human_readable_reason"] == "allowed: " + answers[0]["reason"], answers[0]
    assert third["human_readable_reason"] == "denied: max_repeat_exceeded", third
    ruled = c.pre_exec("forbidden", {}, 0.0)
    assert ruled["human_readable_reason"] == "denied: circuit_open, rule forbidden-tool", ruled
    print("ok repeat")


def case_replay():
    c = Client(agent_id="replay-agent")
    first = c.pre_exec("read_file", {"path": "a"}, 0.0, nonce="4242")
    assert first["verdict"] == "ALLOW" and first["nonce"] == "4242", first
    again = c.pre_exec("read_file", {"path": "b"}, 0.0, nonce="4242")
    assert again["verdict"] == "DENY", again
    assert again["deny_reason"] == "policy_violation:duplicate_nonce", again
    print("ok replay")


def case_forged():
    env = {"protocol_version": "1.0.0", "message_id": "m1",
           "pre_exec": {"session_id": "s_" + "0" * 32, "call_number": 1, "tool_name": "t",
                        "tool_params": {}, "estimated_cost_usd": 0, "nonce": 7}}
    line = json.dumps(env).encode() + b"\n"
    (a,) = raw(line)
    assert a["error"]["code"] == "NOT_REGISTERED" and a["correlation_id"] == "m1", a
    c = Client(agent_id="forged-agent")
    other = Client(agent_id="other-agent")
    env["pre_exec"]["session_id"] = "s_" + "f" * 32
    assert c.send_line(line)["error"]["code"] == "SESSION_NOT_FOUND"
    env["pre_exec"]["session_id"] = c.session_id  # c's id on other's connection
    assert other.send_line(json.dumps(env).encode() + b"\n")["error"]["code"] == "SESSION_NOT_FOUND"
    expect_error("SESSION_NOT_FOUND", other.request, "register",
                 {"agent_id": "x", "session_id": c.session_id})
    # malformed and unknown input is answered, and the connection goes on
    for bad, code in ((b"{not json\n", "INVALID_MESSAGE"), (b"[1,2]\n", "INVALID_MESSAGE"),
                      (b'{"protocol_version":"1.0.0","launch_missiles":{}}\n', "UNKNOWN_MESSAGE_TYPE"),
                      (b'{"protocol_version":"2.0.0","heartbeat":{"session_id":"x"}}\n',
                       "PROTOCOL_VERSION_MISMATCH"),
                      (b'{"protocol_version":"1.0.0","heartbeat":{"session_id":"x","extra":1}}\n',
                       "INVALID_MESSAGE")):
        a = c.send_line(bad)
        assert a["error"]["code"] == code, (bad, a)
    # clients that hang up before their answers: the server must not die of SIGPIPE
    for _ in range(20):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(PATH)
        s.sendall(b'{"protocol_version":"1.0.0","register":{"agent_id":"gone"}}\n' * 50)
        s.close()
    time.sleep(0.3)
    assert c.pre_exec("t", {}, 0.0)["verdict"] == "ALLOW"
    print("ok forged")


def case_stale():
    c = Client(agent_id="stale-agent")
    assert c.heartbeat_interval_ms == 250
    assert c.heartbeat(local_budget_remaining=0.0)["status"] == "ACTIVE"
    assert c.pre_exec("t", {"i": 1}, 0.0)["verdict"] == "ALLOW"
    time.sleep(1.0)  # more than 3 intervals without a heartbeat (750 ms: slack for a loaded CI)
    d = c.pre_exec("t", {"i": 2}, 0.0)
    assert d["verdict"] == "DENY" and d["deny_reason"] == "session_stale", d
    assert c.heartbeat()["status"] == "STALE", "a heartbeat revived a stale registration"
    assert c.state()["status"] == "STALE"
    assert c.pre_exec("t", {"i": 3}, 0.0)["deny_reason"] == "session_stale"
    c.request("register", {"agent_id": "stale-agent", "session_id": c.session_id})
    assert c.pre_exec("t", {"i": 4}, 0.0)["verdict"] == "ALLOW"
    kept = Client(agent_id="beating-agent")
    kept.start_heartbeats()
    time.sleep(1.0)
    assert kept.pre_exec("t", {"i": 5}, 0.0)["verdict"] == "ALLOW"
    kept.close()
    print("ok stale")


def case_resume():
    c = Client(agent_id="resume-agent")
    assert c.pre_exec("t", {"i": 1}, 0.1)["verdict"] == "ALLOW"
    sid = c.session_id
    c.close()  # the connection goes before the call's report
    d = Client(agent_id="resume-agent", session_id=sid)
    assert d.session_id == sid and d._call_number == 1, (d.session_id, d._call_number)
    d.post_exec(1, 0.3)  # the first connection's call, reported on this one
    assert d.pre_exec("t", {"i": 2}, 0.0)["verdict"] == "ALLOW"
    expect_error("SESSION_NOT_FOUND", Client, None, "another-agent", None, None, None, sid)
    # resumed while held: the registration moves, the old connection is refused
    e = Client(agent_id="resume-agent", session_id=sid)
    expect_error("SESSION_NOT_FOUND", d.state)
    assert e.state()["status"] == "ACTIVE" and e._call_number == 2
    print("ok resume")


def case_huge():
    c = Client(agent_id="huge-agent")
    big = c.pre_exec("write_file", {"data": "x" * (900 * 1024)}, 0.0)
    assert big["verdict"] == "ALLOW", "a large message under the limit was refused"
    answers = raw(b'{"protocol_version":"1.0.0","heartbeat":{"session_id":"' + b"a" * (3 << 20) + b'"}}\n')
    assert [a["error"]["code"] for a in answers] == ["MESSAGE_TOO_LARGE"], answers
    deep = b'{"protocol_version":"1.0.0","heartbeat":' + b"[" * 5000 + b"]" * 5000 + b"}\n"
    assert c.send_line(deep)["error"]["code"] == "INVALID_MESSAGE"
    assert c.pre_exec("t", {}, 0.0)["verdict"] == "ALLOW", "the server did not go on"
    print("ok huge")


def flood_one(i, out, ready, go):
    """Hold a connection until every thread has tried, then ask once."""
    c = None
    try:
        c = Client(agent_id="flood-%d" % i, timeout=60)
    except ShackleError as e:
        out[i] = e.code
    except OSError as e:
        out[i] = "refused:%s" % type(e).__name__
    ready.release()
    if c is None:
        return
    go.wait()
    try:
        out[i] = c.pre_exec("flood", {"i": i}, 0.0)["verdict"]
    finally:
        c.close()


def case_flood():
    n = 1000
    probe = Client(agent_id="probe", timeout=60)
    out = [None] * n
    ready, go = threading.Semaphore(0), threading.Event()
    threads = [threading.Thread(target=flood_one, args=(i, out, ready, go)) for i in range(n)]
    worst = 0.0
    for t in threads:
        t.start()
    for _ in range(n):
        t0 = time.monotonic()
        assert probe.pre_exec("probe", {"t": t0}, 0.0)["verdict"] == "ALLOW"
        worst = max(worst, time.monotonic() - t0)
        assert ready.acquire(timeout=120), "a flood thread hung"
    go.set()
    for t in threads:
        t.join()
    counts = {}
    for o in out:
        counts[o] = counts.get(o, 0) + 1
    assert None not in counts, counts
    assert set(counts) <= {"ALLOW", "RATE_LIMITED", "refused:BlockingIOError",
                           "refused:ConnectionResetError", "refused:BrokenPipeError",
                           "DAEMON_UNAVAILABLE"}, counts
    # 32 connections at once, the probe's among them: the rest were refused
    assert counts.get("ALLOW", 0) == 31, counts
    # one connection, a thousand threads: every message answered in turn
    verdicts = []
    lock = threading.Lock()

    def one(i):
        v = probe.pre_exec("burst", {"i": i}, 0.0)["verdict"]
        with lock:
            verdicts.append(v)
    burst = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in burst:
        t.start()
    for t in burst:
        t.join()
    assert verdicts == ["ALLOW"] * n, set(verdicts)
    print("ok flood", json.dumps({"outcomes": counts, "probe_worst_s": round(worst, 4)}))


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]]()
