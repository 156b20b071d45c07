#!/usr/bin/env python3
"""slurm_preempt_drain.py BUILD — Slurm takes one node of a running PCM job away, and the job
shrinks off it instead of being lost (the slurm.preempt_drain test; issue 37's partial
preemption; docs/user/preemption.md).

testbed/slurm.sh makes a Slurm cluster of two namespace hosts (2 CPUs each). An sbatch job over
both nodes runs pcmd as a step (--resources slurm) and heat2d_pcm, started on 2 processes of
node 1; an operator's migration and split put two of its three processes on node 2. Then an
operator marks node 2 to drain (`scontrol update NodeName=N2 State=DRAIN`, as before a
maintenance or a `scontrol reboot ASAP`): pcmd reads the drain (sinfo, every few seconds), moves
the job off node 2 as `pcmctl host drain` does (a migration into the free slot of node 1, then a
merge), gives node 2 back to Slurm (`scontrol update JobId=J NodeList=N1`) so that its drain
completes (DRAINED), and the job finishes on node 1 with the plain run's checksum, bit for bit.
Prints how long each part took after the drain was asked for.

Exits 77 (SKIPPED) without root, Slurm or munge, or on an MPI other than MPICH's hydra.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testbed"))
from cluster import Failure, heat2d_plain  # noqa: E402
from slurm_heat2d import (ENDED, SlurmCluster, poll, released_bit_for_bit,  # noqa: E402
                          run_on_cluster, runnable_family)

TEST = "slurm.preempt_drain"


def log(msg):
    print(f"{TEST}: {msg}", flush=True)


def scenario(c):
    n1, n2 = c.names
    job = "slurm-drain"
    args = ["--nx", "61", "--ny", "40", "--iters", "15000"]
    plain = heat2d_plain(c.build, args)
    out = os.path.join(c.tmp, "job.out")
    c.env["PCM_JOB"] = job
    heat = os.path.join(c.build, "examples/heat2d/heat2d_pcm")
    c.submit(out, ["-N2", "--ntasks-per-node=2", "-J", "pcm-drain"],
             [heat, *args, "--throttle-us", "2000"])
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    for done, cmd in enumerate([["migrate", job, "1", "--host", n2],
                                ["split", job, "1", "--into", "2", "--host", n2]], start=1):
        c.pcmctl(*cmd)
        c.pcmctl("wait", job, "--reconfigurations", str(done), "--timeout", "180")
    hosts = c.status(job)["hosts"]
    if sorted(hosts) != sorted([n1, n2, n2]):
        raise Failure(f"before the drain the job runs on {hosts}, expected one process on {n1} "
                      f"and two on {n2}")
    log(f"job {c.job} runs on {hosts}")

    t0 = time.monotonic()
    c.run("scontrol", "update", f"NodeName={n2}", "State=DRAIN", "Reason=pcm test maintenance")

    def events():
        return c.status(job).get("events", [])

    poll(f"pcmd's event that Slurm takes {n2} away", 30,
         lambda: any(f"Slurm takes node {n2} away: draining (pcm test maintenance)" in e
                     for e in events()), every=0.5)
    seen = time.monotonic() - t0
    poll(f"the job off {n2}", 120, lambda: n2 not in c.status(job)["hosts"], every=0.5)
    off = time.monotonic() - t0
    hosts = c.status(job)["hosts"]
    if hosts != [n1, n1]:
        raise Failure(f"after the drain the job runs on {hosts}, expected {[n1, n1]}")

    def node_state():
        r = c.run("sinfo", "-h", "-N", "-n", n2, "-o", "%T", check=False).stdout.split()
        return r[0] if r else "?"

    def given_back():
        m = re.search(r"\bNodeList=(\S+)", c.run("scontrol", "show", "job", c.job, "-o").stdout)
        return m and m.group(1) == n1 and node_state() == "drained"

    poll(f"{n2} given back to Slurm and drained", 60, given_back, every=0.5)
    drained = time.monotonic() - t0
    ev = events()
    for want in (f"drain of {n2}:", f"gave node {n2} of Slurm job {c.job} back"):
        if not any(want in e for e in ev):
            raise Failure(f"no event says {want!r}: {ev[-8:]}")
    if c.job_state() != "RUNNING":
        raise Failure(f"Slurm job {c.job} is {c.job_state()} after the drain, not RUNNING")
    log(f"drain of {n2} asked for; pcmd saw it after {seen:.1f} s, the job was off it after "
        f"{off:.1f} s ({' then '.join(e.split(': ', 1)[-1] for e in ev if 'drain of' in e)}), "
        f"the node given back and DRAINED after {drained:.1f} s; job {c.job} still RUNNING")

    poll("mpiexec's end", 240, lambda: "mpiexec exited" in open(out).read()
         or c.job_state() in ENDED, every=0.5)
    st = c.status(job)
    if st["state"] != "finished":
        raise Failure(f"pcmd showed {st}")
    released_bit_for_bit(c, out, plain)
    log(f"job {c.job} COMPLETED on {n1} after {st['reconfigurations']} reconfigurations; "
        f"checksum {plain} as the plain run's")


def main():
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} BUILD", file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    family = runnable_family(TEST, families=("mpich",))
    return run_on_cluster(TEST, lambda tmp: SlurmCluster(build, tmp, family), scenario)


if __name__ == "__main__":
    sys.exit(main())
