#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Real-driver tests (issue 24): inside the test VM started by
# `tests/vm.sh --net` (make test-vm), xfrag on the guest's 2-queue
# virtio-net device.  The host side is a tap in a namespace of its own with
# four IPv4 and four IPv6 addresses and a UDP echo server
# (tests/vnet_echo.py): every datagram the guest sends comes back
# fragmented by the host kernel at the tap's MTU, through the driver's own
# receive path, into XDP.  For each mode (the kernel alone, native, skb),
# family and size, tests/vnet_client.py checks every byte of every echo;
# xfrag's counters must account for each fragmented one (rebuilt in the
# frame, by TC, replayed, or passed on) with nothing lost.  Elsewhere (no
# XF_VNET=1) the suite is skipped.
XF_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.sh
. "$XF_DIR/lib.sh"

if [ "${XF_VNET:-0}" != 1 ]; then
	echo "SKIP vnet: needs the test VM's virtio-net (make test-vm)"
	exit 0
fi

NPASS=0
NFAIL=0
pass() { echo "PASS $1"; NPASS=$((NPASS + 1)); }
fail() { echo "FAIL $1: $2"; NFAIL=$((NFAIL + 1)); }

IF=""
for d in /sys/class/net/*; do
	[ "$(basename "$(readlink -f "$d/device/driver" 2>/dev/null)")" = virtio_net ] &&
		IF=$(basename "$d") && break
done
if [ -z "$IF" ]; then
	echo "FAIL vnet:setup: no virtio_net interface"
	exit 1
fi
XF_RIF=$IF
xf_cli() { "$XF_BUILD/xfrag" "$@"; }
XF_TMP=$(mktemp -d /tmp/xfrag-vnet.XXXXXX)
trap '"$XF_BUILD/xfrag" detach "$IF" >/dev/null 2>&1; rm -rf "$XF_TMP"' EXIT

MTU=${XF_VNET_MTU:-1500}
HOSTS4="10.77.0.1 10.77.0.3 10.77.0.4 10.77.0.5"
HOSTS6="fd77::1 fd77::3 fd77::4 fd77::5"
ip link set "$IF" mtu "$MTU" up || { echo "FAIL vnet:setup: mtu $MTU"; exit 1; }
ip addr add 10.77.0.2/24 dev "$IF"
ip addr add fd77::2/64 dev "$IF" nodad
for h in $HOSTS4 $HOSTS6; do
	ip neigh replace "$h" lladdr "$XF_VNET_HMAC" dev "$IF" nud permanent
done
for _ in $(seq 50); do
	ip link show "$IF" | grep -q LOWER_UP && break
	sleep 0.1
done
sysctl -qw net.core.rmem_max=8388608 net.core.wmem_max=8388608
echo "NOTE vnet: $IF ($(ls -d /sys/class/net/"$IF"/queues/rx-* | wc -l) receive queues), MTU $MTU, kernel $(uname -r)"

# Interrupts of each receive queue (virtioN-input.Q), summed over CPUs.
queues() {
	awk '$NF ~ /-input\.[0-9]+$/ {
		n = 0
		for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n += $i
		printf "%s=%d ", $NF, n
	}' /proc/interrupts
}

snmp() {
	awk -v k="$1" '
	FILENAME ~ /snmp6/ && $1 == k { print $2; exit }
	FILENAME !~ /snmp6/ && $1 == "Ip:" && !h { for (i = 2; i <= NF; i++) n[i] = $i; h = 1; next }
	FILENAME !~ /snmp6/ && $1 == "Ip:" && h { for (i = 2; i <= NF; i++) if (n[i] == k) { print $i; exit } }
	' /proc/net/snmp /proc/net/snmp6
}

# Frames the device dropped (rx_dropped): where the driver loses what no
# XDP program ever saw.
rxdrop() { cat /sys/class/net/"$IF"/statistics/rx_dropped; }

# one MODE FAMILY SIZE: COUNT echoes from each host address.  A datagram
# that did not come back must show in the device's own drop counter:
# never lost where xfrag (or the kernel) could have counted it.
one() {
	local mode=$1 fam=$2 size=$3 count=3 hosts hdr=28 out nfrag=0 why=""
	local k0 k1 d r0 r1 lost

	if [ "$fam" = 6 ]; then hosts=$HOSTS6 hdr=48; else hosts=$HOSTS4; fi
	[ $((size + hdr)) -gt "$MTU" ] && nfrag=$((count * 4))
	[ "$mode" = none ] || xf_stats "$XF_TMP/a.stats" || why="stats"
	k0=$(snmp "$([ "$fam" = 6 ] && echo Ip6ReasmOKs || echo ReasmOKs)")
	r0=$(rxdrop)
	# shellcheck disable=SC2086 # the host list, split on purpose
	out=$(timeout 120 python3 "$XF_DIR/vnet_client.py" 7007 "$size" \
		"$count" 3000 $hosts 2>&1)
	r1=$(rxdrop)
	lost=$(sed -n 's/.*lost=\([0-9]*\).*/\1/p' <<<"$out")
	case $out in
	*" bad=0 "*) ;;
	*) why="${why:+$why; }client: $out" ;;
	esac
	if [ "${lost:-1}" -gt $((r1 - r0)) ]; then
		why="${why:+$why; }$lost lost, the device dropped $((r1 - r0)) frames"
	elif [ "$lost" -gt 0 ]; then
		echo "NOTE vnet $mode IPv$fam $size: $lost lost in the driver (rx_dropped +$((r1 - r0)))"
		DRIVER_LOST=$((DRIVER_LOST + lost))
	fi
	k1=$(snmp "$([ "$fam" = 6 ] && echo Ip6ReasmOKs || echo ReasmOKs)")
	if [ "$mode" != none ]; then
		xf_stats "$XF_TMP/b.stats" || why="${why:+$why; }stats"
		d() { xf_delta "$XF_TMP/a.stats" "$XF_TMP/b.stats" "$1"; }
		local oks pass err hlost
		oks=$(d reasm_oks) pass=$(d pass_dgrams)
		err=$(d deliver_err) hlost=$(d handoff_lost)
		[ "$lost" = 0 ] && [ $((oks + pass)) -ne "$nfrag" ] &&
			why="${why:+$why; }reasm_oks $oks + pass_dgrams $pass, want $nfrag"
		[ "$err" = 0 ] && [ "$hlost" = 0 ] ||
			why="${why:+$why; }deliver_err $err handoff_lost $hlost"
		d=$(xf_invariants "$XF_TMP/b.stats") || why="${why:+$why; }invariant: $d"
		echo "NOTE vnet $mode IPv$fam $size (MTU $MTU): $out, xdp $(d deliver_xdp) tc $(d deliver_tc) replay $(d deliver_replay) passed $pass, kernel reassembled $((k1 - k0))"
	else
		echo "NOTE vnet kernel IPv$fam $size (MTU $MTU): $out, kernel reassembled $((k1 - k0))"
	fi
	if [ -n "$why" ]; then
		[ "$mode" != none ] && why="$why [delta: $(awk 'NR == FNR { a[$1] = $2; next }
			$2 - a[$1] != 0 { printf "%s=%+d ", $1, $2 - a[$1] }' \
			"$XF_TMP/a.stats" "$XF_TMP/b.stats")]"
		why="$why [rx: $(ip -s link show "$IF" | awk 'f { print "bytes " $1 " packets " $2 " dropped " $4; exit } /RX:/ { f = 1 }')]"
		fail "vnet-$mode:udp$fam-$size" "$why"
	else
		pass "vnet-$mode:udp$fam-$size"
	fi
}

