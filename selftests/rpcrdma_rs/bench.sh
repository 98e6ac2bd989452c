#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Benchmark jobs, run in the client guest by scripts/bench.sh through the
# harness. Not a test of speed: it asserts only that every job ran, on the
# transport it was meant for, and that each profile asked for was made.
# Raw results go to $RUN_DIR/bench/ and scripts/bench_report.py turns them
# into tables, plots and a profile summary.
#
# Parameters (from the run's params): BENCH_PROTOS ("rdma", "tcp" or both),
# BENCH_REPS, BENCH_FIRST_REP (the number of the first repetition, default
# 1: scripts/bench.sh runs one per boot and numbers them across boots),
# BENCH_RUNTIME (seconds per fio job), BENCH_SIZE (MiB per file),
# BENCH_FILES (files in the metadata job), BENCH_PERFTEST (1: raw link too),
# BENCH_SCALING (1: the queue-depth and block-size sweeps, over RDMA),
# BENCH_PROFILE (1: perf profiles of this guest, over RDMA, without
# BENCH_INSN_MARK), BENCH_INSN_MARK (insn_mark, when QEMU counts this
# guest's instructions: see below).
#
# With BENCH_INSN_MARK, QEMU's insn_count plugin (scripts/insn_count.c)
# counts the instructions this guest executes: every job runs between a
# mark and a profile mark, and insn-marks.txt says which mark ended which
# job and how many bytes it moved (mountstats, ramp included, as the count
# is), for the instructions per operation. The profile mark also gives
# the kernel's blocks that ran during the job (with their locked
# instructions and calls), which kallsyms-text.txt names: every job is
# profiled so, and no job runs again under perf.
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

protos=${BENCH_PROTOS:-rdma}
reps=${BENCH_REPS:-3}
first_rep=${BENCH_FIRST_REP:-1}
runtime=${BENCH_RUNTIME:-10}
size=${BENCH_SIZE:-64}
nfiles=${BENCH_FILES:-300}
scaling=${BENCH_SCALING:-0}
profile=${BENCH_PROFILE:-0}
out=$RUN_DIR/bench
mkdir -p "$out"

# name:rw:bs:iodepth:numjobs
BASE_JOBS="seqwrite-1m:write:1m:1:1 seqread-1m:read:1m:1:1
	randwrite-4k-qd1:randwrite:4k:1:1 randread-4k-qd1:randread:4k:1:1
	randwrite-4k-qd16:randwrite:4k:16:1 randread-4k-qd16:randread:4k:16:1"
# How the transport scales, over RDMA only (TCP keeps the base jobs: it is
# the reference, and each job costs time): 4 KiB random reads at iodepth
# 1, 4, 16 and 64 with one job and with four, sequential reads and writes
# of 4 KiB to 1 MiB at iodepth 1. The points the base jobs measure
# (randread-4k-qd1, randread-4k-qd16, seqread-1m, seqwrite-1m) are not
# run twice.
SCALING_JOBS="randread-4k-qd4:randread:4k:4:1 randread-4k-qd64:randread:4k:64:1
	randread-4k-qd1-nj4:randread:4k:1:4 randread-4k-qd4-nj4:randread:4k:4:4
	randread-4k-qd16-nj4:randread:4k:16:4 randread-4k-qd64-nj4:randread:4k:64:4
	seqread-4k:read:4k:1:1 seqread-64k:read:64k:1:1 seqread-256k:read:256k:1:1
	seqwrite-4k:write:4k:1:1 seqwrite-64k:write:64k:1:1 seqwrite-256k:write:256k:1:1"
# Run once more under perf after the measured repetitions, over RDMA,
# when QEMU does not count instructions (which profiles every job).
# metadata is the metadata job, not a fio job.
PROFILE_JOBS="seqread-1m randread-4k-qd16 metadata"

# proto_jobs PROTO: the fio jobs measured over PROTO.
# shellcheck disable=SC2086 # the lists are split into words on purpose
proto_jobs() {
	echo $BASE_JOBS
	[ "$1" = rdma ] && [ "$scaling" = 1 ] && echo $SCALING_JOBS
	true
}
# proto_profiles PROTO: the jobs profiled under perf over PROTO.
# shellcheck disable=SC2086 # as above
proto_profiles() {
	[ "$1" = rdma ] && [ "$profile" = 1 ] && [ -z "${BENCH_INSN_MARK:-}" ] && echo $PROFILE_JOBS
	true
}
# proto_cases PROTO: the cases after PROTO's mount: each fio job and the
# metadata job in every repetition, then the profiles.
proto_cases() {
	echo $((reps * ($(proto_jobs "$1" | wc -w) + 1) + $(proto_profiles "$1" | wc -w)))
}
# job_spec NAME: the job's line from the lists above.
job_spec() {
	local j
	for j in $BASE_JOBS $SCALING_JOBS; do
		[ "${j%%:*}" = "$1" ] && echo "$j" && return 0
	done
	return 1
}

