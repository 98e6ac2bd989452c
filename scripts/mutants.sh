#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Proof that the tests bite: each file in selftests/rpcrdma_rs/mutants/
# plants one fault in a copy of this tree, and the test named in it must
# go red on that copy. Ends with "N passed, N failed": a mutant the tests
# catch passes, one they miss fails. scripts/test.sh --mutants runs it.
#
#   scripts/mutants.sh [NAME...]      (default: every mutant)
#
# A mutant is a diff that `git apply` takes, after header lines:
#   # promise: what it breaks (for the report)
#   # test: a selftest (hostile_peer.sh, ...) or "host" (cargo test in rust/host)
#   # rdma: rxe or siw (selftests)
#   # env: NAME=VALUE (selftests; any number of these lines)
#   # red: an extended regular expression that a failed case of the test
#          must match ("not ok" lines of its TAP, the run's problems, the
#          reply-order witness's lines in the client's kernel log, or
#          cargo's failed tests)
# A selftest mutant builds the copy's module with the test hooks and runs
# its test with it in the two-guest harness (the checkout's tests and
# peer, the copy's module); it is caught when the run fails and a failed
# case matches "red". A run that fails in no matching case (a guest that
# did not boot, another case that failed) is not proof: it fails too.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$RPCRDMA_RS_TOP"

dir=$RPCRDMA_RS_TOP/selftests/rpcrdma_rs/mutants
results=$RPCRDMA_RS_CACHE/runs/mutants-$(date +%Y%m%d-%H%M%S)
# The copies live in the cache: the guests mount /tmp afresh.
work=$RPCRDMA_RS_CACHE/mutants
mkdir -p "$results" "$work"

names=("$@")
if [ ${#names[@]} = 0 ]; then
	for f in "$dir"/*.diff; do names+=("$(basename "$f" .diff)"); done
fi

# header FILE KEY: every value of "# KEY: VALUE" lines before the diff.
header() {
	sed -n '/^diff --git /q; s/^# '"$2"': *//p' "$1"
}

passed=0 failed=0
report=()
for name in "${names[@]}"; do
	m=$dir/$name.diff
	[ -f "$m" ] || die "no mutant $m"
	test=$(header "$m" test)
	red=$(header "$m" red)
	promise=$(header "$m" promise)
	[ -n "$test" ] && [ -n "$red" ] || die "$m: needs '# test:' and '# red:' lines"
	out=$results/$name
	mkdir -p "$out"
	log "mutant $name ($promise): $test must fail matching /$red/"

	# The copy: the tracked and new files of the checkout as they are now.
	copy=$work/$name
	rm -rf "$copy"
	mkdir -p "$copy"
	git ls-files -z --cached --others --exclude-standard | tar -cf - --null -T - | tar -xf - -C "$copy"
	if ! (cd "$copy" && git apply "$m") >"$out/apply.log" 2>&1; then
		cat "$out/apply.log" >&2
		report+=("FAIL $name: does not apply (the code it changes moved: renew the mutant)")
		failed=$((failed + 1))
		continue
	fi

	verdict=""
	if [ "$test" = host ]; then
		(cd "$copy/rust/host" && cargo test 2>&1) >"$out/host.log" || true
		grep -E '^test .* \.\.\. FAILED$|^    [^ ]+$' "$out/host.log" >"$out/red.txt" || true
		if ! grep -qE '^test result: FAILED' "$out/host.log"; then
			verdict="missed: cargo test passed"
		elif ! grep -qE "$red" "$out/red.txt"; then
			verdict="failed, but in no test matching /$red/: $(head -3 "$out/red.txt" | tr '\n' ' ')"
		fi
	else
		rdma=$(header "$m" rdma)
		envs=()
		while IFS= read -r e; do [ -n "$e" ] && envs+=(--env "$e"); done < <(header "$m" env)
		if ! (cd "$copy" && scripts/build-module.sh) >"$out/build.log" 2>&1; then
			tail -20 "$out/build.log" >&2
			report+=("FAIL $name: the planted module does not build (see $out/build.log)")
			failed=$((failed + 1))
			continue
		fi
		scripts/harness.sh --transport rs --rdma "${rdma:-rxe}" --tests "$test" \
			--module "$copy/rpcrdma_rs.ko" --out "$out/run" "${envs[@]}" >"$out/harness.log" 2>&1 && rc=0 || rc=$?
		# The failed cases, the run's problems, and what the reply-order
		# witness logged (its count is what the tests read; a planted
		# fault that corrupts memory may end a test before it reads it).
		{
			grep -hE '^not ok ' "$out/run/tap/$test.tap" 2>/dev/null || true
			cat "$out/run/problems.txt" 2>/dev/null || true
			grep -hE 'rpcrdma_rs: .*(delivered before its memory region|registered again before it was invalidated)' \
				"$out/run/client-dmesg.txt" 2>/dev/null || true
		} >"$out/red.txt"
		if [ "$rc" = 0 ]; then
			verdict="missed: $test passed"
		elif ! grep -qE "$red" "$out/red.txt"; then
			verdict="red, but in no case matching /$red/: $(head -3 "$out/red.txt" | tr '\n' ' ')"
		fi
	fi
	if [ -z "$verdict" ]; then
		report+=("ok   $name: caught by $test: $(grep -E "$red" "$out/red.txt" | head -1)")
		passed=$((passed + 1))
	else
		report+=("FAIL $name: $verdict (logs: $out)")
		failed=$((failed + 1))
	fi
	rm -rf "$copy"
done

log "mutants: $results"
printf '%s\n' "${report[@]}" | tee "$results/report.txt"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
