#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Query a shackle audit log (JSON Lines) for the scenario tests.

  audit_query.py LOG [FILTER...] [--count | --field NAME | --json]

FILTER is NAME=VALUE (equal), NAME~TEXT (contains) or NAME!=VALUE, where NAME
may be dotted (params.argv). The verdict is compared case-insensitively.
Prints the number of matching entries (--count, default), the value of one
field per matching entry (--field), or the entries themselves (--json).
A log that is not JSON Lines is an error (exit 2), never "0 entries".
"""
import json, sys


def get(entry, name):
    cur = entry
    for part in name.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return None
    return cur


def as_text(v):
    if isinstance(v, str):
        return v
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def matches(entry, flt):
    for op in ("!=", "=", "~"):
        if op in flt:
            name, want = flt.split(op, 1)
            break
    else:
        sys.exit("audit_query.py: bad filter %r" % flt)
    v = get(entry, name)
    have = None if v is None else as_text(v)
    if name == "verdict" and have is not None:
        have, want = have.upper(), want.upper()
    if op == "=":
        return have == want
    if op == "!=":
        return have != want
    return have is not None and want in have


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    log, mode, field, filters = args[0], "count", None, []
    i = 1
    while i < len(args):
        if args[i] == "--count":
            mode = "count"
        elif args[i] == "--json":
            mode = "json"
        elif args[i] == "--field":
            mode, field = "field", args[i + 1]
            i += 1
        else:
            filters.append(args[i])
        i += 1
    entries = []
    with open(log, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                entries.append(json.loads(line))
            except ValueError as e:
                print("audit_query.py: %s:%d: not JSON: %s" % (log, n, e), file=sys.stderr)
                sys.exit(2)
    sel = [e for e in entries if all(matches(e, f) for f in filters)]
    if mode == "count":
        print(len(sel))
    elif mode == "field":
        for e in sel:
            v = get(e, field)
            print("" if v is None else as_text(v))
    else:
        for e in sel:
            print(json.dumps(e, sort_keys=True))


if __name__ == "__main__":
    main()
