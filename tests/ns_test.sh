#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Namespace tests: real traffic over a veth pair into xfrag on xfr0.
#
# For each mode (native, skb) xfrag is attached to xfr0 and datagrams are
# sent from xf-snd, fragmented by the kernel (udpcheck, ping) or crafted
# (fragsend).  The receiver checks every byte; the kernel's and xfrag's
# counters show who reassembled them.
#
# Environment:
#   XFRAG_NONE=1       no xfrag: the kernel alone must pass the byte checks
#   XFRAG_MODES="..."  modes to run (default "native skb")
#   XFRAG_IPV6=0       skip the IPv6 tests with xfrag attached
#   XFRAG_LOADER=0     skip the xdp-loader / tc / bpftool tests
#   XFRAG_VERBOSE=1    show command output on failures
#   XFRAG_ONLY=REGEX   run only the tests whose name matches

XF_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.sh
. "$XF_DIR/lib.sh"

XFRAG_NONE=${XFRAG_NONE:-0}
XFRAG_IPV6=${XFRAG_IPV6:-1}
XFRAG_LOADER=${XFRAG_LOADER:-1}
if [ "$XFRAG_NONE" = 1 ]; then
	MODES=none
else
	MODES=${XFRAG_MODES:-native skb}
fi

NPASS=0
NFAIL=0
MODE=""
REASON=""
PORT=5000
ID_BASE=1000
SEQ=0

trap xf_cleanup EXIT
trap 'exit 130' INT TERM

pass() { echo "PASS $1"; NPASS=$((NPASS + 1)); }
fail() { echo "FAIL $1: $2"; NFAIL=$((NFAIL + 1)); }

# Add a failure reason (tests keep going to collect all of them).
bad() { REASON="${REASON:+$REASON; }$*"; }

xf() { [ "$MODE" != none ]; }

# ---- Snapshots -----------------------------------------------------------------

# snap NAME: xfrag stats (if attached) and kernel counters.
snap() {
	local n=$1

	if xf; then
		xf_stats "$XF_TMP/$n.stats" || {
			bad "xfrag stats failed"
			: >"$XF_TMP/$n.stats"
		}
	fi
	{
		echo "IpReasmReqds $(xf_snmp IpReasmReqds)"
		echo "IpReasmOKs $(xf_snmp IpReasmOKs)"
		echo "IpReasmFails $(xf_snmp IpReasmFails)"
		echo "Ip6ReasmReqds $(xf_snmp Ip6ReasmReqds)"
		echo "Ip6ReasmOKs $(xf_snmp Ip6ReasmOKs)"
	} >"$XF_TMP/$n.snmp"
}

# kd KEY: kernel counter delta between snapshots "a" and "b".
kd() { xf_delta "$XF_TMP/a.snmp" "$XF_TMP/b.snmp" "$1"; }
# sd KEY: xfrag counter delta between snapshots "a" and "b".
sd() { xf_delta "$XF_TMP/a.stats" "$XF_TMP/b.stats" "$1"; }

# expect WHAT OP VALUE ACTUAL
expect() {
	local what=$1 op=$2 want=$3 got=$4

	case $got in
	''|*[!0-9-]*)
		bad "$what: no value ($got)"
		return
		;;
	esac
	if ! test "$got" "$op" "$want"; then
		bad "$what=$got, expected $op $want"
	fi
}

# xfrag delivered exactly N datagrams and the kernel reassembled nothing.
expect_xfrag_reasm() {
	local n=$1 dx dt

	expect "kernel IpReasmReqds delta" -eq 0 "$(kd IpReasmReqds)"
	expect "reasm_oks delta" -eq "$n" "$(sd reasm_oks)"
	dx=$(sd deliver_xdp)
	dt=$(sd deliver_tc)
	expect "deliver_xdp+deliver_tc delta" -eq "$n" $((dx + dt))
}

# ---- Tests ---------------------------------------------------------------------

# udp_xfer DST SIZE COUNT: UDP datagrams fragmented by the sender's
# kernel, every byte checked by the receiver; snapshots a and b around it.
udp_xfer() {
	local dst=$1 size=$2 count=$3 out
	local port=$((PORT++)) seq0=$((SEQ += 1000))

	snap a
	xf_recv_start --port "$port" --count "$count" --size "$size" \
		--timeout-ms 2000 || { bad "receiver"; return 1; }
	if ! out=$(xf_snd "$XF_BUILD/udpcheck" send --dst "$dst" \
			--port "$port" --size "$size" --count "$count" \
			--seq0 "$seq0" --gap-us 2000 2>&1); then
		bad "sender: $out"
	fi
	xf_recv_wait || bad "receiver: $XF_RECV_OUT $(xf_recv_detail)"
	snap b
}

# UDP through the kernel's own fragmentation.
udp_kernel() {
	local dst=$1 size=$2 count=$3 v6=0 k=Ip

	case $dst in *:*) v6=1 k=Ip6 ;; esac
	udp_xfer "$dst" "$size" "$count" || return
	if ! xf; then
		expect "kernel ${k}ReasmOKs delta" -ge "$count" "$(kd ${k}ReasmOKs)"
		return
	fi
	if [ "$size" -gt 65000 ]; then
		if [ "$MODE" = native ]; then
			# Beyond one skb: reassembled by xfrag, then replayed
			# to the kernel as a complete set of fragments.
			expect "deliver_replay delta" -eq "$count" \
				"$(sd deliver_replay)"
			# Coalesced (issue 26): up to 16064 bytes a fragment,
			# 5 for 64 KiB (one per 1480-byte piece: 45), and the
			# kernel queued just those.
			expect "replay_frags delta" -le $((count * 5)) \
				"$(sd replay_frags)"
			expect "kernel ${k}ReasmReqds delta" -eq \
				"$(sd replay_frags)" "$(kd ${k}ReasmReqds)"
			expect "reasm_oks delta" -eq "$count" "$(sd reasm_oks)"
			expect "pass_dgrams delta" -eq 0 "$(sd pass_dgrams)"
		else
			# skb mode: passed through to the kernel untouched.
			expect "pass_dgrams delta" -eq "$count" "$(sd pass_dgrams)"
			expect "frag_passed delta" -gt 0 "$(sd frag_passed)"
			expect "reasm_oks delta" -eq 0 "$(sd reasm_oks)"
		fi
		# Either way the kernel rebuilds each datagram.
		expect "kernel ${k}ReasmOKs delta" -eq "$count" "$(kd ${k}ReasmOKs)"
		return
	fi
	if [ "$v6" = 1 ]; then
		expect "kernel Ip6ReasmReqds delta" -eq 0 "$(kd Ip6ReasmReqds)"
		expect "reasm_oks delta" -eq "$count" "$(sd reasm_oks)"
		expect "ip6_oks delta" -eq "$count" "$(sd ip6_oks)"
		return
	fi
	expect_xfrag_reasm "$count"
	if [ "$size" -ge 9000 ]; then
		# Too big for the XDP frame: this is the TC path.
		expect "deliver_tc delta" -gt 0 "$(sd deliver_tc)"
	fi
}

t_udp_2000() { udp_kernel "$XF_R4" 2000 20; }
t_udp_4416() { udp_kernel "$XF_R4" 4416 20; }
t_udp_9000() { udp_kernel "$XF_R4" 9000 20; }
t_udp_16000() { udp_kernel "$XF_R4" 16000 20; }
t_udp_65507() { udp_kernel "$XF_R4" 65507 5; }
t_udp6_2000() { udp_kernel "$XF_R6" 2000 10; }
t_udp6_4416() { udp_kernel "$XF_R6" 4416 10; }
t_udp6_9000() { udp_kernel "$XF_R6" 9000 10; }
t_udp6_16000() { udp_kernel "$XF_R6" 16000 10; }
t_udp6_65507() { udp_kernel "$XF_R6" 65507 3; }

# ping_xfer DST SIZE: 5 echo requests of SIZE bytes, all answered;
# snapshots a and b around them.
ping_xfer() {
	local out rx

	snap a
	out=$(xf_snd ping -q -s "$2" -c 5 -i 0.2 -W 2 "$1" 2>&1)
	snap b
	rx=$(printf '%s\n' "$out" | sed -n 's/.* \([0-9]*\) received.*/\1/p')
	expect "ping replies" -eq 5 "${rx:-none}"
}

t_ping6() {
	ping_xfer "$XF_R6" 3000
	if xf; then
		expect "kernel Ip6ReasmReqds delta" -eq 0 "$(kd Ip6ReasmReqds)"
		expect "ip6_oks delta" -eq 5 "$(sd ip6_oks)"
	else
		expect "kernel Ip6ReasmOKs delta" -ge 5 "$(kd Ip6ReasmOKs)"
	fi
}

