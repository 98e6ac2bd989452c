#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turns the raw results of scripts/bench.sh into tables, a CSV, plots and
a profile summary.

Usage: bench_report.py RESULTS_DIR [--record DIR]
       bench_report.py RESULTS_DIR --annotate SYMBOL [rs|c] [JOB]

RESULTS_DIR holds one harness run per boot of each client transport (c-1/,
rs-1/, c-2/, rs-2/ ...; an older run's c/ and rs/ are read too), each with
bench/ written by selftests/rpcrdma_rs/bench.sh in the client guest; the
boots' repetitions are merged. Writes results.csv, ratios.png,
scaling-iops.png, scaling-throughput.png, profile-summary.txt and, when
QEMU counted the client's instructions (insn-counts.txt,
scripts/insn_count.c), instructions.txt there; prints the table, the
instruction counts, the module's instructions, locks and atomic operations
per operation, the profile summary and the targets (which do not change
the exit status). Fails when matplotlib is missing or the instruction
counts do not match the guest's marks, after everything else.

--record DIR also writes the run's text results into DIR (everything
printed, as report.txt; the tables as CSV; each job's top kernel functions;
the run's parameters) and copies the plots there: the files
Documentation/benchmark-results/README.rst describes.

--annotate prints where one kernel function's instructions went during a
job (default: rs, randread-4k-qd16; every repetition), block by block over
its disassembly: SYMBOL is a symbol or a part of its readable Rust name.
It needs the instruction counts, and the objects scripts/bench.sh keeps
with the results (rpcrdma_rs.ko, and kernel-tree naming the bench kernel's
build tree for vmlinux and the C module).
"""

import bisect
import csv
import fnmatch
import functools
import glob
import io
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys

USER_HZ = 100  # /proc/stat counts in USER_HZ ticks on every architecture
GIB = 1 << 30

# (column label, harness run, mount protocol)
TRANSPORTS = [
    ("rpcrdma_rs", "rs", "rdma"),
    ("C rpcrdma", "c", "rdma"),
    ("TCP", "c", "tcp"),
]
RS, C, TCP = (t[0] for t in TRANSPORTS)
BASE_JOBS = [
    "seqwrite-1m",
    "seqread-1m",
    "randwrite-4k-qd1",
    "randread-4k-qd1",
    "randwrite-4k-qd16",
    "randread-4k-qd16",
    "metadata",
]
# The scaling view (RDMA only), named as selftests/rpcrdma_rs/bench.sh names
# its jobs; some points are base jobs.
IODEPTHS = [1, 4, 16, 64]
NUMJOBS = [1, 4]
BLOCKS = [("4k", 4 << 10), ("64k", 64 << 10), ("256k", 256 << 10), ("1m", 1 << 20)]


def randread_job(qd, nj):
    return f"randread-4k-qd{qd}" + ("" if nj == 1 else f"-nj{nj}")


def seq_job(rw, bs):
    return f"seq{rw}-{bs}"


SCALING_JOBS = [randread_job(qd, nj) for nj in NUMJOBS for qd in IODEPTHS] + \
    [seq_job(rw, bs) for rw in ("read", "write") for bs, _ in BLOCKS]
JOBS = BASE_JOBS + [j for j in SCALING_JOBS if j not in BASE_JOBS]
PROFILE_JOBS = ["seqread-1m", "randread-4k-qd16", "metadata"]


def run_dirs(results, run):
    """The boots of transport RUN ("c" or "rs") in RESULTS, in order: RUN-1,
    RUN-2 ..., or the one directory RUN of a run from before the boots
    alternated."""
    found = []
    for path in glob.glob(os.path.join(results, f"{run}-*")):
        m = re.match(rf"{run}-(\d+)$", os.path.basename(path))
        if m and os.path.isdir(path):
            found.append((int(m.group(1)), path))
    if found:
        return [path for _, path in sorted(found)]
    old = os.path.join(results, run)
    return [old] if os.path.isdir(old) else []


def bench_params(results):
    """What scripts/bench.sh wrote of the run (bench-params.txt), as a dict."""
    params = {}
    path = os.path.join(results, "bench-params.txt")
    if os.path.exists(path):
        for line in open(path):
            name, sep, value = line.rstrip("\n").partition("=")
            if sep:
                params[name] = value
    return params


def read_params(run_dir):
    """The harness's params file of a run (NAME=shell-quoted value)."""
    params = {}
    path = os.path.join(run_dir, "params")
    if os.path.exists(path):
        for line in open(path):
            name, sep, value = line.rstrip("\n").partition("=")
            if not sep:
                continue
            try:
                words = shlex.split(value)
            except ValueError:
                words = [value]
            params[name] = " ".join(words)
    return params


def read_cpu(bench):
    cpu = {}
    path = os.path.join(bench, "cpu.txt")
    if os.path.exists(path):
        for line in open(path):
            tag, *fields = line.split()
            vals = dict(f.split("=") for f in fields)
            cpu[tag] = (int(vals["client_jiffies"]) / USER_HZ, int(vals["server_jiffies"]) / USER_HZ)
    return cpu


def fio_sample(path):
    with open(path) as f:
        data = json.load(f)
    jobs = data["jobs"]
    # Several jobs report as one with group_reporting; without it, their
    # I/O adds up here and the first job's latencies stand for all.
    sides = []
    for job in jobs:
        sides.append(job["write"] if job["write"]["io_bytes"] > job["read"]["io_bytes"] else job["read"])
    first = sides[0]
    pct = first.get("clat_ns", {}).get("percentile", {})
    return {
        "bytes": sum(s["io_bytes"] for s in sides),
        "ops": sum(s["total_ios"] for s in sides),
        "bw_mib_s": sum(s["bw"] for s in sides) / 1024.0,
        "iops": sum(s["iops"] for s in sides),
        "p50_us": pct.get("50.000000", 0) / 1000.0,
        "p99_us": pct.get("99.000000", 0) / 1000.0,
        "runtime_s": max(s.get("runtime", 0) for s in sides) / 1000.0,
    }


def collect(results):
    """Returns {(label, job): [sample, ...]} and {label: reason unavailable}."""
    samples, unavailable = {}, {}
    only_rs = bench_params(results).get("ONLY_RS") == "1"
    for label, run, proto in TRANSPORTS:
        whys, ran = [], False
        dirs = run_dirs(results, run)
        for run_dir in dirs:
            bench = os.path.join(run_dir, "bench")
            why = os.path.join(bench, "unavailable.txt")
            params = read_params(run_dir)
            if "BENCH_PROTOS" in params and proto not in params["BENCH_PROTOS"].split():
                continue
            ran = True
            if proto == "rdma" and os.path.exists(why):
                whys.append(open(why).read().strip())
                continue
            if not os.path.isdir(bench):
                whys.append("no results (the run failed before measuring)")
                continue
            collect_run(bench, label, proto, samples)
        if not any(key[0] == label for key in samples):
            if not dirs and only_rs:
                unavailable[label] = "not run (scripts/bench.sh --only-rs)"
            elif not ran and dirs:
                unavailable[label] = "not run (scripts/bench.sh --no-tcp)"
            else:
                unavailable[label] = whys[0] if whys else "no results (the run failed before measuring)"
    return samples, unavailable


def collect_run(bench, label, proto, samples):
    """Adds the samples of PROTO in one boot's BENCH directory to SAMPLES."""
    cpu = read_cpu(bench)
    meta = {}
    mpath = os.path.join(bench, "metadata.txt")
    if os.path.exists(mpath):
        for line in open(mpath):
            tag, *fields = line.split()
            meta[tag] = dict(f.split("=") for f in fields)
    for name in sorted(os.listdir(bench)):
        m = re.match(rf"{proto}-(.+)-(\d+)\.json$", name)
        if not m:
            continue
        job, rep = m.group(1), m.group(2)
        s = fio_sample(os.path.join(bench, name))
        s["client_cpu_s"], s["server_cpu_s"] = cpu.get(f"{proto}-{job}-{rep}", (0, 0))
        s["rep"] = rep
        samples.setdefault((label, job), []).append(s)
    for tag, vals in meta.items():
        m = re.match(rf"{proto}-metadata-(\d+)$", tag)
        if not m:
            continue
        ops, ns = int(vals["ops"]), int(vals["ns"])
        c, sv = cpu.get(tag, (0, 0))
        samples.setdefault((label, "metadata"), []).append({
            "bytes": 0, "ops": ops, "bw_mib_s": 0.0, "iops": ops / (ns / 1e9),
            "p50_us": 0.0, "p99_us": 0.0, "runtime_s": ns / 1e9,
            "client_cpu_s": c, "server_cpu_s": sv, "rep": m.group(1),
        })


