#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The live transport against a mutating server: rpcrdma-peer (rust/peer)
# serves NFSv3 over RDMA on port 20060 of the server guest and, while its
# --fuzz-file holds "SEED RATE", mutates that share of its Replies and of
# the private data of its connections at random (see the peer's --help,
# "Fuzzing"). The RPC results and the bytes it places in the client's
# memory stay right, so whatever the client hands a reader must be right.
#
# Two mounts of the peer, a hard and a soft one (nosharecache: a cache
# each). With the peer serving correctly, reference files are written
# through the hard mount and read back verified. Then rounds of
# WIRE_FUZZ_ROUND seconds, each with its own seed (WIRE_FUZZ_SEED, the
# first; WIRE_FUZZ_SECONDS in all; WIRE_FUZZ_RATE of the Replies): the
# soft mount reads the reference file again and again, verified, and
# the hard mount writes new files and reads them back, verified, both
# with fio's checksums. An error is allowed (a mutated Reply may fail an
# RPC); wrong data is not: a verification failure fails the round, but
# for a hard-mount file whose writes themselves failed (its content is
# then not known). After the rounds, with the peer serving correctly
# again: every RDMA Write or Read the peer aimed at an rkey the client
# must have invalidated was refused (its fuzz-probe lines), the peer came
# through (no panic, still running), the reference files read back right
# through both mounts, a new file written through the hard mount reads
# back right, both unmount, and the transport's module unloads (and is
# loaded again).
#
# A failing round is reproduced with its seed: the peer's log names each
# mutation with the seed and the Reply's index (rpcrdma-peer --replay
# SEED --only N isolates one). The harness judges the guests' kernels
# (oops, WARN, KASAN, KFENCE, lockdep, kmemleak, hung tasks, taint).
#
# The kernel's C client runs it only where WIRE_FUZZ_C=1 (scripts/test.sh
# --wire-fuzz, which records its outcome as the reference column): a
# mutated Reply can crash it.
RUN_DIR=$1
. "$(dirname "$0")/lib.sh"

if [ "$TRANSPORT" = c ] && [ "${WIRE_FUZZ_C:-0}" != 1 ]; then
	tap_skip_test "live wire fuzzing" "the C client is fuzzed by scripts/test.sh --wire-fuzz only"
fi

PEER=$SOURCE_TOP/rust/peer/target/release/rpcrdma-peer
PORT=20060
LOG_DIR=$RUN_DIR/nfs_wire_fuzz
CLIENT_LOG=$LOG_DIR/client.log
PEER_LOG=$LOG_DIR/peer.log
PEER_PID=$LOG_DIR/peer.pid
FUZZ_FILE=$LOG_DIR/fuzz
HARD=/mnt/wire-fuzz-hard
SOFT=/mnt/wire-fuzz-soft
SCRATCH=/run/wire-fuzz
# timeo=30: a Reply mutated into silence costs 3 s before the RPC is sent
# again (hard) or fails (soft, after one retransmission).
BASE_OPTS="vers=3,proto=rdma,mountproto=tcp,nolock,noacl,nosharecache,timeo=30,port=$PORT"
HARD_OPTS="$BASE_OPTS,hard,retrans=2"
SOFT_OPTS="$BASE_OPTS,soft,retrans=1"
WIRE_FUZZ_SECONDS=${WIRE_FUZZ_SECONDS:-60}
WIRE_FUZZ_ROUND=${WIRE_FUZZ_ROUND:-30}
WIRE_FUZZ_RATE=${WIRE_FUZZ_RATE:-0.1}
WIRE_FUZZ_SEED=${WIRE_FUZZ_SEED:-$(date +%s)}
# After a round the peer serves correctly: what fio still has in flight
# then ends within this, or the round fails.
DRAIN_LIMIT=180
REF_FILES=1
REF_SIZE=4M

rounds=$(((WIRE_FUZZ_SECONDS + WIRE_FUZZ_ROUND - 1) / WIRE_FUZZ_ROUND))
[ "$rounds" -ge 1 ] || rounds=1
mkdir -p "$LOG_DIR" "$SCRATCH" "$HARD" "$SOFT"
: >"$CLIENT_LOG"
: >"$FUZZ_FILE"

tap_plan $((3 + rounds + 7))
tap_diag "seeds $WIRE_FUZZ_SEED to $((WIRE_FUZZ_SEED + rounds - 1)), rate $WIRE_FUZZ_RATE," \
	"$rounds rounds of $WIRE_FUZZ_ROUND s"

# ---- The peer, in the server guest ----

