#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# CLI behaviour: help, exit codes, attach/status/stats/detach life cycle.
cd "$(dirname "$0")/.." || exit 1
X=$PWD/build/xfrag
NS=xf-cli
pass=0
fail=0

ok() { echo "PASS $1"; pass=$((pass + 1)); }
ko() { echo "FAIL $1: $2"; fail=$((fail + 1)); }

# expect NAME CODE CMD...: the command exits with CODE
expect() {
	local name=$1 code=$2 rc
	shift 2
	"$@" >/tmp/xf-cli.out 2>&1
	rc=$?
	if [ "$rc" -eq "$code" ]; then ok "$name"; else
		ko "$name" "exit $rc, expected $code: $(head -c 300 /tmp/xf-cli.out)"
	fi
}

in_ns() { nsenter --net=/run/netns/$NS "$@"; }

cleanup() { ip netns del $NS 2>/dev/null; rm -rf /sys/fs/bpf/xfrag/xfc0; }
trap cleanup EXIT
cleanup
ip netns add $NS || { ko setup "cannot create namespace"; exit 1; }
ip -n $NS link add xfc0 type veth peer name xfc1
ip -n $NS link set xfc0 up
ip -n $NS link set xfc1 up

expect help 0 $X --help
expect attach-help 0 $X attach --help
grep -q -- "--buckets N" /tmp/xf-cli.out && grep -q "default: a power of 2 leaving 4 chunks of the budget each: 256 at 2M" /tmp/xf-cli.out &&
	ok help-shows-defaults || ko help-shows-defaults "no defaults in attach --help"
expect no-command 2 $X
expect bad-command 2 $X frobnicate
expect unknown-iface 3 $X attach no-such-if0
expect range-ways 2 $X attach xfc0 --ways 0
expect range-buckets 2 $X attach xfc0 --buckets 99999999
expect range-timeout 2 $X attach xfc0 --timeout 5
expect bad-too-many 2 $X attach xfc0 --too-many maybe
expect bad-mode 2 $X attach xfc0 --mode turbo
expect bad-number 2 $X attach xfc0 --mem-per-cpu lots
expect bad-steer 2 $X attach xfc0 --steer sideways
expect steer-cpumap-skb 2 $X attach xfc0 --mode skb --steer cpumap
grep -q "needs native mode" /tmp/xf-cli.out && ok steer-cpumap-skb-says-why ||
	ko steer-cpumap-skb-says-why "$(head -c 300 /tmp/xf-cli.out)"
expect bad-cpus 2 $X attach xfc0 --cpus 4000
expect bad-cpus-range 2 $X attach xfc0 --cpus 3-1
expect stats-not-attached 3 in_ns $X stats xfc0
expect detach-not-attached 3 in_ns $X detach xfc0
if id nobody >/dev/null 2>&1; then
	expect not-root 5 setpriv --reuid=nobody --regid=nogroup --clear-groups \
		$X attach lo
fi
expect attach 0 in_ns $X attach xfc0 --mode skb --buckets 64 --ways 4 \
	--mem-per-cpu 256k --timeout 1000 --max-frags 16
expect attach-twice 3 in_ns $X attach xfc0 --mode skb
in_ns $X status >/tmp/xf-cli.out 2>&1
cp /tmp/xf-cli.out /tmp/xf-cli.status
if grep -E '^xfc0 +[0-9]+ +skb +yes +- +64 +4 +262144 +1000 +16' /tmp/xf-cli.out >/dev/null; then
	ok status-shows-limits
else
	ko status-shows-limits "$(cat /tmp/xf-cli.out)"
fi
# xfrag steer is for xdp-loader set-ups: attach's own steering stays.
expect steer-after-attach 2 in_ns $X steer xfc0
grep -q "attach again with --steer" /tmp/xf-cli.out && ok steer-after-attach-says ||
	ko steer-after-attach-says "$(cat /tmp/xf-cli.out)"
