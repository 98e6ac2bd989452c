#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The transport under real load, with the NFSv4.1 backchannel, failing
# allocations and module unloading:
#
# - Load: an NFSv4.2 mount with nconnect=4 and an NFSv3 mount of the same
#   server at once, the server granting 128 credits, each mount running
#   verified fio: 4 jobs writing 1 MiB blocks sequentially and 4 writing
#   4 KiB blocks at random, libaio, O_DIRECT, the random ones 64 deep. The
#   NFSv3 transport is asked for more RPCs than its 128 slots (some wait
#   in the backlog, which mountstats counts), and for more memory regions
#   than its pool of 256 over rxe (where a 1 MiB chunk takes 8): with
#   rpcrdma_rs, a burst of 48 1 MiB writes in flight must make Sends wait
#   for regions (its mr_waits; the load's own count is printed). A
#   connection has 152 Send buffers for 128 credits, so Sends rarely wait
#   for one; how often is printed (empty_sendctx_q), not required. Every
#   job must write all its data and read all of it back verified, no reply
#   may be bad, and with rpcrdma_rs the five transports must be connected
#   and have all 256 MRs back on their free lists once the I/O is over.
#   Then, the I/O done and both mounts still up, a
#   kmemleak scan must find no unreferenced object (the guest scans again
#   once everything is unmounted and unloaded).
# - The NFSv4.1 backchannel: a file held open for reading gets a read
#   delegation (the server's /proc/fs/nfsd/clients/*/states lists it); a
#   write open of it on the server recalls it and must complete well
#   within the 10 s lease (a CB_RECALL the client never answers holds the
#   writer until the lease runs out); the delegation is gone afterwards
#   and the client reads the server's write. Then once more after an
#   injected disconnect, whose reconnect moves the backchannel to a new
#   connection.
# - Failing allocations: every 10th of the slab allocations (failslab),
#   then of the page allocations (fail_page_alloc), made with the
#   transport module's code on the stack, fails for 20 s (up to 40 s
#   until one has) while verified fio runs on a hard NFSv3 mount; wrong
#   data is never allowed, I/O errors only under failslab. The I/O alone
#   makes few page allocations with the module on the stack (none at all
#   in some 20 s windows), so a disconnect is injected as the page
#   allocations start failing: the reconnect's allocations (its buffers,
#   the QP's queues) are among those that fail, and the transport must
#   connect again once they no longer do: the disconnect must have been
#   injected, the connection count must have grown by the time fio
#   ends, and fio must have seen no I/O error (a failed connect is
#   retried on a hard mount, never turned into EIO). Afterwards
#   the mount must work: a file written before reads back intact, a new
#   8 MiB file too, and with rpcrdma_rs every MR is back on the free list.
#   Then, with rpcrdma_rs, two reconnects fail for want of memory for
#   certain (the test hook fail_connects), and the hard mount's I/O must
#   still come through right.
#   The page allocator logs "page allocation failure" for what it fails;
#   markers in the kernel log ("rpcrdma-rs-selftest: fault injection
#   begins" and "... ends") bound each injection for the harness.
# - Module lifetime: removing the transport module while a mount uses it
#   is refused as in use (EBUSY) and changes nothing; then rounds of
#   mount, 64 KiB written and read back, unmount, unload and load (50 for
#   rpcrdma_rs, 10 for the C reference: its unloads are not under test).
#
# NFS_LOAD_ROUNDS, NFS_LOAD_ROUNDS_SECONDS (the rounds' time limit) and
# NFS_LOAD_INJECT_SECONDS (each injection's length) change the defaults.
# shellcheck disable=SC2317 # functions run through tap_check
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

require_rdma_xprt "nfs load"
tap_plan 39

mod=rpcrdma
[ "$TRANSPORT" = rs ] && mod=rpcrdma_rs
if [ "$TRANSPORT" = rs ]; then ROUNDS=${NFS_LOAD_ROUNDS:-50}; else ROUNDS=${NFS_LOAD_ROUNDS:-10}; fi
# The rounds stop (and fail) past this, rather than the whole test being
# killed by the guest's per-test timeout with nothing said.
ROUNDS_SECONDS=${NFS_LOAD_ROUNDS_SECONDS:-480}
INJECT_SECONDS=${NFS_LOAD_INJECT_SECONDS:-20}
# The memory regions of one rpcrdma_rs connection (RPCRDMA_RS_MRS).
POOL=256
# Fault injection "times": each injected failure takes one, so what is
# left tells how many there were (-1 would mean unlimited, uncounted).
FAULT_BUDGET=1000000
# The injection fails every FAULT_INTERVAL-th allocation it may fail.
FAULT_INTERVAL=10

xprts=/sys/kernel/debug/rpcrdma_rs/xprts
fail_sunrpc=/sys/kernel/debug/fail_sunrpc
LOG_DIR=$RUN_DIR/nfs_load
log=$LOG_DIR/tools.log
scratch=/mnt/scratch-load
mnt42=/mnt/nfs-load-42
mnt3=/mnt/nfs-load-3
mnt41=/mnt/nfs-load-41
mntf=/mnt/nfs-load-fault
mntm=/mnt/nfs-load-module
mkdir -p "$LOG_DIR" "$scratch"
mountpoint -q "$scratch" || mount -t tmpfs -o size=64m tmpfs "$scratch"

# Descriptions of the cases rpcrdma_rs's report decides (known skips under
# the C transport: keep them in step with known_skips).
D_RS_CONNECTED="rpcrdma_rs lists at least 5 transports to the server, all connected"
D_RS_LOAD_MRS="after the load every transport has all 256 MRs free"
D_RS_FAULT_MRS="every MR is back on the free list" # after "failslab: " etc.
D_RS_MR_WAITS="48 1 MiB writes in flight ran the MR pool dry: Sends waited for regions (mr_waits), each traced (mr_wait)"
D_RS_CB_TRACED="the recall traced: a cb_call event and a cb_reply with its XID, naming the server"
RS_WHY="rpcrdma_rs's debugfs xprts report; the C transport has none"

