#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turns the raw results of scripts/bench.sh into a table, a CSV and a plot.

Usage: bench_report.py RESULTS_DIR

RESULTS_DIR holds one harness run per client transport (c/, rs/), each with
bench/ written by selftests/rpcrdma_rs/bench.sh in the client guest.
"""

import csv
import json
import os
import re
import statistics
import sys

USER_HZ = 100  # /proc/stat counts in USER_HZ ticks on every architecture
GIB = 1 << 30

# (column label, harness run, mount protocol)
TRANSPORTS = [
    ("rpcrdma_rs", "rs", "rdma"),
    ("C rpcrdma", "c", "rdma"),
    ("TCP", "c", "tcp"),
]
JOBS = [
    "seqwrite-1m",
    "seqread-1m",
    "randwrite-4k-qd1",
    "randread-4k-qd1",
    "randwrite-4k-qd16",
    "randread-4k-qd16",
    "metadata",
]


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
    job = data["jobs"][0]
    side = job["write"] if job["write"]["io_bytes"] > job["read"]["io_bytes"] else job["read"]
    pct = side.get("clat_ns", {}).get("percentile", {})
    return {
        "bytes": side["io_bytes"],
        "ops": side["total_ios"],
        "bw_mib_s": side["bw"] / 1024.0,
        "iops": side["iops"],
        "p50_us": pct.get("50.000000", 0) / 1000.0,
        "p99_us": pct.get("99.000000", 0) / 1000.0,
        "runtime_s": job["job_runtime"] / 1000.0,
    }


def collect(results):
    """Returns {(label, job): [sample, ...]} and {label: reason unavailable}."""
    samples, unavailable = {}, {}
    for label, run, proto in TRANSPORTS:
        bench = os.path.join(results, run, "bench")
        why = os.path.join(bench, "unavailable.txt")
        if proto == "rdma" and os.path.exists(why):
            unavailable[label] = open(why).read().strip()
            continue
        if not os.path.isdir(bench):
            unavailable[label] = "no results (the run failed before measuring)"
            continue
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
    return samples, unavailable


def metric(job):
    return ("bw_mib_s", "MiB/s") if job.endswith("-1m") else ("iops", "IOPS")


def summary(values):
    return statistics.median(values), min(values), max(values)


def cpu_cost(job, ss):
    """Client and server CPU seconds per GiB (bandwidth jobs) or per 1000 ops."""
    total_c = sum(s["client_cpu_s"] for s in ss)
    total_s = sum(s["server_cpu_s"] for s in ss)
    if job.endswith("-1m"):
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
        path = os.path.join(results, "c", "bench", f"{tool}.txt")
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


def main():
    results = sys.argv[1]
    samples, unavailable = collect(results)
    rows = []
    print(f"\nrpcrdma-rs benchmark: {results}")
    head = f"{'job':<20}{'transport':<13}{'median':>10}{'min':>10}{'max':>10}  {'unit':<6}" \
           f"{'p50 us':>9}{'p99 us':>10}{'ratio/C':>9}{'cli cpu':>9}{'srv cpu':>9}"
    print(head)
    print("-" * len(head))
    ratios = {}
    for job in JOBS:
        key, unit = metric(job)
        c_vals = [s[key] for s in samples.get(("C rpcrdma", job), [])]
        c_med = statistics.median(c_vals) if c_vals else None
        for label, _, _ in TRANSPORTS:
            ss = samples.get((label, job), [])
            if not ss:
                why = unavailable.get(label, "no samples")
                print(f"{job:<20}{label:<13}  not measured: {why}")
                rows.append({"job": job, "transport": label, "note": f"not measured: {why}"})
                continue
            med, lo, hi = summary([s[key] for s in ss])
            p50 = statistics.median(s["p50_us"] for s in ss)
            p99 = statistics.median(s["p99_us"] for s in ss)
            ratio = med / c_med if c_med else None
            if ratio is not None:
                ratios[(label, job)] = ratio
            ccpu, scpu, cunit = cpu_cost(job, ss)
            fmt = lambda v: f"{v:.3f}" if v is not None else "-"
            print(f"{job:<20}{label:<13}{med:>10.1f}{lo:>10.1f}{hi:>10.1f}  {unit:<6}"
                  f"{p50:>9.0f}{p99:>10.0f}{fmt(ratio):>9}{fmt(ccpu):>9}{fmt(scpu):>9}")
            rows.append({
                "job": job, "transport": label, "unit": unit, "median": f"{med:.2f}",
                "min": f"{lo:.2f}", "max": f"{hi:.2f}", "reps": len(ss),
                "p50_us": f"{p50:.1f}", "p99_us": f"{p99:.1f}",
                "ratio_to_c": fmt(ratio), "client_cpu": fmt(ccpu), "server_cpu": fmt(scpu),
                "cpu_unit": cunit, "note": "",
            })
    print("CPU columns: CPU seconds per GiB moved (1m jobs) or per 1000 operations.")
    print("\nraw link (perftest over the same devices):")
    for tool, val, unit in perftest(results):
        print(f"  {tool:<12} {val if val is not None else 'not measured'} {unit}")
        rows.append({"job": tool, "transport": "raw link",
                     "median": "" if val is None else f"{val:.2f}", "unit": unit, "note": ""})

    fields = ["job", "transport", "unit", "median", "min", "max", "reps", "p50_us", "p99_us",
              "ratio_to_c", "client_cpu", "server_cpu", "cpu_unit", "note"]
    with open(os.path.join(results, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in fields})
    print(f"\nCSV: {os.path.join(results, 'results.csv')}")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no matplotlib: plot skipped")
        return 0
    labels = [t[0] for t in TRANSPORTS]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(labels)
    for i, label in enumerate(labels):
        vals = [ratios.get((label, job), 0) for job in JOBS]
        ax.bar([j + i * width for j in range(len(JOBS))], vals, width, label=label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    for i, label in enumerate(labels):
        if label in unavailable:
            ax.text(0.01, 0.97 - 0.06 * i, f"{label}: not measured ({unavailable[label]})",
                    transform=ax.transAxes, fontsize=8, va="top")
    ax.set_xticks([j + width for j in range(len(JOBS))])
    ax.set_xticklabels(JOBS, rotation=20, ha="right")
    ax.set_ylabel("ratio to the C transport (median)")
    ax.set_title("NFSv4.2 over two TCG guests: throughput / IOPS relative to C rpcrdma")
    ax.legend()
    fig.tight_layout()
    png = os.path.join(results, "ratios.png")
    fig.savefig(png, dpi=100)
    print(f"plot: {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