# skb mode steers with RPS: set by attach on the queues, shown by status.
rps() { ip netns exec $NS cat /sys/class/net/xfc0/queues/rx-0/rps_cpus; }
if grep -E '^xfc0 .* 1024 +rps\(set\) +[0-9]+$' /tmp/xf-cli.status >/dev/null &&
   [ "$(rps | tr -d '0,\n')" != "" ]; then
	ok status-shows-rps
else
	ko status-shows-rps "rps_cpus $(rps): $(cat /tmp/xf-cli.status)"
fi
in_ns $X stats xfc0 --json >/tmp/xf-cli.out 2>&1
if /usr/bin/python3 -c 'import json,sys; d=json.load(open("/tmp/xf-cli.out")); assert d["reasm_reqds"] == 0 and "frag_dup" in d' 2>/dev/null; then
	ok stats-json
else
	ko stats-json "$(head -c 300 /tmp/xf-cli.out)"
fi
expect stats-interval 0 in_ns $X stats xfc0 --interval 1 --count 1
grep -q "/s" /tmp/xf-cli.out && ok stats-rates || ko stats-rates "no rates printed"
expect stats-per-cpu 0 in_ns $X stats xfc0 --per-cpu
# Prometheus: `stats --format prometheus` and the exporter's /metrics,
# parsed by prometheus_client's own parser; every counter there, each
# value equal to `stats --json` read at the same time (some fragments
# first, so that the values are not all 0).
mac() { ip -n $NS -o link show "$1" | sed 's/.*link\/ether \([0-9a-f:]*\).*/\1/'; }
in_ns ./build/fragsend -i xfc1 --smac "$(mac xfc1)" --dmac "$(mac xfc0)" \
	--src 10.77.0.1 --dst 10.77.0.2 --dport 9 --id 100 --size 3000 \
	--mtu 1500 --count 5 >/dev/null 2>&1
prom_same() {	# NAME [--per-cpu]: /tmp/xf-prom.txt against a fresh --json
	in_ns $X stats xfc0 --json ${2:-} >/tmp/xf-prom.json 2>&1
	if /usr/bin/python3 tests/prom_check.py --prom /tmp/xf-prom.txt \
		--json /tmp/xf-prom.json --iface xfc0 ${2:-} >/tmp/xf-cli.out 2>&1; then
		ok "$1"
	else
		ko "$1" "$(tail -5 /tmp/xf-cli.out)"
	fi
}
expect stats-prometheus 0 in_ns $X stats xfc0 --format prometheus
cp /tmp/xf-cli.out /tmp/xf-prom.txt
grep -q '^xfrag_reasm_reqds_total{iface="xfc0"} [1-9]' /tmp/xf-prom.txt &&
	ok stats-prometheus-counts || ko stats-prometheus-counts "$(head -5 /tmp/xf-prom.txt)"
prom_same stats-prometheus-parsed
in_ns $X stats xfc0 --format prometheus --per-cpu >/tmp/xf-prom.txt 2>&1
prom_same stats-prometheus-per-cpu --per-cpu
expect stats-prometheus-interval 2 in_ns $X stats xfc0 --format prometheus --interval 1
expect stats-bad-format 2 in_ns $X stats xfc0 --format xml
expect exporter-bad-listen 2 $X exporter --listen nowhere
in_ns ip link set lo up
scrape() { in_ns curl -s -f -o /tmp/xf-prom.txt "http://127.0.0.1:9477$1"; }
exporter_check() {	# NAME ARGS...: start, scrape, compare, stop
	local name=$1 pid rc
	shift
	# nsenter itself, not in_ns (a function: $! would be its subshell,
	# and the exporter would outlive the kill).
	nsenter --net=/run/netns/$NS $X exporter --listen 127.0.0.1:9477 "$@" \
		>/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 50); do scrape /metrics && break; sleep 0.1; done
	if scrape /metrics; then
		prom_same "$name"
		grep -q '^xfrag_exporter_instances 1$' /tmp/xf-prom.txt &&
			ok "$name-instances" || ko "$name-instances" "$(head -8 /tmp/xf-prom.txt)"
	else
		ko "$name" "no answer on 127.0.0.1:9477"
	fi
	scrape /nothing && ko "$name-404" "answered /nothing" || ok "$name-404"
	kill "$pid" 2>/dev/null
	wait "$pid"
	rc=$?
	[ $rc -eq 0 ] && ok "$name-stops" || ko "$name-stops" "exit $rc on SIGTERM"
	scrape /metrics && ko "$name-gone" "still answering after SIGTERM" ||
		ok "$name-gone"
}
exporter_check exporter-all
exporter_check exporter-named xfc0
# Run-time settings: written to the pinned config, shown by status.
grep -E '^xfc0 .* 16 +pass +progress +50 ' /tmp/xf-cli.status >/dev/null &&
	ok status-default-policy ||
	ko status-default-policy "$(cat /tmp/xf-cli.status)"
