#!/usr/bin/env python3
"""level_restart.py BUILD — restart time from each checkpoint level after a host is lost, and what
PCM_Checkpoint costs the application with levels against without.

Three network-namespace hosts (testbed/cluster.py's Cluster, prefix pcmlb), each with
a private local directory (testbed/launcher_hosts.sh: BASE/<host> bind-mounted over the same
path; BASE under /dev/shm when it exists, as a node-local tmpfs), pcmd in host 1 with its data
directory under /tmp (the shared level). bench/ckpt_cost, one process per host, for each size
of BENCH_SIZES MiB (64 256), BENCH_REPS (2) times:

  write    levels on (PCM_CHECKPOINT_LOCAL_DIR, FLUSH_EVERY=3, partner on): versions 1 (also on
           the shared level) and 2 (local and partner levels only);
  local    restarted on the same three hosts (its processes lost, no host): every shard from
           its host's local level;
  partner  host 3's local directory removed, restarted on hosts 1 and 2: rank 2's shard from
           its partner copy on host 1 (copied to the shared level for host 2), rank 1's from
           host 2 (copied for host 1);
  shared   the same job written without levels, host 3 lost, restarted on hosts 1 and 2: every
           shard from the shared level.

The restart time is ckpt_cost's (PCM_Resume between barriers: finding, verifying, copying and
reading the shards; the data checked after). Then the application-visible PCM_Checkpoint time
(ckpt_cost wait: BENCH_VERSIONS (4) versions, BENCH_GAP (1) s of computing between them, median
of the calls' maxima over the ranks) with levels (partner on, flush every 4) and without. All
levels are on one machine here: /dev/shm and /tmp's disk share its memory and page cache, so the
figures show what the mechanism costs (verification, the partner exchange over the hosts' veth
links, the copies), not the difference between a node's SSD and a parallel file system.
Prints a table. Exits 77 (SKIPPED) where namespaces cannot be made.
"""
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testbed"))
import benchlib  # noqa: E402  (bench/, this file's directory)
import cluster as mh  # noqa: E402

SIZES = [int(x) for x in os.environ.get("BENCH_SIZES", "64 256").split()]
REPS = int(os.environ.get("BENCH_REPS", "2"))
VERSIONS = os.environ.get("BENCH_VERSIONS", "4")
GAP = os.environ.get("BENCH_GAP", "1")


def run(c, hosts, args, env, what):
    out = os.path.join(c.tmp, "job.out")
    p = c.mpiexec(hosts, len(hosts), [os.path.join(c.build, "bench/ckpt_cost"), *args], out,
                  env=env, spawn_hosts=[])
    try:
        rc = p.wait(timeout=600)
    except subprocess.TimeoutExpired:
        raise mh.Failure(f"{what}: ckpt_cost did not end within 600 s")
    text = open(out).read()
    if rc != 0:
        raise mh.Failure(f"{what}: ckpt_cost exited {rc}:\n{text[-3000:]}")
    return text


def read_time(text, what):
    m = re.search(r"ckpt_cost: read \d+ MiB with \d+ processes \(shards\): ([\d.]+) s", text)
    if not m:
        raise mh.Failure(f"{what}: no read time:\n{text[-3000:]}")
    return float(m.group(1))


