// SPDX-License-Identifier: GPL-2.0

//! ONC RPC (RFC 5531) and just enough NFSv3 (RFC 1813) for a mount and a
//! little I/O, over one in-memory directory of a few files.
//!
//! The mount's MOUNT call goes to the real server's mountd over TCP, so the
//! root file handle the client has is that server's: any handle that is not
//! one of ours is taken to be the root directory.

use crate::xdr::{Dec, Enc};
use rpcrdma_proto::proto::xdr::{xdr_pad_size, XdrError};
use std::ops::Range;
use std::time::{SystemTime, UNIX_EPOCH};

pub const NFS_PROGRAM: u32 = 100003;
pub const NFS_V3: u32 = 3;

/// NFSv3 procedure numbers (RFC 1813, section 3.3).
pub mod proc {
    pub const NULL: u32 = 0;
    pub const GETATTR: u32 = 1;
    pub const SETATTR: u32 = 2;
    pub const LOOKUP: u32 = 3;
    pub const ACCESS: u32 = 4;
    pub const READ: u32 = 6;
    pub const WRITE: u32 = 7;
    pub const CREATE: u32 = 8;
    pub const REMOVE: u32 = 12;
    pub const READDIR: u32 = 16;
    pub const READDIRPLUS: u32 = 17;
    pub const FSSTAT: u32 = 18;
    pub const FSINFO: u32 = 19;
    pub const PATHCONF: u32 = 20;
    pub const COMMIT: u32 = 21;

    const NAMES: &[(&str, u32)] = &[
        ("null", NULL),
        ("getattr", GETATTR),
        ("setattr", SETATTR),
        ("lookup", LOOKUP),
        ("access", ACCESS),
        ("read", READ),
        ("write", WRITE),
        ("create", CREATE),
        ("remove", REMOVE),
        ("readdir", READDIR),
        ("readdirplus", READDIRPLUS),
        ("fsstat", FSSTAT),
        ("fsinfo", FSINFO),
        ("pathconf", PATHCONF),
        ("commit", COMMIT),
    ];

    pub fn by_name(s: &str) -> Option<u32> {
        NAMES.iter().find(|(n, _)| *n == s).map(|(_, p)| *p)
    }

    /// Upper-case name for the event lines; numbers for the others.
    pub fn name(p: u32) -> String {
        NAMES
            .iter()
            .find(|(_, q)| *q == p)
            .map_or_else(|| format!("PROC{p}"), |(n, _)| n.to_uppercase())
    }
}

// RPC message constants (RFC 5531, section 9).
const CALL: u32 = 0;
const REPLY: u32 = 1;
const MSG_ACCEPTED: u32 = 0;
const MSG_DENIED: u32 = 1;
const RPC_MISMATCH: u32 = 0;
const SUCCESS: u32 = 0;
const PROG_UNAVAIL: u32 = 1;
const PROG_MISMATCH: u32 = 2;
const PROC_UNAVAIL: u32 = 3;
const GARBAGE_ARGS: u32 = 4;
const MAX_AUTH_BYTES: usize = 400;

// nfsstat3 values used here.
const NFS3_OK: u32 = 0;
const NFS3ERR_NOENT: u32 = 2;
const NFS3ERR_EXIST: u32 = 17;
const NFS3ERR_NOTDIR: u32 = 20;
const NFS3ERR_ISDIR: u32 = 21;
const NFS3ERR_INVAL: u32 = 22;
const NFS3ERR_FBIG: u32 = 27;
const NFS3ERR_NAMETOOLONG: u32 = 63;
const NFS3ERR_STALE: u32 = 70;

const NF3REG: u32 = 1;
const NF3DIR: u32 = 2;
const FILE_SYNC: u32 = 2;
const NFS3_FHSIZE: usize = 64;
const NAME_MAX: usize = 255;

/// Largest READ and WRITE payload advertised in FSINFO.
pub const MAX_IO: u32 = 256 * 1024;
/// Largest file: the directory lives in the tool's memory.
const MAX_FILE: u64 = 16 << 20;
/// The file system's fsid in every fattr3.
const FSID: u64 = 0x7270_6565_7221;
/// Prefix of the file handles this server makes: 8 more bytes follow, the
/// file's fileid.
const FH_MAGIC: &[u8; 16] = b"rpcrdma-peer-fh\0";
const ROOT_FILEID: u64 = 1;

/// An RPC Reply and where its DDP-eligible data item is.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reply {
    /// The whole RPC Reply, the data item and its XDR pad included.
    pub body: Vec<u8>,
    /// The bytes of `body` that may travel in a Write chunk: NFS READ
    /// data (RFC 5667, section 4), without its pad.
    pub ddp: Option<Range<usize>>,
}

