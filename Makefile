# SPDX-License-Identifier: GPL-2.0
#
# Builds rpcrdma_rs.ko against KDIR, a Rust-enabled 6.12 build tree (by
# default, below: the test kernel if built, else the running kernel's).
#
# RPCRDMA_RS_TEST_HOOKS=y compiles in the test hooks as well: the debugfs
# connection probe (rust/xprt/probe.rs, /sys/kernel/debug/rpcrdma_rs/connect),
# the reply-order witness, and five module parameters, ignore_peer_private,
# chain_cut_every, chain_cuts, fail_connects and fail_maps, which the
# selftests drive.  scripts/build-module.sh sets it
# for the test guests; a plain `make` builds the module without them, as
# users should.
# Switching it rebuilds the crate (kbuild compares the rustc command line).

# KDIR is the test kernel's tree if a checkout has built it
# (scripts/build-kernel.sh), else the running kernel's build tree (as
# always in a DKMS source tree, which has no scripts/). bindgen is the
# one scripts/setup.sh installed, else the one on PATH.
ifndef KDIR
KDIR := $(or $(shell bash -c '. scripts/lib.sh 2>/dev/null && d=$$(kernel_dir) && [ -f "$$d/.rpcrdma-rs-complete" ] && echo "$$d"'),/lib/modules/$(shell uname -r)/build)
endif
RUSTC ?= /usr/bin/rustc
RUSTDOC ?= /usr/bin/rustdoc
BINDGEN ?= $(or $(wildcard $(shell bash -c '. scripts/lib.sh 2>/dev/null && echo $$BINDGEN')),bindgen)
CLIPPY_DRIVER ?= /usr/bin/clippy-driver
RPCRDMA_RS_TEST_HOOKS ?= n
KMAKE = $(MAKE) -C $(KDIR) M=$(CURDIR) RUSTC=$(RUSTC) RUSTDOC=$(RUSTDOC) \
	BINDGEN=$(BINDGEN) HOSTRUSTC=$(RUSTC) \
	RPCRDMA_RS_TEST_HOOKS=$(RPCRDMA_RS_TEST_HOOKS)

all: modules

modules: check-tools
	$(KMAKE) modules

# A module's Rust must be compiled by the very rustc that compiled the
# kernel's crates (their metadata is rustc's own), and bindgen must be one
# the kernel accepts: said before a build that would fail obscurely.
# (Rebuilds without an environment, by DKMS, get absolute tools from the
# dkms.conf `make dkms-source` writes.)
check-tools:
	@test -f $(KDIR)/include/config/auto.conf || \
		{ echo "rpcrdma_rs: no configured kernel build tree at KDIR=$(KDIR)" >&2; exit 1; }
	@want=$$(sed -n 's/^CONFIG_RUSTC_VERSION_TEXT="\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' $(KDIR)/include/config/auto.conf); \
	test -n "$$want" || { echo "rpcrdma_rs: $(KDIR) is a kernel without Rust (CONFIG_RUST)" >&2; exit 1; }; \
	have=$$($(RUSTC) --version 2>/dev/null | head -1); \
	test "$$have" = "$$want" || { echo "rpcrdma_rs: $(KDIR) was built with $$want; RUSTC=$(RUSTC) is $${have:-not found}" >&2; exit 1; }
	@have=$$($(BINDGEN) --version 2>/dev/null | sed -n 's/^bindgen \([0-9.]*\).*/\1/p'); \
	test -n "$$have" || { echo "rpcrdma_rs: BINDGEN=$(BINDGEN): not found" >&2; exit 1; }; \
	min=$$($(KDIR)/scripts/min-tool-version.sh bindgen 2>/dev/null); \
	test -z "$$min" || test "$$(printf '%s\n' "$$min" "$$have" | sort -V | head -1)" = "$$min" || \
		{ echo "rpcrdma_rs: BINDGEN=$(BINDGEN) is $$have; the kernel needs $$min or later" >&2; exit 1; }

# Installs rpcrdma_rs.ko under /lib/modules/<KDIR's release>/updates, where
# modprobe prefers it to anything of the same name, and runs depmod: kbuild
# skips depmod without System.map, which headers packages do not ship.
# INSTALL_MOD_PATH=DIR installs under DIR instead (packaging), and indexes
# DIR as kbuild does with System.map (DEPMOD_BIN=true skips that). What
# `make` built is installed as it is (`sudo make install` need not find
# the tools again); only a missing module is built first.
DEPMOD_BIN ?= $(or $(shell PATH=$$PATH:/usr/sbin:/sbin command -v depmod),depmod)
KERNEL_RELEASE = $(shell cat $(KDIR)/include/config/kernel.release 2>/dev/null)
install:
	@test -f rpcrdma_rs.ko || $(MAKE) modules
	@test -n "$(KERNEL_RELEASE)" || \
		{ echo "rpcrdma_rs: no include/config/kernel.release in KDIR=$(KDIR)" >&2; exit 1; }
	$(KMAKE) INSTALL_MOD_DIR=updates \
		$(if $(INSTALL_MOD_PATH),INSTALL_MOD_PATH=$(abspath $(INSTALL_MOD_PATH))) modules_install
	$(DEPMOD_BIN) $(if $(INSTALL_MOD_PATH),-b $(abspath $(INSTALL_MOD_PATH))) $(KERNEL_RELEASE)

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

# DKMS rebuilds the package on a kernel upgrade with no environment and a
# plain PATH: the copied dkms.conf names the tools by the absolute paths
# they have now.
dkms-source:
	@rustc=$$(command -v $(RUSTC)) && rustdoc=$$(command -v $(RUSTDOC)) && \
		bindgen=$$(command -v $(BINDGEN)) || \
		{ echo "rpcrdma_rs: RUSTC, RUSTDOC or BINDGEN not found" >&2; exit 1; }; \
	rm -rf $(DKMS_SOURCETREE)/rpcrdma_rs-$(DKMS_VERSION) && \
	mkdir -p $(DKMS_SOURCETREE)/rpcrdma_rs-$(DKMS_VERSION) && \
	tar -cf - --exclude=rust/host --exclude=rust/peer --exclude=rust/proptest-regressions \
		--exclude=rust/bindings/generated.rs --exclude='*.o' --exclude='*.ko' \
		--exclude='*.mod' --exclude='*.mod.c' --exclude='.*.cmd' --exclude='*.d' \
		--exclude='*.rmeta' Kbuild Makefile dkms.conf include rust | \
		tar -xf - -C $(DKMS_SOURCETREE)/rpcrdma_rs-$(DKMS_VERSION) && \
	sed -i -e "/^MAKE\[0\]=\|^CLEAN=/s|\"make |\"make RUSTC=$$rustc RUSTDOC=$$rustdoc BINDGEN=$$bindgen |" \
		$(DKMS_SOURCETREE)/rpcrdma_rs-$(DKMS_VERSION)/dkms.conf

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

.PHONY: all modules check-tools install install-modprobe-conf dkms-source dkms clean clippy rustfmtcheck kernel host-test peer test demo bench
