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

# Like xf_setup, but the veth pair has a queue per CPU: a frame sent on
# CPU n goes to queue n (AF_PACKET picks the sender's CPU's queue) and is
# received by that queue's NAPI on CPU n, as RSS would keep a flow on one
# CPU.  With one queue, the NAPI of two senders on two CPUs moves between
# them and splits datagrams across xfrag's per-CPU tables.
soak_setup() {
	local nq

	nq=$(nproc)
	[ "$nq" -ge 2 ] || nq=2
	xf_cleanup
	ip netns add "$XF_SND" || return 1
	ip netns add "$XF_RCV" || return 1
	ip link add "$XF_SIF" netns "$XF_SND" address "$XF_SMAC" mtu 1500 \
		numtxqueues "$nq" numrxqueues "$nq" type veth peer name "$XF_RIF" \
		netns "$XF_RCV" address "$XF_RMAC" mtu 1500 \
		numtxqueues "$nq" numrxqueues "$nq" || return 1
	xf_snd ip link set lo up || return 1
	xf_rcv ip link set lo up || return 1
	xf_snd sysctl -qw net.ipv6.conf."$XF_SIF".accept_dad=0
	xf_rcv sysctl -qw net.ipv6.conf."$XF_RIF".accept_dad=0
	# Fragments xfrag hands on (none expected) leave the kernel quickly.
	xf_rcv sysctl -qw net.ipv4.ipfrag_time=2 || return 1
	xf_rcv sysctl -qw net.ipv6.ip6frag_time=2 || return 1
	xf_snd ip addr add "$XF_S4"/24 dev "$XF_SIF" || return 1
	xf_snd ip addr add "$XF_S6"/64 dev "$XF_SIF" nodad || return 1
	xf_rcv ip addr add "$XF_R4"/24 dev "$XF_RIF" || return 1
	xf_rcv ip addr add "$XF_R6"/64 dev "$XF_RIF" nodad || return 1
	xf_snd ip link set "$XF_SIF" up || return 1
	xf_rcv ip link set "$XF_RIF" up || return 1
	xf_snd ip neigh replace "$XF_R4" lladdr "$XF_RMAC" nud permanent \
		dev "$XF_SIF" || return 1
	xf_snd ip neigh replace "$XF_R6" lladdr "$XF_RMAC" nud permanent \
		dev "$XF_SIF" || return 1
	xf_rcv ip neigh replace "$XF_S4" lladdr "$XF_SMAC" nud permanent \
		dev "$XF_RIF" || return 1
	xf_rcv ip neigh replace "$XF_S6" lladdr "$XF_SMAC" nud permanent \
		dev "$XF_RIF" || return 1
	for _ in $(seq 50); do
		xf_rcv ip link show "$XF_RIF" | grep -q LOWER_UP && return 0
		sleep 0.1
	done
	echo "soak: $XF_RIF has no carrier" >&2
	return 1
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
