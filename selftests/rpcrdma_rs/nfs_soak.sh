#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A soak: SOAK_MINUTES minutes (default 1, so one round) of rounds of
# mixed, verified I/O, each round with a reconnect. Not one of the
# default tests: scripts/test.sh --soak MINUTES runs it alone, with the
# time limits raised to match (see Documentation/testing.rst).
#
# Each round mounts the server twice, NFSv4.2 with nconnect=4 and NFSv3,
# and runs on both at once:
# - verified fio, four jobs per mount: 1 MiB sequential with libaio and
#   O_DIRECT 16 deep (16 MiB) and buffered (8 MiB), 4 KiB random with
#   libaio and O_DIRECT 64 deep (1 MiB) and buffered (512 KiB); each job
#   writes, then reads everything back (fio syncs and drops the file's
#   cached pages first) and checks it;
# - a metadata workload: 160 small files in 8 directories copied in,
#   listed (every name, nothing else) and checked by SHA-256 after the
#   page cache is dropped, checked again in the server guest, removed.
# Once both mounts have written 2 MiB to the server, one reconnect is
# forced: odd rounds have sunrpc inject 4 disconnects (fail_sunrpc, as
# nfs_teardown.sh does), even rounds restart nfsd in the server guest.
# A round passes when the reconnect was forced so, under running fio,
# every fio job wrote and verified all its data without error, every
# file checked out on both ends and was removed, the mounts reconnected
# (after an nfsd restart, each of them), no I/O error
# appeared (the mounts are hard), no reply was bad, with rpcrdma_rs its
# report listed exactly the mounts' five transports, all connected and
# each with all its MRs back, and both mounts unmounted.
#
# One TAP case per round, then three: fresh mounts work after the rounds,
# a kmemleak scan with them mounted finds nothing, and the soak ran its
# whole time (it stops after three failed rounds in a row). The plan comes
# last: how many rounds fit is known only then. "# soak:" lines sum it up.
# Everything each round did is in nfs_soak/round-N/ in the run directory.
# shellcheck disable=SC2317 # cleanup runs from the EXIT trap
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

require_rdma_xprt "nfs soak"

MINUTES=${SOAK_MINUTES:-1}
if ! [[ $MINUTES =~ ^[1-9][0-9]*$ ]]; then
	tap_plan 1
	tap_not_ok "SOAK_MINUTES is a whole number of minutes, not '$MINUTES'"
	exit 1
fi
ktap_print_header

# What each fio job writes and reads back, in KiB.
SEQ_DIRECT_KIB=16384
SEQ_BUFFERED_KIB=8192
RAND_DIRECT_KIB=1024
RAND_BUFFERED_KIB=512
# Small files per mount and round.
FILES=160
# The memory regions of one rpcrdma_rs connection.
POOL=256
# The transports a round's mounts make: four for the NFSv4.2 mount
# (nconnect=4, which mount_v42 checks), one for the NFSv3 mount.
XPRTS=5
# Disconnects injected in a round, one every INJECT_INTERVAL transmissions.
INJECTIONS=4
INJECT_INTERVAL=40

LOG_DIR=$RUN_DIR/nfs_soak
fail_sunrpc=/sys/kernel/debug/fail_sunrpc
xprts=/sys/kernel/debug/rpcrdma_rs/xprts
scratch=/mnt/scratch-soak
mnt42=/mnt/nfs-soak-42
mnt3=/mnt/nfs-soak-3
mkdir -p "$LOG_DIR" "$scratch"
mountpoint -q "$scratch" || mount -t tmpfs -o size=64m tmpfs "$scratch"
[ "${BREAK_DATA_CHECK:-0}" = 1 ] && tap_diag "BREAK_DATA_CHECK=1: every expected checksum is wrong"
# A round that starts just before the time is up, and the final checks,
# take several minutes more.
if [ "${TEST_TIMEOUT:-1200}" -lt $((MINUTES * 60 + 480)) ]; then
	tap_diag "TEST_TIMEOUT ${TEST_TIMEOUT:-1200} s leaves little room after $MINUTES minutes: the test may be killed"
fi

