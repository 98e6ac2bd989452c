#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The guests' first process: scripts/setup.sh puts it in place of
# virtme-ng-init (renamed virtme-ng-init.real beside it) in the cache's
# virtme-ng. virtme-ng-init starts udevd and waits for its coldplug of
# every device when it finds systemd-udevd; under TCG that is many
# seconds of each boot, and the guests need none of it: devtmpfs makes
# every device node (/dev/infiniband/* included), the kernel loads
# modules through modprobe itself, and the tests find their NIC by its
# MAC address. So /usr gets an overlay in which systemd-udevd is deleted
# (a whiteout), on a tmpfs at /run (which virtme-ng-init then keeps);
# virtme-ng-init's own overlay of /usr stacks on this one. The root is
# the host's, read-only: nothing on the host changes.
# rpcrdma_rs_udev=1 on the kernel command line (HARNESS_UDEV=1) keeps udev.
# The kernel hands unknown command-line parameters to init as environment.
if [ "${rpcrdma_rs_udev:-0}" != 1 ] && [ -e /usr/lib/systemd/systemd-udevd ]; then
	d=/run/rpcrdma-rs-no-udev
	/bin/mount -n -t tmpfs -o mode=0755 run /run &&
		/bin/mkdir -p "$d/upper/lib/systemd" "$d/work" &&
		/bin/mknod "$d/upper/lib/systemd/systemd-udevd" c 0 0 &&
		/bin/mount -n -t overlay -o "lowerdir=/usr,upperdir=$d/upper,workdir=$d/work" \
			rpcrdma-rs-no-udev /usr ||
		echo "guest-init: could not hide systemd-udevd; udev runs" >/dev/kmsg
	# The one udev rule virtme-ng-init needs: its script's I/O ports,
	# /dev/virtio-ports/NAME for each virtio console port.
	if /bin/mount -n -t sysfs sysfs /sys 2>/dev/null; then
		/bin/mkdir -p /dev/virtio-ports
		for p in /sys/class/virtio-ports/*; do
			[ -r "$p/name" ] || continue
			read -r name <"$p/name" && [ -n "$name" ] &&
				/bin/ln -sf "../${p##*/}" "/dev/virtio-ports/$name"
		done
		/bin/umount -n /sys
	fi
fi
exec "$(dirname "$0")/virtme-ng-init.real" "$@"