def is_throughput(job):
    """Sequential jobs are measured in MiB/s, the others in operations."""
    return job.startswith("seq")


def metric(job):
    return ("bw_mib_s", "MiB/s") if is_throughput(job) else ("iops", "IOPS")


def summary(values):
    return statistics.median(values), min(values), max(values)


def cpu_cost(job, ss):
    """Client and server CPU seconds per GiB (sequential jobs) or per 1000 ops."""
    total_c = sum(s["client_cpu_s"] for s in ss)
    total_s = sum(s["server_cpu_s"] for s in ss)
    if is_throughput(job):
        moved = sum(s["bytes"] for s in ss) / GIB
        unit = "s/GiB"
    else:
        moved = sum(s["ops"] for s in ss) / 1000.0
        unit = "s/kop"
    if moved <= 0:
        return None, None, unit
    return total_c / moved, total_s / moved, unit


def perftest(results):
    out = []
    for tool in ("ib_write_bw", "ib_read_bw", "ib_send_lat"):
        # Measured in the first C boot.
        paths = [os.path.join(d, "bench", f"{tool}.txt") for d in run_dirs(results, "c")]
        path = next((p for p in paths if os.path.exists(p)), "")
        if not os.path.exists(path):
            out.append((tool, None, ""))
            continue
        rows = [line.split() for line in open(path) if re.match(r"^\s*\d+\s+\d+\s+\d", line)]
        if not rows:
            out.append((tool, None, ""))
        elif tool.endswith("_bw"):
            out.append((tool, float(rows[-1][3]), "MB/s (average)"))
        else:
            out.append((tool, float(rows[-1][4]), "usec (typical)"))
    return out


def fmt(v, spec=".3f"):
    return format(v, spec) if v is not None else "-"


def table(samples, unavailable, rows):
    """Prints the table; fills rows (the CSV); returns {(label, job): stats}."""
    stats = {}
    head = f"{'job':<22}{'transport':<13}{'median':>10}{'min':>10}{'max':>10}  {'unit':<6}" \
           f"{'p50 us':>9}{'p99 us':>10}{'ratio/C':>9}{'cli cpu':>10}{'srv cpu':>10}"
    print(head)
    print("-" * len(head))
    scaling_only = [j for j in JOBS if j not in BASE_JOBS]
    scaling_ran = any((label, j) in samples for label, _, _ in TRANSPORTS for j in scaling_only)
    for job in JOBS:
        # Without the scaling jobs (--no-scaling, or no run got that far)
        # their rows would only say so.
        if job in scaling_only and not scaling_ran:
            continue
        key, unit = metric(job)
        c_ss = samples.get((C, job), [])
        c_med = statistics.median(s[key] for s in c_ss) if c_ss else None
        c_cli = cpu_cost(job, c_ss)[0] if c_ss else None
        for label, _, _ in TRANSPORTS:
            ss = samples.get((label, job), [])
            # TCP runs the base jobs only: no row for the others.
            if not ss and label == TCP and job not in BASE_JOBS:
                continue
            if not ss:
                why = unavailable.get(label, "no samples")
                print(f"{job:<22}{label:<13}  not measured: {why}")
                rows.append({"job": job, "transport": label, "note": f"not measured: {why}"})
                continue
            med, lo, hi = summary([s[key] for s in ss])
            p50 = statistics.median(s["p50_us"] for s in ss)
            p99 = statistics.median(s["p99_us"] for s in ss)
            ratio = med / c_med if c_med else None
            ccpu, scpu, cunit = cpu_cost(job, ss)
            cpu_ratio = ccpu / c_cli if ccpu is not None and c_cli else None
            stats[(label, job)] = {"median": med, "min": lo, "max": hi, "ratio": ratio,
                                   "client_cpu": ccpu, "cpu_ratio": cpu_ratio}
            print(f"{job:<22}{label:<13}{med:>10.1f}{lo:>10.1f}{hi:>10.1f}  {unit:<6}"
                  f"{p50:>9.0f}{p99:>10.0f}{fmt(ratio):>9}{fmt(ccpu):>10}{fmt(scpu):>10}")
            rows.append({
                "job": job, "transport": label, "unit": unit, "median": f"{med:.2f}",
                "min": f"{lo:.2f}", "max": f"{hi:.2f}", "reps": len(ss),
                "p50_us": f"{p50:.1f}", "p99_us": f"{p99:.1f}",
                "ratio_to_c": fmt(ratio), "client_cpu": fmt(ccpu), "server_cpu": fmt(scpu),
                "cpu_unit": cunit, "client_cpu_ratio_to_c": fmt(cpu_ratio), "note": "",
            })
    print("CPU columns: CPU seconds per GiB moved (sequential jobs) or per 1000 operations.")
    if scaling_ran:
        print("randread-4k-qdN-nj4: four fio jobs at iodepth N each, reported together.")
    else:
        print("Scaling jobs: none measured.")
    return stats


def targets(stats, insn=None):
    """Lines saying whether rpcrdma_rs meets each target against the C
    transport; with instruction counts, the CPU target is judged on them
    too."""
    checks = []
    for job in BASE_JOBS:
        checks.append((f"{job}: ratio to C >= 1.00", job, "ratio", ">=", 1.00))
    for job in ("randread-4k-qd16", "randwrite-4k-qd16"):
        checks.append((f"{job}: ratio to C >= 1.15", job, "ratio", ">=", 1.15))
    for job in SCALING_JOBS:
        checks.append((f"scaling {job}: ratio to C >= 0.95", job, "ratio", ">=", 0.95))
    for job in JOBS:
        checks.append((f"{job}: client CPU per op, ratio to C <= 1.00", job, "cpu_ratio", "<=", 1.00))
    lines = []
    scaling_only = [j for j in JOBS if j not in BASE_JOBS]
    if not any((RS, j) in stats or (C, j) in stats for j in scaling_only):
        checks = [c for c in checks if c[1] not in scaling_only and not c[0].startswith("scaling ")]
        lines.append(f"  {'not measured':<13}{'the scaling points (no scaling jobs ran)':<62}{'-':>8}")
    if insn:
        for job in JOBS:
            if (RS, job) in insn:
                checks.append((f"{job}: client instructions per op, ratio to C <= 1.00", job,
                               "insn_ratio", "<=", 1.00))
    for what, job, field, op, bound in checks:
        source = insn if field.startswith("insn_") else stats
        v = source.get((RS, job), {}).get(field)
        if v is None:
            verdict, shown = "not measured", "-"
        else:
            ok = v >= bound if op == ">=" else v <= bound
            verdict, shown = ("met" if ok else "NOT met"), f"{v:.3f}"
        lines.append(f"  {verdict:<13}{what:<62}{shown:>8}")
    return lines


# Profiles: where the client guest's samples fall.
CATEGORIES = ["rpcrdma_rs", "rpcrdma (C)", "Rust in vmlinux", "rdma_rxe/siw", "ib_core+rdma_cm", "sunrpc",
              "nfs*", "other kernel", "user space", "idle"]
# Where an idle vCPU sits when the sampling timer fires (the leaf symbol).
IDLE_SYMBOLS = {"pv_native_safe_halt", "native_safe_halt", "default_idle", "arch_cpu_idle",
                "default_idle_call", "cpu_idle_poll", "poll_idle", "acpi_safe_halt",
                "acpi_idle_do_entry", "intel_idle", "mwait_idle", "do_idle",
                "cpuidle_enter_state", "__cpuidle_text_start"}
RDMA_CORE_PREFIXES = ("ib_", "rdma_", "cma_", "cm_", "iw_cm", "iwcm_", "ucma_", "uverbs_")


