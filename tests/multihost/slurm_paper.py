#!/usr/bin/env python3
"""slurm_paper.py BUILD MODE — nothing PCM takes from Slurm outlives its use, for a job on the
paper's calls (the slurm.paper_merge_gives_back, slurm.no_leak_after_stop and
slurm.no_leak_after_kill9 tests).

testbed/slurm.sh makes a Slurm cluster of two namespace hosts (2 CPUs each). An sbatch job on
node 1 only (tests/multihost/slurm_heat2d_job.sh) runs pcmd as a step (--resources slurm) and
mpi_reshape (PCM_Status, PCM_Split, PCM_Merge: the paper's calls, no PCM_Adapt) on 2 processes,
until the test creates its stop file (RESHAPE_STOP_FILE). A split of rank 0 into 2 needs a third
slot: pcmd gets a second allocation (pcm-grow.J) on node 2. Then, by MODE:

  merge  the process on node 2 is merged away (pcmd asks for a respawn, PCM_Merge carries it
         out: the old world, node 2's process with it, leaves the job): the second allocation
         is gone from squeue within 10 s of `pcmctl merge`; the job ends, its data right;
  stop   the application ends while the job still holds node 2, the batch script stops pcmd
         (SIGTERM) and returns: no pcm-grow job in squeue within 10 s of the batch job's end;
  kill9  pcmd is killed (-9) while the job still holds node 2, then the application ends and
         the batch script returns: no pcm-grow job within 10 s of the batch job's end (only the
         second allocation's own batch script, which watches the job, can end it).

Then scancel of whatever is left, slurm.sh down, nothing of the cluster left. Exits 77
(SKIPPED) without root, Slurm or munge, or on an MPI other than MPICH's hydra and Open MPI's
mpirun. Waits are polls with deadlines.
"""
import os
import re
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "testbed"))
from cluster import Failure  # noqa: E402
from slurm_heat2d import ENDED, poll, run_on_cluster, runnable_family  # noqa: E402
from slurm_grow import Cluster  # noqa: E402

MODES = ("merge", "stop", "kill9")
BOUND = 10  # seconds: an allocation no job uses any more is gone from squeue by then


def log(msg):
    print(f"slurm.paper: {msg}", flush=True)


def start(c, job):
    n1 = c.names[0]
    out = os.path.join(c.tmp, "job.out")
    c.env["PCM_JOB"] = job
    c.env["RESHAPE_STOP_FILE"] = os.path.join(c.tmp, "stop")
    prog = os.path.join(c.build, "tests", "mpi_reshape")
    c.submit(out, ["-N1", "-w", n1, "--ntasks-per-node=2", "-J", "pcm-paper"],
             [prog, "4000", "8", "block", "100000000", "2000"])
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    return out


def grow(c, job):
    """split of rank 0 into 2: a second allocation on node 2; its Slurm job id."""
    n1, n2 = c.names
    t = time.monotonic()
    c.pcmctl("split", job, "0", "--into", "2")
    c.pcmctl("wait", job, "--reconfigurations", "1", "--timeout", "120")
    st = c.status(job)
    g = c.grow_jobs()
    if len(g) != 1 or g[0][1] != "RUNNING" or g[0][2] != n2:
        raise Failure(f"pcmd's second allocation in the queue: {g}, want one RUNNING on {n2}")
    if sorted(st["hosts"]) != sorted([n1, n1, n2]):
        raise Failure(f"after the split the job runs on {st['hosts']}")
    granted = [e for e in st.get("events", []) if "Slurm granted job" in e]
    log(f"split through Slurm job {g[0][0]} on {n2}: done {time.monotonic() - t:.2f} s after "
        f"the command; hosts {st['hosts']}; {granted[-1] if granted else 'no grant event'}")
    return g[0][0], st


