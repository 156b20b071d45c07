#!/usr/bin/env python3
"""retire_bounded.py — run under with_pcmd.sh: drive a job (at most 4 processes) through a fixed
cycle of reconfigurations (pcmctl), and count the job's processes by PID all along (this process
is the subreaper of everything mpiexec starts; its descendants running the program are the job's
processes: the world and the parked retirees).

  retire_bounded.py BUILD [--ops N] [--park] [--cycle mixed|moves]

--cycle mixed (default): mpi_reshape (the calls of the paper's Table 1) through resizes up and
down, merges and migrations. --cycle moves: mpi_register (PCM_Adapt) through migrations and merges
only, which park their retirees: once the parked processes would outnumber the largest world,
libpcm respawns the whole world instead and they all leave (PCM_MAX_PARKED).

Checks: after every reconfiguration, the parked processes (job processes beyond the world's
size) number at most the largest world size so far; after every split, and every respawn, they
all leave (the old world and everything parked before it; not with --park, where
PCM_RETIRE_LEAVE=0 keeps them parked and only the count is printed); with --cycle moves, at least
one respawn happened; the job ends with exit code 0 and "ok" for every reconfiguration; no
descendant is left once mpiexec has ended.
"""
import argparse
import ctypes
import json
import os
import re
import subprocess
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("build")
p.add_argument("--ops", type=int, default=50)
p.add_argument("--park", action="store_true")
p.add_argument("--cycle", choices=["mixed", "moves"], default="mixed")
args = p.parse_args()
moves = args.cycle == "moves"

mpiexec = os.environ.get("MPIEXEC", "mpiexec")
extra = os.environ.get("MPIEXEC_EXTRA", "").split()  # e.g. --oversubscribe for Open MPI
pcmctl = os.path.join(args.build, "pcmctl")
program = "mpi_register" if moves else "mpi_reshape"
prog = os.path.join(args.build, "tests", program)
tmp = os.environ["PCM_TEST_DIR"]
job = f"retire-{os.getpid()}"
started = time.monotonic()


def fail(msg):
    print(f"retire_bounded: FAIL: {msg}", flush=True)
    try:
        print(open(os.path.join(tmp, "job.out")).read()[-4000:])
    except OSError:
        pass
    end_session()
    sys.exit(1)


