#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Install what rpcrdma-rs needs on a Debian 12 machine: Debian packages for
# the kernel build and the guests, bindgen-cli from crates.io and virtme-ng
# from PyPI (both pinned, both into the cache directory).  Says what it
# installs; does nothing when everything is there.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DEBIAN_PACKAGES=(
	# kernel build
	linux-source-6.12 rustc-web rust-web-src rust-web-clippy rustfmt-web
	libclang-dev clang
	# the KASAN kernel (scripts/test.sh --wire-fuzz) is built with LLVM=1
	llvm lld
	build-essential flex bison bc libelf-dev libssl-dev cpio kmod dwarves
	xz-utils python3-venv
	# guests and what runs inside them (virtme shares the host's root)
	qemu-system-x86 busybox-static udev iproute2 rdma-core ibverbs-utils
	perftest nfs-kernel-server nfs-common rpcbind fio tcpdump tshark
	procps psmisc
	# make dkms, and dkms.sh, which installs the module through it
	dkms
	# kselftest's install and out-of-tree runs copy with rsync
	# (scripts/ksft-check.sh)
	rsync
	# rust/peer, the hostile RPC-over-RDMA server (hostile_peer.sh): its
	# bindings are generated from these headers
	libibverbs-dev librdmacm-dev
	# a Kerberos realm in the guests (nfs_krb5.sh): krb5kdc, kdb5_util and
	# kadmin.local, kinit and klist
	krb5-kdc krb5-admin-server krb5-user
)

missing=()
for pkg in "${DEBIAN_PACKAGES[@]}"; do
	if ! dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$pkg")
	fi
done
# Without a cargo on PATH, Debian's (the same release as rustc-web) does.
command -v cargo >/dev/null || missing+=(cargo-web)
if [ ${#missing[@]} -gt 0 ]; then
	log "installing Debian packages: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# tshark asks whether non-root users may capture; the answer does not matter here.
	echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
	# krb5-config asks for a default realm and its servers; nfs_krb5.sh
	# writes the guests' own krb5.conf.
	debconf-set-selections <<-EOF
		krb5-config krb5-config/default_realm string RPCRDMA.TEST
		krb5-config krb5-config/add_servers boolean false
	EOF
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if ! "$BINDGEN" --version 2>/dev/null | grep -q " $BINDGEN_VERSION\$"; then
	log "installing bindgen-cli $BINDGEN_VERSION into $RPCRDMA_RS_CACHE/tools"
	cargo install --locked --root "$RPCRDMA_RS_CACHE/tools" "bindgen-cli@$BINDGEN_VERSION"
fi

if ! cargo fuzz --version 2>/dev/null | grep -q " $CARGO_FUZZ_VERSION\$"; then
	log "installing cargo-fuzz $CARGO_FUZZ_VERSION into $RPCRDMA_RS_CACHE/tools"
	cargo install --locked --root "$RPCRDMA_RS_CACHE/tools" "cargo-fuzz@$CARGO_FUZZ_VERSION"
fi

if ! "$VNG" --version 2>/dev/null | grep -q " $VIRTME_NG_VERSION\$"; then
	log "installing virtme-ng $VIRTME_NG_VERSION into $RPCRDMA_RS_CACHE/venv"
	python3 -m venv "$RPCRDMA_RS_CACHE/venv"
	"$RPCRDMA_RS_CACHE/venv/bin/pip" install -q "virtme-ng==$VIRTME_NG_VERSION"
fi

# The guests boot through scripts/guest-init.sh, which skips udev's
# coldplug, then runs virtme-ng-init (see there).
guest_tools=$("$RPCRDMA_RS_CACHE/venv/bin/python3" -c \
	'import virtme.resources as r; print(r.find_guest_tools())')/bin
[ -x "$guest_tools/virtme-ng-init" ] || die "virtme-ng has no $guest_tools/virtme-ng-init"
wrapper=$RPCRDMA_RS_TOP/scripts/guest-init.sh
if ! cmp -s "$wrapper" "$guest_tools/virtme-ng-init"; then
	# A virtme-ng (re)installed since: its own init is a binary.
	[ "$(head -c 2 "$guest_tools/virtme-ng-init")" = '#!' ] ||
		mv "$guest_tools/virtme-ng-init" "$guest_tools/virtme-ng-init.real"
	install -m 0755 "$wrapper" "$guest_tools/virtme-ng-init"
fi

"$RUSTC" --version >/dev/null || die "$RUSTC does not run"
[ -d "$("$RUSTC" --print sysroot)/lib/rustlib/src/rust/library" ] ||
	die "$RUSTC has no rust-src (Debian: rust-web-src)"
log "setup complete"
