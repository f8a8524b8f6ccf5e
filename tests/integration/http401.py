#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A local HTTP server that answers 401 to everything (runs OUTSIDE
shackle-run). Bound to 127.0.0.1 on an ephemeral port, writes {"port": P} to
--port-file, appends one line per request to --log, exits after --timeout s.
"""
import argparse, http.server, json, os, threading


class Handler(http.server.BaseHTTPRequestHandler):
    log_path = None

    def _deny(self):
        body = b'{"error":"unauthorized","status":401}\n'
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Bearer realm="shackle-test"')
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        with open(self.log_path, "a") as f:
            f.write("%s %s\n" % (self.command, self.path))

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _deny

    def log_message(self, *args):
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--timeout", type=float, default=120)
    a = ap.parse_args()
    Handler.log_path = a.log
    open(a.log, "a").close()
    # The port is part of the agent's curl command line, where shackle's error
    # signal detection reads "401", "500"... as an HTTP error: a port such as
    # 42401 would make every call look amplified. Take one without them.
    signals = ("401", "403", "500", "502", "503", "504")
    for _ in range(100):
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if not any(x in str(srv.server_address[1]) for x in signals):
            break
        srv.server_close()
    t = threading.Timer(a.timeout, srv.shutdown)
    t.daemon = True
    t.start()
    with open(a.port_file + ".tmp", "w") as f:
        json.dump({"port": srv.server_address[1]}, f)
    os.replace(a.port_file + ".tmp", a.port_file)
    srv.serve_forever(poll_interval=0.2)


if __name__ == "__main__":
    main()