def bench(c):
    h1, h2, h3 = c.names
    c.start_pcmd("--keep", "4")
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else c.tmp
    base = os.path.join(shm, f"pcm-bench-levels.{os.getpid()}")
    mount = os.path.join(c.tmp, "local")
    os.makedirs(base, mode=0o700)
    os.makedirs(mount, mode=0o700)
    hosts_env = {"PCM_HOSTS_LOCAL_ROOT": base, "PCM_HOSTS_LOCAL_MOUNT": mount,
                 "PCM_LOG_LEVEL": "info"}
    levels = dict(hosts_env, PCM_CHECKPOINT_LOCAL_DIR=mount, PCM_CHECKPOINT_FLUSH_EVERY="3")
    times = {}
    try:
        for mb in SIZES:
            for r in range(REPS):
                job = f"lb{mb}-{r}"
                run(c, [h1, h2, h3], [str(mb), "shards", "2"], dict(levels, PCM_JOB=job), job)
                t = run(c, [h1, h2, h3], [str(mb)], dict(levels, PCM_JOB=job, PCM_RESTART="1"),
                        job + " local")
                if "r0: local" not in t or "r2: local" not in t:
                    raise mh.Failure(f"{job}: the local restart read from elsewhere:\n{t[-2000:]}")
                times.setdefault(("local", mb), []).append(read_time(t, job))
                mh.log(re.search(r"restart from version.*", t).group(0))
                shutil.rmtree(os.path.join(base, h3))  # host 3 lost
                t = run(c, [h1, h2], [str(mb)], dict(levels, PCM_JOB=job, PCM_RESTART="1"),
                        job + " partner")
                if f"r2: partner on {h1}" not in t:
                    raise mh.Failure(f"{job}: rank 2 not from its partner:\n{t[-2000:]}")
                times.setdefault(("partner", mb), []).append(read_time(t, job))
                mh.log(re.search(r"restart from version.*", t).group(0))
                sjob = f"ls{mb}-{r}"
                run(c, [h1, h2, h3], [str(mb), "shards", "2"], dict(hosts_env, PCM_JOB=sjob), sjob)
                t = run(c, [h1, h2], [str(mb)], dict(hosts_env, PCM_JOB=sjob, PCM_RESTART="1"),
                        sjob + " shared")
                times.setdefault(("shared", mb), []).append(read_time(t, sjob))
                mh.log(f"{mb} MiB rep {r + 1}: local {times[('local', mb)][-1]:.3f} s, partner "
                       f"{times[('partner', mb)][-1]:.3f} s, shared {times[('shared', mb)][-1]:.3f} s")
            for lv in (0, 1):
                env = dict(levels if lv else hosts_env, PCM_JOB=f"lw{mb}-{lv}",
                           PCM_CHECKPOINT_FLUSH_EVERY="4")
                t = run(c, [h1, h2, h3], [str(mb), "wait", VERSIONS, GAP], env, f"wait {mb}")
                m = re.search(r"median ([\d.]+) s", t)
                if not m:
                    raise mh.Failure(f"wait {mb}: no median:\n{t[-2000:]}")
                times[("wait", mb, lv)] = float(m.group(1))
                mh.log(f"{mb} MiB: PCM_Checkpoint {'with' if lv else 'without'} levels: median "
                       f"{float(m.group(1)):.4f} s ({t.strip().splitlines()[-1]})")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    med = benchlib.median
    print("\n| size | restart, local level | partner level (host 3 lost) | shared level (host 3 "
          "lost) | PCM_Checkpoint without levels | with levels (partner on) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for mb in SIZES:
        print(f"| {mb} MiB | {med(times[('local', mb)]):.3f} s | "
              f"{med(times[('partner', mb)]):.3f} s | {med(times[('shared', mb)]):.3f} s | "
              f"{times[('wait', mb, 0)]:.4f} s | {times[('wait', mb, 1)]:.4f} s |")
    print(f"\n(medians of {REPS}; 3 processes on 3 namespace hosts writing, 3 or 2 restarting; "
          f"restart = PCM_Resume between barriers)")


def main():
    build = os.path.abspath(sys.argv[1])
    family = mh.mpi_family()
    if family != "mpich":
        print(f"SKIPPED: level_restart.py drives hydra's -hosts (the MPI here is {family})")
        return mh.SKIP
    if os.geteuid() != 0:
        print("SKIPPED: level_restart.py needs root (namespace hosts with mount namespaces)")
        return mh.SKIP
    orig = mh.Cluster.__init__

    def init(self, *a):
        orig(self, *a)
        self.prefix = "pcmlb"
        self.names = [f"pcmlb{k}" for k in range(1, self.n + 1)]
    mh.Cluster.__init__ = init
    t0 = time.monotonic()
    rc = mh.run_on_cluster(build, 3, bench, "bench_levels")
    print(f"bench_levels: {time.monotonic() - t0:.0f} s")
    return rc


if __name__ == "__main__":
    sys.exit(main())
