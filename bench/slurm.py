#!/usr/bin/env python3
"""slurm.py BUILD [--quick] [--seed N] [--out DIR] — rigid against malleable jobs under a
real Slurm (issue 22 item 7).

testbed/slurm.sh makes a Slurm cluster of 3 namespace nodes, 2 CPUs each (a prefix of this run's
own; taken down at the end, also on failure, SIGTERM or Ctrl-C). One small workload runs on it
twice, the same submissions at the same offsets:

  rigid      every job is a fixed-size sbatch job: pcmd as a step with --policy manual (heat2d_pcm
             cannot run without a pcmd) and heat2d_pcm on all its nodes, 2 processes per node,
             through mpiexec with testbed/launcher_slurm.sh (bench/slurm_job.sh);
  malleable  the same, but every other job (the 2nd, 4th, ...) runs its pcmd with --policy auto
             and short intervals (PCMD_AUTO below): it may grow onto a node Slurm has idle for
             5 s (a second allocation, kept only if the iteration rate rises by 5 %, else undone)
             and leaves a node when a job waits for more nodes than are idle (down to 1 process).

The workload is a fixed schedule drawn from a seeded generator (--seed; default 1, --quick 38,
two seeds whose schedules have a malleable 2-node job running while another job waits): 6 jobs
(--quick: 4) arriving over 100 s (30 s), each 1 or 2 nodes and 3000-8000 (1500-3500)
iterations of heat2d 1024x512 with --throttle-us 5000. The throttle makes an iteration last
about 5-8 ms whatever the process count, so jobs last tens of seconds and the 2 cores that all
"nodes" share are not saturated; more processes do not iterate faster here (4 processes on 2
cores: the compute phases of a bulk-synchronous step collide), which the policy's own growth
trials measure and print.

Measured from Slurm's own records: `scontrol show job -o` polled every 0.5 s while the run lasts
(sacct needs slurmdbd, which the test cluster has not): SubmitTime/StartTime/EndTime (whole
seconds) give makespan (first submission to last end), wait (submit -> start) and turnaround
(submit -> end); NodeList at each poll gives the nodes held over time (pcmd's second allocations,
job name pcm-grow.J, count for job J; a node given back leaves the NodeList) and node-seconds
held. heat2d's --trace (rank 0's rows: epoch time, process count) gives the nodes busy, i.e.
running heat2d processes (processes / 2 per job, rounded up), and node-seconds busy;
utilisation is node-seconds busy (and held) over 3 x makespan. For the malleable run, from each
auto pcmd's timed events (pcmctl status --json, written by the job at its end) and the polls:
the time from a node going idle to the policy's decision, the grant and the growth done; from a
job queued (the sbatch this script ran) to the shrink's decision, the node given back, and the
job's start (first poll showing it RUNNING). Every job must end COMPLETED with heat2d's checksum
equal to heat2d_plain's for the same grid and iterations.

Prints the schedule, a table (rigid, malleable, malleable/rigid) and the malleable run's
latencies; writes to --out (default: a new temporary directory, printed): summary.csv, jobs.csv,
nodes-rigid.csv, nodes-malleable.csv (time_s,held,busy,waiting), events-malleable.csv, nodes.png
(bench/plots/slurm_nodes.gp), polls-RUN.json (every poll, and Slurm's last record of every job),
slurmctld.log (both runs; the allocations with milliseconds) and logs/RUN/JOB/ (job.out,
pcmd.log, pcm-status.json, trace.csv).
Exits 77 (SKIPPED) with the reason without root, Slurm, munge or MPICH's hydra.
"""
import argparse
import csv
import json
import math
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "testbed"))
from cluster import heat2d_plain, slurmctld_log  # noqa: E402
import benchlib  # noqa: E402  (bench/, this file's directory)

SLURM_SH = os.path.join(ROOT, "testbed", "slurm.sh")
JOB_SCRIPT = os.path.join(HERE, "slurm_job.sh")
LAUNCHER = os.path.join(ROOT, "testbed", "launcher_slurm.sh")
SKIP = 77
NODES, CPUS, PPN = 3, 2, 2
NX, NY, THROTTLE_US, REPORT = 1024, 512, 5000, 50
POLL_S = 0.5
PCMD_MANUAL = "--policy manual"
PCMD_AUTO = ("--policy auto --policy-interval-s 2 --policy-measure-s 4 --policy-idle-s 5 "
             "--policy-cap-s 60 --policy-min-gain 0.05 --policy-min-procs 1 "
             "--slurm-grow-timeout 10")
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
         "BOOT_FAIL", "DEADLINE", "PREEMPTED"}
