#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Benchmark jobs, run in the client guest by scripts/bench.sh through the
# harness. Not a test of speed: it asserts only that every job ran, on the
# transport it was meant for. Raw results go to $RUN_DIR/bench/ and
# scripts/bench_report.py turns them into tables.
#
# Parameters (from the run's params): BENCH_PROTOS ("rdma", "tcp" or both),
# BENCH_REPS, BENCH_RUNTIME (seconds per fio job), BENCH_SIZE (MiB per file),
# BENCH_FILES (files in the metadata job), BENCH_PERFTEST (1: raw link too).
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

protos=${BENCH_PROTOS:-rdma}
reps=${BENCH_REPS:-3}
runtime=${BENCH_RUNTIME:-10}
size=${BENCH_SIZE:-64}
nfiles=${BENCH_FILES:-300}
out=$RUN_DIR/bench
mkdir -p "$out"

# name rw bs iodepth
JOBS="seqwrite-1m:write:1m:1 seqread-1m:read:1m:1 randwrite-4k-qd1:randwrite:4k:1 randread-4k-qd1:randread:4k:1 randwrite-4k-qd16:randwrite:4k:16 randread-4k-qd16:randread:4k:16"
njobs=$(($(echo $JOBS | wc -w) + 1))
cases=$(($(echo $protos | wc -w) * (1 + reps * njobs)))
[ "${BENCH_PERFTEST:-0}" = 1 ] && cases=$((cases + 3))
tap_plan "$cases"

# CPU time in jiffies (user+nice+system+irq+softirq) of this guest.
cpu_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
# The server guest's, through the run directory (guest_server.sh answers).
server_cpu_busy() {
	local tag=$1
	touch "$RUN_DIR/stat-req-$tag"
	wait_for_file "$RUN_DIR/stat-$tag" 30 && cat "$RUN_DIR/stat-$tag" && rm -f "$RUN_DIR/stat-$tag"
}

# Fails loudly if the mount silently used another transport.
mount_proto() {
	nfs_mount 4.2 "$2" "$1" && mount_uses "$2" "$1"
}

metadata_job() {
	local dir=$1 i
	mkdir -p "$dir"
	for ((i = 0; i < nfiles; i++)); do echo "$i" >"$dir/f$i" || return 1; done
	for ((i = 0; i < nfiles; i++)); do stat -c %s "$dir/f$i" >/dev/null || return 1; done
	rm -rf "$dir"
}

for proto in $protos; do
	mnt=/mnt/bench-$proto
	if [ "$proto" = rdma ] && ! rdma_xprt_registered; then
		why="transport '$TRANSPORT' registers no rdma transport class in sunrpc"
		echo "$why" >"$out/unavailable.txt"
		for ((i = 0; i < 1 + reps * njobs; i++)); do tap_skip "$proto: not measured" "$why"; done
		continue
	fi
	if ! tap_check "$proto: NFSv4.2 mount uses xprt $proto" mount_proto "$proto" "$mnt"; then
		for ((i = 0; i < reps * njobs; i++)); do tap_not_ok "$proto: not mounted"; done
		continue
	fi
	for ((rep = 1; rep <= reps; rep++)); do
		for job in $JOBS; do
			IFS=: read -r name rw bs depth <<<"$job"
			tag=$proto-$name-$rep
			c0=$(cpu_busy); s0=$(server_cpu_busy "$tag-0")
			fio --name="$name" --filename="$mnt/fio-$name" --rw="$rw" --bs="$bs" \
				--iodepth="$depth" --ioengine=libaio --direct=1 --size="${size}m" \
				--runtime="$runtime" --time_based --ramp_time=1 \
				--output-format=json --output="$out/$tag.json" >/dev/null 2>"$out/$tag.err"
			status=$?
			c1=$(cpu_busy); s1=$(server_cpu_busy "$tag-1")
			echo "$tag client_jiffies=$((c1 - c0)) server_jiffies=$((s1 - s0))" >>"$out/cpu.txt"
			tap_check "$proto: $name rep $rep" test "$status" = 0
		done
		tag=$proto-metadata-$rep
		c0=$(cpu_busy); s0=$(server_cpu_busy "$tag-0")
		t0=$(date +%s%N)
		metadata_job "$mnt/meta-$rep"
		status=$?
		t1=$(date +%s%N)
		c1=$(cpu_busy); s1=$(server_cpu_busy "$tag-1")
		echo "$tag client_jiffies=$((c1 - c0)) server_jiffies=$((s1 - s0))" >>"$out/cpu.txt"
		echo "$tag ops=$((nfiles * 3)) ns=$((t1 - t0))" >>"$out/metadata.txt"
		tap_check "$proto: metadata ($nfiles create, stat, remove) rep $rep" test "$status" = 0
	done
	rm -f "$mnt"/fio-*
	umount "$mnt"
done

if [ "${BENCH_PERFTEST:-0}" = 1 ]; then
	# The server guest runs the matching perftest servers in this order.
	for t in ib_write_bw ib_read_bw ib_send_lat; do
		ok=1
		for _ in $(seq 30); do
			case $t in
			ib_send_lat) args=(-s 64 -n 500) ;;
			*) args=(-s 1048576 -n 200) ;;
			esac
			if $t -R -d "$(rdma_dev)" -F "${args[@]}" "$SERVER_IP4" >"$out/$t.txt" 2>&1; then
				ok=0; break
			fi
			sleep 1
		done
		tap_check "raw link: $t" test "$ok" = 0
	done
fi
tap_exit
