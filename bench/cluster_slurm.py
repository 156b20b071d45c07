#!/usr/bin/env python3
"""cluster_slurm.py SIM [OUT] — the cluster simulator checked against the real Slurm runs (issue 40 item 5).

SIM: pcm_cluster_sim, or a build directory holding it (bench/run.sh cluster_slurm passes the build).
    cluster_slurm.py --add-run DIR NAME   appends bench/slurm.py's run in DIR (jobs.csv,
                                          slurmctld.log, logs/) to the records as run NAME

bench/slurm.py runs one seeded workload of heat2d jobs on a real Slurm cluster of 3 namespace
nodes, rigid and with every other job malleable under pcmd --policy auto (docs/perf/performance.md,
"Rigid against malleable jobs under Slurm (issue 22)"). Its runs are kept in three small CSVs
under docs/perf: slurm_runs.csv (every job of every run: Slurm's submit, start and end, whole
seconds; slurmctld's submission, allocation and end, milliseconds; the latency of its start,
the run's backfill phase), slurm_rates.csv (heat2d's iterations and seconds by the job's nodes
and the nodes all jobs computed on then, from its traces) and slurm_reconfigs.csv (every
reconfiguration's times from the auto pcmds' events). This script gives the simulator the same
workloads, from bench/slurm.py's own schedule() (submit offsets, nodes, iterations, which jobs
are malleable), on 3 nodes, with the policy's settings of those runs (PCMD_AUTO), run by run, and
prints the simulated figures beside the real ones; it fails (exit 1) if a makespan or a mean
wait, averaged over the runs, is more than 15 % off the real runs' mean.

Everything the simulator is given is measured in those records, none fitted to the check:
  - heat2d on the 2 cores all "nodes" share: seconds per iteration on n nodes alone, and
    slower beside other jobs (--slowdown n:B:factor), from the traces of the rigid runs
    ("pooled"), or of the run itself ("own": the speeds the machine gave then); a job's
    overhead (allocation to end less heat2d's own span, median); other sizes of a malleable
    job by T(n) = T(1) (f + (1 - f) / n), f from 1 and 2 nodes alone (f > 1: more processes
    iterate slower);
  - Slurm: every job's limit is sbatch --time=10 (bench/slurm.py), so backfill reserves by
    600-s limits on named nodes (--slurm-limit-s); it runs every 30 s (bf_interval's default)
    from slurmctld's start, each run's phase taken from its slurmctld.log
    (--backfill-interval-s, --backfill-phase-s); the main scheduler starts a job a median
    latency after its submission, a job's end or a node given back (--slurm-latency-s);
  - pcmd: one per malleable job (bench/slurm.py's auto jobs), on its own clock from the job's
    start (--pcmd-per-job): its policy's round every second, its readings of Slurm's queue every
    3 s (pcmd/slurm/slurm_growth.cpp; --queue-read-s), each seen from the round after; it acts on a
    job once its program runs (allocation to heat2d's first trace row, median; --attach-s); a
    shrink holds the node until given back (decision to "gave ... back", median;
    --cost-fixed-s), a growth until done (the grant of a second allocation included, median;
    --cost-grow-s).
The real figures are from Slurm's records (whole seconds), as bench/slurm.py reports them.
"""
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from slurm import PCMD_AUTO, PPN, schedule  # noqa: E402  (bench/slurm.py: the real run's workload)

RECORDS = os.path.join(ROOT, "docs", "perf", "slurm_runs.csv")
WORKLOADS = {"full": (1, False), "quick": (38, True)}  # bench/slurm.py's seeds
LIMIT_S = 600  # bench/slurm.py's sbatch --time=10
BF_INTERVAL_S = 30  # Slurm's bf_interval (testbed/slurm.sh leaves the default): the backfill
# cycles come at slurmctld's start + k * 30 s (to the ms in every run's log)
QUEUE_READ_S = 3  # pcmd/slurm/slurm_growth.cpp: kWatchPeriod
GIB_PER_NODE = 1024 * 512 * 8 / 2**30  # heat2d's grid, counted per node of the job's size
TOLERANCE = 0.15
FIELDS = ["run", "workload", "mode", "job", "slurm_job", "nodes", "iterations", "policy",
          "submit_s", "start_s", "end_s", "reconfigs", "ctld_submit_s", "ctld_alloc_s",
          "ctld_end_s", "sched_s", "overhead_s", "backfill_phase_s",
          "program_start_s"]