# rs_check DESC COMMAND...: a case about rpcrdma_rs's own report.
rs_check() {
	if [ "$TRANSPORT" != rs ]; then
		tap_skip "$1" "$RS_WHY"
		return 0
	fi
	tap_check "$@"
}
# not_run WHY DESC...: cases that could not run; rs_not_run likewise for
# those that rs_check runs.
not_run() {
	local why=$1 d
	shift
	for d in "$@"; do tap_not_ok "$d ($why)"; done
}
rs_not_run() {
	local why=$1 d
	shift
	for d in "$@"; do
		if [ "$TRANSPORT" = rs ]; then tap_not_ok "$d ($why)"; else tap_skip "$d" "$RS_WHY"; fi
	done
}

[ "${BREAK_DATA_CHECK:-0}" = 1 ] && tap_diag "BREAK_DATA_CHECK=1: every expected checksum is wrong"

fio_pids=()
injecting=""
credits_raised=0
# Whatever happens, nothing is left behind: injection off, fio gone, no
# mounts, the server's default credits, and the transport loaded for the
# next test and the guest's final unload.
cleanup() {
	local p m i
	[ -n "$injecting" ] && fault_off "$injecting"
	[ -d "$fail_sunrpc" ] && echo 0 >"$fail_sunrpc/times"
	# Each is a timeout(1) in a process group of its own: TERM reaches fio
	# through it; KILL after 10 s.
	for p in "${fio_pids[@]}"; do
		kill -TERM "$p" || continue
		for ((i = 0; i < 100; i++)); do
			kill -0 "$p" || break
			sleep 0.1
		done
		kill -KILL "$p"
		wait "$p"
	done
	exec 3<&-
	for m in "$mnt42" "$mnt3" "$mnt41" "$mntf" "$mntm"; do
		mountpoint -q "$m" || continue
		timeout -s KILL 60 umount "$m" || umount -f -l "$m"
	done
	[ "$credits_raised" = 1 ] && server_run "echo 64 >/proc/sys/sunrpc/svc_rdma/max_requests"
	trace_stop
	rdma_xprt_registered || load_transport
} >>"$log" 2>&1
trap cleanup EXIT
trap 'exit 143' TERM INT

# rs_transports: "N C F" for rpcrdma_rs's transports to the server: how
# many the xprts report lists, how many are connected, and how many have
# all POOL MRs on their free list (the report has them only when connected).
rs_transports() {
	awk -v a="xprt $SERVER_IP4" -v pool="$POOL" '
		/^xprt / { cur = ($0 == a); n += cur; next }
		!cur { next }
		$1 == "connected" && $2 == "yes" { c++ }
		$1 == "mrs_free" && $2 == pool { f++ }
		END { print n + 0, c + 0, f + 0 }' "$xprts" 2>/dev/null
}

# rs_field NAME sum|max: NAME over rpcrdma_rs's transports to the
# server, summed or the largest.
rs_field() {
	awk -v a="xprt $SERVER_IP4" -v k="$1" -v op="$2" '
		/^xprt / { cur = ($0 == a); next }
		!cur || $1 != k { next }
		{ s += $2; if ($2 > m) m = $2 }
		END { print (op == "max") ? m + 0 : s + 0 }' "$xprts" 2>/dev/null
}

# rs_pool_ran_dry: an RPC of the NFSv3 mount's wsize needs
# ceil(wsize pages / region pages) regions; where that is more than two,
# 48 1 MiB writes in flight at once on that one transport need more than
# its 256 regions (384 over rxe), and Sends must wait for regions. The
# load above may or may not have got there (how many of its 1 MiB writes
# are in flight together is the scheduler's): its count is printed, and
# a burst of its own decides. Where an RPC takes two regions or fewer
# (siw maps 1 MiB in one) the credits run out first: said, and skipped.
rs_pool_ran_dry() {
	local pages waits0 waits1 wsize need traced all
	pages=$(rs_field region_pages max)
	waits0=$(rs_field mr_waits sum)
	wsize=$(awk -v m="$mnt3" '$2 == m { if (match($4, /wsize=[0-9]+/)) print substr($4, RSTART + 6, RLENGTH - 6) }' /proc/mounts)
	tap_diag "wsize ${wsize:-?}; regions of ${pages:-?} pages; the load's Sends that waited for regions: ${waits0:-?};" \
		"Sends that waited for a Send buffer: $(mountstats_field "$mnt3" 26) (NFSv3 mount)"
	if [ "${pages:-0}" -gt 0 ] && [ "${wsize:-0}" -gt 0 ]; then
		need=$(((wsize / 4096 + pages - 1) / pages))
		if [ "$need" -le 2 ]; then
			tap_skip "$D_RS_MR_WAITS" "an RPC of $wsize bytes takes $need regions of $pages pages: 128 of them fit in the pool of 256, so the credits run out first"
			return 0
		fi
	fi
	# Each wait is traced where it is counted: as many mr_wait events,
	# all to the server (only this burst's transport is busy).
	trace_start rpcrdma_rs_load_pool mr_wait || tap_diag "no trace of the burst"
	timeout -k 10 180 fio --name=pool --directory="$mnt3/load-v3" --rw=write --bs=1M --size=48M \
		--iodepth=48 --ioengine=libaio --direct=1 --output="$LOG_DIR/fio-pool.txt" \
		>/dev/null 2>>"$log" || tap_diag "the 48-deep burst's fio failed (see fio-pool.txt)"
	waits1=$(rs_field mr_waits sum)
	trace_complete || traced="(events lost)"
	[ "$traced" = "(events lost)" ] || traced=$(trace_events mr_wait | grep -c "^peer=$SERVER_IP4 xid=0x[0-9a-f]\{8\}$")
	all=$(trace_events mr_wait | wc -l)
	trace_stop
	tap_diag "Sends that waited for regions during a burst of 48 1 MiB writes: $((waits1 - waits0));" \
		"mr_wait events: $all, $traced of them naming the server"
	tap_check "$D_RS_MR_WAITS" mr_waits_traced "$((waits1 - waits0))" "$traced" "$all"
}

# mr_waits_traced WAITS TRACED ALL: Sends waited for regions, and the
# trace has one mr_wait event naming the server for each wait, and no
# other, all recorded.
mr_waits_traced() {
	[ "$1" -gt 0 ] && [ "$2" = "$1" ] && [ "$3" = "$2" ]
}

rs_report() { grep -E '^xprt|connected|mrs_free' "$xprts" 2>/dev/null | tr -s ' \n' ' '; }

