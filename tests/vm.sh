#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Run xfrag's test suites inside a qemu guest on one of Debian 12's own
# kernels:
#
#   tests/vm.sh [--kernel 6.1|6.12] [--suites "unit ns ..."] [--cmd CMD]
#               [--net [--mtu M]]
#   (make test-vm [KERNEL=6.1|6.12] [SUITES="unit ns ..."])
#
# The newest linux-image-6.1.0-*-amd64 (or linux-image-6.12.*+deb12-amd64,
# the plain flavour: the cloud one has no 9p) is fetched from the Debian
# archive with `apt-get download` and unpacked under build/vm/: nothing is
# installed on the host, no bootloader is touched.  The guest boots it with
# a small busybox initramfs (tests/vm-init.sh) and uses the host's root
# file system read-only over 9p under a tmpfs overlay, so it runs this
# checkout's build with the host's userland.  It has no network device and
# qemu itself runs in a network namespace of its own with nothing in it:
# the tests build their veth pairs inside the guest.
#
# Bounds: one VM at a time on the machine (a lock), at most 4 GiB for the
# guest, a time-out that kills qemu.  Prints the suites' `N passed, N
# failed` line and exits non-zero on failure.
#
# --net (make test-vm runs it for suite vnet): the guest also gets a real
# driver, a 2-queue virtio-net device (mq=on), backed by a multi-queue tap
# that lives in a network namespace of the host made for the run
# (xfvm-net): the tap, its addresses (10.77.0.1, .3, .4, .5/24 and
# fd77::1, ::3, ::4, ::5/64), its neighbour entry and a UDP echo server
# (tests/vnet_echo.py) are all inside it, and qemu runs in it (nsenter), so
# nothing is added to the host's root namespace; the namespace is deleted
# on exit.  The guest runs tests/vnet_test.sh against the echo server.
# --mtu M: the tap's MTU (default 1500), passed to the guest.
#
# Environment: XF_VM_MEM (MiB, default 3072, at most 4096), XF_VM_TIMEOUT
# (s, default 5400), XF_VM_ACCEL (kvm, tcg or auto: KVM only when a probe
# boot shows it really works).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
VMDIR=$TOP/build/vm
KERNEL=${KERNEL:-6.1}
SUITES=${SUITES:-}
CMD=""
MEM=${XF_VM_MEM:-3072}
TIMEOUT=${XF_VM_TIMEOUT:-5400}
ACCEL=${XF_VM_ACCEL:-auto}
LOCK=/run/lock/xfrag-vm.lock
NET=${XF_VM_NET:-0}
VNET_MTU=${XF_VM_MTU:-1500}
NETNS=xfvm-net
VNET_HMAC=02:77:00:00:00:01
VNET_GMAC=52:54:00:77:00:02
ECHO_PID=""

die() {
	echo "vm: $*" >&2
	echo "vm: 0 passed, 1 failed"
	exit 1
}

while [ $# -gt 0 ]; do
	case $1 in
	--kernel) KERNEL=$2; shift 2 ;;
	--suites) SUITES=$2; shift 2 ;;
	--cmd) CMD=$2; shift 2 ;;
	--net) NET=1; shift ;;
	--mtu) VNET_MTU=$2; NET=1; shift 2 ;;
	*) die "unknown argument $1" ;;
	esac
done
[ "$MEM" -le 4096 ] || die "XF_VM_MEM=$MEM: at most 4096 MiB"
# The real-driver suite needs the tap: on whenever it runs.
if [ -z "$CMD" ] && { [ -z "$SUITES" ] || [[ " $SUITES " == *" vnet "* ]]; }; then
	NET=1
fi
[ "$(id -u)" -eq 0 ] || die "needs root"

case $KERNEL in
6.1) PAT='^linux-image-6\.1\.0-[0-9]+-amd64$' ;;
6.12) PAT='^linux-image-6\.12\.[0-9]+\+deb12-amd64$' ;;
*) die "KERNEL=$KERNEL: 6.1 or 6.12" ;;
esac

for t in qemu-system-x86_64 busybox depmod modprobe cpio unshare flock; do
	command -v "$t" >/dev/null || die "$t missing (scripts/deps.sh vm)"
done
mkdir -p "$VMDIR"

# ---- The kernel: newest in the archive, unpacked under build/vm ----------
pkg_newest() {
	apt-cache search --names-only "$PAT" 2>/dev/null | awk '{ print $1 }' |
		sort -V | tail -n 1
}
PKG=$(pkg_newest)
if [ -z "$PKG" ]; then
	apt-get update -qq >/dev/null 2>&1 || true
	PKG=$(pkg_newest)
