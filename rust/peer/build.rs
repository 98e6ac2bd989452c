// SPDX-License-Identifier: GPL-2.0

//! Generates the librdmacm/libibverbs bindings and compiles the shim that
//! exports the inline data-path verbs.

use std::{env, path::PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-changed=shim.c");

    cc::Build::new()
        .file("shim.c")
        .warnings(true)
        .compile("peer_shim");
    println!("cargo:rustc-link-lib=rdmacm");
    println!("cargo:rustc-link-lib=ibverbs");

    let bindings = bindgen::Builder::default()
        .header("wrapper.h")
        .allowlist_function("ibv_.*|rdma_.*")
        .allowlist_type("ibv_.*|rdma_.*")
        .allowlist_var("IBV_.*|RDMA_.*")
        // The unions and bitfield-free structs of verbs.h are used as
        // plain C data: keep them Copy and give them a Default.
        .derive_default(true)
        .prepend_enum_name(false)
        .layout_tests(false)
        .generate()
        .expect("bindgen could not read <infiniband/verbs.h> and <rdma/rdma_cma.h>");
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR")).join("verbs.rs");
    bindings.write_to_file(out).expect("writing the bindings");
}
