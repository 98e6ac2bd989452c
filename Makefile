# SPDX-License-Identifier: GPL-2.0
#
# Builds rpcrdma_rs.ko against KDIR, a Rust-enabled 6.12 build tree.  By
# default KDIR is the test kernel scripts/build-kernel.sh keeps in the cache.
#
# RPCRDMA_RS_TEST_HOOKS=y compiles in the test hooks as well: the debugfs
# connection probe (rust/xprt/probe.rs, /sys/kernel/debug/rpcrdma_rs/connect)
# and the ignore_peer_private module parameter, which the selftests drive.  scripts/build-module.sh sets it for the test
# guests; a plain `make` builds the module without them, as users should.
# Switching it rebuilds the crate (kbuild compares the rustc command line).

# Outside a checkout (a DKMS source tree has no scripts/), KDIR is the
# running kernel's build tree and bindgen is the one on PATH.
KDIR ?= $(or $(shell bash -c '. scripts/lib.sh 2>/dev/null && kernel_dir'),/lib/modules/$(shell uname -r)/build)
RUSTC ?= /usr/bin/rustc
RUSTDOC ?= /usr/bin/rustdoc
BINDGEN ?= $(or $(wildcard $(shell bash -c '. scripts/lib.sh 2>/dev/null && echo $$BINDGEN')),bindgen)
CLIPPY_DRIVER ?= /usr/bin/clippy-driver
RPCRDMA_RS_TEST_HOOKS ?= n
KMAKE = $(MAKE) -C $(KDIR) M=$(CURDIR) RUSTC=$(RUSTC) RUSTDOC=$(RUSTDOC) \
	BINDGEN=$(BINDGEN) HOSTRUSTC=$(RUSTC) \
	RPCRDMA_RS_TEST_HOOKS=$(RPCRDMA_RS_TEST_HOOKS)

all: modules

modules:
	$(KMAKE) modules

# Installs rpcrdma_rs.ko under /lib/modules/<KDIR's release>/updates, where
# modprobe prefers it to anything of the same name, and runs depmod.
# INSTALL_MOD_PATH=DIR installs under DIR instead (packaging).
install: modules
	$(KMAKE) INSTALL_MOD_DIR=updates modules_install

# DKMS (dkms.conf): `make dkms-source` copies what the module is built from
# to $(DKMS_SOURCETREE)/rpcrdma_rs-<version>; `make dkms` then has DKMS
# build and install it for $(KVER) (default: the running kernel), and
# again for every kernel installed later. DKMS_ARGS go to each dkms
# command (e.g. --kernelsourcedir, --dkmstree).
DKMS ?= dkms
DKMS_ARGS ?=
DKMS_SOURCETREE ?= /usr/src
DKMS_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"$$/\1/p' $(CURDIR)/dkms.conf)
KVER ?= $(shell uname -r)

# Installs the modprobe.d file that makes proto=rdma mounts load this
# module instead of the kernel's rpcrdma.
install-modprobe-conf:
	install -D -m 0644 scripts/modprobe.d/rpcrdma_rs.conf $(DESTDIR)/etc/modprobe.d/rpcrdma_rs.conf

dkms-source:
	rm -rf $(DKMS_SOURCETREE)/rpcrdma_rs-$(DKMS_VERSION)
	mkdir -p $(DKMS_SOURCETREE)/rpcrdma_rs-$(DKMS_VERSION)
	tar -cf - --exclude=rust/host --exclude=rust/peer --exclude=rust/proptest-regressions \
		--exclude=rust/bindings/generated.rs --exclude='*.o' --exclude='*.ko' \
		--exclude='*.mod' --exclude='*.mod.c' --exclude='.*.cmd' --exclude='*.d' \
		--exclude='*.rmeta' Kbuild Makefile dkms.conf include rust | \
		tar -xf - -C $(DKMS_SOURCETREE)/rpcrdma_rs-$(DKMS_VERSION)

dkms: dkms-source
	-$(DKMS) $(DKMS_ARGS) remove rpcrdma_rs/$(DKMS_VERSION) --all
	$(DKMS) $(DKMS_ARGS) add rpcrdma_rs/$(DKMS_VERSION)
	$(DKMS) $(DKMS_ARGS) install rpcrdma_rs/$(DKMS_VERSION) -k $(KVER)

clean:
	$(KMAKE) clean
	rm -f rust/bindings/generated.rs

# Lints the crate with the kernel's clippy settings (a full rebuild of the
# crate: clippy only speaks when the crate is compiled).
clippy:
	touch rust/rpcrdma_rs_main.rs
	$(KMAKE) CLIPPY=1 CLIPPY_DRIVER=$(CLIPPY_DRIVER) modules

# Checks formatting with the kernel's rustfmt settings.
rustfmtcheck:
	find rust -name '*.rs' -not -path 'rust/host/*target/*' -not -path 'rust/peer/target/*' \
		-not -name generated.rs | \
		xargs rustfmt --check --config-path $(KDIR)/.rustfmt.toml

kernel:
	scripts/build-kernel.sh

host-test:
	cd rust/host && cargo test
	cd rust/peer && cargo test --offline

peer:
	bash -c '. scripts/lib.sh && build_peer'

test:
	scripts/test.sh

demo:
	scripts/demo.sh

bench:
	scripts/bench.sh $(if $(filter 1,$(BENCH_RECORD)),--record Documentation/benchmark-results/latest)

.PHONY: all modules install install-modprobe-conf dkms-source dkms clean clippy rustfmtcheck kernel host-test peer test demo bench