DRIVER_LOST=0
DISPATCHER=0
q0=$(queues)
for mode in none native skb; do
	if [ "$mode" != none ]; then
		if ! out=$("$XF_BUILD/xfrag" attach "$IF" --mode "$mode" 2>&1); then
			if [ "$mode" = native ] && [ "$MTU" -gt 4096 ] &&
				[[ $out == *"Invalid argument"* || $out == *"EINVAL"* || $out == *"MTU"* ]]; then
				# 6.1's virtio-net: no native XDP above a page.
				echo "SKIP vnet-native: the driver refuses native XDP at MTU $MTU: $(tail -n 1 <<<"$out")"
				continue
			fi
			fail "vnet-$mode:attach" "$out"
			continue
		fi
		pass "vnet-$mode:attach"
		grep -iE "warning|dispatcher" <<<"$out" | sed "s/^/NOTE vnet $mode: /"
		[ "$mode" = native ] && [[ $out != *"single XDP program"* ]] &&
			DISPATCHER=1
	fi
	for size in 2000 4416 9000 16000 30000 65507; do
		one "$mode" 4 "$size"
	done
	for size in 2000 4416 9000 16000 30000 65487; do
		one "$mode" 6 "$size"
	done
	if [ "$mode" != none ]; then
		"$XF_BUILD/xfrag" detach "$IF" >/dev/null 2>&1 ||
			fail "vnet-$mode:detach" "detach failed"
	fi