fi
if [ -z "$PKG" ]; then
	# No archive: the newest one unpacked already, if any.
	KDIR=$(find "$VMDIR" -maxdepth 1 -type d -name 'k-*' |
		grep -E "/k-${PAT#^linux-image-}" | sort -V | tail -n 1 || true)
	[ -n "$KDIR" ] || die "no $KERNEL kernel package found in the archive"
	KVER=${KDIR##*/k-}
else
	KVER=${PKG#linux-image-}
	KDIR=$VMDIR/k-$KVER
fi
if [ ! -f "$KDIR/boot/vmlinuz-$KVER" ]; then
	echo "vm: fetching $PKG"
	rm -rf "$VMDIR/deb" "$KDIR"
	mkdir -p "$VMDIR/deb"
	(cd "$VMDIR/deb" && apt-get download -q "$PKG" 2>&1 | grep -v '^W:') ||
		die "apt-get download $PKG failed"
	dpkg-deb -x "$VMDIR"/deb/"$PKG"_*.deb "$KDIR.tmp" ||
		die "cannot unpack $PKG"
	rm -rf "$VMDIR/deb"
	depmod -b "$KDIR.tmp" "$KVER" || die "depmod failed"
	mv "$KDIR.tmp" "$KDIR"
fi
KMODS=$KDIR/lib/modules/$KVER

# ---- Initramfs: busybox, the init, the modules needed to reach the root ----
INITRD=$VMDIR/initrd-$KVER.cpio.gz
if [ ! -f "$INITRD" ] || [ "$TOP/tests/vm-init.sh" -nt "$INITRD" ]; then
	R=$VMDIR/initrd-$KVER.d
	rm -rf "$R"
	mkdir -p "$R"/bin "$R"/mods "$R"/proc "$R"/sys "$R"/dev
	cp "$(command -v busybox)" "$R"/bin/busybox
	for a in sh mount umount insmod grep cat mkdir chroot poweroff sync \
		sleep echo; do
		ln -s busybox "$R/bin/$a"
	done
	cp "$TOP/tests/vm-init.sh" "$R"/init
	chmod 755 "$R"/init
	: >"$R"/mods/order
	for m in virtio_pci 9pnet_virtio 9p overlay; do
		modprobe -d "$KDIR" -S "$KVER" --show-depends "$m" |
			awk '$1 == "insmod" { print $2 }'
	done | awk '!seen[$0]++' | while read -r ko; do
		b=$(basename "$ko")
		case $b in
		*.xz) xz -dc "$ko" >"$R/mods/${b%.xz}"; b=${b%.xz} ;;
		*.zst) zstd -qdc "$ko" >"$R/mods/${b%.zst}"; b=${b%.zst} ;;
		*) cp "$ko" "$R/mods/$b" ;;
		esac
		echo "$b" >>"$R"/mods/order
	done
	(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) >"$INITRD.tmp"
	mv "$INITRD.tmp" "$INITRD"
	rm -rf "$R"
fi

# ---- One VM at a time ------------------------------------------------------
exec 9>"$LOCK"
flock -w 1800 9 || die "another test VM holds $LOCK"

# ---- The guest's real driver: a tap in a namespace of its own ------------
net_cleanup() {
	if [ -n "$ECHO_PID" ]; then
		kill "$ECHO_PID" 2>/dev/null || true
		wait "$ECHO_PID" 2>/dev/null || true
	fi
	ip netns del "$NETNS" 2>/dev/null || true
}
NETDEV=(-nic none)
RUNIN=(unshare --net)
if [ "$NET" = 1 ]; then
	case $VNET_MTU in ''|*[!0-9]*) die "--mtu $VNET_MTU" ;; esac
	trap net_cleanup EXIT
	ip netns del "$NETNS" 2>/dev/null || true
	ip netns add "$NETNS" || die "ip netns add $NETNS"
	ip -n "$NETNS" link set lo up
	ip -n "$NETNS" tuntap add dev xfvm0 mode tap multi_queue ||
		die "tuntap in $NETNS"
	ip -n "$NETNS" link set xfvm0 address "$VNET_HMAC" mtu "$VNET_MTU" up ||
		die "tap MTU $VNET_MTU"
	for a in 1 3 4 5; do
		ip -n "$NETNS" addr add "10.77.0.$a/24" dev xfvm0
		ip -n "$NETNS" addr add "fd77::$a/64" dev xfvm0 nodad
	done
	ip -n "$NETNS" neigh replace 10.77.0.2 lladdr "$VNET_GMAC" dev xfvm0 \
		nud permanent
	ip -n "$NETNS" neigh replace fd77::2 lladdr "$VNET_GMAC" dev xfvm0 \
		nud permanent
	nsenter --net=/run/netns/"$NETNS" python3 "$TOP/tests/vnet_echo.py" \
		7007 10.77.0.1 10.77.0.3 10.77.0.4 10.77.0.5 fd77::1 fd77::3 \
		fd77::4 fd77::5 &
	ECHO_PID=$!
	NETDEV=(-netdev "tap,id=n0,ifname=xfvm0,script=no,downscript=no,queues=2,vhost=off"
		-device "virtio-net-pci,netdev=n0,mac=$VNET_GMAC,mq=on,vectors=6")
	RUNIN=(nsenter --net=/run/netns/"$NETNS")
