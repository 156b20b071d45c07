#!/usr/bin/env python3
"""slurm_time_limit.py BUILD — pcmd follows its allocation's time limit as an operator moves it
and asks for the last version at the margin measured from the job's own versions (the
slurm.time_limit test; issue 37; docs/user/preemption.md#the-time-limit).

testbed/slurm.sh makes a Slurm cluster of two namespace hosts. An sbatch job with a time limit of
10 minutes on node 1 runs pcmd as a step (--resources slurm --policy auto, the checkpoint margin
left to its default: 30 s + 4 x the longest last version, measured) and heat2d_pcm on 2 processes,
which writes a version of its own every 50 iterations. Once pcmd has measured a version and the
policy has looked at the job for a while (no version asked: 10 minutes are far), an operator
shortens the job to 1 minute (`scontrol update JobId=J TimeLimit=1`). pcmd reads the new EndTime
(its log says so) and asks the job for a version once the end is within the measured margin,
before the new end, and grows nothing onto the idle node 2. The job is then cancelled as its
time limit would end it (SIGTERM: the ranks may write a later version still) and restarted in a
new sbatch job from the newest version, with the plain run's checksum, bit for bit.

Exits 77 (SKIPPED) with the reason without root, Slurm, munge or MPICH's hydra.
"""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testbed"))
from cluster import Failure, heat2d_plain  # noqa: E402
from slurm_heat2d import ENDED, poll, released_bit_for_bit, run_on_cluster, runnable_family  # noqa: E402,E501
from slurm_grow import Cluster  # noqa: E402
from slurm_policy import job_processes, submit, wait_event  # noqa: E402

TEST = "slurm.time_limit"


def log(msg):
    print(f"{TEST}: {msg}", flush=True)


def end_time(c):
    r = c.run("scontrol", "show", "job", c.job, "-o").stdout
    m = re.search(r"\bEndTime=(\S+)", r)
    return time.mktime(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) if m else None


def scenario(c):
    job = "slurm-limit"
    args = ["--nx", "61", "--ny", "40", "--iters", "6000", "--commit-every", "50"]
    plain = heat2d_plain(c.build, args)
    c.env["PCM_JOB"] = job
    # Node 2 idle for 1 s is grown onto, unless the time limit is near.
    c.env["PCMD_ARGS"] = "--policy auto --policy-idle-s 1000 --policy-interval-s 2"
    out = os.path.join(c.tmp, "limit.out")
    submit(c, out, ["--time=10"], [*args, "--throttle-us", "20000"])
    limited = c.job
    c.pcmctl("wait", job, "--iteration", "120", "--timeout", "120")  # two versions measured
    before = c.status(job).get("events", [])
    if any("time limit" in e for e in before):
        raise Failure(f"a version was asked for 10 minutes before the end: {before}")
    t = time.monotonic()
    c.run("scontrol", "update", f"JobId={limited}", "TimeLimit=1")
    end = end_time(c)
    log(f"job {limited} shortened to 1 minute: {end - time.time():.0f} s left")
    e = wait_event(c, job, r"checkpoint \d+ written .*\(policy: the allocation's time limit is", 90)
    asked = time.monotonic() - t
    left = end - time.time()
    log(f"{asked:.1f} s after the update, {left:.0f} s before the new end: {e}")
    m = re.search(r"time limit is (\d+) s away \(margin (\d+) s: ([^)]*)\)", e)
    if not m or "x" not in m.group(3) or int(m.group(2)) > 60:
        raise Failure(f"the margin is not the measured one (30 s + 4 x the last version): {e}")
    if left <= 0 or c.job_state() != "RUNNING":
        raise Failure(f"the version came {-left:.0f} s after the new end ({c.job_state()})")
    if "the allocation's time limit moved" not in open(os.path.join(c.tmp, "pcmd.log")).read():
        raise Failure("pcmd's log does not say the time limit moved")
    st = c.status(job)
    if any(re.search(r"policy: (resize|split|migrate)", x) for x in st.get("events", [])):
        raise Failure(f"the policy reshaped a job whose time limit is near: {st['events']}")
    versions = json.loads(c.pcmctl("checkpoints", job, "--json").stdout)
    if not versions or not all(v.get("valid") for v in versions):
        raise Failure(f"versions after the request: {versions}")
    saved = max(v["iteration"] for v in versions)
    # The time limit would end it within the minute; the test does not wait for it.
    c.run("scancel", limited)
    poll(f"the end of job {limited}", 60, lambda: c.job_state() in ENDED, every=0.5)
    # Its ranks outlive the Slurm job's state for up to KillWait: the SIGTERM makes them write a
    # last version (docs/user/preemption.md), through the next pcmd if theirs is gone. A restart
    # before they have ended would find the name in use.
    poll(f"the end of job {limited}'s processes", 60, lambda: not job_processes(job), every=0.5)
    log(f"job {limited} wrote version {saved} when asked and was cancelled ({c.job_state()})")
    c.env["PCM_RESTART"] = "1"
    c.env["PCMD_ARGS"] = ""
    out2 = os.path.join(c.tmp, "restart.out")
    submit(c, out2, [], args)
    poll("the restarted job's end", 240, lambda: c.job_state() in ENDED
         or "mpiexec exited" in open(out2).read(), every=0.5)
    text = released_bit_for_bit(c, out2, plain)
    # From the version asked for, or a later one: the stop's at the cancel's SIGTERM.
    r = re.search(r"^heat2d: restarted from iteration (\d+) \(2 -> 2 processes\)$", text, re.M)
    if not r or int(r.group(1)) < saved:
        raise Failure(f"the restart did not resume from version {saved} or a later one:\n"
                      f"{text[-3000:]}")
    log(f"restarted from version {r.group(1)} in job {c.job}: checksum {plain} as the plain "
        "run's")


def main():
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} BUILD", file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    family = runnable_family(TEST, ("mpich",))
    return run_on_cluster(TEST, lambda tmp: Cluster(build, tmp, family), scenario,
                          logs=("limit.out", "restart.out"))


if __name__ == "__main__":
    sys.exit(main())