t_ping() {
	ping_xfer "$XF_R4" 3000
	if xf; then
		expect "kernel IpReasmReqds delta" -eq 0 "$(kd IpReasmReqds)"
		expect "reasm_oks delta" -eq 5 "$(sd reasm_oks)"
	else
		expect "kernel IpReasmOKs delta" -ge 5 "$(kd IpReasmOKs)"
	fi
}

# crafted NAME COUNT EXPECT_OK [fragsend args...]: crafted UDP datagrams of
# 4416 bytes unless the args say otherwise; EXPECT_OK datagrams must arrive.
crafted() {
	local count=$1 want=$2 out size=4416 a
	local port=$((PORT++)) id=$((ID_BASE += 100))
	# fragsend writes a whole set from one process, which the scheduler
	# may move between CPUs halfway (seen in the 6.1 guest: replay-random
	# split two datagrams).  Until fragments are steered to one CPU,
	# halves on two CPUs are never merged (README "What it does"), so the
	# set comes from one CPU, as one sendmsg of the kernel's own fragments
	# does; which CPU changes from test to test.
	local XF_SND_CPU=${XF_SND_CPU:-$((port % $(nproc)))}

	shift 2
	for a in "$@"; do
		case $a in --size=*) size=${a#--size=} ;; esac
	done
	snap a
	if [ "$want" -gt 0 ]; then
		xf_recv_start --port "$port" --count "$want" --size "$size" \
			--timeout-ms 2000 || { bad "receiver"; return 1; }
	else
		xf_recv_start --port "$port" --timeout-ms 1000 ||
			{ bad "receiver"; return 1; }
	fi
	if ! out=$(xf_fragsend --dport "$port" --id "$id" \
			--count "$count" "$@" 2>&1); then
		bad "fragsend: $out"
	fi
	xf_recv_wait || bad "receiver: $XF_RECV_OUT $(xf_recv_detail)"
	snap b
}

crafted4() { crafted "$@" --src "$XF_S4" --dst "$XF_R4"; }

t_reverse() {
	crafted4 5 5 --size=4416 --mtu 1500 --order reverse || return
	xf && expect_xfrag_reasm 5
	xf || expect "kernel IpReasmOKs delta" -eq 5 "$(kd IpReasmOKs)"
}

# The first (1514-byte) fragment arrives last: its frame can grow to the
# whole 3028-byte datagram, so XDP rebuilds it in place.
t_inplace() {
	crafted4 5 5 --size=3000 --mtu 1500 --order reverse || return
	xf || return
	expect_xfrag_reasm 5
	expect "deliver_xdp delta" -eq 5 "$(sd deliver_xdp)"
}

t_random() {
	crafted4 5 5 --size=3000 --mtu 1000 --order random --seed 7 || return
	xf && expect_xfrag_reasm 5
	xf || expect "kernel IpReasmOKs delta" -eq 5 "$(kd IpReasmOKs)"
}

t_dup() {
	crafted4 3 3 --size=4416 --mtu 1500 --dup || return
	xf || return
	expect_xfrag_reasm 3
	# The duplicate of each last fragment comes after completion and
	# starts a new datagram; the other two duplicates are dropped.
	expect "frag_dup delta" -ge 6 "$(sd frag_dup)"
}

t_overlap() {
	# 2960 bytes: 0..1480, then 8..1488 with other bytes, then the rest.
	crafted4 1 0 --size=2952 --frags 0+1480,8+1480X,1480+1480 || return
	expect "kernel IpReasmOKs delta" -eq 0 "$(kd IpReasmOKs)"
	xf || return
	expect "frag_overlap delta" -gt 0 "$(sd frag_overlap)"
	expect "reasm_oks delta" -eq 0 "$(sd reasm_oks)"
}

t_interleave() {
	crafted4 50 50 --size=4416 --mtu 1500 --order random --seed 3 ||
		return
	xf && expect_xfrag_reasm 50
	xf || expect "kernel IpReasmOKs delta" -eq 50 "$(kd IpReasmOKs)"
}

# Native mode replays datagrams beyond one skb: in random order (the size
# is learned late, which without replay is frag_oversize), and IPv6 with
# extension headers before the Fragment header (each replayed fragment
# carries them, RFC 8200 4.5).
t_replay_random() {
	crafted4 3 3 --size=30000 --mtu 1500 --order random --seed 9 || return
	expect "deliver_replay delta" -eq 3 "$(sd deliver_replay)"
	# Coalesced: 30000 bytes in 2 or 3 fragments (pieces of up to 1536
	# bytes within 16064-byte skbs), not 21; the kernel queued just those.
	expect "replay_frags delta" -le 9 "$(sd replay_frags)"
	expect "kernel IpReasmReqds delta" -eq "$(sd replay_frags)" \
		"$(kd IpReasmReqds)"
	expect "frag_oversize delta" -eq 0 "$(sd frag_oversize)"
	expect "kernel IpReasmOKs delta" -eq 3 "$(kd IpReasmOKs)"
}

t_replay6_exthdr() {
	crafted 2 2 --size=20000 --mtu 1500 --order random --seed 4 \
		--exthdr hbh,dst,rt --src "$XF_S6" --dst "$XF_R6" || return
	expect "deliver_replay delta" -eq 2 "$(sd deliver_replay)"
	expect "replay_frags delta" -le 4 "$(sd replay_frags)"
	expect "kernel Ip6ReasmReqds delta" -eq "$(sd replay_frags)" \
		"$(kd Ip6ReasmReqds)"
	expect "kernel Ip6ReasmOKs delta" -eq 2 "$(kd Ip6ReasmOKs)"
}

t_frag6_exthdr() {
	crafted 5 5 --size=4416 --mtu 1500 --order random --seed 5 \
		--exthdr hbh,dst,rt --src "$XF_S6" --dst "$XF_R6" || return
	if xf; then
		expect "kernel Ip6ReasmReqds delta" -eq 0 "$(kd Ip6ReasmReqds)"
		expect "reasm_oks delta" -eq 5 "$(sd reasm_oks)"
	else
		expect "kernel Ip6ReasmOKs delta" -eq 5 "$(kd Ip6ReasmOKs)"
	fi
}

t_icmp6() {
	crafted 1 0 --size=3000 --mtu 1280 --proto icmp \
		--src "$XF_S6" --dst "$XF_R6" || return
	# Only the reassembly is checked (the reply goes back un-xfragged).
	if xf; then
		expect "reasm_oks delta" -eq 1 "$(sd reasm_oks)"
	else
		expect "kernel Ip6ReasmOKs delta" -eq 1 "$(kd Ip6ReasmOKs)"
	fi
}

# ---- Steering: one datagram's fragments on two CPUs ---------------------------
#
# Each datagram's fragments are sent alternately from CPUs 0 and 1 (on veth
# the receiving CPU is the sending one), so without steering every datagram
# is held as two halves, one per CPU's table, until its time-out.

SPLIT_CPUS=0,1
SPLIT_OK=0

# split_xfer SRC DST SIZE COUNT: crafted datagrams split over two CPUs,
# every byte checked; snapshots a and b around them; SPLIT_OK: delivered.
split_xfer() {
	local src=$1 dst=$2 size=$3 count=$4 out
	local port=$((PORT++)) id=$((ID_BASE += 100))

	SPLIT_OK=0
	snap a
	xf_recv_start --port "$port" --count "$count" --size "$size" \
		--timeout-ms 1500 || { bad "receiver"; return 1; }
	if ! out=$(XF_SND_CPU="" xf_fragsend --dport "$port" --id "$id" \
			--count "$count" --size "$size" --mtu 1500 \
			--cpus "$SPLIT_CPUS" --src "$src" --dst "$dst" 2>&1); then
		bad "fragsend: $out"
	fi
	xf_recv_wait
	SPLIT_OK=$(printf '%s\n' "$XF_RECV_OUT" | sed -n 's/.*ok=\([0-9]*\).*/\1/p')
	SPLIT_BAD=$(printf '%s\n' "$XF_RECV_OUT" | sed -n 's/.* bad=\([0-9]*\).*/\1/p')
	# Steered fragments may still sit in a cpumap queue: let them land.
	sleep 0.2
	snap b
	echo "NOTE $MODE split $size to $dst: ${SPLIT_OK:-?}/$count delivered intact$(xf && echo ", steer_out $(sd steer_out), steer_in $(sd steer_in)")"
}

