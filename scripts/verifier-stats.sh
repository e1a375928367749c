#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# What the running kernel's verifier makes of xfrag's programs, loaded as
# `xfrag attach` loads them (private maps: nothing attached, nothing
# pinned): per program the instructions after rewriting (xlated), the
# instructions it processed (limit 1000000), its peak of states, the JIT
# size and the stack depth of each subprogram (6.1 allows 512 over the
# deepest chain of calls).  build/progstats does the work (make).
# In the 6.1 guest:
#   tests/vm.sh --kernel 6.1 --cmd 'scripts/verifier-stats.sh > /xfrag-out/vstats.txt'
set -u
cd "$(dirname "$0")/.." || exit 1
if [ ! -x build/progstats ]; then
	echo "verifier-stats: build/progstats missing: run make" >&2
	exit 1
fi
echo "kernel $(uname -r)"
exec build/progstats "$@"
