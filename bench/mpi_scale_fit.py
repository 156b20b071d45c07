#!/usr/bin/env python3
"""mpi_scale_fit.py CSV PLOT_CSV [--json FILE] — bench/mpi_scale.sh's table and fits.

CSV: op,procs,to_procs,size_mib,rep,seconds (one row per measurement). Prints, as Markdown:
the measured table (median over the repetitions, per operation, P and MiB), and for each operation
the least-squares fit, relative (each point weighted by 1/t, so that a 1 GiB point does not drown
the 1 MiB ones), of
    M3: t = a + b*log2(P) + c*MiB/P                (the model of issue 39)
    M5: t = a + b*log2(P) + c*MiB/P + d*P + e*MiB  (what one 2-core machine adds: P processes and
                                                    all the bytes share the same 2 cores)
with the residuals of every point. P is the smaller world of a split or merge (P -> 2P, 2P -> P).
The agreement (agree_*: seconds per call, no data) is fitted to a + b*log2(P) only. A term that
the points cannot determine (too few points, or a column the others already span) is left out
and shown as '-'. PLOT_CSV gets, per P, the operations at the largest size measured at every P and
the agreement (microseconds), for bench/plots/mpi_scale.gp."""
import argparse
import csv
import json
import math
import statistics
import sys
from collections import defaultdict

import numpy as np

TERMS = {"a": lambda p, m: 1.0, "b": lambda p, m: math.log2(p), "c": lambda p, m: m / p,
         "d": lambda p, m: float(p), "e": lambda p, m: float(m)}
MODELS = {"M3": "abc", "M5": "abcde"}
OPS = ["split", "merge", "migrate", "ckpt_wait", "ckpt_write", "restart_read"]
PLOT_AGREE = [f"agree_{c}{w}{s}" for s in ("", "_spin") for w in ("", "_w0")
              for c in ("status", "adapt", "bcast")]


def load(path):
    points = defaultdict(list)  # (op, P, MiB) -> seconds
    for r in csv.DictReader(open(path)):
        p = min(int(r["procs"]), int(r["to_procs"]))
        points[(r["op"], p, int(r["size_mib"]))].append(float(r["seconds"]))
    return {k: statistics.median(v) for k, v in points.items()}


def fit(rows, terms):
    """rows: [(P, MiB, t)]. Returns ({term: value}, [(P, MiB, t, model, relative residual)])."""
    kept = []
    for name in terms:  # leave out a term the kept ones already span, or one too many for the points
        cols = [[TERMS[k](p, m) for k in kept + [name]] for p, m, _ in rows]
        if len(kept) + 1 <= len(rows) and np.linalg.matrix_rank(np.array(cols)) == len(kept) + 1:
            kept.append(name)
    x = np.array([[TERMS[k](p, m) / t for k in kept] for p, m, t in rows])
    coef, *_ = np.linalg.lstsq(x, np.ones(len(rows)), rcond=None)
    consts = dict(zip(kept, (float(c) for c in coef)))
    out = []
    for p, m, t in rows:
        model = sum(consts[k] * TERMS[k](p, m) for k in kept)
        out.append((p, m, t, model, (model - t) / t))
    return consts, out


def fmt(v):
    if v is None:
        return "-"
    return f"{v:.3g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.2e}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("plot_csv")
    ap.add_argument("--json")
    args = ap.parse_args()
    med = load(args.csv)
    ops = [o for o in OPS if any(k[0] == o for k in med)]
    agree = sorted({k[0] for k in med if k[0].startswith("agree_")})
    procs = sorted({k[1] for k in med})
    sizes = sorted({k[2] for k in med if k[0] in ops})
    print("\n### Measured (seconds; median of the repetitions; P -> 2P for a split, 2P -> P for a merge)\n")
    print("| op | MiB | " + " | ".join(f"P={p}" for p in procs) + " |")
    print("|---|---|" + "---|" * len(procs))
    for op in ops:
        for m in sizes:
            if any((op, p, m) in med for p in procs):
                print(f"| {op} | {m} | " + " | ".join(fmt(med.get((op, p, m))) for p in procs) + " |")
    print("\n### Agreement per call (microseconds)\n")
    print("| call | " + " | ".join(f"P={p}" for p in procs) + " |")
    print("|---|" + "---|" * len(procs))
    for op in agree:
        vals = [med.get((op, p, 0)) for p in procs]
        print(f"| {op[6:]} | " + " | ".join("-" if v is None else f"{v * 1e6:.1f}" for v in vals) + " |")
    fits, residuals = {}, []
    print("\n### Fits (relative least squares; a, b in s; c in s per MiB per process; d in s per"
          " process; e in s per MiB)\n")
    print("| op | model | points | a | b (log2 P) | c (MiB/P) | d (P) | e (MiB) | rms rel. resid. |"
          " max rel. resid. |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for op in ops + agree:
        rows = sorted((p, m, t) for (o, p, m), t in med.items() if o == op)
        for model, terms in ([("AB", "ab")] if op.startswith("agree_") else MODELS.items()):
            consts, out = fit(rows, terms)
            rel = [r[4] for r in out]
            rms = math.sqrt(sum(r * r for r in rel) / len(rel))
            worst = max(rel, key=abs)
            fits.setdefault(op, {})[model] = dict(consts, points=len(rows), rms_rel=rms,
                                                  max_rel=worst)
            print(f"| {op} | {model} | {len(rows)} | " +
                  " | ".join(fmt(consts.get(k)) for k in "abcde") + f" | {rms:.1%} | {worst:+.1%} |")
            residuals += [(op, model) + r for r in out]
    print("\n### Residuals of every point ((model - measured) / measured)\n")
    print("| op | model | P | MiB | measured s | model s | residual |")
    print("|---|---|---|---|---|---|---|")
    for op, model, p, m, t, mt, rel in residuals:
        print(f"| {op} | {model} | {p} | {m} | {fmt(t)} | {fmt(mt)} | {rel:+.1%} |")
    # The plot's rows: the largest size measured at every P, and the agreement.
    common = [m for m in sizes if all(any(k[1] == p and k[2] == m for k in med) for p in procs)]
    size = max(common) if common else (sizes[0] if sizes else 0)
    with open(args.plot_csv, "w") as f:
        w = csv.writer(f)
        w.writerow(["procs", "size_mib"] + OPS + [a + "_us" for a in PLOT_AGREE])
        for p in procs:
            vals = [med.get((o, p, size)) for o in OPS] + [
                None if med.get((a, p, 0)) is None else med[(a, p, 0)] * 1e6 for a in PLOT_AGREE]
            w.writerow([p, size] + ["NaN" if v is None else f"{v:.6g}" for v in vals])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(fits, f, indent=1, sort_keys=True)
    if not ops or not agree:
        print("mpi_scale_fit: no operations or no agreement measured", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
