#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the Rust-enabled test kernel from Debian's linux-source-6.12 into the
# cache directory, keyed by kernel version, config fragment, rustc and
# bindgen.  A build whose key matches is reused.  Prints the build tree.
# KERNEL_FLAVOR=bench builds the benchmark kernel instead (scripts/lib.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dir=$(kernel_dir)
mapfile -t kmake_vars < <(kernel_make_vars)
if [ -f "$dir/.rpcrdma-rs-complete" ]; then
	log "$KERNEL_FLAVOR kernel is cached: $dir"
	echo "$dir"
	exit 0
fi

[ -f "$KERNEL_SOURCE_TARBALL" ] || die "no $KERNEL_SOURCE_TARBALL (run scripts/setup.sh)"
top=$(dirname "$dir")
log "building the $KERNEL_FLAVOR kernel in $dir (about 15 minutes with -j$JOBS)"
rm -rf "$top"
mkdir -p "$top"
fragment=$top/fragment.config
kernel_fragment >"$fragment"
tar -xf "$KERNEL_SOURCE_TARBALL" -C "$top"
mv "$top/linux-source-6.12" "$dir"
cd "$dir"

# A virtme-ng base (what its guests need to boot), then the fragment over it.
virtme-configkernel --defconfig "${kmake_vars[@]}" >"$top/config.log" 2>&1
scripts/kconfig/merge_config.sh -m .config "$fragment" >>"$top/config.log" 2>&1
make -s olddefconfig "${kmake_vars[@]}"

# Every option the fragment sets must have survived olddefconfig.
bad=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*)
		grep -qxF "$line" .config || { log "config: $line did not stick"; bad=1; } ;;
	"# CONFIG_"*" is not set")
		sym=${line#\# }; sym=${sym%% *}
		if grep -q "^$sym=" .config; then log "config: $sym is still set"; bad=1; fi ;;
	esac
done <"$fragment"
[ "$bad" = 0 ] || die "the config fragment does not apply cleanly"

make -j"$JOBS" bzImage modules "${kmake_vars[@]}" >"$top/build.log" 2>&1 ||
	{ tail -40 "$top/build.log" >&2; die "kernel build failed (log: $top/build.log)"; }
touch .rpcrdma-rs-complete
log "$KERNEL_FLAVOR kernel built: $dir"
echo "$dir"