impl Reply {
    /// The Reply without its DDP-eligible item's bytes and pad: what goes
    /// inline when that item travels in a Write chunk (RFC 8166, section
    /// 3.4.6: the item's length word stays).
    pub fn reduced(&self) -> Vec<u8> {
        match &self.ddp {
            None => self.body.clone(),
            Some(r) => {
                let pad = xdr_pad_size(r.len() as u32) as usize;
                let mut v = self.body[..r.start].to_vec();
                v.extend_from_slice(self.body.get(r.end + pad..).unwrap_or(&[]));
                v
            }
        }
    }
}

/// What the event lines and the fault trigger need of a Call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallInfo {
    pub xid: u32,
    /// The NFSv3 procedure, `None` for anything else (other programs,
    /// versions, or not a Call at all).
    pub nfs_proc: Option<u32>,
}

/// Reads the XID and procedure of an RPC Call without decoding it.
pub fn peek(call: &[u8]) -> Option<CallInfo> {
    let mut d = Dec::new(call);
    let xid = d.u32().ok()?;
    let mtype = d.u32().ok()?;
    let (rpcvers, prog, vers, p) = (d.u32().ok(), d.u32().ok(), d.u32().ok(), d.u32().ok());
    let nfs =
        mtype == CALL && rpcvers == Some(2) && prog == Some(NFS_PROGRAM) && vers == Some(NFS_V3);
    Some(CallInfo {
        xid,
        nfs_proc: if nfs { p } else { None },
    })
}

/// Bytes of `odd6k`: not a multiple of 4, more than the inline threshold.
const ODD_LEN: usize = 6001;

struct File {
    name: Vec<u8>,
    fileid: u64,
    data: Vec<u8>,
    mtime: (u32, u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Obj {
    Root,
    File(usize),
}

/// The in-memory directory and its files.
pub struct Server {
    files: Vec<File>,
    next_fileid: u64,
    dir_mtime: (u32, u32),
    /// The WRITE/COMMIT verifier: changes with each run of the tool.
    verf: [u8; 8],
}

fn now() -> (u32, u32) {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs() as u32, d.subsec_nanos())
}

type R<T> = Result<T, u32>;

impl Default for Server {
    fn default() -> Self {
        Self::new()
    }
}

impl Server {
    /// The directory with three files: `hello`, one line; `data64k`,
    /// 65536 bytes that `seq -f %015g 0 4095` also prints, so a test can
    /// check what it reads without writing first; and `odd6k`, its first
    /// 6001 bytes: a READ of it offers a Write chunk (over the 4096-byte
    /// inline threshold) for data whose length is not a multiple of 4.
    pub fn new() -> Self {
        let t = now();
        let mut s = Self {
            files: Vec::new(),
            next_fileid: ROOT_FILEID + 1,
            dir_mtime: t,
            verf: (u64::from(t.0) << 32 | u64::from(t.1)).to_be_bytes(),
        };
        s.add(b"hello", b"hello from rpcrdma-peer\n".to_vec());
        let data: Vec<u8> = (0..4096)
            .flat_map(|i| format!("{i:015}\n").into_bytes())
            .collect();
        let odd = data[..ODD_LEN].to_vec();
        s.add(b"data64k", data);
        s.add(b"odd6k", odd);
        s
    }

    fn add(&mut self, name: &[u8], data: Vec<u8>) -> usize {
        self.files.push(File {
            name: name.to_vec(),
            fileid: self.next_fileid,
            data,
            mtime: now(),
        });
        self.next_fileid += 1;
        self.dir_mtime = now();
        self.files.len() - 1
    }

    fn fh(&self, o: Obj) -> Vec<u8> {
        let mut v = FH_MAGIC.to_vec();
        let id = match o {
            Obj::Root => ROOT_FILEID,
            Obj::File(i) => self.files[i].fileid,
        };
        v.extend_from_slice(&id.to_be_bytes());
        v
    }

    fn resolve(&self, fh: &[u8]) -> R<Obj> {
        let Some(id) = fh.strip_prefix(FH_MAGIC.as_slice()) else {
            // The real server's root handle, from its mountd.
            return Ok(Obj::Root);
        };
        let id = u64::from_be_bytes(id.try_into().map_err(|_| NFS3ERR_STALE)?);
        if id == ROOT_FILEID {
            return Ok(Obj::Root);
        }
        self.files
            .iter()
            .position(|f| f.fileid == id)
            .map(Obj::File)
            .ok_or(NFS3ERR_STALE)
    }

