#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rpcrdma_rs tracks RDMA devices through an ib_client: devices present at
# load time and devices added or removed later show in its debugfs report
# and in the kernel log, and a removal fires the rpcrdma_rs_device_removal
# trace event with the device's name and index; unloading unregisters
# cleanly.
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

require_rs_transport "device tracking"

report=/sys/kernel/debug/rpcrdma_rs/devices
dev=$(rdma_dev)
netdev=$(nic_by_mac "$CLIENT_MAC")

listed() { grep -qw "$dev" "$report"; }
not_listed() { [ -e "$report" ] && ! grep -qw "$dev" "$report"; }
# dmesg_has TEXT: the kernel log has TEXT since the test began.
dmesg_has() { dmesg | tail -n +"$dmesg_start" | grep -qF "$1"; }
dmesg_start=$(($(dmesg | wc -l) + 1))
# The device's index, as the report lists it ("INDEX NAME").
index() { awk -v d="$dev" '$2 == d { print $1 }' "$report"; }
# removal_traced INDEX: one device_removal event, for $dev and INDEX. The
# module's events are off again before it is unloaded below.
removal_traced() {
	local got
	got=$(trace_events device_removal)
	trace_stop
	tap_diag "device_removal events: ${got:-none}"
	[ "$got" = "device=$dev index=$1" ]
}
trap trace_stop EXIT
trap 'exit 143' TERM INT

tap_plan 11
lsmod | grep -q '^rpcrdma_rs\b' || insmod "$MODULE"
tap_check "$dev present at load is listed" listed
idx=$(index)
trace_start rpcrdma_rs_devices device_removal || tap_diag "no trace of the removal"
tap_check "rdma link del $dev" rdma link del "$dev"
tap_check "$dev no longer listed" not_listed
tap_check "removal logged" dmesg_has "rpcrdma_rs: RDMA device $dev removed"
tap_check "removal traced: device=$dev index=${idx:-?}" removal_traced "${idx:-?}"
tap_check "rdma link add $dev" rdma link add "$dev" type "$RDMA" netdev "$netdev"
tap_check "$dev listed again" listed
tap_check "addition logged" dmesg_has "rpcrdma_rs: RDMA device $dev added"
tap_check "rmmod rpcrdma_rs" unload_transport
tap_check "debugfs directory removed with the module" test ! -e /sys/kernel/debug/rpcrdma_rs
tap_check "insmod again finds $dev at registration" bash -c "insmod '$MODULE' && grep -qw '$dev' '$report'"
tap_exit
