#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# make soak: xfrag under mixed honest and hostile traffic for a long time
# (SOAK_SECS, default 600 s), sampled every second; never part of
# `make test`.  The work is done by tests/soak.py; this script owns the
# namespaces and the attachment and always removes them.
#   tests/soak.sh [--duration S] [--phase S] [--csv PATH] [soak.py options]
#   tests/soak.sh setup      (re)create the namespaces only
#   tests/soak.sh cleanup    remove them
TESTS_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.sh
. "$TESTS_DIR/lib.sh"

# Namespaces of its own, so a soak never meets a test or benchmark run.
XF_SND=xs-snd
XF_RCV=xs-rcv
XF_SIF=xss0
XF_RIF=xsr0
XF_SMAC=02:98:00:00:00:01
XF_RMAC=02:98:00:00:00:02
XF_S4=10.98.0.1
XF_R4=10.98.0.2
XF_S6=fd98::1
XF_R6=fd98::2

# xf_setup with a queue per CPU on the veth pair: a frame sent on CPU n
# goes to queue n (AF_PACKET picks the sender's CPU's queue) and is
# received by that queue's NAPI on CPU n, as RSS would keep a flow on one
# CPU.  With one queue, the NAPI of two senders on two CPUs moves between
# them and splits datagrams across xfrag's per-CPU tables.  Fragments
# xfrag hands on (none expected) leave the kernel quickly.
soak_setup() {
	local nq

	nq=$(nproc)
	[ "$nq" -ge 2 ] || nq=2
	XF_QUEUES=$nq XF_FRAGTIME=2 xf_setup
}

case "${1:-}" in
setup) soak_setup; exit ;;
cleanup) xf_cleanup; exit ;;
esac
if [ "$(id -u)" -ne 0 ]; then
	echo "soak: needs root" >&2
	exit 1
fi
for b in xfrag gen sink; do
	if ! [ -x "$XF_BUILD/$b" ]; then
		echo "soak: $XF_BUILD/$b missing (make all)" >&2
		exit 1
	fi
done
trap xf_cleanup EXIT
trap 'exit 130' INT TERM
if ! soak_setup; then
	echo "soak: namespaces failed" >&2
	exit 1
fi
if ! xf_snd ping -q -c 1 -W 2 "$XF_R4" >/dev/null 2>&1; then
	echo "soak: no connectivity $XF_S4 -> $XF_R4" >&2
	exit 1
fi
/usr/bin/python3 "$TESTS_DIR/soak.py" --xfrag "$XF_BUILD/xfrag" \
	--gen "$XF_BUILD/gen" --sink "$XF_BUILD/sink" --iface "$XF_RIF" \
	--snd-if "$XF_SIF" --smac "$XF_SMAC" --dmac "$XF_RMAC" \
	--rcv-ns "$XF_RCV" --snd-ns "$XF_SND" --src4 "$XF_S4" --dst4 "$XF_R4" \
	--src6 "$XF_S6" --dst6 "$XF_R6" --out-dir "$TESTS_DIR/out" "$@"
