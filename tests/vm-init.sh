#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# /init of the test VM's initramfs (built by tests/vm.sh; busybox sh).
#
# It does anything only as PID 1 of a kernel booted with xfrag.vm=1: run
# by mistake on a host it prints one line and exits, and it never powers
# anything off there.
#
# Root file system: the host's / shared read-only over 9p (tag hostroot)
# under a tmpfs overlay, so the guest sees the host's Debian userland and
# this checkout, and writes go to guest memory only.  The one writable host
# folder is the run's output folder (tag xfout), mounted at /xfrag-out; the
# command to run is /xfrag-out/cmd.

if [ "$$" != 1 ]; then
	echo "vm-init: not PID 1, refusing to run" >&2
	exit 1
fi
export PATH=/bin
mount -t proc proc /proc
if ! grep -qw 'xfrag.vm=1' /proc/cmdline; then
	echo "vm-init: not an xfrag test VM (no xfrag.vm=1), stopping" >&2
	exec sleep 2147483647
fi

off() {
	echo "vm-init: $*"
	sync
	# PID 1 of the guest (checked above): this powers off the guest only.
	poweroff -f
	exec sleep 2147483647
}

mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /mods/order); do
	insmod /mods/"$m" || off "insmod $m failed"
done
grep -qw 'xfrag.probe=1' /proc/cmdline && off "probe boot done"

mkdir -p /lower /upper /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 \
	hostroot /lower || off "cannot mount the host root"
mount -t tmpfs -o size=75% tmpfs /upper
mkdir -p /upper/u /upper/w
mount -t overlay overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w \
	/newroot || off "cannot mount the overlay"
mkdir -p /newroot/xfrag-out
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 xfout \
	/newroot/xfrag-out || off "cannot mount the output folder"

# The guest's own kernel file systems over the host's (visible through 9p).
mount -t proc proc /newroot/proc
mount -t sysfs sys /newroot/sys
mount -t devtmpfs dev /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts devpts /newroot/dev/pts
mount -t tmpfs tmpfs /newroot/dev/shm
mount -t tmpfs tmpfs /newroot/run
# /tmp stays the overlay's (writable, in guest memory): the checkout may
# be under the host's /tmp, as a CI clone can be.
mount -t bpf bpf /newroot/sys/fs/bpf
mount -t debugfs debugfs /newroot/sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /newroot/sys/kernel/tracing 2>/dev/null

# This kernel's modules (extracted by tests/vm.sh) where modprobe looks.
. /newroot/xfrag-out/env
mkdir -p /newroot/lib/modules/"$XF_KVER"
mount --bind /newroot"$XF_KMODS" /newroot/lib/modules/"$XF_KVER" ||
	off "cannot bind the modules"
echo /sbin/modprobe >/proc/sys/kernel/modprobe

echo "vm-init: running /xfrag-out/cmd"
chroot /newroot /bin/bash /xfrag-out/cmd </dev/null
echo $? >/newroot/xfrag-out/rc
umount /newroot/xfrag-out
off "done"
