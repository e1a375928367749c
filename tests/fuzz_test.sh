#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# libFuzzer targets for the CLI's parsers and renderers (tests/fuzz/):
# build them, then run each on its seed corpus (tests/fuzz/corpus/TARGET)
# plus new inputs.  Default (make test): a bounded smoke run per target.
# --time SECONDS (make fuzz): each target for that long, keeping what it
# finds in tests/out/fuzz/long-TARGET for the next run.  A crash, sanitizer
# report or failed check leaves the input in tests/out/fuzz/TARGET-crash-*.
cd "$(dirname "$0")/.." || exit 1
TARGETS="num args config render path conffile"
OUT=tests/out/fuzz
long=""
if [ "$1" = "--time" ]; then
	long=$2
	[[ "$long" =~ ^[0-9]+$ ]] || { echo "usage: $0 [--time SECONDS]"; exit 2; }
fi
# Smoke: executions per target (the corpus is run first), and a time cap
# in seconds for a loaded machine.
declare -A RUNS=([num]=300000 [args]=100000 [config]=100000 [render]=3000
		 [path]=300000 [conffile]=100000)
SMOKE_CAP=4

pass=0
fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
ko() { echo "FAIL $1: $2"; fail=$((fail + 1)); }

mkdir -p $OUT
if ! make --no-print-directory -j"$(nproc)" fuzz-bin >$OUT/build.log 2>&1; then
	why=$(grep -m1 -iE 'error|not found|cannot' $OUT/build.log)
	for t in $TARGETS; do
		ko fuzz-$t "build failed (libFuzzer: libclang-rt-14-dev): ${why:-see $OUT/build.log}"
	done
	exit 1
fi

for t in $TARGETS; do
	log=$OUT/$t.log
	args=(-close_fd_mask=3 "-artifact_prefix=$OUT/$t-" -print_final_stats=1)
	case $t in num|args|config) args+=(-dict=tests/fuzz/xfrag.dict) ;; esac
	if [ -n "$long" ]; then
		work=$OUT/long-$t
		args+=(-max_total_time="$long")
	else
		work=$OUT/smoke-$t
		rm -rf "$work"
		args+=(-runs="${RUNS[$t]}" "-max_total_time=$SMOKE_CAP")
	fi
	mkdir -p "$work"
	rm -f $OUT/$t-crash-* $OUT/$t-leak-* $OUT/$t-timeout-* $OUT/$t-oom-*
	# New inputs go to the first directory; the seeds stay as committed.
	./build/fuzz_$t "${args[@]}" "$work" tests/fuzz/corpus/$t >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log")
	if [ "$rc" -eq 0 ] && [ -n "$runs" ] && [ "$runs" -gt 0 ]; then
		ok "fuzz-$t ($runs executions in ${secs:-?} s, corpus $(ls "$work" | wc -l) new + $(ls tests/fuzz/corpus/$t | wc -l) seeds)"
	else
		why=$(grep -a -m1 -E 'fuzz check failed|ERROR: |runtime error|SUMMARY' "$log" | cut -c1-200)
		art=""
		for f in "$OUT/$t"-*; do
			[ -e "$f" ] && [ "${f%.log}" = "$f" ] && { art=$f; break; }
		done
		ko "fuzz-$t" "exit $rc: ${why:-see $log}${art:+ (input: $art)}"
	fi
done
echo "fuzz_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