expect config-help 0 $X config --help
grep -q "refuse|lru|progress" /tmp/xf-cli.out && ok config-help-keys ||
	ko config-help-keys "no settings in config --help"
expect config-set 0 in_ns $X config xfc0 evict=lru warm=20 mem-high=200k \
	mem-low=100k timeout=2000 quota=5 max-dist=300 too-many=drop
in_ns $X status >/tmp/xf-cli.out 2>&1
grep -E '^xfc0 .* 2000 +16 drop +lru +20 +204800 +102400 +5 +300 +[a-z()]+ +[0-9]+$' /tmp/xf-cli.out >/dev/null &&
	ok config-shown || ko config-shown "$(cat /tmp/xf-cli.out)"
expect config-guard-off 0 in_ns $X config xfc0 max-dist=0
in_ns $X status >/tmp/xf-cli.out 2>&1
grep -E '^xfc0 .* +5 +off +[a-z()]+ +[0-9]+$' /tmp/xf-cli.out >/dev/null &&
	ok config-guard-off-shown || ko config-guard-off-shown "$(cat /tmp/xf-cli.out)"
expect config-guard-range 2 in_ns $X config xfc0 max-dist=2000000
expect config-bad-key 2 in_ns $X config xfc0 speed=fast
expect config-bad-policy 2 in_ns $X config xfc0 evict=random
expect config-range 2 in_ns $X config xfc0 timeout=1
expect config-low-above-high 2 in_ns $X config xfc0 mem-low=300k
expect config-not-kv 2 in_ns $X config xfc0 lru
expect config-not-attached 3 in_ns $X config xfc1 evict=lru
bpftool map dump pinned /sys/fs/bpf/xfrag/xfc0/xfrag_stats >/tmp/xf-cli.out 2>&1
grep -q '"reasm_reqds": 0' /tmp/xf-cli.out && ok bpftool-names ||
	ko bpftool-names "$(head -c 300 /tmp/xf-cli.out)"
expect detach 0 in_ns $X detach xfc0
[ ! -e /sys/fs/bpf/xfrag/xfc0 ] && ok detach-unpins || ko detach-unpins "pins left"
in_ns ip link show xfc0 | grep -q xdp && ko detach-xdp "XDP still attached" ||
	ok detach-xdp
[ "$(rps | tr -d '0,\n')" = "" ] && ok detach-clears-rps ||
	ko detach-clears-rps "rps_cpus $(rps) after detach"
# An interface that vanishes with xfrag attached (a container's veth, a
# deleted namespace) and comes back under the same name: status says what
# became of the instance, attach replaces the pins left behind, a live
# instance is still refused, detach removes pins of a gone one.
recreate() {
	ip -n $NS link add xfc0 type veth peer name xfc1 &&
		ip -n $NS link set xfc0 up && ip -n $NS link set xfc1 up
}
expect vanish-attach 0 in_ns $X attach xfc0 --mode skb
ip -n $NS link del xfc0
in_ns $X status >/tmp/xf-cli.out 2>&1
grep -qE '^xfc0 +gone ' /tmp/xf-cli.out && ok vanish-status-gone ||
	ko vanish-status-gone "$(cat /tmp/xf-cli.out)"
recreate
in_ns $X status >/tmp/xf-cli.out 2>&1
grep -qE '^xfc0 +stale ' /tmp/xf-cli.out && ok vanish-status-stale ||
	ko vanish-status-stale "$(cat /tmp/xf-cli.out)"