def ctl(*a):
    r = subprocess.run([pcmctl, *a], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fail(f"pcmctl {' '.join(a)}: {r.stderr.strip()}")
    return r


def descendants():
    """(pid, comm, state) of every process below this one (hydra's proxies and ranks call
    setsid, so a session or process group does not hold them; this process is their subreaper)."""
    procs = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = open(f"/proc/{d}/stat").read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1: stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()  # state ppid ...
        procs[int(d)] = (comm, fields[0], int(fields[1]))
    below, todo = [], [os.getpid()]
    while todo:
        parent = todo.pop()
        for pid, (comm, state, ppid) in procs.items():
            if ppid == parent:
                below.append((pid, comm, state))
                todo.append(pid)
    return below


def job_processes():
    return [pid for pid, comm, state in descendants()
            if comm == program and state != "Z"]


def end_session():
    for pid, _, _ in descendants():
        try:
            os.kill(pid, 9)
        except OSError:
            pass


def wait_for(cond, what, seconds=20):
    """Polls cond() (a count of processes) until it holds; fails after seconds."""
    deadline = time.monotonic() + seconds
    while True:
        if cond():
            return
        if time.monotonic() > deadline:
            fail(what)
        time.sleep(0.05)


# Orphans of the job (a proxy that ended before its ranks) become this process's children.
PR_SET_CHILD_SUBREAPER = 36
if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
    print("retire_bounded: SKIPPED: prctl(PR_SET_CHILD_SUBREAPER) failed")
    sys.exit(77)
env = dict(os.environ, PCM_JOB=job)
# A reconfiguration here takes well under a second: a stuck one ends the job (the watchdog's line
# in job.out, which fail() prints) before the 60-s waits below give up.
env.setdefault("PCM_RECONFIG_TIMEOUT_S", "30")
if args.park:
    env["PCM_RETIRE_LEAVE"] = "0"
out = open(os.path.join(tmp, "job.out"), "w")
# The job runs until the sequence is over: then the test creates the stop file.
stop_file = os.path.join(tmp, "stop")
env["REGISTER_STOP_FILE" if moves else "RESHAPE_STOP_FILE"] = stop_file
prog_args = ["100000000", "1000"] if moves else ["53", "7", "block", "100000000", "1000"]
proc = subprocess.Popen([mpiexec, *extra, "-n", "2", prog, *prog_args],
                        stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                        start_new_session=True)


# (pcmctl arguments, new size or None for the same): resizes up are splits (the whole world is
# respawned as one group and the old one retires), resizes down and merges park some processes,
# migrations park the mover.
cycle = [(["resize", "--to", "4"], 4), (["resize", "--to", "2"], 2), (["migrate", "1"], None),
         (["resize", "--to", "3"], 3), (["migrate", "0"], None), (["resize", "--to", "1"], 1),
         (["migrate", "0"], None), (["resize", "--to", "2"], 2), (["merge", "0", "1"], 1),
         (["resize", "--to", "4"], 4), (["migrate", "3"], None), (["resize", "--to", "3"], 3)]
if moves:  # never more than 2 processes, so the cap is 2: the third retiree since the last
    # respawn or split makes a respawn (of a merge once, of migrations otherwise)
    cycle = [(["migrate", "0"], None), (["migrate", "1"], None), (["merge", "0", "1"], 1),
             (["migrate", "0"], None), (["migrate", "0"], None), (["migrate", "0"], None),
             (["resize", "--to", "2"], 2), (["migrate", "1"], None), (["migrate", "0"], None),
             (["migrate", "1"], None)]
size = largest = 2
most_parked = 0
respawns = 0


def respawned():
    """Whether the last reconfiguration done was carried out by respawning the whole world."""
    events = json.loads(ctl("status", job, "--json").stdout)["jobs"][0]["events"]
    done = [e for e in events if " done" in e]
    return bool(done) and "by respawning" in done[-1]
ctl("wait", job, "--iteration", "20", "--timeout", "60")
for i in range(args.ops):
    a, new = cycle[i % len(cycle)]
    assert a[0] != "resize" or int(a[2]) != size, "the cycle resizes to the size it has"
    grew = new is not None and new > size
    ctl(a[0], job, *a[1:], "--why", f"op {i + 1}")
    # Longer than PCM's watchdog (PCM_RECONFIG_TIMEOUT_S, 60 s on the Open MPI build): a
    # reconfiguration it ends is seen as the job's failure, with its line in the job's output
    # (tests/integration/retry_stuck_spawn.py looks for it), not as this wait's timeout.
    wait_s = 60 + int(os.environ.get("PCM_RECONFIG_TIMEOUT_S", "0") or 0)
    r = subprocess.run([pcmctl, "wait", job, "--reconfigurations", str(i + 1), "--timeout",
                        str(wait_s)], capture_output=True, text=True, timeout=wait_s + 60)
    if r.returncode != 0:
        try:  # the job's last lines reach job.out as mpiexec ends
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        fail(f"pcmctl wait {job} --reconfigurations {i + 1}: {r.stderr.strip()}")
    size = new or size
    largest = max(largest, size)
    if moves and respawned():
        respawns += 1
        grew = True  # the whole old world leaves, as after a split
    # The world's processes are all there once the reconfiguration is reported; retirees may
    # still be on their way out.
    wait_for(lambda: len(job_processes()) >= size, f"fewer than {size} processes after op {i + 1}")
    if grew and not args.park:
        wait_for(lambda: len(job_processes()) == size,
                 f"after split {i + 1} ({' '.join(a)}) {len(job_processes()) - size} retired "
                 f"processes are still there")
    parked = len(job_processes()) - size
    most_parked = max(most_parked, parked)
    if not args.park and parked > largest:
        fail(f"after op {i + 1} ({' '.join(a)}): {parked} parked, more than the largest world "
             f"({largest})")

open(stop_file, "w").close()
try:
    rc = proc.wait(timeout=60)
except subprocess.TimeoutExpired:
    fail("mpiexec did not end within 60 s of the stop file")
out.close()
try:  # orphans of the job that ended are this process's zombies
    while os.waitpid(-1, os.WNOHANG)[0] > 0:
        pass
except ChildProcessError:
    pass
left = descendants()
if left:
    fail(f"processes left after mpiexec ended: {left}")
text = open(os.path.join(tmp, "job.out")).read()
if rc != 0:
    fail(f"mpiexec exited with {rc}")
word = "register" if moves else "reshape"
if not re.search(rf"^{word}: ok: {args.ops} reconfigurations, {size} processes, 0 wrong", text,
                 re.M):
    fail(f"{program} did not report success")
# Every reconfiguration's rank 0 (often a process the reconfiguration made) knew its reason.
if moves:
    told = re.findall(r"^register: reconfiguration (\d+) because: op (\d+)$", text, re.M)
    if [(int(a), int(b)) for a, b in told] != [(k, k) for k in range(1, args.ops + 1)]:
        fail(f"rank 0 did not report each reconfiguration's reason (--why): {told}")
if moves and not args.park and respawns == 0:
    fail("no reconfiguration was carried out by respawning the world")
print(f"retire_bounded: ok: {args.ops} reconfigurations ({args.cycle}, "
      f"{'parking' if args.park else 'leaving'}), at most {most_parked} parked (largest world "
      f"{largest}), {respawns} respawns, mpiexec exit 0, nothing left, "
      f"{time.monotonic() - started:.1f} s")
