#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds rpcrdma_rs.ko against KDIR (default: the cached test kernel), with
# the test hooks (RPCRDMA_RS_TEST_HOOKS=y: the debugfs connection probe the
# selftests use): this is the module the test and demo guests load.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
kdir=${KDIR:-$(kernel_dir)}
[ -f "$kdir/Makefile" ] || die "no kernel build tree at $kdir"
make -C "$RPCRDMA_RS_TOP" KDIR="$kdir" RUSTC="$RUSTC" RUSTDOC="$RUSTDOC" BINDGEN="$BINDGEN" \
	RPCRDMA_RS_TEST_HOOKS=y modules