HOLDING = {"RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING"}


class Failure(Exception):
    pass


def log(msg):
    print(f"bench_slurm: {msg}", flush=True)


def skip(why):
    print(f"SKIPPED: bench_slurm: {why}", flush=True)
    sys.exit(SKIP)


def schedule(seed, quick):
    """The workload: [{name, submit (s from the run's start), nodes, iters, malleable}]."""
    rng = random.Random(seed)
    n, span, (lo, hi) = (4, 30, (1500, 3500)) if quick else (6, 100, (3000, 8000))
    times = sorted([0] + [rng.randint(1, span) for _ in range(n - 1)])
    return [{"name": f"j{i + 1}", "submit": t, "nodes": rng.choice([1, 2]),
             "iters": rng.randrange(lo, hi + 1, 250), "malleable": i % 2 == 1}
            for i, t in enumerate(times)]


def expand(nodelist):
    """Slurm's compressed host list ("p[1-2,4],q7") as names; "(null)" or "" as none."""
    if not nodelist or nodelist == "(null)":
        return []
    out = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]*)\])?", nodelist):
        head, ranges = m.group(1), m.group(2)
        if ranges is None:
            out.append(head)
            continue
        for part in ranges.split(","):
            a, _, b = part.partition("-")
            for k in range(int(a), int(b or a) + 1):
                out.append(f"{head}{k:0{len(a)}d}")
    return out


def slurm_time(text):
    """scontrol's local time (2026-11-25T21:14:10) as epoch seconds; None if not a time."""
    try:
        return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))
    except (TypeError, ValueError):
        return None


class Cluster:
    """slurm.sh up/down, and Slurm's commands against the cluster."""

    def __init__(self):
        self.prefix = f"bsl{os.getpid() % 100000}x"
        self.names = [f"{self.prefix}{k}" for k in range(1, NODES + 1)]
        self.env = dict(os.environ)
        self.env["PATH"] = self.env.get("PATH", "") + ":/usr/sbin:/sbin"
        self.is_up = False

    def run(self, *cmd, check=True, timeout=60):
        r = subprocess.run(list(cmd), env=self.env, capture_output=True, text=True,
                           timeout=timeout)
        if check and r.returncode != 0:
            raise Failure(f"{' '.join(cmd)} exited {r.returncode}: {r.stdout}{r.stderr}")
        return r

    def up(self):
        self.is_up = True
        r = self.run("bash", SLURM_SH, "up", str(NODES), "--prefix", self.prefix, "--cpus",
                     str(CPUS), check=False, timeout=180)
        if r.returncode == SKIP:
            self.is_up = False
            print(r.stdout.strip(), flush=True)
            sys.exit(SKIP)
        if r.returncode != 0:
            raise Failure(f"slurm.sh up failed ({r.returncode}): {r.stdout}{r.stderr}")
        m = re.search(r"^export SLURM_CONF=(\S+)$", r.stdout, re.M)
        if not m:
            raise Failure("slurm.sh up printed no 'export SLURM_CONF=' line")
        self.env["SLURM_CONF"] = m.group(1)
        log(f"cluster {self.prefix}: {NODES} nodes ({', '.join(self.names)}), {CPUS} CPUs each")

    def jobs(self):
        """Every job Slurm knows: {id: {key: value}} from scontrol show job -o."""
        r = self.run("scontrol", "show", "job", "-o", check=False, timeout=30)
        out = {}
        for line in r.stdout.splitlines():
            rec = {}
            for tok in line.split():
                k, eq, v = tok.partition("=")
                if eq and k not in rec:
                    rec[k] = v
            if rec.get("JobId"):
                out[rec["JobId"]] = rec
        return out

    def idle_nodes(self):
        r = self.run("sinfo", "-h", "-N", "-t", "idle", "-o", "%N", check=False)
        return set(r.stdout.split())

    def cancel_all(self):
        r = self.run("squeue", "-h", "-o", "%i", check=False)
        ids = r.stdout.split()
        if ids:
            self.run("scancel", *ids, check=False)
        t0 = time.monotonic()
        while ids and time.monotonic() - t0 < 30:
            if not self.run("squeue", "-h", "-o", "%i", check=False).stdout.split():
                break
            time.sleep(0.5)

    def down(self, out=None):
        if not self.is_up:
            return
        try:
            self.cancel_all()
        except Exception as e:  # noqa: BLE001 — the cluster goes down anyway
            log(f"note: cancelling the jobs left: {e}")
        # slurmctld's own log (its allocations, with milliseconds: what started each job when),
        # kept before slurm.sh down removes the cluster's directory.
        ctld = slurmctld_log(self.env.get("SLURM_CONF", "")) if out else None
        if ctld:
            shutil.copyfile(ctld, os.path.join(out, "slurmctld.log"))
        r = self.run("bash", SLURM_SH, "down", "--prefix", self.prefix, check=False, timeout=180)
        if r.returncode != 0:
            log(f"slurm.sh down failed ({r.returncode}): {r.stdout}{r.stderr}")
        else:
            log(f"cluster {self.prefix} is down")
        self.is_up = False


