#!/usr/bin/env python3
"""mpi_scale_model.py FIT.json SCALE.csv [options] — issue 39 item 5: a split, a merge, a checkpoint
and a restart at 1k, 10k and 100k ranks, extrapolated from what was measured here: the MPI side's
fits (bench/mpi_scale.sh's BENCH_FIT, model M5: t = a + b log2 P + c MiB/P + d P + e MiB on one
2-core machine) and pcmd's curves against N (bench/scale.sh's CSV, the emulator: a power law
fitted to the medians for N >= 256). Every figure printed is extrapolated; the assumptions are the
options and are printed with the table.

How the machine's terms become a cluster's (P ranks on P/ppn nodes):
  software   a + b log2 P as measured (loopback), plus 2 log2 P network latencies;
  processes  d P is per-process work serialised on this machine's 2 cores: on a cluster each node
             does its own ranks' share in parallel (optimistic: 2 d ppn / cores-per-node) unless
             it is central (pessimistic: d P, as here); both are printed, the bound in [lo-hi];
  data       what crosses the network per node at --net-gbs, checkpoints to node-local storage at
             --storage-gbs per node (SCR's published rate), restart reads at --read-gbs;
  copies     the loop's wait for a background checkpoint is the staging copy of the rank's data,
             at this machine's per-core rate (the ckpt_wait fit: 2 e s per MiB on one core);
  pcmd       the emulator's curves at N = P: command delivery and report, N hellos (new ranks),
             shard records and commit, restart registration. One pcmd, as today."""
import argparse
import csv
import json
import math
import statistics
from collections import defaultdict

import numpy as np


