// SPDX-License-Identifier: GPL-2.0

//! Hand-made test vectors, worked out from RFC 8166 section 4 and RFC 8797
//! section 4, shared by the unit tests, the wire corpus and the fuzz seeds.
//! Each vector is written one XDR word per line with what the word is.
//! Also [`Reach`], the coverage counter of the property tests.

#![allow(dead_code)]

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt;

/// Counts the property-test cases that reached each interesting path, so a
/// generator that drifts into producing only rejected (or only trivial)
/// input fails the test instead of letting it pass without testing
/// anything. Every case calls [`Reach::case`] once, then [`Reach::hit`] for
/// each path it reached; after the run, [`Reach::require`] checks the
/// fractions.
pub struct Reach {
    test: &'static str,
    cases: Cell<u64>,
    paths: RefCell<BTreeMap<&'static str, u64>>,
}

impl Reach {
    pub fn new(test: &'static str) -> Self {
        Self {
            test,
            cases: Cell::new(0),
            paths: RefCell::new(BTreeMap::new()),
        }
    }

    /// Starts a case.
    pub fn case(&self) {
        self.cases.set(self.cases.get() + 1);
    }

    /// The current case reached `path`.
    pub fn hit(&self, path: &'static str) {
        *self.paths.borrow_mut().entry(path).or_default() += 1;
    }

    pub fn cases(&self) -> u64 {
        self.cases.get()
    }

    pub fn hits(&self, path: &str) -> u64 {
        self.paths.borrow().get(path).copied().unwrap_or(0)
    }

    /// Fails, printing every counter, unless at least `percent` of the
    /// cases reached `path`.
    pub fn require(&self, path: &'static str, percent: u64) {
        let (cases, hits) = (self.cases(), self.hits(path));
        assert!(
            cases > 0 && hits * 100 >= cases * percent,
            "{}: {hits} of {cases} cases reached {path:?}, want at least {percent}%\n{self}",
            self.test
        );
    }

    /// Prints the counters (shown with `cargo test -- --nocapture`).
    pub fn report(&self) {
        eprintln!("{self}");
    }
}

impl fmt::Display for Reach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cases = self.cases().max(1);
        writeln!(f, "{}: {} cases", self.test, self.cases())?;
        for (path, hits) in self.paths.borrow().iter() {
            writeln!(f, "  {:>3}%  {hits:>6}  {path}", hits * 100 / cases)?;
        }
        Ok(())
    }
}

/// Turns hex words ("12345678", spaces allowed) into bytes.
pub fn hex(words: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for w in words {
        let digits: String = w.chars().filter(|c| !c.is_whitespace()).collect();
        assert!(
            digits.len().is_multiple_of(2),
            "odd hex digit count in {w:?}"
        );
        for i in (0..digits.len()).step_by(2) {
            out.push(u8::from_str_radix(&digits[i..i + 2], 16).expect("hex"));
        }
    }
    out
}

/// A small RDMA_MSG Reply with no chunks: an NFSv3 GETATTR Reply carried
/// inline (RFC 8166, section 3.5.1). Header is 28 bytes, the RPC Reply
/// follows.
pub fn msg_inline_reply() -> Vec<u8> {
    hex(&[
        "6a1f0c42", // rdma_xid
        "00000001", // rdma_vers = 1
        "00000080", // rdma_credit = 128
        "00000000", // rdma_proc = RDMA_MSG
        "00000000", // Read list: empty
        "00000000", // Write list: empty
        "00000000", // Reply chunk: absent
        // RPC Reply (start of the Payload stream)
        "6a1f0c42", // xid
        "00000001", // msg_type = REPLY
        "00000000", // reply_stat = MSG_ACCEPTED
        "00000000", // verifier flavor = AUTH_NONE
        "00000000", // verifier length 0
        "00000000", // accept_stat = SUCCESS
        "00000000", // NFS3_OK
    ])
}

/// Header length of [`msg_inline_reply`].
pub const MSG_INLINE_REPLY_HDR_LEN: usize = 28;

