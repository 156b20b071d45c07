#!/usr/bin/env python3
"""levels.py BUILD — checkpoint levels on namespace hosts with private local storage.

Three namespace hosts (testbed/hosts.sh, prefix pcmlv), each with a local directory of its own
(testbed/launcher_hosts.sh with PCM_HOSTS_LOCAL_ROOT: BASE/<host> bind-mounted over the same
path in every host's mount namespace). heat2d_pcm runs on one process per host with
PCM_CHECKPOINT_LOCAL_DIR set, a version every 10 iterations, PCM_CHECKPOINT_FLUSH_EVERY=3: the
versions of iterations 10 and 30 are on the shared level, 20 and 40 on the local and partner
levels only. Rank 0 holds its report of version 50 (PCM_TEST_SHARD_HOLD), so the newest version
is 40 for as long as the test wants. Host 3 is then lost: all its processes killed by pid and
its local directory removed. The job is restarted on hosts 1 and 2:

  partner on   it restarts from version 40 (host 3's shard from its partner copy on host 1,
               which puts it on the shared level for host 2), and the restart's log line says
               where each shard came from;
  partner off  version 40 lacks host 3's shard, so it restarts from version 30, the last
               one on the shared level.

Both must finish with the plain run's checksum. Prints SKIPPED and exits 77 without root or
namespaces, or on another MPI than MPICH (hydra's -hosts are used).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testbed"))
import cluster as mh  # noqa: E402

ARGS = ["--nx", "64", "--ny", "48", "--iters", "90", "--commit-every", "10"]


def log(msg):
    print(f"levels: {msg}", flush=True)


def versions(c, job):
    r = c.pcmctl("checkpoints", job, "--json", check=False)
    if r.returncode != 0:
        return []
    return sorted(v["iteration"] for v in json.loads(r.stdout) if v["valid"])


def manifest(c, job, it):
    path = os.path.join(c.tmp, "data", "checkpoints", job, f"v{it:020d}", "manifest.json")
    return json.load(open(path))


def on_shared(m):
    return all(lv["shared"] for lv in m.get("levels", [{"shared": True}]))


def run_case(c, partner, plain, base, mount):
    h1, h2, h3 = c.names
    job = f"lv{partner}"
    hold = os.path.join(c.tmp, f"hold{partner}")
    open(hold, "w").close()
    env = {"PCM_JOB": job, "PCM_CHECKPOINT_LOCAL_DIR": mount, "PCM_CHECKPOINT_FLUSH_EVERY": "3",
           "PCM_CHECKPOINT_PARTNER": str(partner), "PCM_TEST_SHARD_HOLD": f"{hold}:50:0",
           "PCM_HOSTS_LOCAL_ROOT": base, "PCM_HOSTS_LOCAL_MOUNT": mount,
           "PCM_LOG_LEVEL": "info"}
    out = os.path.join(c.tmp, "job.out")
    c.mpiexec([h1, h2, h3], 3, [os.path.join(c.build, "examples/heat2d/heat2d_pcm"), *ARGS], out,
              env=env, spawn_hosts=[])
    t0 = time.monotonic()
    while 40 not in versions(c, job):
        if time.monotonic() - t0 > 60 or c.jobs[-1].poll() is not None:
            raise mh.Failure(f"{job}: no version 40 within 60 s: {versions(c, job)}\n"
                             f"{open(out).read()[-3000:]}")
        time.sleep(0.1)
    have = versions(c, job)
    if have[-1] != 40:
        raise mh.Failure(f"{job}: versions {have}: 50 was held, 40 should be the newest")
    m40, m30 = manifest(c, job, 40), manifest(c, job, 30)
    if on_shared(m40) or not on_shared(m30):
        raise mh.Failure(f"{job}: levels of 40 {m40.get('levels')}, of 30 {m30.get('levels')}")
    want_partner = h1 if partner else None
    lv2 = m40["levels"][2]
    if lv2.get("host") != h3 or lv2.get("partner") != want_partner:
        raise mh.Failure(f"{job}: rank 2's shard of version 40 is said to be on {lv2}")
    # Each host sees only its own local directory.
    for k, h in enumerate(c.names):
        seen = subprocess.run(["bash", mh.LAUNCHER, h, f"ls {mount}/{job}/v{40:020d}"],
                              env=dict(c.env, **env), capture_output=True, text=True).stdout.split()
        want = {f"r{k}.h5"} | ({f"p{(k - 1) % 3}.h5"} if partner else set())
        if set(seen) != want:
            raise mh.Failure(f"{job}: {h} sees {seen} in its local directory, expected {want}")
    n = mh.kill_host(h3)
    shutil.rmtree(os.path.join(base, h3))
    c.stop_jobs()
    log(f"{job}: lost {h3} ({n} processes killed, its local directory removed) with version 40 "
        f"newest (partner {'on' if partner else 'off'})")
    os.unlink(hold)
    out2 = os.path.join(c.tmp, "job.out")
    env["PCM_RESTART"] = "1"
    del env["PCM_TEST_SHARD_HOLD"]
    t1 = time.monotonic()
    p = c.mpiexec([h1, h2], 2, [os.path.join(c.build, "examples/heat2d/heat2d_pcm"), *ARGS], out2,
                  env=env, spawn_hosts=[])
    try:
        rc = p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        raise mh.Failure(f"{job}: the restarted job did not end within 120 s")
    took = time.monotonic() - t1
    text = open(out2).read()
    got = re.search(r"^checksum (\w+)", text, re.M)
    r = re.search(r"^heat2d: restarted from iteration (\d+) \((\d+) -> (\d+) processes\)", text,
                  re.M)
    if rc != 0 or not got or got.group(1) != plain:
        raise mh.Failure(f"{job}: exit {rc}, checksum {got.group(1) if got else None} "
                         f"(plain {plain}):\n{text[-3000:]}")
    want_from = 40 if partner else 30
    if not r or int(r.group(1)) != want_from:
        raise mh.Failure(f"{job}: restarted from {r.group(1) if r else None}, expected "
                         f"{want_from}:\n{text[-3000:]}")
    line = re.search(r"restart from version (\d+): shards read from (.*)", text)
    if not line or int(line.group(1)) != want_from:
        raise mh.Failure(f"{job}: no restart line for version {want_from}:\n{text[-3000:]}")
    if partner and f"r2: partner on {h1} (copied to shared)" not in line.group(2):
        raise mh.Failure(f"{job}: rank 2's shard not from its partner: {line.group(0)}")
    if partner and f"r0: local on {h1}" not in line.group(2):
        raise mh.Failure(f"{job}: rank 0's shard not from host 1's local level: {line.group(0)}")
    if not partner and "out of reach" not in text and "no level" not in text:
        raise mh.Failure(f"{job}: no word of version 40 being refused:\n{text[-3000:]}")
    log(f"{job}: ok: restarted on {h1},{h2} from version {want_from} ({line.group(2)}); "
        f"{took:.1f} s to the end; checksum as plain")


def scenario(c):
    c.start_pcmd()
    plain = mh.heat2d_plain(c.build, ARGS)
    base = os.path.join(c.tmp, "hostlocal")
    mount = os.path.join(c.tmp, "local")
    os.makedirs(base, mode=0o700)
    os.makedirs(mount, mode=0o700)
    for partner in (1, 0):
        run_case(c, partner, plain, base, mount)
        # Host 3 comes back for the next case (its processes were killed, its namespace stays).


def main():
    build = os.path.abspath(sys.argv[1])
    family = mh.mpi_family()
    if family != "mpich":
        print(f"SKIPPED: levels.py drives hydra's -hosts (the MPI here is {family})")
        return mh.SKIP
    if os.geteuid() != 0 or not shutil.which("unshare"):
        print("SKIPPED: levels.py needs root and unshare (mount namespaces for the hosts)")
        return mh.SKIP
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    orig = mh.Cluster.__init__

    def init(self, *a):
        orig(self, *a)
        self.prefix = "pcmlv"
        self.names = [f"pcmlv{k}" for k in range(1, self.n + 1)]
    mh.Cluster.__init__ = init
    return mh.run_on_cluster(build, 3, scenario, "levels")


if __name__ == "__main__":
    sys.exit(main())
