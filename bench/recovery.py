#!/usr/bin/env python3
"""recovery.py BUILD [--sizes 64,256,1024] [--hosts 2,3] [--repeats 1] [--out DIR]

How long a job takes to iterate again after it loses a host, and where the time goes. On a
cluster of namespace hosts (testbed/hosts.sh, one slot each), heat2d_pcm holding SIZE MiB of grid
runs under `pcmctl run --on-inventory` from host 1 with a version every few iterations; once a
version is committed, the last host is killed (its processes, then its link), and the job goes on
by itself on the hosts left (N -> N-1). From the bench's clock, pcmd's events and heat2d's trace:

  detection  the kill -> pcmctl run sees the run lost (the launcher's exit, or pcmd's view)
  relaunch   seen -> the new launcher starts (ending the old run's group, probing the hosts)
  mpi start  the new launcher -> the job registered with pcmd (MPI_Init, PCM_Init)
  read       registered -> heat2d's restart row (PCM_Resume: the version read at the new count)

and the iterations computed twice against the interval between versions. Beside it, the same
version's bytes read raw (cat of its shard files, page cache dropped where possible): the floor
for the read. Also draws docs-style timeline plots of one run (bench/plots/timeline.gp:
throughput, processes, the loss and the recovery shaded) into --out. Needs root (exits 77 without).
"""
import argparse
import csv
import glob
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testbed"))
import benchlib  # noqa: E402  (bench/, this file's directory)
import cluster as mh  # noqa: E402


def events_json(c, job):
    j = json.loads(c.pcmctl("events", job, "--json").stdout)
    return list(zip(j["events"], j.get("times", [])))


