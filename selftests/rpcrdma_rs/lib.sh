# SPDX-License-Identifier: GPL-2.0
# Helpers for the rpcrdma_rs selftests: TAP output and guest plumbing.
# Sourced by the guest scripts and the tests, never run.

SELFTEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# TAP through the kernel's own helpers (KTAP, KSFT_SKIP), from
# ../kselftest/ as in a kernel tree, an installed kselftest, or an
# out-of-tree build (the Makefile's TEST_INCLUDES).
# shellcheck source=/dev/null
. "$SELFTEST_DIR/../kselftest/ktap_helpers.sh" || {
	echo "rpcrdma_rs: no kselftest/ktap_helpers.sh beside $SELFTEST_DIR: run from tools/testing/selftests" >&2
	exit 1
}

# tap_skip_test CASE REASON: ends a test that cannot run here as skipped,
# exit status KSFT_SKIP; CASE names it for scripts/harness.sh's
# known_skips.
tap_skip_test() {
	local -
	set -f
	ktap_print_header
	ktap_skip_all "$1: $2"
	exit "$KSFT_SKIP"
}

# The run directory describes the server and the run (its "params" file,
# written by scripts/harness.sh) and carries commands to the server guest
# (server_run): the guest scripts and bench.sh name it as their argument;
# a test run by kselftest's runner finds it in RPCRDMA_RS_RUN_DIR.
RUN_DIR=${RUN_DIR:-${RPCRDMA_RS_RUN_DIR:-}}
if [ -z "$RUN_DIR" ] || [ ! -r "$RUN_DIR/params" ]; then
	tap_skip_test "$(basename "$0")" \
		"no server described: set RPCRDMA_RS_RUN_DIR (Documentation/testing.rst, \"Running the tests as kselftests\")"
fi
# shellcheck source=/dev/null
. "$RUN_DIR/params"

# kselftest's make hands its command-line variables (TARGETS, OUTPUT, O...)
# to every make below it through MAKEFLAGS; none is meant for the makes a
# test runs (dkms.sh's).
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

# Under the harness, what a test writes to stderr is kept apart from its
# TAP (kselftest's runner merges the two): the harness fails a test that
# wrote any.
if [ -n "${RPCRDMA_RS_STDERR_DIR:-}" ]; then
	exec 2>>"$RPCRDMA_RS_STDERR_DIR/$(basename "$0").err"
fi

tap_plan() { ktap_print_header; ktap_set_plan "$1"; }
# tap_plan_late: the plan of a test that counts its cases as it goes,
# printed after them (TAP allows either end).
tap_plan_late() { ktap_set_plan "$((KTAP_TESTNO - 1))"; }
# ktap_helpers.sh echoes a description unquoted: with globbing off
# ("local -" restores it), "[fd00:225::1]" or a "?" stays as written
# rather than matching names in the test's directory.
tap_ok() { local -; set -f; ktap_test_pass "$*"; }
tap_not_ok() { local -; set -f; ktap_test_fail "$*"; }
# tap_skip DESCRIPTION REASON: a skipped case; KTAP's skip line has no
# room for the reason, so a diagnostic line before it says it.
tap_skip() { local -; set -f; ktap_print_msg "$1: skipped: $2"; ktap_test_skip "$1"; }
# tap_check DESCRIPTION COMMAND...: one test case from a command's status,
# which it returns (so that "if ! tap_check ...; then" sees a failure).
tap_check() {
	local desc=$1; shift
	if "$@"; then tap_ok "$desc"; return 0; fi
	tap_not_ok "$desc"
	return 1
}
# tap_failures: whether a case has failed so far.
tap_failures() { [ "$KTAP_CNT_FAIL" != 0 ]; }
tap_diag() { echo "# $*"; }
# tap_exit: ends the test, failed if a case failed or the plan was not
# kept.
tap_exit() { ktap_finished; }

# Ends a test that only concerns rpcrdma_rs as skipped when another
# transport is under test.
require_rs_transport() {
	[ "$TRANSPORT" = rs ] && return 0
	tap_skip_test "$1" "tests rpcrdma_rs, and the transport under test is '$TRANSPORT'"
}

