#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# NFS workloads over RDMA: fio with verification (sequential 1 MiB and
# random 4 KiB, direct and buffered), a tree of small files copied and
# compared by checksum, a directory of 10,000 entries listed in full, the
# chunk counters these leave behind, checked against the server's own
# (svcrdma's rdma_stat_read and rdma_stat_write). (Reconnects under I/O are
# nfs_server_loss.sh's and nfs_teardown.sh's.)
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

VERS=${NFS_WORKLOAD_VERSION:-4.2}
require_rdma_xprt "nfs workloads"
PLAN=19
tap_plan $PLAN

mnt=/mnt/nfs-work
scratch=/mnt/scratch-work
mkdir -p "$scratch"
mountpoint -q "$scratch" || mount -t tmpfs -o size=128m tmpfs "$scratch"

fio_job() {
	local name=$1 dir=$2
	shift 2
	fio --name="$name" --directory="$dir" --ioengine=psync --end_fsync=1 \
		--verify=crc32c --verify_fatal=1 --verify_state_save=0 \
		--output="$RUN_DIR/fio-$name.txt" "$@"
}

# fio_verified NAME DIR RW BS SIZE DIRECT: writes with verification headers,
# drops the page cache, and verifies what the server returns.
fio_verified() {
	local name=$1 dir=$2 rw=$3 bs=$4 size=$5 direct=$6
	fio_job "$name" "$dir" --rw="$rw" --bs="$bs" --size="$size" --direct="$direct" \
		--do_verify=0 &&
		drop_caches &&
		fio_job "$name" "$dir" --rw="$rw" --bs="$bs" --size="$size" --direct="$direct" \
			--verify_only=1
}

tree_sums() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }

copy_tree() {
	local src=$scratch/tree i
	rm -rf "$src"
	for i in $(seq 1 120); do
		mkdir -p "$src/d$((i % 10))/e$((i % 3))" &&
			head -c $((RANDOM % 20000 + 1)) /dev/urandom >"$src/d$((i % 10))/e$((i % 3))/f$i" ||
			return 1
	done
	[ "$(find "$src" -type f | wc -l)" = 120 ] || return 1
	cp -a "$src" "$1/tree" && drop_caches &&
		diff <(tree_sums "$src") <(tree_sums "$1/tree")
}

# The server makes the entries (one CREATE per file would take minutes
# under TCG); the client must list every one, each once, and nothing else:
# the sorted names are compared, not only their count.
list_big_dir() {
	local expected=$scratch/big.expected listed=$scratch/big.listed
	server_run "mkdir -p /srv/export/big && cd /srv/export/big && seq -f 'entry%05g' 10000 | xargs touch" ||
		return 1
	drop_caches
	seq -f 'entry%05g' 10000 | LC_ALL=C sort >"$expected"
	ls -f "$1/big" | grep -vxE '\.\.?' | LC_ALL=C sort >"$listed"
	tap_diag "listed $(wc -l <"$listed") entries"
	diff "$expected" "$listed" >"$scratch/big.diff" && return 0
	head -5 "$scratch/big.diff" | sed 's/^/# /'
	return 1
}

positive() { [ "${1:-0}" -gt 0 ] 2>/dev/null; }

# iproute2_shows_it: iproute2's rdma tool shows the mount's connection
# as the transport's own: a connection manager identifier to the server's
# port 20049 made by the transport's module (rpcrdma_rs, or rpcrdma for
# the C one), whose queue pair is in RTS, and the device's packet
# counters (rdma statistic; Soft-RoCE has them) are not all zero.
iproute2_shows_it() {
	local owner=rpcrdma_rs ids line qpn qp stats
	[ "$TRANSPORT" = c ] && owner=rpcrdma
	ids=$(rdma resource show cm_id 2>&1) || { tap_diag "rdma resource show cm_id: $ids"; return 1; }
	line=$(grep -F "comm [$owner]" <<<"$ids" | grep -F "dst-addr $SERVER_IP4:20049" | head -1)
	tap_diag "cm_id: ${line:-none of [$owner] to $SERVER_IP4:20049 in: $(tr '\n' ' ' <<<"$ids")}"
	[[ $line =~ lqpn\ ([0-9]+) ]] || return 1
	qpn=${BASH_REMATCH[1]}
	qp=$(rdma resource show qp lqpn "$qpn" 2>&1)
	tap_diag "qp: $qp"
	[[ $qp == *"state RTS"* ]] || return 1
	# Soft-iWARP keeps no port counters: nothing to show there.
	[ "$RDMA" = siw ] && { tap_diag "siw has no port counters for rdma statistic"; return 0; }
	stats=$(rdma statistic show link "$(rdma_dev)/1" 2>&1)
	tap_diag "statistic: $(head -c 300 <<<"$stats" | tr '\n' ' ')"
	grep -Eq ' [a-z_]*(sent|rcvd)_pkts [1-9]' <<<"$stats"
}