def module_category(mod):
    if mod == "rpcrdma_rs":
        return "rpcrdma_rs"
    if mod == "rpcrdma":
        return "rpcrdma (C)"
    if mod in ("rdma_rxe", "siw"):
        return "rdma_rxe/siw"
    if mod in ("ib_core", "rdma_cm", "ib_cm", "iw_cm", "ib_uverbs", "rdma_ucm"):
        return "ib_core+rdma_cm"
    if mod in ("sunrpc", "auth_rpcgss", "rpcsec_gss_krb5"):
        return "sunrpc"
    if mod.startswith("nfs") or mod in ("lockd", "grace"):
        return "nfs*"
    return "other kernel"


class Kallsyms:
    """Module symbols of the guest (kallsyms.txt: /proc/kallsyms lines with a
    [module] tag) and the RDMA core's built-in symbols (builtin-rdma-core.txt,
    from the bench kernel's build tree)."""

    def __init__(self, path, builtin_path):
        self.module = {}
        self.entries = []
        if os.path.exists(path):
            for line in open(path):
                parts = line.split()
                if len(parts) < 4 or not parts[3].startswith("["):
                    continue
                name, mod = parts[2], parts[3].strip("[]")
                self.module.setdefault(name, mod)
                try:
                    addr = int(parts[0], 16)
                except ValueError:
                    continue
                if addr:
                    self.entries.append((addr, name, mod))
        self.entries.sort()
        self.addrs = [e[0] for e in self.entries]
        self.builtin_rdma = set()
        if os.path.exists(builtin_path):
            self.builtin_rdma = {line.strip() for line in open(builtin_path) if line.strip()}

    def resolve(self, sym):
        """(symbol, module or None) for a kernel symbol or raw address."""
        if sym.startswith("0x") and self.addrs:
            try:
                addr = int(sym, 16)
            except ValueError:
                return sym, None
            i = bisect.bisect_right(self.addrs, addr) - 1
            # Within a module's text: module symbols are seldom 64 KiB apart.
            if i >= 0 and addr - self.addrs[i] < (64 << 10):
                _, name, mod = self.entries[i]
                return name, mod
            return sym, None
        return sym, self.module.get(sym)

    def category(self, kind, sym):
        if kind not in ("k", "g"):
            return sym, "user space"
        if sym in IDLE_SYMBOLS:
            return sym, "idle"
        name, mod = self.resolve(sym)
        return name, kernel_category(name, mod, self.builtin_rdma)


def kernel_category(name, mod, builtin_rdma):
    """The category of kernel symbol NAME of module MOD (None: built in);
    BUILTIN_RDMA names the RDMA core's built-in symbols, if known."""
    if mod:
        return module_category(mod)
    if is_vmlinux_rust(name):
        return "Rust in vmlinux"
    if name in builtin_rdma or (not builtin_rdma and name.startswith(RDMA_CORE_PREFIXES)):
        return "ib_core+rdma_cm"
    return "other kernel"


def rust_readable(sym):
    """The identifiers of a Rust v0 symbol (_R...) joined with ::, a rough
    reading for the summary: perf's own demangler may not know v0."""
    if not sym.startswith("_R"):
        return sym
    s, i, names = sym.split(".")[0], 2, []
    while i < len(s):
        c = s[i]
        if c.isdigit():
            j = i
            while j < len(s) and s[j].isdigit():
                j += 1
            n = int(s[i:j])
            if j < len(s) and s[j] == "_":
                j += 1
            names.append(s[j:j + n])
            i = j + n
        elif c in "sB":
            # A disambiguator or back reference: base-62 digits up to "_".
            m = re.match(r"[0-9a-zA-Z]*_", s[i + 1:])
            i += 1 + (m.end() if m else 0)
        elif c == "N":
            i += 2  # the namespace letter follows
        else:
            i += 1
    return "::".join(n for n in names if n) or sym


def shown_symbol(name, width):
    """NAME readable (rust_readable), cut to WIDTH characters."""
    shown = rust_readable(name)
    return shown if len(shown) <= width else shown[:width - 3] + "..."


def read_flat_profile(path):
    """[(percent, samples or None, kind, symbol)] from perf report -g none -n."""
    entries = []
    for line in open(path):
        m = re.match(r"^\s*([\d.]+)%\s+(?:(\d+)\s+)?\[(.)\]\s+(.+?)\s*$", line)
        if m:
            entries.append((float(m.group(1)), int(m.group(2)) if m.group(2) else None,
                            m.group(3), m.group(4)))
    return entries


def profile(results, run_dir, job):
    """{"shares": {category: percent}, "top": [...], "samples": n} or a reason."""
    if run_dir is None:
        return "no profile"
    bench = os.path.join(run_dir, "bench")
    flat = os.path.join(bench, f"profile-{job}-flat.txt")
    if not os.path.exists(flat):
        log = os.path.join(bench, f"perf-{job}.log")
        return f"no profile (see {log})" if os.path.exists(log) else "no profile"
    entries = read_flat_profile(flat)
    if not entries:
        return f"no samples in {flat}"
    ks = Kallsyms(os.path.join(bench, "kallsyms.txt"), os.path.join(results, "builtin-rdma-core.txt"))
    shares = {c: 0.0 for c in CATEGORIES}
    # Addresses perf left unresolved and kallsyms names come together here.
    by_symbol = {}
    for pct, _, kind, sym in entries:
        name, cat = ks.category(kind, sym)
        shares[cat] += pct
        if cat != "idle":
            by_symbol[(cat, name)] = by_symbol.get((cat, name), 0.0) + pct
    top = sorted(((pct, cat, name) for (cat, name), pct in by_symbol.items()), key=lambda t: -t[0])
    counts = [e[1] for e in entries if e[1] is not None]
    return {"shares": shares, "top": top[:15], "samples": sum(counts) if counts else None}


def perf_run_dir(results, run):
    """The boot of RUN with perf profiles (the first), or None."""
    return next((d for d in run_dirs(results, run)
                 if glob.glob(os.path.join(d, "bench", "perf-*.log"))), None)


def profile_summary(results):
    labels = [(RS, "rs"), (C, "c")]
    if not any(perf_run_dir(results, run) for _, run in labels):
        # With the instruction counter every job is counted by function
        # instead: its profile is in instructions.txt.
        return ["No perf profiles in this run: with the instruction counter, every job is",
                "counted by function instead (instructions.txt)."]
    out = ["Profile of the client guest during the job (perf record -a -g, cpu-clock at 499 Hz",
           "on both vCPUs; each sample counts for the function it landed in). 'all' is the",
           "share of all samples, 'busy' the share of the samples not idle.", ""]
    for job in PROFILE_JOBS:
        profs = {label: profile(results, perf_run_dir(results, run), job) for label, run in labels}
        out.append(f"{job}:")
        if all(isinstance(p, str) for p in profs.values()):
            out.extend(f"  {label}: {profs[label]}" for label, _ in labels)
            out.append("")
            continue
        head = f"  {'':<18}" + "".join(f"{label + ' all':>17}{'busy':>7}" for label, _ in labels)
        out.append(head)
        for label, _ in labels:
            p = profs[label]
            if isinstance(p, str):
                out.append(f"  ({label}: {p})")
        for cat in CATEGORIES:
            cells = ""
            for label, _ in labels:
                p = profs[label]
                if isinstance(p, str):
                    cells += f"{'-':>17}{'-':>7}"
                    continue
                busy = 100.0 - p["shares"]["idle"]
                share = p["shares"][cat]
                b = "" if cat == "idle" else (f"{100.0 * share / busy:.1f}%" if busy > 0 else "-")
                cells += f"{share:>16.1f}%{b:>7}"
            out.append(f"  {cat:<18}{cells}")
        for label, _ in labels:
            p = profs[label]
            if isinstance(p, str):
                continue
            n = p["samples"]
            out.append(f"  top symbols, {label}" + (f" ({n} samples):" if n else ":"))
            for pct, cat, name in p["top"]:
                out.append(f"    {pct:5.1f}%  {cat:<16} {shown_symbol(name, 72)}")
        out.append("")
    return out


# Instructions: counted by QEMU's insn_count plugin in the client guest.

# Where a kernel block's instructions count for the transports' own code
# (the module figures): the module's text, and the Rust of the kernel image
# (the rust_helper_* wrappers of C inlines and the kernel crate), which only
# rpcrdma_rs, the client's one Rust module, runs.
RS_GLUE, RS_RUST, C_MODULE, RUST_HELPERS, RUST_KERNEL = \
    "rs-glue", "rs-rust", "c-module", "rust-helpers", "rust-kernel"