/// An RDMA_MSG Reply to an NFS READ whose data went into the Write chunk
/// (RFC 8166, section 3.5.2): the Responder echoes the chunk with each
/// segment's length set to what it wrote. Two segments: 0x1000 bytes and
/// 0x0e00 bytes (7680 in all).
pub fn msg_write_chunk_reply() -> Vec<u8> {
    hex(&[
        "0000beef", // rdma_xid
        "00000001", // rdma_vers = 1
        "00000020", // rdma_credit = 32
        "00000000", // rdma_proc = RDMA_MSG
        "00000000", // Read list: empty
        "00000001", // Write list: a chunk follows
        "00000002", //   segment count = 2
        "0000abcd", //   seg 0 handle
        "00001000", //   seg 0 length = 4096
        "00000001", //   seg 0 offset, high word
        "00002000", //   seg 0 offset, low word
        "0000abce", //   seg 1 handle
        "00000e00", //   seg 1 length = 3584
        "00000001", //   seg 1 offset, high word
        "00003000", //   seg 1 offset, low word
        "00000000", // Write list: end
        "00000000", // Reply chunk: absent
        // RPC Reply, data item reduced (its length word stays inline)
        "0000beef", // xid
        "00000001", // REPLY
        "00000000", // MSG_ACCEPTED
        "00000000", // AUTH_NONE
        "00000000", // verifier length 0
        "00000000", // SUCCESS
        "00000000", // NFS3_OK
        "00000000", // post_op_attr: no attributes
        "00001e00", // count = 7680
        "00000001", // eof = TRUE
        "00001e00", // data length 7680 (data itself in the chunk)
    ])
}

/// Header length of [`msg_write_chunk_reply`].
pub const MSG_WRITE_CHUNK_REPLY_HDR_LEN: usize = 68;

/// An RDMA_NOMSG Long Reply (RFC 8166, section 3.5.3): the RPC Reply was
/// written into the Reply chunk; the Send carries only the header.
pub fn nomsg_reply_chunk() -> Vec<u8> {
    hex(&[
        "00c0ffee", // rdma_xid
        "00000001", // rdma_vers = 1
        "00000080", // rdma_credit = 128
        "00000001", // rdma_proc = RDMA_NOMSG
        "00000000", // Read list: empty
        "00000000", // Write list: empty
        "00000001", // Reply chunk: present
        "00000002", //   segment count = 2
        "10203040", //   seg 0 handle
        "00001000", //   seg 0 length = 4096
        "ffff8880", //   seg 0 offset, high word
        "12345000", //   seg 0 offset, low word
        "10203041", //   seg 1 handle
        "00000234", //   seg 1 length = 564
        "ffff8880", //   seg 1 offset, high word
        "12346000", //   seg 1 offset, low word
    ])
}

/// RDMA_ERROR, ERR_VERS: the Responder supports version 1 only
/// (RFC 8166, section 4.2.3; the Linux server sends exactly this).
pub fn error_vers() -> Vec<u8> {
    hex(&[
        "11223344", // rdma_xid
        "00000001", // rdma_vers = 1
        "00000001", // rdma_credit = 1
        "00000004", // rdma_proc = RDMA_ERROR
        "00000001", // rdma_err = ERR_VERS
        "00000001", // rdma_vers_low = 1
        "00000001", // rdma_vers_high = 1
    ])
}

/// RDMA_ERROR, ERR_CHUNK.
pub fn error_chunk() -> Vec<u8> {
    hex(&[
        "55667788", // rdma_xid
        "00000001", // rdma_vers = 1
        "00000040", // rdma_credit = 64
        "00000004", // rdma_proc = RDMA_ERROR
        "00000002", // rdma_err = ERR_CHUNK
    ])
}