# rs_mrs_free MIN: waits up to 30 s for at least MIN transports to the
# server, each connected with all its MRs free.
rs_mrs_free() {
	local i n c f
	for ((i = 0; i < 150; i++)); do
		read -r n c f < <(rs_transports)
		[ "${n:-0}" -ge "$1" ] && [ "$c" = "$n" ] && [ "$f" = "$n" ] && return 0
		sleep 0.2
	done
	tap_diag "transports to the server: ${n:-0} listed, ${c:-0} connected, ${f:-0} with all $POOL MRs free"
	tap_diag "$(rs_report)"
	return 1
}

# Those of earlier tests go once their destroy work has run (up to 30 s).
rs_settle() {
	local i n c f
	[ "$TRANSPORT" = rs ] || return 0
	for ((i = 0; i < 300; i++)); do
		read -r n c f < <(rs_transports)
		[ "${n:-0}" = 0 ] && return 0
		sleep 0.1
	done
	tap_diag "transports of earlier tests still listed: $(rs_report)"
}

# --- Load: two mounts, verified fio on both at once ---

raise_credits() {
	credits_raised=1
	server_run "echo 128 >/proc/sys/sunrpc/svc_rdma/max_requests &&
		[ \"\$(cat /proc/sys/sunrpc/svc_rdma/max_requests)\" = 128 ]"
}

mount_nconnect() {
	local rc=0
	mount_nconnect4 "$mnt42" || rc=1
	[ -z "$nconnect_n" ] || tap_diag "NFSv4.2 mount: $nconnect_n transports in mountstats"
	return "$rc"
}

# fio_jobs DIR SEQ-SIZE SEQ-DEPTH GLOBAL...: a job file of two verified
# jobs in DIR, libaio and O_DIRECT: one writing SEQ-SIZE sequentially in
# 1 MiB blocks SEQ-DEPTH deep, one writing 1 MiB at random in 4 KiB
# blocks 64 deep; GLOBAL lines are added to the global section.
fio_jobs() {
	local dir=$1 seq_size=$2 seq_depth=$3
	shift 3
	printf '%s\n' "[global]" "directory=$dir" ioengine=libaio direct=1 verify=crc32c \
		verify_state_save=0 "$@" \
		"" "[seq]" rw=write bs=1M "size=$seq_size" "iodepth=$seq_depth" \
		"" "[rand]" rw=randwrite bs=4k size=1M iodepth=64
}

# load_job DIR: the verified load on one mount, 8 processes: 4 writing
# 8 MiB each sequentially in 1 MiB blocks, 4 writing 1 MiB each at random
# in 4 KiB blocks, 64 deep; each then reads all it wrote back and checks
# it. (A sequential file of 8 blocks has 8 of them in flight at most: a
# depth of 64 there would only allocate 56 MiB more buffers per process.)
# The runtime is a bound only: a job cut short by it verifies nothing,
# which is checked.
load_job() {
	fio_jobs "$1" 8M 8 numjobs=4 verify_fatal=1 runtime=240
}

# start_fio NAME JOBFILE: fio in the background; both output formats in
# the log directory (terse version 3: field 5 error, 6 KiB read, that is
# verified, 47 KiB written).
start_fio() {
	timeout -k 10 300 fio --output-format=terse,normal --output="$LOG_DIR/fio-$1.txt" "$2" \
		>/dev/null 2>"$LOG_DIR/fio-$1.err" &
	fio_pids+=("$!")
}

# fio_load_ok NAME STATUS: fio exited 0, and all 8 of its jobs wrote their
# whole size without error and read all of it back verified.
fio_load_ok() {
	local out=$LOG_DIR/fio-$1.txt
	[ "$2" = 0 ] || tap_diag "fio $1 exited $2: $(head -3 "$LOG_DIR/fio-$1.err" | tr '\n' ' ')"
	[ -s "$out" ] || { tap_diag "fio $1 wrote no report"; return 1; }
	awk -F';' '
		$1 == 3 {
			n++
			want = ($3 == "seq") ? 8192 : 1024
			if ($5 != 0 || $47 != want || $6 != want) {
				bad++
				printf "# %s: error %s, wrote %s KiB and verified %s KiB of %s\n", $3, $5, $47, $6, want
			}
		}
		END {
			if (n != 8) printf "# %d jobs reported, not 8\n", n
			exit !(n == 8 && !bad)
		}' < <(fio_terse "$out") && [ "$2" = 0 ]
}

# More RPCs than slots: mountstats' bklog_u (field 10) adds up, at each
# transmission, how many RPCs wait in the backlog for a slot.
backlog_used() {
	local b
	b=$(mountstats_field "$mnt3" 10)
	tap_diag "NFSv3 transport: $(mountstats_field "$mnt3" 6) sends, backlog utilisation $b"
	[ "${b:-0}" -gt 0 ] 2>/dev/null
}

no_bad_replies() {
	local m n lines total=0
	for m in "$mnt42" "$mnt3"; do
		lines=$(mount_xprt_lines "$m")
		[ -n "$lines" ] || { tap_diag "no transports in mountstats for $m"; return 1; }
		# Field 20 after "xprt: rdma": bad_reply_count.
		n=$(awk '{ s += $22 } END { print s + 0 }' <<<"$lines")
		tap_diag "$m: $n bad replies"
		total=$((total + n))
	done
	[ "$total" = 0 ]
}

rs_five_connected() {
	local n c f
	read -r n c f < <(rs_transports)
	tap_diag "rpcrdma_rs transports to the server: ${n:-0} listed, ${c:-0} connected"
	[ "${n:-0}" -ge 5 ] && [ "$c" = "$n" ]
}

unmount_both() {
	local rc=0
	timeout -s KILL 120 umount "$mnt42" || rc=1
	timeout -s KILL 120 umount "$mnt3" || rc=1
	return "$rc"
}

rs_settle
tap_check "the server offers 128 credits to new connections" raise_credits
tap_check "NFSv4.2 mount over rdma with nconnect=4: 4 transports in mountstats" mount_nconnect 2>>"$log"
tap_check "NFSv3 mount over rdma" nfs_mount 3 "$mnt3" 2>>"$log"
D_LOAD42="NFSv4.2 nconnect=4 under load: 1 MiB sequential and 4 KiB random fio, 4 jobs each, written and verified"
D_LOAD3="NFSv3 under load at the same time: the same fio jobs, written and verified"
D_BACKLOG="NFSv3: more RPCs than its 128 slots, some waited in the backlog"
D_BAD="no bad replies on either mount"
D_LEAKS="kmemleak scan with both loaded mounts up, the I/O done: nothing unreferenced"
if mountpoint -q "$mnt42" && mountpoint -q "$mnt3"; then
	mkdir -p "$mnt42/load-v42" "$mnt3/load-v3"
	load_job "$mnt42/load-v42" >"$scratch/v42.fio"
	load_job "$mnt3/load-v3" >"$scratch/v3.fio"
	start_fio v42 "$scratch/v42.fio"
	pid42=$!
	start_fio v3 "$scratch/v3.fio"
	pid3=$!
	wait "$pid42"
	rc42=$?
	wait "$pid3"
	rc3=$?
	fio_pids=()
	tap_check "$D_LOAD42" fio_load_ok v42 "$rc42"
	tap_check "$D_LOAD3" fio_load_ok v3 "$rc3"
	tap_check "$D_BACKLOG" backlog_used
	tap_check "$D_BAD" no_bad_replies
	rs_check "$D_RS_CONNECTED" rs_five_connected
	rs_check "$D_RS_LOAD_MRS" rs_mrs_free 5
	if [ "$TRANSPORT" = rs ]; then rs_pool_ran_dry; else tap_skip "$D_RS_MR_WAITS" "$RS_WHY"; fi
	rm -rf "$mnt42/load-v42" "$mnt3/load-v3"
	tap_check "$D_LEAKS" kmemleak_clean "$LOG_DIR/kmemleak.txt"
else
	not_run "not mounted" "$D_LOAD42" "$D_LOAD3" "$D_BACKLOG" "$D_BAD"
	rs_not_run "not mounted" "$D_RS_CONNECTED" "$D_RS_LOAD_MRS" "$D_RS_MR_WAITS"
	not_run "not mounted" "$D_LEAKS"
fi
tap_check "both loaded mounts unmount" unmount_both 2>>"$log"
server_run "echo 64 >/proc/sys/sunrpc/svc_rdma/max_requests" && credits_raised=0

# --- The NFSv4.1 backchannel: delegations recalled ---

deleg_dir=/srv/export/load-deleg
seq_sum=$(expected "$(seq 1 2000 | sha256sum | cut -d' ' -f1)")
changed_sum=$(expected "$({ seq 1 2000; echo server-write; } | sha256sum | cut -d' ' -f1)")
states_seq=0
states_file=""
deleg_file=""

# server_states: the server's NFSv4 state of every client, in a new file
# (states_file) in the log directory.
server_states() {
	states_seq=$((states_seq + 1))
	states_file=$LOG_DIR/states-$states_seq.txt
	server_run "cat /proc/fs/nfsd/clients/*/states >'$states_file' 2>&1; true"
}

# deleg_listed NAME: 0 when the server lists a read delegation of the
# file NAME (nfs4_show_deleg: "- 0x...: { type: deleg, access: r,
# superblock: \"...\", filename: \"load-deleg/NAME\" }"), 1 when not, 2
# when the server could not be asked.
deleg_listed() {
	server_states || return 2
	grep -qE "type: deleg, access: r, .*filename: \"[^\"]*/$1\"" "$states_file"
}

# deleg_granted ROUND: opens for reading, on fd 3, a file the server made
# (made on the client, the file could come with a write delegation from
# its creation, and nfsd's file cache would still hold it open for
# writing, which rules a read delegation out), checks what it reads, and
# finds the read delegation in the server's states. Up to three files,
# 2 s apart: after a reconnect the callback channel may still be coming up.
deleg_granted() {
	local round=$1 try name got
	server_run "mkdir -p $deleg_dir && for t in 1 2 3; do seq 1 2000 >$deleg_dir/$round-\$t; done" || return 1
	for try in 1 2 3; do
		name=$round-$try
		if ! { exec 3<"$mnt41/load-deleg/$name"; } 2>>"$log"; then
			tap_diag "cannot open $name"
			return 1
		fi
		got=$(sha256sum <&3 | cut -d' ' -f1)
		if [ "$got" != "$seq_sum" ]; then
			tap_diag "$name read back wrong"
			return 1
		fi
		if deleg_listed "$name"; then
			deleg_file=$name
			return 0
		fi
		tap_diag "no read delegation of $name in the server's states (${states_file##*/})"
		exec 3<&-
		[ "$try" = 3 ] || sleep 2
	done
	sed -n '1,20s/^/# /p' "$states_file"
	return 1
}

# recall_timed: a write open of the delegated file on the server, timed
# there: it waits until the delegation is returned.
recall_timed() {
	local ms f=$LOG_DIR/recall-$deleg_file.ms
	[ -n "$deleg_file" ] || { tap_diag "no delegation to recall"; return 1; }
	server_run "s=\$(date +%s%N); echo server-write >>$deleg_dir/$deleg_file || exit 1
		e=\$(date +%s%N); echo \$(((e - s) / 1000000)) >'$f'" || return 1
	ms=$(cat "$f" 2>/dev/null)
	tap_diag "the server's write open of $deleg_file took $ms ms"
	[ "$ms" -lt 8000 ] 2>/dev/null
}

# deleg_returned: the delegation leaves the server's states (within 5 s)
# while the file is still open (the client keeps delegations past a
# close: only the recall can have returned it); then a new open reads the
# server's write.
deleg_returned() {
	local name=$deleg_file i listed got
	deleg_file=""
	if [ -z "$name" ]; then
		exec 3<&-
		tap_diag "no delegation was granted"
		return 1
	fi
	for ((i = 0; i < 10; i++)); do
		deleg_listed "$name"
		listed=$?
		[ "$listed" = 0 ] || break
		sleep 0.5
	done
	exec 3<&-
	case $listed in
	0) tap_diag "still listed: $(grep "/$name\"" "$states_file" | tr '\n' ' ')"; return 1 ;;
	2) tap_diag "could not read the server's states"; return 1 ;;
	esac
	drop_caches
	got=$(sha256sum <"$mnt41/load-deleg/$name" | cut -d' ' -f1)
	[ "$got" = "$changed_sum" ] || { tap_diag "$name after the recall: not the server's change"; return 1; }
}

