#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The transport's promises when connections go away under I/O:
#
# - On a hard mount, verified fio and a large directory listing (Reply
#   chunks of several MRs) run while sunrpc injects disconnects: every
#   reply that was lost is retransmitted, none turns into EIO, and the
#   data reads back intact.
# - With rpcrdma_rs's test hook chain_cut_every, every 5th post of a Send
#   and the REG_MRs chained before it fails partway, as a device's post
#   may (the device taking none, one, ... or all of its work requests in
#   turn): verified fio on the hard mount gets through unharmed, the hook
#   counts its cuts, a cut is traced as what ended a connection (not a
#   timeout), and the regions the cuts left registered are released by
#   the drain (none freed while mapped, every MR back on the free list).
# - On a soft mount with short timeouts, fio (its job a thread, so that
#   the kill reaches it) is killed while disconnects are injected, so RPCs
#   end (signal, soft timeout) during autoclose: each round must send RPCs
#   and inject a disconnect, fio must be running until the SIGKILL and be
#   gone within 60 s of it, the connection count must grow, and the
#   kernel log after the first kill must hold no memory or lock
#   report and no region freed while mapped; the mount works afterwards,
#   and every MR is back on the free list.
# - The server grants the full 128 credits on an NFSv4.1 mount and a deep
#   queue of reads uses them while callbacks arrive on the same
#   connection, until 4 recalls are done (or 40 rounds, or 300 s: a round
#   takes 5 s on a fast host under TCG, 20 on a slow one): round after
#   round, a file held open for reading gets a
#   read delegation (the server's /proc/fs/nfsd/clients/*/states lists
#   it) and a write open of it on the server recalls it with CB_RECALL
#   over the backchannel, as in nfs_load.sh. At least 3 recalls must
#   complete during the reads, each write open within 8 s (the lease is
#   10 s) and the delegation gone from the states while the file is still
#   open. One connection throughout, so no Receive was ever missing (RNR)
#   for a Reply or a Call the server sent; rpcrdma_rs took the grant of
#   128; no bad reply; each delegated file reads right before and after
#   its recall, and the deep-read file as it was written.
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

require_rdma_xprt "teardown safety"
tap_plan 22

fail=/sys/kernel/debug/fail_sunrpc
mnt=/mnt/nfs-teardown
scratch=/mnt/scratch-teardown
mkdir -p "$scratch"
mountpoint -q "$scratch" || mount -t tmpfs -o size=64m tmpfs "$scratch"

# inject_disconnects INTERVAL TIMES: every INTERVAL-th transmission closes
# the connection (xprt_inject_disconnect), TIMES times in all.
inject_disconnects() {
	[ -d "$fail" ] || { tap_diag "no $fail (CONFIG_FAIL_SUNRPC)"; return 1; }
	echo 0 >"$fail/verbose" && echo 1 >"$fail/ignore-server-disconnect" &&
		echo 100 >"$fail/probability" && echo "$1" >"$fail/interval" &&
		echo "$2" >"$fail/times"
}
stop_injecting() { echo 0 >"$fail/times"; }

connects() { mountstats_field "$mnt" 3; }

fio_verified() { # NAME SIZE EXTRA...: write with checksums, verify read back
	local name=$1 size=$2
	shift 2
	fio --name="$name" --directory="$mnt/d" --rw=write --bs=1M --size="$size" \
		--ioengine=psync --direct=1 --end_fsync=1 --verify=crc32c --verify_fatal=1 \
		--verify_state_save=0 --output="$RUN_DIR/fio-teardown-$name.txt" "$@"
}

# Hard mount: nothing may fail.
if ! tap_check "NFSv3 hard mount over rdma" nfs_mount 3 "$mnt"; then
	for i in $(seq 2 22); do tap_not_ok "case $i (not mounted)"; done
	tap_exit
fi
mkdir -p "$mnt/d" "$mnt/list"
server_run "cd /srv/export/list && seq -f 'entry-with-a-long-name-%05g' 3000 | xargs touch" ||
	tap_diag "could not fill the directory"
