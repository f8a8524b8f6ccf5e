#!/bin/sh
# SPDX-License-Identifier: MIT
# The tree's layers, read from every #include "DIR/..." under src/: arrows
# only go downwards, in the order of the data flow
#   core, util  <  audit  <  judge  <  ebpf, supervise  <  attach  <  cli
# and judge < gateway, sdk < sources < attach, cli (sources starts the
# gateway module and the SDK socket for a session: attach reaches them
# through sources/sources.h alone)
# core (pure) and util (the Linux helpers) include only themselves; audit
# never includes a layer above it; judge sees none of the observers; scope
# (shared state on Redis) is below the judge and audit; the sources beside
# the kernel (gateway, sdk) reach the judge through judge/source.h alone; nothing but cli includes cli; no layer includes
# another layer's internal.h. A self-test on a tree with one violation of
# each rule shows the check can fail.
set -eu
SRC=${1:?usage: test_layers.sh SRCDIR}

# check DIR: prints each violation as FILE: LAYER includes "HEADER" (RULE)
check() {
	find "$1" -name '*.[ch]' | sort | while read -r f; do
		layer=${f#"$1"/}
		layer=${layer%%/*}
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
		while read -r h; do
			case $h in */*) ;; *) continue ;; esac # same directory or generated
			to=${h%%/*}
			if [ "$to" = "$layer" ]; then
				continue
			fi
			rule=
			case $layer in
			core | util) rule="$layer includes only itself" ;;
			audit)
				case $to in judge | supervise | attach | ebpf | cli | gateway | sdk | scope | sources)
					rule="audit is below $to" ;;
				esac ;;
			judge)
				case $to in supervise | attach | ebpf | cli | gateway | sdk | sources)
					rule="judge is below $to" ;;
				esac ;;
			ebpf | supervise)
				case $to in attach | cli | gateway | sdk | scope | sources)
					rule="$layer is below $to" ;;
				esac ;;
			attach)
				case $to in supervise | cli | gateway | sdk | scope)
					rule="attach does not include $to" ;;
				esac ;;
			scope)
				case $to in judge | supervise | attach | ebpf | cli | gateway | sdk | audit | sources)
					rule="scope is below $to" ;;
				esac ;;
			sources)
				case $to in supervise | attach | ebpf | cli | scope)
					rule="sources is below $to" ;;
				esac ;;
			gateway | sdk)
				case $h in core/* | util/* | audit/* | judge/source.h) ;;
				*) rule="$layer reaches the judge through judge/source.h only" ;;
				esac ;;
			esac
			if [ -z "$rule" ] && [ "$to" = cli ]; then
				rule="only cli includes cli"
			fi
			case $h in */internal.h) rule="${rule:+$rule; }another layer's internal.h" ;; esac
			if [ -n "$rule" ]; then
				echo "$f: $layer includes \"$h\" ($rule)"
			fi
		done
	done
}

# the check can fail: one violation of each kind in a scratch tree
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/core" "$T/util" "$T/audit" "$T/cli" "$T/supervise" "$T/judge" "$T/attach" "$T/gateway" \
	"$T/sources"
echo '#include "util/linux.h"' >"$T/core/a.c"
echo '#include "judge/judged.h"' >"$T/core/a2.c"
echo '#include "core/x.h"' >"$T/util/b.c"
echo '#include "judge/pipeline.h"' >"$T/audit/c.c"
echo '#include "supervise/internal.h"' >"$T/cli/d.c"
echo '#include "supervise/supervise.h"' >"$T/judge/e.c"
echo '#include "attach/attach.h"' >"$T/judge/e2.c"
echo '#include "cli/display.h"' >"$T/attach/f.c"
echo '#include "attach/hitl.h"' >"$T/supervise/g.c"
echo '#include "judge/pipeline.h"' >"$T/gateway/h.c"
echo '#include "judge/internal.h"' >"$T/attach/i.c"
echo '#include "sources/sources.h"' >"$T/judge/j.c"
echo '#include "attach/attach.h"' >"$T/sources/k.c"
echo '#include "supervise/internal.h"' >"$T/supervise/ok.c"
echo '#include "core/sha256.h"' >"$T/audit/ok.c"
echo '#include "judge/obs.h"' >"$T/supervise/ok.c"
echo '#include "judge/judged.h"' >"$T/attach/ok.c"
printf '#include "judge/source.h"\n#include "util/linux.h"\n#include "audit/x.h"\n' >"$T/gateway/ok.c"
printf '#include "gateway/module.h"\n#include "sdk/sdk.h"\n#include "judge/judged.h"\n' >"$T/sources/ok.c"
echo '#include "sources/sources.h"' >"$T/attach/ok2.c"
n=$(check "$T" | wc -l)
if [ "$n" -ne 13 ]; then
	echo "FAIL: self-test found $n violations, want 13:"
	check "$T"
	exit 1
fi
echo "ok - self-test: each kind of violation is found"

out=$(check "$SRC")
if [ -n "$out" ]; then
	echo "$out"
	echo "FAIL: $(printf '%s\n' "$out" | wc -l) include(s) against the layering"
	exit 1
fi
echo "ok - src/: $(find "$SRC" -name '*.[ch]' | wc -l) files, every include follows the layering"