fi

QEMU=(qemu-system-x86_64 -machine q35 -m "$MEM" -smp 2 -nographic
      -no-reboot "${NETDEV[@]}" -monitor none -serial stdio
      -kernel "$KDIR/boot/vmlinuz-$KVER" -initrd "$INITRD")
BOOTARGS="console=ttyS0 panic=-1 quiet loglevel=4 xfrag.vm=1"

# KVM only when it really works: a probe boot must reach the initramfs and
# power off within 20 s (TCG takes about as long just to boot here).
if [ "$ACCEL" = auto ]; then
	ACCEL=tcg
	if [ -w /dev/kvm ]; then
		t0=$(date +%s)
		if timeout -k 5 20 "${RUNIN[@]}" "${QEMU[@]}" -accel kvm \
			-cpu host -append "$BOOTARGS xfrag.probe=1" \
			</dev/null 2>&1 | grep -q 'probe boot done' &&
			[ $(($(date +%s) - t0)) -lt 20 ]; then
			ACCEL=kvm
		fi
	fi
fi
if [ "$ACCEL" = kvm ]; then
	QEMU+=(-accel kvm -cpu host)
else
	# shellcheck disable=SC2054 # one qemu argument with a comma
	QEMU+=(-accel tcg,thread=multi -cpu max)
fi

# ---- The run ---------------------------------------------------------------
OUT=$VMDIR/out-$KVER
rm -rf "$OUT"
mkdir -p "$OUT"
cat >"$OUT"/env <<EOF
XF_KVER='$KVER'
XF_KMODS='$KMODS'
EOF
if [ -z "$CMD" ]; then
	CMD="tests/run.sh"
fi
# The suites' own switches (XFRAG_ONLY, XFRAG_MODES, ...) go along.
PASSENV=$(env | grep -E '^XFRAG_[A-Z0-9_]*=' | sed -E "s/^([^=]*)=(.*)$/export \1='\2'/" || true)
cat >"$OUT"/cmd <<EOF
# Run inside the guest by vm-init.sh.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root XF_VM=1 XF_SUITES='$SUITES'
export XF_VNET=$NET XF_VNET_MTU=$VNET_MTU XF_VNET_HMAC=$VNET_HMAC XF_VNET_GMAC=$VNET_GMAC
$PASSENV
cd '$TOP' || exit 1
modprobe -a veth sch_ingress cls_bpf act_bpf 8021q virtio_net 2>/dev/null
echo "guest: kernel \$(uname -r), \$(nproc) CPUs, \$(awk '/MemTotal/ { print \$2 / 1024 " MiB" }' /proc/meminfo)"
$CMD
rc=\$?
mkdir -p /xfrag-out/tests-out
cp -r tests/out/. /xfrag-out/tests-out/ 2>/dev/null
exit \$rc
EOF

echo "vm: kernel $KVER, $ACCEL, ${MEM} MiB, suites: ${SUITES:-all}"
t0=$(date +%s)
set +e
timeout -k 10 "$TIMEOUT" "${RUNIN[@]}" "${QEMU[@]}" \
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
	-virtfs "local,path=$OUT,mount_tag=xfout,security_model=none" \
	-append "$BOOTARGS" </dev/null 2>&1 | tee "$OUT/console.log" |
	grep -v -e '^\[' -e 'SeaBIOS' -e '^iPXE' -e '^Booting'
qrc=${PIPESTATUS[0]}
set -e
secs=$(($(date +%s) - t0))
rc=$(cat "$OUT/rc" 2>/dev/null || echo none)
summary=$(grep -aE '^[0-9]+ passed, [0-9]+ failed' "$OUT/console.log" |
	tail -n 1 | tr -d '\r')
echo "vm: kernel $KVER, $ACCEL, ${secs} s, qemu exit $qrc, guest exit $rc"
if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
	echo "vm: killed after ${TIMEOUT} s"
	rc=timeout
fi
if [ -z "$summary" ]; then
	echo "vm: 0 passed, 1 failed"
	exit 1
fi
p=${summary%% passed*}
f=${summary#*passed, }
f=${f%% failed*}
if [ "$rc" != 0 ] && [ "$f" -eq 0 ]; then
	f=1
fi
echo "vm-$KERNEL: $p passed, $f failed"
[ "$rc" = 0 ] && [ "$f" -eq 0 ]