before=$(connects)
tap_check "disconnects injected every 40 transmissions" inject_disconnects 40 8
listing_ok() {
	local n
	for _ in 1 2 3; do
		drop_caches
		n=$(ls -f "$mnt/list" | grep -c '^entry-with-a-long-name-') || return 1
		[ "$n" = 3000 ] || { tap_diag "listed $n of 3000"; return 1; }
	done
}
listing_ok >"$scratch/listing.out" 2>&1 &
lister=$!
tap_check "verified fio on a hard mount survives the disconnects" fio_verified hard 24M
tap_check "directory listings survive the disconnects" wait "$lister"
stop_injecting
after=$(connects)
tap_diag "connections: $before before, $after after"
tap_check "the connection was re-established" test "${after:-0}" -gt "${before:-0}"
tap_check "no reply was turned into an I/O error" bash -c "! grep -q 'Input/output error' '$RUN_DIR/fio-teardown-hard.txt' '$scratch/listing.out'"
tap_check "no bad replies" test "$(mountstats_field "$mnt" 20)" = 0

free_mrs() {
	local i
	for ((i = 0; i < 50; i++)); do
		[ "$(rs_xprt_field mrs_free)" = 256 ] && return 0
		sleep 0.2
	done
	tap_diag "mrs_free $(rs_xprt_field mrs_free)"
	return 1
}

# Posts of Sends and their chained REG_MRs cut partway (a test hook of
# rpcrdma_rs, in the module the tests build). A cut must be what ends a
# connection (traced as such, not a timeout), and the regions a cut left
# registered must be released by the drain: none freed while mapped, all
# free afterwards.
D_CUT_IO="verified fio survives chained posts cut partway"
D_CUT_COUNT="chained posts were cut, and the connection reset for it"
D_CUT_MRS="no region freed while mapped after the cuts, every MR back on the free list"
hook=/sys/module/rpcrdma_rs/parameters
cut_marker="rpcrdma-rs-selftest: failing chained posts"
# What the kernel logged since the cuts began.
since_cuts() { dmesg | sed -n "/$cut_marker/,\$p"; }
regions_released() {
	if since_cuts | grep -q 'memory region freed while mapped'; then
		tap_diag "$(since_cuts | grep 'memory region freed while mapped' | head -3)"
		return 1
	fi
	free_mrs
}
if [ "$TRANSPORT" = rs ]; then
	cuts_before=$(cat "$hook/chain_cuts" 2>/dev/null)
	before=$(connects)
	trace_start teardown-cuts disconnect || tap_diag "the disconnects are not traced"
	echo "$cut_marker" >/dev/kmsg
	if echo 5 >"$hook/chain_cut_every"; then
		tap_check "$D_CUT_IO" fio_verified cut 8M
	else
		tap_not_ok "$D_CUT_IO (no chain_cut_every: is $MODULE built with RPCRDMA_RS_TEST_HOOKS=y?)"
	fi
	echo 0 >"$hook/chain_cut_every" 2>/dev/null
	cuts=$(($(cat "$hook/chain_cuts" 2>/dev/null || echo 0) - ${cuts_before:-0}))
	after=$(connects)
	lost=$(trace_events disconnect | grep -cE 'reason=could not post a (REG_MR chain|Send)$')
	trace_stop
	tap_diag "chained posts cut: $cuts; connections lost to a cut: $lost; connections: $before before, $after after"
	tap_check "$D_CUT_COUNT" test "$cuts" -ge 2 -a "$lost" -ge 1 -a "${after:-0}" -gt "${before:-0}"
	tap_check "$D_CUT_MRS" regions_released
else
	tap_skip "$D_CUT_IO" "rpcrdma_rs's test hook"
	tap_skip "$D_CUT_COUNT" "rpcrdma_rs's test hook"
	tap_skip "$D_CUT_MRS" "rpcrdma_rs's test hook"
fi
umount "$mnt"

