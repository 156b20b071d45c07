"""cluster.py — the Python side of testbed/hosts.sh: a cluster of network-namespace hosts for the
tests (tests/multihost/) and the benchmarks (bench/) alike.

Cluster(build, n, tmp) makes n hosts (a prefix of its own), runs pcmd inside host 1 bound to host
1's address, starts jobs with mpiexec inside host 1 through testbed/launcher_hosts.sh, drives them
with pcmctl, and stop() removes everything it made. run_on_cluster(build, n, fn, label) wraps it
all (exits 77, ctest's SKIPPED, where namespaces cannot be made); the helpers below drive a job on
it (heat2d's plain checksum, waiting for a job, throttling one, killing a host, agents).
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
HOSTS_SH = os.path.join(HERE, "hosts.sh")
LAUNCHER = os.path.join(HERE, "launcher_hosts.sh")
MPI_FAMILY = "mpich"  # or openmpi (testbed/launcher_mpi.sh decides: mpi_family(), in the mains)
SKIP = 77


T0 = time.monotonic()


def log(msg):
    print(f"multihost: [{time.monotonic() - T0:6.1f} s] {msg}", flush=True)


class Failure(Exception):
    pass


class Cluster:
    """N namespace hosts, a pcmd in host 1, and the jobs started there; stop() undoes all of it."""

    def __init__(self, build, n, tmp):
        self.build = build
        self.n = n
        self.tmp = tmp
        self.prefix = f"m{os.getpid() % 100000}h"
        self.names = [f"{self.prefix}{k}" for k in range(1, n + 1)]
        self.addr = {}
        self.pcmd_pid = None
        self.jobs = []  # Popen objects, each the leader of its own process group
        self.config = os.path.join(tmp, "pcmd.conf")
        self.env = dict(os.environ, PCM_CONFIG=self.config)

    def up(self):
        r = subprocess.run(["bash", HOSTS_SH, "up", str(self.n), "--prefix", self.prefix],
                           capture_output=True, text=True)
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
        if r.returncode == SKIP:
            sys.exit(SKIP)
        if r.returncode != 0:
            raise Failure(f"hosts.sh up failed ({r.returncode})")
        for line in r.stdout.splitlines():
            m = re.match(r"^(\S+) (\d+\.\d+\.\d+\.\d+)/\d+ ", line)
            if m:
                self.addr[m.group(1)] = m.group(2)
        if sorted(self.addr) != sorted(self.names):
            raise Failure(f"hosts.sh status lists {self.addr}, wanted {self.names}")
        self.host_of_addr = {a: h for h, a in self.addr.items()}

    def on(self, host, *cmd, **kw):
        """Runs cmd on host (waits); returns the CompletedProcess."""
        return subprocess.run(["bash", LAUNCHER, host, *cmd], env=self.env, capture_output=True,
                              text=True, **kw)

    def start_pcmd(self, *extra):
        head = self.names[0]
        pidfile = os.path.join(self.tmp, "pcmd.pid")
        # The detached daemon keeps its standard streams: a file, not a pipe to wait on.
        self.pcmd_log = os.path.join(self.tmp, "pcmd.log")
        with open(self.pcmd_log, "w") as logf:
            r = subprocess.run(["bash", LAUNCHER, head, os.path.join(self.build, "pcmd"), "--detach",
                                "--pidfile", pidfile, "--bind", self.addr[head], "--config",
                                self.config, "--data-dir", os.path.join(self.tmp, "data"), *extra],
                               env=self.env, stdout=logf, stderr=logf, stdin=subprocess.DEVNULL,
                               timeout=60)
        if r.returncode != 0:
            raise Failure(f"pcmd did not start: {open(self.pcmd_log).read()}")
        self.pcmd_pid = int(open(pidfile).read())

    def pcmctl(self, *args, check=True, timeout=200):
        r = subprocess.run([os.path.join(self.build, "pcmctl"), *args], env=self.env,
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise Failure(f"pcmctl {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
        return r

    def status(self, job):
        return json.loads(self.pcmctl("status", job, "--json").stdout)["jobs"][0]

    def mpiexec(self, hosts, np, cmd, out_path, env=None, spawn_hosts=None):
        """Starts cmd on np processes over hosts (one per host, round robin), from host 1.
        spawn_hosts: where the job's spawns may go besides (Open MPI must be given them, and
        starts a daemon on each at once: a job that must not depend on a host is not given it);
        default every host of the cluster."""
        out = open(out_path, "w")
        env = dict(self.env, **(env or {}))
        mpiexec = os.environ.get("MPIEXEC", "mpiexec")
        if MPI_FAMILY == "openmpi":
            # mpirun starts its daemons through the same ssh-like launcher, talks to them and
            # the ranks to each other over the hosts' eth0, and forwards the variables PCM reads
            # (it forwards none by itself to another host). Open MPI spawns only onto hosts it
            # was given: every host of the cluster, the job's first (one rank each, by node).
            more = self.names if spawn_hosts is None else spawn_hosts
            given = hosts + [h for h in more if h not in hosts]
            launch = [mpiexec, "--mca", "plm_rsh_agent", LAUNCHER, "--mca", "oob_tcp_if_include",
                      "eth0", "--mca", "btl_tcp_if_include", "eth0", "--mca", "btl",
                      "tcp,vader,self", "--host", ",".join(given), "--map-by", "node"]
            for k in sorted(env):
                if k.startswith("PCM_"):
                    launch += ["-x", k]
        else:
            launch = [mpiexec, "-launcher", "ssh", "-launcher-exec", LAUNCHER, "-hosts",
                      ",".join(hosts)]
        p = subprocess.Popen(
            ["bash", LAUNCHER, self.names[0], *launch, "-n", str(np), *cmd],
            env=env, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
        self.jobs.append(p)
        return p

    def stop_jobs(self):
        """Ends the jobs started here (mpiexec and its process group; hydra ends the ranks)."""
        for p in self.jobs:
            end_job(p)

    def stop(self):
        self.stop_jobs()
        if self.pcmd_pid:
            try:
                os.kill(self.pcmd_pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        # hosts.sh down ends (by pid) whatever still runs inside the hosts.
        subprocess.run(["bash", HOSTS_SH, "down", "--prefix", self.prefix], capture_output=True)


def end_job(p, sig=signal.SIGTERM, timeout=10):
    """Ends a job started here (Popen p, a process group of its own) with sig, and with SIGKILL
    when it is still there timeout seconds later."""
    if p.poll() is not None:
        return
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=10)


def slurmctld_log(conf):
    """The path of slurmctld's log that the Slurm configuration file conf names, if it exists;
    else None."""
    if not conf or not os.path.exists(conf):
        return None
    with open(conf) as f:
        m = re.search(r"^SlurmctldLogFile=(\S+)$", f.read(), re.M)
    return m.group(1) if m and os.path.exists(m.group(1)) else None


def heat2d_plain(build, args):
    r = subprocess.run([os.environ.get("MPIEXEC", "mpiexec"), "-n", "2",
                        os.path.join(build, "examples/heat2d/heat2d_plain"), *args],
                       capture_output=True, text=True, timeout=300)
    m = re.search(r"^checksum (\w+)", r.stdout, re.M)
    if not m:
        raise Failure(f"plain heat2d printed no checksum: {r.stdout} {r.stderr}")
    return m.group(1)


def wait_job(c, job, p, out_path, reconfigs, timeout=600):
    """Waits for the job's mpiexec; it must exit 0, and pcmd show it finished after `reconfigs`
    reconfigurations (None: any number). Returns its output."""
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failure(f"the job did not end within {timeout} s")
    text = open(out_path).read()
    if rc != 0:
        raise Failure(f"the job exited with {rc}:\n{text[-3000:]}")
    st = c.status(job)
    if st["state"] != "finished" or reconfigs not in (None, st["reconfigurations"]):
        raise Failure(f"pcmd shows {st}")
    return text


def stretched(c):
    """heat2d arguments that throttle the run (10 ms an iteration: 2000 iterations last at least
    20 s, for steps that take 2-6 s unloaded) while the test reconfigures it, and a function that
    lifts the throttle, so that the rest of the run goes at full speed."""
    flag = os.path.join(c.tmp, "throttle")
    open(flag, "w").close()
    return ["--throttle-us", "10000", "--throttle-while", flag], lambda: os.unlink(flag)


def kill_host(h, link_down=False, power_off=False):
    """Every process of host h dies at once as far as the rest of the cluster can tell: all are
    stopped first (a stopped MPI proxy cannot report its children's deaths), then killed, the
    proxy last, so that the launcher's teardown of the other hosts cannot overtake the loss;
    with link_down, h's link goes down after. power_off: as a power or switch failure, no FIN or
    RST reaches anyone: every process is stopped, the link cut, and only then are they killed.
    Returns how many processes were killed."""
    pids = [int(p) for p in subprocess.run(["ip", "netns", "pids", h], capture_output=True,
                                           text=True).stdout.split()]

    def is_proxy(pid):
        try:
            with open(f"/proc/{pid}/comm") as f:
                return f.read().strip().startswith(("hydra", "orted"))
        except OSError:
            return False
    pids.sort(key=is_proxy)
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        if sig == signal.SIGKILL and power_off:
            subprocess.run(["ip", "link", "set", f"{h}v", "down"], check=True)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
    if link_down and not power_off:
        subprocess.run(["ip", "link", "set", f"{h}v", "down"], check=True)
    return len(pids)


def expect_hosts(c, job, what, want):
    """Fails unless pcmctl status shows job's ranks on hosts want (after what)."""
    got = c.status(job)["hosts"]
    if got != want:
        raise Failure(f"after {what}: pcmctl status reports hosts {got}, expected {want}")
    log(f"{what}: hosts {got}")


def host_table(c):
    """`pcmctl host list --json`: {name: row}."""
    rows = json.loads(c.pcmctl("host", "list", "--json").stdout)
    rows = rows.get("hosts", rows) if isinstance(rows, dict) else rows
    return {r["host"]: r for r in rows}


def start_host_agent(c, h, tag):
    """Starts `pcmd --agent` on host h (period 0.5 s; the host's load is the tasks of its own
    namespace: the machine's other work, such as scripts/stress.sh's busy loops, is not the
    host's); waits until h is in the inventory through it. Returns (Popen, the agent's pid)."""
    pidfile = os.path.join(c.tmp, f"agent-{tag}.pid")
    logf = open(os.path.join(c.tmp, f"agent-{tag}.log"), "w")
    a = subprocess.Popen(["bash", LAUNCHER, h, os.path.join(c.build, "pcmd"), "--agent",
                          "-c", c.config, "--agent-period-ms", "500", "--agent-own-namespace",
                          "--pidfile", pidfile],
                         env=c.env, stdout=logf, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    c.jobs.append(a)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 30:
        row = host_table(c).get(h)
        if row and row.get("agent") and os.path.exists(pidfile):
            # The table shows the agent's figures too.
            table = c.pcmctl("host", "list").stdout
            if not re.search(rf"^{h} .* busy [\d.]+/\d+ runnable [\d.]+ [\d.]+s ago$", table,
                             re.M):
                raise Failure(f"pcmctl host list shows no agent figures for {h}:\n{table}")
            log(f"{tag}: {h} joined through its agent after {time.monotonic() - t0:.2f} s: "
                f"{row['slots']} slots, {row['agent']['cores']} cores, "
                f"{row['agent']['busy']:.2f} busy")
            return a, int(open(pidfile).read())
        time.sleep(0.1)
    raise Failure(f"{h}'s agent did not join: {open(logf.name).read()}")


def run_on_cluster(build, n, fn, label):
    """Makes n hosts, runs fn(cluster), and removes everything; 0, 1 (printing the job's and
    pcmd's last output), or exits 77 where namespaces cannot be made."""
    with tempfile.TemporaryDirectory(prefix="pcm-multihost.") as tmp:
        os.chmod(tmp, 0o755)
        c = Cluster(build, n, tmp)
        try:
            c.up()
            fn(c)
        except Failure as e:
            print(f"{label}: FAILED: {e}", file=sys.stderr, flush=True)
            for path in [os.path.join(tmp, "job.out"), os.path.join(tmp, "pcmd.log")]:
                if os.path.exists(path):
                    sys.stderr.write(f"--- {os.path.basename(path)} (end):\n")
                    sys.stderr.write(open(path).read()[-4000:])
            return 1
        finally:
            c.stop()
    return 0


def mpi_family():
    """testbed/launcher_mpi.sh's answer for MPIEXEC: mpich, openmpi or unknown."""
    return subprocess.run(
        ["sh", "-c", f'. "{HERE}/launcher_mpi.sh" && echo "$PCM_MPI_FAMILY"'],
        capture_output=True, text=True).stdout.strip()


def revive_host(c, h):
    subprocess.run(["ip", "link", "set", f"{h}v", "up"], check=True)
    t0 = time.monotonic()
    # A refused connection to port 9 from host 1: h answers again.
    probe = f"timeout 2 bash -c 'exec 3<>/dev/tcp/{h}/9' 2>&1"
    while "refused" not in c.on(c.names[0], probe).stdout:
        if time.monotonic() - t0 > 30:
            raise Failure(f"{h} does not answer after its link came back")


def iteration(c, job):
    try:
        return c.status(job)["iteration"]
    except (Failure, KeyError, IndexError, json.JSONDecodeError):
        return -1


def supervised(c, job, np, out, options, heat_args):
    """Starts heat2d_pcm under `pcmctl run -n np --on-inventory` from host 1 (hydra through the
    hosts' launcher), its output in out; returns the Popen (ended with the cluster)."""
    run = subprocess.Popen(
        ["bash", LAUNCHER, c.names[0], os.path.join(c.build, "pcmctl"), "run", "-n", str(np),
         "--on-inventory", "--job", job, *options,
         "--mpiexec", os.environ.get("MPIEXEC", "mpiexec"), "--mpiexec-arg=-launcher",
         "--mpiexec-arg=ssh", "--mpiexec-arg=-launcher-exec", f"--mpiexec-arg={LAUNCHER}",
         "--", os.path.join(c.build, "examples/heat2d/heat2d_pcm"), *heat_args],
        env=c.env, stdout=open(out, "w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        start_new_session=True)
    c.jobs.append(run)
    return run
