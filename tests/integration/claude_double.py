#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A scripted Anthropic Messages model for driving a real agent CLI.

    claude_double.py SCRIPT [--turns N] [--command CMD] [--input-tokens N]
                     [--close-every K] [--stats FILE]

Each answer depends only on how many tool results the conversation already
holds (the turn t), so an agent CLI runs the script whatever it adds:
  loop    every turn proposes the same Bash call (CMD): the loop of death
  varied  turn t < N proposes Bash `echo turn-t`, then answers with text
  described  turn t < N proposes Bash CMD, its description new each turn
             (as Claude Code writes one), then answers with text
Usage: --input-tokens per answer (output 100), so spend is predictable.
--close-every K closes the connection after every K-th answer, as a
server that drops idle connections does. Every request to /v1/messages is
counted in FILE (one line each: model, turn, the x-api-key it came with), so
a test sees what reached the model and with which key.
Streams (SSE) and whole answers both. Prints its port, serves until killed.
"""
import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
LOCK = threading.Lock()
SERVED = [0]


def turn_of(body):
    n = 0
    for m in body.get("messages", []):
        c = m.get("content")
        if isinstance(c, list):
            n += sum(1 for b in c if isinstance(b, dict) and b.get("type") == "tool_result")
    return n


def blocks_for(t):
    desc = "run a command"
    if ARGS.script == "loop":
        cmd = ARGS.command
    elif t >= ARGS.turns:
        return [{"type": "text", "text": f"done after {t} turns"}], "end_turn"
    elif ARGS.script == "described":
        cmd, desc = ARGS.command, f"step {t}: run it again"
    else:
        cmd = f"echo turn-{t}"
    return [{"type": "text", "text": f"turn {t}"},
            {"type": "tool_use", "id": f"toolu_{t:04d}", "name": "Bash",
             "input": {"command": cmd, "description": desc}}], "tool_use"


def sse(model, blocks, stop, usage):
    ev = [("message_start", {"type": "message_start", "message": {
        "id": "msg_double", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": dict(usage, output_tokens=1)}})]
    for i, b in enumerate(blocks):
        if b["type"] == "text":
            ev.append(("content_block_start", {"type": "content_block_start", "index": i,
                                               "content_block": {"type": "text", "text": ""}}))
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                               "delta": {"type": "text_delta", "text": b["text"]}}))
        else:
            ev.append(("content_block_start", {"type": "content_block_start", "index": i,
                                               "content_block": dict(b, input={})}))
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(b["input"])}}))
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    ev.append(("message_delta", {"type": "message_delta",
                                 "delta": {"stop_reason": stop, "stop_sequence": None},
                                 "usage": {"output_tokens": usage["output_tokens"]}}))
    ev.append(("message_stop", {"type": "message_stop"}))
    return "".join(f"event: {a}\ndata: {json.dumps(b)}\n\n" for a, b in ev).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, ctype, data, close=False):
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        if close:
            self.send_header("connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def do_HEAD(self):
        self.reply(200, "text/plain", b"")

    def do_GET(self):
        self.reply(200, "text/plain", b"ok\n")

    def do_POST(self):
        n = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        path = self.path.split("?")[0]
        if path.endswith("/count_tokens"):
            return self.reply(200, "application/json", b'{"input_tokens": 100}')
        if path != "/v1/messages":
            return self.reply(404, "application/json",
                              b'{"type":"error","error":{"type":"not_found_error","message":"no"}}')
        with LOCK:
            SERVED[0] += 1
            served = SERVED[0]
            if ARGS.stats:
                with open(ARGS.stats, "a") as f:
                    f.write(f"{body.get('model')} turn={turn_of(body)} "
                            f"key={self.headers.get('x-api-key', '-')}\n")
        blocks, stop = blocks_for(turn_of(body))
        usage = {"input_tokens": ARGS.input_tokens, "output_tokens": 100}
        close = ARGS.close_every > 0 and served % ARGS.close_every == 0
        model = body.get("model", "double")
        if body.get("stream"):
            return self.reply(200, "text/event-stream", sse(model, blocks, stop, usage), close)
        msg = {"id": "msg_double", "type": "message", "role": "assistant", "model": model,
               "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage}
        self.reply(200, "application/json", json.dumps(msg).encode(), close)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("script", choices=["loop", "varied", "described"])
    p.add_argument("--turns", type=int, default=3)
    p.add_argument("--command", default="true")
    p.add_argument("--input-tokens", type=int, default=1000)
    p.add_argument("--close-every", type=int, default=0)
    p.add_argument("--stats")
    ARGS = p.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