OWNERS = (RS_GLUE, RS_RUST, C_MODULE, RUST_HELPERS, RUST_KERNEL)
MODULE_OWNERS = (RS_GLUE, RS_RUST, C_MODULE)
# The functions that take a lock: a call to one from the transport's code
# is one acquisition.
LOCK_FUNCTIONS = ("_raw_spin_lock*", "_raw_spin_trylock*", "_raw_read_lock*", "_raw_write_lock*",
                  "mutex_lock*", "mutex_trylock", "down_read*", "down_write*", "__mutex_lock*")


def is_vmlinux_rust(name):
    """Whether NAME, a symbol of the kernel image, is Rust: a helper or the
    kernel crate's (v0-mangled)."""
    return name.startswith("rust_helper_") or name.startswith("_R")


def is_lock_function(name):
    return any(fnmatch.fnmatchcase(name, pat) for pat in LOCK_FUNCTIONS)


def base_symbol(name):
    """NAME without the padding prefix a call may aim at (call thunks) and
    the suffixes of the compiler's clones (.isra.0, .cold)."""
    if name.startswith("__pfx_"):
        name = name[len("__pfx_"):]
    return name.split(".")[0]


def read_glue(results):
    """The names of the functions of rpcrdma_rs's C glue (glue-symbols.txt,
    nm of include/*.o), or None if not kept: then C-looking symbols of the
    module (those not v0-mangled) stand for them."""
    path = os.path.join(results, "glue-symbols.txt")
    if not os.path.exists(path):
        return None
    return frozenset(base_symbol(line.strip()) for line in open(path) if line.strip())


def owner(name, mod, glue):
    """Whose code kernel symbol NAME of module MOD (None: built in) is, of
    OWNERS; None for the rest of the kernel."""
    if mod == "rpcrdma_rs":
        if glue is None:
            return RS_RUST if name.startswith("_R") else RS_GLUE
        return RS_GLUE if base_symbol(name) in glue else RS_RUST
    if mod == "rpcrdma":
        return C_MODULE
    if mod is None and is_vmlinux_rust(name):
        return RUST_KERNEL if name.startswith("_R") else RUST_HELPERS
    return None


def parse_size(text):
    """fio's block size ("4k", "1m") in bytes."""
    m = re.match(r"^(\d+)([kmg]?)$", text.lower())
    if not m:
        raise ValueError(f"block size {text!r}")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2)]


def read_insn_counts(path, on_block=None):
    """{mark: (kernel, user)} from the plugin's output; ON_BLOCK(mark,
    address, insns, execs, locked, call target) for each block line after
    a profile mark (execs, locked and call None in the older format of
    "tb ADDRESS INSNS")."""
    marks, current = {}, None
    for line in open(path):
        parts = line.split()
        if parts[:1] == ["mark"] and len(parts) == 6:
            current = int(parts[1])
            marks[current] = (int(parts[3]), int(parts[5]))
        elif parts[:1] == ["tb"] and current is not None and on_block:
            if len(parts) == 6:
                on_block(current, int(parts[1], 16), int(parts[2]), int(parts[3]), int(parts[4]),
                         int(parts[5], 16))
            elif len(parts) == 3:
                on_block(current, int(parts[1], 16), int(parts[2]), None, None, None)
    return marks


class KernelText:
    """Every text symbol of the guest kernel and its modules
    (kallsyms-text.txt), for the blocks of an instruction profile."""

    def __init__(self, path, builtin_rdma):
        entries = []
        for line in open(path):
            parts = line.split()
            if len(parts) < 3:
                continue
            try:
                addr = int(parts[0], 16)
            except ValueError:
                continue
            mod = parts[3].strip("[]") if len(parts) > 3 else None
            entries.append((addr, parts[2], mod))
        entries.sort()
        self.entries = entries
        self.addrs = [e[0] for e in entries]
        self.builtin_rdma = builtin_rdma

    def symbol(self, addr):
        """(name, module or None) of the text ADDR is in."""
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0:
            return "?", None
        _, name, mod = self.entries[i]
        return name, mod

    def category(self, addr):
        name, mod = self.symbol(addr)
        return name, kernel_category(name, mod, self.builtin_rdma)


class Profile:
    """One job's kernel blocks, summed: instructions by category and by
    symbol, and the transport's code's instructions, locked instructions
    and lock calls (raw counts, not per operation)."""

    def __init__(self):
        self.cats = {}
        self.syms = {}     # (category, name): [instructions, locked, lock calls]; any code
        self.parts = {o: [0, 0] for o in OWNERS}  # owner: [instructions, locked]
        self.locks = {}    # lock function: calls from the transport's code
        self.detailed = True  # the plugin gave executions, locked and calls


@functools.lru_cache(maxsize=None)
def insn_samples(results, run_dir):
    """{tag: {"kernel": per op, "total": per op, "ops": n, "profile":
    Profile or None}} for a boot whose client QEMU counted instructions, {}
    for one that did not, or a string saying why the counts cannot be
    used."""
    counts = os.path.join(run_dir, "insn-counts.txt")
    marks_path = os.path.join(run_dir, "bench", "insn-marks.txt")
    if not os.path.exists(counts):
        return {}
    if not os.path.exists(marks_path):
        return f"{counts} but no {marks_path}"
    ksyms = os.path.join(run_dir, "bench", "kallsyms-text.txt")
    kt = None
    if os.path.exists(ksyms):
        builtin_path = os.path.join(results, "builtin-rdma-core.txt")
        builtin = set()
        if os.path.exists(builtin_path):
            builtin = {line.strip() for line in open(builtin_path) if line.strip()}
        kt = KernelText(ksyms, builtin)
    glue = read_glue(results)
    profiles, where, callee = {}, {}, {}

    def on_block(mark, addr, insns, execs, locked, call):
        if kt is None:
            return
        prof = profiles.get(mark)
        if prof is None:
            prof = profiles[mark] = Profile()
        w = where.get(addr)
        if w is None:
            name, mod = kt.symbol(addr)
            w = where[addr] = (name, kernel_category(name, mod, kt.builtin_rdma),
                               owner(name, mod, glue))
        name, cat, own = w
        prof.cats[cat] = prof.cats.get(cat, 0) + insns
        sym = prof.syms.get((cat, name))
        if sym is None:
            sym = prof.syms[(cat, name)] = [0, 0, 0]
        sym[0] += insns
        fn = ""
        if execs is None:
            prof.detailed = False
        else:
            sym[1] += locked
            if call:
                fn = callee.get(call)
                if fn is None:
                    fn = base_symbol(kt.symbol(call)[0])
                    fn = callee[call] = fn if is_lock_function(fn) else ""
                if fn:
                    sym[2] += execs
        if own is None:
            return
        part = prof.parts[own]
        part[0] += insns
        if execs is None:
            return
        part[1] += locked
        if fn:
            prof.locks[fn] = prof.locks.get(fn, 0) + execs

    marks = read_insn_counts(counts, on_block)
    lines = [line.split() for line in open(marks_path) if line.strip()]
    # The guest's last job ended at its last mark: the plugin must have
    # seen exactly as many, or a mark was lost or came from elsewhere and
    # every number after it would belong to another job.
    last = max((int(parts[0]) for parts in lines), default=0)
    if len(marks) != last or (marks and max(marks) != last):
        return f"{counts} has {len(marks)} marks, the guest made {last}: they do not line up"
    out = {}
    for n, tag, *fields in lines:
        vals = dict(f.split("=", 1) for f in fields)
        kernel, user = marks[int(n)]
        ops = int(vals["bytes"]) // parse_size(vals["bs"])
        if ops <= 0:
            continue  # its fio failed, which its test case says
        out[tag] = {"kernel": kernel / ops, "total": (kernel + user) / ops, "ops": ops,
                    "profile": profiles.get(int(n))}
    return out