    fn lookup(&self, name: &[u8]) -> Option<usize> {
        self.files.iter().position(|f| f.name == name)
    }

    fn fattr(&self, e: &mut Enc, o: Obj) {
        let (ty, mode, nlink, size, fileid, t) = match o {
            Obj::Root => (NF3DIR, 0o777, 2, 4096, ROOT_FILEID, self.dir_mtime),
            Obj::File(i) => {
                let f = &self.files[i];
                (NF3REG, 0o666, 1, f.data.len() as u64, f.fileid, f.mtime)
            }
        };
        e.u32(ty).u32(mode).u32(nlink).u32(0).u32(0);
        e.u64(size).u64(size).u32(0).u32(0);
        e.u64(FSID).u64(fileid);
        for _ in 0..3 {
            e.u32(t.0).u32(t.1);
        }
    }

    fn post_op_attr(&self, e: &mut Enc, o: Option<Obj>) {
        match o {
            Some(o) => {
                e.bool(true);
                self.fattr(e, o);
            }
            None => {
                e.bool(false);
            }
        }
    }

    /// wcc_data without the "before" half, which the client may do without.
    fn wcc(&self, e: &mut Enc, o: Option<Obj>) {
        e.bool(false);
        self.post_op_attr(e, o);
    }

    /// Answers one RPC Call; `None` when it is not a Call at all (nothing
    /// to answer).
    pub fn handle(&mut self, call: &[u8]) -> Option<Reply> {
        let mut d = Dec::new(call);
        let xid = d.u32().ok()?;
        if d.u32().ok()? != CALL {
            return None;
        }
        let mut e = Enc::default();
        e.u32(xid).u32(REPLY);
        let rpcvers = d.u32().ok()?;
        if rpcvers != 2 {
            e.u32(MSG_DENIED).u32(RPC_MISMATCH).u32(2).u32(2);
            return Some(Reply {
                body: e.0,
                ddp: None,
            });
        }
        // Accepted from here on, with an AUTH_NONE verifier.
        e.u32(MSG_ACCEPTED).u32(0).u32(0);
        let accepted_at = e.len();
        let header = (|| -> Result<(u32, u32, u32), XdrError> {
            let prog = d.u32()?;
            let vers = d.u32()?;
            let p = d.u32()?;
            for _ in 0..2 {
                d.u32()?;
                d.opaque(MAX_AUTH_BYTES)?;
            }
            Ok((prog, vers, p))
        })();
        let Ok((prog, vers, p)) = header else {
            e.u32(GARBAGE_ARGS);
            return Some(Reply {
                body: e.0,
                ddp: None,
            });
        };
        if prog != NFS_PROGRAM {
            e.u32(PROG_UNAVAIL);
        } else if vers != NFS_V3 {
            e.u32(PROG_MISMATCH).u32(NFS_V3).u32(NFS_V3);
        } else {
            e.u32(SUCCESS);
            match self.nfs3(p, &mut d, &mut e) {
                Ok(Some(ddp)) => {
                    return Some(Reply {
                        body: e.0,
                        ddp: Some(ddp),
                    })
                }
                Ok(None) => {}
                Err(Unsupported) => {
                    e.0.truncate(accepted_at);
                    e.u32(PROC_UNAVAIL);
                }
                Err(Garbage) => {
                    e.0.truncate(accepted_at);
                    e.u32(GARBAGE_ARGS);
                }
            }
        }
        Some(Reply {
            body: e.0,
            ddp: None,
        })
    }

