#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# make bench: the micro-benchmark (BPF_PROG_TEST_RUN against floors), then
# the end-to-end scenarios over a veth pair, kernel and xfrag side by side.
#   bench/run.sh [--quick] [--duration S] [--only TEXT]
#   bench/run.sh --overload | --overload-steer | --tiny-flood | --guard-cost |
#                --steer-cost
#                [--quick] [--duration S]
#                           (the overload matrices only, no micro-benchmark)
#   bench/run.sh setup      (re)create the namespaces only
# Results: bench/results/bench-<time>.{json,md}.
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.sh
. "$BENCH_DIR/../tests/lib.sh"

# Namespaces of its own, so a benchmark never meets a test run.
XF_SND=xb-snd
XF_RCV=xb-rcv
XF_SIF=xbs0
XF_RIF=xbr0
XF_S4=10.98.0.1
XF_R4=10.98.0.2
XF_S6=fd98::1
XF_R6=fd98::2

if [ "${1:-}" = setup ]; then
	xf_setup >/dev/null && xf_rcv sysctl -qw net.ipv4.ipfrag_time=30 &&
		xf_rcv sysctl -qw net.ipv6.ip6frag_time=30
	exit
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "bench: needs root" >&2
	exit 1
fi
trap xf_cleanup EXIT
trap 'exit 130' INT TERM

quick=""
matrix=""
for a in "$@"; do
	[ "$a" = --quick ] && quick=1
	case $a in --overload|--overload-steer|--tiny-flood|--guard-cost|--steer-cost)
		matrix=1 ;;
	esac
done
res=$BENCH_DIR/results
mkdir -p "$res"
micro_json=$(mktemp /tmp/xfrag-micro.XXXXXX)
if [ -z "$matrix" ]; then
	echo "== micro-benchmark (BPF_PROG_TEST_RUN)"
	rounds=3000
	[ -n "$quick" ] && rounds=500
	"$XF_BUILD/micro" --rounds "$rounds" --json "$micro_json" || exit 1
fi
echo
echo "== end to end (kernel, then xfrag, per scenario)"
"$0" setup || { echo "bench: namespaces failed" >&2; exit 1; }
/usr/bin/python3 "$BENCH_DIR/bench.py" "$@" --xfrag "$XF_BUILD/xfrag" \
	--gen "$XF_BUILD/gen" --sink "$XF_BUILD/sink" --iface "$XF_RIF" \
	--snd-if "$XF_SIF" --smac "$XF_SMAC" --dmac "$XF_RMAC" \
	--rcv-ns "$XF_RCV" --snd-ns "$XF_SND" --src4 "$XF_S4" --dst4 "$XF_R4" \
	--src6 "$XF_S6" --dst6 "$XF_R6" --setup "$0" --results "$res" \
	--micro "$micro_json" --floors "$XF_BUILD/floors.bpf.o"
rc=$?
rm -f "$micro_json"
exit $rc
