#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rpcrdma_rs installed as administrators install it (Documentation/usage.rst).
# `make install` (the harness ran it into MAKE_INSTALL_ROOT, with kbuild's
# depmod step a no-op, as without System.map) put the users' build for this
# kernel under updates/ and ran depmod there itself. DKMS installs the
# package the harness built with DKMS against this kernel's tree under an
# empty environment (DKMS_TREE, users' build: no test hooks; its
# dkms.conf names the tools by absolute path), with the package's version
# in modinfo, depmod and
# modprobe find it, and with scripts/modprobe.d/rpcrdma_rs.conf a
# proto=rdma mount loads it by itself instead of the kernel's rpcrdma. Data
# written over that mount reads back; then DKMS removes it. The test build
# the other tests use is unloaded first and loaded again at the end.
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

require_rs_transport "DKMS install"

top=$SOURCE_TOP
kver=$(uname -r)
pkg=rpcrdma_rs/$DKMS_VERSION
installed=/lib/modules/$kver/updates/dkms/rpcrdma_rs.ko
logs=$RUN_DIR/dkms/guest
mnt=/mnt/dkms
mkdir -p "$logs"

dkms_cmd() { dkms --dkmstree "$DKMS_TREE" --sourcetree "$DKMS_SOURCETREE" "$@"; }

# /lib/modules/$kver is virtme-ng's link to the module directory it made in
# the kernel tree, read-only here. An overlay mounted on that directory's
# real path lets DKMS and depmod write, while the relative links in it to
# the tree's modules still resolve.
moddir=$(readlink -f "/lib/modules/$kver")
writable_modules() {
	mkdir -p /run/dkms-modules &&
		mount -t tmpfs none /run/dkms-modules &&
		mkdir /run/dkms-modules/upper /run/dkms-modules/work &&
		mount -t overlay overlay -o "lowerdir=$moddir,upperdir=/run/dkms-modules/upper,workdir=/run/dkms-modules/work" "$moddir"
}
# make install staged updates/rpcrdma_rs.ko, built for this kernel without
# test hooks, and depmod listed it.
make_install_staged() {
	local ko=$MAKE_INSTALL_ROOT/lib/modules/$kver/updates/rpcrdma_rs.ko
	[ "$(modinfo -F vermagic "$ko" | awk '{ print $1 }')" = "$kver" ] &&
		! modinfo -F parm "$ko" | grep -q '^ignore_peer_private:' &&
		grep -q '^updates/rpcrdma_rs.ko:' "$MAKE_INSTALL_ROOT/lib/modules/$kver/modules.dep"
}
# What a rebuild on a kernel upgrade, without RUSTC or BINDGEN in its
# environment, relies on: both named, absolutely, in the package.
dkms_conf_names_tools() {
	local conf=$DKMS_SOURCETREE/rpcrdma_rs-$DKMS_VERSION/dkms.conf
	grep -Eq '^MAKE\[0\]="make RUSTC=/[^ ]+ RUSTDOC=/[^ ]+ BINDGEN=/[^ ]+ ' "$conf"
}
dkms_install() { dkms_cmd install "$pkg" -k "$kver" >"$logs/install.log" 2>&1; }
version_is_package() { [ "$(modinfo -F version rpcrdma_rs)" = "$DKMS_VERSION" ]; }
dkms_installed() { dkms_cmd status "$pkg" -k "$kver" | grep -q ': installed$'; }
modinfo_finds_dkms_module() { [ "$(modinfo -n rpcrdma_rs)" = "$installed" ]; }
# The users' build has no test-hook parameter; the test build has.
users_build() { ! modinfo -F parm rpcrdma_rs | grep -q '^ignore_peer_private:'; }
loaded() { [ -e "/sys/module/$1" ]; }
# The module a proto=rdma mount loaded is the DKMS one, not the kernel's.
mount_autoloads() {
	loaded rpcrdma_rs && return 1
	nfs_mount 4.2 "$mnt" && mount_uses "$mnt" rdma && loaded rpcrdma_rs && ! loaded rpcrdma &&
		[ ! -e /sys/module/rpcrdma_rs/parameters/ignore_peer_private ]
}
data_reads_back() {
	dd if=/dev/urandom of=/tmp/dkms-data bs=1M count=4 status=none &&
		cp /tmp/dkms-data "$mnt/dkms-data" && drop_caches &&
		cmp /tmp/dkms-data "$mnt/dkms-data"
}
dkms_remove() {
	dkms_cmd remove "$pkg" --all >"$logs/remove.log" 2>&1 &&
		! dkms_cmd status rpcrdma_rs | grep -q . && [ ! -e "$installed" ] &&
		! modinfo rpcrdma_rs >/dev/null 2>&1
}

tap_plan 16
tap_check "make install staged updates/rpcrdma_rs.ko for $kver, depmod run by it" make_install_staged
tap_check "the package's dkms.conf names rustc, rustdoc and bindgen by absolute path" dkms_conf_names_tools
tap_check "modules directory made writable" writable_modules
tap_check "dkms install $pkg for $kver" dkms_install
tap_check "dkms status: installed" dkms_installed
tap_check "modinfo finds $installed" modinfo_finds_dkms_module
tap_check "the installed module is the users' build" users_build
tap_check "modinfo version is the package's, $DKMS_VERSION" version_is_package
tap_check "test build unloaded" unload_transport
tap_check "modprobe rpcrdma_rs loads it and what it needs" modprobe rpcrdma_rs
tap_check "modprobe -r rpcrdma_rs" unload_transport
tap_check "modprobe.d alias installed" \
	install -m 0644 "$top/scripts/modprobe.d/rpcrdma_rs.conf" /etc/modprobe.d/rpcrdma_rs.conf
tap_check "proto=rdma mount loads rpcrdma_rs, not rpcrdma" mount_autoloads
tap_check "4 MiB written over it reads back" data_reads_back
rm -f "$mnt/dkms-data" /tmp/dkms-data
mounted "$mnt" && timeout -s KILL 60 umount "$mnt"
rm -f /etc/modprobe.d/rpcrdma_rs.conf
loaded rpcrdma_rs && unload_transport
tap_check "dkms remove: package and module gone" dkms_remove
tap_check "test build loaded again" load_transport
# Lazily: a plain umount was refused as busy after modules were loaded from it.
umount -l "$moddir" && umount -l /run/dkms-modules
tap_exit