def one(c, size_mib, n, out_dir, plot):
    names = c.names[:n]
    side = int((size_mib * 2**20 / 8) ** 0.5)
    iters, every = (60, 20) if size_mib >= 512 else (200, 50)
    job = f"bench-{n}-{size_mib}"
    trace = os.path.join(c.tmp, f"{job}.csv")
    out = os.path.join(c.tmp, "job.out")
    run = mh.supervised(
        c, job, n, out, ["--max-restarts", "1", "--start-timeout-s", "300"],
        ["--nx", str(side), "--ny", str(side), "--iters", str(iters), "--commit-every", str(every),
         "--report", "5", "--trace", trace])
    # Killed a few iterations after the second version is committed.
    c.pcmctl("wait", job, "--iteration", str(2 * every + 3), "--timeout", "600")
    at = mh.iteration(c, job)
    t_kill = time.time()
    mh.kill_host(names[-1], power_off=True)
    rc = run.wait(timeout=900)
    text = open(out).read()
    if rc != 0:
        raise mh.Failure(f"{job}: pcmctl run exited {rc}: {text[-2000:]}")
    evs = events_json(c, job)
    t_seen = t_relaunch = t_reg = None
    for text_e, t in evs:
        m = re.search(r"iterating again ([\d.]+) s after the loss was seen .*relaunched ([\d.]+) s",
                      text_e)
        if m:
            t_seen = t - float(m.group(1))
            t_relaunch = t_seen + float(m.group(2))
    for text_e, t in evs:
        if text_e.startswith("restarted from iteration") and t_relaunch and t >= t_relaunch - 0.5:
            t_reg = t
    plain = mh.heat2d_plain(c.build, ["--nx", str(side), "--ny", str(side), "--iters", str(iters)])
    got = re.search(r"^checksum (\w+)", text, re.M)
    if not got or got.group(1) != plain:
        raise mh.Failure(f"{job}: checksum {got.group(1) if got else None}, plain {plain}")
    if plot:
        print(f"bench_recovery: {job}: checksum {plain} as the plain run's; pcmctl events:")
        print(c.pcmctl("events", job).stdout, flush=True)
    rows = list(csv.reader(open(trace)))
    restart_rows = [r for r in rows[1:] if len(r) > 4 and r[4].startswith("restart")]
    if not (t_seen and t_reg and restart_rows):
        raise mh.Failure(f"{job}: no recovery found: {evs} {restart_rows}")
    t_resumed = float(restart_rows[-1][0])
    since = int(re.search(r"restarted from iteration (\d+)", text).group(1))
    # The raw floor: the version's shard files read once, cold where the cache can be dropped.
    version = os.path.join(c.tmp, "data", "checkpoints", job, f"v{since:020d}")
    files = [f for f in glob.glob(os.path.join(version, "**", "*"), recursive=True)
             if os.path.isfile(f)]
    raw = None
    if files:
        subprocess.run(["sh", "-c", "sync; echo 1 > /proc/sys/vm/drop_caches"], capture_output=True)
        t0 = time.monotonic()
        subprocess.run(["cat", *files], stdout=subprocess.DEVNULL, check=True)
        raw = time.monotonic() - t0
    r = {"hosts": f"{n}->{n - 1}", "mib": size_mib, "detect": t_seen - t_kill,
         "relaunch": t_relaunch - t_seen, "mpi_start": t_reg - t_relaunch,
         "read": t_resumed - t_reg, "total": t_resumed - t_kill, "raw_read": raw,
         "repeated": max(at - since, 0), "interval": every}
    if plot:
        ev = os.path.join(out_dir, f"recovery-{n}-{size_mib}-events.csv")
        with open(ev, "w") as f:
            f.write("time_s,label\n")
            f.write(f"{t_kill:.6f},host {n} lost; recovery starts\n")
            f.write(f"{t_resumed:.6f},recovery ends\n")
        tr = os.path.join(out_dir, f"recovery-{n}-{size_mib}-trace.csv")
        subprocess.run(["cp", trace, tr], check=True)
        png = os.path.join(out_dir, f"recovery-{n}-{size_mib}.png")
        benchlib.plot("timeline", tr, ev, png,
                      f"heat2d, {size_mib} MiB on {n} hosts: host {n} lost, recovered on {n - 1}",
                      capture_output=True)
        r["png"] = png
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--sizes", default="64,256,1024")
    ap.add_argument("--hosts", default="2,3")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    out_dir = os.path.abspath(a.out or os.path.join(build, "bench-recovery"))
    os.makedirs(out_dir, exist_ok=True)
    results = []
    for n in [int(x) for x in a.hosts.split(",")]:
        def scenario(c, n=n):
            c.start_pcmd("--hosts", *[f"{h}:1" for h in c.names])
            for size in [int(x) for x in a.sizes.split(",")]:
                for k in range(a.repeats):
                    r = one(c, size, n, out_dir, plot=(k == 0))
                    print(f"bench_recovery: {r['hosts']} {size} MiB: total {r['total']:.2f} s = "
                          f"detection {r['detect']:.2f} + relaunch {r['relaunch']:.2f} + mpi start "
                          f"{r['mpi_start']:.2f} + read {r['read']:.2f}; raw read of the version "
                          f"{r['raw_read'] if r['raw_read'] is None else round(r['raw_read'], 2)} s;"
                          f" {r['repeated']} iterations computed twice (a version every "
                          f"{r['interval']})", flush=True)
                    results.append(r)
                    mh.revive_host(c, c.names[-1])
        rc = mh.run_on_cluster(build, n, scenario, "bench_recovery")
        if rc:
            return rc
    print("\n| hosts | MiB | total s | detection | relaunch | MPI start | read | raw read |"
          " repeated / interval |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        raw = "-" if r["raw_read"] is None else f"{r['raw_read']:.2f}"
        print(f"| {r['hosts']} | {r['mib']} | {r['total']:.2f} | {r['detect']:.2f} | "
              f"{r['relaunch']:.2f} | {r['mpi_start']:.2f} | {r['read']:.2f} | {raw} | "
              f"{r['repeated']} / {r['interval']} |")
    print(f"plots and CSVs in {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
