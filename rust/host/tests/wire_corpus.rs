// SPDX-License-Identifier: GPL-2.0

//! Wire corpus: every `tests/wire/*.hdr` file is one received
//! RPC-over-RDMA message, starting at the transport header; every `*.pd`
//! file is a connection's RDMA-CM private data. Each must decode, and
//! re-encoding must give back exactly the bytes on the wire.
//!
//! The hand-made files come from the vectors in `common/mod.rs`
//! (regenerate them with `cargo test --test wire_corpus -- --ignored`);
//! captures from guests are added beside them.

mod common;

use rpcrdma_proto::proto::header::{decode, DecodeLimits};
use rpcrdma_proto::proto::private_data;
use std::path::{Path, PathBuf};

fn wire_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wire")
}

#[test]
fn corpus_decodes_and_reencodes_exactly() {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(wire_dir())
        .expect("tests/wire must exist")
        .map(|e| e.expect("readdir").path())
        .filter(|p| p.is_file())
        .collect();
    entries.sort();
    let (mut hdrs, mut pds) = (0, 0);
    for path in &entries {
        let bytes = std::fs::read(path).unwrap();
        let name = path.display();
        match path.extension().and_then(|e| e.to_str()) {
            Some("hdr") => {
                // Captures hold Calls as well as Replies: generous limits.
                let (h, len) = decode(&bytes, &DecodeLimits::PERMISSIVE)
                    .unwrap_or_else(|e| panic!("{name}: {e:?}"));
                let mut out = vec![0u8; len];
                let n = h
                    .encode(&mut out)
                    .unwrap_or_else(|e| panic!("{name}: re-encode: {e:?}"));
                assert_eq!(n, len, "{name}");
                assert_eq!(out, bytes[..len], "{name}: re-encoded header differs");
                hdrs += 1;
            }
            Some("pd") => {
                let (off, pd) = private_data::find(&bytes)
                    .unwrap_or_else(|| panic!("{name}: no RFC 8797 message"));
                assert_eq!(
                    pd.to_bytes()[..],
                    bytes[off..off + private_data::LEN],
                    "{name}: re-encoded private data differs"
                );
                pds += 1;
            }
            _ => {}
        }
    }
    assert!(
        hdrs + pds > 0,
        "tests/wire holds no .hdr or .pd file: the corpus test would test nothing"
    );
    eprintln!("wire corpus: {hdrs} headers, {pds} private data files");
}

/// The committed fuzz seeds and hand-made corpus files are the vectors of
/// `common/mod.rs`, byte for byte.
#[test]
fn committed_seeds_match_vectors() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let check = |path: PathBuf, bytes: &[u8]| {
        let on_disk = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run the ignored writer)", path.display()));
        assert_eq!(on_disk, bytes, "{} is stale", path.display());
    };
    for (name, bytes) in common::header_vectors() {
        check(wire_dir().join(name), &bytes);
        check(root.join("fuzz/corpus/header_decode").join(name), &bytes);
    }
    for (name, bytes) in common::pd_vectors() {
        check(wire_dir().join(name), &bytes);
        check(
            root.join("fuzz/corpus/private_data_decode").join(name),
            &bytes,
        );
    }
    for (name, bytes) in common::chunk_plan_vectors() {
        check(root.join("fuzz/corpus/chunk_plan").join(name), &bytes);
    }
}

/// Writes the hand-made vectors to `tests/wire/` and the fuzz seed corpora.
#[test]
#[ignore = "regenerates committed files"]
fn write_hand_made_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let seeds = root.join("fuzz/corpus");
    std::fs::create_dir_all(wire_dir()).unwrap();
    for (name, bytes) in common::header_vectors() {
        std::fs::write(wire_dir().join(name), &bytes).unwrap();
        let dir = seeds.join("header_decode");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), &bytes).unwrap();
    }
    for (name, bytes) in common::pd_vectors() {
        std::fs::write(wire_dir().join(name), &bytes).unwrap();
        let dir = seeds.join("private_data_decode");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), &bytes).unwrap();
    }
    let dir = seeds.join("chunk_plan");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in common::chunk_plan_vectors() {
        std::fs::write(dir.join(name), &bytes).unwrap();
    }
}
