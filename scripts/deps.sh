#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Install the Debian 12 packages xfrag needs to build and test, if missing.
# `deps.sh vm`: those tests/vm.sh needs (qemu, busybox for the initramfs).
set -e
PKGS="clang llvm libbpf-dev bpftool libxdp-dev xdp-tools libelf-dev zlib1g-dev
      iproute2 iputils-ping python3-scapy tcpdump make gcc pkg-config
      libclang-rt-14-dev shellcheck groff-base libmicrohttpd-dev curl
      python3-prometheus-client debhelper lintian clang-format"
NOREC=""
if [ "${1:-}" = vm ]; then
	PKGS="qemu-system-x86 busybox-static kmod cpio xz-utils util-linux"
	NOREC=--no-install-recommends	# qemu's recommends are a desktop
fi
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $NOREC $missing >/dev/null
