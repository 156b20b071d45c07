#!/usr/bin/env python3
"""slurm_preempt.py BUILD — a PCM job preempted, warned and requeued by a real Slurm (the
slurm.preempt test; docs/user/preemption.md).

testbed/slurm.sh makes a Slurm cluster of two namespace hosts whose partitions preempt by priority
(`main`, PriorityTier 1, GraceTime 10 s, requeued when preempted; `high`, PriorityTier 10; a requeued
job may start again 10 s later, cred_expire; `cancel`, as `main` but cancelled). The PCM
job is sbatch'ed as the docs give it (tests/multihost/slurm_preempt_job.sh: pcmd in the batch
script with --stop-grace, the batch shell's signals forwarded to `pcmctl run --requeue`), heat2d_pcm
on 2 processes of node 1, its loop the README's, nothing more:
  A. the warning `sbatch --signal=B:USR1@T` asks for: SIGUSR1 to the batch shell only, sent as
     slurmctld sends it (`scancel --batch --signal=USR1`: --signal's own moment is only known to
     within a minute); the shell forwards it, the job writes a last version and ends (75),
     pcmctl run requeues the Slurm job, the requeued run resumes from that version and finishes
     with the plain run's checksum, bit for bit.
  B. a job of partition `high` for node 1 preempts it: Slurm's SIGTERM (to every process, at the
     end of the grace time for the batch step) makes it write its last version before the SIGKILL;
     Slurm requeues it, the high job runs, and the PCM job resumes and finishes bit for bit.
  C. the same in partition `cancel` (PreemptMode=CANCEL): Slurm would cancel the job; after its
     last version `pcmctl run --requeue` requeues it itself (scontrol requeue), and it resumes and
     finishes bit for bit.
Each time pcmd's log (every run's pcmd appends to it) shows the stop with its version and the
resumed run says it restarted from that iteration. Then nothing of the cluster is left.

With --timeline DIR, case B only, heat2d's trace (DIR/trace.csv) and the events outside the job
(DIR/events.csv: the preempting job submitted and running, the stop's last version)
for bench/preempt_timeline.sh's plot.

Exits 77 (SKIPPED) without root, Slurm or munge, or on an MPI other than MPICH's hydra.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testbed"))
from cluster import Failure, heat2d_plain, slurmctld_log  # noqa: E402
from slurm_heat2d import ENDED, SlurmCluster, poll, run_on_cluster, runnable_family  # noqa: E402

TEST = "slurm.preempt"
HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "slurm_preempt_job.sh")
# 64 x 48 at 8 ms an iteration: about 40 s of work, on 2 processes of node 1 (a preemption comes
# within one of slurmctld's scheduling cycles, and its SIGTERM a grace time later).
ARGS = ["--nx", "64", "--ny", "48", "--iters", "5000", "--commit-every", "100"]


def log(msg):
    print(f"{TEST}: {msg}", flush=True)


def show(c, job_id):
    r = c.run("scontrol", "show", "job", job_id, "-o", check=False).stdout
    state = re.search(r"\bJobState=(\S+)", r)
    restarts = re.search(r"\bRestarts=(\d+)", r)
    return (state.group(1) if state else "?"), int(restarts.group(1)) if restarts else 0


def submit(c, case, sbatch_args, heat_args=()):
    out = os.path.join(c.tmp, f"{case}.out")
    c.env["PCM_JOB"] = f"pre-{case}"
    heat = os.path.join(c.build, "examples/heat2d/heat2d_pcm")
    r = c.run("sbatch", "--parsable", "--requeue", "--open-mode=append", "-o", out, "-D", c.tmp,
              "-N1", "-n2", "-w", c.names[0], "-J", f"pcm-{case}", *sbatch_args,
              JOB, c.build, c.tmp, "2", heat, *ARGS, "--throttle-us", "8000", *heat_args)
    job_id = r.stdout.strip().split(";")[0]
    if not job_id.isdigit():
        raise Failure(f"sbatch --parsable printed {r.stdout!r}")
    c.job = job_id
    return job_id, out


def ctld_lines(c, pattern):
    """slurmctld's log lines that match pattern (its log has milliseconds: who preempted when)."""
    path = slurmctld_log(c.env.get("SLURM_CONF", ""))
    if not path:
        return []
    with open(path) as f:
        return [line.rstrip() for line in f if re.search(pattern, line)]