# Soft mount, short timeouts: RPCs end during autoclose. Its own options,
# so not through nfs_mount, but bounded and checked as nfs_mount does: a
# mount the transport under test does not carry is unmounted and fails.
soft_mount() {
	timeout -s KILL 120 mount -t nfs -o vers=3,proto=rdma,port=20049,nolock,soft,timeo=20,retrans=1 \
		"$SERVER_IP4:/srv/export" "$mnt" || return 1
	if ! rdma_mount_carrier_ok "$SERVER_IP4"; then
		timeout -s KILL 60 umount "$mnt" 2>/dev/null || umount -f -l "$mnt" 2>/dev/null
		return 1
	fi
}
tap_check "NFSv3 soft mount over rdma" soft_mount

# Kernel reports that must not follow the kills (the harness's scan, in
# short), and the transport's own about a region freed while mapped.
kill_reports='BUG:|BUG [^ ]+ [(](Not tainted|Tainted)|WARNING:|Oops|general protection fault|KFENCE:|UBSAN:|([Pp]oison|Redzone|[Pp]adding) overwritten|refcount_t:|list_(add|del) corruption|blocked for more than|memory region freed while mapped'
kill_marker="rpcrdma-rs-selftest: fio killed under injected disconnects"
# gone_within SECONDS PID: the background job PID has ended (and this shell
# reaped it) within SECONDS.
gone_within() {
	local i
	for ((i = 0; i < $1 * 5; i++)); do
		[ -e "/proc/$2" ] || return 0
		sleep 0.2
	done
	return 1
}
# killed_fio: three rounds in which fio runs on the soft mount while every
# 10th transmission closes the connection (6 times), and is killed after
# 6 s. fio runs its job as a thread (--thread): a forked job would outlive
# the SIGKILL of fio's main process, and no RPC would end for it. Each
# round must have sent RPCs and injected at least one disconnect, fio must
# have been running until killed (status 137: it did not stop by itself)
# and be gone within 60 s of the kill (the RPCs it left ended, by the
# signal or the soft timeout). Afterwards the connection count must have
# grown, and the kernel log since the first round hold no memory or lock
# report and no region freed while mapped. (Bad replies are not counted
# against it: C counts a reply to an RPC that is gone as one.) Whether
# every MR came back is the case after the next, once I/O has connected
# the transport again (its report has the count only when connected).
# (Its stderr is dropped: the shell reports each killed job there.)
killed_fio() {
	local i pid rc left s0 s1 c0 c1 reports
	echo "$kill_marker" >/dev/kmsg
	c0=$(connects)
	# fio's file (soft.0.0) laid out before any disconnect is injected:
	# fio gives up (exit 1) when laying out fails, and continue_on_error
	# covers only the I/O. One 1 MiB O_DIRECT WRITE at a time, so that
	# none waits past the soft mount's timeouts behind the others (a
	# buffered 16 MiB did over rxe); tried three times.
	for i in 1 2 3; do
		timeout -s KILL 120 dd if=/dev/zero of="$mnt/d/soft.0.0" bs=1M count=16 oflag=direct \
			status=none && break
		[ "$i" = 3 ] && { tap_diag "laying out fio's file failed three times"; return 1; }
		sleep 2
	done
	for i in 1 2 3; do
		inject_disconnects 10 6 || return 1
		s0=$(mountstats_field "$mnt" 6)
		# Soft RPCs fail here: fio goes on through the errors until killed.
		fio --name=soft --directory="$mnt/d" --rw=randrw --bs=1M --size=16M \
			--ioengine=libaio --iodepth=8 --direct=1 --thread --time_based --runtime=60 \
			--continue_on_error=all --output=/dev/null >/dev/null 2>&1 &
		pid=$!
		sleep 6
		kill -KILL "$pid"
		if ! gone_within 60 "$pid"; then
			tap_diag "round $i: fio still there 60 s after SIGKILL: its RPCs did not end"
			reports=$(cat /proc/"$pid"/task/*/stack | head -12 | tr '\n' ' ')
			[ -z "$reports" ] || tap_diag "its stack: $reports"
			# Not to be reported on stderr whenever it does end.
			disown "$pid"
			stop_injecting
			return 1
		fi
		wait "$pid"
		rc=$?
		read -r left <"$fail/times"
		stop_injecting
		s1=$(mountstats_field "$mnt" 6)
		tap_diag "round $i: fio exit $rc, RPCs sent $((${s1:-0} - ${s0:-0})), disconnects injected $((6 - ${left:-6}))"
		[ "$rc" = 137 ] || { tap_diag "round $i: fio ended by itself before the kill"; return 1; }
		[ "${s1:-0}" -gt "${s0:-0}" ] || { tap_diag "round $i: no RPC sent"; return 1; }
		[ "${left:-6}" -lt 6 ] || { tap_diag "round $i: no disconnect injected"; return 1; }
	done
	c1=$(connects)
	tap_diag "connections: $c0 before the rounds, $c1 after"
	[ "${c1:-0}" -gt "${c0:-0}" ] || { tap_diag "no reconnect after the injected disconnects"; return 1; }
	# One dmesg; the marker must be there (a log that wrapped proves nothing).
	reports=$(dmesg | awk -v m="$kill_marker" -v re="$kill_reports" '
		index($0, m) { on = 1; next }
		on && $0 ~ re { print; n++ }
		END { if (!on) print "the marker is not in the kernel log"; exit !on || n }')
	[ -z "$reports" ] && return 0
	tap_diag "the kernel log since the first kill: $(head -5 <<<"$reports" | tr '\n' ' ')"
	return 1
} 2>/dev/null
if [ "$TRANSPORT" = c ] && [ "$RDMA" = siw ]; then
	# The kernel's C client hangs here over Soft-iWARP: xprt_release waits
	# in frwr_unmap_sync for a LOCAL_INV that never completes (a hung
	# task, and the test never ends). See Documentation/testing.rst.
	tap_skip "fio killed three times while disconnects were injected" "the C client hangs in frwr_unmap_sync over siw"
else
	tap_check "fio killed three times while disconnects were injected" killed_fio
fi
settled_io() {
	local i want got
	head -c 4M /dev/urandom >"$scratch/after" || return 1
	want=$(sha256sum <"$scratch/after")
	want=$(expected "${want%% *}")
	# Soft RPCs may still fail once while the connection settles. 64 KiB
	# O_DIRECT RPCs, one at a time, each well within the 2 s timeout: on a
	# slow host under TCG one 1 MiB RPC takes a second, and the four a
	# buffered copy sends at once would time out every time.
	for i in 1 2 3 4 5; do
		if dd if="$scratch/after" of="$mnt/after" bs=64k oflag=direct status=none 2>/dev/null &&
			got=$(set -o pipefail; dd if="$mnt/after" bs=64k iflag=direct status=none 2>/dev/null | sha256sum); then
			[ "${got%% *}" = "$want" ] && return 0
			tap_diag "read back after the disconnects: $got, expected $want"
			return 1
		fi
		sleep 2
	done
	return 1
}
tap_check "the mount works afterwards, data intact" settled_io
if [ "$TRANSPORT" = rs ]; then
	tap_check "every MR is back on the free list" free_mrs
else
	tap_skip "every MR is back on the free list" "rpcrdma_rs's report"
fi
umount "$mnt"

# The full credit grant, with NFSv4.1 callbacks on the same connection.
# nfsd grants no delegation while NFSv4's or lockd's grace period runs
# (locks_in_grace), and the restart begins both: lockd's, 50 s by
# default, is made 10 s for this restart (lockd reads nlm_grace_period as
# it starts), and NFSv4's is ended at once where nfsd can (no client has
# state to reclaim) or waited out (10 s).
full_credits_server() {
	server_run "nlm=\$(cat /proc/sys/fs/nfs/nlm_grace_period) &&
		echo 10 >/proc/sys/fs/nfs/nlm_grace_period &&
		rpc.nfsd 0 && echo 128 >/proc/sys/sunrpc/svc_rdma/max_requests &&
		rpc.nfsd 8 && echo 'rdma 20049' >/proc/fs/nfsd/portlist &&
		echo \$nlm >/proc/sys/fs/nfs/nlm_grace_period || exit 1
		{ echo Y >/proc/fs/nfsd/v4_end_grace; } 2>/dev/null
		for i in \$(seq 60); do
			[ \"\$(cat /proc/fs/nfsd/v4_end_grace)\" = Y ] && exit 0
			sleep 0.5
		done
		echo 'grace period not over after 30 s'; exit 1"
}
tap_check "the server grants 128 credits" full_credits_server

# Delegations as nfs_load.sh gets and recalls them: of files the server
# made (not the client, see deleg_granted there), a new file each round
# (nfsd declines for a while to delegate a file it recalled), held open
# by the client on fd 3 and recalled by a write open on the server.
deleg_dir=/srv/export/q/deleg
seq_sum=$(expected "$(seq 1 2000 | sha256sum | cut -d' ' -f1)")
changed_sum=$(expected "$({ seq 1 2000; echo server-write; } | sha256sum | cut -d' ' -f1)")
recall_script=$RUN_DIR/nfs_teardown-recall.sh
cat >"$recall_script" <<'EOF'
# Run in the server guest by nfs_teardown.sh: recall FILE. The server's
# states must list a read delegation of FILE (else it prints the states
# and exits 2); a write open of FILE recalls it and prints how long it
# took in ms; the delegation must then leave the states within 5 s (else
# exit 3).
f=$1
listed() {
	grep -qE "type: deleg, access: r, .*filename: \"[^\"]*/${f##*/}\"" \
		/proc/fs/nfsd/clients/*/states 2>/dev/null
}
listed || { head -c 600 /proc/fs/nfsd/clients/*/states; exit 2; }
s=$(date +%s%N)
echo server-write >>"$f" || exit 1
e=$(date +%s%N)
echo $(((e - s) / 1000000))
for _ in 1 2 3 4 5 6 7 8 9 10; do
	listed || exit 0
	sleep 0.5
done
exit 3
EOF
rounds=0 recalls=0 no_deleg=0 recall_bad=0 data_bad=0 slowest=0 no_deleg_states=""

# recall_round NAME: the client opens NAME for reading on fd 3 and checks
# what it reads; the server recalls the delegation (recall_script) with
# fd 3 still open, so only the recall can have returned it; an O_DIRECT
# read must then get the server's change. Counts the outcome: a recall
# is counted when it was within 8 s and the deep reads still ran after it.
recall_round() {
	local name=$1 got said status
	rounds=$((rounds + 1))
	if ! { exec 3<"$mnt/q/deleg/$name"; } 2>/dev/null; then
		tap_diag "cannot open $name"
		recall_bad=$((recall_bad + 1))
		return
	fi
	got=$(sha256sum <&3)
	[ "${got%% *}" = "$seq_sum" ] || { tap_diag "$name read back wrong"; data_bad=$((data_bad + 1)); }
	server_output said "bash '$recall_script' $deleg_dir/$name"
	status=$?
	exec 3<&-
	case $status in
	0) ;;
	2) no_deleg=$((no_deleg + 1)) no_deleg_states=$said; return ;;
	*) tap_diag "$name: recall failed (status $status): $said"; recall_bad=$((recall_bad + 1)); return ;;
	esac
	if ! [ "$said" -lt 8000 ] 2>/dev/null; then
		tap_diag "$name: the server's write open took $said ms"
		recall_bad=$((recall_bad + 1))
		return
	fi
	((said > slowest)) && slowest=$said
	got=$(dd if="$mnt/q/deleg/$name" bs=64k iflag=direct status=none | sha256sum)
	[ "${got%% *}" = "$changed_sum" ] ||
		{ tap_diag "$name after the recall: not the server's change"; data_bad=$((data_bad + 1)); }
	kill -0 "$deep_pid" 2>/dev/null && recalls=$((recalls + 1))
}

