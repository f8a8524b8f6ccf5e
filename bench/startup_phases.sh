#!/bin/bash
# SPDX-License-Identifier: MIT
# Where `shackle-run -- /bin/true` spends its wall time, phase by phase:
# uprobes (perf probe) on shackle-run's own functions and the exec and exit
# of both processes, recorded system-wide with perf record for RUNS runs;
# prints each phase's median and every run's figure in ms. Needs root, perf
# and a build with debug info (debugoptimized). perf's recording slows every
# phase a little; compare runs of one machine state (docs/supervisor.md,
# "Start-up").
#
#   bench/startup_phases.sh BUILD_DIR/src/cli/shackle-run [RUNS]
set -u
SR=${1:?usage: $0 SHACKLE_RUN [RUNS]}
N=${2:-5}
command -v perf >/dev/null || { echo "needs perf" >&2; exit 2; }
PROBES="main shk_judged_load shk_judged_open_log shk_sources_start shk_supervise_run shk_emu_start shk_waker_start shk_cgroup_create shk_netv_setup shk_filter_build shk_tracer_watchdog_start start_child shk_launch_wait loop end_tree shk_waker_stop shk_emu_stop shk_netv_teardown shk_cgroup_destroy shk_sources_stop shk_judged_end shk_judged_free"
perf probe -q -d 'probe_shk:*' >/dev/null 2>&1
for f in $PROBES; do perf probe -q -x "$SR" --add "probe_shk:$f=$f" >/dev/null 2>&1 || echo "no probe $f" >&2; done
T=$(mktemp -d /tmp/phases.XXXXXX)
COMM=$(basename "$SR" | cut -c1-15) # the kernel's comm: 15 bytes
printf '{"version":1,"guard":{"hitl_mode":"never"},"exec":{"default":"deny","rules":[{"path":"/bin/true","action":"allow"}]},"net":{"default":"deny","rules":[]}}' >"$T/p.json"
for i in $(seq "$N"); do
  perf record -q -o "$T/r$i.data" -e 'probe_shk:*' -e sched:sched_process_exec -e sched:sched_process_exit -a -- \
    "$SR" --quiet --non-interactive --policy "$T/p.json" --audit "$T/a$i.jsonl" -- /bin/true >/dev/null 2>&1
  perf script -i "$T/r$i.data" -F comm,tid,time,event 2>/dev/null | awk -v run=$i -v comm="$COMM" '
   { ev=$4; sub(/^probe_shk:/,"",ev); sub(/:$/,"",ev); t=$3*1000 }
   ev=="sched:sched_process_exec" && $1==comm && !t_exec { t_exec=t; pid=$2 }
   ev=="sched:sched_process_exec" && $1=="true" { t_agent=t; apid=$2 }
   ev=="sched:sched_process_exit" && $2==apid { t_aexit=t }
   ev=="sched:sched_process_exit" && $2==pid { t_exit=t }
   ev!~/^sched/ && !(ev in T) { T[ev]=t }
   END {
     ph["1 exec -> main (loading, relocation, constructors)"]=T["main"]-t_exec
     ph["2 options, user, paths"]=T["shk_judged_load"]-T["main"]
     ph["3 policy load"]=T["shk_judged_open_log"]-T["shk_judged_load"]
     ph["4 audit log, key, session_start"]=T["shk_sources_start"]-T["shk_judged_open_log"]
     ph["5 sdk socket, (gateway)"]=T["shk_supervise_run"]-T["shk_sources_start"]
     ph["6 emulation workers"]=T["shk_waker_start"]-T["shk_emu_start"]
     ph["7 waker thread"]=T["shk_cgroup_create"]-T["shk_waker_start"]
     ph["8 cgroup leaf"]=T["shk_netv_setup"]-T["shk_cgroup_create"]
     ph["9 bpf verify load+attach"]=T["shk_filter_build"]-T["shk_netv_setup"]
     ph["10 filter build"]=T["shk_tracer_watchdog_start"]-T["shk_filter_build"]
     ph["11 watchdog"]=T["start_child"]-T["shk_tracer_watchdog_start"]
     ph["12 fork, seize, child set-up (ns, landlock, filter)"]=T["loop"]-T["start_child"]
     ph["13 loop -> agent exec (first judgement)"]=t_agent-T["loop"]
     ph["14 agent runs (exec -> exit)"]=t_aexit-t_agent
     ph["15 agent exit -> end_tree"]=T["end_tree"]-t_aexit
     ph["16 end_tree -> threads stopped"]=T["shk_netv_teardown"]-T["end_tree"]
     ph["17 bpf teardown"]=T["shk_cgroup_destroy"]-T["shk_netv_teardown"]
     ph["18 cgroup rmdir, sources stop"]=T["shk_judged_end"]-T["shk_cgroup_destroy"]
     ph["19 session_end, log close"]=T["shk_judged_free"]-T["shk_judged_end"]
     ph["20 free -> process exit"]=t_exit-T["shk_judged_free"]
     ph["total exec -> exit"]=t_exit-t_exec
     for (k in ph) printf "%s\t%d\t%.2f\n", k, run, ph[k]
   }'
done | sort -t$'\t' -k1,1V -k3,3n | awk -F'\t' '{ v[$1]=v[$1] " " $3; n[$1]++ } END { for (k in v) print k "\t" v[k] }' | sort -t$'\t' -k1,1V | while IFS=$'\t' read -r k vals; do
  set -- $vals; c=$#; m=$(echo $vals | tr ' ' '\n' | sort -n | awk -v c=$c 'NR==int((c+1)/2)')
  printf '%-55s median %7s ms  [%s]\n' "$k" "$m" "$vals"
done
rm -rf "$T"
perf probe -q -d 'probe_shk:*' >/dev/null 2>&1