insn=${BENCH_INSN_MARK:-}
nmark=0
# mark [profile]: a mark for the insn_count plugin (none without it).
# Every run of insn_mark counts, even one that failed after its mark.
mark() {
	[ -n "$insn" ] || return 0
	nmark=$((nmark + 1))
	"$insn" "$@"
}
# marked TAG B0 B1 BS: the job TAG, which moved B1 - B0 bytes in blocks of
# BS, ended at the last mark.
marked() {
	[ -n "$insn" ] && echo "$nmark $1 bytes=$(($3 - $2)) bs=$4" >>"$out/insn-marks.txt"
}
# direct_bytes: the bytes O_DIRECT reads and writes moved through $mnt.
direct_bytes() { mount_bytes "$mnt" 4 5; }

cases=0
for proto in $protos; do cases=$((cases + 1 + $(proto_cases "$proto"))); done
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

# run_fio NAME RW BS IODEPTH NUMJOBS OUTPUT: one fio job on $mnt, JSON to
# OUTPUT, its errors beside it (.err). Reads share one file, laid out
# before the first measurement (a layout inside a measured job would count
# in its CPU time); each writer has its own. Several jobs report as one
# (group_reporting), with their I/O summed.
run_fio() {
	local name=$1 rw=$2 bs=$3 depth=$4 nj=$5 output=$6 file=$mnt/fio-$1 more=()
	case "$rw" in read | randread) file=$mnt/fio-read ;; esac
	[ "$nj" = 1 ] || more=(--numjobs="$nj" --group_reporting)
	fio --name="$name" --filename="$file" --rw="$rw" --bs="$bs" --iodepth="$depth" "${more[@]}" \
		--ioengine=libaio --direct=1 --size="${size}m" \
		--runtime="$runtime" --time_based --ramp_time=1 \
		--output-format=json --output="$output" >/dev/null 2>"${output%.json}.err"
}

# The file the read jobs share, written as fio lays files out.
layout_read_file() {
	fio --name=layout --filename="$mnt/fio-read" --rw=write --bs=1m --size="${size}m" \
		--ioengine=libaio --direct=1 --output-format=terse >/dev/null 2>"$out/$proto-layout.err"
}

metadata_job() {
	local dir=$1 i
	mkdir -p "$dir"
	for ((i = 0; i < nfiles; i++)); do echo "$i" >"$dir/f$i" || return 1; done
	for ((i = 0; i < nfiles; i++)); do stat -c %s "$dir/f$i" >/dev/null || return 1; done
	rm -rf "$dir"
}

# profile_job NAME: runs job NAME once more while perf samples this whole
# guest, then writes where its cycles went: profile-NAME.txt (symbols with
# their call graphs) and profile-NAME-flat.txt (every symbol, for the
# shares by module). Fails with the reason in $why.
profile_job() {
	local name=$1 spec rw bs depth nj data=/tmp/perf-$1.data log=$out/perf-$1.log fio_pid rc dur
	if [ "$name" != metadata ]; then
		spec=$(job_spec "$name") || { why="no job $name"; return 1; }
		IFS=: read -r _ rw bs depth nj <<<"$spec"
	fi
	command -v perf >/dev/null || { why="no perf (linux-perf on the host)"; return 1; }
	# Kernel symbols for perf, and system-wide sampling, without asking.
	# (The shell's own complaint would land on stderr and fail the test
	# a second time.)
	if ! echo 0 2>/dev/null >/proc/sys/kernel/kptr_restrict ||
		! echo -1 2>/dev/null >/proc/sys/kernel/perf_event_paranoid; then
		why="cannot open kallsyms and perf events to perf"
		return 1
	fi
	if [ "$name" = metadata ]; then
		metadata_job "$mnt/meta-profile" >"$out/perf-$name-fio.err" 2>&1 &
	else
		run_fio "$name" "$rw" "$bs" "$depth" "$nj" "$out/perf-$name-fio.json" &
	fi
	fio_pid=$!
	# Past fio's ramp, and done before its end: the steady state only.
	sleep 1
	dur=$((runtime > 3 ? runtime - 2 : 1))
	# TCG has no PMU: cpu-clock is a software event. The root file system
	# is read-only (HOME) and build ids would only slow the end down.
	HOME=/tmp perf record -e cpu-clock -a -g -F 499 --no-buildid -q -o "$data" \
		-- sleep "$dur" >"$log" 2>&1
	rc=$?
	if ! wait "$fio_pid"; then
		why="fio failed: $(head -2 "$out/perf-$name-fio.err" | tr '\n' ' ')"
		return 1
	fi
	if [ "$rc" != 0 ]; then
		why="perf record exited $rc: $(head -2 "$log" | tr '\n' ' ')"
		return 1
	fi
	if ! HOME=/tmp perf report -i "$data" --stdio --no-children --sort sym --percent-limit 0.5 \
		>"$out/profile-$name.txt" 2>>"$log" ||
		! HOME=/tmp perf report -i "$data" --stdio --no-children --sort sym -g none -n \
			--percent-limit 0 >"$out/profile-$name-flat.txt" 2>>"$log"; then
		why="perf report failed: $(tail -2 "$log" | tr '\n' ' ')"
		return 1
	fi
	if ! grep -qE '^ +[0-9.]+%' "$out/profile-$name-flat.txt"; then
		why="perf recorded no samples (perf-$name.log)"
		return 1
	fi
	mv "$data" "$out/perf-$name.data"
}