expect vanish-reattach 0 in_ns $X attach xfc0 --mode skb
grep -q "removed the stale instance of xfc0" /tmp/xf-cli.out &&
	ok vanish-reattach-says || ko vanish-reattach-says "$(cat /tmp/xf-cli.out)"
in_ns $X status >/tmp/xf-cli.out 2>&1
grep -qE "^xfc0 +$(ip -n $NS -o link show xfc0 | cut -d: -f1) +skb " /tmp/xf-cli.out &&
	ok vanish-status-live || ko vanish-status-live "$(cat /tmp/xf-cli.out)"
expect vanish-attach-live 3 in_ns $X attach xfc0 --mode skb
ip -n $NS link del xfc0
expect vanish-detach-gone 0 in_ns $X detach xfc0
[ ! -e /sys/fs/bpf/xfrag/xfc0 ] && ok vanish-detach-unpins ||
	ko vanish-detach-unpins "pins left"
recreate

# xfrag capture: an overlap and an eviction (one bucket of one way, lru),
# written as pcapng, read back by tcpdump and by scapy with each packet's
# outcome in its comment; then the same streamed to tcpdump (-w -).
# One CPU sends, so one CPU's table sees every fragment: on veth the
# receiving CPU is the sending one, and these tests are about outcomes in a
# one-bucket, one-way table (an unpinned sender in a 2-CPU guest split 301
# and 302 over two tables once, and 302 evicted nothing).
send_frags() {	# ID SPEC
	in_ns taskset -c 0 ./build/fragsend -i xfc1 --smac "$(mac xfc1)" --dmac "$(mac xfc0)" \
		--src 10.77.0.1 --dst 10.77.0.2 --dport 9 --id "$1" --size 3000 \
		--frags "$2" >/dev/null 2>&1
}
capture_on() {	# wait for "capturing on" in $1
	for _ in $(seq 50); do grep -q "capturing on" "$1" && return 0; sleep 0.1; done
	return 1
}
capture_check() {
	local cap=/tmp/xf-cap.pcapng cpid rc n
	rm -f $cap
	nsenter --net=/run/netns/$NS $X capture xfc0 -w $cap --count 2 \
		>/tmp/xf-cap.err 2>&1 &
	cpid=$!
	capture_on /tmp/xf-cap.err || { ko capture-starts "$(cat /tmp/xf-cap.err)"; kill $cpid; return; }
	send_frags 300 "0+1000M,8+1000M"	# overlap
	send_frags 301 "0+1000M"		# held
	send_frags 302 "0+1000M"		# evicts 301
	for _ in $(seq 50); do kill -0 $cpid 2>/dev/null || break; sleep 0.1; done
	kill $cpid 2>/dev/null
	wait $cpid
	rc=$?
	[ $rc -eq 0 ] && grep -q "2 packets written" /tmp/xf-cap.err &&
		ok capture-count || ko capture-count "exit $rc: $(cat /tmp/xf-cap.err)"
	n=$(tcpdump -nn -r $cap 2>/dev/null | grep -c "IP 10.77.0.1")
	[ "$n" = 2 ] && ok capture-tcpdump || ko capture-tcpdump "$n packets: $(tcpdump -nn -r $cap 2>&1 | head -3)"
	if /usr/bin/python3 - "$cap" >/tmp/xf-cli.out 2>&1 <<'PY'
import sys
from scapy.utils import PcapNgReader
from scapy.layers.inet import IP
pk = list(PcapNgReader(sys.argv[1]))
c = [p.comment.decode() if isinstance(p.comment, bytes) else p.comment for p in pk]
print(c)
assert len(pk) == 2, len(pk)
assert pk[0][IP].id == 300 and pk[0][IP].frag == 1, pk[0][IP].summary()
assert "verdict drop" in c[0] and "frag_overlap" in c[0] and "frag_discarded" in c[0], c[0]
assert pk[1][IP].id == 302 and "frag_evicted" in c[1] and "reasm_evicted" in c[1], c[1]
PY
	then ok capture-scapy-outcomes; else ko capture-scapy-outcomes "$(tail -3 /tmp/xf-cli.out | tr '\n' ' ')"; fi
	# Streamed: xfrag capture -w - | tcpdump -r -
	( nsenter --net=/run/netns/$NS $X capture xfc0 -w - --count 1 \
		2>/tmp/xf-cap.err | tcpdump -nn -r - >/tmp/xf-cap.txt 2>/dev/null ) &
	cpid=$!
	capture_on /tmp/xf-cap.err
	send_frags 303 "0+1000M,8+1000M"
	for _ in $(seq 50); do kill -0 $cpid 2>/dev/null || break; sleep 0.1; done
	grep -q "IP 10.77.0.1" /tmp/xf-cap.txt && ok capture-stream ||
		ko capture-stream "$(cat /tmp/xf-cap.err /tmp/xf-cap.txt)"
	kill $cpid 2>/dev/null
	# The flag is off once capture has ended: an overlap after it moves
	# frag_overlap, not cap_records.
	in_ns $X stats xfc0 --json >/tmp/xf-cap0.json
	send_frags 304 "0+1000M,8+1000M"
	in_ns $X stats xfc0 --json >/tmp/xf-cap1.json
	if /usr/bin/python3 -c '
import json
a, b = (json.load(open(f)) for f in ("/tmp/xf-cap0.json", "/tmp/xf-cap1.json"))
assert a["cap_records"] >= 3 and a["cap_lost"] == 0, a["cap_records"]
assert b["cap_records"] == a["cap_records"], (a["cap_records"], b["cap_records"])
assert b["frag_overlap"] == a["frag_overlap"] + 1' >/tmp/xf-cli.out 2>&1; then
		ok capture-off-after
	else
		ko capture-off-after "$(tail -2 /tmp/xf-cli.out)"
	fi
}
# A datagram the sweeper times out: a frame made from its key, the
# outcome in the comment (--reason timeout keeps only that).
capture_swept() {
	local cap=/tmp/xf-cap2.pcapng cpid rc
	rm -f $cap
	nsenter --net=/run/netns/$NS $X capture xfc0 -w $cap --count 1 \
		--reason timeout >/tmp/xf-cap.err 2>&1 &
	cpid=$!
	capture_on /tmp/xf-cap.err || { ko capture-swept "$(cat /tmp/xf-cap.err)"; kill $cpid; return; }
	send_frags 305 "0+1000M"
	for _ in $(seq 50); do kill -0 $cpid 2>/dev/null || break; sleep 0.1; done
	# Without BPF_F_TIMER_CPU_PIN (6.1) a CPU's sweep timer can fire on
	# another CPU, which sweeps only its own table (docs/kernels.md): there
	# the datagram's next fragment ends it, a time-out all the same.
	local swept=1
	if kill -0 $cpid 2>/dev/null &&
	   in_ns $X status 2>/dev/null | grep -q "sweeper: unpinned"; then
		swept=0
		echo "NOTE capture-swept: not swept in 5 s (timers unpinned); the next fragment ends it"
		send_frags 305 "0+1000M"
		for _ in $(seq 50); do kill -0 $cpid 2>/dev/null || break; sleep 0.1; done
	fi
	kill $cpid 2>/dev/null
	wait $cpid
	rc=$?
	if [ $rc -eq 0 ] && /usr/bin/python3 - "$cap" "$swept" >/tmp/xf-cli.out 2>&1 <<'PY'
import sys
from scapy.utils import PcapNgReader
from scapy.layers.inet import IP
pk = list(PcapNgReader(sys.argv[1]))
c = pk[0].comment.decode()
print(pk[0].summary(), c)
assert len(pk) == 1 and pk[0][IP].id == 305 and pk[0][IP].src == "10.77.0.1", pk[0].summary()
assert "reasm_timeout" in c, c
if sys.argv[2] == "1":
    assert "sweeper" in c and "holding 1 fragments" in c, c
PY
	then ok capture-swept; else ko capture-swept "exit $rc: $(tail -3 /tmp/xf-cli.out | tr '\n' ' ')"; fi
}
expect capture-attach 0 in_ns $X attach xfc0 --mode skb --buckets 1 --ways 1 \
	--evict lru --timeout 300