done
# ---- The libxdp dispatcher with a second program (issue 24) -------------
# xdp_count (tests/xdp_count.bpf.c) counts what reaches it and passes it.
# Loaded first by xdp-loader, then `xfrag attach` must join its dispatcher,
# not replace it; the run order follows the priorities (xfrag 5 from its
# XDP_RUN_CONFIG, xdp_count 20 from its own, or 1 with --prio); `xfrag
# detach` must leave xdp_count running.  After xfrag, xdp_count sees what
# xfrag hands on: datagrams rebuilt in the frame whole (frames beyond the
# MTU's 1514 bytes, never fragments), and for each TC hand-off the one
# fragment that carries it; before xfrag it sees every fragment.  With
# steering on, fragments xfrag redirects to their owner CPU leave the
# dispatcher: the programs after it see neither them nor their datagram
# (README, "Real driver").
count_vals() {
	bpftool map dump name xdp_count_map 2>/dev/null | awk '
	/"frames"/ { gsub(/[^0-9]/, "", $2); f += $2 }
	/"frags"/ { gsub(/[^0-9]/, "", $2); g += $2 }
	/"big"/ { gsub(/[^0-9]/, "", $2); b += $2 }
	END { print f + 0, g + 0, b + 0 }'
}

dispatch() {
	local prio=$1 name=$2 out why="" f0 g0 b0 f1 g1 b1 c

	if ! out=$(xdp-loader load -m native -P "$prio" "$IF" \
			"$XF_BUILD/xdp_count.bpf.o" 2>&1); then
		fail "vnet-dispatch:$name" "xdp-loader: $out"
		return
	fi
	# Steering as chosen by attach: a fragment redirected to its owner
	# CPU leaves the dispatcher (the cpumap runs xfrag_owner_nf alone),
	# so with a program after xfrag attach turns steering off and says
	# why; with none after it, steering stays on.  Each datagram's
	# fragments arrive on one queue here (the tap hashes by address).
	if ! out=$("$XF_BUILD/xfrag" attach "$IF" --mode native 2>&1) ||
		[[ $out == *"single XDP program"* ]]; then
		fail "vnet-dispatch:$name" "xfrag did not join the dispatcher: $out"
		xdp-loader unload "$IF" --all >/dev/null 2>&1
		"$XF_BUILD/xfrag" detach "$IF" >/dev/null 2>&1
		return
	fi
	local steer want
	steer=$("$XF_BUILD/xfrag" status | awk -v i="$IF" '$1 == i { print $(NF - 1) }')
	if [ "$prio" -gt 5 ]; then
		want=off
		[[ $out == *"XDP programs run after xfrag in the dispatcher (xdp_count)"*"so it is off"* ]] ||
			why="attach did not say why steering is off: $(tr '\n' ' ' <<<"$out")"
	else
		want=cpumap
	fi
	[ "$steer" = "$want" ] || why="${why:+$why; }status steer $steer, want $want"
	echo "NOTE vnet dispatcher, xdp_count priority $prio: steering $steer"
	out=$(xdp-loader status "$IF" 2>&1)
	grep -q xfrag_xdp <<<"$out" && grep -q xdp_count <<<"$out" ||
		why="${why:+$why; }status: $(tr '\n' ' ' <<<"$out")"
	read -r f0 g0 b0 <<<"$(count_vals)"
	xf_stats "$XF_TMP/a.stats"
	c=$(python3 "$XF_DIR/vnet_client.py" 7007 2000 3 3000 $HOSTS4 2>&1) ||
		why="${why:+$why; }2000: $c"
	c=$(python3 "$XF_DIR/vnet_client.py" 7007 9000 3 3000 $HOSTS4 2>&1) ||
		why="${why:+$why; }9000: $c"
	xf_stats "$XF_TMP/b.stats"
	read -r f1 g1 b1 <<<"$(count_vals)"
	local reqds xdp tc
	reqds=$(xf_delta "$XF_TMP/a.stats" "$XF_TMP/b.stats" reasm_reqds)
	xdp=$(xf_delta "$XF_TMP/a.stats" "$XF_TMP/b.stats" deliver_xdp)
	tc=$(xf_delta "$XF_TMP/a.stats" "$XF_TMP/b.stats" deliver_tc)
	echo "NOTE vnet dispatcher, xdp_count priority $prio: xfrag fragments $reqds, rebuilt in the frame $xdp, by TC $tc; xdp_count saw frames $((f1 - f0)), fragments $((g1 - g0)), beyond 1514 bytes $((b1 - b0))"
	if [ "$prio" -gt 5 ]; then
		# After xfrag: the in-frame datagrams whole, one fragment a hand-off.
		[ $((g1 - g0)) -eq "$tc" ] ||
			why="${why:+$why; }xdp_count saw $((g1 - g0)) fragments, want $tc (one a TC hand-off)"
		[ $((b1 - b0)) -ge "$xdp" ] && [ "$xdp" -gt 0 ] ||
			why="${why:+$why; }xdp_count saw $((b1 - b0)) whole datagrams, xfrag rebuilt $xdp in the frame"
	else
		# Before xfrag: every fragment.
		[ $((g1 - g0)) -eq "$reqds" ] ||
			why="${why:+$why; }xdp_count saw $((g1 - g0)) fragments, xfrag $reqds"
	fi
	"$XF_BUILD/xfrag" detach "$IF" >/dev/null 2>&1 || why="${why:+$why; }detach"
	out=$(xdp-loader status "$IF" 2>&1)
	grep -q xdp_count <<<"$out" && ! grep -q xfrag_xdp <<<"$out" ||
		why="${why:+$why; }after detach: $(tr '\n' ' ' <<<"$out")"
	xdp-loader unload "$IF" --all >/dev/null 2>&1
	if [ -n "$why" ]; then
		fail "vnet-dispatch:$name" "$why"
	else
		pass "vnet-dispatch:$name"
	fi
}

