#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The NFS server guest: Soft-RoCE (or siw), the kernel's NFS server with
# RDMA on port 20049 exporting a tmpfs, until the client says it is done.
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"
exec >"$RUN_DIR/server.log" 2>&1
set -x

fail() {
	echo "server: $*"; echo "$*" >"$RUN_DIR/server-failed"
	record_kernel_state server; dmesg >"$RUN_DIR/server-dmesg.txt"; exit 1
}

ifname=$(setup_link "$SERVER_MAC" "$SERVER_IP4" "$SERVER_IP6") || fail "link setup"
mkdir -p /srv/export
mount -t tmpfs -o size=1g tmpfs /srv/export || fail "tmpfs"
chmod 1777 /srv/export
mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd || fail "nfsd fs"
modprobe rpcrdma || fail "rpcrdma"
echo "/srv/export *(rw,fsid=0,insecure,no_root_squash,no_subtree_check,sync)" >/etc/exports
mkdir -p /run/rpcbind /var/lib/nfs/v4recovery
rpcbind -w || fail "rpcbind"
exportfs -ra || fail "exportfs"
rpc.mountd || fail "mountd"
# Short NFSv4 grace and lease times: a fresh server refuses OPEN while in grace.
echo 10 >/proc/fs/nfsd/nfsv4leasetime
echo 10 >/proc/fs/nfsd/nfsv4gracetime
# 1 MiB READ and WRITE payloads, as a server with 4 GiB of memory or more
# offers by itself (nfsd sizes its default by memory: 256 KiB in this
# guest): the client's RPCs then take as many memory regions as on real
# servers. Set before nfsd starts; it stays across restarts.
echo 1048576 >/proc/fs/nfsd/max_block_size || fail "nfsd max_block_size"
rpc.nfsd 8 || fail "nfsd"
echo "rdma 20049" >/proc/fs/nfsd/portlist || fail "rdma listener"
cat /proc/fs/nfsd/portlist
echo 'clear' >/sys/kernel/debug/kmemleak 2>/dev/null
if [ "${CAPTURE:-0}" = 1 ]; then
	# RoCEv2 is UDP port 4791: calls, replies and the CM exchange.
	tcpdump -i "$ifname" -s 0 -U -w "$RUN_DIR/capture.pcap" udp port 4791 &
	tcpdump_pid=$!
	sleep 3
fi
touch "$RUN_DIR/server-ready"

if [ "${BENCH_PERFTEST:-0}" = 1 ]; then
	# The raw-link servers for bench.sh, in the order its clients run.
	(
		ib_write_bw -R -d "$(rdma_dev)" -F -s 1048576 -n 200
		ib_read_bw -R -d "$(rdma_dev)" -F -s 1048576 -n 200
		ib_send_lat -R -d "$(rdma_dev)" -F -s 64 -n 500
	) >"$RUN_DIR/server-perftest.log" 2>&1 &
fi

# Serve until the client is done (the host bounds the whole run). Answer
# the client's requests for this guest's CPU time (bench.sh).
set +x
while [ ! -e "$RUN_DIR/client-done" ] && [ ! -e "$RUN_DIR/server-stop" ]; do
	# Commands the client's tests ask this guest to run (server_run).
	for req in "$RUN_DIR"/server-cmd-*.sh; do
		[ -e "$req" ] || continue
		tag=${req%.sh}
		bash "$req" >"$tag.log" 2>&1
		echo $? >"$tag.rc.tmp"
		mv "$tag.rc.tmp" "$tag.rc"
		rm -f "$req"
	done
	for req in "$RUN_DIR"/stat-req-*; do
		[ -e "$req" ] || continue
		tag=${req##*/stat-req-}
		read -r _ user nice system _ _ irq softirq _ </proc/stat
		echo $((user + nice + system + irq + softirq)) >"$RUN_DIR/stat-$tag.tmp"
		mv "$RUN_DIR/stat-$tag.tmp" "$RUN_DIR/stat-$tag"
		rm -f "$req"
	done
	sleep 0.2
done
set -x
# The client sent its last RPC; give nfsd a moment to drain, then check.
sleep 2
[ -n "${tcpdump_pid:-}" ] && kill -INT "$tcpdump_pid" && wait "$tcpdump_pid"
kmemleak_report >"$RUN_DIR/server-kmemleak.txt"
echo $? >"$RUN_DIR/server-kmemleak.rc"
record_kernel_state server
dmesg >"$RUN_DIR/server-dmesg.txt"
touch "$RUN_DIR/server-done"