def module_figures(v):
    """Per operation: the transport's code's instructions (module: its text,
    glue included; module_noglue: without rpcrdma_rs's C glue; glue;
    helpers, kcrate: the Rust of the kernel image; mod_total: the module
    and that Rust), and with the plugin's details, lock acquisitions and
    locked read-modify-writes (atomics) in the same code, and the calls to
    each lock function ("lock:NAME"). None without a profile."""
    prof, ops = v.get("profile"), v["ops"]
    if prof is None:
        return None
    part = prof.parts
    f = {
        "module": sum(part[o][0] for o in MODULE_OWNERS) / ops,
        "module_noglue": (part[RS_RUST][0] + part[C_MODULE][0]) / ops,
        "glue": part[RS_GLUE][0] / ops,
        "helpers": part[RUST_HELPERS][0] / ops,
        "kcrate": part[RUST_KERNEL][0] / ops,
    }
    f["mod_total"] = f["module"] + f["helpers"] + f["kcrate"]
    if prof.detailed:
        f["locks"] = sum(prof.locks.values()) / ops
        f["atomics_module"] = sum(part[o][1] for o in MODULE_OWNERS) / ops
        f["atomics_rust"] = (part[RUST_HELPERS][1] + part[RUST_KERNEL][1]) / ops
        f["atomics"] = f["atomics_module"] + f["atomics_rust"]
        for fn, n in prof.locks.items():
            f["lock:" + fn] = n / ops
    return f


def job_samples(results, label):
    """{job: [(tag, sample), ...]} of the instruction counts of transport
    LABEL over its boots, or a string saying why they cannot be used."""
    run, proto = next((r, p) for lab, r, p in TRANSPORTS if lab == label)
    per = {}
    for run_dir in run_dirs(results, run):
        got = insn_samples(results, run_dir)
        if isinstance(got, str):
            return got
        for tag, v in got.items():
            m = re.match(rf"{proto}-(.+)-(\d+)$", tag)
            if m and not tag.startswith(f"{proto}-profile-"):
                per.setdefault(m.group(1), []).append((tag, v))
    return per


def spread(values):
    """{"": median, "_min": minimum, "_max": maximum} of VALUES."""
    return {"": statistics.median(values), "_min": min(values), "_max": max(values)}


def is_per_rpc(job):
    """Whether one operation of JOB is one RPC: a 4 KiB I/O is one READ or
    WRITE; a larger one, or a metadata operation, may be several."""
    return "-4k" in job


def instructions(results):
    """{(label, job): {field: median, field_min, field_max, "reps": n}} of the
    client's instructions per operation (kernel, total) and the module
    figures (module_figures), and lines for the report; (None, lines) when
    a boot's counts cannot be used."""
    per = {}
    for label, _, _ in TRANSPORTS:
        got = job_samples(results, label)
        if isinstance(got, str):
            return None, [f"instruction counts unusable: {got}"]
        for job, tagged in got.items():
            per[(label, job)] = [v for _, v in tagged]
    stats = {}
    for key, vs in per.items():
        st = {"reps": len(vs)}
        for f in ("kernel", "total"):
            st.update({f + k: x for k, x in spread([v[f] for v in vs]).items()})
        figs = [module_figures(v) for v in vs]
        if figs and all(figs):
            # A lock function one repetition did not call counts 0 there.
            names = set().union(*figs)
            for f in names:
                if all(f in g for g in figs) or f.startswith("lock:"):
                    st.update({f + k: x for k, x in spread([g.get(f, 0.0) for g in figs]).items()})
        stats[key] = st
    if not stats:
        return stats, []
    lines = ["Client guest instructions per operation (QEMU insn_count plugin; medians of",
             "the repetitions, min-max in brackets; kernel = upper-half addresses, total adds",
             "user space; an operation is one fio block, ramp included, or one create, stat",
             "or remove of the metadata job)."]
    head = f"  {'job':<22}" + "".join(f"{label + ' kernel':>26}" for label, _, _ in TRANSPORTS)
    lines.append(head + f"{'rs/C kernel':>12}{'rs/C total':>11}")
    for job in JOBS:
        if not any((label, job) in stats for label, _, _ in TRANSPORTS):
            continue
        cells = ""
        for label, _, _ in TRANSPORTS:
            st = stats.get((label, job))
            cells += f"{'-':>26}" if st is None else \
                f"{st['kernel']:>12.0f} [{st['kernel_min']:.0f}-{st['kernel_max']:.0f}]".rjust(26)
        rs, c = stats.get((RS, job)), stats.get((C, job))
        rk = f"{rs['kernel'] / c['kernel']:.3f}" if rs and c else "-"
        rt = f"{rs['total'] / c['total']:.3f}" if rs and c else "-"
        if rs and c:
            rs["insn_ratio"] = rs["total"] / c["total"]
            rs["insn_kernel_ratio"] = rs["kernel"] / c["kernel"]
        lines.append(f"  {job:<22}{cells}{rk:>12}{rt:>11}")
    lines += [""] + module_lines(stats)
    return stats, lines


def cell(st, field, spec=".0f", width=22):
    """FIELD of ST as "median [min-max]", right-aligned in WIDTH; "-" if absent."""
    if not st or field not in st:
        return f"{'-':>{width}}"
    text = f"{st[field]:{spec}} [{st[field + '_min']:{spec}}-{st[field + '_max']:{spec}}]"
    return f"{text:>{width}}"


def ratio(a, b):
    return a / b if a is not None and b else None


def module_lines(stats):
    """The module figures' tables: instructions, locks and atomics per
    operation for both RDMA transports, with rs/C ratios."""
    have = [job for job in JOBS if any((label, job) in stats and "module" in stats[(label, job)]
                                       for label in (RS, C))]
    if not have:
        return ["Module instructions per operation: no instructions by function (no",
                "kallsyms-text.txt, or no profile marks)."]
    out = ["Module instructions per operation (client guest, medians of the repetitions,",
           "min-max in brackets): module is the transport's own text (kallsyms [rpcrdma_rs]",
           "or [rpcrdma]), with rpcrdma_rs's C glue (include/*.c); w/o glue the same without;",
           "helpers and kcrate the Rust of the kernel image (rust_helper_* and _R* symbols),",
           "all rpcrdma_rs's, the one Rust module on the client (on C's boots they should be 0);",
           "total is module + helpers + kcrate. For the 4k jobs an operation is one RPC, so",
           "these are per RPC; for the others (1 MiB I/O, metadata) they stay per operation.",
           ""]
    fields = [("module", "module"), ("module_noglue", "w/o glue"), ("glue", "C glue"),
              ("helpers", "helpers"), ("kcrate", "kcrate"), ("mod_total", "total")]
    out.append(f"  {'job':<22}{'transport':<12}" + "".join(f"{h:>22}" for _, h in fields)
               + f"{'rs/C total':>11}{'rs/C module':>12}")
    for job in have:
        rs, c = stats.get((RS, job)), stats.get((C, job))
        for label in (RS, C):
            st = stats.get((label, job))
            if not st or "module" not in st:
                continue
            cells = "".join(cell(st, f) for f, _ in fields)
            tail = ""
            if label == RS:
                rt = ratio(rs.get("mod_total"), c.get("mod_total") if c else None)
                rm = ratio(rs.get("module"), c.get("module") if c else None)
                rs["mod_total_ratio"] = rt
                tail = f"{fmt(rt):>11}{fmt(rm):>12}"
            out.append(f"  {job:<22}{label:<12}{cells}{tail}")
    out.append("")
    out += ["Locks and atomic operations per operation in the same code (module text, helpers",
            "and kcrate): locks = calls to a lock-acquiring function (" + ", ".join(LOCK_FUNCTIONS) + "),",
            "by the block that ends with the call; atomics = locked read-modify-writes (LOCK",
            "prefix, or XCHG with memory) executed in that code. A lock function's own atomic",
            "(the cmpxchg in _raw_spin_lock) is counted under locks, not atomics, for both",
            "transports alike. Per RPC for the 4k jobs, per operation for the others.", ""]
    fields = [("locks", "locks"), ("atomics", "atomics"), ("atomics_module", "atomics module"),
              ("atomics_rust", "atomics Rust")]
    out.append(f"  {'job':<22}{'transport':<12}" + "".join(f"{h:>20}" for _, h in fields)
               + f"{'rs/C locks':>11}{'rs/C atomics':>13}")
    detailed = False
    for job in have:
        rs, c = stats.get((RS, job)), stats.get((C, job))
        for label in (RS, C):
            st = stats.get((label, job))
            if not st or "locks" not in st:
                continue
            detailed = True
            cells = "".join(cell(st, f, ".2f", 20) for f, _ in fields)
            tail = ""
            if label == RS:
                rl = ratio(rs.get("locks"), c.get("locks") if c else None)
                ra = ratio(rs.get("atomics"), c.get("atomics") if c else None)
                tail = f"{fmt(rl):>11}{fmt(ra):>13}"
            out.append(f"  {job:<22}{label:<12}{cells}{tail}")
    if not detailed:
        return out[:-2] + ["  (not counted: the plugin's output has no executions, locked",
                           "  instructions or calls per block)"]
    out += ["", "Lock acquisitions per operation by lock function (medians):"]
    for job in have:
        rows = []
        for label in (RS, C):
            st = stats.get((label, job)) or {}
            for f in sorted(k for k in st if k.startswith("lock:") and not k.endswith(("_min", "_max"))):
                rows.append(f"    {label:<12}{f[5:]:<32}{cell(st, f, '.2f', 20)}")
        if rows:
            out.append(f"  {job}:")
            out += rows
    return out


