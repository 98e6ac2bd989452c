#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The selftests as a kselftest target, checked on this machine against the
# kernel tree KDIR (default: the test kernel's): from a tree holding them
# (scripts/lib.sh ksft_tree), `make -C tools/testing/selftests
# TARGETS=rpcrdma_rs install` must give a run_kselftest.sh whose list is
# exactly the Makefile's TEST_PROGS, every program executable, with
# settings, config, lib.sh and the kernel's KTAP helpers beside them; every
# script in the directory must be named by the Makefile; and a test that
# run_kselftest.sh starts with no server described must skip, exit status
# KSFT_SKIP. The guests run the tests the other way, make run_tests
# (guest_client.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kdir=${1:-$(kernel_dir)}
[ -d "$kdir/tools/testing/selftests/kselftest" ] || die "no kselftest in $kdir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bad=0
problem() { echo "ksft-check: $*"; bad=1; }

ksft=$(ksft_tree "$kdir" "$work")
inst=$work/install
make -s -C "$ksft" TARGETS=rpcrdma_rs KSFT_INSTALL_PATH="$inst" install >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log"; die "make install failed"; }

# The Makefile's lists, as make reads them.
var() {
	printf 'print: ; @echo $(%s)\n' "$1" |
		make -s --no-print-directory -C "$ksft/rpcrdma_rs" -f Makefile -f - print
}
progs=$(var TEST_PROGS) extended=$(var TEST_PROGS_EXTENDED) files=$(var TEST_FILES)
[ -n "$progs" ] || problem "the Makefile names no TEST_PROGS"

[ -x "$inst/run_kselftest.sh" ] || problem "no executable run_kselftest.sh in the install"
want=$(for p in $progs; do echo "rpcrdma_rs:$p"; done)
got=$(cat "$inst/kselftest-list.txt" 2>/dev/null || true)
[ "$want" = "$got" ] || problem "kselftest-list.txt is not TEST_PROGS: $(diff <(echo "$want") <(echo "$got") | tr '\n' ' ')"
for p in $progs $extended; do
	[ -x "$inst/rpcrdma_rs/$p" ] || problem "$p is not installed executable"
done
for f in $files settings config; do
	[ -f "$inst/rpcrdma_rs/$f" ] || problem "$f is not installed"
done
[ -f "$inst/kselftest/ktap_helpers.sh" ] || problem "the KTAP helpers are not installed"
for f in "$RPCRDMA_RS_TOP"/selftests/rpcrdma_rs/*.sh; do
	f=${f##*/}
	case " $progs $extended $files " in *" $f "*) ;; *) problem "$f is in no list of the Makefile" ;; esac
done

# A test with no run directory described skips, as kselftest wants.
t=${progs%% *}
out=$(cd "$inst" && env -u RPCRDMA_RS_RUN_DIR ./run_kselftest.sh -t "rpcrdma_rs:$t" 2>&1) || true
grep -qxF "ok 1 selftests: rpcrdma_rs: $t # SKIP" <<<"$out" &&
	grep -qF "# 1..0 # SKIP $t: no server described" <<<"$out" ||
	problem "run_kselftest.sh -t rpcrdma_rs:$t without a server did not skip: $(tr '\n' ' ' <<<"$out")"

[ "$bad" = 0 ] || exit 1
echo "ksft-check: $(wc -w <<<"$progs") tests and $(wc -w <<<"$extended") helpers installed as a kselftest target; a test without a server skips"
