# SPDX-License-Identifier: GPL-2.0
#
# Builds rpcrdma_rs.ko against KDIR, a Rust-enabled 6.12 build tree.  By
# default KDIR is the test kernel scripts/build-kernel.sh keeps in the cache.

KDIR ?= $(shell bash -c '. scripts/lib.sh && kernel_dir')
RUSTC ?= /usr/bin/rustc
RUSTDOC ?= /usr/bin/rustdoc
BINDGEN ?= $(shell bash -c '. scripts/lib.sh && echo $$BINDGEN')
KMAKE = $(MAKE) -C $(KDIR) M=$(CURDIR) RUSTC=$(RUSTC) RUSTDOC=$(RUSTDOC) \
	BINDGEN=$(BINDGEN) HOSTRUSTC=$(RUSTC)

all: modules

modules:
	$(KMAKE) modules

clean:
	$(KMAKE) clean
	rm -f rust/bindings/generated.rs

# Lints the crate with the kernel's clippy settings.
clippy:
	$(KMAKE) CLIPPY=1 CLIPPY_DRIVER=$(shell bash -c '. scripts/lib.sh && echo $$CLIPPY_DRIVER') modules

kernel:
	scripts/build-kernel.sh

host-test:
	cd rust/host && cargo test

test:
	scripts/test.sh

demo:
	scripts/demo.sh

bench:
	scripts/bench.sh

.PHONY: all modules clean clippy kernel host-test test demo bench