for proto in $protos; do
	mnt=/mnt/bench-$proto
	ncases=$(proto_cases "$proto")
	if [ "$proto" = rdma ] && ! rdma_xprt_registered; then
		why="transport '$TRANSPORT' registers no rdma transport class in sunrpc"
		echo "$why" >"$out/unavailable.txt"
		for ((i = 0; i < 1 + ncases; i++)); do tap_skip "$proto: not measured" "$why"; done
		continue
	fi
	if ! tap_check "$proto: NFSv4.2 mount uses xprt $proto" mount_proto "$proto" "$mnt"; then
		for ((i = 0; i < ncases; i++)); do tap_not_ok "$proto: not mounted"; done
		continue
	fi
	# Should this fail, the read jobs lay the file out themselves.
	layout_read_file || tap_diag "$proto: laying out $mnt/fio-read failed: $(head -2 "$out/$proto-layout.err")"
	for ((rep = first_rep; rep < first_rep + reps; rep++)); do
		for job in $(proto_jobs "$proto"); do
			IFS=: read -r name rw bs depth nj <<<"$job"
			tag=$proto-$name-$rep
			c0=$(cpu_busy); s0=$(server_cpu_busy "$tag-0"); b0=$(direct_bytes)
			mark
			run_fio "$name" "$rw" "$bs" "$depth" "$nj" "$out/$tag.json"
			status=$?
			mark profile
			b1=$(direct_bytes); c1=$(cpu_busy); s1=$(server_cpu_busy "$tag-1")
			echo "$tag client_jiffies=$((c1 - c0)) server_jiffies=$((s1 - s0))" >>"$out/cpu.txt"
			marked "$tag" "$b0" "$b1" "$bs"
			tap_check "$proto: $name rep $rep" test "$status" = 0
		done
		tag=$proto-metadata-$rep
		c0=$(cpu_busy); s0=$(server_cpu_busy "$tag-0")
		t0=$(date +%s%N)
		mark
		metadata_job "$mnt/meta-$rep"
		status=$?
		mark profile
		t1=$(date +%s%N)
		marked "$tag" 0 "$((nfiles * 3))" 1
		c1=$(cpu_busy); s1=$(server_cpu_busy "$tag-1")
		echo "$tag client_jiffies=$((c1 - c0)) server_jiffies=$((s1 - s0))" >>"$out/cpu.txt"
		echo "$tag ops=$((nfiles * 3)) ns=$((t1 - t0))" >>"$out/metadata.txt"
		tap_check "$proto: metadata ($nfiles create, stat, remove) rep $rep" test "$status" = 0
	done
	profiled=0
	for name in $(proto_profiles "$proto"); do
		why=""
		if profile_job "$name"; then
			tap_ok "$proto: profile of $name (perf, client guest)"
			profiled=1
		else
			tap_not_ok "$proto: profile of $name (perf, client guest): $why"
		fi
	done
	# Which module each kernel symbol of the profiles belongs to, while
	# the NFS modules are still loaded.
	[ "$profiled" = 1 ] && awk 'NF >= 4' /proc/kallsyms >"$out/kallsyms.txt"
	# And every text symbol, for the addresses of the blocks and calls
	# the instruction counts name (this boot's: modules load elsewhere
	# in each; the first protocol's, with the RDMA modules loaded).
	if [ -n "$insn" ] && [ ! -e "$out/kallsyms-text.txt" ]; then
		if echo 0 2>/dev/null >/proc/sys/kernel/kptr_restrict; then
			awk '$2 ~ /^[tT]$/' /proc/kallsyms >"$out/kallsyms-text.txt"
		else
			tap_diag "$proto: cannot open kallsyms: no instructions by function"
		fi
	fi
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
