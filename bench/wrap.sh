#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The id-wrap benchmark (RFC 4963; README "Id-wrap guard"): the kernel
# alone and xfrag, side by side in one run, on a veth pair built by
# tests/lib.sh.  One source sends 2400-byte UDP datagrams (two fragments)
# with sequential ids at --rate frames/s, WRAPS x 65536 of them, each
# fragment lost with probability 0.5 % (about 1 % of the datagrams lose
# one); the sink checks every byte.  Every row comes from a source address
# of its own (10.99.0.101, ...), so rows do not meet each other's leftovers.  A datagram made of two originals
# reaches the application only with UDP checksum 0; with a valid checksum
# UDP drops it (counted in InCsumErrors).  Prints one Markdown table:
# complete datagrams sent, delivered intact, corrupt delivered, honest
# (complete) datagrams lost.
#
#   bench/wrap.sh [--wraps "3 10"] [--rate FPS]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh

WRAPS="3 10"
RATE=60000
while [ $# -gt 0 ]; do
	case $1 in
	--wraps) WRAPS=$2; shift 2 ;;
	--rate) RATE=$2; shift 2 ;;
	*) echo "usage: $0 [--wraps \"3 10\"] [--rate FPS]" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "wrap: needs root" >&2; exit 1; }
trap xf_cleanup EXIT
xf_setup >/dev/null || { echo "wrap: namespaces failed" >&2; exit 1; }

PORT=9400
# Each row sends from a source address of its own: what earlier rows left
# held (their lossy halves live for the 30 s time-out) is another flow.
SRCN=100
# The receiver's UdpInCsumErrors.
incsum() {
	xf_in "$XF_RCV" cat /proc/net/snmp | awk '
		$1 == "Udp:" && !h { for (i = 2; i <= NF; i++) c[$i] = i; h = 1; next }
		$1 == "Udp:" { print $c["InCsumErrors"] }'
}
# row LABEL WRAPS GEN-ARGS...: one run; prints a table row.
row() {
	local label=$1 wraps=$2 ready=$XF_TMP/ready g sent ok badn csum0 csum1
	shift 2

	rm -f "$ready"
	PORT=$((PORT + 1))
	SRCN=$((SRCN + 1))
	csum0=$(incsum)
	xf_rcv "$XF_BUILD/sink" --port $PORT --duration 300 --idle-ms 2000 \
		--json --ready-file "$ready" >"$XF_TMP/sink.json" 2>&1 &
	local s=$!
	for _ in $(seq 100); do [ -e "$ready" ] && break; sleep 0.02; done
	g=$(XF_SND_CPU=0 xf_snd "$XF_BUILD/gen" -i "$XF_SIF" --smac "$XF_SMAC" \
		--dmac "$XF_RMAC" --src 10.99.0.$SRCN --dst "$XF_R4" --dport $PORT \
		--size 2400 --mtu 1500 --streams 1 --loss 0.5 --rate "$RATE" \
		--duration 0 --count $((wraps * 65536)) --seed 5 --json "$@" 2>&1)
	wait "$s"
	csum1=$(incsum)
	sent=$(printf '%s' "$g" | sed -n 's/.*"datagrams_sent":\([0-9]*\).*/\1/p')
	ok=$(sed -n 's/.*"ok":\([0-9]*\).*/\1/p' "$XF_TMP/sink.json")
	badn=$(sed -n 's/.*"bad":\([0-9]*\).*/\1/p' "$XF_TMP/sink.json")
	printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$label" "$wraps" \
		"${sent:-?}" "${ok:-?}" "${badn:-?}" \
		"$(( ${sent:-0} - ${ok:-0} ))" "$(( ${csum1:-0} - ${csum0:-0} ))"
}

echo "$(nproc) CPUs, kernel $(uname -r), veth, $RATE frames/s, sender pinned to CPU 0"
echo
echo "| receiver | wraps | complete sent | delivered intact | corrupt delivered | complete lost | UDP InCsumErrors |"
echo "|---|---|---|---|---|---|---|"
for w in $WRAPS; do
	xf_in "$XF_RCV" sysctl -qw net.ipv4.ipfrag_max_dist=64
	row "kernel (ipfrag_max_dist 64), checksum 0" "$w" --csum0
	xf_in "$XF_RCV" sysctl -qw net.ipv4.ipfrag_max_dist=0
	row "kernel, ipfrag_max_dist 0, checksum 0" "$w" --csum0
	xf_in "$XF_RCV" sysctl -qw net.ipv4.ipfrag_max_dist=64
	xf_cli attach "$XF_RIF" >/dev/null || { echo "wrap: attach failed" >&2; exit 1; }
	row "xfrag (max-dist 1024), checksum 0" "$w" --csum0
	row "xfrag (max-dist 1024), valid checksum" "$w"
	xf_cli config "$XF_RIF" max-dist=0 >/dev/null
	row "xfrag, guard off, checksum 0" "$w" --csum0
	xf_cli detach "$XF_RIF" >/dev/null
done