def module_targets(insn):
    """Lines: the targets on the module's instructions, locks and atomics
    and on the client kernel's instructions, rpcrdma_rs against C."""
    lines = []

    def verdict(what, v, shown, ok):
        if v is None:
            lines.append(f"  {'not measured':<13}{what:<62}{'-':>8}")
        else:
            lines.append(f"  {'met' if ok else 'NOT met':<13}{what:<62}{shown:>8}")

    for job in JOBS:
        rs, c = insn.get((RS, job)), insn.get((C, job))
        if not rs and not c:
            continue
        rt = ratio(rs.get("mod_total"), c.get("mod_total")) if rs and c else None
        verdict(f"{job}: module instructions per op, rs/C <= 1.00", rt,
                fmt(rt), rt is not None and rt <= 1.00)
    for job in JOBS:
        rs, c = insn.get((RS, job)), insn.get((C, job))
        if not is_per_rpc(job) or (not rs and not c):
            continue
        have = rs and c and "locks" in rs and "locks" in c
        verdict(f"{job}: lock acquisitions per RPC <= C's", rs["locks"] if have else None,
                f"{rs['locks']:.2f}/{c['locks']:.2f}" if have else "-",
                have and rs["locks"] <= c["locks"])
        verdict(f"{job}: atomic RMWs per RPC <= C's + 2", rs["atomics"] if have else None,
                f"{rs['atomics']:.2f}/{c['atomics']:.2f}" if have else "-",
                have and rs["atomics"] <= c["atomics"] + 2)
    for job in JOBS:
        rs, c = insn.get((RS, job)), insn.get((C, job))
        if not rs and not c:
            continue
        r = ratio(rs["kernel"], c["kernel"]) if rs and c else None
        verdict(f"{job}: client kernel instructions per op, rs/C <= 0.97", r,
                fmt(r), r is not None and r <= 0.97)
    return lines


def pooled_profiles(results, label, job):
    """(categories, symbols, ops, reps) of JOB's profiles over every
    repetition of LABEL, summed (per operation: divide by ops); None if
    there are none."""
    got = job_samples(results, label)
    if isinstance(got, str):
        return None
    cats, syms, ops, reps = {}, {}, 0, 0
    for tag, v in got.get(job, []):
        prof = v.get("profile")
        if prof is None:
            continue
        ops += v["ops"]
        reps += 1
        for k, n in prof.cats.items():
            cats[k] = cats.get(k, 0) + n
        for k, vals in prof.syms.items():
            acc = syms.setdefault(k, [0, 0, 0])
            for i, x in enumerate(vals):
                acc[i] += x
    return (cats, syms, ops, reps) if ops else None


def insn_profile_summary(results, jobs=PROFILE_JOBS, top=20):
    """Lines: where each transport's client kernel instructions went, per
    operation, during JOBS, over all the repetitions."""
    labels = [RS, C]
    profs = {}
    for label in labels:
        for job in jobs:
            got = pooled_profiles(results, label, job)
            if got:
                profs[(label, job)] = got
    if not profs:
        return []
    out = ["Client kernel instructions per operation by where they ran (QEMU insn_count",
           "plugin; every repetition of the job, summed, over all its operations).", ""]
    kcats = [c for c in CATEGORIES if c not in ("user space", "idle")]
    for job in jobs:
        have = [(label, profs[(label, job)]) for label in labels if (label, job) in profs]
        if not have:
            continue
        out.append(f"{job}:")
        out.append(f"  {'':<18}" + "".join(f"{label:>14}" for label, _ in have))
        for cat in kcats + ["all"]:
            cells = ""
            for _, (cats, _, ops, _) in have:
                n = sum(cats.values()) if cat == "all" else cats.get(cat, 0)
                cells += f"{n / ops:>14.0f}"
            out.append(f"  {cat:<18}{cells}")
        for label, (_, syms, ops, reps) in have:
            out.append(f"  top functions, {label} (per operation: instructions, atomics, lock calls;"
                       f" {ops} operations, {reps} repetitions):")
            for (cat, name), (n, locked, calls) in sorted(syms.items(), key=lambda kv: -kv[1][0])[:top]:
                out.append(f"    {n / ops:>9.0f} {locked / ops:>7.2f} {calls / ops:>6.2f}  {cat:<16} "
                           f"{shown_symbol(name, 60)}")
        out.append("")
    return out


def object_for(results, mod):
    """The object file holding the code of module MOD (None: the kernel's
    own text) as it ran in RESULTS, or None if it was not kept."""
    if mod == "rpcrdma_rs":
        path = os.path.join(results, "rpcrdma_rs.ko")
        return path if os.path.exists(path) else None
    try:
        tree = open(os.path.join(results, "kernel-tree")).read().strip()
    except OSError:
        return None
    if not mod:
        path = os.path.join(tree, "vmlinux")
        return path if os.path.exists(path) else None
    found = glob.glob(os.path.join(tree, "**", mod + ".ko"), recursive=True)
    return found[0] if found else None