peer_start() {
	server_run "'$PEER' --listen 0.0.0.0:$PORT --lifetime $((WIRE_FUZZ_SECONDS * 4 + 1800)) \
		--fuzz-file '$FUZZ_FILE' </dev/null >'$PEER_LOG' 2>&1 & echo \$! >'$PEER_PID'
		for i in \$(seq 150); do
			grep -q '^listening ' '$PEER_LOG' && exit 0
			grep -q '^exit ' '$PEER_LOG' && exit 1
			sleep 0.1
		done
		exit 1" || { tap_diag "the peer did not start: $(tail -2 "$PEER_LOG" 2>/dev/null | tr '\n' ' ')"; return 1; }
}

peer_alive() {
	[ -s "$PEER_PID" ] && server_run "kill -0 \$(cat '$PEER_PID') 2>/dev/null"
}

peer_stop() {
	[ -s "$PEER_PID" ] || return 0
	server_run "pid=\$(cat '$PEER_PID'); kill \$pid 2>/dev/null
		for i in \$(seq 50); do kill -0 \$pid 2>/dev/null || exit 0; sleep 0.2; done
		kill -9 \$pid 2>/dev/null; exit 0"
}

# fuzzing SEED RATE [lie] | off: sets the peer's --fuzz-file and waits
# (up to 10 s) until its log says it took it.
fuzzing() {
	local want i
	if [ "$1" = off ]; then
		: >"$FUZZ_FILE"
		want="fuzzing off"
	else
		echo "$*" >"$FUZZ_FILE"
		want="fuzzing seed=$1 "
	fi
	for ((i = 0; i < 50; i++)); do
		grep -qF "$want" "$PEER_LOG" 2>/dev/null && return 0
		sleep 0.2
	done
	tap_diag "the peer did not log '$want'"
	return 1
}

# ---- The client ----

wf_mount() { # MNT OPTS
	timeout -s KILL 90 mount -i -t nfs -o "$2,addr=$SERVER_IP4" "$SERVER_IP4:/srv/export" "$1" \
		>>"$CLIENT_LOG" 2>&1 && rdma_mount_carrier_ok "$SERVER_IP4"
}

wf_umount() { # MNT
	mounted "$1" || return 0
	timeout -s KILL 60 umount "$1" >>"$CLIENT_LOG" 2>&1 && return 0
	umount -f -l "$1" >>"$CLIENT_LOG" 2>&1
	return 1
}

# The job every reference file is written and read with (verify_only
# reads what the same job wrote).
ref_job() { # FILE
	echo "--name=ref --filename=$1 --rw=write --bs=16k --size=$REF_SIZE --ioengine=libaio"
	echo "--iodepth=8 --direct=1 --verify=crc32c --verify_fatal=0 --continue_on_error=all"
	echo "--verify_state_save=0"
}