# Ends a test that needs an NFS mount over RDMA, as one failed case, when
# the transport under test has not registered the rdma transport class:
# the test would prove nothing, and the guest loads that transport first.
require_rdma_xprt() {
	rdma_xprt_registered && return 0
	tap_plan 1
	if [ "$TRANSPORT" = rs ] && [ -e /sys/module/rpcrdma ]; then
		tap_not_ok "$1: the kernel's rpcrdma is loaded in an rpcrdma_rs run"
	else
		tap_not_ok "$1: no rdma transport class registered in sunrpc by transport '$TRANSPORT'"
	fi
	exit 1
}

# ksft_unwrap TEST: the TAP TEST printed, from the output of kselftest's
# runner (on stdin), which nests it under "# selftests: rpcrdma_rs: TEST",
# each line behind "# ".
ksft_unwrap() {
	awk -v t="$1" '
		$0 == "# selftests: rpcrdma_rs: " t { on = 1; next }
		on && $0 ~ "^(not )?ok [0-9]+ selftests: rpcrdma_rs: " { exit }
		on && $0 == "#" { next }
		on { sub(/^# /, ""); print }'
}

# ksft_result TEST: TEST's exit status, as kselftest's runner reported it
# (on stdin): 0, KSFT_SKIP, 124 for its timeout, or "none" when it
# reported none.
ksft_result() {
	awk -v t="$1" -v skip="$KSFT_SKIP" '
		index($0, " selftests: rpcrdma_rs: " t) && $0 ~ "^(not )?ok [0-9]+ " {
			if ($1 == "ok") rc = ($0 ~ /# SKIP$/) ? skip : 0
			else if (match($0, /# exit=[0-9]+$/)) rc = substr($0, RSTART + 7)
			else if ($0 ~ /# TIMEOUT/) rc = 124
			else rc = "none"
		}
		END { print (rc == "" ? "none" : rc) }'
}

# The network interface with the given MAC address.
nic_by_mac() {
	local mac=$1 dev
	for dev in /sys/class/net/*; do
		if [ "$(cat "$dev/address" 2>/dev/null)" = "$mac" ]; then
			basename "$dev"; return 0
		fi
	done
	return 1
}

# wait_for_file FILE SECONDS
wait_for_file() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# Brings up this guest's end of the link and its soft RDMA device.
setup_link() {
	local mac=$1 ip4=$2 ip6=$3 ifname
	ifname=$(nic_by_mac "$mac") || { echo "no NIC with MAC $mac" >&2; return 1; }
	ip link set lo up
	ip link set "$ifname" up
	ip addr add "$ip4/24" dev "$ifname"
	ip -6 addr add "$ip6/64" dev "$ifname" nodad
	modprobe "rdma_$RDMA" || modprobe "$RDMA" || return 1
	rdma link add "${RDMA}0" type "$RDMA" netdev "$ifname" || return 1
	echo "$ifname"
}

# The RDMA device name this guest uses.
rdma_dev() { echo "${RDMA}0"; }

# Loads the client transport under test: the kernel's C rpcrdma or ours.
load_transport() {
	case "$TRANSPORT" in
	c) modprobe rpcrdma ;;
	rs) modprobe sunrpc && modprobe rdma_cm && insmod "$MODULE" ;;
	*) echo "unknown transport $TRANSPORT" >&2; return 1 ;;
	esac
}

# A transport is destroyed from a work item after its last user goes, and
# holds the module until then: rmmod is retried for a while (EBUSY).
unload_transport() {
	local mod=rpcrdma i
	[ "$TRANSPORT" = rs ] && mod=rpcrdma_rs
	for ((i = 0; i < 60; i++)); do
		rmmod "$mod" 2>/dev/null && return 0
		sleep 0.5
	done
	rmmod "$mod"
}

# True when the transport under test has registered sunrpc's "rdma" client
# transport class. /proc/sys/sunrpc/transports cannot tell: it lists the
# server's classes. rpcrdma_rs publishes debugfs "xprts" once it registers
# its class, and must never share the guest with the kernel's rpcrdma.
rdma_xprt_registered() {
	case "$TRANSPORT" in
	c) lsmod | grep -q '^rpcrdma\b' ;;
	rs) [ -e /sys/kernel/debug/rpcrdma_rs/xprts ] && ! lsmod | grep -q '^rpcrdma\b' ;;
	*) return 1 ;;
	esac
}

# nfs_mount VERS MNT [PROTO]: mounts the server guest's export at MNT.
# PROTO is rdma (default), rdma6 or tcp. NFSv3 mounts the tmpfs itself,
# with nolock: NLM runs over TCP/UDP, not this transport, and the guest has
# no statd. NFSv4 mounts the pseudo-root (the export is fsid=0). An RDMA
# mount that the transport under test does not carry is unmounted again
# and fails (see rdma_mount_carrier_ok). The mount is bounded (120 s, as
# long as mount.nfs retries by itself) and killed after it: a hard mount
# of a server that does not answer must not hold a test up for ever.
# NFS_MOUNT_OPTS, if set, adds mount options (e.g. rsize=262144).
nfs_mount() {
	local vers=$1 mnt=$2 proto=${3:-rdma} addr=$SERVER_IP4 server path=/ opts
	opts="vers=$vers,proto=$proto"
	case "$proto" in
	rdma) opts="$opts,port=20049" ;;
	rdma6) opts="$opts,port=20049" addr=$SERVER_IP6 ;;
	esac
	server=$addr
	[ "$proto" = rdma6 ] && server="[$addr]"
	if [ "$vers" = 3 ]; then
		opts="$opts,nolock"
		path=/srv/export
	fi
	opts="$opts${NFS_MOUNT_OPTS:+,$NFS_MOUNT_OPTS}"
	mkdir -p "$mnt"
	timeout -s KILL 120 mount -t nfs -o "$opts" "$server:$path" "$mnt" || return 1
	case "$proto" in
	rdma | rdma6)
		if ! rdma_mount_carrier_ok "$addr"; then
			timeout -s KILL 60 umount "$mnt" 2>/dev/null || umount -f -l "$mnt" 2>/dev/null
			return 1
		fi
		;;
	esac
}

# rdma_mount_carrier_ok ADDR: the module under test, not the other one,
# carries the RDMA transports to the server at ADDR. Mountstats says
# "xprt: rdma" for both, and a proto=rdma mount loads the kernel's rpcrdma
# by itself when no rdma class is registered; rpcrdma_rs lists each of its
# transports in debugfs "xprts" by server address ("xprt ADDR").
rdma_mount_carrier_ok() {
	local addr=$1 xprts=/sys/kernel/debug/rpcrdma_rs/xprts
	case "$TRANSPORT" in
	rs)
		if [ -e /sys/module/rpcrdma ]; then
			tap_diag "the kernel's rpcrdma is loaded in an rpcrdma_rs run"
			return 1
		fi
		# Read by the shell: a process costs much under emulation.
		local lines=() line
		[ -r "$xprts" ] && mapfile -t lines <"$xprts"
		for line in "${lines[@]}"; do
			[ "$line" = "xprt $addr" ] && return 0
		done
		tap_diag "no rpcrdma_rs transport to $addr: ${lines[*]}"
		return 1
		;;
	c)
		if [ -e /sys/module/rpcrdma_rs ]; then
			tap_diag "rpcrdma_rs is loaded in a run of the C transport"
			return 1
		fi
		;;
	esac
}

# mount_nconnect4 MNT: an NFSv4.2 mount of the server's root at MNT with
# nconnect=4, carried by the transport under test; nconnect_n is the
# number of transports mountstats lists for it, which must be 4.
mount_nconnect4() {
	nconnect_n=""
	mkdir -p "$1"
	timeout -s KILL 120 mount -t nfs -o vers=4.2,proto=rdma,port=20049,nconnect=4 "$SERVER_IP4:/" "$1" ||
		return 1
	if ! rdma_mount_carrier_ok "$SERVER_IP4"; then
		timeout -s KILL 60 umount "$1" || umount -f -l "$1"
		return 1
	fi
	nconnect_n=$(mount_xprt_lines "$1" | wc -l)
	[ "$nconnect_n" = 4 ]
}

# mounted MNT: something is mounted at MNT, from /proc/self/mounts: a
# stat of the mount point (mountpoint(1)) could wait for ever on a hard
# mount whose server does not answer.
mounted() { awk -v m="$1" '$2 == m { found = 1 } END { exit !found }' /proc/self/mounts; }

# The "xprt:" line of the NFS mount at MNT in /proc/self/mountstats.
mount_xprt_line() {
	local lines
	lines=$(mount_xprt_lines "$1")
	[ -z "$lines" ] || printf '%s\n' "${lines%%$'\n'*}"
}

# mount_xprt_lines MNT [FILE]: every "xprt:" line of the NFS mount at MNT,
# one per transport (nconnect), in FILE (a copy of mountstats) or
# /proc/self/mountstats.
mount_xprt_lines() {
	awk -v m="$1" '$1 == "device" { found = ($5 == m); next }
		found && $1 == "xprt:" { print }' "${2:-/proc/self/mountstats}"
}

# mount_uses MNT XPRT: the mount at MNT runs over transport XPRT.
mount_uses() {
	[ "$(mount_xprt_line "$1" | awk '{ print $2 }')" = "$2" ]
}

# Runs a kmemleak scan; prints what it found (nothing when clean). Fails,
# saying why, when kmemleak is not there or disabled (then it refuses the
# scan) or a step fails: the harness must not take that for a clean scan.
kmemleak_report() {
	local f=/sys/kernel/debug/kmemleak
	[ -w "$f" ] || { echo "kmemleak unavailable: no $f"; return 1; }
	echo scan >"$f" || { echo "kmemleak scan failed (disabled?)"; return 1; }
	# Objects are reported only once seen unreferenced in two scans.
	sleep 6
	echo scan >"$f" || { echo "kmemleak second scan failed (disabled?)"; return 1; }
	cat "$f" || { echo "kmemleak report unreadable"; return 1; }
}

# kmemleak_clean FILE: a kmemleak scan (kmemleak_report, its output in
# FILE) ran and found nothing unreferenced. Otherwise says, as TAP
# diagnostics, why it could not scan, or how many objects it found and
# the first of them with its backtrace. The scan is of the whole guest
# since it cleared kmemleak's list at boot: an object an earlier test
# leaked shows here too.
kmemleak_clean() {
	local f=$1
	if ! kmemleak_report >"$f" 2>&1; then
		tap_diag "$(head -2 "$f" | tr '\n' ' ')"
		return 1
	fi
	[ -s "$f" ] || return 0
	tap_diag "kmemleak: $(grep -c '^unreferenced object' "$f") unreferenced objects (${f#"$RUN_DIR"/})"
	grep -m1 -A12 '^unreferenced object' "$f" | sed 's/^/# /'
	return 1
}

# record_kernel_state ROLE: what the harness checks of this kernel once the
# guest is done: its taint flags, and lockdep's debug_locks, which turns 0
# when lockdep gives up (the kernel shows it only in /proc/lockdep_stats;
# the file stays empty without lockdep, as in the bench kernel).
record_kernel_state() {
	cat /proc/sys/kernel/tainted >"$RUN_DIR/$1-tainted"
	if [ -e /proc/lockdep_stats ]; then
		awk '$1 == "debug_locks:" { print $2 }' /proc/lockdep_stats
	fi >"$RUN_DIR/$1-debug-locks"
}

# server_run COMMAND...: runs a shell command in the server guest (see
# guest_server.sh) and returns its exit status; its output goes to the run
# directory.
server_cmd_seq=0
server_run() {
	local tag="$RUN_DIR/server-cmd-$$-$server_cmd_seq" rc
	server_cmd_seq=$((server_cmd_seq + 1))
	printf '%s\n' "$*" >"$tag.sh.tmp" && mv "$tag.sh.tmp" "$tag.sh"
	wait_for_file "$tag.rc" 300 || return 124
	rc=$(cat "$tag.rc")
	return "$rc"
}

# server_output VAR COMMAND: runs COMMAND in the server guest and sets VAR
# to what it printed, also when it failed (what it said is then the
# diagnosis); fails as it failed. (Not in a $(...) subshell: the command
# counter must advance in this shell.)
server_output() {
	local var=$1 tag="$RUN_DIR/server-cmd-$$-$server_cmd_seq" rc=0
	shift
	server_run "$@" || rc=$?
	printf -v "$var" '%s' "$(cat "$tag.log" 2>/dev/null)"
	return "$rc"
}

# server_rdma_stat VAR NAME: sets VAR to the server's svcrdma counter
# rdma_stat_NAME.
server_rdma_stat() {
	server_output "$1" "cat /proc/sys/sunrpc/svc_rdma/rdma_stat_$2"
}

# arm_disconnect: the next transmission of any RPC client transport in
# this guest closes its connection (fail_sunrpc: xprt_inject_disconnect),
# once. Writing 0 to /sys/kernel/debug/fail_sunrpc/times disarms it.
arm_disconnect() {
	local f=/sys/kernel/debug/fail_sunrpc
	echo 0 >"$f/verbose" && echo 1 >"$f/ignore-server-disconnect" &&
		echo N >"$f/ignore-client-disconnect" &&
		echo 100 >"$f/probability" && echo 1 >"$f/interval" &&
		echo 1 >"$f/times"
}

# mountstats_field MNT N: field N (1-based, after "xprt: rdma") of the
# mount's transport line, in the C transport's order: 3 connect_count,
# 11 read_chunk_count, 12 write_chunk_count, 13 reply_chunk_count,
# 20 bad_reply_count, 24 mrs_allocated, 25 local_inv_needed,
# 26 empty_sendctx_q.
mountstats_field() {
	mount_xprt_line "$1" | awk -v n="$2" '{ print $(n + 2) }'
}

# mount_bytes MNT N...: the sum of fields N... of the NFS mount's
# mountstats "bytes:" line (2 normal reads, 3 normal writes, 4 O_DIRECT
# reads, 5 O_DIRECT writes, 6 server reads, 7 server writes).
mount_bytes() {
	local m=$1
	shift
	awk -v m="$m" -v fields="$*" '$1 == "device" { found = ($5 == m); next }
		found && $1 == "bytes:" { n = split(fields, f, " "); s = 0
			for (i = 1; i <= n; i++) s += $(f[i]); print s; exit }' /proc/self/mountstats
}

# server_written MNT: bytes the NFS mount at MNT has had written by the
# server (serverwritebytes): how far a writer has got, where the file's
# size cannot tell (fio sizes it up front).
server_written() { mount_bytes "$1" 7; }

# fio_terse FILE: FILE (fio's --output-format=terse,normal report) with
# each terse version 3 record ("3;fio-...") starting a line of its own.
# fio's own messages go to the same file without a line end (a helper
# thread interrupted by the SIGINT that stops it says so), and would hide
# the record they run into from an awk reading whole lines.
fio_terse() { sed 's/3;fio-/\n3;fio-/g' "$1"; }

# The labels mountstats --xprt prints for an "xprt: rdma" line of the C
# transport's 27 fields (nfs-utils 2.6): both transports must give the
# same (nfs_data_integrity.sh holds each to the list, nfs_utils.sh compares
# the two in one guest).
MOUNTSTATS_LABELS="Transport protocol|Connect count|Connect time|Idle time|RPC requests|RPC replies|XIDs not found|Avg backlog length|Read segments|Write segments|Reply segments|Registered|RDMA received|Total pull-up|Total fix-up|Hardway allocations|Failed marshals|Bad replies|RDMA_NOMSG calls|Allocated MRs|Recovered MRs|Orphaned MRs|Local Invalidates needed|Empty sendctx queue count|Replies that waited for Send completion"

# nfs_utils_read MNT: mountstats --xprt parses the mount's transport line
# into the fields it knows, with the values the line has (RPC requests,
# Write segments and Allocated MRs checked against it), and nfsiostat
# reports the mount. mountstats reads a copy of /proc/self/mountstats that
# the line is taken from too: NFSv4 renews its lease meanwhile. Leaves
# what nfsiostat printed, numbers blanked, in NFSIOSTAT_SHAPE, for
# comparing two transports.
nfs_utils_read() {
	local out labels line sends writes mrs snap=/tmp/mountstats.copy
	cp /proc/self/mountstats "$snap" || return 1
	out=$(mountstats -f "$snap" --xprt "$1" 2>&1) || { tap_diag "mountstats: $out"; return 1; }
	line=$(mount_xprt_lines "$1" "$snap" | head -1)
	labels=$(sed -n 's/^[[:space:]]*\([^:]*\): .*/\1/p' <<<"$out" | paste -sd'|')
	if [ "$labels" != "$MOUNTSTATS_LABELS" ]; then
		tap_diag "mountstats printed: $labels"
		return 1
	fi
	value() { sed -n "s/^[[:space:]]*$1: \([0-9]*\).*/\1/p" <<<"$out"; }
	sends=$(value "RPC requests")
	writes=$(value "Write segments")
	mrs=$(value "Allocated MRs")
	tap_diag "mountstats: $sends RPC requests, $writes Write segments, $mrs MRs; the line: $line"
	[ "$sends" = "$(awk '{ print $8 }' <<<"$line")" ] &&
		[ "$writes" = "$(awk '{ print $14 }' <<<"$line")" ] &&
		[ "$mrs" = "$(awk '{ print $26 }' <<<"$line")" ] || return 1
	out=$(nfsiostat "$1" 2>&1) || { tap_diag "nfsiostat: $out"; return 1; }
	grep -q "mounted on $1:" <<<"$out" && ! grep -q Traceback <<<"$out" ||
		{ tap_diag "nfsiostat: $(head -3 <<<"$out" | tr '\n' ' ')"; return 1; }
	NFSIOSTAT_SHAPE=$(sed -E 's/[0-9]+(\.[0-9]+)?/N/g; s/[[:space:]]+/ /g' <<<"$out")
}

# rs_xprt_field NAME: NAME's value for the one rpcrdma_rs transport in
# debugfs (rpcrdma_rs/xprts); prints nothing and fails unless there is
# exactly one. A transport whose mount is gone lingers until its destroy
# work has run, so this waits up to 30 s for the count to settle at one.
rs_xprt_field() {
	local f=/sys/kernel/debug/rpcrdma_rs/xprts i value
	for ((i = 0; i < 300; i++)); do
		# One read of the file: the count and the value belong together.
		if value=$(awk -v k="$1" '$1 == "transports" { n = $2 }
			$1 == k && !found { v = $2; found = 1 }
			END { if (n != 1) exit 1; print v }' "$f" 2>/dev/null); then
			echo "$value"
			return 0
		fi
		sleep 0.1
	done
	# Said on stderr: the value is what goes to stdout.
	echo "rs_xprt_field $1: not exactly one transport in $f: $(tr '\n' ' ' <"$f" 2>/dev/null)" >&2
	return 1
}

# break_checksums FILE: the harness's self-test (BREAK_DATA_CHECK=1) makes
# every expectation in a sha256sum FILE wrong by rotating the first hex
# digit of each line (0 becomes 1, ..., f becomes 0): always a change.
break_checksums() {
	local t
	t=$(rotate_first_digit <"$1") && printf '%s\n' "$t" >"$1"
}

# rotate_first_digit: each line of standard input with its first hex digit
# moved on by one (0 to 1, ..., f to 0), so that every checksum changes.
rotate_first_digit() {
	sed 'h; s/^\(.\).*/\1/; y/0123456789abcdef/123456789abcdef0/; G; s/\n.//'
}

# expected SUM: a checksum as the data checks expect it. BREAK_DATA_CHECK=1
# (the harness's self-test) makes it wrong, as break_checksums does.
expected() {
	if [ "${BREAK_DATA_CHECK:-0}" = 1 ]; then
		printf '%s\n' "$1" | rotate_first_digit
	else
		printf '%s\n' "$1"
	fi
}

# Drops clean page cache, so that reads go to the server.
drop_caches() { sync && echo 3 >/proc/sys/vm/drop_caches; }

# ---- rpcrdma_rs trace events ----
# Read from a tracefs instance of the test's own, so that the global trace
# buffer is left alone. trace_start makes it, trace_stop removes it.
TRACEFS=/sys/kernel/tracing
trace_inst="" trace_mounted_tracefs="" trace_record_cmd=""

# trace_start NAME [EVENT...]: the tracefs instance NAME (tracefs mounted
# first if it is not), empty, with the rpcrdma_rs events EVENT... on
# (connect, disconnect, ...), or all of them without EVENT.
trace_start() {
	local name=$1 e
	shift
	if [ ! -d "$TRACEFS/instances" ]; then
		mount -t tracefs nodev "$TRACEFS" 2>/dev/null || {
			tap_diag "cannot mount tracefs at $TRACEFS"
			return 1
		}
		trace_mounted_tracefs=1
	fi
	# Without recording each task's name, enabling and disabling events
	# leaves the scheduler's tracepoints alone: switching those on and off
	# patches code that every CPU runs all the time, and under TCG a vCPU
	# once ran the breakpoint the patching leaves behind after it was
	# gone (an int3 oops in trace_sched_wakeup). An instance takes the
	# setting from the top level when it is made; the events' lines then
	# name their task by PID only.
	if [ -z "$trace_record_cmd" ] && [ -w "$TRACEFS/options/record-cmd" ]; then
		read -r trace_record_cmd <"$TRACEFS/options/record-cmd"
		echo 0 >"$TRACEFS/options/record-cmd"
	fi
	trace_inst=$TRACEFS/instances/$name
	[ -d "$trace_inst" ] || mkdir "$trace_inst" 2>/dev/null || {
		tap_diag "cannot make the tracefs instance $trace_inst"
		trace_inst=""
		return 1
	}
	if [ ! -d "$trace_inst/events/rpcrdma_rs" ]; then
		tap_diag "no rpcrdma_rs events in tracefs (module built without tracepoints?)"
		return 1
	fi
	echo 0 >"$trace_inst/tracing_on" && : >"$trace_inst/trace" &&
		echo 1024 >"$trace_inst/buffer_size_kb" || return 1
	if [ $# = 0 ]; then
		echo 1 >"$trace_inst/events/rpcrdma_rs/enable" || return 1
	else
		for e; do
			echo 1 >"$trace_inst/events/rpcrdma_rs/rpcrdma_rs_$e/enable" || return 1
		done
	fi
	echo 1 >"$trace_inst/tracing_on"
}

# trace_stop: the instance and its buffer gone (its events off with it),
# tracefs as it was.
trace_stop() {
	if [ -n "$trace_inst" ] && [ -d "$trace_inst" ]; then
		echo 0 >"$trace_inst/tracing_on"
		echo 0 >"$trace_inst/events/rpcrdma_rs/enable"
		: >"$trace_inst/trace"
		rmdir "$trace_inst"
	fi
	trace_inst=""
	if [ -n "$trace_record_cmd" ]; then
		echo "$trace_record_cmd" >"$TRACEFS/options/record-cmd"
		trace_record_cmd=""
	fi
	if [ -n "$trace_mounted_tracefs" ]; then
		umount "$TRACEFS"
		trace_mounted_tracefs=""
	fi
}

# trace_complete: 0 if the instance's buffer lost no event (no CPU's ring
# overran or dropped one), so that counting events counts what fired;
# says what was lost otherwise.
trace_complete() {
	local f lost=0 n
	[ -n "$trace_inst" ] || { tap_diag "no trace to read"; return 1; }
	for f in "$trace_inst"/per_cpu/cpu*/stats; do
		[ -r "$f" ] || continue
		n=$(awk -F': *' '$1 == "overrun" || $1 == "dropped events" { s += $2 } END { print s + 0 }' "$f")
		lost=$((lost + n))
	done
	[ "$lost" = 0 ] && return 0
	tap_diag "the trace buffer lost $lost events (overrun or dropped)"
	return 1
}

# trace_events NAME: what each rpcrdma_rs_NAME event recorded
# ("peer=... ..."), oldest first.
trace_events() {
	[ -n "$trace_inst" ] && sed -n "s/^.* rpcrdma_rs_$1: //p" "$trace_inst/trace" 2>/dev/null
}

# trace_field LINE KEY: the value of KEY=VALUE among the fields of LINE;
# the last field, which may hold spaces, is read with trace_last_field.
trace_field() {
	local f fs
	read -ra fs <<<"$1"
	for f in "${fs[@]}"; do
		if [ "${f%%=*}" = "$2" ]; then
			printf '%s\n' "${f#*=}"
			return 0
		fi
	done
	return 1
}
trace_last_field() { [[ $1 == *" $2="* ]] && printf '%s\n' "${1#* "$2"=}"; }

# trace_expect LINE KEY VALUE...: each KEY of LINE has VALUE; says which
# does not.
trace_expect() {
	local line=$1 k v got rc=0
	shift
	while [ $# -ge 2 ]; do
		k=$1 v=$2
		shift 2
		got=$(trace_field "$line" "$k") || got="(none)"
		if [ "$got" != "$v" ]; then
			tap_diag "$k=$got, expected $k=$v in: $line"
			rc=1
		fi
	done
	return "$rc"
}

# trace_first NAME: the first rpcrdma_rs_NAME event, or nothing (and a
# diagnostic).
trace_first() {
	local l
	l=$(trace_events "$1" | head -1)
	[ -n "$l" ] || tap_diag "no rpcrdma_rs_$1 event traced"
	printf '%s\n' "$l"
}
