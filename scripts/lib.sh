# SPDX-License-Identifier: GPL-2.0
# Shared settings for the rpcrdma-rs scripts: where things are cached and
# which tools the build uses.  Sourced, never run.

RPCRDMA_RS_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RPCRDMA_RS_CACHE=${RPCRDMA_RS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rpcrdma-rs}

# Pinned tool versions, installed by scripts/setup.sh into the cache.
BINDGEN_VERSION=0.73.2
CARGO_FUZZ_VERSION=0.13.2
VIRTME_NG_VERSION=1.42

# The kernel Makefile ignores RUSTC/RUSTDOC/BINDGEN from the environment,
# so these go on every make command line.  Debian's rustc-web ships the
# library source the kernel needs; a rustup toolchain usually does not.
RUSTC=${RUSTC:-/usr/bin/rustc}
RUSTDOC=${RUSTDOC:-/usr/bin/rustdoc}
BINDGEN=${BINDGEN:-$RPCRDMA_RS_CACHE/tools/bin/bindgen}
VNG=${VNG:-$RPCRDMA_RS_CACHE/venv/bin/vng}
# vng runs its helpers (virtme-run, virtme-configkernel) from PATH; cargo
# may live in rustup's default place without being on PATH.
PATH=$(dirname "$VNG"):$RPCRDMA_RS_CACHE/tools/bin:$PATH:$HOME/.cargo/bin
KMAKE_VARS=(RUSTC="$RUSTC" RUSTDOC="$RUSTDOC" BINDGEN="$BINDGEN" HOSTRUSTC="$RUSTC")

# Build parallelism: the project machines have two cores.
JOBS=${JOBS:-3}

KERNEL_SOURCE_TARBALL=${KERNEL_SOURCE_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
KERNEL_CONFIG_FRAGMENT=$RPCRDMA_RS_TOP/selftests/rpcrdma_rs/config

log() { printf '[rpcrdma-rs] %s\n' "$*" >&2; }

# The hostile server hostile_peer.sh runs in the server guest, which shares
# this machine's root: rust/peer/target/release/rpcrdma-peer. Its crates
# come from the local registry cache when they are there.
build_peer() {
	(cd "$RPCRDMA_RS_TOP/rust/peer" &&
		{ cargo build -q --release --offline -j 2 2>/dev/null || cargo build -q --release -j 2; })
}
die() { printf '[rpcrdma-rs] error: %s\n' "$*" >&2; exit 1; }

# Three kernels are built from the same source: "test" (the default), with
# the debugging options the tests rely on; "bench" (KERNEL_FLAVOR=bench,
# scripts/bench.sh), the same configuration without them (the test
# fragment with its debugging and fault-injection section, its last, cut
# out, then config.bench over it); and "kasan" (KERNEL_FLAVOR=kasan,
# scripts/test.sh --wire-fuzz), the test fragment with config.kasan over
# it, built with clang (kernel_make_vars). Each merges config.tcg, the
# harness's own options, after the tests' config.
KERNEL_FLAVOR=${KERNEL_FLAVOR:-test}
KERNEL_TCG_FRAGMENT=$RPCRDMA_RS_TOP/selftests/rpcrdma_rs/config.tcg
KERNEL_BENCH_FRAGMENT=$RPCRDMA_RS_TOP/selftests/rpcrdma_rs/config.bench
KERNEL_KASAN_FRAGMENT=$RPCRDMA_RS_TOP/selftests/rpcrdma_rs/config.kasan
kernel_fragment() {
	case "$KERNEL_FLAVOR" in
	test) cat "$KERNEL_CONFIG_FRAGMENT" "$KERNEL_TCG_FRAGMENT" ;;
	bench)
		sed '/^# Debugging options the tests rely on/,$d' "$KERNEL_CONFIG_FRAGMENT"
		cat "$KERNEL_TCG_FRAGMENT" "$KERNEL_BENCH_FRAGMENT" ;;
	kasan) cat "$KERNEL_CONFIG_FRAGMENT" "$KERNEL_TCG_FRAGMENT" "$KERNEL_KASAN_FRAGMENT" ;;
	*) die "KERNEL_FLAVOR is test, bench or kasan, not $KERNEL_FLAVOR" ;;
	esac
}

# What every make of this flavor's kernel, and of modules for it, adds:
# the kasan kernel is built with clang and lld, and so must its modules be.
kernel_make_vars() {
	printf '%s\n' "${KMAKE_VARS[@]}"
	[ "$KERNEL_FLAVOR" != kasan ] || echo LLVM=1
}

# The cache key of a kernel: everything its build depends on.
# Bump KERNEL_RECIPE when the way the kernel is built changes.
KERNEL_RECIPE=1
kernel_cache_key() {
	local kver rver
	kver=$(dpkg-query -W -f '${Version}' linux-source-6.12 2>/dev/null) || kver=unknown
	rver=$("$RUSTC" --version 2>/dev/null | tr ' ' _)
	{
		echo "recipe=$KERNEL_RECIPE"
		echo "kernel=$kver"
		echo "rustc=$rver"
		echo "bindgen=$BINDGEN_VERSION"
		[ "$KERNEL_FLAVOR" != kasan ] || clang --version 2>/dev/null | head -1
		# The options, in order; not the comments, which change no build.
		kernel_fragment | grep -E '^(CONFIG_|# CONFIG_[A-Za-z0-9_]+ is not set$)'
	} | sha256sum | cut -c1-16
}