bg_pids=()
# Whatever happens, nothing is left behind: no injection, no workload,
# no mount.
cleanup() {
	local p m
	[ -d "$fail_sunrpc" ] && echo 0 >"$fail_sunrpc/times"
	for p in "${bg_pids[@]}"; do
		kill -TERM "$p" && wait "$p"
	done
	for m in "$mnt42" "$mnt3"; do
		mounted "$m" || continue
		timeout -s KILL 60 umount "$m" || umount -f -l "$m"
	done
} >>"$LOG_DIR/tools.log" 2>&1
trap cleanup EXIT
trap 'exit 143' TERM INT

# problem TEXT: the round fails, saying why.
problem() {
	why+=("$*")
	tap_diag "round $round: $*"
}

mount_v42() {
	mount_nconnect4 "$mnt42" && return 0
	[ -z "$nconnect_n" ] ||
		tap_diag "round $round: NFSv4.2 mount with $nconnect_n transports, not 4"
	return 1
}

unmount_all() {
	local m rc=0
	for m in "$mnt42" "$mnt3"; do
		mounted "$m" || continue
		if ! timeout -s KILL 120 umount "$m" 2>>"$rdir/tools.log"; then
			umount -f -l "$m" 2>>"$rdir/tools.log"
			rc=1
		fi
	done
	return "$rc"
}

# reconnects MNT: the connections the mount's transports made beyond
# their first (connect_count, field 3 of each xprt line; nconnect has
# several). Counting per transport keeps nconnect's later first
# connections out.
reconnects() {
	mount_xprt_lines "$1" | awk '{ n++; if ($5 > 1) r += $5 - 1 } END { if (!n) exit 1; print r + 0 }'
}

# bad_replies MNT: bad_reply_count (field 20) over the mount's transports.
bad_replies() {
	mount_xprt_lines "$1" | awk '{ n++; s += $22 } END { if (!n) exit 1; print s + 0 }'
}

fio_jobfile() { # DIR
	printf '%s\n' "[global]" "directory=$1" verify=crc32c verify_fatal=1 verify_state_save=0 \
		runtime=480 \
		"" "[seq-direct]" ioengine=libaio direct=1 rw=write bs=1M "size=${SEQ_DIRECT_KIB}k" iodepth=16 \
		"" "[rand-direct]" ioengine=libaio direct=1 rw=randwrite bs=4k "size=${RAND_DIRECT_KIB}k" iodepth=64 \
		"" "[seq-buffered]" ioengine=psync direct=0 rw=write bs=1M "size=${SEQ_BUFFERED_KIB}k" \
		"" "[rand-buffered]" ioengine=psync direct=0 rw=randwrite bs=4k "size=${RAND_BUFFERED_KIB}k"
}
# (libaio would be synchronous on buffered files anyway; the runtime is a
# bound only: a job cut short by it has not verified all, which is checked.)

start_fio() { # NAME JOBFILE
	timeout -k 10 600 fio --output-format=terse,normal --output="$rdir/fio-$1.txt" "$2" \
		>/dev/null 2>"$rdir/fio-$1.err" &
}

# fio_verified NAME STATUS: fio exited 0, and each of its four jobs wrote
# all its data without error and read all of it back verified (terse
# version 3: field 3 job, 5 error, 6 KiB read, 47 KiB written); adds the
# KiB verified to verified_kib.
fio_verified() {
	local out=$rdir/fio-$1.txt kib
	[ "$2" = 0 ] || tap_diag "round $round: fio $1 exited $2: $(head -3 "$rdir/fio-$1.err" | tr '\n' ' ')"
	[ -s "$out" ] || { tap_diag "round $round: fio $1 wrote no report"; return 1; }
	awk -F';' -v name="$1" -v round="$round" -v kibfile="$rdir/fio-$1.kib" \
		-v sd="$SEQ_DIRECT_KIB" -v sb="$SEQ_BUFFERED_KIB" -v rd="$RAND_DIRECT_KIB" -v rb="$RAND_BUFFERED_KIB" '
		BEGIN { want["seq-direct"] = sd; want["seq-buffered"] = sb; want["rand-direct"] = rd; want["rand-buffered"] = rb }
		$1 == 3 {
			n++
			v += $6
			if (!($3 in want) || $5 != 0 || $47 != want[$3] || $6 != want[$3]) {
				bad++
				printf "# round %d: fio %s, job %s: error %s, wrote %s KiB and verified %s KiB of %s\n",
					round, name, $3, $5, $47, $6, want[$3]
			}
		}
		END {
			if (n != 4) printf "# round %d: fio %s: %d jobs reported, not 4\n", round, name, n
			print v + 0 >kibfile
			exit !(n == 4 && !bad)
		}' < <(fio_terse "$out") || return 1
	[ "$2" = 0 ] || return 1
	kib=$(cat "$rdir/fio-$1.kib")
	verified_kib=$((verified_kib + kib))
}