def annotate(results, symbol, run="rs", job="randread-4k-qd16"):
    """Lines: SYMBOL's instructions per operation during every repetition of
    JOB of RUN, by translation block over its disassembly; a string saying
    why not."""
    label = next((lab for lab, r, p in TRANSPORTS if r == run and p == "rdma"), None)
    if label is None:
        return f"no transport {run}"
    proto = "rdma"
    # Each boot loads the modules at its own addresses: the blocks are kept
    # by their offset in the symbol.
    blocks, ops, total, chosen, others, found = {}, 0, 0, None, set(), False
    for run_dir in run_dirs(results, run):
        got = insn_samples(results, run_dir)
        ksyms = os.path.join(run_dir, "bench", "kallsyms-text.txt")
        if not isinstance(got, dict) or not os.path.exists(ksyms):
            continue
        tags = {t: v for t, v in got.items() if re.match(rf"{proto}-{re.escape(job)}-\d+$", t)}
        if not tags:
            continue
        kt = KernelText(ksyms, set())
        ranges = {}
        for i, (addr, name, mod) in enumerate(kt.entries):
            if name == symbol or symbol in rust_readable(name):
                end = kt.addrs[i + 1] if i + 1 < len(kt.addrs) else addr + (64 << 10)
                ranges[(name, mod)] = (addr, end)
        if not ranges:
            continue
        found = True
        marks = {}
        with open(os.path.join(run_dir, "bench", "insn-marks.txt")) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2 and parts[1] in tags:
                    marks[int(parts[0])] = parts[1]
        hits = {}

        def on_block(mark, addr, insns, *_):
            if mark in marks:
                for key, (start, end) in ranges.items():
                    if start <= addr < end:
                        hits.setdefault(key, {})
                        hits[key][addr - start] = hits[key].get(addr - start, 0) + insns

        read_insn_counts(os.path.join(run_dir, "insn-counts.txt"), on_block)
        if chosen is None:
            # Of several matches, the one that ran the most.
            chosen = max(ranges, key=lambda k: sum(hits.get(k, {}).values()))
        others |= {k for k in ranges if k != chosen}
        for off, n in hits.get(chosen, {}).items():
            blocks[off] = blocks.get(off, 0) + n
            total += n
        ops += sum(v["ops"] for v in tags.values())
    if not found:
        return f"no kernel symbol matches {symbol!r} in a counted {job} of {run}"
    if not ops:
        return f"no counted {job} in {run}"
    name, mod = chosen
    blocks = {off: n / ops for off, n in blocks.items()}
    out = [f"{rust_readable(name)} [{mod or 'kernel'}], {run}, {job}: "
           f"{total / ops:.0f} instructions per operation, {ops} operations"]
    if others:
        out.append(f"  (also matched: {'; '.join(rust_readable(k[0]) for k in sorted(others, key=str)[:5])})")
    obj = object_for(results, mod)
    if obj is None:
        out.append("  no object kept for it: blocks by offset only")
        out += [f"  +{off:#06x} {n:9.1f}" for off, n in sorted(blocks.items())]
        return out
    nm = subprocess.run(["nm", obj], capture_output=True, text=True).stdout
    base = next((int(p[0], 16) for p in (line.split() for line in nm.splitlines())
                 if len(p) == 3 and p[2] == name), None)
    if base is None:
        return f"{name} not in {obj}"
    dis = subprocess.run(["objdump", "-dr", "--no-show-raw-insn", f"--disassemble={name}", obj],
                         capture_output=True, text=True).stdout
    out.append(f"  per-operation instructions of each block that ran, at its first instruction ({obj}):")
    last = None  # the offset of the last instruction shown
    for line in dis.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s*(.*)", line)
        if not m:
            continue
        off, text = int(m.group(1), 16) - base, m.group(2).strip()
        if text.startswith("R_"):
            # A relocation inside the instruction before it names its
            # target; objdump lists the section's others too.
            if last is not None and 0 < off - last < 16:
                target = shown_symbol(text.split()[-1], 60)
                out[-1] = re.sub(r"\s*<\+0x[0-9a-f]+>$", "", out[-1]) + f" -> {target}"
            continue
        # Jumps within the function by offset; other targets by name.
        text = text.replace(f"<{name}+", "<+").replace(f"<{name}>", "<+0x0>")
        text = re.sub(r"<([^>+]{40,})([^>]*)>", lambda t: f"<{shown_symbol(t[1], 40)}{t[2]}>", text)
        mark = f"{blocks[off]:9.1f}" if off in blocks else " " * 9
        out.append(f"  {mark}  +{off:#06x}  {text}")
        last = off
    return out


def plots(results, stats, unavailable):
    """ratios.png, scaling-iops.png, scaling-throughput.png; False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    except ImportError:
        print("error: no matplotlib for /usr/bin/python3: plots not made "
              "(apt-get install python3-matplotlib)")
        return False
    # The transports measured, each job's bar from the median's ratio, its
    # whisker from the minimum's to the maximum's (all over C's median).
    labels = [t[0] for t in TRANSPORTS if t[0] not in unavailable]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / max(len(labels), 1)
    for i, label in enumerate(labels):
        vals, below, above = [], [], []
        for job in BASE_JOBS:
            st = stats.get((label, job), {})
            ratio = st.get("ratio") or 0
            c_med = stats.get((C, job), {}).get("median")
            vals.append(ratio)
            if ratio and c_med:
                below.append(max(ratio - st["min"] / c_med, 0))
                above.append(max(st["max"] / c_med - ratio, 0))
            else:
                below.append(0)
                above.append(0)
        ax.bar([j + i * width for j in range(len(BASE_JOBS))], vals, width, label=label,
               yerr=[below, above], capsize=3)
    ax.axhline(1.0, color="black", linewidth=0.8)
    missing = [f"{t[0]}: not measured ({unavailable[t[0]]})" for t in TRANSPORTS
               if t[0] in unavailable]
    for i, text in enumerate(missing):
        ax.text(0.01, 0.03 + 0.06 * i, text, transform=ax.transAxes, fontsize=8, va="bottom")
    ax.set_xticks([j + width * (len(labels) - 1) / 2 for j in range(len(BASE_JOBS))])
    ax.set_xticklabels(BASE_JOBS, rotation=20, ha="right")
    ax.set_ylabel("ratio to the C transport (median)")
    ax.set_title("NFSv4.2 over two TCG guests: throughput / IOPS relative to C rpcrdma "
                 "(bars: min to max)")
    ax.legend(loc="upper right")
    fig.tight_layout()
    png = os.path.join(results, "ratios.png")
    fig.savefig(png, dpi=100)
    plt.close(fig)
    print(f"plot: {png}")

    colors = {RS: "tab:blue", C: "tab:orange"}

    def line(ax, label, jobs, xs, style, text):
        pts = [(x, stats[(label, j)]) for x, j in zip(xs, jobs)
               if (label, j) in stats and stats[(label, j)]["median"] > 0]
        if not pts:
            return
        x = [p[0] for p in pts]
        med = [p[1]["median"] for p in pts]
        err = [[p[1]["median"] - p[1]["min"] for p in pts], [p[1]["max"] - p[1]["median"] for p in pts]]
        ax.errorbar(x, med, yerr=err, color=colors[label], linestyle=style, marker="o",
                    capsize=3, label=text)

    def finish(ax, fig, xs, ticks, xlabel, ylabel, title, name):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        # Plain numbers at 1, 2 and 5 of each decade: the spans are short.
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(xs)
        ax.set_xticklabels(ticks)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        missing = [f"{label}: not measured ({unavailable[label]})" for label in (RS, C) if label in unavailable]
        for i, text in enumerate(missing):
            ax.text(0.01, 0.97 - 0.06 * i, text, transform=ax.transAxes, fontsize=8, va="top")
        ax.grid(True, which="major", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
        fig.tight_layout()
        png = os.path.join(results, name)
        fig.savefig(png, dpi=100)
        plt.close(fig)
        print(f"plot: {png}")

    fig, ax = plt.subplots(figsize=(8, 5))
    for label in (RS, C):
        for nj, style in zip(NUMJOBS, ("-", "--")):
            line(ax, label, [randread_job(qd, nj) for qd in IODEPTHS], IODEPTHS, style,
                 f"{label}, numjobs {nj}")
    finish(ax, fig, IODEPTHS, [str(q) for q in IODEPTHS], "iodepth (per job)",
           "IOPS, median (log scale; bars: min to max)",
           "4 KiB random reads over RDMA by queue depth", "scaling-iops.png")

    fig, ax = plt.subplots(figsize=(8, 5))
    sizes = [b for _, b in BLOCKS]
    for label in (RS, C):
        for rw, style in (("read", "-"), ("write", "--")):
            line(ax, label, [seq_job(rw, bs) for bs, _ in BLOCKS], sizes, style, f"{label}, {rw}")
    finish(ax, fig, sizes, [bs for bs, _ in BLOCKS], "block size (iodepth 1)",
           "MiB/s, median (log scale; bars: min to max)",
           "Sequential reads and writes over RDMA by block size", "scaling-throughput.png")
    return True


class Tee(io.TextIOBase):
    """Writes to the terminal and keeps a copy, for --record's report.txt."""

    def __init__(self, out):
        self.out, self.copy = out, io.StringIO()

    def write(self, text):
        self.copy.write(text)
        return self.out.write(text)

    def flush(self):
        self.out.flush()


# What --record writes (besides the plots), each rewritten or removed.
RECORD_FILES = ["report.txt", "params.txt", "results.csv", "instructions.csv", "module.csv",
                "locks.csv", "top-symbols.csv", "targets.txt", "profile-summary.txt"]
PLOTS = ["ratios.png", "scaling-iops.png", "scaling-throughput.png"]
MODULE_FIELDS = ["module", "module_noglue", "glue", "helpers", "kcrate", "mod_total", "locks",
                 "atomics", "atomics_module", "atomics_rust"]


def write_csv(path, fields, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in fields})


def num(v, spec=".2f"):
    return "" if v is None else format(v, spec)


