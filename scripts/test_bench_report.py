#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A check of scripts/bench_report.py's instruction, lock and atomic figures
on a small made-up results tree (no guest): three boots of each transport,
one 4 KiB job and the metadata job each, with figures worked out by hand.
Also the --only-rs layout and an older run's c/ and rs/. Exits non-zero on
a mismatch.

Usage: python3 scripts/test_bench_report.py
"""

import csv
import json
import os
import subprocess
import sys
import tempfile

REPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_report.py")

VMLINUX = """ffffffff81000000 T _raw_spin_lock
ffffffff81000100 T _raw_spin_unlock
ffffffff81000200 T rust_helper_spin_lock
ffffffff81000300 T _RNvNtCs1234_6kernel4sync4lock
ffffffff81000400 T mutex_lock
ffffffff81000500 T some_kernel_fn
"""
RS_SYMS = [(0x0, "t", "_RNvCsabc_10rpcrdma_rs4send"), (0x100, "t", "rpcrdma_rs_glue_fn"),
           (0x200, "t", "init_module")]
C_SYMS = [(0x0, "t", "rpcrdma_send"), (0x100, "t", "rpcrdma_reply")]
LOCK, HELPER, KCRATE, MUTEX, OTHER = (0xffffffff81000000, 0xffffffff81000200, 0xffffffff81000300,
                                      0xffffffff81000400, 0xffffffff81000500)


def fio_json(nbytes):
    side = {"io_bytes": nbytes, "total_ios": nbytes // 4096, "bw": 400, "iops": 100.0,
            "clat_ns": {"percentile": {"50.000000": 1000, "99.000000": 2000}}, "runtime": 1000}
    empty = dict(side, io_bytes=0, total_ios=0, bw=0, iops=0.0)
    return json.dumps({"jobs": [{"read": side, "write": empty}]})


def boot(results, run, i, base, tbs_job, tbs_meta, kernel_job):
    """One boot's directory: randread-4k-qd1 (100 ops) and metadata (900)."""
    d = os.path.join(results, f"{run}-{i}")
    bench = os.path.join(d, "bench")
    os.makedirs(bench)
    with open(os.path.join(d, "params"), "w") as f:
        f.write("TRANSPORT=%s\nKERNEL=bench\nCPUS=2\nSERVER_CPUS=2\nBENCH_PROTOS=rdma\n" % run)
    mod = "rpcrdma_rs" if run == "rs" else "rpcrdma"
    with open(os.path.join(bench, "kallsyms-text.txt"), "w") as f:
        f.write(VMLINUX)
        for off, kind, name in (RS_SYMS if run == "rs" else C_SYMS):
            f.write(f"{base + off:016x} {kind} {name}\t[{mod}]\n")
    with open(os.path.join(bench, f"rdma-randread-4k-qd1-{i}.json"), "w") as f:
        f.write(fio_json(409600))
    with open(os.path.join(bench, "metadata.txt"), "w") as f:
        f.write(f"rdma-metadata-{i} ops=900 ns=1000000000\n")
    with open(os.path.join(bench, "cpu.txt"), "w") as f:
        f.write(f"rdma-randread-4k-qd1-{i} client_jiffies=10 server_jiffies=5\n")
        f.write(f"rdma-metadata-{i} client_jiffies=10 server_jiffies=5\n")
    with open(os.path.join(bench, "insn-marks.txt"), "w") as f:
        f.write(f"2 rdma-randread-4k-qd1-{i} bytes=409600 bs=4k\n")
        f.write(f"4 rdma-metadata-{i} bytes=900 bs=1\n")
    with open(os.path.join(d, "insn-counts.txt"), "w") as f:
        f.write("mark 1 kernel 999 user 1\n")
        f.write(f"mark 2 kernel {kernel_job} user 5000\n")
        for addr, insns, execs, locked, call in tbs_job:
            f.write(f"tb {addr:x} {insns} {execs} {locked} {call:x}\n")
        f.write("mark 3 kernel 10 user 10\n")
        f.write("mark 4 kernel 90000 user 0\n")
        for addr, insns, execs, locked, call in tbs_meta:
            f.write(f"tb {addr:x} {insns} {execs} {locked} {call:x}\n")
        f.write("end\n")


