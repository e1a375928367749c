#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Lint (suite `lint` of `make test`, and `make lint`): every shell script
# of the tree through shellcheck at warning level (style notes such as
# unquoted variables that split on purpose are left to review), and every
# tracked C source against .clang-format (tests/format_check.py: tokens
# and their spacing, indentation by tabs; not alignment or line breaks).
cd "$(dirname "$0")/.." || exit 1
if [ "${XF_VM:-}" = 1 ]; then
	echo "SKIP lint: the scripts are the host's; its make test lints them"
	exit 0
fi
if ! command -v shellcheck >/dev/null; then
	echo "FAIL lint:shellcheck: shellcheck missing (scripts/deps.sh installs it)"
	exit 1
fi
mapfile -t files < <(ls tests/*.sh scripts/*.sh bench/*.sh .ci/run)
if out=$(shellcheck -S warning -f gcc "${files[@]}" 2>&1); then
	echo "PASS lint:shellcheck (${#files[@]} scripts)"
else
	echo "FAIL lint:shellcheck: $(grep -c . <<<"$out") findings"
	echo "$out" | head -20
	rc=1
fi
if ! command -v clang-format >/dev/null; then
	echo "FAIL lint:clang-format: clang-format missing (scripts/deps.sh installs it)"
	exit 1
fi
if out=$(/usr/bin/python3 tests/format_check.py 2>&1); then
	echo "PASS lint:clang-format ($(tail -n 1 <<<"$out" | sed 's/^format_check: //'))"
else
	echo "FAIL lint:clang-format: $(tail -n 1 <<<"$out" | sed 's/^format_check: //')"
	echo "$out" | head -20
	rc=1
fi
# The check itself: a source with a missing space, a space too many and
# an indentation by spaces must give three findings.
bad=$(mktemp --suffix=.c)
printf 'int f(int a)\n{\n        if(a)\n\t\treturn a ,1;\n\treturn 0;\n}\n' >"$bad"
n=$(/usr/bin/python3 tests/format_check.py "$bad" | grep -c "^$bad:")
rm -f "$bad"
if [ "$n" = 3 ]; then
	echo "PASS lint:clang-format-catches (3 findings in a bad source)"
else
	echo "FAIL lint:clang-format-catches: $n findings in a bad source, want 3"
	rc=1
fi
exit "${rc:-0}"
