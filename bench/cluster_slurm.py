#!/usr/bin/env python3
"""cluster_slurm.py SIM [OUT] — the cluster simulator checked once against the real Slurm run (issue 40 item 5).

SIM: pcm_cluster_sim, or a build directory holding it (bench/run.sh cluster_slurm passes the build).

bench/slurm.py ran one seeded workload of heat2d jobs on a real Slurm cluster of 3 namespace
nodes, rigid and with every other job malleable under pcmd --policy auto (docs/perf/performance.md,
"Rigid against malleable jobs under Slurm (issue 22)"; its figures are REAL below). This script
gives the simulator (pcm_cluster_sim, path SIM) the same workloads, from bench/slurm.py's own
schedule() (submit offsets, nodes, iterations, which jobs are malleable), on 3 nodes, with the
policy's settings of that run (PCMD_AUTO: --policy-interval-s 2, --policy-measure-s 4,
--policy-idle-s 5, --policy-cap-s 60, --policy-min-gain 0.05, --policy-min-procs 1), and prints
the simulated figures beside the real ones; it fails (exit 1) if a makespan or a mean wait is
more than 15 % off.

The model of a heat2d job there: it runs START_S + iterations * ITER_S seconds whatever its
size (the 2 cores all "nodes" share: more processes do not iterate faster, which the real run's
growth trials measured, so a serial fraction of 1), and its state is 4 MiB (1024 x 512 doubles).
START_S and ITER_S are not free: they are the one solution of the two rigid runs' node-seconds
held (full: 640, quick: 172), sum(nodes * (START_S + iterations * ITER_S)); the makespans,
waits and turnarounds are then predictions. Slurm's own latencies (its scheduling cycle, whole
seconds in its records, the grant of a second allocation) are not modelled.
"""
import csv
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from slurm import schedule  # noqa: E402  (bench/slurm.py: the real run's workload)

# docs/perf/performance.md, issue 22 (run 2026-11-25): rigid, malleable.
REAL = {
    "full": {"seed": 1, "quick": False, "node_s": 640,
             "makespan": (247, 217), "wait": (44.7, 23.0), "turnaround": (113.3, 86.8)},
    "quick": {"seed": 38, "quick": True, "node_s": 172,
              "makespan": (78, 63), "wait": (13.2, 6.5), "turnaround": (40.5, 29.2)},
}
POLICY = ["--policy-interval-s", "2", "--policy-measure-s", "4", "--policy-idle-s", "5",
          "--policy-cap-s", "60", "--policy-min-gain", "0.05"]
GIB_PER_NODE = 1024 * 512 * 8 / 2**30  # heat2d's grid, counted per node of the job's size
TOLERANCE = 0.15


def calibrate():
    """START_S, ITER_S from the two rigid runs' node-seconds (two equations, two unknowns)."""
    rows = []
    for r in REAL.values():
        jobs = schedule(r["seed"], r["quick"])
        rows.append((sum(j["nodes"] for j in jobs), sum(j["nodes"] * j["iters"] for j in jobs),
                     r["node_s"]))
    (a1, b1, c1), (a2, b2, c2) = rows
    det = a1 * b2 - a2 * b1
    return (c1 * b2 - c2 * b1) / det, (a1 * c2 - a2 * c1) / det


def simulate(sim, name, start_s, iter_s, tmp):
    r = REAL[name]
    path = os.path.join(tmp, f"{name}.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "submit", "run", "size", "malleable", "serial"])
        for i, j in enumerate(schedule(r["seed"], r["quick"])):
            w.writerow([i + 1, j["submit"], f"{start_s + j['iters'] * iter_s:.3f}", j["nodes"],
                        int(j["malleable"]), 1])
    summary = os.path.join(tmp, f"{name}-summary.csv")
    log = os.path.join(tmp, f"{name}-decisions.log")
    subprocess.run([sim, "--workload", path, "--nodes", "3", "--costs", "1", "--check",
                    "--min-share", "0.5", "--max-factor", "2", "--gib-per-node",
                    f"{GIB_PER_NODE}", "--csv", summary, "--log", log, "--label", name, *POLICY],
                   check=True, stdout=subprocess.DEVNULL)
    with open(summary) as f:
        rows = list(csv.DictReader(f))
    return rows[0], rows[-1], log


def main():
    if len(sys.argv) < 2:
        print(__doc__.split("\n")[0], file=sys.stderr)
        return 2
    sim = sys.argv[1]
    if os.path.isdir(sim):
        sim = os.path.join(sim, "bench", "pcm_cluster_sim")
    out = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="pcm-cluster-slurm.")
    os.makedirs(out, exist_ok=True)
    start_s, iter_s = calibrate()
    print("## the simulator against the real Slurm run (bench/slurm.py, docs/perf/performance.md)")
    print()
    print(f"heat2d job model, from the rigid runs' node-seconds: {start_s:.2f} s + "
          f"{1000 * iter_s:.2f} ms per iteration, on any number of nodes")
    print()
    print("| workload | figure | real rigid | simulated | sim / real | real malleable | simulated "
          "| sim / real |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    worst = 0.0
    for name, r in REAL.items():
        rigid, mall, log = simulate(sim, name, start_s, iter_s, out)
        for fig, col in (("makespan", "makespan_s"), ("wait", "mean_wait_s"),
                         ("turnaround", "mean_turnaround_s")):
            sr, sm = float(rigid[col]), float(mall[col])
            qr, qm = sr / r[fig][0], sm / r[fig][1]
            if fig != "turnaround":
                worst = max(worst, abs(qr - 1), abs(qm - 1))
            print(f"| {name} | mean {fig} s |" if fig != "makespan" else f"| {name} | {fig} s |",
                  f"{r[fig][0]} | {sr:.1f} | {qr:.2f} | {r[fig][1]} | {sm:.1f} | {qm:.2f} |")
        print(f"decisions ({name}, malleable): {log}", file=sys.stderr)
    print()
    verdict = "within" if worst <= TOLERANCE else "NOT within"
    print(f"makespans and mean waits {verdict} {100 * TOLERANCE:.0f} % of the real run's "
          f"(largest deviation {100 * worst:.1f} %)")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
