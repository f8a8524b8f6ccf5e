#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A scripted model server for the gateway's tests and bench (loopback only).

Speaks just enough of the Anthropic Messages and OpenAI Chat Completions and
Responses APIs, streamed and not. The model name picks the script:
  m-text     a text answer          m-tool     a text and a Bash tool call
  m-described  m-tool with a new "description" next to the command each time
  m-cache    usage with cache reads and writes
  m-garbage  200 with a body that is not JSON
  m-badsse   a stream whose event is not JSON
  m-slow     answers after 5 s      m-500      a provider error
GET /_stats returns what it saw: request count and the credentials used.
Prints its port on stdout, serves until killed.
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

USAGE = {"m-cache": (100, 400, 200, 300)}  # input, output, cache write, cache read
STATS = {"requests": 0, "auth": [], "stream_options": [], "paths": []}
LOCK = threading.Lock()
TOOL_INPUT = {"command": "ls"}
TOOL_MODELS = ("m-tool", "m-described")
CUR = threading.local()  # the request's number, for m-described


def tool_input(model):
    if model == "m-described":
        return dict(TOOL_INPUT, description=f"step {CUR.n}: list them with --token=s3cret")
    return TOOL_INPUT


def usage_of(model):
    return USAGE.get(model, (1000, 500, 0, 0))


def sse(events, named=True):
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if named and name else "") + f"data: {text}\n\n")
    return "".join(out).encode()


def anthropic_blocks(model):
    blocks = [{"type": "text", "text": "hello"}]
    if model in TOOL_MODELS:
        blocks.append({"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": tool_input(model)})
    return blocks


def anthropic(model, stream):
    i, o, cw, cr = usage_of(model)
    blocks = anthropic_blocks(model)
    stop = "tool_use" if model in TOOL_MODELS else "end_turn"
    usage = {"input_tokens": i, "output_tokens": o, "cache_creation_input_tokens": cw,
             "cache_read_input_tokens": cr}
    if not stream:
        return {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
                "content": blocks, "stop_reason": stop, "usage": usage}
    start_usage = dict(usage, output_tokens=1)
    ev = [("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "usage": start_usage}}), ("ping", {"type": "ping"})]
    for n, b in enumerate(blocks):
        if b["type"] == "text":
            ev += [("content_block_start", {"type": "content_block_start", "index": n,
                                            "content_block": {"type": "text", "text": ""}}),
                   ("content_block_delta", {"type": "content_block_delta", "index": n,
                                            "delta": {"type": "text_delta", "text": b["text"]}})]
        else:
            js = json.dumps(b["input"])
            ev += [("content_block_start", {"type": "content_block_start", "index": n,
                                            "content_block": dict(b, input={})})]
            for part in (js[:5], js[5:]):
                ev.append(("content_block_delta", {"type": "content_block_delta", "index": n,
                                                   "delta": {"type": "input_json_delta",
                                                             "partial_json": part}}))
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": n}))
    ev += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop,
                                                                 "stop_sequence": None},
                              "usage": {"output_tokens": o}}),
           ("message_stop", {"type": "message_stop"})]
    return sse(ev)


def chat(model, stream, body):
    i, o, _, cr = usage_of(model)
    usage = {"prompt_tokens": i + cr, "completion_tokens": o, "total_tokens": i + cr + o,
             "prompt_tokens_details": {"cached_tokens": cr}}
    tool = model in TOOL_MODELS
    args = json.dumps(tool_input(model))
    base = {"id": "chatcmpl-1", "created": 1, "model": model}
    if not stream:
        msg = {"role": "assistant", "content": "hello"}
        if tool:
            msg["tool_calls"] = [{"id": "call_1", "type": "function",
                                  "function": {"name": "Bash", "arguments": args}}]
        return dict(base, object="chat.completion", usage=usage, choices=[
            {"index": 0, "message": msg, "finish_reason": "tool_calls" if tool else "stop"}])

    def chunk(delta, finish=None):
        return ("", dict(base, object="chat.completion.chunk",
                         choices=[{"index": 0, "delta": delta, "finish_reason": finish}]))
    ev = [chunk({"role": "assistant", "content": ""}), chunk({"content": "hello"})]
    if tool:
        ev.append(chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                         "function": {"name": "Bash", "arguments": args[:4]}}]}))
        ev.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[4:]}}]}))
    ev.append(chunk({}, "tool_calls" if tool else "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        ev.append(("", dict(base, object="chat.completion.chunk", choices=[], usage=usage)))
    ev.append(("", "[DONE]"))
    return sse(ev, named=False)


def responses(model, stream):
    i, o, _, cr = usage_of(model)
    usage = {"input_tokens": i + cr, "output_tokens": o, "total_tokens": i + cr + o,
             "input_tokens_details": {"cached_tokens": cr}}
    msg = {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
           "content": [{"type": "output_text", "text": "hello", "annotations": []}]}
    out = [msg]
    if model in TOOL_MODELS:
        out.append({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "Bash",
                    "arguments": json.dumps(tool_input(model)), "status": "completed"})
    resp = {"id": "resp_1", "object": "response", "status": "completed", "model": model,
            "output": out, "usage": usage}
    if not stream:
        return resp
    seq = iter(range(1000))
    ev = [("response.created", {"type": "response.created", "sequence_number": next(seq),
                                "response": dict(resp, status="in_progress", output=[])})]
    for n, item in enumerate(out):
        ev.append(("response.output_item.added", {"type": "response.output_item.added",
                                                  "output_index": n, "sequence_number": next(seq),
                                                  "item": dict(item, arguments="")
                                                  if item["type"] == "function_call" else item}))
        if item["type"] == "function_call":
            ev.append(("response.function_call_arguments.delta", {
                "type": "response.function_call_arguments.delta", "output_index": n,
                "sequence_number": next(seq), "delta": item["arguments"]}))
        ev.append(("response.output_item.done", {"type": "response.output_item.done",
                                                 "output_index": n, "sequence_number": next(seq),
                                                 "item": item}))
    ev.append(("response.completed", {"type": "response.completed", "sequence_number": next(seq),
                                      "response": resp}))
    return sse(ev)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, payload, ctype="application/json"):
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_double")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/_stats":
            with LOCK:
                return self.send(200, STATS)
        self.send(404, {"error": "no"})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        with LOCK:
            STATS["requests"] += 1
            CUR.n = STATS["requests"]
            STATS["paths"].append(self.path)
            STATS["auth"].append(self.headers.get("x-api-key") or
                                 self.headers.get("authorization") or "")
            STATS["stream_options"].append(body.get("stream_options"))
        model, stream = body.get("model", ""), bool(body.get("stream"))
        if model == "m-slow":
            time.sleep(5)
        if model == "m-garbage":
            return self.send(200, b"this is not json", "text/plain")
        if model == "m-500":
            return self.send(500, {"type": "error", "error": {"type": "api_error",
                                                              "message": "double says no"}})
        if model == "m-badsse" and stream:
            return self.send(200, b"data: {not json\n\n", "text/event-stream")
        path = self.path.split("?")[0]
        if path == "/v1/messages/count_tokens":
            return self.send(200, {"input_tokens": 42})
        if path == "/v1/messages":
            res = anthropic(model, stream)
        elif path == "/v1/chat/completions":
            res = chat(model, stream, body)
        elif path == "/v1/responses":
            res = responses(model, stream)
        else:
            return self.send(404, {"error": {"message": "unknown path"}})
        self.send(200, res, "text/event-stream" if stream else "application/json")


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