def finish_job(c, out, release):
    """The application stops (its stop file); the batch script stops pcmd and returns (at once
    with release, else once the test releases it). Returns when the batch job has ended (time)."""
    if release:
        open(os.path.join(c.tmp, "release"), "w").close()
    open(os.path.join(c.tmp, "stop"), "w").close()
    poll("mpiexec's end", 120, lambda: "mpiexec exited" in open(out).read()
         or c.job_state() in ENDED, every=0.2)
    if not release:
        open(os.path.join(c.tmp, "release"), "w").close()
    poll(f"the end of job {c.job}", 90, lambda: c.job_state() in ENDED, every=0.1)
    ended = time.monotonic()
    text = open(out).read()
    if c.job_state() != "COMPLETED" or not re.search(r"^reshape: ok: ", text, re.M):
        raise Failure(f"job {c.job} ended {c.job_state()}:\n{text[-3000:]}")
    return ended


def gone_within(c, what, since):
    poll(what, BOUND + 20, lambda: not c.grow_jobs(), every=0.1)
    took = time.monotonic() - since
    if took > BOUND:
        raise Failure(f"{what}: after {took:.2f} s, over {BOUND} s")
    return took


def scenario(c, mode):
    n1, n2 = c.names
    job = f"paper-{mode}"
    out = start(c, job)
    extra, st = grow(c, job)
    if mode == "merge":
        on2 = st["hosts"].index(n2)
        other = next(i for i, h in enumerate(st["hosts"]) if h == n1)
        t = time.monotonic()
        c.pcmctl("merge", job, *map(str, sorted([other, on2])))
        c.pcmctl("wait", job, "--reconfigurations", "2", "--timeout", "120")
        if c.status(job)["hosts"] != [n1, n1]:
            raise Failure(f"after the merge the job runs on {c.status(job)['hosts']}")
        took = gone_within(c, f"Slurm job {extra}'s end after the merge", t)
        log(f"merge off {n2} (PCM_Merge, respawned): Slurm job {extra} gone from squeue "
            f"{took:.2f} s after pcmctl merge")
        # pcmd takes scancel's answer in the background: the event may follow squeue by a moment.
        try:
            poll(f"the event that Slurm job {extra} was given back", 10,
                 lambda: any(f"gave Slurm job {extra} back" in e
                             for e in c.status(job).get("events", [])), every=0.2)
        except Failure:
            raise Failure(f"no event says Slurm job {extra} was given back: "
                          f"{c.status(job).get('events', [])[-4:]}")
        finish_job(c, out, release=False)
        if c.grow_jobs():
            raise Failure(f"pcmd's allocations left at the end: {c.grow_jobs()}")
        log(f"job {c.job} COMPLETED, every element right")
        return
    if mode == "kill9":
        os.kill(c.pcmd_pid, signal.SIGKILL)
        log(f"pcmd (pid {c.pcmd_pid}) killed with -9 while the job holds {n2}")
    ended = finish_job(c, out, release=True)
    took = gone_within(c, f"Slurm job {extra}'s end after job {c.job}'s", ended)
    said = open(os.path.join(c.tmp, "pcmd.log")).read()
    how = ("pcmd gave it back at its stop" if f"pcmd stops: Slurm job {extra}" in said
           else "pcmd gave it back" if f"gave Slurm job {extra} back" in said
           else "its batch script ended it")
    log(f"{'kill -9' if mode == 'kill9' else 'SIGTERM'} of pcmd: Slurm job {extra} gone from "
        f"squeue {took:.2f} s after the batch job {c.job} ended ({how})")
    if mode == "stop":
        last = [x for x in said.splitlines() if x.strip()][-3:]
        log("pcmd's log ends: " + " | ".join(last))


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in MODES:
        print(f"usage: {sys.argv[0]} BUILD {'|'.join(MODES)}", file=sys.stderr)
        return 2
    build, mode = os.path.abspath(sys.argv[1]), sys.argv[2]
    family = runnable_family("slurm.paper")
    return run_on_cluster(f"slurm.paper ({mode})", lambda tmp: Cluster(build, tmp, family),
                          lambda c: scenario(c, mode))


if __name__ == "__main__":
    sys.exit(main())
