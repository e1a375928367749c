#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Load build/xfrag.bpf.o with the verifier's log and print, per program,
# what the verifier of the running kernel did ("processed N insns ...").
# Nothing is attached, and nothing is left pinned: bpftool runs in a mount
# namespace of its own on a bpffs of its own (the object pins its maps by
# name under /sys/fs/bpf).  In the 6.1 guest:
#   tests/vm.sh --cmd scripts/verifier-stats.sh
set -u
cd "$(dirname "$0")/.." || exit 1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
unshare -m sh -c 'mount --make-rprivate / && mount -t bpf bpf /sys/fs/bpf &&
	bpftool -d prog loadall build/xfrag.bpf.o /sys/fs/bpf/vstats' \
	>"$log" 2>&1
rc=$?
echo "kernel $(uname -r): load $([ $rc = 0 ] && echo ok || echo FAILED)"
awk '
/-- BEGIN PROG LOAD LOG --/ { match($0, /prog .[a-z_0-9]+./);
	prog = substr($0, RSTART + 6, RLENGTH - 7); next }
/^processed [0-9]+ insns/ && prog != "" { printf "  %-10s %s\n", prog, $0; prog = "" }
/^verification time/ && prog != "" { vt = $0 }
' "$log"
[ $rc = 0 ] || tail -n 30 "$log"
exit $rc
