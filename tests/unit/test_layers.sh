#!/bin/sh
# SPDX-License-Identifier: MIT
# The tree's layers, read from every #include "DIR/..." under src/: arrows
# only go downwards. core (pure) and util (the Linux helpers) include only
# themselves; audit never includes a layer above it; no layer includes
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
				case $to in judge | supervise | attach | ebpf | cli | gateway | sdk | scope)
					rule="audit is below $to" ;;
				esac ;;
			judge)
				case $to in supervise | attach | ebpf | cli)
					rule="judge is below $to" ;;
				esac ;;
			scope)
				case $to in judge | supervise | attach | ebpf | cli | gateway | sdk | audit)
					rule="scope is below $to" ;;
				esac ;;
			esac
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
mkdir -p "$T/core" "$T/util" "$T/audit" "$T/cli" "$T/supervise"
echo '#include "util/linux.h"' >"$T/core/a.c"
echo '#include "core/x.h"' >"$T/util/b.c"
echo '#include "supervise/pipeline.h"' >"$T/audit/c.c"
echo '#include "supervise/internal.h"' >"$T/cli/d.c"
echo '#include "supervise/internal.h"' >"$T/supervise/ok.c"
echo '#include "core/sha256.h"' >"$T/audit/ok.c"
n=$(check "$T" | wc -l)
if [ "$n" -ne 4 ]; then
	echo "FAIL: self-test found $n violations, want 4:"
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