RATES = os.path.join(ROOT, "docs", "perf", "slurm_rates.csv")
RATE_FIELDS = ["run", "mode", "nodes", "busy_nodes", "iterations", "seconds"]
RECONFIGS = os.path.join(ROOT, "docs", "perf", "slurm_reconfigs.csv")
RECONFIG_FIELDS = ["run", "job", "kind", "reason", "granted_s", "done_s", "given_back_s"]


def policy_args():
    """PCMD_AUTO's --policy-* settings as the simulator's options."""
    words = PCMD_AUTO.split()
    out = []
    for k, w in enumerate(words):
        if w.startswith("--policy-") and w not in ("--policy-min-procs",) and k + 1 < len(words):
            out += [w, words[k + 1]]
    return out


def ctld_times(path):
    """slurmctld.log: {job id: {submit, alloc, end}} in epoch seconds (milliseconds kept)."""
    out = {"ctld": {}}
    pat = re.compile(r"^\[(\S+?)\.(\d+)\] (?:_slurm_rpc_submit_batch_job: JobId=(\d+)|"
                     r"sched: Allocate JobId=(\d+)|sched/backfill: _start_job: Started JobId=(\d+)|"
                     r"_job_complete: JobId=(\d+) done|"
                     r"sched: _update_job: setting nodes to \S+ for JobId=(\d+))")
    with open(path) as f:
        for line in f:
            m = pat.match(line)
            if not m:
                if "slurmctld version" in line and "started" in line and "start" not in out["ctld"]:
                    t = re.match(r"^\[(\S+?)\.(\d+)\]", line)
                    out["ctld"]["start"] = time.mktime(time.strptime(
                        t.group(1), "%Y-%m-%dT%H:%M:%S")) + int(t.group(2)) / 1000
                continue
            t = time.mktime(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) + \
                int(m.group(2)) / 1000
            for g, key in ((3, "submit"), (4, "alloc"), (5, "alloc"), (6, "end")):
                if m.group(g):
                    out.setdefault(m.group(g), {})[key] = t
            if m.group(7):  # a node given back (pcmd's shrink): another job may start
                out["ctld"].setdefault("given", []).append(t)
    return out


