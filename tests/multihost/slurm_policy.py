#!/usr/bin/env python3
"""slurm_policy.py BUILD — pcmd's policy reads Slurm's queue (the slurm.policy test).

testbed/slurm.sh makes a Slurm cluster of two namespace hosts (2 CPUs each). An sbatch job on
node 1 only runs pcmd as a step (--resources slurm --policy auto, short intervals, a growth must
bring a 1000 % gain to be kept) and heat2d_pcm on 2 processes (throttled: more processes do not
make it faster). Then:

1. node 2 is idle for --policy-idle-s: the policy grows the job onto it, by its 2 CPUs, through a
   second allocation; the growth brings no gain, so the policy undoes it and pcmd gives the
   allocation back (scancel);
2. an operator's split gets a second allocation on node 2 (one CPU of it); a job that needs both
   CPUs of node 2 waits in the queue; the policy sees it and shrinks the job off node 2 (a resize
   that respawns the world on node 1); pcmd gives node 2 back and the waiting job starts and
   completes;
3. heat2d ends with the plain run's checksum, bit for bit, and nothing of pcmd's is left in the
   queue.
The policy and the time limit: slurm_time_limit.py (slurm.time_limit).

Exits 77 (SKIPPED) with the reason without root, Slurm, munge or MPICH's hydra.
"""
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testbed"))
from cluster import Failure, heat2d_plain  # noqa: E402
from slurm_heat2d import ENDED, poll, released_bit_for_bit, run_on_cluster, runnable_family  # noqa: E402,E501
from slurm_grow import Cluster  # noqa: E402


def log(msg):
    print(f"slurm.policy: {msg}", flush=True)


def wait_event(c, job, pattern, seconds, start=0):
    """The first event from index start on matching pattern (regex), within seconds."""
    def found():
        ev = c.status(job).get("events", [])
        return next((e for e in ev if re.search(pattern, e)), None)
    return poll(f"an event matching {pattern!r}", seconds, found, every=0.5)


def submit(c, out, sbatch_args, heat_args):
    """sbatch of heat2d_pcm on 2 processes of node 1 with pcmd as a step (JOB_SCRIPT, the
    environment's PCM_JOB, PCMD_ARGS and PCM_RESTART); returns once pcmd is up."""
    heat = os.path.join(c.build, "examples/heat2d/heat2d_pcm")
    c.submit(out, ["-N1", "-w", c.names[0], "--ntasks-per-node=2", "-J", "pcm-policy-test",
                   *sbatch_args], [heat, *heat_args])


def scenario(c):
    n1, n2 = c.names
    job = "slurm-policy"
    args = ["--nx", "61", "--ny", "40", "--iters", "12000"]
    plain = heat2d_plain(c.build, args)
    out = os.path.join(c.tmp, "job.out")
    c.env["PCM_JOB"] = job
    c.env["PCMD_ARGS"] = ("--policy auto --policy-idle-s 3 --policy-interval-s 2 "
                          "--policy-measure-s 4 --policy-min-gain 10 --policy-min-efficiency 1 "
                          "--slurm-grow-timeout 20")
    submit(c, out, [], [*args, "--throttle-us", "2000"])
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    t0 = time.monotonic()

    # 1. Node 2 idle: grown onto through Slurm, no gain, undone, given back.
    e = wait_event(c, job, rf"policy: .*Slurm node {n2} has been idle", 60)
    log(f"{time.monotonic() - t0:.1f} s: {e}")
    e = wait_event(c, job, r"Slurm granted job (\d+)", 60)
    extra = re.search(r"Slurm granted job (\d+)", e).group(1)
    log(f"{time.monotonic() - t0:.1f} s: {e}")
    e = wait_event(c, job, r"policy: .*undo the growth", 60)
    log(f"{time.monotonic() - t0:.1f} s: {e}")
    e = wait_event(c, job, rf"gave Slurm job {extra} back", 60)
    log(f"{time.monotonic() - t0:.1f} s: {e}")
    poll(f"Slurm job {extra}'s end", 30, lambda: c.state_of(extra) in ENDED, every=0.5)
    st = c.status(job)
    if st["size"] != 2 or st["hosts"] != [n1, n1]:
        raise Failure(f"after the undone growth the job runs on {st['hosts']}")

    # 2. An operator's split onto node 2; a job waiting for node 2; the policy gives it back.
    done = st["reconfigurations"]
    c.pcmctl("split", job, "0", "--into", "2")
    c.pcmctl("wait", job, "--reconfigurations", str(done + 1), "--timeout", "120")
    st = c.status(job)
    grow = c.grow_jobs()
    if len(grow) != 1 or sorted(st["hosts"]) != sorted([n1, n1, n2]):
        raise Failure(f"after the split: hosts {st['hosts']}, pcmd's allocations {grow}")
    extra = grow[0][0]
    r = c.run("sbatch", "--parsable", "-N1", "-n", "2", "-J", "pcm-waiter", "-o", "/dev/null",
              "--wrap", "true")
    waiter = r.stdout.strip().split(";")[0]
    c.others.append(waiter)
    t = time.monotonic()
    e = wait_event(c, job, rf"policy: .*Slurm job {waiter} waits", 60)
    log(f"job {waiter} waits; {time.monotonic() - t:.1f} s later: {e}")
    poll(f"the waiting job {waiter}'s start", 90,
         lambda: c.state_of(waiter) in ("RUNNING", "COMPLETED"), every=0.5)
    started = time.monotonic() - t
    poll(f"the waiting job {waiter}'s end", 60, lambda: c.state_of(waiter) in ENDED, every=0.5)
    if c.state_of(waiter) != "COMPLETED":
        raise Failure(f"the waiting job ended {c.state_of(waiter)}")
    ev = c.status(job).get("events", [])
    if not any(f"gave Slurm job {extra} back" in x for x in ev):
        raise Failure(f"no event says Slurm job {extra} was given back: {ev[-5:]}")
    if n2 in c.status(job)["hosts"]:
        raise Failure(f"the job still runs on {n2}: {c.status(job)['hosts']}")
    log(f"the waiting job {waiter} started {started:.1f} s after it was queued (the policy's "
        f"shrink gave {n2} back) and completed")

    # 3. The end, bit for bit.
    poll("mpiexec's end", 240, lambda: "mpiexec exited" in open(out).read()
         or c.job_state() in ENDED, every=0.5)
    st = c.status(job)
    if st["state"] != "finished":
        raise Failure(f"pcmd showed {st}")
    poll("pcmd's allocations gone", 30, lambda: not c.grow_jobs(), every=0.5)
    released_bit_for_bit(c, out, plain)
    log(f"job {c.job} COMPLETED after {st['reconfigurations']} reconfigurations; checksum "
        f"{plain} as the plain run's")


def job_processes(job):
    """The pids of this machine's processes of PCM job `job` (its environment's PCM_JOB): the
    namespace hosts share the machine's process table."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"PCM_JOB={job}".encode() in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            pass
    return found


def main():
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} BUILD", file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    family = runnable_family("slurm.policy", ("mpich",))

    def events(c):
        try:
            print("events:\n  " + "\n  ".join(c.status("slurm-policy").get("events", [])),
                  file=sys.stderr)
        except Exception:  # noqa: BLE001 — pcmd may be gone
            pass

    return run_on_cluster("slurm.policy", lambda tmp: Cluster(build, tmp, family), scenario,
                          on_failure=events)


if __name__ == "__main__":
    sys.exit(main())
