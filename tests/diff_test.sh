#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Differential test: the same fragment sequences into a receiver with xfrag
# and into one without it must deliver the same datagrams to L4, except
# where xfrag's documented policy differs on purpose (each such difference
# named and counted).
#
#   tests/diff_test.sh [--seed S] [--batches N] [--from B] [--long]
#                      [--cpu C|spread] [--keep]
#
# --seed S     replay seed S exactly (default: one from the date, printed)
# --batches N  batches to run (default 16; --long: 400)
# --from B     first batch index (replay of one batch: --from B --batches 1)
# --cpu C      the CPU the sender is pinned to (default 0): on veth the
#              receivers run where the sender runs, and xfrag is per CPU;
#              spread: each frame from the next CPU (diffgen --spread), so
#              every datagram's fragments arrive on several CPUs and
#              xfrag's steering (the default) must bring them together
# --keep       leave the namespaces up at the end (for a look)
#
# Topology: namespace xd-snd holds xds0 and xds1, veth peers of xdx0 in
# xd-x (xfrag attached) and of xdk0 in xd-k (the kernel alone); both
# receivers are 10.98.0.2/24 and fd98::2/64 with static neighbours for the
# senders .1 / .3 and ::1 / ::3, MTU 9000, ipfrag_time and ip6frag_time
# 2 s (xfrag --timeout 2000: well above the time a batch takes to send,
# even on a loaded machine), ipfrag_max_dist 0 (the kernel's IPv4
# "disorder" reset, which xfrag does not have), fragment memory 64 MiB on
# both kernels and 16 MiB per CPU for xfrag, so that no side runs out.
#
# Per batch (tests/diffgen.c): send to both, wait for the end markers,
# wait for the time-out when anything may be left, then compare
# (diffgen --check): what each side's diffrecv saw, and xfrag's counters.
# After every batch: xfrag's counter invariants; at the end the gauges are
# 0.  Every FAIL line carries the seed and the batch to replay.

XD_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.sh
. "$XD_DIR/lib.sh"

B=$XF_BUILD
SEED=""
BATCHES=16
FROM=0
CPU=0
KEEP=0
LONG=0
while [ $# -gt 0 ]; do
	case $1 in
	--seed) SEED=$2; shift 2 ;;
	--batches) BATCHES=$2; shift 2 ;;
	--from) FROM=$2; shift 2 ;;
	--cpu) CPU=$2; shift 2 ;;
	--long) LONG=1; shift ;;
	--keep) KEEP=1; shift ;;
	*) echo "usage: $0 [--seed S] [--batches N] [--from B] [--long] [--cpu C|spread] [--keep]" >&2
	   exit 2 ;;
	esac
done
[ "$LONG" = 1 ] && [ "$BATCHES" = 16 ] && BATCHES=400
[ -n "$SEED" ] || SEED=$(date +%Y%m%d%H%M%S)

SND=xd-snd
XNS=xd-x
KNS=xd-k
XIF=xdx0
KIF=xdk0
SMAC_X=02:98:00:00:00:01
RMAC_X=02:98:00:00:00:02
SMAC_K=02:98:00:00:01:01
RMAC_K=02:98:00:00:01:02
TIMEOUT_MS=2000

# lib.sh's helpers, pointed at our receiver (never its set-up / clean-up).
XF_RCV=$XNS
XF_RIF=$XIF

TMP=""
RPID_X=""
RPID_K=""
NFAIL=0

# XD_VERBOSE=1: where the time of a batch goes.
TM=""
tmark() { [ "${XD_VERBOSE:-0}" = 1 ] && TM="$TM $1:$(( ($(date +%s%N) - ts) / 1000000 ))"; }

in_ns() { local ns=$1; shift; nsenter --net=/run/netns/"$ns" "$@"; }