def rs_boot(results, i, k):
    """rpcrdma_rs, instructions scaled by K; its module elsewhere each boot."""
    base = 0xffffffffc0000000 + 0x10000 * i
    job = [(base, 3000 * k, 100, 100, HELPER),     # Rust, calls a helper: no lock
           (base + 0x10, 2000 * k, 100, 0, 0),
           (base + 0x100, 500 * k, 50, 50, MUTEX),  # glue: 50 mutex_lock
           (base + 0x200, 100 * k, 10, 0, 0),       # not glue: Rust
           (HELPER, 400 * k, 100, 0, LOCK),         # 100 _raw_spin_lock
           (KCRATE, 300 * k, 100, 100, 0),          # 100 atomics, Rust
           (LOCK, 500 * k, 100, 100, 0),            # the lock's own: not counted
           (OTHER, 10000 * k, 1000, 0, LOCK)]       # not the transport's
    meta = [(base, 9000, 900, 0, 0)]
    boot(results, "rs", i, base, job, meta, 20000 * k)


def c_boot(results, i):
    base = 0xffffffffc0100000 + 0x10000 * i
    job = [(base, 4000, 100, 200, LOCK), (base + 0x100, 1000, 100, 0, LOCK),
           (LOCK, 1000, 200, 200, 0)]
    meta = [(base, 4500, 900, 0, 0)]
    boot(results, "c", i, base, job, meta, 25000)


def common(results, only_rs):
    os.makedirs(results)
    with open(os.path.join(results, "glue-symbols.txt"), "w") as f:
        f.write("rpcrdma_rs_glue_fn\n")
    with open(os.path.join(results, "bench-params.txt"), "w") as f:
        f.write(f"COMMIT=0123abc\nUNCOMMITTED=0\nKERNEL_FLAVOR=bench\nREPS=3\nRUNTIME=8\n"
                f"ONLY_RS={only_rs}\n")


def run(results, rec):
    p = subprocess.run([sys.executable, REPORT, results, "--record", rec],
                       capture_output=True, text=True)
    try:
        import matplotlib  # noqa: F401
        ok = (0,)
    except ImportError:
        ok = (0, 1)  # fails for want of the plots only
    if p.returncode not in ok:
        print(p.stdout, p.stderr)
        raise SystemExit(f"bench_report.py exited {p.returncode}")
    return p.stdout


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


failures = []


def expect(what, got, want):
    if got != want:
        failures.append(f"{what}: got {got!r}, want {want!r}")