# direct_reads_written_once DIR: 8 MiB read back in exactly 8 whole 1 MiB
# O_DIRECT READs, each reply's data in a Write chunk. svcrdma counts an
# RDMA Write (rdma_stat_write) for each segment it fills, and a READ's
# data fills every segment offered, so while only these READs run the
# server's Writes and the client's Write segments are the same number,
# seen from both ends. The file is opened before the counters are read
# and closed after (NFSv4 OPEN and CLOSE replies may come in Reply
# chunks, which the server's count includes), and no READ reaches the end
# of the file (one would fill nothing). Both clients count a segment as
# they encode it; no marshalling is retried when nothing else is in
# flight.
tell_reader() { [ -n "${READER[1]:-}" ] && echo "$1" >&"${READER[1]}"; }
direct_reads_written_once() {
	local f=$1/direct8m w0="" w1="" s0 s1 r0 r1 sum line rc=0
	head -c $((8 << 20)) /dev/urandom >"$scratch/direct8m" || return 1
	sum=$(sha256sum <"$scratch/direct8m")
	sum=${sum%% *}
	dd if="$scratch/direct8m" of="$f" bs=1M oflag=direct status=none || return 1
	rm -f "$scratch/direct8m"
	coproc READER {
		python3 -c '
import hashlib, mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 1 << 20)
print("open", flush=True)
sys.stdin.readline()
h = hashlib.sha256()
for _ in range(8):
    if os.readv(fd, [buf]) != len(buf):
        sys.exit(1)
    h.update(buf)
print(h.hexdigest(), flush=True)
sys.stdin.readline()
os.close(fd)' "$f"
	}
	read -r -t 60 line <&"${READER[0]}" && [ "$line" = open ] || rc=1
	s0=$(mountstats_field "$mnt" 12)
	r0=$(mountstats_field "$mnt" 13)
	[ "$rc" = 0 ] && { server_rdma_stat w0 write || rc=1; }
	tell_reader go
	read -r -t 60 line <&"${READER[0]}" || rc=1
	[ "$rc" = 0 ] && { server_rdma_stat w1 write || rc=1; }
	s1=$(mountstats_field "$mnt" 12)
	r1=$(mountstats_field "$mnt" 13)
	tell_reader close
	[ "$rc" = 0 ] || kill "$READER_PID" 2>/dev/null
	wait "$READER_PID" || rc=1
	rm -f "$f"
	[ "$rc" = 0 ] || { tap_diag "the O_DIRECT reader or a server command failed"; return 1; }
	[ "$line" = "$sum" ] || { tap_diag "the data read back differs"; return 1; }
	tap_diag "server RDMA Writes $((w1 - w0)) = client Write segments $((s1 - s0))?" \
		"Reply chunk segments $((r1 - r0))"
	[ $((w1 - w0)) -gt 0 ] && [ $((w1 - w0)) = $((s1 - s0)) ] && [ "$r1" = "$r0" ]
}

# The server's count of RDMA Reads (svcrdma's rdma_stat_read, one per Read
# segment it pulls) before this mount: nothing else uses the server.
server_reads0=""
server_rdma_stat server_reads0 read || server_reads0=""
if ! tap_check "NFSv$VERS mount over rdma" nfs_mount "$VERS" "$mnt"; then
	for i in $(seq 2 "$PLAN"); do tap_not_ok "case $i (not mounted)"; done
	tap_exit
fi
dir=$mnt/work-$$
mkdir -p "$dir"
tap_check "fio sequential 1 MiB, O_DIRECT, verified" fio_verified seq-direct "$dir" write 1M 8M 1
tap_check "fio sequential 1 MiB, buffered, verified" fio_verified seq-buffered "$dir" write 1M 8M 0
tap_check "fio random 4 KiB, O_DIRECT, verified" fio_verified rand-direct "$dir" randwrite 4k 512k 1
tap_check "fio random 4 KiB, buffered, verified" fio_verified rand-buffered "$dir" randwrite 4k 512k 0
tap_check "server RDMA Writes = client Write segments for 1 MiB O_DIRECT reads (rdma_stat_write)" \
	direct_reads_written_once "$dir"