# spread_seen: `stats --per-cpu` shows where the fragments went (issue 36):
# both CPUs received some, what left one arrived on the other, and the
# columns add up to the sums.
spread_seen() {
	local out rows

	out=$(xf_in "$XF_RCV" "$XF_BUILD/xfrag" stats "$XF_RIF" --per-cpu 2>&1)
	rows=$(awk '$1 ~ /^(received|steered_out|steered_in|processed|reassembled)$/ {
		s = 0; for (i = 3; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i
		printf "%s %s %s %s %s\n", $1, $2, $3, $4, ($2 == s ? "ok" : "bad") }' <<<"$out")
	echo "NOTE $MODE spread (row, all, cpu0, cpu1): $(tr '\n' ';' <<<"$rows")"
	[ "$(grep -c ' ok$' <<<"$rows")" -eq 5 ] || bad "per-cpu columns do not add up: $rows"
	awk '$1 == "received" && $3 > 0 && $4 > 0 { f = 1 } END { exit !f }' <<<"$rows" ||
		bad "both CPUs should have received fragments: $rows"
	[ "$(awk '$1 == "steered_out" { print $2 }' <<<"$rows")" = \
	  "$(awk '$1 == "steered_in" { print $2 }' <<<"$rows")" ] ||
		bad "steered_out != steered_in: $rows"
}

# split SRC DST SIZE COUNT: with steering every datagram arrives intact,
# through xfrag (TC, replay) or, where xfrag hands it on untouched, the
# kernel.
split() {
	local src=$1 dst=$2 size=$3 count=$4 k=Ip

	case $dst in *:*) k=Ip6 ;; esac
	split_xfer "$src" "$dst" "$size" "$count" || return
	expect "datagrams delivered intact" -eq "$count" "${SPLIT_OK:-none}"
	expect "datagrams corrupted" -eq 0 "${SPLIT_BAD:-none}"
	if ! xf; then
		expect "kernel ${k}ReasmOKs delta" -eq "$count" "$(kd ${k}ReasmOKs)"
		return
	fi
	expect_no_loss
	if [ "$MODE" = native ]; then
		# Half the fragments went to their owner through the cpumap,
		# and every one of them arrived there.
		expect "steer_out delta" -gt 0 "$(sd steer_out)"
		expect "steer_in delta" -eq "$(sd steer_out)" "$(sd steer_in)"
		expect "steer_failed delta" -eq 0 "$(sd steer_failed)"
		spread_seen
	else
		expect "steer_out delta (rps)" -eq 0 "$(sd steer_out)"
	fi
	if [ "$size" -gt 16000 ] && [ "$MODE" = skb ]; then
		expect "pass_dgrams delta" -eq "$count" "$(sd pass_dgrams)"
		expect "kernel ${k}ReasmOKs delta" -eq "$count" "$(kd ${k}ReasmOKs)"
	elif [ "$size" -gt 16000 ]; then
		expect "deliver_replay delta" -eq "$count" "$(sd deliver_replay)"
		expect "kernel ${k}ReasmOKs delta" -eq "$count" "$(kd ${k}ReasmOKs)"
	else
		expect "reasm_oks delta" -eq "$count" "$(sd reasm_oks)"
		expect "kernel ${k}ReasmReqds delta" -eq 0 "$(kd ${k}ReasmReqds)"
	fi
}

t_split_4416() { split "$XF_S4" "$XF_R4" 4416 50; }

# 3000 bytes, first fragment last: rebuilt in the frame on the owner (in
# native mode the cpumap program's frame grows like the device's).
t_split_inplace() {
	local port=$((PORT++)) id=$((ID_BASE += 100)) out

	snap a
	xf_recv_start --port "$port" --count 20 --size 3000 \
		--timeout-ms 1500 || { bad "receiver"; return 1; }
	out=$(XF_SND_CPU="" xf_fragsend --dport "$port" --id "$id" --count 20 \
		--size 3000 --mtu 1500 --order reverse --cpus "$SPLIT_CPUS" \
		--src "$XF_S4" --dst "$XF_R4" 2>&1) || bad "fragsend: $out"
	xf_recv_wait || bad "receiver: $XF_RECV_OUT $(xf_recv_detail)"
	sleep 0.2
	snap b
	xf || return
	expect_no_loss
	expect "reasm_oks delta" -eq 20 "$(sd reasm_oks)"
	[ "$MODE" = native ] &&
		expect "deliver_xdp delta (in the frame)" -gt 0 "$(sd deliver_xdp)"
}
t_split_16000() { split "$XF_S4" "$XF_R4" 16000 20; }
t_split_65507() { split "$XF_S4" "$XF_R4" 65507 5; }
t_split6_4416() { split "$XF_S6" "$XF_R6" 4416 50; }
t_split6_16000() { split "$XF_S6" "$XF_R6" 16000 20; }
t_split6_65507() { split "$XF_S6" "$XF_R6" 65000 5; }

# With --steer off the same traffic is lost: the test can tell.
t_split_off() {
	split_xfer "$XF_S4" "$XF_R4" 4416 50 || return
	expect "datagrams delivered with steering off" -lt 5 "${SPLIT_OK:-none}"
	expect "frags_in_flight delta (halves held)" -gt 0 "$(sd frags_in_flight)"
	expect "steer_out delta" -eq 0 "$(sd steer_out)"
}

t_split6_off() {
	split_xfer "$XF_S6" "$XF_R6" 16000 20 || return
	expect "datagrams delivered with steering off" -lt 3 "${SPLIT_OK:-none}"
	expect "frags_in_flight delta (halves held)" -gt 0 "$(sd frags_in_flight)"
}

# cycle_send ARGS: bounded crafted traffic to xfr0, unpinned, quiet.
cycle_send() {
	timeout 10 ip netns exec "$XF_SND" "$XF_BUILD/fragsend" -i "$XF_SIF" \
		--smac "$XF_SMAC" --dmac "$XF_RMAC" --dst "$XF_R4" --dport 9 \
		--size 4416 "$@" >/dev/null 2>&1
}

# Safety: 20 attach/detach cycles while split traffic and a bounded flood
# of incomplete datagrams (spoofed source) run; then the kernel log has no
# soft lockup, RCU stall, warning or oops, no cpumap kthread is left, and
# xfrag, attached again, delivers split datagrams.
t_steer_cycles() {
	local i n0 log pids left

	n0=$(dmesg 2>/dev/null | wc -l)
	xf_cli detach "$XF_RIF" >/dev/null 2>&1
	for i in $(seq 20); do
		if ! xf_cli attach "$XF_RIF" --mode "$MODE" >/dev/null 2>&1; then
			bad "attach $i failed"
			break
		fi
		cycle_send --id $((i * 100)) --count 20 --mtu 1500 \
			--cpus "$SPLIT_CPUS" --src "$XF_S4" &
		pids=$!
		cycle_send --id $((i * 1000)) --count 400 --frags 0+1480M \
			--src 10.99.0.77 &
		pids="$pids $!"
		sleep 0.05
		xf_cli detach "$XF_RIF" >/dev/null 2>&1 || bad "detach $i failed"
		# shellcheck disable=SC2086
		wait $pids
	done
	for _ in $(seq 50); do
		left=$(ps -e -o comm= | grep -c '^cpumap/')
		[ "$left" = 0 ] && break
		sleep 0.1
	done
	expect "cpumap kthreads left after detach" -eq 0 "$left"
	log=$(dmesg 2>/dev/null | tail -n +"$((n0 + 1))" |
		grep -iE 'soft lockup|rcu.*stall|WARNING:|BUG:|Call Trace|hung task')
	[ -z "$log" ] || bad "kernel log: $(printf '%s' "$log" | head -3 | tr '\n' ' ')"
	if ! xf_cli attach "$XF_RIF" --mode "$MODE" >/dev/null 2>&1; then
		bad "attach after the cycles failed"
		return
	fi
	split "$XF_S4" "$XF_R4" 4416 20
}

# MODE with --steer off: split datagrams are lost, as the issue measured.
run_steer_off() {
	local out

	MODE=$1
	xf_cli detach "$XF_RIF" >/dev/null 2>&1
	if ! out=$(xf_cli attach "$XF_RIF" --mode "$MODE" --steer off 2>&1); then
		fail "$MODE:steer-off:attach" "xfrag attach --steer off: $out"
		return
	fi
	run steer-off-split-4416 t_split_off
	[ "$XFRAG_IPV6" = 1 ] && run steer-off-split6-16000 t_split6_off
	xf_cli detach "$XF_RIF" >/dev/null 2>&1
}

# ---- Id-wrap guard (RFC 4963) ----------------------------------------------------
#
# gen_sink PORT SRC GEN-ARGS...: 2400-byte UDP datagrams (two fragments)
# from SRC by bench/gen (pinned to CPU 0) to the byte-checking sink, with
# snapshots a and b around them: GS_SENT complete datagrams sent, GS_OK
# delivered intact, GS_BAD corrupt.
gen_sink() {
	local port=$1 src=$2 ready=$XF_TMP/gsink.ready s g

	shift 2
	rm -f "$ready"
	snap a
	xf_rcv "$XF_BUILD/sink" --port "$port" --duration 120 --idle-ms 2000 \
		--json --ready-file "$ready" >"$XF_TMP/gsink.json" 2>&1 &
	s=$!
	for _ in $(seq 100); do [ -e "$ready" ] && break; sleep 0.02; done
	g=$(XF_SND_CPU=0 xf_snd "$XF_BUILD/gen" -i "$XF_SIF" --smac "$XF_SMAC" \
		--dmac "$XF_RMAC" --src "$src" --dst "$XF_R4" --dport "$port" \
		--size 2400 --mtu 1500 --duration 0 --json "$@" 2>&1) ||
		bad "gen: $g"
	wait "$s"
	snap b
	GS_SENT=$(printf '%s' "$g" | sed -n 's/.*"datagrams_sent":\([0-9]*\).*/\1/p')
	GS_OK=$(sed -n 's/.*"ok":\([0-9]*\).*/\1/p' "$XF_TMP/gsink.json")
	GS_BAD=$(sed -n 's/.*"bad":\([0-9]*\).*/\1/p' "$XF_TMP/gsink.json")
}