def iterating(c, job, at_least):
    """Until pcmd (this run's) has heard of iteration at_least of the job."""
    def ok():
        r = c.pcmctl("status", job, "--json", check=False)
        if r.returncode != 0:
            return False
        return '"state": "running"' in r.stdout and \
            int(re.search(r'"iteration": (\d+)', r.stdout).group(1)) >= at_least
    poll(f"job {job} at iteration {at_least}", 120, ok, every=0.5)


def finished_resumed(c, case, job_id, out, plain):
    def done():
        state, _ = show(c, job_id)
        if state in ENDED and state != "COMPLETED":
            raise Failure(f"Slurm job {job_id} ended {state}:\n{open(out).read()[-3000:]}")
        return state == "COMPLETED"
    poll(f"Slurm job {job_id} COMPLETED", 240, done, every=0.5)
    _, restarts = show(c, job_id)
    if restarts < 1:
        raise Failure(f"Slurm job {job_id} completed without being requeued")
    text = open(out).read()
    pcmd_log = open(os.path.join(c.tmp, "pcmd.log")).read()
    stops = re.findall(rf"job pre-{case} stopped at iteration (\d+) \((.*?)\): the last version "
                       rf"is of iteration (\d+)", pcmd_log)
    if not stops:
        raise Failure(f"pcmd's log shows no stop of pre-{case}:\n{pcmd_log[-3000:]}")
    version = stops[0][2]
    if f"heat2d: restarted from iteration {version} " not in text:
        raise Failure(f"the requeued run did not resume from the stop's version {version}:\n"
                      f"{text[-3000:]}")
    m = re.findall(r"^checksum (\w+)", text, re.M)
    if not m or m[-1] != plain:
        raise Failure(f"checksum {m[-1] if m else None} differs from the plain run's {plain}")
    log(f"{case}: stopped at iteration {stops[0][0]} ({stops[0][1]}), version {version}; "
        f"requeued {restarts} time(s), resumed from it; COMPLETED with the plain checksum")


def scenario(c):
    plain = heat2d_plain(c.build, ARGS)
    # A. The warning: USR1 to the batch shell.
    t0 = time.monotonic()
    job_id, out = submit(c, "warn", ["--time=5", "--signal=B:USR1@60"])
    iterating(c, "pre-warn", 300)
    c.run("scancel", "--batch", "--signal=USR1", job_id)
    log(f"A: Slurm job {job_id} iterating; SIGUSR1 sent to its batch shell")
    finished_resumed(c, "warn", job_id, out, plain)
    log(f"A: {time.monotonic() - t0:.0f} s in all")

    # B with the timeline, whose table (bench/preempt_timeline.sh's) is printed from it.
    timeline = os.path.join(c.tmp, "timeline")
    os.makedirs(timeline)
    preempted_by_high(c, plain, "B", "preempt", "main", timeline)
    r = c.run("python3", os.path.join(HERE, "..", "..", "bench", "tables.py"), "preempt_timeline",
              os.path.join(timeline, "trace.csv"), os.path.join(timeline, "events.csv"))
    log(f"B's timeline:{r.stdout.rstrip()}")
    preempted_by_high(c, plain, "C", "cancel", "cancel")


