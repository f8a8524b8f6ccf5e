#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Loopback witness for the network scenarios (runs OUTSIDE shackle-run).

Binds TCP and UDP on one port on every --addr (loopback addresses only),
plus optional AF_UNIX stream/datagram sockets, and counts what arrives per
address. A forbidden destination that shows any arrival is a breach that the
agent side cannot hide. Writes {"port": P} to --port-file once ready and
rewrites --counts-file (JSON) after every arrival. Exits after --timeout s or
on SIGTERM.
"""
import argparse, json, os, selectors, signal, socket, sys, time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", action="append", default=[])
    ap.add_argument("--unix", action="append", default=[])
    ap.add_argument("--unix-dgram", action="append", default=[])
    ap.add_argument("--abstract", action="append", default=[])
    ap.add_argument("--sniff-lo", metavar="MARKER",
                    help="count frames on lo whose bytes contain MARKER (root)")
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--counts-file", required=True)
    ap.add_argument("--timeout", type=float, default=120)
    a = ap.parse_args()
    for h in a.addr:
        if not (h.startswith("127.") or h == "::1"):
            sys.exit("listener.py: loopback addresses only, got " + h)

    sel = selectors.DefaultSelector()
    counts = {}
    port = 0
    for attempt in range(50):
        socks = []
        try:
            for h in a.addr:
                fam = socket.AF_INET6 if ":" in h else socket.AF_INET
                t = socket.socket(fam, socket.SOCK_STREAM)
                t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                t.bind((h, port))
                port = t.getsockname()[1]
                t.listen(512)
                u = socket.socket(fam, socket.SOCK_DGRAM)
                # a burst from a racer must not be dropped unseen
                try:
                    u.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE
                except OSError:
                    u.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
                u.bind((h, port))
                socks += [(t, h, "tcp"), (u, h, "udp")]
            break
        except OSError:
            for s, _, _ in socks:
                s.close()
            port = 0
    else:
        sys.exit("listener.py: could not bind a common port")
    # unix sockets are world-writable: the agent may run as another user, and
    # a denial must not be confused with a permission error
    for path in a.unix:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path); os.chmod(path, 0o777); s.listen(64)
        socks.append((s, "unix:" + path, "tcp"))
    for path in a.unix_dgram:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(path); os.chmod(path, 0o777); socks.append((s, "unix:" + path, "udp"))
    for name in a.abstract:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind("\0" + name); s.listen(64); socks.append((s, "@" + name, "tcp"))
    if a.sniff_lo:
        # Packets injected below IP (AF_PACKET) to a loopback address are
        # dropped as martians before any socket sees them: a sniffer on lo
        # is the witness that the frame left the agent.
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
        s.bind(("lo", 0))
        socks.append((s, "lo-frames", "sniff"))
    for s, h, kind in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, (h, kind))
        counts.setdefault(h, {"tcp": 0, "udp": 0})

    def dump():
        tmp = a.counts_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(counts, f, sort_keys=True)
        os.replace(tmp, a.counts_file)

    dump()
    with open(a.port_file + ".tmp", "w") as f:
        json.dump({"port": port}, f)
    os.replace(a.port_file + ".tmp", a.port_file)

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    deadline = time.monotonic() + a.timeout
    while not stop and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.2):
            h, kind = key.data
            try:
                if kind == "tcp":
                    c, _ = key.fileobj.accept()
                    c.close()
                elif kind == "sniff":
                    frame = key.fileobj.recv(65536)
                    # A frame may be seen twice (outgoing and incoming copy):
                    # only "none" versus "some" matters.
                    if a.sniff_lo.encode() not in frame:
                        continue
                    kind = "udp"
                else:
                    key.fileobj.recv(65536)
            except OSError:
                continue
            counts[h][kind] += 1
            dump()
    dump()


if __name__ == "__main__":
    main()
