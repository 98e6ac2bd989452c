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

KDIR ?= $(shell bash -c '. scripts/lib.sh && kernel_dir')
RUSTC ?= /usr/bin/rustc
RUSTDOC ?= /usr/bin/rustdoc
BINDGEN ?= $(shell bash -c '. scripts/lib.sh && echo $$BINDGEN')
CLIPPY_DRIVER ?= /usr/bin/clippy-driver
RPCRDMA_RS_TEST_HOOKS ?= n
KMAKE = $(MAKE) -C $(KDIR) M=$(CURDIR) RUSTC=$(RUSTC) RUSTDOC=$(RUSTDOC) \
	BINDGEN=$(BINDGEN) HOSTRUSTC=$(RUSTC) \
	RPCRDMA_RS_TEST_HOOKS=$(RPCRDMA_RS_TEST_HOOKS)

all: modules

modules:
	$(KMAKE) modules

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
	scripts/bench.sh

.PHONY: all modules clean clippy rustfmtcheck kernel host-test peer test demo bench