# wrap_xfer GEN-ARGS...: 2400-byte UDP datagrams (two fragments) from one
# source, WRAP_N x 65536 of them (the 16-bit id wraps WRAP_N times, well
# within the 30 s time-out) at 60k frames/s, each fragment lost with
# probability 0.5 % (about 1 % of the datagrams lose one, and their other
# half waits for a later datagram with the same id); the sink checks every
# byte.  Sets WRAP_SENT (complete datagrams sent), WRAP_OK, WRAP_BAD
# (datagrams made of two originals reach the application only with UDP
# checksum 0).
WRAP_N=${XFRAG_WRAPS:-3}
WRAP_SRC=110
wrap_xfer() {
	local port=$((PORT++))
	# A source of its own: earlier tests' held halves are other flows.
	local src=10.99.0.$((WRAP_SRC++))

	gen_sink "$port" "$src" --streams 1 --loss 0.5 --rate 60000 \
		--count $((WRAP_N * 65536)) --seed 5 "$@"
	WRAP_SENT=$GS_SENT WRAP_OK=$GS_OK WRAP_BAD=$GS_BAD
	echo "NOTE $MODE wrap x$WRAP_N $*: sent ${WRAP_SENT:-?} complete, delivered ${WRAP_OK:-?}, corrupt ${WRAP_BAD:-?}, stale $(xf && sd reasm_stale)"
}

# With the guard (the default; the kernel alone: ipfrag_max_dist) no
# datagram of two originals reaches the application, and no more than the
# lossy ones' share is lost.
wrap_guarded() {
	wrap_xfer "$@" || return
	expect "corrupt datagrams delivered" -eq 0 "${WRAP_BAD:-none}"
	expect "complete datagrams lost (x100 <= sent)" -le "${WRAP_SENT:-0}" \
		$(( (${WRAP_SENT:-0} - ${WRAP_OK:-0}) * 100 ))
	xf && expect "reasm_stale delta" -gt 0 "$(sd reasm_stale)"
}
t_wrap_csum0() { wrap_guarded --csum0; }
t_wrap_csum() { wrap_guarded; }

# The guard off: datagrams of two originals do reach the application
# (the failure the guard is there for: this test can tell).
t_wrap_off() {
	xf_cli config "$XF_RIF" max-dist=0 >/dev/null || { bad "config"; return; }
	wrap_xfer --csum0
	xf_cli config "$XF_RIF" max-dist=1024 >/dev/null || bad "config back"
	expect "corrupt datagrams delivered with the guard off" -gt 0 \
		"${WRAP_BAD:-none}"
}

# Nothing honest is lost to the guard: random ids (some systems pick them),
# and 200 datagrams of one flow in flight at once (the kernel's limit of
# 64 fragments per source would end them), no fragment lost.
guard_clean() {
	local sent ok port=$((PORT++))

	# Halves earlier tests left held for this flow (30 s time-out) would
	# meet these random ids: let them time out first.
	if xf; then
		xf_cli config "$XF_RIF" timeout=500 >/dev/null || bad "config"
	else
		xf_rcv sysctl -qw net.ipv4.ipfrag_time=1
	fi
	sleep 1.6
	xf && { xf_cli config "$XF_RIF" timeout=30000 >/dev/null || bad "config back"; }
	xf || xf_rcv sysctl -qw net.ipv4.ipfrag_time="${XF_FRAGTIME:-30}"
	gen_sink "$port" "$XF_S4" --rate 40000 --count 20000 "$@"
	sent=$GS_SENT ok=$GS_OK
	echo "NOTE $MODE guard $*: ${ok:-?}/${sent:-?} delivered$(xf && echo ", reasm_stale $(sd reasm_stale)")"
	# The kernel alone ends a datagram after 64 of its source's
	# fragments (ipfrag_max_dist): 200 interleaved datagrams are all
	# lost there (measured: 0 of 20000), which only the note shows.
	[ "$MODE" = none ] && [ "${GUARD_KERNEL_LOSES:-0}" = 1 ] && return
	expect "datagrams delivered" -eq "${sent:-none}" "${ok:-0}"
	xf && expect "reasm_stale delta" -eq 0 "$(sd reasm_stale)"
}
# One datagram at a time: two in flight at once with the same random id
# collide whatever the guard does (RFC 4963 2.2; the kernel too).
t_guard_random_ids() { guard_clean --random-ids --streams 1; }
t_guard_many_flows() {
	GUARD_KERNEL_LOSES=1 guard_clean --streams 200 --flows 200
}

# ---- Standard tools: xdp-loader, tc, bpftool -------------------------------------
#
# The object attached without the CLI, as README "Standard tools" shows:
# xdp-loader pins the maps under XF_PIN; tc finds the same maps through
# TC_BPF_MNT and a link XF_PIN/tc_root/tc/globals -> XF_PIN.

XF_PIN=/sys/fs/bpf/xfrag/$XF_RIF

# Where libxdp's dispatcher refuses xfrag (6.12: "Extension program
# changes packet data, while original does not") xdp-loader does not fall
# back by itself; the README's answer is LIBXDP_SKIP_DISPATCHER=1, tried
# here only after the plain command failed.
ld_attach() {
	local out

	rm -f /run/xdp-loader.lck
	out=$(xf_in "$XF_RCV" xdp-loader load -m "$1" -p "$XF_PIN" "$XF_RIF" \
		"$XF_BUILD/xfrag.bpf.o" 2>&1) && return 0
	rm -rf "$XF_PIN"
	rm -f /run/xdp-loader.lck
	LIBXDP_SKIP_DISPATCHER=1 xf_in "$XF_RCV" xdp-loader load -m "$1" \
		-p "$XF_PIN" "$XF_RIF" "$XF_BUILD/xfrag.bpf.o" || {
		echo "$out"
		return 1
	}
	echo "xdp-loader: dispatcher refused ($out): loaded with LIBXDP_SKIP_DISPATCHER=1"
}

ld_tc_attach() {
	mkdir -p "$XF_PIN/tc_root/tc" &&
	ln -sfn ../.. "$XF_PIN/tc_root/tc/globals" &&
	xf_in "$XF_RCV" tc qdisc add dev "$XF_RIF" clsact &&
	TC_BPF_MNT="$XF_PIN/tc_root" xf_in "$XF_RCV" tc filter add dev "$XF_RIF" \
		ingress bpf direct-action obj "$XF_BUILD/xfrag.bpf.o" sec tc
}

ld_detach() {
	xf_in "$XF_RCV" tc qdisc del dev "$XF_RIF" clsact 2>/dev/null
	rm -f /run/xdp-loader.lck
	xf_in "$XF_RCV" xdp-loader unload "$XF_RIF" --all
	rm -rf "$XF_PIN"
}

# Nothing xfrag took was lost: no datagram complete but undeliverable.
expect_no_loss() {
	expect "deliver_err delta" -eq 0 "$(sd deliver_err)"
	expect "handoff_lost delta" -eq 0 "$(sd handoff_lost)"
}

# The room column of `xfrag status` for xfr0: whether XDP alone learned
# that this driver's small frames can grow to a page.
ld_room() {
	xf_cli status 2>&1 | awk -v i="$XF_RIF" '$1 == i { print $5 }'
}

# XDP alone takes a datagram only when it is sure to rebuild it in the
# frame.  What the frame has depends on the kernel: veth on 6.18 sizes a
# frame to its packet, so the small last fragment of a 2000-byte datagram
# has no room: XDP learns that (room "no") and takes none of them; veth on
# 6.1 gives XDP a whole page (room "yes"), and once XDP has proved that
# (XFRAG_ROOM_PROOF small frames) it rebuilds them in the frame.  Either
# way every datagram arrives once, and the kernel rebuilds those passed.
ld_small() {
	local n=$1 kc=$2 room

	expect_no_loss
	room=$(ld_room)
	if [ "$room" = yes ]; then
		expect "pass_no_tc + deliver_xdp delta (room yes)" -eq "$n" \
			$(($(sd pass_no_tc) + $(sd deliver_xdp)))
		expect "deliver_xdp delta (room yes)" -gt 0 "$(sd deliver_xdp)"
		expect "kernel $kc delta" -eq "$(sd pass_no_tc)" "$(kd "$kc")"
	else
		expect "pass_no_tc delta (room $room)" -eq "$n" "$(sd pass_no_tc)"
		expect "kernel $kc delta" -eq "$n" "$(kd "$kc")"
	fi
}