tap_check "tree of 120 small files copied, checksums match" copy_tree "$dir"
tap_check "directory of 10,000 entries listed completely" list_big_dir "$mnt"
tap_diag "$(mount_xprt_line "$mnt")"
tap_check "Read chunks were used (NFS WRITE)" positive "$(mountstats_field "$mnt" 11)"
tap_check "Write chunks were used (NFS READ)" positive "$(mountstats_field "$mnt" 12)"
tap_check "iproute2: rdma resource shows the transport's connection and QP, rdma statistic its packets" \
	iproute2_shows_it
tap_check "Reply chunks were used (READDIR)" positive "$(mountstats_field "$mnt" 13)"
tap_check "no bad replies" [ "$(mountstats_field "$mnt" 20)" = 0 ]
tap_check "one connection throughout (no invalidation failed)" \
	[ "$(mountstats_field "$mnt" 3)" = 1 ]
# The client's Read segments (one per memory region it offered) and the
# server's RDMA Reads must be the same number: a segment the server never
# pulled, or pulled twice, shows here, seen from the other end.
server_read_every_segment() {
	local reads1="" segs
	server_rdma_stat reads1 read || return 1
	segs=$(mountstats_field "$mnt" 11)
	tap_diag "server RDMA Reads $((reads1 - server_reads0)) = client Read segments $segs?"
	[ -n "$server_reads0" ] && [ "$((reads1 - server_reads0))" = "$segs" ]
}
# The C client counts a segment when it encodes it, again when marshalling
# is retried (out of MRs, say): its count can exceed what it sent.
# rpcrdma_rs counts only what it posted.
if [ "$TRANSPORT" = rs ]; then
	tap_check "the server pulled each Read segment once (rdma_stat_read)" server_read_every_segment
else
	tap_skip "the server pulled each Read segment once (rdma_stat_read)" \
		"the C client's read_chunk_count counts retried marshalling too"
fi
# Each registered segment (one memory region each) is invalidated exactly
# once, by the server or by a LOCAL_INV; the pool is allocated once per
# connection: 256 regions for RPCs and the Write chunks' XDR pad's.
invalidated_once() {
	local segs remote loc
	segs=$(($(mountstats_field "$mnt" 11) + $(mountstats_field "$mnt" 12) +
		$(mountstats_field "$mnt" 13)))
	remote=$(rs_xprt_field remote_invalidations) || return 1
	loc=$(mountstats_field "$mnt" 25)
	tap_diag "segments $segs = remote invalidations $remote + local $loc?"
	[ "$segs" = $((remote + loc)) ] &&
		[ "$(mountstats_field "$mnt" 24)" = $((257 * $(mountstats_field "$mnt" 3))) ]
}
# Sends complete in batches: no more than send_batch - 1 unsignaled Sends
# in a row (send_batch is an eighth of the credits asked for), so at least
# sends / send_batch are signaled; and, with the slots far from all in use
# here, most are not.
sends_batched() {
	local sends signaled asked batch
	sends=$(rs_xprt_field sends) || return 1
	signaled=$(rs_xprt_field sends_signaled) || return 1
	asked=$(rs_xprt_field credits_requested) || return 1
	batch=$((asked / 8 > 1 ? asked / 8 : 1))
	tap_diag "sends $sends, signaled $signaled, batch $batch"
	[ "$sends" -gt 100 ] && [ "$signaled" -ge $((sends / batch)) ] &&
		[ $((signaled * 2)) -lt "$sends" ]
}
if [ "$TRANSPORT" = rs ]; then
	tap_diag "$(tr '\n' ' ' </sys/kernel/debug/rpcrdma_rs/xprts)"
	if [ "$RDMA" = siw ]; then
		# Not offered over siw (its invalidation does not check the key),
		# so the server sends plain Sends and every region gets a
		# LOCAL_INV.
		tap_check "no remote invalidation over siw" [ "$(rs_xprt_field remote_invalidations)" = 0 ]
	else
		tap_check "the server invalidated MRs remotely" positive "$(rs_xprt_field remote_invalidations)"
	fi
	tap_check "every registered segment invalidated exactly once" invalidated_once
	tap_check "Sends signaled one batch at a time" sends_batched
else
	tap_skip "the server invalidated MRs remotely" "counted by rpcrdma_rs only"
	tap_skip "every registered segment invalidated exactly once" "counted by rpcrdma_rs only"
	tap_skip "Sends signaled one batch at a time" "counted by rpcrdma_rs only"
fi
rm -rf "$dir"
server_run "rm -rf /srv/export/big"
tap_check "unmount" umount "$mnt"

tap_exit