def record(results, dest, report, target_lines, insn):
    """Writes the run's text results and plots into DEST (--record)."""
    os.makedirs(dest, exist_ok=True)
    for name in RECORD_FILES + PLOTS:
        if os.path.exists(os.path.join(dest, name)):
            os.remove(os.path.join(dest, name))
    with open(os.path.join(dest, "report.txt"), "w") as f:
        f.write(report)
    with open(os.path.join(dest, "targets.txt"), "w") as f:
        f.write("\n".join(target_lines) + "\n")
    params = bench_params(results)
    boots = {run: len(run_dirs(results, run)) for run in ("c", "rs")}
    with open(os.path.join(dest, "params.txt"), "w") as f:
        f.write(f"RESULTS={os.path.basename(os.path.normpath(results))}\n")
        for k, v in params.items():
            f.write(f"{k}={v}\n")
        f.write(f"BOOTS_C={boots['c']}\nBOOTS_RS={boots['rs']}\n")
        for run in ("c", "rs"):
            dirs = run_dirs(results, run)
            p = read_params(dirs[0]) if dirs else {}
            for k in ("KERNEL", "CPUS", "SERVER_CPUS", "RDMA"):
                if k in p:
                    f.write(f"{run.upper()}_{k}={p[k]}\n")
    for name in ("results.csv", "profile-summary.txt"):
        if os.path.exists(os.path.join(results, name)):
            shutil.copy(os.path.join(results, name), os.path.join(dest, name))
    for name in PLOTS:
        if os.path.exists(os.path.join(results, name)):
            shutil.copy(os.path.join(results, name), os.path.join(dest, name))
    if insn:
        rows = []
        for job in JOBS:
            c = insn.get((C, job))
            for label, _, _ in TRANSPORTS:
                st = insn.get((label, job))
                if not st:
                    continue
                row = {"job": job, "transport": label, "reps": st["reps"]}
                for f in ("kernel", "total"):
                    for k in ("", "_min", "_max"):
                        row[f + k] = num(st[f + k], ".0f")
                if label == RS and c:
                    row["kernel_ratio_to_c"] = num(st["kernel"] / c["kernel"], ".3f")
                    row["total_ratio_to_c"] = num(st["total"] / c["total"], ".3f")
                rows.append(row)
        write_csv(os.path.join(dest, "instructions.csv"),
                  ["job", "transport", "reps", "kernel", "kernel_min", "kernel_max", "total",
                   "total_min", "total_max", "kernel_ratio_to_c", "total_ratio_to_c"], rows)
        rows, lock_rows = [], []
        for job in JOBS:
            c = insn.get((C, job))
            for label in (RS, C):
                st = insn.get((label, job))
                if not st or "module" not in st:
                    continue
                row = {"job": job, "transport": label, "reps": st["reps"],
                       "per": "rpc" if is_per_rpc(job) else "op"}
                for f in MODULE_FIELDS:
                    for k in ("", "_min", "_max"):
                        if f + k in st:
                            row[f + k] = num(st[f + k])
                if label == RS and c:
                    for f in ("mod_total", "module", "locks", "atomics"):
                        r = ratio(st.get(f), c.get(f))
                        row[f + "_ratio_to_c"] = num(r, ".3f")
                rows.append(row)
                for k in sorted(st):
                    if k.startswith("lock:") and not k.endswith(("_min", "_max")):
                        lock_rows.append({"job": job, "transport": label, "function": k[5:],
                                          "median": num(st[k]), "min": num(st[k + "_min"]),
                                          "max": num(st[k + "_max"])})
        write_csv(os.path.join(dest, "module.csv"),
                  ["job", "transport", "reps", "per"]
                  + [f + k for f in MODULE_FIELDS for k in ("", "_min", "_max")]
                  + [f + "_ratio_to_c" for f in ("mod_total", "module", "locks", "atomics")], rows)
        write_csv(os.path.join(dest, "locks.csv"),
                  ["job", "transport", "function", "median", "min", "max"], lock_rows)
        rows = []
        for job in JOBS:
            for label in (RS, C):
                got = pooled_profiles(results, label, job)
                if not got:
                    continue
                _, syms, ops, reps = got
                top = sorted(syms.items(), key=lambda kv: -kv[1][0])[:30]
                for rank, ((cat, name), (n, locked, calls)) in enumerate(top, 1):
                    rows.append({"job": job, "transport": label, "rank": rank, "category": cat,
                                 "symbol": name, "readable": rust_readable(name),
                                 "instructions_per_op": num(n / ops, ".1f"),
                                 "atomics_per_op": num(locked / ops, ".3f"),
                                 "lock_calls_per_op": num(calls / ops, ".3f"),
                                 "ops": ops, "reps": reps})
        write_csv(os.path.join(dest, "top-symbols.csv"),
                  ["job", "transport", "rank", "category", "symbol", "readable",
                   "instructions_per_op", "atomics_per_op", "lock_calls_per_op", "ops", "reps"], rows)
    print(f"recorded: {dest}")


def main():
    if len(sys.argv) >= 4 and sys.argv[2] == "--annotate" and len(sys.argv) <= 6:
        got = annotate(sys.argv[1], *sys.argv[3:])
        if isinstance(got, str):
            print(got, file=sys.stderr)
            return 1
        print("\n".join(got))
        return 0
    dest = None
    if len(sys.argv) == 4 and sys.argv[2] == "--record":
        dest = sys.argv[3]
    elif len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    results = sys.argv[1]
    tee = None
    if dest:
        tee = sys.stdout = Tee(sys.stdout)
    samples, unavailable = collect(results)
    rows = []
    print(f"\nrpcrdma-rs benchmark: {results}")
    bp = bench_params(results)
    if bp:
        print(f"  commit {bp.get('COMMIT', '?')}" + (" with uncommitted changes" if bp.get("UNCOMMITTED") == "1" else "")
              + f", kernel {' '.join(v for v in (bp.get('KERNEL_FLAVOR', '?'), bp.get('KERNEL_RELEASE')) if v)}, "
              f"{bp.get('REPS', '?')} boots per transport, {bp.get('RUNTIME', '?')} s jobs"
              + (", rpcrdma_rs only" if bp.get("ONLY_RS") == "1" else ""))
    for label, run, _ in TRANSPORTS[:2]:
        dirs = run_dirs(results, run)
        p = read_params(dirs[0]) if dirs else {}
        if p:
            print(f"  {label}: kernel {p.get('KERNEL', 'test')}, client {p.get('CPUS', '?')} vCPUs, "
                  f"server {p.get('SERVER_CPUS', '1')}, module {p.get('MODULE', '?') if run == 'rs' else 'rpcrdma'}, "
                  f"{len(dirs)} boot{'s' if len(dirs) != 1 else ''}")
    stats = table(samples, unavailable, rows)
    print("\nraw link (perftest over the same devices):")
    for tool, val, unit in perftest(results):
        print(f"  {tool:<12} {val if val is not None else 'not measured'} {unit}")
        rows.append({"job": tool, "transport": "raw link",
                     "median": "" if val is None else f"{val:.2f}", "unit": unit, "note": ""})

    fields = ["job", "transport", "unit", "median", "min", "max", "reps", "p50_us", "p99_us",
              "ratio_to_c", "client_cpu", "server_cpu", "cpu_unit", "client_cpu_ratio_to_c", "note"]
    with open(os.path.join(results, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in fields})
    print(f"\nCSV: {os.path.join(results, 'results.csv')}")

    prof = profile_summary(results)
    with open(os.path.join(results, "profile-summary.txt"), "w") as f:
        f.write("\n".join(prof) + "\n")
    print()
    print("\n".join(prof))
    print(f"profile summary: {os.path.join(results, 'profile-summary.txt')}")

    insn, insn_lines = instructions(results)
    insn_lines += [""] + insn_profile_summary(results) if insn else []
    if insn_lines:
        with open(os.path.join(results, "instructions.txt"), "w") as f:
            f.write("\n".join(insn_lines) + "\n")
        print()
        print("\n".join(insn_lines))
        print(f"instructions: {os.path.join(results, 'instructions.txt')}")

    plotted = plots(results, stats, unavailable)

    target_lines = targets(stats, insn) + (module_targets(insn) if insn else [])
    print(f"\ntargets ({RS} against {C}, medians; informative, not a verdict of the run):")
    print("\n".join(target_lines))
    if tee:
        sys.stdout = tee.out
        record(results, dest, tee.copy.getvalue(), target_lines, insn)
    return 0 if plotted and insn is not None else 1


if __name__ == "__main__":
    sys.exit(main())