cleanup() {
	for p in $RPID_X $RPID_K; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	RPID_X=""
	RPID_K=""
	[ "$KEEP" = 1 ] && return
	if [ -e /run/netns/$XNS ]; then
		in_ns $XNS "$B/xfrag" detach $XIF >/dev/null 2>&1
	fi
	for ns in $SND $XNS $KNS; do
		ip netns del "$ns" 2>/dev/null
	done
	# Pins left by a failed detach belong to our xdx0, gone now.
	[ -d /sys/fs/bpf/xfrag/$XIF ] && rm -rf /sys/fs/bpf/xfrag/$XIF
	[ -n "$TMP" ] && rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { echo "FAIL $1: $2 (seed $SEED)"; NFAIL=$((NFAIL + 1)); }

setup_rcv() {
	local ns=$1 sif=$2 rif=$3 smac=$4 rmac=$5

	ip link add "$sif" netns $SND address "$smac" mtu 9000 type veth \
		peer name "$rif" netns "$ns" address "$rmac" mtu 9000 || return 1
	in_ns "$ns" ip link set lo up || return 1
	ip netns exec "$ns" sysctl -qw net.ipv6.conf."$rif".accept_dad=0
	for s in net.ipv4.ipfrag_time=$((TIMEOUT_MS / 1000)) \
		 net.ipv6.ip6frag_time=$((TIMEOUT_MS / 1000)) \
		 net.ipv4.ipfrag_max_dist=0 \
		 net.ipv4.ipfrag_high_thresh=67108864 \
		 net.ipv6.ip6frag_high_thresh=67108864; do
		ip netns exec "$ns" sysctl -qw "$s" || return 1
	done
	in_ns "$ns" ip addr add 10.98.0.2/24 dev "$rif" || return 1
	in_ns "$ns" ip addr add fd98::2/64 dev "$rif" nodad || return 1
	in_ns "$ns" ip link set "$rif" up || return 1
	in_ns $SND ip link set "$sif" up || return 1
	for a in 10.98.0.1 10.98.0.3 fd98::1 fd98::3; do
		in_ns "$ns" ip neigh replace $a lladdr "$smac" nud permanent \
			dev "$rif" || return 1
	done
}

setup() {
	cleanup
	TMP=$(mktemp -d /tmp/xfrag-diff.XXXXXX) || return 1
	ip netns add $SND || return 1
	ip netns add $XNS || return 1
	ip netns add $KNS || return 1
	in_ns $SND ip link set lo up || return 1
	setup_rcv $XNS xds0 $XIF $SMAC_X $RMAC_X || return 1
	setup_rcv $KNS xds1 $KIF $SMAC_K $RMAC_K || return 1
	for _ in $(seq 50); do
		in_ns $XNS ip link show $XIF | grep -q LOWER_UP &&
			in_ns $KNS ip link show $KIF | grep -q LOWER_UP && break
		sleep 0.1
	done
	# Our own copies: a rebuild during a long run does not disturb it.
	cp "$B/diffgen" "$B/diffrecv" "$TMP/" || return 1
	in_ns $XNS "$B/xfrag" attach $XIF --timeout $TIMEOUT_MS \
		--mem-per-cpu 16M ${XD_ATTACH_ARGS:-} >"$TMP/attach.log" 2>&1 || {
		echo "xfrag attach: $(cat "$TMP/attach.log")"
		return 1
	}
}

# start_recv NS OUT: diffrecv in NS, logging to OUT; its pid in RPID.
start_recv() {
	local ns=$1 out=$2

	ip netns exec "$ns" "$TMP/diffrecv" --seed "$SEED" -o "$out" \
		>/dev/null 2>"$out.err" &
	RPID=$!
	for _ in $(seq 100); do
		grep -q listening "$out.err" && return 0
		sleep 0.02
	done
	return 1
}

# "inuse" of the kernel's IPv4 + IPv6 fragment queues in a namespace.
kfrag_inuse() {
	in_ns "$1" cat /proc/net/sockstat /proc/net/sockstat6 |
		awk '$1 == "FRAG:" || $1 == "FRAG6:" { n += $3 } END { print n + 0 }'
}

# Nothing held: both kernels' queues and xfrag's gauges.
all_idle() {
	local f=$1

	[ "$(kfrag_inuse $XNS)" = 0 ] && [ "$(kfrag_inuse $KNS)" = 0 ] &&
		xf_stats "$f" &&
		[ "$(xf_stat "$f" dgrams_in_flight)" = 0 ] &&
		[ "$(xf_stat "$f" frags_in_flight)" = 0 ] &&
		[ "$(xf_stat "$f" handoff_pending)" = 0 ] &&
		[ "$(xf_stat "$f" steer_out)" = "$(xf_stat "$f" steer_in)" ]
}

# Drop counters of the veths: a frame lost on the way is no comparison.
drops() {
	{
		in_ns $SND ip -s link show xds0
		in_ns $SND ip -s link show xds1
		in_ns $XNS ip -s link show $XIF
		in_ns $KNS ip -s link show $KIF
	} | awk '/RX:|TX:/ { getline; n += $4 } END { print n + 0 }'
}

# UDP datagrams that reached L4 and were refused (checksum, length):
# Udp InErrors + Udp6InErrors.
udp_inerr() {
	in_ns "$1" cat /proc/net/snmp /proc/net/snmp6 | awk '
		$1 == "Udp:" && !h { for (i = 2; i <= NF; i++) c[$i] = i; h = 1; next }
		$1 == "Udp:" { n += $c["InErrors"] }
		$1 == "Udp6InErrors" { n += $2 }
		END { print n + 0 }'
}

udp_errs() {
	in_ns "$1" cat /proc/net/snmp /proc/net/snmp6 | awk '
		$1 == "Udp:" && !h { for (i = 2; i <= NF; i++) c[$i] = i; h = 1; next }
		$1 == "Udp:" { printf "InErrors=%s RcvbufErrors=%s InCsumErrors=%s ", $c["InErrors"], $c["RcvbufErrors"], $c["InCsumErrors"] }
		$1 == "Udp6InErrors" || $1 == "Udp6RcvbufErrors" || $1 == "Udp6InCsumErrors" { printf "%s=%s ", $1, $2 }'
}

echo "diff: seed $SEED, batches $FROM..$((FROM + BATCHES - 1)), sender on CPU $CPU"
CPUS=$CPU
SPREAD=""
NAME=""
if [ "$CPU" = spread ]; then
	# Each frame from the next CPU: every datagram's fragments arrive on
	# several CPUs, which xfrag's steering must bring together.
	CPUS=0-$(($(nproc) - 1))
	SPREAD="--spread $(nproc)"
	NAME="spread-"
fi
t0=$(date +%s)
if ! setup; then
	fail diff-setup "namespaces or xfrag attach failed"
	exit 1
fi
start_recv $XNS "$TMP/x.log" || { fail diff-setup "receiver in $XNS"; exit 1; }
RPID_X=$RPID
start_recv $KNS "$TMP/k.log" || { fail diff-setup "receiver in $KNS"; exit 1; }
RPID_K=$RPID
: >"$TMP/cats"
: >"$TMP/manifest"
DG=0
FR=0
DX=0
DK=0
drops0=$(drops)

for ((b = FROM; b < FROM + BATCHES; b++)); do
	if ! all_idle "$TMP/s0"; then
		fail diff-idle "something still held before batch $b"
	fi
	ts=$(date +%s%N)
	tmark start
	ex0=$(udp_inerr $XNS)
	ek0=$(udp_inerr $KNS)
	if ! out=$(taskset -c "$CPUS" nsenter --net=/run/netns/$SND \
			"$TMP/diffgen" --seed "$SEED" --batch $b --send $SPREAD \
			--ifx xds0 --dmac-x $RMAC_X --ifk xds1 \
			--dmac-k $RMAC_K --manifest "$TMP/manifest" 2>&1); then
		fail "diff-seed-$SEED-batch-$b" "sender: $out"
		break
	fi
	tmark sent
	sent_ms=$(( ($(date +%s%N) - ts) / 1000000 ))
	[ $sent_ms -gt $((TIMEOUT_MS / 2)) ] &&
		echo "note: batch $b took $sent_ms ms to send (time-out $TIMEOUT_MS ms): a difference in it may be a time-out race"
	# Both sides delivered everything sent before the end marker.
	for _ in $(seq 500); do
		grep -qx "end $b" "$TMP/x.log" && grep -qx "end $b" "$TMP/k.log" &&
			break
		sleep 0.02
	done
	tmark ends
	# Anything incomplete, duplicated or on another VLAN may be held:
	# wait for the time-out, then for the gauges.
	if "$TMP/diffgen" --seed "$SEED" --batch $b --print |
			grep '^dg ' | grep -qv 'missing 0 extras -$'; then
		left=$(( TIMEOUT_MS + 300 - ($(date +%s%N) - ts) / 1000000 ))
		[ $left -gt 0 ] && sleep "$(awk -v m=$left 'BEGIN { print m / 1000 }')"
	fi
	tmark waited
	idle=0
	for _ in $(seq 40); do
		if all_idle "$TMP/s1"; then
			idle=1
			break
		fi
		sleep 0.1
	done
	# Steering (the default) sends fragments to their owner CPU through
	# a cpumap, so a datagram can reach its socket after the end marker,
	# which is not a fragment and is never redirected (the checker takes
	# a datagram's line wherever it falls): all_idle waited for the
	# cpumap queues; give the receiver a moment to log it.
	sleep 0.1
	if [ $idle = 0 ]; then
		fail "diff-seed-$SEED-batch-$b" "still held $((TIMEOUT_MS + 4000)) ms after the batch: kernel x $(kfrag_inuse $XNS) k $(kfrag_inuse $KNS), xfrag $(xf_stats_brief "$TMP/s1")"
	fi
	# With nothing held, the byte gauges are where they were before the
	# batch (0, unless an earlier batch already broke them).
	if [ $idle = 1 ]; then
		for g in bytes_in_flight mem_in_flight; do
			a=$(xf_stat "$TMP/s0" $g)
			z=$(xf_stat "$TMP/s1" $g)
			[ "$a" = "$z" ] || fail "diff-seed-$SEED-batch-$b" "$g went from $a to $z over the batch, with nothing held"
		done
	fi
	if ! msg=$(xf_invariants "$TMP/s1"); then
		fail "diff-seed-$SEED-batch-$b" "xfrag invariants: $msg"
	fi
	tmark idle
	# A datagram xfrag rebuilt wrong reaches UDP and is refused there: no
	# more of those than the kernel's own.
	ex=$(( $(udp_inerr $XNS) - ex0 ))
	ek=$(( $(udp_inerr $KNS) - ek0 ))
	[ $ex -le $ek ] || fail "diff-seed-$SEED-batch-$b" "UDP refused $ex datagrams on the xfrag side, $ek on the kernel side (InErrors)"
	res=$("$TMP/diffgen" --seed "$SEED" --batch $b --check \
		--xrecv "$TMP/x.log" --krecv "$TMP/k.log" \
		--xstats0 "$TMP/s0" --xstats1 "$TMP/s1")
	rc=$?
	grep '^FAIL' <<<"$res"
	if [ $rc -ne 0 ] && ! grep -q '^FAIL' <<<"$res"; then
		fail "diff-seed-$SEED-batch-$b" "checker exited $rc without a FAIL line"
	fi
	[ "${XD_VERBOSE:-0}" = 1 ] && sed -n "s/^note /note batch $b: /p" <<<"$res"
	NFAIL=$((NFAIL + $(grep -c '^FAIL' <<<"$res")))
	grep '^cat ' <<<"$res" >>"$TMP/cats"
	read -r _ n _ f _ x _ k < <(grep '^sent ' <<<"$res")
	DG=$((DG + ${n:-0}))
	FR=$((FR + ${f:-0}))
	DX=$((DX + ${x:-0}))
	DK=$((DK + ${k:-0}))
	tmark checked
	[ "${XD_VERBOSE:-0}" = 1 ] && echo "batch $b ($TM ms): $(tr "\n" " " <<<"$res")"
	TM=""
done

# After the time-out nothing is held (gauges include the memory ones).
sleep "$(awk -v m=$((TIMEOUT_MS + 300)) 'BEGIN { print m / 1000 }')"
for _ in $(seq 40); do
	all_idle "$TMP/end" && break
	sleep 0.1
done
for g in frags_in_flight dgrams_in_flight bytes_in_flight mem_in_flight \
	 handoff_pending; do
	v=$(xf_stat "$TMP/end" $g)
	[ "$v" = 0 ] || fail diff-gauges "$g is ${v:-missing} after the time-out"
done
msg=$(xf_invariants "$TMP/end") || fail diff-gauges "invariants: $msg"
if [ -n "$SPREAD" ]; then
	# Spread over CPUs, datagrams met on their owner: steering moved some.
	so=$(xf_stat "$TMP/end" steer_out)
	echo "diff: spread: steer_out $so, steer_in $(xf_stat "$TMP/end" steer_in)"
	[ "${so:-0}" -gt 0 ] || fail diff-spread-steered "no fragment was steered (steer_out ${so:-missing})"
fi
d=$(( $(drops) - drops0 ))
[ "$d" = 0 ] || fail diff-drops "$d frames dropped on the veths: the comparison is void"

cats=$(awk '{ n[$2] += $3 } END { for (c in n) printf "%s=%d ", c, n[c] }' "$TMP/cats")
echo "diff: seed $SEED: $BATCHES batches, $DG datagrams, $FR frames to each side; delivered: xfrag $DX, kernel $DK; $(( $(date +%s) - t0 )) s"
echo "diff: named differences: ${cats:-none}"
echo "diff: xfrag: $(xf_stats_brief "$TMP/end")"
echo "diff: UDP errors, xfrag side: $(udp_errs $XNS)"
echo "diff: UDP errors, kernel side: $(udp_errs $KNS)"
if [ -n "${XD_SAVE:-}" ]; then
	cp "$TMP/manifest" "$XD_SAVE.manifest"
	cp "$TMP/x.log" "$XD_SAVE.x.log"
	cp "$TMP/k.log" "$XD_SAVE.k.log"
fi
if [ $NFAIL -eq 0 ]; then
	echo "PASS diff-${NAME}kernel-vs-xfrag (seed $SEED, $BATCHES batches, $DG datagrams)"
else
	echo "FAIL diff-${NAME}kernel-vs-xfrag: $NFAIL failures (seed $SEED; replay: $0 --seed $SEED --from B --batches 1${SPREAD:+ --cpu spread})"
	exit 1
fi