# make_tree DIR: FILES files of 1 byte to 16 KiB in 8 directories, and
# DIR.sha256, their checksums by relative name.
make_tree() {
	local i
	rm -rf "$1" && mkdir -p "$1"/d{0..7} || return 1
	for ((i = 0; i < FILES; i++)); do
		head -c $((RANDOM % 16384 + 1)) /dev/urandom >"$1/d$((i % 8))/f$i" || return 1
	done
	(cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) >"$1.sha256" || return 1
	[ "$(wc -l <"$1.sha256")" = "$FILES" ] || return 1
	if [ "${BREAK_DATA_CHECK:-0}" = 1 ]; then
		break_checksums "$1.sha256" || return 1
	fi
}

# meta_work SRC DEST (in the background, output to a log): copies the
# tree in, lists it (every name made, nothing else) and checks every
# file's checksum with the page cache dropped. Each step on the mount is
# bounded and killed after its time, a cd into DEST included (SIGKILL: a
# task waiting on a hard mount takes no other signal for certain).
meta_work() {
	local src=$1 dest=$2
	timeout -s KILL 300 cp -r "$src" "$dest" || { echo "meta: copy failed"; return 1; }
	if ! diff <(find "$src" -mindepth 1 -printf '%P\n' | LC_ALL=C sort) \
		<(timeout -s KILL 300 find "$dest" -mindepth 1 -printf '%P\n' | LC_ALL=C sort); then
		echo "meta: the listing differs from the names made"
		return 1
	fi
	if ! timeout -s KILL 300 sync || ! echo 3 >/proc/sys/vm/drop_caches; then
		echo "meta: sync failed"
		return 1
	fi
	# (sha256sum reads the names in SUMS relative to DEST.)
	# shellcheck disable=SC2016 # expanded by the inner bash
	timeout -s KILL 300 bash -c 'cd "$1" && exec sha256sum -c --quiet "$2"' _ "$dest" "$src.sha256" ||
		{ echo "meta: checksums differ"; return 1; }
}

# server_tree_ok SUB SUMS: the server guest's copy of SUB/meta has the
# expected checksums.
server_tree_ok() {
	local got=$rdir/server-$1.sha256
	server_run "cd /srv/export/$1/meta && find . -type f -print0 | LC_ALL=C sort -z |
		xargs -0 sha256sum >'$got'" || return 1
	diff "$2" "$got" >"$rdir/server-$1.diff" && return 0
	tap_diag "round $round: the server's $1/meta: $(grep -c '^[<>]' "$rdir/server-$1.diff") lines differ"
	return 1
}

# remove_tree MNT SUB: everything the round wrote under SUB removed
# through the mount; the server guest no longer has it.
remove_tree() {
	local rc
	timeout -s KILL 300 rm -rf "${1:?}/$2" 2>>"$rdir/tools.log" || return 1
	# Gone through the mount: test(1) says 1, not 0 (there) or 137
	# (killed after 60 s).
	timeout -s KILL 60 test -e "$1/$2"
	rc=$?
	[ "$rc" = 1 ] || return 1
	server_run "[ ! -e /srv/export/$2 ]"
}

# under_way: fio still runs on both mounts and each has written 2 MiB to
# the server (waits up to 5 minutes).
under_way() {
	local i
	for ((i = 0; i < 1500; i++)); do
		if ! kill -0 "$pid42" 2>/dev/null || ! kill -0 "$pid3" 2>/dev/null; then
			return 1
		fi
		[ "$(server_written "$mnt42")" -ge $((2 << 20)) ] 2>/dev/null &&
			[ "$(server_written "$mnt3")" -ge $((2 << 20)) ] 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}

# io_running: a workload of the round still runs on a mount.
io_running() {
	local p
	for p in "$pid42" "$pid3" "$meta42" "$meta3"; do
		kill -0 "$p" 2>/dev/null && return 0
	done
	return 1
}