# cb_traced: the recall came over the backchannel and was answered, and
# both were traced: a cb_call event naming the server, and a cb_reply with
# its XID.
cb_traced() {
	local call xid
	call=$(trace_events cb_call | head -1)
	tap_diag "cb_call: ${call:-none}; cb_reply: $(trace_events cb_reply | head -1)"
	[[ $call =~ ^peer=$SERVER_IP4\ xid=(0x[0-9a-f]{8})\ len=[1-9][0-9]*$ ]] || return 1
	xid=${BASH_REMATCH[1]}
	trace_events cb_reply | grep -qE "^peer=$SERVER_IP4 xid=$xid len=[1-9][0-9]*$"
}

connects41() { mountstats_field "$mnt41" 3; }

# reconnect: a disconnect injected, and the mount's connection count rises
# (within 60 s; re-armed every 15 s should another transport have taken
# it). O_DIRECT reads of a file the server made are the traffic: they go
# to the server whatever the client caches or holds delegated.
reconnect() {
	local before after armed deadline=$((SECONDS + 60))
	[ -d "$fail_sunrpc" ] || { tap_diag "no $fail_sunrpc (CONFIG_FAIL_SUNRPC)"; return 1; }
	server_run "mkdir -p $deleg_dir && echo poke >$deleg_dir/poke" || return 1
	before=$(connects41)
	arm_disconnect || return 1
	armed=$SECONDS
	while ((SECONDS < deadline)); do
		timeout -s KILL 30 dd if="$mnt41/load-deleg/poke" of=/dev/null bs=4k iflag=direct \
			status=none 2>>"$log"
		after=$(connects41)
		[ "${after:-0}" -gt "${before:-0}" ] 2>/dev/null && break
		if ((SECONDS - armed >= 15)) && [ "$(cat "$fail_sunrpc/times")" = 0 ]; then
			arm_disconnect || break
			armed=$SECONDS
		fi
		sleep 1
	done
	echo 0 >"$fail_sunrpc/times"
	tap_diag "NFSv4.1 connections: $before before, $after after"
	[ "${after:-0}" -gt "${before:-0}" ] 2>/dev/null
}

