# SPDX-License-Identifier: MIT
"""SHACKLE SP/1.0 Model B client (docs/sdk.md): ask the supervisor before
each tool call, over the unix socket that shackle-run names in
SHACKLE_SOCKET. Standard library only.

Fail closed: a refusal, an error answer or a lost socket raises; the tool
function is never run without an ALLOW.
"""
import functools
import inspect
import json
import os
import secrets
import socket
import threading
import time
import uuid

PROTOCOL = "1.0.0"
__all__ = ["Client", "Denied", "ShackleError", "connect", "PROTOCOL"]


class ShackleError(Exception):
    """The daemon answered with an error (code: SP/1.0 Appendix B or docs/sdk.md)."""

    def __init__(self, code, message):
        super().__init__("%s: %s" % (code, message))
        self.code = code
        self.message = message


class Denied(ShackleError):
    """pre_exec answered DENY: the tool call must not run."""

    def __init__(self, response):
        super().__init__(response.get("deny_reason", "denied"),
                         response.get("human_readable_reason", ""))
        self.response = response


def _nonce():
    # 63 bits: never 0, and a JSON integer in every parser as a string.
    return str(secrets.randbits(63) | 1)


class Call:
    """What the context manager yields: set actual_cost_usd before the block ends."""

    def __init__(self, response, estimated_cost_usd):
        self.response = response
        self.call_number = int(response["call_number"])
        self.actual_cost_usd = estimated_cost_usd


class Client:
    def __init__(self, path=None, agent_id="python-agent", organization_id=None,
                 framework=None, timeout=None, session_id=None):
        path = path or os.environ.get("SHACKLE_SOCKET")
        if not path:
            raise ShackleError("DAEMON_UNAVAILABLE", "SHACKLE_SOCKET is not set")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        self._sock.connect(path)
        self._file = self._sock.makefile("rb")
        self._lock = threading.RLock()  # pre_exec numbers and sends under one hold
        self._call_number = 0
        self._hb = None
        reg = {"agent_id": agent_id, "runtime": "python"}
        if organization_id:
            reg["organization_id"] = organization_id
        if framework:
            reg["framework"] = framework
        if session_id:  # resume a registration made on another connection
            reg["session_id"] = session_id
        answer = self.request("register", reg)
        self.session_id = answer["session_id"]
        self._call_number = int(answer.get("last_call_number", "0"))
        self.heartbeat_interval_ms = answer.get("heartbeat_interval_ms", 30000)

    # --- the wire -------------------------------------------------------
    def send_line(self, data):
        """Send raw bytes (one or more lines) and read one answer envelope."""
        with self._lock:
            self._sock.sendall(data)
            return self._read()

    def _read(self):
        line = self._file.readline()
        if not line:
            raise ShackleError("DAEMON_UNAVAILABLE", "the socket closed")
        return json.loads(line)

    def request(self, kind, payload):
        env = {"protocol_version": PROTOCOL, "message_id": str(uuid.uuid4()),
               "client_timestamp_ns": str(time.time_ns()), kind: payload}
        answer = self.send_line(json.dumps(env).encode() + b"\n")
        if "error" in answer:
            raise ShackleError(answer["error"]["code"], answer["error"]["message"])
        if answer.get("correlation_id") != env["message_id"]:
            raise ShackleError("DAEMON_UNAVAILABLE", "an answer to another message")
        (body,) = [v for k, v in answer.items() if isinstance(v, dict)]
        return body

    # --- SP/1.0 §4 --------------------------------------------------------
    def pre_exec(self, tool, params, estimated_cost_usd=0.0, nonce=None):
        """The verdict as the daemon gave it (a dict); does not raise on DENY."""
        with self._lock:
            # numbered and sent in one hold: call_number must increase on the wire
            self._call_number += 1
            return self.request("pre_exec", {
                "session_id": self.session_id, "call_number": str(self._call_number),
                "tool_name": tool, "tool_params": params,
                "estimated_cost_usd": float(estimated_cost_usd),
                "nonce": nonce if nonce is not None else _nonce()})

    def post_exec(self, call_number, actual_cost_usd, success=True, error_message=None):
        body = {"session_id": self.session_id, "call_number": str(call_number),
                "actual_cost_usd": float(actual_cost_usd), "success": bool(success)}
        if error_message:
            body["error_message"] = str(error_message)
        return self.request("post_exec", body)

    def heartbeat(self, local_budget_remaining=None):
        body = {"session_id": self.session_id, "last_call_number": str(self._call_number)}
        if local_budget_remaining is not None:
            body["local_budget_remaining"] = float(local_budget_remaining)
        return self.request("heartbeat", body)

    def state(self):
        return self.request("get_session_state", {"session_id": self.session_id})

    def start_heartbeats(self):
        """Heartbeat from a daemon thread every heartbeat_interval_ms (§4.5)."""
        def beat():
            while not self._closed.wait(self.heartbeat_interval_ms / 1000.0):
                try:
                    self.heartbeat()
                except (OSError, ShackleError):
                    return
        self._closed = threading.Event()
        self._hb = threading.Thread(target=beat, daemon=True)
        self._hb.start()

    def close(self):
        if self._hb:
            self._closed.set()
            self._hb.join()
        self._file.close()
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- around a tool ------------------------------------------------------
    def call(self, tool, params, estimated_cost_usd=0.0):
        """Context manager: pre_exec on entry (Denied raised on DENY), post_exec on
        exit with call.actual_cost_usd and whether the block raised."""
        return _CallContext(self, tool, params, estimated_cost_usd)

    def tool(self, name=None, cost=0.0, actual_cost=None):
        """Decorator: the function's arguments (by name) are the tool params; it runs
        only after ALLOW. actual_cost(result) gives the actual cost (default: cost)."""
        def wrap(fn):
            sig = inspect.signature(fn)

            @functools.wraps(fn)
            def guarded(*args, **kwargs):
                bound = sig.bind(*args, **kwargs)
                bound.apply_defaults()
                with self.call(name or fn.__name__, dict(bound.arguments), cost) as c:
                    result = fn(*args, **kwargs)
                    if actual_cost is not None:
                        c.actual_cost_usd = actual_cost(result)
                    return result
            return guarded
        return wrap


class _CallContext:
    def __init__(self, client, tool, params, cost):
        self.client, self.tool, self.params, self.cost = client, tool, params, cost
        self.call = None

    def __enter__(self):
        answer = self.client.pre_exec(self.tool, self.params, self.cost)
        if answer.get("verdict") != "ALLOW":
            raise Denied(answer)
        self.call = Call(answer, self.cost)
        return self.call

    def __exit__(self, exc_type, exc, tb):
        self.client.post_exec(self.call.call_number, self.call.actual_cost_usd,
                              success=exc_type is None,
                              error_message=str(exc) if exc is not None else None)
        return False


def connect(**kwargs):
    """A Client on $SHACKLE_SOCKET (or path=...), registered."""
    return Client(**kwargs)
