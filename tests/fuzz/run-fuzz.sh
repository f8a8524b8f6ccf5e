#!/bin/sh
# Bounded libFuzzer smoke run: run-fuzz.sh FUZZER WORK_DIR SEED_CORPUS
# Runs for $SHACKLE_FUZZ_SECONDS (default 60). New corpus entries go to
# WORK_DIR (in the build tree), never into the shipped seed corpus; a crash
# leaves its input in WORK_DIR/artifacts and fails the test. A dictionary
# SEED_CORPUS.dict (e.g. corpus/canon.dict), when present, is used too.
set -eu
fuzzer=$1 work=$2 seeds=$3
secs=${SHACKLE_FUZZ_SECONDS:-60}
case $secs in ''|*[!0-9]*) echo "SHACKLE_FUZZ_SECONDS must be a number of seconds" >&2; exit 2;; esac
mkdir -p "$work/corpus" "$work/artifacts"
set --
if [ -f "$seeds.dict" ]; then set -- -dict="$seeds.dict"; fi
exec "$fuzzer" "$@" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-print_final_stats=1 -artifact_prefix="$work/artifacts/" \
	"$work/corpus" "$seeds"
