#!/usr/bin/env python3
"""revived.py BUILD [--rounds N] — jobs started onto a host that has just come back (issue 38
item 5).

Once, right after a host came back, MPI_PCM_Init failed with "MPI_Bcast failed: Invalid root
(value given was -540086711)" on one rank and MPI_Comm_dup failures on the others: the ranks
disagreed inside the agreement of MPI_PCM_Init. This is the reproducer. On three namespace
hosts (testbed/hosts.sh), N times:

  1. a job (heat2d_pcm under mpiexec from host 1) runs on the three hosts;
  2. host 3 is powered off (its processes stopped, its link cut, then killed: no FIN or RST
     reaches anyone) and the job's launcher is ended (its process group);
  3. host 3 comes back (link up, answering on port 9 from host 1);
  4. at once, a new job starts on the three hosts: every rank must get through MPI_PCM_Init and
     PCM_Init, and the job must finish with the plain run's checksum.

A failed start prints its output (the ranks' messages name a disagreement as such: libpcm's
agree() checks what the reduction returned). Prints each start's time and a summary. Exits 77
(ctest SKIPPED) without root, or on Open MPI (hydra's -hosts here).
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testbed"))
import cluster as mh  # noqa: E402
from cluster import Failure, log, revive_host  # noqa: E402

ARGS = ["--nx", "61", "--ny", "40"]


def one_round(c, k, plain):
    h1, h2, h3 = c.names
    heat = os.path.join(c.build, "examples/heat2d/heat2d_pcm")
    before = os.path.join(c.tmp, f"before{k}.out")
    # The job that loses host 3: long enough to be running when the host goes.
    a = c.mpiexec([h1, h2, h3], 3, [heat, *ARGS, "--iters", "1000000", "--throttle-us", "1000"],
                  before, env={"PCM_JOB": f"before{k}"})
    c.pcmctl("wait", f"before{k}", "--iteration", "5", "--timeout", "120")
    mh.kill_host(h3, power_off=True)
    mh.end_job(a, signal.SIGKILL)
    revive_host(c, h3)
    out = os.path.join(c.tmp, "job.out")  # run_on_cluster shows it on a failure
    t0 = time.monotonic()
    b = c.mpiexec([h1, h2, h3], 3, [heat, *ARGS, "--iters", "200"], out,
                  env={"PCM_JOB": f"after{k}"})
    try:
        rc = b.wait(timeout=120)
    except subprocess.TimeoutExpired:
        mh.end_job(b, signal.SIGKILL)
        raise Failure(f"round {k}: the job started onto the revived {h3} did not end within "
                      f"120 s:\n{open(out).read()[-3000:]}")
    took = time.monotonic() - t0
    text = open(out).read()
    if rc != 0:
        raise Failure(f"round {k}: the job started onto the revived {h3} exited {rc}:\n"
                      f"{text[-3000:]}")
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not m or m.group(1) != plain:
        raise Failure(f"round {k}: checksum {m.group(1) if m else None}, plain {plain}")
    if c.status(f"after{k}")["hosts"] != [h1, h2, h3]:
        raise Failure(f"round {k}: the job ran on {c.status(f'after{k}')['hosts']}")
    return took


def scenario(c, rounds):
    h1, h2, h3 = c.names
    c.start_pcmd("--hosts", f"{h1}:1", f"{h2}:1", f"{h3}:1")
    plain = mh.heat2d_plain(c.build, [*ARGS, "--iters", "200"])
    times = []
    for k in range(rounds):
        times.append(one_round(c, k, plain))
        if k < 3 or (k + 1) % 10 == 0:
            log(f"round {k + 1}: the job started onto the revived {h3} finished in "
                f"{times[-1]:.2f} s, checksum as plain")
    times.sort()
    log(f"ok: revived: {rounds} jobs started onto a host just powered back on, every init "
        f"agreed and every job finished as plain (start to end: median {times[len(times) // 2]:.2f}"
        f" s, at most {times[-1]:.2f} s)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=10)
    a = ap.parse_args()
    if mh.mpi_family() == "openmpi":
        print("SKIPPED: revived.py runs hydra's -hosts (MPICH)")
        return 77
    return mh.run_on_cluster(os.path.abspath(a.build), 3, lambda c: scenario(c, a.rounds),
                             "revived")


if __name__ == "__main__":
    sys.exit(main())
