"""site_cluster.py — the Python side of testbed/sites.sh: test sites of network-namespace hosts
(site a holds pcmd; the others are remote, reached through pcm-relay on their front-ends), for the
tests (tests/multihost/sites*.py, site_move.py) and the benchmarks (bench/site_move_time.py).

Sites(build, tmp, nsites, nhosts, opens) extends cluster.Cluster; start_relayed/relay_site_b start
pcmd on a1 and the relays; main_with(scenario, label) runs a scenario on fresh sites (exits 77,
ctest's SKIPPED, where namespaces cannot be made); supervised/wait_supervised start heat2d_pcm
under `pcmctl run` with the sites' options.
"""
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
import cluster  # the cluster helpers: Failure, heat2d_plain, stretched, ...
from cluster import Failure, log

SITES_SH = os.path.join(HERE, "sites.sh")
LAUNCHER = cluster.LAUNCHER
SKIP = 77
# The TCP ports on which the front-ends reach one another (sites.sh --wan-ports): site a's relay
# listens on them for pcmd's request and watch ports.
WAN_PORTS = (4701,)  # the one port between front-ends: the relays' --mux/--demux


class Sites(cluster.Cluster):
    """Sites a, b, ... of nhosts hosts (opens: sites.sh --open specs); `names` are site b's hosts
    (where the job runs), `a` site a's; pcmd in a1."""

    def __init__(self, build, tmp, nsites=2, nhosts=3, opens=()):
        super().__init__(build, nhosts, tmp)
        self.prefix = f"s{os.getpid() % 100000}"
        self.letters = "abcd"[:nsites]
        self.opens = list(opens)
        self.site_hosts = {s: [f"{self.prefix}{s}{k}" for k in range(1, nhosts + 1)]
                           for s in self.letters}
        self.a = self.site_hosts["a"]
        self.names = self.site_hosts["b"]
        self.fe = {s: f"{self.prefix}{s}fe" for s in self.letters}
        self.wan = {}
        self.firewall = False  # nftables on the front-ends (sites.sh says)
        self.relays = []  # (pid file, log path)
        self.ctl_site = "b"  # where pcmctl runs: "b" through the relays, "a" beside pcmd
        self.site_config = os.path.join(tmp, "site-b.conf")
        self.site_env = dict(os.environ, PCM_CONFIG=self.site_config)

    def up(self):
        cmd = ["bash", SITES_SH, "up", "--prefix", self.prefix, "--sites", str(len(self.letters)),
               "--hosts", str(self.n), "--wan-ports", ",".join(map(str, WAN_PORTS))]
        for spec in self.opens:
            cmd += ["--open", spec]
        r = subprocess.run(cmd, capture_output=True, text=True)
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
        if r.returncode == SKIP:
            sys.exit(SKIP)
        if r.returncode != 0:
            raise Failure(f"sites.sh up failed ({r.returncode})")
        for line in r.stdout.splitlines():
            m = re.match(r"^(\S+) (\d+\.\d+\.\d+\.\d+)/\d+ site \w( front-end wan "
                         r"(\d+\.\d+\.\d+\.\d+)/\d+)?$", line)
            if m:
                self.addr[m.group(1)] = m.group(2)
                if m.group(4):
                    self.wan[m.group(1)] = m.group(4)
            self.firewall = self.firewall or line.startswith("firewall nftables")
        want = [h for s in self.letters for h in self.site_hosts[s]] + list(self.fe.values())
        if sorted(self.addr) != sorted(want):
            raise Failure(f"sites.sh status lists {self.addr}, wanted {want}")
        self.host_of_addr = {a: h for h, a in self.addr.items()}

    def start_pcmd(self, *extra):
        saved, self.names = self.names, [self.a[0]]  # Cluster.start_pcmd uses names[0]
        try:
            super().start_pcmd(*extra)
        finally:
            self.names = saved

    def start_relay(self, fe, listen, to, ports, *extra):
        pidfile = os.path.join(self.tmp, f"relay-{fe}.pid")
        logpath = os.path.join(self.tmp, f"relay-{fe}.log")
        p = subprocess.Popen(["bash", LAUNCHER, fe, os.path.join(self.build, "pcm-relay"),
                              "--listen", listen, "--to", to, "--port", ",".join(map(str, ports)),
                              *extra, "--pidfile", pidfile], stdout=open(logpath, "w"),
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        self.jobs.append(p)
        t0 = time.monotonic()
        while not os.path.exists(pidfile):
            if p.poll() is not None or time.monotonic() - t0 > 20:
                raise Failure(f"pcm-relay on {fe} did not start: {open(logpath).read()}")
            time.sleep(0.05)
        self.relays.append((pidfile, logpath))
        return logpath

    def pcmctl(self, *args, check=True, timeout=200):
        """pcmctl on host b1 with site b's configuration (through the relays); on a1 with pcmd's
        own file once ctl_site is "a"."""
        host, env = ((self.a[0], self.env) if self.ctl_site == "a"
                     else (self.names[0], self.site_env))
        r = subprocess.run(["bash", LAUNCHER, host,
                            " ".join([os.path.join(self.build, "pcmctl"), *args])],
                           env=env, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise Failure(f"pcmctl {' '.join(args)} (on {host}) exited {r.returncode}: "
                          f"{r.stderr.strip()}")
        return r

    def stop(self):
        self.stop_jobs()
        if self.pcmd_pid:
            try:
                os.kill(self.pcmd_pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        subprocess.run(["bash", SITES_SH, "down", "--prefix", self.prefix], capture_output=True)


def start_relayed(c, *pcmd_args):
    """pcmd on a1 (site a, --closed-sites, CURVE on, pcmd_args added), then relay_site_b."""
    c.start_pcmd("--site", "a", "--closed-sites", *pcmd_args)
    return relay_site_b(c)


def relay_site_b(c):
    """With pcmd started on a1: pcm-relay on a's front-end (--demux: from the one wide-area port
    WAN_PORTS[0] to pcmd's request and watch ports) and on b's (pcmd's ports inside site b, --mux
    to that one port), and site b's configuration file (pcmd's with b's front-end for pcmd's
    address).
    Returns pcmd's request port, its watch port and the two relays' logs."""
    a1, afe, bfe = c.a[0], c.fe["a"], c.fe["b"]
    conf = json.load(open(c.config))
    port = int(conf["endpoint"].rsplit(":", 1)[1])
    watch = int(conf["watch"].rsplit(":", 1)[1])
    if "curve" not in conf:
        raise Failure(f"pcmd bound to {c.addr[a1]} without CURVE: {conf}")
    (wp,) = WAN_PORTS
    log_a = c.start_relay(afe, c.wan[afe], c.addr[a1], [port, watch], "--demux", str(wp))
    log_b = c.start_relay(bfe, c.addr[bfe], c.wan[afe], [port, watch], "--mux", str(wp))
    site = dict(conf, endpoint=f"tcp://{c.addr[bfe]}:{port}", watch=f"tcp://{c.addr[bfe]}:{watch}")
    fd = os.open(c.site_config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(site, f, indent=2)
    log(f"pcmd on {a1} {c.addr[a1]}:{port} (watch {watch}); relays {afe} {c.wan[afe]}:{wp} "
        f"(firewall: {'only these ports' if c.firewall else 'none'}), {bfe} {c.addr[bfe]}")
    return port, watch, log_a, log_b


def main_with(scenario_fn, label, logs=("job.out",), mpich_only=False, **sites_args):
    """Runs scenario_fn(c) on fresh sites (Sites(build, tmp, **sites_args); removed afterwards);
    on a failure prints it and the ends of the logs named (in the test's directory), pcmd's and
    the relays'. mpich_only: SKIPPED on another MPI (the scenario drives hydra)."""
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} BUILD", file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    cluster.MPI_FAMILY = cluster.mpi_family()
    if mpich_only and cluster.MPI_FAMILY != "mpich":
        print(f"SKIPPED: {label} drives MPICH's hydra (this build: {cluster.MPI_FAMILY})")
        return SKIP
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="pcm-sites.") as tmp:
        os.chmod(tmp, 0o755)
        c = Sites(build, tmp, **sites_args)
        try:
            c.up()
            scenario_fn(c)
        except Failure as e:
            print(f"multihost {label}: FAILED: {e}", file=sys.stderr, flush=True)
            for path in [*logs, "pcmd.log", f"relay-{c.fe['a']}.log", f"relay-{c.fe['b']}.log"]:
                path = os.path.join(tmp, path)
                if os.path.exists(path):
                    sys.stderr.write(f"--- {os.path.basename(path)} (end):\n")
                    sys.stderr.write(open(path).read()[-4000:])
            return 1
        finally:
            c.stop()
    return 0


def supervised(c, job, out, heat_args):
    """heat2d_pcm under `pcmctl run` on a1 (pcmd's own file): first on site a's hosts; site b's
    runs start their mpiexec inside b1 with b's file."""
    launcher = os.path.abspath(cluster.LAUNCHER)
    cmd = [os.path.join(c.build, "pcmctl"), "run", "-n", "3", "--min", "2", "--on-inventory",
           "--site", "a", "--job", job, "--max-restarts", "1", "--start-timeout-s", "60",
           "--finish-grace-s", "5", f"--site-launcher=b=bash {launcher} {c.names[0]}",
           f"--site-config=b={c.site_config}",
           "--mpiexec", os.environ.get("MPIEXEC", "mpiexec"), "--mpiexec-arg=-launcher",
           "--mpiexec-arg=ssh", "--mpiexec-arg=-launcher-exec", f"--mpiexec-arg={launcher}",
           "--", os.path.join(c.build, "examples/heat2d/heat2d_pcm"), *heat_args]
    run = subprocess.Popen(["bash", cluster.LAUNCHER, c.a[0], shlex.join(cmd)], env=c.env,
                           stdout=open(out, "w"), stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, start_new_session=True)
    c.jobs.append(run)
    return run


def wait_supervised(c, job):
    """Until pcmd knows the run is pcmctl run's (told within 0.25 s of its registration)."""
    t0 = time.monotonic()
    while not c.status(job).get("supervised"):
        if time.monotonic() - t0 > 30:
            raise Failure(f"pcmctl run did not tell pcmd that it supervises {job} within 30 s")
        time.sleep(0.05)

