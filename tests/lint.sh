#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Lint (suite `lint` of `make test`, and `make lint`): every shell script
# of the tree through shellcheck at warning level (style notes such as
# unquoted variables that split on purpose are left to review).
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
	exit 1
fi
