#!/usr/bin/env python3
"""slurm_srun.py BUILD — a malleable job launched by srun (the slurm.srun_restart_reshape test).

testbed/slurm.sh makes a Slurm cluster of two namespace hosts (2 CPUs each). An sbatch job over
both nodes (tests/multihost/slurm_heat2d_job.sh with PCM_RUN_LAUNCHER=srun) runs pcmd as a step
on node 1 (--resources slurm), then heat2d_pcm under `pcmctl run --launcher srun`: every run a
step of the allocation, started by `srun --mpi=pmi2` (MPICH: its simple PMI speaks the PMI-2
plugin's wire protocol) or `srun --mpi=pmix` (Open MPI), and reshaped by restart
(PCM_RESHAPE=restart, which --launcher srun sets: such a world cannot spawn). From outside, as an
operator would: rank 0 splits onto node 2, the two processes there merge and the merged one
migrates to node 1, each `pcmctl wait --reconfigurations N`, each carried out by a version, the step's end and a new
step on the command's nodes (`srun -w ... -m arbitrary`). A job queued meanwhile for one node
waits: once the job has left node 2, pcmd gives it back to Slurm (scontrol update NodeList=) and
the queued job runs there. A growth beyond the allocation is refused, saying why (a step cannot
span a second allocation). The final checksum is the plain run's, bit for bit; then nothing of
the cluster is left.

Exits 77 (SKIPPED) without root, Slurm or munge, or on an MPI other than MPICH and Open MPI.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testbed"))
from cluster import Failure, heat2d_plain  # noqa: E402
from slurm_heat2d import (ENDED, SlurmCluster, poll, run_on_cluster,  # noqa: E402
                          runnable_family)

TEST = "slurm.srun_restart_reshape"


def log(msg):
    print(f"{TEST}: {msg}", flush=True)


def scenario(c):
    n1, n2 = c.names
    job = "srun-heat"
    args = ["--nx", "61", "--ny", "40", "--iters", "6000"]
    plain = heat2d_plain(c.build, args)
    out = os.path.join(c.tmp, "job.out")
    c.env["PCM_JOB"] = job
    c.env["PCM_RUN_LAUNCHER"] = "srun"
    heat = os.path.join(c.build, "examples/heat2d/heat2d_pcm")
    c.submit(out, ["-N2", "--ntasks-per-node=2", "-J", "pcm-srun"],
             [heat, *args, "--throttle-us", "2000"])
    log(f"job {c.job} running, pcmd up")
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    st = c.status(job)
    if st.get("launcher") != "srun" or st.get("reshape") != "restart" or not st.get("supervised"):
        raise Failure(f"the job is not an srun-launched, supervised restart-reshape job: {st}")
    log(f"the first step runs on {st['hosts']}")

    # A job queued for one node: both are the batch job's until node 2 is given back.
    queued = c.run("sbatch", "--parsable", "-N1", "-J", "queued", "-o",
                   os.path.join(c.tmp, "queued.out"), "--wrap", "hostname; sleep 2").stdout
    queued = queued.strip().split(";")[0]
    c.queued = queued

    def queued_state():
        r = c.run("scontrol", "show", "job", queued, "-o", check=False).stdout
        m = re.search(r"\bJobState=(\S+)", r)
        n = re.search(r"\bNodeList=(\S+)", r)
        return (m.group(1) if m else "?"), (n.group(1) if n else "?")

    time.sleep(1)  # Slurm's scheduler looks at it
    if queued_state()[0] != "PENDING":
        raise Failure(f"the queued job is {queued_state()}, expected PENDING")

    # Each command's world as pcmd placed it ("-> N processes on h1,h2,..."), which the new step
    # must have; the last leaves node 2.
    steps = [["split", job, "0", "--into", "2", "--host", n2], ["merge", job, "0", "1"],
             ["migrate", job, "0", "--host", n1]]
    times = []
    for done, cmd in enumerate(steps, start=1):
        t = time.monotonic()
        before = c.status(job)["hosts"]
        said = c.pcmctl(*cmd).stdout
        m = re.search(r"-> \d+ processes on (\S+)", said)
        if cmd[0] == "migrate":  # the rank's host changes, the others stay
            want = [cmd[4] if r == int(cmd[2]) else h for r, h in enumerate(before)]
        elif m:
            want = m.group(1).split(",")
        else:
            raise Failure(f"pcmctl {' '.join(cmd)} printed {said!r}")
        c.pcmctl("wait", job, "--reconfigurations", str(done), "--timeout", "180")
        c.pcmctl("wait", job, "--iteration", "1", "--timeout", "120")
        dt = time.monotonic() - t
        got = c.status(job)["hosts"]
        if got != want:
            raise Failure(f"after {' '.join(cmd)}: hosts {got}, expected {want}")
        times.append(dt)
        log(f"{' '.join(cmd)}: done by a restart reshape in {dt:.2f} s; hosts {got}")
    if got != [n1, n1]:
        raise Failure(f"the job ends its reshapes on {got}, expected {[n1, n1]}")

    # Growth beyond the allocation: refused, saying why.
    r = c.pcmctl("split", job, "0", "--into", "4", check=False)
    if r.returncode == 0 or "cannot span a second allocation" not in r.stderr:
        raise Failure(f"a split beyond the allocation was not refused as it should: "
                      f"{r.returncode} {r.stderr.strip()}")
    log(f"a split beyond the allocation is refused: {r.stderr.strip()}")

    # The node the job left goes back to Slurm (never the batch host, node 1), and the queued job
    # runs there.
    left = n2
    t = time.monotonic()
    poll(f"the queued job running on {left}", 60,
         lambda: queued_state()[0] in ("RUNNING", "COMPLETED") and queued_state()[1] == left,
         every=0.5)
    ev = c.status(job).get("events", [])
    if not any(f"gave node {left} of Slurm job {c.job} back" in e for e in ev):
        raise Failure(f"no event says {left} was given back: {ev[-6:]}")
    log(f"{left} given back; the queued job {queued} ran there {time.monotonic() - t:.2f} s "
        "after the last reshape")

    def ended():
        return "mpiexec exited" in open(out).read() or c.job_state() in ENDED

    poll("pcmctl run's end", 240, ended, every=0.5)
    st = c.status(job)
    if st["state"] != "finished" or st["reconfigurations"] != len(steps):
        raise Failure(f"pcmd showed {st}")
    done_by = [e for e in st.get("events", []) if "done by a restart reshape" in e]
    open(os.path.join(c.tmp, "release"), "w").close()
    poll(f"the end of job {c.job}", 60, lambda: c.job_state() in ENDED, every=0.5)
    text = open(out).read()
    if c.job_state() != "COMPLETED":
        raise Failure(f"job {c.job} ended {c.job_state()}:\n{text[-3000:]}")
    m = re.findall(r"^checksum (\w+)", text, re.M)
    if not m or m[-1] != plain:
        raise Failure(f"checksum {m[-1] if m else None} differs from the plain run's {plain}")
    if not done_by:
        raise Failure("no event says a command was done by a restart reshape")
    log(f"job {c.job} COMPLETED; checksum {plain} as the plain run's; restart reshapes took "
        + ", ".join(f"{t:.2f}" for t in times) + " s")


def main():
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} BUILD", file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    family = runnable_family(TEST)
    return run_on_cluster(TEST, lambda tmp: SlurmCluster(build, tmp, family), scenario,
                          logs=("job.out", "pcmd.log", "queued.out"))


if __name__ == "__main__":
    sys.exit(main())