# Asked for by name, steering stays on behind a later program: attach
# warns, and status says so under its table.
dispatch_steer_asked() {
	local out why=""

	if ! out=$(xdp-loader load -m native -P 20 "$IF" \
			"$XF_BUILD/xdp_count.bpf.o" 2>&1); then
		fail "vnet-dispatch:steer-asked" "xdp-loader: $out"
		return
	fi
	out=$("$XF_BUILD/xfrag" attach "$IF" --mode native --steer cpumap 2>&1) ||
		why="attach failed: $out"
	[[ $out == *"warning: XDP programs run after xfrag in the dispatcher (xdp_count)"* ]] ||
		why="${why:+$why; }no warning: $(tr '\n' ' ' <<<"$out")"
	out=$("$XF_BUILD/xfrag" status 2>&1)
	[[ $out == *"$IF: steering through the cpumap, and XDP programs run after xfrag in the dispatcher (xdp_count)"* ]] ||
		why="${why:+$why; }status: $(tr '\n' ' ' <<<"$out")"
	"$XF_BUILD/xfrag" detach "$IF" >/dev/null 2>&1 || why="${why:+$why; }detach"
	xdp-loader unload "$IF" --all >/dev/null 2>&1
	if [ -n "$why" ]; then
		fail "vnet-dispatch:steer-asked" "$why"
	else
		pass "vnet-dispatch:steer-asked"
	fi
}

if [ "$MTU" -gt 3500 ]; then
	:	# the dispatcher rows run at MTU 1500
elif [ "${DISPATCHER:-0}" = 1 ]; then
	dispatch 20 xfrag-first
	dispatch 1 xdp-count-first
	dispatch_steer_asked
else
	echo "SKIP vnet-dispatch: this kernel's libxdp dispatcher refuses xfrag (attached as a single program)"
fi

q1=$(queues)
echo "NOTE vnet: receive queue interrupts before: ${q0:-?}, after: $q1; lost in the driver: $DRIVER_LOST datagrams"
# Several source addresses: the tap spreads them over both queues.
n=$(awk -v a="$q0" -v b="$q1" 'BEGIN {
	na = split(a, x, /[ =]+/); nb = split(b, y, /[ =]+/)
	for (i = 1; i < na; i += 2) before[x[i]] = x[i + 1]
	for (i = 1; i < nb; i += 2) if (y[i + 1] - before[y[i]] > 0) n++
	print n + 0 }')
if [ "$n" -ge 2 ]; then
	pass "vnet:both-queues"
else
	fail "vnet:both-queues" "receive queues with traffic: $n ($q0 -> $q1)"
fi
echo "vnet: $NPASS passed, $NFAIL failed"
[ "$NFAIL" -eq 0 ]