t_ld_udp_2000() {
	udp_xfer "$XF_R4" 2000 20 || return
	ld_small 20 IpReasmOKs
}

t_ld_udp6_2000() {
	udp_xfer "$XF_R6" 2000 10 || return
	ld_small 10 Ip6ReasmOKs
}

# Too big for the frame, no TC half: never consumed, the kernel rebuilds it.
t_ld_udp_9000() {
	udp_xfer "$XF_R4" 9000 10 || return
	expect_no_loss
	expect "pass_no_tc delta" -eq 10 "$(sd pass_no_tc)"
	expect "reasm_oks delta" -eq 0 "$(sd reasm_oks)"
	expect "kernel IpReasmOKs delta" -eq 10 "$(kd IpReasmOKs)"
}

# ICMP says nothing of its size in the first fragment: the kernel's job.
t_ld_ping() {
	ping_xfer "$XF_R4" 1600
	expect_no_loss
	expect "pass_no_tc delta" -eq 5 "$(sd pass_no_tc)"
	expect "kernel IpReasmOKs delta" -eq 5 "$(kd IpReasmOKs)"
}

# With the TC half attached by tc: everything up to 16064 bytes is xfrag's.
t_ld_tc_udp_9000() {
	udp_xfer "$XF_R4" 9000 10 || return
	expect_no_loss
	expect_xfrag_reasm 10
	expect "deliver_tc delta" -eq 10 "$(sd deliver_tc)"
}

t_ld_tc_udp_16000() {
	udp_xfer "$XF_R4" 16000 10 || return
	expect_no_loss
	expect_xfrag_reasm 10
}

t_ld_tc_udp6_9000() {
	udp_xfer "$XF_R6" 9000 10 || return
	expect_no_loss
	expect "ip6_oks delta" -eq 10 "$(sd ip6_oks)"
	expect "kernel Ip6ReasmReqds delta" -eq 0 "$(kd Ip6ReasmReqds)"
}

t_ld_tc_ping() {
	ping_xfer "$XF_R4" 3000
	expect_no_loss
	expect "reasm_oks delta" -eq 5 "$(sd reasm_oks)"
	expect "kernel IpReasmReqds delta" -eq 0 "$(kd IpReasmReqds)"
}

# tc's program uses the maps xdp-loader pinned, not maps of its own.
t_ld_tc_shares_maps() {
	local tid ids pid

	tid=$(bpftool -j map show pinned "$XF_PIN/xfrag_table" |
		sed -n 's/^{"id":\([0-9]*\),.*/\1/p')
	# The program on this interface (others named xfrag_tc may be loaded).
	pid=$(xf_in "$XF_RCV" tc filter show dev "$XF_RIF" ingress |
		sed -n 's/.* id \([0-9]*\) .*/\1/p' | head -n 1)
	[ -n "$pid" ] || { bad "no tc filter on $XF_RIF"; return; }
	ids=$(bpftool -j prog show id "$pid" |
		sed -n 's/.*"map_ids":\[\([0-9,]*\)\].*/\1/p')
	case ",$ids," in
	*",$tid,"*) ;;
	*) bad "xfrag_tc maps [$ids] lack the pinned xfrag_table ($tid)" ;;
	esac
}

# bpftool prints the counters by name; their sums over CPUs are what
# `xfrag stats` prints.
t_ld_bpftool() {
	local out k b x

	xf_stats "$XF_TMP/x.stats" || { bad "xfrag stats failed"; return; }
	if ! out=$(bpftool map dump pinned "$XF_PIN/xfrag_stats" 2>&1); then
		bad "bpftool map dump: $out"
		return
	fi
	for k in reasm_reqds reasm_oks frag_reasm pass_no_tc deliver_xdp; do
		b=$(printf '%s\n' "$out" | awk -v k="\"$k\":" \
			'$1 == k { gsub(",", "", $2); s += $2; n++ }
			 END { if (n) print s }')
		x=$(xf_stat "$XF_TMP/x.stats" "$k")
		if [ -z "$b" ] || [ "$b" != "$x" ]; then
			bad "$k: bpftool sum '${b}', xfrag stats '${x}'"
		fi
	done
	expect "bpftool reasm_oks" -gt 0 "$(xf_stat "$XF_TMP/x.stats" reasm_oks)"
}

t_ld_status_alone() {
	local line

	line=$(xf_cli status 2>&1 | awk -v i="$XF_RIF" '$1 == i')
	# No TC half: tc "no".  Room as learned by the udp-2000 tests: "no"
	# when veth sizes frames to their packet (6.18), "yes" when it gives a
	# page (6.1); it must agree with what XDP did (ld_small).
	case $(echo "$line" | awk '{ print $3, $4, $5 }') in
	"loader no no") ;;
	"loader no yes")
		xf_stats "$XF_TMP/x.stats" || bad "xfrag stats failed"
		expect "deliver_xdp so far (room yes)" -gt 0 \
			"$(xf_stat "$XF_TMP/x.stats" deliver_xdp)" ;;
	*) bad "status: '$line', want xdp loader, tc no, room no or yes" ;;
	esac
}

t_ld_status_tc() {
	local line

	line=$(xf_cli status 2>&1 | awk -v i="$XF_RIF" '$1 == i')
	[ "$(echo "$line" | awk '{ print $3, $4 }')" = "loader seen" ] ||
		bad "status: '$line', want xdp loader, tc seen"
}

# Warm the TC half on the sender's CPU (it announces itself per CPU).
ld_warm() {
	xf_snd ping -q -c 2 -i 0.2 -W 1 "$XF_R4" >/dev/null 2>&1
}

# `xfrag steer` (issue 36): steering for the object xdp-loader loaded,
# which nobody else sets up.  Before it status says none; after it
# datagrams whose fragments arrive on two CPUs are all delivered, through
# the cpumap (native: steer_out = steer_in > 0) or RPS (skb: nothing is
# redirected); `--off` stops it.
t_ld_steer() {
	local line out want=cpumap

	[ "$(nproc)" -ge 2 ] || { echo "NOTE one CPU: nothing to steer"; return; }
	[ "${MODE#loader-}" = skb ] && want="rps(set)"
	line=$(xf_cli status 2>&1 | awk -v i="$XF_RIF" '$1 == i { print $(NF - 1) }')
	[ "$line" = none ] || bad "steer before xfrag steer: '$line', want none"
	if ! out=$(xf_cli steer "$XF_RIF" 2>&1); then
		bad "xfrag steer: $out"
		return
	fi
	echo "NOTE $MODE: $out"
	line=$(xf_cli status 2>&1 | awk -v i="$XF_RIF" '$1 == i { print $(NF - 1) }')
	[ "$line" = "$want" ] || bad "steer after xfrag steer: '$line', want $want"
	XF_SND_CPU=1 ld_warm	# the TC half announces itself per CPU
	split_xfer "$XF_S4" "$XF_R4" 4416 50 || return
	expect "datagrams delivered intact" -eq 50 "${SPLIT_OK:-none}"
	expect "datagrams corrupted" -eq 0 "${SPLIT_BAD:-none}"
	if [ "$want" = cpumap ]; then
		expect "steer_out delta" -gt 0 "$(sd steer_out)"
		expect "steer_in delta" -eq "$(sd steer_out)" "$(sd steer_in)"
		expect "reasm_oks delta" -eq 50 "$(sd reasm_oks)"
	else
		expect "steer_out delta (rps)" -eq 0 "$(sd steer_out)"
	fi
	if ! out=$(xf_cli steer "$XF_RIF" --off 2>&1); then
		bad "xfrag steer --off: $out"
	fi
	line=$(xf_cli status 2>&1 | awk -v i="$XF_RIF" '$1 == i { print $(NF - 1) }')
	[ "$line" = off ] || bad "steer after --off: '$line', want off"
	if [ "$want" != cpumap ]; then
		out=$(ip netns exec "$XF_RCV" cat /sys/class/net/"$XF_RIF"/queues/rx-0/rps_cpus 2>&1)
		[ "$(tr -d '0,\n' <<<"$out")" = "" ] || bad "rps_cpus after --off: $out"
	fi
}

