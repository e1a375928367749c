# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# Helpers for the namespace tests (sourced by tests/ns_test.sh).
#
# Topology: namespace xf-snd holds xfs0 (10.99.0.1/24, fd99::1/64), namespace
# xf-rcv holds its veth peer xfr0 (10.99.0.2/24, fd99::2/64); xfrag attaches
# to xfr0.  Neighbour entries are static, since XDP on the receiver may eat
# ARP / ND.
#
# `ip netns exec` remounts /sys, so the xfrag CLI runs under
# `nsenter --net=...` to keep the host's bpffs (/sys/fs/bpf).

XF_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
XF_BUILD=${XF_BUILD:-$XF_TOP/build}

XF_SND=xf-snd
XF_RCV=xf-rcv
XF_SIF=xfs0
XF_RIF=xfr0
XF_SMAC=02:99:00:00:00:01
XF_RMAC=02:99:00:00:00:02
XF_S4=10.99.0.1
XF_R4=10.99.0.2
XF_S6=fd99::1
XF_R6=fd99::2

XF_TMP=""
XF_RECV_PID=""
# shellcheck disable=SC2034 # read by the sourcing script
XF_RECV_OUT=""

# Run a command in a namespace: network only (keeps /sys, /sys/fs/bpf).
xf_in() {
	local ns=$1

	shift
	nsenter --net=/run/netns/"$ns" "$@"
}

# XF_SND_CPU=N pins the sender (and so, on veth, the receiving CPU) to N.
xf_snd() {
	if [ -n "${XF_SND_CPU:-}" ]; then
		taskset -c "$XF_SND_CPU" ip netns exec "$XF_SND" "$@"
	else
		ip netns exec "$XF_SND" "$@"
	fi
}
xf_rcv() { ip netns exec "$XF_RCV" "$@"; }

# The xfrag CLI inside the receiver's network namespace.
xf_cli() { xf_in "$XF_RCV" "$XF_BUILD/xfrag" "$@"; }

xf_cleanup() {
	if [ -n "$XF_RECV_PID" ]; then
		kill "$XF_RECV_PID" 2>/dev/null
		wait "$XF_RECV_PID" 2>/dev/null
		XF_RECV_PID=""
	fi
	if [ -e /run/netns/"$XF_RCV" ] && [ -x "$XF_BUILD/xfrag" ]; then
		xf_cli detach "$XF_RIF" >/dev/null 2>&1
	fi
		ip netns del "$XF_SND" 2>/dev/null
	ip netns del "$XF_RCV" 2>/dev/null
	# Pins left by a failed detach belong to an xfr0 that is gone now.
	if [ -d /sys/fs/bpf/xfrag/"$XF_RIF" ]; then
		rm -rf /sys/fs/bpf/xfrag/"$XF_RIF"
	fi
	if [ -n "$XF_TMP" ]; then
		rm -rf "$XF_TMP"
		XF_TMP=""
	fi
}

# Create namespaces, veth pair, addresses and static neighbours.
#
# XF_QUEUES=N gives the veth pair N queues (a frame sent on CPU n is then
# received by queue n's NAPI on CPU n, as RSS keeps a flow on one CPU);
# XF_FRAGTIME sets the receiver kernel's fragment time-out (default 30 s).
xf_setup() {
	local q=${XF_QUEUES:-1}

	xf_cleanup
	XF_TMP=$(mktemp -d /tmp/xfrag-ns.XXXXXX) || return 1
	ip netns add "$XF_SND" || return 1
	ip netns add "$XF_RCV" || return 1
	ip link add "$XF_SIF" netns "$XF_SND" address "$XF_SMAC" mtu 1500 \
		numtxqueues "$q" numrxqueues "$q" type veth peer name "$XF_RIF" \
		netns "$XF_RCV" address "$XF_RMAC" mtu 1500 \
		numtxqueues "$q" numrxqueues "$q" || return 1
	xf_snd ip link set lo up || return 1
	xf_rcv ip link set lo up || return 1
	xf_snd sysctl -qw net.ipv6.conf."$XF_SIF".accept_dad=0
	xf_rcv sysctl -qw net.ipv6.conf."$XF_RIF".accept_dad=0
	xf_rcv sysctl -qw net.ipv4.ipfrag_time="${XF_FRAGTIME:-30}" || return 1
	xf_rcv sysctl -qw net.ipv6.ip6frag_time="${XF_FRAGTIME:-30}" || return 1
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
	# Wait for carrier (veth comes up once both ends are up).
	for _ in $(seq 50); do
		xf_rcv ip link show "$XF_RIF" | grep -q LOWER_UP && return 0
		sleep 0.1
	done
	echo "xf_setup: $XF_RIF has no carrier" >&2
	return 1
}