# ksft_tree KDIR DIR: makes DIR/linux a kernel tree for kselftest with
# this checkout's tests in it, and prints its tools/testing/selftests: each
# entry of KDIR linked (the directories down to selftests/ made), and
# tools/testing/selftests/rpcrdma_rs a copy of
# selftests/rpcrdma_rs, as a kernel developer adds a selftest target (not
# a link: kselftest's runner names a test, and finds its "settings", by
# its directory's place under selftests/).
ksft_tree() {
	local k=$1 t=$2/linux d e name sub=(tools testing selftests rpcrdma_rs) i=0
	rm -rf "$t"
	for d in . tools tools/testing tools/testing/selftests; do
		mkdir -p "$t/$d"
		for e in "$k/$d"/* "$k/$d"/.[!.]*; do
			name=${e##*/}
			[ -e "$e" ] && [ "$name" != "${sub[i]}" ] || continue
			ln -s "$e" "$t/$d/$name"
		done
		i=$((i + 1))
	done
	cp -R "$RPCRDMA_RS_TOP/selftests/rpcrdma_rs" "$t/tools/testing/selftests/rpcrdma_rs"
	# kselftest's own helpers copied too: an install finds TEST_INCLUDES
	# by their real path, which must be under this selftests/.
	rm "$t/tools/testing/selftests/kselftest"
	cp -R "$k/tools/testing/selftests/kselftest" "$t/tools/testing/selftests/kselftest"
	echo "$t/tools/testing/selftests"
}

# The directory of the cached kernel build tree of this flavor and key.
kernel_dir() {
	local prefix=kernel
	[ "$KERNEL_FLAVOR" = test ] || prefix=kernel-$KERNEL_FLAVOR
	echo "$RPCRDMA_RS_CACHE/$prefix-$(kernel_cache_key)/linux"
}

# build_module_copy DIR KDIR MAKE-ARGS...: builds rpcrdma_rs.ko against KDIR
# in DIR/src, a fresh copy of the sources (building in the checkout would
# replace the rpcrdma_rs.ko, and objects, the tests use with one for
# another kernel); the log in DIR/build.log. Tracked and new files as they
# are in the work tree, so that uncommitted changes are built; ignored
# files (build outputs) stay behind, and so do tracked files deleted from
# the work tree.
build_module_copy() {
	local build=$1 kdir=$2
	shift 2
	rm -rf "$build"
	mkdir -p "$build/src"
	if git -C "$RPCRDMA_RS_TOP" rev-parse --git-dir >/dev/null 2>&1; then
		(cd "$RPCRDMA_RS_TOP" && git ls-files -z --cached --others --exclude-standard |
			while IFS= read -r -d '' f; do if [ -e "$f" ]; then printf '%s\0' "$f"; fi; done |
			cpio -0 -pdm --quiet "$build/src")
	else
		tar -C "$RPCRDMA_RS_TOP" -cf - --exclude=rust/host/target --exclude=rust/peer/target \
			--exclude='*.o' --exclude='*.ko' --exclude='*.mod' --exclude='*.mod.c' --exclude='.*.cmd' \
			--exclude='*.rmeta' --exclude='.*.d' --exclude=Module.symvers --exclude=modules.order \
			--exclude=rust/bindings/generated.rs \
			Kbuild Makefile rust include scripts selftests | tar -C "$build/src" -xf -
	fi
	make -C "$build/src" KDIR="$kdir" RUSTC="$RUSTC" RUSTDOC="$RUSTDOC" BINDGEN="$BINDGEN" "$@" \
		modules >"$build/build.log" 2>&1 ||
		{ tail -40 "$build/build.log" >&2; return 1; }
}

# time_table TIMES BUDGET: the time table scripts/test.sh prints. TIMES has
# lines "PHASE SECONDS" (a run's phases as TRANSPORT/RDMA/NAME); BUDGET has
# lines "NAME SECONDS", where NAME is a phase, or the last part of a run's
# phase (boot, other, a test's file name), and "total".
time_table() {
	awk '
		FNR == NR { if ($1 !~ /^#/ && NF >= 2) budget[$1] = $2; next }
		{
			name = $1; key = name; sub(/.*\//, "", key)
			b = (name in budget) ? budget[name] : ((key in budget) ? budget[key] : "-")
			flag = (b != "-" && $2 + 0 > b + 0) ? "  over" : ""
			printf "  %-36s %6d %7s%s\n", name, $2, b, flag
			total += $2
		}
		END {
			b = ("total" in budget) ? budget["total"] : "-"
			flag = (b != "-" && total > b + 0) ? "  over" : ""
			printf "  %-36s %6d %7s%s\n", "total", total, b, flag
			printf "  (%d min %d s)\n", total / 60, total % 60
		}' "$2" "$1" | {
		printf '[rpcrdma-rs] time table (seconds; budget: %s)\n' "${2#"$RPCRDMA_RS_TOP"/}"
		printf '  %-36s %6s %7s\n' phase took budget
		cat
	}
}
