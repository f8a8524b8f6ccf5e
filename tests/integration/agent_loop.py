#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A scripted, stubborn agent: it calls curl against a URL again and again,
with the same arguments, whatever the answer (the "loop of death" of an agent
that keeps retrying a 401). Runs INSIDE shackle-run.

Each attempt is recorded as one of:
  "http:NNN"         curl ran and the server answered NNN
  "exec:ENAME"       the exec of curl was refused with errno ENAME
  "curl-exit:N"      curl ran but failed (7 = could not connect, e.g. when
                     its connect() was denied)
  "signal:N"         curl was killed by signal N
  "connect:ENAME"    the agent's own --final-connect after the loop
The list goes to --out as JSON once the loop ends (after --iterations).
"""
import argparse, errno, json, socket, subprocess


def attempt(argv):
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           stdin=subprocess.DEVNULL, timeout=30)
    except OSError as e:
        return "exec:" + errno.errorcode.get(e.errno, str(e.errno))
    except subprocess.TimeoutExpired:
        return "timeout"
    if p.returncode < 0:
        return "signal:%d" % -p.returncode
    if p.returncode != 0:
        return "curl-exit:%d" % p.returncode
    return "http:" + p.stdout.decode(errors="replace").strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--curl", default="/usr/bin/curl")
    ap.add_argument("--url", required=True)
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--vary", action="store_true",
                    help="append ?i=N so that no two calls have the same argv")
    ap.add_argument("--header", action="append", default=[])
    ap.add_argument("--final-connect", metavar="HOST:PORT",
                    help="after the loop, one direct TCP connect from the agent itself")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    results = []
    for i in range(a.iterations):
        url = a.url + ("?i=%d" % i if a.vary else "")
        argv = [a.curl, "-s", "-o", "/dev/null", "-w", "%{http_code}"]
        for h in a.header:
            argv += ["-H", h]
        results.append(attempt(argv + [url]))
    if a.final_connect:
        host, port = a.final_connect.rsplit(":", 1)
        s = socket.socket()
        try:
            s.connect((host, int(port)))
            results.append("connect:OK")
        except OSError as e:
            results.append("connect:" + errno.errorcode.get(e.errno, str(e.errno)))
        finally:
            s.close()
    with open(a.out, "w") as f:
        json.dump(results, f)
    print(" ".join(results))


if __name__ == "__main__":
    main()
