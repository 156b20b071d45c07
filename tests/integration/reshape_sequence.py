#!/usr/bin/env python3
"""reshape_sequence.py — run under with_pcmd.sh: drive a PCM job through a seeded random sequence
of split, merge, resize and migrate commands (pcmctl), then check its result bit for bit.

  reshape_sequence.py BUILD SEED [--program heat2d|reshape|vecsum|register] [--ops N] [--max-procs P]
                      [--layout block|cyclic|block-cyclic] [--overlap]

heat2d: the final checksum must equal the plain MPI run's. reshape: the program checks every
element after every reconfiguration itself. vecsum (block or cyclic only): every rank checks its
elements and the replicated history against a recomputation at the end. Both must exit 0 with the expected number of
reconfigurations, and every retired process must have used almost no CPU.
--overlap: PCM_OVERLAP=1, and every growing reconfiguration must have spawned in the background
while the job made at least 2 iterations (libpcm's log line); every shrinking one must have made
its survivors' new buffers in the background (or respawned). heat2d, register (PCM_Adapt
programs): the new processes of every split must have faulted their buffers in meanwhile and
received the data there. reshape (the paper's PCM_Split/PCM_Merge, which name their array only
when called): buffers are made for the map the last split or merge left (none before the first,
none on a migration's replacement), so at least one reconfiguration after the first must have
received its data into buffers made in the background.
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("build")
p.add_argument("seed", type=int)
p.add_argument("--program", default="heat2d", choices=["heat2d", "reshape", "vecsum", "register"])
p.add_argument("--ops", type=int, default=5)
p.add_argument("--max-procs", type=int, default=4)
p.add_argument("--layout", default=None)
p.add_argument("--overlap", action="store_true")
args = p.parse_args()

rng = random.Random(args.seed)
layouts = ["block", "cyclic", "block-cyclic"]
layout = args.layout or layouts[args.seed % 3]
if args.program == "vecsum" and not args.layout:
    layout = ["block", "cyclic"][args.seed // 2 % 2]  # seeds 1, 2, 3: block on 2, cyclic on 1 and 2
np0 = 1 + args.seed % 2  # odd seeds start on 2 processes, even ones on 1 (so 1->N is covered)
mpiexec = os.environ.get("MPIEXEC", "mpiexec")
pcmctl = os.path.join(args.build, "pcmctl")
tmp = os.environ["PCM_TEST_DIR"]
job = f"seq-{args.seed}-{os.getpid()}"


def fail(msg):
    print(f"reshape_sequence: FAIL (seed {args.seed}, layout {layout}): {msg}", flush=True)
    try:
        print(open(os.path.join(tmp, "job.out")).read())
    except OSError:
        pass
    sys.exit(1)


def ctl(*a, check=True):
    r = subprocess.run([pcmctl, *a], capture_output=True, text=True, timeout=300)
    if check and r.returncode != 0:
        fail(f"pcmctl {' '.join(a)}: {r.stderr.strip()}")
    return r


# Long enough to outlast the whole sequence: each command waits for the previous one only.
iters = 600 * (args.ops + 2)
if args.program == "heat2d":
    prog_args = ["--nx", "61", "--ny", "40", "--iters", str(iters), "--throttle-us", "2000",
                 "--layout", layout, "--block", "3", "--commit-every", "300"]
    plain = subprocess.run([mpiexec, "-n", "2", os.path.join(args.build, "examples/heat2d/heat2d_plain"),
                            *prog_args[:6]], capture_output=True, text=True, timeout=300)
    m = re.search(r"^checksum (\w+)", plain.stdout, re.M)
    if not m:
        fail(f"plain heat2d printed no checksum: {plain.stdout} {plain.stderr}")
    expected = m.group(1)
    cmd = [os.path.join(args.build, "examples/heat2d/heat2d_pcm"), *prog_args]
elif args.program == "vecsum":
    cmd = [os.path.join(args.build, "examples/vecsum/vecsum"), "997", str(iters), layout, "2000", "0"]
elif args.program == "register":
    cmd = [os.path.join(args.build, "tests/mpi_register"), str(iters), "2000"]
else:
    cmd = [os.path.join(args.build, "tests/mpi_reshape"), "53", "7", layout, str(iters), "2000"]

out = open(os.path.join(tmp, "job.out"), "w")
env = dict(os.environ, PCM_JOB=job)
if args.overlap:
    env.update(PCM_OVERLAP="1", PCM_LOG_LEVEL="info")
proc = subprocess.Popen([mpiexec, "-n", str(np0), *cmd], stdout=out, stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL, env=env)

size = np0
done = 0
grew = 0
shrank = 0
history = []
ctl("wait", job, "--iteration", "20", "--timeout", "120")
kinds = ["split", "merge", "resize", "migrate"] + [rng.choice(["split", "merge", "resize", "migrate"])
                                                   for _ in range(max(0, args.ops - 4))]
rng.shuffle(kinds)
for kind in kinds[: args.ops]:
    if kind == "merge" and size == 1:
        kind = "split"
    if kind == "split" and size >= args.max_procs:
        kind = "merge"
    if kind == "split":
        r = rng.randrange(size)
        n = rng.randint(2, args.max_procs - size + 1)
        a, new = ["split", job, str(r), "--into", str(n)], size + n - 1
    elif kind == "merge":
        k = rng.randint(2, size)
        ranks = sorted(rng.sample(range(size), k))
        a, new = ["merge", job, *map(str, ranks)], size - k + 1
    elif kind == "resize":
        new = rng.choice([t for t in range(1, args.max_procs + 1) if t != size])
        a = ["resize", job, "--to", str(new)]
    else:
        a, new = ["migrate", job, str(rng.randrange(size))], size
    ctl(*a)
    done += 1
    grew += new > size
    shrank += new < size
    ctl("wait", job, "--reconfigurations", str(done), "--timeout", "180")
    history.append(f"{' '.join(a[:1] + a[2:])} ({size}->{new})")
    size = new

try:
    rc = proc.wait(timeout=600)
except subprocess.TimeoutExpired:
    proc.kill()
    fail("the job did not end within 600 s")
out.close()
text = open(os.path.join(tmp, "job.out")).read()
if rc != 0:
    fail(f"the job exited with {rc}")
status = json.loads(ctl("status", job, "--json").stdout)["jobs"][0]
if status["reconfigurations"] != done or status["state"] != "finished" or status["size"] != size:
    fail(f"pcmd shows {status}")
if args.program == "heat2d":
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not m or m.group(1) != expected:
        fail(f"checksum {m.group(1) if m else None} differs from the plain run's {expected}")
    m = re.search(r"^reconfigurations (\d+)", text, re.M)
    if not m or int(m.group(1)) != done:
        fail(f"heat2d reports {m.group(1) if m else None} reconfigurations, expected {done}")
    # The versions committed along the way were written by whatever world existed then, under its
    # ranks and layout: a restart from the newest, at another process count, is exact.
    again = size % 3 + 1
    r = subprocess.run([mpiexec, "-n", str(again), *cmd[:-2], "--throttle-us", "0"],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PCM_JOB=job, PCM_RESTART="1"))
    k = re.search(r"^heat2d: restarted from iteration (\d+) \((\d+) -> (\d+) processes\)",
                  r.stdout, re.M)
    m = re.search(r"^checksum (\w+)", r.stdout, re.M)
    if r.returncode != 0 or not k or not m or m.group(1) != expected:
        fail(f"restart on {again} from the newest version: exit {r.returncode}, "
             f"{k.group(0) if k else 'no restart line'}, checksum {m.group(1) if m else None}, "
             f"plain {expected}: {r.stdout[-1500:]} {r.stderr[-1500:]}")
    history.append(f"restart from iteration {k.group(1)} ({k.group(2)}->{again}) exact")
elif args.program == "vecsum":
    if not re.search(rf"^vecsum: ok: {done} reconfigurations, {size} processes, 0 wrong", text, re.M):
        fail("vecsum did not report success")
elif args.program == "register":
    if not re.search(rf"^register: ok: {done} reconfigurations, {size} processes, 0 wrong", text, re.M):
        fail("the register program did not report success")
else:
    if not re.search(rf"^reshape: ok: {done} reconfigurations, {size} processes, 0 wrong", text, re.M):
        fail("the reshape program did not report success")
if args.overlap:
    # Merges and migrations carried out by respawning the world (the cap on parked processes)
    # spawn in the background too: at least one line per growing reconfiguration.
    spawns = [(float(t), int(n)) for t, n in re.findall(
        r"spawned in the background in ([\d.]+) s while the application made (\d+) iterations", text)]
    if len(spawns) < grew or any(n < 2 for _, n in spawns):
        fail(f"{grew} growing reconfigurations, spawns in the background: {spawns}")
    # The new processes faulted their buffers in during the spawn, and the data landed there.
    faulted = re.findall(r"\[new process 0\] its buffers \((\d+) bytes\) faulted in while", text)
    landed = re.findall(r"\[rank 0\] split: (\d+) of \d+ arrays into buffers faulted in", text)
    paper = args.program == "reshape"  # buffers only for a remembered map (see above)
    if not paper and (len(faulted) < len(spawns) or len(landed) < len(spawns)
                      or "0" in faulted + landed):
        fail(f"{len(spawns)} spawns in the background; buffers faulted in beforehand: {faulted} "
             f"bytes, used for {landed} arrays")
    # Merges (and shrinking resizes) make their survivors' new buffers in the background, or
    # respawn the world (a spawn line): one line or the other per shrinking reconfiguration, and
    # where buffers were made, some survivor received its data there.
    merges = [(int(b), int(n)) for b, n in re.findall(
        r"its buffers \((\d+) bytes here\) faulted in in the background in [\d.]+ s while the "
        r"application made (\d+) iterations", text)]
    merged_into = re.findall(r"merge: array (\d+) of \d+ into a buffer faulted in beforehand", text)
    if len(spawns) + len(merges) < grew + shrank or any(n < 1 for _, n in merges):
        fail(f"{grew} growing and {shrank} shrinking reconfigurations; spawns in the background: "
             f"{spawns}, merges' buffers made in the background: {merges}")
    if not paper and any(b > 0 for b, _ in merges) and not merged_into:
        fail(f"merges' buffers made in the background ({merges}) but no survivor used one")
    if paper and grew + shrank >= 2 and not (landed or merged_into):
        fail(f"{grew + shrank} splits and merges, none into buffers made in the background "
             f"(splits: {landed}, merges: {merged_into})")
    history.append(f"{len(spawns)} spawns in the background, iterations meanwhile: "
                   + ", ".join(str(n) for _, n in spawns)
                   + f"; {len(merges)} merges' buffers made in the background, iterations "
                   + "meanwhile: " + ", ".join(str(n) for _, n in merges))
for parked, cpu in re.findall(r"^heat2d: retired parked ([\d.]+) s cpu ([\d.]+) s", text, re.M):
    if float(parked) > 0.5 and float(cpu) / float(parked) > 0.05:
        fail(f"a retired process used {cpu} s of CPU in {parked} s")
print(f"reshape_sequence: ok: seed {args.seed}, {args.program}, layout {layout}, start {np0}: "
      + "; ".join(history))
