#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the protocol core's fuzz targets, one after the other, each for N
# seconds (first argument, default 60) with a single libFuzzer worker.
#
#   fuzz/run.sh [SECONDS] [TARGET...]
#
# Targets default to all three: header_decode, private_data_decode,
# chunk_plan. Installs cargo-fuzz from crates.io when it is missing. Works
# on a stable toolchain: RUSTC_BOOTSTRAP=1 lets rustc accept the -Z
# sanitizer flags cargo-fuzz passes. The seeds are only read: corpus/<target>/
# and, for the two decoders, the wire corpus captured from real traffic
# (../tests/wire/*.hdr and *.pd). What the fuzzer finds goes to
# target/fuzz-corpus/<target>/ (FUZZ_CORPUS overrides), crashes to
# artifacts/<target>/. Exits non-zero when a target fails. The build has
# debug assertions and overflow checks on, as the kernel build does.
# FUZZ_SANITIZER picks the sanitizer (default address; "none" is faster).
set -euo pipefail

cd "$(dirname "$0")"

secs="${1:-60}"
if [ $# -gt 0 ]; then
	shift
fi
case "$secs" in
'' | *[!0-9]*)
	echo "usage: $0 [SECONDS] [TARGET...]" >&2
	exit 2
	;;
esac
if [ $# -gt 0 ]; then
	targets=("$@")
else
	targets=(header_decode private_data_decode chunk_plan)
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
	echo "run.sh: installing cargo-fuzz from crates.io" >&2
	cargo install cargo-fuzz --locked
fi

export RUSTC_BOOTSTRAP=1
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-1}"
sanitizer="${FUZZ_SANITIZER:-address}"
work="${FUZZ_CORPUS:-target/fuzz-corpus}"

max_len() {
	case "$1" in
	header_decode) echo 4096 ;;       # larger than any real header
	private_data_decode) echo 256 ;;  # CM private data is at most 196 bytes
	chunk_plan) echo 64 ;;            # 14 words of input
	*) echo 4096 ;;
	esac
}

# wire_seeds TARGET: the captured files that seed TARGET.
wire_seeds() {
	case "$1" in
	header_decode) echo ../tests/wire/*.hdr ;;
	private_data_decode) echo ../tests/wire/*.pd ;;
	esac
}

seeds=$(mktemp -d)
trap 'rm -rf "$seeds"' EXIT
for t in "${targets[@]}"; do
	mkdir -p "$work/$t" "corpus/$t" "$seeds/$t"
	# shellcheck disable=SC2046 # a list of file names without spaces
	cp corpus/"$t"/* $(wire_seeds "$t") "$seeds/$t/" 2>/dev/null || true
	echo "run.sh: fuzzing $t for ${secs}s from $(ls "$seeds/$t" | wc -l) seeds" >&2
	cargo fuzz run --sanitizer "$sanitizer" --debug-assertions --jobs 1 \
		"$t" "$work/$t" "$seeds/$t" -- \
		-max_total_time="$secs" -max_len="$(max_len "$t")" \
		-timeout=10 -print_final_stats=1
done