/// An NFS WRITE Call with its payload in one Read chunk at XDR position
/// 0x8c (140) and a two-segment chunk (RFC 8166, section 3.4.5; the C
/// client writes one entry per registered MR, all with the same position).
/// The head of the RPC Call follows the header.
pub fn call_read_chunk() -> Vec<u8> {
    hex(&[
        "a0a0a0a0", // rdma_xid
        "00000001", // rdma_vers = 1
        "00000080", // rdma_credit = 128 (requested)
        "00000000", // rdma_proc = RDMA_MSG
        "00000001", // Read list: an entry follows
        "0000008c", //   position = 140
        "00000101", //   handle
        "000ff000", //   length = 1044480
        "00000000", //   offset, high word
        "7f001000", //   offset, low word
        "00000001", // Read list: an entry follows
        "0000008c", //   position = 140 (same chunk)
        "00000102", //   handle
        "00001000", //   length = 4096 (chunk total 1 MiB)
        "00000000", //   offset, high word
        "80000000", //   offset, low word
        "00000000", // Read list: end
        "00000000", // Write list: empty
        "00000000", // Reply chunk: absent
        // start of the RPC Call (head only; data is in the chunk)
        "a0a0a0a0", // xid
        "00000000", // msg_type = CALL
        "00000002", // rpcvers = 2
    ])
}

/// Header length of [`call_read_chunk`].
pub const CALL_READ_CHUNK_HDR_LEN: usize = 76;

/// A Long Call (RFC 8166, section 3.5.3): RDMA_NOMSG, Position Zero Read
/// chunk holding the whole Call, and a Reply chunk for the Reply.
pub fn call_long() -> Vec<u8> {
    hex(&[
        "b1b2b3b4", // rdma_xid
        "00000001", // rdma_vers = 1
        "00000080", // rdma_credit = 128
        "00000001", // rdma_proc = RDMA_NOMSG
        "00000001", // Read list: an entry follows
        "00000000", //   position = 0
        "00000201", //   handle
        "00001400", //   length = 5120
        "00000000", //   offset, high word
        "00a00000", //   offset, low word
        "00000000", // Read list: end
        "00000000", // Write list: empty
        "00000001", // Reply chunk: present
        "00000001", //   segment count = 1
        "00000202", //   handle
        "00002000", //   length = 8192
        "00000000", //   offset, high word
        "00b00000", //   offset, low word
    ])
}

/// An NFS READ Call as the C client sends it for 1 MiB: RDMA_MSG, Write
/// list with one chunk of one data segment plus none for the pad (length is
/// aligned), no Reply chunk. Call head follows.
pub fn call_write_chunk() -> Vec<u8> {
    hex(&[
        "c0c0c0c0", // rdma_xid
        "00000001", // rdma_vers = 1
        "00000080", // rdma_credit = 128
        "00000000", // rdma_proc = RDMA_MSG
        "00000000", // Read list: empty
        "00000001", // Write list: a chunk follows
        "00000001", //   segment count = 1
        "00000301", //   handle
        "00100000", //   length = 1 MiB
        "c0c0c0c0", //   offset, high word (the C client puts the XID here)
        "00000000", //   offset, low word
        "00000000", // Write list: end
        "00000000", // Reply chunk: absent
        "c0c0c0c0", // RPC xid
        "00000000", // CALL
    ])
}

/// The private data the Linux client sends with 4 KiB inline thresholds
/// and remote invalidation (RFC 8797, section 4).
pub fn pd_linux_client() -> Vec<u8> {
    hex(&[
        "f6ab0e18", // Format Identifier
        "01",       // Version 1
        "01",       // Reserved 0, R = 1
        "03",       // Send Size: (4096 / 1024) - 1 = 3
        "03",       // Receive Size: 3
    ])
}

/// Private data as a Responder's CM might hand it over: three octets of
/// another layer's data first (so the message is not word-aligned), a
/// 32 KiB send size and 4 KiB receive size, R clear, then the zero fill
/// of the CM's fixed-size private data field.
pub fn pd_unaligned_in_cm_buffer() -> Vec<u8> {
    let mut v = hex(&[
        "a1b2c3",   // another layer's bytes
        "f6ab0e18", // Format Identifier at offset 3
        "01",       // Version 1
        "00",       // Reserved 0, R = 0
        "1f",       // Send Size: 32768 / 1024 - 1 = 31
        "03",       // Receive Size: 4096 / 1024 - 1 = 3
    ]);
    v.resize(56, 0);
    v
}