run_loader() {
	local out

	MODE=loader-$1
	rm -f "$XF_TMP"/*.stats "$XF_TMP"/*.snmp
	ld_detach >/dev/null 2>&1
	if ! out=$(ld_attach "$1" 2>&1); then
		fail "$MODE:xdp-loader" "$out"
		return
	fi
	pass "$MODE:xdp-loader"
	[ -n "$out" ] && echo "  $out"
	# The senders run on one CPU: the TC half's presence is per CPU.
	XF_SND_CPU=0
	run udp-2000 t_ld_udp_2000
	run udp6-2000 t_ld_udp6_2000
	run udp-9000-passed t_ld_udp_9000
	run ping-passed t_ld_ping
	run status-alone t_ld_status_alone
	if ! out=$(ld_tc_attach 2>&1); then
		fail "$MODE:tc-filter" "$out"
	else
		pass "$MODE:tc-filter"
		ld_warm
		run tc-shares-maps t_ld_tc_shares_maps
		run status-tc t_ld_status_tc
		run tc-udp-9000 t_ld_tc_udp_9000
		run tc-udp-16000 t_ld_tc_udp_16000
		run tc-udp6-9000 t_ld_tc_udp6_9000
		run tc-ping t_ld_tc_ping
		XF_SND_CPU="" run steer t_ld_steer
	fi
	run bpftool t_ld_bpftool
	XF_SND_CPU=""
	if ! out=$(ld_detach 2>&1); then
		fail "$MODE:unload" "$out"
	else
		pass "$MODE:unload"
	fi
}

# Honest traffic through a flood of incomplete datagrams (first fragments
# with random ids from spoofed sources, twice the honest frame rate, more
# than the memory budget holds within the warm window): with the default
# policy nothing arrives corrupted and at least 90 % of the honest
# datagrams arrive (about 97 % here; the rest are fresh honest datagrams
# the policy cannot tell from fresh attack ones), memory stays within the
# budget, and once the time-out (1 s here, set at run time) has passed the
# sweeper has brought every gauge back to zero.
t_flood() {
	honest_under flood "--rate 6000 --attack-rate 12000 --attack-spoof" ||
		return
	expect "evictions" -gt 0 "$(zd reasm_evicted)"
}

# The same with nothing pinned: the scheduler moves the senders between
# the CPUs, and steering keeps every datagram on its owner.
t_flood_unpinned() {
	HONEST_CPU="" honest_under flood-unpinned \
		"--rate 6000 --attack-rate 12000 --attack-spoof" || return
	expect "evictions" -gt 0 "$(zd reasm_evicted)"
}

# ---- The attack catalogue with honest traffic (issue 5) -------------------------
#
# honest_under NAME GEN-ARGS [ATTACK-FRAGSEND-ARGS...]: an honest stream
# (4416-byte datagrams for 2 s, gen GEN-ARGS -> sink, every byte checked),
# with gen's own flood if GEN-ARGS asks for one, and while fragsend repeats
# the attack given, if any, from another address of the sender's subnet
# (the same source would share IP ids with the honest stream, and a held
# attack fragment with the id of an honest datagram kills it, as in the
# kernel: blind id guessing is out of scope) at about 3000 frames/s (a
# frame every 150 us asked): the 1x row of the overload benchmark, which
# measures 0.5x to 2x and spoofed sources.  Checks: nothing corrupted, at
# least 90 % of the honest datagrams delivered, memory within the budget
# in every sample, and every gauge back to 0 once the time-out (1 s, set
# at run time) has passed.  The caller checks the attack's own counter
# between "a" and "z" (zd).
honest_under() {
	local what=$1 gargs=$2 s a="" g sent ok badn ready=$XF_TMP/sink.ready max
	local fs="$XF_BUILD/fragsend -i $XF_SIF --smac $XF_SMAC --dmac $XF_RMAC"
	# Both senders on CPU 0, so both streams meet in CPU 0's table (as
	# RSS would put one source's fragments on one queue), and no sender
	# moved by the scheduler splits a datagram across CPUs; HONEST_CPU=""
	# leaves them unpinned (steering brings each datagram to one CPU).
	local XF_SND_CPU=${HONEST_CPU-0} XF_A4=10.99.0.3

	shift 2

	xf_cli config "$XF_RIF" timeout=1000 >/dev/null || { bad "config"; return 1; }
	snap a
	rm -f "$ready"
	xf_rcv "$XF_BUILD/sink" --port 9100 --duration 8 --idle-ms 1500 \
		--json --ready-file "$ready" >"$XF_TMP/sink.json" 2>&1 &
	s=$!
	for _ in $(seq 100); do [ -e "$ready" ] && break; sleep 0.02; done
	( for _ in $(seq 12); do xf_stats "$XF_TMP/m.stats" &&
		xf_stat "$XF_TMP/m.stats" mem_in_flight; sleep 0.2; done ) \
		>"$XF_TMP/mem.samples" &
	if [ $# -gt 0 ]; then
		# shellcheck disable=SC2016 # expanded by the inner shell
		xf_snd timeout 2 sh -c 'i=1; while :; do '"$fs"' --src '"$XF_A4"' \
			--dst '"$XF_R4"' --dport 9200 --id $((i % 60000 + 1)) \
			--gap-us 150 "$@" >/dev/null 2>&1 || exit 1
			i=$((i + 97)); done' attack "$@" &
		a=$!
	fi
	# shellcheck disable=SC2086 # gargs: options, split on purpose
	g=$(xf_snd "$XF_BUILD/gen" -i "$XF_SIF" --smac "$XF_SMAC" \
		--dmac "$XF_RMAC" --src "$XF_S4" --dst "$XF_R4" --dport 9100 \
		--size 4416 $gargs --duration 2 --json 2>&1) ||
		bad "gen: $g"
	if [ -n "$a" ]; then
		wait "$a"
		[ $? = 1 ] && bad "fragsend $*: failed"
	fi
	wait "$s"
	wait
	snap b
	sent=$(printf '%s' "$g" | sed -n 's/.*"datagrams_sent":\([0-9]*\).*/\1/p')
	ok=$(sed -n 's/.*"ok":\([0-9]*\).*/\1/p' "$XF_TMP/sink.json")
	badn=$(sed -n 's/.*"bad":\([0-9]*\).*/\1/p' "$XF_TMP/sink.json")
	max=$(sort -n "$XF_TMP/mem.samples" | tail -n 1)
	echo "  $MODE $what: honest ${ok:-?}/${sent:-?}, attack frames $(($(sd reasm_reqds) - 3 * ${sent:-0})), peak memory ${max:-?}"
	expect "honest datagrams sent" -gt 1000 "${sent:-none}"
	expect "honest datagrams delivered (x10)" -ge $((${sent:-0} * 9)) \
		"$((${ok:-0} * 10))"
	expect "bad datagrams" -eq 0 "${badn:-none}"
	expect "memory samples" -gt 0 "$(wc -l <"$XF_TMP/mem.samples")"
	expect "memory in use (all CPUs)" -le $(($(nproc) * 2 * 1024 * 1024)) \
		"${max:-none}"
	sleep 1.6
	xf_stats "$XF_TMP/z.stats" || bad "stats"
	for k in frags_in_flight dgrams_in_flight handoff_pending \
		bytes_in_flight mem_in_flight; do
		expect "$k after the time-out" -eq 0 "$(xf_stat "$XF_TMP/z.stats" "$k")"
	done
	xf_cli config "$XF_RIF" timeout=30000 >/dev/null || bad "config back"
}

# Counter K moved by at least N between "a" and "z" (after the time-out).
zd() { xf_delta "$XF_TMP/a.stats" "$XF_TMP/z.stats" "$1"; }

# Rose: first and last fragments only, ever new ids; held until evicted or
# timed out, never delivered.
t_att_rose() {
	honest_under rose "--rate 3000" --size 4400 --count 50 --frags 0+1480,2960+1448 || return
	expect "rose fragments reclaimed (evicted+timeout)" -gt 0 \
		$(($(zd frag_evicted) + $(zd frag_timeout)))
}

# Teardrop: the second fragment starts inside the first (RFC 5722 for
# IPv6; IPv4 the same way, as Linux): the datagram is discarded.
t_att_teardrop() {
	honest_under teardrop "--rate 3000" --size 2952 --count 50 --frags 0+1480,1000+1480X,2480+480 ||
		return
	expect "frag_overlap" -gt 0 "$(zd frag_overlap)"
	expect "reasm_overlaps" -gt 0 "$(zd reasm_overlaps)"
}

# 1000 8-byte fragments per datagram, never complete, under `too-many
# drop` (the operator's choice in front of such floods): beyond max-frags
# (64) the datagram is discarded.  Under the default `pass` the flood
# would reach the kernel and fill its fragment memory for its 30 s
# time-out (bench/run.sh --overload measures that), and the tests after
# this one that need the kernel's reassembly (replay) would fail.
t_att_tiny() {
	local spec i

	xf_cli config "$XF_RIF" too-many=drop >/dev/null || { bad "config"; return; }
	spec=$(for ((i = 0; i < 1000; i++)); do printf '%d+8M,' $((i * 8)); done)
	honest_under tiny "--rate 3000" --size 9000 --count 1 --frags "${spec%,}"
	xf_cli config "$XF_RIF" too-many=pass >/dev/null || bad "config back"
	expect "frag_too_many" -gt 0 "$(zd frag_too_many)"
	expect "pass_too_many" -eq 0 "$(zd pass_too_many)"
}