expect capture-bad-reason 2 in_ns $X capture xfc0 --reason frobs -w /dev/null
capture_check
capture_swept
expect capture-detach 0 in_ns $X detach xfc0

# xfrag(8) is written from the CLI's tables: every command, option, config
# key, counter, fragment outcome and exit code is in it, and groff renders
# it without a warning.
man_check() {
	local page=/tmp/xf-cli.8 miss="" c o k
	$X --man >"$page" || { ko man-page "xfrag --man failed"; return; }
	for c in attach detach status config steer stats exporter capture; do
		grep -qF "\fBxfrag $c\fR" "$page" || miss="$miss cmd:$c"
		for o in $($X "$c" --help | sed -n 's/^  \(-., \)\{0,1\}--\([a-z0-9-]*\).*/\2/p'); do
			[ "$o" = help ] || [ "$o" = verbose ] && continue
			grep -qF "\fB\-\-${o//-/\\-}\fR" "$page" || miss="$miss $c:--$o"
		done
	done
	for k in $($X config --help | sed -n '/^Settings/,$ s/^  \([a-z-]*\) .*/\1/p'); do
		grep -qF "${k//-/\\-}" "$page" || miss="$miss key:$k"
	done
	for k in $(sed -n 's/^\tX(\([a-z0-9_]*\), [CG],.*/\1/p' "$PWD/include/xfrag.h"); do
		grep -qF "\fB$k\fR" "$page" || miss="$miss counter:$k"
	done
	for k in $(sed -n '/^#define XFRAG_OUTCOMES/,/^$/ s/^\tX(\([a-z0-9_]*\),.*/\1/p' "$PWD/include/xfrag.h"); do
		grep -qF "\fB$k\fR: XDP_" "$page" || miss="$miss outcome:$k"
	done
	for k in 0 1 2 3 4 5; do
		grep -qx "$k" "$page" || miss="$miss exit:$k"
	done
	[ -z "$miss" ] && ok man-page-complete || ko man-page-complete "missing:$miss"
	if command -v groff >/dev/null; then
		out=$(groff -man -ww -z "$page" 2>&1)
		[ -z "$out" ] && ok man-page-renders || ko man-page-renders "$out"
	fi
}
man_check