class Poller(threading.Thread):
    """scontrol show job -o every POLL_S s: samples [(epoch, {id: (name, state, nodes)})] and the
    last record of every job."""

    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.c = cluster
        self.samples = []
        self.last = {}
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.error = None

    def poll_once(self):
        t = time.time()
        jobs = self.c.jobs()
        sample = {i: (r.get("JobName", ""), r.get("JobState", "?"), expand(r.get("NodeList", "")))
                  for i, r in jobs.items()}
        with self.lock:
            self.samples.append((t, sample))
            self.last.update(jobs)

    def run(self):
        nxt = time.monotonic()
        while not self.stop_event.is_set():
            try:
                self.poll_once()
            except Exception as e:  # noqa: BLE001 — reported by the main thread
                self.error = e
            nxt += POLL_S
            self.stop_event.wait(max(0.0, nxt - time.monotonic()))

    def stop(self):
        self.stop_event.set()
        self.join(timeout=30)
        self.poll_once()

    def snapshot(self):
        with self.lock:
            return dict(self.last)


def read_trace(path):
    """heat2d's trace rows as (epoch, procs)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [(float(r["time_s"]), int(r["procs"])) for r in csv.DictReader(f)]


def run_workload(c, mode, jobs, scratch, plain, timeout):
    """Submits the schedule (mode rigid or malleable) and waits for its end. Returns the run:
    {t0, jobs: [...], samples, records}."""
    deadline = time.monotonic() + 60
    while c.idle_nodes() != set(c.names):
        if time.monotonic() > deadline:
            raise Failure(f"the cluster's nodes are not all idle before the {mode} run: "
                          f"{sorted(c.idle_nodes())} idle")
        time.sleep(0.5)
    heat = os.path.join(c.build, "examples", "heat2d", "heat2d_pcm")
    poller = Poller(c)
    poller.poll_once()
    poller.start()
    t0 = time.time()
    subs = []
    try:
        for j in jobs:
            wait = t0 + j["submit"] - time.time()
            if wait > 0:
                time.sleep(wait)
            d = os.path.join(scratch, mode, j["name"])
            os.makedirs(d)
            auto = mode == "malleable" and j["malleable"]
            env = dict(c.env, PCM_JOB=f"{mode}-{j['name']}",
                       PCMD_ARGS=PCMD_AUTO if auto else PCMD_MANUAL)
            cmd = ["sbatch", "--parsable", "-N", str(j["nodes"]), f"--ntasks-per-node={PPN}",
                   "--time=10", "-J", f"bench-{mode}-{j['name']}", "-o",
                   os.path.join(d, "job.out"), "-D", d, JOB_SCRIPT, c.build, d, LAUNCHER,
                   str(PPN), heat, "--nx", str(NX), "--ny", str(NY), "--iters", str(j["iters"]),
                   "--throttle-us", str(THROTTLE_US), "--report", str(REPORT), "--trace",
                   os.path.join(d, "trace.csv")]
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
            queued = time.time()
            jid = r.stdout.strip().split(";")[0]
            if r.returncode != 0 or not jid.isdigit():
                raise Failure(f"sbatch for {j['name']} exited {r.returncode}: {r.stdout}{r.stderr}")
            subs.append(dict(j, id=jid, dir=d, auto=auto, queued=queued))
            log(f"{mode}: {j['name']} submitted at {queued - t0:5.1f} s: Slurm job {jid}, "
                f"{j['nodes']} node(s), {j['iters']} iterations"
                f"{', pcmd --policy auto' if auto else ''}")
        ids = {s["id"] for s in subs}
        t_last = time.monotonic()
        while True:
            if poller.error:
                raise Failure(f"polling scontrol failed: {poller.error}")
            snap = poller.snapshot()
            left = [i for i in ids if snap.get(i, {}).get("JobState", "?") not in ENDED]
            grow = [i for i, r in snap.items() if r.get("JobName", "").startswith("pcm-grow.")
                    and r.get("JobName", "")[9:] in ids and r.get("JobState") not in ENDED]
            if not left and not grow:
                break
            if time.monotonic() - t_last > timeout:
                raise Failure(f"the {mode} run did not end within {timeout} s: jobs {left} and "
                              f"pcmd's allocations {grow} still in the queue")
            time.sleep(POLL_S)
    finally:
        poller.stop()
    return {"mode": mode, "t0": t0, "jobs": subs, "samples": poller.samples,
            "records": poller.snapshot()}


def analyse(run, plain, out):
    """Adds the figures to run (in place): per job and for the run. Raises Failure when a job
    did not complete or its checksum differs from the plain run's."""
    t0, recs, samples = run["t0"], run["records"], run["samples"]
    with open(os.path.join(out, f"polls-{run['mode']}.json"), "w") as f:
        json.dump({"t0": t0, "samples": samples, "records": recs}, f)
    ids = {s["id"]: s for s in run["jobs"]}
    owner = {}  # Slurm job id -> workload job id (pcmd's second allocations count for theirs)
    for i, r in recs.items():
        name = r.get("JobName", "")
        if i in ids:
            owner[i] = i
        elif name.startswith("pcm-grow.") and name[9:] in ids:
            owner[i] = name[9:]
    bad = []
    for s in run["jobs"]:
        r = recs[s["id"]]
        s["state"] = r.get("JobState")
        s["exit"] = r.get("ExitCode")
        s["submit_t"] = slurm_time(r.get("SubmitTime"))
        s["start_t"] = slurm_time(r.get("StartTime"))
        s["end_t"] = slurm_time(r.get("EndTime"))
        text = open(os.path.join(s["dir"], "job.out")).read() \
            if os.path.exists(os.path.join(s["dir"], "job.out")) else ""
        m = re.search(r"^checksum (\w+)", text, re.M)
        s["checksum"] = m.group(1) if m else None
        s["checksum_ok"] = s["checksum"] == plain[s["iters"]]
        m = re.search(r"^reconfigurations (\d+)", text, re.M)
        s["reconfigs"] = int(m.group(1)) if m else None
        if s["state"] != "COMPLETED" or s["exit"] != "0:0":
            bad.append(f"{s['name']} (Slurm job {s['id']}) ended {s['state']} {s['exit']}:\n"
                       f"{text[-1500:]}")
        elif not s["checksum_ok"]:
            bad.append(f"{s['name']}: checksum {s['checksum']} differs from heat2d_plain's "
                       f"{plain[s['iters']]}")
        if None in (s["submit_t"], s["start_t"], s["end_t"]):
            bad.append(f"{s['name']}: Slurm shows no submit/start/end time: {r}")
        st = os.path.join(s["dir"], "pcm-status.json")
        s["status"] = json.load(open(st))["jobs"][0] if os.path.exists(st) else {}
        s["trace"] = read_trace(os.path.join(s["dir"], "trace.csv"))
        # First poll that shows it running (for the queue latencies; Slurm's StartTime is whole
        # seconds).
        s["start_poll"] = next((t for t, smp in samples
                                if smp.get(s["id"], ("", "", []))[1] in HOLDING | ENDED), None)
    if bad:
        raise Failure(f"{run['mode']} run: " + "\n".join(bad))

    # Nodes held (Slurm's NodeList at each poll), busy (heat2d's processes) and jobs waiting, as
    # step functions from t0; node-seconds over [first submission, last end].
    begin = min(s["submit_t"] for s in run["jobs"])
    end = max(s["end_t"] for s in run["jobs"])
    run["makespan"] = end - begin
    series = []
    for t, smp in samples:
        held, per = set(), {}
        for i, (name, state, nodes) in smp.items():
            if i in owner and state in HOLDING:
                held.update(nodes)
                per[owner[i]] = per.get(owner[i], 0) + len(nodes)
        waiting = sum(1 for i in ids if smp.get(i, ("", "?", []))[1] == "PENDING")
        series.append([t, len(held), per, waiting])
    for s in run["jobs"]:
        s["node_s"] = sum(series[k][2].get(s["id"], 0) * (series[k + 1][0] - series[k][0])
                          for k in range(len(series) - 1))

    def busy_at(t):
        n = 0
        for s in run["jobs"]:
            tr = s["trace"]
            if not tr or t < tr[0][0] or t > tr[-1][0]:
                continue
            procs = next(p for tt, p in reversed(tr) if tt <= t)
            n += math.ceil(procs / PPN)
        return n

    # Busy: integrated over every trace row's time as well as the polls'.
    times = sorted({t for s in run["jobs"] for t, _ in s["trace"]} | {x[0] for x in series})
    busy = [(t, busy_at(t)) for t in times]
    run["busy"] = busy
    run["series"] = series

    def integral(points):
        """A step function [(t, value)] integrated over [begin, end]."""
        total = 0.0
        for k in range(len(points) - 1):
            a, b = max(points[k][0], begin), min(points[k + 1][0], end)
            if b > a:
                total += points[k][1] * (b - a)
        return total

    run["node_s_held"] = integral([(x[0], x[1]) for x in series])
    run["node_s_busy"] = integral(busy)
    avail = NODES * run["makespan"]
    run["util_held"] = run["node_s_held"] / avail
    run["util_busy"] = run["node_s_busy"] / avail
    run["wait"] = statistics.mean(s["start_t"] - s["submit_t"] for s in run["jobs"])
    run["turnaround"] = statistics.mean(s["end_t"] - s["submit_t"] for s in run["jobs"])
    run["reconfigs"] = sum(s["reconfigs"] or 0 for s in run["jobs"])
    run["grow_allocs"] = sum(1 for i, o in owner.items() if i != o)
    return run