# Ping of death: a fragment ending beyond 65535 bytes is dropped and counted,
# even when it is the first seen.
t_att_pod() {
	honest_under pod "--rate 3000" --size 1000 --count 50 --frags 0+1480M,65528+100L || return
	expect "frag_too_long" -gt 0 "$(zd frag_too_long)"
}

# Duplicate storm: every fragment four times, the last one never sent.
t_att_dups() {
	honest_under dups "--rate 3000" --size 4400 --count 50 \
		--frags 0+1480,0+1480,0+1480,0+1480,1480+1480,1480+1480,1480+1480,1480+1480 ||
		return
	expect "frag_dup" -gt 0 "$(zd frag_dup)"
}

# Time-out edges: a datagram whose second fragment comes 600 ms after the
# first arrives with a 1 s time-out; 1400 ms after, both fragments time
# out (each starting its own datagram) and nothing is delivered.
t_timeout_edge() {
	local gap=$1 want=$2 port=$((PORT++))
	# One CPU: a sender moved while it sleeps would split the datagram.
	local XF_SND_CPU=0

	xf_cli config "$XF_RIF" timeout=1000 >/dev/null || { bad "config"; return; }
	# Datagrams an earlier test left held (an overlap's later fragments,
	# say) time out under the new 1 s limit too: let them go first, and
	# count any still held at "a" that time out during this test.
	for _ in $(seq 15); do
		xf_stats "$XF_TMP/d.stats" &&
			[ "$(xf_stat "$XF_TMP/d.stats" dgrams_in_flight)" = 0 ] && break
		sleep 0.2
	done
	snap a
	xf_recv_start --port "$port" --count 1 --size 2952 \
		--timeout-ms $((gap / 1000 + 1500)) || { bad "receiver"; return; }
	xf_fragsend --src "$XF_S4" --dst "$XF_R4" --dport "$port" \
		--id $((SEQ += 1000)) --size 2952 --mtu 1500 --gap-us "$gap" \
		>/dev/null || bad "fragsend"
	if xf_recv_wait; then
		[ "$want" = 1 ] || bad "delivered after the time-out"
	else
		[ "$want" = 0 ] || bad "not delivered: $XF_RECV_OUT $(xf_recv_detail)"
	fi
	sleep 1.3
	snap b
	# Held before "a" and gone by "b": timed out meanwhile (1 s limit).
	local old_d old_f
	old_d=$((0 - $(sd dgrams_in_flight)))
	old_f=$((0 - $(sd frags_in_flight)))
	if [ "$want" = 1 ]; then
		expect "reasm_oks" -eq 1 "$(sd reasm_oks)"
		expect "reasm_timeout (earlier tests' $old_d held)" -eq "$old_d" \
			"$(sd reasm_timeout)"
	else
		expect "reasm_oks" -eq 0 "$(sd reasm_oks)"
		expect "reasm_timeout (earlier tests' $old_d held)" -eq \
			$((2 + old_d)) "$(sd reasm_timeout)"
		expect "frag_timeout (earlier tests' $old_f held)" -eq \
			$((2 + old_f)) "$(sd frag_timeout)"
	fi
	xf_cli config "$XF_RIF" timeout=30000 >/dev/null || bad "config back"
}
t_timeout_inside() { t_timeout_edge 600000 1; }
t_timeout_outside() { t_timeout_edge 1400000 0; }

# The kernel's ip_defrag selftest, in the project's own words (issue 23):
# UDP payloads up to 10000 bytes cut into fragments of 8 to 128 bytes, in
# order, reversed, odd-then-even and shuffled, 1 % of the frames sent
# twice; every datagram must arrive intact, as with the kernel alone.  Most
# have more than max-frags (64) fragments: native mode hands each to the
# kernel (too-many pass: the pieces held replayed by TC, later fragments
# passed), skb mode cannot replay and discards it (frag_too_many, counted).
# PIN: 1 sender on one CPU per datagram, 0 unpinned (may move mid-way).
# With XDP attached, veth hands the stack page-sized buffers (what a real
# NIC driver does) instead of the sender's small skbs, and the kernel
# charges each fragment's truesize: the 1251 fragments of a 10000-byte
# datagram cut into 8-byte pieces then pass its default 4 MiB
# ipfrag_high_thresh (seen in the 6.1 guest: FRAG memory 4195528 and
# IpReasmFails, with xfrag's pass-on as with any XDP program passing them
# on).  The selftest cases run with 64 MiB, for the kernel alone as well;
# the defaults come back after each test.
kfrag_big() {
	local k

	KFRAG_OLD=$(xf_rcv sysctl -n net.ipv4.ipfrag_high_thresh \
		net.ipv4.ipfrag_low_thresh net.ipv6.ip6frag_high_thresh \
		net.ipv6.ip6frag_low_thresh | tr '\n' ' ')
	for k in net.ipv4.ipfrag net.ipv6.ip6frag; do
		xf_rcv sysctl -qw "${k}_high_thresh=67108864" \
			"${k}_low_thresh=50331648" || bad "sysctl $k"
	done
}
kfrag_back() {
	local h4 l4 h6 l6

	read -r h4 l4 h6 l6 <<<"$KFRAG_OLD"
	[ -n "$l6" ] || return 0
	xf_rcv sysctl -qw "net.ipv4.ipfrag_low_thresh=$l4" \
		"net.ipv4.ipfrag_high_thresh=$h4" \
		"net.ipv6.ip6frag_low_thresh=$l6" \
		"net.ipv6.ip6frag_high_thresh=$h6" || bad "sysctl back"
}

defrag_cases() {
	kfrag_big
	defrag_cases_run "$@"
	kfrag_back
}

defrag_cases_run() {
	local fam=$1 pin=$2 src dst hdr seed=11 c size flen order n
	local many=0 few=0 want XF_SND_CPU

	if [ "$fam" = 6 ]; then
		src=$XF_S6 dst=$XF_R6 hdr=48
	else
		src=$XF_S4 dst=$XF_R4 hdr=20
	fi
	[ "$pin" = 0 ] && XF_SND_CPU="0-$(($(nproc) - 1))"
	snap first
	for c in "1000 8 inorder" "1000 8 oddeven" "3000 16 reverse" \
		 "5000 24 random" "10000 8 oddeven" "10000 64 random" \
		 "4000 40 inorder" "8000 128 random" "2000 64 oddeven"; do
		read -r size flen order <<<"$c"
		n=$(((size + 8 + flen - 1) / flen))
		want=1
		if [ "$n" -gt 64 ]; then
			many=$((many + 1))
			xf && [ "$MODE" = skb ] && want=0
		else
			few=$((few + 1))
		fi
		crafted 1 "$want" --size="$size" --mtu $((hdr + flen + 7)) \
			--order "$order" --dup-pct 1 --seed $((seed++)) \
			--src "$src" --dst "$dst" || return
		if [ -n "$REASON" ]; then
			bad "case $c ($n fragments): kernel ${fam/4/Ip}ReasmFails $(kd "$([ "$fam" = 6 ] && echo Ip6 || echo Ip)ReasmFails")," \
				"$(xf_rcv cat /proc/net/sockstat /proc/net/sockstat6 | grep FRAG | tr '\n' ' ')"
			return
		fi
	done
	local k=Ip
	[ "$fam" = 6 ] && k=Ip6
	if ! xf; then
		expect "kernel ${k}ReasmOKs" -ge $((many + few)) \
			"$(xf_delta "$XF_TMP/first.snmp" "$XF_TMP/b.snmp" ${k}ReasmOKs)"
		return
	fi
	fd() { xf_delta "$XF_TMP/first.stats" "$XF_TMP/b.stats" "$1"; }
	if [ "$MODE" = native ]; then
		expect "pass_too_many" -eq "$many" "$(fd pass_too_many)"
		expect "frag_flushed" -gt 0 "$(fd frag_flushed)"
		expect "flush_lost" -eq 0 "$(fd flush_lost)"
		expect "frag_too_many" -eq 0 "$(fd frag_too_many)"
		expect "kernel ${k}ReasmOKs" -ge "$many" \
			"$(xf_delta "$XF_TMP/first.snmp" "$XF_TMP/b.snmp" ${k}ReasmOKs)"
	else
		expect "pass_too_many" -eq 0 "$(fd pass_too_many)"
		expect "frag_too_many" -ge "$many" "$(fd frag_too_many)"
	fi
	expect "reasm_oks" -ge "$few" "$(fd reasm_oks)"
	echo "NOTE $MODE defrag-cases IPv$fam pin=$pin: $((many + few)) datagrams ($many beyond 64 fragments), pass_too_many $(fd pass_too_many), frag_flushed $(fd frag_flushed), frag_too_many $(fd frag_too_many)"
}
t_defrag4() { defrag_cases 4 1; }
t_defrag4_unpinned() { defrag_cases 4 0; }
t_defrag6() { defrag_cases 6 1; }
t_defrag6_unpinned() { defrag_cases 6 0; }