    /// Runs NFSv3 procedure `p`; returns the READ data's range in `e`.
    fn nfs3(&mut self, p: u32, d: &mut Dec<'_>, e: &mut Enc) -> Result<Option<Range<usize>>, Bad> {
        match p {
            proc::NULL => {}
            proc::GETATTR => {
                let o = self.resolve(d.opaque(NFS3_FHSIZE)?);
                status(e, &o);
                if let Ok(o) = o {
                    self.fattr(e, o);
                }
            }
            proc::SETATTR => {
                let o = self.resolve(d.opaque(NFS3_FHSIZE)?);
                let size = sattr3(d)?;
                // sattrguard3
                if d.bool()? {
                    d.u64()?;
                }
                let r = o.and_then(|o| {
                    if let (Obj::File(i), Some(size)) = (o, size) {
                        if size > MAX_FILE {
                            return Err(NFS3ERR_FBIG);
                        }
                        let f = &mut self.files[i];
                        f.data.resize(size as usize, 0);
                        f.mtime = now();
                    }
                    Ok(o)
                });
                status(e, &r);
                self.wcc(e, r.ok());
            }
            proc::LOOKUP => {
                let dir = self.resolve(d.opaque(NFS3_FHSIZE)?);
                let name = d.opaque(NAME_MAX)?;
                let r = dir.and_then(|dir| match dir {
                    Obj::File(_) => Err(NFS3ERR_NOTDIR),
                    Obj::Root if name == b"." || name == b".." => Ok(Obj::Root),
                    Obj::Root => self.lookup(name).map(Obj::File).ok_or(NFS3ERR_NOENT),
                });
                status(e, &r);
                if let Ok(o) = r {
                    e.opaque(&self.fh(o));
                    self.post_op_attr(e, Some(o));
                }
                self.post_op_attr(e, dir.ok());
            }
            proc::ACCESS => {
                let o = self.resolve(d.opaque(NFS3_FHSIZE)?);
                let want = d.u32()?;
                status(e, &o);
                self.post_op_attr(e, o.ok());
                if o.is_ok() {
                    e.u32(want);
                }
            }
            proc::READ => {
                let o = self.resolve(d.opaque(NFS3_FHSIZE)?);
                let offset = d.u64()?;
                let count = d.u32()?.min(MAX_IO);
                let r = o.and_then(|o| match o {
                    Obj::Root => Err(NFS3ERR_ISDIR),
                    Obj::File(i) => Ok(i),
                });
                status(e, &r);
                self.post_op_attr(e, o.ok());
                if let Ok(i) = r {
                    let data = &self.files[i].data;
                    let start = usize::try_from(offset)
                        .unwrap_or(usize::MAX)
                        .min(data.len());
                    let end = start.saturating_add(count as usize).min(data.len());
                    e.u32((end - start) as u32).bool(end == data.len());
                    e.u32((end - start) as u32);
                    let at = e.len();
                    e.fixed(&data[start..end]);
                    return Ok(Some(at..at + (end - start)));
                }
            }
            proc::WRITE => {
                let o = self.resolve(d.opaque(NFS3_FHSIZE)?);
                let offset = d.u64()?;
                let count = d.u32()?;
                let _stable = d.u32()?;
                let data = d.opaque(MAX_IO as usize)?;
                let r = o.and_then(|o| match o {
                    Obj::Root => Err(NFS3ERR_ISDIR),
                    Obj::File(_) if count as usize != data.len() => Err(NFS3ERR_INVAL),
                    Obj::File(_) if offset.saturating_add(u64::from(count)) > MAX_FILE => {
                        Err(NFS3ERR_FBIG)
                    }
                    Obj::File(i) => {
                        let f = &mut self.files[i];
                        let end = offset as usize + data.len();
                        if f.data.len() < end {
                            f.data.resize(end, 0);
                        }
                        f.data[offset as usize..end].copy_from_slice(data);
                        f.mtime = now();
                        Ok(o)
                    }
                });
                status(e, &r);
                self.wcc(e, o.ok());
                if r.is_ok() {
                    e.u32(count).u32(FILE_SYNC).fixed(&self.verf);
                }
            }
            proc::CREATE => {
                let dir = self.resolve(d.opaque(NFS3_FHSIZE)?);
                let name = d.opaque(NAME_MAX + 1)?.to_vec();
                let how = d.u32()?;
                let size = match how {
                    0 | 1 => sattr3(d)?,
                    _ => {
                        d.fixed(8)?;
                        None
                    }
                };
                let r = dir.and_then(|dir| {
                    if dir != Obj::Root {
                        return Err(NFS3ERR_NOTDIR);
                    }
                    if name.len() > NAME_MAX {
                        return Err(NFS3ERR_NAMETOOLONG);
                    }
                    if name.is_empty() || name.contains(&b'/') || name == b"." || name == b".." {
                        return Err(NFS3ERR_INVAL);
                    }
                    match (self.lookup(&name), how) {
                        (Some(_), 1) => Err(NFS3ERR_EXIST),
                        (Some(i), _) => {
                            if let Some(s) = size {
                                self.files[i].data.resize(s.min(MAX_FILE) as usize, 0);
                            }
                            Ok(Obj::File(i))
                        }
                        (None, _) => Ok(Obj::File(self.add(&name, Vec::new()))),
                    }
                });
                status(e, &r);
                if let Ok(o) = r {
                    e.bool(true).opaque(&self.fh(o));
                    self.post_op_attr(e, Some(o));
                }
                self.wcc(e, dir.ok());
            }
            proc::REMOVE => {
                let dir = self.resolve(d.opaque(NFS3_FHSIZE)?);
                let name = d.opaque(NAME_MAX)?;
                let r = dir.and_then(|dir| match dir {
                    Obj::File(_) => Err(NFS3ERR_NOTDIR),
                    Obj::Root => {
                        let i = self.lookup(name).ok_or(NFS3ERR_NOENT)?;
                        self.files.remove(i);
                        self.dir_mtime = now();
                        Ok(())
                    }
                });
                status(e, &r);
                self.wcc(e, dir.ok());
            }
            proc::READDIR | proc::READDIRPLUS => {
                let plus = p == proc::READDIRPLUS;
                let dir = self.resolve(d.opaque(NFS3_FHSIZE)?);
                let cookie = d.u64()?;
                d.fixed(8)?;
                let mut count = d.u32()?;
                if plus {
                    // maxcount bounds the whole reply.
                    count = d.u32()?;
                }
                let r = dir.and_then(|dir| match dir {
                    Obj::File(_) => Err(NFS3ERR_NOTDIR),
                    Obj::Root => Ok(()),
                });
                status(e, &r);
                self.post_op_attr(e, dir.ok());
                if r.is_ok() {
                    e.fixed(&[0; 8]);
                    let start = e.len();
                    let mut eof = true;
                    // Cookies are positions in the directory, plus one.
                    for (i, f) in self.files.iter().enumerate().skip(cookie as usize) {
                        let mut entry = Enc::default();
                        entry
                            .bool(true)
                            .u64(f.fileid)
                            .opaque(&f.name)
                            .u64(i as u64 + 1);
                        if plus {
                            self.post_op_attr(&mut entry, Some(Obj::File(i)));
                            entry.bool(true).opaque(&self.fh(Obj::File(i)));
                        }
                        // Room for the entry, the list end and eof, and
                        // the status, attributes and verifier before it.
                        if e.len() - start + entry.len() + 8 + 160 > count as usize {
                            eof = false;
                            break;
                        }
                        e.0.extend_from_slice(&entry.0);
                    }
                    e.bool(false).bool(eof);
                }
            }
            proc::FSSTAT => {
                let o = self.resolve(d.opaque(NFS3_FHSIZE)?);
                status(e, &o);
                self.post_op_attr(e, o.ok());
                if o.is_ok() {
                    let used: u64 = self.files.iter().map(|f| f.data.len() as u64).sum();
                    let total = 1u64 << 30;
                    let free = total.saturating_sub(used);
                    e.u64(total).u64(free).u64(free);
                    e.u64(1024)
                        .u64(1024 - self.files.len() as u64)
                        .u64(1024 - self.files.len() as u64);
                    e.u32(0);
                }
            }
            proc::FSINFO => {
                let o = self.resolve(d.opaque(NFS3_FHSIZE)?);
                status(e, &o);
                self.post_op_attr(e, o.ok());
                if o.is_ok() {
                    e.u32(MAX_IO).u32(MAX_IO).u32(4096);
                    e.u32(MAX_IO).u32(MAX_IO).u32(4096);
                    e.u32(4096).u64(MAX_FILE).u32(0).u32(1);
                    // FSF3_HOMOGENEOUS | FSF3_CANSETTIME
                    e.u32(0x18);
                }
            }
            proc::PATHCONF => {
                let o = self.resolve(d.opaque(NFS3_FHSIZE)?);
                status(e, &o);
                self.post_op_attr(e, o.ok());
                if o.is_ok() {
                    e.u32(1).u32(NAME_MAX as u32);
                    e.bool(true).bool(true).bool(false).bool(true);
                }
            }
            proc::COMMIT => {
                let o = self.resolve(d.opaque(NFS3_FHSIZE)?);
                d.u64()?;
                d.u32()?;
                status(e, &o);
                self.wcc(e, o.ok());
                if o.is_ok() {
                    e.fixed(&self.verf);
                }
            }
            _ => return Err(Unsupported),
        }
        Ok(None)
    }
}

/// Why a procedure produced no result of its own.
enum Bad {
    /// Not one this server implements: PROC_UNAVAIL.
    Unsupported,
    /// Arguments that do not decode: GARBAGE_ARGS.
    Garbage,
}
use Bad::{Garbage, Unsupported};

impl From<XdrError> for Bad {
    fn from(_: XdrError) -> Self {
        Garbage
    }
}

fn status<T>(e: &mut Enc, r: &R<T>) {
    e.u32(match r {
        Ok(_) => NFS3_OK,
        Err(s) => *s,
    });
}

/// Decodes a sattr3; returns the size it sets, if it does.
fn sattr3(d: &mut Dec<'_>) -> Result<Option<u64>, XdrError> {
    for _ in 0..3 {
        // mode, uid, gid
        if d.bool()? {
            d.u32()?;
        }
    }
    let size = if d.bool()? { Some(d.u64()?) } else { None };
    for _ in 0..2 {
        // atime, mtime: SET_TO_CLIENT_TIME carries the time.
        if d.u32()? == 2 {
            d.u64()?;
        }
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(xid: u32, prog: u32, vers: u32, p: u32, args: &[u8]) -> Vec<u8> {
        let mut e = Enc::default();
        e.u32(xid).u32(CALL).u32(2).u32(prog).u32(vers).u32(p);
        // AUTH_SYS credential, AUTH_NONE verifier.
        e.u32(1).opaque(&[0; 20]).u32(0).u32(0);
        e.0.extend_from_slice(args);
        e.0
    }

    /// Decodes the reply header; returns the accept_stat and the results.
    fn accepted(xid: u32, body: &[u8]) -> (u32, Dec<'_>) {
        let mut d = Dec::new(body);
        assert_eq!(d.u32().unwrap(), xid);
        assert_eq!(d.u32().unwrap(), REPLY);
        assert_eq!(d.u32().unwrap(), MSG_ACCEPTED);
        assert_eq!(d.u32().unwrap(), 0);
        assert_eq!(d.opaque(400).unwrap().len(), 0);
        (d.u32().unwrap(), d)
    }

    fn nfs(s: &mut Server, p: u32, args: &Enc) -> Reply {
        s.handle(&call(9, NFS_PROGRAM, NFS_V3, p, &args.0)).unwrap()
    }

    fn fattr(d: &mut Dec<'_>) -> (u32, u64, u64) {
        let ty = d.u32().unwrap();
        for _ in 0..4 {
            d.u32().unwrap();
        }
        let size = d.u64().unwrap();
        d.u64().unwrap();
        d.u64().unwrap();
        d.u64().unwrap();
        let fileid = d.u64().unwrap();
        for _ in 0..6 {
            d.u32().unwrap();
        }
        (ty, size, fileid)
    }

    const ROOT: &[u8] = b"\x01\x00\x01\x00nfsd-root-handle";

    #[test]
    fn rpc_level_errors() {
        let mut s = Server::new();
        let r = s.handle(&call(1, 100005, 3, 0, &[])).unwrap();
        assert_eq!(accepted(1, &r.body).0, PROG_UNAVAIL);
        let r = s.handle(&call(2, NFS_PROGRAM, 4, 0, &[])).unwrap();
        let (st, mut d) = accepted(2, &r.body);
        assert_eq!(
            (st, d.u32().unwrap(), d.u32().unwrap()),
            (PROG_MISMATCH, 3, 3)
        );
        let r = s.handle(&call(3, NFS_PROGRAM, 3, 5, &[])).unwrap();
        assert_eq!(accepted(3, &r.body).0, PROC_UNAVAIL);
        let r = s
            .handle(&call(4, NFS_PROGRAM, 3, proc::GETATTR, &[0, 0]))
            .unwrap();
        assert_eq!(accepted(4, &r.body).0, GARBAGE_ARGS);
        // A Reply is not answered; RPC version 3 is refused.
        let mut reply = call(5, NFS_PROGRAM, 3, 0, &[]);
        reply[7] = 1;
        assert!(s.handle(&reply).is_none());
        let mut v3 = call(6, NFS_PROGRAM, 3, 0, &[]);
        v3[11] = 3;
        let r = s.handle(&v3).unwrap();
        assert_eq!(
            r.body,
            [0, 0, 0, 6, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 2]
        );
        assert!(s.handle(&[0, 0, 0, 1]).is_none());
    }

    #[test]
    fn peek_reads_xid_and_procedure() {
        let c = call(0x1234, NFS_PROGRAM, 3, proc::READ, &[]);
        assert_eq!(
            peek(&c),
            Some(CallInfo {
                xid: 0x1234,
                nfs_proc: Some(proc::READ)
            })
        );
        let c = call(7, 100227, 3, 1, &[]);
        assert_eq!(peek(&c).unwrap().nfs_proc, None);
        assert_eq!(peek(&[1, 2]), None);
    }

    #[test]
    fn any_foreign_handle_is_the_root() {
        let mut s = Server::new();
        let mut a = Enc::default();
        a.opaque(ROOT);
        let r = nfs(&mut s, proc::GETATTR, &a);
        let (st, mut d) = accepted(9, &r.body);
        assert_eq!((st, d.u32().unwrap()), (SUCCESS, NFS3_OK));
        assert_eq!(fattr(&mut d).0, NF3DIR);
        assert_eq!(d.position(), r.body.len());
    }

    #[test]
    fn create_write_read_lookup_remove() {
        let mut s = Server::new();
        let mut a = Enc::default();
        a.opaque(ROOT).opaque(b"f").u32(1);
        a.bool(false)
            .bool(false)
            .bool(false)
            .bool(false)
            .u32(0)
            .u32(0);
        let r = nfs(&mut s, proc::CREATE, &a);
        let (_, mut d) = accepted(9, &r.body);
        assert_eq!(d.u32().unwrap(), NFS3_OK);
        assert!(d.bool().unwrap());
        let fh = d.opaque(64).unwrap().to_vec();
        // GUARDED create of an existing name fails.
        let r = nfs(&mut s, proc::CREATE, &a);
        assert_eq!(accepted(9, &r.body).1.u32().unwrap(), NFS3ERR_EXIST);

        let data: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        let mut a = Enc::default();
        a.opaque(&fh).u64(10).u32(5000).u32(0).opaque(&data);
        let r = nfs(&mut s, proc::WRITE, &a);
        let (_, mut d) = accepted(9, &r.body);
        assert_eq!(d.u32().unwrap(), NFS3_OK);
        assert!(!d.bool().unwrap());
        assert!(d.bool().unwrap());
        assert_eq!(fattr(&mut d).1, 5010);
        assert_eq!((d.u32().unwrap(), d.u32().unwrap()), (5000, FILE_SYNC));

        let mut a = Enc::default();
        a.opaque(&fh).u64(9).u32(4999);
        let r = nfs(&mut s, proc::READ, &a);
        let ddp = r.ddp.clone().unwrap();
        let (_, mut d) = accepted(9, &r.body);
        assert_eq!(d.u32().unwrap(), NFS3_OK);
        assert!(d.bool().unwrap());
        fattr(&mut d);
        assert_eq!((d.u32().unwrap(), d.bool().unwrap()), (4999, false));
        let got = d.opaque(5000).unwrap();
        assert_eq!(got[0], 0);
        assert_eq!(&got[1..], &data[..4998]);
        assert_eq!(&r.body[ddp.clone()], got);
        assert_eq!(d.position(), r.body.len());
        // Reduced: the data and its pad go, the length word stays.
        let red = r.reduced();
        assert_eq!(red.len(), r.body.len() - 4999 - 1);
        assert_eq!(&red[ddp.start - 4..], &4999u32.to_be_bytes());

        let mut a = Enc::default();
        a.opaque(ROOT).opaque(b"f");
        let r = nfs(&mut s, proc::LOOKUP, &a);
        let (_, mut d) = accepted(9, &r.body);
        assert_eq!(d.u32().unwrap(), NFS3_OK);
        assert_eq!(d.opaque(64).unwrap(), &fh[..]);
        let r = nfs(&mut s, proc::REMOVE, &a);
        assert_eq!(accepted(9, &r.body).1.u32().unwrap(), NFS3_OK);
        let r = nfs(&mut s, proc::LOOKUP, &a);
        assert_eq!(accepted(9, &r.body).1.u32().unwrap(), NFS3ERR_NOENT);
        // Its handle is stale now.
        let mut a = Enc::default();
        a.opaque(&fh);
        let r = nfs(&mut s, proc::GETATTR, &a);
        assert_eq!(accepted(9, &r.body).1.u32().unwrap(), NFS3ERR_STALE);
    }

    #[test]
    fn odd6k_is_data64k_cut_short() {
        let s = Server::new();
        let f = &s.files[2];
        assert_eq!(f.name, b"odd6k");
        assert_eq!(f.data.len(), ODD_LEN);
        assert_ne!(f.data.len() % 4, 0);
        assert_eq!(&f.data[..], &s.files[1].data[..ODD_LEN]);
    }

    #[test]
    fn data64k_is_what_seq_prints() {
        let s = Server::new();
        let f = &s.files[1];
        assert_eq!(f.name, b"data64k");
        assert_eq!(f.data.len(), 65536);
        assert_eq!(&f.data[..16], b"000000000000000\n");
        assert_eq!(&f.data[65536 - 16..], b"000000000004095\n");
    }

    #[test]
    fn read_past_the_end_is_eof() {
        let mut s = Server::new();
        let mut a = Enc::default();
        a.opaque(ROOT).opaque(b"hello");
        let r = nfs(&mut s, proc::LOOKUP, &a);
        let (_, mut d) = accepted(9, &r.body);
        d.u32().unwrap();
        let fh = d.opaque(64).unwrap().to_vec();
        let mut a = Enc::default();
        a.opaque(&fh).u64(1 << 40).u32(100);
        let r = nfs(&mut s, proc::READ, &a);
        assert_eq!(r.ddp.as_ref().map(|r| r.len()), Some(0));
        let (_, mut d) = accepted(9, &r.body);
        d.u32().unwrap();
        d.bool().unwrap();
        fattr(&mut d);
        assert_eq!((d.u32().unwrap(), d.bool().unwrap()), (0, true));
    }

    #[test]
    fn readdirplus_lists_every_file_and_pages() {
        let mut s = Server::new();
        for i in 0..20 {
            s.add(format!("file{i}").as_bytes(), vec![]);
        }
        let list = |s: &mut Server, cookie: u64, max: u32| -> (Vec<Vec<u8>>, u64, bool) {
            let mut a = Enc::default();
            a.opaque(ROOT).u64(cookie).fixed(&[0; 8]).u32(max).u32(max);
            let r = nfs(s, proc::READDIRPLUS, &a);
            let (_, mut d) = accepted(9, &r.body);
            assert_eq!(d.u32().unwrap(), NFS3_OK);
            assert!(d.bool().unwrap());
            fattr(&mut d);
            d.fixed(8).unwrap();
            let (mut names, mut last) = (vec![], cookie);
            while d.bool().unwrap() {
                d.u64().unwrap();
                names.push(d.opaque(255).unwrap().to_vec());
                last = d.u64().unwrap();
                assert!(d.bool().unwrap());
                fattr(&mut d);
                assert!(d.bool().unwrap());
                d.opaque(64).unwrap();
            }
            let eof = d.bool().unwrap();
            assert_eq!(d.position(), r.body.len());
            assert!(r.body.len() <= max as usize);
            (names, last, eof)
        };
        let (all, _, eof) = list(&mut s, 0, 65536);
        assert!(eof);
        assert_eq!(all.len(), 23);
        let (mut got, mut cookie) = (vec![], 0);
        loop {
            let (names, last, eof) = list(&mut s, cookie, 1024);
            assert!(!names.is_empty());
            got.extend(names);
            cookie = last;
            if eof {
                break;
            }
        }
        assert_eq!(got, all);
    }

    #[test]
    fn fsinfo_pathconf_fsstat_access_setattr_commit_decode() {
        let mut s = Server::new();
        for (p, tail_words) in [
            (proc::FSINFO, 7 + 2 + 2 + 1),
            (proc::PATHCONF, 6),
            (proc::FSSTAT, 12 + 1),
        ] {
            let mut a = Enc::default();
            a.opaque(ROOT);
            let r = nfs(&mut s, p, &a);
            let (_, mut d) = accepted(9, &r.body);
            assert_eq!(d.u32().unwrap(), NFS3_OK);
            assert!(d.bool().unwrap());
            fattr(&mut d);
            assert_eq!(r.body.len() - d.position(), tail_words * 4, "proc {p}");
        }
        let mut a = Enc::default();
        a.opaque(ROOT).u32(0x3f);
        let r = nfs(&mut s, proc::ACCESS, &a);
        assert_eq!(&r.body[r.body.len() - 4..], &0x3fu32.to_be_bytes());

        let mut a = Enc::default();
        a.opaque(ROOT).opaque(b"hello");
        let r = nfs(&mut s, proc::LOOKUP, &a);
        let (_, mut d) = accepted(9, &r.body);
        d.u32().unwrap();
        let fh = d.opaque(64).unwrap().to_vec();
        let mut a = Enc::default();
        a.opaque(&fh)
            .bool(false)
            .bool(false)
            .bool(false)
            .bool(true)
            .u64(3);
        a.u32(2).u64(5).u32(1).bool(false);
        let r = nfs(&mut s, proc::SETATTR, &a);
        let (_, mut d) = accepted(9, &r.body);
        assert_eq!(d.u32().unwrap(), NFS3_OK);
        assert!(!d.bool().unwrap());
        assert!(d.bool().unwrap());
        assert_eq!(fattr(&mut d).1, 3);
        let mut a = Enc::default();
        a.opaque(&fh).u64(0).u32(0);
        let r = nfs(&mut s, proc::COMMIT, &a);
        assert_eq!(&r.body[r.body.len() - 8..], &s.verf);
    }
}
