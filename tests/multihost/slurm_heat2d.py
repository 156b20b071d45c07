#!/usr/bin/env python3
"""slurm_heat2d.py BUILD — PCM inside a real Slurm allocation (the slurm.heat2d test).

testbed/slurm.sh makes a Slurm cluster of two namespace hosts (a prefix of this run's own). An
sbatch job (-N2, so both nodes are in the allocation; tests/multihost/slurm_heat2d_job.sh) runs
pcmd as a step on node 1, bound to node 1's address, with --resources slurm, then heat2d_pcm
through mpiexec with testbed/launcher_slurm.sh as the launcher of what the MPI starts on another
node (hydra's -launcher-exec; Open MPI's plm_rsh_agent, see the job script). From outside, with
SLURM_CONF and pcmd's configuration file in a shared directory: `pcmctl host list` shows both
nodes tagged with the job's id; rank 0 migrates to node 2, splits there, the two merge, and rank 0
migrates back, each waited for with `pcmctl wait --reconfigurations N` (every spawn onto node 2 a
step of the job there: hydra's proxy, or mpirun's daemon started by the first one); the last
migration leaves node 2, so pcmd gives it back to Slurm (the job's NodeList becomes node 1): on
MPICH at once, on Open MPI once mpirun has ended (its daemon on node 2, a step, stays until then;
the test checks that pcmd waits for it); the final checksum is the plain run's, bit for bit. Then
scancel if need be, slurm.sh down, and nothing of the cluster is left (also on failure).

Exits 77 (ctest SKIPPED) with the reason without root, without Slurm or munge, or on an MPI other
than MPICH's hydra and Open MPI's mpirun. Traffic goes only to the cluster's hosts and loopback.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testbed"))
from cluster import Failure, heat2d_plain  # noqa: E402

ROOT = os.path.join(HERE, "..", "..")
SLURM_SH = os.path.join(ROOT, "testbed", "slurm.sh")
LAUNCHER = os.path.abspath(os.path.join(ROOT, "testbed", "launcher_slurm.sh"))
JOB_SCRIPT = os.path.join(HERE, "slurm_heat2d_job.sh")
SKIP = 77
FAMILIES = ("mpich", "openmpi")  # the launch syntaxes slurm_heat2d_job.sh knows
LAUNCHERS = {"mpich": "MPICH's hydra", "openmpi": "Open MPI's mpirun"}
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
         "BOOT_FAIL", "DEADLINE", "PREEMPTED"}


def log(msg):
    print(f"slurm.heat2d: {msg}", flush=True)


def skip(why, test="slurm.heat2d"):
    print(f"SKIPPED: {test}: {why}", flush=True)
    sys.exit(SKIP)


def runnable_family(test, families=FAMILIES):
    """The MPI family these tests launch with; exits SKIPPED (77) with the reason without root or
    with an MPI whose launcher the job script does not know."""
    if os.geteuid() != 0:
        skip(f"needs root to make namespace hosts and run slurmd (uid {os.geteuid()})", test)
    family = mpi_family()
    if family not in families:
        skip(f"the job script launches with {' or '.join(LAUNCHERS[f] for f in families)}; "
             f"{os.environ.get('MPIEXEC', 'mpiexec')} is {family or '?'}", test)
    return family


def poll(what, seconds, fn, every=0.2):
    """fn() until it returns something true (returned); Failure after seconds."""
    t0 = time.monotonic()
    while True:
        got = fn()
        if got:
            return got
        if time.monotonic() - t0 > seconds:
            raise Failure(f"{what}: not within {seconds} s")
        time.sleep(every)


class SlurmCluster:
    """The cluster (slurm.sh up 2), the batch job, pcmctl against the job's pcmd; stop() undoes
    all of it."""

    def __init__(self, build, tmp, family):
        self.build = build
        self.tmp = tmp
        self.family = family
        self.prefix = f"s{os.getpid() % 100000}j"
        self.names = [f"{self.prefix}1", f"{self.prefix}2"]
        # The job script reads PCM_MPI_FAMILY (sbatch passes the environment).
        self.env = dict(os.environ, PCM_CONFIG=os.path.join(tmp, "pcmd.conf"),
                        PCM_MPI_FAMILY=family)
        self.env["PATH"] = self.env.get("PATH", "") + ":/usr/sbin:/sbin"
        self.is_up = False
        self.job = None
        self.pcmd_pid = None
        self.up_args = []  # more of slurm.sh up's options (--preempt)

    def run(self, *cmd, check=True, timeout=60):
        r = subprocess.run(list(cmd), env=self.env, capture_output=True, text=True,
                           timeout=timeout)
        if check and r.returncode != 0:
            raise Failure(f"{' '.join(cmd)} exited {r.returncode}: {r.stdout}{r.stderr}")
        return r

    def up(self):
        self.is_up = True
        r = self.run("bash", SLURM_SH, "up", "2", "--prefix", self.prefix, "--cpus", "2",
                     *self.up_args, check=False, timeout=180)
        sys.stdout.write(r.stdout + r.stderr)
        if r.returncode == SKIP:
            self.is_up = False
            sys.exit(SKIP)
        if r.returncode != 0:
            raise Failure(f"slurm.sh up failed ({r.returncode})")
        m = re.search(r"^export SLURM_CONF=(\S+)$", r.stdout, re.M)
        if not m:
            raise Failure("slurm.sh up printed no 'export SLURM_CONF=' line")
        self.env["SLURM_CONF"] = m.group(1)

    def job_state(self):
        r = self.run("scontrol", "show", "job", self.job, "-o", check=False)
        m = re.search(r"\bJobState=(\S+)", r.stdout)
        return m.group(1) if m else "?"

    def pcmctl(self, *args, check=True, timeout=200):
        r = subprocess.run([os.path.join(self.build, "pcmctl"), *args], env=self.env,
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise Failure(f"pcmctl {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
        return r

    def status(self, job):
        return json.loads(self.pcmctl("status", job, "--json").stdout)["jobs"][0]

    def submit(self, out, sbatch_args, program_args):
        """sbatch of the job script (JOB_SCRIPT: pcmd as a step, then PROGRAM_ARGS on 2 processes
        through the Slurm launcher; the environment's PCM_JOB, PCMD_ARGS, PCM_RESTART), its output
        to OUT; returns once pcmd is up (its pidfile and configuration written), its pid noted."""
        for name in ("pcmd.pid", "release", os.path.basename(self.env["PCM_CONFIG"])):
            if os.path.exists(os.path.join(self.tmp, name)):
                os.unlink(os.path.join(self.tmp, name))
        r = self.run("sbatch", "--parsable", "-o", out, "-D", self.tmp, *sbatch_args, JOB_SCRIPT,
                     self.build, self.tmp, LAUNCHER, "2", *program_args)
        self.job = r.stdout.strip().split(";")[0]
        if not self.job.isdigit():
            raise Failure(f"sbatch --parsable printed {r.stdout!r}")

        def pcmd_ready():
            if self.job_state() in ENDED:
                raise Failure(f"job {self.job} ended ({self.job_state()}) before pcmd was up:\n"
                              f"{open(out).read()[-2000:] if os.path.exists(out) else ''}")
            conf = self.env["PCM_CONFIG"]
            return os.path.exists(os.path.join(self.tmp, "pcmd.pid")) and os.path.exists(conf) \
                and os.path.getsize(conf) > 0

        poll("pcmd's configuration file", 120, pcmd_ready)
        self.pcmd_pid = int(open(os.path.join(self.tmp, "pcmd.pid")).read())

    def stop(self):
        try:
            if self.job and self.job_state() not in ENDED:
                self.run("scancel", self.job, check=False)
                poll("the job's end after scancel", 30, lambda: self.job_state() in ENDED)
        except (subprocess.SubprocessError, Failure) as e:  # the cluster goes down anyway
            log(f"note: {e}")
        if self.is_up:
            r = self.run("bash", SLURM_SH, "down", "--prefix", self.prefix, check=False,
                         timeout=120)
            if r.returncode != 0:
                log(f"slurm.sh down failed: {r.stdout}{r.stderr}")
            self.is_up = False


def mpi_family():
    """testbed/launcher_mpi.sh's answer for MPIEXEC: mpich, openmpi or unknown."""
    return subprocess.run(
        ["sh", "-c", f'. "{ROOT}/testbed/launcher_mpi.sh" && echo "$PCM_MPI_FAMILY"'],
        capture_output=True, text=True).stdout.strip()


def steps_on(c, slurm_job, node):
    """The steps of slurm_job running on node (squeue -s), beside .batch and .extern."""
    out = c.run("squeue", "-h", "-s", "-j", slurm_job, "-o", "%i %j %N", check=False).stdout
    return [line.strip() for line in out.splitlines()
            if line.split()[2:] == [node] and not re.search(r"\.(batch|extern) ", line)]


def pcmd_says(c, text, seconds):
    """Waits until pcmd's log holds text (pcmd checks the nodes to give back every 2 s): pcmd.log,
    or pcmd2.log of a pcmd started again (slurm_grow.py's restart_pcmd)."""
    paths = [os.path.join(c.tmp, name) for name in ("pcmd.log", "pcmd2.log")]
    poll(f"pcmd's log saying {text!r}", seconds,
         lambda: any(os.path.exists(p) and text in open(p).read() for p in paths), every=0.5)


def nothing_left(c):
    """After slurm.sh down: no directory, namespace or bridge of the prefix, pcmd gone."""
    left = []
    for d in (f"/run/pcm-slurm/{c.prefix}", f"/run/pcm-hosts/{c.prefix}"):
        if os.path.exists(d):
            left.append(d)
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    left += [w for w in ns.split() if re.fullmatch(rf"{c.prefix}\d+", w)]
    if subprocess.run(["ip", "link", "show", "dev", f"{c.prefix}br"],
                      capture_output=True).returncode == 0:
        left.append(f"bridge {c.prefix}br")
    if c.pcmd_pid and os.path.exists(f"/proc/{c.pcmd_pid}"):
        state = open(f"/proc/{c.pcmd_pid}/stat").read().rsplit(")", 1)[1].split()[0]
        if state != "Z":
            left.append(f"pcmd (pid {c.pcmd_pid})")
    if left:
        raise Failure(f"left after the test: {left}")


def released_bit_for_bit(c, out, plain):
    """The batch job's end once its program has ended: DIR/release lets pcmd's step go, then the
    job must be COMPLETED and the last checksum of its output (OUT) the plain run's (PLAIN).
    Returns that output."""
    open(os.path.join(c.tmp, "release"), "w").close()
    poll(f"the end of job {c.job}", 60, lambda: c.job_state() in ENDED, every=0.5)
    text = open(out).read()
    m = re.findall(r"^checksum (\w+)", text, re.M)
    if c.job_state() != "COMPLETED" or not m or m[-1] != plain:
        raise Failure(f"job {c.job} ended {c.job_state()}, checksum {m[-1] if m else None} "
                      f"(the plain run's {plain}):\n{text[-3000:]}")
    return text


def scenario(c):
    n1, n2 = c.names
    job = "slurm-heat"
    args = ["--nx", "61", "--ny", "40", "--iters", "9000"]
    plain = heat2d_plain(c.build, args)
    out = os.path.join(c.tmp, "job.out")
    c.env["PCM_JOB"] = job
    heat = os.path.join(c.build, "examples/heat2d/heat2d_pcm")
    t0 = time.monotonic()
    c.submit(out, ["-N2", "--ntasks-per-node=2", "-J", "pcm-heat2d"],
             [heat, *args, "--throttle-us", "2000"])
    log(f"job {c.job} running; pcmd up after {time.monotonic() - t0:.1f} s")

    # The inventory is the allocation, each node tagged with the job.
    rows = json.loads(c.pcmctl("host", "list", "--json").stdout)
    rows = rows.get("hosts", rows) if isinstance(rows, dict) else rows
    got = {r["host"]: (r["slots"], r.get("slurm_job")) for r in rows}
    if got != {n1: (2, c.job), n2: (2, c.job)}:
        raise Failure(f"pcmctl host list --json shows {got}, want both nodes, 2 slots, job {c.job}")
    table = c.pcmctl("host", "list").stdout
    if not re.search(r"\bSLURM_JOB\b", table) or not all(
            re.search(rf"^{n} .*\s{c.job}\s", table, re.M) for n in (n1, n2)):
        raise Failure(f"pcmctl host list shows no SLURM_JOB {c.job} for both nodes:\n{table}")
    log(f"pcmctl host list:\n{table.rstrip()}")

    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    if c.status(job)["hosts"] != [n1, n1]:
        raise Failure(f"the job starts on {c.status(job)['hosts']}, expected {[n1, n1]}")
    steps = [
        (["migrate", job, "0", "--host", n2], [n2, n1]),
        (["split", job, "0", "--into", "2", "--host", n2], [n2, n2, n1]),
        (["merge", job, "0", "1"], [n2, n1]),
        (["migrate", job, "0", "--host", n1], [n1, n1]),
    ]
    times = []
    for done, (cmd, want) in enumerate(steps, start=1):
        t = time.monotonic()
        c.pcmctl(*cmd)
        c.pcmctl("wait", job, "--reconfigurations", str(done), "--timeout", "180")
        dt = time.monotonic() - t
        got = c.status(job)["hosts"]
        if got != want:
            raise Failure(f"after {' '.join(cmd)}: pcmctl status reports hosts {got}, "
                          f"expected {want}")
        times.append(dt)
        log(f"{' '.join(cmd)}: done in {dt:.2f} s; hosts {got}")
        if done == 1:
            # The migrated process runs in a step of the job on node 2 (through the launcher).
            st = c.run("squeue", "-h", "-s", "-j", c.job, "-o", "%i %j %N").stdout.split("\n")
            if not steps_on(c, c.job, n2):
                raise Failure(f"no step of job {c.job} on {n2} after the migration: {st}")
            log(f"steps of job {c.job}: {'; '.join(x for x in st if x.strip())}")

    # The last migration left node 2 (carried out by respawning the world): pcmd gives the node
    # back to Slurm, and the job's allocation is node 1 alone.
    t = time.monotonic()

    def node_list():
        m = re.search(r"\bNodeList=(\S+)", c.run("scontrol", "show", "job", c.job, "-o").stdout)
        return m.group(1) if m else None

    def node2_given_back():
        rows = json.loads(c.pcmctl("host", "list", "--json").stdout)
        rows = rows.get("hosts", rows) if isinstance(rows, dict) else rows
        return [r["host"] for r in rows] == [n1] and node_list() == n1

    def mpiexec_ended():
        return "mpiexec exited" in open(out).read() or c.job_state() in ENDED

    if c.family == "openmpi":
        # mpirun's daemon on node 2 (a step of the job, started by the first spawn there) stays
        # until mpirun ends: pcmd waits for that step, and gives the node back after it.
        pcmd_says(c, f"node {n2} of Slurm job {c.job}: no process of a job is placed there; "
                  "waiting for the steps there", 20)
        held = steps_on(c, c.job, n2)
        if node_list() == n1 or not held:
            raise Failure(f"while mpirun runs, NodeList={node_list()} and steps on {n2}: {held}; "
                          f"expected {n2} held by mpirun's daemon")
        log(f"after the last migration {n2} stays held while mpirun runs: its daemon is step "
            f"{held[0].split()[0]} there; pcmd waits for it")
        poll("mpiexec's end", 240, mpiexec_ended, every=0.5)
        t = time.monotonic()
        poll(f"{n2} given back to Slurm after mpiexec's end", 60, node2_given_back, every=0.5)
        after = "mpiexec's end"
    else:
        poll(f"{n2} given back to Slurm", 60, node2_given_back, every=0.5)
        after = "the last migration"
    ev = c.status(job).get("events", [])
    if not any(f"gave node {n2} of Slurm job {c.job} back" in e for e in ev):
        raise Failure(f"no event says {n2} was given back: {ev[-4:]}")
    log(f"{n2} given back to Slurm {time.monotonic() - t:.2f} s after {after}: "
        f"job {c.job} holds {n1} alone")

    # mpiexec's end, then pcmd's view of the job (pcmd is a step of the job: it stays until
    # DIR/release), then the job's.
    poll("mpiexec's end", 240, mpiexec_ended, every=0.5)
    st = c.status(job)
    if st["state"] != "finished" or st["reconfigurations"] != len(steps):
        raise Failure(f"pcmd showed {st}")
    released_bit_for_bit(c, out, plain)
    log(f"job {c.job} COMPLETED; checksum {plain} as the plain run's; reconfigurations took "
        + ", ".join(f"{t:.2f}" for t in times) + " s")


def run_on_cluster(test, make_cluster, scenario, logs=("job.out", "pcmd.log"), tail=6000,
                   on_failure=None):
    """The slurm tests' frame: a private directory, the cluster up, scenario(c), the cluster down
    and nothing of it left. A Failure prints "TEST: FAILED: why", on_failure(c) (more of what
    happened) and the end of each of `logs`; exit status 0 or 1. SIGTERM (ctest's timeout) takes
    the cluster down too."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="pcm-slurm.") as tmp:
        os.chmod(tmp, 0o700)
        c = make_cluster(tmp)
        try:
            c.up()
            scenario(c)
        except Failure as e:
            print(f"{test}: FAILED: {e}", file=sys.stderr, flush=True)
            if on_failure:
                on_failure(c)
            for name in logs:
                path = os.path.join(tmp, name)
                if os.path.exists(path):
                    sys.stderr.write(f"--- {name} (end):\n{open(path).read()[-tail:]}\n")
            return 1
        finally:
            c.stop()
        try:
            nothing_left(c)
        except Failure as e:
            print(f"{test}: FAILED: {e}", file=sys.stderr, flush=True)
            return 1
    print(f"{test}: ok", flush=True)
    return 0


def main():
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} BUILD", file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    family = runnable_family("slurm.heat2d")
    return run_on_cluster("slurm.heat2d", lambda tmp: SlurmCluster(build, tmp, family), scenario,
                          tail=4000)


if __name__ == "__main__":
    sys.exit(main())
