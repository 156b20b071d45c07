#!/usr/bin/env python3
"""slurm_grow.py BUILD [--show] — a PCM job grows through a second Slurm allocation and gives it back (the
slurm.grow test).

testbed/slurm.sh makes a Slurm cluster of two namespace hosts (2 CPUs each). An sbatch job on
node 1 only (tests/multihost/slurm_heat2d_job.sh) runs pcmd as a step (--resources slurm,
--slurm-grow-timeout 5) and heat2d_pcm on 2 processes, with testbed/launcher_slurm.sh as the
launcher of what the MPI starts on another node (hydra's proxies, Open MPI's daemon). Then:

1. another job holds node 2: `pcmctl split` waits in state allocating (pcmctl status), its
   sbatch job does not run in time, and the split is refused with the reason in the events;
   the job is unchanged and no allocation of pcmd's (job name pcm-grow.J) is left in the queue;
2. node 2 free: the split waits for, and gets, a second allocation on node 2 (a job of Slurm's
   own, pcm-grow.J, tagged on node 2 in `pcmctl host list`), and is carried out there;
3. a job that needs node 2's two CPUs waits in the queue (the second allocation holds one);
3b. pcmd is killed (-9) and started again as a step of the job: it keeps the job and the
   second allocation (its journal), and the job goes on;
4. a merge leaves node 2 (carried out by respawning the world, so that nothing of the job stays
   there): pcmd gives the second allocation back (scancel; node 2 leaves the inventory) and the
   waiting job starts and completes. On MPICH at once; on Open MPI once mpirun has ended: the
   daemon it started on node 2 for the split (a step of the second allocation) stays until then,
   and the test checks that pcmd waits for it (the allocation held, the waiting job pending);
5. heat2d ends with the plain run's checksum, bit for bit.

--show (scripts/slurm_demo.sh) also prints Slurm's queue and pcmd's view at each step. Then
scancel of whatever is left, slurm.sh down, and nothing of the cluster left (also on
failure). Exits 77 (SKIPPED) with the reason without root, Slurm or munge, or on an MPI other
than MPICH's hydra and Open MPI's mpirun.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testbed"))
from cluster import Failure, heat2d_plain  # noqa: E402
from slurm_heat2d import (ENDED, SlurmCluster, pcmd_says, poll, run_on_cluster,  # noqa: E402
                          runnable_family, steps_on)

GROW_TIMEOUT = 5
SHOW = False  # --show (scripts/slurm_demo.sh): Slurm's queue and pcmd's view at every step


def log(msg):
    print(f"slurm.grow: {msg}", flush=True)


class Cluster(SlurmCluster):
    def __init__(self, build, tmp, family):
        super().__init__(build, tmp, family)
        self.others = []  # jobs of the test's own beside the PCM job
        self.restarted = None  # the srun of a pcmd started again (restart_pcmd)

    def state_of(self, job):
        r = self.run("scontrol", "show", "job", job, "-o", check=False)
        m = re.search(r"\bJobState=(\S+)", r.stdout)
        return m.group(1) if m else "?"

    def grow_jobs(self):
        """pcmd's second allocations in the queue (any state): [(id, state, nodes)]."""
        out = self.run("squeue", "-h", "-n", f"pcm-grow.{self.job}", "-o", "%i %T %N").stdout
        return [tuple(line.split()) for line in out.splitlines() if line.strip()]

    def stop(self):
        try:
            for j in self.others:
                if self.state_of(j) not in ENDED:
                    self.run("scancel", j, check=False)
            if self.job:
                for g in self.grow_jobs():
                    self.run("scancel", g[0], check=False)
        except (subprocess.SubprocessError, Failure) as e:  # slurmctld not answering: down anyway
            log(f"note: cancelling the test's jobs: {e}")
        super().stop()
        if self.restarted and self.restarted.poll() is None:
            os.killpg(self.restarted.pid, signal.SIGTERM)
            try:
                self.restarted.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.restarted.pid, signal.SIGKILL)
                self.restarted.wait()


