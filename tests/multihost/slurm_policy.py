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
   queue;
4. a second job with a time limit of one minute, within the policy's checkpoint margin: pcmd asks
   it for a checkpoint (and grows nothing), it writes one, is cancelled, and a restart from that
   version ends with the plain run's checksum.

Exits 77 (SKIPPED) with the reason without root, Slurm, munge or MPICH's hydra.
"""
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testbed"))
from cluster import Failure, heat2d_plain  # noqa: E402
from slurm_heat2d import ENDED, poll, run_on_cluster, runnable_family  # noqa: E402
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
                          "--policy-measure-s 4 --policy-min-gain 10 --slurm-grow-timeout 20")
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
    open(os.path.join(c.tmp, "release"), "w").close()
    poll(f"the end of job {c.job}", 60, lambda: c.job_state() in ENDED, every=0.5)
    text = open(out).read()
    if c.job_state() != "COMPLETED":
        raise Failure(f"job {c.job} ended {c.job_state()}:\n{text[-3000:]}")
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not m or m.group(1) != plain:
        raise Failure(f"checksum {m.group(1) if m else None} differs from the plain run's {plain}")
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


def time_limit(c):
    """4. A job with a time limit of one minute, inside the policy's checkpoint margin from the
    start: pcmd asks it for a checkpoint (and grows nothing onto the idle node 2); the version is
    written; the job is cancelled as its time limit would end it (SIGTERM: the ranks may write a
    last version still, docs/user/preemption.md, if pcmd's step outlives them), and restarted in a
    new sbatch job from the newest version, with the plain run's checksum."""
    job = "slurm-limit"
    args = ["--nx", "61", "--ny", "40", "--iters", "6000"]
    plain = heat2d_plain(c.build, args)
    c.env["PCM_JOB"] = job
    c.env["PCMD_ARGS"] = ("--policy auto --policy-idle-s 1 --policy-interval-s 2 "
                          "--policy-checkpoint-margin-s 90")
    out = os.path.join(c.tmp, "limit.out")
    submit(c, out, ["--time=1"], [*args, "--throttle-us", "20000"])
    limited = c.job
    c.pcmctl("wait", job, "--iteration", "1", "--timeout", "120")  # registered: pcmd knows it
    t = time.monotonic()
    e = wait_event(c, job, r"checkpoint \d+ written .*\(policy: the allocation's time limit is", 60)
    log(f"{time.monotonic() - t:.1f} s after pcmd was up: {e}")
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
    try:
        submit(c, out2, [], args)
    finally:
        del c.env["PCM_RESTART"]
    poll("the restarted job's end", 240, lambda: c.job_state() in ENDED
         or "mpiexec exited" in open(out2).read(), every=0.5)
    open(os.path.join(c.tmp, "release"), "w").close()
    poll(f"the end of job {c.job}", 60, lambda: c.job_state() in ENDED, every=0.5)
    text = open(out2).read()
    # From the version asked for, or a later one: the stop's at the cancel's SIGTERM.
    r = re.search(r"^heat2d: restarted from iteration (\d+) \(2 -> 2 processes\)$", text, re.M)
    if not r or int(r.group(1)) < saved:
        raise Failure(f"the restart did not resume from version {saved} or a later one:\n"
                      f"{text[-3000:]}")
    if int(r.group(1)) > saved:
        log(f"the cancel's SIGTERM made a last version, {r.group(1)}: the restart resumed there")
    saved = int(r.group(1))
    m = re.search(r"^checksum (\w+)", text, re.M)
    if c.job_state() != "COMPLETED" or not m or m.group(1) != plain:
        raise Failure(f"the restarted job ended {c.job_state()}, checksum "
                      f"{m.group(1) if m else None} (plain {plain}):\n{text[-3000:]}")
    log(f"restarted from version {saved} in job {c.job}: checksum {plain} as the plain run's")


def main():
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} BUILD", file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    family = runnable_family("slurm.policy", ("mpich",))

    def both(c):
        scenario(c)
        time_limit(c)

    def events(c):
        try:
            print("events:\n  " + "\n  ".join(c.status("slurm-policy").get("events", [])),
                  file=sys.stderr)
        except Exception:  # noqa: BLE001 — pcmd may be gone
            pass

    return run_on_cluster("slurm.policy", lambda tmp: Cluster(build, tmp, family), both,
                          on_failure=events)


if __name__ == "__main__":
    sys.exit(main())