D_GRANT="read delegation granted: the server's states list it for the file held open"
D_RECALL="the server's write open recalls it within 8 s (CB_RECALL answered over the backchannel)"
D_RETURNED="the delegation was returned: gone from the server's states, the client reads the server's change"
D_RECONNECT="a disconnect injected on the NFSv4.1 mount: the transport reconnected"
D_GRANT2="after the reconnect: a read delegation granted again"
D_RECALL2="after the reconnect: the server's write open recalls it within 8 s"
D_RETURNED2="after the reconnect: the delegation was returned, the client reads the server's change"
if tap_check "NFSv4.1 mount over rdma" nfs_mount 4.1 "$mnt41" 2>>"$log"; then
	tap_check "$D_GRANT" deleg_granted r1
	[ "$TRANSPORT" = rs ] && { trace_start rpcrdma_rs_load_cb cb_call cb_reply || tap_diag "no trace of the recall"; }
	tap_check "$D_RECALL" recall_timed
	rs_check "$D_RS_CB_TRACED" cb_traced
	[ "$TRANSPORT" = rs ] && trace_stop
	tap_check "$D_RETURNED" deleg_returned
	tap_check "$D_RECONNECT" reconnect
	tap_check "$D_GRANT2" deleg_granted r2
	tap_check "$D_RECALL2" recall_timed
	tap_check "$D_RETURNED2" deleg_returned
	timeout -s KILL 120 umount "$mnt41" 2>>"$log" || tap_diag "the NFSv4.1 mount did not unmount"
else
	not_run "not mounted" "$D_GRANT" "$D_RECALL"
	rs_not_run "not mounted" "$D_RS_CB_TRACED"
	not_run "not mounted" "$D_RETURNED" "$D_RECONNECT" "$D_GRANT2" "$D_RECALL2" "$D_RETURNED2"
fi
server_run "rm -rf $deleg_dir"

# --- Failing allocations under verified I/O ---

# module_range: "START END" of the transport module's memory, from
# /proc/modules (its base address and size), in hex (bash arithmetic is
# 64-bit two's complement, which printf gives back as the address).
module_range() {
	local name size _refs _deps _state base
	while read -r name size _refs _deps _state base _; do
		[ "$name" = "$mod" ] || continue
		[[ $base =~ ^0x[0-9a-f]+$ ]] && ((base != 0)) || return 1
		printf '0x%x 0x%x\n' "$base" "$((base + size))"
		return 0
	done </proc/modules
	return 1
}

# fault_on DIR: from now on one in FAULT_INTERVAL of the allocations made
# with the transport module's code on the stack (require-start/require-end: its send path,
# completion handlers, connection set-up, and what they call into, such
# as the RDMA driver's posting) fail, silently. Failing allocations
# everywhere would starve ib_mad's receive queue on the management QP
# (it refills it with GFP_ATOMIC allocations and stops at the first
# failure): no RDMA CM connection could be made again, with either
# transport. The kernel log is marked first: failed page allocations are
# reported there.
fault_on() {
	local d=$1 start end
	[ -d "$d" ] || { tap_diag "no $d"; return 1; }
	read -r start end < <(module_range)
	[ -n "$end" ] || { tap_diag "no address range for $mod in /proc/modules"; return 1; }
	echo 0 >"$d/probability" && echo "$FAULT_INTERVAL" >"$d/interval" && echo "$FAULT_BUDGET" >"$d/times" &&
		echo 0 >"$d/space" && echo 0 >"$d/verbose" && echo N >"$d/task-filter" &&
		echo N >"$d/ignore-gfp-wait" && echo 32 >"$d/stacktrace-depth" &&
		echo "$start" >"$d/require-start" && echo "$end" >"$d/require-end" &&
		echo 0 >"$d/reject-start" && echo 0 >"$d/reject-end" || return 1
	case "$d" in
	*/failslab) echo N >"$d/cache-filter" || return 1 ;;
	*/fail_page_alloc) { echo N >"$d/ignore-gfp-highmem" && echo 0 >"$d/min-order"; } || return 1 ;;
	esac
	echo "rpcrdma-rs-selftest: fault injection begins" >/dev/kmsg
	injecting=$d
	# Every FAULT_INTERVAL-th, not 5% at random: a slow guest makes few
	# such allocations in the window, and at random none might fail.
	echo 100 >"$d/probability"
}

