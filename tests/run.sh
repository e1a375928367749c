#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Run every xfrag test suite and print one summary line "N passed, N failed".
# Each suite prints "PASS name" / "FAIL name: reason" lines.
cd "$(dirname "$0")/.." || exit 1
mkdir -p tests/out
pass=0
fail=0

# XF_SUITES="unit ns ...": only these suites (tests/vm.sh passes it on).
run_suite() {
	local name=$1; shift
	if [ -n "${XF_SUITES:-}" ] && ! [[ " $XF_SUITES " == *" $name "* ]]; then
		return 0
	fi
	local log=tests/out/$name.log
	echo "== $name"
	"$@" 2>&1 | tee "$log" | grep -E '^(PASS|FAIL|SKIP|NOTE)' || true
	local rc=${PIPESTATUS[0]}
	local p f
	p=$(grep -c '^PASS' "$log")
	f=$(grep -c '^FAIL' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $name: exited $rc without a FAIL line (see $log)"
		tail -5 "$log"
		f=1
	fi
	pass=$((pass + p))
	fail=$((fail + f))
}

if [ "$(id -u)" -ne 0 ]; then
	echo "tests need root (BPF, namespaces)"
	echo "0 passed, 1 failed"
	exit 1
fi

run_suite lint tests/lint.sh
run_suite unit ./build/test_prog
run_suite fuzz ./build/fuzz_prog
run_suite cli tests/cli_test.sh
run_suite fuzz-user tests/fuzz_test.sh
run_suite install tests/install_test.sh
run_suite ns ./tests/ns_test.sh
run_suite vnet ./tests/vnet_test.sh
run_suite corpus ./tests/corpus_test.sh
# The captures again, packet i from CPU i mod N (steering brings them together).
[ "$(nproc)" -ge 2 ] && run_suite corpus-spread env CORPUS_SPREAD="$(nproc)" ./tests/corpus_test.sh
# Fixed seeds here, so that a landing does not depend on the date
# (docs/testing.md); `make fuzz-diff` and XF_DIFF_SEED=date explore new
# seeds.
dseed() { [ "${XF_DIFF_SEED:-}" = date ] && date +%Y%m%d%H%M%S || echo "${XF_DIFF_SEED:-$1}"; }
run_suite diff ./tests/diff_test.sh --seed "$(dseed 20261206083329)"
# The same, each frame from the next CPU: steering brings them together.
[ "$(nproc)" -ge 2 ] && run_suite diff-spread ./tests/diff_test.sh --cpu spread --batches 8 --seed "$(dseed 20261206080636)"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