D_RECALLS="meanwhile at least 3 read delegations recalled over the backchannel, each within 8 s and returned"
D_BAD="no bad replies at 128 credits with callbacks"
D_DATA="the data reads back right: each delegated file before and after its recall, the deep-read file"
if tap_check "NFSv4.1 mount over rdma" nfs_mount 4.1 "$mnt"; then
	mkdir -p "$mnt/q"
	head -c 8M /dev/urandom >"$scratch/deep"
	deep_sum=$(sha256sum <"$scratch/deep")
	deep_sum=$(expected "${deep_sum%% *}")
	cp "$scratch/deep" "$mnt/q/file"
	server_run "mkdir -p $deleg_dir && s=\$(seq 1 2000) &&
		for t in {1..40}; do printf '%s\n' \"\$s\" >$deleg_dir/f\$t &&
			printf '%s\n' \"\$s\" >$deleg_dir/w\$t; done" ||
		tap_diag "could not make the files to delegate"
	# Until lockd's grace period is over (and the callback channel is
	# up), nfsd grants no delegation: rounds on other files until one is
	# recalled, 30 s at most, before the reads begin; not counted.
	warm_until=$((SECONDS + 30))
	for ((t = 1; t <= 40 && SECONDS < warm_until; t++)); do
		n0=$no_deleg b0=$recall_bad
		recall_round "w$t"
		[ "$no_deleg" = "$n0" ] && [ "$recall_bad" = "$b0" ] && break
		sleep 1
	done
	tap_diag "delegations granted after $t warm-up rounds ($no_deleg without one, $recall_bad failed)"
	rounds=0 recalls=0 no_deleg=0 recall_bad=0 slowest=0 no_deleg_states=""
	before=$(connects)
	deep_out=$RUN_DIR/fio-teardown-deep.txt
	# fio itself in the background (not a function in a subshell, which
	# would ignore SIGINT), so that $! is fio's.
	fio --name=deep --filename="$mnt/q/file" --rw=randread --bs=4k --size=8M \
		--ioengine=libaio --iodepth=128 --direct=1 --numjobs=2 --time_based --runtime=300 \
		--output="$deep_out" >/dev/null &
	deep_pid=$!
	# Rounds in this shell (server_run numbers its commands here), from
	# once the queue has filled until 4 recalls are done; then the reads
	# are stopped (SIGINT: fio ends its jobs and reports them).
	sleep 2
	for ((t = 1; t <= 40 && recalls < 4; t++)); do
		kill -0 "$deep_pid" 2>/dev/null || break
		recall_round "f$t"
	done
	kill -INT "$deep_pid" 2>/dev/null
	# fio exits 128 when interrupted: its report then says whether every
	# job (2) ended without an error.
	deep_done() {
		local rc=0
		wait "$deep_pid" || rc=$?
		[ "$rc" = 0 ] || { [ "$rc" = 128 ] && [ "$(grep -c 'err= 0:' "$deep_out")" = 2 ]; }
	}
	tap_check "128 requests deep, 4 KiB random reads" deep_done
	tap_diag "recall rounds $rounds: $recalls recalled during the reads (slowest write open $slowest ms), $no_deleg without a delegation, $recall_bad failed"
	[ "$no_deleg" = 0 ] || tap_diag "the states when none was listed: $(printf '%s' "$no_deleg_states" | tr '\n' ' ')"
	tap_check "$D_RECALLS" test "$recalls" -ge 3 -a "$recall_bad" = 0
	tap_check "one connection throughout" test "$(connects)" = "$before"
	if [ "$TRANSPORT" = rs ]; then
		tap_check "the transport took the grant of 128" test "$(rs_xprt_field credits_granted)" = 128
	else
		tap_skip "the transport took the grant of 128" "rpcrdma_rs's report"
	fi
	tap_check "$D_BAD" test "$(mountstats_field "$mnt" 20)" = 0
	got=$(dd if="$mnt/q/file" bs=1M iflag=direct status=none | sha256sum)
	[ "${got%% *}" = "$deep_sum" ] || { tap_diag "the deep-read file: not what was written"; data_bad=$((data_bad + 1)); }
	tap_check "$D_DATA" test "$data_bad" = 0
	umount "$mnt"
else
	tap_not_ok "128 requests deep (not mounted)"
	tap_not_ok "$D_RECALLS (not mounted)"
	tap_not_ok "one connection throughout (not mounted)"
	tap_not_ok "the transport took the grant of 128 (not mounted)"
	tap_not_ok "$D_BAD (not mounted)"
	tap_not_ok "$D_DATA (not mounted)"
fi
server_run "echo 64 >/proc/sys/sunrpc/svc_rdma/max_requests"
tap_exit
