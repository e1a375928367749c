#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Replay the public captures of ../shared/corpus (or $XFRAG_CORPUS) into a
# receiver namespace, once with the kernel alone and once with xfrag, as the
# corpus's KERNEL-BASELINE.txt was made: addresses 10.231.0.1 -> .2 and
# fd00:231::1 -> ::2, MTU 3400, ipfrag_time 2.  tests/corpus_test.py does
# the comparing; its table lands in tests/out/corpus.md.
XF_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.sh
. "$XF_DIR/lib.sh"

PY=/usr/bin/python3
corpus=""
for d in "${XFRAG_CORPUS:-}" "$XF_TOP/../shared/corpus" /work/shared/corpus; do
	if [ -n "$d" ] && [ -f "$d/KERNEL-BASELINE.txt" ]; then
		corpus=$d
		break
	fi
done
if [ -z "$corpus" ]; then
	echo "SKIP corpus: no corpus (set XFRAG_CORPUS)"
	exit 0
fi

trap xf_cleanup EXIT
trap 'exit 130' INT TERM

corpus_setup() {
	xf_setup || return 1
	xf_snd ip link set "$XF_SIF" mtu 3400 || return 1
	xf_rcv ip link set "$XF_RIF" mtu 3400 || return 1
	xf_snd ip addr add 10.231.0.1/24 dev "$XF_SIF" || return 1
	xf_snd ip addr add fd00:231::1/64 dev "$XF_SIF" nodad || return 1
	xf_rcv ip addr add 10.231.0.2/24 dev "$XF_RIF" || return 1
	xf_rcv ip addr add fd00:231::2/64 dev "$XF_RIF" nodad || return 1
	xf_snd ip neigh replace 10.231.0.2 lladdr "$XF_RMAC" nud permanent \
		dev "$XF_SIF" || return 1
	xf_snd ip neigh replace fd00:231::2 lladdr "$XF_RMAC" nud permanent \
		dev "$XF_SIF" || return 1
	xf_rcv ip neigh replace 10.231.0.1 lladdr "$XF_SMAC" nud permanent \
		dev "$XF_RIF" || return 1
	xf_rcv ip neigh replace fd00:231::1 lladdr "$XF_SMAC" nud permanent \
		dev "$XF_RIF" || return 1
	xf_rcv sysctl -qw net.ipv4.ipfrag_time=2 || return 1
	xf_rcv sysctl -qw net.ipv6.ip6frag_time=2 || return 1
}

if ! out=$(corpus_setup 2>&1); then
	echo "FAIL corpus:setup: $out"
	exit 1
fi
mkdir -p "$XF_TOP/tests/out"
$PY "$XF_DIR/corpus_test.py" --corpus "$corpus" \
	--xfrag "$XF_BUILD/xfrag" --replay "$XF_DIR/corpus_replay.py" \
	--iface "$XF_RIF" --snd-if "$XF_SIF" --smac "$XF_SMAC" \
	--dmac "$XF_RMAC" --rcv-ns "$XF_RCV" --snd-ns "$XF_SND" \
	--table "$XF_TOP/tests/out/corpus${CORPUS_SPREAD:+-spread}.md" \
	${CORPUS_SPREAD:+--spread "$CORPUS_SPREAD"}
