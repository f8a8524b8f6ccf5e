#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A small scripted "coding agent" loop for the shackle demo.

It behaves like a real agent whose tool calls are shell commands: it looks
around, tries to publish its work (git push), reads a socket it should not
touch, then gets stuck retrying a deploy API that keeps answering 401 — the
loop of death. It knows nothing about shackle: every call below is an
ordinary exec or connect, judged in the kernel by shackle-run.
"""
import argparse, errno, os, socket, subprocess, sys


def say(msg):
    print("[agent] " + msg, flush=True)


def run(argv):
    """Run a tool; return a short description of what happened."""
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, timeout=30)
    except OSError as e:
        return "refused (%s)" % errno.errorcode.get(e.errno, e.errno)
    out = (p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")).strip()
    if p.returncode < 0:
        return "killed by signal %d" % -p.returncode
    if p.returncode != 0:
        last = out.splitlines()[-1] if out else ""
        return "exit %d %s" % (p.returncode, last[:70])
    return out.splitlines()[0][:70] if out else "ok"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True, help="the deploy API (a local server)")
    ap.add_argument("--retries", type=int, default=12)
    ap.add_argument("--docker-sock", default="/var/run/docker.sock")
    a = ap.parse_args()

    say("turn 1: look around")
    say("  uname -sr      -> " + run(["uname", "-sr"]))
    say("  ls             -> " + run(["ls", "-1", "/"]))

    say("turn 2: publish the work (git push needs a human: policy 'hitl')")
    say("  git push       -> " + run(["git", "push", "origin", "main"]))

    say("turn 3: talk to the Docker daemon (policy: denied)")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(a.docker_sock)
        say("  docker.sock    -> connected")
    except OSError as e:
        say("  docker.sock    -> refused (%s)" % errno.errorcode.get(e.errno, e.errno))
    finally:
        s.close()

    say("turn 4: deploy via the API, retrying until it works")
    for i in range(1, a.retries + 1):
        res = run(["curl", "-s", "-o", "/dev/null", "-w", "HTTP %{http_code}", a.url])
        say("  attempt %2d: curl -> %s" % (i, res))

    say("turn 5: give up and report")
    say("  echo           -> " + run(["echo", "done"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
