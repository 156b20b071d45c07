#!/usr/bin/env python3
"""multihost.py BUILD SCENARIO — PCM on a cluster of network-namespace hosts (scripts/hosts.sh).

Each scenario makes its own hosts (a prefix of its own), runs pcmd inside host 1 bound to host 1's
address, starts the job with mpiexec inside host 1 through scripts/hosts-launcher.sh, drives it
with pcmctl, and removes everything it made at the end. Traffic goes only to these hosts.

  reconfig   heat2d on 2 hosts: migrate to a third host, split onto a host that just joined,
             merge off a host, grow and shrink across hosts; after each step the hosts pcmctl
             status reports must be the ones asked for; the final checksum equals the plain run's.

Exits 77 (ctest SKIPPED) with the reason where namespaces cannot be made (no root).
"""
import csv
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HOSTS_SH = os.path.join(HERE, "..", "..", "scripts", "hosts.sh")
LAUNCHER = os.path.join(HERE, "..", "..", "scripts", "hosts-launcher.sh")
MPI_FAMILY = "mpich"  # or openmpi (scripts/mpi_launcher.sh decides, in main)
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
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)

    def stop(self):
        self.stop_jobs()
        if self.pcmd_pid:
            try:
                os.kill(self.pcmd_pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        # hosts.sh down ends (by pid) whatever still runs inside the hosts.
        subprocess.run(["bash", HOSTS_SH, "down", "--prefix", self.prefix], capture_output=True)


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


def scenario_reconfig(c):
    h1, h2, h3 = c.names
    c.start_pcmd("--hosts", f"{h1}:2", f"{h2}:2", f"{h3}:2")
    job = "mh-heat"
    args = ["--nx", "61", "--ny", "40"]
    # Long enough (stretched) to outlast every step under a loaded machine; once they are done,
    # the run goes on unthrottled.
    plain = heat2d_plain(c.build, [*args, "--iters", "2000"])
    out = os.path.join(c.tmp, "job.out")
    throttle, unthrottle = stretched(c)
    p = c.mpiexec([h1, h2], 2, [os.path.join(c.build, "examples/heat2d/heat2d_pcm"), *args,
                                "--iters", "2000", *throttle], out, env={"PCM_JOB": job})
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    st = c.status(job)
    if st["hosts"] != [h1, h2]:
        raise Failure(f"the job starts on {st['hosts']}, expected {[h1, h2]}")
    steps = [
        (["migrate", job, "1", "--host", h3], [h1, h3]),
        (["split", job, "0", "--into", "2", "--host", h2], [h2, h2, h3]),
        (["merge", job, "1", "2"], [h2, h2]),  # merges the process on h3 off that host
        (["resize", job, "--to", "4", "--host", h3], [h2, h2, h3, h3]),
        (["resize", job, "--to", "3"], [h2, h2, h3]),
        (["migrate", job, "0", "--host", h1], [h1, h2, h3]),
    ]
    for done, (cmd, want) in enumerate(steps, start=1):
        c.pcmctl(*cmd)
        c.pcmctl("wait", job, "--reconfigurations", str(done), "--timeout", "180")
        got = c.status(job)["hosts"]
        if got != want:
            raise Failure(f"after {' '.join(cmd)}: pcmctl status reports hosts {got}, expected {want}")
        log(f"{' '.join(cmd)}: hosts {got}")
    unthrottle()
    text = wait_job(c, job, p, out, len(steps))
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not m or m.group(1) != plain:
        raise Failure(f"checksum {m.group(1) if m else None} differs from the plain run's {plain}")
    log(f"ok: reconfig: {len(steps)} reconfigurations over 3 hosts, checksum {plain} as plain")


def kill_host(h, link_down=False):
    """Every process of host h dies at once as far as the rest of the cluster can tell: all are
    stopped first (a stopped MPI proxy cannot report its children's deaths), then killed, the
    proxy last, so that the launcher's teardown of the other hosts cannot overtake the loss;
    with link_down, h's link goes down after. Returns how many processes were killed."""
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
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
    if link_down:
        subprocess.run(["ip", "link", "set", f"{h}v", "down"], check=True)
    return len(pids)


def scenario_failure(c):
    h1, h2, h3 = c.names
    c.start_pcmd("--hosts", f"{h1}:2", f"{h2}:2", f"{h3}:2")
    heat = os.path.join(c.build, "examples/heat2d/heat2d_pcm")
    args = ["--nx", "97", "--ny", "64", "--iters", "1200", "--layout", "cyclic"]
    plain = heat2d_plain(c.build, args)
    out_a, out_b = os.path.join(c.tmp, "job.out"), os.path.join(c.tmp, "b.out")
    a = c.mpiexec([h1, h2, h3], 3, [heat, *args, "--commit-every", "100", "--throttle-us", "1500"],
                  out_a, env={"PCM_JOB": "mh-a"})
    b = c.mpiexec([h1, h2], 2, [heat, *args, "--throttle-us", "3000"], out_b,
                  env={"PCM_JOB": "mh-b"}, spawn_hosts=[])
    c.pcmctl("wait", "mh-a", "--iteration", "450", "--timeout", "120")
    c.pcmctl("wait", "mh-b", "--iteration", "20", "--timeout", "120")
    if c.status("mh-a")["hosts"] != [h1, h2, h3]:
        raise Failure(f"job a runs on {c.status('mh-a')['hosts']}, expected {[h1, h2, h3]}")
    # Host 3 vanishes: every process in its namespace is killed (by pid; kill_host).
    n = kill_host(h3)
    if not n:
        raise Failure(f"no processes run on {h3}")
    log(f"killed {n} processes on {h3}")
    c.pcmctl("wait", "mh-a", "--ended", "--timeout", "60", check=False)
    st = c.status("mh-a")
    if st["state"] != "failed":
        raise Failure(f"after {h3} vanished pcmd shows job a {st['state']}: {st['last_event']}")
    # pcmd names the first loss it saw; the losses that follow (MPI tearing the job down on the
    # hosts left) are listed after it. Host 3's must be among them, and come first on a quiet
    # machine.
    lost_hosts = [x.split(" on ")[-1] for x in st.get("lost", [])]
    if h3 not in lost_hosts:
        raise Failure(f"job a's lost processes do not name {h3}: {st.get('lost')} "
                      f"({st['last_event']})")
    if h3 not in st["last_event"]:
        log(f"note: the first loss pcmd saw was not on {h3} (a loaded machine): {st['lost']}")
    log(f"job a failed: {st['last_event']}; lost: {st['lost']}")
    try:
        a.wait(timeout=60)
    except subprocess.TimeoutExpired:
        raise Failure("job a's mpiexec did not end after its host vanished")
    # pcmd serves the other job to its end.
    text = wait_job(c, "mh-b", b, out_b, 0)
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not m or m.group(1) != plain:
        raise Failure(f"job b: checksum {m.group(1) if m else None}, plain {plain}")
    # The newest checkpoint restarts job a on the two hosts left.
    out_r = os.path.join(c.tmp, "restart.out")
    r = c.mpiexec([h1, h2], 2, [heat, *args, "--throttle-us", "0"], out_r,
                  env={"PCM_JOB": "mh-a", "PCM_RESTART": "1"}, spawn_hosts=[])
    text = wait_job(c, "mh-a", r, out_r, 0)
    k = re.search(r"^heat2d: restarted from iteration (\d+) \(3 -> 2 processes\)", text, re.M)
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not k or int(k.group(1)) < 400:
        raise Failure(f"the restart did not resume from a version >= 400: {text[-2000:]}")
    if not m or m.group(1) != plain:
        raise Failure(f"restart: checksum {m.group(1) if m else None}, plain {plain}")
    log(f"ok: failure: {h3} vanished, job a failed naming it, job b finished, job a restarted "
        f"on {h1},{h2} from iteration {k.group(1)}, checksum {plain} as plain")


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


def scenario_drain(c):
    h1, h2, h3 = c.names
    c.start_pcmd("--hosts", f"{h1}:2", f"{h2}:2")
    job = "mh-drain"
    args = ["--nx", "61", "--ny", "40", "--layout", "block-cyclic", "--block", "3"]
    plain = heat2d_plain(c.build, [*args[:4], "--iters", "2000"])
    out = os.path.join(c.tmp, "job.out")
    throttle, unthrottle = stretched(c)
    p = c.mpiexec([h1, h2], 2, [os.path.join(c.build, "examples/heat2d/heat2d_pcm"), *args,
                                "--iters", "2000", *throttle], out, env={"PCM_JOB": job})
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    done = 0


    # A host joins while the job runs; pcmd measures its round trip.
    c.pcmctl("host", "add", h3, "--slots", "2", "--site", "b")
    for _ in range(100):
        row = host_table(c).get(h3)
        if row and row.get("rtt") is not None:
            break
        time.sleep(0.1)
    else:
        raise Failure(f"pcmd lists no measured round trip for {h3}: {host_table(c)}")
    if row["slots"] != 2 or row["site"] != "b" or row["state"] != "up" or row["free"] != 2:
        raise Failure(f"host list shows {row} for {h3}")
    log(f"{h3} joined: rtt {row['rtt']} ms")
    c.pcmctl("split", job, "0", "--into", "2", "--host", h3)
    done += 1
    c.pcmctl("wait", job, "--reconfigurations", str(done), "--timeout", "180")
    expect_hosts(c, job, f"split onto {h3}", [h3, h3, h2])
    # Host 2 is drained: its process migrates to host 1 (free slots there), then host 2 leaves.
    r = c.pcmctl("host", "drain", h2, "--wait", timeout=300)
    done += 1
    expect_hosts(c, job, f"drain of {h2}", [h3, h3, h1])
    if h2 in host_table(c):
        raise Failure(f"{h2} is still in the inventory after its drain: {r.stdout}")
    # Host 1 is drained with no free slot anywhere else: its process is merged into rank 0.
    c.pcmctl("host", "drain", h1, "--wait", timeout=300)
    done += 1
    expect_hosts(c, job, f"drain of {h1}", [h3, h3])
    # Nowhere to go: the last host cannot be drained; a host in use cannot be removed.
    for cmd in (["drain", h3], ["remove", h3]):
        r = c.pcmctl("host", *cmd, check=False)
        if r.returncode != 1 or not r.stderr.strip():
            raise Failure(f"pcmctl host {' '.join(cmd)} exited {r.returncode}: {r.stderr}")
        log(f"host {' '.join(cmd)} refused: {r.stderr.strip()}")
    unthrottle()
    text = wait_job(c, job, p, out, done)
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not m or m.group(1) != plain:
        raise Failure(f"checksum {m.group(1) if m else None} differs from the plain run's {plain}")
    c.pcmctl("host", "remove", h3)  # empty now
    if host_table(c):
        raise Failure(f"the inventory should be empty: {host_table(c)}")
    log(f"ok: drain: {h3} joined, {h2} drained by migration, {h1} by merge, checksum as plain")


def scenario_topology(c):
    h1, h2, h3 = c.names
    site = {h1: "west", h2: "west", h3: "east"}
    c.start_pcmd("--hosts", f"{h1}:2", f"{h2}:2", f"{h3}:2")
    for h in c.names:
        c.pcmctl("host", "add", h, "--slots", "2", "--site", site[h])
    job = "mh-topo"
    # At least 10 s (2 ms an iteration) for the steps, which take 2 s unloaded; the last step brings
    # the job back to two processes on one host, so the iterations after it are quick.
    units, iters = 997, 5000
    out = os.path.join(c.tmp, "job.out")
    p = c.mpiexec([h1, h2], 2, [os.path.join(c.build, "topology"), str(units), str(iters), "2000"],
                  out, env={"PCM_JOB": job})
    line_re = re.compile(r"^topo: iter (\d+) rank (\d+) size (\d+) host (\S+) addr (\S+) "
                         r"site_color (\d+) host_color (\d+)$", re.M)

    last = [-1]  # the iteration of the world checked last

    def check_world(what):
        """The lines of the newest world agree with the addresses and with pcmctl status."""
        hosts = c.status(job)["hosts"]
        for _ in range(300):
            rows = [tuple(m) for m in line_re.findall(open(out).read())]
            newest = max((int(r[0]) for r in rows), default=-1)
            world = {int(r[1]): r for r in rows if int(r[0]) == newest}
            if newest > last[0] and len(world) == len(hosts):
                break
            time.sleep(0.1)
        else:
            raise Failure(f"{what}: the {len(hosts)} processes did not all report where they are")
        last[0] = newest
        for r, (_, _, _, host, addr, sc, hc) in sorted(world.items()):
            real = c.host_of_addr.get(addr)
            if real != host or real != hosts[r]:
                raise Failure(f"{what}: rank {r} runs at {addr} ({real}), says {host}, "
                              f"pcmctl says {hosts[r]}")
            want_hc = min(q for q in world if world[q][3] == host)
            want_sc = min(q for q in world if site[world[q][3]] == site[host])
            if (int(hc), int(sc)) != (want_hc, want_sc):
                raise Failure(f"{what}: rank {r} on {host}: colours site {sc} host {hc}, "
                              f"expected {want_sc} {want_hc}")
        log(f"{what}: {[world[r][3] for r in sorted(world)]} colours "
            f"{[(int(world[r][5]), int(world[r][6])) for r in sorted(world)]}")

    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    check_world("start")
    steps = [["migrate", job, "1", "--host", h3], ["split", job, "0", "--into", "2", "--host", h2],
             ["merge", job, "1", "2"], ["resize", job, "--to", "4", "--placement", "spread"],
             ["resize", job, "--to", "2"]]
    for done, cmd in enumerate(steps, start=1):
        c.pcmctl(*cmd)
        c.pcmctl("wait", job, "--reconfigurations", str(done), "--timeout", "180")
        check_world(" ".join(cmd[:1] + cmd[2:]))
    text = wait_job(c, job, p, out, len(steps))
    m = re.search(r"^sum (\d+) expected (\d+)$", text, re.M)
    if not m or m.group(1) != m.group(2):
        raise Failure(f"the final sum is wrong: {m.group(0) if m else text[-2000:]}")
    log(f"ok: topology: colours and hosts agree with the addresses after every kind of "
        f"reconfiguration; hierarchical sums equal flat ones; sum {m.group(1)}")


def start_host_agent(c, h, tag):
    """Starts `pcmd --agent` on host h (period 0.5 s); waits until h is in the inventory through
    it. Returns (Popen, the agent's pid)."""
    pidfile = os.path.join(c.tmp, f"agent-{tag}.pid")
    logf = open(os.path.join(c.tmp, f"agent-{tag}.log"), "w")
    a = subprocess.Popen(["bash", LAUNCHER, h, os.path.join(c.build, "pcmd"), "--agent",
                          "-c", c.config, "--agent-period-ms", "500", "--pidfile", pidfile],
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


def scenario_policy(c):
    """The paper's Figures 9 and 10 without a person (pcmd --policy auto, short intervals): heat2d
    starts on host 1 (one slot); host 2's agent starts and the job grows onto it by itself, keeping
    the growth because its iteration rate rose; a competing program starts on host 2 and the job
    leaves it (a merge: no other free slot); the program ends and the job grows again; host 2's
    agent stops and the job is drained off it before the host leaves. Every decision is in the
    job's events with its reason, and each reconfiguration's row in heat2d's --trace ends with the
    reason pcmd sent the job (PCM_Reconfig_reason); the grid is the plain run's, bit for bit."""
    h1, h2 = c.names
    c.start_pcmd("--hosts", f"{h1}:1", "--policy", "auto", "--policy-interval-s", "3",
                 "--policy-measure-s", "5", "--policy-sustain-s", "2", "--agent-timeout-ms", "3000")
    job = "mh-policy"
    args = ["--nx", "1024", "--ny", "256", "--iters", "250000"]
    out = os.path.join(c.tmp, "job.out")
    trace = os.path.join(c.tmp, "trace.csv")
    p = c.mpiexec([h1], 1, [os.path.join(c.build, "examples/heat2d/heat2d_pcm"), *args,
                            "--trace", trace], out, env={"PCM_JOB": job})
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    t_start = time.monotonic()
    timeline = []

    def events():
        return c.status(job)["events"]

    def wait_event(what, pattern, after, timeout=60):
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            ev = events()
            for e in ev[after:] if after <= len(ev) else ev:
                if re.search(pattern, e):
                    dt = time.monotonic() - t0
                    timeline.append((time.monotonic() - t_start, what, e))
                    log(f"{what} after {dt:.1f} s: {e}")
                    return len(ev), dt
            if p.poll() is not None:
                raise Failure(f"mpiexec ended ({p.returncode}) while waiting for {what}: "
                              f"{open(out).read()[-2000:]}; pcmd: {c.status(job)}")
            time.sleep(0.2)
        raise Failure(f"no {what} within {timeout} s; events: {events()}")

    n = len(events())
    agent, apid = start_host_agent(c, h2, "policy")
    n, t_grow = wait_event("growth onto the new host", r"policy: resize to 2", n)
    n, _ = wait_event("the growth kept", r"policy: growth to 2 kept", n)
    expect_hosts(c, job, "the growth", [h1, h2])
    # One word: the launcher joins its words with spaces and runs them with a shell, as ssh does.
    burner = subprocess.Popen(["bash", LAUNCHER, h2, "exec python3 -c 'while True: pass'"],
                              env=c.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    c.jobs.append(burner)
    n, t_leave = wait_event("leaving the loaded host", rf"policy: merge .* {h2} is loaded", n)
    c.pcmctl("wait", job, "--reconfigurations", "2", "--timeout", "60")
    os.killpg(burner.pid, signal.SIGKILL)
    burner.wait()
    n, t_back = wait_event("growth after the load ended", r"policy: resize to 2", n)
    c.pcmctl("wait", job, "--reconfigurations", "3", "--timeout", "60")
    os.kill(apid, signal.SIGTERM)
    if agent.wait(timeout=120) != 0:
        raise Failure("the agent did not leave cleanly")
    n, _ = wait_event("drain of the host that leaves", rf"drain of {h2}", 0)
    c.pcmctl("wait", job, "--reconfigurations", "4", "--timeout", "60")
    expect_hosts(c, job, f"{h2} left", [h1])
    log("events:\n  " + "\n  ".join(events()))
    plain = heat2d_plain(c.build, args)
    text = wait_job(c, job, p, out, 4)
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not m or m.group(1) != plain:
        raise Failure(f"checksum {m.group(1) if m else None} differs from the plain run's {plain}")
    # The job was told why: each reconfiguration's row in heat2d's trace ends with the reason.
    with open(trace) as f:
        rows = [r["event"] for r in csv.DictReader(f) if r["event"] and r["event"] != "start"]
    want = [r"^split 1->2 .*; policy: .*free slot", r"^merge 2->1 .*; policy: host .* is loaded",
            r"^split 1->2 .*; policy: .*free slot", rf"^(merge 2->1|migrate 2->2) .*; drain of {h2}"]
    if len(rows) != 4 or not all(re.search(w, r) for w, r in zip(want, rows)):
        raise Failure(f"the trace's reconfiguration rows do not give the reasons: {rows}")
    log(f"ok: policy: grew onto {h2} {t_grow:.1f} s after its agent joined, left it "
        f"{t_leave:.1f} s after the load started, came back {t_back:.1f} s after it ended, "
        f"drained when its agent stopped; checksum as plain")


def scenario_agents(c):
    """Host agents (pcmd --agent): host 2's agent joins the inventory by itself; a process moves
    there; the agent is stopped (SIGTERM): pcmd drains host 2 (the process moves back) and the
    agent exits once the host has left. An agent started again joins again; killed (-9), it falls
    silent: after --agent-timeout-ms pcmd marks host 2 lost and drains it. The grid is the plain
    run's, bit for bit."""
    h1, h2 = c.names
    timeout_ms = 2000
    c.start_pcmd("--hosts", f"{h1}:4", "--agent-timeout-ms", str(timeout_ms))
    job = "mh-agents"
    args = ["--nx", "61", "--ny", "40"]
    plain = heat2d_plain(c.build, [*args, "--iters", "2000"])
    out = os.path.join(c.tmp, "job.out")
    throttle, unthrottle = stretched(c)
    p = c.mpiexec([h1], 2, [os.path.join(c.build, "examples/heat2d/heat2d_pcm"), *args,
                            "--iters", "2000", *throttle], out, env={"PCM_JOB": job})
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    done = 0


    def agent_and_move(tag, rank, want):
        """Starts host 2's agent, then moves rank there; returns (agent, its pid)."""
        nonlocal done
        agent = start_host_agent(c, h2, tag)
        c.pcmctl("migrate", job, str(rank), "--host", h2)
        done += 1
        c.pcmctl("wait", job, "--reconfigurations", str(done), "--timeout", "180")
        expect_hosts(c, job, f"migration to {h2}", want)
        return agent

    a, pid = agent_and_move("first", 1, [h1, h2])
    t0 = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    try:
        rc = a.wait(timeout=120)
    except subprocess.TimeoutExpired:
        raise Failure(f"the agent did not leave within 120 s of SIGTERM")
    done += 1
    left = time.monotonic() - t0
    if rc != 0:
        raise Failure(f"the agent exited {rc}: {open(os.path.join(c.tmp, 'agent-first.log')).read()}")
    expect_hosts(c, job, f"{h2}'s agent left", [h1, h1])
    if h2 in host_table(c):
        raise Failure(f"{h2} is still in the inventory after its agent left")
    log(f"SIGTERM to {h2}'s agent: drained and left in {left:.2f} s")
    a, pid = agent_and_move("second", 0, [h2, h1])
    t0 = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    lost_at = None
    while time.monotonic() - t0 < 60:
        row = host_table(c).get(h2)
        if lost_at is None and (row is None or row["state"] == "lost"):
            lost_at = time.monotonic() - t0
        if row is None:
            break
        time.sleep(0.1)
    else:
        raise Failure(f"{h2} did not leave after its agent was killed: {host_table(c).get(h2)}")
    done += 1
    # Its last report came at most one period (0.5 s) before it died.
    if lost_at < timeout_ms / 1000 - 0.6:
        raise Failure(f"{h2} was marked lost {lost_at:.2f} s after its agent died, before the "
                      f"{timeout_ms} ms timeout")
    expect_hosts(c, job, f"{h2} lost", [h1, h1])
    log(f"agent killed: {h2} lost after {lost_at:.2f} s (timeout {timeout_ms} ms), drained and "
        f"gone after {time.monotonic() - t0:.2f} s")
    unthrottle()
    text = wait_job(c, job, p, out, done)
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not m or m.group(1) != plain:
        raise Failure(f"checksum {m.group(1) if m else None} differs from the plain run's {plain}")
    log("ok: agents: joined, drained on SIGTERM, lost when silent, checksum as plain")


SCENARIOS = {
    "agents": (2, scenario_agents),
    "policy": (2, scenario_policy),
    "topology": (3, scenario_topology),
    "reconfig": (3, scenario_reconfig),
    "failure": (3, scenario_failure),
    "drain": (3, scenario_drain),
}


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
    """scripts/mpi_launcher.sh's answer for MPIEXEC: mpich, openmpi or unknown."""
    return subprocess.run(
        ["sh", "-c", f'. "{HERE}/../../scripts/mpi_launcher.sh" && echo "$PCM_MPI_FAMILY"'],
        capture_output=True, text=True).stdout.strip()


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in SCENARIOS:
        print(f"usage: {sys.argv[0]} BUILD {{{'|'.join(SCENARIOS)}}}", file=sys.stderr)
        return 2
    build, name = os.path.abspath(sys.argv[1]), sys.argv[2]
    n, fn = SCENARIOS[name]
    global MPI_FAMILY
    MPI_FAMILY = mpi_family()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return run_on_cluster(build, n, fn, f"multihost {name}")


if __name__ == "__main__":
    sys.exit(main())