def power_laws(path, columns, n_min=256):
    """{column: (k, s)} with median(column) ~ k * N**s over N >= n_min."""
    rows = defaultdict(list)
    for r in csv.DictReader(open(path)):
        rows[int(r["n"])].append(r)
    ns = sorted(n for n in rows if n >= n_min)
    out = {}
    for col in columns:
        y = [statistics.median(float(r[col]) for r in rows[n]) for n in ns]
        s, logk = np.polyfit(np.log(ns), np.log(np.maximum(y, 1e-9)), 1)
        out[col] = (math.exp(logk), s)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fit")
    ap.add_argument("scale_csv")
    ap.add_argument("--ppn", type=int, default=64, help="ranks per node (64)")
    ap.add_argument("--cores-node", type=int, default=64, help="cores per node (64)")
    ap.add_argument("--mib-per-rank", type=float, default=64.0, help="data per rank at P (64 MiB)")
    ap.add_argument("--net-gbs", type=float, default=12.5, help="network GB/s per node (100 Gb/s)")
    ap.add_argument("--lat-us", type=float, default=2.0, help="network latency, us (2)")
    ap.add_argument("--storage-gbs", type=float, default=1.2, help="node-local write GB/s (SCR: 1.2)")
    ap.add_argument("--read-gbs", type=float, default=2.4, help="node-local read GB/s (2.4)")
    ap.add_argument("--ranks", default="1024,10240,102400")
    args = ap.parse_args()
    fits = json.load(open(args.fit))
    law = power_laws(args.scale_csv, ["hello_s", "records_s", "commit_s", "deliver_ms",
                                      "report_ms", "restart_ms"])

    def pcmd(col, n):
        k, s = law[col]
        return k * n ** s / (1000.0 if col.endswith("_ms") else 1.0)

    def term(op, name):
        return max(fits.get(op, {}).get("M5", {}).get(name, 0.0), 0.0)

    def sw(op, p):
        return term(op, "a") + term(op, "b") * math.log2(p) + 2 * math.log2(p) * args.lat_us * 1e-6

    def procs(op, p):  # (optimistic, pessimistic)
        d = term(op, "d")
        return 2 * d * args.ppn / args.cores_node, d * p

    mib = 1024.0 * 1024.0
    m = args.mib_per_rank * mib  # bytes per rank
    net, st, rd = args.net_gbs * 1e9, args.storage_gbs * 1e9, args.read_gbs * 1e9
    print(f"Assumptions: {args.ppn} ranks per node on {args.cores_node} cores, "
          f"{args.mib_per_rank:g} MiB per rank, network {args.net_gbs:g} GB/s and "
          f"{args.lat_us:g} us per node, node-local storage {args.storage_gbs:g} GB/s write and "
          f"{args.read_gbs:g} GB/s read per node; pcmd's curves: "
          + ", ".join(f"{c} ~ N^{s:.2f}" for c, (k, s) in law.items()) + ".\n")
    def model(p):
        """{operation: {part: seconds}} for P ranks; processes as (lo, hi)."""
        node_bytes = args.ppn * m
        ops = {
            # P -> 2P: a new world of 2P is spawned and all the data moves to it (the old world
            # retires): each old node sends all it holds; 2P hellos; one command.
            "split P -> 2P": ("split", node_bytes / net, pcmd("deliver_ms", p)
                              + pcmd("report_ms", p) + pcmd("hello_s", 2 * p)),
            # 2P -> P (P = the ranks left): the leaving half's data comes in.
            "merge 2P -> P": ("merge", node_bytes / 2 / net,
                              pcmd("deliver_ms", 2 * p) + pcmd("report_ms", 2 * p)),
            "checkpoint: the loop's wait": ("ckpt_wait", m / mib * 2 * term("ckpt_wait", "e"), 0.0),
            "checkpoint: written and committed": ("ckpt_write", node_bytes / st,
                                                  pcmd("records_s", p) + pcmd("commit_s", p)),
            # Launch, read, registration and hellos.
            "restart at P": ("restart_read", node_bytes / rd,
                             pcmd("restart_ms", p) + pcmd("hello_s", p)),
        }
        res = {}
        for name, (op, data, pc) in ops.items():
            # A launch of P: the split's process terms, which spawn 2P, at P / 2.
            lo, hi = procs("split", p / 2) if op == "restart_read" else procs(op, p)
            if op in ("ckpt_wait", "ckpt_write"):
                lo = hi = 0.0
            sw_s = sw(op, p) + (sw("split", p / 2) if op == "restart_read" else 0.0)
            res[name] = dict(software=sw_s, lo=lo, hi=hi, data=data, pcmd=pc,
                             total_lo=sw_s + lo + data + pc, total_hi=sw_s + hi + data + pc)
        return res

    def dominant(parts, which):
        d = {k: parts[k] for k in ("software", "data", "pcmd")}
        d["processes"] = parts[which]
        return max(d, key=d.get)

    print("| ranks P | nodes | operation | software | processes [lo-hi] | data | pcmd | total [lo-hi] |"
          " dominant |")
    print("|---|---|---|---|---|---|---|---|---|")
    out = {}
    for p in (int(x) for x in args.ranks.split(",")):
        for name, r in model(p).items():
            dom, dom_hi = dominant(r, "lo"), dominant(r, "hi")
            print(f"| {p:,} | {math.ceil(p / args.ppn):,} | {name} | {r['software']:.3g} |"
                  f" {r['lo']:.3g}-{r['hi']:.3g} | {r['data']:.3g} | {r['pcmd']:.3g} |"
                  f" {r['total_lo']:.3g}-{r['total_hi']:.3g} | {dom}"
                  + ("" if dom == dom_hi else f" (pessimistic: {dom_hi})") + " |")
            out[f"{p}:{name}"] = r
    print("\n| anchor (published) | PCM by this model [lo-hi] |")
    print("|---|---|")
    r1 = model(1024)
    print(f"| Charm++: shrink 2,048 -> 1,024 cores in 16 s | merge 2,048 -> 1,024:"
          f" {r1['merge 2P -> P']['total_lo']:.3g}-{r1['merge 2P -> P']['total_hi']:.3g} s |")
    print(f"| Charm++: expand 1,024 -> 2,048 cores in 40 s | split 1,024 -> 2,048:"
          f" {r1['split P -> 2P']['total_lo']:.3g}-{r1['split P -> 2P']['total_hi']:.3g} s |")
    for p in (int(x) for x in args.ranks.split(",")):
        g, f = model(p)["split P -> 2P"], model(2 * p)["restart at P"]
        print(f"| MaM: a grow within 1.13x of a fresh start | split {p:,} -> {2 * p:,} against a"
              f" restart at {2 * p:,}: {g['total_lo'] / f['total_lo']:.2f}x"
              f" (pessimistic {g['total_hi'] / f['total_hi']:.2f}x) |")
    scr = model(992 * args.ppn)["checkpoint: written and committed"]
    print(f"| SCR: 1.2 GB/s per node to node-local storage on 992 nodes | 992 nodes"
          f" ({992 * args.ppn:,} ranks): {args.ppn * m / scr['total_hi'] / 1e9:.2f} GB/s per node"
          f" (written and committed: {scr['total_hi']:.3g} s, of which pcmd {scr['pcmd']:.3g} s) |")
    return out


if __name__ == "__main__":
    main()
