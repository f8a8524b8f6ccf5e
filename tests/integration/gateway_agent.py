#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A plain agent loop: the Anthropic Messages API at ANTHROPIC_BASE_URL with
the key in ANTHROPIC_API_KEY, stdlib urllib only (a new connection per
request), each proposed Bash command run with subprocess, its output sent
back as the tool result. Stubborn: told a tool call was refused, it asks the
model once more (that request must be refused, not forwarded).

    gateway_agent.py [--bad-inputs] [--max-turns N] [--run-first CMD]

--bad-inputs first sends what the gateway must refuse (malformed JSON,
invalid UTF-8, an unknown endpoint, GET, an oversize body, a wrong key, an
unpriced model) and prints "bad NAME STATUS" for each. --run-first runs
CMD with the shell before the first request, as agents run `git status`
for context.
Exit: 0 the model finished, 1 a request was refused or failed.
"""
import argparse
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

BASE = os.environ.get("ANTHROPIC_BASE_URL", "")
KEY = os.environ.get("ANTHROPIC_API_KEY", "")
MODEL = "claude-loop-test"


def call(path, data, method="POST", key=KEY):
    """(status, body bytes); a failure to connect is status 0."""
    req = urllib.request.Request(BASE + path, data=data, method=method, headers={
        "x-api-key": key, "anthropic-version": "2023-06-01", "content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (urllib.error.URLError, OSError) as e:
        return 0, str(e).encode()


def bad_inputs():
    ok = json.dumps({"model": MODEL, "max_tokens": 10, "messages": [{"role": "user", "content": "x"}]})
    cases = [
        ("malformed_json", "/v1/messages", b'{"model":', "POST", KEY),
        ("invalid_utf8", "/v1/messages", b'{"model":"' + MODEL.encode() + b'","max_tokens":5,'
         b'"messages":[{"role":"user","content":"\xff"}]}', "POST", KEY),
        ("unknown_endpoint", "/v1/embeddings", ok.encode(), "POST", KEY),
        ("get", "/v1/messages", None, "GET", KEY),
        ("oversize", "/v1/messages", json.dumps({"model": MODEL, "pad": "x" * 70000}).encode(), "POST", KEY),
        ("wrong_key", "/v1/messages", ok.encode(), "POST", "sk-not-the-placeholder"),
        ("unpriced", "/v1/messages", ok.replace(MODEL, "gpt-unpriced").encode(), "POST", KEY),
    ]
    for name, path, data, method, key in cases:
        status, _ = call(path, data, method, key)
        print(f"bad {name} {status}", flush=True)


def run_tools(content):
    results = []
    for b in content:
        if b.get("type") != "tool_use":
            continue
        cmd = b.get("input", {}).get("command", "")
        p = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30)
        results.append({"type": "tool_result", "tool_use_id": b["id"],
                        "content": (p.stdout + p.stderr) or "(no output)", "is_error": p.returncode != 0})
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bad-inputs", action="store_true")
    ap.add_argument("--max-turns", type=int, default=200)
    ap.add_argument("--run-first")
    a = ap.parse_args()
    if a.bad_inputs:
        bad_inputs()
    if a.run_first:
        subprocess.run(a.run_first, shell=True, capture_output=True, timeout=30)
    messages = [{"role": "user", "content": "do the work"}]
    pressed = False
    for turn in range(a.max_turns):
        status, body = call("/v1/messages", json.dumps(
            {"model": MODEL, "max_tokens": 1024, "messages": messages}).encode())
        if status != 200:
            print(f"request {turn} failed: {status} {body[:300].decode(errors='replace')}", flush=True)
            return 1
        msg = json.loads(body)
        messages.append({"role": "assistant", "content": msg["content"]})
        text = " ".join(b.get("text", "") for b in msg["content"] if b.get("type") == "text")
        if msg.get("stop_reason") != "tool_use":
            print(f"model: {text}", flush=True)
            if "[shackle]" in text and not pressed:
                pressed = True  # a stubborn agent asks again
                messages.append({"role": "user", "content": "try again"})
                continue
            return 0
        messages.append({"role": "user", "content": run_tools(msg["content"])})
    print("turn limit", flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