# build/xfcheck, the invariant checker of the shell and Python tests: a
# consistent snapshot passes (as lines and as JSON), a broken sum, a
# negative gauge and a missing counter fail.
xfcheck_check() {
	local x=$PWD/build/xfcheck snap
	snap=$(sed -n 's/^\tX(\([a-z0-9_]*\), [CG],.*/\1 0/p' "$PWD/include/xfrag.h" |
	       sed 's/^reasm_reqds 0/reasm_reqds 3/; s/^frag_reasm 0/frag_reasm 2/; s/^frags_in_flight 0/frags_in_flight 1/')
	local json
	json="{$(sed 's/^\([a-z0-9_]*\) \(.*\)/"\1": \2/' <<<"$snap" | paste -sd, -)}"
	local r1 r2 r3 r4 r5
	"$x" <<<"$snap" >/dev/null; r1=$?
	"$x" <<<"$json" >/dev/null; r2=$?
	r3=$("$x" <<<"$(sed 's/^frag_reasm 2/frag_reasm 1/' <<<"$snap")")
	r4=$("$x" <<<"$(sed 's/^dgrams_in_flight 0/dgrams_in_flight 18446744073709551615/' <<<"$snap")")
	r5=$("$x" <<<"$(grep -v '^handoff_lost ' <<<"$snap")")
	if [ "$r1$r2" = 00 ] && [[ $r3 == *reasm_reqds* ]] &&
	   [[ $r4 == *negative* ]] && [[ $r5 == *"handoff_lost missing"* ]]; then
		ok xfcheck-catches
	else
		ko xfcheck-catches "exits $r1 $r2; '$r3' '$r4' '$r5'"
	fi
}
xfcheck_check

echo "cli_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