fault_off() {
	echo 0 >"$1/probability"
	echo "rpcrdma-rs-selftest: fault injection ends" >/dev/kmsg
	injecting=""
}

# inject_job DIR: verified writes for as long as the injection may last
# and 5 s more (fio starts before the injection and is stopped after it),
# over and over (each
# loop writes, then verifies); I/O errors do not stop it, and a block
# whose write failed is not verified (fio drops it from its list), so any
# verification failure is wrong data read back.
inject_job() {
	fio_jobs "$1" 4M 16 verify_fatal=0 continue_on_error=all \
		"runtime=$((2 * INJECT_SECONDS + 5))" loops=1000
}

# pause SECONDS: sleeps without starting a program (a read that times
# out): the guest's programs come from a 9p mount, which the injected
# failures may slow down or fail.
rm -f "$scratch/pause"
mkfifo "$scratch/pause"
exec {pause_fd}<>"$scratch/pause"
rm -f "$scratch/pause"
pause() { read -r -t "$1" -u "$pause_fd" _; }

# inject NAME: NAME's injection on for INJECT_SECONDS while verified fio
# runs on the hard mount (up to twice that until an allocation has
# failed), then off; fio runs 5 s more, is stopped (SIGINT: it ends its
# jobs and reports) and gets three minutes to end. Reports what fio saw;
# succeeds when allocations did fail. (No program starts and nothing is
# written to the run directory, on 9p, while injecting.)
inject() {
	local name=$1 dir=/sys/kernel/debug/$1 pid rc injected w v e
	mkdir -p "$mntf/$name"
	inject_job "$mntf/$name" >"$scratch/$name.fio"
	rm -f "$scratch/fio-$name.txt" "$scratch/fio-$name.err"
	timeout -s KILL $((2 * INJECT_SECONDS + 180)) fio --output-format=terse,normal \
		--output="$scratch/fio-$name.txt" "$scratch/$name.fio" >/dev/null 2>"$scratch/fio-$name.err" &
	pid=$!
	fio_pids=("$pid")
	pause 2 # for fio to start
	if ! fault_on "$dir"; then
		kill -TERM "$pid"
		wait "$pid" 2>/dev/null
		fio_pids=()
		return 1
	fi
	if [ "$name" = fail_page_alloc ]; then
		pa_connects0=$(mountstats_field "$mntf" 3)
		arm_disconnect || tap_diag "$name: no disconnect could be armed ($fail_sunrpc)"
	fi
	pause "$INJECT_SECONDS"
	local left times
	for ((left = INJECT_SECONDS; left > 0; left--)); do
		read -r times <"$dir/times"
		[ "$times" = "$FAULT_BUDGET" ] || break
		pause 1
	done
	fault_off "$dir"
	read -r times <"$dir/times"
	injected=$((FAULT_BUDGET - times))
	if [ "$name" = fail_page_alloc ] && [ -e "$fail_sunrpc/times" ]; then
		# 0 once the armed disconnect was injected.
		read -r pa_disc_left <"$fail_sunrpc/times"
		echo 0 >"$fail_sunrpc/times"
	fi
	pause 5
	kill -INT "$pid" 2>/dev/null
	wait "$pid"
	rc=$?
	fio_pids=()
	if [ "$name" = fail_page_alloc ]; then
		pa_connects1=$(mountstats_field "$mntf" 3)
		tap_diag "$name: connections ${pa_connects0:-?} before, ${pa_connects1:-?} after;" \
			"the disconnect armed: ${pa_disc_left:-?} left"
	fi
	cp "$scratch/fio-$name.txt" "$scratch/fio-$name.err" "$LOG_DIR/" 2>/dev/null
	[ "$rc" = 137 ] && tap_diag "$name: fio had not ended 180 s after the injection: killed"
	read -r w v < <(fio_terse "$scratch/fio-$name.txt" 2>/dev/null |
		awk -F';' '$1 == 3 { w += $47; v += $6 } END { print w + 0, v + 0 }')
	e=$(awk '/errors *: total=/ { sub(/.*total=/, ""); s += $0 + 0 } END { print s + 0 }' \
		"$scratch/fio-$name.txt" 2>/dev/null)
	tap_diag "$name: $injected allocations failed in $((INJECT_SECONDS + INJECT_SECONDS - left)) s; fio exit $rc," \
		"${w:-0} KiB written, ${v:-0} KiB verified, ${e:-0} I/O errors"
	[ "$injected" -gt 0 ] 2>/dev/null
}

# What inject saw of the disconnect it arms as fail_page_alloc begins:
# the mount's connection count before it and once fio had ended (fio's
# I/O in flight then had to wait for a connection), and what was left of
# fail_sunrpc's times (0 once the disconnect was injected).
pa_connects0="" pa_connects1="" pa_disc_left=""

# reconnected: the disconnect was injected, and the transport connected
# again after it although the reconnect's page allocations were failing
# (the connection count grew).
reconnected() {
	[ "$pa_disc_left" = 0 ] ||
		{ tap_diag "the armed disconnect was not injected (fail_sunrpc times ${pa_disc_left:-?})"; return 1; }
	[ "${pa_connects1:-0}" -gt "${pa_connects0:-0}" ] 2>/dev/null && return 0
	tap_diag "connections ${pa_connects0:-?} before the disconnect, ${pa_connects1:-?} after: no reconnect"
	return 1
}