# inject_disconnects: sunrpc closes the connection at every
# INJECT_INTERVAL-th transmission in this guest, INJECTIONS times; waits
# (up to 3 minutes) until all happened or the round's workloads ended.
# Fails when none did.
inject_disconnects() {
	local i left injected
	[ -d "$fail_sunrpc" ] || { tap_diag "no $fail_sunrpc (CONFIG_FAIL_SUNRPC)"; return 1; }
	echo 0 >"$fail_sunrpc/times" && echo 0 >"$fail_sunrpc/verbose" &&
		echo 1 >"$fail_sunrpc/ignore-server-disconnect" &&
		echo N >"$fail_sunrpc/ignore-client-disconnect" &&
		echo 100 >"$fail_sunrpc/probability" && echo "$INJECT_INTERVAL" >"$fail_sunrpc/interval" &&
		echo "$INJECTIONS" >"$fail_sunrpc/times" || return 1
	for ((i = 0; i < 900; i++)); do
		left=$(cat "$fail_sunrpc/times")
		[[ $left =~ ^[0-9]+$ ]] || { echo 0 >"$fail_sunrpc/times"; tap_diag "fail_sunrpc times: '$left'"; return 1; }
		[ "$left" = 0 ] && break
		io_running || break
		sleep 0.2
	done
	echo 0 >"$fail_sunrpc/times"
	injected=$((INJECTIONS - left))
	tap_diag "round $round: $injected disconnects injected"
	[ "$injected" -gt 0 ]
}

# restart_nfsd: as nfs_workloads.sh does; on failure nfsd is started
# again for the next rounds.
restart_nfsd() {
	server_run 'rpc.nfsd 0 && sleep 3 && rpc.nfsd 8 && echo "rdma 20049" >/proc/fs/nfsd/portlist' &&
		return 0
	tap_diag "round $round: nfsd restart failed (server-cmd-*.log in the run directory)"
	server_run 'rpc.nfsd 8; grep -q rdma /proc/fs/nfsd/portlist || echo "rdma 20049" >/proc/fs/nfsd/portlist'
	return 1
}

# rs_transports: "N C F" for rpcrdma_rs's transports to the server: how
# many are listed, connected, and connected with all POOL MRs free.
rs_transports() {
	awk -v a="xprt $SERVER_IP4" -v pool="$POOL" '
		/^xprt / { cur = ($0 == a); n += cur; next }
		!cur { next }
		$1 == "connected" && $2 == "yes" { c++ }
		$1 == "mrs_free" && $2 == pool { f++ }
		END { print n + 0, c + 0, f + 0 }' "$xprts" 2>/dev/null
}

# mrs_back: once the I/O is over, rpcrdma_rs lists exactly the XPRTS
# transports of the round's mounts to the server, all connected, each
# with all its MRs free again (within 30 s: a transport of an earlier
# mount lingers until its destroy work has run).
mrs_back() {
	local i n c f
	for ((i = 0; i < 150; i++)); do
		read -r n c f < <(rs_transports)
		[ "$n" = "$XPRTS" ] && [ "$c" = "$XPRTS" ] && [ "$f" = "$XPRTS" ] && return 0
		sleep 0.2
	done
	tap_diag "round $round: rpcrdma_rs transports to the server: ${n:-0} listed, ${c:-0} connected," \
		"${f:-0} with all $POOL MRs free; want $XPRTS of each"
	return 1
}