def check_full(tmp):
    results, rec = os.path.join(tmp, "full"), os.path.join(tmp, "full-rec")
    common(results, 0)
    for i, k in ((1, 1), (2, 2), (3, 4)):
        rs_boot(results, i, k)
        c_boot(results, i)
    out = run(results, rec)
    mod = {(r["job"], r["transport"]): r for r in rows(os.path.join(rec, "module.csv"))}
    rs, c = mod[("randread-4k-qd1", "rpcrdma_rs")], mod[("randread-4k-qd1", "C rpcrdma")]
    # rpcrdma_rs per op (100 ops), k = 1, 2, 4: module (3000 + 2000 + 500 +
    # 100) k / 100 = 56k; without glue 51k; glue 5k; helpers 4k; kcrate 3k;
    # total 63k. Locks 0.5 mutex_lock + 1.0 _raw_spin_lock; atomics 1.5 in
    # the module, 1.0 in kcrate.
    for f, want in (("module", "112.00"), ("module_min", "56.00"), ("module_max", "224.00"),
                    ("module_noglue", "102.00"), ("glue", "10.00"), ("helpers", "8.00"),
                    ("kcrate", "6.00"), ("mod_total", "126.00"), ("mod_total_min", "63.00"),
                    ("mod_total_max", "252.00"), ("locks", "1.50"), ("atomics", "2.50"),
                    ("atomics_module", "1.50"), ("atomics_rust", "1.00"), ("per", "rpc"),
                    ("reps", "3"), ("mod_total_ratio_to_c", "2.520"),
                    ("locks_ratio_to_c", "0.750"), ("atomics_ratio_to_c", "1.250")):
        expect(f"rs {f}", rs.get(f), want)
    # C: 5000 / 100 = 50, locks 2.0, atomics 2.0, no Rust.
    for f, want in (("module", "50.00"), ("module_noglue", "50.00"), ("glue", "0.00"),
                    ("helpers", "0.00"), ("mod_total", "50.00"), ("locks", "2.00"),
                    ("atomics", "2.00")):
        expect(f"C {f}", c.get(f), want)
    meta = mod[("metadata", "rpcrdma_rs")]
    expect("rs metadata module", meta.get("module"), "10.00")
    expect("rs metadata per", meta.get("per"), "op")
    expect("C metadata module", mod[("metadata", "C rpcrdma")].get("module"), "5.00")
    locks = {(r["job"], r["transport"], r["function"]): r for r in rows(os.path.join(rec, "locks.csv"))}
    expect("rs mutex_lock", locks.get(("randread-4k-qd1", "rpcrdma_rs", "mutex_lock"), {}).get("median"), "0.50")
    expect("rs _raw_spin_lock", locks.get(("randread-4k-qd1", "rpcrdma_rs", "_raw_spin_lock"), {}).get("median"), "1.00")
    expect("C _raw_spin_lock", locks.get(("randread-4k-qd1", "C rpcrdma", "_raw_spin_lock"), {}).get("median"), "2.00")
    expect("lock functions", len(locks), 3)
    insn = {(r["job"], r["transport"]): r for r in rows(os.path.join(rec, "instructions.csv"))}
    expect("rs kernel per op", insn[("randread-4k-qd1", "rpcrdma_rs")]["kernel"], "400")
    expect("rs kernel min", insn[("randread-4k-qd1", "rpcrdma_rs")]["kernel_min"], "200")
    expect("C kernel per op", insn[("randread-4k-qd1", "C rpcrdma")]["kernel"], "250")
    expect("kernel ratio", insn[("randread-4k-qd1", "rpcrdma_rs")]["kernel_ratio_to_c"], "1.600")
    targets = open(os.path.join(rec, "targets.txt")).read()
    for line in ("NOT met      randread-4k-qd1: module instructions per op, rs/C <= 1.00",
                 "met          randread-4k-qd1: lock acquisitions per RPC <= C's",
                 "met          randread-4k-qd1: atomic RMWs per RPC <= C's + 2",
                 "NOT met      randread-4k-qd1: client kernel instructions per op, rs/C <= 0.97",
                 "NOT met      metadata: module instructions per op, rs/C <= 1.00"):
        expect(f"target {line!r}", line in targets, True)
    expect("no per-RPC target for metadata", "metadata: lock acquisitions" in targets, False)
    top = [r for r in rows(os.path.join(rec, "top-symbols.csv"))
           if r["job"] == "randread-4k-qd1" and r["transport"] == "rpcrdma_rs"]
    # Pooled over the boots: some_kernel_fn 10000 * 7 / 300 ops.
    expect("top symbol", (top[0]["symbol"], top[0]["instructions_per_op"]), ("some_kernel_fn", "233.3"))
    helper = next(r for r in top if r["symbol"] == "rust_helper_spin_lock")
    expect("helper category", helper["category"], "Rust in vmlinux")
    expect("helper lock calls", helper["lock_calls_per_op"], "1.000")
    # The top list counts any function's calls to the lock functions.
    expect("other lock calls", top[0]["lock_calls_per_op"], "10.000")
    params = open(os.path.join(rec, "params.txt")).read()
    expect("params", all(s in params for s in ("COMMIT=0123abc", "REPS=3", "BOOTS_C=3", "BOOTS_RS=3")), True)
    expect("report.txt", "Lock acquisitions per operation by lock function" in
           open(os.path.join(rec, "report.txt")).read(), True)
    expect("stdout", "Module instructions per operation" in out, True)
    return results


def check_only_rs(tmp):
    results, rec = os.path.join(tmp, "only-rs"), os.path.join(tmp, "only-rs-rec")
    common(results, 1)
    for i, k in ((1, 1), (2, 1)):
        rs_boot(results, i, k)
    out = run(results, rec)
    mod = {(r["job"], r["transport"]): r for r in rows(os.path.join(rec, "module.csv"))}
    rs = mod[("randread-4k-qd1", "rpcrdma_rs")]
    expect("only-rs module", rs.get("mod_total"), "63.00")
    expect("only-rs ratio", rs.get("mod_total_ratio_to_c"), "")
    expect("only-rs C rows", any(t == "C rpcrdma" for _, t in mod), False)
    expect("only-rs reason", "not run (scripts/bench.sh --only-rs)" in out, True)
    expect("only-rs targets", "met " in open(os.path.join(rec, "targets.txt")).read(), False)


def check_old_layout(tmp, full):
    """An older run's c/ and rs/ read as one boot each."""
    results, rec = os.path.join(tmp, "old"), os.path.join(tmp, "old-rec")
    common(results, 0)
    os.rename(os.path.join(full, "c-1"), os.path.join(results, "c"))
    os.rename(os.path.join(full, "rs-1"), os.path.join(results, "rs"))
    run(results, rec)
    mod = {(r["job"], r["transport"]): r for r in rows(os.path.join(rec, "module.csv"))}
    expect("old layout rs", mod[("randread-4k-qd1", "rpcrdma_rs")].get("mod_total"), "63.00")
    expect("old layout C", mod[("randread-4k-qd1", "C rpcrdma")].get("locks"), "2.00")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        full = check_full(tmp)
        check_only_rs(tmp)
        check_old_layout(tmp, full)
    for f in failures:
        print("FAIL", f)
    print("ok" if not failures else f"{len(failures)} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