# The selftest's overlap cases: 100 8-byte fragments and one more with
# other bytes overlapping two of them, early (before xfrag's 65th
# fragment: xfrag discards it, RFC 5722) or late (after it: the kernel
# decides on what xfrag handed on).  Nothing may arrive, as with the
# kernel alone.
defrag_overlap() {
	kfrag_big
	defrag_overlap_run "$@"
	kfrag_back
}

defrag_overlap_run() {
	local fam=$1 at=$2 src dst spec i

	if [ "$fam" = 6 ]; then src=$XF_S6 dst=$XF_R6; else src=$XF_S4 dst=$XF_R4; fi
	spec=$(for ((i = 0; i < 101; i++)); do
		[ "$i" = "$at" ] && printf '%d+16X,' $(((at - 1) * 8))
		printf '%d+8,' $((i * 8))
	done)
	crafted 1 0 --size=800 --frags "${spec%,}" --src "$src" --dst "$dst" || return
	xf || return
	expect "reasm_oks" -eq 0 "$(sd reasm_oks)"
}
t_defrag4_overlap_early() { defrag_overlap 4 10; }
t_defrag4_overlap_late() { defrag_overlap 4 90; }
t_defrag6_overlap_early() { defrag_overlap 6 10; }
t_defrag6_overlap_late() { defrag_overlap 6 90; }

# too-many drop: the operator's choice in front of tiny-fragment floods.
t_too_many_drop() {
	xf_cli config "$XF_RIF" too-many=drop >/dev/null || { bad "config"; return; }
	crafted4 1 0 --size=1000 --mtu 35 || true
	xf_cli config "$XF_RIF" too-many=pass >/dev/null || bad "config back"
	expect "frag_too_many" -gt 0 "$(sd frag_too_many)"
	expect "pass_too_many" -eq 0 "$(sd pass_too_many)"
}

# run NAME FUNC: one test, one line.
run() {
	local name="$MODE:$1" fn=$2 why

	[ -n "${XFRAG_ONLY:-}" ] && ! [[ $1 =~ $XFRAG_ONLY ]] && return

	REASON=""
	"$fn"
	if [ -z "$REASON" ] && xf; then
		xf_stats "$XF_TMP/inv.stats" || bad "xfrag stats failed"
		if [ -z "$REASON" ]; then
			why=$(xf_invariants "$XF_TMP/inv.stats") ||
				bad "invariant: $why"
		fi
	fi
	if [ -n "$REASON" ]; then
		if xf && [ -s "$XF_TMP/b.stats" ] && [ -s "$XF_TMP/a.stats" ]; then
			REASON="$REASON [delta: $(delta_brief)]"
		fi
		fail "$name" "$REASON"
	else
		pass "$name"
	fi
}

# Non-zero counter deltas a -> b on one line.
delta_brief() {
	awk 'NR == FNR { a[$1] = $2; next }
	     $2 - a[$1] != 0 { printf "%s%s=%+d", sep, $1, $2 - a[$1]; sep = " " }' \
		"$XF_TMP/a.stats" "$XF_TMP/b.stats"
}

run_mode() {
	local out

	MODE=$1
	rm -f "$XF_TMP"/*.stats "$XF_TMP"/*.snmp
	if xf; then
		xf_cli detach "$XF_RIF" >/dev/null 2>&1
		if ! out=$(xf_cli attach "$XF_RIF" --mode "$MODE" 2>&1); then
			fail "$MODE:attach" "xfrag attach: $out"
			return
		fi
		pass "$MODE:attach"
		printf '%s\n' "$out" | sed -n "s/^xfrag: \(steering.*\)/NOTE $MODE: \1/p"
	fi

	run udp-2000 t_udp_2000
	run udp-4416 t_udp_4416
	run udp-9000 t_udp_9000
	run udp-16000 t_udp_16000
	run udp-65507 t_udp_65507
	run ping t_ping
	run reverse t_reverse
	run inplace t_inplace
	run random t_random
	run dup t_dup
	run overlap t_overlap
	run interleave t_interleave
	run flood t_flood
	xf && [ "$(nproc)" -ge 2 ] && run flood-unpinned t_flood_unpinned
	if xf; then
		[ "$MODE" = native ] && run replay-random t_replay_random
		run attack-rose t_att_rose
		run attack-teardrop t_att_teardrop
		run attack-tiny t_att_tiny
		run attack-pod t_att_pod
		run attack-dups t_att_dups
		[ "$MODE" = native ] && run too-many-drop t_too_many_drop
		run timeout-inside t_timeout_inside
		run timeout-outside t_timeout_outside
	fi
	run defrag4 t_defrag4
	run defrag4-unpinned t_defrag4_unpinned
	run defrag4-overlap-early t_defrag4_overlap_early
	run defrag4-overlap-late t_defrag4_overlap_late
	if ! xf || [ "$XFRAG_IPV6" = 1 ]; then
		run defrag6 t_defrag6
		run defrag6-unpinned t_defrag6_unpinned
		run defrag6-overlap-early t_defrag6_overlap_early
		run defrag6-overlap-late t_defrag6_overlap_late
	fi
	if [ "$(nproc)" -ge 2 ]; then
		run split-4416 t_split_4416
		run split-inplace t_split_inplace
		run split-16000 t_split_16000
		run split-65507 t_split_65507
		if ! xf || [ "$XFRAG_IPV6" = 1 ]; then
			run split6-4416 t_split6_4416
			run split6-16000 t_split6_16000
			run split6-65000 t_split6_65507
		fi
	fi
	if ! xf || [ "$XFRAG_IPV6" = 1 ]; then
		run udp6-2000 t_udp6_2000
		run udp6-4416 t_udp6_4416
		run udp6-9000 t_udp6_9000
		run udp6-16000 t_udp6_16000
		run udp6-65507 t_udp6_65507
		run ping6 t_ping6
		run frag6-exthdr t_frag6_exthdr
		[ "$MODE" = native ] && run replay6-exthdr t_replay6_exthdr
		run icmp6 t_icmp6
	fi

	if [ "$MODE" = skb ]; then
		:	# the guard's logic is the same in both modes
	elif grep -qw 'xfrag.vm=1' /proc/cmdline 2>/dev/null; then
		# 400k frames at 60k frames/s: beyond an emulated (TCG) guest.
		echo "SKIP $MODE:wrap-*: the id-wrap tests need the host's speed (the guard's unit tests run here)"
	else
		run wrap-csum0 t_wrap_csum0
		run wrap-csum t_wrap_csum
		xf && run wrap-guard-off t_wrap_off
		run guard-random-ids t_guard_random_ids
		run guard-many-flows t_guard_many_flows
	fi
	if xf && [ "$(nproc)" -ge 2 ]; then
		run steer-cycles t_steer_cycles
	fi
	if xf; then
		if ! out=$(xf_cli detach "$XF_RIF" 2>&1); then
			fail "$MODE:detach" "xfrag detach: $out"
		else
			pass "$MODE:detach"
		fi
	fi
}

main() {
	local m b out err

	if [ "$(id -u)" -ne 0 ]; then
		fail setup "not root"
	elif ! command -v nsenter >/dev/null; then
		fail setup "nsenter missing"
	else
		for b in udpcheck fragsend gen sink; do
			[ -x "$XF_BUILD/$b" ] || fail setup "$XF_BUILD/$b missing"
		done
		if [ "$XFRAG_NONE" != 1 ] && ! [ -x "$XF_BUILD/xfrag" ]; then
			fail setup "$XF_BUILD/xfrag missing (XFRAG_NONE=1 tests without it)"
		fi
	fi
	if [ "$NFAIL" = 0 ]; then
		err=$(mktemp)
		if ! xf_setup >"$err" 2>&1; then
			fail setup "namespaces: $(tr '\n' ' ' <"$err")"
		elif ! xf_snd ping -q -c 1 -W 2 "$XF_R4" >/dev/null 2>&1; then
			fail setup "no connectivity $XF_S4 -> $XF_R4"
		else
			for m in $MODES; do
				run_mode "$m"
			done
			if [ "$XFRAG_NONE" != 1 ] && [ "$(nproc)" -ge 2 ]; then
				for m in $MODES; do
					run_steer_off "$m"
				done
			fi
			if [ "$XFRAG_NONE" != 1 ] && [ "$XFRAG_LOADER" = 1 ]; then
				for m in $MODES; do
					run_loader "$m"
				done
			fi
		fi
	fi
	rm -f "$err"
	echo "ns_test: $NPASS passed, $NFAIL failed"
	[ "$NFAIL" = 0 ]
}

main