# no_io_errors NAME: fio reported each of its jobs (a terse line each),
# each with its error count (printed with continue_on_error), and all
# counts are 0. On a hard mount an RPC the transport cannot send yet, or
# connect for, is retried (the transport maps such failures to errnos
# sunrpc retries, as C does), never failed with EIO.
no_io_errors() {
	local out=$scratch/fio-$1.txt jobs lines errs
	[ -s "$out" ] || { tap_diag "$1: fio wrote no report"; return 1; }
	read -r jobs lines errs < <(awk -F';' '$1 == 3 { j++ }
		/errors *: total=/ { n++; sub(/.*total=/, ""); e += $0 + 0 }
		END { print j + 0, n + 0, e + 0 }' < <(fio_terse "$out"))
	[ "${jobs:-0}" -ge 2 ] && [ "$lines" = "$jobs" ] && [ "$errs" = 0 ] && return 0
	tap_diag "$1: ${jobs:-0} jobs reported, ${lines:-0} error counts, ${errs:-?} I/O errors:" \
		"$(grep -m2 'errors *: total=' "$out" | tr -s ' ' | tr '\n' ' ')"
	return 1
}

# no_wrong_data NAME: fio reported, and no verification failed.
no_wrong_data() {
	local n
	[ -s "$scratch/fio-$1.txt" ] || { tap_diag "$1: fio wrote no report"; return 1; }
	n=$(cat "$scratch/fio-$1.err" "$scratch/fio-$1.txt" | grep -ciE 'verify: bad|verify failed')
	[ "$n" = 0 ] && return 0
	tap_diag "$1: $n verification failures"
	grep -iE 'verify: bad|verify failed' "$scratch/fio-$1.err" | head -3 | sed 's/^/# /'
	return 1
}

# sum_of FILE: the SHA-256 of FILE, read with O_DIRECT (from the server,
# not the page cache) within two minutes.
sum_of() {
	timeout -s KILL 120 dd if="$1" bs=1M iflag=direct status=none 2>>"$log" | sha256sum | cut -d' ' -f1
}

before_intact() {
	local got
	got=$(sum_of "$mntf/before.bin")
	[ "$got" = "$before_sum" ] || { tap_diag "before.bin: read $got"; return 1; }
}

# new_file_intact NAME: 8 MiB written (O_DIRECT) and read back.
new_file_intact() {
	local sum got
	head -c 8M /dev/urandom >"$scratch/after.bin"
	sum=$(expected "$(sha256sum <"$scratch/after.bin" | cut -d' ' -f1)")
	timeout -s KILL 120 dd if="$scratch/after.bin" of="$mntf/after-$1.bin" bs=1M oflag=direct \
		status=none 2>>"$log" || { tap_diag "writing after-$1.bin failed"; return 1; }
	got=$(sum_of "$mntf/after-$1.bin")
	rm -f "$mntf/after-$1.bin"
	[ "$got" = "$sum" ] || { tap_diag "after-$1.bin: read $got, wrote $sum"; return 1; }
}

write_before() {
	# 256 KiB payloads, not the server's 1 MiB: four times the RPCs, so
	# that the transport's paths run often enough in the injection's
	# 20 s for some of their allocations to fail (with 1 MiB, one run saw
	# none fail).
	NFS_MOUNT_OPTS=rsize=262144,wsize=262144 nfs_mount 3 "$mntf" || return 1
	head -c 4M /dev/urandom >"$scratch/before.bin"
	before_sum=$(expected "$(sha256sum <"$scratch/before.bin" | cut -d' ' -f1)")
	timeout -s KILL 120 dd if="$scratch/before.bin" of="$mntf/before.bin" bs=1M oflag=direct status=none
}

# (The mount is hard: an RPC that cannot get through is retried, never
# failed. Under failslab fio may still see errors, from allocations that
# failed above the transport; under fail_page_alloc, where the failures
# are the reconnect's, it must see none.)
D_PA_RECONNECT="the disconnect injected as page allocations began failing was followed by a reconnect (connection count grew)"
D_PA_NO_ERRORS="fio on the hard mount saw no I/O error"
if tap_check "NFSv3 hard mount over rdma, 4 MiB written before injection" write_before 2>>"$log"; then
	fault_ok=1
else
	fault_ok=0
fi
for name in failslab fail_page_alloc; do
	d1="$name: allocations failed during verified fio on the mount"
	d2="$name: fio's verification found no wrong data"
	d3="$name: afterwards the file written before injection reads back intact"
	d4="$name: afterwards a new 8 MiB file reads back intact"
	d5="$name: $D_RS_FAULT_MRS"
	d6="$name: $D_PA_RECONNECT"
	d7="$name: $D_PA_NO_ERRORS"
	if [ "$fault_ok" = 0 ]; then
		not_run "not mounted" "$d1" "$d2" "$d3" "$d4"
		[ "$name" = fail_page_alloc ] && not_run "not mounted" "$d6" "$d7"
		rs_not_run "not mounted" "$d5"
		continue
	fi
	tap_check "$d1" inject "$name"
	tap_check "$d2" no_wrong_data "$name"
	if [ "$name" = fail_page_alloc ]; then
		tap_check "$d6" reconnected
		tap_check "$d7" no_io_errors "$name"
	fi
	tap_check "$d3" before_intact
	tap_check "$d4" new_file_intact "$name"
	rs_check "$d5" rs_mrs_free 1
	rm -rf "${mntf:?}/$name"
done
# failed_connects: reconnects that fail for want of memory are retried,
# never passed up: the test hook fail_connects makes the next two
# connection attempts fail with ENOMEM before they begin (as one whose
# allocations failed), a disconnect is injected on the hard mount, and
# 4 MiB written and read back with O_DIRECT must come through right, both
# attempts used up and the connection count grown. Deterministic, where
# fail_page_alloc leaves to chance whether a reconnect's allocation fails.
# The trace shows the backoff: the connect op's events (op_connect) with
# the delay sunrpc asked for, no delay for the first two attempts (the
# injected loss keeps none, and the first failure has earned none yet),
# then one (the third, after two failures), and the one connection made
# (connect, result=0) after it.
failed_connects() {
	local p=/sys/module/rpcrdma_rs/parameters/fail_connects before after left sum got rc=0 seq
	[ -w "$p" ] || { tap_diag "no $p (the test-hook build has it)"; return 1; }
	before=$(mountstats_field "$mntf" 3)
	head -c 4M /dev/urandom >"$scratch/fc.bin"
	sum=$(expected "$(sha256sum <"$scratch/fc.bin" | cut -d' ' -f1)")
	trace_start rpcrdma_rs_load_fc op_connect connect || { tap_diag "no trace of the reconnects"; rc=1; }
	echo 2 >"$p" && arm_disconnect || { echo 0 >"$p"; trace_stop; tap_diag "could not arm the hook or the disconnect"; return 1; }
	if ! timeout -s KILL 180 dd if="$scratch/fc.bin" of="$mntf/fc.bin" bs=1M oflag=direct \
		status=none 2>>"$log"; then
		tap_diag "writing 4 MiB on the hard mount failed: $(tail -1 "$log")"
		rc=1
	fi
	got=$(sum_of "$mntf/fc.bin")
	read -r left <"$p"
	echo 0 >"$p"
	echo 0 >"$fail_sunrpc/times"
	rm -f "$mntf/fc.bin"
	after=$(mountstats_field "$mntf" 3)
	trace_complete || rc=1
	# Each event as "O<delay_ms>" or "C<result>", in order, to the server.
	seq=$(sed -n -e "s/^.* rpcrdma_rs_op_connect: peer=$SERVER_IP4 delay_ms=\([0-9]*\)$/O\1/p" \
		-e "s/^.* rpcrdma_rs_connect: peer=$SERVER_IP4 device=[^ ]* result=\(-\{0,1\}[0-9]*\) .*$/C\1/p" \
		"$trace_inst/trace" 2>/dev/null | tr '\n' ' ')
	trace_stop
	tap_diag "failed connects: connections $before before, $after after; attempts left to fail: $left; traced: $seq"
	[[ $seq =~ ^O0\ O0\ O[1-9][0-9]*\ C0\ $ ]] ||
		{ tap_diag "the trace is not two attempts without delay, one after a delay, one connection made"; rc=1; }
	[ "$left" = 0 ] || { tap_diag "the attempts to fail were not all made"; rc=1; }
	[ "${after:-0}" -gt "${before:-0}" ] 2>/dev/null || { tap_diag "no reconnect"; rc=1; }
	[ "$got" = "$sum" ] || { tap_diag "fc.bin: read $got, wrote $sum"; rc=1; }
	return $rc
}
D_FAILED_CONNECTS="two reconnects failed for want of memory (fail_connects), the backoff traced: the hard mount's 4 MiB written and read back right"
if [ "$fault_ok" = 0 ]; then
	not_run "not mounted" "$D_FAILED_CONNECTS"
elif [ "$TRANSPORT" != rs ]; then
	tap_skip "$D_FAILED_CONNECTS" "fail_connects is a test hook of rpcrdma_rs"
else
	tap_check "$D_FAILED_CONNECTS" failed_connects
fi
[ "$fault_ok" = 1 ] && { timeout -s KILL 120 umount "$mntf" || tap_diag "the fault mount did not unmount"; } 2>>"$log"

# --- Module lifetime ---

head -c 65536 /dev/urandom >"$scratch/64k.bin"
sum64=$(expected "$(sha256sum <"$scratch/64k.bin" | cut -d' ' -f1)")

# check64 MNT: 64 KiB written and read back with O_DIRECT, compared.
check64() {
	local got
	timeout -s KILL 60 dd if="$scratch/64k.bin" of="$1/cycle.bin" bs=64k oflag=direct status=none \
		2>>"$log" || return 1
	got=$(timeout -s KILL 60 dd if="$1/cycle.bin" bs=64k iflag=direct status=none 2>>"$log" |
		sha256sum | cut -d' ' -f1)
	rm -f "$1/cycle.bin"
	[ "$got" = "$sum64" ]
}

# The mount holds the module (each transport holds its class's module):
# rmmod must refuse it as in use, and nothing changes. kmod's rmmod reads
# the module's reference count first and, when it is not 0, says "Module
# NAME is in use" and fails with EBUSY without asking the kernel; any
# other failure (not loaded, not permitted, a bad name) proves nothing.
module_busy() {
	local out state
	if out=$(rmmod "$mod" 2>&1); then
		printf '%s\n' "$out" >>"$log"
		tap_diag "rmmod $mod succeeded under a mount"
		return 1
	fi
	printf '%s\n' "$out" >>"$log"
	if [[ $out != *"Module $mod is in use"* ]]; then
		tap_diag "rmmod $mod failed, but not as in use (EBUSY): ${out//$'\n'/ }"
		return 1
	fi
	state=$(cat "/sys/module/$mod/initstate" 2>/dev/null)
	[ "$state" = live ] || { tap_diag "$mod not live after the refused rmmod: initstate '${state:-none}'"; return 1; }
	rdma_xprt_registered || { tap_diag "no rdma transport class after the refused rmmod"; return 1; }
}

module_rounds() {
	local round start=$SECONDS
	for ((round = 1; round <= ROUNDS; round++)); do
		if ((SECONDS - start > ROUNDS_SECONDS)); then
			tap_diag "round $round: over the ${ROUNDS_SECONDS} s allowed (NFS_LOAD_ROUNDS_SECONDS)"
			return 1
		fi
		nfs_mount 3 "$mntm" 2>>"$log" || { tap_diag "round $round: mount failed"; return 1; }
		check64 "$mntm" || { tap_diag "round $round: 64 KiB did not read back intact"; return 1; }
		timeout -s KILL 60 umount "$mntm" 2>>"$log" || { tap_diag "round $round: unmount failed"; return 1; }
		unload_transport 2>>"$log" || { tap_diag "round $round: $mod did not unload"; return 1; }
		if [ -e "/sys/module/$mod" ]; then
			tap_diag "round $round: /sys/module/$mod still there after rmmod"
			return 1
		fi
		load_transport >>"$log" 2>&1 || { tap_diag "round $round: $mod did not load"; return 1; }
		rdma_xprt_registered || { tap_diag "round $round: no rdma transport class after loading $mod"; return 1; }
	done
	tap_diag "$ROUNDS rounds in $((SECONDS - start)) s"
}

D_BUSY="rmmod $mod while mounted is refused as in use (EBUSY), the module stays loaded"
D_STILL="the mount works after the refused rmmod: 64 KiB read back intact"
if tap_check "NFSv3 mount over rdma for the unload tests" nfs_mount 3 "$mntm" 2>>"$log"; then
	tap_check "$D_BUSY" module_busy
	tap_check "$D_STILL" check64 "$mntm"
	timeout -s KILL 60 umount "$mntm" 2>>"$log" || tap_diag "the mount did not unmount"
else
	not_run "not mounted" "$D_BUSY" "$D_STILL"
fi
[ "$TRANSPORT" = c ] && [ -z "${NFS_LOAD_ROUNDS:-}" ] &&
	tap_diag "the C reference runs 10 unload rounds, rpcrdma_rs 50: CI's time"
tap_check "$ROUNDS rounds of NFSv3 mount, 64 KiB checked, unmount, unload, load" module_rounds
tap_exit
