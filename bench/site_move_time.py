#!/usr/bin/env python3
"""site_move_time.py BUILD — a whole job's move between sites, by pcmctl against by hand.

Two test sites of three namespace hosts (testbed/site_cluster.py: pcmd on a1, the front-ends'
relays, site b's configuration file naming its relay). heat2d_pcm with a grid of BENCH_SIZES MiB
(256 1024: 8 bytes a point, 8192 columns) starts on a1 and a2 and is moved to b1, b2 and b3, each
way BENCH_REPS (2) times, alternating:

  pcmctl   under `pcmctl run --site a` (site_move_time.py's options): `pcmctl move JOB --site b`; the
           figures are the move's own line of the events: asked -> version written (checkpoint),
           -> the run ended and pcmd saw it (stop), -> the new run's first poll with an iteration
           (relaunch, restart and first iteration: "iterating again");
  by hand  under a plain mpiexec on a1: `pcmctl checkpoint JOB`, polled until the events say it
           is written (checkpoint); TERM to mpiexec's group and pcmd seeing the job end (stop);
           `cp -r` of the version's directory to another directory, as a user ships it to the
           other site's storage (copy); mpiexec in b1 with PCM_RESTART=1 and site b's file until
           pcmd shows the new run iterating (restart), polled every 20 ms with pcmctl in b1.

pcmctl's move ships nothing: the test sites share the machine's file system, so site b reads
the version where it was written. Prints a table of medians and the ratio by hand / pcmctl.
Exits 77 (SKIPPED) where namespaces cannot be made.
"""
import os
import json
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testbed"))
import benchlib  # noqa: E402  (bench/, this file's directory)
import cluster as mh  # noqa: E402
import site_cluster  # noqa: E402  (Sites, main_with, start_relayed, supervised)

SIZES = [int(x) for x in os.environ.get("BENCH_SIZES", "256 1024").split()]
REPS = int(os.environ.get("BENCH_REPS", "2"))
NX = 8192