# fio_judge OUT: sets wrong (verification failures: fio says each on its
# standard error, OUT with .err for .txt) and errs (errors fio counted,
# verification failures included) from fio's report OUT (terse records
# via fio_terse).
fio_judge() {
	wrong=$(cat "$1" "${1%.txt}.err" 2>/dev/null | grep -ciE 'verify: bad|verify failed|verify type mismatch')
	errs=$(fio_terse "$1" 2>/dev/null | awk -F';' '
		/errors *: total=/ { sub(/.*total=/, ""); t += $0 + 0; seen = 1 }
		$1 == 3 && $5 != 0 { f = 1 }
		END { print (seen ? t : f) + 0 }')
}

write_refs() {
	local i
	for ((i = 1; i <= REF_FILES; i++)); do
		# shellcheck disable=SC2046
		timeout -s KILL 300 fio $(ref_job "$HARD/ref$i") --do_verify=1 --output-format=terse,normal \
			--output="$LOG_DIR/fio-ref$i.txt" >/dev/null 2>"$LOG_DIR/fio-ref$i.err" || {
			tap_diag "writing ref$i failed: $(tail -3 "$LOG_DIR/fio-ref$i.txt" | tr '\n' ' ')"
			return 1
		}
		fio_judge "$LOG_DIR/fio-ref$i.txt"
		[ "$wrong" = 0 ] && [ "$errs" = 0 ] || { tap_diag "ref$i: $wrong wrong, $errs errors"; return 1; }
	done
}

# read_refs MNT TAG: every reference file read through MNT and verified;
# the reports in $LOG_DIR/fio-TAG-refN.txt. Sets wrong and errs, summed.
read_refs() {
	local i w=0 e=0
	for ((i = 1; i <= REF_FILES; i++)); do
		# shellcheck disable=SC2046
		timeout -s KILL "$DRAIN_LIMIT" fio $(ref_job "$1/ref$i") --verify_only \
			--output-format=terse,normal --output="$LOG_DIR/fio-$2-ref$i.txt" >/dev/null \
			2>"$LOG_DIR/fio-$2-ref$i.err"
		fio_judge "$LOG_DIR/fio-$2-ref$i.txt"
		w=$((w + wrong)) e=$((e + errs))
	done
	wrong=$w errs=$e
}

# soft_reader TAG: reads the reference files through the soft mount until
# $SCRATCH/stop exists, and lists the directory (READDIRPLUS, whose
# Replies come in a Reply chunk); one report per pass.
soft_reader() {
	local pass=0
	while [ ! -e "$SCRATCH/stop" ]; do
		pass=$((pass + 1))
		read_refs "$SOFT" "$1-soft-$pass"
		ls -l "$SOFT" >/dev/null 2>&1
	done
}

# hard_writer R: new files through the hard mount, written and read back
# verified, until $SCRATCH/stop exists; one report per pass. (The peer's
# directory is flat: it has no MKDIR.)
hard_writer() {
	local pass=0
	while [ ! -e "$SCRATCH/stop" ]; do
		pass=$((pass + 1))
		timeout -s KILL "$DRAIN_LIMIT" fio --name=hard --filename="$HARD/r$1-f$pass" \
			--rw=randwrite --bsrange=4k-256k --size=2M --ioengine=libaio --iodepth=8 --direct=1 \
			--verify=crc32c --do_verify=1 --verify_fatal=0 --continue_on_error=all --verify_state_save=0 \
			--output-format=terse,normal --output="$LOG_DIR/fio-r$1-hard-$pass.txt" >/dev/null \
			2>"$LOG_DIR/fio-r$1-hard-$pass.err"
		rm -f "$HARD/r$1-f$pass"
	done
}

# round R SEED: fuzzes for WIRE_FUZZ_ROUND seconds while the soft mount
# reads and the hard mount writes, then stops fuzzing and waits for the
# I/O to end. Judges every fio report of the round.
round() {
	local r=$1 seed=$2 pids f w=0 e=0 unjudged=0 mutations rc=0
	rm -f "$SCRATCH/stop"
	fuzzing "$seed" "$WIRE_FUZZ_RATE" || return 1
	soft_reader "r$r" &
	pids=$!
	hard_writer "$r" &
	pids="$pids $!"
	sleep "$WIRE_FUZZ_ROUND"
	touch "$SCRATCH/stop"
	fuzzing off || rc=1
	# shellcheck disable=SC2086
	if ! timeout "$DRAIN_LIMIT" bash -c "while kill -0 $pids 2>/dev/null; do sleep 1; done"; then
		tap_diag "round $r: the I/O had not ended $DRAIN_LIMIT s after the fuzzing stopped"
		# shellcheck disable=SC2086
		kill -9 $pids 2>/dev/null
		rc=1
	fi
	# shellcheck disable=SC2086
	wait $pids 2>/dev/null
	for f in "$LOG_DIR"/fio-r"$r"-soft-*.txt; do
		[ -e "$f" ] || continue
		fio_judge "$f"
		w=$((w + wrong)) e=$((e + errs))
		[ "$wrong" = 0 ] || tap_diag "round $r: ${f##*/}: $wrong verification failures:" \
			"$(grep -m2 -h 'verify' "${f%.txt}.err" | tr '\n' ' ')"
	done
	for f in "$LOG_DIR"/fio-r"$r"-hard-*.txt; do
		[ -e "$f" ] || continue
		fio_judge "$f"
		e=$((e + errs))
		if [ "$errs" -gt "$wrong" ]; then
			# Errors besides the verification failures: writes that
			# failed leave content nobody knows.
			unjudged=$((unjudged + 1))
			continue
		fi
		w=$((w + wrong))
		[ "$wrong" = 0 ] || tap_diag "round $r: ${f##*/}: $wrong verification failures:" \
			"$(grep -m2 -h 'verify' "${f%.txt}.err" | tr '\n' ' ')"
	done
	mutations=$(grep -c "^fuzz seed=$seed " "$PEER_LOG")
	tap_diag "round $r: seed $seed, $mutations mutations, $(grep -c "^fuzz seed=$seed .*connect=" "$PEER_LOG")" \
		"of private data; fio: $w wrong, $e errors (wrong included), $unjudged hard-mount passes with failed writes" \
		"unjudged; $(grep -c '^accepted ' "$PEER_LOG") connections so far"
	grep "^fuzz seed=$seed " "$PEER_LOG" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^mutation=/) n[$i]++ }
		END { for (k in n) printf "%s:%d ", substr(k, 10), n[k]; print "" }' | sed 's/^/# mutations: /'
	[ "$mutations" -gt 0 ] || { tap_diag "round $r: the peer mutated nothing"; rc=1; }
	[ "$w" = 0 ] || rc=1
	return "$rc"
}

