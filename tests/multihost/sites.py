#!/usr/bin/env python3
"""sites.py BUILD — a job in a remote site, controlled through relays (issue 26).

scripts/sites.sh makes two sites of three namespace hosts each (a prefix of this test's own):
site a holds pcmd (on host a1, bound to a1's address, CURVE on); site b is remote: its hosts
reach only their site and their front-end. pcm-relay runs on both front-ends: b's listens inside
site b and forwards both of pcmd's ports (--mux) to a's over the wide-area bridge, on the one port
the front-ends' firewalls leave open between them (WAN_PORTS, where nftables is installed); a's
(--demux) forwards each connection to the pcmd port its header names. Site b's
configuration file is pcmd's with b's front-end in place of pcmd's address, nothing else. Then:

  - a host of site b (and b's front-end) cannot reach pcmd directly: the connection fails at
    once (no route), so the relay is really what carries everything;
  - pcmctl in site b sees pcmd's inventory through the relay, with each host's site;
  - host b3's agent (pcmd --agent) joins through the relay, into site b;
  - heat2d_pcm runs on b1,b2 (mpiexec inside b1, the job's ranks and pcmctl all with site b's
    file): a migration to site a's host is refused (--closed-sites, no --site-link
    between a and b); a
    migration to b3, a split and a merge commanded by pcmctl in site b; the final grid is the
    plain run's, bit for bit;
  - a process killed in site b is lost to pcmd (its watch connection's end crosses the relays);
  - the relays' logs show the request and watch connections they carried.

Exits 77 (ctest SKIPPED) with the reason where namespaces cannot be made (no root).
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
sys.path.insert(0, HERE)
import multihost  # noqa: E402  (the cluster helpers: Failure, heat2d_plain, stretched, ...)
from multihost import Failure, log  # noqa: E402

SITES_SH = os.path.join(HERE, "..", "..", "scripts", "sites.sh")
LAUNCHER = multihost.LAUNCHER
SKIP = 77
# The TCP ports on which the front-ends reach one another (sites.sh --wan-ports): site a's relay
# listens on them for pcmd's request and watch ports.
WAN_PORTS = (4701,)  # the one port between front-ends: the relays' --mux/--demux


class Sites(multihost.Cluster):
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


def connect_fails_fast(c, host, addr, port):
    """A TCP connection from host to addr:port must fail within 2 s (no route: at once)."""
    code = (f"import socket,time,sys\nt=time.monotonic()\ntry:\n"
            f" socket.create_connection(('{addr}',{port}),timeout=5)\n print('connected')\n"
            f"except OSError as e:\n print('failed', round(time.monotonic()-t,3), e)\n")
    r = subprocess.run(["bash", LAUNCHER, host, f"python3 -c \"{code}\""], capture_output=True,
                       text=True, timeout=30)
    out = r.stdout.strip()
    m = re.match(r"^failed ([\d.]+) (.*)$", out)
    if not m or float(m.group(1)) > 2:
        raise Failure(f"{host} -> {addr}:{port} should fail at once: {out} {r.stderr}")
    log(f"{host} cannot reach pcmd at {addr}:{port} directly: {m.group(2)} "
        f"({float(m.group(1)) * 1000:.1f} ms)")


def start_agent(c, h):
    """`pcmd --agent --agent-site b` on host h with site b's file; waits until h is in pcmd's
    inventory, in site b, with the agent's figures."""
    pidfile = os.path.join(c.tmp, f"agent-{h}.pid")
    logpath = os.path.join(c.tmp, f"agent-{h}.log")
    a = subprocess.Popen(["bash", LAUNCHER, h, os.path.join(c.build, "pcmd"), "--agent", "-c",
                          c.site_config, "--agent-site", "b", "--agent-period-ms", "500",
                          "--pidfile", pidfile], env=c.site_env, stdout=open(logpath, "w"),
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    c.jobs.append(a)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 30:
        row = multihost.host_table(c).get(h)
        if row and row.get("agent"):
            if row["site"] != "b":
                raise Failure(f"{h} joined through its agent outside site b: {row}")
            log(f"{h} joined through its agent (and both relays) after "
                f"{time.monotonic() - t0:.2f} s, site {row['site']}, {row['slots']} slots")
            return
        if a.poll() is not None:
            break
        time.sleep(0.1)
    raise Failure(f"{h}'s agent did not join: {open(logpath).read()}")


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


def scenario(c):
    a1 = c.a[0]
    b1, b2, b3 = c.names
    bfe = c.fe["b"]
    c.start_pcmd("--site", "a", "--closed-sites", "--hosts", f"{b1}:2@b,{b2}:2@b")
    port, watch, log_a, log_b = relay_site_b(c)
    for h in (b1, bfe):
        connect_fails_fast(c, h, c.addr[a1], port)

    rows = multihost.host_table(c)
    if [rows[h]["site"] for h in (b1, b2)] != ["b", "b"]:
        raise Failure(f"pcmctl host list (through the relays) shows {rows}")
    start_agent(c, b3)

    job = "site-heat"
    args = ["--nx", "61", "--ny", "40"]
    plain = multihost.heat2d_plain(c.build, [*args, "--iters", "2000"])
    out = os.path.join(c.tmp, "job.out")
    throttle, unthrottle = multihost.stretched(c)
    c.env = c.site_env  # the job's ranks read site b's file
    p = c.mpiexec([b1, b2], 2, [os.path.join(c.build, "examples/heat2d/heat2d_pcm"), *args,
                                "--iters", "2000", *throttle], out, env={"PCM_JOB": job})
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    # The broker's choice: site a's host joins the inventory; moving a process there would
    # spread the job over sites with no MPI port range open between them: refused, with why.
    c.pcmctl("host", "add", c.a[1], "--slots", "2", "--site", "a")
    r = c.pcmctl("migrate", job, "1", "--host", c.a[1], check=False)
    if r.returncode == 0 or "span sites b" not in r.stderr or "--site-link" not in r.stderr:
        raise Failure(f"a migration to site a was not refused with the reason: {r.stderr}")
    log(f"refused: {r.stderr.strip()}")
    steps = [(["migrate", job, "1", "--host", b3], [b1, b3]),
             (["split", job, "0", "--into", "2", "--host", b2], [b2, b2, b3]),
             (["merge", job, "1", "2"], [b2, b2])]
    for done, (cmd, want) in enumerate(steps, start=1):
        t0 = time.monotonic()
        c.pcmctl(*cmd)
        c.pcmctl("wait", job, "--reconfigurations", str(done), "--timeout", "180")
        multihost.expect_hosts(c, job, f"{' '.join(cmd)} ({time.monotonic() - t0:.1f} s)", want)
    unthrottle()
    text = multihost.wait_job(c, job, p, out, len(steps))
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not m or m.group(1) != plain:
        raise Failure(f"checksum {m.group(1) if m else None} differs from the plain run's {plain}")
    # A process lost in site b is lost to pcmd too: its watch connection ends without "bye" and
    # the relays pass the end on.
    out2 = os.path.join(c.tmp, "lost.out")
    p2 = c.mpiexec([b2], 1, [os.path.join(c.build, "examples/heat2d/heat2d_pcm"), *args,
                             "--iters", "100000", "--throttle-us", "2000"], out2,
                   env={"PCM_JOB": "site-lost"}, spawn_hosts=[])
    c.pcmctl("wait", "site-lost", "--iteration", "5", "--timeout", "120")
    t0 = time.monotonic()
    if not multihost.kill_host(b2):
        raise Failure(f"nothing runs on {b2}")
    c.pcmctl("wait", "site-lost", "--ended", "--timeout", "60", check=False)
    st = c.status("site-lost")
    if st["state"] != "failed" or not any(b2 in x for x in st.get("lost", [])):
        raise Failure(f"after its process on {b2} was killed pcmd shows {st}")
    log(f"a process killed on {b2}: pcmd saw it lost through the relays after "
        f"{time.monotonic() - t0:.2f} s: {st['last_event']}")
    p2.wait(timeout=60)
    for name, path, ports in (("a", log_a, set(WAN_PORTS)), ("b", log_b, {port, watch})):
        text = open(path).read()
        seen = re.findall(r"-> port (\d+) \((?:mux|demux): port (\d+)\) ->", text)
        opened, named = {int(x) for x, _ in seen}, {int(y) for _, y in seen}
        if opened != ports or named != {port, watch}:
            raise Failure(f"relay {name} carried connections from ports {opened} naming "
                          f"{named}, expected {sorted(ports)} naming {[port, watch]}:\n"
                          f"{text[-2000:]}")
        log(f"relay {name}: {len(re.findall(r' opened: ', text))} connections opened, "
            f"{len(re.findall(r' closed ', text))} closed")
    log(f"ok: sites: a job in site b migrated, split and merged through the relays; checksum "
        f"{plain} as plain")


def main_with(scenario_fn, label, logs=("job.out",), mpich_only=False, **sites_args):
    """Runs scenario_fn(c) on fresh sites (Sites(build, tmp, **sites_args); removed afterwards);
    on a failure prints it and the ends of the logs named (in the test's directory), pcmd's and
    the relays'. mpich_only: SKIPPED on another MPI (the scenario drives hydra)."""
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} BUILD", file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    multihost.MPI_FAMILY = multihost.mpi_family()
    if mpich_only and multihost.MPI_FAMILY != "mpich":
        print(f"SKIPPED: {label} drives MPICH's hydra (this build: {multihost.MPI_FAMILY})")
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


def main():
    return main_with(scenario, "sites")


if __name__ == "__main__":
    sys.exit(main())