def grid(mib):
    return ["--nx", str(NX), "--ny", str(mib * 1024 * 1024 // 8 // NX), "--iters", "1000000"]


def wait_until(what, fn, timeout=600, every=0.02):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        v = fn()
        if v:
            return v
        time.sleep(every)
    raise mh.Failure(f"{what}: not within {timeout} s")


def status(c, job):
    r = c.pcmctl("status", job, "--json", check=False)
    if r.returncode != 0:
        return {}
    return json.loads(r.stdout)["jobs"][0]


def by_pcmctl(c, job, mib):
    out = os.path.join(c.tmp, f"{job}.out")
    run = site_cluster.supervised(c, job, out, grid(mib))
    c.pcmctl("wait", job, "--iteration", "2", "--timeout", "600")
    site_cluster.wait_supervised(c, job)
    r = c.pcmctl("move", job, "--site", "b", "--wait", "600")
    m = re.search(r"iterating again ([\d.]+) s after it was asked \(checkpoint ([\d.]+) s, stop "
                  r"([\d.]+) s, relaunch until iterating ([\d.]+) s", r.stdout)
    if not m:
        raise mh.Failure(f"{job}: no timings in {r.stdout}")
    mh.end_job(run, timeout=60)
    total, ckpt, stop, relaunch = map(float, m.groups())
    return {"checkpoint": ckpt, "stop": stop, "copy": 0.0, "restart": relaunch, "total": total}


def by_hand(c, job, mib):
    a1, a2, _ = c.a
    out = os.path.join(c.tmp, f"{job}.out")
    launch = [os.environ.get("MPIEXEC", "mpiexec"), "-launcher", "ssh", "-launcher-exec",
              os.path.abspath(mh.LAUNCHER)]
    heat = [os.path.join(c.build, "examples/heat2d/heat2d_pcm"), *grid(mib)]
    p = subprocess.Popen(["bash", mh.LAUNCHER, a1, *launch, "-hosts", f"{a1},{a2}", "-n", "2",
                          *heat], env=dict(c.env, PCM_JOB=job), stdout=open(out, "w"),
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    c.jobs.append(p)
    c.pcmctl("wait", job, "--iteration", "2", "--timeout", "600")
    t0 = time.monotonic()
    asked = c.pcmctl("checkpoint", job, "--why", "by-hand").stdout
    cid = re.search(r"checkpoint (\d+) asked", asked).group(1)
    wait_until("the checkpoint", lambda: any(f"checkpoint {cid} written" in e
                                            for e in status(c, job).get("events", [])))
    t1 = time.monotonic()
    mh.end_job(p, timeout=60)
    wait_until("pcmd to see the run end", lambda: status(c, job).get("state") != "running")
    t2 = time.monotonic()
    root = os.path.join(c.tmp, "data", "checkpoints", job)
    newest = max((d for d in os.listdir(root) if re.match(r"^v\d+(\.h5)?$", d)),
                 key=lambda d: int(re.sub(r"\D", "", d.split(".")[0])))
    shipped = os.path.join(c.tmp, "shipped", job)
    subprocess.run(["cp", "-r", os.path.join(root, newest), shipped], check=True)
    t3 = time.monotonic()
    b = c.names
    p = subprocess.Popen(["bash", mh.LAUNCHER, b[0], *launch, "-hosts", ",".join(b), "-n", "3",
                          *heat], env=dict(c.site_env, PCM_JOB=job, PCM_RESTART="1"),
                         stdout=open(out, "a"), stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    c.jobs.append(p)
    wait_until("the restart", lambda: (lambda s: s.get("state") == "running" and
                                       s.get("iteration", 0) > 0)(status(c, job)))
    t4 = time.monotonic()
    mh.end_job(p, timeout=60)
    shutil.rmtree(shipped)
    return {"checkpoint": t1 - t0, "stop": t2 - t1, "copy": t3 - t2, "restart": t4 - t3,
            "total": t4 - t0}


def scenario(c):
    a1, a2, _ = c.a
    b1, b2, b3 = c.names
    site_cluster.start_relayed(c, "--hosts", f"{a1}:1@a,{a2}:1@a,{b1}:1@b,{b2}:1@b,{b3}:1@b")
    os.makedirs(os.path.join(c.tmp, "shipped"))
    rows = []
    for mib in SIZES:
        got = {"pcmctl": [], "by hand": []}
        for k in range(REPS):
            for way, fn in (("pcmctl", by_pcmctl), ("by hand", by_hand)):
                job = f"mv{mib}{'p' if way == 'pcmctl' else 'h'}{k}"
                got[way].append(fn(c, job, mib))
                mh.log(f"{mib} MiB, {way}, {k + 1} of {REPS}: " +
                       ", ".join(f"{x} {v:.2f} s" for x, v in got[way][-1].items()))
                shutil.rmtree(os.path.join(c.tmp, "data", "checkpoints", job), True)
        rows.append((mib, got))
    print(f"\nwhole-job move a1,a2 -> b1,b2,b3, median of {REPS} (seconds)")
    print("| size | way | checkpoint | stop | copy | restart, first iteration | total |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for mib, got in rows:
        med = {w: {x: benchlib.median(r[x] for r in got[w]) for x in got[w][0]} for w in got}
        for w in got:
            m = med[w]
            print(f"| {mib} MiB | {w} | {m['checkpoint']:.2f} | {m['stop']:.2f} | "
                  f"{m['copy']:.2f} | {m['restart']:.2f} | {m['total']:.2f} |")
        print(f"| {mib} MiB | by hand / pcmctl | | | | | "
              f"{med['by hand']['total'] / med['pcmctl']['total']:.2f}x |")


if __name__ == "__main__":
    sys.exit(site_cluster.main_with(scenario, "bench_site_move"))