# ---- Kernel counters (receiver) ----------------------------------------------

# xf_snmp NAME: IpFoo from /proc/net/snmp, Ip6Foo from /proc/net/snmp6.
xf_snmp() {
	local name=$1

	case $name in
	Ip6*)
		xf_in "$XF_RCV" cat /proc/net/snmp6 |
			awk -v k="$name" '$1 == k { print $2; exit }'
		;;
	Ip*)
		xf_in "$XF_RCV" cat /proc/net/snmp |
			awk -v k="${name#Ip}" '
			$1 == "Ip:" && !hdr { for (i = 2; i <= NF; i++)
						col[$i] = i; hdr = 1; next }
			$1 == "Ip:" && hdr { print $col[k]; exit }'
		;;
	*)
		echo "xf_snmp: unknown counter $name" >&2
		return 1
		;;
	esac
}

# ---- xfrag counters ------------------------------------------------------------

# xf_stats FILE: store `xfrag stats --json` as "key value" lines.
xf_stats() {
	local json

	json=$(xf_cli stats "$XF_RIF" --json) || return 1
	printf '%s\n' "$json" | tr -d '{}" \t\r' | tr ',' '\n' |
		awk -F: 'NF == 2 && $1 != "" { print $1, $2 }' >"$1"
	[ -s "$1" ]
}

# xf_stat FILE KEY: value of KEY (empty if missing).
xf_stat() {
	awk -v k="$2" '$1 == k { print $2; exit }' "$1"
}

# xf_delta BEFORE AFTER KEY
xf_delta() {
	local a b

	a=$(xf_stat "$1" "$3")
	b=$(xf_stat "$2" "$3")
	if [ -z "$a" ] || [ -z "$b" ]; then
		echo "missing"
		return 1
	fi
	echo $((b - a))
}

# xf_invariants FILE: check the counter invariants (tests/counters.h, the
# same check the C tests make, by build/xfcheck); prints the failure.
xf_invariants() {
	"$XF_BUILD/xfcheck" "$1"
}

# Non-zero counters of a stats file on one line (for failure reports).
xf_stats_brief() {
	awk '$2 != 0 { printf "%s%s=%s", sep, $1, $2; sep = " " }' "$1"
}

# ---- Traffic -------------------------------------------------------------------

# xf_recv_start ARGS...: udpcheck receiver in xf-rcv, in the background.
xf_recv_start() {
	: >"$XF_TMP/recv.out"
	: >"$XF_TMP/recv.err"
	xf_rcv "$XF_BUILD/udpcheck" recv "$@" \
		>"$XF_TMP/recv.out" 2>"$XF_TMP/recv.err" &
	XF_RECV_PID=$!
	for _ in $(seq 100); do
		grep -q listening "$XF_TMP/recv.err" && return 0
		kill -0 "$XF_RECV_PID" 2>/dev/null || break
		sleep 0.02
	done
	echo "udpcheck receiver did not start: $(cat "$XF_TMP/recv.err")"
	return 1
}

# xf_recv_wait: wait for the receiver (not in a subshell: it must be our
# child); its summary line goes to XF_RECV_OUT, returns its exit status.
xf_recv_wait() {
	local rc

	wait "$XF_RECV_PID"
	rc=$?
	XF_RECV_PID=""
	# shellcheck disable=SC2034 # read by the sourcing script
	XF_RECV_OUT=$(cat "$XF_TMP/recv.out")
	return $rc
}

# Details udpcheck printed about bad / duplicate datagrams (first line).
xf_recv_detail() {
	grep -v listening "$XF_TMP/recv.err" | head -n 2 | tr '\n' ' '
}

# xf_fragsend ARGS...: crafted frames from xf-snd to xf-rcv.
xf_fragsend() {
	xf_snd "$XF_BUILD/fragsend" -i "$XF_SIF" --smac "$XF_SMAC" \
		--dmac "$XF_RMAC" "$@"
}