def idle_since(run, node, before):
    """When node last became free of every job before `before`: the first poll that saw it free,
    or, where pcmd saw it free before any poll did, the end (Slurm's EndTime, whole seconds) of
    the jobs or allocations that held it at the last poll before; None if neither is known."""
    since, holders = None, []
    for t, smp in run["samples"]:
        if t > before:
            break
        ids = [i for i, (_, state, nodes) in smp.items() if state in HOLDING and node in nodes]
        if ids:
            since, holders = None, ids
        elif since is None:
            since = t
    if since is None and holders:  # pcm-grow allocations included: Slurm's record of each
        ends = [slurm_time(run["records"].get(i, {}).get("EndTime")) for i in holders]
        if None not in ends and max(ends) <= before + 1:  # EndTime has whole seconds
            since = min(max(ends), before)
    return since


def released(run, jid, node, after):
    """The first poll after `after` where neither Slurm job jid nor its pcm-grow allocations
    hold node (the node given back: NodeList shrunk, or the allocation ended), or None."""
    for t, smp in run["samples"]:
        if t <= after:
            continue
        if not any(node in nodes and state in HOLDING and (i == jid or name == f"pcm-grow.{jid}")
                   for i, (name, state, nodes) in smp.items()):
            return t
    return None


def latencies(run):
    """The malleable run's growths and shrinks from the auto pcmds' events: lists of dicts."""
    grows, shrinks, trials = [], [], []
    by_id = {s["id"]: s for s in run["jobs"]}
    for s in run["jobs"]:
        if not s["auto"]:
            continue
        ev = list(zip(s["status"].get("event_times", []), s["status"].get("events", [])))
        for k, (t, e) in enumerate(ev):
            m = re.search(r"policy: resize to (\d+).* because Slurm node (\S+) has been idle", e)
            if m:
                node = m.group(2)
                g = {"job": s["name"], "node": node, "decided": t, "granted": None, "done": None,
                     "idle": idle_since(run, node, t)}
                for t2, e2 in ev[k + 1:]:
                    if g["granted"] is None and re.search(r"Slurm granted job \d+", e2):
                        g["granted"] = t2
                    if g["done"] is None and re.search(rf"^resize to {m.group(1)} done", e2):
                        g["done"] = t2
                    if "refused after" in e2 and g["granted"] is None:
                        g["refused"] = e2
                        break
                    if g["done"]:
                        break
                grows.append(g)
            m = re.search(r"(growth to \d+ kept: .*?\))|undo the growth to \d+: ([^;]*)", e)
            if m and "policy:" in e:
                trials.append((s["name"], "kept" if m.group(1) else "undone",
                               (m.group(1) or m.group(2)).strip()))
            m = re.search(r"policy: resize to (\d+).* because Slurm job (\d+) waits for (\d+) "
                          r"node\(s\) and (\d+) are idle: the job leaves (\S+)", e)
            if m:
                waiter, node = m.group(2), m.group(5)
                sh = {"job": s["name"], "node": node, "decided": t, "waiter": waiter,
                      "given": released(run, s["id"], node, t), "queued": None,
                      "started": None}
                w = by_id.get(waiter)
                if w:
                    sh["waiter_name"] = w["name"]
                    sh["queued"] = w["queued"]
                    sh["started"] = w["start_poll"]
                shrinks.append(sh)
    return grows, shrinks, trials