def restart_pcmd(c):
    """kill -9 of pcmd, then pcmd again as a step of the job on node 1, on the same
    configuration file and data directory (tests/multihost/slurm_heat2d_job.sh's)."""
    n1 = c.names[0]
    log_text = open(os.path.join(c.tmp, "pcmd.log")).read()
    m = re.search(r"listening on tcp://([0-9.]+):", log_text)
    if not m:
        raise Failure(f"pcmd.log names no address: {log_text[-500:]}")
    old = c.pcmd_pid
    os.kill(old, signal.SIGKILL)

    def gone():
        try:
            return open(f"/proc/{old}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True
    poll("pcmd's end after kill -9", 30, gone)
    pidfile = os.path.join(c.tmp, "pcmd.pid")
    os.unlink(pidfile)
    t = time.monotonic()
    c.restarted = subprocess.Popen(
        ["srun", f"--jobid={c.job}", "-w", n1, "-N1", "-n1", "--overlap",
         os.path.join(c.build, "pcmd"), "--resources", "slurm", "--bind", m.group(1),
         "--config", c.env["PCM_CONFIG"], "--data-dir", os.path.join(c.tmp, "data"),
         "--pidfile", pidfile, "--slurm-grow-timeout", str(GROW_TIMEOUT)],
        env=c.env, stdout=open(os.path.join(c.tmp, "pcmd2.log"), "w"),
        stderr=subprocess.STDOUT, start_new_session=True)
    poll("the new pcmd's pidfile", 60,
         lambda: os.path.exists(pidfile) and os.path.getsize(pidfile) > 0)
    c.pcmd_pid = int(open(pidfile).read())
    poll("the new pcmd's answer", 60, lambda: c.pcmctl("ping", check=False).returncode == 0)
    log(f"pcmd killed (-9) and started again as a step on {n1}: answering "
        f"{time.monotonic() - t:.2f} s later")


def show(c, title):
    """With --show: the queue (jobs and steps), pcmd's hosts and the job's status."""
    if not SHOW:
        return
    print(f"\n=== {title}", flush=True)
    for cmd in (["squeue", "-o", "%.5i %.16j %.9T %.6D %N"], ["squeue", "-s", "-o", "%.8i %N"]):
        print("$ " + " ".join(cmd) + "\n" + c.run(*cmd, check=False).stdout.rstrip(), flush=True)
    for args in (["host", "list"], ["status"]):
        r = c.pcmctl(*args, check=False)
        print("$ pcmctl " + " ".join(args) + "\n" + (r.stdout or r.stderr).rstrip(), flush=True)


def events(c, job):
    return c.status(job).get("events", [])


def scenario(c):
    n1, n2 = c.names
    job = "slurm-grow"
    args = ["--nx", "61", "--ny", "40", "--iters", "12000"]
    plain = heat2d_plain(c.build, args)
    out = os.path.join(c.tmp, "job.out")
    c.env["PCM_JOB"] = job
    c.env["PCMD_ARGS"] = f"--slurm-grow-timeout {GROW_TIMEOUT}"
    heat = os.path.join(c.build, "examples/heat2d/heat2d_pcm")
    c.submit(out, ["-N1", "-w", n1, "--ntasks-per-node=2", "-J", "pcm-grow-test"],
             [heat, *args, "--throttle-us", "2000"])
    rows = json.loads(c.pcmctl("host", "list", "--json").stdout)
    rows = rows.get("hosts", rows) if isinstance(rows, dict) else rows
    got = {r["host"]: (r["slots"], r.get("slurm_job")) for r in rows}
    if got != {n1: (2, c.job)}:
        raise Failure(f"pcmctl host list --json shows {got}, want {n1} alone, 2 slots, job {c.job}")
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    show(c, f"heat2d runs on {n1} under Slurm job {c.job}; pcmd's inventory is that allocation")

    # 1. Node 2 is taken: the split waits, salloc gives up, the split is refused.
    r = c.run("sbatch", "--parsable", "-w", n2, "-n", "2", "-J", "pcm-blocker", "-o", "/dev/null",
              "--wrap", "sleep 300")
    blocker = r.stdout.strip().split(";")[0]
    c.others.append(blocker)
    poll("the blocking job's start", 60, lambda: c.state_of(blocker) == "RUNNING")
    t = time.monotonic()
    said = c.pcmctl("split", job, "0", "--into", "2").stdout
    if "waits for a Slurm allocation" not in said:
        raise Failure(f"pcmctl split printed {said!r}, expected it to wait for an allocation")
    alloc = c.status(job).get("allocating")
    if not alloc or "split of rank 0 into 2" not in alloc.get("text", ""):
        raise Failure(f"pcmctl status shows allocating={alloc!r} while the split waits")
    show(c, f"another job holds {n2}; pcmctl split: the split waits for a second allocation")
    table = c.pcmctl("status").stdout
    if "allocating: split of rank 0 into 2" not in table:
        raise Failure(f"pcmctl status's table does not show the allocating split:\n{table}")
    poll("the refusal of the waiting split", GROW_TIMEOUT + 40,
         lambda: c.status(job).get("allocating") is None, every=0.5)
    refused_after = time.monotonic() - t
    st = c.status(job)
    ev = " | ".join(st.get("events", [])[-3:])
    if not re.search(r"refused after .*no Slurm allocation.*the job is unchanged", ev):
        raise Failure(f"no refusal with its reason in the events: {ev}")
    if st["hosts"] != [n1, n1] or st["reconfigurations"] != 0 or st["pending"] is not None:
        raise Failure(f"after the refused grow the job shows {st}")
    left = c.grow_jobs()
    if left:
        raise Failure(f"pcmd's allocations left in the queue after the refusal: {left}")
    log(f"split with node 2 taken: allocating, refused after {refused_after:.1f} s "
        f"(--slurm-grow-timeout {GROW_TIMEOUT}); job unchanged; nothing left in the queue")
    log(f"event: {st['events'][-1]}")

    # 2. Node 2 free: the split gets a second allocation there.
    c.run("scancel", blocker)
    poll("the blocking job's end", 60, lambda: c.state_of(blocker) in ENDED)
    t = time.monotonic()
    c.pcmctl("split", job, "0", "--into", "2")
    c.pcmctl("wait", job, "--reconfigurations", "1", "--timeout", "120")
    grown_in = time.monotonic() - t
    st = c.status(job)
    grow = c.grow_jobs()
    if len(grow) != 1 or grow[0][1] != "RUNNING" or grow[0][2] != n2:
        raise Failure(f"pcmd's second allocation in the queue: {grow}, want one RUNNING on {n2}")
    extra = grow[0][0]
    if sorted(st["hosts"]) != sorted([n1, n1, n2]):
        raise Failure(f"after the split the job runs on {st['hosts']}, want two on {n1}, one on {n2}")
    rows = json.loads(c.pcmctl("host", "list", "--json").stdout)
    rows = rows.get("hosts", rows) if isinstance(rows, dict) else rows
    got = {r["host"]: r.get("slurm_job") for r in rows}
    if got != {n1: c.job, n2: extra}:
        raise Failure(f"pcmctl host list shows {got}, want {n1}: {c.job}, {n2}: {extra}")
    log(f"split through Slurm job {extra} on {n2}: done {grown_in:.2f} s after the command; "
        f"hosts {st['hosts']}")

    show(c, f"{n2} free: the split got Slurm job {extra} there and runs on it")

    # pcmd killed and started again inside the allocation (a step, as the batch script made it):
    # it keeps the job and the second allocation, which it gives back below.
    restart_pcmd(c)
    st2 = c.status(job)
    if st2["state"] != "running" or st2["hosts"] != st["hosts"]:
        raise Failure(f"after pcmd's restart the job shows {st2}, before {st}")
    rows = json.loads(c.pcmctl("host", "list", "--json").stdout)
    rows = rows.get("hosts", rows) if isinstance(rows, dict) else rows
    if {r["host"]: r.get("slurm_job") for r in rows} != {n1: c.job, n2: extra}:
        raise Failure(f"after pcmd's restart pcmctl host list shows {rows}")
    if [g[0] for g in c.grow_jobs()] != [extra]:
        raise Failure(f"after pcmd's restart pcmd's allocations are {c.grow_jobs()}")
    c.pcmctl("wait", job, "--iteration", str(st2["iteration"] + 50), "--timeout", "60")

    # 3. A job that needs all of node 2 waits.
    r = c.run("sbatch", "--parsable", "-w", n2, "-n", "2", "-J", "pcm-waiter", "-o", "/dev/null",
              "--wrap", "true")
    waiter = r.stdout.strip().split(";")[0]
    c.others.append(waiter)
    time.sleep(1)  # gives the scheduler a pass; the assertion is only that it did not start
    if c.state_of(waiter) != "PENDING":
        raise Failure(f"the job needing {n2}'s CPUs is {c.state_of(waiter)}, expected PENDING")
    show(c, f"a job that needs all of {n2} waits in the queue")

    # 4. The merge leaves node 2; the allocation goes back and the waiting job runs.
    out_text = lambda: open(out).read()  # noqa: E731
    on2 = st["hosts"].index(n2)
    other = next(i for i, h in enumerate(st["hosts"]) if h == n1)
    t = time.monotonic()
    c.pcmctl("merge", job, *map(str, sorted([other, on2])))
    c.pcmctl("wait", job, "--reconfigurations", "2", "--timeout", "120")
    if c.status(job)["hosts"] != [n1, n1]:
        raise Failure(f"after the merge the job runs on {c.status(job)['hosts']}")
    after = "the command"
    if c.family == "openmpi":
        # mpirun's daemon on node 2 (a step of the second allocation) stays until mpirun ends:
        # pcmd waits for that step; the allocation stays and the waiting job with it.
        pcmd_says(c, f"Slurm job {extra}: no process of a job is placed there; waiting for its "
                  f"steps on {n2}", 20)
        held = steps_on(c, extra, n2)
        if c.state_of(extra) != "RUNNING" or not held or c.state_of(waiter) != "PENDING":
            raise Failure(f"while mpirun runs: Slurm job {extra} {c.state_of(extra)}, steps on "
                          f"{n2} {held}, the waiting job {c.state_of(waiter)}; expected the "
                          "allocation held by mpirun's daemon and the job pending")
        log(f"merge off {n2}: Slurm job {extra} stays held while mpirun runs (its daemon is step "
            f"{held[0].split()[0]}); pcmd waits for it; the waiting job {waiter} is PENDING")
        poll("mpiexec's end", 240, lambda: "mpiexec exited" in out_text()
             or c.job_state() in ENDED, every=0.5)
        t = time.monotonic()
        after = "mpiexec's end"
    poll(f"Slurm job {extra}'s end", 60, lambda: c.state_of(extra) in ENDED, every=0.5)
    given_back = time.monotonic() - t
    poll(f"the waiting job {waiter}'s start", 60,
         lambda: c.state_of(waiter) in ("RUNNING", "COMPLETED"), every=0.5)
    started = time.monotonic() - t
    poll(f"the waiting job {waiter}'s end", 60, lambda: c.state_of(waiter) in ENDED, every=0.5)
    if c.state_of(waiter) != "COMPLETED":
        raise Failure(f"the waiting job ended {c.state_of(waiter)}")
    rows = json.loads(c.pcmctl("host", "list", "--json").stdout)
    rows = rows.get("hosts", rows) if isinstance(rows, dict) else rows
    if [r["host"] for r in rows] != [n1]:
        raise Failure(f"{n2} is still in pcmd's inventory: {rows}")
    ev = events(c, job)
    if not any(f"gave Slurm job {extra} back" in e for e in ev):
        raise Failure(f"no event says Slurm job {extra} was given back: {ev[-4:]}")
    show(c, f"after the merge: Slurm job {extra} was given back and the waiting job ran")
    log(f"merge off {n2}: Slurm job {extra} given back {given_back:.2f} s after {after}; "
        f"the waiting job {waiter} started by {started:.2f} s and completed")

    # 5. The end, bit for bit.
    poll("mpiexec's end", 240, lambda: "mpiexec exited" in out_text()
         or c.job_state() in ENDED, every=0.5)
    st = c.status(job)
    if st["state"] != "finished" or st["reconfigurations"] != 2:
        raise Failure(f"pcmd showed {st}")
    open(os.path.join(c.tmp, "release"), "w").close()
    poll(f"the end of job {c.job}", 60, lambda: c.job_state() in ENDED, every=0.5)
    if c.job_state() != "COMPLETED":
        raise Failure(f"job {c.job} ended {c.job_state()}:\n{out_text()[-3000:]}")
    m = re.search(r"^checksum (\w+)", out_text(), re.M)
    if not m or m.group(1) != plain:
        raise Failure(f"checksum {m.group(1) if m else None} differs from the plain run's {plain}")
    if c.grow_jobs():
        raise Failure(f"pcmd's allocations left at the end: {c.grow_jobs()}")
    log(f"job {c.job} COMPLETED; checksum {plain} as the plain run's")


def main():
    global SHOW
    argv = [a for a in sys.argv[1:] if a != "--show"]
    SHOW = len(argv) != len(sys.argv) - 1
    if len(argv) != 1:
        print(f"usage: {sys.argv[0]} BUILD [--show]", file=sys.stderr)
        return 2
    build = os.path.abspath(argv[0])
    family = runnable_family("slurm.grow")
    return run_on_cluster("slurm.grow", lambda tmp: Cluster(build, tmp, family), scenario,
                          logs=("job.out", "pcmd.log", "pcmd2.log"))


if __name__ == "__main__":
    sys.exit(main())
