#!/usr/bin/env python3
"""slurm_slow.py BUILD — pcmd's loop never waits for Slurm (the slurm.slow_commands test; issue
38 item 4).

testbed/slurm.sh makes a Slurm cluster of two namespace hosts (2 CPUs each). pcmd runs as a step
of an sbatch job on node 1 with a Slurm that answers slowly: its PATH starts with wrappers of
scontrol, squeue, sinfo, sbatch and scancel that sleep 3 s before each command (only pcmd's PATH:
PCMD_PATH_PREFIX of the job script). heat2d_pcm runs on 2 processes there. A split that does not
fit gets a second allocation on node 2 (sbatch, its state, its hosts read), a merge leaves node 2,
and pcmd gives the allocation back (the steps there, then scancel): every one of those commands
takes 3 s, and pcmd's loop waits for none of them. Throughout, `pcmctl status` is timed every
0.1 s: the slowest answer is printed, and must be well under the 3 s a waiting loop would take
(the figure depends on the machine's load: the benchmark's job, not this test's); pcmd's log must
not say that Slurm's commands held its loop. heat2d ends with the plain run's checksum.

Exits 77 (SKIPPED) with the reason without root, Slurm, munge or MPICH's hydra.
"""
import os
import re
import shutil
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testbed"))
from cluster import Failure, heat2d_plain  # noqa: E402
from slurm_heat2d import ENDED, poll, released_bit_for_bit, run_on_cluster, runnable_family  # noqa: E402,E501
from slurm_grow import Cluster  # noqa: E402

TEST = "slurm.slow_commands"
DELAY_S = 3
COMMANDS = ("scontrol", "squeue", "sinfo", "sbatch", "scancel")


def log(msg):
    print(f"{TEST}: {msg}", flush=True)


def slow_slurm(tmp):
    """A directory of wrappers that sleep DELAY_S, then run the real command."""
    d = os.path.join(tmp, "slow-slurm")
    os.makedirs(d)
    for name in COMMANDS:
        real = shutil.which(name)
        if not real:
            raise Failure(f"{name} is not on PATH")
        with open(os.path.join(d, name), "w") as f:
            f.write(f"#!/bin/sh\nsleep {DELAY_S}\nexec {real} \"$@\"\n")
        os.chmod(os.path.join(d, name), 0o755)
    return d


class Timer(threading.Thread):
    """pcmctl status, timed, every 0.1 s until stopped."""

    def __init__(self, c, job):
        super().__init__(daemon=True)
        self.c, self.job = c, job
        self.times, self.failures = [], []
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            t = time.monotonic()
            r = self.c.pcmctl("status", self.job, "--json", check=False, timeout=60)
            self.times.append(time.monotonic() - t)
            if r.returncode != 0:
                self.failures.append(r.stderr.strip())
            time.sleep(0.1)


def scenario(c):
    n1, n2 = c.names
    job = "slurm-slow"
    args = ["--nx", "61", "--ny", "40", "--iters", "12000"]
    plain = heat2d_plain(c.build, args)
    out = os.path.join(c.tmp, "job.out")
    c.env["PCM_JOB"] = job
    c.env["PCMD_PATH_PREFIX"] = slow_slurm(c.tmp)
    c.env["PCMD_ARGS"] = "--slurm-grow-timeout 60"
    heat = os.path.join(c.build, "examples/heat2d/heat2d_pcm")
    c.submit(out, ["-N1", "-w", n1, "--ntasks-per-node=2", "-J", "pcm-slow-test"],
             [heat, *args, "--throttle-us", "2000"])
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    timer = Timer(c, job)
    timer.start()
    t0 = time.monotonic()
    try:
        c.pcmctl("split", job, "0", "--into", "2")
        c.pcmctl("wait", job, "--reconfigurations", "1", "--timeout", "120")
        grown = time.monotonic() - t0
        hosts = c.status(job)["hosts"]
        if sorted(hosts) != sorted([n1, n1, n2]):
            raise Failure(f"after the split the job runs on {hosts}")
        extra = c.grow_jobs()
        if len(extra) != 1:
            raise Failure(f"pcmd's second allocations: {extra}, want one")
        # The merged process takes the lower rank's host: the rank on node 2 with one on node 1.
        on2 = hosts.index(n2)
        other = next(i for i, h in enumerate(hosts) if h == n1)
        c.pcmctl("merge", job, *map(str, sorted([other, on2])))
        c.pcmctl("wait", job, "--reconfigurations", "2", "--timeout", "120")
        if c.status(job)["hosts"] != [n1, n1]:
            raise Failure(f"after the merge the job runs on {c.status(job)['hosts']}")
        t1 = time.monotonic()
        poll(f"Slurm job {extra[0][0]} given back", 60,
             lambda: any(f"gave Slurm job {extra[0][0]} back" in e
                         for e in c.status(job).get("events", [])), every=0.5)
        back = time.monotonic() - t1
    finally:
        timer.done.set()
        timer.join(timeout=70)
    if timer.failures:
        raise Failure(f"pcmctl status failed while Slurm was slow: {timer.failures[:3]}")
    worst, median = max(timer.times), statistics.median(timer.times)
    log(f"split grown onto a second allocation in {grown:.1f} s, the allocation given back "
        f"{back:.1f} s after the merge (each Slurm command {DELAY_S} s); meanwhile "
        f"{len(timer.times)} pcmctl status: median {median * 1000:.0f} ms, slowest "
        f"{worst * 1000:.0f} ms")
    if worst >= DELAY_S * 0.5:
        raise Failure(f"a pcmctl status took {worst:.2f} s: pcmd's loop waited for Slurm")
    held = re.findall(r"Slurm's commands held pcmd's loop for [0-9.]+ s",
                      open(os.path.join(c.tmp, "pcmd.log")).read())
    if held:
        raise Failure(f"pcmd's log: {held[:3]}")

    poll("mpiexec's end", 240, lambda: "mpiexec exited" in open(out).read()
         or c.job_state() in ENDED, every=0.5)
    released_bit_for_bit(c, out, plain)
    log(f"job {c.job} COMPLETED; checksum {plain} as the plain run's")


def main():
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} BUILD", file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    family = runnable_family(TEST, ("mpich",))
    return run_on_cluster(TEST, lambda tmp: Cluster(build, tmp, family), scenario)


if __name__ == "__main__":
    sys.exit(main())