def read_trace(path):
    """heat2d's trace rows (rank 0's): [(epoch s, iteration, processes)]."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [(float(r["time_s"]), int(r["iteration"]), int(r["procs"]))
                for r in csv.DictReader(f)]


def rate_rows(name, mode, traces):
    """Iterations and seconds of every job's trace, by (its nodes, the nodes all jobs compute on
    then): heat2d's rows every 50 iterations, a row's interval counted at its midpoint."""
    def nodes_at(tr, t):
        if not tr or t < tr[0][0] or t > tr[-1][0]:
            return 0
        return -(-[p for tt, _, p in tr if tt <= t][-1] // PPN)  # processes -> nodes
    acc = {}
    for tr in traces.values():
        for (t0, i0, p0), (t1, i1, p1) in zip(tr, tr[1:]):
            if p0 != p1 or i1 <= i0:
                continue
            busy = sum(nodes_at(o, (t0 + t1) / 2) for o in traces.values())
            key = (-(-p1 // PPN), busy)
            it, sec = acc.get(key, (0, 0.0))
            acc[key] = (it + i1 - i0, sec + t1 - t0)
    return [{"run": name, "mode": mode, "nodes": n, "busy_nodes": b, "iterations": it,
             "seconds": f"{sec:.3f}"} for (n, b), (it, sec) in sorted(acc.items())]


def append(path, fields, rows):
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        if new:
            w.writeheader()
        w.writerows(rows)


def reconfig_rows(name, directory):
    """The malleable run's reconfigurations from the auto pcmds' timed events: the decision, the
    grant of a second allocation (growths), the resize done, the node given back (shrinks)."""
    rows = []
    for job in sorted(os.listdir(os.path.join(directory, "logs", "malleable"))):
        p = os.path.join(directory, "logs", "malleable", job, "pcm-status.json")
        if not os.path.exists(p):
            continue
        with open(p) as f:
            st = json.load(f)["jobs"][0]
        ev = list(zip(st.get("event_times", []), st.get("events", [])))
        for k, (t, e) in enumerate(ev):
            m = re.search(r"^policy: resize to (\d+)", e)
            if not m:
                continue
            grow = "waits for a Slurm allocation" in e
            r = {"run": name, "job": job, "kind": "grow" if grow else "shrink",
                 "reason": "idle node" if grow else ("undo" if "undo the growth" in e
                                                     else "waiting job"),
                 "granted_s": "", "done_s": "", "given_back_s": ""}
            for t2, e2 in ev[k + 1:]:
                if e2.startswith("policy:"):
                    break
                if not r["granted_s"] and e2.startswith("Slurm granted"):
                    r["granted_s"] = f"{t2 - t:.3f}"
                if not r["done_s"] and re.match(rf"resize to {m.group(1)} done", e2):
                    r["done_s"] = f"{t2 - t:.3f}"
                if not r["given_back_s"] and e2.startswith("gave "):
                    r["given_back_s"] = f"{t2 - t:.3f}"
            rows.append(r)
    return rows


def add_run(directory, name):
    """Appends the run in directory (bench/slurm.py --out) to RECORDS as run name."""
    with open(os.path.join(directory, "jobs.csv")) as f:
        jobs = list(csv.DictReader(f))
    ctld = ctld_times(os.path.join(directory, "slurmctld.log"))
    ends = sorted(v["end"] for v in ctld.values() if "end" in v)
    meta = ctld.pop("ctld")
    ctld_start = meta["start"]
    ends = sorted(ends + meta.get("given", []))
    workload = "quick" if len({j["job"] for j in jobs}) == 4 else "full"
    rows, rates = [], []
    for mode in ("rigid", "malleable"):
        mine = [j for j in jobs if j["run"] == mode]
        traces = {j["job"]: read_trace(os.path.join(directory, "logs", mode, j["job"],
                                                    "trace.csv")) for j in mine}
        rates += rate_rows(name, mode, traces)
        t0 = min(ctld[j["slurm_job"]]["submit"] for j in mine)
        for j in mine:
            c = ctld[j["slurm_job"]]
            # A log cut before a job's end (kept by hand, as for the first run): Slurm's record.
            c.setdefault("end", c["alloc"] + float(j["end_s"]) - float(j["start_s"]))
            # From the later of its submission and the last job end before its start.
            last = max([c["submit"]] + [e for e in ends if e <= c["alloc"]])
            tr = traces[j["job"]]
            rows.append({"run": name, "workload": workload, "mode": mode, "job": j["job"],
                         "slurm_job": j["slurm_job"], "nodes": j["nodes"],
                         "iterations": j["iterations"], "policy": j["pcmd_policy"],
                         "submit_s": j["submit_s"], "start_s": j["start_s"],
                         "end_s": j["end_s"], "reconfigs": j["reconfigs"],
                         "ctld_submit_s": f"{c['submit'] - t0:.3f}",
                         "ctld_alloc_s": f"{c['alloc'] - t0:.3f}",
                         "ctld_end_s": f"{c['end'] - t0:.3f}",
                         "sched_s": f"{c['alloc'] - last:.3f}",
                         "overhead_s": f"{c['end'] - c['alloc'] - (tr[-1][0] - tr[0][0]):.3f}",
                         "backfill_phase_s": f"{(ctld_start - t0) % BF_INTERVAL_S:.3f}",
                         "program_start_s": f"{tr[0][0] - c['alloc']:.3f}"})
    append(RECORDS, FIELDS, rows)
    append(RATES, RATE_FIELDS, rates)
    append(RECONFIGS, RECONFIG_FIELDS, reconfig_rows(name, directory))
    print(f"{len(rows)} jobs of run {name} ({workload}) appended to {RECORDS}, its heat2d rates "
          f"to {RATES}")


def load():
    with open(RECORDS) as f:
        return list(csv.DictReader(f))


def figures(rows):
    """makespan, mean wait and mean turnaround of one run's jobs of one mode (Slurm's records)."""
    sub = [float(r["submit_s"]) for r in rows]
    start = [float(r["start_s"]) for r in rows]
    end = [float(r["end_s"]) for r in rows]
    return {"makespan": max(end) - min(sub),
            "wait": statistics.mean(b - a for a, b in zip(sub, start)),
            "turnaround": statistics.mean(b - a for a, b in zip(sub, end))}


def fit(records, rates, reconfigs, run=None, mode="rigid"):
    """The simulator's model, every figure measured: heat2d's seconds per iteration alone on n
    nodes and its slowdowns beside other jobs (the rigid runs' rate records, pooled; or those
    of one run's rigid or malleable half where it has them) and a job's overhead (allocation to
    end, less its trace's span: pcmd's start, mpiexec, the end; median of the same jobs);
    Amdahl's f from 1 and 2 nodes alone; Slurm's latency, the reconfigurations' times and the
    policy's start (medians over every run)."""
    def per_iter(rows):
        acc = {}
        for r in rows:
            k = (int(r["nodes"]), int(r["busy_nodes"]))
            it, sec = acc.get(k, (0, 0.0))
            acc[k] = (it + int(r["iterations"]), sec + float(r["seconds"]))
        return {k: sec / it for k, (it, sec) in acc.items()}
    rigid_rates = [r for r in rates if r["mode"] == "rigid"]
    table = per_iter(rigid_rates)
    rigid = [r for r in records if r["mode"] == "rigid"]
    if run:
        table.update(per_iter([r for r in rates if r["run"] == run and r["mode"] == mode]))
        rigid = [r for r in records if r["run"] == run and r["mode"] == mode]
    alone = {n: table[(n, n)] for n in (1, 2)}
    return {"per_iter": table, "alone": alone,
            "slow": {k: v / alone[k[0]] for k, v in table.items() if k[0] != k[1]},
            "overhead": statistics.median(float(r["overhead_s"]) for r in rigid),
            "serial": 2 * alone[2] / alone[1] - 1,
            "latency": statistics.median(float(r["sched_s"]) for r in records),
            "shrink": statistics.median(float(r["given_back_s"]) for r in reconfigs
                                        if r["kind"] == "shrink" and r["given_back_s"]),
            "grow": statistics.median(float(r["done_s"]) for r in reconfigs
                                      if r["kind"] == "grow" and r["done_s"]),
            "attach": statistics.median(float(r["program_start_s"]) for r in records)}


def simulate(sim, name, m, phase, tmp):
    """The workload name, rigid and malleable, with backfill cycles at phase + k * 30 s."""
    seed, quick = WORKLOADS[name]
    path = os.path.join(tmp, f"{name}.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "submit", "run", "size", "malleable", "serial"])
        for i, j in enumerate(schedule(seed, quick)):
            run = m["overhead"] + j["iters"] * m["alone"][j["nodes"]]
            w.writerow([i + 1, j["submit"], f"{run:.3f}", j["nodes"], int(j["malleable"]),
                        f"{m['serial']:.4f}"])
    summary = os.path.join(tmp, f"{name}-summary.csv")
    jobs = os.path.join(tmp, f"{name}-jobs.csv")
    log = os.path.join(tmp, f"{name}-decisions.log")
    for p in (summary, jobs, log):
        if os.path.exists(p):
            os.remove(p)
    slow = ",".join(f"{n}:{b}:{v:.4f}" for (n, b), v in sorted(m["slow"].items()))
    subprocess.run([sim, "--workload", path, "--nodes", "3", "--costs", "1", "--check",
                    "--min-share", "0.5", "--max-factor", "2", "--gib-per-node",
                    f"{GIB_PER_NODE}", "--csv", summary, "--jobs-csv", jobs, "--log", log,
                    "--label", name, "--slurm-limit-s", str(LIMIT_S), "--slurm-latency-s",
                    f"{m['latency']:.3f}", "--queue-read-s", str(QUEUE_READ_S), "--pcmd-per-job",
                    "--backfill-interval-s", str(BF_INTERVAL_S), "--backfill-phase-s",
                    f"{phase:.3f}", "--attach-s", f"{m['attach']:.3f}", "--cost-fixed-s",
                    f"{m['shrink']:.3f}", "--cost-grow-s",
                    f"{m['grow'] - m['shrink']:.3f}", "--slowdown",
                    slow, *policy_args()], check=True, stdout=subprocess.DEVNULL)
    with open(summary) as f:
        rows = list(csv.DictReader(f))
    with open(jobs) as f:
        per_job = list(csv.DictReader(f))
    sims = {"rigid": rows[0], "malleable": rows[-1]}
    jobs = {"rigid": [j for j in per_job if j["run"] == "rigid"],
            "malleable": [j for j in per_job if j["run"] != "rigid"]}
    return sims, jobs, log


def per_job_table(name, runs):
    """Every job's wait and start in each real run beside the simulated one (its phase)."""
    print(f"\nper job ({name}): wait, start and end s (from the first submission), real and "
          "simulated (the run's own model and backfill phase)")
    print("| run | mode | job | nodes | policy | wait real | sim | start real | sim | end real "
          "| sim |")
    print("| --- | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for run, mode, real, simjobs in runs:
        for r, s in zip(real, simjobs):
            print(f"| {run} | {mode} | {r['job']} | {r['nodes']} | {r['policy']} | "
                  f"{float(r['start_s']) - float(r['submit_s']):.0f} | "
                  f"{float(s['start']) - float(s['submit']):.1f} | {float(r['start_s']):.0f} | "
                  f"{float(s['start']):.1f} | {float(r['end_s']):.0f} | {float(s['end']):.1f} |")


def describe(label, m):
    print(f"{label}: heat2d's ms per iteration on n nodes while jobs compute on B nodes in all: "
          + ", ".join(f"n={n} B={b} {1000 * v:.2f}" for (n, b), v in sorted(m["per_iter"].items()))
          + f"; a job's overhead {m['overhead']:.2f} s; other sizes alone T(n) = T(1) "
          f"({m['serial']:.2f} + {1 - m['serial']:.2f} / n)")


def sim_figures(sim, name, model, mode, phase, out):
    sims, jobs, _ = simulate(sim, name, model, phase, out)
    sm = sims[mode]
    return ({"makespan": float(sm["makespan_s"]), "wait": float(sm["mean_wait_s"]),
             "turnaround": float(sm["mean_turnaround_s"])}, jobs[mode])


def compare(sim, records, rates, reconfigs, out):
    """Every real run beside the simulated one (its backfill phase), with the pooled model and
    with the model of the run's own rigid half; returns the largest deviations of the means
    (pooled model) and of single runs (own model), and the per-job details."""
    pooled = fit(records, rates, reconfigs)
    print("| workload | run | mode | bf phase s | makespan real | sim pooled | sim own | "
          "mean wait real | sim pooled | sim own | mean turnaround real | sim pooled | sim own |")
    print("| --- | --- | --- |" + " ---: |" * 10)
    worst_mean = worst_own = 0.0
    details = []
    keys = ("makespan", "wait", "turnaround")
    for name in WORKLOADS:
        mine = [r for r in records if r["workload"] == name]
        per_mode = {"rigid": [], "malleable": []}
        for run in sorted({r["run"] for r in mine}):
            for mode in ("rigid", "malleable"):
                own = fit(records, rates, reconfigs, run, mode)
                real = [r for r in mine if r["run"] == run and r["mode"] == mode]
                phase = float(real[0]["backfill_phase_s"])
                fr = figures(real)
                fp, _ = sim_figures(sim, name, pooled, mode, phase, out)
                fo, jobs = sim_figures(sim, name, own, mode, phase, out)
                per_mode[mode].append((fr, fp))
                details.append((name, run, mode, real, jobs))
                worst_own = max([worst_own] + [abs(fo[k] / fr[k] - 1) for k in keys[:2]])
                cells = []
                for k in keys:
                    cells += [f"{fr[k]:.1f}"] + [f"{x[k]:.1f} ({x[k] / fr[k]:.2f})"
                                                 for x in (fp, fo)]
                print(f"| {name} | {run} | {mode} | {phase:.1f} | " + " | ".join(cells) + " |")
        for mode, pairs in per_mode.items():
            mean = {k: (statistics.mean(p[0][k] for p in pairs),
                        statistics.mean(p[1][k] for p in pairs)) for k in keys}
            worst_mean = max([worst_mean] + [abs(mean[k][1] / mean[k][0] - 1) for k in keys[:2]])
            cells = []
            for k in keys:
                cells += [f"{mean[k][0]:.1f}", f"{mean[k][1]:.1f} ({mean[k][1] / mean[k][0]:.2f})",
                          ""]
            print(f"| {name} | mean of {len(pairs)} | {mode} | | " + " | ".join(cells) + " |")
    return pooled, worst_mean, worst_own, details


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--add-run":
        add_run(sys.argv[2], sys.argv[3])
        return 0
    if len(sys.argv) < 2:
        print(__doc__.split("\n")[0], file=sys.stderr)
        return 2
    sim = sys.argv[1]
    if os.path.isdir(sim):
        sim = os.path.join(sim, "bench", "pcm_cluster_sim")
    out = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="pcm-cluster-slurm.")
    os.makedirs(out, exist_ok=True)
    records = load()
    with open(RATES) as f, open(RECONFIGS) as g:
        rates, reconfigs = list(csv.DictReader(f)), list(csv.DictReader(g))
    print("## the simulator against the real Slurm runs (bench/slurm.py; records: "
          "docs/perf/slurm_runs.csv, slurm_rates.csv, slurm_reconfigs.csv)")
    print()
    print("sim pooled: the job model of every rigid run pooled; sim own: that of the run itself "
          "(its rigid or malleable half: heat2d's speeds as they were then); (x): sim / real")
    print()
    pooled, worst_mean, worst_own, details = compare(sim, records, rates, reconfigs, out)
    print()
    describe("pooled", pooled)
    print(f"every model: Slurm's latency (submission, end or node given back -> allocation) "
          f"{pooled['latency']:.2f} s; limits {LIMIT_S} s, backfill every {BF_INTERVAL_S} s at "
          f"the run's phase; pcmd reads the queue every {QUEUE_READ_S} s; a shrink "
          f"{pooled['shrink']:.2f} s (decision to node given back), a growth "
          f"{pooled['grow']:.2f} s "
          f"(decision to done, the grant included); the policy takes a job on "
          f"{pooled['attach']:.2f} s after its allocation (medians)")
    print()
    print("the real runs against each other (largest / smallest):")
    for name in WORKLOADS:
        for mode in ("rigid", "malleable"):
            runs = sorted({r["run"] for r in records if r["workload"] == name})
            f = [figures([r for r in records if r["run"] == run and r["mode"] == mode])
                 for run in runs]
            print(f"  {name} {mode} ({len(f)} runs): " + "; ".join(
                f"{k} {min(x[k] for x in f):.1f}-{max(x[k] for x in f):.1f} "
                f"({max(x[k] for x in f) / min(x[k] for x in f):.2f})"
                for k in ("makespan", "wait", "turnaround")))
    for name in WORKLOADS:
        per_job_table(name, [d[1:] for d in details if d[0] == name])
    print()
    verdict = "within" if worst_mean <= TOLERANCE else "NOT within"
    print(f"pooled model: makespans and mean waits {verdict} {100 * TOLERANCE:.0f} % of the real "
          f"runs' means (largest deviation {100 * worst_mean:.1f} %); each run with its own "
          f"model: largest deviation {100 * worst_own:.1f} %")
    return 0 if worst_mean <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
