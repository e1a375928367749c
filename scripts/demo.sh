#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# xfrag demo: two namespaces joined by veth, xfrag on the receiving side,
# fragmented UDP and ICMP sent across, the datagrams checked and the
# counters printed.  Cleans up after itself.
set -u
cd "$(dirname "$0")/.." || exit 1
X=$PWD/build/xfrag
S=xfd-snd
R=xfd-rcv
MODE=${MODE:-native}

cleanup() {
	ip netns del $S 2>/dev/null
	ip netns del $R 2>/dev/null
	rm -rf /sys/fs/bpf/xfrag/xfd1
}
trap cleanup EXIT
cleanup
[ "$(id -u)" -eq 0 ] || { echo "demo needs root"; exit 1; }

ip netns add $S && ip netns add $R || exit 1
ip link add xfd0 netns $S type veth peer name xfd1 netns $R
ip -n $S addr add 10.77.0.1/24 dev xfd0
ip -n $R addr add 10.77.0.2/24 dev xfd1
for n in $S $R; do ip -n $n link set lo up; done
ip -n $S link set xfd0 up
ip -n $R link set xfd1 up
# XDP_DROP of consumed fragments would not hurt ARP, but be explicit:
# static neighbours, no resolution needed.
ip -n $S neigh add 10.77.0.2 lladdr "$(ip -n $R -br link show xfd1 | awk '{print $3}')" dev xfd0 nud permanent
ip -n $R neigh add 10.77.0.1 lladdr "$(ip -n $S -br link show xfd0 | awk '{print $3}')" dev xfd1 nud permanent

echo "== attaching xfrag to xfd1 in namespace $R ($MODE mode)"
nsenter --net=/run/netns/$R $X attach xfd1 --mode "$MODE" || exit 1

kreasm() { ip netns exec $R awk '/^Ip: [0-9]/ {print $15}' /proc/net/snmp; }
before=$(kreasm)

case $MODE in
native) big="beyond one skb: reassembled by xfrag, replayed to the kernel as complete sets" ;;
*) big="beyond one skb: passed to the kernel untouched (skb mode)" ;;
esac
echo "== sending fragmented UDP: 20 x 4416 B, 20 x 9000 B, 10 x 16000 B; 3 x 65507 B ($big)"
for spec in "4416 20" "9000 20" "16000 10" "65507 3"; do
	set -- $spec
	ip netns exec $R build/udpcheck recv --port 9000 --count "$2" --size "$1" --timeout-ms 2000 &
	rcv=$!
	sleep 0.3
	ip netns exec $S build/udpcheck send --dst 10.77.0.2 --port 9000 --size "$1" --count "$2" --gap-us 2000 >/dev/null
	wait $rcv || echo "   (some $1-byte datagrams did not arrive)"
done

echo "== ping -s 3000 (ICMP echo in 3 fragments)"
ip netns exec $S ping -c 5 -i 0.2 -s 3000 10.77.0.2 | grep -E 'transmitted'

echo "== 10 x 3000 B UDP, crafted, first fragment last: its frame grows, rebuilt in XDP"
ip netns exec $R build/udpcheck recv --port 9001 --count 10 --size 3000 --timeout-ms 2000 &
rcv=$!
sleep 0.3
ip netns exec $S build/fragsend -i xfd0 --smac "$(ip -n $S -br link show xfd0 | awk '{print $3}')" \
	--dmac "$(ip -n $R -br link show xfd1 | awk '{print $3}')" --src 10.77.0.1 --dst 10.77.0.2 \
	--dport 9001 --id 500 --size 3000 --count 10 --mtu 1500 --order reverse >/dev/null
wait $rcv || echo "   (some crafted datagrams did not arrive)"

after=$(kreasm)
echo "== receiver kernel IpReasmReqds moved by $((after - before)) (only the fragments of the 65507-byte datagrams)"
echo "== xfrag stats xfd1"
nsenter --net=/run/netns/$R $X stats xfd1
nsenter --net=/run/netns/$R $X detach xfd1 >/dev/null
