#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Per-call breakdown of shackle-run's loop thread from a perf profile.

Each sample of the thread is given to the innermost shackle-run function of
its stack that names a step of a call (answer, audit entry, judgement,
reading the caller, waiting in RECV, ...). Run (root):

  perf record -F 2000 --call-graph dwarf,16384 -o P.data -- \\
      BUILD/src/cli/shackle-run --quiet --non-interactive --policy POL --audit LOG -- \\
      BUILD/bench/bench_supervise_loops connect 20000
  perf script -i P.data -F comm,tid,ip,sym | bench/profile_loop.py PID

PID: shackle-run's pid (its loop thread), e.g. from
  perf script -i P.data -F comm,pid | awk '$1=="shackle-run"{print $2; exit}'
"""
import collections
import re
import sys

tid = sys.argv[1]
rules = [
 # answering
 ('shk_notify_respond', 'answer (SEND ioctl)'), ('shk_notify_deny', 'answer (SEND ioctl)'),
 ('shk_notify_fail', 'answer (SEND ioctl)'),
 # audit
 ('shk_ledger_append_decision', 'audit entry: render, SHA-256, write'),
 ('shk_pipeline_tick', 'tick: checkpoint signature (and its write)'),
 # judging
 ('shk_session_evaluate_shared', 'judge: session, decide()'), ('shk_session_commit', 'judge: session, decide()'),
 ('shk_policy_redact_logged', 'judge: policy, params, canonical digest'),
 ('shk_pipeline_judge', 'judge: policy, params, canonical digest'), ('shk_judge', 'judge: policy, params, canonical digest'),
 # arming
 ('shk_netv_try', 'arm the kernel check (bpf map update)'),
 # reading
 ('grab_socket', 'read the caller: socket (pidfd_getfd, mark lookup)'), ('sock_kind', 'read the caller: socket (pidfd_getfd, mark lookup)'),
 ('read_call', 'read the caller: address (process_vm_readv)'), ('shk_tidinfo_fill', 'read the caller: pid, exe'),
 ('shk_exec_observe', 'read the caller: exec path, argv, env, file, /proc'),
 ('shk_exec_approve', 'exec: seize, approval'),
 ('shk_exec_verify', 'exec stop: verify image, argv, env'),
 ('shk_tracer_reap', 'exec stop / reap: wait4, ptrace'),
 ('shk_net_handle', 'net: other (close, ID_VALID, job)'),
 ('shk_exec_handle', 'exec: other (ID_VALID, ...)'),
 ('shk_wait_notif', 'wait and receive (RECV ioctl, wakeup)'),
 ('shk_notify_dispatch', 'dispatch: other'),
 ('loop', 'loop: other'),
]
order = {n: i for i, (n, _) in enumerate(rules)}
lab = dict(rules)
cnt = collections.Counter(); total = 0
comm = None; t = None; fr = []
def flush():
    global total
    if t != tid or not fr:
        return
    total += 1
    for f in fr:
        f = f.replace(' (inlined)', '')
        if f in order:
            cnt[lab[f]] += 1
            return
    cnt['unattributed (%s)' % fr[-1][:30]] += 1
for line in sys.stdin:
    if not line.strip():
        continue
    m = re.match(r'^\s*(\S+)\s+(\d+)\s*$', line)
    if m:
        flush(); comm, t, fr = m.group(1), m.group(2), []
    else:
        p = line.split(None, 1)
        if len(p) == 2:
            fr.append(p[1].strip())
flush()
agg = collections.Counter()
for k, v in cnt.items():
    agg[k if not k.startswith('unattributed') else 'unattributed (stack not unwound)'] += v
for k, v in agg.most_common():
    print("%6.1f%%  %s" % (100.0 * v / total, k))
print("samples of the loop thread:", total)