def preempted_by_high(c, plain, letter, case, partition, timeline=None):
    """B and C: a job of partition high for node 1 preempts the PCM job of `partition` (main:
    requeued by Slurm; cancel: cancelled by Slurm, requeued by pcmctl run --requeue). With
    timeline (a directory), heat2d's trace and the outside events go there (bench/preempt_timeline.sh)."""
    t0 = time.monotonic()
    events = []  # (epoch seconds, label)
    extra = []
    if timeline:
        extra = ["--trace", os.path.join(timeline, "trace.csv")]
    job_id, out = submit(c, case, ["-p", partition], extra)
    iterating(c, f"pre-{case}", 300)
    r = c.run("sbatch", "--parsable", "-p", "high", "-N1", "-n2", "-w", c.names[0], "-J", "high",
              "-o", os.path.join(c.tmp, f"high-{case}.out"), "--wrap", "hostname; sleep 3")
    events.append((time.time(), "preempting job submitted"))
    high = r.stdout.strip().split(";")[0]
    log(f"{letter}: Slurm job {job_id} (partition {partition}) iterating; job {high} of "
        f"partition high submitted for {c.names[0]} at {time.strftime('%H:%M:%S')}")
    seen = {}

    def watch():
        # The high job's run (a span) and the PCM job's requeue, as often as the poll looks.
        state, restarts = show(c, job_id)
        high_state, _ = show(c, high)
        now = time.time()
        if high_state in ("RUNNING", "COMPLETING", "COMPLETED") and "high" not in seen:
            seen["high"] = now
            events.append((now, "preempting job starts"))
        if high_state == "COMPLETED" and "high done" not in seen:
            seen["high done"] = now
            events.append((now, "preempting job ends"))
        if restarts >= 1 and "requeued" not in seen:
            seen["requeued"] = now  # a moment after the last version: not drawn
        return "requeued" in seen and "high done" in seen
    poll(f"Slurm job {job_id} preempted and requeued, job {high} COMPLETED", 120, watch,
         every=0.2)
    for line in ctld_lines(c, rf"[Pp]reempt.*JobId={job_id}\b|JobId={high}\b.*(started|Allocate)"):
        log(f"{letter}: slurmctld: {line}")
    finished_resumed(c, case, job_id, out, plain)
    pcmd_log = open(os.path.join(c.tmp, "pcmd.log")).read()
    if partition == "cancel" and \
            f"job pre-{case}: scontrol requeue {job_id} exited with 0" not in pcmd_log:
        # Slurm cancels a job of this partition: the requeue is pcmctl run's own (--requeue).
        raise Failure(f"pcmd's log shows no requeue of Slurm job {job_id} by pcmctl run:\n"
                      f"{pcmd_log[-3000:]}")
    log(f"{letter}: {time.monotonic() - t0:.0f} s in all"
        + (" (requeued by pcmctl run --requeue)" if partition == "cancel" else ""))
    if timeline:
        m = re.search(rf"^\[(\d\d):(\d\d):(\d\d\.\d+)\] .*job pre-{case} stopped at iteration",
                      pcmd_log, re.M)
        if m:
            day = time.strftime("%Y-%m-%d", time.localtime(events[0][0]))
            at = time.mktime(time.strptime(f"{day} {m.group(1)}:{m.group(2)}:00",
                                           "%Y-%m-%d %H:%M:%S")) + float(m.group(3))
            events.append((at, "last version (SIGTERM)"))
        with open(os.path.join(timeline, "events.csv"), "w") as f:
            f.write("time_s,label\n")
            for at, label in sorted(events):
                f.write(f"{at:.3f},{label}\n")
    return events


def main():
    args = sys.argv[1:]
    timeline = None
    if len(args) == 3 and args[1] == "--timeline":
        timeline = os.path.abspath(args[2])
        os.makedirs(timeline, exist_ok=True)
        for name in ("trace.csv", "events.csv"):
            if os.path.exists(os.path.join(timeline, name)):
                os.unlink(os.path.join(timeline, name))
    elif len(args) != 1:
        print(f"usage: {sys.argv[0]} BUILD [--timeline DIR]", file=sys.stderr)
        return 2
    build = os.path.abspath(args[0])
    family = runnable_family(TEST, families=("mpich",))

    def cluster(tmp):
        c = SlurmCluster(build, tmp, family)
        c.up_args = ["--preempt"]
        return c

    def only_b(c):
        preempted_by_high(c, heat2d_plain(c.build, ARGS), "B", "preempt", "main", timeline)
    return run_on_cluster(TEST, cluster, only_b if timeline else scenario,
                          logs=("warn.out", "preempt.out", "cancel.out", "pcmd.log"))


if __name__ == "__main__":
    sys.exit(main())