# run_round KIND: one round (see the top); fails when anything in it did,
# each reason in a diagnostic line.
run_round() {
	local kind=$1 sub42=soak-$round-v42 sub3=soak-$round-v3 t0=$SECONDS
	local rc42 rc3 m42 m3 r42 r3 b
	rdir=$LOG_DIR/round-$round
	why=()
	# The round's workloads: fio and the small files on each mount.
	pid42="" pid3="" meta42="" meta3=""
	mkdir -p "$rdir"
	tap_diag "round $round: $kind; $((SECONDS - start)) s of $((MINUTES * 60)) s gone"
	mount_v42 2>>"$rdir/tools.log" || problem "NFSv4.2 nconnect=4 mount over rdma failed"
	nfs_mount 3 "$mnt3" 2>>"$rdir/tools.log" || problem "NFSv3 mount over rdma failed"
	if [ "${#why[@]}" != 0 ]; then
		unmount_all
		return 1
	fi
	if ! make_tree "$scratch/tree42" 2>>"$rdir/tools.log" || ! make_tree "$scratch/tree3" 2>>"$rdir/tools.log" ||
		! timeout -s KILL 120 mkdir -p "$mnt42/$sub42/fio" "$mnt3/$sub3/fio" 2>>"$rdir/tools.log"; then
		problem "could not set the round up"
		unmount_all
		return 1
	fi
	fio_jobfile "$mnt42/$sub42/fio" >"$rdir/v42.fio"
	fio_jobfile "$mnt3/$sub3/fio" >"$rdir/v3.fio"
	start_fio v42 "$rdir/v42.fio"
	pid42=$!
	start_fio v3 "$rdir/v3.fio"
	pid3=$!
	meta_work "$scratch/tree42" "$mnt42/$sub42/meta" >"$rdir/meta-v42.log" 2>&1 &
	meta42=$!
	meta_work "$scratch/tree3" "$mnt3/$sub3/meta" >"$rdir/meta-v3.log" 2>&1 &
	meta3=$!
	bg_pids=("$pid42" "$pid3" "$meta42" "$meta3")

	if under_way; then
		under_io=$((under_io + 1))
	else
		# The reconnect must come under running fio: the round fails
		# (the trigger still runs, for the rest of its checks).
		problem "the $kind did not come under running fio (fio ended on a mount, or 2 MiB had not reached the server on each within 5 minutes)"
	fi
	tap_diag "round $round: $kind now; written to the server: NFSv4.2 $(server_written "$mnt42")," \
		"NFSv3 $(server_written "$mnt3") bytes"
	case $kind in
	"injected disconnects") inject_disconnects || problem "no disconnect was injected" ;;
	"nfsd restart") restart_nfsd || problem "nfsd did not restart" ;;
	esac

	# (The shell would report a job that a signal ended on stderr.)
	wait "$pid42" 2>>"$rdir/tools.log"
	rc42=$?
	wait "$pid3" 2>>"$rdir/tools.log"
	rc3=$?
	wait "$meta42" 2>>"$rdir/tools.log"
	m42=$?
	wait "$meta3" 2>>"$rdir/tools.log"
	m3=$?
	bg_pids=()
	tap_diag "round $round: I/O done after $((SECONDS - t0)) s"
	fio_verified v42 "$rc42" || problem "fio on NFSv4.2 did not write and verify all its data"
	fio_verified v3 "$rc3" || problem "fio on NFSv3 did not write and verify all its data"
	[ "$m42" = 0 ] || problem "NFSv4.2 small files: $(tail -1 "$rdir/meta-v42.log")"
	[ "$m3" = 0 ] || problem "NFSv3 small files: $(tail -1 "$rdir/meta-v3.log")"
	if [ "$m42" = 0 ] && [ "$m3" = 0 ]; then
		if server_tree_ok "$sub42" "$scratch/tree42.sha256" && server_tree_ok "$sub3" "$scratch/tree3.sha256"; then
			files_verified=$((files_verified + 2 * FILES))
		else
			problem "the server guest's copies of the small files differ"
		fi
	fi
	remove_tree "$mnt42" "$sub42" || problem "NFSv4.2: $sub42 was not removed"
	remove_tree "$mnt3" "$sub3" || problem "NFSv3: $sub3 was not removed"
	if grep -qs 'Input/output error' "$rdir"/*.log "$rdir"/*.err "$rdir"/fio-*.txt; then
		problem "an I/O error on a hard mount"
	fi

	# Measured last: the removals are I/O after the trigger on both mounts.
	r42=$(reconnects "$mnt42") || r42=""
	r3=$(reconnects "$mnt3") || r3=""
	tap_diag "round $round: reconnects: NFSv4.2 ${r42:-?}, NFSv3 ${r3:-?}"
	reconnected=$((reconnected + ${r42:-0} + ${r3:-0}))
	case $kind in
	"injected disconnects")
		[ "$((${r42:-0} + ${r3:-0}))" -gt 0 ] || problem "no reconnect after the injected disconnects"
		;;
	"nfsd restart")
		[ "${r42:-0}" -gt 0 ] || problem "NFSv4.2 did not reconnect after the nfsd restart"
		[ "${r3:-0}" -gt 0 ] || problem "NFSv3 did not reconnect after the nfsd restart"
		;;
	esac
	b=$(($(bad_replies "$mnt42" || echo 1) + $(bad_replies "$mnt3" || echo 1)))
	[ "$b" = 0 ] || problem "$b bad replies (or a mount without transports)"
	if [ "$TRANSPORT" = rs ]; then
		mrs_back || problem "an rpcrdma_rs transport is missing MRs"
		cp "$xprts" "$rdir/xprts.txt" 2>/dev/null
	fi
	{ mount_xprt_lines "$mnt42"; mount_xprt_lines "$mnt3"; } >"$rdir/mountstats-xprt.txt"
	unmount_all || problem "a mount did not unmount"
	# (A failed round may have left its files: the server's tmpfs must
	# not fill up over the rounds.)
	server_run "rm -rf /srv/export/soak-$round-*"
	tap_diag "round $round: $((SECONDS - t0)) s, $((verified_kib / 1024)) MiB verified by fio so far"
	[ "${#why[@]}" = 0 ]
}

# round_trip MNT NAME: 4 MiB written and read back with O_DIRECT, compared.
round_trip() {
	local want got
	want=$(sha256sum <"$scratch/final.bin" | cut -d' ' -f1)
	[ "${BREAK_DATA_CHECK:-0}" = 1 ] && want=$(printf '%s\n' "$want" | rotate_first_digit)
	timeout -s KILL 120 dd if="$scratch/final.bin" of="$1/$2" bs=1M oflag=direct status=none \
		2>>"$LOG_DIR/tools.log" || return 1
	got=$(timeout -s KILL 120 dd if="$1/$2" bs=1M iflag=direct status=none 2>>"$LOG_DIR/tools.log" |
		sha256sum | cut -d' ' -f1)
	timeout -s KILL 60 rm -f "${1:?}/$2" 2>>"$LOG_DIR/tools.log"
	[ "$got" = "$want" ] || { tap_diag "$2: read back $got"; return 1; }
}

final_mounts() {
	mount_v42 2>>"$LOG_DIR/tools.log" || { tap_diag "NFSv4.2 nconnect=4 mount failed"; return 1; }
	nfs_mount 3 "$mnt3" 2>>"$LOG_DIR/tools.log" || { tap_diag "NFSv3 mount failed"; return 1; }
	head -c 4M /dev/urandom >"$scratch/final.bin"
	round_trip "$mnt42" soak-final-v42.bin && round_trip "$mnt3" soak-final-v3.bin
}

start=$SECONDS
deadline=$((start + MINUTES * 60))
round=0 passed_rounds=0 failed_in_a_row=0 stopped_early=0
verified_kib=0 files_verified=0 reconnected=0 under_io=0 injected_rounds=0 restart_rounds=0
# Rounds until the time is up; the last one may end after it.
while :; do
	round=$((round + 1))
	if ((round % 2)); then
		kind="injected disconnects"
		injected_rounds=$((injected_rounds + 1))
	else
		kind="nfsd restart"
		restart_rounds=$((restart_rounds + 1))
	fi
	desc="round $round ($kind): fio verified, files verified, reconnect seen"
	if run_round "$kind"; then
		tap_ok "$desc"
		passed_rounds=$((passed_rounds + 1))
		failed_in_a_row=0
	else
		tap_not_ok "$desc (${why[0]:-})"
		failed_in_a_row=$((failed_in_a_row + 1))
		if ((failed_in_a_row >= 3)); then
			tap_diag "three rounds in a row failed: the soak stops"
			stopped_early=1
			break
		fi
	fi
	((SECONDS < deadline)) || break
done
elapsed=$((SECONDS - start))

rdir=$LOG_DIR
tap_check "after $round rounds, fresh NFSv4.2 and NFSv3 mounts work: 4 MiB read back intact on each" final_mounts
tap_check "kmemleak scan with the mounts up after the rounds: nothing unreferenced" \
	kmemleak_clean "$LOG_DIR/kmemleak.txt"
unmount_all || tap_diag "a final mount did not unmount"
full_time() { [ "$stopped_early" = 0 ] && [ "$elapsed" -ge $((MINUTES * 60)) ]; }
tap_check "the soak ran its whole time ($MINUTES min)" full_time

tap_diag "soak: $round rounds in $elapsed s (of $((MINUTES * 60)) s asked), $passed_rounds passed, transport $TRANSPORT over $RDMA"
tap_diag "soak: $((verified_kib / 1024)) MiB written and read back verified by fio, $files_verified small files verified"
tap_diag "soak: $reconnected reconnects (mountstats connect counts); $injected_rounds rounds of injected disconnects," \
	"$restart_rounds nfsd restarts, $under_io of $round under running fio"
tap_plan_late
tap_exit