def fmt(x, nd=1):
    return "-" if x is None else f"{x:.{nd}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("--quick", action="store_true", help="4 shorter jobs over 30 s")
    ap.add_argument("--seed", type=int, help="the schedule's seed (default 1; --quick: 38)")
    ap.add_argument("--out", help="output directory (default: a new temporary directory)")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    seed = a.seed if a.seed is not None else (38 if a.quick else 1)
    if os.geteuid() != 0:
        skip(f"needs root to make namespace hosts and run slurmd (uid {os.geteuid()})")
    for tool in ("sbatch", "scontrol", "squeue", "sinfo", "scancel", "salloc", "srun",
                 "gnuplot"):
        if not shutil.which(tool, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin"):
            skip(f"{tool} is not installed (Debian: slurm-wlm, munge, gnuplot-nox)")
    family = subprocess.run(
        ["sh", "-c", f'. "{ROOT}/testbed/launcher_mpi.sh" && echo "$PCM_MPI_FAMILY"'],
        capture_output=True, text=True).stdout.strip()
    if family != "mpich":
        skip(f"the launcher is hydra's ssh-style -launcher-exec; this MPI is {family or '?'}")
    for f in ("pcmd", "pcmctl", "examples/heat2d/heat2d_pcm", "examples/heat2d/heat2d_plain"):
        if not os.access(os.path.join(build, f), os.X_OK):
            print(f"bench_slurm: {os.path.join(build, f)} is not built", file=sys.stderr)
            return 1
    out = os.path.abspath(a.out) if a.out else tempfile.mkdtemp(prefix="pcm-bench-slurm.")
    os.makedirs(out, exist_ok=True)
    jobs = schedule(seed, a.quick)
    timeout = 420 if a.quick else 720
    # Ctrl-C, TERM and HUP take the cluster down (the finally below), also where the caller
    # started this with SIGINT ignored (a background job of a script).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGHUP, lambda *_: sys.exit(129))

    print(f"bench_slurm: {'quick' if a.quick else 'full'} workload, seed {seed}: heat2d {NX}x{NY} "
          f"--throttle-us {THROTTLE_US}, {PPN} processes per node; malleable jobs' pcmd: "
          f"{PCMD_AUTO}")
    print("  job  submit_s  nodes  iterations  in the malleable run")
    for j in jobs:
        print(f"  {j['name']:4s} {j['submit']:8d} {j['nodes']:6d} {j['iters']:11d}  "
              f"{'pcmd --policy auto' if j['malleable'] else 'rigid (pcmd --policy manual)'}")
    sys.stdout.flush()
    plain = {}
    for it in sorted({j["iters"] for j in jobs}):
        plain[it] = heat2d_plain(build, ["--nx", str(NX), "--ny", str(NY), "--iters", str(it)])
    log(f"heat2d_plain's checksums: {', '.join(f'{k} iterations {v}' for k, v in plain.items())}")

    c = Cluster()
    c.build = build
    c.env["MPIEXEC"] = shutil.which("mpiexec") or "mpiexec"
    runs = {}
    with tempfile.TemporaryDirectory(prefix="pcm-bench-slurm-work.") as scratch:
        os.chmod(scratch, 0o700)
        try:
            c.up()
            for mode in ("rigid", "malleable"):
                t = time.monotonic()
                try:
                    runs[mode] = analyse(run_workload(c, mode, jobs, scratch, plain, timeout),
                                         plain, out)
                finally:
                    keep_logs(scratch, out, mode)
                log(f"{mode} run done in {time.monotonic() - t:.0f} s; every job COMPLETED "
                    f"with heat2d_plain's checksum")
                c.cancel_all()
        except Failure as e:
            print(f"bench_slurm: FAILED: {e}", file=sys.stderr, flush=True)
            print(f"bench_slurm: the jobs' output and pcmd's logs: {out}/logs", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("bench_slurm: interrupted; taking the cluster down", file=sys.stderr, flush=True)
            return 130
        finally:
            c.down(out)
    report(runs, jobs, out, seed, a.quick)
    return 0


def keep_logs(scratch, out, mode):
    src = os.path.join(scratch, mode)
    if not os.path.isdir(src):
        return
    for name in sorted(os.listdir(src)):
        dst = os.path.join(out, "logs", mode, name)
        os.makedirs(dst, exist_ok=True)
        for f in ("job.out", "pcmd.log", "pcm-status.json", "trace.csv"):
            p = os.path.join(src, name, f)
            if os.path.exists(p):
                shutil.copyfile(p, os.path.join(dst, f))


def report(runs, jobs, out, seed, quick):
    r, m = runs["rigid"], runs["malleable"]
    rows = [("makespan (s)", r["makespan"], m["makespan"], 0),
            ("mean wait, submit -> start (s)", r["wait"], m["wait"], 1),
            ("mean turnaround, submit -> end (s)", r["turnaround"], m["turnaround"], 1),
            ("node-seconds held (Slurm's NodeList)", r["node_s_held"], m["node_s_held"], 0),
            ("node-seconds busy (heat2d's processes)", r["node_s_busy"], m["node_s_busy"], 0),
            ("utilisation: held / (3 x makespan)", r["util_held"], m["util_held"], 2),
            ("utilisation: busy / (3 x makespan)", r["util_busy"], m["util_busy"], 2),
            ("reconfigurations", r["reconfigs"], m["reconfigs"], 0),
            ("second allocations (pcm-grow)", r["grow_allocs"], m["grow_allocs"], 0)]
    print()
    print(f"bench_slurm: {'quick' if quick else 'full'} workload (seed {seed}), "
          f"{len(jobs)} jobs on {NODES} nodes; times from Slurm's records (whole seconds), "
          f"nodes from scontrol polled every {POLL_S} s")
    print(f"  {'figure':40s} {'rigid':>9s} {'malleable':>10s} {'ratio':>7s}")
    with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["figure", "rigid", "malleable", "ratio"])
        for name, a, b, nd in rows:
            ratio = b / a if a else None
            print(f"  {name:40s} {a:9.{nd}f} {b:10.{nd}f} {fmt(ratio, 2):>7s}")
            w.writerow([name, round(a, 3), round(b, 3), "" if ratio is None else round(ratio, 3)])
    print("  per job (wait / turnaround s, rigid -> malleable):")
    with open(os.path.join(out, "jobs.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "job", "slurm_job", "pcmd_policy", "nodes", "iterations", "submit_s",
                    "start_s", "end_s", "wait_s", "turnaround_s", "node_s_held", "reconfigs",
                    "checksum", "checksum_ok"])
        for mode, run in runs.items():
            for s in run["jobs"]:
                b = min(x["submit_t"] for x in run["jobs"])
                w.writerow([mode, s["name"], s["id"], "auto" if s["auto"] else "manual",
                            s["nodes"], s["iters"], s["submit_t"] - b, s["start_t"] - b,
                            s["end_t"] - b, s["start_t"] - s["submit_t"],
                            s["end_t"] - s["submit_t"], round(s["node_s"], 1), s["reconfigs"],
                            s["checksum"], s["checksum_ok"]])
    for jr, jm in zip(r["jobs"], m["jobs"]):
        print(f"    {jr['name']:4s} {jr['nodes']}N {'auto  ' if jm['auto'] else 'manual'} "
              f"wait {jr['start_t'] - jr['submit_t']:4.0f} -> {jm['start_t'] - jm['submit_t']:4.0f}"
              f"   turnaround {jr['end_t'] - jr['submit_t']:4.0f} -> "
              f"{jm['end_t'] - jm['submit_t']:4.0f}   reconfigurations {jm['reconfigs']}")

    grows, shrinks, trials = latencies(m)
    print("  malleable run: growths onto an idle node (s after the node went idle: decision, "
          "grant, growth done):")
    for g in grows:
        base = g["idle"]
        d = lambda t: fmt(t - base) if t is not None and base is not None else "-"  # noqa: E731
        print(f"    {g['job']} onto {g['node']}: {d(g['decided'])}, {d(g['granted'])}, "
              f"{d(g['done'])}{'  (refused: ' + g['refused'] + ')' if g.get('refused') else ''}")
    if not grows:
        print("    none")
    print("  malleable run: the growths measured (the policy's trial, keep if +5 %):")
    for name, what, text in trials:
        print(f"    {name}: {what}: {text}")
    if not trials:
        print("    none")
    print("  malleable run: shrinks for a waiting job (s after it was queued: decision, node "
          "given back (polls), its start (polls)):")
    for sh in shrinks:
        q = sh["queued"]
        d = lambda t: fmt(t - q) if t is not None and q is not None else "-"  # noqa: E731
        print(f"    {sh['job']} leaves {sh['node']} for {sh.get('waiter_name', sh['waiter'])}: "
              f"{d(sh['decided'])}, {d(sh['given'])}, {d(sh['started'])}")
    if not shrinks:
        print("    none")

    # The plot's data: nodes over time for each run, and the malleable run's events.
    for mode, run in runs.items():
        b = min(x["submit_t"] for x in run["jobs"])
        busy = run["busy"]
        k = 0
        with open(os.path.join(out, f"nodes-{mode}.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["time_s", "held", "busy", "waiting"])
            for t, held, _, waiting in run["series"]:
                while k + 1 < len(busy) and busy[k + 1][0] <= t:
                    k += 1
                w.writerow([round(t - b, 3), held, busy[k][1] if busy and busy[0][0] <= t else 0,
                            waiting])
    b = min(x["submit_t"] for x in m["jobs"])
    with open(os.path.join(out, "events-malleable.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["time_s", "kind", "label"])
        for g in grows:
            if g["done"]:
                w.writerow([round(g["done"] - b, 3), "grow", f"{g['job']} grows"])
        for sh in shrinks:
            w.writerow([round(sh["decided"] - b, 3), "shrink", f"{sh['job']} shrinks"])
    png = os.path.join(out, "nodes.png")
    title = (f"{len(jobs)} heat2d jobs on a 3-node Slurm test cluster (seed {seed}): nodes over "
             "time")
    benchlib.plot("slurm_nodes", os.path.join(out, "nodes-rigid.csv"),
                  os.path.join(out, "nodes-malleable.csv"),
                  os.path.join(out, "events-malleable.csv"), png, title,
                  f"rigid: makespan {r['makespan']:.0f} s, mean wait {r['wait']:.1f} s",
                  f"malleable: makespan {m['makespan']:.0f} s, mean wait {m['wait']:.1f} s")
    print(f"  written to {out}: summary.csv jobs.csv nodes-rigid.csv nodes-malleable.csv "
          f"events-malleable.csv nodes.png polls-rigid.json polls-malleable.json logs/")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("bench_slurm: interrupted", file=sys.stderr)
        sys.exit(130)