tap_check "the peer listens on port $PORT, serving correctly" peer_start
mounts() { wf_mount "$HARD" "$HARD_OPTS" && wf_mount "$SOFT" "$SOFT_OPTS"; }
tap_check "a hard and a soft NFSv3 mount of the peer over rdma" mounts
tap_check "reference data written and read back verified ($REF_FILES × $REF_SIZE)" write_refs

for ((r = 1; r <= rounds; r++)); do
	tap_check "round $r (seed $((WIRE_FUZZ_SEED + r - 1))): no wrong data through either mount" \
		round "$r" $((WIRE_FUZZ_SEED + r - 1))
done
fuzzing off >/dev/null 2>&1

no_open_probe() {
	local n open
	n=$(grep -c '^fuzz-probe ' "$PEER_LOG")
	open=$(grep -c '^fuzz-probe .* result=open' "$PEER_LOG")
	tap_diag "$n RDMA Writes and Reads to rkeys the client had to invalidate:" \
		"$(grep '^fuzz-probe ' "$PEER_LOG" | grep -o 'result=[a-z]*' | sort | uniq -c | tr -s ' \n' ' ')"
	[ "$open" = 0 ] && return 0
	grep '^fuzz-probe .* result=open' "$PEER_LOG" | head -3 | sed 's/^/# /'
	return 1
}
tap_check "no RDMA Write or Read of the peer reached memory the client had to invalidate" no_open_probe

peer_fine() {
	if grep -qE 'panicked|^exit |^stopping ' "$PEER_LOG"; then
		tap_diag "the peer: $(grep -m1 -E 'panicked|^exit |^stopping ' "$PEER_LOG")"
		return 1
	fi
	peer_alive
}
tap_check "the peer came through every round" peer_fine

clean_reads() {
	local w e
	read_refs "$HARD" clean-hard
	w=$wrong e=$errs
	read_refs "$SOFT" clean-soft
	tap_diag "serving correctly again: reference files through hard: $w wrong, $e errors;" \
		"through soft: $wrong wrong, $errs errors"
	[ "$w" = 0 ] && [ "$e" = 0 ] && [ "$wrong" = 0 ] && [ "$errs" = 0 ]
}
tap_check "serving correctly again: the reference files read back right through both mounts" clean_reads

new_file() {
	local sum got
	head -c 4M /dev/urandom >"$SCRATCH/new.bin"
	sum=$(expected "$(sha256sum <"$SCRATCH/new.bin" | cut -d' ' -f1)")
	timeout -s KILL 120 dd if="$SCRATCH/new.bin" of="$HARD/new.bin" bs=1M oflag=direct status=none \
		2>>"$CLIENT_LOG" || return 1
	got=$(timeout -s KILL 120 dd if="$HARD/new.bin" bs=1M iflag=direct status=none 2>>"$CLIENT_LOG" |
		sha256sum | cut -d' ' -f1)
	[ "$got" = "$sum" ] || { tap_diag "new.bin: read $got, wrote $sum"; return 1; }
}
tap_check "a new 4 MiB file written through the hard mount reads back right" new_file

# The checks bite: a round in which the peer lies on purpose (each
# mutation a Reply sent twice that also changes a byte of the READ data it
# places, which no client can tell) must be caught as wrong data by the
# soft mount's reads.
lying_round() {
	local f w=0 pid
	rm -f "$SCRATCH/stop"
	fuzzing "$((WIRE_FUZZ_SEED + rounds))" 0.3 lie || return 1
	soft_reader lie &
	pid=$!
	sleep 10
	touch "$SCRATCH/stop"
	fuzzing off
	timeout "$DRAIN_LIMIT" bash -c "while kill -0 $pid 2>/dev/null; do sleep 1; done" || kill -9 "$pid"
	wait "$pid" 2>/dev/null
	for f in "$LOG_DIR"/fio-lie-soft-*.txt; do
		[ -e "$f" ] || continue
		fio_judge "$f"
		w=$((w + wrong))
	done
	tap_diag "the lying round: $w verification failures found," \
		"$(grep -c "^fuzz seed=$((WIRE_FUZZ_SEED + rounds)) " "$PEER_LOG") mutations"
	[ "$w" -gt 0 ]
}
tap_check "the checks bite: a peer lying about the data it places is caught as wrong data" lying_round

umounts() { wf_umount "$SOFT" && wf_umount "$HARD"; }
tap_check "both mounts unmounted" umounts
peer_stop || tap_diag "the peer did not stop"

reload() {
	unload_transport || { tap_diag "the module did not unload"; return 1; }
	load_transport
}
tap_check "the transport's module unloads, and loads again" reload
rm -rf "$SCRATCH"
tap_exit