/// The header vectors, with file names for the corpus.
pub fn header_vectors() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("msg_inline_reply.hdr", msg_inline_reply()),
        ("msg_write_chunk_reply.hdr", msg_write_chunk_reply()),
        ("nomsg_reply_chunk.hdr", nomsg_reply_chunk()),
        ("error_vers.hdr", error_vers()),
        ("error_chunk.hdr", error_chunk()),
        ("call_read_chunk.hdr", call_read_chunk()),
        ("call_long.hdr", call_long()),
        ("call_write_chunk.hdr", call_write_chunk()),
    ]
}

/// The private data vectors, with file names for the corpus.
pub fn pd_vectors() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("linux_client.pd", pd_linux_client()),
        ("unaligned_in_cm_buffer.pd", pd_unaligned_in_cm_buffer()),
    ]
}

/// One `chunk_plan` fuzz input (format in `fuzz/fuzz_targets/chunk_plan.rs`):
/// 14 big-endian words.
#[allow(clippy::too_many_arguments)]
pub fn chunk_plan_input(
    call: [u32; 4],
    ddp_write: bool,
    ddp_read: bool,
    ddp_allowed: bool,
    reply: [u32; 4],
    conn: [u32; 5],
) -> Vec<u8> {
    let flags = u32::from(ddp_write) | u32::from(ddp_read) << 1 | u32::from(ddp_allowed) << 2;
    let mut words = call.to_vec();
    words.push(flags);
    words.extend_from_slice(&reply);
    words.extend_from_slice(&conn);
    words.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// Seeds for the `chunk_plan` fuzz target: the scenarios of `tests/chunks.rs`
/// (soft-RoCE limits: 11 RDMA segments, 18 Send SGEs, 4 KiB pages).
pub fn chunk_plan_vectors() -> Vec<(&'static str, Vec<u8>)> {
    let rxe = |inline: u32| [inline, inline, 11, 18, 4096];
    vec![
        (
            "getattr_inline",
            chunk_plan_input(
                [136, 0, 0, 0],
                false,
                false,
                true,
                [248, 248, 0, 0],
                rxe(4096),
            ),
        ),
        (
            "write_1mib_read_chunk",
            chunk_plan_input(
                [164, 0, 1 << 20, 0],
                true,
                false,
                true,
                [300, 300, 0, 0],
                rxe(4096),
            ),
        ),
        (
            "write_unaligned_tail",
            chunk_plan_input(
                [232, 512, 1_000_001, 43],
                true,
                false,
                true,
                [300, 300, 0, 0],
                rxe(4096),
            ),
        ),
        (
            "symlink_long_call",
            chunk_plan_input(
                [4200, 0, 0, 0],
                false,
                false,
                true,
                [400, 400, 0, 0],
                rxe(4096),
            ),
        ),
        (
            "read_1mib_write_chunk",
            chunk_plan_input(
                [140, 0, 0, 0],
                false,
                true,
                true,
                [116 + (1 << 20) + 100, 116, 1 << 20, 100],
                rxe(4096),
            ),
        ),
        (
            "readdir_reply_chunk",
            chunk_plan_input(
                [160, 0, 0, 0],
                false,
                false,
                true,
                [120 + 65536 + 4, 120, 65536, 4],
                rxe(4096),
            ),
        ),
        (
            "inline_1024",
            chunk_plan_input(
                [800, 0, 0, 0],
                false,
                false,
                true,
                [1500, 1500, 0, 0],
                rxe(1024),
            ),
        ),
        (
            "sge_limit",
            chunk_plan_input(
                [164, 4000, 3000, 0],
                true,
                false,
                true,
                [300, 300, 0, 0],
                [4096, 4096, 11, 4, 4096],
            ),
        ),
    ]
}
